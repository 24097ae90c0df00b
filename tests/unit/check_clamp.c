/* SPDX-License-Identifier: MIT */
/* check_clamp.c — gan_clamp's exact values and gradients at and beyond its bounds in each
 * dtype, and the precision policy's activation clamp (precision.clamp): which results it
 * clamps and which it leaves, that it is the same as gan_clamp written after each GEMM
 * through a double backward, and its count. First and second derivatives against finite
 * differences are in check_autograd. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"

#define CTX (fx.ctx)

static void ok(void)
{
    ck_assert_msg(gan_ctx_status(CTX) == GAN_OK, "%s", gan_ctx_error(CTX));
}

static gan_tensor *make(enum gan_dtype dt, int nd, const int64_t *d, const float *v)
{
    gan_tensor *t = gan_tensor_from_host(CTX, dt, nd, d, v);
    ck_assert_msg(t, "gan_tensor_from_host: %s", gan_ctx_error(CTX));
    return t;
}

static void fetch(const gan_tensor *t, float *v, size_t n)
{
    ck_assert_msg(t, "no tensor: %s", gan_ctx_error(CTX));
    ck_assert_int_eq((int64_t)n, gan_tensor_numel(t));
    ck_assert_msg(gan_tensor_to_host(CTX, t, v, n) == GAN_OK, "%s", gan_ctx_error(CTX));
}

static void policy(enum gan_dtype mode, enum gan_precision_level level)
{
    ck_assert_msg(gan_ctx_set_precision(CTX, mode, level) == GAN_OK, "%s", gan_ctx_error(CTX));
}

/* Bitwise equality that also holds for NaN and tells −0 from +0. */
static int same_bits(float a, float b)
{
    return isnan(a) ? isnan(b) : memcmp(&a, &b, sizeof a) == 0;
}

static const enum gan_dtype dtypes[3] = { GAN_F32, GAN_F16, GAN_BF16 };

/* ------------------------------------------------------------------ gan_clamp */

/* Every value here is exact in all three dtypes (BF16 has 8 significant bits). */
START_TEST(test_values_and_gradient)
{
    enum gan_dtype dt = dtypes[_i];
    enum { N = 13 };
    const float x[N] = { -INFINITY, -300, -256, -255, -0.0f, 0.0f, 1.5f, 255, 256, 264, 300,
                         INFINITY, NAN };
    const float want[N] = { -256, -256, -256, -255, -0.0f, 0.0f, 1.5f, 255, 256, 256, 256,
                            256, NAN };
    /* The gradient passes inside and at the bounds themselves (torch.clamp's rule), and
     * where the value is NaN, whose output is NaN anyway. */
    const float pass[N] = { 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1 };
    const float seed_v[N] = { 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3 };
    int64_t n = N;
    gan_tensor *a = make(dt, 1, &n, x);
    gan_tensor_set_requires_grad(a, 1);
    gan_tensor *y = gan_clamp(CTX, a, -256.0f, 256.0f);
    ok();
    ck_assert_int_eq(gan_tensor_dtype(y), dt);
    float got[N], g[N];
    fetch(y, got, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(same_bits(got[i], want[i]), "%s: clamp(%g) = %g, want %g",
                      gan_dtype_name(dt), (double)x[i], (double)got[i], (double)want[i]);
    gan_tensor *seed = make(dt, 1, &n, seed_v), *ga;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, &seed, 1, &a, &ga, 0), GAN_OK);
    ck_assert_int_eq(gan_tensor_dtype(ga), dt);
    fetch(ga, g, N);
    for (int i = 0; i < N; i++)
        ck_assert_msg(g[i] == 3.0f * pass[i], "%s: gradient at %g is %g, want %g",
                      gan_dtype_name(dt), (double)x[i], (double)g[i], 3.0 * pass[i]);
}
END_TEST

/* Bounds of either sign, and bounds that are not on the dtype's grid, which are rounded
 * to it first: FP16 holds 300 but not 300.1, BF16 holds 256 but not 257. */
