/* SPDX-License-Identifier: MIT */
/* cast_fp8.c — casts with an FP8 side (E4M3, E5M2): FP32 ↔ FP8 at each vector level,
 * other float types staged through FP32, and the counts of what overflowed, underflowed
 * or became subnormal. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define CPU_FP8_X86 1
#include "avx512_lanes.h"
#endif

#include "cpu_backend.h"
#include "convert.h"
#include "../common/cast_ops.h"

/* Every level computes fp8.h's functions (gan_fp8_encode, gan_fp8_decode): the portable
 * one calls them, the vector ones repeat their integer steps on 8 or 16 lanes, with each
 * branch of the scalar code computed for every lane and the right one chosen by a
 * compare. tests/unit/check_cast_fp8.c proves every level against the scalar functions
 * and an independent reference, on every pattern and every rounding boundary. */

/* ---------------------------------------------------------------- portable */

static void f32_to_fp8_portable(const float *x, uint8_t *y, size_t n, enum gan_dtype dt,
                                int saturate)
{
    const struct gan_fp8_format f = gan_fp8_format_of(dt);
    for (size_t i = 0; i < n; i++)
        y[i] = (uint8_t)gan_fp8_encode(&f, x[i], saturate);
}

static void fp8_to_f32_portable(const uint8_t *x, float *y, size_t n, enum gan_dtype dt)
{
    for (size_t i = 0; i < n; i++)
        y[i] = gan_fp8_decode(dt, x[i]);
}

/* What decoding needs beyond struct gan_fp8_format: gan_fp8_decode's constants. */
struct fp8_decoding {
    uint32_t mant_bits;
    uint32_t rebias;         /* (127 − bias) << 23 */
    float sub_step;          /* the smallest subnormal: 2^-9, 2^-16 */
    uint32_t special_from;   /* magnitude bits from which a pattern is inf or NaN */
    uint32_t special_base;   /* their FP32 bits: E4M3's NaN, or E5M2's exponent 255 */
    uint32_t special_mant;   /* the mantissa bits kept as payload (E5M2: both) */
};

static struct fp8_decoding fp8_decoding_of(enum gan_dtype dt)
{
    if (dt == GAN_F8E5M2)
        return (struct fp8_decoding){ 2, 112u << 23, 0x1p-16f, 0x7c, 0x7f800000u, 3 };
    return (struct fp8_decoding){ 3, 120u << 23, 0x1p-9f, 0x7f, 0x7fc00000u, 0 };
}

#ifdef CPU_FP8_X86
/* ---------------------------------------------------------------- 8 lanes (AVX2) */

/* gan_fp8_encode on eight FP32 lanes given as bits; each lane's result in its low byte. */
__attribute__((target("avx2")))
static inline __m256i encode8(__m256i x, const struct gan_fp8_format *f, int saturate)
{
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(x, 24), _mm256_set1_epi32(0x80));

    /* normal: rebias, add half an ulp less one plus the kept lowest bit, shift */
    const __m256i shift = _mm256_set1_epi32((int)(23u - f->mant_bits));
    __m256i lsb = _mm256_and_si256(_mm256_srlv_epi32(ax, shift), one);
    __m256i normal = _mm256_srlv_epi32(
        _mm256_add_epi32(_mm256_sub_epi32(ax, _mm256_set1_epi32((int)f->rebias)),
                         _mm256_add_epi32(_mm256_set1_epi32((int)((1u << (22u - f->mant_bits)) - 1u)),
                                          lsb)),
        shift);

    /* subnormal: the significand shifted by a per-lane count, rounded to nearest even
     * from the remainder (counts of 32 or more give 0 in lanes that are not subnormal) */
    __m256i mant = _mm256_or_si256(_mm256_and_si256(ax, _mm256_set1_epi32(0x7fffff)),
                                   _mm256_set1_epi32(0x800000));
    __m256i sh = _mm256_sub_epi32(_mm256_set1_epi32((int)f->sub_shift), _mm256_srli_epi32(ax, 23));
    __m256i r = _mm256_srlv_epi32(mant, sh);
    __m256i rem = _mm256_sub_epi32(mant, _mm256_sllv_epi32(r, sh));
    __m256i midway = _mm256_sllv_epi32(one, _mm256_sub_epi32(sh, one));
    __m256i up = _mm256_or_si256(
        _mm256_cmpgt_epi32(rem, midway),
        _mm256_and_si256(_mm256_cmpeq_epi32(rem, midway),
                         _mm256_cmpeq_epi32(_mm256_and_si256(r, one), one)));
    __m256i sub = _mm256_sub_epi32(r, up); /* up is −1 where the result rounds up */

    /* every magnitude below is under 2^31, so signed compares order them */
    __m256i res = _mm256_blendv_epi8(
        sub, normal, _mm256_cmpgt_epi32(ax, _mm256_set1_epi32((int)f->min_normal - 1)));
    res = _mm256_and_si256(res, _mm256_cmpgt_epi32(ax, _mm256_set1_epi32((int)f->zero_at_most)));
    res = _mm256_blendv_epi8(
        res, _mm256_set1_epi32((int)(saturate ? f->max_code : f->overflow_code)),
        _mm256_cmpgt_epi32(ax, _mm256_set1_epi32((int)f->overflow_above)));
    __m256i nan = _mm256_or_si256(
        _mm256_set1_epi32((int)f->nan_code),
        _mm256_and_si256(_mm256_srli_epi32(ax, 21), _mm256_set1_epi32((int)f->nan_payload)));
    res = _mm256_blendv_epi8(res, nan, _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000)));
    return _mm256_or_si256(res, sign);
}

