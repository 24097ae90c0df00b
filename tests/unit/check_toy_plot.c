/* SPDX-License-Identifier: MIT */
/* check_toy_plot.c — tests of the toy PNG picture: written files read back with
 * libpng, the field shading, the colours under plotted points, and atomic writing. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/plot/toy_plot.h"

static char dir[256];

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/check_toy_plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[512];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static const char *in_dir(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* The file as 8-bit RGB through libpng's simplified reader. */
struct image {
    unsigned w, h;
    unsigned char *px;
};

static struct image read_png(const char *path)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    ck_assert_msg(png_image_begin_read_from_file(&img, path), "%s: %s", path, img.message);
    img.format = PNG_FORMAT_RGB;
    struct image out = { img.width, img.height, malloc(PNG_IMAGE_SIZE(img)) };
    ck_assert_ptr_nonnull(out.px);
    ck_assert_msg(png_image_finish_read(&img, NULL, out.px, 0, NULL), "%s: %s", path,
                  img.message);
    return out;
}

static const unsigned char *pixel(const struct image *im, unsigned x, unsigned y)
{
    ck_assert(x < im->w && y < im->h);
    return im->px + ((size_t)y * im->w + x) * 3;
}

static struct image write_and_read(const char *name, const struct gan_toy_plot *p,
                                   struct gan_toy_plot_geometry *g)
{
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_plot_geometry(p, g, &err), GAN_OK);
    ck_assert_msg(gan_toy_plot_write(in_dir(name), p, &err) == GAN_OK, "%s", err.message);
    struct image im = read_png(in_dir(name));
    ck_assert_uint_eq(im.w, g->width);
    ck_assert_uint_eq(im.h, g->height);
    return im;
}

/* The filter byte each row of an 8-bit RGB, non-interlaced PNG starts with, read from
 * the file's IDAT chunks inflated with zlib (libpng's readers undo the filters and do
 * not say which were used). Returns how many rows have a filter other than none. */
static unsigned filtered_rows(const char *path, unsigned w, unsigned h)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char sig[8];
    ck_assert_uint_eq(fread(sig, 1, 8, f), 8);
    unsigned char *idat = NULL;
    size_t idat_len = 0;
    for (;;) {
        unsigned char head[8];
        ck_assert_uint_eq(fread(head, 1, 8, f), 8);
        size_t len = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8
                     | head[3];
        if (memcmp(head + 4, "IEND", 4) == 0)
            break;
        if (memcmp(head + 4, "IDAT", 4) == 0) {
            idat = realloc(idat, idat_len + len);
            ck_assert_ptr_nonnull(idat);
            ck_assert_uint_eq(fread(idat + idat_len, 1, len, f), len);
            idat_len += len;
            ck_assert_int_eq(fseek(f, 4, SEEK_CUR), 0); /* the CRC */
        } else {
            ck_assert_int_eq(fseek(f, (long)len + 4, SEEK_CUR), 0);
        }
    }
    fclose(f);
    const size_t row = 1 + (size_t)w * 3;
    uLongf raw_len = (uLongf)(row * h);
    unsigned char *raw = malloc(raw_len);
    ck_assert_ptr_nonnull(raw);
    ck_assert_int_eq(uncompress(raw, &raw_len, idat, (uLong)idat_len), Z_OK);
    ck_assert_uint_eq(raw_len, row * h);
    unsigned filtered = 0;
    for (unsigned y = 0; y < h; y++)
        filtered += raw[y * row] != 0;
    free(raw);
    free(idat);
    return filtered;
}

/* The data point at the centre of plot-area pixel (k, l), l counted from the top. */
static void data_at(const struct gan_toy_plot_geometry *g, unsigned k, unsigned l, float *x,
                    float *y)
{
    *x = (float)(g->xmin + (k + 0.5) / g->size * (g->xmax - g->xmin));
    *y = (float)(g->ymax - (l + 0.5) / g->size * (g->ymax - g->ymin));
}

static int lightness(const unsigned char *p)
{
    return p[0] + p[1] + p[2];
}

