/* SPDX-License-Identifier: MIT */
/* check_toy_data.c — tests of the toy data sets: names and modes, the exact points
 * each stream block gives, reproducibility and resumption, and their statistics. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/toy_data.h"
#include <ganctl/philox.h>

static const double pi = 3.14159265358979323846;

/* ------------------------------------------------------------------ references */

/* The test's own reading of backend.h's word maps. */
static double ref_uniform(uint32_t w)
{
    return (double)(w >> 8) / 16777216.0 + 0.5 / 16777216.0;
}

static void ref_normals(const uint32_t w[4], double *z0, double *z1)
{
    double radius = sqrt(-2.0 * log(ref_uniform(w[0])));
    double angle = 2.0 * pi * ref_uniform(w[1]);
    *z0 = radius * cos(angle);
    *z1 = radius * sin(angle);
}

/* The paper's toy code's 8 centres, in its order, before the division by 1.414. */
static void ref_centre_8(int i, double *x, double *y)
{
    static const double c[8][2] = {
        { 2, 0 }, { -2, 0 }, { 0, 2 }, { 0, -2 },
        { 1.4142135623730951, 1.4142135623730951 }, { 1.4142135623730951, -1.4142135623730951 },
        { -1.4142135623730951, 1.4142135623730951 }, { -1.4142135623730951, -1.4142135623730951 },
    };
    *x = c[i][0];
    *y = c[i][1];
}

/* Point `block` of 8gaussians or swissroll as toy_data.h lays the stream out. */
static void ref_point(enum gan_toy_kind kind, uint64_t seed, uint64_t block, double *x, double *y)
{
    uint32_t w[4];
    double z0, z1;
    gan_philox_block(seed, block, w);
    ref_normals(w, &z0, &z1);
    if (kind == GAN_TOY_8GAUSSIANS) {
        double cx, cy;
        ref_centre_8((int)(w[2] >> 29), &cx, &cy); /* floor(8u) is the top 3 bits */
        *x = (cx + 0.02 * z0) / 1.414;
        *y = (cy + 0.02 * z1) / 1.414;
    } else {
        double t = 1.5 * pi + 3.0 * pi * ref_uniform(w[2]);
        *x = (t * cos(t) + 0.25 * z0) / 7.5;
        *y = (t * sin(t) + 0.25 * z1) / 7.5;
    }
}

static float *sample(gan_toy_sampler *s, size_t n)
{
    float *xy = malloc(2 * n * sizeof *xy);
    ck_assert_ptr_nonnull(xy);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_sample(s, n, xy, &err), GAN_OK);
    return xy;
}

static gan_toy_sampler *sampler(enum gan_toy_kind kind, uint64_t seed, uint64_t first)
{
    gan_toy_sampler *s = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_sampler_new(kind, seed, first, &s, &err), GAN_OK);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* The index of the 25gaussians centre (i·5 + j for (2i − 4, 2j − 4)) nearest to a
 * normalised point, and the offset from it in data units. */
static int nearest_25(float x, float y, double *dx, double *dy)
{
    int i = (int)lround(x * 2.828 / 2.0) + 2, j = (int)lround(y * 2.828 / 2.0) + 2;
    ck_assert(i >= 0 && i < 5 && j >= 0 && j < 5);
    *dx = x * 2.828 - (2.0 * i - 4.0);
    *dy = y * 2.828 - (2.0 * j - 4.0);
    return i * 5 + j;
}

/* ------------------------------------------------------------------ names and modes */

START_TEST(test_names)
{
    static const char *const names[] = { "8gaussians", "25gaussians", "swissroll" };
    struct gan_error err;
    for (int k = 0; k < GAN_TOY_KIND_COUNT; k++) {
        enum gan_toy_kind kind = GAN_TOY_KIND_COUNT;
        gan_error_clear(&err);
        ck_assert_int_eq(gan_toy_dataset_from_name(names[k], &kind, &err), GAN_OK);
        ck_assert_int_eq(kind, k);
        ck_assert_str_eq(gan_toy_kind_name(kind), names[k]);
    }
    ck_assert_ptr_null(gan_toy_kind_name(GAN_TOY_KIND_COUNT));
    enum gan_toy_kind kind;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_dataset_from_name("8gaussian", &kind, &err), GAN_ERR_CONFIG);
    ck_assert_int_eq(err.status, GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "\"8gaussian\""));
    ck_assert_ptr_nonnull(strstr(err.message, "8gaussians, 25gaussians and swissroll"));
    ck_assert_int_eq(gan_toy_dataset_from_name(NULL, &kind, NULL), GAN_ERR_CONFIG);
}
END_TEST