START_TEST(test_bounds)
{
    int64_t n = 4;
    const float x[4] = { -2.0f, 0.5f, 2.0f, 3.5f };
    float got[4];
    fetch(gan_clamp(CTX, make(GAN_F32, 1, &n, x), 0.75f, 2.0f), got, 4);
    ck_assert_float_eq(got[0], 0.75f);
    ck_assert_float_eq(got[1], 0.75f);
    ck_assert_float_eq(got[2], 2.0f);
    ck_assert_float_eq(got[3], 2.0f);
    fetch(gan_clamp(CTX, make(GAN_F32, 1, &n, x), -3.0f, -1.0f), got, 4);
    ck_assert_float_eq(got[0], -2.0f);
    ck_assert_float_eq(got[3], -1.0f);
    /* lo = hi: everything becomes that one value. */
    fetch(gan_clamp(CTX, make(GAN_F32, 1, &n, x), 0.5f, 0.5f), got, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(got[i], 0.5f);

    const float big[4] = { 300.0f, 300.25f, 301.0f, -301.0f };
    fetch(gan_clamp(CTX, make(GAN_F16, 1, &n, big), -300.1f, 300.1f), got, 4);
    ck_assert_float_eq(got[0], 300.0f);
    ck_assert_float_eq(got[1], 300.0f);
    ck_assert_float_eq(got[2], 300.0f);
    ck_assert_float_eq(got[3], -300.0f);
    const float b16[4] = { 256.0f, 264.0f, -264.0f, 248.0f };
    fetch(gan_clamp(CTX, make(GAN_BF16, 1, &n, b16), -257.0f, 257.0f), got, 4);
    ck_assert_float_eq(got[0], 256.0f);
    ck_assert_float_eq(got[1], 256.0f);
    ck_assert_float_eq(got[2], -256.0f);
    ck_assert_float_eq(got[3], 248.0f);
    ok();
}
END_TEST

START_TEST(test_refusals)
{
    int64_t n = 2;
    const float x[2] = { 1, 2 };
    gan_tensor *a = make(GAN_F32, 1, &n, x);
    ck_assert_ptr_null(gan_clamp(CTX, a, 1.0f, -1.0f));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "gan_clamp: bounds [1, -1]"));
    gan_ctx_clear_error(CTX);
    ck_assert_ptr_null(gan_clamp(CTX, a, NAN, 1.0f));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    ck_assert_ptr_null(gan_clamp(CTX, NULL, -1.0f, 1.0f));
    gan_ctx_clear_error(CTX);

    ck_assert_int_eq(gan_ctx_set_clamp(CTX, -1.0f), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, INFINITY), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, NAN), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    ck_assert_float_eq(gan_ctx_clamp(CTX), 0.0f);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 256.0f), GAN_OK);
    ck_assert_float_eq(gan_ctx_clamp(CTX), 256.0f);
}
END_TEST

/* ------------------------------------------------------------------ the policy's clamp */

/* x [2, 3] and w [3, 2]: x·w is [[5, −5], [2, −0.5]], so a limit of 4 clamps row 0. */
static const float xv[6] = { 1, 2, 0, 0, 0.5f, 0.5f };
static const float wv[6] = { 1, -1, 2, -2, 2, 1 };

static gan_tensor *leaf(enum gan_dtype dt, int nd, const int64_t *d, const float *v)
{
    gan_tensor *t = make(dt, nd, d, v);
    gan_tensor_set_requires_grad(t, 1);
    return t;
}

/* The last op on the tape. */
static const char *last_op(void)
{
    struct gan_tape_entry e;
    size_t n = gan_ctx_tape_length(CTX);
    ck_assert_uint_gt(n, 0);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, n - 1, &e, sizeof e), GAN_OK);
    return e.op;
}

