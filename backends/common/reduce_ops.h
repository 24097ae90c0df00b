/* SPDX-License-Identifier: MIT */
/* reduce_ops.h — the per-element math of the reductions: each op's identity, what one
 * element contributes, how two partial results merge and how the total becomes the result. */
#ifndef GANCTL_COMMON_REDUCE_OPS_H
#define GANCTL_COMMON_REDUCE_OPS_H

#include <math.h>
#include <stdint.h>
#include <ganctl/backend.h>

#include "hostdev.h"

/* Semantics: MAX, MIN and ABS_MAX propagate NaN (like torch.amax): one NaN makes the
 * result NaN. SUM, MEAN and SUM_SQUARES follow IEEE arithmetic (inf − inf = NaN). An
 * empty reduction gives each op's identity (SUM 0, MEAN NaN as 0 / 0, MAX −inf, MIN
 * +inf, SUM_SQUARES 0, ABS_MAX 0). MEAN divides the FP32 sum by the count in double and
 * rounds once. Both backends accumulate in FP32; the order in which they combine
 * partial results is each backend's own. */

GAN_HD static inline float gan_red_identity(enum gan_reduce_op op)
{
    return op == GAN_REDUCE_MAX ? -INFINITY : op == GAN_REDUCE_MIN ? INFINITY : 0.0f;
}

/* Merges two partial results; MAX and MIN keep a NaN from either side. */
GAN_HD static inline float gan_red_combine(enum gan_reduce_op op, float a, float b)
{
    switch (op) {
    case GAN_REDUCE_MAX:
    case GAN_REDUCE_ABS_MAX: return (b > a || b != b) ? b : a;
    case GAN_REDUCE_MIN: return (b < a || b != b) ? b : a;
    default: return a + b;
    }
}

/* What one element contributes. */
GAN_HD static inline float gan_red_transform(enum gan_reduce_op op, float v)
{
    switch (op) {
    case GAN_REDUCE_SUM_SQUARES: return v * v;
    case GAN_REDUCE_ABS_MAX: return fabsf(v);
    default: return v;
    }
}

/* The accumulated value as the op's result over `count` elements. */
GAN_HD static inline float gan_red_finish(enum gan_reduce_op op, float acc, int64_t count)
{
    if (op == GAN_REDUCE_MEAN)
        return count ? (float)((double)acc / (double)count) : NAN;
    return acc;
}

#endif