START_TEST(test_modes)
{
    struct gan_toy_modes m;
    gan_toy_modes(GAN_TOY_8GAUSSIANS, &m);
    ck_assert_uint_eq(m.count, 8);
    ck_assert_double_eq_tol(m.sigma, 0.02 / 1.414, 1e-15);
    for (int i = 0; i < 8; i++) {
        double x, y;
        ref_centre_8(i, &x, &y);
        ck_assert_double_eq_tol(m.xy[i][0], x / 1.414, 1e-12);
        ck_assert_double_eq_tol(m.xy[i][1], y / 1.414, 1e-12);
        ck_assert_double_eq_tol(hypot(m.xy[i][0], m.xy[i][1]), 2.0 / 1.414, 1e-12);
    }
    gan_toy_modes(GAN_TOY_25GAUSSIANS, &m);
    ck_assert_uint_eq(m.count, 25);
    ck_assert_double_eq_tol(m.sigma, 0.05 / 2.828, 1e-15);
    int seen[25] = { 0 };
    for (int i = 0; i < 25; i++) {
        double dx, dy;
        int c = nearest_25((float)m.xy[i][0], (float)m.xy[i][1], &dx, &dy);
        ck_assert_double_eq_tol(dx, 0.0, 1e-6);
        ck_assert_double_eq_tol(dy, 0.0, 1e-6);
        seen[c]++;
    }
    for (int c = 0; c < 25; c++)
        ck_assert_int_eq(seen[c], 1);
    gan_toy_modes(GAN_TOY_SWISSROLL, &m);
    ck_assert_uint_eq(m.count, 0);
    ck_assert(m.sigma == 0.0);
}
END_TEST

/* ------------------------------------------------------------------ the stream */

/* Every point of 8gaussians and swissroll, from a first block other than 0, equals
 * the test's reference for its block, and the counter advances by one a point. */
static const enum gan_toy_kind per_block_kinds[] = { GAN_TOY_8GAUSSIANS, GAN_TOY_SWISSROLL };

START_TEST(test_points_match_reference)
{
    enum gan_toy_kind kind = per_block_kinds[_i];
    const uint64_t seed = 0x0123456789abcdefULL, first = 1000;
    gan_toy_sampler *s = sampler(kind, seed, first);
    ck_assert_int_eq(gan_toy_sampler_kind(s), kind);
    size_t n = 3001;
    float *xy = sample(s, n);
    struct gan_toy_state st;
    gan_toy_sampler_get_state(s, &st);
    ck_assert_uint_eq(st.block, first + n);
    ck_assert_uint_eq(st.shuffle_block, 0);
    ck_assert_uint_eq(st.cursor, 0);
    for (size_t i = 0; i < n; i++) {
        double x, y;
        ref_point(kind, seed, first + i, &x, &y);
        ck_assert_float_eq_tol(xy[2 * i], (float)x, 2e-6f);
        ck_assert_float_eq_tol(xy[2 * i + 1], (float)y, 2e-6f);
    }
    free(xy);
    gan_toy_sampler_free(s);
}
END_TEST

