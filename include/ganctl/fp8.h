/* SPDX-License-Identifier: MIT */
/* fp8.h — how an operand of an FP8 product is laid out in scale blocks, and the
 * statistics measured of it before its cast: what a backend's FP8 kernels (backend.h)
 * compute and a scaling recipe (recipe.h) reads. */
#ifndef GANCTL_FP8_H
#define GANCTL_FP8_H

/* A header of its own because two interfaces share it, as grad_stats.h is shared: a
 * recipe's author needs this much of the backend interface and nothing else (ABI 1.6). */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An operand as stored: a row-major rows × cols matrix, contiguous. Its scale blocks
 * run along the product's reduction dimension k, which is either along each stored row
 * (GAN_FP8_ALONG_ROWS: k is the stored columns) or down each stored column
 * (GAN_FP8_ALONG_COLUMNS: k is the stored rows).
 *
 *   block == 0: one scale for the whole operand (per tensor).
 *   block  > 0: one scale per `block` consecutive elements along k; the last block of
 *               a line may be shorter. With nb = ceil(k / block) the scales are
 *                 ALONG_ROWS:    [rows][nb]   scale of (r, c) at r·nb + c / block
 *                 ALONG_COLUMNS: [nb][cols]   scale of (r, c) at (r / block)·cols + c
 *
 * A value x is stored as q = fp8(x · scale) and stands for q / scale. */
enum gan_fp8_direction {
    GAN_FP8_ALONG_ROWS = 0,
    GAN_FP8_ALONG_COLUMNS = 1
};

struct gan_fp8_layout {
    int64_t rows, cols;
    int64_t block;                 /* 0: per tensor */
    enum gan_fp8_direction along;  /* ignored when block is 0 */
};

/* The number of scales a layout has: 1 per tensor, else as above. */
static inline int64_t gan_fp8_scale_count(const struct gan_fp8_layout *l)
{
    if (l->block <= 0)
        return 1;
    int64_t k = l->along == GAN_FP8_ALONG_ROWS ? l->cols : l->rows;
    int64_t lines = l->along == GAN_FP8_ALONG_ROWS ? l->rows : l->cols;
    return lines * ((k + l->block - 1) / l->block);
}

/* The magnitude histogram: bin e − GAN_FP8_LOG2_MIN counts the finite non-zero values
 * with floor(log2 |x|) == e, for e from −149 (FP32's smallest subnormal, 2^-149) to 127
 * (its largest exponent). */
#define GAN_FP8_LOG2_MIN (-149)
#define GAN_FP8_LOG2_BINS 277

/* What is measured of an operand before its cast, over its true values (no scale). */
struct gan_fp8_stats {
    uint64_t elements;
    uint64_t zeros;           /* exact zeros, either sign */
    uint64_t nonfinite;       /* inf or NaN */
    float amax;               /* max |x| over finite elements; 0 when none */
    /* Filled only when asked for (recipe.h: GAN_RECIPE_WANT_HISTOGRAM); else zeros. */
    uint64_t log2_hist[GAN_FP8_LOG2_BINS];
};

/* What a cast into FP8 did (backend.h: fp8_quantize), counted over its elements. The
 * amax is of the values before scaling, measured in the cast's own pass, so that a
 * recipe that scales from history (delayed scaling) needs no pass of its own. */
struct gan_fp8_cast_stats {
    uint64_t elements;
    uint64_t overflow;        /* finite x·scale beyond what rounds to the format's max:
                                 became ±max (saturating) or inf/NaN */
    uint64_t underflow;       /* non-zero x that became zero */
    uint64_t subnormal;       /* non-zero results that are subnormal in the format */
    uint64_t nonfinite;       /* inputs already inf or NaN */
    float amax;               /* max |x| over finite inputs, before scaling */
};

#ifdef __cplusplus
}
#endif
#endif
