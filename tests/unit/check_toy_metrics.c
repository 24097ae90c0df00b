/* SPDX-License-Identifier: MIT */
/* check_toy_metrics.c — tests of the toy quality metrics on crafted point sets with
 * known answers, of the sliced W1 distance against an independent reference, and of
 * the real-vs-real floor. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/toy_metrics.h"
#include <ganctl/philox.h>

static const double pi = 3.14159265358979323846;

static float *points(size_t n)
{
    float *xy = calloc(2 * n, sizeof *xy);
    ck_assert_ptr_nonnull(xy);
    return xy;
}

static struct gan_toy_modes modes_of(enum gan_toy_kind kind)
{
    struct gan_toy_modes m;
    gan_toy_modes(kind, &m);
    return m;
}

/* A real set to compare against; only the sliced distance reads it. */
static float *real_set(enum gan_toy_kind kind, size_t n)
{
    gan_toy_sampler *s;
    ck_assert_int_eq(gan_toy_sampler_new(kind, 3, 0, &s, NULL), GAN_OK);
    float *xy = points(n);
    ck_assert_int_eq(gan_toy_sample(s, n, xy, NULL), GAN_OK);
    gan_toy_sampler_free(s);
    return xy;
}

static struct gan_toy_quality quality(enum gan_toy_kind kind, const float *fake, size_t n)
{
    float *real = real_set(kind, 500);
    struct gan_toy_quality q;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_quality(kind, fake, n, real, 500, &q, &err), GAN_OK);
    free(real);
    return q;
}

/* ------------------------------------------------------------------ crafted sets */

START_TEST(test_all_at_centres)
{
    static const enum gan_toy_kind kinds[] = { GAN_TOY_8GAUSSIANS, GAN_TOY_25GAUSSIANS };
    enum gan_toy_kind kind = kinds[_i];
    struct gan_toy_modes m = modes_of(kind);
    const size_t per = 100, n = per * m.count;
    float *xy = points(n);
    for (size_t i = 0; i < n; i++) {
        xy[2 * i] = (float)m.xy[i % m.count][0];
        xy[2 * i + 1] = (float)m.xy[i % m.count][1];
    }
    struct gan_toy_quality q = quality(kind, xy, n);
    ck_assert_int_eq(q.has_modes, 1);
    ck_assert_uint_eq(q.modes_total, m.count);
    ck_assert_int_eq(q.modes_covered, (long)m.count);
    ck_assert_double_eq(q.high_quality_pct, 100.0);
    ck_assert_uint_eq(q.nonfinite, 0);
    for (size_t c = 0; c < m.count; c++)
        ck_assert_uint_eq(q.hits[c], per);
    ck_assert(isfinite(q.sliced_w1) && q.sliced_w1 > 0.0);
    free(xy);
}
END_TEST

START_TEST(test_three_centres)
{
    struct gan_toy_modes m = modes_of(GAN_TOY_8GAUSSIANS);
    const size_t n = 2500;
    float *xy = points(n);
    static const int used[3] = { 1, 4, 6 };
    for (size_t i = 0; i < n; i++) {
        xy[2 * i] = (float)m.xy[used[i % 3]][0];
        xy[2 * i + 1] = (float)m.xy[used[i % 3]][1];
    }
    struct gan_toy_quality q = quality(GAN_TOY_8GAUSSIANS, xy, n);
    ck_assert_int_eq(q.modes_covered, 3);
    ck_assert_double_eq(q.high_quality_pct, 100.0);
    ck_assert_uint_eq(q.hits[1] + q.hits[4] + q.hits[6], n);
    ck_assert_uint_eq(q.hits[0], 0);
    free(xy);
}
END_TEST

START_TEST(test_far_away)
{
    const size_t n = 1000;
    float *xy = points(n);
    for (size_t i = 0; i < n; i++) {
        xy[2 * i] = 2.5f + 0.001f * (float)i;
        xy[2 * i + 1] = -2.5f;
    }
    struct gan_toy_quality q = quality(GAN_TOY_8GAUSSIANS, xy, n);
    ck_assert_int_eq(q.modes_covered, 0);
    ck_assert_double_eq(q.high_quality_pct, 0.0);
    /* The origin sits between all modes: not high quality either. */
    memset(xy, 0, 2 * n * sizeof *xy);
    q = quality(GAN_TOY_25GAUSSIANS, xy, n);
    ck_assert_int_eq(q.modes_covered, 1); /* (0, 0) is a 25gaussians centre */
    ck_assert_double_eq(q.high_quality_pct, 100.0);
    q = quality(GAN_TOY_8GAUSSIANS, xy, n);
    ck_assert_int_eq(q.modes_covered, 0);
    ck_assert_double_eq(q.high_quality_pct, 0.0);
    free(xy);
}
END_TEST

