/* SPDX-License-Identifier: MIT */
/* check_fp8_products.c — the CPU backend's FP8 products (fp8_stats, fp8_quantize,
 * fp8_dequantize, gemm_fp8) against references written out here from fp8.h's and
 * backend.h's definitions: every statistic, histogram bin, block maximum, stored byte,
 * count and product, per tensor and per block in both directions, on every vector level
 * the CPU has (portable, F16C/AVX2, AVX-512), and the same bits at one and at several
 * threads; gemm_fp8's BF16 route (oneDNN's BF16 matmul, where the build and the CPU have
 * it) against the same references, beside the FP32 route where scales would make values
 * subnormal, and at one and two threads on the demo's shapes. */
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
#include "../../backends/common/fp8.h"
#include "../../backends/cpu/fp8_products.h"

/* An element check calls into Check only when it fails. */
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

/* ---------------------------------------------------------------- references */

/* FP8 pattern b's value, from the OCP definition: exponent 0 is m · 2^(1−bias−M), the
 * others (2^M + m) · 2^(e−bias−M); E5M2's exponent 31 is inf or NaN, E4M3's S.1111.111
 * is its only NaN. */
static double fp8_value(enum gan_dtype dt, unsigned b)
{
    const int e5 = dt == GAN_F8E5M2, mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    const unsigned e = (b & 0x7fu) >> mb, m = b & ((1u << mb) - 1u);
    double mag;
    if (e5 && e == 31)
        mag = m ? NAN : INFINITY;
    else if (!e5 && (b & 0x7fu) == 0x7fu)
        mag = NAN;
    else if (e == 0)
        mag = ldexp(m, 1 - bias - mb);
    else
        mag = ldexp((1 << mb) + (int)m, (int)e - bias - mb);
    return (b & 0x80u) ? -mag : mag;
}

/* |v| beyond what rounds to the format's largest finite value: E4M3's 448 has an even
 * significand, so the midpoint 464 rounds down to it; E5M2's 57344 an odd one, so the
 * midpoint 61440 rounds up past it. */
static int beyond_max(enum gan_dtype dt, double v)
{
    double a = fabs(v);
    return dt == GAN_F8E5M2 ? a >= 61440.0 : a > 464.0;
}

static double min_normal(enum gan_dtype dt)
{
    return dt == GAN_F8E5M2 ? 0x1p-14 : 0x1p-6;
}

/* Stored elements of the float types, as bits in a uint32 and as exact values. */
static uint32_t store_bits(enum gan_dtype dt, double v)
{
    if (dt == GAN_F16)
        return f16_encode(v);
    if (dt == GAN_BF16) /* half_helpers' encoder leaves infinities to frexp */
        return isinf(v) ? (v < 0 ? 0xff80u : 0x7f80u) : bf16_encode(v);
    return bits_of((float)v);
}

static double stored_value(enum gan_dtype dt, uint32_t b)
{
    if (dt == GAN_F16)
        return f16_decode((uint16_t)b);
    if (dt == GAN_BF16)
        return bf16_decode((uint16_t)b);
    return float_of(b);
}

/* floor(log2 |v|) through frexp (|v| = f · 2^e, f in [0.5, 1)), as a histogram bin. */
static int log2_bin(double v)
{
    int e;
    frexp(fabs(v), &e);
    return e - 1 - GAN_FP8_LOG2_MIN;
}

/* The scale index of stored element (r, c), from fp8.h's description. */
static int64_t scale_at(const struct gan_fp8_layout *l, int64_t r, int64_t c)
{
    if (l->block == 0)
        return 0;
    if (l->along == GAN_FP8_ALONG_ROWS)
        return r * ((l->cols + l->block - 1) / l->block) + c / l->block;
    return (r / l->block) * l->cols + c;
}

/* ---------------------------------------------------------------- backends and buffers */

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

static const char *last_error(gan_backend *be)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

/* A buffer of n elements of dt whose element i has bits bits[i] (NULL: zeros). */
static gan_buffer *buffer_of(gan_backend *be, enum gan_dtype dt, size_t n, const uint32_t *bits)
{
    size_t es = gan_dtype_size(dt);
    gan_buffer *b = NULL;
    ck_assert_int_eq(cpu_buffer_alloc(be, n * es + 1, &b), GAN_OK);
    memset(b->data, 0, n * es + 1);
    for (size_t i = 0; bits && i < n; i++) {
        if (es == 4)
            memcpy(b->data + 4 * i, &bits[i], 4);
        else if (es == 2) {
            uint16_t h = (uint16_t)bits[i];
            memcpy(b->data + 2 * i, &h, 2);
        } else
            b->data[i] = (unsigned char)bits[i];
    }
    return b;
}

static uint32_t bits_at(const gan_buffer *b, enum gan_dtype dt, size_t i)
{
    size_t es = gan_dtype_size(dt);
    if (es == 4) {
        uint32_t u;
        memcpy(&u, b->data + 4 * i, 4);
        return u;
    }
    if (es == 2) {
        uint16_t h;
        memcpy(&h, b->data + 2 * i, 2);
        return h;
    }
    return b->data[i];
}

static gan_buffer *floats_buffer(gan_backend *be, const float *v, size_t n)
{
    gan_buffer *b = NULL;
    ck_assert_int_eq(cpu_buffer_alloc(be, n * sizeof(float) + 4, &b), GAN_OK);
    memcpy(b->data, v, n * sizeof(float));
    return b;
}

static struct gan_ref ref_of(gan_buffer *b, enum gan_dtype dt)
{
    struct gan_ref r = { b, 0, dt };
    return r;
}

/* ---------------------------------------------------------------- test data */

/* Values where the passes change behaviour: zeros of both signs, infinities and NaN,
 * FP32's smallest and largest, subnormals, and the FP8 formats' overflow edges. */
static const double specials[] = {
    0.0, -0.0, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 0x1p-149, -0x1p-149,
    0x1.8p-140, 0x1.fffffcp-127, FLT_MIN, 448.0, 464.0, 0x1.d1p8, -57344.0, 61440.0,
    0x1.dfffep15, 0x1p-9, 0x1p-10, 0x1.8p-10, 0x1p-16, 0x1p-17, 0x1p-6, 0x1p-14,
};
#define SPECIALS (sizeof specials / sizeof specials[0])

/* A value of FP32 magnitude from 2^-30 to 2^30, or one time in `one_in` a special. */
static double sample(int one_in)
{
    if (one_in && rng_int(one_in) == 0)
        return specials[rng_int((int)SPECIALS)];
    double mag = ldexp(rng_uniform(1.0, 2.0), rng_int(61) - 30);
    return rng_int(2) ? -mag : mag;
}

/* n elements of dt as stored bits. */
static uint32_t *sample_bits(enum gan_dtype dt, size_t n, int one_in)
{
    uint32_t *b = malloc(n * sizeof *b);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < n; i++)
        b[i] = store_bits(dt, sample(one_in));
    return b;
}

/* A scale: a power of two from 2^-12 to 2^12, or any FP32 value in that range. */
static float sample_scale(int power_of_two)
{
    double s = ldexp(1.0, rng_int(25) - 12);
    return (float)(power_of_two ? s : s * rng_uniform(1.0, 2.0));
}

static float *sample_scales(const struct gan_fp8_layout *l, int power_of_two)
{
    int64_t n = gan_fp8_scale_count(l);
    float *s = malloc((size_t)n * sizeof *s + 4);
    ck_assert_ptr_nonnull(s);
    for (int64_t i = 0; i < n; i++)
        s[i] = sample_scale(power_of_two);
    return s;
}

/* The layouts every pass is tried on: per tensor, blocks along rows and down columns,
 * each with a short last block, over shapes that cross the passes' 256-element chunks. */
struct layout_case {
    int64_t rows, cols, block;
    enum gan_fp8_direction along;
};

