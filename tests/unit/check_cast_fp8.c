/* SPDX-License-Identifier: MIT */
/* check_cast_fp8.c — the CPU backend's casts to and from E4M3 and E5M2 against the
 * formats' definitions written out here: every pattern decoded, every rounding boundary
 * and tie encoded, in both saturation modes, with their counts, on every vector level
 * the CPU has (portable, F16C/AVX2, AVX-512). */
#include "config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#include "../../backends/cpu/convert.h"

/* An element check calls into Check only when it fails: a checkpoint per success would
 * dominate loops over hundreds of thousands of elements. */
#define expect(cond, ...) \
    do { \
        if (!(cond)) \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

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

/* ---------------------------------------------------------------- the formats, written out */

/* From the OCP 8-bit floating point specification, not from the backend's code. */
struct format {
    enum gan_dtype dt;
    const char *name;
    int ebits, mbits, bias;
    int has_inf;        /* E5M2: IEEE infinities and NaNs; E4M3: only S.1111.111 is NaN */
    double max;
    unsigned max_code;
};

static const struct format formats[2] = {
    { GAN_F8E4M3, "E4M3", 4, 3, 7, 0, 448.0, 0x7e },
    { GAN_F8E5M2, "E5M2", 5, 2, 15, 1, 57344.0, 0x7b },
};

/* The value of pattern b: (−1)^s · m · 2^(1−bias−M) for exponent 0, (−1)^s · (2^M + m)
 * · 2^(e−bias−M) otherwise; E5M2's exponent 31 is ±inf (m = 0) or NaN, and E4M3's
 * S.1111.111 is NaN. */
static double ref_decode(const struct format *f, unsigned b)
{
    unsigned s = b >> 7, e = (b >> f->mbits) & ((1u << f->ebits) - 1u);
    unsigned m = b & ((1u << f->mbits) - 1u);
    unsigned e_top = (1u << f->ebits) - 1u, m_top = (1u << f->mbits) - 1u;
    double v;
    if (f->has_inf && e == e_top)
        v = m == 0 ? INFINITY : NAN;
    else if (!f->has_inf && e == e_top && m == m_top)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - f->bias - f->mbits);
    else
        v = ldexp((double)((1u << f->mbits) + m), (int)e - f->bias - f->mbits);
    return s ? -v : v;
}

struct encoded {
    unsigned bits;
    int overflow;       /* finite, and rounded beyond the largest finite value */
};

/* v rounded to the format by the definition: scale by the spacing of v's binade (the
 * subnormals' below the smallest normal), round to an integer (nearest even), scale
 * back, and find the pattern of that value. A NaN gives the format's NaN of v's sign
 * (its payload is checked against fp8.h separately). */
static struct encoded ref_encode(const struct format *f, double v, int saturate)
{
    struct encoded r = { signbit(v) ? 0x80u : 0u, 0 };
    if (isnan(v)) {
        r.bits |= f->has_inf ? 0x7eu : 0x7fu;
        return r;
    }
    double a = fabs(v), q;
    if (a == 0.0)
        return r;
    if (isinf(a)) {
        q = INFINITY;
    } else {
        int e = ilogb(a);
        if (e < 1 - f->bias)
            e = 1 - f->bias;
        double ulp = ldexp(1.0, e - f->mbits);
        q = nearbyint(a / ulp) * ulp;
    }
    if (q > f->max) {
        r.overflow = !isinf(a);
        r.bits |= saturate ? f->max_code : f->has_inf ? 0x7cu : 0x7fu;
        return r;
    }
    for (unsigned b = 0; b <= f->max_code; b++)
        if (ref_decode(f, b) == q) {
            r.bits |= b;
            return r;
        }
    ck_abort_msg("%s: %.17g rounds to %.17g, which is no pattern", f->name, v, q);
    return r;
}

static int is_nan_pattern(const struct format *f, unsigned b)
{
    return isnan(ref_decode(f, b));
}

