/* SPDX-License-Identifier: MIT */
/* check_elementwise.c — the CPU backend's unary and binary kernels against references
 * computed here in double precision, over random shapes, layouts and float dtypes, on the
 * portable level and the CPU's vector one, and the two levels against each other. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#include "../../backends/common/elementwise_ops.h"

static gan_backend *be;

static void setup(void)
{
    be = cpu_fixture_new(NULL);
}

static void teardown(void)
{
    cpu_fixture_free(be);
    be = NULL;
}

static const char *last_error(void)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

/* ---- references ---- */

static const char *const unary_name[GAN_UNARY_OP_COUNT] = {
    "COPY", "NEG", "SCALE", "ADD_SCALAR", "RELU", "LEAKY_RELU", "STEP", "TANH", "SIGMOID",
    "SQUARE", "SQRT", "RSQRT", "RECIPROCAL", "EXP", "LOG", "ABS", "SIGN", "FILL", "LEAKY_STEP"
};
static const char *const binary_name[GAN_BINARY_OP_COUNT] = {
    "ADD", "SUB", "MUL", "DIV", "MAX", "MIN", "GREATER", "MASK_POSITIVE", "MASK_LEAKY",
    "ADD_LEAKY", "ADD_RELU"
};

/* MASK_LEAKY's and ADD_LEAKY's slope in these tests (through binary_alpha; binary refuses
 * the two ops) */
#define LEAKY_SLOPE 0.2f

static double ref_unary(int op, double alpha, double x)
{
    switch (op) {
    case GAN_UNARY_COPY: return x;
    case GAN_UNARY_NEG: return -x;
    case GAN_UNARY_SCALE: return alpha * x;
    case GAN_UNARY_ADD_SCALAR: return x + alpha;
    case GAN_UNARY_RELU: return isnan(x) ? x : x > 0 ? x : 0.0;
    case GAN_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case GAN_UNARY_STEP: return x > 0 ? 1.0 : 0.0;
    case GAN_UNARY_TANH: return tanh(x);
    case GAN_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case GAN_UNARY_SQUARE: return x * x;
    case GAN_UNARY_SQRT: return sqrt(x);
    case GAN_UNARY_RSQRT: return 1.0 / sqrt(x);
    case GAN_UNARY_RECIPROCAL: return 1.0 / x;
    case GAN_UNARY_EXP: return exp(x);
    case GAN_UNARY_LOG: return log(x);
    case GAN_UNARY_ABS: return fabs(x);
    case GAN_UNARY_SIGN: return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case GAN_UNARY_FILL: return alpha;
    case GAN_UNARY_LEAKY_STEP: return x > 0 ? 1.0 : alpha;
    default: return NAN;
    }
}

/* Ops whose FP32 result is the exact result rounded once, so the kernel must match
 * the double reference rounded to FP32 bit for bit (+ − × ÷ √ are correctly rounded
 * from double to float). The others go through libm or two roundings. */
static int unary_exact(int op)
{
    return !(op == GAN_UNARY_TANH || op == GAN_UNARY_SIGMOID || op == GAN_UNARY_RSQRT ||
             op == GAN_UNARY_EXP || op == GAN_UNARY_LOG);
}

static double ref_binary(int op, double a, double b)
{
    switch (op) {
    case GAN_BINARY_ADD: return a + b;
    case GAN_BINARY_SUB: return a - b;
    case GAN_BINARY_MUL: return a * b;
    case GAN_BINARY_DIV: return a / b;
    case GAN_BINARY_MAX: return isnan(a) ? b : isnan(b) ? a : a > b ? a : b;
    case GAN_BINARY_MIN: return isnan(a) ? b : isnan(b) ? a : a < b ? a : b;
    case GAN_BINARY_GREATER: return a > b ? 1.0 : 0.0;
    /* a product, not a select: NaN or inf in a gives NaN where b <= 0, and −a·0 = −0 */
    case GAN_BINARY_MASK_POSITIVE: return a * (b > 0 ? 1.0 : 0.0);
    case GAN_BINARY_MASK_LEAKY: return a * (b > 0 ? 1.0 : (double)LEAKY_SLOPE);
    default: return NAN;
    }
}

/* FP32 value v as a result of dtype dt holds it. */
static double stored_as(enum gan_dtype dt, double v)
{
    float f = (float)v;
    if (dt == GAN_F16)
        return f16_decode((uint16_t)f16_encode(f));
    if (dt == GAN_BF16)
        return bf16_decode((uint16_t)bf16_encode(f));
    return f;
}

/* ref_binary for a result of dtype dt: ADD_LEAKY and ADD_RELU activate the sum as ADD's
 * result in dt would hold it, and as the activation would read it. */
static double ref_binary_into(int op, double a, double b, enum gan_dtype dt)
{
    if (op == GAN_BINARY_ADD_LEAKY)
        return ref_unary(GAN_UNARY_LEAKY_RELU, LEAKY_SLOPE, stored_as(dt, a + b));
    if (op == GAN_BINARY_ADD_RELU)
        return ref_unary(GAN_UNARY_RELU, 0.0, stored_as(dt, a + b));
    return ref_binary(op, a, b);
}

/* One binary op through the slot the core sends it to: binary_alpha for those with a
 * parameter (with LEAKY_SLOPE) and for ADD_RELU, binary for the others. */
static gan_status run_binary(int op, const struct gan_shape *s, const struct gan_operand *a,
                             const struct gan_operand *b, const struct gan_operand *y)
{
    return gan_ew_binary_has_alpha((enum gan_binary_op)op) ||
                   gan_ew_binary_stores_sum((enum gan_binary_op)op)
               ? cpu_binary_alpha(be, (enum gan_binary_op)op, LEAKY_SLOPE, s, a, b, y)
               : cpu_binary(be, (enum gan_binary_op)op, s, a, b, y);
}

/* Checks element `i` of buffer `buf` (dtype dt) against `ref` computed in FP32 and
 * then stored in dt: bit-exact when `exact`, else within 4 FP32 ulps (FP32 output)
 * or one step of the 16-bit format. */