static const struct layout_case layouts[] = {
    { 13, 45, 0, GAN_FP8_ALONG_ROWS },
    { 5, 600, 0, GAN_FP8_ALONG_ROWS },
    { 13, 45, 8, GAN_FP8_ALONG_ROWS },
    { 5, 600, 32, GAN_FP8_ALONG_ROWS },
    { 3, 300, 128, GAN_FP8_ALONG_ROWS },
    { 13, 45, 4, GAN_FP8_ALONG_COLUMNS },
    { 300, 7, 32, GAN_FP8_ALONG_COLUMNS },
    { 37, 290, 128, GAN_FP8_ALONG_COLUMNS },
};
#define LAYOUTS (sizeof layouts / sizeof layouts[0])

static struct gan_fp8_layout layout_of(const struct layout_case *c)
{
    struct gan_fp8_layout l = { c->rows, c->cols, c->block, c->along };
    return l;
}

static const enum gan_dtype float_types[3] = { GAN_F32, GAN_BF16, GAN_F16 };
static const enum gan_dtype fp8_types[2] = { GAN_F8E4M3, GAN_F8E5M2 };

/* ---------------------------------------------------------------- fp8_stats */

/* What fp8_stats should find in stored elements xb of type xt, laid out as l. */
struct stats_want {
    uint64_t zeros, nonfinite, hist[GAN_FP8_LOG2_BINS];
    double amax;
    double *block_amax;
};

static void stats_reference(const struct gan_fp8_layout *l, enum gan_dtype xt,
                            const uint32_t *xb, struct stats_want *w)
{
    memset(w, 0, sizeof *w);
    w->block_amax = calloc((size_t)gan_fp8_scale_count(l) + 1, sizeof(double));
    ck_assert_ptr_nonnull(w->block_amax);
    for (int64_t r = 0; r < l->rows; r++)
        for (int64_t c = 0; c < l->cols; c++) {
            double v = stored_value(xt, xb[r * l->cols + c]);
            if (!isfinite(v)) {
                w->nonfinite++;
                continue;
            }
            if (v == 0.0) {
                w->zeros++;
                continue;
            }
            double a = fabs(v);
            w->amax = a > w->amax ? a : w->amax;
            w->hist[log2_bin(v)]++;
            double *b = &w->block_amax[scale_at(l, r, c)];
            *b = a > *b ? a : *b;
        }
}

START_TEST(test_stats)
{
    const enum gan_dtype xt = float_types[_i];
    gan_backend *be = level_backend();
    rng_seed(100 + (uint64_t)_i);
    for (size_t li = 0; li < LAYOUTS; li++) {
        struct gan_fp8_layout l = layout_of(&layouts[li]);
        const size_t n = (size_t)(l.rows * l.cols);
        const int64_t count = gan_fp8_scale_count(&l);
        uint32_t *xb = sample_bits(xt, n, 5);
        /* FP32's smallest subnormal and largest value: the histogram's two ends */
        xb[1] = store_bits(xt, 0x1p-149);
        xb[n - 2] = store_bits(xt, -FLT_MAX);
        gan_buffer *bx = buffer_of(be, xt, n, xb);
        struct gan_ref rx = ref_of(bx, xt);
        struct stats_want w;
        stats_reference(&l, xt, xb, &w);

        struct gan_fp8_stats got;
        float *block_amax = malloc((size_t)count * sizeof *block_amax);
        ck_assert_ptr_nonnull(block_amax);
        memset(&got, 0xa5, sizeof got);
        gan_status st = cpu_fp8_stats(be, &l, &rx, 1, block_amax, &got);
        expect(st == GAN_OK, "fp8_stats: %s", last_error(be));
        expect(got.elements == n && got.zeros == w.zeros && got.nonfinite == w.nonfinite,
               "layout %zu %s: elements/zeros/nonfinite %llu/%llu/%llu, expected %zu/%llu/%llu",
               li, gan_dtype_name(xt), (unsigned long long)got.elements,
               (unsigned long long)got.zeros, (unsigned long long)got.nonfinite, n,
               (unsigned long long)w.zeros, (unsigned long long)w.nonfinite);
        expect((double)got.amax == w.amax, "layout %zu %s: amax %a, expected %a", li,
               gan_dtype_name(xt), (double)got.amax, w.amax);
        for (int b = 0; b < GAN_FP8_LOG2_BINS; b++)
            expect(got.log2_hist[b] == w.hist[b],
                   "layout %zu %s: bin %d (2^%d) holds %llu, expected %llu", li,
                   gan_dtype_name(xt), b, b + GAN_FP8_LOG2_MIN,
                   (unsigned long long)got.log2_hist[b], (unsigned long long)w.hist[b]);
        if (xt == GAN_F32)
            ck_assert(w.hist[0] > 0 && w.hist[GAN_FP8_LOG2_BINS - 1] > 0);
        for (int64_t i = 0; i < count; i++)
            expect((double)block_amax[i] == (l.block ? w.block_amax[i] : w.amax),
                   "layout %zu %s: block %lld's amax %a, expected %a", li, gan_dtype_name(xt),
                   (long long)i, (double)block_amax[i], l.block ? w.block_amax[i] : w.amax);

        /* without the histogram and the block maxima: the same counts, zero bins */
        struct gan_fp8_stats plain;
        memset(&plain, 0xa5, sizeof plain);
        ck_assert_int_eq(cpu_fp8_stats(be, &l, &rx, 0, NULL, &plain), GAN_OK);
        ck_assert(plain.elements == n && plain.zeros == w.zeros &&
                  plain.nonfinite == w.nonfinite && plain.amax == got.amax);
        for (int b = 0; b < GAN_FP8_LOG2_BINS; b++)
            ck_assert_uint_eq(plain.log2_hist[b], 0);

        free(w.block_amax);
        free(block_amax);
        free(xb);
        cpu_buffer_free(be, bx);
    }
    cpu_fixture_free(be);
}
END_TEST

