/* SPDX-License-Identifier: MIT */
/* dtype.h — the element types a tensor or device buffer can hold.
 * 16-bit types are storage formats; arithmetic on them happens in FP32. */
#ifndef GANCTL_DTYPE_H
#define GANCTL_DTYPE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gan_dtype {
    GAN_F32 = 0,  /* IEEE 754 binary32 */
    GAN_F16 = 1,  /* IEEE 754 binary16: max 65504, smallest subnormal 2^-24 */
    GAN_BF16 = 2, /* bfloat16: FP32's exponent range, 8 significant bits */
    GAN_I32 = 3,  /* 32-bit signed integer (indices, counts) */
    GAN_U32 = 4,  /* 32-bit unsigned integer (raw random bits) */
    GAN_DTYPE_COUNT
};

/* Bytes per element, or 0 for a value outside the enum. Inline so that a plugin
 * needs nothing from libganctl to use it. */
static inline size_t gan_dtype_size(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: case GAN_I32: case GAN_U32: return 4;
    case GAN_F16: case GAN_BF16: return 2;
    default: return 0;
    }
}

/* The safetensors spelling ("F32", "F16", "BF16", "I32", "U32"), or NULL. */
static inline const char *gan_dtype_name(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: return "F32";
    case GAN_F16: return "F16";
    case GAN_BF16: return "BF16";
    case GAN_I32: return "I32";
    case GAN_U32: return "U32";
    default: return NULL;
    }
}

#ifdef __cplusplus
}
#endif
#endif
