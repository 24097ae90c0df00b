/* SPDX-License-Identifier: MIT */
/* gemm_thin_avx2.c — gemm_thin_lanes.h on AVX2 with F16C and FMA: eight lanes. */
#include "config.h"

#include <stdint.h>

#include "gemm_thin.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* alpha·sum + beta·C is rounded step by step, never fused */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx2.h"

#undef LANES_TARGET
#define LANES_TARGET __attribute__((target("avx2,avx,f16c,fma")))
#define lanes_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))

/* the eight lanes' sum, halves first: (l0 + l4) + … in a fixed tree */
LANES_TARGET
static inline float lanes_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

#include "gemm_thin_lanes.h"
#endif