/* 0: fp16 O1, 1: fp16 O2, 2: bf16 O1, 3: bf16 O2. */
START_TEST(test_gemm_results_clamped)
{
    enum gan_dtype mode = _i < 2 ? GAN_F16 : GAN_BF16;
    enum gan_precision_level level = _i % 2 ? GAN_PRECISION_O2 : GAN_PRECISION_O1;
    int64_t xd[2] = { 2, 3 }, wd[2] = { 3, 2 }, wtd[2] = { 2, 3 };
    float got[4];
    policy(mode, level);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 4.0f), GAN_OK);
    gan_tensor *x = leaf(GAN_F32, 2, xd, xv), *w = leaf(GAN_F32, 2, wd, wv);

    gan_tensor *y = gan_matmul(CTX, x, w, 0, 0);
    ck_assert_str_eq(last_op(), "gan_clamp");
    ck_assert_int_eq(gan_tensor_dtype(y), mode);
    fetch(y, got, 4);
    ck_assert_float_eq(got[0], 4.0f);
    ck_assert_float_eq(got[1], -4.0f);
    ck_assert_float_eq(got[2], 2.0f);
    ck_assert_float_eq(got[3], -0.5f);

    /* gan_linear with wᵀ stored as [out, in] and a bias (1, −1): 6, −6, 3, −1.5. Its
     * result is 16 bit at O2 and FP32 at O1 (the bias add is FP32 there), which the
     * clamp leaves alone. */
    float wt[6];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            wt[c * 3 + r] = wv[r * 2 + c];
    int64_t bd = 2;
    const float bv[2] = { 1, -1 };
    gan_tensor *lin = gan_linear(CTX, x, make(GAN_F32, 2, wtd, wt), make(GAN_F32, 1, &bd, bv));
    fetch(lin, got, 4);
    if (level == GAN_PRECISION_O2) {
        ck_assert_int_eq(gan_tensor_dtype(lin), mode);
        ck_assert_float_eq(got[0], 4.0f);
        ck_assert_float_eq(got[1], -4.0f);
    } else {
        ck_assert_int_eq(gan_tensor_dtype(lin), GAN_F32);
        ck_assert_float_eq(got[0], 6.0f);
        ck_assert_float_eq(got[1], -6.0f);
    }
    ck_assert_float_eq(got[2], 3.0f);
    ck_assert_float_eq(got[3], -1.5f);

    /* A 1×1 convolution over 1×1 images is the same product; so is its transpose with
     * w as [c_in, c_out, 1, 1]. */
    int64_t x4[4] = { 2, 3, 1, 1 }, w4[4] = { 2, 3, 1, 1 }, wt4[4] = { 3, 2, 1, 1 };
    gan_tensor *cv = gan_conv2d(CTX, make(GAN_F32, 4, x4, xv), make(GAN_F32, 4, w4, wt), 1, 0);
    fetch(cv, got, 4);
    ck_assert_float_eq(got[0], 4.0f);
    ck_assert_float_eq(got[1], -4.0f);
    ck_assert_float_eq(got[3], -0.5f);
    gan_tensor *tr = gan_conv2d_transpose(CTX, make(GAN_F32, 4, x4, xv),
                                          make(GAN_F32, 4, wt4, wv), 1, 0, 0);
    fetch(tr, got, 4);
    ck_assert_float_eq(got[0], 4.0f);
    ck_assert_float_eq(got[1], -4.0f);
    ck_assert_float_eq(got[2], 2.0f);

    /* An FP32 scope computes in FP32 and is not clamped; neither is mode fp32. */
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "head"), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "head"), GAN_OK);
    fetch(gan_matmul(CTX, x, w, 0, 0), got, 4);
    gan_ctx_scope_pop(CTX);
    ck_assert_float_eq(got[0], 5.0f);
    ck_assert_str_eq(last_op(), "gan_matmul");
    policy(GAN_F32, level);
    fetch(gan_matmul(CTX, x, w, 0, 0), got, 4);
    ck_assert_float_eq(got[0], 5.0f);
    /* Off again: the 16-bit product is 5 again. */
    policy(mode, level);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 0.0f), GAN_OK);
    fetch(gan_matmul(CTX, x, w, 0, 0), got, 4);
    ck_assert_float_eq(got[0], 5.0f);
    ck_assert_str_eq(last_op(), "gan_matmul");
    ok();
}
END_TEST