/* The test's own Fisher–Yates over the fixed set, as toy_data.h documents it. */
static void ref_shuffle(uint64_t seed, uint64_t block, uint32_t *order)
{
    const uint32_t n = GAN_TOY_25_SET_SIZE;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    uint32_t draws = 0, w[4];
    for (uint32_t i = n - 1; i >= 1; i--, draws++) {
        if (draws % 4 == 0)
            gan_philox_block(seed, block + draws / 4, w);
        uint32_t j = (uint32_t)(((uint64_t)w[draws % 4] * (i + 1)) >> 32);
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* 25gaussians: the first pass is the reference fixed set in the reference order. */
START_TEST(test_25_layout)
{
    const uint64_t seed = 99, first = 7;
    const uint32_t n = GAN_TOY_25_SET_SIZE;
    gan_toy_sampler *s = sampler(GAN_TOY_25GAUSSIANS, seed, first);
    struct gan_toy_state st;
    gan_toy_sampler_get_state(s, &st);
    ck_assert_uint_eq(st.shuffle_block, first + n);
    ck_assert_uint_eq(st.block, first + n + GAN_TOY_25_SHUFFLE_BLOCKS);
    ck_assert_uint_eq(st.cursor, 0);
    ck_assert_uint_eq(GAN_TOY_25_SHUFFLE_BLOCKS, 25000);

    uint32_t *order = malloc(n * sizeof *order);
    ck_assert_ptr_nonnull(order);
    ref_shuffle(seed, first + n, order);
    float *xy = sample(s, n);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = order[k];
        uint32_t w[4];
        double z0, z1;
        gan_philox_block(seed, first + p, w);
        ref_normals(w, &z0, &z1);
        /* The paper's toy code's loops: x outer, y inner, 4,000 rounds. */
        double cx = 2.0 * (int)((p % 25) / 5) - 4.0, cy = 2.0 * (int)(p % 5) - 4.0;
        ck_assert_float_eq_tol(xy[2 * k], (float)((cx + 0.05 * z0) / 2.828), 2e-6f);
        ck_assert_float_eq_tol(xy[2 * k + 1], (float)((cy + 0.05 * z1) / 2.828), 2e-6f);
    }
    gan_toy_sampler_get_state(s, &st);
    ck_assert_uint_eq(st.cursor, n);
    ck_assert_uint_eq(st.block, first + n + GAN_TOY_25_SHUFFLE_BLOCKS);
    free(xy);
    free(order);
    gan_toy_sampler_free(s);
}
END_TEST

/* ------------------------------------------------------------------ reproducibility */

static const enum gan_toy_kind all_kinds[] = {
    GAN_TOY_8GAUSSIANS, GAN_TOY_25GAUSSIANS, GAN_TOY_SWISSROLL,
};

START_TEST(test_same_seed_same_points)
{
    enum gan_toy_kind kind = all_kinds[_i];
    gan_toy_sampler *a = sampler(kind, 5, 0), *b = sampler(kind, 5, 0), *c = sampler(kind, 6, 0);
    size_t n = 2048;
    float *pa = sample(a, n), *pb = sample(b, n), *pc = sample(c, n);
    ck_assert_int_eq(memcmp(pa, pb, 2 * n * sizeof *pa), 0);
    size_t same = 0;
    for (size_t i = 0; i < 2 * n; i++)
        same += pa[i] == pc[i];
    /* Coordinates that coincide across seeds are chance: at most a handful. */
    ck_assert_uint_lt(same, 8);
    /* Successive batches differ. */
    float *pa2 = sample(a, n);
    ck_assert_int_ne(memcmp(pa, pa2, 2 * n * sizeof *pa), 0);
    free(pa);
    free(pa2);
    free(pb);
    free(pc);
    gan_toy_sampler_free(a);
    gan_toy_sampler_free(b);
    gan_toy_sampler_free(c);
}
END_TEST

/* Saving a state after `before` points and restoring it into a new sampler continues
 * the same sequence; for 25gaussians the cases cross a reshuffle. */
struct resume_case {
    enum gan_toy_kind kind;
    size_t before, after;
};
static const struct resume_case resume_cases[] = {
    { GAN_TOY_8GAUSSIANS, 0, 300 },
    { GAN_TOY_8GAUSSIANS, 777, 1000 },
    { GAN_TOY_SWISSROLL, 1234, 999 },
    { GAN_TOY_25GAUSSIANS, 256, 512 },
    { GAN_TOY_25GAUSSIANS, 99900, 300 },       /* the restored run reshuffles */
    { GAN_TOY_25GAUSSIANS, 100000, 10 },       /* saved exactly at the end of a pass */
    { GAN_TOY_25GAUSSIANS, 100100, 100000 },   /* saved inside the second pass */
};

START_TEST(test_resume)
{
    const struct resume_case *rc = &resume_cases[_i];
    gan_toy_sampler *a = sampler(rc->kind, 31337, 4);
    float *head = rc->before ? sample(a, rc->before) : NULL;
    struct gan_toy_state st;
    gan_toy_sampler_get_state(a, &st);
    float *tail = sample(a, rc->after);

    gan_toy_sampler *b = sampler(rc->kind, 31337, 4);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_sampler_set_state(b, &st, &err), GAN_OK);
    float *again = sample(b, rc->after);
    ck_assert_int_eq(memcmp(tail, again, 2 * rc->after * sizeof *tail), 0);
    struct gan_toy_state sa, sb;
    gan_toy_sampler_get_state(a, &sa);
    gan_toy_sampler_get_state(b, &sb);
    ck_assert_uint_eq(sa.block, sb.block);
    ck_assert_uint_eq(sa.shuffle_block, sb.shuffle_block);
    ck_assert_uint_eq(sa.cursor, sb.cursor);
    free(head);
    free(tail);
    free(again);
    gan_toy_sampler_free(a);
    gan_toy_sampler_free(b);
}
END_TEST

