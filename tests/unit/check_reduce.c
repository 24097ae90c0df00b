/* SPDX-License-Identifier: MIT */
/* check_reduce.c — the CPU backend's reductions against references computed here in
 * double precision: every op over every subset of axes, 16-bit types, long and empty sums, on
 * the portable level and the CPU's vector one, and the two levels against each other. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"

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

/* ---- reference ---- */

static const char *const op_name[GAN_REDUCE_OP_COUNT] = {
    "SUM", "MEAN", "MAX", "MIN", "SUM_SQUARES", "ABS_MAX"
};

/* The spacing of dt's values around |v| (FP32: none; the result is compared within
 * the summation bound only). */
static double step_of(enum gan_dtype dt, double v)
{
    if (dt == GAN_F32 || v == 0 || !isfinite(v))
        return 0;
    int e;
    frexp(fabs(v), &e);
    e -= 1;
    if (dt == GAN_F16)
        return ldexp(1.0, (e < -14 ? -14 : e) - 10);
    return ldexp(1.0, (e < -126 ? -126 : e) - 7);
}

/* Per-output accumulators of the reference, in double. */
struct ref_acc {
    double sum, sum_abs, sum_sq, max, min, absmax;
    int nan;
};

/* Expected value and allowed error for one output. Summing n terms in FP32 with the
 * kernel's blocking costs at most about (32 + log2 n) roundings of the running
 * magnitude; 64 · 2^-24 · Σ|term| covers it with room. MAX, MIN and ABS_MAX are exact. */
static void ref_result(int op, const struct ref_acc *a, int64_t count, double *want, double *tol)
{
    const double u = 64 * 0x1p-24;
    switch (op) {
    case GAN_REDUCE_SUM: *want = a->sum; *tol = u * a->sum_abs; break;
    case GAN_REDUCE_MEAN:
        *want = count ? a->sum / (double)count : NAN;
        *tol = count ? u * a->sum_abs / (double)count : 0;
        break;
    case GAN_REDUCE_SUM_SQUARES: *want = a->sum_sq; *tol = u * a->sum_sq; break;
    case GAN_REDUCE_MAX: *want = a->nan ? NAN : a->max; *tol = 0; break;
    case GAN_REDUCE_MIN: *want = a->nan ? NAN : a->min; *tol = 0; break;
    default: *want = a->nan ? NAN : a->absmax; *tol = 0; break;
    }
}

/* Compares output `got` (as stored in dt) with the reference. Exact ops must match
 * the reference rounded to dt; summed ones must lie within tol plus one step of dt. */
static void check_output(int op, enum gan_dtype dt, double got, double want, double tol,
                         const char *what, int64_t k)
{
    if (isnan(want)) {
        ck_assert_msg(isnan(got), "%s: output %lld is %.9g, want NaN", what, (long long)k, got);
        return;
    }
    if (tol == 0) {
        double r = dt == GAN_F32 ? (double)(float)want
                 : dt == GAN_F16 ? f16_decode(f16_encode(want)) : bf16_decode(bf16_encode(want));
        ck_assert_msg(got == r, "%s: output %lld is %.9g, want %.9g", what, (long long)k, got, r);
        return;
    }
    double bound = tol + step_of(dt, want) + 1e-300;
    ck_assert_msg(fabs(got - want) <= bound, "%s: output %lld is %.9g, want %.9g ± %.3g",
                  what, (long long)k, got, want, bound);
}

/* ---- random sweep: every op, every subset of axes, random layouts and dtypes ---- */

