/* SPDX-License-Identifier: MIT */
/* image_files.c — the tests' PNG and JPEG writers: libpng's and libjpeg's own encoders, so
 * that the decoders are checked against files the reference libraries made. */
#include "config.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "image_files.h"

static int png_color_type(unsigned channels)
{
    switch (channels) {
    case 1: return PNG_COLOR_TYPE_GRAY;
    case 2: return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 3: return PNG_COLOR_TYPE_RGB;
    default: return PNG_COLOR_TYPE_RGB_ALPHA;
    }
}

/* Writes the rows; `index` or `samples` and the header as prepared by the callers. */
static int write_png(const char *path, unsigned w, unsigned h, int color, unsigned bits,
                     const unsigned char *rgb, unsigned n, const unsigned char *alpha,
                     const void *samples, size_t row_bytes, unsigned channels)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *row = malloc(row_bytes ? row_bytes : 1);
    if (!info || !row || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(row);
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, (int)bits, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (rgb) {
        png_color pal[256];
        for (unsigned i = 0; i < n; i++) {
            pal[i].red = rgb[3 * i];
            pal[i].green = rgb[3 * i + 1];
            pal[i].blue = rgb[3 * i + 2];
        }
        png_set_PLTE(png, info, pal, (int)n);
        if (alpha)
            png_set_tRNS(png, info, alpha, (int)n, NULL);
    }
    png_write_info(png, info);
    if (bits < 8)
        png_set_packing(png);
    for (unsigned y = 0; y < h; y++) {
        if (bits == 16) {
            /* PNG stores 16-bit samples big-endian. */
            const uint16_t *src = (const uint16_t *)samples + (size_t)y * w * channels;
            for (size_t k = 0; k < (size_t)w * channels; k++) {
                row[2 * k] = (unsigned char)(src[k] >> 8);
                row[2 * k + 1] = (unsigned char)src[k];
            }
        } else {
            memcpy(row, (const unsigned char *)samples + (size_t)y * row_bytes, row_bytes);
        }
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    return fclose(f) == 0 ? 0 : -1;
}

int test_write_png(const char *path, unsigned w, unsigned h, unsigned channels, unsigned bits,
                   const void *samples)
{
    size_t row = (size_t)w * channels * (bits == 16 ? 2 : 1);
    return write_png(path, w, h, png_color_type(channels), bits, NULL, 0, NULL, samples, row,
                     channels);
}

int test_write_png_palette(const char *path, unsigned w, unsigned h, const unsigned char *index,
                           const unsigned char *rgb, unsigned n, const unsigned char *alpha)
{
    return write_png(path, w, h, PNG_COLOR_TYPE_PALETTE, 8, rgb, n, alpha, index, w, 1);
}

struct jpeg_failure {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
};

static void jpeg_fail(j_common_ptr cinfo)
{
    longjmp(((struct jpeg_failure *)cinfo->err)->jump, 1);
}

int test_write_jpeg(const char *path, unsigned w, unsigned h, unsigned channels,
                    const unsigned char *samples, int quality)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    struct jpeg_compress_struct cinfo;
    struct jpeg_failure fail;
    cinfo.err = jpeg_std_error(&fail.mgr);
    fail.mgr.error_exit = jpeg_fail;
    if (setjmp(fail.jump)) {
        jpeg_destroy_compress(&cinfo);
        fclose(f);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = w;
    cinfo.image_height = h;
    cinfo.input_components = (int)channels;
    cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : channels == 4 ? JCS_CMYK : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < h) {
        JSAMPROW row = (JSAMPROW)(samples + (size_t)cinfo.next_scanline * w * channels);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return fclose(f) == 0 ? 0 : -1;
}

int test_truncate_copy(const char *from, const char *to, long keep)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return -1;
    FILE *out = fopen(to, "wb");
    if (!out) {
        fclose(in);
        return -1;
    }
    int c;
    long n = 0;
    while (n < keep && (c = fgetc(in)) != EOF) {
        fputc(c, out);
        n++;
    }
    fclose(in);
    return fclose(out) == 0 && n == keep ? 0 : -1;
}