/* Points at 2.9σ from a centre are high quality, at 3.1σ they are not, whatever
 * the direction. */
START_TEST(test_three_sigma_edge)
{
    struct gan_toy_modes m = modes_of(GAN_TOY_8GAUSSIANS);
    const size_t n = 800;
    float *xy = points(n);
    for (size_t i = 0; i < n; i++) {
        double r = ((i / 8) % 2 ? 3.1 : 2.9) * m.sigma, a = 2 * pi * (double)i / n;
        xy[2 * i] = (float)(m.xy[i % 8][0] + r * cos(a));
        xy[2 * i + 1] = (float)(m.xy[i % 8][1] + r * sin(a));
    }
    struct gan_toy_quality q = quality(GAN_TOY_8GAUSSIANS, xy, n);
    ck_assert_double_eq(q.high_quality_pct, 50.0);
    ck_assert_int_eq(q.modes_covered, 8);
    free(xy);
}
END_TEST

/* A mode counts with hits·2500 ≥ 20·n: the bar is ceil(n / 125). */
struct bar_case {
    size_t n, hits;
    long covered;
    size_t bar;
};
static const struct bar_case bar_cases[] = {
    { 2500, 20, 1, 20 }, { 2500, 19, 0, 20 }, { 250, 2, 1, 2 }, { 250, 1, 0, 2 },
    { 256, 3, 1, 3 },    { 256, 2, 0, 3 },    { 100, 1, 1, 1 }, { 5000, 39, 0, 40 },
    { 5000, 40, 1, 40 },
};

START_TEST(test_coverage_bar)
{
    const struct bar_case *bc = &bar_cases[_i];
    struct gan_toy_modes m = modes_of(GAN_TOY_8GAUSSIANS);
    float *xy = points(bc->n);
    for (size_t i = 0; i < bc->n; i++) {
        int at_mode = i < bc->hits;
        xy[2 * i] = at_mode ? (float)m.xy[2][0] : 2.9f;
        xy[2 * i + 1] = at_mode ? (float)m.xy[2][1] : 2.9f;
    }
    struct gan_toy_quality q = quality(GAN_TOY_8GAUSSIANS, xy, bc->n);
    ck_assert_uint_eq(q.mode_min_hits, bc->bar);
    ck_assert_uint_eq(q.hits[2], bc->hits);
    ck_assert_int_eq(q.modes_covered, bc->covered);
    ck_assert_double_eq_tol(q.high_quality_pct, 100.0 * bc->hits / bc->n, 1e-12);
    free(xy);
}
END_TEST

START_TEST(test_swissroll_has_no_modes)
{
    float *xy = real_set(GAN_TOY_SWISSROLL, 400);
    struct gan_toy_quality q = quality(GAN_TOY_SWISSROLL, xy, 400);
    ck_assert_int_eq(q.has_modes, 0);
    ck_assert_uint_eq(q.modes_total, 0);
    ck_assert_int_eq(q.modes_covered, -1);
    ck_assert_uint_eq(q.mode_min_hits, 0);
    ck_assert(isnan(q.high_quality_pct));
    ck_assert(isfinite(q.sliced_w1));
    free(xy);
}
END_TEST

START_TEST(test_nonfinite_samples)
{
    struct gan_toy_modes m = modes_of(GAN_TOY_8GAUSSIANS);
    const size_t n = 1000;
    float *xy = points(n);
    for (size_t i = 0; i < n; i++) {
        xy[2 * i] = (float)m.xy[i % 8][0];
        xy[2 * i + 1] = (float)m.xy[i % 8][1];
    }
    xy[0] = NAN;
    xy[3] = INFINITY;
    xy[2 * 500 + 1] = -INFINITY;
    struct gan_toy_quality q = quality(GAN_TOY_8GAUSSIANS, xy, n);
    ck_assert_uint_eq(q.nonfinite, 3);
    ck_assert_double_eq_tol(q.high_quality_pct, 100.0 * 997 / 1000, 1e-12);
    ck_assert(isnan(q.sliced_w1));
    free(xy);
}
END_TEST