static void check_value(const gan_buffer *buf, enum gan_dtype dt, size_t i, double ref,
                        int exact, const char *what, int64_t k)
{
    float want32 = (float)ref;
    double got = raw_get(buf, dt, i);
    if (isnan(want32)) {
        ck_assert_msg(isnan(got), "%s: element %lld is %.9g, want NaN", what, (long long)k, got);
        return;
    }
    if (dt == GAN_F32) {
        if (exact) {
            ck_assert_msg(got == want32 && !signbit(got) == !signbit(want32),
                          "%s: element %lld is %.9g, want %.9g", what, (long long)k, got,
                          (double)want32);
        } else {
            double ulp = fabs((double)nextafterf(want32, INFINITY) - want32);
            ck_assert_msg(fabs(got - want32) <= 4 * ulp || got == want32,
                          "%s: element %lld is %.9g, want %.9g (4 ulps)", what, (long long)k,
                          got, (double)want32);
        }
        return;
    }
    uint32_t want = dt == GAN_F16 ? f16_encode(want32) : bf16_encode(want32);
    uint32_t bits = raw_bits(buf, dt, i);
    if (exact)
        ck_assert_msg(bits == want, "%s: element %lld is 0x%04x (%.9g), want 0x%04x (%.9g)",
                      what, (long long)k, bits, got, want,
                      dt == GAN_F16 ? f16_decode((uint16_t)want) : bf16_decode((uint16_t)want));
    else
        ck_assert_msg((bits ^ want) < 0x8000u && (bits > want ? bits - want : want - bits) <= 1,
                      "%s: element %lld is 0x%04x (%.9g), want 0x%04x within one step",
                      what, (long long)k, bits, got, want);
}

/* Every buffer element the output view does not reach must still hold its old bits. */
static void check_untouched(const struct view *y, const struct gan_shape *s,
                            const uint32_t *before)
{
    unsigned char *reached = calloc(y->cap, 1);
    ck_assert_ptr_nonnull(reached);
    int64_t n = count_of(s);
    for (int64_t k = 0; k < n; k++)
        reached[view_index(y, s, k)] = 1;
    for (size_t i = 0; i < y->cap; i++)
        if (!reached[i])
            ck_assert_msg(raw_bits(y->op.buf, y->op.dtype, i) == before[i],
                          "buffer element %zu outside the output view was written", i);
    free(reached);
}

static uint32_t *snapshot(const struct view *v)
{
    uint32_t *b = malloc((v->cap + 1) * sizeof *b);
    ck_assert_ptr_nonnull(b);
    for (size_t i = 0; i < v->cap; i++)
        b[i] = raw_bits(v->op.buf, v->op.dtype, i);
    return b;
}

/* ---- random sweeps ---- */

/* One unary case: op `op`, random shape (ndim 0–6), layouts and dtypes from `seed`;
 * in place when `inplace`. */
static void unary_case(int op, uint64_t seed, int inplace)
{
    rng_seed(seed);
    struct gan_shape s;
    random_shape(&s, rng_int(GAN_MAX_DIMS + 1), 3000);
    enum gan_dtype xdt = random_dtype(), ydt = inplace ? xdt : random_dtype();
    struct view x, y;
    view_make(be, &x, &s, xdt, inplace ? rng_int(L_OUTPUT_COUNT) : rng_int(L_COUNT), -3, 3);
    if (inplace)
        y = x;
    else
        view_make(be, &y, &s, ydt, rng_int(L_OUTPUT_COUNT), -1, 1);
    float alpha = (float)rng_uniform(-2, 2);
    int64_t n = count_of(&s);
    double *want = malloc((size_t)n * sizeof *want);
    ck_assert_ptr_nonnull(want);
    for (int64_t k = 0; k < n; k++)
        want[k] = ref_unary(op, alpha, raw_get(x.op.buf, xdt, view_index(&x, &s, k)));
    uint32_t *before = snapshot(&y);

    gan_status st = cpu_unary(be, (enum gan_unary_op)op, alpha, &s, &x.op, &y.op);
    ck_assert_msg(st == GAN_OK, "unary %s: status %d: %s", unary_name[op], st, last_error());

    char what[128];
    snprintf(what, sizeof what, "unary %s seed %llu ndim %d %s→%s%s", unary_name[op],
             (unsigned long long)seed, s.ndim, gan_dtype_name(xdt), gan_dtype_name(ydt),
             inplace ? " in place" : "");
    for (int64_t k = 0; k < n; k++)
        check_value(y.op.buf, ydt, view_index(&y, &s, k), want[k], unary_exact(op), what, k);
    if (!inplace)
        check_untouched(&y, &s, before);
    free(before);
    free(want);
    view_free(be, &x);
    if (!inplace)
        view_free(be, &y);
}

/* inplace: 0 = separate output, 1 = y is a, 2 = y is b. */
static void binary_case(int op, uint64_t seed, int inplace)
{
    rng_seed(seed);
    struct gan_shape s;
    random_shape(&s, rng_int(GAN_MAX_DIMS + 1), 3000);
    enum gan_dtype adt = random_dtype(), bdt = random_dtype(), ydt = random_dtype();
    if (inplace == 1)
        ydt = adt;
    if (inplace == 2)
        ydt = bdt;
    struct view a, b, y;
    view_make(be, &a, &s, adt, inplace == 1 ? rng_int(L_OUTPUT_COUNT) : rng_int(L_COUNT), -3, 3);
    view_make(be, &b, &s, bdt, inplace == 2 ? rng_int(L_OUTPUT_COUNT) : rng_int(L_COUNT), -3, 3);
    if (inplace == 1)
        y = a;
    else if (inplace == 2)
        y = b;
    else
        view_make(be, &y, &s, ydt, rng_int(L_OUTPUT_COUNT), -1, 1);
    int64_t n = count_of(&s);
    double *want = malloc((size_t)n * sizeof *want);
    ck_assert_ptr_nonnull(want);
    for (int64_t k = 0; k < n; k++)
        want[k] = ref_binary_into(op, raw_get(a.op.buf, adt, view_index(&a, &s, k)),
                                  raw_get(b.op.buf, bdt, view_index(&b, &s, k)), ydt);
    uint32_t *before = snapshot(&y);

    gan_status st = run_binary(op, &s, &a.op, &b.op, &y.op);
    ck_assert_msg(st == GAN_OK, "binary %s: status %d: %s", binary_name[op], st, last_error());

    char what[128];
    snprintf(what, sizeof what, "binary %s seed %llu ndim %d %s,%s→%s%s", binary_name[op],
             (unsigned long long)seed, s.ndim, gan_dtype_name(adt), gan_dtype_name(bdt),
             gan_dtype_name(ydt), inplace ? " in place" : "");
    for (int64_t k = 0; k < n; k++)
        check_value(y.op.buf, ydt, view_index(&y, &s, k), want[k], 1, what, k);
    if (!inplace)
        check_untouched(&y, &s, before);
    free(before);
    free(want);
    view_free(be, &a);
    view_free(be, &b);
    if (!inplace)
        view_free(be, &y);
}