/* An operand with no elements: nothing is read, everything is zero. */
START_TEST(test_stats_empty)
{
    gan_backend *be = level_backend();
    struct gan_fp8_layout l = { 0, 16, 0, GAN_FP8_ALONG_ROWS };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    struct gan_fp8_stats got;
    float block_amax[1] = { 7.0f };
    memset(&got, 0xa5, sizeof got);
    ck_assert_int_eq(cpu_fp8_stats(be, &l, &none, 1, block_amax, &got), GAN_OK);
    ck_assert(got.elements == 0 && got.zeros == 0 && got.nonfinite == 0 && got.amax == 0.0f);
    ck_assert(block_amax[0] == 0.0f);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- fp8_quantize */

/* Quantizes stored elements xb (xt) with scales s into dt and checks every byte against
 * fp8.h's scalar encoder of the FP32 product, and the counts against their definitions. */
static void check_quantize(gan_backend *be, const struct gan_fp8_layout *l, enum gan_dtype xt,
                           const uint32_t *xb, const float *s, enum gan_dtype dt, int saturate,
                           const char *what)
{
    const size_t n = (size_t)(l->rows * l->cols);
    gan_buffer *bx = buffer_of(be, xt, n, xb);
    gan_buffer *bs = floats_buffer(be, s, (size_t)gan_fp8_scale_count(l));
    gan_buffer *by = buffer_of(be, dt, n, NULL);
    struct gan_ref rx = ref_of(bx, xt), rs = ref_of(bs, GAN_F32), ry = ref_of(by, dt);
    struct gan_fp8_cast_stats got;
    memset(&got, 0xa5, sizeof got);
    gan_status st = cpu_fp8_quantize(be, l, &rx, &rs, saturate ? GAN_CAST_SATURATE : 0, &ry, &got);
    expect(st == GAN_OK, "%s: fp8_quantize: %s", what, last_error(be));

    struct gan_fp8_cast_stats want = { .elements = n };
    double amax = 0.0;
    for (int64_t r = 0; r < l->rows; r++)
        for (int64_t c = 0; c < l->cols; c++) {
            const size_t i = (size_t)(r * l->cols + c);
            const float x = (float)stored_value(xt, xb[i]), scale = s[scale_at(l, r, c)];
            const float p = x * scale;
            const unsigned q = gan_fp8_bits(dt, p, saturate);
            expect(bits_at(by, dt, i) == q,
                   "%s: element (%lld, %lld): %a · %a = %a stored as 0x%02x, expected 0x%02x",
                   what, (long long)r, (long long)c, (double)x, (double)scale, (double)p,
                   (unsigned)bits_at(by, dt, i), q);
            const double qv = fp8_value(dt, q);
            if (!isfinite(x)) {
                want.nonfinite++;
                continue;
            }
            amax = fabs(x) > amax ? fabs(x) : amax;
            want.overflow += !isnan(p) && beyond_max(dt, p);
            want.underflow += x != 0.0f && qv == 0.0;
            want.subnormal += qv != 0.0 && fabs(qv) < min_normal(dt);
        }
    expect(got.elements == want.elements && got.overflow == want.overflow &&
               got.underflow == want.underflow && got.subnormal == want.subnormal &&
               got.nonfinite == want.nonfinite && (double)got.amax == amax,
           "%s: counts %llu/%llu/%llu/%llu/%llu amax %a, expected %llu/%llu/%llu/%llu/%llu "
           "amax %a", what, (unsigned long long)got.elements,
           (unsigned long long)got.overflow, (unsigned long long)got.underflow,
           (unsigned long long)got.subnormal, (unsigned long long)got.nonfinite,
           (double)got.amax, (unsigned long long)want.elements,
           (unsigned long long)want.overflow, (unsigned long long)want.underflow,
           (unsigned long long)want.subnormal, (unsigned long long)want.nonfinite, amax);

    /* without the statistics: the same bytes */
    uint8_t *first = malloc(n);
    ck_assert_ptr_nonnull(first);
    memcpy(first, by->data, n);
    memset(by->data, 0x5a, n);
    ck_assert_int_eq(cpu_fp8_quantize(be, l, &rx, &rs, saturate ? GAN_CAST_SATURATE : 0, &ry,
                                      NULL), GAN_OK);
    ck_assert_mem_eq(by->data, first, n);
    free(first);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bs);
    cpu_buffer_free(be, by);
}

START_TEST(test_quantize)
{
    const enum gan_dtype xt = float_types[_i % 3], dt = fp8_types[(_i / 3) % 2];
    const int saturate = _i / 6;
    gan_backend *be = level_backend();
    rng_seed(200 + (uint64_t)_i);
    for (size_t li = 0; li < LAYOUTS; li++) {
        struct gan_fp8_layout l = layout_of(&layouts[li]);
        uint32_t *xb = sample_bits(xt, (size_t)(l.rows * l.cols), 6);
        float *s = sample_scales(&l, li % 2);
        char what[96];
        snprintf(what, sizeof what, "%s → %s%s, layout %zu", gan_dtype_name(xt),
                 gan_dtype_name(dt), saturate ? " saturating" : "", li);
        check_quantize(be, &l, xt, xb, s, dt, saturate, what);
        free(xb);
        free(s);
    }
    cpu_fixture_free(be);
}
END_TEST

/* The products where the encoding changes its rule, each with its FP32 neighbours and
 * both signs: every eighth of the smallest subnormal step up to twice the smallest
 * normal (the ties to even between subnormals, and the carry into the smallest normal),
 * the largest finite value and the overflow midpoint, FP32's subnormals, infinities and
 * NaNs with payloads; through scales 1 and 2^-3, per tensor and per block. */
