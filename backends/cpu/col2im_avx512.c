/* SPDX-License-Identifier: MIT */
/* col2im_avx512.c — conv2d.c's col2im adds at stride 2 on AVX-512 (sixteen lanes):
 * col2im_lanes.h on lanes_avx512.h. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx512.h"
#include "col2im_lanes.h"
