/* SPDX-License-Identifier: MIT */
/* gemm_thin_avx512.c — gemm_thin_lanes.h on AVX-512: sixteen lanes. */
#include "config.h"

#include <stdint.h>

#include "gemm_thin.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* alpha·sum + beta·C is rounded step by step, never fused */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"

#undef LANES_TARGET
#define LANES_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,avx,f16c,fma")))
#define lanes_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))

/* the sixteen lanes' sum in a fixed tree, halves first: (l0 + l8) + … */
LANES_TARGET
static inline float lanes_hsum(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#include "gemm_thin_lanes.h"
#endif
