/* SPDX-License-Identifier: MIT */
/* check_fp8_kernels.c — FP8 is storage only, so far: every CPU kernel but the casts and
 * the byte copies refuses an FP8 operand with one line naming its type and the types it
 * takes, and leaves the output untouched. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"

static struct test_host *host_of(gan_backend *be)
{
    return (struct test_host *)be->host->ctx;
}

static gan_backend *be;
static gan_buffer *f8, *f32, *out;
static const float ones[64] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };

static void setup(void)
{
    be = cpu_fixture_new(NULL);
    f8 = cpu_fixture_buffer(be, 64, ones);
    f32 = cpu_fixture_buffer(be, 64, ones);
    out = cpu_fixture_buffer(be, 64, ones);
}

static void teardown(void)
{
    cpu_buffer_free(be, f8);
    cpu_buffer_free(be, f32);
    cpu_buffer_free(be, out);
    cpu_fixture_free(be);
}

/* The call was refused as unsupported, said so naming the FP8 type, and wrote nothing. */
static void assert_refused(gan_status st, enum gan_dtype dt, const char *kernel)
{
    ck_assert_msg(st == GAN_ERR_UNSUPPORTED, "%s with %s: status %d, message \"%s\"", kernel,
                  gan_dtype_name(dt), (int)st, host_of(be)->last_error);
    ck_assert_msg(strstr(host_of(be)->last_error, gan_dtype_name(dt)) &&
                      strstr(host_of(be)->last_error, "BF16"),
                  "%s: the message \"%s\" does not name %s and the types it takes", kernel,
                  host_of(be)->last_error, gan_dtype_name(dt));
    float now[64];
    ck_assert_int_eq(cpu_download(be, now, out, 0, sizeof now), GAN_OK);
    ck_assert_mem_eq(now, ones, sizeof now);
}

static struct gan_operand operand(gan_buffer *buf, enum gan_dtype dt)
{
    struct gan_operand o = { .buf = buf, .offset = 0, .dtype = dt, .stride = { 8, 1 } };
    return o;
}

/* Element-wise and reduction kernels, with FP8 as an input and as the output. */
START_TEST(test_elementwise_reduce)
{
    const enum gan_dtype dt = _i ? GAN_F8E5M2 : GAN_F8E4M3;
    const struct gan_shape shape = { 2, { 4, 8 } };
    struct gan_operand x8 = operand(f8, dt), x = operand(f32, GAN_F32), y = operand(out, GAN_F32);
    struct gan_operand y8 = operand(out, dt);
    assert_refused(cpu_unary(be, GAN_UNARY_RELU, 0.0f, &shape, &x8, &y), dt, "unary");
    /* COPY between dtypes is a strided cast, and a kernel: it takes the float types */
    assert_refused(cpu_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &x8, &y), dt, "unary copy");
    assert_refused(cpu_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &x, &y8), dt, "unary copy out");
    assert_refused(cpu_binary(be, GAN_BINARY_ADD, &shape, &x, &x8, &y), dt, "binary");
    assert_refused(cpu_binary(be, GAN_BINARY_MUL, &shape, &x, &x, &y8), dt, "binary out");
    struct gan_operand r = operand(out, GAN_F32);
    r.stride[1] = 0;
    assert_refused(cpu_reduce(be, GAN_REDUCE_SUM, &shape, &x8, 2u, &r), dt, "reduce");
}
END_TEST

/* The product, the convolution, Adam, the gradient statistics and the random numbers. */
START_TEST(test_products_and_the_rest)
{
    const enum gan_dtype dt = _i ? GAN_F8E5M2 : GAN_F8E4M3;
    struct gan_gemm g = {
        .m = 4, .n = 4, .k = 4, .alpha = 1.0f, .beta = 0.0f,
        .a = { f8, 0, dt }, .b = { f32, 0, GAN_F32 }, .c = { out, 0, GAN_F32 },
        .lda = 4, .ldb = 4, .ldc = 4, .batch = 1,
    };
    assert_refused(cpu_gemm(be, &g), dt, "gemm");

    struct gan_conv2d c = {
        .n = 1, .c_in = 1, .h_in = 3, .w_in = 3, .c_out = 1, .kh = 2, .kw = 2,
        .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1, .h_out = 2,
        .w_out = 2, .dtype = dt,
    };
    struct gan_ref cx = { f8, 0, dt }, cw = { f8, 16, dt }, cy = { out, 0, dt };
    assert_refused(cpu_conv2d_forward(be, &c, &cx, &cw, 0.0f, &cy), dt, "conv2d_forward");

    struct gan_adam p = { .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .step = 1, .grad_scale = 1.0f };
    struct gan_ref param = { out, 0, GAN_F32 }, grad = { f8, 0, dt };
    struct gan_ref m = { f32, 0, GAN_F32 }, v = { f32, 16, GAN_F32 }, none = { 0 };
    assert_refused(cpu_adam(be, &p, 16, &param, &grad, &m, &v, &none), dt, "adam");

    struct gan_grad_stats stats;
    struct gan_ref sx = { f8, 0, dt }, unscaled = { out, 0, GAN_F32 };
    assert_refused(cpu_grad_stats(be, 16, &sx, 1.0f, &unscaled, &stats), dt, "grad_stats");

    struct gan_ref ry = { out, 0, dt };
    assert_refused(cpu_rng_uniform(be, 16, 1, 0, 0.0f, 1.0f, &ry), dt, "rng_uniform");
    assert_refused(cpu_rng_normal(be, 16, 1, 0, 0.0f, 1.0f, &ry), dt, "rng_normal");

    /* the byte copy and the cast take it */
    ck_assert_int_eq(cpu_copy(be, f32, 0, f8, 0, 16), GAN_OK);
    struct gan_ref from = { f32, 0, GAN_F32 }, to = { f8, 0, dt };
    ck_assert_int_eq(cpu_cast(be, 16, &from, &to, NULL), GAN_OK);
}
END_TEST

static Suite *fp8_kernels_suite(void)
{
    Suite *s = suite_create("fp8_kernels");
    TCase *tc = tcase_create("refused");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_elementwise_reduce, 0, 2);
    tcase_add_loop_test(tc, test_products_and_the_rest, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fp8_kernels_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
