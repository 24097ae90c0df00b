/* SPDX-License-Identifier: MIT */
/* check_bias_activation.c — a bias and its activation in one pass (gan_add_leaky_relu and
 * gan_add_relu on a backend of plugin ABI 1.9, binary_alpha's ADD_LEAKY and ADD_RELU)
 * give the bits of gan_add and then the activation, the two ops a 1.8 backend gets, in
 * the forward, the backward and the penalty's double backward, in FP32 and under the
 * 16-bit policies (O2 and O1); the context keeps the new ops from an older backend and
 * from a negative slope, whose output's sign is not the sum's.
 *
 * The graph is a small WGAN-GP critic: h = act(x·W1 + b), out = Σ h·W2, the input
 * gradient ∇ₓ out with create_graph, and P = Σ (∇ₓ out)², differentiated again for W1,
 * W2 and b. Rows of x that are zero put the bias alone into the sum, and the bias holds
 * exact zeros, −0 and values too small for FP16, so that sums at the kink (zeros of
 * either sign, and values that round to them in 16 bits) meet the masks. */
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
    float h[ROWS * HID], gx[ROWS * IN], gw1[IN * HID], gw2[HID], gb[HID];
    size_t fused_nodes;   /* tape entries of the one-pass op after the double backward */
};

/* The fixture's binary_alpha slot, and how many one-pass calls the context sent it. */
static gan_backend_binary_alpha_fn *real_binary_alpha;
static size_t fused_calls;

static gan_status counting_binary_alpha(gan_backend *be, enum gan_binary_op op, float alpha,
                                        const struct gan_shape *shape,
                                        const struct gan_operand *a,
                                        const struct gan_operand *b,
                                        const struct gan_operand *y)
{
    fused_calls += op == GAN_BINARY_ADD_LEAKY || op == GAN_BINARY_ADD_RELU;
    return real_binary_alpha(be, op, alpha, shape, a, b, y);
}

/* How the activation is asked for: the one-pass call, or gan_add and then the
 * activation. */
enum way { ONE_CALL, TWO_OPS };

/* The graph above on a fresh context over the fixture's backend, told that the backend
 * was built for ABI minor `minor`, its binary_alpha left out unless `slot`; relu where
 * `slope` is NaN, else leaky_relu. */
static void run_with(enum gan_dtype mode, int level, unsigned minor, int slot, float slope,
                     enum way way, struct result *r)
{
    static struct gan_backend_ops counted;
    counted = *fx.ops;
    ck_assert_ptr_nonnull(fx.ops->binary_alpha);
    real_binary_alpha = fx.ops->binary_alpha;
    counted.binary_alpha = slot ? counting_binary_alpha : NULL;
    fused_calls = 0;
    gan_ctx *ctx;
    ck_assert_int_eq(gan_ctx_new(&counted, fx.be, &ctx), GAN_OK);
    gan_ctx_set_backend_abi_minor(ctx, minor);
    ck_assert_int_eq(gan_ctx_set_precision(ctx, mode, level), GAN_OK);

    float xv[ROWS * IN], w1v[IN * HID], w2v[HID], bv[HID];
    for (uint32_t i = 0; i < ROWS * IN; i++)
        xv[i] = i / IN == 2 || i / IN == 5 ? 0.0f : fixture_value(i, 1);
    for (uint32_t i = 0; i < IN * HID; i++)
        w1v[i] = fixture_value(i, 2);
    for (uint32_t i = 0; i < HID; i++) {
        w2v[i] = fixture_value(i, 3);
        bv[i] = fixture_value(i, 4) * 0.25f;
    }
    bv[1] = 0.0f;
    bv[4] = -0.0f;
    bv[7] = -1e-9f;   /* −0 in FP16 */
    bv[9] = 1e-9f;    /* +0 in FP16 */
    const int64_t dx[2] = { ROWS, IN }, dw1[2] = { IN, HID }, dw2[2] = { HID, 1 };
    const int64_t db[1] = { HID };
    gan_tensor *x = fixture_param(ctx, 2, dx, xv), *w1 = fixture_param(ctx, 2, dw1, w1v);
    gan_tensor *w2 = fixture_param(ctx, 2, dw2, w2v), *b = fixture_param(ctx, 1, db, bv);