__attribute__((target("avx2")))
static void f32_to_fp8_avx2(const float *x, uint8_t *y, size_t n, enum gan_dtype dt,
                            int saturate)
{
    const struct gan_fp8_format f = gan_fp8_format_of(dt);
    /* after the two packs, bytes 0–3 of each 128-bit half hold that half's four lanes */
    const __m256i gather = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i r = encode8(_mm256_loadu_si256((const __m256i *)(const void *)(x + i)), &f,
                            saturate);
        __m256i w = _mm256_packus_epi32(r, r); /* every lane is below 256: nothing clips */
        __m256i b = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(w, w), gather);
        _mm_storel_epi64((__m128i *)(void *)(y + i), _mm256_castsi256_si128(b));
    }
    _mm256_zeroupper(); /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave) */
    f32_to_fp8_portable(x + i, y + i, n - i, dt, saturate);
}

/* gan_fp8_decode on eight FP8 values widened to 32-bit lanes; FP32 bits out. */
__attribute__((target("avx2")))
static inline __m256i decode8(__m256i b, const struct fp8_decoding *d)
{
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x80)), 24);
    __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(0x7f));
    __m256i normal = _mm256_add_epi32(
        _mm256_sllv_epi32(mag, _mm256_set1_epi32((int)(23u - d->mant_bits))),
        _mm256_set1_epi32((int)d->rebias));
    /* exponent 0: the mantissa times the smallest subnormal, exact */
    __m256i sub = _mm256_castps_si256(
        _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(d->sub_step)));
    __m256i res = _mm256_blendv_epi8(
        normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(1 << d->mant_bits), mag));
    __m256i special = _mm256_or_si256(
        _mm256_set1_epi32((int)d->special_base),
        _mm256_slli_epi32(_mm256_and_si256(mag, _mm256_set1_epi32((int)d->special_mant)), 21));
    res = _mm256_blendv_epi8(res, special,
                             _mm256_cmpgt_epi32(mag, _mm256_set1_epi32((int)d->special_from - 1)));
    return _mm256_or_si256(res, sign);
}

__attribute__((target("avx2")))
static void fp8_to_f32_avx2(const uint8_t *x, float *y, size_t n, enum gan_dtype dt)
{
    const struct fp8_decoding d = fp8_decoding_of(dt);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(x + i)));
        _mm256_storeu_si256((__m256i *)(void *)(y + i), decode8(b, &d));
    }
    _mm256_zeroupper(); /* before the baseline ISA's tail (lanes_avx2.h, lanes_leave) */
    fp8_to_f32_portable(x + i, y + i, n - i, dt);
}

/* ---------------------------------------------------------------- 16 lanes (AVX-512) */

