/* SPDX-License-Identifier: MIT */
/* convert.h — FP32 ↔ FP16/BF16 conversion with round-to-nearest-even, subnormals, signed
 * zero, overflow to ±inf and NaN payloads kept, and typed element loads and stores (FP8
 * included, through fp8.h). */
#ifndef GANCTL_COMMON_CONVERT_H
#define GANCTL_COMMON_CONVERT_H

#include <stdint.h>
#include <ganctl/dtype.h>

#include "hostdev.h"
#include "fp8.h"

/* Done on the integer bits rather than with the hardware conversions (F16C on the CPU,
 * __float2half_rn on the GPU): those round finite values the same way but treat NaN
 * payloads each their own way, and "the same bits on every backend" must hold for every
 * input. The CPU's vector paths are proved equal to these functions by the tests. */

GAN_HD static inline uint16_t gan_f32_to_f16(float f)
{
    uint32_t x = gan_f32_bits(f);
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
    uint32_t midway = 1u << (shift - 1u);
    if (rem > midway || (rem == midway && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

GAN_HD static inline float gan_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0) {
        float mag = (float)mant * 0x1p-24f; /* exact: at most 10 significant bits */
        return sign ? -mag : mag;
    }
    if (exp == 31)
        return gan_bits_f32(sign | 0x7f800000u | (mant << 13));
    return gan_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

GAN_HD static inline uint16_t gan_f32_to_bf16(float f)
{
    uint32_t x = gan_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and non-zero */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

GAN_HD static inline float gan_bf16_to_f32(uint16_t b)
{
    return gan_bits_f32((uint32_t)b << 16);
}

/* The stored bits of FP32 value v in float type `dtype`, rounded to nearest even (an
 * FP8 type without saturation: gan_fp8_bits has the choice). */
GAN_HD static inline uint32_t gan_float_bits(enum gan_dtype dtype, float v)
{
    switch (dtype) {
    case GAN_F16: return gan_f32_to_f16(v);
    case GAN_BF16: return gan_f32_to_bf16(v);
    case GAN_F8E4M3: case GAN_F8E5M2: return gan_fp8_bits(dtype, v, 0);
    default: return gan_f32_bits(v);
    }
}

/* The value of stored bits b of float type `dtype`, exactly. */
GAN_HD static inline float gan_bits_value(enum gan_dtype dtype, uint32_t b)
{
    switch (dtype) {
    case GAN_F16: return gan_f16_to_f32((uint16_t)b);
    case GAN_BF16: return gan_bf16_to_f32((uint16_t)b);
    case GAN_F8E4M3: case GAN_F8E5M2: return gan_fp8_decode(dtype, b);
    default: return gan_bits_f32(b);
    }
}

/* Element i of an array of `dtype` at `base`, as FP32. */
GAN_HD static inline float gan_load(const void *base, enum gan_dtype dtype, int64_t i)
{
    switch (dtype) {
    case GAN_F16: return gan_f16_to_f32(((const uint16_t *)base)[i]);
    case GAN_BF16: return gan_bf16_to_f32(((const uint16_t *)base)[i]);
    case GAN_F8E4M3: case GAN_F8E5M2: return gan_fp8_decode(dtype, ((const uint8_t *)base)[i]);
    case GAN_I32: return (float)((const int32_t *)base)[i];
    case GAN_U32: return (float)((const uint32_t *)base)[i];
    case GAN_F32:
    default: return ((const float *)base)[i];
    }
}

/* Stores v as element i of an array of `dtype`, rounding to nearest even. */
GAN_HD static inline void gan_store(void *base, enum gan_dtype dtype, int64_t i, float v)
{
    switch (dtype) {
    case GAN_F16: ((uint16_t *)base)[i] = gan_f32_to_f16(v); break;
    case GAN_BF16: ((uint16_t *)base)[i] = gan_f32_to_bf16(v); break;
    case GAN_F8E4M3: case GAN_F8E5M2:
        ((uint8_t *)base)[i] = (uint8_t)gan_fp8_bits(dtype, v, 0);
        break;
    case GAN_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case GAN_U32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case GAN_F32:
    default: ((float *)base)[i] = v; break;
    }
}

/* Element i of an array of `dtype` as its stored bits (8, 16 or 32 of them), and back:
 * for the kernels that classify or copy values without converting them. */
GAN_HD static inline uint32_t gan_load_bits(const void *base, enum gan_dtype dtype, int64_t i)
{
    if (dtype == GAN_F16 || dtype == GAN_BF16)
        return ((const uint16_t *)base)[i];
    if (gan_is_fp8(dtype))
        return ((const uint8_t *)base)[i];
    return ((const uint32_t *)base)[i];
}

GAN_HD static inline void gan_store_bits(void *base, enum gan_dtype dtype, int64_t i,
                                         uint32_t b)
{
    if (dtype == GAN_F16 || dtype == GAN_BF16)
        ((uint16_t *)base)[i] = (uint16_t)b;
    else if (gan_is_fp8(dtype))
        ((uint8_t *)base)[i] = (uint8_t)b;
    else
        ((uint32_t *)base)[i] = b;
}

#endif