START_TEST(test_bad_states)
{
    struct gan_error err;
    gan_toy_sampler *s = sampler(GAN_TOY_8GAUSSIANS, 1, 10);
    struct gan_toy_state bad = { 9, 0, 0 };
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_sampler_set_state(s, &bad, &err), GAN_ERR_INVALID);
    /* Said in the settings the user knows, not the stream's blocks. */
    ck_assert_ptr_nonnull(strstr(err.message, "the saved data position (data.block, data.shuffle_block, data.cursor) is not one this data set reaches with this run.seed after any number of iterations: resume with the data.name and run.seed the run was trained with"));
    ck_assert_ptr_nonnull(strstr(err.message, "8gaussians"));
    bad = (struct gan_toy_state){ 20, 0, 5 };
    ck_assert_int_eq(gan_toy_sampler_set_state(s, &bad, &err), GAN_ERR_INVALID);
    struct gan_toy_state st;
    gan_toy_sampler_get_state(s, &st);
    ck_assert_uint_eq(st.block, 10); /* unchanged */
    gan_toy_sampler_free(s);

    s = sampler(GAN_TOY_25GAUSSIANS, 1, 0);
    gan_toy_sampler_get_state(s, &st);
    struct gan_toy_state cases[] = {
        { st.block, st.shuffle_block, GAN_TOY_25_SET_SIZE + 1 },    /* cursor past the set */
        { st.block + 1, st.shuffle_block, 0 },                      /* block off the layout */
        { st.block + 1, st.shuffle_block + 1, 0 },                  /* not a pass start */
        { st.block - GAN_TOY_25_SHUFFLE_BLOCKS, st.shuffle_block - GAN_TOY_25_SHUFFLE_BLOCKS, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gan_error_clear(&err);
        ck_assert_int_eq(gan_toy_sampler_set_state(s, &cases[i], &err), GAN_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(err.message, "is not one this data set reaches with this run.seed"));
        ck_assert_ptr_nonnull(strstr(err.message, "25gaussians"));
    }
    /* A later pass is a valid position. */
    struct gan_toy_state later = { st.block + 2 * GAN_TOY_25_SHUFFLE_BLOCKS,
                                   st.shuffle_block + 2 * GAN_TOY_25_SHUFFLE_BLOCKS, 17 };
    ck_assert_int_eq(gan_toy_sampler_set_state(s, &later, &err), GAN_OK);
    gan_toy_sampler_free(s);

    ck_assert_int_eq(gan_toy_sampler_new(GAN_TOY_KIND_COUNT, 1, 0, &s, &err), GAN_ERR_INVALID);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(gan_toy_sampler_new(GAN_TOY_25GAUSSIANS, 1, UINT64_MAX - 5, &s, &err),
                     GAN_ERR_INVALID);
    s = sampler(GAN_TOY_SWISSROLL, 1, UINT64_MAX - 4);
    float xy[16];
    ck_assert_int_eq(gan_toy_sample(s, 8, xy, &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_toy_sample(s, 4, xy, &err), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, 0, NULL, &err), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, 1, NULL, &err), GAN_ERR_INVALID);
    gan_toy_sampler_free(s);
    gan_toy_sampler_free(NULL);
}
END_TEST

/* ------------------------------------------------------------------ distributions */

/* 8gaussians, 16,000 points. With σ = 0.02 per coordinate (data units):
 * - a 2-D Gaussian offset exceeds 5σ with probability exp(−12.5) ≈ 3.7e-6, so about
 *   0.06 points are expected beyond 5σ: allow at most 2, and none beyond 7σ;
 * - the 8 mode counts (expected 2,000 each) pass a χ² test with 7 degrees of freedom
 *   at the 0.1 % level (24.32);
 * - the within-mode std from 32,000 coordinates has a relative standard error of
 *   1/√64000 ≈ 0.4 %: it must be within 2 % of 0.02. */