/* The counts of backend.h from values, for a cast of `in` whose output is pattern b. */
static void ref_count(struct gan_cast_counts *c, const struct format *f, double in,
                      unsigned b, int overflow)
{
    double out = ref_decode(f, b);
    c->elements++;
    if (!isfinite(in)) {
        c->nonfinite++;
        return;
    }
    c->overflow += overflow ? 1u : 0u;
    if (in != 0.0 && out == 0.0)
        c->underflow++;
    if (out != 0.0 && fabs(out) < ldexp(1.0, 1 - f->bias))
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

/* ---------------------------------------------------------------- running a cast */

static struct test_host *host_of(gan_backend *be)
{
    return (struct test_host *)be->host->ctx;
}

/* The vector level of the running test case (Check runs each test in a process of its
 * own); -1 outside the level cases: the widest. */
static int case_level = -1;

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

/* n elements of `in` (xt) cast to `out` (yt) through cpu_cast_flags, both operands
 * `offset` elements into their buffers, so that vector loops meet unaligned starts and
 * short tails. */
static void run_cast(gan_backend *be, enum gan_dtype xt, const void *in, enum gan_dtype yt,
                     void *out, size_t n, size_t offset, int saturate,
                     struct gan_cast_counts *counts)
{
    size_t sx = gan_dtype_size(xt), sy = gan_dtype_size(yt);
    gan_buffer *bx, *by;
    ck_assert_int_eq(cpu_buffer_alloc(be, (offset + n) * sx, &bx), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, (offset + n) * sy, &by), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, bx, offset * sx, in, n * sx), GAN_OK);
    struct gan_ref x = { bx, offset, xt }, y = { by, offset, yt };
    gan_status st = cpu_cast_flags(be, n, &x, &y, saturate ? GAN_CAST_SATURATE : 0, counts);
    expect(st == GAN_OK, "cast %s→%s failed: %s", gan_dtype_name(xt), gan_dtype_name(yt),
           host_of(be)->last_error);
    ck_assert_int_eq(cpu_download(be, out, by, offset * sy, n * sy), GAN_OK);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}

/* Checks the cast of FP32 values `in` to format f: each against the definition (a NaN
 * against NaN-ness and sign), each bit for bit against fp8.h's function (which is what
 * proves a vector level, NaN payloads included), and the counts. */
static void check_encode(gan_backend *be, const struct format *f, const float *in, size_t n,
                         size_t offset, int saturate)
{
    uint8_t *out = malloc(n + 1);
    ck_assert_ptr_nonnull(out);
    struct gan_cast_counts got, want = { 0 };
    run_cast(be, GAN_F32, in, f->dt, out, n, offset, saturate, &got);
    for (size_t i = 0; i < n; i++) {
        struct encoded r = ref_encode(f, in[i], saturate);
        if (isnan(in[i]))
            expect(is_nan_pattern(f, out[i]) && (out[i] & 0x80) == (r.bits & 0x80),
                   "%s: F32 NaN %08x → %02x is not a NaN of the same sign", f->name,
                   bits_of(in[i]), out[i]);
        else
            expect(out[i] == r.bits, "%s%s: F32 %08x (%.9g) → %02x, the definition gives %02x",
                   f->name, saturate ? " saturating" : "", bits_of(in[i]), (double)in[i],
                   out[i], r.bits);
        unsigned portable = gan_fp8_bits(f->dt, in[i], saturate);
        expect(out[i] == portable, "%s: F32 %08x → %02x, but fp8.h gives %02x", f->name,
               bits_of(in[i]), out[i], portable);
        ref_count(&want, f, in[i], r.bits, r.overflow);
    }
    char what[64];
    snprintf(what, sizeof what, "F32→%s%s", f->name, saturate ? " saturating" : "");
    assert_counts(&got, &want, what);
    free(out);
}

/* ---------------------------------------------------------------- inputs */

static void push(float *v, size_t *n, float f)
{
    v[(*n)++] = f;
    v[(*n)++] = -f;
}

/* The format's boundaries: every finite value, every midpoint between neighbours (the
 * ties) and the FP32 numbers just around both, the midpoint above the largest value
 * (where overflow starts), values far beyond, FP32's own subnormals, the specials, and
 * both zeros. Each with its negation. */
