/* SPDX-License-Identifier: MIT */
/* jpeg_read.h — decodes a JPEG file with libjpeg (libjpeg-turbo) into 8-bit grey or RGB
 * samples. */
#ifndef GANCTL_CORE_JPEG_READ_H
#define GANCTL_CORE_JPEG_READ_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "io/image/decoded_image.h"

/* Whether `head` (n bytes from the start of a file) begins like a JPEG file: the start
 * of image marker FF D8 and the first byte of the next marker, FF. */
int gan_jpeg_signature(const unsigned char *head, size_t n);

/* Reads the JPEG file `path` into `out` (cleared first; free with
 * gan_decoded_image_clear): a grey JPEG as 1 channel, a YCbCr or RGB one as 3 channels
 * of RGB, 8 bits each, converted by libjpeg's default (accurate) decoder. Errors, each
 * naming the file: GAN_ERR_IO (cannot open), GAN_ERR_FORMAT (not a JPEG, damaged, or
 * truncated — libjpeg would fill a cut-off file with grey, which is refused instead;
 * CMYK and YCCK, which ganctl does not convert; larger than GAN_DECODED_MAX_PIXELS),
 * GAN_ERR_NOMEM. */
gan_status gan_jpeg_read(const char *path, struct gan_decoded_image *out, struct gan_error *err);

#endif
