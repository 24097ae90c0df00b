/* SPDX-License-Identifier: MIT */
/* fp8_passes.c — the loops of the FP8 products' passes over a chunk of a row or a run of
 * an operand: measure, quantize, rescale. Written once in plain C and compiled for each
 * vector level. */
#include "config.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#include <stdint.h>

#include "fp8_products.h"
#include "../common/fp8_ops.h"

/* Each loop is branch-free integer and single floating-point steps, which the compiler
 * vectorises: at -O2 GCC's cheapest cost model takes only loops of a known trip count,
 * so this file asks for its dynamic one, which takes a chunk's length as it comes. A
 * wrapper compiled with a target attribute vectorises the same steps over 8 or 16
 * lanes; the steps, and so the bits, are those of the portable one
 * (tests/unit/check_fp8_products.c runs every level against a scalar reference).
 *
 * Values are read as their FP32 bits through an alias-safe type: the tests of fp8_ops.h
 * are on bits, so that NaN and subnormals are what their bits say. */
typedef uint32_t __attribute__((may_alias)) fp8_bits32;

#define FP8_INLINE static inline __attribute__((always_inline))

FP8_INLINE void measure_loop(const float *restrict x, size_t n, uint32_t *restrict ab,
                             struct cpu_fp8_counts *c)
{
    const fp8_bits32 *xb = (const fp8_bits32 *)(const void *)x;
    uint32_t zeros = 0, nonfinite = 0, amax = c->amax_bits;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = xb[i] & 0x7fffffffu;
        uint32_t bad = a >= GAN_FP8_NONFINITE_BITS;
        uint32_t v = a & (bad - 1u); /* 0 where not finite */
        nonfinite += bad;
        zeros += a == 0;
        ab[i] = v;
        amax = v > amax ? v : amax;
    }
    c->zeros += zeros;
    c->nonfinite += nonfinite;
    c->amax_bits = amax;
}

FP8_INLINE void max_into_loop(uint32_t *restrict dst, const uint32_t *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] > dst[i] ? src[i] : dst[i];
}

FP8_INLINE void mul_loop(const float *restrict x, const float *restrict s, float *restrict p,
                         size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = x[i] * s[i];
}

/* gan_f64_to_f32_odd without its branches: a NaN or infinite product is exact as far
 * as this step is concerned (it stays what FP32 makes of it). */
FP8_INLINE void mul_odd_loop(const float *restrict x, const float *restrict s,
                             float *restrict p, size_t n)
{
    fp8_bits32 *pb = (fp8_bits32 *)(void *)p;
    for (size_t i = 0; i < n; i++) {
        double v = (double)x[i] * (double)s[i];
        float f = (float)v;
        double back = (double)f, mag = __builtin_fabs(v);
        uint32_t inexact = (back != v) & (v == v) & (mag != __builtin_inf());
        uint32_t away = inexact & (__builtin_fabs(back) > mag);
        union { float f; uint32_t u; } bits = { f };
        pb[i] = (bits.u - away) | inexact;
    }
}

FP8_INLINE void fill_loop(float *restrict dst, float v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = v;
}

FP8_INLINE uint32_t max_loop(const uint32_t *restrict src, size_t n, uint32_t m)
{
    for (size_t i = 0; i < n; i++)
        m = src[i] > m ? src[i] : m;
    return m;
}

FP8_INLINE void recip_loop(const float *restrict s, float *restrict r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r[i] = 1.0f / s[i];
}

/* ---------------------------------------------------------------- fused passes */

/* FP32 bits as a float and back: unions, which the vectoriser reads as moves between
 * the same lanes. */
FP8_INLINE float f32_of(uint32_t b)
{
    union { uint32_t u; float f; } v = { b };
    return v.f;
}

FP8_INLINE uint32_t bits_of(float f)
{
    union { float f; uint32_t u; } v = { f };
    return v.u;
}

/* Element i of x as FP32 bits: F32 itself, or BF16 moved into FP32's top half (exact). */
FP8_INLINE uint32_t load_bits(const void *restrict x, int bf16, size_t i)
{
    if (bf16)
        return (uint32_t)((const uint16_t *)x)[i] << 16;
    return ((const fp8_bits32 *)x)[i];
}

