/* SPDX-License-Identifier: MIT */
/* fp8.h — the two 8-bit floats of the OCP 8-bit floating point specification, E4M3 and
 * E5M2: FP32 → FP8 rounded to nearest even, saturating or not, and FP8 → FP32 exactly. */
#ifndef GANCTL_COMMON_FP8_H
#define GANCTL_COMMON_FP8_H

#include <stdint.h>
#include <ganctl/dtype.h>

#include "hostdev.h"

/* E4M3 (s.eeee.mmm, bias 7) spends its all-ones exponent on numbers, keeping only
 * S.1111.111 for NaN: no infinity, largest 1.75 · 2^8 = 448. E5M2 (s.eeeee.mm, bias 15)
 * is IEEE-like, FP16's top byte: exponent 31 is inf and NaN, largest 1.75 · 2^15 =
 * 57344. Both have subnormals, down to 2^-9 and 2^-16.
 *
 * Done on the integer bits of the FP32 input, as convert.h's 16-bit conversions are,
 * so that the CPU and the GPU give the same bits for every input; the hardware
 * conversions (cvt.rn.satfinite.e4m3x2.f32) exist only on recent GPUs and only in the
 * saturating form. The CPU's vector paths are proved equal to these functions by the
 * tests, and these to an independent decoding and to ml_dtypes. */

/* What the conversions need of a format, as FP32 bit patterns where a constant bounds
 * |x|. The vector paths of the CPU backend use the same numbers. */
struct gan_fp8_format {
    uint32_t mant_bits;      /* 3 (E4M3) or 2 (E5M2) */
    uint32_t rebias;         /* (127 − bias) << 23: FP32's exponent less the format's */
    uint32_t min_normal;     /* 2^(1 − bias), the smallest normal */
    uint32_t zero_at_most;   /* 2^(−bias − m), half the smallest subnormal: at or below
                                it, |x| rounds to 0 (the tie goes to even, 0) */
    uint32_t sub_shift;      /* 151 − bias − m: a subnormal result is FP32's 24-bit
                                significand shifted right by sub_shift − exponent */
    uint32_t overflow_above; /* above this |x| rounds past the largest finite value */
    uint32_t max_code;       /* the largest finite value: 0x7e (448), 0x7b (57344) */
    uint32_t overflow_code;  /* an overflow without saturation: NaN 0x7f, inf 0x7c */
    uint32_t nan_code;       /* a NaN: 0x7f; 0x7e, E5M2's quiet NaN ... */
    uint32_t nan_payload;    /* ... with FP32's top payload bit (bit 21) kept: 1 or 0 */
};

GAN_HD static inline struct gan_fp8_format gan_fp8_format_of(enum gan_dtype dtype)
{
    struct gan_fp8_format f;
    if (dtype == GAN_F8E5M2) {
        f.mant_bits = 2;
        f.rebias = 112u << 23;
        f.min_normal = 113u << 23;       /* 2^-14 */
        f.zero_at_most = 110u << 23;     /* 2^-17 */
        f.sub_shift = 134;
        /* 57344 = 1.11b · 2^15 has an odd significand, so the midpoint to 2^16,
         * 61440 = 0x47700000, rounds up to 2^16: it overflows already. */
        f.overflow_above = 0x476fffffu;
        f.max_code = 0x7b;
        f.overflow_code = 0x7c;
        f.nan_code = 0x7e;
        f.nan_payload = 1;
    } else {
        f.mant_bits = 3;
        f.rebias = 120u << 23;
        f.min_normal = 121u << 23;       /* 2^-6 */
        f.zero_at_most = 117u << 23;     /* 2^-10 */
        f.sub_shift = 141;
        /* 448 = 1.110b · 2^8 has an even significand, so the midpoint to the next step
         * (480, which would be the NaN pattern), 464 = 0x43e80000, rounds down to 448. */
        f.overflow_above = 0x43e80000u;
        f.max_code = 0x7e;
        f.overflow_code = 0x7f;
        f.nan_code = 0x7f;
        f.nan_payload = 0;
    }
    return f;
}