static void reduce_case(int op, uint64_t seed)
{
    rng_seed(seed);
    struct gan_shape s;
    random_shape(&s, 1 + rng_int(4), 2500);
    int64_t n = count_of(&s);
    enum gan_dtype xdt = random_dtype();
    struct view x;
    view_make(be, &x, &s, xdt, rng_int(L_COUNT), -4, 4);
    for (uint32_t axes = 0; axes < (1u << s.ndim); axes++) {
        enum gan_dtype ydt = random_dtype();
        struct gan_shape ys = s;
        for (int d = 0; d < s.ndim; d++)
            if (axes >> d & 1u)
                ys.dim[d] = 1;
        struct view y;
        view_make(be, &y, &ys, ydt, rng_int(L_OUTPUT_COUNT), -1, 1);
        for (int d = 0; d < s.ndim; d++)
            if (axes >> d & 1u)
                y.op.stride[d] = 0;
        int64_t nout = count_of(&ys), per = nout ? n / nout : 0;
        struct ref_acc *acc = calloc((size_t)nout, sizeof *acc);
        uint32_t *before = malloc(y.cap * sizeof *before);
        ck_assert_ptr_nonnull(acc);
        ck_assert_ptr_nonnull(before);
        for (size_t i = 0; i < y.cap; i++)
            before[i] = raw_bits(y.op.buf, ydt, i);
        for (int64_t o = 0; o < nout; o++) {
            acc[o].max = -INFINITY;
            acc[o].min = INFINITY;
        }
        for (int64_t k = 0; k < n; k++) {
            /* The output this element belongs to: its index with reduced digits dropped. */
            int64_t rem = k, o = 0, mul = 1;
            for (int d = s.ndim - 1; d >= 0; d--) {
                int64_t digit = rem % s.dim[d];
                rem /= s.dim[d];
                if (!(axes >> d & 1u)) {
                    o += digit * mul;
                    mul *= s.dim[d];
                }
            }
            double v = raw_get(x.op.buf, xdt, view_index(&x, &s, k));
            struct ref_acc *a = &acc[o];
            a->sum += v;
            a->sum_abs += fabs(v);
            a->sum_sq += v * v;
            a->max = v > a->max ? v : a->max;
            a->min = v < a->min ? v : a->min;
            a->absmax = fabs(v) > a->absmax ? fabs(v) : a->absmax;
        }

        gan_status st = cpu_reduce(be, (enum gan_reduce_op)op, &s, &x.op, axes, &y.op);
        ck_assert_msg(st == GAN_OK, "%s axes 0x%x: status %d: %s", op_name[op], axes, st,
                      last_error());
        char what[160];
        snprintf(what, sizeof what, "%s seed %llu ndim %d axes 0x%x %s→%s", op_name[op],
                 (unsigned long long)seed, s.ndim, axes, gan_dtype_name(xdt),
                 gan_dtype_name(ydt));
        unsigned char *reached = calloc(y.cap, 1);
        ck_assert_ptr_nonnull(reached);
        for (int64_t o = 0; o < nout; o++) {
            double want, tol;
            ref_result(op, &acc[o], per, &want, &tol);
            size_t yi = view_index(&y, &ys, o);
            reached[yi] = 1;
            check_output(op, ydt, raw_get(y.op.buf, ydt, yi), want, tol, what, o);
        }
        for (size_t i = 0; i < y.cap; i++)
            if (!reached[i])
                ck_assert_msg(raw_bits(y.op.buf, ydt, i) == before[i],
                              "%s: buffer element %zu outside y was written", what, i);
        free(reached);
        free(before);
        free(acc);
        view_free(be, &y);
    }
    view_free(be, &x);
}

START_TEST(test_reduce_random)
{
    reduce_case(_i % GAN_REDUCE_OP_COUNT, 300u + (uint64_t)_i);
}
END_TEST

/* ---- hand-made cases ---- */

static gan_buffer *buffer_of(enum gan_dtype dt, size_t n)
{
    gan_buffer *buf;
    ck_assert_int_eq(cpu_buffer_alloc(be, n * dsize(dt) + (n == 0), &buf), GAN_OK);
    return buf;
}

static struct gan_operand contiguous(gan_buffer *buf, enum gan_dtype dt,
                                     const struct gan_shape *s, uint32_t zero_axes)
{
    struct gan_operand o = { .buf = buf, .offset = 0, .dtype = dt };
    int64_t pitch = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (zero_axes >> d & 1u)
            continue;
        o.stride[d] = pitch;
        pitch *= s->dim[d];
    }
    return o;
}