/* An FP32 shadow of a 16-bit pass (debug level 2) clamps where that pass did: a product
 * and a convolution, gan_linear without a bias at O1 and with one at O2, nothing in an
 * FP32 scope, nothing once it ends. */
START_TEST(test_shadow_clamps_where_16_bit_did)
{
    enum gan_precision_level level = _i ? GAN_PRECISION_O2 : GAN_PRECISION_O1;
    int64_t xd[2] = { 2, 3 }, wd[2] = { 3, 2 }, wtd[2] = { 2, 3 }, bd = 2;
    float wt[6], got[4];
    const float bv[2] = { 1, -1 };
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            wt[c * 3 + r] = wv[r * 2 + c];
    policy(GAN_F32, level);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 4.0f), GAN_OK);
    gan_ctx_clamp_as(CTX, GAN_BF16, level);
    gan_tensor *x = leaf(GAN_F32, 2, xd, xv), *w = leaf(GAN_F32, 2, wd, wv);
    gan_tensor *wtt = make(GAN_F32, 2, wtd, wt), *b = make(GAN_F32, 1, &bd, bv);
    gan_tensor *y = gan_matmul(CTX, x, w, 0, 0);
    ck_assert_int_eq(gan_tensor_dtype(y), GAN_F32);
    fetch(y, got, 4);
    ck_assert_float_eq(got[0], 4.0f);
    ck_assert_float_eq(got[1], -4.0f);
    fetch(gan_linear(CTX, x, wtt, NULL), got, 4);
    ck_assert_float_eq(got[0], 4.0f);
    fetch(gan_linear(CTX, x, wtt, b), got, 4);
    ck_assert_float_eq(got[0], level == GAN_PRECISION_O2 ? 4.0f : 6.0f);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "head"), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "head"), GAN_OK);
    fetch(gan_matmul(CTX, x, w, 0, 0), got, 4);
    gan_ctx_scope_pop(CTX);
    ck_assert_float_eq(got[0], 5.0f);
    gan_ctx_clamp_as(CTX, GAN_F32, level);
    fetch(gan_matmul(CTX, x, w, 0, 0), got, 4);
    ck_assert_float_eq(got[0], 5.0f);
    ok();
}
END_TEST

/* The products a backward pass runs are gradients, not activations: never clamped. With
 * y = x·w seeded with 100, dw = xᵀ·(100·mask) has entries of 150 where they pass. */
START_TEST(test_backward_not_clamped)
{
    int64_t xd[2] = { 2, 3 }, wd[2] = { 3, 2 }, yd[2] = { 2, 2 };
    const float s[4] = { 100, 100, 100, 100 };
    float dw[6];
    policy(GAN_F16, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 4.0f), GAN_OK);
    gan_tensor *x = leaf(GAN_F32, 2, xd, xv), *w = leaf(GAN_F32, 2, wd, wv);
    gan_tensor *y = gan_matmul(CTX, x, w, 0, 0), *seed = make(GAN_F16, 2, yd, s), *g;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, &seed, 1, &w, &g, 0), GAN_OK);
    fetch(g, dw, 6);
    /* Row 0 of y (5, −5) was clamped: only row 1 (x = 0, 0.5, 0.5) passes 100. */
    const float want[6] = { 0, 0, 50, 50, 50, 50 };
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(dw[i], want[i]);
    /* With a larger seed, row 1's gradient is 0.5·3000 = 1500, well past the limit. */
    const float s2[4] = { 3000, 3000, 3000, 3000 };
    y = gan_matmul(CTX, x, w, 0, 0);
    seed = make(GAN_F16, 2, yd, s2);
    gan_tensor *gx;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, &seed, 1, &w, &g, 0), GAN_OK);
    fetch(g, dw, 6);
    ck_assert_float_eq(dw[2], 1500.0f);
    /* dx = (3000·mask)·wᵀ: row 1 is 3000·(1 − 1, 2 − 2, 2 + 1) = (0, 0, 9000). */
    y = gan_matmul(CTX, x, w, 0, 0);
    ck_assert_int_eq(gan_grad(CTX, 1, &y, &seed, 1, &x, &gx, 0), GAN_OK);
    float dx[6];
    fetch(gx, dx, 6);
    ck_assert_float_eq(dx[5], 9000.0f);
    ck_assert_float_eq(dx[0], 0.0f);
    ok();
}
END_TEST