static float *boundaries(const struct format *f, size_t *count)
{
    size_t cap = 128 * 12 + 64, n = 0;
    float *v = malloc(cap * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (unsigned b = 0; b <= f->max_code; b++) {
        float a = (float)ref_decode(f, b);
        /* the next value up; above the largest, where rounding up would go */
        double next = b < f->max_code ? ref_decode(f, b + 1)
                                      : f->max + ldexp(1.0, ilogb(f->max) - f->mbits);
        float mid = (float)((a + next) / 2); /* exact: at most 5 significant bits */
        push(v, &n, a);
        push(v, &n, nextafterf(a, 0));
        push(v, &n, nextafterf(a, INFINITY));
        push(v, &n, mid);
        push(v, &n, nextafterf(mid, 0));
        push(v, &n, nextafterf(mid, INFINITY));
    }
    const float named[] = {
        (float)(2 * f->max), (float)(1.5 * f->max), 1e30f, FLT_MAX, INFINITY, NAN,
        float_of(1), float_of(0x007fffffu), FLT_MIN, 1e-30f, float_of(0x7f800001u),
        float_of(0x7fa00000u), float_of(0x7fc00000u), float_of(0x7fe00000u),
        float_of(0x7fbfffffu), float_of(0x7fffffffu), 1.0f, 0.1f, 1.0f / 3.0f,
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        push(v, &n, named[i]);
    ck_assert_uint_le(n, cap);
    *count = n;
    return v;
}

/* Every FP32 binade with the mantissas at and around the rounding points of both
 * formats (3 and 2 kept bits: half an ulp at bit 19 and bit 20). */
static float *binades(size_t *count)
{
    static const uint32_t mants[] = {
        0, 1, 0x7fffff, 0x400000, 0x3fffff, 0x400001, 0x80000, 0x7ffff, 0x80001, 0x180000,
        0x17ffff, 0x180001, 0x100000, 0xfffff, 0x100001, 0x300000, 0x2fffff, 0x300001,
        0x700000, 0x6fffff, 0x700001, 0x780000, 0x77ffff, 0x780001,
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

/* ---------------------------------------------------------------- decoding */

/* All 256 patterns of each format widen to the exact value (a NaN to a NaN of its sign,
 * E5M2's with its payload, E4M3's the quiet NaN), at unaligned starts and with tails;
 * the counts see the non-finite ones. */
START_TEST(test_decode_all)
{
    gan_backend *be = level_backend();
    const struct format *f = &formats[_i / 4];
    size_t offset = (size_t)(_i % 4) * 5; /* 0, 5, 10, 15 */
    const size_t n = 256 + 19;
    uint8_t in[256 + 19];
    float out[256 + 19];
    for (size_t i = 0; i < n; i++)
        in[i] = (uint8_t)(i * 7 + 3); /* every pattern once in the first 256 */
    struct gan_cast_counts got;
    run_cast(be, f->dt, in, GAN_F32, out, n, offset, 0, &got);
    uint64_t nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        double v = ref_decode(f, in[i]);
        unsigned s = in[i] >> 7;
        if (isnan(v)) {
            uint32_t want = f->has_inf ? (s << 31) | 0x7f800000u | (uint32_t)(in[i] & 3) << 21
                                       : (s << 31) | 0x7fc00000u;
            expect(bits_of(out[i]) == want, "%s NaN %02x → F32 %08x, want %08x", f->name,
                   in[i], bits_of(out[i]), want);
        } else {
            expect(bits_of(out[i]) == bits_of((float)v), "%s %02x → F32 %08x (%.9g), want %.9g",
                   f->name, in[i], bits_of(out[i]), (double)out[i], v);
        }
        expect(bits_of(out[i]) == bits_of(gan_fp8_decode(f->dt, in[i])),
               "%s %02x → F32 %08x, but fp8.h gives %08x", f->name, in[i], bits_of(out[i]),
               bits_of(gan_fp8_decode(f->dt, in[i])));
        nonfinite += !isfinite(v);
    }
    ck_assert_uint_eq(got.elements, n);
    ck_assert_uint_eq(got.nonfinite, nonfinite);
    ck_assert_uint_eq(got.overflow + got.underflow + got.subnormal, 0);

    /* and back: every finite pattern and inf is itself again without saturation;
     * saturating, inf becomes the largest value, and NaN stays NaN either way */
    for (int saturate = 0; saturate < 2; saturate++) {
        uint8_t back[256 + 19];
        run_cast(be, GAN_F32, out, f->dt, back, n, offset, saturate, &got);
        for (size_t i = 0; i < n; i++) {
            double v = ref_decode(f, in[i]);
            unsigned want = isinf(v) && saturate ? (in[i] & 0x80u) | f->max_code : in[i];
            if (isnan(v))
                expect(is_nan_pattern(f, back[i]) && (back[i] & 0x80) == (in[i] & 0x80),
                       "%s NaN %02x came back as %02x", f->name, in[i], back[i]);
            else
                expect(back[i] == want, "%s %02x came back as %02x%s", f->name, in[i],
                       back[i], saturate ? " (saturating)" : "");
        }
        ck_assert_uint_eq(got.overflow + got.underflow, 0);
        ck_assert_uint_eq(got.nonfinite, nonfinite);
    }
    cpu_fixture_free(be);
}
END_TEST

/* FP8 into F16 and BF16, both exact; and into the other FP8 type, rounded once. */
START_TEST(test_decode_to_16bit_and_fp8)
{
    gan_backend *be = level_backend();
    const struct format *f = &formats[_i];
    const struct format *g = &formats[1 - _i];
    uint8_t in[256], to8[256];
    uint16_t h[256];
    for (int i = 0; i < 256; i++)
        in[i] = (uint8_t)i;
    struct gan_cast_counts got;
    for (int k = 0; k < 2; k++) {
        enum gan_dtype yt = k == 0 ? GAN_F16 : GAN_BF16;
        run_cast(be, f->dt, in, yt, h, 256, 3, 0, &got);
        for (int i = 0; i < 256; i++) {
            double v = ref_decode(f, in[i]), w = yt == GAN_F16 ? f16_decode(h[i]) : bf16_decode(h[i]);
            expect(isnan(v) ? isnan(w) && !!signbit(w) == !!(in[i] & 0x80) : w == v &&
                   !!signbit(w) == !!signbit(v), "%s %02x → %s %04x (%.9g), want %.9g",
                   f->name, in[i], gan_dtype_name(yt), h[i], w, v);
        }
        ck_assert_uint_eq(got.overflow + got.underflow, 0);
        /* E5M2's six subnormals, down to 2^-16, are FP16 subnormals too */
        ck_assert_uint_eq(got.subnormal, f->dt == GAN_F8E5M2 && yt == GAN_F16 ? 6 : 0);
    }
    for (int saturate = 0; saturate < 2; saturate++) {
        struct gan_cast_counts want = { 0 };
        run_cast(be, f->dt, in, g->dt, to8, 256, 1, saturate, &got);
        for (int i = 0; i < 256; i++) {
            double v = ref_decode(f, in[i]);
            struct encoded r = ref_encode(g, v, saturate);
            if (isnan(v))
                expect(is_nan_pattern(g, to8[i]) && (to8[i] & 0x80) == (in[i] & 0x80),
                       "%s NaN %02x → %s %02x", f->name, in[i], g->name, to8[i]);
            else
                expect(to8[i] == r.bits, "%s %02x (%.9g) → %s %02x, want %02x", f->name, in[i],
                       v, g->name, to8[i], r.bits);
            ref_count(&want, g, v, r.bits, r.overflow);
        }
        assert_counts(&got, &want, "FP8 → the other FP8");
        /* E5M2 → E4M3 overflows above 464 and underflows below 2^-10; E4M3 → E5M2
         * loses its third mantissa bit only */
        if (f->dt == GAN_F8E5M2)
            ck_assert_uint_gt(got.overflow * got.underflow, 0);
        else
            ck_assert_uint_eq(got.overflow + got.underflow, 0);
    }
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- encoding */

/* Every boundary and tie of the format, in both modes, at several offsets. */
START_TEST(test_encode_boundaries)
{
    gan_backend *be = level_backend();
    const struct format *f = &formats[_i / 2];
    int saturate = _i % 2;
    size_t n;
    float *v = boundaries(f, &n);
    for (size_t offset = 0; offset < 3; offset++)
        check_encode(be, f, v, n - offset, offset, saturate);
    free(v);
    v = binades(&n);
    check_encode(be, f, v, n, 1, saturate);
    free(v);
    cpu_fixture_free(be);
}
END_TEST

/* Random FP32 bit patterns (all of FP32, NaN payloads included), and random values with
 * exponents over the format's range and a little beyond. */
START_TEST(test_encode_random)
{
    gan_backend *be = level_backend();
    const struct format *f = &formats[_i / 2];
    int saturate = _i % 2;
    const size_t n = 1u << 17;
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    rng_seed(0xf8f8u + (uint64_t)_i);
    int lo = 127 - f->bias - f->mbits - 3, span = f->bias + f->mbits + (1 << (f->ebits - 1)) + 5;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next();
            v[i] = round == 0 ? float_of((uint32_t)r)
                              : float_of((uint32_t)((r >> 32) & 0x807fffffu) |
                                         ((uint32_t)(lo + (int)(r % (uint64_t)span)) << 23));
        }
        check_encode(be, f, v, n - 7, 7, saturate);
    }
    free(v);
    cpu_fixture_free(be);
}
END_TEST

/* Every F16 and every BF16 pattern into the format, rounded once from its exact value. */
START_TEST(test_encode_from_16bit)
{
    gan_backend *be = level_backend();
    const struct format *f = &formats[_i / 4];
    enum gan_dtype xt = (_i / 2) % 2 ? GAN_BF16 : GAN_F16;
    int saturate = _i % 2;
    uint16_t *h = malloc(65536 * 2);
    uint8_t *out = malloc(65536);
    ck_assert(h && out);
    for (size_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    struct gan_cast_counts got, want = { 0 };
    run_cast(be, xt, h, f->dt, out, 65536, 2, saturate, &got);
    for (size_t i = 0; i < 65536; i++) {
        double v = xt == GAN_F16 ? f16_decode(h[i]) : bf16_decode(h[i]);
        struct encoded r = ref_encode(f, v, saturate);
        if (isnan(v))
            expect(is_nan_pattern(f, out[i]) && (out[i] & 0x80) == (r.bits & 0x80),
                   "%s NaN %04x → %s %02x", gan_dtype_name(xt), h[i], f->name, out[i]);
        else
            expect(out[i] == r.bits, "%s %04x (%.9g) → %s %02x, want %02x",
                   gan_dtype_name(xt), h[i], v, f->name, out[i], r.bits);
        unsigned portable = gan_fp8_bits(f->dt, gan_load(h, xt, (int64_t)i), saturate);
        expect(out[i] == portable, "%s %04x → %02x, but fp8.h gives %02x", gan_dtype_name(xt),
               h[i], out[i], portable);
        ref_count(&want, f, v, r.bits, r.overflow);
    }
    assert_counts(&got, &want, "16-bit → FP8");
    ck_assert_uint_gt(got.overflow, 0);
    ck_assert_uint_gt(got.underflow, 0);
    free(h);
    free(out);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- counts, written out */

/* Hand-counted casts of FP32 values into each format, in both modes. */
START_TEST(test_counts_crafted)
{
    gan_backend *be = level_backend();
    const float e4[] = {
        448.0f,                 /* the largest: 0x7e */
        464.0f,                 /* the tie above it rounds to even, 448: no overflow */
        nextafterf(464.0f, 1e9f), /* overflow: NaN, or 448 saturated */
        -1e6f,                  /* overflow: NaN, or -448 saturated */
        -INFINITY,              /* non-finite: NaN, or -448 saturated */
        NAN,                    /* non-finite: NaN either way */
        0x1p-10f,               /* half the smallest subnormal: the tie goes to 0, underflow */
        -0x1p-11f,              /* underflow to -0 */
        float_of(1),            /* an FP32 subnormal: underflow */
        3 * 0x1p-11f,           /* rounds up to 2^-9: subnormal */
        0x1p-7f,                /* 4 · 2^-9: subnormal */
        nextafterf(0x1p-6f, 0), /* rounds up to 2^-6, the smallest normal */
        0.0f, -0.0f, 1.0f,      /* nothing to count */
    };
    enum { N4 = sizeof e4 / sizeof e4[0] };
    uint8_t out[N4];
    for (int saturate = 0; saturate < 2; saturate++) {
        struct gan_cast_counts got;
        run_cast(be, GAN_F32, e4, GAN_F8E4M3, out, N4, 1, saturate, &got);
        struct gan_cast_counts want = { .elements = N4, .overflow = 2, .underflow = 3,
                                        .subnormal = 2, .nonfinite = 2 };
        assert_counts(&got, &want, saturate ? "crafted E4M3 saturating" : "crafted E4M3");
        const uint8_t expected[N4] = {
            0x7e, 0x7e, saturate ? 0x7e : 0x7f, saturate ? 0xfe : 0xff, saturate ? 0xfe : 0xff,
            0x7f, 0x00, 0x80, 0x00, 0x01, 0x04, 0x08, 0x00, 0x80, 0x38,
        };
        for (int i = 0; i < N4; i++)
            expect(out[i] == expected[i], "crafted E4M3 %d: %.9g → %02x, want %02x", i,
                   (double)e4[i], out[i], expected[i]);
    }

    const float e5[] = {
        57344.0f,               /* the largest: 0x7b */
        nextafterf(61440.0f, 0), /* below the tie: 57344 */
        61440.0f,               /* the tie rounds to even, up to 2^16: overflow */
        INFINITY,               /* non-finite: inf, or 57344 saturated */
        -NAN,                   /* non-finite */
        0x1p-17f,               /* half the smallest subnormal: underflow */
        1.5f * 0x1p-17f,        /* 2^-16: subnormal */
        0x1p-15f,               /* 2 · 2^-16: subnormal */
        0x1p-14f,               /* the smallest normal */
        -2.25f,                 /* the tie between 2 and 2.5 goes to even, 2 */
    };
    enum { N5 = sizeof e5 / sizeof e5[0] };
    uint8_t out5[N5];
    for (int saturate = 0; saturate < 2; saturate++) {
        struct gan_cast_counts got;
        run_cast(be, GAN_F32, e5, GAN_F8E5M2, out5, N5, 0, saturate, &got);
        struct gan_cast_counts want = { .elements = N5, .overflow = 1, .underflow = 1,
                                        .subnormal = 2, .nonfinite = 2 };
        assert_counts(&got, &want, saturate ? "crafted E5M2 saturating" : "crafted E5M2");
        const uint8_t expected[N5] = {
            0x7b, 0x7b, saturate ? 0x7b : 0x7c, saturate ? 0x7b : 0x7c, 0xfe, 0x00, 0x01,
            0x02, 0x04, 0xc0,
        };
        for (int i = 0; i < N5; i++)
            expect(out5[i] == expected[i], "crafted E5M2 %d: %.9g → %02x, want %02x", i,
                   (double)e5[i], out5[i], expected[i]);
    }

    /* FP8 to itself copies and counts its own subnormals and non-finite patterns, in a
     * separate buffer and in place */
    uint8_t all[256], copy[256];
    for (int i = 0; i < 256; i++)
        all[i] = (uint8_t)i;
    struct gan_cast_counts got;
    run_cast(be, GAN_F8E5M2, all, GAN_F8E5M2, copy, 256, 0, 0, &got);
    ck_assert_mem_eq(copy, all, 256);
    struct gan_cast_counts want = { .elements = 256, .subnormal = 6, .nonfinite = 8 };
    assert_counts(&got, &want, "E5M2 → E5M2");
    gan_buffer *b;
    ck_assert_int_eq(cpu_buffer_alloc(be, 256, &b), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, b, 0, all, 256), GAN_OK);
    struct gan_ref r = { b, 0, GAN_F8E4M3 };
    ck_assert_int_eq(cpu_cast(be, 256, &r, &r, &got), GAN_OK);
    struct gan_cast_counts want4 = { .elements = 256, .subnormal = 14, .nonfinite = 2 };
    assert_counts(&got, &want4, "E4M3 in place");
    ck_assert_int_eq(cpu_download(be, copy, b, 0, 256), GAN_OK);
    ck_assert_mem_eq(copy, all, 256);
    /* without counts, the same bits */
    gan_buffer *bf = cpu_fixture_buffer(be, 2, (const float[]){ 500.0f, -0x1p-9f });
    struct gan_ref x = { bf, 0, GAN_F32 };
    ck_assert_int_eq(cpu_cast_flags(be, 2, &x, &r, GAN_CAST_SATURATE, NULL), GAN_OK);
    ck_assert_int_eq(cpu_download(be, copy, b, 0, 2), GAN_OK);
    ck_assert_uint_eq(copy[0], 0x7e);
    ck_assert_uint_eq(copy[1], 0x81);
    /* cast is cast_flags without flags: overflow to NaN */
    ck_assert_int_eq(cpu_cast(be, 2, &x, &r, NULL), GAN_OK);
    ck_assert_int_eq(cpu_download(be, copy, b, 0, 1), GAN_OK);
    ck_assert_uint_eq(copy[0], 0x7f);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, bf);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- threads, and refusals */

/* A cast split across three threads gives one thread's bits and counts. */
START_TEST(test_threads)
{
    static const char *const three[] = { "threads=3", NULL };
    gan_backend *one = cpu_fixture_new(NULL), *many = cpu_fixture_new(three);
    const size_t n = 3 * 262144 + 77;
    float *v = malloc(n * sizeof *v);
    uint8_t *a = malloc(n), *b = malloc(n);
    ck_assert(v && a && b);
    rng_seed(99);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(rng_uniform(-1e5, 1e5) * ldexp(1.0, -rng_int(40)));
    for (int k = 0; k < 2; k++) {
        struct gan_cast_counts ca, cb;
        run_cast(one, GAN_F32, v, formats[k].dt, a, n, 0, k, &ca);
        run_cast(many, GAN_F32, v, formats[k].dt, b, n, 0, k, &cb);
        ck_assert_mem_eq(a, b, n);
        assert_counts(&cb, &ca, "three threads against one");
        ck_assert_uint_gt(ca.overflow, 0);
        ck_assert_uint_gt(ca.subnormal, 0);
    }
    free(v);
    free(a);
    free(b);
    cpu_fixture_free(one);
    cpu_fixture_free(many);
}
END_TEST

/* A flag the ABI does not define, saturation into a type that is not FP8, and FP8 with
 * an integer type are refused with a message saying what to do instead. */
START_TEST(test_refused)
{
    gan_backend *be = level_backend();
    gan_buffer *a = cpu_fixture_buffer(be, 8, NULL), *b = cpu_fixture_buffer(be, 8, NULL);
    static const struct {
        enum gan_dtype xt, yt;
        uint32_t flags;
        gan_status status;
        const char *needle;
    } cases[] = {
        { GAN_F32, GAN_F8E4M3, 2u, GAN_ERR_INVALID, "flags 0x2" },
        { GAN_F32, GAN_F16, GAN_CAST_SATURATE, GAN_ERR_UNSUPPORTED, "y is F16" },
        { GAN_F8E5M2, GAN_F32, GAN_CAST_SATURATE, GAN_ERR_UNSUPPORTED, "y is F32" },
        { GAN_I32, GAN_F8E4M3, 0, GAN_ERR_UNSUPPORTED, "I32 to F8_E4M3 is not supported" },
        { GAN_F8E5M2, GAN_U32, 0, GAN_ERR_UNSUPPORTED, "cast through F32" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gan_ref x = { a, 0, cases[i].xt }, y = { b, 0, cases[i].yt };
        gan_status st = cpu_cast_flags(be, 4, &x, &y, cases[i].flags, NULL);
        ck_assert_int_eq(st, cases[i].status);
        expect(strstr(host_of(be)->last_error, cases[i].needle), "message \"%s\" lacks \"%s\"",
               host_of(be)->last_error, cases[i].needle);
    }
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
 * one vector level. */
static void add_level_cases(Suite *s, enum cpu_isa isa)
{
    static void (*const setups[])(void) = { use_portable, use_f16c, use_avx512 };
    static const char *const name[3][3] = { /* tcase_create keeps the pointer */
        { "decode portable", "encode portable", "counts portable" },
        { "decode f16c", "encode f16c", "counts f16c" },
        { "decode avx512", "encode avx512", "counts avx512" },
    };
    TCase *tc = tcase_create(name[isa][0]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_loop_test(tc, test_decode_all, 0, 8);
    tcase_add_loop_test(tc, test_decode_to_16bit_and_fp8, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[isa][1]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_loop_test(tc, test_encode_boundaries, 0, 4);
    tcase_add_loop_test(tc, test_encode_random, 0, 4);
    tcase_add_loop_test(tc, test_encode_from_16bit, 0, 8);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[isa][2]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_test(tc, test_counts_crafted);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
}

static Suite *cast_fp8_suite(void)
{
    Suite *s = suite_create("cast_fp8");
    for (int isa = CPU_ISA_PORTABLE; isa <= (int)cpu_isa_best(); isa++)
        add_level_cases(s, (enum cpu_isa)isa);
    TCase *tc = tcase_create("threads");
    tcase_add_test(tc, test_threads);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cast_fp8_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
