/* SPDX-License-Identifier: MIT */
/* check_cast.c — the CPU backend's casts against independent references: GCC's
 * _Float16 for F16 (a software reference where the compiler lacks it), double arithmetic
 * for BF16; boundaries and counts, on every converter
 * level the CPU has (portable, F16C/AVX2, AVX-512). */
#include "config.h"

#include <check.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_features.h"
#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#include "../../backends/cpu/convert.h"

/* ck_assert_msg records a checkpoint (a write to the parent process) on every
 * success; in loops over millions of elements that would dominate the run time, so
 * element checks call into Check only when they fail. */
#define expect(cond, ...) \
    do { \
        if (!(cond)) \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* ---------------------------------------------------------------- references */

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float float_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

#ifdef __FLT16_MAX__
/* GCC converts to _Float16 with correct rounding (in libgcc's soft-fp unless the
 * target has native FP16 conversions). */
static uint16_t ref_f16(double v)
{
    _Float16 h = (_Float16)v;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}

static double f16_value(uint16_t b)
{
    _Float16 h;
    memcpy(&h, &b, 2);
    return (double)h;
}
#else
/* A compiler without _Float16 (clang 14 on x86) gets half_helpers.c's conversions,
 * written from the IEEE definition. A NaN keeps its sign, as it does through _Float16:
 * the checks compare the sign of NaN results. */
static uint16_t ref_f16(double v)
{
    if (isnan(v))
        return (uint16_t)((signbit(v) ? 0x8000 : 0) | 0x7e00);
    return f16_encode(v);
}

static double f16_value(uint16_t b)
{
    return f16_decode(b);
}
#endif

static double bf16_value(uint16_t b)
{
    return float_of((uint32_t)b << 16);
}

/* Round to BF16 (8 significant bits, FP32's exponent range) through double
 * arithmetic: scale by the ulp at v's binade, round to an integer (nearest even),
 * scale back. Only the sign of a NaN is meaningful in the result. */
static uint16_t ref_bf16(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v))
        return (uint16_t)(sign | 0x7fc0);
    double a = fabs(v);
    if (isinf(a))
        return (uint16_t)(sign | 0x7f80);
    if (a == 0.0)
        return sign;
    int e = ilogb(a);
    if (e < -126)
        e = -126; /* below that the spacing stays 2^-133: BF16's subnormals */
    double ulp = ldexp(1.0, e - 7);
    double r = nearbyint(a / ulp) * ulp;
    if (r >= 0x1p128)
        return (uint16_t)(sign | 0x7f80);
    return (uint16_t)(sign | (bits_of((float)r) >> 16));
}

/* Counts as backend.h defines them, from values (not bits), written for the test. */
static void ref_count(struct gan_cast_counts *c, double in, double out, enum gan_dtype yt)
{
    double min_normal = yt == GAN_F16 ? 0x1p-14 : 0x1p-126;
    c->elements++;
    if (!isfinite(in)) {
        c->nonfinite++;
        return;
    }
    if (isinf(out))
        c->overflow++;
    if (in != 0.0 && out == 0.0)
        c->underflow++;
    if (out != 0.0 && fabs(out) < min_normal)
        c->subnormal++;
}

static void assert_counts(const struct gan_cast_counts *got, const struct gan_cast_counts *want,
                          const char *what)
{
    expect(got->elements == want->elements && got->overflow == want->overflow &&
                  got->underflow == want->underflow && got->subnormal == want->subnormal &&
                  got->nonfinite == want->nonfinite,
                  "%s: counts elements/overflow/underflow/subnormal/nonfinite = "
                  "%llu/%llu/%llu/%llu/%llu, expected %llu/%llu/%llu/%llu/%llu", what,
                  (unsigned long long)got->elements, (unsigned long long)got->overflow,
                  (unsigned long long)got->underflow, (unsigned long long)got->subnormal,
                  (unsigned long long)got->nonfinite, (unsigned long long)want->elements,
                  (unsigned long long)want->overflow, (unsigned long long)want->underflow,
                  (unsigned long long)want->subnormal, (unsigned long long)want->nonfinite);
}

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- running a cast */

static struct test_host *host_of(gan_backend *be)
{
    return (struct test_host *)be->host->ctx;
}

/* The converter level of the test case being run, as the instances its tests create
 * are told it ("vector=…"); outside the conversion cases -1, and they get the widest.
 * Check runs each test in its own process, so a case's choice stays there. */
static int case_level = -1;

