/* SPDX-License-Identifier: MIT */
/* idx.c — reads IDX arrays (MNIST's format) through zlib's gzread, which passes a plain
 * file through unchanged, so one path reads both; every field is checked before it is used. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/file_open.h"
#include "data/idx.h"

size_t gan_idx_type_size(int type)
{
    switch (type) {
    case GAN_IDX_U8:
    case GAN_IDX_I8: return 1;
    case GAN_IDX_I16: return 2;
    case GAN_IDX_I32:
    case GAN_IDX_F32: return 4;
    case GAN_IDX_F64: return 8;
    default: return 0;
    }
}

const char *gan_idx_type_name(int type)
{
    switch (type) {
    case GAN_IDX_U8: return "unsigned bytes";
    case GAN_IDX_I8: return "signed bytes";
    case GAN_IDX_I16: return "16-bit integers";
    case GAN_IDX_I32: return "32-bit integers";
    case GAN_IDX_F32: return "32-bit floats";
    case GAN_IDX_F64: return "64-bit floats";
    default: return "an unknown type";
    }
}

void gan_idx_free(struct gan_idx *idx)
{
    if (!idx)
        return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

/* ------------------------------------------------------------------ the stream */

struct reader {
    const char *path;
    gzFile gz;
    unsigned long long pos;       /* uncompressed bytes consumed so far */
    struct gan_error *err;
    gan_status status;            /* of the last failure, which err (maybe NULL) explains */
};

/* zlib's account of a failed gzread, recorded against the file. */
static gan_status stream_fail(struct reader *r)
{
    int errnum = Z_OK;
    r->status = GAN_ERR_FORMAT;
    const char *msg = gzerror(r->gz, &errnum);
    if (errnum == Z_ERRNO)
        return r->status = gan_error_set(r->err, GAN_ERR_IO, "%s: reading failed after "
                                         "%llu bytes: %s; check the disk and the file's "
                                         "permissions", r->path, r->pos, strerror(errno));
    if (errnum == Z_MEM_ERROR)
        return r->status = gan_error_set(r->err, GAN_ERR_NOMEM, "%s: out of memory while "
                                         "decompressing", r->path);
    /* zlib prefixes its message with the name it was opened under, "<fd:3>" here. */
    const char *colon = msg ? strstr(msg, ": ") : NULL;
    if (msg && colon && strncmp(msg, "<fd:", 4) == 0)
        msg = colon + 2;
    return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the gzip stream is corrupt after %llu "
                         "uncompressed bytes (%s); download or install the file again",
                         r->path, r->pos, msg && *msg ? msg : "zlib gave no reason");
}

/* Reads up to n bytes into buf. Returns how many arrived (fewer only at the end of the
 * stream), or -1 with the failure recorded. */
static long long read_some(struct reader *r, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t chunk = n - got;
        if (chunk > ((size_t)1 << 30))
            chunk = (size_t)1 << 30;   /* gzread takes an unsigned and returns an int */
        int k = gzread(r->gz, (char *)buf + got, (unsigned)chunk);
        if (k < 0) {
            stream_fail(r);
            return -1;
        }
        if (k == 0)
            break;
        got += (size_t)k;
        r->pos += (unsigned long long)k;
    }
    return (long long)got;
}

/* After a short read: a gzip stream cut off mid-way leaves zlib's "unexpected end of
 * file" behind, worth adding to the message; a plain file says nothing more. */
static const char *cut_note(struct reader *r)
{
    int errnum = Z_OK;
    gzerror(r->gz, &errnum);
    return errnum == Z_BUF_ERROR ? " (the gzip stream itself is cut short)" : "";
}

/* ------------------------------------------------------------------ messages */

/* "[60000, 28, 28] of unsigned bytes" into buf; a negative size prints as N. */
static const char *shape_text(char *buf, size_t size, int ndim, const int64_t *dims, int type)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++) {
        if (dims[d] < 0)
            used += (size_t)snprintf(buf + used, size - used, "%sN", d ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "",
                                     (long long)dims[d]);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]%s%s", type ? " of " : "",
                 type ? gan_idx_type_name(type) : "");
    return buf;
}