#define CASES_PER_OP 8

START_TEST(test_unary_random)
{
    unary_case(_i % GAN_UNARY_OP_COUNT, 1000u + (uint64_t)_i, 0);
}
END_TEST

START_TEST(test_unary_in_place)
{
    unary_case(_i % GAN_UNARY_OP_COUNT, 5000u + (uint64_t)_i, 1);
}
END_TEST

START_TEST(test_binary_random)
{
    binary_case(_i % GAN_BINARY_OP_COUNT, 9000u + (uint64_t)_i, 0);
}
END_TEST

START_TEST(test_binary_in_place)
{
    binary_case(_i % GAN_BINARY_OP_COUNT, 13000u + (uint64_t)_i, 1 + (_i / GAN_BINARY_OP_COUNT) % 2);
}
END_TEST

/* ---- broadcasting edge cases, with hand-made views ---- */

/* A contiguous F32 buffer with values v[i] = f(i) and an operand over it. */
static gan_buffer *f32_buffer(size_t n, double scale, double shift)
{
    gan_buffer *buf;
    ck_assert_int_eq(cpu_buffer_alloc(be, n * 4, &buf), GAN_OK);
    for (size_t i = 0; i < n; i++)
        raw_set(buf, GAN_F32, i, scale * (double)((i * 7919u) % 101u) / 101.0 + shift);
    return buf;
}

static struct gan_operand operand(gan_buffer *buf, enum gan_dtype dt, size_t offset,
                                  int64_t s0, int64_t s1, int64_t s2)
{
    struct gan_operand o = { .buf = buf, .offset = offset, .dtype = dt,
                             .stride = { s0, s1, s2, 0, 0, 0 } };
    return o;
}

START_TEST(test_scalar_shape)
{
    /* ndim 0: one element, strides unused. */
    struct gan_shape s = { .ndim = 0 };
    gan_buffer *a = f32_buffer(3, 1, 0.5), *y = f32_buffer(3, 0, 0);
    struct gan_operand oa = operand(a, GAN_F32, 1, 0, 0, 0), ob = operand(a, GAN_F32, 2, 0, 0, 0);
    struct gan_operand oy = operand(y, GAN_F32, 2, 0, 0, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MUL, &s, &oa, &ob, &oy), GAN_OK);
    float want = (float)(raw_get(a, GAN_F32, 1) * raw_get(a, GAN_F32, 2));
    ck_assert_float_eq(raw_get(y, GAN_F32, 2), want);
    ck_assert_float_eq(raw_get(y, GAN_F32, 0), 0.0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_ADD_SCALAR, 2.0f, &s, &oy, &oy), GAN_OK);
    ck_assert_float_eq(raw_get(y, GAN_F32, 2), want + 2.0f);
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, y);
}
END_TEST

/* scalar ⊕ tensor, tensor ⊕ scalar, row ⊕ column and column ⊕ row, for every op:
 * the loop index picks the op and the pattern. */
