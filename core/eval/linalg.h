/* SPDX-License-Identifier: MIT */
/* linalg.h — small dense linear algebra in double on the host for the image metrics: the
 * symmetric eigendecomposition (cyclic Jacobi), matrix square roots, moments, Fréchet distance. */
#ifndef GANCTL_CORE_LINALG_H
#define GANCTL_CORE_LINALG_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"

/* Matrices are n × n, row-major, double. The sizes here are the classifier's feature
 * width (128), where Jacobi's O(n³) per sweep costs milliseconds and its accuracy is
 * the best a symmetric solver offers (every eigenvalue to a small multiple of
 * ε·‖A‖), with no LAPACK to depend on. */

/* Eigenvalues and eigenvectors of the symmetric matrix `a` (only symmetry is assumed;
 * the upper triangle is read as the truth and the lower one ignored). On return
 * evals[i] are the eigenvalues in ascending order and column i of `evecs` (n × n) is a
 * unit eigenvector of evals[i], so a = V diag(λ) Vᵀ. `a` is left untouched.
 * Cyclic Jacobi: sweeps of plane rotations over every pair (p, q), p < q, each zeroing
 * a_pq, until the off-diagonal part is below 1e-15 of the matrix's Frobenius norm
 * (quadratic convergence makes that a handful of sweeps). GAN_ERR_INVALID for n = 0 or a
 * non-finite entry; GAN_ERR_NUMERIC if 100 sweeps do not converge; GAN_ERR_NOMEM. */
gan_status gan_sym_eigen(size_t n, const double *a, double *evals, double *evecs,
                         struct gan_error *err);

/* The symmetric positive semi-definite square root of the symmetric matrix `a`:
 * V diag(√max(λ, 0)) Vᵀ into `out` (n × n; may not alias a). Eigenvalues below zero,
 * which a covariance has only through rounding, are clamped to 0. Errors as
 * gan_sym_eigen. */
gan_status gan_sym_sqrt(size_t n, const double *a, double *out, struct gan_error *err);

/* The mean (d values) and the unbiased covariance (d × d, divided by n − 1, as
 * numpy.cov and the Fréchet Inception Distance's reference code) of n ≥ 2 rows of d
 * floats. Accumulated in double around a first-pass mean. GAN_ERR_INVALID for n < 2. */
gan_status gan_mean_cov(size_t n, size_t d, const float *rows, double *mean, double *cov,
                        struct gan_error *err);

/* The Fréchet (2-Wasserstein) distance between the Gaussians N(μ1, Σ1) and N(μ2, Σ2):
 *   ‖μ1 − μ2‖² + tr Σ1 + tr Σ2 − 2 tr (Σ1^½ Σ2 Σ1^½)^½
 * `sqrt_cov1` is Σ1^½ (gan_sym_sqrt; passing it lets a caller that compares many Σ2 with
 * one Σ1 take that root once). The last trace is Σ √max(λᵢ, 0) over the eigenvalues of
 * the symmetric matrix Σ1^½ Σ2 Σ1^½, the same value as tr (Σ1 Σ2)^½ without forming a
 * non-symmetric product. A result below 0, which only rounding can give, is 0. */
gan_status gan_frechet_distance(size_t d, const double *mean1, const double *cov1,
                                const double *sqrt_cov1, const double *mean2,
                                const double *cov2, double *out, struct gan_error *err);

#endif
