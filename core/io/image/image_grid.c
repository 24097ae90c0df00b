/* SPDX-License-Identifier: MIT */
/* image_grid.c — lays small images out on a sheet with separators, maps values to grey
 * levels, and writes the sheet as a PNG through png_write.c (a temporary file and a rename). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/image/image_grid.h"
#include "io/image/png_write.h"

/* ------------------------------------------------------------------ checking */

static gan_status grid_invalid(struct gan_error *err, const char *path, const char *what)
{
    return gan_error_set(err, GAN_ERR_INVALID, "image grid %s: %s", path ? path : "(null)",
                         what);
}

/* Checks the description and computes the sheet's size. */
static gan_status layout(const char *path, const struct gan_image_grid *g, unsigned *width,
                         unsigned *height, struct gan_error *err)
{
    if (!g)
        return grid_invalid(err, path, "no grid description given");
    if (g->count && !g->images)
        return grid_invalid(err, path, "count is set but images is NULL");
    if (g->channels != 1 && g->channels != 3)
        return grid_invalid(err, path, "channels must be 1 (grey) or 3 (RGB)");
    if (g->height < 1 || g->width < 1 || g->rows < 1 || g->cols < 1)
        return grid_invalid(err, path, "the image size and the rows and columns of the "
                            "sheet must all be at least 1");
    if (g->separator > GAN_IMAGE_GRID_MAX_SEPARATOR)
        return grid_invalid(err, path, "the separator must be 0 to 16 pixels (1 or 2 is "
                            "usual)");
    if (g->scale > GAN_IMAGE_GRID_MAX_SCALE)
        return grid_invalid(err, path, "the scale must be 0 to 16 (0 and 1 both draw one "
                            "pixel per image pixel)");
    if (!(g->low == 0.0f && g->high == 0.0f)
        && !(isfinite(g->low) && isfinite(g->high) && g->low < g->high))
        return grid_invalid(err, path, "the value range needs finite low < high (both 0: "
                            "[-1, 1])");
    uint64_t s = g->scale ? g->scale : 1;
    uint64_t w = (uint64_t)g->cols * g->width * s + ((uint64_t)g->cols + 1) * g->separator;
    uint64_t h = (uint64_t)g->rows * g->height * s + ((uint64_t)g->rows + 1) * g->separator;
    if (w > GAN_IMAGE_GRID_MAX_SIDE || h > GAN_IMAGE_GRID_MAX_SIDE)
        return grid_invalid(err, path, "the sheet would be more than 16384 pixels wide or "
                            "high; use fewer rows or columns or a smaller scale");
    *width = (unsigned)w;
    *height = (unsigned)h;
    return GAN_OK;
}

gan_status gan_image_grid_size(const struct gan_image_grid *grid, unsigned *width,
                               unsigned *height, struct gan_error *err)
{
    unsigned w = 0, h = 0;
    gan_status st = layout("(size)", grid, &w, &h, err);
    if (width)
        *width = w;
    if (height)
        *height = h;
    return st;
}

/* ------------------------------------------------------------------ drawing */

struct sheet {
    unsigned w, h;
    int rgb;                       /* 3 bytes a pixel, else 1 */
    unsigned char *px;             /* rows top first */
};

/* A value as a byte: linear from [lo, hi] onto [0, 255], rounded half up, clamped. */
static unsigned char level(double v, double lo, double hi)
{
    double t = (v - lo) / (hi - lo) * 255.0;
    if (!(t > 0.0))
        return 0;
    if (t >= 255.0)
        return 255;
    return (unsigned char)floor(t + 0.5);
}

static size_t images_shown(const struct gan_image_grid *g)
{
    size_t cells = (size_t)g->rows * g->cols;
    return g->count < cells ? g->count : cells;
}

static int has_nan(const struct gan_image_grid *g)
{
    size_t n = images_shown(g) * g->channels * g->height * g->width;
    for (size_t k = 0; k < n; k++)
        if (isnan(g->images[k]))
            return 1;
    return 0;
}

static void draw(const struct gan_image_grid *g, struct sheet *sh)
{
    double lo = g->low, hi = g->high;
    if (lo == 0.0 && hi == 0.0) {
        lo = -1.0;
        hi = 1.0;
    }
    unsigned scale = g->scale ? g->scale : 1, bpp = sh->rgb ? 3 : 1;
    size_t plane = (size_t)g->height * g->width;
    memset(sh->px, GAN_IMAGE_GRID_SEPARATOR_GREY, (size_t)sh->w * sh->h * bpp);
    const unsigned char nan_rgb[3] = {
        (unsigned char)(GAN_IMAGE_GRID_NAN_RGB >> 16), (unsigned char)(GAN_IMAGE_GRID_NAN_RGB >> 8),
        (unsigned char)GAN_IMAGE_GRID_NAN_RGB,
    };
    for (size_t i = 0; i < images_shown(g); i++) {
        unsigned r = (unsigned)(i / g->cols), c = (unsigned)(i % g->cols);
        unsigned x0 = g->separator + c * (g->width * scale + g->separator);
        unsigned y0 = g->separator + r * (g->height * scale + g->separator);
        const float *img = g->images + i * g->channels * plane;
        for (unsigned y = 0; y < g->height; y++) {
            for (unsigned x = 0; x < g->width; x++) {
                unsigned char p[3];
                int nan = 0;
                for (unsigned ch = 0; ch < 3; ch++) {
                    float v = img[(g->channels == 3 ? ch : 0) * plane + (size_t)y * g->width + x];
                    nan |= isnan(v);
                    p[ch] = level(v, lo, hi);
                }
                if (nan)
                    memcpy(p, nan_rgb, 3);
                for (unsigned dy = 0; dy < scale; dy++) {
                    unsigned char *row = sh->px + ((size_t)(y0 + y * scale + dy) * sh->w
                                                   + x0 + x * scale) * bpp;
                    for (unsigned dx = 0; dx < scale; dx++)
                        memcpy(row + (size_t)dx * bpp, p, bpp);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ the file */

gan_status gan_image_grid_write(const char *path, const struct gan_image_grid *grid,
                                struct gan_error *err)
{
    if (!path || !*path)
        return grid_invalid(err, path, "no file name; pass the path of the PNG to write");
    struct sheet sh = { 0, 0, 0, NULL };
    gan_status st = layout(path, grid, &sh.w, &sh.h, err);
    if (st != GAN_OK)
        return st;
    sh.rgb = grid->channels == 3 || has_nan(grid);
    sh.px = malloc((size_t)sh.w * sh.h * (sh.rgb ? 3 : 1));
    if (!sh.px)
        return gan_error_set(err, GAN_ERR_NOMEM, "image grid %s: out of memory for a %u × %u "
                             "sheet", path, sh.w, sh.h);
    draw(grid, &sh);
    struct gan_png_picture pic = { sh.w, sh.h, sh.rgb, sh.px, grid->title, 0 };
    st = gan_png_write(path, &pic, "image grid", err);
    free(sh.px);
    return st;
}
