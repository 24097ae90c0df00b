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

#include "gemm16_lanes.h"
#endif
