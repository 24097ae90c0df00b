/* SPDX-License-Identifier: MIT */
/* reduce_avx512.c — the sums of reduce.c's many-outputs walk on AVX-512 (sixteen
 * lanes): reduce_lanes.h on lanes_avx512.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"
#include "reduce_lanes.h"
