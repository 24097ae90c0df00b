/* SPDX-License-Identifier: MIT */
/* check_image_folder.c — the image folder's parts against values worked out by hand: the
 * centre crop and area resize, the PNG and JPEG decoders on files libpng and libjpeg wrote,
 * and the folder loader's skipping, split and errors. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/image_data.h"
#include "data/image_folder.h"
#include "data/image_resize.h"
#include "../lib/image_files.h"
#include "io/image/jpeg_read.h"
#include "io/image/png_read.h"
#include "../lib/scratch.h"

static void setup(void)
{
    test_scratch_make("ganctl-image-folder");
}

static void teardown(void)
{
    test_scratch_remove();
}

static const char *in_scratch(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_scratch, name);
    return path;
}

/* ------------------------------------------------------------------ crop and resize */

START_TEST(test_centre_square)
{
    unsigned x0, y0, side;
    gan_image_centre_square(5, 3, &x0, &y0, &side);
    ck_assert_uint_eq(side, 3);
    ck_assert_uint_eq(x0, 1);
    ck_assert_uint_eq(y0, 0);
    /* An odd surplus: 7 − 4 = 3 rows, one above and two below. */
    gan_image_centre_square(4, 7, &x0, &y0, &side);
    ck_assert_uint_eq(side, 4);
    ck_assert_uint_eq(x0, 0);
    ck_assert_uint_eq(y0, 1);
    gan_image_centre_square(6, 6, &x0, &y0, &side);
    ck_assert_uint_eq(side, 6);
    ck_assert_uint_eq(x0 + y0, 0);
}
END_TEST

/* 4 × 4 → 2 × 2: each output is the mean of its 2 × 2 block, exactly. */
START_TEST(test_area_halves)
{
    const float src[16] = {
        0, 10, 100, 200,
        20, 30, 50, 250,
        1, 2, 7, 7,
        3, 6, 7, 9,
    };
    float dst[4];
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_image_area_resize(src, 4, 1, 2, dst, &err), GAN_OK);
    ck_assert_float_eq(dst[0], 15.0f);
    ck_assert_float_eq(dst[1], 150.0f);
    ck_assert_float_eq(dst[2], 3.0f);
    ck_assert_float_eq(dst[3], 7.5f);
}
END_TEST

/* 3 → 2: output 0 covers source [0, 1.5), so (a + b/2) / 1.5, output 1 (b/2 + c) / 1.5;
 * per axis, so a 3 × 3 plane with rows (0, 3, 6) gives 1 and 5 in every row. 2 → 4
 * copies each pixel twice. Two planes are resized independently. */
START_TEST(test_area_fractions)
{
    const float src[18] = { 0, 3, 6, 0, 3, 6, 0, 3, 6,
                            9, 9, 9, 0, 0, 0, 3, 3, 3 };
    float dst[8];
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_image_area_resize(src, 3, 2, 2, dst, &err), GAN_OK);
    const float want[8] = { 1, 5, 1, 5, 6, 6, 2, 2 };
    for (int k = 0; k < 8; k++)
        ck_assert_msg(fabsf(dst[k] - want[k]) < 1e-6f, "value %d: %g, want %g", k,
                      (double)dst[k], (double)want[k]);
    const float two[4] = { 1, 2, 3, 4 };
    float four[16];
    ck_assert_int_eq(gan_image_area_resize(two, 2, 1, 4, four, &err), GAN_OK);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            ck_assert_float_eq(four[y * 4 + x], two[(y / 2) * 2 + x / 2]);
    ck_assert_int_eq(gan_image_area_resize(two, 0, 1, 4, four, &err), GAN_ERR_INVALID);
}
END_TEST

/* A 6 × 4 grey image whose outer columns are white: the centre crop is the middle 4 × 4,
 * which converts at size 4 unchanged and at size 2 into its block means. */
