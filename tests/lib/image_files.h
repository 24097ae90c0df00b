/* SPDX-License-Identifier: MIT */
/* image_files.h — writes the PNG and JPEG files the image folder's tests read: every PNG
 * colour type and depth through libpng, JPEG through libjpeg, from known samples. */
#ifndef GANCTL_TESTS_IMAGE_FILES_H
#define GANCTL_TESTS_IMAGE_FILES_H

/* A PNG of w × h pixels, `channels` interleaved samples each (1 grey, 2 grey + alpha, 3
 * RGB, 4 RGBA), rows top first. bits 8 or 16: unsigned char or uint16_t samples; bits 1,
 * 2 or 4 (grey only): one unsigned char per pixel holding 0 … 2^bits − 1. 0 on success. */
int test_write_png(const char *path, unsigned w, unsigned h, unsigned channels, unsigned bits,
                   const void *samples);

/* A palette PNG of w × h 8-bit indices into `n` RGB entries (rgb: 3n bytes); with
 * `alpha` (n bytes, NULL for none) a transparency chunk. 0 on success. */
int test_write_png_palette(const char *path, unsigned w, unsigned h, const unsigned char *index,
                           const unsigned char *rgb, unsigned n, const unsigned char *alpha);

/* A baseline JPEG of w × h pixels, 1 (grey), 3 (RGB) or 4 (CMYK) channels of 8 bits, at
 * `quality` (1 … 100). 0 on success. */
int test_write_jpeg(const char *path, unsigned w, unsigned h, unsigned channels,
                    const unsigned char *samples, int quality);

/* The first `keep` bytes of the file `from` into `to` (a truncated copy). 0 on success. */
int test_truncate_copy(const char *from, const char *to, long keep);

#endif
