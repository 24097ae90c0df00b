/* SPDX-License-Identifier: MIT */
/* cast_ops.h — the per-element rules of a cast: the class of a stored float, what a
 * float-to-float conversion counts, and conversions with an integer on either side. */
#ifndef GANCTL_COMMON_CAST_OPS_H
#define GANCTL_COMMON_CAST_OPS_H

#include <math.h>
#include <stdint.h>
#include <ganctl/dtype.h>

#include "hostdev.h"
#include "convert.h"

/* Classes of a stored float, from its bits (so that no flush-to-zero mode of an FPU
 * can hide a subnormal). Ordered: the non-finite ones last. */
enum gan_fclass { GAN_FC_ZERO, GAN_FC_SUBNORMAL, GAN_FC_NORMAL, GAN_FC_INF, GAN_FC_NAN };

GAN_HD static inline enum gan_fclass gan_fclass_of(uint32_t exp, uint32_t exp_max,
                                                   uint32_t mant)
{
    if (exp == 0)
        return mant ? GAN_FC_SUBNORMAL : GAN_FC_ZERO;
    if (exp == exp_max)
        return mant ? GAN_FC_NAN : GAN_FC_INF;
    return GAN_FC_NORMAL;
}

GAN_HD static inline enum gan_fclass gan_fclass_f32(uint32_t b)
{
    return gan_fclass_of((b >> 23) & 0xffu, 0xffu, b & 0x7fffffu);
}

GAN_HD static inline enum gan_fclass gan_fclass_f16(uint32_t b)
{
    return gan_fclass_of((b >> 10) & 0x1fu, 0x1fu, b & 0x3ffu);
}

GAN_HD static inline enum gan_fclass gan_fclass_bf16(uint32_t b)
{
    return gan_fclass_of((b >> 7) & 0xffu, 0xffu, b & 0x7fu);
}

/* E4M3's all-ones exponent holds numbers up to 448; only S.1111.111 is NaN, and no
 * pattern is infinite. */
GAN_HD static inline enum gan_fclass gan_fclass_e4m3(uint32_t b)
{
    if ((b & 0x7fu) == 0x7fu)
        return GAN_FC_NAN;
    return (b & 0x78u) ? GAN_FC_NORMAL : (b & 7u) ? GAN_FC_SUBNORMAL : GAN_FC_ZERO;
}

GAN_HD static inline enum gan_fclass gan_fclass_e5m2(uint32_t b)
{
    return gan_fclass_of((b >> 2) & 0x1fu, 0x1fu, b & 3u);
}

/* The class of stored bits b of float type `dtype`. */
GAN_HD static inline enum gan_fclass gan_fclass(enum gan_dtype dtype, uint32_t b)
{
    switch (dtype) {
    case GAN_F16: return gan_fclass_f16(b);
    case GAN_BF16: return gan_fclass_bf16(b);
    case GAN_F8E4M3: return gan_fclass_e4m3(b);
    case GAN_F8E5M2: return gan_fclass_e5m2(b);
    default: return gan_fclass_f32(b);
    }
}

/* What a cast counts (struct gan_cast_counts less the element count), kept per thread
 * or per block and summed. */
struct gan_cast_tally {
    uint64_t overflow, underflow, subnormal, nonfinite;
};

/* The counting rule of a float-to-float cast, from the classes of the input (cx) and
 * of the stored output (cy): a finite input that became inf overflowed; a non-zero
 * finite input that became zero underflowed; a subnormal output counts as subnormal;
 * a non-finite input counts as non-finite. A cast of a type to itself is the same rule
 * with cy = cx. */
GAN_HD static inline void gan_cast_tally_float(struct gan_cast_tally *t, enum gan_fclass cx,
                                               enum gan_fclass cy)
{
    t->nonfinite += cx >= GAN_FC_INF;
    t->overflow += cx < GAN_FC_INF && cy == GAN_FC_INF;
    t->underflow += (cx == GAN_FC_SUBNORMAL || cx == GAN_FC_NORMAL) && cy == GAN_FC_ZERO;
    t->subnormal += cy == GAN_FC_SUBNORMAL;
}

/* The same rule for an FP8 output, but overflow read from the input's value: a
 * saturating cast leaves a finite ±max where the 16-bit casts leave ±inf, and E4M3
 * overflows to NaN, so the output's class cannot tell. `overflowed` is
 * gan_fp8_overflows of the input's value. */
GAN_HD static inline void gan_cast_tally_fp8(struct gan_cast_tally *t, enum gan_fclass cx,
                                             enum gan_fclass cy, int overflowed)
{
    t->nonfinite += cx >= GAN_FC_INF;
    t->overflow += overflowed ? 1u : 0u;
    t->underflow += (cx == GAN_FC_SUBNORMAL || cx == GAN_FC_NORMAL) && cy == GAN_FC_ZERO;
    t->subnormal += cy == GAN_FC_SUBNORMAL;
}

/* Element i of a cast between two different float types, FP8 included: x of type xt at
 * xp into y of type yt at yp, counted into t. Widening to FP32 is exact for every such
 * type, so the result is rounded once. `saturate` applies to an FP8 output
 * (gan_fp8_encode). The CUDA kernel runs this for every element, the CPU backend's
 * portable FP8 path too. */
