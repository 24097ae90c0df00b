/* SPDX-License-Identifier: MIT */
/* check_clamp.c — gan_clamp's exact values and gradients at and beyond its bounds in each
 * dtype. First and second derivatives against finite differences are in check_autograd. */
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