/* |x|'s FP32 bits ax, above zero_at_most and not above overflow_above, as the format's
 * magnitude bits rounded to nearest even. A result that rounds up across a binade (or
 * from the subnormals to the smallest normal) carries into the exponent by itself. */
GAN_HD static inline uint32_t gan_fp8_round(const struct gan_fp8_format *f, uint32_t ax)
{
    if (ax >= f->min_normal) {
        uint32_t shift = 23u - f->mant_bits;
        uint32_t lsb = (ax >> shift) & 1u;
        return (ax - f->rebias + (1u << (shift - 1u)) - 1u + lsb) >> shift;
    }
    /* A subnormal: round(|x| / smallest subnormal). ax > zero_at_most, so the exponent
     * is at least sub_shift − 24 and the shift at most 24. */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = f->sub_shift - (ax >> 23);
    uint32_t r = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t midway = 1u << (shift - 1u);
    if (rem > midway || (rem == midway && (r & 1u)))
        r++;
    return r;
}

/* FP32 value v in the format, rounded to nearest even; `saturate` as GAN_CAST_SATURATE
 * (backend.h) says: ±max for a finite overflow and for ±inf, instead of the format's
 * overflow (inf for E5M2, NaN for E4M3). NaN stays NaN, with its sign. */
GAN_HD static inline uint32_t gan_fp8_encode(const struct gan_fp8_format *f, float v,
                                             int saturate)
{
    uint32_t x = gan_f32_bits(v);
    uint32_t sign = (x >> 24) & 0x80u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | f->nan_code | ((ax >> 21) & f->nan_payload);
    if (ax > f->overflow_above) /* ±inf too */
        return sign | (saturate ? f->max_code : f->overflow_code);
    if (ax <= f->zero_at_most)
        return sign;
    return sign | gan_fp8_round(f, ax);
}

/* The exact FP32 value of FP8 bits b. A NaN keeps its sign; E5M2's keeps its payload
 * where FP16 would (bits 22 and 21), signalling or not, as convert.h keeps FP16's. */
GAN_HD static inline float gan_fp8_decode(enum gan_dtype dtype, uint32_t b)
{
    const int e5m2 = dtype == GAN_F8E5M2;
    const uint32_t mant_bits = e5m2 ? 2u : 3u;
    uint32_t sign = (b & 0x80u) << 24;
    uint32_t exp = (b & 0x7fu) >> mant_bits, mant = b & ((1u << mant_bits) - 1u);
    if (exp == 0) { /* exact: at most 3 significant bits, times a power of two */
        float mag = (float)mant * (e5m2 ? 0x1p-16f : 0x1p-9f);
        return sign ? -mag : mag;
    }
    if (e5m2 && exp == 31)
        return gan_bits_f32(sign | 0x7f800000u | (mant << 21));
    if (!e5m2 && (b & 0x7fu) == 0x7fu)
        return gan_bits_f32(sign | 0x7fc00000u);
    /* FP32's exponent is the format's plus 127 − bias; the significand moves up. */
    return gan_bits_f32(sign |
                        (((b & 0x7fu) << (23u - mant_bits)) + ((e5m2 ? 112u : 120u) << 23)));
}

/* The stored bits of FP32 value v in FP8 type `dtype`. */
GAN_HD static inline uint32_t gan_fp8_bits(enum gan_dtype dtype, float v, int saturate)
{
    struct gan_fp8_format f = gan_fp8_format_of(dtype);
    return gan_fp8_encode(&f, v, saturate);
}

/* Whether FP32 value v, finite, lies beyond what rounds to FP8 type dtype's largest
 * finite value: what a cast to it counts as an overflow, saturated or not. */
GAN_HD static inline int gan_fp8_overflows(enum gan_dtype dtype, float v)
{
    uint32_t ax = gan_f32_bits(v) & 0x7fffffffu;
    return ax < 0x7f800000u && ax > gan_fp8_format_of(dtype).overflow_above;
}

#endif