START_TEST(test_broadcast_patterns)
{
    int op = _i % GAN_BINARY_OP_COUNT, pattern = _i / GAN_BINARY_OP_COUNT;
    const int64_t m = 37, n = 1100; /* n crosses the kernels' staging block */
    struct gan_shape s = { .ndim = 2, .dim = { m, n } };
    /* b straddles 0 for the masks, so that both sides of the mask are broadcast; the
     * other ops keep b positive (DIV's divisor) */
    double b_shift = op == GAN_BINARY_MASK_POSITIVE || op == GAN_BINARY_MASK_LEAKY ? -1.25 : 0.25;
    gan_buffer *ba = f32_buffer((size_t)(m * n), 4, -2);
    gan_buffer *bb = f32_buffer((size_t)(m * n), 3, b_shift);
    gan_buffer *by = f32_buffer((size_t)(m * n), 0, 0);
    struct gan_operand a, b, y = operand(by, GAN_F32, 0, n, 1, 0);
    switch (pattern) {
    case 0: a = operand(ba, GAN_F32, 5, 0, 0, 0); b = operand(bb, GAN_F32, 0, n, 1, 0); break;
    case 1: a = operand(ba, GAN_F32, 0, n, 1, 0); b = operand(bb, GAN_F32, 9, 0, 0, 0); break;
    case 2: a = operand(ba, GAN_F32, 0, 0, 1, 0); b = operand(bb, GAN_F32, 0, 1, 0, 0); break;
    default: a = operand(ba, GAN_F16, 0, 1, 0, 0); b = operand(bb, GAN_F32, 0, 0, 1, 0); break;
    }
    if (pattern == 3)
        for (int64_t i = 0; i < m; i++) /* a column of F16 values */
            raw_set(ba, GAN_F16, (size_t)i, (double)(i - 18) / 8.0);
    ck_assert_int_eq(run_binary(op, &s, &a, &b, &y), GAN_OK);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double av = raw_get(ba, a.dtype, (size_t)(a.offset + i * a.stride[0] + j * a.stride[1]));
            double bv = raw_get(bb, b.dtype, (size_t)(b.offset + i * b.stride[0] + j * b.stride[1]));
            check_value(by, GAN_F32, (size_t)(i * n + j), ref_binary_into(op, av, bv, GAN_F32), 1,
                        binary_name[op], i * n + j);
        }
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_broadcast_everything)
{
    /* Stride 0 on every axis of both inputs: y is one value everywhere, and a 16-bit
     * output receives it rounded once. */
    struct gan_shape s = { .ndim = 3, .dim = { 4, 3, 700 } };
    gan_buffer *bx = f32_buffer(2, 0, 0), *by;
    raw_set(bx, GAN_F32, 0, 1.0 / 3.0);
    raw_set(bx, GAN_F32, 1, 1e-3);
    ck_assert_int_eq(cpu_buffer_alloc(be, 4 * 3 * 700 * 2, &by), GAN_OK);
    struct gan_operand a = operand(bx, GAN_F32, 0, 0, 0, 0), b = operand(bx, GAN_F32, 1, 0, 0, 0);
    struct gan_operand y = operand(by, GAN_BF16, 0, 2100, 700, 1);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &s, &a, &b, &y), GAN_OK);
    uint16_t want = bf16_encode((float)((double)(float)(1.0 / 3.0) + (double)1e-3f));
    for (size_t i = 0; i < 8400; i++)
        ck_assert_uint_eq(raw_bits(by, GAN_BF16, i), want);
    /* A unary op of a broadcast input. */
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_EXP, 0.0f, &s, &b, &y), GAN_OK);
    double e = raw_get(by, GAN_BF16, 1234);
    ck_assert_double_eq_tol(e, exp(1e-3), 8e-3);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_transposed_output)
{
    /* y = a + b written into the transpose of a contiguous [n, m] buffer. */
    const int64_t m = 19, n = 23;
    struct gan_shape s = { .ndim = 2, .dim = { m, n } };
    gan_buffer *ba = f32_buffer((size_t)(m * n), 2, -1), *bb = f32_buffer((size_t)n, 5, 0);
    gan_buffer *by = f32_buffer((size_t)(m * n), 0, 0);
    struct gan_operand a = operand(ba, GAN_F32, 0, n, 1, 0), b = operand(bb, GAN_F32, 0, 0, 1, 0);
    struct gan_operand y = operand(by, GAN_F32, 0, 1, m, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_SUB, &s, &a, &b, &y), GAN_OK);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            ck_assert_float_eq(raw_get(by, GAN_F32, (size_t)(j * m + i)),
                               (float)(raw_get(ba, GAN_F32, (size_t)(i * n + j)) -
                                       raw_get(bb, GAN_F32, (size_t)j)));
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_large_contiguous)
{
    /* The all-contiguous FP32 fast path over a long run, in place. */
    const size_t n = 1u << 20;
    struct gan_shape s = { .ndim = 3, .dim = { 16, 256, 256 } };
    gan_buffer *bx = f32_buffer(n, 8, -4), *bw = f32_buffer(n, 1, 0.5);
    struct gan_operand x = operand(bx, GAN_F32, 0, 65536, 256, 1);
    struct gan_operand w = operand(bw, GAN_F32, 0, 65536, 256, 1);
    float *orig = malloc(n * sizeof *orig);
    ck_assert_ptr_nonnull(orig);
    memcpy(orig, bx->data, n * sizeof *orig);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MUL, &s, &x, &w, &x), GAN_OK);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_RELU, 0.0f, &s, &x, &x), GAN_OK);
    for (size_t i = 0; i < n; i += 997) {
        float p = (float)((double)orig[i] * raw_get(bw, GAN_F32, i));
        ck_assert_float_eq(raw_get(bx, GAN_F32, i), p > 0 ? p : 0.0f);
    }
    free(orig);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bw);
}
END_TEST

/* ---- NaN, infinity and signed zero ---- */

