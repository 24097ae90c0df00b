/* SPDX-License-Identifier: MIT */
/* check_image_metrics.c — tests of the image metrics: the Jacobi eigensolver and matrix roots,
 * Fréchet distances with closed forms, sliced W1, the classifier and the metrics on Fashion-MNIST. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "eval/classifier.h"
#include "eval/image_metrics.h"
#include "eval/linalg.h"
#include "io/safetensors/safetensors.h"

/* ------------------------------------------------------------------ helpers */

/* A small reproducible generator for test inputs (xorshift64*), uniform in [−1, 1). */
static uint64_t rng_state;
static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545F4914F6CDD1DULL) >> 11) * 0x1p-52 - 1.0;
}

static double *dalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static float *falloc(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static double max_abs(const double *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(a[i]));
    return m;
}

/* ------------------------------------------------------------------ Jacobi */

/* Matrices with eigenvalues known by construction: H diag(λ) H with H = I − 2uuᵀ/‖u‖²
 * a Householder reflection (orthogonal and symmetric), for sizes and spectra that include
 * repeated, negative and zero eigenvalues. */
static const struct {
    size_t n;
    int spectrum;     /* 0: 1 … n, 1: alternating signs, 2: repeated values, 3: rank one */
} known_cases[] = { { 1, 0 }, { 2, 0 }, { 3, 1 }, { 7, 2 }, { 16, 1 }, { 40, 3 }, { 128, 0 } };

static double known_eigenvalue(int spectrum, size_t i, size_t n)
{
    switch (spectrum) {
    case 0: return (double)(i + 1);
    case 1: return (i % 2 ? -1.0 : 1.0) * (double)(i + 1) * 0.25;
    case 2: return i < n / 2 ? 3.0 : -0.5;
    default: return i == 0 ? 5.0 : 0.0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

START_TEST(test_jacobi_known_spectrum)
{
    size_t n = known_cases[_i].n;
    int spectrum = known_cases[_i].spectrum;
    rng_state = 0x9E3779B97F4A7C15ULL + (uint64_t)_i;
    double *u = dalloc(n), *a = dalloc(n * n), *h = dalloc(n * n), *want = dalloc(n);
    double *evals = dalloc(n), *v = dalloc(n * n), *r = dalloc(n * n);
    double uu = 0;
    for (size_t i = 0; i < n; i++) {
        u[i] = urand() + 0.1;
        uu += u[i] * u[i];
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            h[i * n + j] = (i == j) - 2.0 * u[i] * u[j] / uu;
    for (size_t i = 0; i < n; i++)
        want[i] = known_eigenvalue(spectrum, i, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t k = 0; k < n; k++)
                s += h[i * n + k] * want[k] * h[k * n + j];
            a[i * n + j] = s;
        }
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_sym_eigen(n, a, evals, v, &err) == GAN_OK, "%s", err.message);
    qsort(want, n, sizeof *want, cmp_double);
    double scale = max_abs(want, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(fabs(evals[i] - want[i]) < 1e-12 * scale * (double)n,
                      "n %zu: eigenvalue %zu is %.17g, want %.17g", n, i, evals[i], want[i]);
        if (i > 0)
            ck_assert(evals[i] >= evals[i - 1]);
    }
    /* A = V Λ Vᵀ and VᵀV = I. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0, o = 0;
            for (size_t k = 0; k < n; k++) {
                s += v[i * n + k] * evals[k] * v[j * n + k];
                o += v[k * n + i] * v[k * n + j];
            }
            r[i * n + j] = s - a[i * n + j];
            ck_assert_msg(fabs(o - (i == j)) < 1e-12 * (double)n, "VᵀV(%zu, %zu) = %.17g", i, j, o);
        }
    ck_assert_msg(max_abs(r, n * n) < 1e-12 * scale * (double)n,
                  "n %zu: reconstruction error %.3g", n, max_abs(r, n * n));
    free(u); free(a); free(h); free(want); free(evals); free(v); free(r);
}
END_TEST

/* The upper triangle is the matrix: a lower one that disagrees is ignored. */
START_TEST(test_jacobi_reads_upper_triangle)
{
    double a[4] = { 2, 1, 99, 2 }, evals[2], v[4];
    ck_assert_int_eq(gan_sym_eigen(2, a, evals, v, NULL), GAN_OK);
    ck_assert_double_eq_tol(evals[0], 1.0, 1e-15);
    ck_assert_double_eq_tol(evals[1], 3.0, 1e-15);
    ck_assert_double_eq_tol(fabs(v[0]), sqrt(0.5), 1e-15);
}
END_TEST

START_TEST(test_jacobi_refuses)
{
    double a[4] = { 1, NAN, NAN, 1 }, evals[2], v[4];
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_sym_eigen(2, a, evals, v, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "finite"));
    ck_assert_int_eq(gan_sym_eigen(0, a, evals, v, NULL), GAN_ERR_INVALID);
}
END_TEST

/* S² = A for a random SPD matrix (BBᵀ + I, 30 × 30), and a tiny negative eigenvalue is
 * clamped: diag(4, −1e-12) has root diag(2, 0). */
START_TEST(test_sqrt)
{
    const size_t n = 30;
    rng_state = 12345;
    double *b = dalloc(n * n), *a = dalloc(n * n), *s = dalloc(n * n);
    for (size_t i = 0; i < n * n; i++)
        b[i] = urand();
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double t = i == j;
            for (size_t k = 0; k < n; k++)
                t += b[i * n + k] * b[j * n + k];
            a[i * n + j] = t;
        }
    ck_assert_int_eq(gan_sym_sqrt(n, a, s, NULL), GAN_OK);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double t = 0;
            for (size_t k = 0; k < n; k++)
                t += s[i * n + k] * s[k * n + j];
            ck_assert_msg(fabs(t - a[i * n + j]) < 1e-11 * (double)n, "S²(%zu, %zu) = %.17g, A = %.17g",
                          i, j, t, a[i * n + j]);
            ck_assert_double_eq(s[i * n + j], s[j * n + i]);
        }
    double d[4] = { 4, 0, 0, -1e-12 }, r[4];
    ck_assert_int_eq(gan_sym_sqrt(2, d, r, NULL), GAN_OK);
    ck_assert_double_eq_tol(r[0], 2.0, 1e-15);
    ck_assert_double_eq(r[3], 0.0);
    free(b); free(a); free(s);
}
END_TEST

