/* SPDX-License-Identifier: MIT */
/* fp8_ops.h — the per-element rules of the FP8 products' kernels (backend.h: fp8_stats,
 * fp8_quantize, fp8_dequantize): where an element's scale is, which bin of the log2
 * histogram a value falls in, what a quantization counts, and a product rounded once
 * into a 16-bit type. */
#ifndef GANCTL_COMMON_FP8_OPS_H
#define GANCTL_COMMON_FP8_OPS_H

#include <math.h>
#include <stdint.h>
#include <ganctl/dtype.h>
#include <ganctl/fp8.h>

#include "hostdev.h"
#include "convert.h"
#include "fp8.h"

/* Written once for the CPU backend's scalar paths, the CUDA kernels and the reference
 * the CPU's vector loops are tested against, so that both backends count and round
 * alike. Every test of a value is on FP32 bits, as fp8.h's are: no flush-to-zero mode
 * can hide a subnormal, and a NaN compares as what it is. */

/* The index into a layout's scales of stored element (r, c); nb is the number of
 * blocks along k, ceil(k / block). fp8.h gives the order. */
GAN_HD static inline int64_t gan_fp8_scale_index(const struct gan_fp8_layout *l, int64_t nb,
                                                 int64_t r, int64_t c)
{
    if (l->block <= 0)
        return 0;
    if (l->along == GAN_FP8_ALONG_ROWS)
        return r * nb + c / l->block;
    return (r / l->block) * l->cols + c;
}

/* ceil(k / block) of a layout with blocks, 1 per tensor. */
GAN_HD static inline int64_t gan_fp8_blocks_along_k(const struct gan_fp8_layout *l)
{
    if (l->block <= 0)
        return 1;
    int64_t k = l->along == GAN_FP8_ALONG_ROWS ? l->cols : l->rows;
    return (k + l->block - 1) / l->block;
}

/* The histogram bin of a finite non-zero value with |x|'s FP32 bits ax: floor(log2 |x|)
 * less GAN_FP8_LOG2_MIN. A normal's exponent field e is floor(log2) + 127; a subnormal
 * is its mantissa times 2^-149, so its floor(log2) is the mantissa's top bit less 149. */
GAN_HD static inline int gan_fp8_log2_bin(uint32_t ax)
{
    uint32_t e = ax >> 23;
    if (e)
        return (int)e - 127 - GAN_FP8_LOG2_MIN;
    return 31 - gan_clz32(ax) - 149 - GAN_FP8_LOG2_MIN;
}

/* FP32 bits at or above this are inf or NaN. */
#define GAN_FP8_NONFINITE_BITS 0x7f800000u

/* What a quantization counts of one element (struct gan_fp8_cast_stats), from the
 * FP32 bits of x, of its product p = fl32(x · scale), and from the stored FP8 bits q:
 *   nonfinite  x is inf or NaN;
 *   overflow   x is finite and |p| lies beyond what rounds to the format's largest
 *              finite value (an FP32 product that overflowed to inf included; a NaN
 *              product, from a NaN scale, is no overflow);
 *   underflow  x is finite and non-zero and q is a zero;
 *   subnormal  q is non-zero with a zero exponent field.
 * amax_bits keeps the largest |x| over finite x, as bits (they order as the values do). */
struct gan_fp8_tally {
    uint64_t overflow, underflow, subnormal, nonfinite;
    uint32_t amax_bits;
};

GAN_HD static inline void gan_fp8_tally_element(struct gan_fp8_tally *t,
                                                const struct gan_fp8_format *f, uint32_t xb,
                                                uint32_t pb, uint32_t q)
{
    uint32_t ax = xb & 0x7fffffffu, ap = pb & 0x7fffffffu, aq = q & 0x7fu;
    int finite = ax < GAN_FP8_NONFINITE_BITS;
    t->nonfinite += finite ? 0u : 1u;
    t->overflow += finite && ap > f->overflow_above && ap <= GAN_FP8_NONFINITE_BITS;
    t->underflow += finite && ax != 0 && aq == 0;
    t->subnormal += aq != 0 && aq < (1u << f->mant_bits);
    if (finite && ax > t->amax_bits)
        t->amax_bits = ax;
}

/* v as the FP32 value nearest it rounded to odd: a result that is not exact keeps its
 * truncated significand with the last bit set. v is a product of an FP8 value and an
 * FP32 one, exact in double (at most 4 + 24 significant bits); rounding the odd FP32
 * value once more, to F16 or BF16 (nearest even), gives v rounded once to that type,
 * which two roundings to nearest would not (FP32 keeps at least two bits more than
 * either in every binade, subnormals included). */
GAN_HD static inline float gan_f64_to_f32_odd(double v)
{
    float f = (float)v;
    double back = (double)f;
    if (back == v || v != v || fabs(v) == (double)INFINITY)
        return f;
    uint32_t b = gan_f32_bits(f);
    if (fabs(back) > fabs(v)) /* rounded away from zero: step back toward it */
        b -= 1u;
    return gan_bits_f32(b | 1u);
}

/* The stored bits, in float type yt, of FP8 value qv times inv, rounded once. */
GAN_HD static inline uint32_t gan_fp8_dequantize_bits(float qv, float inv, enum gan_dtype yt)
{
    if (yt == GAN_F32)
        return gan_f32_bits(gan_fmul_rn(qv, inv));
    return gan_float_bits(yt, gan_f64_to_f32_odd(gan_dmul_rn((double)qv, (double)inv)));
}

#endif