static int matches(const struct gan_idx_expect *e, int type, int ndim, const int64_t *dims)
{
    if (!e)
        return 1;
    if (e->type && e->type != type)
        return 0;
    if (e->ndim) {
        if (e->ndim != ndim)
            return 0;
        for (int d = 0; d < ndim; d++)
            if (e->dims[d] != GAN_IDX_ANY_SIZE && e->dims[d] != dims[d])
                return 0;
    }
    return 1;
}

static gan_status mismatch(struct reader *r, const struct gan_idx_expect *e, int type,
                           int ndim, const int64_t *dims)
{
    char have[160], want[160];
    shape_text(have, sizeof have, ndim, dims, type);
    if (e->ndim)
        shape_text(want, sizeof want, e->ndim, e->dims, e->type);
    else
        snprintf(want, sizeof want, "an array of %s", gan_idx_type_name(e->type));
    return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: holds %s, but %s must be %s; is it the "
                         "right file?", r->path, have,
                         e->what ? e->what : "the array", want);
}

/* ------------------------------------------------------------------ the array */

static void to_host_order(unsigned char *data, size_t count, size_t size)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    if (size < 2 || first == 0)
        return;                       /* bytes, or a big-endian host: already in order */
    for (size_t i = 0; i < count; i++) {
        unsigned char *p = data + i * size;
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}

/* Counts the bytes left in the stream (up to a bound: a message needs no more). */
static long long count_rest(struct reader *r, int *more)
{
    unsigned char buf[4096];
    long long total = 0;
    *more = 0;
    for (;;) {
        long long n = read_some(r, buf, sizeof buf);
        if (n < 0)
            return -1;
        total += n;
        if (n < (long long)sizeof buf)
            return total;
        if (total >= (1LL << 26)) {
            *more = 1;
            return total;
        }
    }
}

/* The 4-byte magic number: two zero bytes, the element type and the dimension count.
 * Its own step because each of its bytes has a message of its own. */
static gan_status read_magic(struct reader *r, int *type, int *ndim, size_t *esize)
{
    unsigned char magic[4];
    long long n = read_some(r, magic, 4);
    if (n < 0)
        return r->status;
    if (n == 0)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the file is empty%s, not an IDX "
                             "array; download or install it again", r->path, cut_note(r));
    if (n < 4)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the file ends after %lld bytes, "
                             "inside the 4-byte magic number%s: it is truncated or not an "
                             "IDX file", r->path, n, cut_note(r));
    if (magic[0] != 0 || magic[1] != 0)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: wrong magic bytes %02x %02x %02x "
                             "%02x: an IDX file starts 00 00 <type> <dimension count> "
                             "(MNIST images: 00 00 08 03); this is not an IDX file",
                             r->path, magic[0], magic[1], magic[2], magic[3]);
    *type = magic[2];
    *ndim = magic[3];
    *esize = gan_idx_type_size(*type);
    if (!*esize)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: wrong magic bytes 00 00 %02x %02x: "
                             "type code 0x%02x is none of IDX's (08 unsigned byte, 09 signed "
                             "byte, 0b int16, 0c int32, 0d float32, 0e float64)", r->path,
                             magic[2], magic[3], *type);
    if (*ndim < 1 || *ndim > GAN_IDX_MAX_DIMS)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the magic bytes 00 00 %02x %02x "
                             "give %d dimensions; this reader takes 1 to %d (MNIST's files "
                             "have 1 or 3)", r->path, magic[2], magic[3], *ndim,
                             GAN_IDX_MAX_DIMS);
    return GAN_OK;
}

/* The ndim big-endian 32-bit sizes after the magic number, which complete the
 * header of `header` bytes. */
static gan_status read_dims(struct reader *r, int ndim, size_t header, int64_t *dims)
{
    unsigned char sizes[4 * GAN_IDX_MAX_DIMS];
    long long n = read_some(r, sizes, 4 * (size_t)ndim);
    if (n < 0)
        return r->status;
    if (n < 4 * ndim)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the file ends at byte %llu, inside "
                             "its %zu-byte header (%d dimensions)%s: it is truncated; download "
                             "or install it again", r->path, r->pos, header, ndim, cut_note(r));
    for (int d = 0; d < ndim; d++) {
        const unsigned char *p = sizes + 4 * d;
        dims[d] = (int64_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16)
                            | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
    }
    return GAN_OK;
}