START_TEST(test_special_values_unary)
{
    static const float in[] = { NAN, -0.0f, 0.0f, -INFINITY, INFINITY, -1.0f, 1.0f, -100.0f, 100.0f };
    const int n = (int)(sizeof in / sizeof in[0]);
    struct gan_shape s = { .ndim = 1, .dim = { n } };
    gan_buffer *bx = f32_buffer((size_t)n, 0, 0), *by = f32_buffer((size_t)n, 0, 0);
    memcpy(bx->data, in, sizeof in);
    struct gan_operand x = operand(bx, GAN_F32, 0, 1, 0, 0), y = operand(by, GAN_F32, 0, 1, 0, 0);
    float out[9];
#define RUN(OP, ALPHA)                                                                  \
    do {                                                                                \
        ck_assert_int_eq(cpu_unary(be, OP, ALPHA, &s, &x, &y), GAN_OK);                 \
        memcpy(out, by->data, sizeof out);                                              \
    } while (0)
    RUN(GAN_UNARY_RELU, 0.0f);
    ck_assert(isnan(out[0]));
    ck_assert(out[1] == 0.0f && !signbit(out[1])); /* RELU(-0) = +0 */
    ck_assert(out[3] == 0.0f && out[4] == INFINITY && out[5] == 0.0f && out[6] == 1.0f);
    RUN(GAN_UNARY_LEAKY_RELU, 0.25f);
    ck_assert(isnan(out[0]) && out[5] == -0.25f && out[3] == -INFINITY);
    RUN(GAN_UNARY_STEP, 0.0f);
    ck_assert(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f && out[4] == 1.0f);
    RUN(GAN_UNARY_LEAKY_STEP, 0.25f); /* NaN, −0 and +0 give alpha */
    ck_assert(out[0] == 0.25f && out[1] == 0.25f && out[2] == 0.25f && out[4] == 1.0f);
    ck_assert(out[3] == 0.25f && out[6] == 1.0f);
    RUN(GAN_UNARY_SIGN, 0.0f);
    ck_assert(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f);
    ck_assert(out[3] == -1.0f && out[4] == 1.0f && out[5] == -1.0f);
    RUN(GAN_UNARY_SIGMOID, 0.0f);
    ck_assert(isnan(out[0]) && out[3] == 0.0f && out[4] == 1.0f && out[2] == 0.5f);
    ck_assert(out[7] >= 0.0f && out[7] < 1e-40f && out[8] == 1.0f);
    RUN(GAN_UNARY_TANH, 0.0f);
    ck_assert(isnan(out[0]) && out[3] == -1.0f && out[4] == 1.0f && signbit(out[1]));
    RUN(GAN_UNARY_RSQRT, 0.0f);
    ck_assert(out[2] == INFINITY && out[1] == -INFINITY && isnan(out[5]) && out[4] == 0.0f);
    RUN(GAN_UNARY_LOG, 0.0f);
    ck_assert(out[2] == -INFINITY && isnan(out[5]) && out[6] == 0.0f && out[4] == INFINITY);
    RUN(GAN_UNARY_RECIPROCAL, 0.0f);
    ck_assert(out[1] == -INFINITY && out[2] == INFINITY && out[3] == 0.0f && signbit(out[3]));
    RUN(GAN_UNARY_ABS, 0.0f);
    ck_assert(isnan(out[0]) && out[1] == 0.0f && !signbit(out[1]) && out[3] == INFINITY);
    RUN(GAN_UNARY_FILL, 7.5f);
    for (int i = 0; i < n; i++)
        ck_assert(out[i] == 7.5f);
#undef RUN
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_special_values_binary)
{
    static const float a[] = { NAN, 1.0f, NAN, -0.0f, INFINITY, 2.0f };
    static const float b[] = { 1.0f, NAN, NAN, 0.0f, INFINITY, 0.0f };
    struct gan_shape s = { .ndim = 1, .dim = { 6 } };
    gan_buffer *ba = f32_buffer(6, 0, 0), *bb = f32_buffer(6, 0, 0), *by = f32_buffer(6, 0, 0);
    memcpy(ba->data, a, sizeof a);
    memcpy(bb->data, b, sizeof b);
    struct gan_operand oa = operand(ba, GAN_F32, 0, 1, 0, 0), ob = operand(bb, GAN_F32, 0, 1, 0, 0);
    struct gan_operand oy = operand(by, GAN_F32, 0, 1, 0, 0);
    float out[6];
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MAX, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(out[0] == 1.0f && out[1] == 1.0f && isnan(out[2]) && out[4] == INFINITY);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MIN, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(out[0] == 1.0f && out[1] == 1.0f && isnan(out[2]) && out[5] == 0.0f);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_GREATER, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(out[0] == 0.0f && out[1] == 0.0f && out[2] == 0.0f && out[3] == 0.0f &&
              out[4] == 0.0f && out[5] == 1.0f);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_SUB, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(isnan(out[4]) && signbit(out[3])); /* inf − inf, −0 − 0 */
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_DIV, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(out[5] == INFINITY && isnan(out[3]));
    /* MUL(a, STEP(b)) in one pass: NaN in a survives a mask of 0 as of 1 (a NaN b
     * masks), −0·0 keeps its sign, inf passes a mask of 1, and a = 2 at b = 0 gives +0 */
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MASK_POSITIVE, &s, &oa, &ob, &oy), GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(isnan(out[0]) && out[1] == 0.0f && !signbit(out[1]) && isnan(out[2]) &&
              out[3] == 0.0f && signbit(out[3]) && out[4] == INFINITY && out[5] == 0.0f &&
              !signbit(out[5]));
    /* MUL(a, LEAKY_STEP(b, 0.25)) likewise: a NaN b takes the slope, −0·0.25 = −0 */
    ck_assert_int_eq(cpu_binary_alpha(be, GAN_BINARY_MASK_LEAKY, 0.25f, &s, &oa, &ob, &oy),
                     GAN_OK);
    memcpy(out, by->data, sizeof out);
    ck_assert(isnan(out[0]) && out[1] == 0.25f && isnan(out[2]) && out[3] == 0.0f &&
              signbit(out[3]) && out[4] == INFINITY && out[5] == 0.5f);
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, by);
}
END_TEST

/* An output broadcast along a run longer than the staging block (stride 0: every
 * element written to one place, in order, on one thread) holds the last element's
 * result, in FP32 and in 16 bits, for ADD and for ADD_LEAKY; under AddressSanitizer a
 * run computed past the block would be caught. */
START_TEST(test_broadcast_output)
{
    const int64_t n = 1100;
    struct gan_shape s = { .ndim = 1, .dim = { n } };
    gan_buffer *ba = f32_buffer((size_t)n, 4, -2), *bb = f32_buffer((size_t)n, 3, 0.25);
    gan_buffer *by = f32_buffer(1, 0, 0);
    struct gan_operand a = operand(ba, GAN_F32, 0, 1, 0, 0), b = operand(bb, GAN_F32, 0, 1, 0, 0);
    const float last = raw_get(ba, GAN_F32, (size_t)n - 1) + raw_get(bb, GAN_F32, (size_t)n - 1);
    static const enum gan_dtype types[3] = { GAN_F32, GAN_F16, GAN_BF16 };
    for (int t = 0; t < 3; t++)
        for (int fused = 0; fused < 2; fused++) {
            struct gan_operand y = operand(by, types[t], 0, 0, 0, 0);
            ck_assert_int_eq(fused ? cpu_binary_alpha(be, GAN_BINARY_ADD_LEAKY, 0.5f, &s, &a, &b,
                                                      &y)
                                   : cpu_binary(be, GAN_BINARY_ADD, &s, &a, &b, &y),
                             GAN_OK);
            const double want = stored_as(types[t], last);
            const double got = raw_get(by, types[t], 0);
            ck_assert_msg(got == stored_as(types[t], fused && want <= 0 ? 0.5 * want : want),
                          "%s into one %s element: %.9g, want %.9g",
                          fused ? "ADD_LEAKY" : "ADD", gan_dtype_name(types[t]), got, want);
        }
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, by);
}
END_TEST

/* ADD_LEAKY and ADD_RELU against ADD into a tensor of the result's dtype and then the
 * activation of it, bit for bit (but the payload of NaN + NaN), on special values (NaN,
 * infinities, both zeros, subnormals, values that round to zero or overflow in 16 bits)
 * in every pair of input types and every result type, runs of 1 to 100 elements, b
 * contiguous or broadcast, and slopes 0.2, 0, −0 and 1; at the instance's level. */