START_TEST(test_convert_crops_and_averages)
{
    unsigned char px[24];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 6; x++)
            px[y * 6 + x] = (x == 0 || x == 5) ? 255 : (unsigned char)(10 * (y * 4 + x - 1));
    struct gan_decoded_image img = { 6, 4, 1, 8, px };
    unsigned char out[16];
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_image_convert(&img, 1, 4, out, &err), GAN_OK);
    for (int k = 0; k < 16; k++)
        ck_assert_uint_eq(out[k], 10u * (unsigned)k);
    ck_assert_int_eq(gan_image_convert(&img, 1, 2, out, &err), GAN_OK);
    /* Blocks of (0, 10, 40, 50), (20, 30, 60, 70), (80, 90, 120, 130), (100, ..., 150). */
    ck_assert_uint_eq(out[0], 25);
    ck_assert_uint_eq(out[1], 45);
    ck_assert_uint_eq(out[2], 105);
    ck_assert_uint_eq(out[3], 125);
    /* To RGB: the grey repeated in three planes. */
    unsigned char rgb[12];
    ck_assert_int_eq(gan_image_convert(&img, 3, 2, rgb, &err), GAN_OK);
    for (int c = 0; c < 3; c++)
        ck_assert_mem_eq(rgb + 4 * c, out, 4);
    ck_assert_int_eq(gan_image_convert(&img, 2, 2, rgb, &err), GAN_ERR_INVALID);
}
END_TEST

/* RGB to grey is BT.601 luma; alpha composites over black; 16-bit samples are / 257. */
START_TEST(test_convert_channels)
{
    const unsigned char rgba[8] = { 200, 100, 50, 255, 200, 100, 50, 51 };
    struct gan_decoded_image img = { 2, 1, 4, 8, (void *)rgba };
    unsigned char out[3];
    struct gan_error err;
    gan_error_clear(&err);
    /* 1 × 1 from a 2 × 1 image: the crop keeps the left pixel (opaque). */
    ck_assert_int_eq(gan_image_convert(&img, 1, 1, out, &err), GAN_OK);
    ck_assert_uint_eq(out[0], (unsigned)lrint(0.299 * 200 + 0.587 * 100 + 0.114 * 50));
    ck_assert_int_eq(gan_image_convert(&img, 3, 1, out, &err), GAN_OK);
    ck_assert_uint_eq(out[0], 200);
    ck_assert_uint_eq(out[1], 100);
    ck_assert_uint_eq(out[2], 50);
    /* The right pixel at alpha 51/255 = 0.2: 40, 20, 10. */
    const unsigned char right[4] = { 200, 100, 50, 51 };
    struct gan_decoded_image one = { 1, 1, 4, 8, (void *)right };
    ck_assert_int_eq(gan_image_convert(&one, 3, 1, out, &err), GAN_OK);
    ck_assert_uint_eq(out[0], 40);
    ck_assert_uint_eq(out[1], 20);
    ck_assert_uint_eq(out[2], 10);
    const uint16_t wide[2] = { 257 * 77, 65535 };   /* grey + alpha, 16 bits */
    struct gan_decoded_image deep = { 1, 1, 2, 16, (void *)wide };
    ck_assert_int_eq(gan_image_convert(&deep, 1, 1, out, &err), GAN_OK);
    ck_assert_uint_eq(out[0], 77);
}
END_TEST

/* ------------------------------------------------------------------ PNG */