/* fp8_stats without the per-element magnitudes: counts and amax straight from x. */
FP8_INLINE void measure_direct_loop(const void *restrict x, int bf16, size_t n,
                                    struct cpu_fp8_counts *c)
{
    uint32_t zeros = 0, nonfinite = 0, amax = c->amax_bits;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = load_bits(x, bf16, i) & 0x7fffffffu;
        uint32_t bad = a >= GAN_FP8_NONFINITE_BITS;
        uint32_t v = a & (bad - 1u);
        nonfinite += bad;
        zeros += a == 0;
        amax = v > amax ? v : amax;
    }
    c->zeros += zeros;
    c->nonfinite += nonfinite;
    c->amax_bits = amax;
}

/* fp8_quantize over a run in one loop, from the same registers: the product
 * p = fl32(x · s) (s one scale, or s_at[i] when s_at is not NULL), its FP8 bits by
 * gan_fp8_encode's rules, and gan_fp8_tally_element's counts and amax.
 *
 * The encoding is gan_fp8_encode's without its branches. A normal result is the same
 * integer rounding. Below the smallest normal (zero included) |p| + 2^(23 + e), with
 * 2^e the smallest subnormal, rounds |p| to a multiple of 2^e in FP32's own
 * round-to-nearest-even, since 2^(23 + e)'s unit in the last place is 2^e: the
 * difference of the bits is the subnormal's code, 0 where |p| is at most half of 2^e,
 * and 1 << mant_bits (the smallest normal's code) where it rounds up to it. No test is
 * on a flushed value: a subnormal FP32 |p| gives code 0 whether or not the add sees it
 * as 0. */
FP8_INLINE void quantize_loop(const void *restrict x, int bf16, float s,
                              const float *restrict s_at, uint8_t *restrict q, size_t n,
                              const struct cpu_fp8_encoding *k, struct cpu_fp8_counts *c)
{
    const uint32_t shift = k->shift, rebias = k->rebias, half = k->half;
    const uint32_t min_normal = k->min_normal, over_above = k->overflow_above;
    const uint32_t over_code = k->overflow_code, nan_code = k->nan_code;
    const uint32_t nan_payload = k->nan_payload, sub_below = k->sub_below;
    const float magic = k->magic;
    const uint32_t magic_bits = bits_of(magic);
    uint32_t over = 0, under = 0, sub = 0, nonfinite = 0, amax = c->amax_bits;
    for (size_t i = 0; i < n; i++) {
        uint32_t xb = load_bits(x, bf16, i);
        float p = f32_of(xb) * (s_at ? s_at[i] : s);
        uint32_t pb = bits_of(p), ap = pb & 0x7fffffffu;
        uint32_t normal = (ap - rebias + half + ((ap >> shift) & 1u)) >> shift;
        uint32_t small = bits_of(__builtin_fabsf(p) + magic) - magic_bits;
        uint32_t m = ap >= min_normal ? normal : small;
        m = ap > over_above ? over_code : m;
        m = ap > GAN_FP8_NONFINITE_BITS ? nan_code | ((ap >> 21) & nan_payload) : m;
        q[i] = (uint8_t)(m | ((pb >> 24) & 0x80u));

        uint32_t ax = xb & 0x7fffffffu;
        uint32_t finite = ax < GAN_FP8_NONFINITE_BITS;
        nonfinite += finite ^ 1u;
        over += finite & (ap > over_above) & (ap <= GAN_FP8_NONFINITE_BITS);
        under += finite & (ax != 0) & (m == 0);
        sub += (m != 0) & (m < sub_below);
        uint32_t v = ax & (0u - finite);
        amax = v > amax ? v : amax;
    }
    c->overflow += over;
    c->underflow += under;
    c->subnormal += sub;
    c->nonfinite += nonfinite;
    c->amax_bits = amax;
}

/* y[i] = the top half of fl32(x[i] · s[i])'s bits: BF16 by truncation, which the
 * callers use only where the product is exact in BF16. */
/* y[i] = table[q[i] & 0x7f] with q[i]'s sign as bit 15: an FP8 value widened by a table
 * of its magnitudes. */
