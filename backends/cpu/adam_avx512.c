/* SPDX-License-Identifier: MIT */
/* adam_avx512.c — adam.c's update on sixteen FP32 lanes: the gradient widened in
 * registers when 16-bit, the moments and the parameter updated, and the parameter's
 * 16-bit copy rounded and stored, in one pass over memory. Each lane computes adam.c's
 * scalar expression with the same IEEE operations in the same order (no FMA: it would
 * round once where the scalar code rounds twice), so the results are the same bits;
 * tests/check_optim_stats.c compares the two levels. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"
#include "../common/adam_ops.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* GCC may fuse a multiply and an add written as intrinsics (they are vector
 * arithmetic to it); clang does not fuse across intrinsics and lacks the pragma. */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "avx512_lanes.h"

AVX512_LANES_TARGET
void cpu_vec_adam(const struct gan_adam_consts *k, float *param, float *m, float *v,
                  const void *grad, enum gan_dtype grad_dtype, void *copy,
                  enum gan_dtype copy_dtype, int64_t n)
{
    const __m512 gs = _mm512_set1_ps(k->grad_scale), wd = _mm512_set1_ps(k->weight_decay);
    const __m512 b1 = _mm512_set1_ps(k->beta1), one_b1 = _mm512_set1_ps(k->one_minus_beta1);
    const __m512 b2 = _mm512_set1_ps(k->beta2), one_b2 = _mm512_set1_ps(k->one_minus_beta2);
    const __m512 bc2 = _mm512_set1_ps(k->bc2_sqrt), eps = _mm512_set1_ps(k->eps);
    const __m512 step = _mm512_set1_ps(k->step_size);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 lanes = avx512_lanes(i, n);
        __m512 g = avx512_load(grad, grad_dtype, i, lanes);
        __m512 p = _mm512_maskz_loadu_ps(lanes, param + i);
        __m512 mo = _mm512_maskz_loadu_ps(lanes, m + i);
        __m512 ve = _mm512_maskz_loadu_ps(lanes, v + i);
        /* gi = g·gs + wd·P;  mi = b1·M + (1 − b1)·gi;  vi = b2·V + ((1 − b2)·gi)·gi */
        __m512 gi = _mm512_add_ps(_mm512_mul_ps(g, gs), _mm512_mul_ps(wd, p));
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, mo), _mm512_mul_ps(one_b1, gi));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, ve),
                                  _mm512_mul_ps(_mm512_mul_ps(one_b2, gi), gi));
        /* denom = sqrt(vi) / sqrt(1 − b2^t) + eps;  P −= step · (mi / denom) */
        __m512 denom = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bc2), eps);
        p = _mm512_sub_ps(p, _mm512_mul_ps(step, _mm512_div_ps(mi, denom)));
        _mm512_mask_storeu_ps(m + i, lanes, mi);
        _mm512_mask_storeu_ps(v + i, lanes, vi);
        _mm512_mask_storeu_ps(param + i, lanes, p);
        if (copy)
            avx512_store(copy, copy_dtype, i, lanes, p);
    }
}

#else

void cpu_vec_adam(const struct gan_adam_consts *k, float *param, float *m, float *v,
                  const void *grad, enum gan_dtype grad_dtype, void *copy,
                  enum gan_dtype copy_dtype, int64_t n)
{
    (void)k, (void)param, (void)m, (void)v, (void)grad, (void)grad_dtype, (void)copy;
    (void)copy_dtype, (void)n;
}
#endif
