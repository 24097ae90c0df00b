/* SPDX-License-Identifier: MIT */
/* image_resize.c — centre crop, channel conversion and the separable area resize that
 * bring any decoded image to the configured square size, rounded to bytes once. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "data/image_resize.h"

void gan_image_centre_square(unsigned width, unsigned height, unsigned *x0, unsigned *y0,
                             unsigned *side)
{
    unsigned s = width < height ? width : height;
    *side = s;
    *x0 = (width - s) / 2;
    *y0 = (height - s) / 2;
}

/* One line of n_in values (stride in_step) resized to n_out values (stride out_step).
 * In units of 1/(n_in·n_out) of the line: destination k spans [k·n_in, (k + 1)·n_in) and
 * source p spans [p·n_out, (p + 1)·n_out), so the overlaps are whole numbers and each
 * destination's weights sum to n_in exactly. */
static void resize_line(const float *in, unsigned n_in, size_t in_step, float *out,
                        unsigned n_out, size_t out_step)
{
    for (unsigned k = 0; k < n_out; k++) {
        uint64_t lo = (uint64_t)k * n_in, hi = lo + n_in;
        unsigned p = (unsigned)(lo / n_out);
        double sum = 0;
        for (; p < n_in && (uint64_t)p * n_out < hi; p++) {
            uint64_t a = (uint64_t)p * n_out, b = a + n_out;
            uint64_t overlap = (b < hi ? b : hi) - (a > lo ? a : lo);
            sum += (double)overlap * in[p * in_step];
        }
        out[k * out_step] = (float)(sum / (double)n_in);
    }
}

gan_status gan_image_area_resize(const float *src, unsigned src_side, unsigned planes,
                                 unsigned dst_side, float *dst, struct gan_error *err)
{
    if (src_side == 0 || dst_side == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "area resize from %u to %u pixels: both "
                             "sides must be at least 1", src_side, dst_side);
    /* Rows first: src_side rows of dst_side values per plane. */
    float *wide = malloc((size_t)src_side * dst_side * sizeof *wide);
    if (!wide)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for an area resize of %u "
                             "pixels", src_side);
    for (unsigned c = 0; c < planes; c++) {
        const float *plane = src + (size_t)c * src_side * src_side;
        float *out = dst + (size_t)c * dst_side * dst_side;
        for (unsigned y = 0; y < src_side; y++)
            resize_line(plane + (size_t)y * src_side, src_side, 1,
                        wide + (size_t)y * dst_side, dst_side, 1);
        for (unsigned x = 0; x < dst_side; x++)
            resize_line(wide + x, src_side, dst_side, out + x, dst_side, dst_side);
    }
    free(wide);
    return GAN_OK;
}

/* Pixel (x, y) of `img` as `channels` values on the 0 … 255 scale, as the header says. */
static void pixel(const struct gan_decoded_image *img, unsigned x, unsigned y,
                  unsigned channels, float *v)
{
    float rgb[3], alpha = 1.0f;
    unsigned colours = img->channels >= 3 ? 3 : 1;
    for (unsigned c = 0; c < colours; c++)
        rgb[c] = gan_decoded_image_sample(img, x, y, c);
    if (img->channels == 2 || img->channels == 4)
        alpha = gan_decoded_image_sample(img, x, y, colours) / 255.0f;
    if (colours == 1)
        rgb[1] = rgb[2] = rgb[0];
    if (channels == 1)
        v[0] = colours == 1 ? rgb[0] * alpha
                            : (0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]) * alpha;
    else
        for (unsigned c = 0; c < 3; c++)
            v[c] = rgb[c] * alpha;
}

static unsigned char to_byte(float v)
{
    long r = lrintf(v);
    return (unsigned char)(r < 0 ? 0 : r > 255 ? 255 : r);
}

gan_status gan_image_convert(const struct gan_decoded_image *img, unsigned channels,
                             unsigned size, unsigned char *out, struct gan_error *err)
{
    if ((channels != 1 && channels != 3) || size == 0 || !img->width || !img->height
        || !img->samples)
        return gan_error_set(err, GAN_ERR_INVALID, "converting an image of %u × %u pixels to "
                             "%u channels of %u × %u: channels must be 1 or 3, and neither "
                             "image empty", img->width, img->height, channels, size, size);
    unsigned x0, y0, s;
    gan_image_centre_square(img->width, img->height, &x0, &y0, &s);
    /* Rows first, straight from the decoded samples, so only s × size values per channel
     * are held in float rather than the whole crop. */
    float *line = malloc((size_t)s * channels * sizeof *line);
    float *wide = malloc((size_t)s * size * channels * sizeof *wide);
    float *small = malloc((size_t)size * size * channels * sizeof *small);
    if (!line || !wide || !small) {
        free(line);
        free(wide);
        free(small);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory converting an image of %u "
                             "× %u pixels", img->width, img->height);
    }
    for (unsigned y = 0; y < s; y++) {
        for (unsigned x = 0; x < s; x++) {
            float v[3];
            pixel(img, x0 + x, y0 + y, channels, v);
            for (unsigned c = 0; c < channels; c++)
                line[(size_t)c * s + x] = v[c];
        }
        for (unsigned c = 0; c < channels; c++)
            resize_line(line + (size_t)c * s, s, 1,
                        wide + ((size_t)c * s + y) * size, size, 1);
    }
    for (unsigned c = 0; c < channels; c++)
        for (unsigned x = 0; x < size; x++)
            resize_line(wide + (size_t)c * s * size + x, s, size,
                        small + (size_t)c * size * size + x, size, size);
    for (size_t k = 0; k < (size_t)size * size * channels; k++)
        out[k] = to_byte(small[k]);
    free(line);
    free(wide);
    free(small);
    return GAN_OK;
}