FP8_INLINE void table_bf16_loop(const uint8_t *restrict q, const uint16_t *restrict table,
                                uint16_t *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (uint16_t)(table[q[i] & 0x7fu] | ((q[i] & 0x80u) << 8));
}

FP8_INLINE void bf16_top_loop(const float *restrict x, const float *restrict s,
                              uint16_t *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (uint16_t)(bits_of(x[i] * s[i]) >> 16);
}

/* The wrappers of one vector level, named with its suffix. */
#define FP8_LEVEL(sfx, target)                                                            \
    target static void measure_##sfx(const float *x, size_t n, uint32_t *ab,             \
                                     struct cpu_fp8_counts *c)                            \
    {                                                                                     \
        measure_loop(x, n, ab, c);                                                        \
    }                                                                                     \
    target static void max_into_##sfx(uint32_t *dst, const uint32_t *src, size_t n)      \
    {                                                                                     \
        max_into_loop(dst, src, n);                                                       \
    }                                                                                     \
    target static void mul_##sfx(const float *x, const float *s, float *p, size_t n)     \
    {                                                                                     \
        mul_loop(x, s, p, n);                                                             \
    }                                                                                     \
    target static void mul_odd_##sfx(const float *x, const float *s, float *p, size_t n) \
    {                                                                                     \
        mul_odd_loop(x, s, p, n);                                                         \
    }                                                                                     \
    target static void fill_##sfx(float *dst, float v, size_t n)                         \
    {                                                                                     \
        fill_loop(dst, v, n);                                                             \
    }                                                                                     \
    target static uint32_t max_##sfx(const uint32_t *src, size_t n, uint32_t m)          \
    {                                                                                     \
        return max_loop(src, n, m);                                                       \
    }                                                                                     \
    target static void recip_##sfx(const float *s, float *r, size_t n)                   \
    {                                                                                     \
        recip_loop(s, r, n);                                                              \
    }                                                                                     \
    target static void bf16_top_##sfx(const float *x, const float *s, uint16_t *y,       \
                                      size_t n)                                           \
    {                                                                                     \
        bf16_top_loop(x, s, y, n);                                                        \
    }                                                                                     \
    target static void table_bf16_##sfx(const uint8_t *q, const uint16_t *table,         \
                                        uint16_t *y, size_t n)                            \
    {                                                                                     \
        table_bf16_loop(q, table, y, n);                                                  \
    }                                                                                     \
    target static void measure_direct_##sfx(const void *x, int bf16, size_t n,           \
                                            struct cpu_fp8_counts *c)                     \
    {                                                                                     \
        if (bf16)                                                                         \
            measure_direct_loop(x, 1, n, c);                                              \
        else                                                                              \
            measure_direct_loop(x, 0, n, c);                                              \
    }                                                                                     \
    target static void quantize_##sfx(const void *x, int bf16, float s, const float *s_at, \
                                      uint8_t *q, size_t n,                               \
                                      const struct cpu_fp8_encoding *k,                   \
                                      struct cpu_fp8_counts *c)                           \
    {                                                                                     \
        /* one loop per input type and kind of scale, each with its test folded away */  \
        if (bf16 && s_at)                                                                 \
            quantize_loop(x, 1, 0.0f, s_at, q, n, k, c);                                  \
        else if (bf16)                                                                    \
            quantize_loop(x, 1, s, NULL, q, n, k, c);                                     \
        else if (s_at)                                                                    \
            quantize_loop(x, 0, 0.0f, s_at, q, n, k, c);                                  \
        else                                                                              \
            quantize_loop(x, 0, s, NULL, q, n, k, c);                                     \
    }

