/* SPDX-License-Identifier: MIT */
/* lanes_avx2.h — the lane interface of the kernels written once for every vector level
 * (the *_lanes.h templates), on AVX2 with F16C: eight FP32 lanes, avx2_lanes.h's loads
 * and stores, conditions as all-ones lanes. The same names as lanes_avx512.h, so a
 * template compiles against either; LANES_FN names what it defines (cpu_vec_adam_avx2). */
#ifndef GANCTL_CPU_LANES_H
#define GANCTL_CPU_LANES_H

#define LANES_FN(name) name##_avx2

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include "avx2_lanes.h"

#define LANES_N 8
#define LANES_TARGET AVX2_LANES_TARGET

typedef __m256 lanes_f32; /* eight FP32 values */
typedef int lanes_in;     /* how many lanes of a block lie inside the run, from the first */
typedef __m256 lanes_if;  /* a condition per lane: all ones where it holds */

/* Before a vector kernel returns, or calls code built for the baseline ISA: the upper
 * halves of the vector registers cleared (VZEROUPPER). Left in use, they made an Intel
 * Xeon (AVX512-BF16, no AMX) pay on every later switch between legacy SSE and VEX code,
 * a libm call from a scalar loop 55 times as slow (bench/README.md). GCC clears them
 * before a return or a call only where it cannot see the callee: a function of the same
 * file, seen by its interprocedural register allocation, got none, nor did the kernel
 * that called it. So every kernel that may be left that way says so itself. */
#define lanes_leave() _mm256_zeroupper()
#define lanes_inside(i, n) avx2_lanes((i), (n))
#define lanes_load(p, dt, i, in) avx2_load((p), (dt), (i), (in))
#define lanes_store(p, dt, i, in, v) avx2_store((p), (dt), (i), (in), (v))
#define lanes_stored(dt, v) avx2_stored((dt), (v)) /* v as a store and load in dt give it */
#define lanes_load_f32(p, in) avx2_load_f32((p), (in))
#define lanes_store_f32(p, in, v) avx2_store_f32((p), (in), (v))
/* the upper 16 bits of each lane to 16-bit element i of p: a value widened from BF16
 * stored back bit for bit, a signalling NaN included */
#define lanes_store_bf16_bits(p, i, in, v) avx2_store_bf16_bits((uint16_t *)(p) + (i), (in), (v))
#define lanes_set1(x) _mm256_set1_ps(x)
#define lanes_zero() _mm256_setzero_ps()
#define lanes_add(a, b) _mm256_add_ps((a), (b))
#define lanes_sub(a, b) _mm256_sub_ps((a), (b))
#define lanes_mul(a, b) _mm256_mul_ps((a), (b))
#define lanes_div(a, b) _mm256_div_ps((a), (b))
#define lanes_sqrt(a) _mm256_sqrt_ps(a)
/* ordered comparisons: false where either side is NaN */
#define lanes_gt(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define lanes_lt(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define lanes_le(a, b) _mm256_cmp_ps((a), (b), _CMP_LE_OQ)
/* b where c holds, a elsewhere; v where c holds, +0 elsewhere */
#define lanes_blend(c, a, b) _mm256_blendv_ps((a), (b), (c))
#define lanes_keep(c, v) _mm256_and_ps((c), (v))
#define lanes_max(a, b) _mm256_max_ps((a), (b))
#define lanes_min(a, b) _mm256_min_ps((a), (b))
/* the lanes inside the run as a condition; conditions combined; one bit per lane */
#define lanes_live(in) _mm256_castsi256_ps(avx2_lane_mask(in))
#define lanes_and_if(c, d) _mm256_and_ps((c), (d))
#define lanes_andnot_if(c, d) _mm256_andnot_ps((d), (c))
#define lanes_or_if(c, d) _mm256_or_ps((c), (d))
#define lanes_bits(c) ((unsigned)_mm256_movemask_ps(c))

/* The lanes as 32-bit integers (the float's bits, or an int32 each), for the functions
 * that work on a float's exponent (tanh_lanes.h). */