/* ------------------------------------------------------------------ moments, Fréchet */

START_TEST(test_mean_cov)
{
    const size_t n = 50, d = 6;
    rng_state = 777;
    float *x = falloc(n * d);
    for (size_t i = 0; i < n * d; i++)
        x[i] = (float)(urand() * 3.0 + (double)(i % d));
    double mean[6], cov[36];
    ck_assert_int_eq(gan_mean_cov(n, d, x, mean, cov, NULL), GAN_OK);
    for (size_t j = 0; j < d; j++) {
        double m = 0;
        for (size_t i = 0; i < n; i++)
            m += x[i * d + j];
        m /= (double)n;
        ck_assert_double_eq_tol(mean[j], m, 1e-12);
        for (size_t k = 0; k < d; k++) {
            double c = 0, mk = 0;
            for (size_t i = 0; i < n; i++)
                mk += x[i * d + k];
            mk /= (double)n;
            for (size_t i = 0; i < n; i++)
                c += (x[i * d + j] - m) * (x[i * d + k] - mk);
            ck_assert_double_eq_tol(cov[j * d + k], c / (double)(n - 1), 1e-11);
        }
    }
    ck_assert_int_eq(gan_mean_cov(1, d, x, mean, cov, NULL), GAN_ERR_INVALID);
    free(x);
}
END_TEST

static double frechet(size_t d, const double *m1, const double *c1, const double *m2,
                      const double *c2)
{
    double *s = dalloc(d * d), out = -1;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_sym_sqrt(d, c1, s, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_frechet_distance(d, m1, c1, s, m2, c2, &out, &err) == GAN_OK, "%s",
                  err.message);
    free(s);
    return out;
}

/* Diagonal covariances: Σ (√aᵢ − √bᵢ)² + ‖Δμ‖²; identical Gaussians: 0; equal covariances
 * and shifted means: ‖Δμ‖². */
START_TEST(test_frechet_diagonal)
{
    const size_t d = 10;
    double *c1 = dalloc(d * d), *c2 = dalloc(d * d), m1[10], m2[10];
    double want = 0, shift = 0;
    for (size_t i = 0; i < d; i++) {
        double a = 0.5 + (double)i, b = 2.0 / (1.0 + (double)i);
        c1[i * d + i] = a;
        c2[i * d + i] = b;
        m1[i] = 0.1 * (double)i;
        m2[i] = -0.3 * (double)i + 1.0;
        want += (sqrt(a) - sqrt(b)) * (sqrt(a) - sqrt(b));
        shift += (m1[i] - m2[i]) * (m1[i] - m2[i]);
    }
    ck_assert_double_eq_tol(frechet(d, m1, c1, m1, c2), want, 1e-12);
    ck_assert_double_eq_tol(frechet(d, m1, c1, m2, c2), want + shift, 1e-11);
    ck_assert_double_eq_tol(frechet(d, m1, c1, m2, c1), shift, 1e-11);
    ck_assert_double_eq_tol(frechet(d, m1, c1, m1, c1), 0.0, 1e-12);
    free(c1);
    free(c2);
}
END_TEST

