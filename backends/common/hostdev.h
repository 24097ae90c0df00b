/* SPDX-License-Identifier: MIT */
/* hostdev.h — what lets one inline function compile as C, as CUDA host code and as CUDA
 * device code: the GAN_HD qualifier, float bit casts and explicitly rounded arithmetic. */
#ifndef GANCTL_COMMON_HOSTDEV_H
#define GANCTL_COMMON_HOSTDEV_H

#include <stdint.h>
#include <string.h>
#include <ganctl/dtype.h>

/* The per-element functions of backends/common are written once and compiled by the C
 * compiler for the CPU backend and its tests, and by nvcc for the CUDA kernels, so the
 * arithmetic the CPU tests check is the arithmetic the GPU runs. */
#ifdef __CUDACC__
#define GAN_HD __host__ __device__
#else
#define GAN_HD
#endif

GAN_HD static inline uint32_t gan_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
#endif
}

GAN_HD static inline float gan_bits_f32(uint32_t x)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(x);
#else
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
#endif
}

/* Products and sums rounded once each, never fused into an FMA: the CPU build does not
 * contract them (ISO C mode), and on the device the intrinsics say so even where a
 * file is compiled without -fmad=false. */
GAN_HD static inline float gan_fmul_rn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

GAN_HD static inline double gan_dmul_rn(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

GAN_HD static inline double gan_dadd_rn(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

/* The leading zero bits of a non-zero u. */
GAN_HD static inline int gan_clz32(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __clz((int)u);
#else
    return __builtin_clz(u);
#endif
}

/* True for the float types (F32, F16, BF16): the ones the kernels compute in. */
GAN_HD static inline int gan_is_float(enum gan_dtype dtype)
{
    return dtype == GAN_F32 || dtype == GAN_F16 || dtype == GAN_BF16;
}

/* True for the 8-bit floats (E4M3, E5M2): storage only, which casts and copies take and
 * the computing kernels refuse, so gan_is_float stays false for them. */
GAN_HD static inline int gan_is_fp8(enum gan_dtype dtype)
{
    return dtype == GAN_F8E4M3 || dtype == GAN_F8E5M2;
}

/* True for every type a float-to-float cast takes: the float types and FP8. */
GAN_HD static inline int gan_is_cast_float(enum gan_dtype dtype)
{
    return gan_is_float(dtype) || gan_is_fp8(dtype);
}

#endif