static void read_png_ok(const char *path, struct gan_decoded_image *img, unsigned w,
                        unsigned h, unsigned channels, unsigned bits)
{
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_png_read(path, img, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    ck_assert_uint_eq(img->width, w);
    ck_assert_uint_eq(img->height, h);
    ck_assert_uint_eq(img->channels, channels);
    ck_assert_uint_eq(img->bits, bits);
}

/* Every colour type at 8 bits: the samples come back as written. */
START_TEST(test_png_8bit)
{
    static const unsigned kinds[4] = { 1, 2, 3, 4 };
    for (int k = 0; k < 4; k++) {
        unsigned ch = kinds[k], w = 5, h = 3;
        unsigned char px[5 * 3 * 4];
        for (unsigned i = 0; i < w * h * ch; i++)
            px[i] = (unsigned char)(i * 37 + k);
        const char *path = in_scratch("eight.png");
        ck_assert_int_eq(test_write_png(path, w, h, ch, 8, px), 0);
        struct gan_decoded_image img;
        read_png_ok(path, &img, w, h, ch, 8);
        ck_assert_mem_eq(img.samples, px, w * h * ch);
        gan_decoded_image_clear(&img);
    }
}
END_TEST

/* 16 bits, grey and RGBA: host-order values as written, and / 257 on the 8-bit scale. */
START_TEST(test_png_16bit)
{
    uint16_t grey[6] = { 0, 257, 65535, 1000, 40000, 12345 };
    const char *path = in_scratch("sixteen.png");
    ck_assert_int_eq(test_write_png(path, 3, 2, 1, 16, grey), 0);
    struct gan_decoded_image img;
    read_png_ok(path, &img, 3, 2, 1, 16);
    ck_assert_mem_eq(img.samples, grey, sizeof grey);
    ck_assert_float_eq(gan_decoded_image_sample(&img, 1, 0, 0), 1.0f);
    ck_assert_float_eq(gan_decoded_image_sample(&img, 2, 0, 0), 255.0f);
    gan_decoded_image_clear(&img);
    uint16_t rgba[8] = { 65535, 0, 257 * 9, 65535, 1, 2, 3, 4 };
    ck_assert_int_eq(test_write_png(path, 2, 1, 4, 16, rgba), 0);
    read_png_ok(path, &img, 2, 1, 4, 16);
    ck_assert_mem_eq(img.samples, rgba, sizeof rgba);
    gan_decoded_image_clear(&img);
}
END_TEST

/* A palette becomes RGB, or RGBA with a transparency chunk; 1 and 4-bit grey become
 * 8-bit grey scaled to 0 … 255 (1 → 255, 4-bit v → 17 v). */
START_TEST(test_png_palette_and_low_bits)
{
    const unsigned char pal[9] = { 10, 20, 30, 200, 100, 0, 1, 2, 3 };
    const unsigned char index[4] = { 0, 1, 2, 1 };
    const char *path = in_scratch("palette.png");
    ck_assert_int_eq(test_write_png_palette(path, 2, 2, index, pal, 3, NULL), 0);
    struct gan_decoded_image img;
    read_png_ok(path, &img, 2, 2, 3, 8);
    const unsigned char want_rgb[12] = { 10, 20, 30, 200, 100, 0, 1, 2, 3, 200, 100, 0 };
    ck_assert_mem_eq(img.samples, want_rgb, 12);
    gan_decoded_image_clear(&img);
    const unsigned char alpha[3] = { 255, 128, 0 };
    ck_assert_int_eq(test_write_png_palette(path, 2, 2, index, pal, 3, alpha), 0);
    read_png_ok(path, &img, 2, 2, 4, 8);
    const unsigned char want_rgba[16] = { 10, 20, 30, 255, 200, 100, 0, 128,
                                          1, 2, 3, 0, 200, 100, 0, 128 };
    ck_assert_mem_eq(img.samples, want_rgba, 16);
    /* Converted to one grey pixel: the mean of the four lumas, each times its alpha. */
    unsigned char one;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_image_convert(&img, 1, 1, &one, &err), GAN_OK);
    double sum = 0;
    for (int k = 0; k < 4; k++) {
        const unsigned char *p = want_rgba + 4 * k;
        sum += (0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]) * p[3] / 255.0;
    }
    ck_assert_uint_eq(one, (unsigned)lrint(sum / 4));   /* 34 */
    ck_assert_uint_eq(one, 34);
    gan_decoded_image_clear(&img);
    const unsigned char bits1[6] = { 0, 1, 1, 0, 1, 1 };
    ck_assert_int_eq(test_write_png(path, 3, 2, 1, 1, bits1), 0);
    read_png_ok(path, &img, 3, 2, 1, 8);
    const unsigned char want1[6] = { 0, 255, 255, 0, 255, 255 };
    ck_assert_mem_eq(img.samples, want1, 6);
    gan_decoded_image_clear(&img);
    const unsigned char bits4[3] = { 0, 7, 15 };
    ck_assert_int_eq(test_write_png(path, 3, 1, 1, 4, bits4), 0);
    read_png_ok(path, &img, 3, 1, 1, 8);
    const unsigned char want4[3] = { 0, 119, 255 };
    ck_assert_mem_eq(img.samples, want4, 3);
    gan_decoded_image_clear(&img);
}
END_TEST

