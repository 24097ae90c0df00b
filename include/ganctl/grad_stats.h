/* SPDX-License-Identifier: MIT */
/* grad_stats.h — struct gan_grad_stats, the statistics of one scaled gradient tensor: what a
 * backend's grad_stats kernel measures and, per tensor, everything a loss scaler is shown. */
#ifndef GANCTL_GRAD_STATS_H
#define GANCTL_GRAD_STATS_H

/* A header of its own because two interfaces share it: backends (backend.h, which only the
 * core calls) fill it, and scalers (scaler.h) read it. A scaler's author needs this much of
 * the backend interface and nothing else. The layout is the one ABI 1.0 defined in backend.h. */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Statistics of a gradient tensor x as stored (scaled by the loss scale s, in its storage
 * type), and of u = x · inv_scale (inv_scale is the FP32 1/s: u is the true gradient). */
struct gan_grad_stats {
    uint64_t elements;
    uint64_t nonfinite;   /* inf or NaN in x */
    uint64_t zeros;       /* exact zeros in x (either sign) */
    uint64_t subnormal;   /* finite non-zero |x| < 2^-14, FP16's smallest normal:
                             values that are, or as FP16 would be, subnormal */
    double absmax;        /* max |u| over finite elements */
    double sum_squares;   /* Σ u² over finite elements */
    double min_nonzero;   /* min |u| over finite non-zero elements; 0 when none */
};

#ifdef __cplusplus
}
#endif
#endif