/* Non-commuting 2 × 2 covariances: tr (Σ1 Σ2)^½ = √(tr Σ1Σ2 + 2 √(det Σ1 det Σ2)), the
 * closed form of the square root of a 2 × 2 matrix with positive eigenvalues; and the
 * distance is symmetric in its arguments. */
START_TEST(test_frechet_2x2_closed_form)
{
    double c1[4] = { 2.0, 0.7, 0.7, 1.0 }, c2[4] = { 0.5, -0.2, -0.2, 3.0 };
    double m1[2] = { 1, -1 }, m2[2] = { 0.5, 2 };
    double tr12 = c1[0] * c2[0] + c1[1] * c2[2] + c1[2] * c2[1] + c1[3] * c2[3];
    double det1 = c1[0] * c1[3] - c1[1] * c1[2], det2 = c2[0] * c2[3] - c2[1] * c2[2];
    double root = sqrt(tr12 + 2.0 * sqrt(det1 * det2));
    double want = 0.25 + 9.0 + (c1[0] + c1[3]) + (c2[0] + c2[3]) - 2.0 * root;
    ck_assert_double_eq_tol(frechet(2, m1, c1, m2, c2), want, 1e-13);
    ck_assert_double_eq_tol(frechet(2, m2, c2, m1, c1), want, 1e-13);
}
END_TEST

/* Sample statistics: identical sets give 0; a set shifted by a constant vector v gives
 * ‖v‖² (the covariance does not move). */
START_TEST(test_frechet_of_samples)
{
    const size_t n = 400, d = 12;
    rng_state = 4242;
    float *x = falloc(n * d), *y = falloc(n * d);
    double v2 = 0;
    for (size_t j = 0; j < d; j++)
        v2 += 0.25 * (double)(j % 3) * (double)(j % 3);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++) {
            x[i * d + j] = (float)(urand() * (1.0 + (double)j) + urand());
            y[i * d + j] = x[i * d + j] + 0.5f * (float)(j % 3);
        }
    double mx[12], my[12], cx[144], cy[144];
    ck_assert_int_eq(gan_mean_cov(n, d, x, mx, cx, NULL), GAN_OK);
    ck_assert_int_eq(gan_mean_cov(n, d, y, my, cy, NULL), GAN_OK);
    ck_assert_double_eq_tol(frechet(d, mx, cx, mx, cx), 0.0, 1e-9);
    /* y's values are rounded to float after the shift: the covariance moves by ~1e-7. */
    ck_assert_double_eq_tol(frechet(d, mx, cx, my, cy), v2, 1e-5);
    free(x);
    free(y);
}
END_TEST

/* ------------------------------------------------------------------ sliced W1 */

START_TEST(test_directions)
{
    const size_t k = 16, dim = 37;
    double *a = dalloc(k * dim), *b = dalloc(k * dim), *c = dalloc(k * dim);
    gan_sliced_directions(5, k, dim, a);
    gan_sliced_directions(5, k, dim, b);
    gan_sliced_directions(6, k, dim, c);
    ck_assert_mem_eq(a, b, k * dim * sizeof *a);
    double differ = 0, mean = 0;
    for (size_t d = 0; d < k; d++) {
        double norm = 0;
        for (size_t j = 0; j < dim; j++) {
            norm += a[d * dim + j] * a[d * dim + j];
            differ = fmax(differ, fabs(a[d * dim + j] - c[d * dim + j]));
            mean += a[d * dim + j];
        }
        ck_assert_double_eq_tol(norm, 1.0, 1e-14);
    }
    ck_assert(differ > 0.1);
    /* Isotropic: components average 0 (their variance, 1/dim, follows from the unit
     * norms checked above). */
    mean /= (double)(k * dim);
    ck_assert_msg(fabs(mean) < 4.0 / sqrt((double)(k * dim * dim)), "mean component %g", mean);
    free(a); free(b); free(c);
}
END_TEST

