/* SPDX-License-Identifier: MIT */
/* tensorboard.c — TensorBoard event files: the protobuf fields of Event, Summary and
 * SessionLog written by hand, framed as TFRecords with masked CRC-32C.
 *
 * The encoder is written here rather than generated with protobuf-c: a run writes five
 * message fields of three messages, all of them scalar or length-delimited, which is a
 * page of code; a generated encoder would bring a .proto copy, a code generator at build
 * time and a library at run time for it. tests/unit/check_tensorboard.c compares the bytes
 * with known encodings and TensorBoard's own reader reads the files back
 * (tests/e2e/tensorboard.sh). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/tensorboard.h"

/* ------------------------------------------------------------------ CRC-32C */

/* Bit by bit, without a table: a run checksums a few kilobytes per row and one PNG at
 * the end, and the core keeps no lazily built global state. */
uint32_t gan_crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

uint32_t gan_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ------------------------------------------------------------------ bytes */

void gan_tb_bytes_free(struct gan_tb_bytes *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

static void put(struct gan_tb_bytes *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

static void put_le(struct gan_tb_bytes *b, uint64_t v, int bytes)
{
    unsigned char le[8];
    for (int i = 0; i < bytes; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    put(b, le, (size_t)bytes);
}

/* ------------------------------------------------------------------ protobuf */

/* Wire types. */
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2, WIRE_FIXED32 = 5 };

static void put_varint(struct gan_tb_bytes *b, uint64_t v)
{
    unsigned char out[10];
    int n = 0;
    do {
        out[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            out[n] |= 0x80;
        n++;
    } while (v);
    put(b, out, (size_t)n);
}

static void put_key(struct gan_tb_bytes *b, unsigned field, unsigned wire)
{
    put_varint(b, ((uint64_t)field << 3) | wire);
}

static void put_double(struct gan_tb_bytes *b, unsigned field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_key(b, field, WIRE_FIXED64);
    put_le(b, bits, 8);
}

static void put_float(struct gan_tb_bytes *b, unsigned field, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_key(b, field, WIRE_FIXED32);
    put_le(b, bits, 4);
}

/* int64 and int32 fields: a negative value is its 64-bit two's complement, ten bytes. */
static void put_int(struct gan_tb_bytes *b, unsigned field, int64_t v)
{
    put_key(b, field, WIRE_VARINT);
    put_varint(b, (uint64_t)v);
}

static void put_bytes(struct gan_tb_bytes *b, unsigned field, const void *data, size_t n)
{
    put_key(b, field, WIRE_BYTES);
    put_varint(b, n);
    put(b, data, n);
}

/* An embedded message: its bytes were built in `inner`, which is emptied. */
static void put_message(struct gan_tb_bytes *b, unsigned field, struct gan_tb_bytes *inner)
{
    if (inner->failed)
        b->failed = 1;
    else
        put_bytes(b, field, inner->data, inner->len);
    gan_tb_bytes_free(inner);
}

/* Event's fields. */
enum { EVENT_WALL_TIME = 1, EVENT_STEP = 2, EVENT_FILE_VERSION = 3, EVENT_SUMMARY = 5,
       EVENT_SESSION_LOG = 7 };
/* Summary.value; Value.tag, .simple_value, .image; Image's fields. */
enum { SUMMARY_VALUE = 1, VALUE_TAG = 1, VALUE_SIMPLE = 2, VALUE_IMAGE = 4 };
enum { IMAGE_HEIGHT = 1, IMAGE_WIDTH = 2, IMAGE_COLORSPACE = 3, IMAGE_ENCODED = 4 };
/* SessionLog.status and its START. */
enum { SESSION_STATUS = 1, SESSION_START = 1 };

static void put_event_head(struct gan_tb_bytes *b, double wall_time, int64_t step)
{
    put_double(b, EVENT_WALL_TIME, wall_time);
    if (step)
        put_int(b, EVENT_STEP, step);
}

void gan_tb_encode_file_version(struct gan_tb_bytes *b, double wall_time)
{
    put_event_head(b, wall_time, 0);
    put_bytes(b, EVENT_FILE_VERSION, GAN_TB_FILE_VERSION, strlen(GAN_TB_FILE_VERSION));
}

void gan_tb_encode_scalars(struct gan_tb_bytes *b, double wall_time, int64_t step,
                           const struct gan_tb_scalar *values, size_t count)
{
    put_event_head(b, wall_time, step);
    struct gan_tb_bytes summary = { 0 };
    for (size_t i = 0; i < count; i++) {
        struct gan_tb_bytes value = { 0 };
        put_bytes(&value, VALUE_TAG, values[i].tag, strlen(values[i].tag));
        put_float(&value, VALUE_SIMPLE, values[i].value);
        put_message(&summary, SUMMARY_VALUE, &value);
    }
    put_message(b, EVENT_SUMMARY, &summary);
}

void gan_tb_encode_image(struct gan_tb_bytes *b, double wall_time, int64_t step,
                         const struct gan_tb_image *image)
{
    put_event_head(b, wall_time, step);
    struct gan_tb_bytes img = { 0 }, value = { 0 }, summary = { 0 };
    put_int(&img, IMAGE_HEIGHT, image->height);
    put_int(&img, IMAGE_WIDTH, image->width);
    put_int(&img, IMAGE_COLORSPACE, image->channels);
    put_bytes(&img, IMAGE_ENCODED, image->png, image->png_len);
    put_bytes(&value, VALUE_TAG, image->tag, strlen(image->tag));
    put_message(&value, VALUE_IMAGE, &img);
    put_message(&summary, SUMMARY_VALUE, &value);
    put_message(b, EVENT_SUMMARY, &summary);
}

void gan_tb_encode_session_start(struct gan_tb_bytes *b, double wall_time, int64_t step)
{
    put_event_head(b, wall_time, step);
    struct gan_tb_bytes log = { 0 };
    put_int(&log, SESSION_STATUS, SESSION_START);
    put_message(b, EVENT_SESSION_LOG, &log);
}

void gan_tb_frame_record(struct gan_tb_bytes *b, const void *data, size_t len)
{
    unsigned char length[8];
    for (int i = 0; i < 8; i++)
        length[i] = (unsigned char)((uint64_t)len >> (8 * i));
    put(b, length, sizeof length);
    put_le(b, gan_crc32c_mask(gan_crc32c(0, length, sizeof length)), 4);
    put(b, data, len);
    put_le(b, gan_crc32c_mask(gan_crc32c(0, data, len)), 4);
}

/* ------------------------------------------------------------------ PNG size */

gan_status gan_tb_png_size(const unsigned char *png, size_t len, unsigned *width,
                           unsigned *height, int *channels)
{
    static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    /* The signature, then IHDR: length, "IHDR", width, height, depth, colour type. */
    if (len < 26 || memcmp(png, signature, 8) != 0 || memcmp(png + 12, "IHDR", 4) != 0)
        return GAN_ERR_FORMAT;
    *width = (unsigned)png[16] << 24 | (unsigned)png[17] << 16 | (unsigned)png[18] << 8 | png[19];
    *height = (unsigned)png[20] << 24 | (unsigned)png[21] << 16 | (unsigned)png[22] << 8 | png[23];
    switch (png[25]) {
    case 0: *channels = 1; break;
    case 4: *channels = 2; break;
    case 2: case 3: *channels = 3; break;
    case 6: *channels = 4; break;
    default: return GAN_ERR_FORMAT;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ the writer */

struct gan_tb_writer {
    int fd;
    char *path;
};

const char *gan_tb_writer_path(const gan_tb_writer *w)
{
    return w->path;
}

static gan_status io_fail(struct gan_error *err, const char *path, const char *doing)
{
    return gan_error_set(err, GAN_ERR_IO, "%s: %s failed: %s; check the run folder's disk",
                         path, doing, strerror(errno));
}

/* Writes one record around the event in `event` (which is emptied): all of it, then
 * nothing is left in a buffer of ours. */
static gan_status write_event(gan_tb_writer *w, struct gan_tb_bytes *event, struct gan_error *err)
{
    struct gan_tb_bytes rec = { 0 };
    if (!event->failed)
        gan_tb_frame_record(&rec, event->data, event->len);
    int failed = event->failed || rec.failed;
    gan_tb_bytes_free(event);
    if (failed) {
        gan_tb_bytes_free(&rec);
        return gan_error_nomem(err, "encoding a TensorBoard event");
    }
    size_t done = 0;
    while (done < rec.len) {
        ssize_t n = write(w->fd, rec.data + done, rec.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            gan_tb_bytes_free(&rec);
            return io_fail(err, w->path, "writing a TensorBoard event");
        }
        done += (size_t)n;
    }
    gan_tb_bytes_free(&rec);
    return GAN_OK;
}

gan_status gan_tb_writer_open(const char *dir, double wall_time, gan_tb_writer **out,
                              struct gan_error *err)
{
    *out = NULL;
    char host[256];
    if (gethostname(host, sizeof host) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    /* A host name cannot hold '/', but keep the file in the folder whatever it holds. */
    for (char *c = host; *c; c++)
        if (*c == '/')
            *c = '_';
    gan_tb_writer *w = calloc(1, sizeof *w);
    size_t size = strlen(dir) + strlen(host) + 64;
    if (!w || !(w->path = malloc(size))) {
        free(w);
        return gan_error_nomem(err, "opening the TensorBoard event file");
    }
    w->fd = -1;
    for (int n = 1; w->fd < 0 && n < 1000; n++) {
        int len = snprintf(w->path, size, "%s/" GAN_TB_FILE_PREFIX "%lld.%s", dir,
                           (long long)wall_time, host);
        if (n > 1)
            snprintf(w->path + len, size - (size_t)len, ".%d", n);
        w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (w->fd < 0 && errno != EEXIST)
            break;
    }
    if (w->fd < 0) {
        gan_status st = io_fail(err, w->path, "creating the TensorBoard event file");
        free(w->path);
        free(w);
        return st;
    }
    struct gan_tb_bytes event = { 0 };
    gan_tb_encode_file_version(&event, wall_time);
    gan_status st = write_event(w, &event, err);
    if (st != GAN_OK) {
        gan_tb_writer_close(w, NULL);
        return st;
    }
    *out = w;
    return GAN_OK;
}

gan_status gan_tb_write_session_start(gan_tb_writer *w, double wall_time, int64_t step,
                                      struct gan_error *err)
{
    struct gan_tb_bytes event = { 0 };
    gan_tb_encode_session_start(&event, wall_time, step);
    return write_event(w, &event, err);
}

gan_status gan_tb_write_scalars(gan_tb_writer *w, double wall_time, int64_t step,
                                const struct gan_tb_scalar *values, size_t count,
                                struct gan_error *err)
{
    struct gan_tb_bytes event = { 0 };
    gan_tb_encode_scalars(&event, wall_time, step, values, count);
    return write_event(w, &event, err);
}

gan_status gan_tb_write_image(gan_tb_writer *w, double wall_time, int64_t step,
                              const struct gan_tb_image *image, struct gan_error *err)
{
    struct gan_tb_bytes event = { 0 };
    gan_tb_encode_image(&event, wall_time, step, image);
    return write_event(w, &event, err);
}

gan_status gan_tb_writer_sync(gan_tb_writer *w, struct gan_error *err)
{
    if (w && fsync(w->fd) != 0)
        return io_fail(err, w->path, "fsync of the TensorBoard event file");
    return GAN_OK;
}

gan_status gan_tb_writer_close(gan_tb_writer *w, struct gan_error *err)
{
    if (!w)
        return GAN_OK;
    gan_status st = GAN_OK;
    if (w->fd >= 0 && close(w->fd) != 0)
        st = io_fail(err, w->path, "closing the TensorBoard event file");
    free(w->path);
    free(w);
    return st;
}
