/* SPDX-License-Identifier: MIT */
/* tensorboard.h — TensorBoard event files: TFRecord framing (lengths and data guarded by
 * masked CRC-32C) around the few fields of the Event and Summary protobufs a run writes. */
#ifndef GANCTL_IO_TENSORBOARD_H
#define GANCTL_IO_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"

/* The file name's prefix TensorBoard looks for: events.out.tfevents.<time>.<host>. */
#define GAN_TB_FILE_PREFIX "events.out.tfevents."
/* The first record of every file: Event.file_version. */
#define GAN_TB_FILE_VERSION "brain.Event:2"

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of n bytes, continuing from
 * `crc` (0 to start); TFRecord's checksum. */
uint32_t gan_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord stores a CRC rotated right by 15 bits plus 0xa282ead8, so that a CRC of
 * data that itself holds CRCs stays well mixed. */
uint32_t gan_crc32c_mask(uint32_t crc);

/* A growing byte buffer the encoders below append to. */
struct gan_tb_bytes {
    unsigned char *data;
    size_t len, cap;
    int failed;                   /* an allocation failed; the contents are incomplete */
};
void gan_tb_bytes_free(struct gan_tb_bytes *b);

/* One scalar of a summary: the tag TensorBoard plots it under, and its value. */
struct gan_tb_scalar {
    const char *tag;
    float value;
};

/* An image of a summary: a PNG file's bytes and what TensorBoard shows of it. */
struct gan_tb_image {
    const char *tag;
    const unsigned char *png;
    size_t png_len;
    unsigned width, height;
    int channels;                 /* 1 grey, 3 RGB, 4 RGBA (Summary.Image.colorspace) */
};

/* The protobuf bytes of one Event (what a record's data holds), appended to b:
 * wall_time (field 1, double), step (2, int64), then one of file_version (3),
 * summary (5: Summary.value = 1, each Value with tag = 1 and simple_value = 2 or
 * image = 4) or session_log (7: SessionLog.status = 1, START = 1). Exposed for the
 * tests, which compare them with known bytes. */
void gan_tb_encode_file_version(struct gan_tb_bytes *b, double wall_time);
void gan_tb_encode_scalars(struct gan_tb_bytes *b, double wall_time, int64_t step,
                           const struct gan_tb_scalar *values, size_t count);
void gan_tb_encode_image(struct gan_tb_bytes *b, double wall_time, int64_t step,
                         const struct gan_tb_image *image);
void gan_tb_encode_session_start(struct gan_tb_bytes *b, double wall_time, int64_t step);
/* A TFRecord around `len` bytes of data, appended to b. */
void gan_tb_frame_record(struct gan_tb_bytes *b, const void *data, size_t len);

typedef struct gan_tb_writer gan_tb_writer;

/* A new event file in `dir`, events.out.tfevents.<seconds since the epoch>.<host name>
 * (".2", ".3", … appended when that exists: a file is never shared), holding its
 * file_version record. A resumed run opens a new file and marks its restart with
 * gan_tb_write_session_start. */
gan_status gan_tb_writer_open(const char *dir, double wall_time, gan_tb_writer **out,
                              struct gan_error *err);
/* The file's path, for messages and tests. */
const char *gan_tb_writer_path(const gan_tb_writer *w);
/* SessionLog START at `step`: TensorBoard then drops the values earlier files hold for
 * steps from `step` on, which a resumed run writes again. */
gan_status gan_tb_write_session_start(gan_tb_writer *w, double wall_time, int64_t step,
                                      struct gan_error *err);
/* One Event with these scalars at `step`. Each record is flushed to the kernel as it is
 * written, so that a crash loses none already written. */
gan_status gan_tb_write_scalars(gan_tb_writer *w, double wall_time, int64_t step,
                                const struct gan_tb_scalar *values, size_t count,
                                struct gan_error *err);
gan_status gan_tb_write_image(gan_tb_writer *w, double wall_time, int64_t step,
                              const struct gan_tb_image *image, struct gan_error *err);
/* Waits until the records so far are on disk (at a checkpoint). */
gan_status gan_tb_writer_sync(gan_tb_writer *w, struct gan_error *err);
/* Closes the file (NULL is allowed); err may be NULL. */
gan_status gan_tb_writer_close(gan_tb_writer *w, struct gan_error *err);

/* The size of a PNG from its IHDR chunk, and its channel count from the colour type
 * (grey 1, grey+alpha 2, RGB or palette 3, RGBA 4). GAN_ERR_FORMAT for bytes that are
 * not a PNG. */
gan_status gan_tb_png_size(const unsigned char *png, size_t len, unsigned *width,
                           unsigned *height, int *channels);

#endif
