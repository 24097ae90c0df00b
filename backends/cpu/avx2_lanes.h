/* SPDX-License-Identifier: MIT */
/* avx2_lanes.h — eight FP32 lanes loaded from and stored to F32, F16 or BF16 memory with
 * AVX2 and F16C, rounding exactly as convert.h does: avx512_lanes.h's rules on a CPU
 * without AVX-512. For the files that compile AVX2 code in functions marked with
 * AVX2_LANES_TARGET; include only on x86. */
#ifndef GANCTL_CPU_AVX2_LANES_H
#define GANCTL_CPU_AVX2_LANES_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <ganctl/dtype.h>

#define AVX2_LANES_TARGET __attribute__((target("avx2,avx,f16c")))

/* The lanes of the block at element i of an n-element run, as a count: all eight, or
 * the n − i that are left. AVX2 has masked FP32 loads and stores but no 16-bit ones,
 * so a short block of a 16-bit run goes through eight elements on the stack. */
static inline int avx2_lanes(int64_t i, int64_t n)
{
    return n - i >= 8 ? 8 : (int)(n - i);
}

/* All ones in the first `count` lanes: the mask of the FP32 masked loads and stores. */
AVX2_LANES_TARGET
static inline __m256i avx2_lane_mask(int count)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Eight 32-bit lanes, each below 2^16, as eight 16-bit ones: the unsigned-saturating
 * pack keeps them; it works within 128-bit halves, so the quadwords are put back in
 * order. */
AVX2_LANES_TARGET
static inline __m128i avx2_pack_low16(__m256i r)
{
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
}

/* FP32 → BF16 on 8 lanes by convert.h's integer rule: round to nearest even by adding
 * 0x7fff plus the kept part's lowest bit; a NaN keeps its top bits with the quiet bit set. */
AVX2_LANES_TARGET
static inline __m128i avx2_f32_to_bf16(__m256 v)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    __m256i b = _mm256_castps_si256(v);
    __m256i hi = _mm256_srli_epi32(b, 16);
    __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                             _mm256_and_si256(hi, _mm256_set1_epi32(1)))),
        16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf);
    __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return avx2_pack_low16(r);
}

/* `count` 16-bit elements from p, zero in the lanes past them. */
AVX2_LANES_TARGET
static inline __m128i avx2_load_u16(const uint16_t *p, int count)
{
    if (count == 8)
        return _mm_loadu_si128((const __m128i *)(const void *)p);
    uint16_t part[8] = { 0 };
    memcpy(part, p, (size_t)count * sizeof *p);
    return _mm_loadu_si128((const __m128i *)(const void *)part);
}

AVX2_LANES_TARGET
static inline void avx2_store_u16(uint16_t *p, int count, __m128i h)
{
    if (count == 8) {
        _mm_storeu_si128((__m128i *)(void *)p, h);
        return;
    }
    uint16_t part[8];
    _mm_storeu_si128((__m128i *)(void *)part, h);
    memcpy(p, part, (size_t)count * sizeof *p);
}

/* The upper halves of the first `count` lanes, truncated (no rounding). */
AVX2_LANES_TARGET
static inline void avx2_store_bf16_bits(uint16_t *p, int count, __m256 v)
{
    avx2_store_u16(p, count, avx2_pack_low16(_mm256_srli_epi32(_mm256_castps_si256(v), 16)));
}

AVX2_LANES_TARGET
static inline __m256 avx2_load_f32(const float *p, int count)
{
    return count == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, avx2_lane_mask(count));
}

AVX2_LANES_TARGET
static inline void avx2_store_f32(float *p, int count, __m256 v)
{
    if (count == 8)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, avx2_lane_mask(count), v);
}

/* The first `count` lanes from element i of p (type dt), as FP32; the others are 0.
 * VCVTPH2PS quiets a signalling F16 NaN where convert.h keeps its bits: callers that
 * could pass one on unchanged to FP32 memory do not use these lanes for F16. */
/* Eight F16 or BF16 values, widened exactly. */
AVX2_LANES_TARGET
static inline __m256 avx2_widen16(enum gan_dtype dt, __m128i h)
{
    return dt == GAN_F16 ? _mm256_cvtph_ps(h)
                         : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

AVX2_LANES_TARGET
static inline __m256 avx2_load(const void *p, enum gan_dtype dt, int64_t i, int count)
{
    if (dt == GAN_F16 || dt == GAN_BF16)
        return avx2_widen16(dt, avx2_load_u16((const uint16_t *)p + i, count));
    return avx2_load_f32((const float *)p + i, count);
}

/* Stores the first `count` lanes to element i of p (type dt), rounding to nearest even. */
AVX2_LANES_TARGET
static inline void avx2_store(void *p, enum gan_dtype dt, int64_t i, int count, __m256 v)
{
    if (dt == GAN_F16)
        avx2_store_u16((uint16_t *)p + i, count, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    else if (dt == GAN_BF16)
        avx2_store_u16((uint16_t *)p + i, count, avx2_f32_to_bf16(v));
    else
        avx2_store_f32((float *)p + i, count, v);
}

/* v as a store to dtype dt and a load back give it (avx2_store, avx2_load), rounded and
 * widened in registers: the same conversions, without the trip through memory. */
AVX2_LANES_TARGET
static inline __m256 avx2_stored(enum gan_dtype dt, __m256 v)
{
    if (dt == GAN_F16)
        return avx2_widen16(dt, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    if (dt == GAN_BF16)
        return avx2_widen16(dt, avx2_f32_to_bf16(v));
    return v;
}

#endif
