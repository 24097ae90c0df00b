/* SPDX-License-Identifier: MIT */
/* fuzz_image.c — the PNG and JPEG readers (core/io/image/) on arbitrary files, as an
 * image folder reads each of its files: recognised by the first bytes, decoded under
 * the pixel limit (GAN_DECODED_MAX_PIXELS), then converted (image_resize.h) to the
 * training shape, grey and RGB. The readers take only a path, so each input goes through
 * a scratch file. A refusal must be GAN_ERR_FORMAT or GAN_ERR_IO with one line naming
 * the file; an acceptance must give an image within the limit, of the channels and bits
 * png_read.h and jpeg_read.h promise, whose every sample can be read and converted. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_resize.h"
#include "io/image/jpeg_read.h"
#include "io/image/png_read.h"
#include "fuzz.h"

/* The image folder's default side, and a tiny one that shrinks every image. */
static const unsigned sides[2] = { 64, 3 };

static void check_refusal(gan_status st, const struct gan_error *err, const char *path)
{
    if (st != GAN_ERR_FORMAT && st != GAN_ERR_IO && st != GAN_ERR_NOMEM)
        fuzz_fail("refused with status %s: %s", gan_status_string(st), err->message);
    if (!strstr(err->message, path))
        fuzz_fail("the message does not name the file: %s", err->message);
    if (strchr(err->message, '\n'))
        fuzz_fail("the message spans lines: %s", err->message);
}

static void check_image(const struct gan_decoded_image *img, int png)
{
    if (img->width == 0 || img->height == 0)
        fuzz_fail("accepted an image of %u × %u pixels", img->width, img->height);
    if ((size_t)img->width * img->height > GAN_DECODED_MAX_PIXELS)
        fuzz_fail("accepted %u × %u pixels, over the limit", img->width, img->height);
    if (png ? img->channels < 1 || img->channels > 4
            : img->channels != 1 && img->channels != 3)
        fuzz_fail("accepted %u channels", img->channels);
    if (img->bits != 8 && !(png && img->bits == 16))
        fuzz_fail("accepted %u bits a sample", img->bits);
    if (!img->samples)
        fuzz_fail("accepted an image without samples");
    /* The corners and the centre, each channel: within the samples' allocation. */
    const unsigned xs[3] = { 0, img->width / 2, img->width - 1 };
    const unsigned ys[3] = { 0, img->height / 2, img->height - 1 };
    for (int i = 0; i < 3; i++)
        for (unsigned c = 0; c < img->channels; c++) {
            float v = gan_decoded_image_sample(img, xs[i], ys[i], c);
            if (!(v >= 0.0f && v <= 255.0f))
                fuzz_fail("sample %u of (%u, %u) is %g", c, xs[i], ys[i], (double)v);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_file(data, size);
    int png = gan_png_signature(data, size), jpeg = gan_jpeg_signature(data, size);
    if (!png && !jpeg)
        return 0;              /* what the image folder skips before any reader runs */
    struct gan_decoded_image img;
    struct gan_error err;
    memset(&img, 0, sizeof img);
    gan_error_clear(&err);
    gan_status st = png ? gan_png_read(path, &img, &err) : gan_jpeg_read(path, &img, &err);
    if (st != GAN_OK) {
        check_refusal(st, &err, path);
        if (img.samples)
            fuzz_fail("refused, but samples are left: %s", err.message);
        return 0;
    }
    check_image(&img, png);
    static unsigned char out[3 * 64 * 64];
    for (unsigned channels = 1; channels <= 3; channels += 2)
        for (int s = 0; s < 2; s++) {
            gan_error_clear(&err);
            st = gan_image_convert(&img, channels, sides[s], out, &err);
            if (st != GAN_OK && st != GAN_ERR_NOMEM)
                fuzz_fail("cannot convert a %u × %u image the reader accepted to %u × %u × "
                          "%u: %s", img.width, img.height, channels, sides[s], sides[s],
                          err.message);
        }
    gan_decoded_image_clear(&img);
    if (img.samples || img.width || img.height)
        fuzz_fail("gan_decoded_image_clear left the struct set");
    return 0;
}