/* A field over the default view: f(x, y) = a·x + b·y + c on a grid×grid lattice. */
static float *linear_field(size_t grid, double a, double b, double c)
{
    float *f = malloc(grid * grid * sizeof *f);
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < grid; i++) {
        double y = -3.0 + 6.0 * (double)i / (double)(grid - 1);
        for (size_t j = 0; j < grid; j++) {
            double x = -3.0 + 6.0 * (double)j / (double)(grid - 1);
            f[i * grid + j] = (float)(a * x + b * y + c);
        }
    }
    return f;
}

/* ------------------------------------------------------------------ size */

struct size_case {
    unsigned size;
    const char *title;
};
static const struct size_case size_cases[] = {
    { 0, "iter 2000  modes 8/8  hq 97.1%" }, { 0, NULL }, { 256, "small" }, { 100, "" },
};

START_TEST(test_size)
{
    const struct size_case *sc = &size_cases[_i];
    struct gan_toy_plot p = { .size = sc->size, .title = sc->title };
    struct gan_toy_plot_geometry g;
    struct image im = write_and_read("size.png", &p, &g);
    unsigned want = sc->size ? sc->size : 512;
    ck_assert_uint_eq(g.size, want);
    ck_assert_double_eq(g.xmin, -3.0);
    ck_assert_double_eq(g.ymax, 3.0);
    /* The plot area fills the width but for the y tick labels and a thin margin; the
     * strips of the title, the x tick labels and the legend add about a sixth. */
    ck_assert_uint_ge(im.w, want);
    ck_assert_uint_le(im.w, want + want / 16 + 24);
    ck_assert_uint_ge(im.h, want);
    ck_assert_uint_le(im.h, want + want / 5 + 48);
    ck_assert_uint_le(g.plot_x + g.size, im.w);
    ck_assert_uint_le(g.plot_y + g.size, im.h);
    /* A title adds a strip holding dark text pixels above the plot area. */
    struct gan_toy_plot bare = { .size = sc->size };
    struct gan_toy_plot_geometry gb;
    ck_assert_int_eq(gan_toy_plot_geometry(&bare, &gb, NULL), GAN_OK);
    int titled = sc->title && *sc->title;
    ck_assert_uint_eq(g.plot_y > gb.plot_y, titled);
    size_t dark = 0;
    for (unsigned y = 0; y + 1 < g.plot_y; y++)
        for (unsigned x = 0; x < im.w; x++)
            dark += lightness(pixel(&im, x, y)) < 200;
    ck_assert_uint_eq(dark > 20, titled);
    free(im.px);
}
END_TEST

/* ------------------------------------------------------------------ the field */

/* f = x: lighter on the left (low values) than on the right, and equal down a
 * column away from the frame's ticks. Each field is stretched to its own range:
 * 1024·f (an exact scaling) gives the same picture to the bit, and f + 1000 the same
 * but for rounding (a byte here and there, and contour pixels that move by one). */
/* A drawing is written with no row filter (png_write.c: unfiltered, deflate compresses
 * the plot better and faster than with libpng's per-row choice). */
START_TEST(test_rows_unfiltered)
{
    const size_t grid = 64;
    float *field = linear_field(grid, 1, 0.5, 0);
    struct gan_toy_plot p = { .field = field, .grid = grid };
    struct gan_toy_plot_geometry g;
    struct image im = write_and_read("rows.png", &p, &g);
    ck_assert_uint_eq(filtered_rows(in_dir("rows.png"), g.width, g.height), 0);
    free(im.px);
    free(field);
}
END_TEST

