/* SPDX-License-Identifier: MIT */
/* reduce_avx2.c — the sums of reduce.c's many-outputs walk on AVX2 with F16C (eight
 * lanes), for CPUs without AVX-512: reduce_lanes.h on lanes_avx2.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx2.h"
#include "reduce_lanes.h"