START_TEST(test_long_sum)
{
    /* 10^7 copies of 0.1f. A running FP32 sum stalls near 2^21 and is off by 8%; the
     * blocked pairwise sum must stay within 2^-20 relative of the exact 1e7 · 0.1f. */
    const int64_t n = 10000000;
    gan_buffer *bx = buffer_of(GAN_F32, (size_t)n), *by = buffer_of(GAN_F32, 64);
    for (int64_t i = 0; i < n; i++)
        raw_set(bx, GAN_F32, (size_t)i, 0.1f);
    const double exact = (double)n * (double)0.1f;
    const double rel = 0x1p-20;

    struct gan_shape s1 = { .ndim = 1, .dim = { n } };
    struct gan_operand x = contiguous(bx, GAN_F32, &s1, 0), y = contiguous(by, GAN_F32, &s1, 1);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s1, &x, 1, &y), GAN_OK);
    double got = raw_get(by, GAN_F32, 0);
    ck_assert_msg(fabs(got - exact) <= rel * exact, "sum %.9g, want %.9g", got, exact);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_MEAN, &s1, &x, 1, &y), GAN_OK);
    ck_assert_msg(fabs(raw_get(by, GAN_F32, 0) - 0.1f) <= rel * 0.1, "mean %.9g",
                  raw_get(by, GAN_F32, 0));

    /* The same elements as 156250 rows of 64, summed down the columns (64 outputs
     * side by side) and as one 2-D total. */
    struct gan_shape s2 = { .ndim = 2, .dim = { n / 64, 64 } };
    x = contiguous(bx, GAN_F32, &s2, 0);
    y = contiguous(by, GAN_F32, &s2, 1);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s2, &x, 1, &y), GAN_OK);
    for (int j = 0; j < 64; j++) {
        double g = raw_get(by, GAN_F32, (size_t)j), e = exact / 64;
        ck_assert_msg(fabs(g - e) <= rel * e, "column %d: sum %.9g, want %.9g", j, g, e);
    }
    y = contiguous(by, GAN_F32, &s2, 3);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM_SQUARES, &s2, &x, 3, &y), GAN_OK);
    double e2 = (double)n * (double)(0.1f * 0.1f);
    ck_assert_msg(fabs(raw_get(by, GAN_F32, 0) - e2) <= rel * e2, "sum of squares %.9g, want %.9g",
                  raw_get(by, GAN_F32, 0), e2);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_empty_reduction)
{
    /* [3, 0] reduced along axis 1: three outputs, each the op's identity. */
    static const float want[GAN_REDUCE_OP_COUNT] = { 0.0f, NAN, -INFINITY, INFINITY, 0.0f, 0.0f };
    struct gan_shape s = { .ndim = 2, .dim = { 3, 0 } };
    gan_buffer *bx = buffer_of(GAN_F32, 1), *by = buffer_of(GAN_BF16, 3);
    struct gan_operand x = contiguous(bx, GAN_F32, &s, 0);
    struct gan_operand y = { .buf = by, .dtype = GAN_BF16, .stride = { 1, 0 } };
    for (int op = 0; op < GAN_REDUCE_OP_COUNT; op++) {
        ck_assert_int_eq(cpu_reduce(be, (enum gan_reduce_op)op, &s, &x, 2, &y), GAN_OK);
        for (size_t i = 0; i < 3; i++) {
            double g = raw_get(by, GAN_BF16, i);
            if (isnan(want[op]))
                ck_assert_msg(isnan(g), "%s: %g", op_name[op], g);
            else
                ck_assert_msg(g == want[op] && !signbit(g) == !signbit(want[op]),
                              "%s of nothing is %g, want %g", op_name[op], g, (double)want[op]);
        }
    }
    /* Reduced along axis 0 instead, there are no outputs: nothing is touched, and y
     * needs no buffer. */
    struct gan_operand ynone = { .buf = NULL, .dtype = GAN_F32, .stride = { 0, 1 } };
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s, &x, 1, &ynone), GAN_OK);
    /* [0, 4] reduced along axis 0: four sums of nothing. */
    struct gan_shape s2 = { .ndim = 2, .dim = { 0, 4 } };
    gan_buffer *b4 = buffer_of(GAN_F32, 4);
    for (size_t i = 0; i < 4; i++)
        raw_set(b4, GAN_F32, i, 9.0);
    struct gan_operand y4 = { .buf = b4, .dtype = GAN_F32, .stride = { 0, 1 } };
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_MAX, &s2, &x, 1, &y4), GAN_OK);
    for (size_t i = 0; i < 4; i++)
        ck_assert(raw_get(b4, GAN_F32, i) == -INFINITY);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
    cpu_buffer_free(be, b4);
}
END_TEST