START_TEST(test_quantize_edges)
{
    const enum gan_dtype dt = fp8_types[_i % 2];
    const int saturate = _i / 2;
    gan_backend *be = level_backend();
    const double step = dt == GAN_F8E5M2 ? 0x1p-16 : 0x1p-9;
    const double top[] = { 448.0, 464.0, 480.0, 57344.0, 61440.0, 65536.0, 0x1p-149,
                           0x1p-130, FLT_MIN };
    const int eighths = (int)(16.0 * min_normal(dt) / step);
    const size_t n = (size_t)(eighths + 1 + 9) * 3 * 2 + 4;
    uint32_t *xb = malloc(n * sizeof *xb);
    ck_assert_ptr_nonnull(xb);
    size_t at = 0;
    for (int i = 0; i <= eighths + 9; i++) {
        const float v = i <= eighths ? (float)(i * step / 8.0) : (float)top[i - eighths - 1];
        const float near[3] = { nextafterf(v, 0.0f), v, nextafterf(v, INFINITY) };
        for (int k = 0; k < 3; k++) {
            xb[at++] = bits_of(near[k]);
            xb[at++] = bits_of(-near[k]);
        }
    }
    xb[at++] = 0x7f800000u;
    xb[at++] = 0xff800000u;
    xb[at++] = 0x7fa00001u; /* NaNs whose payload E5M2 keeps a bit of */
    xb[at++] = 0xffe00000u;
    ck_assert_uint_eq(at, n);
    for (int scaled = 0; scaled < 2; scaled++)
        for (int blocked = 0; blocked < 2; blocked++) {
            struct gan_fp8_layout l = { 2, (int64_t)n / 2, blocked ? 64 : 0,
                                        GAN_FP8_ALONG_ROWS };
            float *s = sample_scales(&l, 1);
            for (int64_t i = 0; i < gan_fp8_scale_count(&l); i++)
                s[i] = scaled ? 0x1p-3f : 1.0f;
            char what[96];
            snprintf(what, sizeof what, "edges into %s%s, scale %s, %s", gan_dtype_name(dt),
                     saturate ? " saturating" : "", scaled ? "2^-3" : "1",
                     blocked ? "blocks of 64" : "per tensor");
            check_quantize(be, &l, GAN_F32, xb, s, dt, saturate, what);
            free(s);
        }
    free(xb);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- fp8_dequantize */

START_TEST(test_dequantize)
{
    const enum gan_dtype yt = float_types[_i % 3], dt = fp8_types[(_i / 3) % 2];
    const int power_of_two = _i / 6;
    gan_backend *be = level_backend();
    rng_seed(300 + (uint64_t)_i);
    for (size_t li = 0; li < LAYOUTS; li++) {
        struct gan_fp8_layout l = layout_of(&layouts[li]);
        const size_t n = (size_t)(l.rows * l.cols);
        uint32_t *qb = malloc(n * sizeof *qb);
        ck_assert_ptr_nonnull(qb);
        for (size_t i = 0; i < n; i++) /* every pattern, NaN and inf included */
            qb[i] = i < 256 ? (uint32_t)i : (uint32_t)rng_int(256);
        float *s = sample_scales(&l, power_of_two);
        gan_buffer *bq = buffer_of(be, dt, n, qb), *by = buffer_of(be, yt, n, NULL);
        gan_buffer *bs = floats_buffer(be, s, (size_t)gan_fp8_scale_count(&l));
        struct gan_ref rq = ref_of(bq, dt), rs = ref_of(bs, GAN_F32), ry = ref_of(by, yt);
        gan_status st = cpu_fp8_dequantize(be, &l, &rq, &rs, &ry);
        expect(st == GAN_OK, "fp8_dequantize: %s", last_error(be));
        for (int64_t r = 0; r < l.rows; r++)
            for (int64_t c = 0; c < l.cols; c++) {
                const size_t i = (size_t)(r * l.cols + c);
                const double qv = fp8_value(dt, qb[i]);
                const float inv = 1.0f / s[scale_at(&l, r, c)];
                const double exact = qv * (double)inv; /* at most 4 + 24 bits: exact */
                const uint32_t got = bits_at(by, yt, i);
                if (isnan(qv)) {
                    expect(isnan(stored_value(yt, got)), "layout %zu: NaN 0x%02x became %a",
                           li, (unsigned)qb[i], stored_value(yt, got));
                    continue;
                }
                expect(got == store_bits(yt, exact),
                       "%s from %s, layout %zu, (%lld, %lld): 0x%02x · %a gave 0x%x, "
                       "expected 0x%x", gan_dtype_name(yt), gan_dtype_name(dt), li,
                       (long long)r, (long long)c, (unsigned)qb[i], (double)inv,
                       (unsigned)got, (unsigned)store_bits(yt, exact));
                /* a power of two rescales exactly wherever the result type has the
                 * range: FP32 and BF16 always here (2^-28 to 2^28) */
                if (power_of_two && yt != GAN_F16)
                    expect(stored_value(yt, got) == exact, "%a is not exact (%a)",
                           stored_value(yt, got), exact);
            }
        free(qb);
        free(s);
        cpu_buffer_free(be, bq);
        cpu_buffer_free(be, by);
        cpu_buffer_free(be, bs);
    }
    cpu_fixture_free(be);
}
END_TEST

/* The products where rounding twice (to FP32, then to 16 bits) goes wrong: q · inv lies
 * just off a midpoint of the 16-bit type, close enough that FP32 rounds it onto the
 * midpoint, which nearest-even then rounds the wrong way. Each case gets its own scale
 * (blocks of one element), found by search: an FP32 inv near midpoint / q, and a scale
 * whose FP32 inverse is that inv. */
START_TEST(test_dequantize_rounds_once)
{
    const enum gan_dtype yt = _i ? GAN_F16 : GAN_BF16;
    const int frac_bits = yt == GAN_F16 ? 10 : 7;
    gan_backend *be = level_backend();
    enum { CASES = 256 };
    uint32_t qb[CASES];
    float s[CASES];
    int found = 0;
    for (int t = 0; t < 4 * CASES && found < CASES; t++) {
        unsigned q = 0x30u + (unsigned)(t % 16); /* E4M3 values 0.5 to 1.875 */
        double qv = fp8_value(GAN_F8E4M3, q);
        /* a midpoint between two 16-bit values in [1, 2) */
        double mid = 1.0 + ldexp(2.0 * (t / 16 % (1 << frac_bits)) + 1.0, -frac_bits - 1);
        float inv = nextafterf((float)(mid / qv), 0.0f);
        for (int step = 0; step < 3 && found < CASES; step++, inv = nextafterf(inv, 2.0f)) {
            double exact = qv * (double)inv;
            if (exact == mid || (double)(float)exact != mid)
                continue; /* not a product that FP32 rounds onto the midpoint */
            float scale = (float)(1.0 / (double)inv);
            for (int k = 0; k < 8 && 1.0f / scale != inv; k++)
                scale = nextafterf(scale, k % 2 ? 0.0f : 4.0f);
            if (1.0f / scale != inv)
                continue;
            qb[found] = q;
            s[found++] = scale;
        }
    }
    ck_assert_int_ge(found, CASES / 4);
    struct gan_fp8_layout l = { 1, found, 1, GAN_FP8_ALONG_ROWS };
    gan_buffer *bq = buffer_of(be, GAN_F8E4M3, (size_t)found, qb);
    gan_buffer *bs = floats_buffer(be, s, (size_t)found), *by = buffer_of(be, yt, (size_t)found, NULL);
    struct gan_ref rq = ref_of(bq, GAN_F8E4M3), rs = ref_of(bs, GAN_F32), ry = ref_of(by, yt);
    ck_assert_int_eq(cpu_fp8_dequantize(be, &l, &rq, &rs, &ry), GAN_OK);
    int twice_differs = 0;
    for (int i = 0; i < found; i++) {
        double exact = fp8_value(GAN_F8E4M3, qb[i]) * (double)(1.0f / s[i]);
        twice_differs += store_bits(yt, (double)(float)exact) != store_bits(yt, exact);
        expect(bits_at(by, yt, (size_t)i) == store_bits(yt, exact),
               "%s: 0x%02x / %a = %a gave 0x%x, expected 0x%x", gan_dtype_name(yt),
               (unsigned)qb[i], (double)s[i], exact, (unsigned)bits_at(by, yt, (size_t)i),
               (unsigned)store_bits(yt, exact));
    }
    /* the cases are the ones that tell one rounding from two */
    ck_assert_int_ge(twice_differs, found / 4);
    cpu_buffer_free(be, bq);
    cpu_buffer_free(be, bs);
    cpu_buffer_free(be, by);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- gemm_fp8 */

struct gemm_setup {
    int trans_a, trans_b;
    int64_t m, n, k, block_a, block_b;
    int pow2_a, pow2_b;       /* power-of-two scales */
    int exact;                /* small integers: every FP32 sum is exact */
    enum gan_dtype at, bt, ct;
    float alpha, beta;
};

/* The stored layouts of A and B, from backend.h's description of struct gan_gemm_fp8. */
static void gemm_layouts(const struct gemm_setup *g, struct gan_fp8_layout *la,
                         struct gan_fp8_layout *lb)
{
    la->rows = g->trans_a ? g->k : g->m;
    la->cols = g->trans_a ? g->m : g->k;
    la->block = g->block_a;
    la->along = g->trans_a ? GAN_FP8_ALONG_COLUMNS : GAN_FP8_ALONG_ROWS;
    lb->rows = g->trans_b ? g->n : g->k;
    lb->cols = g->trans_b ? g->k : g->n;
    lb->block = g->block_b;
    lb->along = g->trans_b ? GAN_FP8_ALONG_ROWS : GAN_FP8_ALONG_COLUMNS;
}

/* FP8 operand bytes: integers in [-8, 8] (exact in both formats), or any finite value
 * with |v| ≤ 4, so that no sum overflows a 16-bit C. */
static uint32_t *gemm_operand(enum gan_dtype dt, size_t n, int exact)
{
    uint32_t *q = malloc(n * sizeof *q);
    ck_assert_ptr_nonnull(q);
    for (size_t i = 0; i < n; i++) {
        if (exact) {
            q[i] = gan_fp8_bits(dt, (float)(rng_int(17) - 8), 0);
            continue;
        }
        do
            q[i] = (uint32_t)rng_int(256);
        while (!(fabs(fp8_value(dt, q[i])) <= 4.0));
    }
    return q;
}

/* Scales from 1/2 to 16: powers of two, or any FP32 value. */
static float *gemm_scales(const struct gan_fp8_layout *l, int power_of_two)
{
    int64_t n = gan_fp8_scale_count(l);
    float *s = malloc((size_t)n * sizeof *s + 4);
    ck_assert_ptr_nonnull(s);
    for (int64_t i = 0; i < n; i++)
        s[i] = (float)(ldexp(1.0, rng_int(5) - 1) * (power_of_two ? 1.0 : rng_uniform(1.0, 2.0)));
    return s;
}

/* One product on be: C (m×n of ct, from bits c0) in place, its bits into c_out. */
static void run_gemm(gan_backend *be, const struct gemm_setup *g, const uint32_t *qa,
                     const uint32_t *qb, const float *sa, const float *sb, const uint32_t *c0,
                     uint32_t *c_out)
{
    struct gan_fp8_layout la, lb;
    gemm_layouts(g, &la, &lb);
    const size_t na = (size_t)(la.rows * la.cols), nb = (size_t)(lb.rows * lb.cols);
    const size_t nc = (size_t)(g->m * g->n);
    gan_buffer *ba = buffer_of(be, g->at, na, qa), *bb = buffer_of(be, g->bt, nb, qb);
    gan_buffer *bc = buffer_of(be, g->ct, nc, c0);
    gan_buffer *bsa = floats_buffer(be, sa, (size_t)gan_fp8_scale_count(&la));
    gan_buffer *bsb = floats_buffer(be, sb, (size_t)gan_fp8_scale_count(&lb));
    struct gan_gemm_fp8 f = {
        .g = { .trans_a = g->trans_a, .trans_b = g->trans_b, .m = g->m, .n = g->n, .k = g->k,
               .alpha = g->alpha, .beta = g->beta, .a = ref_of(ba, g->at),
               .b = ref_of(bb, g->bt), .c = ref_of(bc, g->ct), .lda = la.cols, .ldb = lb.cols,
               .ldc = g->n, .batch = 1 },
        .scale_a = ref_of(bsa, GAN_F32), .scale_b = ref_of(bsb, GAN_F32),
        .block_a = g->block_a, .block_b = g->block_b,
    };
    gan_status st = cpu_gemm_fp8(be, &f);
    expect(st == GAN_OK, "gemm_fp8: %s", last_error(be));
    for (size_t i = 0; i < nc; i++)
        c_out[i] = bits_at(bc, g->ct, i);
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, bc);
    cpu_buffer_free(be, bsa);
    cpu_buffer_free(be, bsb);
}

/* A product against the FP64 sum of the dequantised operands: bit for bit when the data
 * make every FP32 sum exact, else within the error of k FP32 sums (γ_k = k·2^-24 of
 * Σ|a·b|) plus the few roundings around them (widening, alpha, beta·C) and the final
 * rounding into C's type. */
static void check_gemm(gan_backend *be, const struct gemm_setup *g, const char *what)
{
    struct gan_fp8_layout la, lb;
    gemm_layouts(g, &la, &lb);
    const size_t nc = (size_t)(g->m * g->n);
    uint32_t *qa = gemm_operand(g->at, (size_t)(la.rows * la.cols), g->exact);
    uint32_t *qb = gemm_operand(g->bt, (size_t)(lb.rows * lb.cols), g->exact);
    float *sa = gemm_scales(&la, g->pow2_a), *sb = gemm_scales(&lb, g->pow2_b);
    uint32_t *c0 = malloc(nc * sizeof *c0), *got = malloc(nc * sizeof *got);
    ck_assert(c0 && got);
    for (size_t i = 0; i < nc; i++) /* beta = 0 must not read C: NaN there */
        c0[i] = store_bits(g->ct, g->beta == 0.0f ? NAN
                                  : g->exact ? (double)(rng_int(33) - 16) / 4.0
                                             : rng_uniform(-4.0, 4.0));
    run_gemm(be, g, qa, qb, sa, sb, c0, got);

    const int per_tensor = g->block_a == 0 && g->block_b == 0;
    const double factor = per_tensor ? (double)g->alpha * (double)(1.0f / sa[0]) *
                                           (double)(1.0f / sb[0])
                                     : (double)g->alpha;
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double sum = 0.0, mag = 0.0;
            for (int64_t p = 0; p < g->k; p++) {
                int64_t ra = g->trans_a ? p : i, ca = g->trans_a ? i : p;
                int64_t rb = g->trans_b ? j : p, cb = g->trans_b ? p : j;
                double a = fp8_value(g->at, qa[ra * la.cols + ca]);
                double b = fp8_value(g->bt, qb[rb * lb.cols + cb]);
                if (!per_tensor) {
                    a *= (double)(1.0f / sa[scale_at(&la, ra, ca)]);
                    b *= (double)(1.0f / sb[scale_at(&lb, rb, cb)]);
                }
                sum += a * b;
                mag += fabs(a * b);
            }
            const size_t at = (size_t)(i * g->n + j);
            const double c_in = g->beta == 0.0f ? 0.0 : stored_value(g->ct, c0[at]);
            const double want = factor * sum + (double)g->beta * c_in;
            const double value = stored_value(g->ct, got[at]);
            if (g->exact) {
                expect(got[at] == store_bits(g->ct, want),
                       "%s: C(%lld, %lld) = %a, expected exactly %a", what, (long long)i,
                       (long long)j, value, want);
                continue;
            }
            double err = (double)(g->k + 6) * 0x1p-24 *
                         (fabs(factor) * mag + fabs((double)g->beta * c_in));
            double rel = g->ct == GAN_BF16 ? 0x1p-8 : g->ct == GAN_F16 ? 0x1p-11 : 0.0;
            double tol = err + rel * (fabs(want) + err) + (g->ct == GAN_F16 ? 0x1p-25 : 0.0);
            expect(fabs(value - want) <= tol,
                   "%s: C(%lld, %lld) = %.9g, expected %.9g within %.3g", what, (long long)i,
                   (long long)j, value, want, tol);
        }
    free(qa);
    free(qb);
    free(sa);
    free(sb);
    free(c0);
    free(got);
}

