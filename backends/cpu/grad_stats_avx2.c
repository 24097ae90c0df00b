/* SPDX-License-Identifier: MIT */
/* grad_stats_avx2.c — one block of grad_stats.c's measurement on AVX2 with F16C (eight
 * lanes), for CPUs without AVX-512: grad_stats_lanes.h on lanes_avx2.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx2.h"
#include "grad_stats_lanes.h"
