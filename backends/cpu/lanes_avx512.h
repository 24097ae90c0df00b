/* SPDX-License-Identifier: MIT */
/* lanes_avx512.h — the lane interface of the kernels written once for every vector level
 * (the *_lanes.h templates), on AVX-512: sixteen FP32 lanes, avx512_lanes.h's loads and
 * stores, conditions as lane masks. A file includes one lane interface, then the
 * templates it instantiates; LANES_FN names what it defines (cpu_vec_adam_avx512). */
#ifndef GANCTL_CPU_LANES_H
#define GANCTL_CPU_LANES_H

#define LANES_FN(name) name##_avx512

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include "avx512_lanes.h"

#define LANES_N 16
#define LANES_TARGET AVX512_LANES_TARGET

typedef __m512 lanes_f32;  /* sixteen FP32 values */
typedef __mmask16 lanes_in; /* which lanes of a block lie inside the run */
typedef __mmask16 lanes_if; /* a condition per lane */

/* the upper halves of the vector registers cleared before a return or a call to the
 * baseline ISA (why: lanes_avx2.h) */
#define lanes_leave() _mm256_zeroupper()
#define lanes_inside(i, n) avx512_lanes((i), (n))
#define lanes_load(p, dt, i, in) avx512_load((p), (dt), (i), (in))
#define lanes_store(p, dt, i, in, v) avx512_store((p), (dt), (i), (in), (v))
#define lanes_stored(dt, v) avx512_stored((dt), (v)) /* v as a store and load in dt give it */
#define lanes_load_f32(p, in) _mm512_maskz_loadu_ps((in), (p))
#define lanes_store_f32(p, in, v) _mm512_mask_storeu_ps((p), (in), (v))
/* the upper 16 bits of each lane to 16-bit element i of p: a value widened from BF16
 * stored back bit for bit, a signalling NaN included */
#define lanes_store_bf16_bits(p, i, in, v) avx512_store_upper_bits((p), (i), (in), (v))
#define lanes_set1(x) _mm512_set1_ps(x)
#define lanes_zero() _mm512_setzero_ps()
#define lanes_add(a, b) _mm512_add_ps((a), (b))
#define lanes_sub(a, b) _mm512_sub_ps((a), (b))
#define lanes_mul(a, b) _mm512_mul_ps((a), (b))
#define lanes_div(a, b) _mm512_div_ps((a), (b))
#define lanes_sqrt(a) _mm512_sqrt_ps(a)
/* ordered comparisons: false where either side is NaN */
#define lanes_gt(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define lanes_lt(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define lanes_le(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LE_OQ)
/* b where c holds, a elsewhere; v where c holds, +0 elsewhere */
#define lanes_blend(c, a, b) _mm512_mask_blend_ps((c), (a), (b))
#define lanes_keep(c, v) _mm512_maskz_mov_ps((c), (v))
#define lanes_max(a, b) _mm512_max_ps((a), (b))
#define lanes_min(a, b) _mm512_min_ps((a), (b))
/* the lanes inside the run as a condition; conditions combined; one bit per lane */
#define lanes_live(in) (in)
#define lanes_and_if(c, d) ((lanes_if)((c) & (d)))
#define lanes_andnot_if(c, d) ((lanes_if)((c) & (lanes_if)~(d)))
#define lanes_or_if(c, d) ((lanes_if)((c) | (d)))
#define lanes_bits(c) ((unsigned)(c))

/* The lanes as 32-bit integers (the float's bits, or an int32 each), for the functions
 * that work on a float's exponent (tanh_lanes.h). */