/* Not a PNG, a truncated one, a missing file: each a message naming the file. */
START_TEST(test_png_refused)
{
    struct gan_decoded_image img;
    struct gan_error err;
    gan_error_clear(&err);
    const char *text = in_scratch("text.png");
    FILE *f = fopen(text, "w");
    ck_assert_ptr_nonnull(f);
    fputs("hello, world\n", f);
    fclose(f);
    ck_assert_int_eq(gan_png_read(text, &img, &err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "text.png"));
    ck_assert_ptr_nonnull(strstr(err.message, "not a PNG"));
    unsigned char px[64 * 64];
    uint32_t state = 12345;
    for (int i = 0; i < 64 * 64; i++) {
        state = state * 1664525u + 1013904223u;   /* noise: it hardly compresses */
        px[i] = (unsigned char)(state >> 24);
    }
    char whole[1024];
    snprintf(whole, sizeof whole, "%s", in_scratch("whole.png"));
    ck_assert_int_eq(test_write_png(whole, 64, 64, 1, 8, px), 0);
    const char *cut = in_scratch("cut.png");
    ck_assert_int_eq(test_truncate_copy(whole, cut, 300), 0);
    ck_assert_int_eq(gan_png_read(cut, &img, &err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "cut.png"));
    ck_assert_ptr_null(img.samples);
    ck_assert_int_eq(gan_png_read(in_scratch("absent.png"), &img, &err), GAN_ERR_IO);
}
END_TEST

/* ------------------------------------------------------------------ JPEG */

/* A smooth picture survives JPEG at quality 95 within a few levels: mean absolute error
 * below 2, no sample off by more than 16 (bounds loose enough for any libjpeg's rounding
 * and chroma subsampling, tight enough to catch swapped channels or a lost row). */
static void smooth(unsigned w, unsigned h, unsigned ch, unsigned char *px)
{
    for (unsigned y = 0; y < h; y++)
        for (unsigned x = 0; x < w; x++)
            for (unsigned c = 0; c < ch; c++)
                px[(y * w + x) * ch + c] = (unsigned char)(20 + 2 * x + 2 * y + 30 * c);
}

START_TEST(test_jpeg_decodes)
{
    for (unsigned ch = 1; ch <= 3; ch += 2) {
        const unsigned w = 40, h = 24;
        unsigned char px[40 * 24 * 3];
        smooth(w, h, ch, px);
        const char *path = in_scratch("smooth.jpg");
        ck_assert_int_eq(test_write_jpeg(path, w, h, ch, px, 95), 0);
        struct gan_decoded_image img;
        struct gan_error err;
        gan_error_clear(&err);
        ck_assert_msg(gan_jpeg_read(path, &img, &err) == GAN_OK, "%s", err.message);
        ck_assert_uint_eq(img.width, w);
        ck_assert_uint_eq(img.height, h);
        ck_assert_uint_eq(img.channels, ch);
        ck_assert_uint_eq(img.bits, 8);
        double total = 0;
        int worst = 0;
        const unsigned char *got = img.samples;
        for (unsigned k = 0; k < w * h * ch; k++) {
            int d = abs((int)got[k] - (int)px[k]);
            total += d;
            worst = d > worst ? d : worst;
        }
        ck_assert_msg(total / (w * h * ch) < 2.0 && worst <= 16,
                      "%u channels: mean error %.3f, worst %d", ch, total / (w * h * ch), worst);
        gan_decoded_image_clear(&img);
    }
}
END_TEST

