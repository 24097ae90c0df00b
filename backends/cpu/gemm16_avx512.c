/* SPDX-License-Identifier: MIT */
/* gemm16_avx512.c — gemm16_lanes.h on AVX-512: a tile of 12 rows by 32 columns, 24
 * accumulators of the 32 registers. */
#include "config.h"

#include <stdint.h>

#include "gemm16.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* the tile's store is alpha·chain + beta·C rounded step by step, never fused */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"

#define GEMM16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,avx,f16c,fma")))
#define GEMM16_MR 12
#define GEMM16_NV 2
#define lanes_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))

/* r[i] lane j becomes r[j] lane i: pairs of rows interleaved by element, then by
 * pairs, then the 128-bit quarters gathered twice. */
GEMM16_TARGET
__attribute__((always_inline)) static inline void lanes_transpose(__m512 r[16])
{
    __m512 a[16], b[16], c[16];
    for (int p = 0; p < 8; p++) {
        a[2 * p] = _mm512_unpacklo_ps(r[2 * p], r[2 * p + 1]);
        a[2 * p + 1] = _mm512_unpackhi_ps(r[2 * p], r[2 * p + 1]);
    }
    for (int q = 0; q < 4; q++) {
        const __m512d x = _mm512_castps_pd(a[4 * q]), y = _mm512_castps_pd(a[4 * q + 1]),
                      z = _mm512_castps_pd(a[4 * q + 2]), w = _mm512_castps_pd(a[4 * q + 3]);
        b[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, z));
        b[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, z));
        b[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(y, w));
        b[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(y, w));
    }
    /* b[4q + s], quarter l: rows 4q .. 4q + 3 at column 4l + s */
    for (int s = 0; s < 4; s++) {
        c[s] = _mm512_shuffle_f32x4(b[s], b[4 + s], 0x88);
        c[4 + s] = _mm512_shuffle_f32x4(b[s], b[4 + s], 0xdd);
        c[8 + s] = _mm512_shuffle_f32x4(b[8 + s], b[12 + s], 0x88);
        c[12 + s] = _mm512_shuffle_f32x4(b[8 + s], b[12 + s], 0xdd);
    }
    for (int s = 0; s < 4; s++) {
        r[s] = _mm512_shuffle_f32x4(c[s], c[8 + s], 0x88);
        r[8 + s] = _mm512_shuffle_f32x4(c[s], c[8 + s], 0xdd);
        r[4 + s] = _mm512_shuffle_f32x4(c[4 + s], c[12 + s], 0x88);
        r[12 + s] = _mm512_shuffle_f32x4(c[4 + s], c[12 + s], 0xdd);
    }
}
#include "gemm16_lanes.h"
#endif
