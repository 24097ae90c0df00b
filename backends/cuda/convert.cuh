/* SPDX-License-Identifier: MIT */
/* convert.cuh — device-side FP32 ↔ FP16/BF16 conversion that gives the CPU backend's bits
 * exactly (nearest even, subnormals, overflow to inf, NaN payloads), and typed loads and stores. */
#ifndef GANCTL_CUDA_CONVERT_CUH
#define GANCTL_CUDA_CONVERT_CUH

#include <stdint.h>
#include <ganctl/dtype.h>

/* Why not the hardware conversions (__float2half_rn and friends): they round finite
 * values the same way, but turn every NaN into one canonical NaN, where the CPU keeps
 * the sign and top payload bits. Doing it on the integer bits costs a few instructions
 * in kernels that wait on memory anyway, and makes "the same bits on every backend"
 * hold for every input. */

__device__ __forceinline__ uint16_t dev_f32_to_f16(float f)
{
    uint32_t x = __float_as_uint(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf stays inf; NaN stays a quiet NaN with its top payload */
        return (uint16_t)(sign | 0x7c00u |
                          (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u) /* 65520 and up round past 65504 */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) { /* a normal FP16: rebias the exponent, round on bit 13 */
        uint32_t lsb = (ax >> 13) & 1u;
        return (uint16_t)(sign | ((ax - 0x38000000u + 0xfffu + lsb) >> 13));
    }
    if (ax <= 0x33000000u) /* at most half the smallest subnormal: ties go to even 0 */
        return sign;
    /* A subnormal FP16: |f| · 2^24 rounded to nearest even. */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - (ax >> 23);
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return (uint16_t)(sign | r);
}

__device__ __forceinline__ float dev_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        float mag = (float)mant * 0x1p-24f; /* exact, and a normal FP32 */
        return sign ? -mag : mag;
    }
    if (exp == 31)
        return __uint_as_float(sign | 0x7f800000u | (mant << 13));
    return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

__device__ __forceinline__ uint16_t dev_f32_to_bf16(float f)
{
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and non-zero */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

__device__ __forceinline__ float dev_bf16_to_f32(uint16_t b)
{
    return __uint_as_float((uint32_t)b << 16);
}

/* Element i of a float array of `dtype` (F32, F16 or BF16) at `base`, as FP32. */
__device__ __forceinline__ float dev_load(const void *base, int dtype, int64_t i)
{
    switch (dtype) {
    case GAN_F16: return dev_f16_to_f32(((const uint16_t *)base)[i]);
    case GAN_BF16: return dev_bf16_to_f32(((const uint16_t *)base)[i]);
    default: return ((const float *)base)[i];
    }
}

/* Stores v as element i of a float array of `dtype`, rounding to nearest even. */
__device__ __forceinline__ void dev_store(void *base, int dtype, int64_t i, float v)
{
    switch (dtype) {
    case GAN_F16: ((uint16_t *)base)[i] = dev_f32_to_f16(v); break;
    case GAN_BF16: ((uint16_t *)base)[i] = dev_f32_to_bf16(v); break;
    default: ((float *)base)[i] = v; break;
    }
}

#endif
