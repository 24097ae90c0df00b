/* SPDX-License-Identifier: MIT */
/* check_relu_mask.c — ReLU's backward in one pass (the backend's MASK_POSITIVE, for a
 * backend of plugin ABI 1.3 or later) gives the bits of the two passes an older backend
 * gets (STEP, then MUL), at first and second order, in FP32 and under the 16-bit
 * policies; and the context keeps the new op away from an older backend. The same for
 * leaky ReLU's factor in one pass (LEAKY_STEP, ABI 1.7) against STEP, SCALE and
 * ADD_SCALAR, and for the factor and its product in one (binary_alpha's MASK_LEAKY, ABI
 * 1.8), with the backend's unary and binary_alpha calls counted to see which one ran.
 *
 * The graph is a small WGAN-GP critic: h = relu(x·W1), out = Σ h·W2, the input gradient
 * ∇ₓ out with create_graph, and P = Σ (∇ₓ out)², differentiated again for W1 and W2.
 * Rows of x that are zero, and a column of W1 a few ulps of FP32's range wide, put
 * exact zeros and tiny values at the kink; negative weights put −0 into the masked
 * gradients. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"

#define ROWS 8
#define IN 4
#define HID 16

struct result {
    float gx[ROWS * IN], gw1[IN * HID], gw2[HID];
    size_t mask_nodes, mul_nodes;   /* tape entries of each op after the double backward */
};

/* The fixture's unary and binary_alpha slots, and what the context sent them. */
static gan_backend_unary_fn *real_unary;
static gan_backend_binary_alpha_fn *real_binary_alpha;
static size_t unary_calls[GAN_UNARY_OP_COUNT], mask_leaky_calls;

static gan_status counting_binary_alpha(gan_backend *be, enum gan_binary_op op, float alpha,
                                        const struct gan_shape *shape,
                                        const struct gan_operand *a,
                                        const struct gan_operand *b,
                                        const struct gan_operand *y)
{
    mask_leaky_calls += op == GAN_BINARY_MASK_LEAKY;
    return real_binary_alpha(be, op, alpha, shape, a, b, y);
}

static gan_status counting_unary(gan_backend *be, enum gan_unary_op op, float alpha,
                                 const struct gan_shape *shape, const struct gan_operand *x,
                                 const struct gan_operand *y)
{
    if ((unsigned)op < GAN_UNARY_OP_COUNT)
        unary_calls[op]++;
    return real_unary(be, op, alpha, shape, x, y);
}

/* An FP32 r × c leaf that requires a gradient. */
static gan_tensor *param(gan_ctx *ctx, int64_t r, int64_t c, const float *v)
{
    const int64_t d[2] = { r, c };
    return fixture_param(ctx, 2, d, v);
}

/* The graph above on a fresh context over the fixture's backend (its unary and
 * binary_alpha calls counted), told that the backend was built for ABI minor `minor`,
 * binary_alpha left out below 8; the activation is relu where `slope` is NaN, else
 * leaky_relu with that slope. */
/* The policy level run_with sets: O2 but in test_leaky_o1. */
static int policy_level = GAN_PRECISION_O2;

