/* SPDX-License-Identifier: MIT */
/* dtype.h — the element types a tensor or device buffer can hold.
 * 16-bit and 8-bit float types are storage formats; arithmetic on them happens in FP32. */
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
    /* The two 8-bit floats of the OCP 8-bit floating point specification (ABI 1.5;
     * appended, so the values above are those of every earlier minor version). Only
     * casts and copies take them so far: every other kernel refuses them. */
    GAN_F8E4M3 = 5, /* E4M3 (OCP "E4M3FN"): bias 7, max 448, smallest subnormal 2^-9,
                       no infinities, NaN = S.1111.111 (0x7f, 0xff) */
    GAN_F8E5M2 = 6, /* E5M2: bias 15, max 57344, smallest subnormal 2^-16, IEEE
                       infinities and NaNs (FP16's top byte) */
    GAN_DTYPE_COUNT
};

/* Bytes per element, or 0 for a value outside the enum. Inline so that a plugin
 * needs nothing from libganctl to use it. */
static inline size_t gan_dtype_size(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: case GAN_I32: case GAN_U32: return 4;
    case GAN_F16: case GAN_BF16: return 2;
    case GAN_F8E4M3: case GAN_F8E5M2: return 1;
    default: return 0;
    }
}

/* The safetensors spelling ("F32", "F16", "BF16", "I32", "U32", "F8_E4M3",
 * "F8_E5M2"), or NULL. */
static inline const char *gan_dtype_name(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: return "F32";
    case GAN_F16: return "F16";
    case GAN_BF16: return "BF16";
    case GAN_I32: return "I32";
    case GAN_U32: return "U32";
    case GAN_F8E4M3: return "F8_E4M3";
    case GAN_F8E5M2: return "F8_E5M2";
    default: return NULL;
    }
}

#ifdef __cplusplus
}
#endif
#endif
