/* SPDX-License-Identifier: MIT */
/* linalg.c — cyclic Jacobi eigendecomposition of symmetric matrices, their square roots,
 * sample mean and covariance, and the Fréchet distance between two Gaussians, in double. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/linalg.h"

#define MAX_SWEEPS 100

/* Applies the rotation that zeroes a[p][q] to the full symmetric matrix (columns, then
 * rows) and to the eigenvector columns. */
static void rotate(size_t n, double *a, double *v, size_t p, size_t q)
{
    double apq = a[p * n + q];
    double theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
    /* t = tan of the angle: the smaller root of t² + 2θt − 1 = 0, which keeps the
     * rotation below 45° and the update stable; for a huge θ, θ² would overflow and
     * t ≈ 1/(2θ) is exact to rounding. */
    double t;
    if (fabs(theta) > 1e150)
        t = 0.5 / theta;
    else
        t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
    double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
    for (size_t k = 0; k < n; k++) {
        double akp = a[k * n + p], akq = a[k * n + q];
        a[k * n + p] = c * akp - s * akq;
        a[k * n + q] = s * akp + c * akq;
    }
    for (size_t k = 0; k < n; k++) {
        double apk = a[p * n + k], aqk = a[q * n + k];
        a[p * n + k] = c * apk - s * aqk;
        a[q * n + k] = s * apk + c * aqk;
    }
    /* Exactly zero, as the rotation was built to make it, and symmetric. */
    a[p * n + q] = a[q * n + p] = 0.0;
    for (size_t k = 0; k < n; k++) {
        double vkp = v[k * n + p], vkq = v[k * n + q];
        v[k * n + p] = c * vkp - s * vkq;
        v[k * n + q] = s * vkp + c * vkq;
    }
}