/* The 1-D W1 between two empirical distributions by its definition, ∫ |F_a − F_b| dt,
 * summed over the intervals between the merged, sorted points. */
static double w1_by_cdf(const double *a, const double *b, size_t n)
{
    double *all = dalloc(2 * n), *sa = dalloc(n), *sb = dalloc(n);
    memcpy(sa, a, n * sizeof *a);
    memcpy(sb, b, n * sizeof *b);
    qsort(sa, n, sizeof *sa, cmp_double);
    qsort(sb, n, sizeof *sb, cmp_double);
    memcpy(all, sa, n * sizeof *sa);
    memcpy(all + n, sb, n * sizeof *sb);
    qsort(all, 2 * n, sizeof *all, cmp_double);
    double w = 0;
    size_t ia = 0, ib = 0;
    for (size_t i = 0; i + 1 < 2 * n; i++) {
        while (ia < n && sa[ia] <= all[i])
            ia++;
        while (ib < n && sb[ib] <= all[i])
            ib++;
        w += fabs((double)ia - (double)ib) / (double)n * (all[i + 1] - all[i]);
    }
    free(all); free(sa); free(sb);
    return w;
}

/* Sliced W1 against projections made and measured here (the CDF definition), for a few
 * sizes; identical sets give exactly 0, and the order of the images does not matter. */
static const size_t sliced_sizes[][3] = { { 1, 3, 1 }, { 5, 4, 3 }, { 40, 30, 8 }, { 200, 64, 5 } };

START_TEST(test_sliced_against_cdf)
{
    size_t n = sliced_sizes[_i][0], dim = sliced_sizes[_i][1], k = sliced_sizes[_i][2];
    rng_state = 99 + (uint64_t)_i;
    float *a = falloc(n * dim), *b = falloc(n * dim), *br = falloc(n * dim);
    for (size_t i = 0; i < n * dim; i++) {
        a[i] = (float)urand();
        b[i] = (float)(0.5 * urand() + 0.2);
    }
    for (size_t i = 0; i < n; i++)   /* b's images in reverse order */
        memcpy(br + i * dim, b + (n - 1 - i) * dim, dim * sizeof *b);
    double *dirs = dalloc(k * dim), *pa = dalloc(n), *pb = dalloc(n);
    gan_sliced_directions(3, k, dim, dirs);
    double want = 0;
    for (size_t d = 0; d < k; d++) {
        for (size_t i = 0; i < n; i++) {
            pa[i] = pb[i] = 0;
            for (size_t j = 0; j < dim; j++) {
                pa[i] += (double)a[i * dim + j] * dirs[d * dim + j];
                pb[i] += (double)b[i * dim + j] * dirs[d * dim + j];
            }
        }
        want += w1_by_cdf(pa, pb, n) / (double)k;
    }
    double got = -1, rev = -1, same = -1;
    ck_assert_int_eq(gan_sliced_w1(a, b, n, dim, dirs, k, &got, NULL), GAN_OK);
    ck_assert_int_eq(gan_sliced_w1(a, br, n, dim, dirs, k, &rev, NULL), GAN_OK);
    ck_assert_int_eq(gan_sliced_w1(a, a, n, dim, dirs, k, &same, NULL), GAN_OK);
    ck_assert_msg(fabs(got - want) < 1e-12 * (1 + want), "sliced W1 %.17g, want %.17g", got, want);
    ck_assert_double_eq(rev, got);
    ck_assert_double_eq(same, 0.0);
    free(a); free(b); free(br); free(dirs); free(pa); free(pb);
}
END_TEST

/* Every pixel shifted by c moves every projection on θₖ by c Σⱼθₖⱼ, so the sliced W1 is
 * |c| · mean over k of |Σⱼ θₖⱼ|. Pixels are multiples of 1/256 and c = 0.375, so that
 * the shifted floats are exact. */
