/* SPDX-License-Identifier: MIT */
/* image_resize.h — turns a decoded image of any size into the training data's shape: the
 * centre square, an area (box-filter) resize to size × size, 1 or 3 channels, 8 bits. */
#ifndef GANCTL_CORE_IMAGE_RESIZE_H
#define GANCTL_CORE_IMAGE_RESIZE_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "io/image/decoded_image.h"

/* The centre square of a width × height image: side = min(width, height), its top-left
 * corner at ((width − side) / 2, (height − side) / 2), rounded down, so an odd surplus
 * leaves its extra column or row on the right or at the bottom. */
void gan_image_centre_square(unsigned width, unsigned height, unsigned *x0, unsigned *y0,
                             unsigned *side);

/* The area resize of `planes` square planes of src_side² floats (plane after plane, rows
 * top first) into as many of dst_side² floats. Destination pixel (i, j) covers the source
 * square [j·s/d, (j + 1)·s/d) × [i·s/d, (i + 1)·s/d) (s = src_side, d = dst_side), and its
 * value is the mean of the source pixels over that square, each weighted by the area it
 * shares with it: a box filter, exact for a whole ratio (4 → 2 averages each 2 × 2 block),
 * and for an enlargement (s < d) each source pixel becomes a block of nearly equal copies.
 * It runs separably, rows then columns, accumulating in double. GAN_ERR_INVALID for a
 * side of 0; GAN_ERR_NOMEM. */
gan_status gan_image_area_resize(const float *src, unsigned src_side, unsigned planes,
                                 unsigned dst_side, float *dst, struct gan_error *err);

/* The whole conversion of one decoded image into channels × size × size bytes at `out`
 * (CHW, rows top first), which gan_image_pixel_value then maps to [−1, 1] as it does
 * Fashion-MNIST's bytes. On the 0 … 255 scale of gan_decoded_image_sample, in float:
 *   alpha   composited over black (each colour sample times alpha / max), so transparent
 *           pixels are the background of Fashion-MNIST's images;
 *   grey    from RGB by the ITU-R BT.601 luma 0.299 R + 0.587 G + 0.114 B (as PIL's
 *           convert("L")), on the stored values; to RGB by repeating it;
 *   shape   the centre square (gan_image_centre_square), area-resized to size × size;
 * then each value is rounded to the nearest byte, once, at the end. The averaging is on
 * the stored (gamma-encoded) values, as PIL's box filter and torchvision's resizes do, so a
 * folder made by exporting a data set's images reads back exactly at their own size.
 * channels is 1 or 3; GAN_ERR_INVALID otherwise or for an empty image; GAN_ERR_NOMEM. */
gan_status gan_image_convert(const struct gan_decoded_image *img, unsigned channels,
                             unsigned size, unsigned char *out, struct gan_error *err);

#endif
