/* SPDX-License-Identifier: MIT */
/* elementwise_avx512.c — the element-wise kernels on AVX-512 (sixteen lanes):
 * elementwise_lanes.h on lanes_avx512.h. */
#include "config.h"

/* tanh_lanes.h must round each product on its own, as tanh.c does. GCC may fuse a
 * multiply and an add written as intrinsics (they are vector arithmetic to it); clang
 * does not fuse across intrinsics and lacks the pragma. */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <stdint.h>

#include "cpu_backend.h"
#include "lanes_avx512.h"
#include "elementwise_lanes.h"
