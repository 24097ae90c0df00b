/* SPDX-License-Identifier: MIT */
/* check_backend_common.c — tests of backends/common: the conversions, per-element math,
 * cast counting, random-value rules and argument checks both backends compile. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checks read a buffer's size; each backend defines its own struct gan_buffer with
 * a `bytes` member first, and so does this test. */
struct gan_buffer {
    size_t bytes;
    void *ptr;
};

/* Before <check.h>, whose deprecated fail() macro would take host->fail for itself. */
#include "../../backends/common/convert.h"
#include "../../backends/common/elementwise_ops.h"
#include "../../backends/common/reduce_ops.h"
#include "../../backends/common/cast_ops.h"
#include "../../backends/common/rng_ops.h"
#include "../../backends/common/adam_ops.h"
#include "../../backends/common/shape_checks.h"
#include "../../backends/common/ref_checks.h"
#include "../../backends/common/reduce_checks.h"
#include "../../backends/common/gemm_checks.h"
#include "../../backends/common/conv2d_checks.h"
#include "../../backends/common/settings.h"

#include <check.h>

/* ------------------------------------------------------------------ a host */

/* A host whose fail() keeps the last message and status. */
static char last_message[1024];
static gan_status last_status;

__attribute__((format(printf, 3, 4)))
static gan_status record_fail(void *ctx, gan_status status, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_status = status;
    return status;
}

static struct gan_host host;

static void setup(void)
{
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.fail = record_fail;
    last_message[0] = '\0';
    last_status = GAN_OK;
}

/* The call failed with `status` and a message holding `part`. */
#define ck_refused(call, status, part)                                                     \
    do {                                                                                   \
        last_message[0] = '\0';                                                            \
        ck_assert_int_eq((call), (status));                                                \
        ck_assert_int_eq(last_status, (status));                                           \
        ck_assert_msg(strstr(last_message, (part)) != NULL, "message \"%s\" lacks \"%s\"", \
                      last_message, (part));                                               \
    } while (0)

static uint32_t bits(float f)
{
    return gan_f32_bits(f);
}

/* ------------------------------------------------------------------ FP16 */

static const struct {
    uint32_t in;
    uint16_t out;
} f16_cases[] = {
    { 0x00000000, 0x0000 }, /* +0 */
    { 0x80000000, 0x8000 }, /* −0 keeps its sign */
    { 0x3f800000, 0x3c00 }, /* 1 */
    { 0x477fe000, 0x7bff }, /* 65504, the largest FP16 */
    { 0x477fefff, 0x7bff }, /* just below 65520 rounds down to 65504 */
    { 0x477ff000, 0x7c00 }, /* 65520, halfway to 2^16: rounds to even, which is inf */
    { 0xc77ff000, 0xfc00 }, /* −65520 → −inf */
    { 0x7f7fffff, 0x7c00 }, /* FLT_MAX overflows */
    { 0x7f800000, 0x7c00 }, /* inf */
    { 0xff800000, 0xfc00 }, /* −inf */
    { 0x38800000, 0x0400 }, /* 2^-14, the smallest normal */
    { 0x387fc000, 0x03ff }, /* 1023·2^-24, the largest subnormal */
    { 0x33800000, 0x0001 }, /* 2^-24, the smallest subnormal */
    { 0x33000000, 0x0000 }, /* 2^-25, half of it: a tie, to even 0 */
    { 0xb3000000, 0x8000 }, /* −2^-25 → −0 */
    { 0x33000001, 0x0001 }, /* just above half rounds up */
    { 0x32ffffff, 0x0000 }, /* just below half rounds down */
    { 0x33c00000, 0x0002 }, /* 1.5·2^-24: a tie between 1 and 2, to even 2 */
    { 0x33a00000, 0x0001 }, /* 1.25·2^-24 */
    { 0x34200000, 0x0002 }, /* 2.5·2^-24: a tie between 2 and 3, to even 2 */
    { 0x34400000, 0x0003 }, /* 3·2^-24, exact */
    { 0x3f801000, 0x3c00 }, /* 1 + 2^-11: a tie, to even 1 */
    { 0x3f803000, 0x3c02 }, /* 1 + 3·2^-11: a tie, to even 1 + 2^-9 */
    { 0x3f801001, 0x3c01 }, /* just above the tie rounds up */
    { 0x7fc00000, 0x7e00 }, /* the quiet NaN */
    { 0xffc00000, 0xfe00 }, /* its sign is kept */
    { 0x7f802000, 0x7e01 }, /* a signalling NaN: quieted, its top payload bits kept */
    { 0x7f800001, 0x7e00 }, /* a payload below FP16's: still a NaN, never inf */
};

START_TEST(test_f16_boundaries)
{
    uint32_t in = f16_cases[_i].in;
    uint16_t got = gan_f32_to_f16(gan_bits_f32(in));
    ck_assert_msg(got == f16_cases[_i].out, "F32 %08x → F16 %04x, want %04x", in, got,
                  f16_cases[_i].out);
}
END_TEST

START_TEST(test_f16_widen)
{
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x0001)), 0x33800000u);
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x03ff)), 0x387fc000u);
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x8000)), 0x80000000u);
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x7bff)), bits(65504.0f));
    ck_assert_uint_eq(bits(gan_f16_to_f32(0xfc00)), 0xff800000u);
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x7e01)), 0x7fc02000u);
    ck_assert_uint_eq(bits(gan_f16_to_f32(0x7c01)), 0x7f802000u); /* payload kept as is */
    /* Every FP16 value survives the round trip; a NaN comes back quiet. */
    for (uint32_t h = 0; h <= 0xffffu; h++) {
        uint16_t back = gan_f32_to_f16(gan_f16_to_f32((uint16_t)h));
        int nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
        uint16_t want = (uint16_t)(nan ? h | 0x200u : h);
        ck_assert_msg(back == want, "F16 %04x → F32 → F16 %04x", h, back);
    }
}
END_TEST

/* ------------------------------------------------------------------ BF16 */

static const struct {
    uint32_t in;
    uint16_t out;
} bf16_cases[] = {
    { 0x3f800000, 0x3f80 }, /* 1 */
    { 0x3f808000, 0x3f80 }, /* 1 + 2^-8: a tie, to even 1 */
    { 0x3f818000, 0x3f82 }, /* 1 + 3·2^-8: a tie, to even */
    { 0x3f808001, 0x3f81 }, /* just above the tie rounds up */
    { 0x3f807fff, 0x3f80 }, /* just below rounds down */
    { 0x80000000, 0x8000 }, /* −0 */
    { 0x00000001, 0x0000 }, /* the smallest FP32 subnormal rounds to 0 */
    { 0x00008000, 0x0000 }, /* a subnormal tie, to even 0 */
    { 0x00018000, 0x0002 }, /* a subnormal tie, to even 2 */
    { 0x7f7fffff, 0x7f80 }, /* FLT_MAX rounds up to inf */
    { 0x7f7f7fff, 0x7f7f }, /* the largest BF16 stays */
    { 0xff800000, 0xff80 }, /* −inf */
    { 0x7fc00000, 0x7fc0 }, /* the quiet NaN */
    { 0x7f800001, 0x7fc0 }, /* a NaN whose payload is all below BF16's: quieted, not inf */
    { 0xff810000, 0xffc1 }, /* a signalling NaN: sign and top payload kept, quieted */
    { 0x7fffffff, 0x7fff }, /* never rounded up into the sign bit */
};