START_TEST(test_field_follows_values)
{
    const size_t grid = 64;
    float *f1 = linear_field(grid, 1, 0, 0), *f2 = malloc(grid * grid * sizeof *f2),
          *f3 = malloc(grid * grid * sizeof *f3);
    for (size_t k = 0; k < grid * grid; k++) {
        f2[k] = 1024.0f * f1[k];
        f3[k] = f1[k] + 1000.0f;
    }
    struct gan_toy_plot p = { .field = f1, .grid = grid };
    struct gan_toy_plot_geometry g;
    struct image a = write_and_read("f1.png", &p, &g);
    p.field = f2;
    struct image b = write_and_read("f2.png", &p, &g);
    p.field = f3;
    struct image c = write_and_read("f3.png", &p, &g);
    unsigned mid = g.plot_y + g.size / 2;
    int prev = 1 << 30;
    for (unsigned k = 16; k < g.size - 16; k += 8) {
        /* Skip columns of contour lines: darker than both neighbours. */
        int v = lightness(pixel(&a, g.plot_x + k, mid));
        int left = lightness(pixel(&a, g.plot_x + k - 1, mid));
        int right = lightness(pixel(&a, g.plot_x + k + 1, mid));
        if (v < left && v < right)
            continue;
        ck_assert_int_le(v, prev);
        prev = v;
    }
    ck_assert_int_gt(lightness(pixel(&a, g.plot_x + 20, mid)),
                     lightness(pixel(&a, g.plot_x + g.size - 20, mid)) + 150);
    for (unsigned k = 10; k < g.size - 10; k += 37) {
        const unsigned char *top = pixel(&a, g.plot_x + k, g.plot_y + 10);
        for (unsigned l = 11; l < g.size - 10; l += 5)
            ck_assert_int_eq(memcmp(top, pixel(&a, g.plot_x + k, g.plot_y + l), 3), 0);
    }
    size_t off = 0;
    for (unsigned l = 0; l < g.size; l++) {
        ck_assert_int_eq(memcmp(pixel(&a, g.plot_x, g.plot_y + l),
                                pixel(&b, g.plot_x, g.plot_y + l), 3 * g.size), 0);
        for (unsigned k = 0; k < g.size; k++) {
            const unsigned char *pa = pixel(&a, g.plot_x + k, g.plot_y + l);
            const unsigned char *pc = pixel(&c, g.plot_x + k, g.plot_y + l);
            for (int ch = 0; ch < 3; ch++)
                ck_assert_int_le(abs(pa[ch] - pc[ch]), 64);
            off += abs(pa[0] - pc[0]) > 1 || abs(pa[1] - pc[1]) > 1 || abs(pa[2] - pc[2]) > 1;
        }
    }
    /* At most the nine contour columns, moved. */
    ck_assert_uint_le(off, 2 * 9 * (size_t)g.size);
    free(a.px);
    free(b.px);
    free(c.px);
    free(f1);
    free(f2);
    free(f3);
}
END_TEST

/* f = y: darker at the top (high y) than at the bottom. */
START_TEST(test_field_orientation)
{
    float *f = linear_field(32, 0, 1, 0);
    struct gan_toy_plot p = { .field = f, .grid = 32, .title = "y" };
    struct gan_toy_plot_geometry g;
    struct image im = write_and_read("fy.png", &p, &g);
    unsigned cx = g.plot_x + g.size / 2 + 3;
    ck_assert_int_lt(lightness(pixel(&im, cx, g.plot_y + 20)),
                     lightness(pixel(&im, cx, g.plot_y + g.size - 20)) - 150);
    free(im.px);
    free(f);
}
END_TEST

/* NaN and infinite values are hatched in grey (r = g = b) and do not stretch the
 * colour scale; a field with no finite value is all hatching. */
START_TEST(test_field_nonfinite)
{
    const size_t grid = 16;
    float *f = linear_field(grid, 1, 0, 0);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++)
            f[i * grid + j] = i % 2 ? INFINITY : NAN; /* the bottom-left corner */
    struct gan_toy_plot p = { .field = f, .grid = grid };
    struct gan_toy_plot_geometry g;
    struct image im = write_and_read("nan.png", &p, &g);
    for (unsigned k = 2; k < 40; k += 3) {
        const unsigned char *c = pixel(&im, g.plot_x + k, g.plot_y + g.size - 1 - k);
        ck_assert_int_eq(c[0], c[1]);
        ck_assert_int_eq(c[1], c[2]);
    }
    const unsigned char *right = pixel(&im, g.plot_x + g.size - 20, g.plot_y + g.size / 2);
    ck_assert_int_ne(right[0], right[2]); /* coloured, not grey */
    free(im.px);

    for (size_t k = 0; k < grid * grid; k++)
        f[k] = NAN;
    im = write_and_read("allnan.png", &p, &g);
    for (unsigned k = 5; k < g.size - 5; k += 7) {
        const unsigned char *c = pixel(&im, g.plot_x + k, g.plot_y + k);
        ck_assert_int_eq(c[0], c[1]);
        ck_assert_int_eq(c[1], c[2]);
    }
    free(im.px);
    free(f);
}
END_TEST

/* ------------------------------------------------------------------ points */

static void unpack(unsigned long hex, int c[3])
{
    c[0] = (int)(hex >> 16) & 255;
    c[1] = (int)(hex >> 8) & 255;
    c[2] = (int)hex & 255;
}

