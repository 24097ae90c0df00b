/* SPDX-License-Identifier: MIT */
/* avx512_lanes.h — sixteen FP32 lanes loaded from and stored to F32, F16 or BF16 memory
 * with AVX-512, rounding exactly as convert.h does. For the files that compile AVX-512
 * code in functions marked with AVX512_LANES_TARGET; include only on x86. */
#ifndef GANCTL_CPU_AVX512_LANES_H
#define GANCTL_CPU_AVX512_LANES_H

#include <immintrin.h>
#include <stdint.h>
#include <ganctl/dtype.h>

#define AVX512_LANES_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx2,avx,f16c")))

/* The lanes of the block at element i of an n-element run: all sixteen, or the n − i
 * that are left (masked loads and stores touch no memory in the others). */
static inline __mmask16 avx512_lanes(int64_t i, int64_t n)
{
    return n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1u);
}

/* FP32 → BF16 on 16 lanes by convert.h's integer rule: round to nearest even by adding
 * 0x7fff plus the kept part's lowest bit; a NaN keeps its top bits with the quiet bit set. */
AVX512_LANES_TARGET
static inline __m256i avx512_f32_to_bf16(__m512 v)
{
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    __m512i b = _mm512_castps_si512(v);
    __m512i hi = _mm512_srli_epi32(b, 16);
    __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                             _mm512_and_si512(hi, _mm512_set1_epi32(1)))),
        16);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, abs_mask), inf);
    __m512i r = _mm512_mask_blend_epi32(nan, rounded,
                                        _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r); /* every lane is below 2^16: truncation keeps it */
}

/* The lanes of `m` from element i of p (type dt), as FP32; the other lanes are 0.
 * VCVTPH2PS quiets a signalling F16 NaN where convert.h keeps its bits: callers that
 * could pass one on unchanged to FP32 memory do not use these lanes for F16. */
/* Sixteen F16 or BF16 values, widened exactly. */
AVX512_LANES_TARGET
static inline __m512 avx512_widen16(enum gan_dtype dt, __m256i h)
{
    return dt == GAN_F16 ? _mm512_cvtph_ps(h)
                         : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

AVX512_LANES_TARGET
static inline __m512 avx512_load(const void *p, enum gan_dtype dt, int64_t i, __mmask16 m)
{
    if (dt == GAN_F16 || dt == GAN_BF16)
        return avx512_widen16(dt, _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}

/* Stores the lanes of `m` to element i of p (type dt), rounding to nearest even. */
AVX512_LANES_TARGET
static inline void avx512_store(void *p, enum gan_dtype dt, int64_t i, __mmask16 m, __m512 v)
{
    if (dt == GAN_F32) {
        _mm512_mask_storeu_ps((float *)p + i, m, v);
        return;
    }
    __m256i h = dt == GAN_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)
                              : avx512_f32_to_bf16(v);
    /* Narrowed in a register, then stored: left to itself the compiler folds the two
     * into VPMOVDW's (or VCVTPS2PH's) masked form with a memory operand, which AMD's
     * Zen 4 runs in microcode: a loop of BF16 stores ran 1.6 times slower so. */
    __asm__("" : "+v"(h));
    _mm256_mask_storeu_epi16((uint16_t *)p + i, m, h);
}

/* v as a store to dtype dt and a load back give it (avx512_store, avx512_load), rounded
 * and widened in registers: the same conversions, without the trip through memory. */
AVX512_LANES_TARGET
static inline __m512 avx512_stored(enum gan_dtype dt, __m512 v)
{
    if (dt == GAN_F16)
        return avx512_widen16(dt, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    if (dt == GAN_BF16)
        return avx512_widen16(dt, avx512_f32_to_bf16(v));
    return v;
}

/* The upper 16 bits of each lane of `m` to 16-bit element i of p: a value widened from
 * BF16 stored back bit for bit, a signalling NaN included; narrowed in a register, as
 * avx512_store does. */
AVX512_LANES_TARGET
static inline void avx512_store_upper_bits(void *p, int64_t i, __mmask16 m, __m512 v)
{
    __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
    __asm__("" : "+v"(h));
    _mm256_mask_storeu_epi16((uint16_t *)p + i, m, h);
}

#endif