START_TEST(test_sliced_shift)
{
    const size_t n = 64, dim = GAN_IMAGE_PIXELS, k = GAN_IMAGE_METRICS_DIRECTIONS;
    const float c = 0.375f;
    rng_state = 2718;
    float *a = falloc(n * dim), *b = falloc(n * dim);
    for (size_t i = 0; i < n * dim; i++) {
        a[i] = (float)floor(urand() * 128.0) / 256.0f;
        b[i] = a[i] + c;
    }
    double *dirs = dalloc(k * dim), want = 0, got = -1;
    gan_sliced_directions(GAN_IMAGE_METRICS_SEED, k, dim, dirs);
    for (size_t d = 0; d < k; d++) {
        double s = 0;
        for (size_t j = 0; j < dim; j++)
            s += dirs[d * dim + j];
        want += fabs((double)c * s) / (double)k;
    }
    ck_assert_int_eq(gan_sliced_w1(a, b, n, dim, dirs, k, &got, NULL), GAN_OK);
    ck_assert_msg(fabs(got - want) < 1e-10, "sliced W1 %.17g, want %.17g", got, want);
    /* For a random unit θ, Σθ = ⟨θ, 1⟩ is about N(0, 1), so the mean of |c Σθ| over
     * 128 directions is near 0.8 |c|. */
    ck_assert(got > 0.4 * c && got < 1.2 * c);
    ck_assert_int_eq(gan_sliced_w1(a, b, 0, dim, dirs, k, &got, NULL), GAN_ERR_INVALID);
    free(a); free(b); free(dirs);
}
END_TEST

/* ------------------------------------------------------------------ the classifier */

/* A separable synthetic problem: class y's images are a bright vertical bar at columns
 * 2y … 2y + 4 on a noisy background, so that neighbouring classes overlap by some pixels. */
static void synthetic(size_t n, uint64_t seed, float *x, int *labels)
{
    rng_state = seed;
    for (size_t i = 0; i < n; i++) {
        int y = (int)(i % GAN_IMAGE_CLASSES);
        labels[i] = y;
        for (int r = 0; r < GAN_IMAGE_SIDE; r++)
            for (int col = 0; col < GAN_IMAGE_SIDE; col++) {
                double v = 0.6 * urand() - 0.7;
                if (col >= 2 * y && col < 2 * y + 5)
                    v += 1.2;
                x[i * GAN_IMAGE_PIXELS + (size_t)(r * GAN_IMAGE_SIDE + col)] = (float)v;
            }
    }
}