START_TEST(test_bf16_boundaries)
{
    uint32_t in = bf16_cases[_i].in;
    uint16_t got = gan_f32_to_bf16(gan_bits_f32(in));
    ck_assert_msg(got == bf16_cases[_i].out, "F32 %08x → BF16 %04x, want %04x", in, got,
                  bf16_cases[_i].out);
    ck_assert_uint_eq(bits(gan_bf16_to_f32(bf16_cases[_i].out)),
                      (uint32_t)bf16_cases[_i].out << 16);
}
END_TEST

START_TEST(test_load_store)
{
    uint16_t h[2];
    gan_store(h, GAN_F16, 1, 1.0f / 3.0f);
    ck_assert_uint_eq(h[1], 0x3555);
    ck_assert_uint_eq(bits(gan_load(h, GAN_F16, 1)), bits(gan_f16_to_f32(0x3555)));
    gan_store(h, GAN_BF16, 0, 1.0f / 3.0f);
    ck_assert_uint_eq(h[0], 0x3eab);
    int32_t i32[1];
    gan_store(i32, GAN_I32, 0, -7.9f); /* C's conversion: toward zero */
    ck_assert_int_eq(i32[0], -7);
    ck_assert(gan_load(i32, GAN_I32, 0) == -7.0f);
    uint32_t u32[1] = { 4000000000u };
    ck_assert(gan_load(u32, GAN_U32, 0) == 4000000000.0f);
    ck_assert_uint_eq(gan_float_bits(GAN_F16, 65520.0f), 0x7c00);
    ck_assert_uint_eq(bits(gan_bits_value(GAN_BF16, 0xbf80)), bits(-1.0f));
    gan_store_bits(h, GAN_F16, 0, 0x1234);
    ck_assert_uint_eq(gan_load_bits(h, GAN_F16, 0), 0x1234);
    ck_assert(gan_is_float(GAN_BF16) && !gan_is_float(GAN_U32));
}
END_TEST

/* ------------------------------------------------------------------ element-wise */

START_TEST(test_unary_semantics)
{
    ck_assert_uint_eq(bits(gan_ew_relu(-0.0f)), 0u); /* −0 becomes +0 */
    ck_assert(isnan(gan_ew_relu(NAN)));
    ck_assert(gan_ew_relu(2.5f) == 2.5f);
    ck_assert(gan_ew_leaky_relu(0.1f, -2.0f) == 0.1f * -2.0f);
    ck_assert(gan_ew_step(NAN) == 0.0f && gan_ew_step(0.0f) == 0.0f);
    ck_assert(gan_ew_step(1e-30f) == 1.0f);
    ck_assert_uint_eq(bits(gan_ew_sign(-0.0f)), 0u);
    ck_assert(gan_ew_sign(NAN) == 0.0f && gan_ew_sign(-3.0f) == -1.0f);
    ck_assert_uint_eq(bits(gan_ew_abs(gan_bits_f32(0xffc00001))), 0x7fc00001u);
    ck_assert(gan_ew_rsqrt(0.0f) == INFINITY);
    ck_assert(gan_ew_reciprocal(-0.0f) == -INFINITY);
    ck_assert(isnan(gan_ew_sqrt(-1.0f)) && gan_ew_log(0.0f) == -INFINITY);
    ck_assert(gan_ew_sigmoid(-100.0f) == 0.0f && gan_ew_sigmoid(0.0f) == 0.5f);
    ck_assert(gan_ew_square(3.0f) == 9.0f && gan_ew_neg(1.0f) == -1.0f);
    ck_assert(gan_ew_scale(2.0f, 3.0f) == 6.0f && gan_ew_add_scalar(2.0f, 3.0f) == 5.0f);
    /* FILL gives alpha, whatever x is. */
    ck_assert(gan_ew_unary(GAN_UNARY_FILL, 3.0f, NAN) == 3.0f);
}
END_TEST

/* The dispatcher the CUDA kernel calls is each op's own function, op for op. */
START_TEST(test_unary_dispatch)
{
    static const float xs[] = { -2.0f, -0.0f, 0.0f, 0.3f, 1.0f, 7.5f, INFINITY, -INFINITY, NAN };
    const enum gan_unary_op op = (enum gan_unary_op)_i;
    const float alpha = 0.25f;
    for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++) {
        float x = xs[k], want;
        switch (op) {
        case GAN_UNARY_COPY: want = x; break;
        case GAN_UNARY_NEG: want = gan_ew_neg(x); break;
        case GAN_UNARY_SCALE: want = gan_ew_scale(alpha, x); break;
        case GAN_UNARY_ADD_SCALAR: want = gan_ew_add_scalar(alpha, x); break;
        case GAN_UNARY_RELU: want = gan_ew_relu(x); break;
        case GAN_UNARY_LEAKY_RELU: want = gan_ew_leaky_relu(alpha, x); break;
        case GAN_UNARY_STEP: want = gan_ew_step(x); break;
        case GAN_UNARY_TANH: want = gan_ew_tanh(x); break;
        case GAN_UNARY_SIGMOID: want = gan_ew_sigmoid(x); break;
        case GAN_UNARY_SQUARE: want = gan_ew_square(x); break;
        case GAN_UNARY_SQRT: want = gan_ew_sqrt(x); break;
        case GAN_UNARY_RSQRT: want = gan_ew_rsqrt(x); break;
        case GAN_UNARY_RECIPROCAL: want = gan_ew_reciprocal(x); break;
        case GAN_UNARY_EXP: want = gan_ew_exp(x); break;
        case GAN_UNARY_LOG: want = gan_ew_log(x); break;
        case GAN_UNARY_ABS: want = gan_ew_abs(x); break;
        case GAN_UNARY_SIGN: want = gan_ew_sign(x); break;
        case GAN_UNARY_LEAKY_STEP: want = x > 0.0f ? 1.0f : alpha; break;
        default: want = alpha; break;
        }
        float got = gan_ew_unary(op, alpha, x);
        ck_assert_msg(bits(got) == bits(want) || (isnan(got) && isnan(want)),
                      "unary op %d of %g: %08x, want %08x", (int)op, (double)x, bits(got),
                      bits(want));
    }
}
END_TEST

