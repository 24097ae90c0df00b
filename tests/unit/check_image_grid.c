/* SPDX-License-Identifier: MIT */
/* check_image_grid.c — tests of the PNG image grid: sizes, every pixel of written sheets
 * read back with libpng against a reference layout, NaN marking, RGB, the title, refusals,
 * atomic writes, and a sheet of real Fashion-MNIST images left in the build tree to look at. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "data/image_data.h"
#include "io/image/image_grid.h"

#ifndef GAN_TEST_GRID_DIR
#error "GAN_TEST_GRID_DIR must name the folder where the Fashion-MNIST sheet is left"
#endif

/* ------------------------------------------------------------------ fixture */

static char tmpdir[64];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ganctl-grid-XXXXXX");
    ck_assert_msg(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *tmp_path(const char *name)
{
    static char path[160];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

/* The number of entries in the temporary folder (no temporary files may remain). */
static int entries(void)
{
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* ------------------------------------------------------------------ reading back */

struct picture {
    unsigned w, h;
    int rgb;                       /* the file's colour type had colour */
    unsigned char *px;             /* always read as RGB, 3 bytes a pixel */
};

static struct picture read_png(const char *path)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&img, path), "%s: %s", path, img.message);
    struct picture p = { img.width, img.height, (img.format & PNG_FORMAT_FLAG_COLOR) != 0, NULL };
    img.format = PNG_FORMAT_RGB;
    p.px = malloc(PNG_IMAGE_SIZE(img));
    ck_assert_msg(png_image_finish_read(&img, NULL, p.px, 0, NULL), "%s: %s", path, img.message);
    return p;
}

static const unsigned char *at(const struct picture *p, unsigned x, unsigned y)
{
    return p->px + ((size_t)y * p->w + x) * 3;
}

/* The tEXt "Title" of the file, or "" when it has none. */
static void read_title(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    ck_assert(png && info);
    ck_assert_int_eq(setjmp(png_jmpbuf(png)), 0);
    png_init_io(png, f);
    png_read_info(png, info);
    png_textp text = NULL;
    int n = png_get_text(png, info, &text, NULL);
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        if (strcmp(text[i].key, "Title") == 0)
            snprintf(out, size, "%s", text[i].text);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
}

/* ------------------------------------------------------------------ the reference layout */

/* The grey level the header promises for v over [lo, hi]: round-half-up of
 * (v − lo)/(hi − lo)·255, clamped. */
static unsigned ref_level(double v, double lo, double hi)
{
    double t = (v - lo) / (hi - lo) * 255.0;
    if (isnan(t) || t <= 0)
        return 0;
    if (t >= 255)
        return 255;
    return (unsigned)floor(t + 0.5);
}

/* Checks every pixel of the sheet at path against g, found independently: for each
 * sheet pixel, which cell and image pixel it falls in, or the separator. */
static void check_sheet(const char *path, const struct gan_image_grid *g)
{
    struct picture p = read_png(path);
    unsigned scale = g->scale ? g->scale : 1, sep = g->separator;
    unsigned cw = g->width * scale, ch = g->height * scale;
    ck_assert_uint_eq(p.w, g->cols * cw + (g->cols + 1) * sep);
    ck_assert_uint_eq(p.h, g->rows * ch + (g->rows + 1) * sep);
    double lo = g->low == 0 && g->high == 0 ? -1 : g->low;
    double hi = g->low == 0 && g->high == 0 ? 1 : g->high;
    size_t plane = (size_t)g->width * g->height;
    for (unsigned y = 0; y < p.h; y++) {
        for (unsigned x = 0; x < p.w; x++) {
            unsigned want[3] = { 128, 128, 128 };
            unsigned cx = x / (cw + sep), cy = y / (ch + sep);
            unsigned ox = x % (cw + sep), oy = y % (ch + sep);
            size_t cell = (size_t)cy * g->cols + cx;
            int inside = ox >= sep && oy >= sep && cx < g->cols && cy < g->rows
                         && cell < g->count;
            if (inside) {
                unsigned ix = (ox - sep) / scale, iy = (oy - sep) / scale;
                int nan = 0;
                for (unsigned c = 0; c < 3; c++) {
                    unsigned src = g->channels == 3 ? c : 0;
                    float v = g->images[(cell * g->channels + src) * plane
                                        + (size_t)iy * g->width + ix];
                    nan |= isnan(v);
                    want[c] = ref_level(v, lo, hi);
                }
                if (nan) {
                    want[0] = 255;
                    want[1] = 0;
                    want[2] = 255;
                }
            }
            const unsigned char *got = at(&p, x, y);
            for (unsigned c = 0; c < 3; c++)
                ck_assert_msg(got[c] == want[c], "%s: pixel (%u, %u) channel %u is %u, want %u "
                              "(%s)", path, x, y, c, got[c], want[c],
                              inside ? "image" : "separator");
        }
    }
    free(p.px);
}

