/* SPDX-License-Identifier: MIT */
/* elementwise_avx2.c — the element-wise kernels on AVX2 with F16C (eight lanes), for
 * CPUs without AVX-512: elementwise_lanes.h on lanes_avx2.h. */
#include "config.h"

/* tanh_lanes.h must round each product on its own, as tanh.c does. */
#pragma GCC optimize("fp-contract=off")

#include <stdint.h>

#include "cpu_backend.h"
#include "lanes_avx2.h"
#include "elementwise_lanes.h"