START_TEST(test_binary_semantics)
{
    ck_assert(gan_ew_max(NAN, 1.0f) == 1.0f && gan_ew_min(1.0f, NAN) == 1.0f);
    ck_assert(gan_ew_greater(NAN, 1.0f) == 0.0f && gan_ew_greater(2.0f, 1.0f) == 1.0f);
    ck_assert(gan_ew_greater(1.0f, 1.0f) == 0.0f);
    /* MASK_POSITIVE is a multiply: −0 where a is negative and b is not positive, NaN
     * where a is inf or NaN there. */
    ck_assert_uint_eq(bits(gan_ew_mask_positive(-3.0f, -1.0f, 1.0f)), 0x80000000u);
    ck_assert(isnan(gan_ew_mask_positive(INFINITY, 0.0f, 1.0f)));
    ck_assert(isnan(gan_ew_mask_positive(2.0f, NAN, 1.0f)) == 0);
    ck_assert(gan_ew_mask_positive(2.0f, 5.0f, 1.0f) == 2.0f);
    ck_assert_uint_eq(bits(gan_ew_binary(GAN_BINARY_MASK_POSITIVE, -3.0f, 0.0f, 0.0f)),
                      0x80000000u);
    ck_assert(gan_ew_binary(GAN_BINARY_ADD, 1.0f, 2.0f, 0.0f) == 3.0f);
    ck_assert(gan_ew_binary(GAN_BINARY_SUB, 1.0f, 2.0f, 0.0f) == -1.0f);
    ck_assert(gan_ew_binary(GAN_BINARY_MUL, 1.5f, 2.0f, 0.0f) == 3.0f);
    ck_assert(gan_ew_binary(GAN_BINARY_DIV, 1.0f, 0.0f, 0.0f) == INFINITY);
    ck_assert(gan_ew_binary(GAN_BINARY_MAX, NAN, -1.0f, 0.0f) == -1.0f);
    ck_assert(gan_ew_binary(GAN_BINARY_MIN, 3.0f, -1.0f, 0.0f) == -1.0f);
    ck_assert(gan_ew_binary(GAN_BINARY_GREATER, NAN, NAN, 0.0f) == 0.0f);
    /* MASK_LEAKY: the slope where b is not positive (NaN included), a multiply too */
    ck_assert(gan_ew_binary(GAN_BINARY_MASK_LEAKY, 3.0f, -1.0f, 0.25f) == 0.75f);
    ck_assert(gan_ew_binary(GAN_BINARY_MASK_LEAKY, 3.0f, NAN, 0.25f) == 0.75f);
    ck_assert(gan_ew_binary(GAN_BINARY_MASK_LEAKY, 3.0f, 2.0f, 0.25f) == 3.0f);
    ck_assert_uint_eq(bits(gan_ew_mask_leaky(-3.0f, 0.0f, 0.0f, 1.0f)), 0x80000000u);
    /* ADD_LEAKY and ADD_RELU: the activation of the sum as the result's dtype holds it;
     * 1 + 2^-12 is 1 in FP16 and BF16, and -1 - 2^-12 in BF16 is -1 */
    const float up = 1.0f + 0x1p-12f;
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD_LEAKY, 1.0f, 0x1p-12f, 0.5f, GAN_F32) == up);
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD_LEAKY, 1.0f, 0x1p-12f, 0.5f, GAN_F16) == 1.0f);
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD_LEAKY, -1.0f, -0x1p-12f, 0.5f, GAN_BF16) ==
              -0.5f);
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD_LEAKY, -1.0f, -0x1p-12f, 0.5f, GAN_F32) ==
              0.5f * -up);
    ck_assert_uint_eq(bits(gan_ew_binary_into(GAN_BINARY_ADD_RELU, -1.0f, 0.5f, 0.0f,
                                              GAN_F16)), 0u);
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD_RELU, 1.0f, 0x1p-12f, 0.0f, GAN_BF16) == 1.0f);
    ck_assert(isnan(gan_ew_binary_into(GAN_BINARY_ADD_LEAKY, NAN, 1.0f, 0.5f, GAN_F16)));
    /* the other ops as gan_ew_binary computes them */
    ck_assert(gan_ew_binary_into(GAN_BINARY_ADD, 1.0f, 0x1p-12f, 0.0f, GAN_F16) == up);
    ck_assert(isnan(gan_ew_mask_leaky(INFINITY, -2.0f, 0.0f, 1.0f)));
}
END_TEST

/* ------------------------------------------------------------------ reductions */

START_TEST(test_reduce_ops)
{
    ck_assert(gan_red_identity(GAN_REDUCE_MAX) == -INFINITY);
    ck_assert(gan_red_identity(GAN_REDUCE_MIN) == INFINITY);
    ck_assert(gan_red_identity(GAN_REDUCE_SUM) == 0.0f);
    ck_assert(gan_red_identity(GAN_REDUCE_ABS_MAX) == 0.0f);
    /* MAX and MIN keep a NaN from either side. */
    ck_assert(isnan(gan_red_combine(GAN_REDUCE_MAX, 1.0f, NAN)));
    ck_assert(isnan(gan_red_combine(GAN_REDUCE_MAX, NAN, 1.0f)));
    ck_assert(isnan(gan_red_combine(GAN_REDUCE_MIN, NAN, -1.0f)));
    ck_assert(gan_red_combine(GAN_REDUCE_MIN, 2.0f, -1.0f) == -1.0f);
    ck_assert(gan_red_combine(GAN_REDUCE_SUM, 2.0f, -1.0f) == 1.0f);
    ck_assert(gan_red_transform(GAN_REDUCE_ABS_MAX, -2.0f) == 2.0f);
    ck_assert(gan_red_transform(GAN_REDUCE_SUM_SQUARES, -3.0f) == 9.0f);
    ck_assert(gan_red_transform(GAN_REDUCE_MAX, -3.0f) == -3.0f);
    ck_assert(gan_red_finish(GAN_REDUCE_MEAN, 6.0f, 4) == 1.5f);
    ck_assert(isnan(gan_red_finish(GAN_REDUCE_MEAN, 0.0f, 0)));
    /* MEAN divides in double and rounds once: 1/3 of 1 as the nearest float. */
    ck_assert(gan_red_finish(GAN_REDUCE_MEAN, 1.0f, 3) == (float)(1.0 / 3.0));
    ck_assert(gan_red_finish(GAN_REDUCE_SUM, 6.0f, 4) == 6.0f);
}
END_TEST

/* ------------------------------------------------------------------ casts */

START_TEST(test_fclass)
{
    ck_assert_int_eq(gan_fclass_f32(0x80000000), GAN_FC_ZERO);
    ck_assert_int_eq(gan_fclass_f32(0x00000001), GAN_FC_SUBNORMAL);
    ck_assert_int_eq(gan_fclass_f32(0x00800000), GAN_FC_NORMAL);
    ck_assert_int_eq(gan_fclass_f32(0xff800000), GAN_FC_INF);
    ck_assert_int_eq(gan_fclass_f32(0x7f800001), GAN_FC_NAN);
    ck_assert_int_eq(gan_fclass_f16(0x03ff), GAN_FC_SUBNORMAL);
    ck_assert_int_eq(gan_fclass_f16(0x0400), GAN_FC_NORMAL);
    ck_assert_int_eq(gan_fclass_f16(0x7c00), GAN_FC_INF);
    ck_assert_int_eq(gan_fclass_f16(0xfe00), GAN_FC_NAN);
    ck_assert_int_eq(gan_fclass_bf16(0x0001), GAN_FC_SUBNORMAL);
    ck_assert_int_eq(gan_fclass_bf16(0x7f80), GAN_FC_INF);
    ck_assert_int_eq(gan_fclass(GAN_BF16, 0x7fc0), GAN_FC_NAN);
    ck_assert_int_eq(gan_fclass(GAN_F16, 0x8000), GAN_FC_ZERO);
    ck_assert_int_eq(gan_fclass(GAN_F32, 0x3f800000), GAN_FC_NORMAL);
}
END_TEST