/* The number of elements the header claims, refused above GAN_IDX_MAX_BYTES before
 * anything is allocated for it. Each size is below 2^32, so the product is checked
 * one factor at a time; a zero size makes the array empty whatever the others say. */
static gan_status element_count(struct reader *r, int type, int ndim, const int64_t *dims,
                                size_t esize, uint64_t *out)
{
    uint64_t count = 1, limit = GAN_IDX_MAX_BYTES / esize;
    int too_big = 0;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] == 0) {
            count = 0;
            too_big = 0;
            break;
        }
        if (!too_big && count > limit / (uint64_t)dims[d])
            too_big = 1;
        else if (!too_big)
            count *= (uint64_t)dims[d];
    }
    if (too_big) {
        char have[160];
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the header claims a %s array, more "
                             "than the reader's limit of %llu bytes: the header is corrupt",
                             r->path, shape_text(have, sizeof have, ndim, dims, type),
                             (unsigned long long)GAN_IDX_MAX_BYTES);
    }
    *out = count;
    return GAN_OK;
}

/* A plain file's length is known before reading: a truncated or padded one fails
 * at once, without allocating what its header claims. */
static gan_status check_plain_length(struct reader *r, long long file_size, size_t header,
                                     unsigned long long bytes)
{
    unsigned long long total = header + bytes;
    if (file_size < 0 || !gzdirect(r->gz))
        return GAN_OK;
    if ((unsigned long long)file_size < total)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the file ends at byte %lld of "
                             "the %llu its header promises (%zu header + %llu data): it "
                             "is truncated; download or install it again", r->path,
                             file_size, total, header, bytes);
    if ((unsigned long long)file_size > total)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: %llu bytes follow the %llu its "
                             "header accounts for: trailing garbage, or a corrupt header",
                             r->path, (unsigned long long)file_size - total, total);
    return GAN_OK;
}

/* The data's `bytes` bytes into a new buffer (*out, the caller's on success). A gzip
 * file's length is not known: the buffer grows with what arrives, so a header that
 * lies costs at most twice the real data. */
static gan_status read_data(struct reader *r, size_t header, unsigned long long bytes,
                            unsigned char **out)
{
    unsigned long long total = header + bytes;
    size_t cap = bytes < ((size_t)1 << 20) ? (size_t)bytes : (size_t)1 << 20, have = 0;
    unsigned char *data = malloc(cap ? cap : 1);
    if (!data)
        return gan_error_set(r->err, GAN_ERR_NOMEM, "%s: out of memory for %zu bytes",
                             r->path, cap);
    while (have < bytes) {
        if (have == cap) {
            size_t next = cap > (size_t)bytes / 2 ? (size_t)bytes : 2 * cap;
            unsigned char *grown = realloc(data, next);
            if (!grown) {
                free(data);
                return gan_error_set(r->err, GAN_ERR_NOMEM, "%s: out of memory for %zu "
                                     "bytes of a %llu-byte array", r->path, next, bytes);
            }
            data = grown;
            cap = next;
        }
        size_t want = cap - have;
        long long n = read_some(r, data + have, want);
        if (n < 0) {
            free(data);
            return r->status;
        }
        have += (size_t)n;
        if ((size_t)n < want)
            break;
    }
    if (have < bytes) {
        free(data);
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the file ends at byte %llu of the "
                             "%llu its header promises (%zu header + %llu data)%s: it is "
                             "truncated; download or install it again", r->path, r->pos,
                             total, header, bytes, cut_note(r));
    }
    *out = data;
    return GAN_OK;
}

/* After the data the stream must end, and end cleanly: nothing may follow the
 * `total` bytes the header accounts for, and a gzip stream whose trailer (CRC and
 * length) is missing is still a damaged file although all the data arrived. */