START_TEST(test_special_values)
{
    /* Rows: a NaN in the middle; ±inf; signed zeros. */
    static const float v[3][4] = {
        { 1.0f, NAN, 3.0f, -5.0f },
        { INFINITY, 1.0f, -INFINITY, 2.0f },
        { -0.0f, -0.0f, -0.0f, -0.0f },
    };
    struct gan_shape s = { .ndim = 2, .dim = { 3, 4 } };
    gan_buffer *bx = buffer_of(GAN_F32, 12), *by = buffer_of(GAN_F32, 3);
    memcpy(bx->data, v, sizeof v);
    struct gan_operand x = contiguous(bx, GAN_F32, &s, 0), y = contiguous(by, GAN_F32, &s, 2);
    float out[3];
#define RUN(OP)                                                             \
    do {                                                                    \
        ck_assert_int_eq(cpu_reduce(be, OP, &s, &x, 2, &y), GAN_OK);        \
        memcpy(out, by->data, sizeof out);                                  \
    } while (0)
    RUN(GAN_REDUCE_MAX);
    ck_assert(isnan(out[0]) && out[1] == INFINITY && out[2] == 0.0f);
    RUN(GAN_REDUCE_MIN);
    ck_assert(isnan(out[0]) && out[1] == -INFINITY);
    RUN(GAN_REDUCE_ABS_MAX);
    ck_assert(isnan(out[0]) && out[1] == INFINITY && out[2] == 0.0f && !signbit(out[2]));
    RUN(GAN_REDUCE_SUM);
    ck_assert(isnan(out[0]) && isnan(out[1]) && out[2] == 0.0f);
    RUN(GAN_REDUCE_SUM_SQUARES);
    ck_assert(isnan(out[0]) && out[1] == INFINITY && out[2] == 0.0f);
#undef RUN
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_fp32_accumulation_of_16bit)
{
    /* F16 in, F16 out: 60000 + 60000 − 60000 overflows F16 midway, but the FP32
     * accumulator does not, so the stored result is 60000. Same down a column. */
    struct gan_shape s = { .ndim = 2, .dim = { 3, 2 } };
    gan_buffer *bx = buffer_of(GAN_F16, 6), *by = buffer_of(GAN_F16, 3);
    static const double v[6] = { 60000, 60000, 60000, 60000, -60000, -60000 };
    for (size_t i = 0; i < 6; i++)
        raw_set(bx, GAN_F16, i, v[i]);
    struct gan_operand x = contiguous(bx, GAN_F16, &s, 0), y = contiguous(by, GAN_F16, &s, 1);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s, &x, 1, &y), GAN_OK);
    ck_assert_double_eq(raw_get(by, GAN_F16, 0), 60000.0);
    ck_assert_double_eq(raw_get(by, GAN_F16, 1), 60000.0);
    /* The mean of 3 values rounded once to F16: 20000. Over everything, BF16 out. */
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_MEAN, &s, &x, 1, &y), GAN_OK);
    ck_assert_double_eq(raw_get(by, GAN_F16, 0), 20000.0);
    struct gan_operand yb = contiguous(by, GAN_BF16, &s, 3);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM_SQUARES, &s, &x, 3, &yb), GAN_OK);
    ck_assert_double_eq(raw_get(by, GAN_BF16, 0), bf16_decode(bf16_encode(6 * 3.6e9)));
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_axes_zero_is_elementwise)
{
    /* Nothing reduced: each output is its input through the op, here from a
     * transposed BF16 view into a contiguous F16 one. */
    struct gan_shape s = { .ndim = 2, .dim = { 5, 3 } };
    gan_buffer *bx = buffer_of(GAN_BF16, 15), *by = buffer_of(GAN_F16, 15);
    for (size_t i = 0; i < 15; i++)
        raw_set(bx, GAN_BF16, i, ((double)i - 7.0) * 0.37);
    struct gan_operand x = { .buf = bx, .dtype = GAN_BF16, .stride = { 1, 5 } };
    struct gan_operand y = contiguous(by, GAN_F16, &s, 0);
    for (int op = 0; op < GAN_REDUCE_OP_COUNT; op++) {
        ck_assert_int_eq(cpu_reduce(be, (enum gan_reduce_op)op, &s, &x, 0, &y), GAN_OK);
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 3; j++) {
                double v = raw_get(bx, GAN_BF16, (size_t)(j * 5 + i));
                double w = op == GAN_REDUCE_SUM_SQUARES ? (double)(float)(v * v)
                         : op == GAN_REDUCE_ABS_MAX ? fabs(v) : v;
                ck_assert_msg(raw_get(by, GAN_F16, (size_t)(i * 3 + j)) == f16_decode(f16_encode(w)),
                              "%s (%d, %d)", op_name[op], i, j);
            }
    }
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