/* The counts of one F32 value cast to F16 through the shared functions, as both
 * backends' float casts do. */
static struct gan_cast_tally tally_f32_to_f16(float x)
{
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    uint32_t yb = gan_float_bits(GAN_F16, x);
    gan_cast_tally_float(&t, gan_fclass(GAN_F32, bits(x)), gan_fclass(GAN_F16, yb));
    return t;
}

#define ck_tally(t, o, u, s, n)                                                  \
    do {                                                                         \
        struct gan_cast_tally t_ = (t);                                          \
        ck_assert_msg(t_.overflow == (o) && t_.underflow == (u) &&               \
                      t_.subnormal == (s) && t_.nonfinite == (n),                \
                      "counts %llu %llu %llu %llu, want %d %d %d %d",            \
                      (unsigned long long)t_.overflow,                           \
                      (unsigned long long)t_.underflow,                          \
                      (unsigned long long)t_.subnormal,                          \
                      (unsigned long long)t_.nonfinite, (o), (u), (s), (n));     \
    } while (0)

START_TEST(test_float_cast_counts)
{
    ck_tally(tally_f32_to_f16(1.0f), 0, 0, 0, 0);
    ck_tally(tally_f32_to_f16(65504.0f), 0, 0, 0, 0);
    ck_tally(tally_f32_to_f16(65520.0f), 1, 0, 0, 0);       /* rounds to inf */
    ck_tally(tally_f32_to_f16(-1e30f), 1, 0, 0, 0);
    ck_tally(tally_f32_to_f16(1e-6f), 0, 0, 1, 0);          /* an FP16 subnormal */
    ck_tally(tally_f32_to_f16(0x1p-25f), 0, 1, 0, 0);       /* the tie to 0 */
    ck_tally(tally_f32_to_f16(0x1p-140f), 0, 1, 0, 0);      /* an F32 subnormal to 0 */
    ck_tally(tally_f32_to_f16(-0.0f), 0, 0, 0, 0);          /* zero stays zero */
    ck_tally(tally_f32_to_f16(INFINITY), 0, 0, 0, 1);       /* inf in: not an overflow */
    ck_tally(tally_f32_to_f16(NAN), 0, 0, 0, 1);
    /* A type to itself: the same rule with the input's class twice. */
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    gan_cast_tally_float(&t, GAN_FC_SUBNORMAL, GAN_FC_SUBNORMAL);
    gan_cast_tally_float(&t, GAN_FC_INF, GAN_FC_INF);
    gan_cast_tally_float(&t, GAN_FC_ZERO, GAN_FC_ZERO);
    ck_tally(t, 0, 0, 1, 1);
}
END_TEST

START_TEST(test_integer_cast_rules)
{
    const int64_t i_lo = gan_int_min(GAN_I32), i_hi = gan_int_max(GAN_I32);
    const int64_t u_lo = gan_int_min(GAN_U32), u_hi = gan_int_max(GAN_U32);
    ck_assert(i_lo == INT32_MIN && i_hi == INT32_MAX && u_lo == 0 && u_hi == UINT32_MAX);
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    ck_assert_int_eq(gan_float_to_int(NAN, i_lo, i_hi, &t), 0);
    ck_tally(t, 0, 0, 0, 1);
    ck_assert_int_eq(gan_float_to_int(-INFINITY, i_lo, i_hi, &t), INT32_MIN);
    ck_assert_int_eq(gan_float_to_int(INFINITY, u_lo, u_hi, &t), UINT32_MAX);
    ck_tally(t, 0, 0, 0, 3);
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(gan_float_to_int(3e9f, i_lo, i_hi, &t), INT32_MAX);  /* saturates */
    ck_assert_int_eq(gan_float_to_int(-1.0f, u_lo, u_hi, &t), 0);
    ck_assert_int_eq(gan_float_to_int(1e30f, u_lo, u_hi, &t), UINT32_MAX);
    ck_tally(t, 3, 0, 0, 0);
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(gan_float_to_int(0.4f, i_lo, i_hi, &t), 0);          /* underflow */
    ck_assert_int_eq(gan_float_to_int(-0.0f, i_lo, i_hi, &t), 0);         /* zero: not */
    ck_assert_int_eq(gan_float_to_int(2.5f, i_lo, i_hi, &t), 2);          /* nearest even */
    ck_assert_int_eq(gan_float_to_int(3.5f, i_lo, i_hi, &t), 4);
    ck_assert_int_eq(gan_float_to_int(-2.5f, i_lo, i_hi, &t), -2);
    ck_tally(t, 0, 1, 0, 0);
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(gan_int_to_int(UINT32_MAX, i_lo, i_hi, &t), INT32_MAX);
    ck_assert_int_eq(gan_int_to_int(-5, u_lo, u_hi, &t), 0);
    ck_assert_int_eq(gan_int_to_int(-5, i_lo, i_hi, &t), -5);
    ck_tally(t, 2, 0, 0, 0);
}
END_TEST

START_TEST(test_integer_to_float_rounds_once)
{
    /* 2^24 + 2^16 + 1: nearest-even to FP32 and then to BF16 would give 2^24 (two
     * ties, both to even); rounded once it is 2^24 + 2^17. */
    const uint32_t u = 16777216u + 65536u + 1u;
    ck_assert_uint_eq(gan_f32_to_bf16((float)u), 0x4b80);
    ck_assert_uint_eq(gan_f32_to_bf16(gan_int_to_float(u, GAN_BF16)), 0x4b81);
    ck_assert_uint_eq(gan_f32_to_bf16(gan_int_to_float(-(int64_t)u, GAN_BF16)), 0xcb81);
    ck_assert(gan_u32_to_f32_odd(5u) == 5.0f);
    ck_assert(gan_int_to_float(u, GAN_F32) == (float)u); /* FP32 rounds once by itself */
    /* Element by element, as both backends cast: I32 → F16 overflow counts, U32 → I32
     * saturates, F16 → U32 rounds to nearest even. */
    int32_t x32[3] = { 70000, -3, 2049 };
    uint16_t h[3];
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    for (int64_t i = 0; i < 3; i++)
        gan_cast_int_element(x32, GAN_I32, h, GAN_F16, i, &t);
    ck_assert_uint_eq(h[0], 0x7c00);
    ck_assert_uint_eq(h[1], 0xc200);
    ck_assert_uint_eq(h[2], 0x6800); /* 2049 is a tie between 2048 and 2050: even 2048 */
    ck_tally(t, 1, 0, 0, 0);
    uint32_t big[1] = { 0x80000000u };
    int32_t out[1];
    gan_cast_int_element(big, GAN_U32, out, GAN_I32, 0, &t);
    ck_assert_int_eq(out[0], INT32_MAX);
    uint16_t half[1] = { 0x4100 }; /* 2.5 */
    uint32_t u32[1];
    gan_cast_int_element(half, GAN_F16, u32, GAN_U32, 0, &t);
    ck_assert_uint_eq(u32[0], 2u);
    ck_tally(t, 2, 0, 0, 0);
}
END_TEST

/* ------------------------------------------------------------------ random values */