/* encode8's steps on sixteen lanes, with mask registers for the compares. */
AVX512_LANES_TARGET
static inline __m512i encode16(__m512i x, const struct gan_fp8_format *f, int saturate)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i ax = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(x, 24), _mm512_set1_epi32(0x80));

    const __m512i shift = _mm512_set1_epi32((int)(23u - f->mant_bits));
    __m512i lsb = _mm512_and_si512(_mm512_srlv_epi32(ax, shift), one);
    __m512i normal = _mm512_srlv_epi32(
        _mm512_add_epi32(_mm512_sub_epi32(ax, _mm512_set1_epi32((int)f->rebias)),
                         _mm512_add_epi32(_mm512_set1_epi32((int)((1u << (22u - f->mant_bits)) - 1u)),
                                          lsb)),
        shift);

    __m512i mant = _mm512_or_si512(_mm512_and_si512(ax, _mm512_set1_epi32(0x7fffff)),
                                   _mm512_set1_epi32(0x800000));
    __m512i sh = _mm512_sub_epi32(_mm512_set1_epi32((int)f->sub_shift), _mm512_srli_epi32(ax, 23));
    __m512i r = _mm512_srlv_epi32(mant, sh);
    __m512i rem = _mm512_sub_epi32(mant, _mm512_sllv_epi32(r, sh));
    __m512i midway = _mm512_sllv_epi32(one, _mm512_sub_epi32(sh, one));
    __mmask16 up = _mm512_cmpgt_epu32_mask(rem, midway) |
                   (_mm512_cmpeq_epu32_mask(rem, midway) &
                    _mm512_test_epi32_mask(r, one));
    __m512i sub = _mm512_mask_add_epi32(r, up, r, one);

    __m512i res = _mm512_mask_blend_epi32(
        _mm512_cmpge_epu32_mask(ax, _mm512_set1_epi32((int)f->min_normal)), sub, normal);
    res = _mm512_maskz_mov_epi32(
        _mm512_cmpgt_epu32_mask(ax, _mm512_set1_epi32((int)f->zero_at_most)), res);
    res = _mm512_mask_blend_epi32(
        _mm512_cmpgt_epu32_mask(ax, _mm512_set1_epi32((int)f->overflow_above)), res,
        _mm512_set1_epi32((int)(saturate ? f->max_code : f->overflow_code)));
    __m512i nan = _mm512_or_si512(
        _mm512_set1_epi32((int)f->nan_code),
        _mm512_and_si512(_mm512_srli_epi32(ax, 21), _mm512_set1_epi32((int)f->nan_payload)));
    res = _mm512_mask_blend_epi32(
        _mm512_cmpgt_epu32_mask(ax, _mm512_set1_epi32(0x7f800000)), res, nan);
    return _mm512_or_si512(res, sign);
}

/* The last block masked, so a short run does not end one element at a time. */
AVX512_LANES_TARGET
static void f32_to_fp8_avx512(const float *x, uint8_t *y, size_t n, enum gan_dtype dt,
                              int saturate)
{
    const struct gan_fp8_format f = gan_fp8_format_of(dt);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = avx512_lanes((int64_t)i, (int64_t)n);
        __m512i r = encode16(_mm512_maskz_loadu_epi32(m, x + i), &f, saturate);
        _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(r));
    }
}

AVX512_LANES_TARGET
static inline __m512i decode16(__m512i b, const struct fp8_decoding *d)
{
    __m512i sign = _mm512_slli_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0x80)), 24);
    __m512i mag = _mm512_and_si512(b, _mm512_set1_epi32(0x7f));
    __m512i normal = _mm512_add_epi32(
        _mm512_sllv_epi32(mag, _mm512_set1_epi32((int)(23u - d->mant_bits))),
        _mm512_set1_epi32((int)d->rebias));
    __m512i sub = _mm512_castps_si512(
        _mm512_mul_ps(_mm512_cvtepi32_ps(mag), _mm512_set1_ps(d->sub_step)));
    __m512i res = _mm512_mask_blend_epi32(
        _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(1 << d->mant_bits)), normal, sub);
    __m512i special = _mm512_or_si512(
        _mm512_set1_epi32((int)d->special_base),
        _mm512_slli_epi32(_mm512_and_si512(mag, _mm512_set1_epi32((int)d->special_mant)), 21));
    res = _mm512_mask_blend_epi32(
        _mm512_cmpge_epu32_mask(mag, _mm512_set1_epi32((int)d->special_from)), res, special);
    return _mm512_or_si512(res, sign);
}

AVX512_LANES_TARGET
static void fp8_to_f32_avx512(const uint8_t *x, float *y, size_t n, enum gan_dtype dt)
{
    const struct fp8_decoding d = fp8_decoding_of(dt);
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = avx512_lanes((int64_t)i, (int64_t)n);
        __m512i b = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, x + i));
        _mm512_mask_storeu_epi32(y + i, m, decode16(b, &d));
    }
}
#endif

/* ---------------------------------------------------------------- by level */

void cpu_fp8_encode(enum cpu_isa isa, const float *x, uint8_t *y, size_t n,
                    enum gan_dtype dt, int saturate)
{
#ifdef CPU_FP8_X86
    if (isa == CPU_ISA_AVX512) {
        f32_to_fp8_avx512(x, y, n, dt, saturate);
        return;
    }
    if (isa == CPU_ISA_F16C) {
        f32_to_fp8_avx2(x, y, n, dt, saturate);
        return;
    }
#else
    (void)isa;
#endif
    f32_to_fp8_portable(x, y, n, dt, saturate);
}

