/* SPDX-License-Identifier: MIT */
/* image_grid.h — a PNG sheet of rows × cols small images (e.g. 8 × 8 generated 28 × 28
 * samples) with a separator between them, values in [−1, 1] shown as grey levels. */
#ifndef GANCTL_CORE_IMAGE_GRID_H
#define GANCTL_CORE_IMAGE_GRID_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"

/* The separator's grey level. Fashion-MNIST's garments are light on a black ground
 * (−1 → 0), so a mid grey frames each cell against both the ground and white ink. */
#define GAN_IMAGE_GRID_SEPARATOR_GREY 128u
/* A pixel whose value is NaN is painted in this colour (0xRRGGBB), and the whole
 * sheet becomes RGB: a network that produced NaN shows it at a glance. ±inf are
 * clamped like any value out of range. */
#define GAN_IMAGE_GRID_NAN_RGB 0xff00ffu

#define GAN_IMAGE_GRID_MAX_SEPARATOR 16u
#define GAN_IMAGE_GRID_MAX_SCALE 16u
#define GAN_IMAGE_GRID_MAX_SIDE 16384u

struct gan_image_grid {
    /* `count` images, NCHW: image i's channel c row y column x is
     * images[((i·channels + c)·height + y)·width + x]. They fill the cells row by row;
     * cells past `count` (or past rows·cols images) show the separator grey. */
    const float *images;
    size_t count;
    unsigned channels;            /* 1 (grey) or 3 (RGB) */
    unsigned height, width;       /* of one image, in its own pixels */
    unsigned rows, cols;          /* of the sheet */
    unsigned separator;           /* pixels between cells and around the sheet, 0 … 16 */
    unsigned scale;               /* each image pixel drawn as scale × scale; 0 means 1 */
    /* Values low … high map linearly onto 0 … 255 (rounded, clamped); both 0: the data's
     * [−1, 1], so −1 → 0, 0 → 128 (127.5 rounds up) and 1 → 255. */
    float low, high;
    const char *title;            /* a tEXt "Title" in the file; NULL for none */
};

/* The size of the sheet `grid` describes:
 *   width  = cols·width·scale  + (cols + 1)·separator,
 *   height = rows·height·scale + (rows + 1)·separator;
 * cell (r, c) has its top-left pixel at (separator + c·(width·scale + separator),
 * separator + r·(height·scale + separator)). GAN_ERR_INVALID, explained in err, for a
 * description gan_image_grid_write would refuse. */
gan_status gan_image_grid_size(const struct gan_image_grid *grid, unsigned *width,
                               unsigned *height, struct gan_error *err);

/* Writes the sheet to `path` as an 8-bit PNG, grey (or RGB for 3-channel images, or when
 * a value is NaN), atomically: a temporary file in the same folder, flushed, then renamed
 * over `path`, so a reader never sees half a picture. Failures name the path and the
 * reason in err (NULL: discard); no temporary file remains and an existing `path` is
 * untouched. */
gan_status gan_image_grid_write(const char *path, const struct gan_image_grid *grid,
                                struct gan_error *err);

#endif