START_TEST(test_rng_values)
{
    /* The words of block 0 for seed 0 are Philox4x32-10 of a zero counter under a zero
     * key, the first 10-round answer of check_philox's known vectors. */
    uint32_t w[4];
    gan_philox_block(0, 0, w);
    ck_assert_uint_eq(w[0], 0x6627e8d5u);
    /* Its uniform value is exact: the top 24 bits, centred. */
    double u = gan_rng_uniform_value(0.0, 1.0, w[0]);
    ck_assert(u == (0x6627e8 + 0.5) * 0x1p-24);
    ck_assert(gan_rng_uniform_value(-1.0, 4.0, w[0]) == -1.0 + 4.0 * u);
    ck_assert_uint_eq(gan_uniform_bits(GAN_F32, u, 0.0f, 1.0f), bits((float)u));
    /* The largest word's value, 1 − 2^-25, rounds to 1 in every type; it steps back
     * inside [0, 1). */
    double top = gan_rng_uniform_value(0.0, 1.0, 0xffffffffu);
    ck_assert(top == 1.0 - 0x1p-25);
    ck_assert_uint_eq(gan_uniform_bits(GAN_F32, top, 0.0f, 1.0f), 0x3f7fffffu);
    ck_assert_uint_eq(gan_uniform_bits(GAN_F16, top, 0.0f, 1.0f), 0x3bffu);
    ck_assert_uint_eq(gan_uniform_bits(GAN_BF16, top, 0.0f, 1.0f), 0x3f7fu);
    /* No value strictly between low and high: the rounded one stays. */
    ck_assert_uint_eq(gan_uniform_bits(GAN_F16, 1.0002, 1.0f, 1.0f), 0x3c00u);
    ck_assert(gan_rng_normal_value(1.0, 2.0, 0.5) == 2.0);
}
END_TEST

START_TEST(test_rng_rounding)
{
    /* 1 + 2^-11 + 2^-40 lies just above an FP16 tie: rounded once it goes up, but
     * through nearest FP32 (which drops 2^-40) it would tie to even and go down. */
    double d = 1.0 + 0x1p-11 + 0x1p-40;
    ck_assert_uint_eq(gan_f32_to_f16((float)d), 0x3c00);
    ck_assert_uint_eq(gan_rounded_bits(GAN_F16, d), 0x3c01);
    ck_assert_uint_eq(bits(gan_f32_round_to_odd(d)), 0x3f801001u);
    ck_assert_uint_eq(bits(gan_f32_round_to_odd(-d)), 0xbf801001u);
    ck_assert_uint_eq(bits(gan_f32_round_to_odd(0.5)), 0x3f000000u); /* exact stays */
    ck_assert_uint_eq(gan_rounded_bits(GAN_BF16, 1.0 + 0x1p-8 + 0x1p-40), 0x3f81u);
    ck_assert_uint_eq(gan_rounded_bits(GAN_F32, 0.1), bits(0.1f));
    /* Neighbours of stored values. */
    ck_assert_uint_eq(gan_step_toward(GAN_F16, 0x0000, 0.0f, 1.0f), 0x0001u);
    ck_assert_uint_eq(gan_step_toward(GAN_F16, 0x8000, -0.0f, -1.0f), 0x8001u);
    ck_assert_uint_eq(gan_step_toward(GAN_F16, 0x3c00, 1.0f, 0.0f), 0x3bffu);
    ck_assert_uint_eq(gan_step_toward(GAN_BF16, 0xbf80, -1.0f, 0.0f), 0xbf7fu);
    ck_assert_uint_eq(gan_step_toward(GAN_BF16, 0xbf80, -1.0f, -2.0f), 0xbf81u);
    ck_assert_uint_eq(gan_step_toward(GAN_F32, 0x3f800000, 1.0f, 2.0f), 0x3f800001u);
    ck_assert_uint_eq(gan_step_toward(GAN_F32, 0x3f800000, 1.0f, 1.0f), 0x3f800000u);
}
END_TEST

/* ------------------------------------------------------------------ Adam */

START_TEST(test_adam_element)
{
    struct gan_adam p;
    memset(&p, 0, sizeof p);
    p.lr = 0.1f;
    p.beta1 = 0.9f;
    p.beta2 = 0.999f;
    p.eps = 1e-8f;
    p.step = 1;
    p.grad_scale = 1.0f;
    ck_assert_int_eq(gan_adam_check(&host, "adam", &p), GAN_OK);
    struct gan_adam_consts k = gan_adam_consts_of(&p);
    ck_assert(k.step_size == (float)(0.1f / (1.0 - 0.9f)));
    float m = 0.0f, v = 0.0f;
    /* Step 1 moves a parameter by lr, whatever the gradient's size. */
    float param = gan_adam_element(&k, 1.0f, 4.0f, &m, &v);
    ck_assert(m == (1.0f - 0.9f) * 4.0f);
    ck_assert(v == (1.0f - 0.999f) * 4.0f * 4.0f);
    ck_assert_msg(fabsf(param - 0.9f) < 1e-6f, "param %.9g", (double)param);
    p.step = 0;
    ck_refused(gan_adam_check(&host, "adam", &p), GAN_ERR_INVALID, "adam: step is 0");
    p.step = 1;
    p.lr = NAN;
    ck_refused(gan_adam_check(&host, "cpu_adam", &p), GAN_ERR_INVALID, "cpu_adam: lr is nan");
    p.lr = 0.1f;
    p.grad_scale = INFINITY;
    ck_refused(gan_adam_check(&host, "adam", &p), GAN_ERR_INVALID, "grad_scale is inf");
}
END_TEST

/* ------------------------------------------------------------------ shape checks */

START_TEST(test_check_shape)
{
    struct gan_shape s = { 3, { 2, 3, 4 } };
    int64_t count = -1;
    ck_assert_int_eq(gan_check_shape(&host, "k", &s, &count), GAN_OK);
    ck_assert_int_eq(count, 24);
    s.dim[1] = 0;
    ck_assert_int_eq(gan_check_shape(&host, "k", &s, &count), GAN_OK);
    ck_assert_int_eq(count, 0);
    struct gan_shape scalar = { 0, { 0 } };
    ck_assert_int_eq(gan_check_shape(&host, "k", &scalar, &count), GAN_OK);
    ck_assert_int_eq(count, 1);
    ck_refused(gan_check_shape(&host, "k", NULL, &count),
               GAN_ERR_INVALID, "k: the shape is NULL");
    s.dim[1] = -1;
    ck_refused(gan_check_shape(&host, "k", &s, &count), GAN_ERR_INVALID, "dimension 1 is -1");
    s.ndim = GAN_MAX_DIMS + 1;
    ck_refused(gan_check_shape(&host, "k", &s, &count), GAN_ERR_INVALID, "ndim is");
    struct gan_shape huge = { 2, { INT64_MAX / 2, 3 } };
    ck_refused(gan_check_shape(&host, "k", &huge, &count), GAN_ERR_INVALID, "2^63");
}
END_TEST