static void run_with(enum gan_dtype mode, unsigned minor, float slope, struct result *r)
{
    gan_ctx *ctx;
    static struct gan_backend_ops counted;
    counted = *fx.ops;
    real_unary = fx.ops->unary;
    counted.unary = counting_unary;
    ck_assert_ptr_nonnull(fx.ops->binary_alpha);
    real_binary_alpha = fx.ops->binary_alpha;
    counted.binary_alpha = minor >= 8 ? counting_binary_alpha : NULL;
    memset(unary_calls, 0, sizeof unary_calls);
    mask_leaky_calls = 0;
    ck_assert_int_eq(gan_ctx_new(&counted, fx.be, &ctx), GAN_OK);
    gan_ctx_set_backend_abi_minor(ctx, minor);
    ck_assert_uint_eq(gan_ctx_backend_abi_minor(ctx), minor);
    ck_assert_int_eq(gan_ctx_set_precision(ctx, mode, policy_level), GAN_OK);

    float xv[ROWS * IN], w1v[IN * HID], w2v[HID];
    for (uint32_t i = 0; i < ROWS * IN; i++)
        xv[i] = i / IN == 2 || i / IN == 5 ? 0.0f : fixture_value(i, 1);
    for (uint32_t i = 0; i < IN * HID; i++)
        w1v[i] = i % HID == 3 ? fixture_value(i, 2) * 1e-37f : fixture_value(i, 2);
    for (uint32_t i = 0; i < HID; i++)
        w2v[i] = fixture_value(i, 3);
    gan_tensor *x = param(ctx, ROWS, IN, xv), *w1 = param(ctx, IN, HID, w1v);
    gan_tensor *w2 = param(ctx, HID, 1, w2v);

    gan_tensor *pre = gan_matmul(ctx, x, w1, 0, 0);
    gan_tensor *h = isnan(slope) ? gan_relu(ctx, pre) : gan_leaky_relu(ctx, pre, slope);
    gan_tensor *out = gan_sum(ctx, gan_matmul(ctx, h, w2, 0, 0), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    ck_assert_msg(gan_grad(ctx, 1, &out, NULL, 1, &x, &gx, 1) == GAN_OK, "%s",
                  gan_ctx_error(ctx));
    gan_tensor *p = gan_sum(ctx, gan_square(ctx, gx), GAN_ALL_AXES, 0);
    gan_tensor *ws[2] = { w1, w2 }, *gw[2];
    ck_assert_msg(gan_grad(ctx, 1, &p, NULL, 2, ws, gw, 0) == GAN_OK, "%s",
                  gan_ctx_error(ctx));
    fixture_host(ctx, gx, r->gx, ROWS * IN);
    fixture_host(ctx, gw[0], r->gw1, IN * HID);
    fixture_host(ctx, gw[1], r->gw2, HID);

    r->mask_nodes = r->mul_nodes = 0;
    for (size_t k = 0; k < gan_ctx_tape_length(ctx); k++) {
        struct gan_tape_entry e;
        ck_assert_int_eq(gan_ctx_tape_entry(ctx, k, &e, sizeof e), GAN_OK);
        r->mask_nodes += strcmp(e.op, "gan_mask_positive") == 0;
        r->mul_nodes += strcmp(e.op, "gan_mul") == 0;
    }
    gan_ctx_free(ctx);
}

static void run(enum gan_dtype mode, unsigned minor, struct result *r)
{
    run_with(mode, minor, NAN, r);
}

static void assert_same_bits(const float *a, const float *b, size_t n, const char *what,
                             enum gan_dtype mode)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof a[i]) == 0,
                      "%s[%zu] in %s: %a with the one-pass op, %a without", what, i,
                      gan_dtype_name(mode), (double)a[i], (double)b[i]);
}

/* Every gradient of two runs, bit for bit; and how many of ∇ₓ's terms are zero. */
static int assert_same_results(const struct result *one, const struct result *other,
                               enum gan_dtype mode)
{
    assert_same_bits(one->gx, other->gx, ROWS * IN, "gx", mode);
    assert_same_bits(one->gw1, other->gw1, IN * HID, "dP/dW1", mode);
    assert_same_bits(one->gw2, other->gw2, HID, "dP/dW2", mode);
    int zeros = 0;
    for (int i = 0; i < ROWS * IN; i++)
        zeros += one->gx[i] == 0.0f;
    return zeros;
}

static const enum gan_dtype modes[] = { GAN_F32, GAN_F16, GAN_BF16 };

START_TEST(test_one_pass_is_two_passes)
{
    enum gan_dtype mode = modes[_i];
    struct result one, two;
    run(mode, 3, &one);
    run(mode, 2, &two);
    /* The masks did something: some of ∇ₓ's terms are masked, some not. */
    int zeros = assert_same_results(&one, &two, mode);
    ck_assert_int_gt(zeros, 0);
    ck_assert_int_lt(zeros, ROWS * IN);
    /* The relu's backward under create_graph is one node, and its own backward (which
     * P's gradient runs through) is not recorded: a 1.3 backend gets MASK_POSITIVE, an
     * older one the mul it always had. */
    ck_assert_uint_eq(one.mask_nodes, 1);
    ck_assert_uint_eq(two.mask_nodes, 0);
    ck_assert_uint_eq(two.mul_nodes, one.mul_nodes + 1);
}
END_TEST

/* Leaky ReLU's backward: one MASK_LEAKY pass for a 1.8 backend (the factor and the
 * product), the factor in one LEAKY_STEP pass and then MUL for a 1.7 one, STEP, SCALE and
 * ADD_SCALAR and then MUL for a 1.6 one, the same bits at first and second order, in
 * every mode. */