START_TEST(test_stored_sum_is_two_ops)
{
    static const int64_t lengths[] = { 1, 9, 17, 100 };
    static const float slopes[] = { 0.2f, 0.0f, -0.0f, 1.0f };
    static const enum gan_dtype types[3] = { GAN_F32, GAN_F16, GAN_BF16 };
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        const int64_t n = lengths[li];
        struct gan_shape s = { .ndim = 1, .dim = { n } };
        for (int ta = 0; ta < 3; ta++)
            for (int tb = 0; tb < 3; tb++)
                for (int ty = 0; ty < 3; ty++)
                    for (int bc = 0; bc < 2; bc++)
                        for (int k = 0; k < 5; k++) {
                            const enum gan_dtype da = types[ta], db = types[tb], dy = types[ty];
                            const int relu = k == 4;
                            const float slope = relu ? 0.0f : slopes[k];
                            gan_buffer *ba, *bb, *bz, *b1, *b2;
                            ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &ba), GAN_OK);
                            ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &bb), GAN_OK);
                            ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &bz), GAN_OK);
                            ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &b1), GAN_OK);
                            ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &b2), GAN_OK);
                            fill_special_values(ba, da, (size_t)n);
                            fill_special_values(bb, db, (size_t)n);
                            struct gan_operand a = operand(ba, da, 0, 1, 0, 0);
                            /* broadcast: one value, the second special one */
                            struct gan_operand b = operand(bb, db, bc && n > 1 ? 1 : 0,
                                                           bc ? 0 : 1, 0, 0);
                            struct gan_operand z = operand(bz, dy, 0, 1, 0, 0);
                            struct gan_operand y1 = operand(b1, dy, 0, 1, 0, 0);
                            struct gan_operand y2 = operand(b2, dy, 0, 1, 0, 0);
                            ck_assert_int_eq(cpu_binary_alpha(be, relu ? GAN_BINARY_ADD_RELU
                                                                       : GAN_BINARY_ADD_LEAKY,
                                                              slope, &s, &a, &b, &y1),
                                             GAN_OK);
                            ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &s, &a, &b, &z),
                                             GAN_OK);
                            ck_assert_int_eq(cpu_unary(be, relu ? GAN_UNARY_RELU
                                                                : GAN_UNARY_LEAKY_RELU,
                                                       slope, &s, &z, &y2),
                                             GAN_OK);
                            const size_t es = dsize(dy);
                            for (int64_t i = 0; i < n; i++) {
                                /* a NaN plus a NaN may carry either payload (the compiler
                                 * may swap an add's operands), as between the levels */
                                if (isnan(raw_get(ba, da, (size_t)i)) &&
                                    isnan(raw_get(bb, db, b.offset + (size_t)(bc ? 0 : i))) &&
                                    isnan(raw_get(b1, dy, (size_t)i)) &&
                                    isnan(raw_get(b2, dy, (size_t)i)))
                                    continue;
                                ck_assert_msg(memcmp(b1->data + (size_t)i * es,
                                                     b2->data + (size_t)i * es, es) == 0,
                                              "%s slope %a: %s + %s → %s, n %lld, broadcast "
                                              "%d: element %lld is %.9g, ADD then the "
                                              "activation gave %.9g", relu ? "ADD_RELU"
                                              : "ADD_LEAKY", (double)slope,
                                              gan_dtype_name(da), gan_dtype_name(db),
                                              gan_dtype_name(dy), (long long)n, bc,
                                              (long long)i, raw_get(b1, dy, (size_t)i),
                                              raw_get(b2, dy, (size_t)i));
                            }
                            gan_buffer *const all[] = { ba, bb, bz, b1, b2 };
                            for (size_t q = 0; q < 5; q++)
                                cpu_buffer_free(be, all[q]);
                        }
    }
}
END_TEST

/* ---- 16-bit rounding ---- */

START_TEST(test_f16_overflow_and_subnormal)
{
    /* SCALE of F16 values into F16: 40000·2 overflows to inf; 2^-14·2^-5 lands in
     * the subnormals; 2^-24·0.5 is a tie and rounds to even (zero). */
    struct gan_shape s = { .ndim = 1, .dim = { 3 } };
    gan_buffer *bx, *by;
    ck_assert_int_eq(cpu_buffer_alloc(be, 6, &bx), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 6, &by), GAN_OK);
    raw_set(bx, GAN_F16, 0, 40000.0);
    raw_set(bx, GAN_F16, 1, 0x1p-14);
    raw_set(bx, GAN_F16, 2, 0x1p-24);
    struct gan_operand x = operand(bx, GAN_F16, 0, 1, 0, 0), y = operand(by, GAN_F16, 0, 1, 0, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_SCALE, 2.0f, &s, &x, &y), GAN_OK);
    ck_assert_uint_eq(raw_bits(by, GAN_F16, 0), 0x7c00);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_SCALE, 0x1p-5f, &s, &x, &y), GAN_OK);
    ck_assert_uint_eq(raw_bits(by, GAN_F16, 1), 0x0020); /* 2^-19 = 32 · 2^-24 */
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_SCALE, 0.5f, &s, &x, &y), GAN_OK);
    ck_assert_uint_eq(raw_bits(by, GAN_F16, 2), 0x0000);
    /* 2^-24 · 0.75 rounds up to 2^-24. */
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_SCALE, 0.75f, &s, &x, &y), GAN_OK);
    ck_assert_uint_eq(raw_bits(by, GAN_F16, 2), 0x0001);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_mixed_dtypes_round_once)
{
    /* a (BF16) · b (F16) into F16: the product is formed in FP32 and rounded to F16
     * once. Had it been rounded to BF16 first (a's type), the answer would differ. */
    struct gan_shape s = { .ndim = 0 };
    gan_buffer *ba, *bb, *by;
    ck_assert_int_eq(cpu_buffer_alloc(be, 2, &ba), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 2, &bb), GAN_OK);
    ck_assert_int_eq(cpu_buffer_alloc(be, 2, &by), GAN_OK);
    raw_set(ba, GAN_BF16, 0, 1.0 + 0x1p-7);  /* exact in BF16 */
    raw_set(bb, GAN_F16, 0, 1.0 + 0x1p-10);  /* exact in F16 */
    struct gan_operand a = operand(ba, GAN_BF16, 0, 0, 0, 0), b = operand(bb, GAN_F16, 0, 0, 0, 0);
    struct gan_operand y = operand(by, GAN_F16, 0, 0, 0, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MUL, &s, &a, &b, &y), GAN_OK);
    /* exact product 1 + 2^-7 + 2^-10 + 2^-17 → F16 1 + 9·2^-10 */
    ck_assert_uint_eq(raw_bits(by, GAN_F16, 0), f16_encode(1.0 + 9 * 0x1p-10));
    ck_assert_uint_ne(raw_bits(by, GAN_F16, 0), f16_encode(bf16_decode(bf16_encode(
                          (1.0 + 0x1p-7) * (1.0 + 0x1p-10)))));
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, by);
}
END_TEST

