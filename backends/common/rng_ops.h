/* SPDX-License-Identifier: MIT */
/* rng_ops.h — the per-element rules of the random-number kernels: a double value
 * rounded once to the output type, and a rounded uniform kept inside (low, high). */
#ifndef GANCTL_COMMON_RNG_OPS_H
#define GANCTL_COMMON_RNG_OPS_H

/* The words themselves come from <ganctl/philox.h>, Philox4x32-10 as static inline
 * functions compiled for host and device alike; the core's samplers use it too, which
 * is why it stays a public header rather than living here. */
#include <math.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/philox.h>

#include "hostdev.h"
#include "convert.h"

/* d rounded to FP32 with round-to-odd: toward zero, and the last bit set when that
 * was inexact. Rounding that result to a format with at least two fewer significant
 * bits (FP16: 11, BF16: 8) is the same as rounding d to that format directly, so the
 * 16-bit outputs are rounded once from the double value, as the ABI asks. */
GAN_HD static inline float gan_f32_round_to_odd(double d)
{
    float f = (float)d;
    if ((double)f == d || isnan(d) || isinf(f))
        return f;
    uint32_t b = gan_f32_bits(f);
    if (fabs((double)f) > fabs(d))
        b -= 1u; /* f was rounded away from zero: its magnitude's predecessor is below d */
    return gan_bits_f32(b | 1u);
}

/* The stored bits of d in float type `dtype`, rounded once. */
GAN_HD static inline uint32_t gan_rounded_bits(enum gan_dtype dtype, double d)
{
    switch (dtype) {
    case GAN_F16: return gan_f32_to_f16(gan_f32_round_to_odd(d));
    case GAN_BF16: return gan_f32_to_bf16(gan_f32_round_to_odd(d));
    default: return gan_f32_bits((float)d);
    }
}

/* The dtype's neighbour of the stored value (bits b, value v) one step toward
 * `toward`; b itself when v == toward. */
GAN_HD static inline uint32_t gan_step_toward(enum gan_dtype dtype, uint32_t b, float v,
                                              float toward)
{
    if (v == toward)
        return b;
    if (dtype == GAN_F32)
        return gan_f32_bits(nextafterf(v, toward));
    /* 16-bit sign-magnitude patterns: the magnitude grows with the pattern. A zero of
     * either sign steps to the smallest subnormal on the side of `toward`. */
    int up = toward > v, neg = (b & 0x8000u) != 0;
    if ((b & 0x7fffu) == 0)
        return up ? 0x0001u : 0x8001u;
    return (up != neg) ? (b + 1u) & 0xffffu : (b - 1u) & 0xffffu;
}

/* The uniform value low + width · u of word w, exactly as the ABI defines it: one
 * double product and one double sum, each rounded once. */
GAN_HD static inline double gan_rng_uniform_value(double low, double width, uint32_t w)
{
    return gan_dadd_rn(low, gan_dmul_rn(width, gan_philox_word_uniform(w)));
}

/* mean + std · z, in double, each operation rounded once. */
GAN_HD static inline double gan_rng_normal_value(double mean, double std, double z)
{
    return gan_dadd_rn(mean, gan_dmul_rn(std, z));
}

/* A uniform value d stored as `dtype`, rounded once. The exact value is inside
 * (low, high), but rounding can land on an end (FP32 rounds 1 − 2^-25 up to 1; FP16
 * rounds far more values to 1); such a value steps one place back inside, so that
 * callers can rely on the open interval (log(u), log(1 − u)). When the dtype has no
 * value strictly between low and high, the rounded value stays. */
GAN_HD static inline uint32_t gan_uniform_bits(enum gan_dtype dtype, double d, float low,
                                               float high)
{
    uint32_t b = gan_rounded_bits(dtype, d);
    if (!(low < high))
        return b;
    float v = gan_bits_value(dtype, b);
    if (v > low && v < high)
        return b;
    uint32_t in = gan_step_toward(dtype, b, v, v >= high ? low : high);
    float inside = gan_bits_value(dtype, in);
    return (inside > low && inside < high) ? in : b;
}

/* The parameters of rng_uniform and rng_normal, checked on the host. */
static inline gan_status gan_rng_check_uniform(const struct gan_host *host, float low,
                                               float high)
{
    if (!isfinite(low) || !isfinite(high) || low > high)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "rng_uniform: the interval [%g, %g) is not valid; low and high "
                          "must be finite with low <= high", (double)low, (double)high);
    return GAN_OK;
}

static inline gan_status gan_rng_check_normal(const struct gan_host *host, float mean,
                                              float std)
{
    if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "rng_normal: mean %g and std %g are not valid; both must be "
                          "finite and std >= 0", (double)mean, (double)std);
    return GAN_OK;
}

#endif
