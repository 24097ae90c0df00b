/* SPDX-License-Identifier: MIT */
/* decoded_image.h — an image file's pixels as its decoder gave them (PNG or JPEG): width,
 * height, 1 to 4 interleaved channels of 8 or 16 bits, before any conversion. */
#ifndef GANCTL_CORE_DECODED_IMAGE_H
#define GANCTL_CORE_DECODED_IMAGE_H

#include <stddef.h>

/* The largest image the decoders read: 2^25 pixels (e.g. 8192 × 4096). A bigger file is
 * refused (the image folder skips it) rather than decoded: its samples alone would take up
 * to 256 MiB (16-bit RGBA), and training images are far smaller. */
#define GAN_DECODED_MAX_PIXELS ((size_t)1 << 25)

struct gan_decoded_image {
    unsigned width, height;
    /* 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA: a palette is expanded to RGB (RGBA with a
     * transparency chunk), grey below 8 bits to 8 bits. */
    unsigned channels;
    unsigned bits;                /* 8 (unsigned char) or 16 (uint16_t, host byte order) */
    /* height rows, top first, of width pixels of `channels` samples each. Samples are as
     * stored: no gamma or colour-profile conversion. */
    void *samples;
};

/* Frees the samples and zeroes the struct; a zeroed struct is fine. */
void gan_decoded_image_clear(struct gan_decoded_image *img);

/* Sample c of pixel (x, y) on the 0 … 255 scale: an 8-bit value as is, a 16-bit one
 * divided by 257 (so 65535 → 255 and 257·v → v exactly). */
float gan_decoded_image_sample(const struct gan_decoded_image *img, unsigned x, unsigned y,
                               unsigned c);

#endif