START_TEST(test_rejects_bad_arguments)
{
    struct gan_shape s = { .ndim = 2, .dim = { 4, 5 } };
    gan_buffer *bx = buffer_of(GAN_F32, 20), *by = buffer_of(GAN_F32, 4);
    struct gan_operand x = contiguous(bx, GAN_F32, &s, 0), y = contiguous(by, GAN_F32, &s, 2);
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_OP_COUNT, &s, &x, 2, &y), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "gan_reduce_op"), "message: %s", last_error());
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s, &x, 4, &y), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "axes 0x4"), "message: %s", last_error());
    struct gan_operand ybad = y;
    ybad.stride[1] = 1;
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s, &x, 2, &ybad), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "stride 1 on reduced dimension 1"), "message: %s",
                  last_error());
    ybad = y;
    ybad.offset = 1; /* outputs 1 … 4 of 4 */
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s, &x, 2, &ybad), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "operand y") && strstr(last_error(), "1 to 4"),
                  "message: %s", last_error());
    struct gan_operand xbad = x;
    xbad.dtype = GAN_U32;
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_MAX, &s, &xbad, 2, &y), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(last_error(), "operand x") && strstr(last_error(), "U32"),
                  "message: %s", last_error());
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, by);
}
END_TEST

/* ---- the vector level against the portable one ---- */

static int nan_bits(uint32_t b, enum gan_dtype dt)
{
    if (dt == GAN_F16)
        return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
    if (dt == GAN_BF16)
        return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
}

/* Column sums (the many-outputs walk, contiguous lanes) of F32, F16 and BF16 inputs with
 * special values, row counts around the 32-row blocks and lane counts around the 8- and
 * 16-lane vectors and 64-lane groups: each vector level the CPU has gives the portable
 * level's bits (or a NaN where the portable one gives a NaN: two NaN terms may leave
 * either payload). */
