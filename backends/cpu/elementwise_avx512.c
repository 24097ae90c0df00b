/* SPDX-License-Identifier: MIT */
/* elementwise_avx512.c — the element-wise kernels on AVX-512 (sixteen lanes):
 * elementwise_lanes.h on lanes_avx512.h. */
#include "config.h"

/* tanh_lanes.h must round each product on its own, as tanh.c does. */
#pragma GCC optimize("fp-contract=off")

#include <stdint.h>

#include "cpu_backend.h"
#include "lanes_avx512.h"
#include "elementwise_lanes.h"