/* A little critic, x [4, 3] → fc0 [3, 5] → leaky ReLU → fc1 [5, 1], and the gradient
 * penalty's double backward through it: the policy's clamp gives the same bits as the
 * same network with gan_clamp written after each product and the clamp off. */
static const float cx[12] = { 1.5f, -2, 0.5f, 3, 1, -1, -2.5f, 0.25f, 2, 0.75f, -3, 1 };
static const float cw0[15] = { 1, 2, -1.5f, 0.5f, 3, -2, 1, 2.5f, -1, 0.25f, 1.5f, -0.5f,
                               2, 1, -3 };
static const float cw1[5] = { 0.45f, -0.6f, 0.225f, 0.3f, -0.375f };

static gan_tensor *critic(gan_tensor *x, gan_tensor *w0, gan_tensor *w1, int by_hand)
{
    gan_tensor *h = gan_matmul(CTX, x, w0, 0, 0);
    if (by_hand)
        h = gan_clamp(CTX, h, -4.0f, 4.0f);
    gan_tensor *y = gan_matmul(CTX, gan_leaky_relu(CTX, h, 0.2f), w1, 0, 0);
    return by_hand ? gan_clamp(CTX, y, -4.0f, 4.0f) : y;
}

/* Σ (‖∇ₓ D(x)‖² per row) and its gradient with respect to w0 and w1, into g (20). */
static void penalty_grads(int by_hand, float *g, float *d)
{
    int64_t xd[2] = { 4, 3 }, w0d[2] = { 3, 5 }, w1d[2] = { 5, 1 };
    gan_tensor *x = leaf(GAN_F32, 2, xd, cx);
    gan_tensor *w0 = leaf(GAN_F32, 2, w0d, cw0), *w1 = leaf(GAN_F32, 2, w1d, cw1);
    gan_tensor *y = critic(x, w0, w1, by_hand);
    fetch(y, d, 4);
    gan_tensor *s = gan_sum(CTX, y, GAN_ALL_AXES, 0), *gx;
    ck_assert_int_eq(gan_grad(CTX, 1, &s, NULL, 1, &x, &gx, 1), GAN_OK);
    gan_tensor *p = gan_sum(CTX, gan_square(CTX, gx), GAN_ALL_AXES, 0);
    gan_tensor *ws[2] = { w0, w1 }, *gw[2];
    ck_assert_msg(gan_grad(CTX, 1, &p, NULL, 2, ws, gw, 0) == GAN_OK, "%s", gan_ctx_error(CTX));
    fetch(gw[0], g, 15);
    fetch(gw[1], g + 15, 5);
    gan_ctx_step_end(CTX);
}

START_TEST(test_policy_is_gan_clamp)
{
    float by_policy[20], by_hand[20], d_policy[4], d_hand[4];
    policy(GAN_F16, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 4.0f), GAN_OK);
    penalty_grads(0, by_policy, d_policy);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 0.0f), GAN_OK);
    penalty_grads(1, by_hand, d_hand);
    int clamped = 0, reached = 0;
    for (int i = 0; i < 4; i++) {
        ck_assert(same_bits(d_policy[i], d_hand[i]));
        clamped += fabsf(d_policy[i]) == 4.0f;
    }
    for (int i = 0; i < 20; i++) {
        ck_assert_msg(same_bits(by_policy[i], by_hand[i]), "gradient %d: %g by the policy, "
                      "%g by hand", i, (double)by_policy[i], (double)by_hand[i]);
        reached += by_policy[i] != 0.0f;
    }
    /* The case is one where the clamp matters and the penalty still has gradients. */
    ck_assert_int_gt(clamped, 0);
    ck_assert_int_gt(reached, 5);
    ok();
}
END_TEST