/* A backend at the test case's converter level. */
static gan_backend *level_backend(void)
{
    static const char *const settings[3][2] = {
        { "vector=portable", NULL }, { "vector=f16c", NULL }, { "vector=avx512", NULL },
    };
    gan_backend *be = cpu_fixture_new(case_level < 0 ? NULL : settings[case_level]);
    if (case_level >= 0)
        ck_assert_int_eq(be->isa, case_level);
    return be;
}

/* Casts n elements of `in` (xt) to `out` (yt) through cpu_cast, with both operands
 * starting `offset` elements into their buffers so that vector loops meet unaligned
 * starts and odd tails. */
static void run_cast(gan_backend *be, enum gan_dtype xt, const void *in, enum gan_dtype yt,
                     void *out, size_t n, size_t offset, struct gan_cast_counts *counts)
{
    size_t sx = gan_dtype_size(xt), sy = gan_dtype_size(yt);
    gan_buffer *bx, *by;
    ck_assert_int_eq(cpu_buffer_alloc(be, (offset + n) * sx, &bx), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, (offset + n) * sy, &by), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, bx, offset * sx, in, n * sx), GAN_OK);
    struct gan_ref x = { bx, offset, xt }, y = { by, offset, yt };
    gan_status st = cpu_cast(be, n, &x, &y, counts);
    expect(st == GAN_OK, "cast %s→%s failed: %s", gan_dtype_name(xt),
                  gan_dtype_name(yt), host_of(be)->last_error);
    ck_assert_int_eq(cpu_download(be, out, by, offset * sy, n * sy), GAN_OK);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}

/* Checks F32 → F16 of `in` against GCC's _Float16, against convert.h bit for bit
 * (which is what proves a vector level when cpu_cast takes it), and the counts. */
static void check_f32_to_f16(gan_backend *be, const float *in, size_t n, size_t offset)
{
    uint16_t *out = malloc(n * 2 + 2);
    ck_assert_ptr_nonnull(out);
    struct gan_cast_counts got, want = { 0 };
    run_cast(be, GAN_F32, in, GAN_F16, out, n, offset, &got);
    for (size_t i = 0; i < n; i++) {
        uint16_t ref = ref_f16(in[i]);
        if (isnan(in[i]))
            expect((out[i] & 0x7c00) == 0x7c00 && (out[i] & 0x3ff) &&
                          (out[i] & 0x8000) == (ref & 0x8000),
                          "F32 NaN %08x → F16 %04x is not a NaN of the same sign",
                          bits_of(in[i]), out[i]);
        else
            expect(out[i] == ref, "F32 %08x (%.9g) → F16 %04x, reference %04x",
                          bits_of(in[i]), in[i], out[i], ref);
        expect(out[i] == cpu_f32_to_f16(in[i]),
                      "F32 %08x → F16 %04x, but the portable path gives %04x",
                      bits_of(in[i]), out[i], cpu_f32_to_f16(in[i]));
        ref_count(&want, in[i], f16_value(ref), GAN_F16);
    }
    assert_counts(&got, &want, "F32→F16");
    free(out);
}

static void check_f32_to_bf16(gan_backend *be, const float *in, size_t n, size_t offset)
{
    uint16_t *out = malloc(n * 2 + 2);
    ck_assert_ptr_nonnull(out);
    struct gan_cast_counts got, want = { 0 };
    run_cast(be, GAN_F32, in, GAN_BF16, out, n, offset, &got);
    for (size_t i = 0; i < n; i++) {
        uint16_t ref = ref_bf16(in[i]);
        if (isnan(in[i]))
            expect(isnan(bf16_value(out[i])) && (out[i] & 0x8000) == (ref & 0x8000),
                          "F32 NaN %08x → BF16 %04x is not a NaN of the same sign",
                          bits_of(in[i]), out[i]);
        else
            expect(out[i] == ref, "F32 %08x (%.9g) → BF16 %04x, reference %04x",
                          bits_of(in[i]), in[i], out[i], ref);
        /* a vector level, when taken, must agree with convert.h even on NaN payloads */
        expect(out[i] == cpu_f32_to_bf16(in[i]),
                      "F32 %08x → BF16 %04x, but the portable path gives %04x",
                      bits_of(in[i]), out[i], cpu_f32_to_bf16(in[i]));
        ref_count(&want, in[i], bf16_value(ref), GAN_BF16);
    }
    assert_counts(&got, &want, "F32→BF16");
    free(out);
}