/* ------------------------------------------------------------------ sizes */

struct size_case {
    unsigned rows, cols, height, width, separator, scale;
    unsigned want_w, want_h;
};

static const struct size_case size_cases[] = {
    { 8, 8, 28, 28, 2, 0, 242, 242 },      /* the sample grid: 8·28 + 9·2 */
    { 8, 8, 28, 28, 1, 1, 233, 233 },
    { 8, 8, 28, 28, 2, 3, 690, 690 },      /* 8·84 + 18 */
    { 3, 5, 28, 28, 0, 0, 140, 84 },
    { 1, 1, 1, 1, 16, 16, 48, 48 },
    { 2, 7, 5, 3, 1, 2, 50, 23 },          /* 7·6 + 8, 2·10 + 3 */
};

START_TEST(test_size)
{
    const struct size_case *c = &size_cases[_i];
    struct gan_image_grid g = { NULL, 0, 1, c->height, c->width, c->rows, c->cols,
                                c->separator, c->scale, 0, 0, NULL };
    unsigned w = 0, h = 0;
    struct gan_error err;
    ck_assert_int_eq(gan_image_grid_size(&g, &w, &h, &err), GAN_OK);
    ck_assert_uint_eq(w, c->want_w);
    ck_assert_uint_eq(h, c->want_h);
}
END_TEST

/* ------------------------------------------------------------------ sheets */

static uint32_t lcg;
static float lcg_uniform(float lo, float hi)
{
    lcg = lcg * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(lcg >> 8) / 16777216.0f;
}

struct sheet_case {
    const char *name;
    unsigned rows, cols, channels, height, width, separator, scale;
    size_t count;
    float low, high;
};

static const struct sheet_case sheet_cases[] = {
    { "8x8 of 28x28, sep 2", 8, 8, 1, 28, 28, 2, 0, 64, 0, 0 },
    { "8x8 of 28x28, sep 1, scale 2", 8, 8, 1, 28, 28, 1, 2, 64, 0, 0 },
    { "fewer images than cells", 3, 4, 1, 6, 5, 2, 1, 7, 0, 0 },
    { "more images than cells", 2, 2, 1, 4, 4, 1, 3, 9, 0, 0 },
    { "RGB images", 2, 3, 3, 5, 4, 2, 1, 6, 0, 0 },
    { "range [0, 1]", 2, 2, 1, 8, 8, 1, 1, 4, 0.0f, 1.0f },
    { "no separator", 2, 3, 1, 3, 3, 0, 0, 6, 0, 0 },
};

/* Random values over a range a little wider than [lo, hi] (so clamping is exercised),
 * with the exact ends, the midpoint and infinities planted in image 0. */
START_TEST(test_sheet)
{
    const struct sheet_case c = sheet_cases[_i];
    size_t n = c.count * c.channels * c.height * c.width;
    float *v = malloc(n * sizeof *v);
    float lo = c.low == 0 && c.high == 0 ? -1 : c.low, hi = c.low == 0 && c.high == 0 ? 1 : c.high;
    float span = hi - lo;
    lcg = 99u + (uint32_t)_i;
    for (size_t k = 0; k < n; k++)
        v[k] = lcg_uniform(lo - 0.2f * span, hi + 0.2f * span);
    v[0] = lo;
    v[1] = hi;
    v[2] = lo + 0.5f * span;
    v[3] = INFINITY;
    v[4] = -INFINITY;
    struct gan_image_grid g = { v, c.count, c.channels, c.height, c.width, c.rows, c.cols,
                                c.separator, c.scale, c.low, c.high, c.name };
    const char *path = tmp_path("sheet.png");
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_image_grid_write(path, &g, &err) == GAN_OK, "%s", err.message);
    check_sheet(path, &g);
    struct picture p = read_png(path);
    ck_assert_int_eq(p.rgb, c.channels == 3);
    /* The planted values: lo → 0, hi → 255, the midpoint → 128 (127.5 rounds up). */
    if (c.channels == 1) {
        unsigned s = c.scale ? c.scale : 1;
        ck_assert_uint_eq(at(&p, c.separator, c.separator)[0], 0);
        ck_assert_uint_eq(at(&p, c.separator + s, c.separator)[0], 255);
        ck_assert_uint_eq(at(&p, c.separator + 2 * s, c.separator)[0], 128);
    }
    char title[128];
    read_title(path, title, sizeof title);
    ck_assert_str_eq(title, c.name);
    free(p.px);
    free(v);
    ck_assert_int_eq(entries(), 1);
}
END_TEST

