/* SPDX-License-Identifier: MIT */
/* grad_stats_avx512.c — one block of grad_stats.c's measurement on AVX-512 (sixteen
 * lanes): grad_stats_lanes.h on lanes_avx512.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"
#include "grad_stats_lanes.h"