/* ---------------------------------------------------------------- boundary inputs */

static float *push(float *v, size_t *n, float f)
{
    v[(*n)++] = f;
    v[(*n)++] = -f;
    return v;
}

/* FP16's edges, written out, and then every midpoint between neighbouring F16
 * values with the FP32 numbers just around it; n returned in *count. */
static float *f16_boundaries(size_t *count)
{
    size_t cap = 65536 * 8 + 256, n = 0;
    float *v = malloc(cap * sizeof *v);
    ck_assert_ptr_nonnull(v);
    const float named[] = {
        0.0f, 65504.0f, 65519.99f, float_of(0x477fefffu), 65520.0f, 65536.0f, 1e9f, FLT_MAX,
        INFINITY, NAN, 0x1p-14f, nextafterf(0x1p-14f, 0), 0x1p-14f - 0x1p-25f, 0x1p-24f,
        0x1p-25f, nextafterf(0x1p-25f, 1), nextafterf(0x1p-25f, 0), 1.5f * 0x1p-24f,
        2.5f * 0x1p-24f, 0x1p-26f, FLT_MIN, float_of(1), float_of(0x007fffffu),
        1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 2049.0f, 2051.0f, 4097.0f, 32768.0f + 16.0f,
        65488.0f, 65496.0f, float_of(0x7f800001u), float_of(0x7fc00000u),
        float_of(0x7fbfffffu), float_of(0x7f802000u), float_of(0x7fffe000u),
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        push(v, &n, named[i]);
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double a = f16_value((uint16_t)h), b = f16_value((uint16_t)(h + 1));
        float mid = (float)((a + b) / 2); /* exact: 12 significant bits at most */
        push(v, &n, mid);
        push(v, &n, nextafterf(mid, 0));
        push(v, &n, nextafterf(mid, INFINITY));
    }
    /* above the largest finite F16: its midpoint with 2^16 is 65520 */
    push(v, &n, nextafterf(65520.0f, 0));
    ck_assert_uint_le(n, cap);
    *count = n;
    return v;
}

/* Every FP32 binade with mantissas at and around FP16's and BF16's rounding points. */
static float *f32_binades(size_t *count)
{
    static const uint32_t mants[] = {
        0, 1, 0xfff, 0x1000, 0x1001, 0x3000, 0x2fff, 0x3001, 0x7fff, 0x8000, 0x8001,
        0x18000, 0x17fff, 0x18001, 0x7fffff, 0x400000, 0x7ff000, 0x7fefff, 0x7f8000,
    };
    size_t n = 0, cap = 256 * (sizeof mants / sizeof mants[0]) * 2;
    float *v = malloc(cap * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (uint32_t e = 0; e < 256; e++)
        for (size_t j = 0; j < sizeof mants / sizeof mants[0]; j++)
            push(v, &n, float_of((e << 23) | mants[j]));
    *count = n;
    return v;
}

/* ---------------------------------------------------------------- F16 */

/* All 65536 F16 patterns widen to the exact value and narrow back to the same bits
 * (a NaN stays a NaN of the same sign); at unaligned starts too. */
START_TEST(test_f16_all_patterns)
{
    gan_backend *be = level_backend();
    size_t offset = (size_t)_i;
    size_t n = 65536 - offset;
    uint16_t *h = malloc(65536 * 2), *back = malloc(65536 * 2);
    float *f = malloc(65536 * 4);
    ck_assert(h && back && f);
    for (size_t i = 0; i < n; i++)
        h[i] = (uint16_t)(i + offset);

    struct gan_cast_counts got, want = { 0 };
    run_cast(be, GAN_F16, h, GAN_F32, f, n, offset, &got);
    for (size_t i = 0; i < n; i++) {
        double v = f16_value(h[i]);
        if (isnan(v))
            expect(isnan(f[i]) && !!signbit(f[i]) == !!(h[i] & 0x8000),
                          "F16 NaN %04x → F32 %08x", h[i], bits_of(f[i]));
        else
            expect(bits_of(f[i]) == bits_of((float)v), "F16 %04x → F32 %08x, want %08x",
                          h[i], bits_of(f[i]), bits_of((float)v));
        /* a vector level, when taken, must agree with convert.h even on NaN payloads */
        expect(bits_of(f[i]) == bits_of(cpu_f16_to_f32(h[i])),
                      "F16 %04x → F32 %08x, the portable path gives %08x", h[i],
                      bits_of(f[i]), bits_of(cpu_f16_to_f32(h[i])));
        ref_count(&want, v, f[i], GAN_F32);
    }
    assert_counts(&got, &want, "F16→F32");
    if (offset == 0) /* 2 × 1024 patterns with exponent 31: ±inf and the NaNs */
        ck_assert_uint_eq(got.nonfinite, 2048);

    run_cast(be, GAN_F32, f, GAN_F16, back, n, offset, &got);
    for (size_t i = 0; i < n; i++) {
        if (isnan(f[i]))
            expect((back[i] & 0x7c00) == 0x7c00 && (back[i] & 0x3ff) &&
                          (back[i] & 0x8000) == (h[i] & 0x8000),
                          "F16 NaN %04x came back as %04x", h[i], back[i]);
        else
            expect(back[i] == h[i], "F16 %04x came back as %04x", h[i], back[i]);
    }
    if (offset == 0) { /* the 2 × 1023 subnormals are subnormal again; nothing lost */
        ck_assert_uint_eq(got.subnormal, 2046);
        ck_assert_uint_eq(got.underflow, 0);
        ck_assert_uint_eq(got.overflow, 0);
    }
    free(h);
    free(back);
    free(f);
    cpu_fixture_free(be);
}
END_TEST

START_TEST(test_f32_to_f16_boundaries)
{
    gan_backend *be = level_backend();
    size_t n;
    float *v = f16_boundaries(&n);
    check_f32_to_f16(be, v, n, (size_t)_i);
    free(v);
    v = f32_binades(&n);
    check_f32_to_f16(be, v, n, (size_t)_i);
    free(v);
    cpu_fixture_free(be);
}
END_TEST

/* Random FP32 bit patterns (all of FP32, NaN payloads included) and random values
 * with exponents spread over FP16's range and a little beyond. */
START_TEST(test_f32_to_f16_random)
{
    gan_backend *be = level_backend();
    const size_t n = 1u << 20;
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_state = 0x5eed0000u + (uint64_t)_i;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t r = next_u64();
            if (round == 0)
                v[i] = float_of((uint32_t)r);
            else /* binary exponent -27 … 16 */
                v[i] = float_of((uint32_t)((r >> 32) & 0x807fffffu) |
                                ((uint32_t)(127 - 27 + (r % 44)) << 23));
        }
        check_f32_to_f16(be, v, n - (size_t)_i, (size_t)_i);
    }
    free(v);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- BF16 */