static gan_classifier *trained_synthetic(uint64_t seed, double *accuracy)
{
    const size_t n = 1280, m = 500;
    float *x = falloc(n * GAN_IMAGE_PIXELS), *xt = falloc(m * GAN_IMAGE_PIXELS);
    int *y = malloc(n * sizeof *y), *yt = malloc(m * sizeof *yt);
    synthetic(n, 1, x, y);
    synthetic(m, 2, xt, yt);
    struct gan_error err;
    gan_error_clear(&err);
    gan_classifier *c = NULL;
    ck_assert_msg(gan_classifier_new(fx.ctx, seed, &c, &err) == GAN_OK, "%s", err.message);
    struct gan_classifier_data train = { NULL, x, y, n }, test = { NULL, xt, yt, m };
    ck_assert_msg(gan_classifier_train(c, &train, 2, NULL, NULL, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_classifier_evaluate(c, &test, accuracy, &err) == GAN_OK, "%s", err.message);
    free(x); free(xt); free(y); free(yt);
    return c;
}

/* Two epochs of 10 batches separate the bars: ≥ 95 % on 500 unseen images (chance is
 * 10 %), and the epochs, image count and accuracy are remembered. */
START_TEST(test_classifier_learns_synthetic)
{
    double acc = 0;
    gan_classifier *c = trained_synthetic(7, &acc);
    ck_assert_msg(acc >= 0.95, "accuracy %.3f on the synthetic problem", acc);
    ck_assert_int_eq(gan_classifier_epochs(c), 2);
    ck_assert_uint_eq(gan_classifier_train_images(c), 1280);
    ck_assert_double_eq(gan_classifier_accuracy(c), acc);
    gan_classifier_free(c);
}
END_TEST

/* The same seed gives the same network; the file gives back identical features (bit for
 * bit) and the metadata; a missing or foreign file is refused with a way out. */
START_TEST(test_classifier_save_load)
{
    double acc1 = 0, acc2 = 0;
    gan_classifier *c = trained_synthetic(11, &acc1), *c2 = trained_synthetic(11, &acc2);
    ck_assert_double_eq(acc1, acc2);
    const size_t n = 37;
    float *x = falloc(n * GAN_IMAGE_PIXELS), *f1 = falloc(n * GAN_CLASSIFIER_FEATURES);
    float *f2 = falloc(n * GAN_CLASSIFIER_FEATURES), *f3 = falloc(n * GAN_CLASSIFIER_FEATURES);
    int *y = malloc(n * sizeof *y);
    synthetic(n, 3, x, y);
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_classifier_features(c, x, n, f1, &err), GAN_OK);
    ck_assert_int_eq(gan_classifier_features(c2, x, n, f2, &err), GAN_OK);
    ck_assert_mem_eq(f1, f2, n * GAN_CLASSIFIER_FEATURES * sizeof *f1);
    double active = 0;
    for (size_t i = 0; i < n * GAN_CLASSIFIER_FEATURES; i++)
        active += f1[i] > 0;
    ck_assert_msg(active > 0.1 * (double)(n * GAN_CLASSIFIER_FEATURES), "only %g features active", active);

    const char *path = GAN_TEST_METRICS_DIR "/check-image-metrics-classifier.safetensors";
    ck_assert_msg(gan_classifier_save(c, path, "/some/data", &err) == GAN_OK, "%s", err.message);
    gan_classifier *l = NULL;
    ck_assert_msg(gan_classifier_load(fx.ctx, path, &l, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(gan_classifier_features(l, x, n, f3, &err), GAN_OK);
    ck_assert_mem_eq(f1, f3, n * GAN_CLASSIFIER_FEATURES * sizeof *f1);
    ck_assert_uint_eq(gan_classifier_seed(l), 11);
    ck_assert_int_eq(gan_classifier_epochs(l), 2);
    ck_assert_uint_eq(gan_classifier_train_images(l), 1280);
    ck_assert_double_eq_tol(gan_classifier_accuracy(l), acc1, 1e-6);
    ck_assert_str_eq(gan_classifier_data_dir(l), "/some/data");

    /* The metadata a reader outside ganctl sees. */
    gan_st_file *f = NULL;
    ck_assert_int_eq(gan_st_open(path, &f, NULL, 0), GAN_OK);
    ck_assert_str_eq(gan_st_metadata_get(f, "format"), GAN_CLASSIFIER_FORMAT);
    ck_assert_str_eq(gan_st_metadata_get(f, "layers"), "784,256,128,10");
    ck_assert_str_eq(gan_st_metadata_get(f, "seed"), "11");
    ck_assert_uint_eq(gan_st_count(f), 6);
    gan_st_close(f);

    gan_classifier *bad = NULL;
    ck_assert_int_ne(gan_classifier_load(fx.ctx, GAN_TEST_METRICS_DIR "/no-such-classifier.safetensors",
                                         &bad, &err), GAN_OK);
    ck_assert_ptr_null(bad);
    ck_assert_ptr_nonnull(strstr(err.message, "ganctl classifier"));
    /* A safetensors file of another kind. */
    gan_st_writer *w = gan_st_writer_new();
    uint64_t shape[1] = { 1 };
    float one = 1;
    ck_assert_int_eq(gan_st_writer_add(w, "x", GAN_ST_F32, 1, shape, &one, sizeof one, NULL, 0), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "format", "ganctl-checkpoint", NULL, 0), GAN_OK);
    ck_assert_int_eq(gan_st_writer_write(w, path, NULL, 0), GAN_OK);
    gan_st_writer_free(w);
    gan_error_clear(&err);
    ck_assert_int_eq(gan_classifier_load(fx.ctx, path, &bad, &err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err.message, "not a ganctl classifier"));
    unlink(path);

    gan_classifier_free(c);
    gan_classifier_free(c2);
    gan_classifier_free(l);
    free(x); free(f1); free(f2); free(f3); free(y);
}
END_TEST

START_TEST(test_classifier_refuses)
{
    gan_classifier *c = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_classifier_new(fx.ctx, 1, &c, &err), GAN_OK);
    float x[GAN_IMAGE_PIXELS] = { 0 };
    int bad_label = 10;
    struct gan_classifier_data d = { NULL, x, &bad_label, 1 };
    ck_assert_int_eq(gan_classifier_train(c, &d, 1, NULL, NULL, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "label"));
    int label = 3;
    struct gan_classifier_data small = { NULL, x, &label, 1 };
    ck_assert_int_eq(gan_classifier_train(c, &small, 1, NULL, NULL, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "batch"));
    gan_classifier_free(c);
}
END_TEST

/* ------------------------------------------------------------------ Fashion-MNIST */

static const char *fashion_dir(void)
{
    const char *d = getenv("GANCTL_FASHION_MNIST_DIR");
    return d && *d ? d : GAN_IMAGE_DATA_DEFAULT_DIR;
}

static int fashion_present(void)
{
    static const char *const files[] = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" };
    for (size_t i = 0; i < 4; i++) {
        char gz[512], plain[512];
        snprintf(gz, sizeof gz, "%s/%s.gz", fashion_dir(), files[i]);
        snprintf(plain, sizeof plain, "%s/%s", fashion_dir(), files[i]);
        if (access(gz, R_OK) != 0 && access(plain, R_OK) != 0)
            return 0;
    }
    return 1;
}

