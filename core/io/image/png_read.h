/* SPDX-License-Identifier: MIT */
/* png_read.h — decodes a PNG file with libpng into its samples: any bit depth, grey, grey
 * with alpha, RGB, RGBA or palette, interlaced or not. */
#ifndef GANCTL_CORE_PNG_READ_H
#define GANCTL_CORE_PNG_READ_H

#include <ganctl/status.h>

#include "base/error.h"
#include "io/image/decoded_image.h"

/* The first 8 bytes of every PNG file. */
#define GAN_PNG_SIGNATURE_SIZE 8

/* Whether `head` (n bytes from the start of a file) begins with PNG's signature. */
int gan_png_signature(const unsigned char *head, size_t n);

/* Reads the PNG file `path` into `out` (cleared first; free with gan_decoded_image_clear):
 * 1, 2 and 4-bit grey become 8-bit grey (scaled, so 1-bit white is 255), a palette becomes
 * RGB, or RGBA when the file has a transparency chunk, as does grey or RGB with one; 8 and
 * 16-bit samples stay as they are (16-bit in host byte order). No gamma is applied.
 * Errors, each naming the file: GAN_ERR_IO (cannot open or read), GAN_ERR_FORMAT (not a
 * PNG, damaged or truncated, with libpng's reason; larger than GAN_DECODED_MAX_PIXELS),
 * GAN_ERR_NOMEM. */
gan_status gan_png_read(const char *path, struct gan_decoded_image *out, struct gan_error *err);

#endif
