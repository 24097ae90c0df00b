/* SPDX-License-Identifier: MIT */
/* gemm16_avx2.c — gemm16_lanes.h on AVX2 with F16C and FMA: a tile of 6 rows by 16
 * columns, 12 accumulators of the 16 registers. */
#include "config.h"

#include <stdint.h>

#include "gemm16.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* the tile's store is alpha·chain + beta·C rounded step by step, never fused */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx2.h"

#define GEMM16_TARGET __attribute__((target("avx2,avx,f16c,fma")))
#define GEMM16_MR 6
#define GEMM16_NV 2
#define lanes_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))

/* r[i] lane j becomes r[j] lane i: pairs of rows interleaved by element, then by
 * pairs, then the 128-bit halves exchanged. */
GEMM16_TARGET
__attribute__((always_inline)) static inline void lanes_transpose(__m256 r[8])
{
    __m256 a[8], b[8];
    for (int p = 0; p < 4; p++) {
        a[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        a[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
    for (int q = 0; q < 2; q++) {
        const __m256d x = _mm256_castps_pd(a[4 * q]), y = _mm256_castps_pd(a[4 * q + 1]),
                      z = _mm256_castps_pd(a[4 * q + 2]), w = _mm256_castps_pd(a[4 * q + 3]);
        b[4 * q] = _mm256_castpd_ps(_mm256_unpacklo_pd(x, z));
        b[4 * q + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(x, z));
        b[4 * q + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(y, w));
        b[4 * q + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(y, w));
    }
    /* b[4q + s], half l: rows 4q .. 4q + 3 at column 4l + s */
    for (int s = 0; s < 4; s++) {
        r[s] = _mm256_permute2f128_ps(b[s], b[4 + s], 0x20);
        r[4 + s] = _mm256_permute2f128_ps(b[s], b[4 + s], 0x31);
    }
}
#include "gemm16_lanes.h"
#endif