START_TEST(test_jpeg_refused)
{
    unsigned char px[64 * 64 * 3];
    uint32_t state = 777;
    for (int i = 0; i < 64 * 64 * 3; i++) {
        state = state * 1664525u + 1013904223u;
        px[i] = (unsigned char)(state >> 24);
    }
    char whole[1024];
    snprintf(whole, sizeof whole, "%s", in_scratch("whole.jpg"));
    ck_assert_int_eq(test_write_jpeg(whole, 64, 64, 3, px, 90), 0);
    const char *cut = in_scratch("cut.jpg");
    ck_assert_int_eq(test_truncate_copy(whole, cut, 1500), 0);
    struct gan_decoded_image img;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_jpeg_read(cut, &img, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "cut.jpg") && strstr(err.message, "truncated"), "%s",
                  err.message);
    ck_assert_ptr_null(img.samples);
    const char *junk = in_scratch("junk.jpg");
    ck_assert_int_eq(test_truncate_copy(whole, junk, 2), 0);
    ck_assert_int_eq(gan_jpeg_read(junk, &img, &err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "not a JPEG"));
    /* CMYK, which would need a colour conversion libjpeg does not do. */
    const char *cmyk = in_scratch("cmyk.jpg");
    ck_assert_int_eq(test_write_jpeg(cmyk, 8, 8, 4, px, 90), 0);
    ck_assert_int_eq(gan_jpeg_read(cmyk, &img, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "cmyk.jpg") && strstr(err.message, "CMYK"), "%s",
                  err.message);
    ck_assert_ptr_null(img.samples);
}
END_TEST

/* ------------------------------------------------------------------ the folder */

static gan_status load(const char *dir, unsigned channels, unsigned size, double holdout,
                       gan_image_set **train, gan_image_set **test,
                       struct gan_image_folder_report *report, struct gan_error *err)
{
    struct gan_image_folder_spec spec = { dir, channels, size, holdout };
    gan_error_clear(err);
    return gan_image_folder_load(&spec, NULL, train, test, report, err);
}

START_TEST(test_folder_empty)
{
    gan_image_set *train, *test;
    struct gan_image_folder_report report;
    struct gan_error err;
    /* An empty folder (a text file and a hidden image do not count). */
    FILE *f = fopen(in_scratch("README.txt"), "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    unsigned char px[16] = { 0 };
    ck_assert_int_eq(test_write_png(in_scratch(".hidden.png"), 4, 4, 1, 8, px), 0);
    ck_assert_int_eq(load(test_scratch, 1, 8, 0.1, &train, &test, &report, &err),
                     GAN_ERR_NOT_FOUND);
    ck_assert_ptr_null(train);
    ck_assert_ptr_null(test);
    ck_assert_msg(strstr(err.message, test_scratch) && strstr(err.message, "holds no image files")
                  && strstr(err.message, "data.path"), "%s", err.message);
    /* A folder that does not exist. */
    ck_assert_int_eq(load(in_scratch("nowhere"), 1, 8, 0.1, &train, &test, &report, &err),
                     GAN_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.message, "nowhere") && strstr(err.message, "not a folder"), "%s",
                  err.message);
    /* Only unreadable files: none decodes, the first is quoted. */
    f = fopen(in_scratch("a.png"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("not an image", f);
    fclose(f);
    ck_assert_int_eq(load(test_scratch, 1, 8, 0.1, &train, &test, &report, &err),
                     GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "none of its 1 image files") && strstr(err.message, "a.png"),
                  "%s", err.message);
    /* Two images cannot give two held-out images and a training one. */
    ck_assert_int_eq(test_write_png(in_scratch("b.png"), 4, 4, 1, 8, px), 0);
    ck_assert_int_eq(test_write_png(in_scratch("c.png"), 4, 4, 1, 8, px), 0);
    ck_assert_int_eq(load(test_scratch, 1, 8, 0.1, &train, &test, &report, &err),
                     GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "too few") && strstr(err.message, "add images"), "%s",
                  err.message);
}
END_TEST