/* The scalings tried: per tensor and per block with power-of-two scales on exact data,
 * blocks of 128 and per tensor with FP32 scales, and a blocked A beside a per-tensor B. */
enum gemm_mode { G_TENSOR_EXACT, G_BLOCK32_EXACT, G_BLOCK128, G_TENSOR, G_MIXED, G_MODES };

/* Case i of test_gemm on be: transposes i % 4, mode i / 4, over two shapes, both betas
 * and the three C types. */
static void gemm_cases(gan_backend *be, int i)
{
    static const int64_t shapes[2][3] = { { 7, 5, 37 }, { 9, 6, 300 } };
    static const char *const mode_names[G_MODES] = {
        "per tensor, exact", "blocks of 32, exact", "blocks of 128", "per tensor", "mixed",
    };
    const int trans = i % 4, mode = i / 4;
    rng_seed(400 + (uint64_t)i);
    for (int shape = 0; shape < 2; shape++)
        for (int beta = 0; beta < 2; beta++)
            for (int ct = 0; ct < 3; ct++) {
                struct gemm_setup g = {
                    .trans_a = trans & 1, .trans_b = trans >> 1,
                    .m = shapes[shape][0], .n = shapes[shape][1], .k = shapes[shape][2],
                    .exact = mode == G_TENSOR_EXACT || mode == G_BLOCK32_EXACT,
                    .at = fp8_types[(shape + beta) % 2], .bt = fp8_types[(shape + ct) % 2],
                    .ct = float_types[ct], .beta = (float)beta,
                };
                g.alpha = g.exact ? 0.5f : 0.75f;
                g.block_a = mode == G_BLOCK32_EXACT || mode == G_MIXED ? 32
                            : mode == G_BLOCK128 ? 128 : 0;
                g.block_b = mode == G_BLOCK32_EXACT ? 32 : mode == G_BLOCK128 ? 128 : 0;
                g.pow2_a = g.exact || mode == G_MIXED;
                g.pow2_b = g.exact;
                char what[160];
                snprintf(what, sizeof what, "%s, trans %d%d, %lldx%lldx%lld, %s·%s → %s, beta %d",
                         mode_names[mode], g.trans_a, g.trans_b, (long long)g.m, (long long)g.n,
                         (long long)g.k, gan_dtype_name(g.at), gan_dtype_name(g.bt),
                         gan_dtype_name(g.ct), beta);
                check_gemm(be, &g, what);
            }
}