START_TEST(test_bad_arguments)
{
    float xy[4] = { 0 };
    struct gan_toy_quality q;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_quality(GAN_TOY_8GAUSSIANS, xy, 0, xy, 2, &q, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "toy metrics"));
    ck_assert_int_eq(q.modes_covered, -1);
    ck_assert_int_eq(gan_toy_quality(GAN_TOY_8GAUSSIANS, NULL, 2, xy, 2, &q, &err),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_toy_quality(GAN_TOY_KIND_COUNT, xy, 2, xy, 2, &q, &err),
                     GAN_ERR_INVALID);
    double d;
    ck_assert_int_eq(gan_toy_sliced_w1(xy, 2, xy, 0, &d, &err), GAN_ERR_INVALID);
    ck_assert(isnan(d));
    ck_assert_int_eq(gan_toy_quality_floor(GAN_TOY_8GAUSSIANS, 1, 0, 0, &q, &err),
                     GAN_ERR_INVALID);
}
END_TEST

/* ------------------------------------------------------------------ sliced W1 */

/* The test's copy of the documented directions. */
static void direction(unsigned k, double *c, double *s)
{
    uint32_t w[4];
    gan_philox_block(GAN_TOY_SW_SEED, k, w);
    double u = ((w[0] >> 8) + 0.5) / 16777216.0;
    *c = cos(2 * pi * u);
    *s = sin(2 * pi * u);
}

START_TEST(test_sw_self_is_zero)
{
    float *xy = real_set(GAN_TOY_25GAUSSIANS, 777);
    double d = -1;
    ck_assert_int_eq(gan_toy_sliced_w1(xy, 777, xy, 777, &d, NULL), GAN_OK);
    ck_assert_double_eq(d, 0.0);
    /* Order does not matter: reversed, the same set is still at distance 0. */
    float *rev = points(777);
    for (size_t i = 0; i < 777; i++) {
        rev[2 * i] = xy[2 * (776 - i)];
        rev[2 * i + 1] = xy[2 * (776 - i) + 1];
    }
    ck_assert_int_eq(gan_toy_sliced_w1(xy, 777, rev, 777, &d, NULL), GAN_OK);
    ck_assert_double_eq(d, 0.0);
    free(xy);
    free(rev);
}
END_TEST

/* A shift by (d, 0) moves every projection onto θ by d·cos θ without changing their
 * order, so the sliced distance is exactly d·mean_k |cos θ_k|. Over uniformly random
 * directions E|cos θ| = 2/π and sd|cos θ| = √(1/2 − 4/π²) ≈ 0.308, so the mean of
 * K = 128 is 2/π within 4·0.308/√128 ≈ 0.109 (4 standard errors). */
static const double shifts[] = { 0.125, 1.0, 3.0 };

