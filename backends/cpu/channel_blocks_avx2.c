/* SPDX-License-Identifier: MIT */
/* channel_blocks_avx2.c — channel_blocks.c's reorders on AVX2 with F16C (eight lanes), for CPUs without AVX-512:
 * channel_blocks_lanes.h on lanes_avx2.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"
#include "lanes_avx2.h"
#include "channel_blocks_lanes.h"
