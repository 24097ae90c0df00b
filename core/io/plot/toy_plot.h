/* SPDX-License-Identifier: MIT */
/* toy_plot.h — a PNG picture of a 2-D toy run, like the WGAN-GP paper's toy figure:
 * the critic's value field shaded behind real and generated points, and a title line. */
#ifndef GANCTL_CORE_TOY_PLOT_H
#define GANCTL_CORE_TOY_PLOT_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"

/* Colours (0xRRGGBB) of the points, as in the paper's toy code's figure: real data orange,
 * generated samples green. Each dot is a disc of about 2 px radius at 512 px,
 * painted with opacity GAN_TOY_PLOT_DOT_ALPHA so that dense clusters darken and
 * overlapping sets stay visible. */
#define GAN_TOY_PLOT_REAL_RGB 0xe8740cu
#define GAN_TOY_PLOT_FAKE_RGB 0x138a3cu
#define GAN_TOY_PLOT_DOT_ALPHA 0.6

/* The default edge of the square plot area, and the view when none is given. */
#define GAN_TOY_PLOT_DEFAULT_SIZE 512u
#define GAN_TOY_PLOT_DEFAULT_EXTENT 3.0

struct gan_toy_plot {
    unsigned size;                /* edge of the square plot area in pixels (16 … 4096);
                                     0: GAN_TOY_PLOT_DEFAULT_SIZE */
    /* The view in data units. All four 0: [−3, 3]², the paper's. */
    double xmin, xmax, ymin, ymax;
    /* The critic's values on a grid × grid lattice spanning the view corner to corner:
     * field[i·grid + j] is the value at x = xmin + j·(xmax − xmin)/(grid − 1),
     * y = ymin + i·(ymax − ymin)/(grid − 1). Shaded with a light sequential colour
     * map (light = low, blue = high) stretched to the finite values' own min and max,
     * with thin contours at tenths of that range; cells next to a NaN or infinite
     * value are hatched grey. NULL: a plain scatter on a white background. */
    const float *field;
    size_t grid;                  /* ≥ 2 when field is set */
    const float *real;            /* n_real × 2 floats (x, y); drawn first */
    size_t n_real;
    const float *fake;            /* n_fake × 2 floats; drawn on top */
    size_t n_fake;
    /* One line above the plot, e.g. "iter 2000  modes 8/8  hq 97.1%", drawn with cairo
     * in a sans-serif face; it is cut at the plot's right edge. NULL or "": no title
     * strip. */
    const char *title;
};

/* Where things are in the picture `plot` would give, in pixels from the top-left
 * corner: the data point (x, y) lies at (plot_x + (x − xmin)/(xmax − xmin)·size,
 * plot_y + (ymax − y)/(ymax − ymin)·size), pixel k covering [k, k + 1). */
struct gan_toy_plot_geometry {
    unsigned width, height;       /* the whole image */
    unsigned plot_x, plot_y;      /* the top-left pixel of the plot area */
    unsigned size;                /* the plot area's edge */
    double xmin, xmax, ymin, ymax;  /* the view, defaults applied */
};

/* Fills `out` for `plot` (defaults applied). GAN_ERR_INVALID, explained in `err`
 * (NULL: discard the message), for a description gan_toy_plot_write would refuse. */
gan_status gan_toy_plot_geometry(const struct gan_toy_plot *plot,
                                 struct gan_toy_plot_geometry *out, struct gan_error *err);

/* Renders `plot` and writes it to `path` as an 8-bit RGB PNG, atomically: a
 * temporary file in the same folder, flushed to disk, then renamed over `path`.
 * The image is the plot area with the y tick labels on its left and the x tick labels
 * below it (whole steps, at most 7 an axis), the title strip above it, and below them a
 * strip with the legend and, with a field, a colour bar of the critic's value labelled
 * at its minimum, middle and maximum (543 × 591 at the default size, titled). The text
 * is drawn with cairo. Points
 * outside the view or not finite are not drawn. Failures name the path and the
 * reason, in `err` (NULL: discard the message); on failure no temporary file remains
 * and an existing file at `path` is untouched. */
gan_status gan_toy_plot_write(const char *path, const struct gan_toy_plot *plot,
                              struct gan_error *err);

#endif