START_TEST(test_gemm)
{
    gan_backend *be = level_backend();
    gemm_cases(be, _i);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- gemm_fp8's BF16 route */

/* An instance of this case's level whose BF16 products go to oneDNN where the build
 * has it and the CPU a BF16 dot product ("auto"), as a created backend's do. */
static gan_backend *bf16_backend(const char *threads)
{
    static const char *const level[3] = { "vector=portable", "vector=f16c", "vector=avx512" };
    const char *settings[4] = { threads, "gemm=auto", NULL, NULL };
    if (case_level >= 0)
        settings[2] = level[case_level];
    gan_backend *be = cpu_fixture_new(settings);
    ck_assert_int_eq(cpu_gemm_path_setting(be->host, &be->gemm_path), GAN_OK);
    ck_assert_int_eq(cpu_onednn_open(be), GAN_OK);
    return be;
}

static void bf16_backend_free(gan_backend *be)
{
    cpu_onednn_close(be);
    cpu_fixture_free(be);
}

static long primitives_made(gan_backend *be)
{
    int held;
    long created;
    cpu_onednn_cache_counts(be, &held, &created);
    return created;
}

/* test_gemm's cases where the route runs: the same references and bounds (exact data
 * bit for bit), with power-of-two scales, per tensor and per block, through oneDNN's
 * BF16 matmul, FP32 scales through the FP32 GEMM. */
START_TEST(test_gemm_bf16)
{
    gan_backend *be = bf16_backend("threads=1");
    const int mode = _i / 4;
    gemm_cases(be, _i);
    /* power-of-two scales (E8M0), per tensor and per block, take it; any FP32 scale
     * keeps the product on the FP32 route */
    if (mode == G_TENSOR_EXACT || mode == G_BLOCK32_EXACT)
        ck_assert_msg(!cpu_onednn_bf16(be) || primitives_made(be) > 0,
                      "no product went through oneDNN");
    else
        ck_assert_msg(primitives_made(be) == 0, "a product with FP32 scales went through "
                      "oneDNN's BF16 matmul");
    bf16_backend_free(be);
}
END_TEST

/* Scales whose products would be subnormal in FP32: VDPBF16PS would flush them, so the
 * product keeps the FP32 route; one binade up it takes the BF16 route. The operands hold
 * only the formats' smallest subnormals (±2^-9 in E4M3, ±2^-16 in E5M2) and zeros, the
 * inverse scales 2^-50 and 2^-51 or 2^-52, so that every product is ±2^-126 (the edge)
 * or ±2^-127 (past it) and every sum exact: both routes must give the exact sums. */
START_TEST(test_gemm_bf16_subnormal)
{
    gan_backend *be = bf16_backend("threads=1"), *plain = level_backend();
    rng_seed(450 + (uint64_t)_i);
    for (int edge = 0; edge < 2; edge++) {
        struct gemm_setup g = {
            .m = 9, .n = 7, .k = 64, .block_a = 32, .block_b = 32, .at = GAN_F8E4M3,
            .bt = GAN_F8E5M2, .ct = GAN_F32, .alpha = 1.0f, .trans_a = _i & 1,
            .trans_b = _i >> 1,
        };
        struct gan_fp8_layout la, lb;
        gemm_layouts(&g, &la, &lb);
        const size_t na = (size_t)(la.rows * la.cols), nb = (size_t)(lb.rows * lb.cols);
        static const uint32_t tiny[3] = { 0x00, 0x01, 0x81 };
        uint32_t *qa = malloc(na * sizeof *qa), *qb = malloc(nb * sizeof *qb);
        float *sa = gemm_scales(&la, 1), *sb = gemm_scales(&lb, 1);
        ck_assert(qa && qb);
        for (size_t i = 0; i < na; i++)
            qa[i] = tiny[rng_int(3)];
        for (size_t i = 0; i < nb; i++)
            qb[i] = tiny[rng_int(3)];
        for (int64_t i = 0; i < gan_fp8_scale_count(&la); i++)
            sa[i] = 0x1p50f;
        for (int64_t i = 0; i < gan_fp8_scale_count(&lb); i++)
            sb[i] = edge ? 0x1p51f : 0x1p52f;
        uint32_t c0[63] = { 0 }, got[63], want[63];
        const long before = primitives_made(be);
        run_gemm(be, &g, qa, qb, sa, sb, c0, got);
        run_gemm(plain, &g, qa, qb, sa, sb, c0, want);
        const long made = primitives_made(be) - before;
        if (!edge)
            ck_assert_msg(made == 0, "a product with subnormal products went through oneDNN");
        else if (cpu_onednn_bf16(be))
            ck_assert_msg(made == 1, "the product on the edge made %ld primitives", made);
        for (int64_t i = 0; i < g.m; i++)
            for (int64_t j = 0; j < g.n; j++) {
                double sum = 0.0;
                for (int64_t p = 0; p < g.k; p++) {
                    uint32_t a = qa[g.trans_a ? p * la.cols + i : i * la.cols + p];
                    uint32_t b = qb[g.trans_b ? j * lb.cols + p : p * lb.cols + j];
                    sum += fp8_value(g.at, a) * fp8_value(g.bt, b);
                }
                sum = ldexp(sum, edge ? -101 : -102);
                const size_t at = (size_t)(i * g.n + j);
                expect(got[at] == bits_of((float)sum) && want[at] == got[at],
                       "edge %d: C(%lld, %lld) = %a (FP32 route %a), expected %a", edge,
                       (long long)i, (long long)j, (double)float_of(got[at]),
                       (double)float_of(want[at]), sum);
            }
        free(qa);
        free(qb);
        free(sa);
        free(sb);
    }
    cpu_fixture_free(plain);
    bf16_backend_free(be);
}
END_TEST

/* k = 0 and alpha = 0 leave beta·C, reading neither operand. */
START_TEST(test_gemm_no_product)
{
    gan_backend *be = level_backend();
    const float c_in[6] = { 1, -2, 3, -4, 5, -6 };
    for (int k0 = 0; k0 < 2; k0++) {
        gan_buffer *bc = floats_buffer(be, c_in, 6);
        gan_buffer *bq = buffer_of(be, GAN_F8E4M3, 8, NULL);
        gan_buffer *bs = floats_buffer(be, (const float[2]){ 1.0f, 1.0f }, 2);
        bq->data[0] = 0x7f; /* a NaN, never read */
        struct gan_gemm_fp8 f = {
            .g = { .m = 2, .n = 3, .k = k0 ? 0 : 2, .alpha = k0 ? 1.0f : 0.0f, .beta = 2.0f,
                   .a = ref_of(bq, GAN_F8E4M3), .b = ref_of(bq, GAN_F8E4M3),
                   .c = ref_of(bc, GAN_F32), .lda = k0 ? 0 : 2, .ldb = 3, .ldc = 3,
                   .batch = 1 },
            .scale_a = ref_of(bs, GAN_F32), .scale_b = ref_of(bs, GAN_F32),
        };
        ck_assert_msg(cpu_gemm_fp8(be, &f) == GAN_OK, "%s", last_error(be));
        for (int i = 0; i < 6; i++)
            ck_assert_float_eq(((float *)(void *)bc->data)[i], 2.0f * c_in[i]);
        cpu_buffer_free(be, bc);
        cpu_buffer_free(be, bq);
        cpu_buffer_free(be, bs);
    }
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- threads */

/* Every pass split across three threads gives one thread's bits, counts and maxima, on
 * operands large enough to be split (backends/cpu/cpu_backend.h, CPU_PARALLEL_MIN). */
START_TEST(test_threads)
{
    static const char *const three[] = { "threads=3", NULL };
    gan_backend *be[2] = { cpu_fixture_new(NULL), cpu_fixture_new(three) };
    ck_assert_int_eq(be[1]->threads, 3);
    rng_seed(500 + (uint64_t)_i);
    const struct gan_fp8_layout layouts_big[2] = {
        { 600, 1400, 0, GAN_FP8_ALONG_ROWS }, { 600, 1400, 32, GAN_FP8_ALONG_COLUMNS },
    };
    const struct gan_fp8_layout l = layouts_big[_i];
    const size_t n = (size_t)(l.rows * l.cols), count = (size_t)gan_fp8_scale_count(&l);
    uint32_t *xb = sample_bits(GAN_BF16, n, 7);
    float *s = sample_scales(&l, 0);
    struct gan_fp8_stats st[2];
    struct gan_fp8_cast_stats cs[2];
    float *block_amax[2];
    uint8_t *q[2];
    uint16_t *y[2];
    for (int t = 0; t < 2; t++) {
        gan_buffer *bx = buffer_of(be[t], GAN_BF16, n, xb);
        gan_buffer *bs = floats_buffer(be[t], s, count);
        gan_buffer *bq = buffer_of(be[t], GAN_F8E4M3, n, NULL);
        gan_buffer *by = buffer_of(be[t], GAN_F16, n, NULL);
        struct gan_ref rx = ref_of(bx, GAN_BF16), rs = ref_of(bs, GAN_F32);
        struct gan_ref rq = ref_of(bq, GAN_F8E4M3), ry = ref_of(by, GAN_F16);
        block_amax[t] = malloc(count * sizeof(float));
        q[t] = malloc(n);
        y[t] = malloc(n * 2);
        ck_assert(block_amax[t] && q[t] && y[t]);
        ck_assert_int_eq(cpu_fp8_stats(be[t], &l, &rx, 1, block_amax[t], &st[t]), GAN_OK);
        ck_assert_int_eq(cpu_fp8_quantize(be[t], &l, &rx, &rs, 0, &rq, &cs[t]), GAN_OK);
        ck_assert_int_eq(cpu_fp8_dequantize(be[t], &l, &rq, &rs, &ry), GAN_OK);
        memcpy(q[t], bq->data, n);
        memcpy(y[t], by->data, n * 2);
        cpu_buffer_free(be[t], bx);
        cpu_buffer_free(be[t], bs);
        cpu_buffer_free(be[t], bq);
        cpu_buffer_free(be[t], by);
    }
    ck_assert_mem_eq(&st[0], &st[1], sizeof st[0]);
    ck_assert_mem_eq(&cs[0], &cs[1], sizeof cs[0]);
    ck_assert_mem_eq(block_amax[0], block_amax[1], count * sizeof(float));
    ck_assert_mem_eq(q[0], q[1], n);
    ck_assert_mem_eq(y[0], y[1], n * 2);
    ck_assert_uint_gt(cs[0].overflow, 0);
    ck_assert_uint_gt(cs[0].subnormal, 0);

    /* the product: both operands widened in parts */
    struct gemm_setup g = {
        .m = 8, .n = 8, .k = 70001, .block_a = _i ? 128 : 0, .block_b = _i ? 128 : 0,
        .at = GAN_F8E4M3, .bt = GAN_F8E5M2, .ct = GAN_BF16, .alpha = 1.0f, .beta = 0.0f,
        .trans_a = _i, .trans_b = 0,
    };
    struct gan_fp8_layout la, lb;
    gemm_layouts(&g, &la, &lb);
    uint32_t *qa = gemm_operand(g.at, (size_t)(la.rows * la.cols), 0);
    uint32_t *qb = gemm_operand(g.bt, (size_t)(lb.rows * lb.cols), 0);
    float *sa = gemm_scales(&la, 0), *sb = gemm_scales(&lb, 0);
    uint32_t c0[64] = { 0 }, c[2][64];
    for (int t = 0; t < 2; t++)
        run_gemm(be[t], &g, qa, qb, sa, sb, c0, c[t]);
    ck_assert_mem_eq(c[0], c[1], sizeof c[0]);

    for (int t = 0; t < 2; t++) {
        free(block_amax[t]);
        free(q[t]);
        free(y[t]);
        cpu_fixture_free(be[t]);
    }
    free(qa);
    free(qb);
    free(sa);
    free(sb);
    free(xb);
    free(s);
}
END_TEST

/* The BF16 route's widening (cpu_fp8_widen_bf16) of every FP8 pattern, NaNs and
 * infinities included, with power-of-two scales: per tensor through the table of
 * magnitudes, per block through the decoding and the product; each value q·inv exactly,
 * a NaN a NaN. */
START_TEST(test_widen_bf16)
{
    const enum gan_dtype dt = fp8_types[_i % 2];
    gan_backend *be = level_backend();
    rng_seed(550 + (uint64_t)_i);
    const struct gan_fp8_layout shapes[3] = {
        { 16, 300, 0, GAN_FP8_ALONG_ROWS }, { 16, 300, 32, GAN_FP8_ALONG_ROWS },
        { 300, 16, 32, GAN_FP8_ALONG_COLUMNS },
    };
    const struct gan_fp8_layout l = shapes[_i / 2];
    const size_t n = (size_t)(l.rows * l.cols);
    uint8_t *q = malloc(n);
    uint16_t *y = malloc(n * sizeof *y);
    float *s = sample_scales(&l, 1);
    ck_assert(q && y);
    for (size_t i = 0; i < n; i++)
        q[i] = (uint8_t)(i < 256 ? i : (size_t)rng_int(256));
    cpu_fp8_widen_bf16(be, &l, q, dt, s, y);
    for (int64_t r = 0; r < l.rows; r++)
        for (int64_t c = 0; c < l.cols; c++) {
            const size_t i = (size_t)(r * l.cols + c);
            const double v = fp8_value(dt, q[i]) * (double)(1.0f / s[scale_at(&l, r, c)]);
            if (isnan(v))
                expect(isnan(bf16_decode(y[i])), "0x%02x became 0x%04x, not a NaN",
                       (unsigned)q[i], (unsigned)y[i]);
            else
                expect(y[i] == (uint16_t)store_bits(GAN_BF16, v),
                       "%s layout %d: 0x%02x · %a became 0x%04x, expected 0x%04x",
                       gan_dtype_name(dt), _i / 2, (unsigned)q[i],
                       (double)(1.0f / s[scale_at(&l, r, c)]), (unsigned)y[i],
                       (unsigned)store_bits(GAN_BF16, v));
        }
    free(q);
    free(y);
    free(s);
    cpu_fixture_free(be);
}
END_TEST

/* The BF16 route gives the same bits at one and at two threads for the demo's products
 * (batch 256, width 256, 2-dimensional samples, a 1-wide critic output), each in the
 * three transposes a layer's forward and backward products use, into F32 and BF16, with
 * beta 0 and 1: the property the FP32 GEMM has, which an FP8 run's metrics.csv relies on
 * (tests/e2e/threads_same.sh). */
START_TEST(test_gemm_bf16_threads)
{
    static const int64_t shapes[][3] = {
        { 256, 256, 256 }, { 256, 256, 2 }, { 256, 2, 256 }, { 256, 1, 256 }, { 2, 256, 256 },
        { 256, 256, 1 }, { 1, 256, 256 },
    };
    static const int transposes[3][2] = { { 0, 1 }, { 0, 0 }, { 1, 0 } };
    gan_backend *be[2] = { bf16_backend("threads=1"), bf16_backend("threads=2") };
    rng_seed(600 + (uint64_t)_i);
    const int64_t *shape = shapes[_i];
    for (int t = 0; t < 3; t++)
        for (int beta = 0; beta < 2; beta++)
            for (int ct = 0; ct < 2; ct++) {
                struct gemm_setup g = {
                    .m = shape[0], .n = shape[1], .k = shape[2], .at = GAN_F8E4M3,
                    .bt = t == 2 ? GAN_F8E5M2 : GAN_F8E4M3, .ct = ct ? GAN_BF16 : GAN_F32,
                    .alpha = 1.0f, .beta = (float)beta, .trans_a = transposes[t][0],
                    .trans_b = transposes[t][1],
                };
                struct gan_fp8_layout la, lb;
                gemm_layouts(&g, &la, &lb);
                const size_t nc = (size_t)(g.m * g.n);
                uint32_t *qa = gemm_operand(g.at, (size_t)(la.rows * la.cols), 0);
                uint32_t *qb = gemm_operand(g.bt, (size_t)(lb.rows * lb.cols), 0);
                float *sa = gemm_scales(&la, 1), *sb = gemm_scales(&lb, 1);
                uint32_t *c0 = malloc(nc * sizeof *c0), *c[2];
                c[0] = malloc(nc * sizeof *c[0]);
                c[1] = malloc(nc * sizeof *c[1]);
                ck_assert(c0 && c[0] && c[1]);
                for (size_t i = 0; i < nc; i++)
                    c0[i] = store_bits(g.ct, rng_uniform(-4.0, 4.0));
                for (int k = 0; k < 2; k++)
                    run_gemm(be[k], &g, qa, qb, sa, sb, c0, c[k]);
                ck_assert_msg(memcmp(c[0], c[1], nc * sizeof *c0) == 0,
                              "%lldx%lldx%lld, trans %d%d, beta %d, C %s: other bits at two "
                              "threads", (long long)g.m, (long long)g.n, (long long)g.k,
                              g.trans_a, g.trans_b, beta, gan_dtype_name(g.ct));
                free(qa);
                free(qb);
                free(sa);
                free(sb);
                free(c0);
                free(c[0]);
                free(c[1]);
            }
    if (cpu_onednn_bf16(be[1]))
        ck_assert(primitives_made(be[1]) > 0);
    bf16_backend_free(be[0]);
    bf16_backend_free(be[1]);
}
END_TEST

/* ---------------------------------------------------------------- refusals */

/* What the contract excludes is refused with one line saying what to do instead, and
 * nothing is written. */
START_TEST(test_refused)
{
    gan_backend *be = level_backend();
    gan_buffer *b8 = buffer_of(be, GAN_F8E4M3, 64, NULL), *b32 = buffer_of(be, GAN_F32, 64, NULL);
    gan_buffer *bc = buffer_of(be, GAN_F32, 64, NULL);
    const struct gan_gemm_fp8 good = {
        .g = { .m = 4, .n = 4, .k = 4, .alpha = 1.0f, .a = ref_of(b8, GAN_F8E4M3),
               .b = ref_of(b8, GAN_F8E5M2), .c = ref_of(bc, GAN_F32), .lda = 4, .ldb = 4,
               .ldc = 4, .batch = 1 },
        .scale_a = ref_of(b32, GAN_F32), .scale_b = ref_of(b32, GAN_F32),
    };
    static const struct {
        int what;
        gan_status status;
        const char *needle;
    } cases[] = {
        { 0, GAN_ERR_UNSUPPORTED, "batch = 2" },
        { 1, GAN_ERR_UNSUPPORTED, "lda = 8" },
        { 2, GAN_ERR_UNSUPPORTED, "A is F32" },
        { 3, GAN_ERR_UNSUPPORTED, "scale_b has dtype F16" },
        { 4, GAN_ERR_UNSUPPORTED, "C is I32" },
        { 5, GAN_ERR_INVALID, "block_a = -1" },
        { 6, GAN_ERR_UNSUPPORTED, "ldc = 5" },
        { 7, GAN_ERR_INVALID, "scale_a needs 16" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gan_gemm_fp8 f = good;
        switch (cases[i].what) {
        case 0: f.g.batch = 2; break;
        case 1: f.g.lda = 8; break;
        case 2: f.g.a.dtype = GAN_F32; break;
        case 3: f.scale_b.dtype = GAN_F16; break;
        case 4: f.g.c.dtype = GAN_I32; break;
        case 5: f.block_a = -1; break;
        case 6: f.g.ldc = 5; break;
        case 7: f.block_a = 1; f.scale_a.offset = 61; break;
        }
        memset(bc->data, 0x3c, 64 * 4);
        gan_status st = cpu_gemm_fp8(be, &f);
        ck_assert_msg(st == cases[i].status, "case %zu: status %d (%s)", i, (int)st,
                      last_error(be));
        ck_assert_msg(strstr(last_error(be), cases[i].needle), "case %zu: \"%s\" lacks \"%s\"",
                      i, last_error(be), cases[i].needle);
        for (int k = 0; k < 64 * 4; k++)
            ck_assert_uint_eq(bc->data[k], 0x3c);
    }

    /* the element-wise slots */
    struct gan_fp8_layout l = { 4, 4, 0, GAN_FP8_ALONG_ROWS };
    struct gan_ref x = ref_of(b32, GAN_F32), s = ref_of(bc, GAN_F32), q = ref_of(b8, GAN_F8E4M3);
    struct gan_ref y16 = ref_of(b8, GAN_F16), same = ref_of(b32, GAN_F8E4M3);
    struct gan_fp8_cast_stats cs;
    struct gan_fp8_stats fs;
    ck_assert_int_eq(cpu_fp8_quantize(be, &l, &x, &s, 2u, &q, &cs), GAN_ERR_INVALID);
    ck_assert(strstr(last_error(be), "flags 0x2"));
    ck_assert_int_eq(cpu_fp8_quantize(be, &l, &x, &s, 0, &y16, &cs), GAN_ERR_UNSUPPORTED);
    ck_assert(strstr(last_error(be), "y has dtype F16"));
    ck_assert_int_eq(cpu_fp8_quantize(be, &l, &x, &s, 0, &same, &cs), GAN_ERR_INVALID);
    ck_assert(strstr(last_error(be), "overlap"));
    ck_assert_int_eq(cpu_fp8_dequantize(be, &l, &x, &s, &y16), GAN_ERR_UNSUPPORTED);
    ck_assert(strstr(last_error(be), "q has dtype F32"));
    ck_assert_int_eq(cpu_fp8_stats(be, &l, &q, 0, NULL, &fs), GAN_ERR_UNSUPPORTED);
    ck_assert(strstr(last_error(be), "x has dtype F8_E4M3"));
    struct gan_fp8_layout bad = { 4, 4, 2, (enum gan_fp8_direction)7 };
    ck_assert_int_eq(cpu_fp8_stats(be, &bad, &x, 0, NULL, &fs), GAN_ERR_INVALID);
    ck_assert(strstr(last_error(be), "along = 7"));
    struct gan_fp8_layout big = { 4, 20, 0, GAN_FP8_ALONG_ROWS };
    ck_assert_int_eq(cpu_fp8_stats(be, &big, &x, 0, NULL, &fs), GAN_ERR_INVALID);
    ck_assert(strstr(last_error(be), "buffer holds 64"));
    cpu_buffer_free(be, b8);
    cpu_buffer_free(be, b32);
    cpu_buffer_free(be, bc);
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

/* Every test but the threads' as a test case named "<level>", on instances of that level. */
static void add_level_case(Suite *s, enum cpu_isa isa)
{
    static void (*const setups[])(void) = { use_portable, use_f16c, use_avx512 };
    static const char *const name[3] = { "portable", "f16c", "avx512" };
    TCase *tc = tcase_create(name[isa]);
    tcase_add_checked_fixture(tc, setups[isa], NULL);
    tcase_add_loop_test(tc, test_stats, 0, 3);
    tcase_add_test(tc, test_stats_empty);
    tcase_add_loop_test(tc, test_quantize, 0, 12);
    tcase_add_loop_test(tc, test_quantize_edges, 0, 4);
    tcase_add_loop_test(tc, test_dequantize, 0, 12);
    tcase_add_loop_test(tc, test_dequantize_rounds_once, 0, 2);
    tcase_add_loop_test(tc, test_gemm, 0, 4 * G_MODES);
    tcase_add_loop_test(tc, test_widen_bf16, 0, 6);
    tcase_add_loop_test(tc, test_gemm_bf16, 0, 4 * G_MODES);
    tcase_add_loop_test(tc, test_gemm_bf16_subnormal, 0, 4);
    tcase_add_test(tc, test_gemm_no_product);
    tcase_add_test(tc, test_refused);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
}

static Suite *fp8_products_suite(void)
{
    Suite *s = suite_create("fp8_products");
    for (int isa = CPU_ISA_PORTABLE; isa <= (int)cpu_isa_best(); isa++)
        add_level_case(s, (enum cpu_isa)isa);
    TCase *tc = tcase_create("threads");
    tcase_add_loop_test(tc, test_threads, 0, 2);
    tcase_add_loop_test(tc, test_gemm_bf16_threads, 0, 7);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fp8_products_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