/* A NaN shows in magenta, and the sheet is RGB so that it can; other pixels stay grey. */
START_TEST(test_nan_marked)
{
    float v[2 * 16];
    for (int k = 0; k < 32; k++)
        v[k] = -1.0f + (float)k / 16.0f;
    v[5] = NAN;
    v[16 + 15] = NAN;
    struct gan_image_grid g = { v, 2, 1, 4, 4, 1, 2, 1, 1, 0, 0, NULL };
    const char *path = tmp_path("nan.png");
    ck_assert_int_eq(gan_image_grid_write(path, &g, NULL), GAN_OK);
    check_sheet(path, &g);
    struct picture p = read_png(path);
    ck_assert(p.rgb);
    const unsigned char *m = at(&p, 1 + 1, 1 + 1);          /* image 0, row 1, column 1 */
    ck_assert(m[0] == 255 && m[1] == 0 && m[2] == 255);
    const unsigned char *m2 = at(&p, 1 + 4 + 1 + 3, 1 + 3); /* image 1, row 3, column 3 */
    ck_assert(m2[0] == 255 && m2[1] == 0 && m2[2] == 255);
    const unsigned char *ok = at(&p, 1, 1);
    ck_assert(ok[0] == ok[1] && ok[1] == ok[2] && ok[0] == 0);
    char title[8];
    read_title(path, title, sizeof title);
    ck_assert_str_eq(title, "");
    free(p.px);
}
END_TEST

/* Writing over a file replaces it whole; a folder that does not exist is an I/O error
 * naming the path, and leaves nothing behind. */
START_TEST(test_atomic_and_failures)
{
    float v[4] = { -1, -0.5f, 0.5f, 1 };
    struct gan_image_grid g = { v, 1, 1, 2, 2, 1, 1, 2, 0, 0, 0, NULL };
    const char *path = tmp_path("out.png");
    ck_assert_int_eq(gan_image_grid_write(path, &g, NULL), GAN_OK);
    g.rows = 3;
    g.cols = 3;
    ck_assert_int_eq(gan_image_grid_write(path, &g, NULL), GAN_OK);
    struct picture p = read_png(path);
    ck_assert_uint_eq(p.w, 3 * 2 + 4 * 2);
    free(p.px);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0644);
    ck_assert_int_eq(entries(), 1);

    struct gan_error err;
    gan_error_clear(&err);
    char missing[200];
    snprintf(missing, sizeof missing, "%s/no-such-folder/grid.png", tmpdir);
    ck_assert_int_eq(gan_image_grid_write(missing, &g, &err), GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, missing));
    ck_assert_ptr_nonnull(strstr(err.message, "temporary file"));
    ck_assert_int_eq(entries(), 1);
}
END_TEST

struct bad_case {
    const char *phrase;
    struct gan_image_grid g;
};

static const float some[4] = { 0, 0, 0, 0 };
static const struct bad_case bad_cases[] = {
    { "channels must be 1", { some, 1, 2, 2, 2, 1, 1, 1, 0, 0, 0, NULL } },
    { "at least 1", { some, 1, 1, 0, 2, 1, 1, 1, 0, 0, 0, NULL } },
    { "at least 1", { some, 1, 1, 2, 2, 0, 1, 1, 0, 0, 0, NULL } },
    { "separator must be 0 to 16", { some, 1, 1, 2, 2, 1, 1, 17, 0, 0, 0, NULL } },
    { "scale must be 0 to 16", { some, 1, 1, 2, 2, 1, 1, 1, 17, 0, 0, NULL } },
    { "finite low < high", { some, 1, 1, 2, 2, 1, 1, 1, 0, 1.0f, 1.0f, NULL } },
    { "finite low < high", { some, 1, 1, 2, 2, 1, 1, 1, 0, 0.0f, NAN, NULL } },
    { "images is NULL", { NULL, 1, 1, 2, 2, 1, 1, 1, 0, 0, 0, NULL } },
    { "more than 16384", { some, 1, 1, 2048, 2048, 1, 1, 1, 16, 0, 0, NULL } },
};

