/* SPDX-License-Identifier: MIT */
/* check_gemm.c — the CPU backend's GEMM against a naive double-precision product:
 * transposes, odd shapes, alpha/beta, batches, padding, 16-bit types, bad arguments. */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"

/* ck_assert_msg records a checkpoint (a write to the parent process) on every
 * success; in loops over millions of elements that would dominate the run time, so
 * element checks call into Check only when they fail. */
#define expect(cond, ...) \
    do { \
        if (!(cond)) \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    /* splitmix64: small, and enough to make operands that are not all alike */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float next_unit(void)
{
    return (float)((double)(next_u64() >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static struct test_host *host_of(gan_backend *be)
{
    return (struct test_host *)be->host->ctx;
}

/* Values are written and read through the compiler's _Float16 and by moving bits, not
 * through the backend's convert.h, so the test does not share code with what it tests;
 * a compiler without _Float16 (clang 14 on x86) uses half_helpers.c's conversions,
 * written from the IEEE definition, for the same reason. */
#ifdef __FLT16_MAX__
static uint16_t f16_bits(float v)
{
    _Float16 h = (_Float16)v;
    uint16_t b;
    memcpy(&b, &h, sizeof b);
    return b;
}

static double f16_value(uint16_t b)
{
    _Float16 h;
    memcpy(&h, &b, sizeof h);
    return (double)h;
}
#else
static uint16_t f16_bits(float v)
{
    return f16_encode(v);
}

static double f16_value(uint16_t b)
{
    return f16_decode(b);
}
#endif

static uint16_t bf16_bits_truncated(float v)
{
    uint32_t x;
    memcpy(&x, &v, sizeof x);
    return (uint16_t)(x >> 16);
}

static double bf16_value(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Stores a value representable in `dt` (or, for F32, any float) as element i. */
static void put(unsigned char *base, enum gan_dtype dt, size_t i, float v)
{
    if (dt == GAN_F32)
        memcpy(base + 4 * i, &v, 4);
    else {
        uint16_t b = dt == GAN_F16 ? f16_bits(v) : bf16_bits_truncated(v);
        memcpy(base + 2 * i, &b, 2);
    }
}

static double get(const unsigned char *base, enum gan_dtype dt, size_t i)
{
    if (dt == GAN_F32) {
        float v;
        memcpy(&v, base + 4 * i, 4);
        return v;
    }
    uint16_t b;
    memcpy(&b, base + 2 * i, 2);
    return dt == GAN_F16 ? f16_value(b) : bf16_value(b);
}

/* A random value that `dt` holds exactly. */
static float random_in(enum gan_dtype dt)
{
    float v = next_unit();
    if (dt == GAN_F16)
        return (float)f16_value(f16_bits(v));
    if (dt == GAN_BF16)
        return (float)bf16_value(bf16_bits_truncated(v));
    return v;
}

static void put_nan(unsigned char *base, enum gan_dtype dt, size_t i)
{
    if (dt == GAN_F32)
        put(base, dt, i, NAN);
    else {
        uint16_t b = dt == GAN_F16 ? 0x7e00 : 0x7fc0;
        memcpy(base + 2 * i, &b, 2);
    }
}

/* ---------------------------------------------------------------- one case */

struct gcase {
    int ta, tb;
    int m, n, k;
    float alpha, beta;
    enum gan_dtype da, db, dc;
    int pad;          /* extra elements per stored row (ld = cols + pad), NaN-filled */
    int batch;
    int gap;          /* extra elements between batch entries, NaN-filled */
    int share_a;      /* stride_a = 0: one A for every batch entry */
    size_t offset;    /* first element of every operand */
    int nan_c;        /* start C as NaN (meaningful with beta = 0) */
};

struct operand {
    int rows, cols, ld;
    int64_t stride;
    size_t elems;                 /* buffer size in elements */
    unsigned char *host;          /* as stored */
    gan_buffer *buf;
};

static void make_operand(gan_backend *be, struct operand *o, enum gan_dtype dt, int rows,
                         int cols, const struct gcase *cs, int shared, int random_body)
{
    o->rows = rows;
    o->cols = cols;
    o->ld = (cols > 1 ? cols : 1) + cs->pad;
    int64_t one = (int64_t)rows * o->ld;
    o->stride = shared ? 0 : one + cs->gap;
    o->elems = cs->offset + (size_t)(o->stride * (cs->batch - 1) + one);
    size_t esz = gan_dtype_size(dt);
    o->host = malloc(o->elems * esz + 1);
    ck_assert_ptr_nonnull(o->host);
    /* Everything the product must not read is NaN: padding, gaps, the offset. */
    for (size_t i = 0; i < o->elems; i++)
        put_nan(o->host, dt, i);
    for (int b = 0; b < (shared ? 1 : cs->batch); b++)
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < cols; j++) {
                size_t at = cs->offset + (size_t)(b * o->stride) + (size_t)r * o->ld + j;
                if (random_body)
                    put(o->host, dt, at, random_in(dt));
            }
    ck_assert_int_eq(cpu_buffer_alloc(be, o->elems * esz, &o->buf), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, o->buf, 0, o->host, o->elems * esz), GAN_OK);
}

/* Element (i, j) of op(X) for batch entry b. */
static double op_at(const struct operand *o, enum gan_dtype dt, int trans, size_t offset,
                    int b, int i, int j)
{
    int r = trans ? j : i, c = trans ? i : j;
    return get(o->host, dt, offset + (size_t)(b * o->stride) + (size_t)r * o->ld + c);
}

/* Half an ulp of |v| in `dt`, relative bound used for the single final rounding. */
static double rounding_bound(enum gan_dtype dt, double v)
{
    double a = fabs(v);
    switch (dt) {
    case GAN_F16: return a * 0x1p-11 + 0x1p-25;       /* 11 significant bits; subnormals 2^-24 apart */
    case GAN_BF16: return a * 0x1p-8 + 0x1p-134;      /* 8 significant bits */
    default: return a * 0x1p-24 + 0x1p-150;
    }
}

static void run_case(const struct gcase *cs)
{
    gan_backend *be = cpu_fixture_new(NULL);
    struct operand A, B, C;
    int ar = cs->ta ? cs->k : cs->m, ac = cs->ta ? cs->m : cs->k;
    int br = cs->tb ? cs->n : cs->k, bc = cs->tb ? cs->k : cs->n;
    make_operand(be, &A, cs->da, ar, ac, cs, cs->share_a, 1);
    make_operand(be, &B, cs->db, br, bc, cs, 0, 1);
    make_operand(be, &C, cs->dc, cs->m, cs->n, cs, 0, !cs->nan_c);
    if (cs->nan_c)
        for (size_t i = 0; i < C.elems; i++)
            put_nan(C.host, cs->dc, i);
    ck_assert_int_eq(cpu_upload(be, C.buf, 0, C.host, C.elems * gan_dtype_size(cs->dc)),
                     GAN_OK);

    struct gan_gemm g = {
        .trans_a = cs->ta, .trans_b = cs->tb, .m = cs->m, .n = cs->n, .k = cs->k,
        .alpha = cs->alpha, .beta = cs->beta,
        .a = { A.buf, cs->offset, cs->da }, .b = { B.buf, cs->offset, cs->db },
        .c = { C.buf, cs->offset, cs->dc },
        .lda = A.ld, .ldb = B.ld, .ldc = C.ld,
        .batch = cs->batch, .stride_a = A.stride, .stride_b = B.stride, .stride_c = C.stride,
    };
    gan_status st = cpu_gemm(be, &g);
    expect(st == GAN_OK, "gemm failed: %s", host_of(be)->last_error);

    size_t esz = gan_dtype_size(cs->dc);
    unsigned char *out = malloc(C.elems * esz + 1);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(cpu_download(be, out, C.buf, 0, C.elems * esz), GAN_OK);

    /* Elements of C's buffer outside the m×n matrices must be untouched. */
    unsigned char *inside = calloc(C.elems, 1);
    ck_assert_ptr_nonnull(inside);
    for (int b = 0; b < cs->batch; b++)
        for (int i = 0; i < cs->m; i++)
            for (int j = 0; j < cs->n; j++) {
                size_t at = cs->offset + (size_t)(b * C.stride) + (size_t)i * C.ld + j;
                inside[at] = 1;
                double ref = 0, mag = 0;
                for (int p = 0; p < cs->k; p++) {
                    double t = op_at(&A, cs->da, cs->ta, cs->offset, cs->share_a ? 0 : b, i, p) *
                               op_at(&B, cs->db, cs->tb, cs->offset, b, p, j);
                    ref += t;
                    mag += fabs(t);
                }
                ref *= cs->alpha;
                mag *= fabs(cs->alpha);
                if (cs->beta != 0.0f) {
                    double c0 = get(C.host, cs->dc, at);
                    ref += cs->beta * c0;
                    mag += fabs(cs->beta * c0);
                }
                /* FP32 accumulation: the classic dot-product bound (k+2)·u·Σ|terms|
                 * with u = 2^-24, doubled for slack; then one rounding to C's type. */
                double tol = 2.0 * (cs->k + 2) * 0x1p-24 * mag;
                tol += rounding_bound(cs->dc, fabs(ref) + tol);
                double got = get(out, cs->dc, at);
                expect(fabs(got - ref) <= tol,
                              "C[%d](%d,%d) = %.9g, reference %.9g (tolerance %.3g); "
                              "m=%d n=%d k=%d ta=%d tb=%d alpha=%g beta=%g %s·%s→%s",
                              b, i, j, got, ref, tol, cs->m, cs->n, cs->k, cs->ta, cs->tb,
                              cs->alpha, cs->beta, gan_dtype_name(cs->da),
                              gan_dtype_name(cs->db), gan_dtype_name(cs->dc));
            }
    for (size_t e = 0; e < C.elems; e++)
        if (!inside[e])
            expect(memcmp(out + e * esz, C.host + e * esz, esz) == 0,
                          "element %zu of C's buffer, outside every matrix, was written", e);

    free(inside);
    free(out);
    cpu_buffer_free(be, A.buf);
    cpu_buffer_free(be, B.buf);
    cpu_buffer_free(be, C.buf);
    free(A.host);
    free(B.host);
    free(C.host);
    cpu_fixture_free(be);
}

/* ---------------------------------------------------------------- F32 sweeps */

static const int shapes[][3] = {
    { 1, 1, 1 }, { 3, 17, 33 }, { 17, 3, 127 }, { 33, 127, 3 }, { 127, 33, 17 },
    { 64, 64, 64 }, { 1, 127, 33 }, { 128, 1, 3 }, { 5, 7, 1 }, { 96, 80, 130 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static const float alphas[] = { 1.0f, -0.5f, 2.25f };
static const float betas[] = { 0.0f, 1.0f, -1.5f };

/* Every shape under all four transpose combinations, alpha and beta varying. */
START_TEST(test_f32_shapes)
{
    int s = _i / 4, t = _i % 4;
    rng_state = 1000u + (uint64_t)_i;
    struct gcase cs = {
        .ta = t & 1, .tb = t >> 1, .m = shapes[s][0], .n = shapes[s][1], .k = shapes[s][2],
        .alpha = alphas[_i % 3], .beta = betas[(_i / 3) % 3],
        .da = GAN_F32, .db = GAN_F32, .dc = GAN_F32, .batch = 1,
    };
    run_case(&cs);
}
END_TEST

/* Row strides beyond the minimum, with NaN in the padding that must not be read, and
 * operands that do not start at element 0. */
START_TEST(test_f32_padded)
{
    int s = _i / 4, t = _i % 4;
    rng_state = 2000u + (uint64_t)_i;
    struct gcase cs = {
        .ta = t & 1, .tb = t >> 1, .m = shapes[s][0], .n = shapes[s][1], .k = shapes[s][2],
        .alpha = 1.0f, .beta = (_i & 1) ? 0.5f : 0.0f,
        .da = GAN_F32, .db = GAN_F32, .dc = GAN_F32, .pad = 1 + _i % 5, .batch = 1,
        .offset = (size_t)(_i % 7),
    };
    run_case(&cs);
}
END_TEST

/* ---------------------------------------------------------------- alpha, beta, edges */

/* beta = 0 must not read C: NaN there does not reach the result, for any C type, at
 * a shape for OpenBLAS's small-matrix kernels and one for its blocked driver (the
 * backend leaves zeroing C to OpenBLAS). */
START_TEST(test_beta_zero_nan_c)
{
    static const enum gan_dtype dts[] = { GAN_F32, GAN_F16, GAN_BF16 };
    static const int nan_shapes[][3] = { { 33, 17, 9 }, { 131, 70, 300 } };
    const int *mnk = nan_shapes[_i / 12];
    rng_state = 3000u + (uint64_t)_i;
    struct gcase cs = {
        .ta = _i & 1, .tb = (_i >> 1) & 1, .m = mnk[0], .n = mnk[1], .k = mnk[2], .alpha = 1.5f,
        .beta = 0.0f, .da = GAN_F32, .db = GAN_F32, .dc = dts[(_i >> 2) % 3], .batch = 2,
        .gap = 3, .nan_c = 1,
    };
    run_case(&cs);
}
END_TEST

/* k = 0: the product is empty and C = beta·C; with beta = 0, C becomes 0 even from NaN. */
START_TEST(test_k_zero)
{
    for (int nan_c = 0; nan_c < 2; nan_c++) {
        rng_state = 4000u;
        struct gcase cs = {
            .m = 7, .n = 5, .k = 0, .alpha = 1.0f, .beta = nan_c ? 0.0f : -2.0f,
            .da = GAN_F32, .db = GAN_F32, .dc = GAN_F32, .batch = 1, .nan_c = nan_c,
        };
        run_case(&cs);
        cs.dc = GAN_F16;
        run_case(&cs);
    }

    /* k = 0 needs no A or B buffer at all. */
    gan_backend *be = cpu_fixture_new(NULL);
    float c0[6] = { 1, 2, 3, 4, 5, 6 }, out[6];
    gan_buffer *c = cpu_fixture_buffer(be, 6, c0);
    struct gan_gemm g = {
        .m = 2, .n = 3, .k = 0, .alpha = 1.0f, .beta = 3.0f,
        .a = { NULL, 0, GAN_F32 }, .b = { NULL, 0, GAN_F32 }, .c = { c, 0, GAN_F32 },
        .lda = 1, .ldb = 3, .ldc = 3, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
    ck_assert_int_eq(cpu_download(be, out, c, 0, sizeof out), GAN_OK);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(out[i], 3.0f * c0[i]);
    cpu_buffer_free(be, c);
    cpu_fixture_free(be);
}
END_TEST

/* m = 0 or n = 0: nothing to compute or read, so no operand needs a buffer. */
START_TEST(test_empty_output)
{
    gan_backend *be = cpu_fixture_new(NULL);
    struct gan_gemm g = {
        .m = _i ? 4 : 0, .n = _i ? 0 : 4, .k = 3, .alpha = 1.0f, .beta = 0.0f,
        .a = { NULL, 0, GAN_F32 }, .b = { NULL, 0, GAN_F32 }, .c = { NULL, 0, GAN_F32 },
        .lda = 3, .ldb = 4, .ldc = 4, .batch = 1,
    };
    expect(cpu_gemm(be, &g) == GAN_OK, "%s", host_of(be)->last_error);
    cpu_fixture_free(be);
}
END_TEST

/* alpha = 0 follows BLAS: A and B are not referenced, so NaN in them does not matter. */
START_TEST(test_alpha_zero)
{
    gan_backend *be = cpu_fixture_new(NULL);
    float a0[4] = { NAN, NAN, NAN, NAN }, b0[4] = { 1, 2, 3, 4 }, c0[4] = { 1, -2, 3, -4 };
    float out[4];
    gan_buffer *a = cpu_fixture_buffer(be, 4, a0), *b = cpu_fixture_buffer(be, 4, b0),
               *c = cpu_fixture_buffer(be, 4, c0);
    struct gan_gemm g = {
        .m = 2, .n = 2, .k = 2, .alpha = 0.0f, .beta = 0.5f,
        .a = { a, 0, GAN_F32 }, .b = { b, 0, GAN_F32 }, .c = { c, 0, GAN_F32 },
        .lda = 2, .ldb = 2, .ldc = 2, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
    ck_assert_int_eq(cpu_download(be, out, c, 0, sizeof out), GAN_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(out[i], 0.5f * c0[i]);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- batches */

START_TEST(test_batched)
{
    rng_state = 5000u + (uint64_t)_i;
    int s = 1 + _i % (N_SHAPES - 1);
    struct gcase cs = {
        .ta = _i & 1, .tb = (_i >> 1) & 1, .m = shapes[s][0] % 40 + 1,
        .n = shapes[s][1] % 40 + 1, .k = shapes[s][2] % 40 + 1,
        .alpha = alphas[_i % 3], .beta = betas[(_i + 1) % 3],
        .da = GAN_F32, .db = GAN_F32, .dc = GAN_F32, .pad = _i % 2, .batch = 2 + _i % 4,
        .gap = (_i * 5) % 11, .share_a = _i % 3 == 0, .offset = (size_t)(_i % 4),
    };
    run_case(&cs);
    /* the same batch with 16-bit operands and output */
    cs.da = GAN_F16;
    cs.db = GAN_BF16;
    cs.dc = (_i & 1) ? GAN_F16 : GAN_BF16;
    run_case(&cs);
}
END_TEST

/* ---------------------------------------------------------------- 16-bit types */

/* Every combination of F32/F16/BF16 for A, B and C (27), two transposes each. The
 * reference is the exact product of the stored values; the result must be within the
 * FP32 accumulation bound plus half an ulp of C's type (one final rounding). */
START_TEST(test_mixed_types)
{
    static const enum gan_dtype dts[] = { GAN_F32, GAN_F16, GAN_BF16 };
    int combo = _i / 2;
    rng_state = 6000u + (uint64_t)_i;
    struct gcase cs = {
        .ta = _i & 1, .tb = combo & 1, .m = 17, .n = 33, .k = 127,
        .alpha = (_i & 1) ? 0.75f : 1.0f, .beta = (combo % 2) ? 0.0f : 1.25f,
        .da = dts[combo % 3], .db = dts[(combo / 3) % 3], .dc = dts[(combo / 9) % 3],
        .pad = combo % 3, .batch = 1, .offset = (size_t)(combo % 2),
    };
    run_case(&cs);
}
END_TEST

/* The products are summed in FP32, not in C's 16-bit type: 1 + four times 2^-12 is
 * 1 + 2^-10 in FP32 (one FP16 ulp above 1), while adding 2^-12 to 1 one at a time in
 * FP16 would round back to 1 at every step. */
START_TEST(test_fp32_accumulation)
{
    gan_backend *be = cpu_fixture_new(NULL);
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    /* BF16's ulp at 1 is 2^-7: use 2^-9 terms, which BF16 would lose one by one. */
    float tiny = _i ? 0x1p-9f : 0x1p-12f;
    float av[5] = { 1.0f, tiny, tiny, tiny, tiny }, bv[5] = { 1, 1, 1, 1, 1 };
    unsigned char ah[10], bh[10], ch[2];
    for (int i = 0; i < 5; i++) {
        put(ah, dt, (size_t)i, av[i]);
        put(bh, dt, (size_t)i, bv[i]);
    }
    gan_buffer *a, *b, *c;
    ck_assert_int_eq(cpu_buffer_alloc(be, 10, &a), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 10, &b), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 2, &c), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, a, 0, ah, 10), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, b, 0, bh, 10), GAN_OK);
    struct gan_gemm g = {
        .m = 1, .n = 1, .k = 5, .alpha = 1.0f, .beta = 0.0f,
        .a = { a, 0, dt }, .b = { b, 0, dt }, .c = { c, 0, dt },
        .lda = 5, .ldb = 1, .ldc = 1, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
    ck_assert_int_eq(cpu_download(be, ch, c, 0, 2), GAN_OK);
    ck_assert_double_eq(get(ch, dt, 0), 1.0 + 4.0 * tiny);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    cpu_fixture_free(be);
}
END_TEST

/* A 16-bit C overflows only when the FP32 result does: 300·(±300) = ±90000 > 65504
 * becomes ±inf, while 300·300 − 300·300 = 0 stays 0 (the partial sum 90000 is never
 * rounded to 16 bits on the way). */
START_TEST(test_f16_overflow_at_output)
{
    gan_backend *be = cpu_fixture_new(NULL);
    unsigned char ah[4], bh[4], ch[4];
    gan_buffer *a, *b, *c;
    ck_assert_int_eq(cpu_buffer_alloc(be, 4, &a), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 4, &b), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 4, &c), GAN_OK);
    put(ah, GAN_F16, 0, 300.0f);
    put(ah, GAN_F16, 1, 300.0f);
    put(bh, GAN_F16, 0, 300.0f);
    put(bh, GAN_F16, 1, -300.0f);
    ck_assert_int_eq(cpu_upload(be, a, 0, ah, 4), GAN_OK);
    ck_assert_int_eq(cpu_upload(be, b, 0, bh, 4), GAN_OK);

    /* C (1×2) = [300] · [300 −300] */
    struct gan_gemm outer = {
        .m = 1, .n = 2, .k = 1, .alpha = 1.0f, .beta = 0.0f,
        .a = { a, 0, GAN_F16 }, .b = { b, 0, GAN_F16 }, .c = { c, 0, GAN_F16 },
        .lda = 1, .ldb = 2, .ldc = 2, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &outer), GAN_OK);
    ck_assert_int_eq(cpu_download(be, ch, c, 0, 4), GAN_OK);
    ck_assert(isinf(get(ch, GAN_F16, 0)) && get(ch, GAN_F16, 0) > 0);
    ck_assert(isinf(get(ch, GAN_F16, 1)) && get(ch, GAN_F16, 1) < 0);

    /* C (1×1) = [300 300] · [300 −300]^T */
    struct gan_gemm inner = {
        .m = 1, .n = 1, .k = 2, .alpha = 1.0f, .beta = 0.0f,
        .a = { a, 0, GAN_F16 }, .b = { b, 0, GAN_F16 }, .c = { c, 0, GAN_F16 },
        .lda = 2, .ldb = 1, .ldc = 1, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &inner), GAN_OK);
    ck_assert_int_eq(cpu_download(be, ch, c, 0, 2), GAN_OK);
    ck_assert_double_eq(get(ch, GAN_F16, 0), 0.0);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- invalid arguments */

struct bad {
    const char *what;
    gan_status status;
    const char *needle;           /* a word the message must contain */
};

static const struct bad bads[] = {
    { "negative m", GAN_ERR_INVALID, "negative" },
    { "trans_a = 2", GAN_ERR_INVALID, "trans_a" },
    { "lda below the row length", GAN_ERR_INVALID, "lda" },
    { "ldc below n", GAN_ERR_INVALID, "ldc" },
    { "B's buffer too small", GAN_ERR_INVALID, "needs" },
    { "C's offset past the end", GAN_ERR_INVALID, "offset" },
    { "batch = 0", GAN_ERR_INVALID, "batch" },
    { "stride_c = 0 with batch 2", GAN_ERR_INVALID, "stride_c" },
    { "I32 operand", GAN_ERR_UNSUPPORTED, "I32" },
    { "k above INT_MAX", GAN_ERR_UNSUPPORTED, "BLAS" },
    { "lda above INT_MAX", GAN_ERR_INVALID, "lda" },
    { "NULL buffer for A", GAN_ERR_INVALID, "no buffer" },
    { "batch stride overflows", GAN_ERR_INVALID, "64 bits" },
};
#define N_BADS ((int)(sizeof bads / sizeof bads[0]))

START_TEST(test_invalid)
{
    gan_backend *be = cpu_fixture_new(NULL);
    float c0[16];
    for (int i = 0; i < 16; i++)
        c0[i] = (float)i;
    gan_buffer *a = cpu_fixture_buffer(be, 16, c0), *b = cpu_fixture_buffer(be, 16, c0),
               *c = cpu_fixture_buffer(be, 16, c0);
    /* A valid 4×4·4×4 product that each case breaks in one way. */
    struct gan_gemm g = {
        .m = 4, .n = 4, .k = 4, .alpha = 1.0f, .beta = 0.0f,
        .a = { a, 0, GAN_F32 }, .b = { b, 0, GAN_F32 }, .c = { c, 0, GAN_F32 },
        .lda = 4, .ldb = 4, .ldc = 4, .batch = 1,
    };
    switch (_i) {
    case 0: g.m = -1; break;
    case 1: g.trans_a = 2; break;
    case 2: g.lda = 3; break;
    case 3: g.ldc = 2; break;
    case 4: g.ldb = 5; break;                 /* 3·5 + 4 = 19 elements > 16 */
    case 5: g.c.offset = 1; break;            /* 16 elements from 1 > 16 */
    case 6: g.batch = 0; break;
    case 7: g.batch = 2; g.stride_a = 0; g.stride_b = 0; g.stride_c = 0; break;
    case 8: g.b.dtype = GAN_I32; break;
    case 9: g.k = (int64_t)INT_MAX + 1; break;
    case 10: g.lda = (int64_t)INT_MAX + 1; break;
    case 11: g.a.buf = NULL; break;
    case 12: g.batch = 3; g.stride_a = INT64_MAX / 2; break;
    }
    gan_status st = cpu_gemm(be, &g);
    expect(st == bads[_i].status, "%s: status %d, expected %d (%s)", bads[_i].what,
                  (int)st, (int)bads[_i].status, host_of(be)->last_error);
    expect(strstr(host_of(be)->last_error, bads[_i].needle) != NULL,
                  "%s: message \"%s\" does not mention \"%s\"", bads[_i].what,
                  host_of(be)->last_error, bads[_i].needle);
    /* A rejected call writes nothing. */
    float out[16];
    ck_assert_int_eq(cpu_download(be, out, c, 0, sizeof out), GAN_OK);
    for (int i = 0; i < 16; i++)
        ck_assert_float_eq(out[i], c0[i]);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *gemm_suite(void)
{
    Suite *s = suite_create("gemm");

    TCase *tc = tcase_create("f32");
    tcase_add_loop_test(tc, test_f32_shapes, 0, N_SHAPES * 4);
    tcase_add_loop_test(tc, test_f32_padded, 0, N_SHAPES * 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("alpha_beta_edges");
    tcase_add_loop_test(tc, test_beta_zero_nan_c, 0, 24);
    tcase_add_test(tc, test_k_zero);
    tcase_add_loop_test(tc, test_empty_output, 0, 2);
    tcase_add_test(tc, test_alpha_zero);
    suite_add_tcase(s, tc);

    tc = tcase_create("batched");
    tcase_add_loop_test(tc, test_batched, 0, 16);
    suite_add_tcase(s, tc);

    tc = tcase_create("sixteen_bit");
    tcase_add_loop_test(tc, test_mixed_types, 0, 54);
    tcase_add_loop_test(tc, test_fp32_accumulation, 0, 2);
    tcase_add_test(tc, test_f16_overflow_at_output);
    suite_add_tcase(s, tc);

    tc = tcase_create("invalid");
    tcase_add_loop_test(tc, test_invalid, 0, N_BADS);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gemm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
