/* SPDX-License-Identifier: MIT */
/* col2im_avx2.c — conv2d.c's col2im adds at stride 2 on AVX2 with F16C (eight
 * lanes), for CPUs without AVX-512: col2im_lanes.h on lanes_avx2.h. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "cpu_backend.h"

#if !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
#include "lanes_avx2.h"
#include "col2im_lanes.h"