START_TEST(test_refused)
{
    const struct bad_case *c = &bad_cases[_i];
    struct gan_error err;
    gan_error_clear(&err);
    const char *path = tmp_path("bad.png");
    ck_assert_int_eq(gan_image_grid_write(path, &c->g, &err), GAN_ERR_INVALID);
    ck_assert_msg(strstr(err.message, c->phrase), "no \"%s\" in: %s", c->phrase, err.message);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    unsigned w = 7, h = 7;
    ck_assert_int_eq(gan_image_grid_size(&c->g, &w, &h, NULL), GAN_ERR_INVALID);
    ck_assert_int_eq(entries(), 0);
}
END_TEST

START_TEST(test_refused_path)
{
    struct gan_image_grid g = { some, 1, 1, 2, 2, 1, 1, 1, 0, 0, 0, NULL };
    struct gan_error err;
    ck_assert_int_eq(gan_image_grid_write(NULL, &g, &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_image_grid_write("", &g, &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_image_grid_write(tmp_path("x.png"), NULL, &err), GAN_ERR_INVALID);
}
END_TEST

/* ------------------------------------------------------------------ real images */

static const char *fashion_dir(void)
{
    const char *d = getenv("GANCTL_FASHION_MNIST_DIR");
    return d && *d ? d : GAN_IMAGE_DATA_DEFAULT_DIR;
}

/* The first 64 test images as an 8 × 8 sheet at scale 2, left in the build tree
 * (tests/fashion-mnist-grid.png) for a person to look at, each row's labels in its
 * title; checked like any sheet. */
START_TEST(test_fashion_mnist_sheet)
{
    gan_image_set *set = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_image_set_load(fashion_dir(), GAN_IMAGE_TEST, &set, &err) == GAN_OK, "%s",
                  err.message);
    float *x = malloc(64 * GAN_IMAGE_PIXELS * sizeof *x);
    int labels[64];
    ck_assert_int_eq(gan_image_set_copy(set, 0, 64, x, labels, &err), GAN_OK);
    char title[1024];
    size_t used = (size_t)snprintf(title, sizeof title, "Fashion-MNIST test 0-63:");
    for (int i = 0; i < 64 && used < sizeof title; i++)
        used += (size_t)snprintf(title + used, sizeof title - used, "%s%s", i % 8 ? ", " : " | ",
                                 gan_image_class_name(labels[i]));
    struct gan_image_grid g = { x, 64, 1, GAN_IMAGE_SIDE, GAN_IMAGE_SIDE, 8, 8, 2, 2, 0, 0,
                                title };
    const char *path = GAN_TEST_GRID_DIR "/fashion-mnist-grid.png";
    ck_assert_msg(gan_image_grid_write(path, &g, &err) == GAN_OK, "%s", err.message);
    check_sheet(path, &g);
    free(x);
    gan_image_set_free(set);
}
END_TEST

static Suite *image_grid_suite(void)
{
    Suite *s = suite_create("image_grid");
    TCase *tc = tcase_create("sizes");
    tcase_add_loop_test(tc, test_size, 0, (int)(sizeof size_cases / sizeof size_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("sheets");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_sheet, 0, (int)(sizeof sheet_cases / sizeof sheet_cases[0]));
    tcase_add_test(tc, test_nan_marked);
    suite_add_tcase(s, tc);

    tc = tcase_create("files");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_atomic_and_failures);
    tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(tc, test_refused_path);
    suite_add_tcase(s, tc);

    char probe[512];
    snprintf(probe, sizeof probe, "%s/t10k-images-idx3-ubyte.gz", fashion_dir());
    if (access(probe, R_OK) == 0) {
        tc = tcase_create("fashion-mnist");
        tcase_add_test(tc, test_fashion_mnist_sheet);
        suite_add_tcase(s, tc);
    } else {
        fprintf(stderr, "SKIP fashion-mnist sheet: not in %s (install %s)\n", fashion_dir(),
                GAN_IMAGE_DATA_PACKAGE);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(image_grid_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