START_TEST(test_8_distribution)
{
    const size_t n = 16000;
    gan_toy_sampler *s = sampler(GAN_TOY_8GAUSSIANS, 2024, 0);
    float *xy = sample(s, n);
    struct gan_toy_modes m;
    gan_toy_modes(GAN_TOY_8GAUSSIANS, &m);
    size_t count[8] = { 0 }, beyond5 = 0;
    double ss = 0.0, sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double best = INFINITY, bx = 0, by = 0;
        int bi = -1;
        for (int c = 0; c < 8; c++) {
            double cx, cy;
            ref_centre_8(c, &cx, &cy);
            double dx = xy[2 * i] * 1.414 - cx, dy = xy[2 * i + 1] * 1.414 - cy;
            if (hypot(dx, dy) < best) {
                best = hypot(dx, dy);
                bi = c;
                bx = dx;
                by = dy;
            }
        }
        ck_assert_double_le(best, 7 * 0.02);
        beyond5 += best > 5 * 0.02;
        count[bi]++;
        ss += bx * bx + by * by;
        sum += bx + by;
    }
    ck_assert_uint_le(beyond5, 2);
    double chi2 = 0.0;
    for (int c = 0; c < 8; c++)
        chi2 += (count[c] - n / 8.0) * (count[c] - n / 8.0) / (n / 8.0);
    ck_assert_double_lt(chi2, 24.32);
    double mean = sum / (2.0 * n);
    double sd = sqrt(ss / (2.0 * n) - mean * mean);
    ck_assert_double_eq_tol(sd, 0.02, 0.02 * 0.02);
    ck_assert_double_eq_tol(mean, 0.0, 5 * 0.02 / sqrt(2.0 * n));
    /* In normalised units the std is the σ gan_toy_modes reports. */
    ck_assert_double_eq_tol(sd / 1.414, m.sigma, 0.02 * m.sigma);
    free(xy);
    gan_toy_sampler_free(s);
}
END_TEST

static int cmp_point(const void *pa, const void *pb)
{
    const float *a = pa, *b = pb;
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1])
        return a[1] < b[1] ? -1 : 1;
    return 0;
}

/* 25gaussians: one pass holds each centre exactly 4,000 times with noise of std
 * 0.05 (relative standard error 1/√200000 ≈ 0.2 %: within 2 %); the next pass is
 * the same multiset in another order, and a call may cross the boundary. */
START_TEST(test_25_distribution)
{
    const size_t n = GAN_TOY_25_SET_SIZE;
    gan_toy_sampler *s = sampler(GAN_TOY_25GAUSSIANS, 77, 0);
    float *first = sample(s, n - 100);
    float *rest = sample(s, 100 + n); /* the end of pass 1 and all of pass 2 */
    float *pass1 = malloc(2 * n * sizeof *pass1);
    ck_assert_ptr_nonnull(pass1);
    memcpy(pass1, first, 2 * (n - 100) * sizeof *pass1);
    memcpy(pass1 + 2 * (n - 100), rest, 200 * sizeof *pass1);
    float *pass2 = rest + 200;

    size_t count[25] = { 0 };
    double ss = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double dx, dy;
        count[nearest_25(pass1[2 * i], pass1[2 * i + 1], &dx, &dy)]++;
        ss += dx * dx + dy * dy;
        worst = fmax(worst, hypot(dx, dy));
    }
    for (int c = 0; c < 25; c++)
        ck_assert_uint_eq(count[c], 4000);
    ck_assert_double_eq_tol(sqrt(ss / (2.0 * n)), 0.05, 0.05 * 0.02);
    /* 100,000 offsets: exp(−r²/2σ²) puts 7σ at a chance of 2e-11 each. */
    ck_assert_double_lt(worst, 7 * 0.05);

    size_t same_place = 0;
    for (size_t i = 0; i < n; i++)
        same_place += pass1[2 * i] == pass2[2 * i] && pass1[2 * i + 1] == pass2[2 * i + 1];
    /* Two independent permutations agree at about one place. */
    ck_assert_uint_lt(same_place, 10);
    qsort(pass1, n, 2 * sizeof *pass1, cmp_point);
    qsort(pass2, n, 2 * sizeof *pass2, cmp_point);
    ck_assert_int_eq(memcmp(pass1, pass2, 2 * n * sizeof *pass1), 0);

    struct gan_toy_state st;
    gan_toy_sampler_get_state(s, &st);
    ck_assert_uint_eq(st.cursor, n);
    ck_assert_uint_eq(st.shuffle_block, n + GAN_TOY_25_SHUFFLE_BLOCKS);
    free(first);
    free(rest);
    free(pass1);
    gan_toy_sampler_free(s);
}
END_TEST