gan_status gan_sym_eigen(size_t n, const double *a_in, double *evals, double *evecs,
                         struct gan_error *err)
{
    if (n == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "eigendecomposition of an empty matrix");
    double *a = malloc(n * n * sizeof *a);
    if (!a)
        return gan_error_set(err, GAN_ERR_NOMEM,
                             "out of memory for the eigendecomposition of a %zu × %zu matrix", n, n);
    /* Symmetrise from the upper triangle, so that rounding in how the caller formed the
     * matrix cannot make the two halves disagree. */
    double norm2 = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++) {
            double x = a_in[i * n + j];
            if (!isfinite(x)) {
                free(a);
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "eigendecomposition: entry (%zu, %zu) is %g; the matrix must be finite",
                                     i, j, x);
            }
            a[i * n + j] = a[j * n + i] = x;
            norm2 += (i == j ? 1.0 : 2.0) * x * x;
        }
    memset(evecs, 0, n * n * sizeof *evecs);
    for (size_t i = 0; i < n; i++)
        evecs[i * n + i] = 1.0;

    int converged = 0;
    for (int sweep = 0; sweep < MAX_SWEEPS && !converged; sweep++) {
        double off2 = 0;
        for (size_t p = 0; p < n; p++)
            for (size_t q = p + 1; q < n; q++)
                off2 += 2.0 * a[p * n + q] * a[p * n + q];
        if (off2 <= 1e-30 * norm2) {
            converged = 1;
            break;
        }
        for (size_t p = 0; p < n; p++)
            for (size_t q = p + 1; q < n; q++)
                if (a[p * n + q] != 0.0)
                    rotate(n, a, evecs, p, q);
    }
    if (!converged) {
        free(a);
        return gan_error_set(err, GAN_ERR_NUMERIC,
                             "the Jacobi eigendecomposition of a %zu × %zu matrix did not converge in %d sweeps",
                             n, n, MAX_SWEEPS);
    }
    for (size_t i = 0; i < n; i++)
        evals[i] = a[i * n + i];
    free(a);

    /* Ascending order, carrying the columns along (insertion sort: n is small). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && evals[j] < evals[j - 1]; j--) {
            double t = evals[j];
            evals[j] = evals[j - 1];
            evals[j - 1] = t;
            for (size_t k = 0; k < n; k++) {
                double u = evecs[k * n + j];
                evecs[k * n + j] = evecs[k * n + j - 1];
                evecs[k * n + j - 1] = u;
            }
        }
    return GAN_OK;
}

gan_status gan_sym_sqrt(size_t n, const double *a, double *out, struct gan_error *err)
{
    double *evals = malloc(n * sizeof *evals), *v = malloc(n * n * sizeof *v);
    if (!evals || !v) {
        free(evals);
        free(v);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for a matrix square root");
    }
    gan_status st = gan_sym_eigen(n, a, evals, v, err);
    if (st == GAN_OK) {
        for (size_t i = 0; i < n; i++)
            evals[i] = evals[i] > 0 ? sqrt(evals[i]) : 0.0;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i; j < n; j++) {
                double s = 0;
                for (size_t k = 0; k < n; k++)
                    s += v[i * n + k] * evals[k] * v[j * n + k];
                out[i * n + j] = out[j * n + i] = s;
            }
    }
    free(evals);
    free(v);
    return st;
}

gan_status gan_mean_cov(size_t n, size_t d, const float *rows, double *mean, double *cov,
                        struct gan_error *err)
{
    if (n < 2)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "a covariance needs at least 2 samples, not %zu", n);
    double *centred = malloc(d * sizeof *centred);
    if (!centred)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for a covariance");
    memset(mean, 0, d * sizeof *mean);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            mean[j] += rows[i * d + j];
    for (size_t j = 0; j < d; j++)
        mean[j] /= (double)n;
    memset(cov, 0, d * d * sizeof *cov);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d; j++)
            centred[j] = rows[i * d + j] - mean[j];
        for (size_t j = 0; j < d; j++) {
            double cj = centred[j];
            if (cj == 0.0)
                continue;   /* a dead ReLU feature: common, and nothing to add */
            double *row = cov + j * d;
            for (size_t k = j; k < d; k++)
                row[k] += cj * centred[k];
        }
    }
    for (size_t j = 0; j < d; j++)
        for (size_t k = j; k < d; k++) {
            double c = cov[j * d + k] / (double)(n - 1);
            cov[j * d + k] = cov[k * d + j] = c;
        }
    free(centred);
    return GAN_OK;
}

gan_status gan_frechet_distance(size_t d, const double *mean1, const double *cov1,
                                const double *sqrt_cov1, const double *mean2,
                                const double *cov2, double *out, struct gan_error *err)
{
    if (d == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "a Fréchet distance of 0-dimensional Gaussians");
    double *tmp = malloc(d * d * sizeof *tmp), *m = malloc(d * d * sizeof *m);
    double *evals = malloc(d * sizeof *evals), *v = malloc(d * d * sizeof *v);
    gan_status st = GAN_OK;
    if (!tmp || !m || !evals || !v) {
        st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory for a Fréchet distance");
        goto done;
    }
    /* tmp = Σ2 S, then m = S tmp = S Σ2 S, with S = Σ1^½ symmetric. */
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += cov2[i * d + k] * sqrt_cov1[k * d + j];
            tmp[i * d + j] = s;
        }
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++)
                s += sqrt_cov1[i * d + k] * tmp[k * d + j];
            m[i * d + j] = m[j * d + i] = s;
        }
    st = gan_sym_eigen(d, m, evals, v, err);
    if (st != GAN_OK)
        goto done;
    double dist = 0, tr_root = 0;
    for (size_t i = 0; i < d; i++) {
        double dm = mean1[i] - mean2[i];
        dist += dm * dm + cov1[i * d + i] + cov2[i * d + i];
        tr_root += evals[i] > 0 ? sqrt(evals[i]) : 0.0;
    }
    dist -= 2.0 * tr_root;
    *out = dist > 0 ? dist : 0.0;
done:
    free(tmp);
    free(m);
    free(evals);
    free(v);
    return st;
}
