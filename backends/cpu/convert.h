/* SPDX-License-Identifier: MIT */
/* convert.h — FP32 ↔ FP16/BF16 conversion with round-to-nearest-even, subnormals,
 * signed zero, overflow to ±inf and NaN kept, and typed element loads and stores. */
#ifndef GANCTL_CPU_CONVERT_H
#define GANCTL_CPU_CONVERT_H

#include <stdint.h>
#include <string.h>
#include <ganctl/dtype.h>

static inline uint32_t cpu_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static inline float cpu_bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static inline uint16_t cpu_f32_to_f16(float f)
{
    uint32_t x = cpu_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;

    if (ax >= 0x7f800000u) /* inf stays inf; NaN stays NaN (quiet, top payload bits kept) */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) /* ≥ 65520 rounds past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* ≥ 2^-14: a normal FP16; rebias the exponent by 127 − 15 */
        uint32_t lsb = (ax >> 13) & 1u;
        return (uint16_t)(sign | ((ax - 0x38000000u + 0xfffu + lsb) >> 13));
    }
    if (ax <= 0x33000000u) /* ≤ 2^-25: half of the smallest subnormal or less, ties to even 0 */
        return sign;
    /* A subnormal FP16: round(|f| · 2^24) to nearest even. */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - (ax >> 23);
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

static inline float cpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        float mag = (float)mant * 0x1p-24f; /* exact: at most 10 significant bits */
        return sign ? -mag : mag;
    }
    if (exp == 31)
        return cpu_bits_f32(sign | 0x7f800000u | (mant << 13));
    return cpu_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline uint16_t cpu_f32_to_bf16(float f)
{
    uint32_t x = cpu_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and non-zero */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline float cpu_bf16_to_f32(uint16_t b)
{
    return cpu_bits_f32((uint32_t)b << 16);
}

/* Element i of an array of `dtype` at `base`, as FP32. */
static inline float cpu_load(const void *base, enum gan_dtype dtype, int64_t i)
{
    switch (dtype) {
    case GAN_F16: return cpu_f16_to_f32(((const uint16_t *)base)[i]);
    case GAN_BF16: return cpu_bf16_to_f32(((const uint16_t *)base)[i]);
    case GAN_I32: return (float)((const int32_t *)base)[i];
    case GAN_U32: return (float)((const uint32_t *)base)[i];
    case GAN_F32:
    default: return ((const float *)base)[i];
    }
}

/* Stores v as element i of an array of `dtype`, rounding to nearest even. */
static inline void cpu_store(void *base, enum gan_dtype dtype, int64_t i, float v)
{
    switch (dtype) {
    case GAN_F16: ((uint16_t *)base)[i] = cpu_f32_to_f16(v); break;
    case GAN_BF16: ((uint16_t *)base)[i] = cpu_f32_to_bf16(v); break;
    case GAN_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case GAN_U32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case GAN_F32:
    default: ((float *)base)[i] = v; break;
    }
}

/* True for the float types (F32, F16, BF16). */
static inline int cpu_is_float(enum gan_dtype dtype)
{
    return dtype == GAN_F32 || dtype == GAN_F16 || dtype == GAN_BF16;
}

#endif