void cpu_fp8_decode(enum cpu_isa isa, const uint8_t *x, float *y, size_t n,
                    enum gan_dtype dt)
{
#ifdef CPU_FP8_X86
    if (isa == CPU_ISA_AVX512) {
        fp8_to_f32_avx512(x, y, n, dt);
        return;
    }
    if (isa == CPU_ISA_F16C) {
        fp8_to_f32_avx2(x, y, n, dt);
        return;
    }
#else
    (void)isa;
#endif
    fp8_to_f32_portable(x, y, n, dt);
}

/* ---------------------------------------------------------------- the kernel */

/* Elements converted at a time: an F16, BF16 or FP8 input is widened to FP32 in a
 * staging block on the stack (exactly), then rounded once into the output. */
#define FP8_BLOCK 256

struct fp8_job {
    enum cpu_isa isa;
    const unsigned char *x;
    unsigned char *y;
    enum gan_dtype xt, yt;
    int saturate, convert, count;
    struct gan_cast_tally part[CPU_MAX_PARTS];
};

/* n ≤ FP8_BLOCK elements of two different types. */
static void convert_block(const struct fp8_job *j, const unsigned char *xp,
                          unsigned char *yp, size_t n)
{
    float stage[FP8_BLOCK];
    const float *wide = stage;
    float *into = j->yt == GAN_F32 ? (float *)(void *)yp : stage;
    if (j->xt == GAN_F32)
        wide = (const float *)(const void *)xp;
    else if (gan_is_fp8(j->xt))
        cpu_fp8_decode(j->isa, xp, into, n, j->xt);
    else
        cpu_convert(j->isa, xp, j->xt, into, GAN_F32, n);
    if (j->yt == GAN_F32)
        return; /* decoded into y already */
    if (gan_is_fp8(j->yt))
        cpu_fp8_encode(j->isa, wide, yp, n, j->yt, j->saturate);
    else
        cpu_convert(j->isa, wide, GAN_F32, yp, j->yt, n);
}

/* The counting pass over a block already converted, by backends/common/cast_ops.h's
 * rules: classes from the stored bits, and an FP8 output's overflow from the input's
 * value. */
static void count_block(const struct fp8_job *j, const unsigned char *xp,
                        const unsigned char *yp, size_t n, struct gan_cast_tally *t)
{
    const int fp8_out = gan_is_fp8(j->yt) && j->xt != j->yt;
    for (size_t i = 0; i < n; i++) {
        uint32_t xb = gan_load_bits(xp, j->xt, (int64_t)i);
        enum gan_fclass cx = gan_fclass(j->xt, xb);
        if (j->xt == j->yt) {
            gan_cast_tally_float(t, cx, cx);
            continue;
        }
        enum gan_fclass cy = gan_fclass(j->yt, gan_load_bits(yp, j->yt, (int64_t)i));
        if (fp8_out)
            gan_cast_tally_fp8(t, cx, cy,
                               cx < GAN_FC_INF && gan_fp8_overflows(j->yt, gan_bits_value(j->xt, xb)));
        else
            gan_cast_tally_float(t, cx, cy);
    }
}

static void fp8_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct fp8_job *j = arg;
    const size_t xs = gan_dtype_size(j->xt), ys = gan_dtype_size(j->yt);
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    for (int64_t i = begin; i < end; i += FP8_BLOCK) {
        size_t len = (size_t)(end - i < FP8_BLOCK ? end - i : FP8_BLOCK);
        const unsigned char *xp = j->x + (size_t)i * xs;
        unsigned char *yp = j->y + (size_t)i * ys;
        if (j->convert && j->xt == j->yt)
            memcpy(yp, xp, len * xs);
        else if (j->convert)
            convert_block(j, xp, yp, len);
        if (j->count)
            count_block(j, xp, yp, len, &t);
    }
    j->part[part] = t;
}

void cpu_cast_fp8(gan_backend *be, const void *x, enum gan_dtype xt, void *y,
                  enum gan_dtype yt, size_t n, int saturate, struct gan_cast_counts *c)
{
    struct fp8_job j = {
        .isa = be->isa, .x = x, .y = y, .xt = xt, .yt = yt, .saturate = saturate,
        .convert = !(x == y && xt == yt), .count = c != NULL,
    };
    /* the same split as cast.c's, so one more pass per element when counting */
    int parts = cpu_parallel_parts(be, (int64_t)n, FP8_BLOCK, c ? 2 : 1);
    memset(j.part, 0, (size_t)parts * sizeof j.part[0]);
    cpu_parallel_for(be, parts, (int64_t)n, FP8_BLOCK, fp8_range, &j);
    if (!c)
        return;
    for (int p = 0; p < parts; p++) {
        c->overflow += j.part[p].overflow;
        c->underflow += j.part[p].underflow;
        c->subnormal += j.part[p].subnormal;
        c->nonfinite += j.part[p].nonfinite;
    }
}