/* One epoch over the first 12,800 training images reaches ≥ 78 % on the whole test split
 * (the full five epochs over 60,000 reach ~88 %: ganctl.conf(5)). Then the metrics at
 * n = 500 with that classifier: real training images score close to the floor, noise
 * and shifted images far above it, and each metric orders them as expected. */
START_TEST(test_fashion_classifier_and_metrics)
{
    if (!fashion_present())
        return;   /* the data set is not installed: nothing to measure */
    struct gan_error err;
    gan_error_clear(&err);
    gan_image_set *train = NULL, *test = NULL;
    ck_assert_msg(gan_image_set_load(fashion_dir(), GAN_IMAGE_TRAIN, &train, &err) == GAN_OK, "%s",
                  err.message);
    ck_assert_msg(gan_image_set_load(fashion_dir(), GAN_IMAGE_TEST, &test, &err) == GAN_OK, "%s",
                  err.message);
    gan_classifier *c = NULL;
    ck_assert_int_eq(gan_classifier_new(fx.ctx, GAN_CLASSIFIER_DEFAULT_SEED, &c, &err), GAN_OK);
    struct gan_classifier_data tr = { train, NULL, NULL, 12800 }, te = { test, NULL, NULL, 0 };
    double acc = 0;
    ck_assert_msg(gan_classifier_train(c, &tr, 1, NULL, NULL, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_classifier_evaluate(c, &te, &acc, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(acc >= 0.78, "test accuracy %.4f after one epoch of 12,800 images", acc);
    const char *path = GAN_TEST_METRICS_DIR "/check-image-metrics-classifier.safetensors";
    ck_assert_msg(gan_classifier_save(c, path, NULL, &err) == GAN_OK, "%s", err.message);
    gan_classifier_free(c);

    const size_t n = 500;
    gan_image_metrics *m = NULL;
    ck_assert_msg(gan_image_metrics_new(train, test, path, GAN_IMAGE_METRICS_SEED, n, fx.ctx, &m,
                                        &err) == GAN_OK, "%s", err.message);
    ck_assert_uint_eq(gan_image_metrics_n(m), n);
    ck_assert_str_eq(gan_image_metrics_classifier_path(m), path);
    ck_assert_int_eq(gan_image_metrics_classifier_trained(m), 0);
    ck_assert_double_eq_tol(gan_image_metrics_classifier_accuracy(m), acc, 1e-6);
    struct gan_image_quality floor = gan_image_metrics_floor(m);
    ck_assert(floor.sliced_w1 > 0 && floor.frechet > 0);

    /* Real training images from the end of the split (not the floor's sample). */
    float *real = falloc(n * GAN_IMAGE_PIXELS), *noise = falloc(n * GAN_IMAGE_PIXELS);
    float *shifted = falloc(n * GAN_IMAGE_PIXELS);
    ck_assert_int_eq(gan_image_set_copy(train, gan_image_set_count(train) - n, n, real, NULL, &err),
                     GAN_OK);
    rng_state = 31;
    for (size_t i = 0; i < n * GAN_IMAGE_PIXELS; i++) {
        noise[i] = (float)urand();
        size_t row = (i % GAN_IMAGE_PIXELS) / GAN_IMAGE_SIDE, col = i % GAN_IMAGE_SIDE;
        /* Three pixels to the right, background coming in on the left. */
        shifted[i] = col >= 3 ? real[i - 3] : -1.0f;
        (void)row;
    }
    struct gan_image_quality qr, qn, qs, again;
    ck_assert_int_eq(gan_image_metrics_eval(m, real, n, &qr, &err), GAN_OK);
    ck_assert_int_eq(gan_image_metrics_eval(m, noise, n, &qn, &err), GAN_OK);
    ck_assert_int_eq(gan_image_metrics_eval(m, shifted, n, &qs, &err), GAN_OK);
    ck_assert_int_eq(gan_image_metrics_eval(m, real, n, &again, &err), GAN_OK);
    ck_assert_double_eq(again.sliced_w1, qr.sliced_w1);
    ck_assert_double_eq(again.frechet, qr.frechet);
    /* Another real sample of 500 scatters around the floor: Fréchet distances in 128
     * dimensions vary by a factor of two between such samples. */
    ck_assert_msg(qr.sliced_w1 < 1.5 * floor.sliced_w1 && qr.frechet < 3.0 * floor.frechet,
                  "real vs test %g / %g, floor %g / %g", qr.sliced_w1, qr.frechet,
                  floor.sliced_w1, floor.frechet);
    ck_assert_msg(qn.sliced_w1 > 10.0 * floor.sliced_w1 && qn.frechet > 10.0 * floor.frechet,
                  "noise %g / %g, floor %g / %g", qn.sliced_w1, qn.frechet, floor.sliced_w1,
                  floor.frechet);
    ck_assert_msg(qs.sliced_w1 > qr.sliced_w1 && qs.frechet > qr.frechet,
                  "shifted %g / %g, real %g / %g", qs.sliced_w1, qs.frechet, qr.sliced_w1, qr.frechet);

    /* A diverged generator is a result: NAN, not a failure. */
    noise[5] = NAN;
    ck_assert_int_eq(gan_image_metrics_eval(m, noise, n, &qn, &err), GAN_OK);
    ck_assert(isnan(qn.sliced_w1) && isnan(qn.frechet));
    /* Another n recomputes the floor for it. */
    ck_assert_int_eq(gan_image_metrics_eval(m, real, 200, &qr, &err), GAN_OK);
    ck_assert_uint_eq(gan_image_metrics_n(m), 200);
    ck_assert(gan_image_metrics_floor(m).sliced_w1 > floor.sliced_w1);
    ck_assert_int_eq(gan_image_metrics_eval(m, real, 1, &qr, &err), GAN_ERR_INVALID);

    gan_image_metrics_free(m);
    gan_image_metrics *none = NULL;
    ck_assert_int_eq(gan_image_metrics_new(train, test, path, 1, 20000, fx.ctx, &none, &err),
                     GAN_ERR_INVALID);
    ck_assert_ptr_null(none);
    unlink(path);
    free(real); free(noise); free(shifted);
    gan_image_set_free(train);
    gan_image_set_free(test);
}
END_TEST

/* The default classifier's place follows $XDG_CACHE_HOME, then $HOME. */
START_TEST(test_default_path)
{
    char buf[512];
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    ck_assert_int_eq(gan_image_metrics_default_classifier(buf, sizeof buf, NULL), GAN_OK);
    ck_assert_str_eq(buf, "/x/cache/ganctl/" GAN_IMAGE_METRICS_CACHE_NAME);
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "/home/u", 1);
    ck_assert_int_eq(gan_image_metrics_default_classifier(buf, sizeof buf, NULL), GAN_OK);
    ck_assert_str_eq(buf, "/home/u/.cache/ganctl/" GAN_IMAGE_METRICS_CACHE_NAME);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    ck_assert_int_eq(gan_image_metrics_default_classifier(buf, sizeof buf, NULL), GAN_ERR_NOT_FOUND);
    setenv("HOME", "/h", 1);
    ck_assert_int_eq(gan_image_metrics_default_classifier(buf, 8, NULL), GAN_ERR_INVALID);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *image_metrics_suite(void)
{
    Suite *s = suite_create("image_metrics");
    TCase *tc = tcase_create("jacobi");
    tcase_add_loop_test(tc, test_jacobi_known_spectrum, 0,
                        (int)(sizeof known_cases / sizeof known_cases[0]));
    tcase_add_test(tc, test_jacobi_reads_upper_triangle);
    tcase_add_test(tc, test_jacobi_refuses);
    tcase_add_test(tc, test_sqrt);
    suite_add_tcase(s, tc);

    tc = tcase_create("frechet");
    tcase_add_test(tc, test_mean_cov);
    tcase_add_test(tc, test_frechet_diagonal);
    tcase_add_test(tc, test_frechet_2x2_closed_form);
    tcase_add_test(tc, test_frechet_of_samples);
    suite_add_tcase(s, tc);

    tc = tcase_create("sliced_w1");
    tcase_add_test(tc, test_directions);
    tcase_add_loop_test(tc, test_sliced_against_cdf, 0,
                        (int)(sizeof sliced_sizes / sizeof sliced_sizes[0]));
    tcase_add_test(tc, test_sliced_shift);
    tcase_add_test(tc, test_default_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("classifier");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_classifier_learns_synthetic);
    tcase_add_test(tc, test_classifier_save_load);
    tcase_add_test(tc, test_classifier_refuses);
    suite_add_tcase(s, tc);

    tc = tcase_create("fashion_mnist");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fashion_classifier_and_metrics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(image_metrics_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