START_TEST(test_levels_bit_identical)
{
    static const enum gan_dtype types[3] = { GAN_F32, GAN_F16, GAN_BF16 };
    static const int64_t rows[] = { 1, 31, 32, 33, 100 }, cols[] = { 1, 7, 9, 15, 16, 17, 64, 65, 130 };
    static const enum gan_reduce_op ops[] = { GAN_REDUCE_SUM, GAN_REDUCE_MEAN,
                                              GAN_REDUCE_SUM_SQUARES };
    enum gan_reduce_op op = ops[_i % 3];
    enum gan_dtype dx = types[_i / 3 % 3];
    enum cpu_isa best = cpu_isa_best();
    rng_seed(0x5e7e1u + (uint64_t)_i);
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
        for (size_t ci = 0; ci < sizeof cols / sizeof cols[0]; ci++)
            for (int ty = 0; ty < 3; ty++) {
                int64_t r = rows[ri], c = cols[ci];
                enum gan_dtype dy = types[ty];
                gan_buffer *bx, *by;
                ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)(r * c) * 4, &bx), GAN_OK);
                ck_assert_int_eq(cpu_buffer_alloc(be, (size_t)c * 4, &by), GAN_OK);
                fill_special_values(bx, dx, (size_t)(r * c));
                struct gan_shape s = { .ndim = 2, .dim = { r, c } };
                struct gan_operand x = { bx, 0, dx, { c, 1 } }, y = { by, 0, dy, { 0, 1 } };
                uint32_t first[130];
                for (int pass = 0; pass <= (int)best; pass++) {
                    cpu_isa_select(be, (enum cpu_isa)pass);
                    ck_assert_int_eq(cpu_reduce(be, op, &s, &x, 1u, &y), GAN_OK);
                    for (int64_t k = 0; k < c; k++) {
                        uint32_t bits = raw_bits(by, dy, (size_t)k);
                        if (!pass) {
                            first[k] = bits;
                            continue;
                        }
                        int both_nan = nan_bits(bits, dy) && nan_bits(first[k], dy);
                        ck_assert_msg(bits == first[k] || both_nan,
                                      "%s of %lld×%lld %s into %s: output %lld is %08x on %s, "
                                      "%08x on portable", op_name[op], (long long)r,
                                      (long long)c, gan_dtype_name(dx), gan_dtype_name(dy),
                                      (long long)k, bits, cpu_isa_name((enum cpu_isa)pass),
                                      first[k]);
                    }
                }
                cpu_buffer_free(be, bx);
                cpu_buffer_free(be, by);
            }
    cpu_isa_select(be, best);
}
END_TEST

/* ---- suite ---- */

static void setup_portable(void)
{
    setup();
    ck_assert_int_eq(cpu_isa_select(be, CPU_ISA_PORTABLE), CPU_ISA_PORTABLE);
}

/* The reference tests on an instance at the best level and, where the CPU has a vector
 * one, on an instance at the portable level too. */
static void add_level_cases(Suite *s, int portable)
{
    static const char *const name[2][4] = {
        { "random", "accuracy", "edge cases", "validation" },
        { "random portable", "accuracy portable", "edge cases portable",
          "validation portable" },
    };
    void (*start)(void) = portable ? setup_portable : setup;

    TCase *tc = tcase_create(name[portable][0]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_loop_test(tc, test_reduce_random, 0, GAN_REDUCE_OP_COUNT * 12);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][1]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_long_sum);
    tcase_add_test(tc, test_fp32_accumulation_of_16bit);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][2]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_empty_reduction);
    tcase_add_test(tc, test_special_values);
    tcase_add_test(tc, test_axes_zero_is_elementwise);
    suite_add_tcase(s, tc);

    tc = tcase_create(name[portable][3]);
    tcase_add_checked_fixture(tc, start, teardown);
    tcase_add_test(tc, test_rejects_bad_arguments);
    suite_add_tcase(s, tc);
}

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    add_level_cases(s, 0);
    if (cpu_isa_best() != CPU_ISA_PORTABLE)
        add_level_cases(s, 1);

    TCase *tc = tcase_create("levels");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_levels_bit_identical, 0, 9);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(reduce_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
