/* SPDX-License-Identifier: MIT */
/* grad_stats_lanes.h — one block of grad_stats.c's measurement on the lanes of one
 * vector level (the lane interface included before this file): the gradient elements
 * widened in registers, classified by conditions, the unscaled FP32 values stored, and
 * Σu² accumulated in four double lanes that are grad_stats.c's four partial sums (lane k
 * sums the elements i ≡ k mod 4, in order: each block's quarters are added one after the
 * other). An element that does not contribute adds +0, which leaves a sum of squares
 * unchanged, so the block's sum is the scalar loop's bits; absmax and min |u| are taken
 * on |x| in FP32 and scaled once, which is exact (u = |x|·|inv_scale| in double is
 * monotonic in |x|). Instantiated by grad_stats_avx512.c and grad_stats_avx2.c. */
#include "convert.h"

#ifdef LANES_N
LANES_TARGET
void LANES_FN(cpu_vec_stats_block)(const void *x, enum gan_dtype xt, int64_t len,
                                   float inv_scale, float *u, struct cpu_stats_block *r)
{
    const lanes_f32 inf = lanes_set1(__builtin_inff()), tiny = lanes_set1(0x1p-14f);
    const lanes_f32 vinv = lanes_set1(inv_scale), zero = lanes_zero();
    const __m256d dinv = _mm256_set1_pd(inv_scale < 0 ? -(double)inv_scale : (double)inv_scale);
    const __m256i quarter_bits = _mm256_setr_epi64x(1, 2, 4, 8);
    const int scaled = inv_scale != 0.0f; /* inv_scale 0 makes every u zero */
    __m256d acc = _mm256_setzero_pd();
    lanes_f32 amax = zero, amin = inf;
    uint64_t nonfinite = 0, zeros = 0, subnormal = 0;
    for (int64_t i = 0; i < len; i += LANES_N) {
        lanes_in in = lanes_inside(i, len);
        lanes_if live = lanes_live(in);
        lanes_f32 v = lanes_load(x, xt, i, in);
        lanes_f32 a = lanes_and_bits(v, 0x7fffffff);
        lanes_if finite = lanes_and_if(live, lanes_lt(a, inf));
        lanes_if bad = lanes_andnot_if(live, finite);
        lanes_if zero_if = lanes_and_if(finite, lanes_le(a, zero)); /* |x| <= 0: ±0 */
        lanes_if nonzero = lanes_andnot_if(finite, zero_if);
        lanes_if sub = lanes_and_if(nonzero, lanes_lt(a, tiny));
        const unsigned bad_bits = lanes_bits(bad), nonzero_bits = lanes_bits(nonzero);
        nonfinite += (uint64_t)__builtin_popcount(bad_bits);
        zeros += (uint64_t)__builtin_popcount(lanes_bits(zero_if));
        subnormal += (uint64_t)__builtin_popcount(lanes_bits(sub));
        if (u) {
            /* fl32(x · inv_scale) for finite x; a non-finite x passes through, its bits
             * put back one by one: widening quiets a signalling F16 NaN where convert.h
             * keeps its bits, and clang may turn the blend of the product into a
             * product by a blend of inv_scale and 1, which quiets a signalling NaN of
             * any type */
            lanes_store_f32(u + i, in, lanes_blend(finite, v, lanes_mul(v, vinv)));
            if (bad_bits)
                for (int k = 0; k < LANES_N; k++)
                    if (bad_bits >> k & 1)
                        u[i + k] = cpu_load(x, xt, i + k);
        }
        if (!scaled)
            continue;
        amax = lanes_blend(nonzero, amax, lanes_max(amax, a));
        amin = lanes_blend(nonzero, amin, lanes_min(amin, a));
        /* the squares of u = |x|·|inv| in double, four lanes at a time, in order; a lane
         * that does not contribute adds +0 (masked after the product: 0·inf is NaN) */
        float lanes[LANES_N];
        lanes_store_f32(lanes, lanes_inside(0, LANES_N), a);
        for (int q = 0; q < LANES_N / 4; q++) {
            __m256d au = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(lanes + 4 * q)), dinv);
            __m256i bits = _mm256_set1_epi64x((long long)(nonzero_bits >> (4 * q) & 0xf));
            __m256d keep = _mm256_castsi256_pd(
                _mm256_cmpeq_epi64(_mm256_and_si256(bits, quarter_bits), quarter_bits));
            acc = _mm256_add_pd(acc, _mm256_and_pd(keep, _mm256_mul_pd(au, au)));
        }
    }
    double part[4];
    _mm256_storeu_pd(part, acc);
    r->sum = (part[0] + part[1]) + (part[2] + part[3]);
    r->nonfinite = nonfinite;
    r->zeros = zeros;
    r->subnormal = subnormal;
    /* the largest and smallest of exact values: any order gives the same */
    float hi[LANES_N], lo[LANES_N];
    lanes_store_f32(hi, lanes_inside(0, LANES_N), amax);
    lanes_store_f32(lo, lanes_inside(0, LANES_N), amin);
    r->absmax = hi[0];
    r->absmin = lo[0];
    for (int k = 1; k < LANES_N; k++) {
        r->absmax = hi[k] > r->absmax ? hi[k] : r->absmax;
        r->absmin = lo[k] < r->absmin ? lo[k] : r->absmin;
    }
}
#else /* not an x86 CPU: the level is never chosen */
void LANES_FN(cpu_vec_stats_block)(const void *x, enum gan_dtype xt, int64_t len,
                                   float inv_scale, float *u, struct cpu_stats_block *r)
{
    (void)x, (void)xt, (void)len, (void)inv_scale, (void)u, (void)r;
}
#endif