/* swissroll, 20,000 points. Without noise the radius is t/7.5 with t uniform on
 * [1.5π, 4.5π]: mean 3π/7.5 ≈ 1.2566, std 3π/(7.5√12) ≈ 0.363, so the sample mean has
 * a standard error of 0.0026 (the noise adds about σ²/2r ≈ 0.0004); allow 0.013.
 * Half the radii lie below the middle of the range (0.5 ± 5·0.0035). Every radius
 * is within 6·√2·σ of the range, σ = 0.25/7.5 (each point's noise moves it at most
 * by its length, beyond 6√2σ with probability exp(−36)). */
START_TEST(test_swiss_distribution)
{
    const size_t n = 20000;
    gan_toy_sampler *s = sampler(GAN_TOY_SWISSROLL, 11, 0);
    float *xy = sample(s, n);
    const double rmin = 1.5 * pi / 7.5, rmax = 4.5 * pi / 7.5, sigma = 0.25 / 7.5;
    double sum = 0.0, xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    size_t below = 0;
    for (size_t i = 0; i < n; i++) {
        double x = xy[2 * i], y = xy[2 * i + 1], r = hypot(x, y);
        ck_assert_double_ge(r, rmin - 6 * M_SQRT2 * sigma);
        ck_assert_double_le(r, rmax + 6 * M_SQRT2 * sigma);
        sum += r;
        below += r < 0.5 * (rmin + rmax);
        xmin = fmin(xmin, x);
        xmax = fmax(xmax, x);
        ymin = fmin(ymin, y);
        ymax = fmax(ymax, y);
    }
    ck_assert_double_eq_tol(sum / n, 3.0 * pi / 7.5, 0.013);
    ck_assert_double_eq_tol((double)below / n, 0.5, 5 * sqrt(0.25 / n));
    /* The extent: the extremes of each coordinate lie within 5σ of those of the
     * noise-free curve (found here on a fine grid of t). Some 400 points sit within σ
     * of each extreme, and the largest of 400 normals exceeds 5σ with probability
     * about 1e-4. */
    double cx_min = INFINITY, cx_max = -INFINITY, cy_min = INFINITY, cy_max = -INFINITY;
    for (int k = 0; k <= 100000; k++) {
        double t = 1.5 * pi + 3.0 * pi * k / 100000.0;
        cx_min = fmin(cx_min, t * cos(t) / 7.5);
        cx_max = fmax(cx_max, t * cos(t) / 7.5);
        cy_min = fmin(cy_min, t * sin(t) / 7.5);
        cy_max = fmax(cy_max, t * sin(t) / 7.5);
    }
    ck_assert_double_eq_tol(xmin, cx_min, 5 * sigma);
    ck_assert_double_eq_tol(xmax, cx_max, 5 * sigma);
    ck_assert_double_eq_tol(ymin, cy_min, 5 * sigma);
    ck_assert_double_eq_tol(ymax, cy_max, 5 * sigma);
    free(xy);
    gan_toy_sampler_free(s);
}
END_TEST

static Suite *toy_data_suite(void)
{
    Suite *s = suite_create("toy_data");

    TCase *tc = tcase_create("names-and-modes");
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_modes);
    suite_add_tcase(s, tc);

    tc = tcase_create("stream-layout");
    tcase_add_loop_test(tc, test_points_match_reference, 0,
                        (int)(sizeof per_block_kinds / sizeof per_block_kinds[0]));
    tcase_add_test(tc, test_25_layout);
    suite_add_tcase(s, tc);

    tc = tcase_create("reproducibility");
    tcase_add_loop_test(tc, test_same_seed_same_points, 0,
                        (int)(sizeof all_kinds / sizeof all_kinds[0]));
    tcase_add_loop_test(tc, test_resume, 0, (int)(sizeof resume_cases / sizeof resume_cases[0]));
    tcase_add_test(tc, test_bad_states);
    suite_add_tcase(s, tc);

    tc = tcase_create("distributions");
    tcase_add_test(tc, test_8_distribution);
    tcase_add_test(tc, test_25_distribution);
    tcase_add_test(tc, test_swiss_distribution);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(toy_data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