/* The count: values beyond the limit, in the scopes the pattern matches, while on. */
START_TEST(test_count)
{
    int64_t xd[2] = { 2, 3 }, wd[2] = { 3, 2 };
    uint64_t changed = 99, seen = 99;
    policy(GAN_F16, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_set_clamp(CTX, 4.0f), GAN_OK);
    gan_tensor *x = make(GAN_F32, 2, xd, xv), *w = make(GAN_F32, 2, wd, wv);
    /* Off: nothing counted, however much is clamped. */
    gan_matmul(CTX, x, w, 0, 0);
    gan_ctx_clamp_count_stop(CTX, &changed, &seen);
    ck_assert_uint_eq(changed, 0);
    ck_assert_uint_eq(seen, 0);

    ck_assert_int_eq(gan_ctx_clamp_count_start(CTX, "critic"), GAN_OK);
    gan_ctx_scope_push(CTX, "critic");
    gan_matmul(CTX, x, w, 0, 0);                            /* 5 and −5 change */
    gan_ctx_scope_pop(CTX);
    gan_ctx_scope_push(CTX, "penalty");
    gan_ctx_scope_push(CTX, "critic");
    gan_ctx_scope_push(CTX, "fc0");
    gan_ctx_no_grad_push(CTX);                              /* counted under no-grad too */
    gan_matmul(CTX, x, w, 0, 0);
    gan_ctx_no_grad_pop(CTX);
    gan_ctx_scope_pop(CTX);
    gan_ctx_scope_pop(CTX);
    gan_ctx_scope_pop(CTX);
    gan_ctx_scope_push(CTX, "generator");
    gan_matmul(CTX, x, w, 0, 0);                            /* another network's */
    gan_ctx_scope_pop(CTX);
    gan_matmul(CTX, x, w, 0, 0);                            /* the top level */
    ok();
    gan_ctx_clamp_count_stop(CTX, &changed, &seen);
    ck_assert_uint_eq(changed, 4);
    ck_assert_uint_eq(seen, 8);

    /* Every scope: a value at the limit or NaN is not changed; ±inf and beyond are. */
    const float v[5] = { 4.0f, -4.0f, INFINITY, NAN, -4.5f };
    int64_t vd[2] = { 5, 1 }, id[2] = { 1, 1 };
    const float ident = 1.0f;
    ck_assert_int_eq(gan_ctx_clamp_count_start(CTX, NULL), GAN_OK);
    gan_tensor *y = gan_matmul(CTX, make(GAN_F16, 2, vd, v), make(GAN_F32, 2, id, &ident), 0, 0);
    gan_ctx_clamp_count_stop(CTX, &changed, &seen);
    ok();
    ck_assert_uint_eq(changed, 2);
    ck_assert_uint_eq(seen, 5);
    float got[5];
    fetch(y, got, 5);
    ck_assert_float_eq(got[2], 4.0f);
    ck_assert(isnan(got[3]));
    ck_assert_float_eq(got[4], -4.0f);
    /* Stopped, it keeps its totals and counts nothing more. */
    gan_ctx_clamp_count_stop(CTX, &changed, &seen);
    ck_assert_uint_eq(changed, 2);
    gan_matmul(CTX, x, w, 0, 0);
    gan_ctx_clamp_count_stop(CTX, &changed, &seen);
    ck_assert_uint_eq(changed, 2);
}
END_TEST

static Suite *clamp_suite(void)
{
    Suite *s = suite_create("clamp");
    TCase *tc = tcase_create("gan_clamp");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_values_and_gradient, 0, 3);
    tcase_add_test(tc, test_bounds);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    tc = tcase_create("policy");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_gemm_results_clamped, 0, 4);
    tcase_add_loop_test(tc, test_shadow_clamps_where_16_bit_did, 0, 2);
    tcase_add_test(tc, test_backward_not_clamped);
    tcase_add_test(tc, test_policy_is_gan_clamp);
    tcase_add_test(tc, test_count);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(clamp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