static void assert_close(const unsigned char *got, const int want[3], int tol)
{
    for (int ch = 0; ch < 3; ch++)
        ck_assert_msg(abs(got[ch] - want[ch]) <= tol, "channel %d: %d, expected %d ± %d", ch,
                      got[ch], want[ch], tol);
}

/* On the white scatter background one real point blends its colour at
 * GAN_TOY_PLOT_DOT_ALPHA over white at its centre pixel; twenty stacked points give
 * the real colour itself ((1 − 0.6)^20 ≈ 1e-8); a generated point on top pulls the
 * pixel toward the generated colour. */
static const size_t stack_counts[] = { 1, 20 };

START_TEST(test_real_point_colour)
{
    size_t n = stack_counts[_i];
    struct gan_toy_plot p = { .title = "points" };
    struct gan_toy_plot_geometry g;
    ck_assert_int_eq(gan_toy_plot_geometry(&p, &g, NULL), GAN_OK);
    const unsigned k = 300, l = 100;
    float *xy = malloc(2 * n * sizeof *xy);
    for (size_t i = 0; i < n; i++)
        data_at(&g, k, l, &xy[2 * i], &xy[2 * i + 1]);
    p.real = xy;
    p.n_real = n;
    struct image im = write_and_read("real.png", &p, &g);
    int real[3], want[3];
    unpack(GAN_TOY_PLOT_REAL_RGB, real);
    double keep = pow(1.0 - GAN_TOY_PLOT_DOT_ALPHA, (double)n);
    for (int ch = 0; ch < 3; ch++)
        want[ch] = (int)lrint(real[ch] + keep * (255 - real[ch]));
    assert_close(pixel(&im, g.plot_x + k, g.plot_y + l), want, 1);
    /* Away from the dot the background stays white. */
    const int white[3] = { 255, 255, 255 };
    assert_close(pixel(&im, g.plot_x + k + 8, g.plot_y + l), white, 0);
    assert_close(pixel(&im, g.plot_x + k, g.plot_y + l - 8), white, 0);
    free(im.px);

    float fake[2];
    data_at(&g, k, l, &fake[0], &fake[1]);
    p.fake = fake;
    p.n_fake = 1;
    im = write_and_read("both.png", &p, &g);
    int fk[3];
    unpack(GAN_TOY_PLOT_FAKE_RGB, fk);
    const unsigned char *c = pixel(&im, g.plot_x + k, g.plot_y + l);
    int to_fake = 0, to_real = 0;
    for (int ch = 0; ch < 3; ch++) {
        to_fake += abs(c[ch] - fk[ch]);
        to_real += abs(c[ch] - real[ch]);
    }
    ck_assert_int_lt(to_fake, to_real);
    free(im.px);
    free(xy);
}
END_TEST

/* The real colour also shows over a field, where the background varies. */
START_TEST(test_real_point_over_field)
{
    float *f = linear_field(16, 1, 1, 0);
    struct gan_toy_plot p = { .field = f, .grid = 16 };
    struct gan_toy_plot_geometry g;
    ck_assert_int_eq(gan_toy_plot_geometry(&p, &g, NULL), GAN_OK);
    float xy[2 * 30];
    for (int i = 0; i < 30; i++)
        data_at(&g, 123, 456, &xy[2 * i], &xy[2 * i + 1]);
    p.real = xy;
    p.n_real = 30;
    struct image im = write_and_read("field_real.png", &p, &g);
    int real[3];
    unpack(GAN_TOY_PLOT_REAL_RGB, real);
    assert_close(pixel(&im, g.plot_x + 123, g.plot_y + 456), real, 1);
    free(im.px);
    free(f);
}
END_TEST

/* Points outside the view or not finite leave the picture as it is without them. */
START_TEST(test_points_outside)
{
    struct gan_toy_plot p = { .title = "outside" };
    struct gan_toy_plot_geometry g;
    struct image empty = write_and_read("empty.png", &p, &g);
    const float out[] = { 3.5f, 0.0f, -10.0f, 1.0f, 0.0f, 4.0f, NAN, 0.0f, 0.5f, INFINITY };
    p.real = out;
    p.n_real = 5;
    p.fake = out;
    p.n_fake = 5;
    struct image im = write_and_read("outside.png", &p, &g);
    ck_assert_int_eq(memcmp(empty.px, im.px, (size_t)im.w * im.h * 3), 0);
    free(empty.px);
    free(im.px);
}
END_TEST

