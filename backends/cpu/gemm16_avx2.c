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

#include "gemm16_lanes.h"
#endif