/* An operand of `elems` F32 elements, viewed with `strides` from `offset`. */
static struct gan_operand operand(struct gan_buffer *buf, size_t elems, size_t offset,
                                  int64_t s0, int64_t s1)
{
    struct gan_operand op;
    memset(&op, 0, sizeof op);
    buf->bytes = elems * sizeof(float);
    buf->ptr = NULL;
    op.buf = buf;
    op.offset = offset;
    op.dtype = GAN_F32;
    op.stride[0] = s0;
    op.stride[1] = s1;
    return op;
}

START_TEST(test_check_operand)
{
    struct gan_shape s = { 2, { 3, 4 } };
    struct gan_buffer buf;
    struct gan_operand op = operand(&buf, 12, 0, 4, 1);
    ck_assert_int_eq(gan_check_operand(&host, "k", "x", &s, &op), GAN_OK);
    /* A reversed view: the last row first, negative strides. */
    op = operand(&buf, 12, 11, -4, -1);
    ck_assert_int_eq(gan_check_operand(&host, "k", "x", &s, &op), GAN_OK);
    op = operand(&buf, 12, 10, -4, -1);
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_INVALID,
               "reaches elements -1 to 10");
    op = operand(&buf, 11, 0, 4, 1);
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_INVALID,
               "reaches elements 0 to 11");
    op = operand(&buf, 12, 12, 0, 0);
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_INVALID,
               "starts at element 12");
    op = operand(&buf, 12, 0, INT64_MAX / 2 + 1, 1);
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_INVALID,
               "overflows any buffer");
    op = operand(&buf, 12, 0, 4, 1);
    op.dtype = GAN_I32;
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_UNSUPPORTED,
               "operand x has dtype I32");
    /* An empty iteration reaches nothing: no buffer needed. */
    struct gan_shape empty = { 2, { 0, 4 } };
    op = operand(&buf, 0, 0, 4, 1);
    op.buf = NULL;
    ck_assert_int_eq(gan_check_operand(&host, "k", "x", &empty, &op), GAN_OK);
    ck_refused(gan_check_operand(&host, "k", "x", &s, &op), GAN_ERR_INVALID, "has no buffer");
}
END_TEST

START_TEST(test_iter_fold)
{
    struct gan_buffer ba, bb, by;
    struct gan_iter it;
    /* Contiguous operands fold into one run. */
    struct gan_shape s = { 3, { 2, 3, 4 } };
    struct gan_operand a = operand(&ba, 24, 0, 0, 0), y = operand(&by, 24, 0, 0, 0);
    a.stride[0] = y.stride[0] = 12;
    a.stride[1] = y.stride[1] = 4;
    a.stride[2] = y.stride[2] = 1;
    const struct gan_operand *ops[3] = { &a, &y, NULL };
    static const char *const names[3] = { "a", "y", "b" };
    ck_assert_int_eq(gan_iter_plan(&host, "k", &s, 2, ops, names, &it), GAN_OK);
    ck_assert_int_eq(it.ndim, 1);
    ck_assert_int_eq(it.count, 24);
    ck_assert_int_eq(it.dim[0], 24);
    ck_assert_int_eq(it.stride[0][0], 1);
    /* A bias row broadcast over rows: (rows, row), the bias with stride 0 outside. */
    struct gan_shape rows = { 3, { 5, 1, 4 } };
    struct gan_operand x = operand(&ba, 20, 0, 4, 0), bias = operand(&bb, 4, 0, 0, 0);
    struct gan_operand out = operand(&by, 20, 0, 4, 0);
    x.stride[2] = bias.stride[2] = out.stride[2] = 1;
    const struct gan_operand *bops[3] = { &x, &bias, &out };
    static const char *const bnames[3] = { "a", "b", "y" };
    ck_assert_int_eq(gan_iter_plan(&host, "k", &rows, 3, bops, bnames, &it), GAN_OK);
    ck_assert_int_eq(it.ndim, 2);
    ck_assert_int_eq(it.dim[0], 5);
    ck_assert_int_eq(it.dim[1], 4);
    ck_assert_int_eq(it.stride[0][0], 4);
    ck_assert_int_eq(it.stride[1][0], 0);
    ck_assert_int_eq(it.stride[1][1], 1);
    /* A scalar is one element with stride 0. */
    struct gan_shape scalar = { 0, { 0 } };
    ck_assert_int_eq(gan_iter_plan(&host, "k", &scalar, 3, bops, bnames, &it), GAN_OK);
    ck_assert(it.ndim == 1 && it.dim[0] == 1 && it.count == 1 && it.stride[2][0] == 0);
    /* The op is checked before the operands. */
    ck_refused(gan_binary_plan(&host, "binary", bnames, GAN_BINARY_OP_COUNT, 1, &rows, bops,
                               &it),
               GAN_ERR_INVALID, "binary: op 11 is not a gan_binary_op (0 to 10)");
    ck_assert_int_eq(it.count, 0);
    /* An op with a parameter, asked for without one (the binary slot). */
    ck_refused(gan_binary_plan(&host, "binary", bnames, GAN_BINARY_MASK_LEAKY, 0, &rows, bops,
                               &it),
               GAN_ERR_INVALID, "binary: MASK_LEAKY needs its slope");
    ck_assert_int_eq(it.count, 0);
    ck_refused(gan_binary_plan(&host, "binary", bnames, GAN_BINARY_ADD_LEAKY, 0, &rows, bops,
                               &it),
               GAN_ERR_INVALID, "binary: ADD_LEAKY needs its slope");
    ck_assert_int_eq(it.count, 0);
    /* ADD_RELU has no parameter: either slot takes it (the op names are read for an op
     * that is planned) */
    static const char *const binary_names[GAN_BINARY_OP_COUNT] = {
        "b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10"
    };
    ck_assert_int_eq(gan_binary_plan(&host, "binary", binary_names, GAN_BINARY_ADD_RELU, 0,
                                     &rows, bops, &it), GAN_OK);
    static const char *const unary_names[GAN_UNARY_OP_COUNT] = {
        "u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9", "u10", "u11", "u12",
        "u13", "u14", "u15", "u16", "u17", "u18"
    };
    const struct gan_operand *uops[2] = { &x, &out };
    x.dtype = GAN_U32;
    ck_refused(gan_unary_plan(&host, "unary", unary_names, GAN_UNARY_RELU, &rows, uops, &it),
               GAN_ERR_UNSUPPORTED, "u4: operand x has dtype U32");
}
END_TEST

START_TEST(test_reduce_check)
{
    struct gan_buffer bx, by;
    struct gan_shape s = { 2, { 3, 4 } };
    struct gan_operand x = operand(&bx, 12, 0, 4, 1), y = operand(&by, 4, 0, 0, 1);
    int64_t r = -1, k = -1;
    ck_assert_int_eq(gan_reduce_check(&host, "sum", &s, &x, 1u, &y, &r, &k), GAN_OK);
    ck_assert_int_eq(r, 3);
    ck_assert_int_eq(k, 4);
    int64_t dim[GAN_MAX_DIMS], xs[GAN_MAX_DIMS], ys[GAN_MAX_DIMS];
    ck_assert_int_eq(gan_reduce_group(&s, 1u, 1, &x, &y, dim, xs, NULL), 1);
    ck_assert(dim[0] == 3 && xs[0] == 4);
    ck_assert_int_eq(gan_reduce_group(&s, 1u, 0, &x, &y, dim, xs, ys), 1);
    ck_assert(dim[0] == 4 && xs[0] == 1 && ys[0] == 1);
    ck_refused(gan_reduce_check(&host, "sum", &s, &x, 4u, &y, &r, &k), GAN_ERR_INVALID,
               "axes 0x4 names a dimension beyond the shape's 2");
    y.stride[0] = 4;
    ck_refused(gan_reduce_check(&host, "sum", &s, &x, 1u, &y, &r, &k), GAN_ERR_INVALID,
               "y has stride 4 on reduced dimension 0");
}
END_TEST