/* ------------------------------------------------------------------ the file */

static size_t entries(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

START_TEST(test_missing_folder)
{
    char path[512];
    snprintf(path, sizeof path, "%s/no-such-folder/pic.png", dir);
    struct gan_toy_plot p = { .title = "x" };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_plot_write(path, &p, &err), GAN_ERR_IO);
    ck_assert_int_eq(err.status, GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    ck_assert_ptr_nonnull(strstr(err.message, "No such file or directory"));
    ck_assert_uint_eq(entries(), 0);
}
END_TEST

/* Writing replaces an existing file in one step and leaves no temporary behind;
 * a refused description does not touch the target. */
START_TEST(test_replace_atomically)
{
    const char *path = in_dir("pic.png");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("old contents", f);
    fclose(f);
    struct gan_toy_plot p = { .size = 64 };
    ck_assert_int_eq(gan_toy_plot_write(path, &p, NULL), GAN_OK);
    struct image im = read_png(path);
    ck_assert_uint_ge(im.w, 64);
    free(im.px);
    ck_assert_uint_eq(entries(), 1);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0644);
    off_t before = st.st_size;

    struct gan_error err;
    gan_error_clear(&err);
    p.size = 8;
    ck_assert_int_eq(gan_toy_plot_write(path, &p, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    ck_assert_ptr_nonnull(strstr(err.message, "16 to 4096"));
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, before);
    ck_assert_uint_eq(entries(), 1);
}
END_TEST

/* When the rename fails (the target is a folder) the temporary file goes too. */
START_TEST(test_failed_rename_cleans_up)
{
    const char *path = in_dir("a-folder.png");
    ck_assert_int_eq(mkdir(path, 0755), 0);
    struct gan_toy_plot p = { .size = 32 };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_plot_write(path, &p, &err), GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.message, path));
    ck_assert_ptr_nonnull(strstr(err.message, "renaming"));
    ck_assert_uint_eq(entries(), 1);
}
END_TEST

START_TEST(test_bad_descriptions)
{
    float f[4] = { 0 };
    struct gan_error err;
    struct gan_toy_plot_geometry g;
    struct gan_toy_plot cases[] = {
        { .field = f, .grid = 1 },
        { .xmin = 1, .xmax = 1, .ymin = 0, .ymax = 1 },
        { .xmin = 0, .xmax = NAN, .ymin = 0, .ymax = 1 },
        { .n_real = 3 },
        { .n_fake = 1 },
        { .size = 5000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gan_error_clear(&err);
        ck_assert_int_eq(gan_toy_plot_geometry(&cases[i], &g, &err), GAN_ERR_INVALID);
        ck_assert_int_eq(gan_toy_plot_write(in_dir("bad.png"), &cases[i], &err), GAN_ERR_INVALID);
        ck_assert_int_ne(err.message[0], '\0');
    }
    ck_assert_int_eq(gan_toy_plot_write(NULL, &cases[0], &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_toy_plot_write("", &cases[0], &err), GAN_ERR_INVALID);
    ck_assert_uint_eq(entries(), 0);
}
END_TEST

static Suite *toy_plot_suite(void)
{
    Suite *s = suite_create("toy_plot");

    TCase *tc = tcase_create("size");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_size, 0, (int)(sizeof size_cases / sizeof size_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("field");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_field_follows_values);
    tcase_add_test(tc, test_field_orientation);
    tcase_add_test(tc, test_field_nonfinite);
    suite_add_tcase(s, tc);

    tc = tcase_create("points");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_real_point_colour, 0,
                        (int)(sizeof stack_counts / sizeof stack_counts[0]));
    tcase_add_test(tc, test_real_point_over_field);
    tcase_add_test(tc, test_points_outside);
    suite_add_tcase(s, tc);

    tc = tcase_create("file");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_missing_folder);
    tcase_add_test(tc, test_replace_atomically);
    tcase_add_test(tc, test_failed_rename_cleans_up);
    tcase_add_test(tc, test_rows_unfiltered);
    tcase_add_test(tc, test_bad_descriptions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(toy_plot_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