START_TEST(test_sw_shift)
{
    double d = shifts[_i];
    const size_t n = 600;
    float *a = real_set(GAN_TOY_8GAUSSIANS, n), *b = points(n), *c = points(n);
    for (size_t i = 0; i < n; i++) {
        /* Shifts that are exact in float: a and the shifts are multiples of 2^-20. */
        a[2 * i] = ldexpf(rintf(ldexpf(a[2 * i], 20)), -20);
        a[2 * i + 1] = ldexpf(rintf(ldexpf(a[2 * i + 1], 20)), -20);
        b[2 * i] = a[2 * i] + (float)d;
        b[2 * i + 1] = a[2 * i + 1];
        c[2 * i] = a[2 * i];
        c[2 * i + 1] = a[2 * i + 1] + (float)d;
    }
    double mean_cos = 0.0, mean_sin = 0.0;
    for (unsigned k = 0; k < GAN_TOY_SW_DIRECTIONS; k++) {
        double co, si;
        direction(k, &co, &si);
        mean_cos += fabs(co) / GAN_TOY_SW_DIRECTIONS;
        mean_sin += fabs(si) / GAN_TOY_SW_DIRECTIONS;
    }
    double sx, sy;
    ck_assert_int_eq(gan_toy_sliced_w1(a, n, b, n, &sx, NULL), GAN_OK);
    ck_assert_int_eq(gan_toy_sliced_w1(a, n, c, n, &sy, NULL), GAN_OK);
    ck_assert_double_eq_tol(sx, d * mean_cos, 1e-9 * d);
    ck_assert_double_eq_tol(sy, d * mean_sin, 1e-9 * d);
    ck_assert_double_eq_tol(sx / d, 2.0 / pi, 4 * sqrt(0.5 - 4.0 / (pi * pi)) / sqrt(128.0));
    ck_assert_double_eq_tol(sy / d, 2.0 / pi, 4 * sqrt(0.5 - 4.0 / (pi * pi)) / sqrt(128.0));
    /* Symmetric. */
    double back;
    ck_assert_int_eq(gan_toy_sliced_w1(b, n, a, n, &back, NULL), GAN_OK);
    ck_assert_double_eq_tol(back, sx, 1e-12);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* The 1-D W1 through the other formula, ∫|F_a(x) − F_b(x)| dx over the merged
 * sorted values, averaged over the same directions: for sets of any sizes. */
static int cmp_d(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static double ref_sliced(const float *a, size_t na, const float *b, size_t nb)
{
    double *all = malloc((na + nb) * sizeof *all), *pa = malloc(na * sizeof *pa),
           *pb = malloc(nb * sizeof *pb);
    double total = 0.0;
    for (unsigned k = 0; k < GAN_TOY_SW_DIRECTIONS; k++) {
        double co, si;
        direction(k, &co, &si);
        for (size_t i = 0; i < na; i++)
            all[i] = pa[i] = co * a[2 * i] + si * a[2 * i + 1];
        for (size_t i = 0; i < nb; i++)
            all[na + i] = pb[i] = co * b[2 * i] + si * b[2 * i + 1];
        qsort(all, na + nb, sizeof *all, cmp_d);
        qsort(pa, na, sizeof *pa, cmp_d);
        qsort(pb, nb, sizeof *pb, cmp_d);
        size_t ia = 0, ib = 0;
        double w = 0.0;
        for (size_t m = 0; m + 1 < na + nb; m++) {
            while (ia < na && pa[ia] <= all[m])
                ia++;
            while (ib < nb && pb[ib] <= all[m])
                ib++;
            w += fabs((double)ia / na - (double)ib / nb) * (all[m + 1] - all[m]);
        }
        total += w;
    }
    free(all);
    free(pa);
    free(pb);
    return total / GAN_TOY_SW_DIRECTIONS;
}

struct size_pair {
    size_t na, nb;
};
static const struct size_pair size_pairs[] = {
    { 1, 1 }, { 1, 2 }, { 3, 7 }, { 100, 37 }, { 250, 250 }, { 64, 1000 },
};

START_TEST(test_sw_reference)
{
    const struct size_pair *sp = &size_pairs[_i];
    float *a = real_set(GAN_TOY_8GAUSSIANS, sp->na);
    float *b = points(sp->nb);
    gan_toy_sampler *s;
    ck_assert_int_eq(gan_toy_sampler_new(GAN_TOY_SWISSROLL, 8, 0, &s, NULL), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, sp->nb, b, NULL), GAN_OK);
    gan_toy_sampler_free(s);
    double got, want = ref_sliced(a, sp->na, b, sp->nb);
    ck_assert_int_eq(gan_toy_sliced_w1(a, sp->na, b, sp->nb, &got, NULL), GAN_OK);
    ck_assert_double_eq_tol(got, want, 1e-9 * (1.0 + want));
    free(a);
    free(b);
}
END_TEST

/* One point at the origin against two points, (0, 0) and (1, 0): half the mass
 * moves by |cos θ|, so the distance is mean |cos θ_k| / 2. */
START_TEST(test_sw_unequal_known)
{
    float a[2] = { 0, 0 }, b[4] = { 0, 0, 1, 0 };
    double mean_cos = 0.0;
    for (unsigned k = 0; k < GAN_TOY_SW_DIRECTIONS; k++) {
        double co, si;
        direction(k, &co, &si);
        mean_cos += fabs(co) / GAN_TOY_SW_DIRECTIONS;
    }
    double d;
    ck_assert_int_eq(gan_toy_sliced_w1(a, 1, b, 2, &d, NULL), GAN_OK);
    ck_assert_double_eq_tol(d, 0.5 * mean_cos, 1e-12);
}
END_TEST

/* ------------------------------------------------------------------ the floor */

/* Two real sets of 2,500: the fraction within 3σ of a centre is 1 − e^{−4.5} ≈
 * 98.89 % (standard error 0.21 %), so at least 97.5 %; every mode expects 2500/8 or
 * 2500/25 hits against a bar of 20, so all are covered. Along one direction two
 * samples of n from the same distribution are at an expected W1 of
 * ∫E|F_n − G_n| dx = ∫√(2/π)·√(2F(1 − F)/n) dx ≤ 0.0113 per unit of extent, at
 * most 0.032 for 8gaussians (extent 2.83) and 0.043 for swissroll (about 3.8). The
 * multinomial mode counts are shared by all directions, so the average over them
 * does not shrink that spread; the test allows 0.1, about three times the expected
 * value (seeds 1 … 5 give 0.021 … 0.055).
 * A generator shifted by 0.5 in x is at least 0.5·mean|cos θ_k| − floor from the
 * real set (triangle inequality; the mean is 2/π within 0.11, see test_sw_shift),
 * so above 0.5·0.53 − 0.1 = 0.165. */
static const enum gan_toy_kind floor_kinds[] = {
    GAN_TOY_8GAUSSIANS, GAN_TOY_25GAUSSIANS, GAN_TOY_SWISSROLL,
};

START_TEST(test_floor)
{
    enum gan_toy_kind kind = floor_kinds[_i];
    struct gan_toy_quality q;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_toy_quality_floor(kind, 12345, 0, 2500, &q, &err), GAN_OK);
    if (kind == GAN_TOY_SWISSROLL) {
        ck_assert_int_eq(q.has_modes, 0);
        ck_assert_int_eq(q.modes_covered, -1);
    } else {
        ck_assert_int_eq(q.modes_covered, (long)q.modes_total);
        ck_assert_double_ge(q.high_quality_pct, 97.5);
        ck_assert_double_le(q.high_quality_pct, 100.0);
    }
    ck_assert_double_gt(q.sliced_w1, 0.0);
    ck_assert_double_lt(q.sliced_w1, 0.1);

    /* A generator that is 0.5 off in x scores far worse than the floor. */
    float *fake = real_set(kind, 2500), *real = points(2500);
    gan_toy_sampler *s;
    ck_assert_int_eq(gan_toy_sampler_new(kind, 777, 0, &s, NULL), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, 2500, real, NULL), GAN_OK);
    gan_toy_sampler_free(s);
    for (size_t i = 0; i < 2500; i++)
        fake[2 * i] += 0.5f;
    struct gan_toy_quality bad;
    ck_assert_int_eq(gan_toy_quality(kind, fake, 2500, real, 2500, &bad, NULL), GAN_OK);
    ck_assert_double_gt(bad.sliced_w1, 0.165);
    if (kind != GAN_TOY_SWISSROLL)
        ck_assert_double_lt(bad.high_quality_pct, 5.0);
    free(fake);
    free(real);
}
END_TEST