/* Ten 2 × 2 grey images in a folder and a subfolder, image k all of value 10·k, and one
 * broken file: nine decode, the broken one is counted and named, 0.2 · 9 → 2 are held
 * out, the same two every time, and the sets hold every value once between them. */
START_TEST(test_folder_loads_and_splits)
{
    ck_assert_int_eq(mkdir(in_scratch("sub"), 0777), 0);
    for (int k = 0; k < 9; k++) {
        unsigned char px[4] = { (unsigned char)(10 * k), (unsigned char)(10 * k),
                                (unsigned char)(10 * k), (unsigned char)(10 * k) };
        char name[64];
        snprintf(name, sizeof name, "%s/%d.png", k < 5 ? "." : "sub", k);
        if (k == 4) {
            snprintf(name, sizeof name, "%d.jpeg", k);
            ck_assert_int_eq(test_write_jpeg(in_scratch(name), 2, 2, 1, px, 100), 0);
        } else {
            ck_assert_int_eq(test_write_png(in_scratch(name), 2, 2, 1, 8, px), 0);
        }
    }
    FILE *f = fopen(in_scratch("sub/broken.jpg"), "wb");
    ck_assert_ptr_nonnull(f);
    fputs("\xff\xd8\xff garbage", f);
    fclose(f);
    gan_image_set *train, *test;
    struct gan_image_folder_report report;
    struct gan_error err;
    ck_assert_msg(load(test_scratch, 1, 2, 0.2, &train, &test, &report, &err) == GAN_OK, "%s",
                  err.message);
    ck_assert_uint_eq(report.files, 10);
    ck_assert_uint_eq(report.skipped, 1);
    ck_assert_ptr_nonnull(strstr(report.first_skipped, "sub/broken.jpg"));
    ck_assert_uint_eq(gan_image_set_count(test), 2);
    ck_assert_uint_eq(gan_image_set_count(train), 7);
    ck_assert_uint_eq(gan_image_set_channels(train), 1);
    ck_assert_uint_eq(gan_image_set_side(train), 2);
    ck_assert_uint_eq(gan_image_set_sample_size(test), 4);
    ck_assert_int_eq(gan_image_set_split(test), GAN_IMAGE_TEST);
    ck_assert_int_eq(gan_image_set_label(train, 0), -1);
    int seen[9] = { 0 };
    unsigned held[2];
    for (int s = 0; s < 2; s++) {
        const gan_image_set *set = s ? test : train;
        int last = -1;
        for (size_t i = 0; i < gan_image_set_count(set); i++) {
            const unsigned char *raw = gan_image_set_raw(set, i);
            int v = raw[0] / 10;
            ck_assert_msg(raw[0] % 10 == 0 && raw[3] == raw[0], "image %zu: %u", i, raw[0]);
            ck_assert_int_lt(v, 9);
            ck_assert_int_gt(v, last);   /* name order: 0 … 4 at the top, then sub/5 … 8 */
            last = v;
            seen[v]++;
            if (s)
                held[i] = (unsigned)v;
        }
    }
    for (int k = 0; k < 9; k++)
        ck_assert_int_eq(seen[k], 1);
    /* As a batch the networks see: v / 127.5 − 1. */
    float x[4];
    ck_assert_int_eq(gan_image_set_copy(test, 0, 1, x, NULL, &err), GAN_OK);
    ck_assert_float_eq(x[0], gan_image_pixel_value((unsigned char)(10 * held[0])));
    gan_image_set_free(train);
    gan_image_set_free(test);
    /* Again: the same two held out; and in RGB at another size. */
    ck_assert_int_eq(load(test_scratch, 3, 4, 0.2, &train, &test, &report, &err), GAN_OK);
    ck_assert_uint_eq(gan_image_set_sample_size(test), 48);
    for (size_t i = 0; i < 2; i++) {
        const unsigned char *raw = gan_image_set_raw(test, i);
        ck_assert_uint_eq(raw[0], 10 * held[i]);
        ck_assert_uint_eq(raw[47], 10 * held[i]);
    }
    gan_image_set_free(train);
    gan_image_set_free(test);
}
END_TEST