START_TEST(test_bf16_all_patterns)
{
    gan_backend *be = level_backend();
    uint16_t *h = malloc(65536 * 2), *back = malloc(65536 * 2);
    float *f = malloc(65536 * 4);
    ck_assert(h && back && f);
    for (size_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    struct gan_cast_counts got;
    run_cast(be, GAN_BF16, h, GAN_F32, f, 65536, 3, &got);
    for (size_t i = 0; i < 65536; i++)
        expect(bits_of(f[i]) == (uint32_t)h[i] << 16, "BF16 %04x → F32 %08x", h[i],
                      bits_of(f[i]));
    ck_assert_uint_eq(got.nonfinite, 2 * 128);       /* exponent 255: ±inf, 2 × 127 NaNs */
    ck_assert_uint_eq(got.subnormal, 2 * 127);       /* F32 subnormals, as they were */
    run_cast(be, GAN_F32, f, GAN_BF16, back, 65536, 0, &got);
    for (size_t i = 0; i < 65536; i++) {
        if (isnan(f[i]))
            expect(isnan(bf16_value(back[i])) && (back[i] & 0x8000) == (h[i] & 0x8000),
                          "BF16 NaN %04x came back as %04x", h[i], back[i]);
        else
            expect(back[i] == h[i], "BF16 %04x came back as %04x", h[i], back[i]);
    }
    ck_assert_uint_eq(got.subnormal, 2 * 127);
    ck_assert_uint_eq(got.underflow + got.overflow, 0);
    free(h);
    free(back);
    free(f);
    cpu_fixture_free(be);
}
END_TEST

START_TEST(test_f32_to_bf16)
{
    gan_backend *be = level_backend();
    size_t n;
    float *v = f32_binades(&n);
    check_f32_to_bf16(be, v, n, 1);
    free(v);
    /* BF16 midpoints and their neighbours, in every binade */
    n = 0;
    v = malloc(sizeof(float) * 65536 * 6);
    ck_assert_ptr_nonnull(v);
    for (uint32_t b = 0; b < 0x7f7f; b++) {
        float mid = float_of((b << 16) | 0x8000u);
        push(v, &n, mid);
        push(v, &n, nextafterf(mid, 0));
        push(v, &n, nextafterf(mid, INFINITY));
    }
    check_f32_to_bf16(be, v, n, 0);
    free(v);
    const size_t r = 1u << 20;
    v = malloc(r * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_state = 77;
    for (size_t i = 0; i < r; i++)
        v[i] = float_of((uint32_t)next_u64());
    check_f32_to_bf16(be, v, r, 5);
    free(v);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- F16 ↔ BF16 */

START_TEST(test_between_16bit)
{
    gan_backend *be = level_backend();
    uint16_t *h = malloc(65536 * 2), *out = malloc(65536 * 2);
    ck_assert(h && out);
    for (size_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;

    struct gan_cast_counts got, want = { 0 };
    run_cast(be, GAN_F16, h, GAN_BF16, out, 65536, 0, &got);
    for (size_t i = 0; i < 65536; i++) {
        double v = f16_value(h[i]);
        uint16_t ref = ref_bf16(v);
        expect(isnan(v) ? isnan(bf16_value(out[i])) : out[i] == ref,
                      "F16 %04x → BF16 %04x, reference %04x", h[i], out[i], ref);
        ref_count(&want, v, bf16_value(ref), GAN_BF16);
    }
    assert_counts(&got, &want, "F16→BF16");

    memset(&want, 0, sizeof want);
    run_cast(be, GAN_BF16, h, GAN_F16, out, 65536, 0, &got);
    for (size_t i = 0; i < 65536; i++) {
        double v = bf16_value(h[i]);
        uint16_t ref = ref_f16(v);
        expect(isnan(v) ? isnan(f16_value(out[i])) : out[i] == ref,
                      "BF16 %04x → F16 %04x, reference %04x", h[i], out[i], ref);
        ref_count(&want, v, f16_value(ref), GAN_F16);
    }
    assert_counts(&got, &want, "BF16→F16");
    ck_assert_uint_gt(got.overflow, 0);
    ck_assert_uint_gt(got.underflow, 0);
    free(h);
    free(out);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- counts, written out */

/* Hand-counted: the values, what each becomes in F16, and the totals. */
START_TEST(test_counts_crafted)
{
    gan_backend *be = level_backend();
    const float in[] = {
        1e5f,                      /* → inf: overflow */
        65520.0f,                  /* → inf: overflow (rounds past 65504) */
        65519.0f,                  /* → 65504 */
        -1e-9f,                    /* → -0: underflow */
        0x1p-25f,                  /* → 0 (tie to even): underflow */
        nextafterf(0x1p-25f, 1),   /* → 2^-24: subnormal */
        1e-6f,                     /* → 17·2^-24: subnormal */
        float_of(1),               /* FP32's smallest subnormal → 0: underflow */
        INFINITY,                  /* non-finite */
        -INFINITY,                 /* non-finite */
        NAN,                       /* non-finite */
        0.0f, -0.0f, 1.0f,         /* nothing to count */
        0x1p-14f,                  /* FP16's smallest normal: not subnormal */
    };
    const size_t n = sizeof in / sizeof in[0];
    uint16_t out[sizeof in / sizeof in[0]];
    struct gan_cast_counts got;
    run_cast(be, GAN_F32, in, GAN_F16, out, n, 0, &got);
    struct gan_cast_counts want = { .elements = n, .overflow = 2, .underflow = 3,
                                    .subnormal = 2, .nonfinite = 3 };
    assert_counts(&got, &want, "crafted F32→F16");
    ck_assert_uint_eq(out[2], 0x7bff);
    ck_assert_uint_eq(out[3], 0x8000);
    ck_assert_uint_eq(out[6], 17);

    /* to BF16: FLT_MAX rounds up to inf; FP32 subnormals stay subnormal unless they
     * are below half of BF16's smallest (2^-134) */
    const float in_b[] = { FLT_MAX, 1e-40f, float_of(1), float_of(0x8000u), float_of(0x8001u),
                           1e30f, NAN };
    uint16_t out_b[7];
    run_cast(be, GAN_F32, in_b, GAN_BF16, out_b, 7, 2, &got);
    struct gan_cast_counts want_b = { .elements = 7, .overflow = 1, .underflow = 2,
                                      .subnormal = 2, .nonfinite = 1 };
    assert_counts(&got, &want_b, "crafted F32→BF16");
    ck_assert_uint_eq(out_b[0], 0x7f80);
    ck_assert_uint_eq(out_b[4], 0x0001);

    /* F32 → F32 counts the input's own subnormals and non-finite values */
    const float in_f[] = { 1e-40f, -1e-45f, 1.0f, INFINITY, NAN, 0.0f };
    float out_f[6];
    run_cast(be, GAN_F32, in_f, GAN_F32, out_f, 6, 0, &got);
    struct gan_cast_counts want_f = { .elements = 6, .subnormal = 2, .nonfinite = 2 };
    assert_counts(&got, &want_f, "crafted F32→F32");
    ck_assert_mem_eq(out_f, in_f, sizeof in_f);

    /* counts == NULL: converts all the same */
    gan_buffer *bx = cpu_fixture_buffer(be, n, in), *by = cpu_fixture_buffer(be, n, NULL);
    struct gan_ref x = { bx, 0, GAN_F32 }, y = { by, 0, GAN_F16 };
    ck_assert_int_eq(cpu_cast(be, n, &x, &y, NULL), GAN_OK);
    uint16_t again[sizeof in / sizeof in[0]];
    ck_assert_int_eq(cpu_download(be, again, by, 0, sizeof again), GAN_OK);
    ck_assert_mem_eq(again, out, sizeof again);

    /* in place, same view */
    ck_assert_int_eq(cpu_cast(be, n, &x, &x, &got), GAN_OK);
    ck_assert_uint_eq(got.nonfinite, 3);
    ck_assert_uint_eq(got.subnormal, 1); /* float_of(1) */
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);

    /* n = 0 */
    ck_assert_int_eq(cpu_cast(be, 0, &x, &y, &got), GAN_OK);
    ck_assert_uint_eq(got.elements, 0);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- integers */

static const int32_t ints[] = {
    0, 1, -1, 2, 255, 2049, 2051, 65504, 65519, 65520, 70000, -70000, 16777216, 16777217,
    16777219, 16842753, 16842752 + 65536, -16842753, 33554435, INT32_MAX, INT32_MIN,
    INT32_MAX - 64, 1 << 30, -(1 << 30) - 1,
};
#define N_INTS (sizeof ints / sizeof ints[0])

START_TEST(test_int_to_float)
{
    gan_backend *be = level_backend();
    static const enum gan_dtype targets[] = { GAN_F32, GAN_F16, GAN_BF16 };
    enum gan_dtype xt = _i < 3 ? GAN_I32 : GAN_U32, yt = targets[_i % 3];
    uint32_t in[N_INTS];
    for (size_t i = 0; i < N_INTS; i++)
        in[i] = (uint32_t)ints[i];
    unsigned char out[N_INTS * 4];
    struct gan_cast_counts got, want = { 0 };
    run_cast(be, xt, in, yt, out, N_INTS, 1, &got);
    for (size_t i = 0; i < N_INTS; i++) {
        double v = xt == GAN_I32 ? (double)ints[i] : (double)in[i]; /* exact */
        double r;
        if (yt == GAN_F32) {
            float f;
            memcpy(&f, out + 4 * i, 4);
            expect(f == (float)v, "%s %.0f → F32 %.9g", gan_dtype_name(xt), v, f);
            r = f;
        } else {
            uint16_t b, ref = yt == GAN_F16 ? ref_f16(v) : ref_bf16(v);
            memcpy(&b, out + 2 * i, 2);
            expect(b == ref, "%s %.0f → %s %04x, reference %04x", gan_dtype_name(xt), v,
                          gan_dtype_name(yt), b, ref);
            r = yt == GAN_F16 ? f16_value(b) : bf16_value(b);
        }
        ref_count(&want, v, r, yt);
    }
    assert_counts(&got, &want, "integer → float");
    if (yt == GAN_F16)
        ck_assert_uint_gt(got.overflow, 0);
    cpu_fixture_free(be);
}
END_TEST

START_TEST(test_float_to_int)
{
    gan_backend *be = level_backend();
    const float in[] = { 0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 0.3f, -0.7f, 3e9f, -3e9f,
                         4e9f, 5e9f, INFINITY, -INFINITY, NAN, 2147483520.0f, 16777217.0f };
    enum { N = sizeof in / sizeof in[0] };
    const int32_t want_i[N] = { 0, 0, 2, 2, 0, -2, 0, -1, INT32_MAX, INT32_MIN, INT32_MAX,
                                INT32_MAX, INT32_MAX, INT32_MIN, 0, 2147483520, 16777216 };
    const uint32_t want_u[N] = { 0, 0, 2, 2, 0, 0, 0, 0, 3000000000u, 0, 4000000000u,
                                 UINT32_MAX, UINT32_MAX, 0, 0, 2147483520u, 16777216u };
    int32_t oi[N];
    uint32_t ou[N];
    struct gan_cast_counts got;
    run_cast(be, GAN_F32, in, GAN_I32, oi, N, 0, &got);
    for (int i = 0; i < N; i++)
        expect(oi[i] == want_i[i], "%g → I32 %d, want %d", in[i], oi[i], want_i[i]);
    /* overflow: 3e9, -3e9, 4e9, 5e9; underflow: 0.5, -0.5, 0.3; non-finite: 3 */
    struct gan_cast_counts wi = { .elements = N, .overflow = 4, .underflow = 3, .nonfinite = 3 };
    assert_counts(&got, &wi, "F32→I32");
    run_cast(be, GAN_F32, in, GAN_U32, ou, N, 0, &got);
    for (int i = 0; i < N; i++)
        expect(ou[i] == want_u[i], "%g → U32 %u, want %u", in[i], ou[i], want_u[i]);
    /* overflow: -1.5, -0.7, -3e9, 5e9; underflow: 0.5, -0.5, 0.3 */
    struct gan_cast_counts wu = { .elements = N, .overflow = 4, .underflow = 3, .nonfinite = 3 };
    assert_counts(&got, &wu, "F32→U32");

    /* F16 input goes the same way */
    uint16_t h[3] = { 0x3e00 /* 1.5 */, 0x7bff /* 65504 */, 0xc100 /* -2.5 */ };
    run_cast(be, GAN_F16, h, GAN_I32, oi, 3, 0, &got);
    ck_assert_int_eq(oi[0], 2);
    ck_assert_int_eq(oi[1], 65504);
    ck_assert_int_eq(oi[2], -2);

    /* integer → integer saturates */
    const int32_t si[4] = { -5, 7, INT32_MAX, INT32_MIN };
    run_cast(be, GAN_I32, si, GAN_U32, ou, 4, 0, &got);
    ck_assert_uint_eq(ou[0], 0);
    ck_assert_uint_eq(ou[1], 7);
    ck_assert_uint_eq(ou[2], (uint32_t)INT32_MAX);
    ck_assert_uint_eq(got.overflow, 2);
    const uint32_t su[3] = { 5, 0x80000000u, UINT32_MAX };
    run_cast(be, GAN_U32, su, GAN_I32, oi, 3, 0, &got);
    ck_assert_int_eq(oi[0], 5);
    ck_assert_int_eq(oi[1], INT32_MAX);
    ck_assert_uint_eq(got.overflow, 2);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- converter levels */

/* An instance's level is at most the widest the CPU has, and the widest unless lowered;
 * lowering one instance leaves another as it was. The tests above then prove each level
 * against convert.h and the references (every F16, the boundary sets, millions of
 * random F32), run once per level by the fixtures below. */
START_TEST(test_dispatch)
{
    enum cpu_isa want = CPU_ISA_PORTABLE;
#if defined(__x86_64__) || defined(__i386__)
    if (test_cpu_has("avx") && test_cpu_has("f16c") && test_cpu_has("avx2")) {
        want = CPU_ISA_F16C;
        if (test_cpu_has("avx512f") && test_cpu_has("avx512bw") && test_cpu_has("avx512vl"))
            want = CPU_ISA_AVX512;
    }
#endif
    ck_assert_int_eq(cpu_isa_best(), want);
    gan_backend *a = cpu_fixture_new(NULL), *b = cpu_fixture_new(NULL);
    ck_assert_int_eq(a->isa, want);
    ck_assert_int_eq(cpu_isa_select(a, CPU_ISA_PORTABLE), CPU_ISA_PORTABLE);
    ck_assert_int_eq(a->isa, CPU_ISA_PORTABLE);
    ck_assert_int_eq(b->isa, want);
    ck_assert_int_eq(cpu_isa_select(a, CPU_ISA_AVX512), want);
    cpu_fixture_free(a);
    cpu_fixture_free(b);
}
END_TEST

/* Signalling NaNs at each lane of a 16-wide block, among ordinary values and in the
 * short tail: a vector path must fall back for those blocks and still match convert.h,
 * which keeps a signalling NaN's bits where the instructions quiet it. */
START_TEST(test_signalling_nan_lanes)
{
    gan_backend *be = level_backend();
    enum { N = 64 + 13 };
    uint16_t h[N];
    float f[N];
    for (int lane = 0; lane < 16; lane++) {
        for (int i = 0; i < N; i++)
            h[i] = (uint16_t)(0x3c00 + i);
        h[lane] = 0x7c01;
        h[16 + lane] = 0xfd55;
        h[40 + lane] = 0x7e00; /* quiet: the instructions keep it as it is */
        h[64 + lane % 13] = 0x7d00;
        run_cast(be, GAN_F16, h, GAN_F32, f, N, 0, NULL);
        for (int i = 0; i < N; i++)
            expect(bits_of(f[i]) == bits_of(cpu_f16_to_f32(h[i])),
                   "lane %d: F16 %04x → F32 %08x, portable %08x", lane, h[i],
                   bits_of(f[i]), bits_of(cpu_f16_to_f32(h[i])));
    }
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- invalid */

START_TEST(test_invalid)
{
    gan_backend *be = level_backend();
    gan_buffer *a = cpu_fixture_buffer(be, 8, NULL), *b = cpu_fixture_buffer(be, 8, NULL);
    struct gan_ref x = { a, 0, GAN_F32 }, y = { b, 0, GAN_F16 };
    const char *needle = NULL;
    size_t n = 8;
    switch (_i) {
    case 0: n = 9; needle = "buffer holds"; break;          /* x is 8 floats (+1 byte) */
    case 1: y.offset = 10; needle = "offset"; break;         /* y holds 16 halves */
    case 2: x.dtype = (enum gan_dtype)42; needle = "not a gan_dtype"; break;
    case 3: y.buf = NULL; needle = "no buffer"; break;
    case 4: y.buf = a; y.offset = 2; needle = "overlap"; break;
    case 5: y.buf = a; y.dtype = GAN_F16; needle = "overlap"; break; /* same start, other type */
    }
    gan_status st = cpu_cast(be, n, &x, &y, NULL);
    ck_assert_int_eq(st, GAN_ERR_INVALID);
    expect(strstr(host_of(be)->last_error, needle), "message \"%s\" lacks \"%s\"",
                  host_of(be)->last_error, needle);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static void use_portable(void)
{
    case_level = CPU_ISA_PORTABLE;
}

static void use_f16c(void)
{
    case_level = CPU_ISA_F16C;
}

static void use_avx512(void)
{
    case_level = CPU_ISA_AVX512;
}

/* The conversion tests as test cases named "<group> <level>", each on the instances of
 * one converter level (level_backend). */
static void add_conversion_cases(Suite *s, enum cpu_isa isa)
{
    static void (*const setups[])(void) = { use_portable, use_f16c, use_avx512 };
    /* tcase_create keeps the pointer, so the names are static */
    static const char *const name[3][3] = {
        { "f16 portable", "bf16 portable", "counts portable" },
        { "f16 f16c", "bf16 f16c", "counts f16c" },
        { "f16 avx512", "bf16 avx512", "counts avx512" },
    };

    TCase *tc = tcase_create(name[isa][0]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_loop_test(tc, test_f16_all_patterns, 0, 17);
    tcase_add_loop_test(tc, test_f32_to_f16_boundaries, 0, 3);
    tcase_add_loop_test(tc, test_f32_to_f16_random, 0, 3);
    tcase_add_test(tc, test_signalling_nan_lanes);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[isa][1]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_test(tc, test_bf16_all_patterns);
    tcase_add_test(tc, test_f32_to_bf16);
    tcase_add_test(tc, test_between_16bit);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[isa][2]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_test(tc, test_counts_crafted);
    suite_add_tcase(s, tc);
}

static Suite *cast_suite(void)
{
    Suite *s = suite_create("cast");
    /* every level this CPU runs, the portable one always */
    for (int isa = CPU_ISA_PORTABLE; isa <= (int)cpu_isa_best(); isa++)
        add_conversion_cases(s, (enum cpu_isa)isa);

    TCase *tc = tcase_create("integers");
    tcase_add_loop_test(tc, test_int_to_float, 0, 6);
    tcase_add_test(tc, test_float_to_int);
    suite_add_tcase(s, tc);

    tc = tcase_create("levels");
    tcase_add_test(tc, test_dispatch);
    suite_add_tcase(s, tc);

    tc = tcase_create("invalid");
    tcase_add_loop_test(tc, test_invalid, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cast_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
