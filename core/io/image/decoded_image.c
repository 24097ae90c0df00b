/* SPDX-License-Identifier: MIT */
/* decoded_image.c — the decoders' common result: freeing it, and reading one sample on
 * the 8-bit scale whatever the file's depth. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/image/decoded_image.h"

void gan_decoded_image_clear(struct gan_decoded_image *img)
{
    if (!img)
        return;
    free(img->samples);
    memset(img, 0, sizeof *img);
}

float gan_decoded_image_sample(const struct gan_decoded_image *img, unsigned x, unsigned y,
                               unsigned c)
{
    size_t k = ((size_t)y * img->width + x) * img->channels + c;
    if (img->bits == 16)
        return (float)((const uint16_t *)img->samples)[k] / 257.0f;
    return (float)((const unsigned char *)img->samples)[k];
}