GAN_HD static inline void gan_cast_float_element(const void *xp, enum gan_dtype xt, void *yp,
                                                 enum gan_dtype yt, int64_t i, int saturate,
                                                 struct gan_cast_tally *t)
{
    uint32_t xb = gan_load_bits(xp, xt, i);
    float v = gan_bits_value(xt, xb);
    uint32_t yb = gan_is_fp8(yt) ? gan_fp8_bits(yt, v, saturate) : gan_float_bits(yt, v);
    gan_store_bits(yp, yt, i, yb);
    enum gan_fclass cx = gan_fclass(xt, xb), cy = gan_fclass(yt, yb);
    if (gan_is_fp8(yt))
        gan_cast_tally_fp8(t, cx, cy, cx < GAN_FC_INF && gan_fp8_overflows(yt, v));
    else
        gan_cast_tally_float(t, cx, cy);
}

/* u as FP32 rounded to odd: truncated to 24 significant bits, with the last bit set
 * when anything was cut off. Rounding that to F16 or BF16 (nearest even) then gives
 * the correctly rounded result, which going through FP32 with nearest-even twice
 * would not: 2^24 + 2^16 + 1 would become 2^24 in BF16 instead of 2^24 + 2^17. */
GAN_HD static inline float gan_u32_to_f32_odd(uint32_t u)
{
    if (u < (1u << 24))
        return (float)u;
    int shift = 8 - gan_clz32(u); /* significant bits beyond 24 */
    uint32_t t = (u >> shift) << shift;
    if (t != u)
        t |= 1u << shift;
    return (float)t; /* exact: t has at most 24 significant bits */
}

/* An integer (|v| < 2^32) as the FP32 value that, stored as float type yt, is v
 * rounded once: FP32 itself rounds to nearest even, a 16-bit type goes through FP32
 * rounded to odd. */
GAN_HD static inline float gan_int_to_float(int64_t v, enum gan_dtype yt)
{
    if (yt == GAN_F32)
        return (float)v;
    uint32_t mag = v < 0 ? (uint32_t)(-v) : (uint32_t)v;
    float f = gan_u32_to_f32_odd(mag);
    return v < 0 ? -f : f;
}

/* The range of integer type yt (I32 or U32). */
GAN_HD static inline int64_t gan_int_min(enum gan_dtype yt)
{
    return yt == GAN_I32 ? (int64_t)INT32_MIN : 0;
}

GAN_HD static inline int64_t gan_int_max(enum gan_dtype yt)
{
    return yt == GAN_I32 ? (int64_t)INT32_MAX : (int64_t)UINT32_MAX;
}

/* f as an integer of range [lo, hi], counting as it goes: out of range saturates and
 * counts as overflow, inf saturates and NaN becomes 0 (both count as non-finite input),
 * and a non-zero value that rounds to 0 counts as underflow. Rounding is nearbyint's:
 * the FPU's mode, nearest even unless a caller changed it. */
GAN_HD static inline int64_t gan_float_to_int(float f, int64_t lo, int64_t hi,
                                              struct gan_cast_tally *t)
{
    if (isnan(f)) {
        t->nonfinite++;
        return 0;
    }
    if (isinf(f)) {
        t->nonfinite++;
        return f > 0 ? hi : lo;
    }
    /* values this large are integers already */
    double r = fabsf(f) < 0x1p62f ? nearbyint((double)f) : (double)f;
    if (r < (double)lo || r > (double)hi) {
        t->overflow++;
        return r < (double)lo ? lo : hi;
    }
    int64_t v = (int64_t)r;
    if (v == 0 && f != 0.0f)
        t->underflow++;
    return v;
}

/* An integer into range [lo, hi]: saturated and counted as overflow outside it. */
GAN_HD static inline int64_t gan_int_to_int(int64_t v, int64_t lo, int64_t hi,
                                            struct gan_cast_tally *t)
{
    if (v < lo || v > hi) {
        t->overflow++;
        return v < lo ? lo : hi;
    }
    return v;
}

/* Element i of a cast with an integer on either side, x of type xt at xp into y of type
 * yt at yp, counted into t. Integer → float rounds once and counts an inf as overflow
 * (|v| < 2^32 never underflows or becomes subnormal); float → integer and integer →
 * integer are gan_float_to_int's and gan_int_to_int's rules. */
GAN_HD static inline void gan_cast_int_element(const void *xp, enum gan_dtype xt, void *yp,
                                               enum gan_dtype yt, int64_t i,
                                               struct gan_cast_tally *t)
{
    if (gan_is_float(yt)) {
        int64_t v = xt == GAN_I32 ? (int64_t)((const int32_t *)xp)[i]
                                  : (int64_t)((const uint32_t *)xp)[i];
        uint32_t b = gan_float_bits(yt, gan_int_to_float(v, yt));
        gan_store_bits(yp, yt, i, b);
        t->overflow += isinf(gan_bits_value(yt, b)) ? 1u : 0u;
        return;
    }
    const int64_t lo = gan_int_min(yt), hi = gan_int_max(yt);
    int64_t v;
    if (gan_is_float(xt))
        v = gan_float_to_int(gan_load(xp, xt, i), lo, hi, t);
    else
        v = gan_int_to_int(xt == GAN_I32 ? (int64_t)((const int32_t *)xp)[i]
                                         : (int64_t)((const uint32_t *)xp)[i], lo, hi, t);
    if (yt == GAN_I32)
        ((int32_t *)yp)[i] = (int32_t)v;
    else
        ((uint32_t *)yp)[i] = (uint32_t)v;
}

#endif