typedef __m256i lanes_i32;
#define lanes_as_i32(v) _mm256_castps_si256(v)
#define lanes_as_f32(i) _mm256_castsi256_ps(i)
#define lanes_i32_set1(c) _mm256_set1_epi32(c)
#define lanes_i32_add(a, b) _mm256_add_epi32((a), (b))
#define lanes_i32_sub(a, b) _mm256_sub_epi32((a), (b))
#define lanes_i32_and(a, b) _mm256_and_si256((a), (b))
#define lanes_i32_or(a, b) _mm256_or_si256((a), (b))
#define lanes_i32_shl(a, n) _mm256_slli_epi32((a), (n))
#define lanes_i32_shr_by(a, counts) _mm256_srlv_epi32((a), (counts)) /* 0 past 31 */
/* signed comparisons */
#define lanes_i32_gt(a, b) _mm256_castsi256_ps(_mm256_cmpgt_epi32((a), (b)))
#define lanes_i32_eq(a, b) _mm256_castsi256_ps(_mm256_cmpeq_epi32((a), (b)))
#define lanes_i32_blend(c, a, b)                                                           \
    _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(a), _mm256_castsi256_ps(b), (c)))
#define lanes_trunc_i32(v) _mm256_cvttps_epi32(v) /* toward zero, as C's (int32_t) */
#define lanes_i32_to_f32(i) _mm256_cvtepi32_ps(i)

AVX2_LANES_TARGET
static inline __m256 lanes_xor_bits(__m256 v, int32_t mask)
{
    return _mm256_xor_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(mask)));
}

AVX2_LANES_TARGET
static inline __m256 lanes_and_bits(__m256 v, int32_t mask)
{
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(mask)));
}

/* a and b interleaved, element by element: the first half of (a0, b0, a1, b1, …) and the
 * second (col2im_lanes.h); the even lanes as a condition. The unpacks interleave within
 * 128-bit halves, so the halves are put back in order. */
AVX2_LANES_TARGET
static inline __m256 lanes_zip_lo(__m256 a, __m256 b)
{
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x20);
}

AVX2_LANES_TARGET
static inline __m256 lanes_zip_hi(__m256 a, __m256 b)
{
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x31);
}

AVX2_LANES_TARGET
static inline __m256 lanes_even(void)
{
    return _mm256_castsi256_ps(_mm256_setr_epi32(-1, 0, -1, 0, -1, 0, -1, 0));
}

/* r[i] lane j becomes r[j] lane i, a 8 × 8 block transposed in registers (gemm16_lanes.h,
 * channel_blocks_lanes.h): pairs of rows interleaved by element, then by
 * pairs, then the 128-bit halves exchanged. The loops are unrolled, so that no stage goes through memory. */
LANES_TARGET
__attribute__((always_inline)) static inline void lanes_transpose(__m256 r[8])
{
    __m256 a[8], b[8];
#pragma GCC unroll 8
    for (int p = 0; p < 4; p++) {
        a[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        a[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
#pragma GCC unroll 8
    for (int q = 0; q < 2; q++) {
        const __m256d x = _mm256_castps_pd(a[4 * q]), y = _mm256_castps_pd(a[4 * q + 1]),
                      z = _mm256_castps_pd(a[4 * q + 2]), w = _mm256_castps_pd(a[4 * q + 3]);
        b[4 * q] = _mm256_castpd_ps(_mm256_unpacklo_pd(x, z));
        b[4 * q + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(x, z));
        b[4 * q + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(y, w));
        b[4 * q + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(y, w));
    }
    /* b[4q + s], half l: rows 4q .. 4q + 3 at column 4l + s */
#pragma GCC unroll 8
    for (int s = 0; s < 4; s++) {
        r[s] = _mm256_permute2f128_ps(b[s], b[4 + s], 0x20);
        r[4 + s] = _mm256_permute2f128_ps(b[s], b[4 + s], 0x31);
    }
}
#endif

#endif