static Suite *toy_metrics_suite(void)
{
    Suite *s = suite_create("toy_metrics");

    TCase *tc = tcase_create("modes-and-quality");
    tcase_add_loop_test(tc, test_all_at_centres, 0, 2);
    tcase_add_test(tc, test_three_centres);
    tcase_add_test(tc, test_far_away);
    tcase_add_test(tc, test_three_sigma_edge);
    tcase_add_loop_test(tc, test_coverage_bar, 0, (int)(sizeof bar_cases / sizeof bar_cases[0]));
    tcase_add_test(tc, test_swissroll_has_no_modes);
    tcase_add_test(tc, test_nonfinite_samples);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("sliced-w1");
    tcase_add_test(tc, test_sw_self_is_zero);
    tcase_add_loop_test(tc, test_sw_shift, 0, (int)(sizeof shifts / sizeof shifts[0]));
    tcase_add_loop_test(tc, test_sw_reference, 0, (int)(sizeof size_pairs / sizeof size_pairs[0]));
    tcase_add_test(tc, test_sw_unequal_known);
    suite_add_tcase(s, tc);

    tc = tcase_create("floor");
    tcase_add_loop_test(tc, test_floor, 0, (int)(sizeof floor_kinds / sizeof floor_kinds[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(toy_metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
