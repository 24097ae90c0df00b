/* SPDX-License-Identifier: MIT */
/* adam_avx512.c — adam.c's update on AVX-512 (sixteen lanes): adam_lanes.h on lanes_avx512.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

/* GCC may fuse a multiply and an add written as intrinsics (they are vector arithmetic
 * to it); clang does not fuse across intrinsics and lacks the pragma. */
#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"
#include "adam_lanes.h"