typedef __m512i lanes_i32;
#define lanes_as_i32(v) _mm512_castps_si512(v)
#define lanes_as_f32(i) _mm512_castsi512_ps(i)
#define lanes_i32_set1(c) _mm512_set1_epi32(c)
#define lanes_i32_add(a, b) _mm512_add_epi32((a), (b))
#define lanes_i32_sub(a, b) _mm512_sub_epi32((a), (b))
#define lanes_i32_and(a, b) _mm512_and_si512((a), (b))
#define lanes_i32_or(a, b) _mm512_or_si512((a), (b))
#define lanes_i32_shl(a, n) _mm512_slli_epi32((a), (n))
#define lanes_i32_shr_by(a, counts) _mm512_srlv_epi32((a), (counts)) /* 0 past 31 */
/* signed comparisons */
#define lanes_i32_gt(a, b) _mm512_cmpgt_epi32_mask((a), (b))
#define lanes_i32_eq(a, b) _mm512_cmpeq_epi32_mask((a), (b))
#define lanes_i32_blend(c, a, b) _mm512_mask_blend_epi32((c), (a), (b))
#define lanes_trunc_i32(v) _mm512_cvttps_epi32(v) /* toward zero, as C's (int32_t) */
#define lanes_i32_to_f32(i) _mm512_cvtepi32_ps(i)

/* Bit operations on float lanes through the integer unit (AVX-512 F has no float
 * and/xor; DQ does, and is not required). */
AVX512_LANES_TARGET
static inline __m512 lanes_xor_bits(__m512 v, int32_t mask)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(mask)));
}

AVX512_LANES_TARGET
static inline __m512 lanes_and_bits(__m512 v, int32_t mask)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(mask)));
}

/* a and b interleaved, element by element: the first half of (a0, b0, a1, b1, …) and the
 * second (col2im_lanes.h); the even lanes as a condition. */
AVX512_LANES_TARGET
static inline __m512 lanes_zip_lo(__m512 a, __m512 b)
{
    const __m512i at = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    return _mm512_permutex2var_ps(a, at, b);
}

AVX512_LANES_TARGET
static inline __m512 lanes_zip_hi(__m512 a, __m512 b)
{
    const __m512i at = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                         15, 31);
    return _mm512_permutex2var_ps(a, at, b);
}

#define lanes_even() ((lanes_if)0x5555)

/* r[i] lane j becomes r[j] lane i, a 16 × 16 block transposed in registers (gemm16_lanes.h,
 * channel_blocks_lanes.h): pairs of rows interleaved by element, then by
 * pairs, then the 128-bit quarters gathered twice. The loops are unrolled, so that no stage goes through memory. */
LANES_TARGET
__attribute__((always_inline)) static inline void lanes_transpose(__m512 r[16])
{
    __m512 a[16], b[16], c[16];
#pragma GCC unroll 8
    for (int p = 0; p < 8; p++) {
        a[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        a[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
#pragma GCC unroll 8
    for (int q = 0; q < 4; q++) {
        const __m512d x = _mm512_castps_pd(a[4 * q]), y = _mm512_castps_pd(a[4 * q + 1]),
                      z = _mm512_castps_pd(a[4 * q + 2]), w = _mm512_castps_pd(a[4 * q + 3]);
        b[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, z));
        b[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, z));
        b[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(y, w));
        b[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(y, w));
    }
    /* b[4q + s], quarter l: rows 4q .. 4q + 3 at column 4l + s */
#pragma GCC unroll 8
    for (int s = 0; s < 4; s++) {
        c[s] = _mm512_shuffle_f32x4(b[s], b[4 + s], 0x88);
        c[4 + s] = _mm512_shuffle_f32x4(b[s], b[4 + s], 0xdd);
        c[8 + s] = _mm512_shuffle_f32x4(b[8 + s], b[12 + s], 0x88);
        c[12 + s] = _mm512_shuffle_f32x4(b[8 + s], b[12 + s], 0xdd);
    }
#pragma GCC unroll 8
    for (int s = 0; s < 4; s++) {
        r[s] = _mm512_shuffle_f32x4(c[s], c[8 + s], 0x88);
        r[8 + s] = _mm512_shuffle_f32x4(c[s], c[8 + s], 0xdd);
        r[4 + s] = _mm512_shuffle_f32x4(c[4 + s], c[12 + s], 0x88);
        r[12 + s] = _mm512_shuffle_f32x4(c[4 + s], c[12 + s], 0xdd);
    }
}
#endif

#endif