/* ---- validation ---- */

START_TEST(test_rejects_out_of_bounds)
{
    struct gan_shape s = { .ndim = 2, .dim = { 4, 5 } };
    gan_buffer *bx = f32_buffer(20, 1, 0), *by = f32_buffer(20, 0, 0);
    struct gan_operand x = operand(bx, GAN_F32, 0, 5, 1, 0);
    /* One element past the end: offset 1 reaches 1 … 20 of 20. */
    struct gan_operand y = operand(by, GAN_F32, 1, 5, 1, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_COPY, 0.0f, &s, &x, &y), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "operand y") && strstr(last_error(), "1 to 20") &&
                  strstr(last_error(), "holds 20"), "message: %s", last_error());
    for (size_t i = 0; i < 20; i++)
        ck_assert_float_eq(raw_get(by, GAN_F32, i), 0.0f); /* nothing written */
    /* A negative stride that walks below element 0. */
    struct gan_operand xr = operand(bx, GAN_F32, 2, 5, -1, 0);
    y.offset = 0;
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &s, &x, &xr, &y), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "operand b") && strstr(last_error(), "-2 to 17"),
                  "message: %s", last_error());
    /* The same reversal from a valid offset is accepted and reverses each row. */
    xr.offset = 4;
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_SUB, &s, &x, &xr, &y), GAN_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            ck_assert_float_eq(raw_get(by, GAN_F32, (size_t)(i * 5 + j)),
                               (float)(raw_get(bx, GAN_F32, (size_t)(i * 5 + j)) -
                                       raw_get(bx, GAN_F32, (size_t)(4 + i * 5 - j))));
    /* An F16 view is checked in F16 elements: 80 bytes hold 40, so 21 … 40 fails. */
    struct gan_operand yh = operand(by, GAN_F16, 21, 5, 1, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_COPY, 0.0f, &s, &x, &yh), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "holds 40 F16"), "message: %s", last_error());
    /* A huge stride is reported, not wrapped around. */
    struct gan_operand xh = operand(bx, GAN_F32, 0, INT64_MAX / 2, 1, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_COPY, 0.0f, &s, &xh, &y), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "operand x"), "message: %s", last_error());
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_rejects_bad_arguments)
{
    struct gan_shape s = { .ndim = 1, .dim = { 4 } };
    gan_buffer *bx = f32_buffer(4, 1, 0);
    struct gan_operand x = operand(bx, GAN_F32, 0, 1, 0, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_OP_COUNT, 0.0f, &s, &x, &x), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "gan_unary_op"), "message: %s", last_error());
    ck_assert_int_eq(cpu_binary(be, (enum gan_binary_op)-1, &s, &x, &x, &x), GAN_ERR_INVALID);
    /* MASK_LEAKY and ADD_LEAKY have a slope, which only binary_alpha takes */
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MASK_LEAKY, &s, &x, &x, &x), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "binary_alpha"), "message: %s", last_error());
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD_LEAKY, &s, &x, &x, &x), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "ADD_LEAKY needs its slope"), "message: %s",
                  last_error());
    /* ADD_RELU has none: either slot takes it */
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD_RELU, &s, &x, &x, &x), GAN_OK);
    ck_assert_int_eq(cpu_binary_alpha(be, GAN_BINARY_OP_COUNT, 0.5f, &s, &x, &x, &x),
                     GAN_ERR_INVALID);
    struct gan_shape bad = { .ndim = GAN_MAX_DIMS + 1 };
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_NEG, 0.0f, &bad, &x, &x), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "ndim is 7"), "message: %s", last_error());
    bad.ndim = -1;
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_NEG, 0.0f, &bad, &x, &x), GAN_ERR_INVALID);
    struct gan_shape neg = { .ndim = 2, .dim = { 2, -3 } };
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_NEG, 0.0f, &neg, &x, &x), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "dimension 1 is -3"), "message: %s", last_error());
    struct gan_operand xi = x;
    xi.dtype = GAN_I32;
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &s, &x, &xi, &x), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(last_error(), "operand b") && strstr(last_error(), "I32"),
                  "message: %s", last_error());
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_NEG, 0.0f, &s, NULL, &x), GAN_ERR_INVALID);
    /* An empty shape touches nothing, so even a view without a buffer is accepted. */
    struct gan_shape empty = { .ndim = 2, .dim = { 3, 0 } };
    struct gan_operand none = operand(NULL, GAN_F32, 0, 1, 1, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &empty, &none, &none, &none), GAN_OK);
    cpu_buffer_free(be, bx);
}
END_TEST

/* ---- the vector level against the portable one ---- */

static const enum gan_dtype level_dtypes[3] = { GAN_F32, GAN_F16, GAN_BF16 };

/* Runs one op on the portable level, then on each vector level the CPU has (F16C/AVX2,
 * and AVX-512 where it has that), and returns whether every output agrees bit for bit
 * with the portable one; *where gets the first element that differs, *level the level. */