START_TEST(test_ref_checks)
{
    struct gan_buffer b = { 16, NULL };
    struct gan_ref r = { &b, 1, GAN_F32 };
    ck_assert_int_eq(gan_check_ref(&host, "k", "y", &r, 3, GAN_ANY_FLOAT), GAN_OK);
    ck_refused(gan_check_ref(&host, "k", "y", &r, 4, GAN_ANY_FLOAT), GAN_ERR_INVALID,
               "needs 4 F32 elements from element offset 1");
    r.dtype = GAN_U32;
    ck_refused(gan_check_ref(&host, "k", "y", &r, 1, GAN_ANY_FLOAT), GAN_ERR_UNSUPPORTED,
               "it must be F32, F16 or BF16");
    ck_refused(gan_check_ref(&host, "k", "y", &r, 1, GAN_F16), GAN_ERR_UNSUPPORTED,
               "it must be F16");
    ck_assert_int_eq(gan_check_ref(&host, "k", "y", &r, 1, GAN_ANY_DTYPE), GAN_OK);
    /* Casts: a zero count needs no buffer; overlapping views are refused, one view in
     * place is not. */
    struct gan_ref none = { NULL, 0, GAN_F16 };
    ck_assert_int_eq(gan_check_cast_refs(&host, 0, &none, &none), GAN_OK);
    ck_refused(gan_check_cast_refs(&host, 1, &none, &none),
               GAN_ERR_INVALID, "cast: x has no buffer");
    struct gan_ref x = { &b, 0, GAN_F32 }, y = { &b, 2, GAN_F16 };
    unsigned char mem[16];
    ck_refused(gan_check_cast_overlap(&host, 2, &x, mem, &y, mem + 4),
               GAN_ERR_INVALID, "overlap");
    ck_assert_int_eq(gan_check_cast_overlap(&host, 1, &x, mem, &y, mem + 4), GAN_OK);
    ck_assert_int_eq(gan_check_cast_overlap(&host, 4, &x, mem, &x, mem), GAN_OK);
    /* Byte ranges of upload, download and copy. */
    ck_assert_int_eq(gan_check_upload(&host, &b, 8, mem, 8), GAN_OK);
    ck_refused(gan_check_upload(&host, &b, 9, mem, 8), GAN_ERR_INVALID, "run past its end");
    ck_refused(gan_check_upload(&host, &b, 0, NULL, 8),
               GAN_ERR_INVALID, "source pointer is NULL");
    ck_assert_int_eq(gan_check_download(&host, NULL, &b, 0, 0), GAN_OK);
    ck_refused(gan_check_copy(&host, &b, 0, NULL, 0, 1),
               GAN_ERR_INVALID, "the source buffer is NULL");
}
END_TEST

START_TEST(test_gemm_check)
{
    struct gan_buffer ba = { 6 * 4, NULL }, bb = { 12 * 4, NULL }, bc = { 8 * 2, NULL };
    struct gan_gemm g;
    memset(&g, 0, sizeof g);
    g.a = (struct gan_ref){ &ba, 0, GAN_F32 };
    g.b = (struct gan_ref){ &bb, 0, GAN_F16 };
    g.c = (struct gan_ref){ &bc, 0, GAN_BF16 };
    g.m = 2, g.n = 4, g.k = 3;
    g.lda = 3, g.ldb = 4, g.ldc = 4;
    g.batch = 1;
    g.alpha = 1.0f;
    struct gan_gemm_stored sa, sb, sc;
    ck_assert_int_eq(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc), GAN_OK);
    ck_assert(sa.rows == 2 && sa.cols == 3 && sb.rows == 3 && sb.cols == 4);
    ck_assert_int_eq(gan_gemm_extent(&sc, 1), 8);
    g.trans_a = 1; /* A stored 3×2: lda 3 is fine, and 2×3 elements is 6 */
    g.lda = 2;
    ck_assert_int_eq(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc), GAN_OK);
    ck_assert(sa.rows == 3 && sa.cols == 2);
    g.lda = 1;
    ck_refused(gan_gemm_check(&host, "cuBLAS", INT_MAX, &g, &sa, &sb, &sc), GAN_ERR_INVALID,
               "lda = 1 for a stored 3×2 A; it must be at least 2");
    g.lda = 2;
    g.ldc = 5;
    ck_refused(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc), GAN_ERR_INVALID,
               "C (stored 2×4 BF16, ld 5, batch 1, stride 0) needs 9 elements");
    g.ldc = 4;
    g.batch = 2;
    g.stride_a = 0, g.stride_b = 0, g.stride_c = 0;
    ck_refused(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc), GAN_ERR_INVALID,
               "stride_c = 0 with batch = 2");
    g.batch = 3;
    ck_refused(gan_gemm_check(&host, "cuBLAS", 2, &g, &sa, &sb, &sc), GAN_ERR_INVALID,
               "cuBLAS takes at most 2");
    g.batch = 1;
    g.a.dtype = GAN_I32;
    ck_refused(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc),
               GAN_ERR_UNSUPPORTED, "A has dtype I32");
    g.a.dtype = GAN_F32;
    g.k = 0; /* no product: A and B are not read, so need no buffer */
    g.a.buf = g.b.buf = NULL;
    ck_assert_int_eq(gan_gemm_check(&host, "BLAS", INT64_MAX, &g, &sa, &sb, &sc), GAN_OK);
}
END_TEST

