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
#define lanes_hsum(v) _mm512_reduce_add_ps(v)

#include "gemm_thin_lanes.h"
#endif
