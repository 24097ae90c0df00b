/* SPDX-License-Identifier: MIT */
/* grad_stats_avx512.c — one block of grad_stats.c's measurement on AVX-512: sixteen
 * gradient elements at a time widened in registers, classified by masks, the unscaled
 * FP32 values stored, and Σu² accumulated in four double lanes that are grad_stats.c's
 * four partial sums (lane k sums the elements i ≡ k mod 4, in order). An element that
 * does not contribute adds +0, which leaves a sum of squares unchanged, so the block's
 * sum is the scalar loop's bits; absmax and min |u| are taken on |x| in FP32 and scaled
 * once, which is exact (u = |x|·|inv_scale| in double is monotonic in |x|). */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"
#include "convert.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "avx512_lanes.h"

AVX512_LANES_TARGET
void cpu_vec_stats_block(const void *x, enum gan_dtype xt, int64_t len, float inv_scale,
                         float *u, struct cpu_stats_block *r)
{
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    const __m512 inf = _mm512_set1_ps(__builtin_inff()), tiny = _mm512_set1_ps(0x1p-14f);
    const __m512 vinv = _mm512_set1_ps(inv_scale);
    const __m256d dinv = _mm256_set1_pd(inv_scale < 0 ? -(double)inv_scale : (double)inv_scale);
    const int scaled = inv_scale != 0.0f; /* inv_scale 0 makes every u zero */
    __m256d acc = _mm256_setzero_pd();
    __m512 amax = _mm512_setzero_ps(), amin = inf;
    uint64_t nonfinite = 0, zeros = 0, subnormal = 0;
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 lanes = avx512_lanes(i, len);
        __m512 v = avx512_load(x, xt, i, lanes);
        /* |x| through the integer unit (AVX-512 F has no float and; DQ does) */
        __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), abs_mask));
        __mmask16 finite = _mm512_mask_cmp_ps_mask(lanes, a, inf, _CMP_LT_OQ);
        __mmask16 bad = lanes & (__mmask16)~finite;
        __mmask16 zero = _mm512_mask_cmp_ps_mask(finite, a, _mm512_setzero_ps(), _CMP_EQ_OQ);
        __mmask16 nonzero = finite & (__mmask16)~zero;
        __mmask16 sub = _mm512_mask_cmp_ps_mask(nonzero, a, tiny, _CMP_LT_OQ);
        nonfinite += (uint64_t)__builtin_popcount(bad);
        zeros += (uint64_t)__builtin_popcount(zero);
        subnormal += (uint64_t)__builtin_popcount(sub);
        if (u) {
            /* fl32(x · inv_scale) for finite x; a non-finite x passes through */
            __m512 out = _mm512_mask_mul_ps(v, finite, v, vinv);
            _mm512_mask_storeu_ps(u + i, lanes, out);
            if (bad && xt == GAN_F16)
                /* widening quiets a signalling F16 NaN; convert.h keeps its bits */
                for (int k = 0; k < 16; k++)
                    if (bad >> k & 1)
                        u[i + k] = cpu_load(x, xt, i + k);
        }
        if (!scaled)
            continue;
        amax = _mm512_mask_max_ps(amax, nonzero, amax, a);
        amin = _mm512_mask_min_ps(amin, nonzero, amin, a);
        /* the squares of u = |x|·|inv| in double, four lanes at a time, in order; a lane
         * that does not contribute adds +0 (masked after the product: 0·inf is NaN) */
        __m256 half[2] = { _mm512_castps512_ps256(a),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)) };
        for (int h = 0; h < 2; h++) {
            __m128 quarter[2] = { _mm256_castps256_ps128(half[h]),
                                  _mm256_extractf128_ps(half[h], 1) };
            for (int k = 0; k < 2; k++) {
                __mmask8 m4 = (__mmask8)((nonzero >> (8 * h + 4 * k)) & 0xf);
                __m256d au = _mm256_mul_pd(_mm256_cvtps_pd(quarter[k]), dinv);
                acc = _mm256_add_pd(acc, _mm256_maskz_mov_pd(m4, _mm256_mul_pd(au, au)));
            }
        }
    }
    double part[4];
    _mm256_storeu_pd(part, acc);
    r->sum = (part[0] + part[1]) + (part[2] + part[3]);
    r->nonfinite = nonfinite;
    r->zeros = zeros;
    r->subnormal = subnormal;
    r->absmax = _mm512_reduce_max_ps(amax);
    r->absmin = _mm512_reduce_min_ps(amin);
}

#else

void cpu_vec_stats_block(const void *x, enum gan_dtype xt, int64_t len, float inv_scale,
                         float *u, struct cpu_stats_block *r)
{
    (void)x, (void)xt, (void)len, (void)inv_scale, (void)u, (void)r;
}
#endif