START_TEST(test_leaky_one_pass_is_three)
{
    static const float slopes[] = { 0.2f, 0.01f, 0.1f, 0.5f, 0.3f, 1e-3f, 0.0f, 1.0f,
                                    0.02f, 0.05f, 0.15f, 0.25f, 1.0f / 3.0f, 0.7f, 0.9f,
                                    0.99f, 0.999f, 1e-5f, 0x1p-20f, 0x1p-30f, 0x1.fffffep-1f,
                                    1.5f, -0.1f, -0.0f, 1e-30f };
    enum gan_dtype mode = modes[_i];
    for (size_t s = 0; s < sizeof slopes / sizeof slopes[0]; s++) {
        struct result both, one, three;
        run_with(mode, 8, slopes[s], &both);
        size_t masks = mask_leaky_calls, both_factors = unary_calls[GAN_UNARY_LEAKY_STEP];
        size_t both_steps = unary_calls[GAN_UNARY_STEP];
        run_with(mode, 7, slopes[s], &one);
        ck_assert_uint_eq(mask_leaky_calls, 0);
        size_t fused = unary_calls[GAN_UNARY_LEAKY_STEP], steps = unary_calls[GAN_UNARY_STEP];
        /* a 1.8 backend: the product in the factor's pass wherever 1.7 took one pass
         * for the factor, each order's factor never made */
        ck_assert_msg((masks > 0) == (fused > 0) && both_factors == 0 &&
                          both_steps == (masks > 0 ? 0 : steps),
                      "slope %a in %s: %zu MASK_LEAKY, %zu LEAKY_STEP and %zu STEP passes",
                      (double)slopes[s], gan_dtype_name(mode), masks, both_factors, both_steps);
        /* the one-pass node is taped as the gan_mul it stands for */
        ck_assert_uint_eq(both.mul_nodes, one.mul_nodes);
        ck_assert_int_lt(assert_same_results(&both, &one, mode), ROWS * IN);
        run_with(mode, 6, slopes[s], &three);
        ck_assert_uint_eq(unary_calls[GAN_UNARY_LEAKY_STEP], 0);
        ck_assert_msg(unary_calls[GAN_UNARY_STEP] > 0, "slope %a in %s: no STEP on a 1.6 "
                      "backend", (double)slopes[s], gan_dtype_name(mode));
        /* the backward and the penalty's double backward, one way or the other: in one
         * pass for every slope here but −0 (+0 + −0 is +0), and −0.1 in FP16 (where
         * (1.1 + −0.1) rounds below 1) */
        ck_assert_uint_eq(fused > 0, steps == 0);
        int three_passes = signbit(slopes[s]) && (slopes[s] == 0.0f || mode == GAN_F16);
        ck_assert_msg((fused > 0) == !three_passes, "slope %a in %s: %s", (double)slopes[s],
                      gan_dtype_name(mode), fused ? "one pass" : "three passes");
        ck_assert_int_lt(assert_same_results(&one, &three, mode), ROWS * IN);
    }
}
END_TEST

/* Under O1 (FP32 element-wise ops around 16-bit products): the one-pass op there too,
 * with the bits of a 1.7 backend's two passes. */
START_TEST(test_leaky_o1)
{
    static const enum gan_dtype o1_modes[] = { GAN_F16, GAN_BF16 };
    policy_level = GAN_PRECISION_O1;
    struct result both, one;
    run_with(o1_modes[_i], 8, 0.2f, &both);
    ck_assert_uint_gt(mask_leaky_calls, 0);
    run_with(o1_modes[_i], 7, 0.2f, &one);
    ck_assert_int_lt(assert_same_results(&both, &one, o1_modes[_i]), ROWS * IN);
    ck_assert_uint_eq(both.mul_nodes, one.mul_nodes);
    policy_level = GAN_PRECISION_O2;
}
END_TEST

/* The fixture's context, like the program's, knows the module's own minor. */
START_TEST(test_context_knows_the_module)
{
    ck_assert_uint_eq(fx.plugin->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_eq(gan_ctx_backend_abi_minor(fx.ctx), GAN_ABI_MINOR);
}
END_TEST

static Suite *relu_mask_suite(void)
{
    Suite *s = suite_create("relu_mask");
    TCase *tc = tcase_create("one pass");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_one_pass_is_two_passes, 0,
                        (int)(sizeof modes / sizeof modes[0]));
    tcase_add_loop_test(tc, test_leaky_one_pass_is_three, 0,
                        (int)(sizeof modes / sizeof modes[0]));
    tcase_add_loop_test(tc, test_leaky_o1, 0, 2);
    tcase_add_test(tc, test_context_knows_the_module);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(relu_mask_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
