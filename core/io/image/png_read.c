/* SPDX-License-Identifier: MIT */
/* png_read.c — reads a whole PNG file through libpng's sequential API, with transforms that
 * leave 8 or 16-bit grey, grey + alpha, RGB or RGBA samples, and errors as messages. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "base/file_open.h"
#include "io/image/png_read.h"

int gan_png_signature(const unsigned char *head, size_t n)
{
    return n >= GAN_PNG_SIGNATURE_SIZE && png_sig_cmp(head, 0, GAN_PNG_SIGNATURE_SIZE) == 0;
}

/* What libpng's callbacks reach: its error message, copied before the jump. */
struct reader {
    char message[200];
};

static void on_error(png_structp png, png_const_charp msg)
{
    struct reader *r = png_get_error_ptr(png);
    snprintf(r->message, sizeof r->message, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

/* Warnings (an unknown chunk, a bad colour profile) do not stop the pixels from being
 * read, and nothing below the program prints. */
static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* The part after setjmp: every local it changes is reached through `out` or `rows`,
 * which live in the caller, so nothing depends on registers a longjmp may have lost
 * (`rows` is volatile there: a local changed after setjmp must be, or the value read
 * after the jump may be the one from before it, and the rows leak). */
static gan_status decode(png_structp png, png_infop info, struct gan_decoded_image *out,
                         png_bytep *volatile *rows, const char *path, struct gan_error *err)
{
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    int color = png_get_color_type(png, info);
    int depth = png_get_bit_depth(png, info);
    if ((size_t)width * height > GAN_DECODED_MAX_PIXELS)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a PNG of %u × %u pixels, over the limit "
                             "of %zu pixels that ganctl decodes", path, (unsigned)width, (unsigned)height,
                             GAN_DECODED_MAX_PIXELS);
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(png);
    if (depth == 16 && host_is_little_endian())
        png_set_swap(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    unsigned channels = png_get_channels(png, info);
    unsigned bits = png_get_bit_depth(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((bits != 8 && bits != 16) || channels < 1 || channels > 4
        || rowbytes != (size_t)width * channels * (bits / 8))
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: a PNG layout ganctl does not read "
                             "(%u channels of %u bits)", path, channels, bits);
    out->samples = malloc(rowbytes * height);
    *rows = malloc(height * sizeof **rows);
    if (!out->samples || !*rows)
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory for a PNG of %u × %u "
                             "pixels", path, (unsigned)width, (unsigned)height);
    for (png_uint_32 y = 0; y < height; y++)
        (*rows)[y] = (png_bytep)out->samples + y * rowbytes;
    png_read_image(png, *rows);
    png_read_end(png, NULL);
    out->width = width;
    out->height = height;
    out->channels = channels;
    out->bits = bits;
    return GAN_OK;
}

gan_status gan_png_read(const char *path, struct gan_decoded_image *out, struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    const char *kind;
    FILE *f = gan_fopen_regular(path, &kind);
    if (!f && kind)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s is %s, not an image file; only regular "
                             "files are read", path, kind);
    if (!f)
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char head[GAN_PNG_SIGNATURE_SIZE];
    size_t got = fread(head, 1, sizeof head, f);
    if (!gan_png_signature(head, got)) {
        fclose(f);
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: not a PNG file (no PNG signature)", path);
    }
    struct reader r = { "" };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(f);
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory for libpng", path);
    }
    png_bytep *volatile rows = NULL;
    gan_status st;
    if (setjmp(png_jmpbuf(png))) {
        st = gan_error_set(err, GAN_ERR_FORMAT, "%s: damaged or truncated PNG: %s", path,
                           r.message);
    } else {
        png_init_io(png, f);
        png_set_sig_bytes(png, GAN_PNG_SIGNATURE_SIZE);
        st = decode(png, info, out, &rows, path, err);
    }
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    fclose(f);
    if (st != GAN_OK)
        gan_decoded_image_clear(out);
    return st;
}