static gan_status check_stream_end(struct reader *r, unsigned long long total)
{
    int more = 0;
    long long rest = count_rest(r, &more);
    if (rest < 0)
        return r->status;
    if (rest > 0)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: %s%lld bytes follow the %llu its "
                             "header accounts for: trailing garbage, or a corrupt header",
                             r->path, more ? "at least " : "", rest, total);
    int errnum = Z_OK;
    gzerror(r->gz, &errnum);
    if (errnum != Z_OK)
        return gan_error_set(r->err, GAN_ERR_FORMAT, "%s: the gzip stream ends without its "
                             "trailer after the data: the file is truncated; download or "
                             "install it again", r->path);
    return GAN_OK;
}

/* One IDX array from the open stream into *out, each step checked before the next
 * relies on it; file_size is the plain file's length, or -1 when unknown. */
static gan_status read_stream(struct reader *r, const struct gan_idx_expect *expect,
                              long long file_size, struct gan_idx *out)
{
    int type = 0, ndim = 0;
    size_t esize = 0;
    gan_status st = read_magic(r, &type, &ndim, &esize);
    if (st != GAN_OK)
        return st;
    size_t header = 4 + 4 * (size_t)ndim;
    int64_t dims[GAN_IDX_MAX_DIMS];
    st = read_dims(r, ndim, header, dims);
    if (st != GAN_OK)
        return st;
    if (!matches(expect, type, ndim, dims))
        return mismatch(r, expect, type, ndim, dims);
    uint64_t count = 0;
    st = element_count(r, type, ndim, dims, esize, &count);
    if (st != GAN_OK)
        return st;
    unsigned long long bytes = count * esize, total = header + bytes;
    st = check_plain_length(r, file_size, header, bytes);
    if (st != GAN_OK)
        return st;
    unsigned char *data = NULL;
    st = read_data(r, header, bytes, &data);
    if (st != GAN_OK)
        return st;
    st = check_stream_end(r, total);
    if (st != GAN_OK) {
        free(data);
        return st;
    }
    to_host_order(data, (size_t)count, esize);
    out->type = (enum gan_idx_type)type;
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        out->dims[d] = dims[d];
    out->count = (size_t)count;
    out->elem_size = esize;
    out->data = data;
    return GAN_OK;
}

gan_status gan_idx_read(const char *path, const struct gan_idx_expect *expect,
                        struct gan_idx *out, struct gan_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !*path || !out)
        return gan_error_set(err, GAN_ERR_INVALID, "IDX reader: %s", !out ? "no result "
                             "struct given" : "no file name given; pass the path of an IDX "
                             "file");
    if (expect && (expect->ndim < 0 || expect->ndim > GAN_IDX_MAX_DIMS
                   || (expect->type && !gan_idx_type_size(expect->type))))
        return gan_error_set(err, GAN_ERR_INVALID, "IDX reader: %s: the expected shape has %d "
                             "dimensions and type 0x%02x; it needs 0 to %d and a known type "
                             "or 0", path, expect->ndim, (unsigned)expect->type,
                             GAN_IDX_MAX_DIMS);
    const char *kind;
    int fd = gan_open_regular(path, &kind);
    if (fd < 0 && kind && strcmp(kind, GAN_FILE_KIND_FOLDER) == 0)
        return gan_error_set(err, GAN_ERR_IO, "%s: is a folder, not an IDX file; name the "
                             "file inside it", path);
    if (fd < 0 && kind)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s is %s, not an IDX file; name the "
                             "regular file that holds the data", path, kind);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return gan_error_set(err, GAN_ERR_NOT_FOUND, "%s: no such file", path);
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot open it: %s; check its permissions",
                             path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot examine it: %s", path, strerror(e));
    }
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory opening it", path);
    }
    gzbuffer(gz, 1u << 17);
    struct reader r = { path, gz, 0, err, GAN_OK };
    gan_status st = read_stream(&r, expect, S_ISREG(sb.st_mode) ? (long long)sb.st_size : -1,
                                out);
    gzclose_r(gz);
    return st;
}