FP8_LEVEL(portable, )
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define FP8_X86 1
FP8_LEVEL(avx2, __attribute__((target("avx2"))))
FP8_LEVEL(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx2"))))
/* The level's wrapper: AVX-512 and F16C levels run the loops compiled for them (the
 * F16C level is an AVX2 one, cpu_backend.h), the portable level plain C. */
#define FP8_DISPATCH(isa, name, ...)                     \
    do {                                                 \
        if ((isa) == CPU_ISA_AVX512)                     \
            name##_avx512(__VA_ARGS__);                  \
        else if ((isa) == CPU_ISA_F16C)                  \
            name##_avx2(__VA_ARGS__);                    \
        else                                             \
            name##_portable(__VA_ARGS__);                \
    } while (0)
#else
#define FP8_DISPATCH(isa, name, ...) ((void)(isa), name##_portable(__VA_ARGS__))
#endif

void cpu_fp8_measure(enum cpu_isa isa, const float *x, size_t n, uint32_t *ab,
                     struct cpu_fp8_counts *c)
{
    FP8_DISPATCH(isa, measure, x, n, ab, c);
}

void cpu_fp8_max_into(enum cpu_isa isa, uint32_t *dst, const uint32_t *src, size_t n)
{
    FP8_DISPATCH(isa, max_into, dst, src, n);
}

void cpu_fp8_mul(enum cpu_isa isa, const float *x, const float *s, float *p, size_t n)
{
    FP8_DISPATCH(isa, mul, x, s, p, n);
}

void cpu_fp8_mul_odd(enum cpu_isa isa, const float *x, const float *s, float *p, size_t n)
{
    FP8_DISPATCH(isa, mul_odd, x, s, p, n);
}

void cpu_fp8_fill(enum cpu_isa isa, float *dst, float v, size_t n)
{
    FP8_DISPATCH(isa, fill, dst, v, n);
}

uint32_t cpu_fp8_max(enum cpu_isa isa, const uint32_t *src, size_t n, uint32_t m)
{
#ifdef FP8_X86
    if (isa == CPU_ISA_AVX512)
        return max_avx512(src, n, m);
    if (isa == CPU_ISA_F16C)
        return max_avx2(src, n, m);
#else
    (void)isa;
#endif
    return max_portable(src, n, m);
}

void cpu_fp8_recip(enum cpu_isa isa, const float *s, float *r, size_t n)
{
    FP8_DISPATCH(isa, recip, s, r, n);
}

struct cpu_fp8_encoding cpu_fp8_encoding_of(enum gan_dtype dt, int saturate)
{
    const struct gan_fp8_format f = gan_fp8_format_of(dt);
    struct cpu_fp8_encoding k;
    k.shift = 23u - f.mant_bits;
    k.rebias = f.rebias;
    k.half = (1u << (k.shift - 1u)) - 1u;
    k.min_normal = f.min_normal;
    k.overflow_above = f.overflow_above;
    k.overflow_code = saturate ? f.max_code : f.overflow_code;
    k.nan_code = f.nan_code;
    k.nan_payload = f.nan_payload;
    k.sub_below = 1u << f.mant_bits;
    /* the smallest subnormal is 2^(1 − bias − mant_bits): 2^-9, 2^-16 */
    k.magic = dt == GAN_F8E5M2 ? 0x1p7f : 0x1p14f;
    return k;
}

void cpu_fp8_measure_direct(enum cpu_isa isa, const void *x, enum gan_dtype xt, size_t n,
                            struct cpu_fp8_counts *c)
{
    FP8_DISPATCH(isa, measure_direct, x, xt == GAN_BF16, n, c);
}

void cpu_fp8_quantize_run(enum cpu_isa isa, const void *x, enum gan_dtype xt, float s,
                          const float *s_at, uint8_t *q, size_t n,
                          const struct cpu_fp8_encoding *k, struct cpu_fp8_counts *c)
{
    FP8_DISPATCH(isa, quantize, x, xt == GAN_BF16, s, s_at, q, n, k, c);
}

void cpu_fp8_table_bf16(enum cpu_isa isa, const uint8_t *q, const uint16_t *table,
                        uint16_t *y, size_t n)
{
#ifdef FP8_X86
    if (isa == CPU_ISA_AVX512) {
        cpu_fp8_table_bf16_avx512(q, table, y, n);
        return;
    }
#endif
    FP8_DISPATCH(isa, table_bf16, q, table, y, n);
}

void cpu_fp8_bf16_top(enum cpu_isa isa, const float *x, const float *s, uint16_t *y, size_t n)
{
    FP8_DISPATCH(isa, bf16_top, x, s, y, n);
}