static int levels_agree(int unary, int op, float alpha, const struct gan_shape *s,
                        const struct gan_operand *a, const struct gan_operand *b,
                        const struct gan_operand *y, gan_buffer *by, size_t ybytes,
                        unsigned char *first, size_t *where, enum cpu_isa *level)
{
    enum cpu_isa best = cpu_isa_best();
    size_t count = ybytes / dsize(y->dtype), esz = dsize(y->dtype);
    for (int lv = CPU_ISA_PORTABLE; lv <= (int)best; lv++) {
        cpu_isa_select(be, (enum cpu_isa)lv);
        memset(by->data, 0x5a, ybytes);
        gan_status st = unary ? cpu_unary(be, (enum gan_unary_op)op, alpha, s, a, y)
                              : run_binary(op, s, a, b, y);
        ck_assert_int_eq(st, GAN_OK);
        if (lv == CPU_ISA_PORTABLE) {
            memcpy(first, by->data, ybytes);
            continue;
        }
        *level = (enum cpu_isa)lv;
        for (size_t i = 0; i < count; i++) {
            if (!memcmp(first + i * esz, by->data + i * esz, esz))
                continue;
            /* Two NaN inputs: IEEE 754 lets the result carry either payload, and which
             * one the instruction keeps depends on the operand order the compiler chose
             * for a commutative op. Both levels must still give a NaN. */
            if (!unary && isnan(raw_get(a->buf, a->dtype, a->stride[0] ? i : 0)) &&
                isnan(raw_get(b->buf, b->dtype, b->stride[0] ? i : 0)) &&
                isnan(raw_get(by, y->dtype, i))) {
                gan_buffer fb = { .bytes = ybytes, .data = first };
                if (isnan(raw_get(&fb, y->dtype, i)))
                    continue;
            }
            *where = i;
            cpu_isa_select(be, best);
            return 0;
        }
    }
    cpu_isa_select(be, best);
    return 1;
}

/* Every op, every pair of input and output types, run lengths around the 8- and 16-lane
 * blocks, inputs contiguous or broadcast: each vector level gives the portable level's
 * bits, NaN payloads and signed zeros included. */
START_TEST(test_levels_bit_identical)
{
    static const int64_t lengths[] = { 1, 7, 8, 9, 16, 17, 33, 100 };
    int unary = _i < GAN_UNARY_OP_COUNT;
    int op = unary ? _i : _i - GAN_UNARY_OP_COUNT;
    rng_seed(0x1e7e1u + (uint64_t)_i);
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int64_t n = lengths[li];
        struct gan_shape s = { .ndim = 1, .dim = { n } };
        for (int ta = 0; ta < 3; ta++)
            for (int tb = 0; tb < (unary ? 1 : 3); tb++)
                for (int ty = 0; ty < 3; ty++)
                    for (int bc = 0; bc < (unary ? 2 : 4); bc++) {
                        enum gan_dtype da = level_dtypes[ta], db = level_dtypes[tb],
                                       dy = level_dtypes[ty];
                        gan_buffer *ba, *bb, *by;
                        ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &ba), GAN_OK);
                        ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &bb), GAN_OK);
                        ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)n * 4, &by), GAN_OK);
                        fill_special_values(ba, da, (size_t)n);
                        fill_special_values(bb, db, (size_t)n);
                        struct gan_operand a = operand(ba, da, 0, bc & 1 ? 0 : 1, 0, 0);
                        struct gan_operand b = operand(bb, db, 0, bc & 2 ? 0 : 1, 0, 0);
                        struct gan_operand y = operand(by, dy, 0, 1, 0, 0);
                        size_t ybytes = (size_t)n * dsize(dy), where = 0;
                        unsigned char first[400];
                        enum cpu_isa level = CPU_ISA_PORTABLE;
                        float alpha = (float)rng_uniform(-2.0, 2.0);
                        if (!levels_agree(unary, op, alpha, &s, &a, &b, &y, by, ybytes, first,
                                          &where, &level))
                            ck_abort_msg("%s %s: %s%s%s → %s, n %lld, broadcast %d: element "
                                         "%zu differs between the portable and %s levels",
                                         unary ? "unary" : "binary",
                                         unary ? unary_name[op] : binary_name[op],
                                         gan_dtype_name(da), unary ? "" : ", ",
                                         unary ? "" : gan_dtype_name(db), gan_dtype_name(dy),
                                         (long long)n, bc, where, cpu_isa_name(level));
                        cpu_buffer_free(be, ba);
                        cpu_buffer_free(be, bb);
                        cpu_buffer_free(be, by);
                    }
    }
}
END_TEST

/* ---- suite ---- */

static void setup_portable(void)
{
    setup();
    ck_assert_int_eq(cpu_isa_select(be, CPU_ISA_PORTABLE), CPU_ISA_PORTABLE);
}

/* The kernel tests as test cases named "<group> <level>", on an instance at the
 * portable level and on one at the best level the CPU has (the same level when it has
 * no vector one). */
static void add_level_cases(Suite *s, int portable)
{
    static const char *const name[2][6] = {
        { "unary", "binary", "broadcast", "special values", "16-bit", "validation" },
        { "unary portable", "binary portable", "broadcast portable",
          "special values portable", "16-bit portable", "validation portable" },
    };
    void (*start)(void) = portable ? setup_portable : setup;

    TCase *tc = tcase_create(name[portable][0]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_loop_test(tc, test_unary_random, 0, GAN_UNARY_OP_COUNT * CASES_PER_OP);
    tcase_add_loop_test(tc, test_unary_in_place, 0, GAN_UNARY_OP_COUNT * 3);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][1]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_loop_test(tc, test_binary_random, 0, GAN_BINARY_OP_COUNT * CASES_PER_OP * 2);
    tcase_add_loop_test(tc, test_binary_in_place, 0, GAN_BINARY_OP_COUNT * 4);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][2]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_scalar_shape);
    tcase_add_loop_test(tc, test_broadcast_patterns, 0, GAN_BINARY_OP_COUNT * 4);
    tcase_add_test(tc, test_broadcast_everything);
    tcase_add_test(tc, test_transposed_output);
    tcase_add_test(tc, test_broadcast_output);
    tcase_add_test(tc, test_large_contiguous);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][3]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_special_values_unary);
    tcase_add_test(tc, test_special_values_binary);
    tcase_add_test(tc, test_stored_sum_is_two_ops);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][4]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_f16_overflow_and_subnormal);
    tcase_add_test(tc, test_mixed_dtypes_round_once);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][5]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_rejects_out_of_bounds);
    tcase_add_test(tc, test_rejects_bad_arguments);
    suite_add_tcase(s, tc);
}

static Suite *elementwise_suite(void)
{
    Suite *s = suite_create("elementwise");
    add_level_cases(s, 0);
    if (cpu_isa_best() != CPU_ISA_PORTABLE)
        add_level_cases(s, 1);

    TCase *tc = tcase_create("levels");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_levels_bit_identical, 0,
                        GAN_UNARY_OP_COUNT + GAN_BINARY_OP_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(elementwise_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
