/* SPDX-License-Identifier: MIT */
/* channel_blocks_avx512.c — channel_blocks.c's reorders on AVX-512 (sixteen lanes):
 * channel_blocks_lanes.h on lanes_avx512.h. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"
#include "lanes_avx512.h"
#include "channel_blocks_lanes.h"