START_TEST(test_conv2d_check)
{
    struct gan_conv2d c;
    memset(&c, 0, sizeof c);
    c.n = 2, c.c_in = 3, c.h_in = 7, c.w_in = 5, c.c_out = 4, c.kh = 3, c.kw = 2;
    c.stride_h = 2, c.stride_w = 1, c.pad_h = 1, c.pad_w = 0;
    c.dilation_h = 1, c.dilation_w = 2;
    c.dtype = GAN_F16;
    /* (7 + 2 − 3) / 2 + 1 = 4 rows; (5 − 2·1 − 1) / 1 + 1 = 3 columns. */
    ck_assert_int_eq(gan_conv2d_out_size(7, 3, 2, 1, 1), 4);
    ck_assert_int_eq(gan_conv2d_out_size(5, 2, 1, 0, 2), 3);
    ck_assert_int_eq(gan_conv2d_out_size(2, 3, 1, 0, 1), -1);
    c.h_out = 4, c.w_out = 3;
    ck_assert_int_eq(gan_conv2d_check_desc(&host, "conv", "limit", &c, 1.0f), GAN_OK);
    struct gan_conv2d_sizes z;
    ck_assert(gan_conv2d_sizes(&c, &z));
    ck_assert(z.in_elems == 105 && z.out_elems == 48 && z.k == 18 && z.w_elems == 72);
    ck_assert(z.x_all == 210 && z.y_all == 96 && z.hw_out == 12);
    c.w_out = 4;
    ck_refused(gan_conv2d_check_desc(&host, "conv", "limit", &c, 0.0f), GAN_ERR_INVALID,
               "w_out is 4 but");
    c.w_out = 3;
    ck_refused(gan_conv2d_check_desc(&host, "conv", "limit", &c, 0.5f), GAN_ERR_INVALID,
               "beta is 0.5");
    c.kw = 4; /* dilated: 2·3 + 1 = 7 columns of a 5-wide input */
    ck_refused(gan_conv2d_check_desc(&host, "conv", "limit", &c, 0.0f), GAN_ERR_INVALID,
               "the dilated kernel spans 7 column-positions");
    c.kw = 2;
    c.n = (int64_t)INT_MAX + 1;
    ck_refused(gan_conv2d_check_desc(&host, "conv", "cuDNN's descriptors hold", &c, 0.0f),
               GAN_ERR_INVALID, "more than the 2147483647 cuDNN's descriptors hold");
    c.n = 2;
    c.pad_w = -1;
    ck_refused(gan_conv2d_check_desc(&host, "conv", "limit", &c, 0.0f), GAN_ERR_INVALID,
               "pad_w is -1; it must be at least 0");
    c.pad_w = 0;
    /* The tensors: the descriptor's dtype, inside their buffers, the output apart. */
    struct gan_buffer one = { 1024, NULL }, other = { 1024, NULL };
    struct gan_ref x = { &one, 0, GAN_F16 }, w = { &one, 300, GAN_F16 };
    struct gan_ref y = { &other, 0, GAN_F16 };
    ck_assert_int_eq(gan_conv2d_check_refs(&host, "conv", GAN_F16, "x", &x, 210, "w", &w, 72,
                                           "y", &y, 96), GAN_OK);
    y.buf = &one;
    y.offset = 200;
    ck_refused(gan_conv2d_check_refs(&host, "conv", GAN_F16, "x", &x, 210, "w", &w, 72,
                                     "y", &y, 96), GAN_ERR_INVALID,
               "y (elements 200..296) overlaps x");
    y.offset = 500;
    y.dtype = GAN_F32;
    ck_refused(gan_conv2d_check_refs(&host, "conv", GAN_F16, "x", &x, 210, "w", &w, 72,
                                     "y", &y, 96), GAN_ERR_INVALID,
               "y is F32 but the descriptor's dtype is F16");
    y.dtype = GAN_F16;
    ck_refused(gan_conv2d_check_refs(&host, "conv", GAN_F16, "x", &x, 210, "w", &w, 72,
                                     "y", &y, 96), GAN_ERR_INVALID,
               "needs 96 elements from element 500");
}
END_TEST

/* ------------------------------------------------------------------ settings */

static const struct gan_setting_spec demo_settings[] = {
    { "threads", GAN_SETTING_INT, "3", "a count" },
    { "gemm", GAN_SETTING_STRING, "auto", "a library" },
    { "exact", GAN_SETTING_BOOL, "true", "a choice" },
    { "free", GAN_SETTING_INT, NULL, "no default" },
    { NULL, 0, NULL, NULL },
};

/* A host with one set value, "threads" = 7 when `set`; every other key unset. */
static int host_has_threads;

static gan_status get_int_7(void *ctx, const char *key, long long *v)
{
    (void)ctx;
    if (!host_has_threads || strcmp(key, "threads") != 0)
        return GAN_ERR_NOT_FOUND;
    *v = 7;
    return GAN_OK;
}

static gan_status get_string_none(void *ctx, const char *key, const char **v)
{
    (void)ctx, (void)key, (void)v;
    return GAN_ERR_NOT_FOUND;
}

static gan_status get_bool_wrong(void *ctx, const char *key, int *v)
{
    (void)ctx, (void)key, (void)v;
    return GAN_ERR_CONFIG;
}

START_TEST(test_setting_defaults)
{
    ck_assert_str_eq(gan_setting_default(demo_settings, "gemm"), "auto");
    ck_assert_ptr_null(gan_setting_default(demo_settings, "free"));
    ck_assert_ptr_null(gan_setting_default(demo_settings, "missing"));
    host.get_int = get_int_7;
    host.get_string = get_string_none;
    host.get_bool = get_bool_wrong;
    long long n = 0;
    host_has_threads = 0;
    ck_assert_int_eq(gan_setting_int(&host, demo_settings, "threads", &n), GAN_OK);
    ck_assert_int_eq(n, 3);
    host_has_threads = 1;
    ck_assert_int_eq(gan_setting_int(&host, demo_settings, "threads", &n), GAN_OK);
    ck_assert_int_eq(n, 7);
    /* No default declared: the host's "not found" stands. */
    ck_assert_int_eq(gan_setting_int(&host, demo_settings, "free", &n), GAN_ERR_NOT_FOUND);
    const char *word = NULL;
    ck_assert_int_eq(gan_setting_string(&host, demo_settings, "gemm", &word), GAN_OK);
    ck_assert_str_eq(word, "auto");
    /* A value of the wrong type is the host's error, never the default. */
    int flag = 0;
    ck_assert_int_eq(gan_setting_bool(&host, demo_settings, "exact", &flag), GAN_ERR_CONFIG);
    ck_assert_int_eq(flag, 0);
}
END_TEST

static Suite *common_suite(void)
{
    Suite *s = suite_create("backend_common");
    TCase *tc = tcase_create("conversions");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_loop_test(tc, test_f16_boundaries, 0,
                        (int)(sizeof f16_cases / sizeof f16_cases[0]));
    tcase_add_test(tc, test_f16_widen);
    tcase_add_loop_test(tc, test_bf16_boundaries, 0,
                        (int)(sizeof bf16_cases / sizeof bf16_cases[0]));
    tcase_add_test(tc, test_load_store);
    suite_add_tcase(s, tc);

    tc = tcase_create("per-element");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_unary_semantics);
    tcase_add_loop_test(tc, test_unary_dispatch, 0, GAN_UNARY_OP_COUNT);
    tcase_add_test(tc, test_binary_semantics);
    tcase_add_test(tc, test_reduce_ops);
    tcase_add_test(tc, test_adam_element);
    suite_add_tcase(s, tc);

    tc = tcase_create("casts");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_fclass);
    tcase_add_test(tc, test_float_cast_counts);
    tcase_add_test(tc, test_integer_cast_rules);
    tcase_add_test(tc, test_integer_to_float_rounds_once);
    suite_add_tcase(s, tc);

    tc = tcase_create("random values");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_rng_values);
    tcase_add_test(tc, test_rng_rounding);
    suite_add_tcase(s, tc);

    tc = tcase_create("checks");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_check_shape);
    tcase_add_test(tc, test_check_operand);
    tcase_add_test(tc, test_iter_fold);
    tcase_add_test(tc, test_reduce_check);
    tcase_add_test(tc, test_ref_checks);
    tcase_add_test(tc, test_gemm_check);
    tcase_add_test(tc, test_conv2d_check);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_setting_defaults);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(common_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