    gan_tensor *pre = gan_matmul(ctx, x, w1, 0, 0), *h;
    if (way == ONE_CALL)
        h = isnan(slope) ? gan_add_relu(ctx, pre, b) : gan_add_leaky_relu(ctx, pre, b, slope);
    else
        h = isnan(slope) ? gan_relu(ctx, gan_add(ctx, pre, b))
                         : gan_leaky_relu(ctx, gan_add(ctx, pre, b), slope);
    fixture_host(ctx, h, r->h, ROWS * HID);
    gan_tensor *out = gan_sum(ctx, gan_matmul(ctx, h, w2, 0, 0), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    ck_assert_msg(gan_grad(ctx, 1, &out, NULL, 1, &x, &gx, 1) == GAN_OK, "%s",
                  gan_ctx_error(ctx));
    gan_tensor *p = gan_sum(ctx, gan_square(ctx, gx), GAN_ALL_AXES, 0);
    gan_tensor *ws[3] = { w1, w2, b }, *gw[3];
    ck_assert_msg(gan_grad(ctx, 1, &p, NULL, 3, ws, gw, 0) == GAN_OK, "%s",
                  gan_ctx_error(ctx));
    fixture_host(ctx, gx, r->gx, ROWS * IN);
    fixture_host(ctx, gw[0], r->gw1, IN * HID);
    fixture_host(ctx, gw[1], r->gw2, HID);
    fixture_host(ctx, gw[2], r->gb, HID);

    r->fused_nodes = 0;
    for (size_t k = 0; k < gan_ctx_tape_length(ctx); k++) {
        struct gan_tape_entry e;
        ck_assert_int_eq(gan_ctx_tape_entry(ctx, k, &e, sizeof e), GAN_OK);
        r->fused_nodes += strcmp(e.op, "gan_add_leaky_relu") == 0 ||
                          strcmp(e.op, "gan_add_relu") == 0;
    }
    gan_ctx_free(ctx);
}

static void assert_same_bits(const float *a, const float *b, size_t n, const char *what,
                             const char *how)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof a[i]) == 0, "%s[%zu], %s: %a and %a", what,
                      i, how, (double)a[i], (double)b[i]);
}

/* Every value of two runs, bit for bit; returns how many of h's values are at or below
 * zero, so that a caller can see both sides of the kink were met. */
static int assert_same_results(const struct result *one, const struct result *other,
                               const char *how)
{
    assert_same_bits(one->h, other->h, ROWS * HID, "h", how);
    assert_same_bits(one->gx, other->gx, ROWS * IN, "gx", how);
    assert_same_bits(one->gw1, other->gw1, IN * HID, "dP/dW1", how);
    assert_same_bits(one->gw2, other->gw2, HID, "dP/dW2", how);
    assert_same_bits(one->gb, other->gb, HID, "dP/db", how);
    int low = 0;
    for (int i = 0; i < ROWS * HID; i++)
        low += !(one->h[i] > 0.0f);
    return low;
}

static const struct { enum gan_dtype mode; int level; } policies[] = {
    { GAN_F32, GAN_PRECISION_O2 }, { GAN_F16, GAN_PRECISION_O2 },
    { GAN_BF16, GAN_PRECISION_O2 }, { GAN_F16, GAN_PRECISION_O1 },
    { GAN_BF16, GAN_PRECISION_O1 },
};
#define N_POLICIES (int)(sizeof policies / sizeof policies[0])

/* NaN stands for relu. The negative ones are refused the one pass. */
static const float slopes[] = { NAN, 0.2f, 0.01f, 0.0f, -0.0f, 1.0f, 0.5f, 1e-30f,
                                0x1.fffffep-1f, 1.5f, -0.1f, -1.0f };

START_TEST(test_one_pass_is_two_ops)
{
    const enum gan_dtype mode = policies[_i].mode;
    const int level = policies[_i].level;
    for (size_t s = 0; s < sizeof slopes / sizeof slopes[0]; s++) {
        const float slope = slopes[s];
        char how[96];
        snprintf(how, sizeof how, "%s O%d, %s %a", gan_dtype_name(mode), level,
                 isnan(slope) ? "relu" : "slope", (double)slope);
        struct result one, two, old, slotless;
        run_with(mode, level, GAN_ABI_MINOR, 1, slope, ONE_CALL, &one);
        const size_t calls = fused_calls;
        run_with(mode, level, GAN_ABI_MINOR, 1, slope, TWO_OPS, &two);
        ck_assert_uint_eq(fused_calls, 0);
        ck_assert_uint_eq(two.fused_nodes, 0);
        run_with(mode, level, 8, 1, slope, ONE_CALL, &old);
        ck_assert_uint_eq(fused_calls, 0);
        ck_assert_uint_eq(old.fused_nodes, 0);
        /* a 1.9 backend that leaves binary_alpha out gets the two ops too */
        run_with(mode, level, GAN_ABI_MINOR, 0, slope, ONE_CALL, &slotless);
        ck_assert_uint_eq(slotless.fused_nodes, 0);
        /* one pass and one node for every slope ≥ 0, none for a negative one */
        const int one_pass = isnan(slope) || slope >= 0.0f;
        ck_assert_msg(calls == (one_pass ? 1u : 0u) && one.fused_nodes == calls, "%s: %zu "
                      "one-pass calls, %zu nodes", how, calls, one.fused_nodes);
        int low = assert_same_results(&one, &two, how);
        ck_assert_int_gt(low, 0);
        ck_assert_int_lt(low, ROWS * HID);
        assert_same_results(&one, &old, how);
        assert_same_results(&one, &slotless, how);
    }
}
END_TEST

/* The fixture's context, like the program's, knows the module's own minor, and that
 * minor has the one-pass ops. */
START_TEST(test_context_knows_the_module)
{
    ck_assert_uint_ge(GAN_ABI_MINOR, 9);
    ck_assert_uint_eq(gan_ctx_backend_abi_minor(fx.ctx), GAN_ABI_MINOR);
}
END_TEST

static Suite *bias_activation_suite(void)
{
    Suite *s = suite_create("bias_activation");
    TCase *tc = tcase_create("one pass");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_one_pass_is_two_ops, 0, N_POLICIES);
    tcase_add_test(tc, test_context_knows_the_module);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(bias_activation_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