/* ------------------------------------------------------------------ Fashion-MNIST as files */

static const char *fashion_dir(void)
{
    const char *d = getenv("GANCTL_FASHION_MNIST_DIR");
    return d && *d ? d : GAN_IMAGE_DATA_DEFAULT_DIR;
}

static int fashion_present(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte.gz", fashion_dir());
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* Fashion-MNIST's first 40 test images written as 28 × 28 grey PNG files read back at
 * data.size 28, data.channels 1 byte for byte: every image once, in the training or the
 * held-out set, so the networks see exactly what the IDX files give them. */
START_TEST(test_fashion_round_trip)
{
    gan_image_set *idx, *train, *test;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_image_set_load(fashion_dir(), GAN_IMAGE_TEST, &idx, &err) == GAN_OK, "%s",
                  err.message);
    const size_t n = 40;
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%06zu.png", i);
        ck_assert_int_eq(test_write_png(in_scratch(name), GAN_IMAGE_SIDE, GAN_IMAGE_SIDE, 1, 8,
                                        gan_image_set_raw(idx, i)), 0);
    }
    struct gan_image_folder_report report;
    ck_assert_msg(load(test_scratch, 1, GAN_IMAGE_SIDE, 0.1, &train, &test, &report, &err)
                  == GAN_OK, "%s", err.message);
    ck_assert_uint_eq(report.skipped, 0);
    ck_assert_uint_eq(gan_image_set_count(test), 4);
    ck_assert_uint_eq(gan_image_set_count(train), 36);
    ck_assert_uint_eq(gan_image_set_sample_size(train), GAN_IMAGE_PIXELS);
    int found[40] = { 0 };
    for (int s = 0; s < 2; s++) {
        const gan_image_set *set = s ? test : train;
        for (size_t k = 0; k < gan_image_set_count(set); k++) {
            size_t i = 0;
            while (i < n && memcmp(gan_image_set_raw(set, k), gan_image_set_raw(idx, i),
                                   GAN_IMAGE_PIXELS) != 0)
                i++;
            ck_assert_msg(i < n, "image %zu of the %s set is none of the files", k,
                          s ? "held-out" : "training");
            found[i]++;
        }
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(found[i], 1);
    gan_image_set_free(train);
    gan_image_set_free(test);
    gan_image_set_free(idx);
}
END_TEST

static Suite *image_folder_suite(void)
{
    Suite *s = suite_create("image folder");
    TCase *tc = tcase_create("crop and resize");
    tcase_add_test(tc, test_centre_square);
    tcase_add_test(tc, test_area_halves);
    tcase_add_test(tc, test_area_fractions);
    tcase_add_test(tc, test_convert_crops_and_averages);
    tcase_add_test(tc, test_convert_channels);
    suite_add_tcase(s, tc);
    tc = tcase_create("png");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_png_8bit);
    tcase_add_test(tc, test_png_16bit);
    tcase_add_test(tc, test_png_palette_and_low_bits);
    tcase_add_test(tc, test_png_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("jpeg");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_jpeg_decodes);
    tcase_add_test(tc, test_jpeg_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("folder");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_folder_empty);
    tcase_add_test(tc, test_folder_loads_and_splits);
    suite_add_tcase(s, tc);
    if (fashion_present()) {
        tc = tcase_create("fashion-mnist as files");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_fashion_round_trip);
        suite_add_tcase(s, tc);
    } else {
        fprintf(stderr, "SKIP fashion-mnist as files: not in %s (install %s)\n", fashion_dir(),
                GAN_IMAGE_DATA_PACKAGE);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(image_folder_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
