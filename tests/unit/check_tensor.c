/* SPDX-License-Identifier: MIT */
/* check_tensor.c — tensors on the CPU backend module: creation, host round trips,
 * broadcasting rules and their errors, step memory, and memory staying flat over steps. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"

#define CTX (fx.ctx)

static void assert_ok(void)
{
    ck_assert_msg(gan_ctx_status(CTX) == GAN_OK, "context error: %s", gan_ctx_error(CTX));
}

/* ------------------------------------------------------------------ creation */

START_TEST(test_new_queries)
{
    int64_t dims[3] = { 2, 3, 5 };
    gan_tensor *t = gan_tensor_new(CTX, GAN_F32, 3, dims);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gan_tensor_ndim(t), 3);
    ck_assert_int_eq(gan_tensor_dim(t, 0), 2);
    ck_assert_int_eq(gan_tensor_dim(t, -1), 5);
    ck_assert_int_eq(gan_tensor_dim(t, -3), 2);
    ck_assert_int_eq(gan_tensor_numel(t), 30);
    ck_assert_int_eq(gan_tensor_dtype(t), GAN_F32);
    ck_assert_int_eq(gan_tensor_requires_grad(t), 0);
    assert_ok();
    ck_assert_int_eq(gan_tensor_dim(t, 3), -1);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "axis 3"));
    gan_ctx_clear_error(CTX);
    ck_assert_str_eq(gan_ctx_error(CTX), "");

    gan_tensor *s = gan_tensor_full(CTX, GAN_F32, 0, NULL, 2.5f);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(gan_tensor_ndim(s), 0);
    ck_assert_int_eq(gan_tensor_numel(s), 1);
    float v = 0;
    ck_assert_int_eq(gan_tensor_to_host(CTX, s, &v, 1), GAN_OK);
    ck_assert_float_eq(v, 2.5f);
}
END_TEST

START_TEST(test_new_invalid)
{
    int64_t seven[7] = { 1, 1, 1, 1, 1, 1, 1 };
    ck_assert_ptr_null(gan_tensor_new(CTX, GAN_F32, 7, seven));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "ndim is 7"));
    gan_ctx_clear_error(CTX);

    int64_t neg[2] = { 3, -1 };
    ck_assert_ptr_null(gan_tensor_new(CTX, GAN_F32, 2, neg));
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "[3, -1]"));
    gan_ctx_clear_error(CTX);

    ck_assert_ptr_null(gan_tensor_new(CTX, (enum gan_dtype)42, 1, neg));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);

    int64_t two[1] = { 2 };
    ck_assert_ptr_null(gan_tensor_uniform(CTX, GAN_F32, 1, two, 1, 0, 1.0f, 0.0f));
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "low"));
}
END_TEST

/* Values exactly representable in every float type, and values that must round. */
START_TEST(test_host_round_trip)
{
    static const enum gan_dtype types[] = { GAN_F32, GAN_F16, GAN_BF16, GAN_I32 };
    float in[6] = { 0.0f, -1.5f, 3.0f, 0.25f, -1024.0f, 7.0f };
    int64_t dims[2] = { 2, 3 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        gan_tensor *t = gan_tensor_from_host(CTX, types[i], 2, dims, in);
        ck_assert_ptr_nonnull(t);
        float out[6];
        ck_assert_int_eq(gan_tensor_to_host(CTX, t, out, 6), GAN_OK);
        for (int k = 0; k < 6; k++) {
            /* Integers keep the integer part (C's conversion, towards zero). */
            float want = types[i] == GAN_I32 ? (float)(int32_t)in[k] : in[k];
            ck_assert_msg(out[k] == want, "dtype %s element %d: %g != %g",
                          gan_dtype_name(types[i]), k, (double)out[k], (double)want);
        }
    }
    /* 1/3 rounds to the nearest FP16 (0x3555 = 0.333251953125) and BF16 (0x3eab =
     * 0.333984375); 70000 overflows FP16 to inf. */
    float third[2] = { 1.0f / 3.0f, 70000.0f }, out[2];
    int64_t n2[1] = { 2 };
    gan_tensor *h = gan_tensor_from_host(CTX, GAN_F16, 1, n2, third);
    ck_assert_int_eq(gan_tensor_to_host(CTX, h, out, 2), GAN_OK);
    ck_assert_float_eq(out[0], 0.333251953125f);
    ck_assert(isinf(out[1]) && out[1] > 0);
    gan_tensor *b = gan_tensor_from_host(CTX, GAN_BF16, 1, n2, third);
    ck_assert_int_eq(gan_tensor_to_host(CTX, b, out, 2), GAN_OK);
    ck_assert_float_eq(out[0], 0.333984375f);
    assert_ok();
}
END_TEST

START_TEST(test_host_errors)
{
    int64_t dims[1] = { 4 };
    float v[4] = { 1, 2, 3, 4 };
    gan_tensor *t = gan_tensor_from_host(CTX, GAN_F32, 1, dims, v);
    ck_assert_int_eq(gan_tensor_to_host(CTX, t, v, 3), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "count is 3"));
    gan_ctx_clear_error(CTX);

    /* The result of a recorded op cannot be overwritten behind the tape's back. */
    gan_tensor *p = gan_tensor_new_persistent(CTX, GAN_F32, 1, dims);
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, p, v, 4), GAN_OK);
    gan_tensor_set_requires_grad(p, 1);
    gan_tensor *y = gan_scale(CTX, p, 2.0f);
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, y, v, 4), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "recorded op"));
    gan_ctx_clear_error(CTX);

    int64_t other[2] = { 2, 2 };
    gan_tensor *u = gan_tensor_new(CTX, GAN_F32, 2, other);
    ck_assert_int_eq(gan_tensor_copy(CTX, u, t), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "must match"));
    gan_ctx_clear_error(CTX);
}
END_TEST

START_TEST(test_copy_casts)
{
    int64_t dims[1] = { 3 };
    float v[3] = { 1.0f / 3.0f, -2.0f, 1e-8f }, out[3];
    gan_tensor *src = gan_tensor_from_host(CTX, GAN_F32, 1, dims, v);
    gan_tensor *dst = gan_tensor_new_persistent(CTX, GAN_F16, 1, dims);
    ck_assert_int_eq(gan_tensor_copy(CTX, dst, src), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, dst, out, 3), GAN_OK);
    ck_assert_float_eq(out[0], 0.333251953125f);
    ck_assert_float_eq(out[1], -2.0f);
    ck_assert_float_eq(out[2], 0.0f);     /* below half of FP16's smallest subnormal */
    gan_tensor *same = gan_tensor_new(CTX, GAN_F32, 1, dims);
    ck_assert_int_eq(gan_tensor_copy(CTX, same, src), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, same, out, 3), GAN_OK);
    ck_assert_mem_eq(out, v, sizeof v);
}
END_TEST

/* FP8 tensors: from the host and back (each value rounded once, the overflow to NaN in
 * E4M3 and to inf in E5M2), copies to and from the float types, and no ops. */
START_TEST(test_fp8_tensors)
{
    int64_t dims[1] = { 6 };
    const float v[6] = { 1.0f / 3.0f, -448.0f, 500.0f, 0x1p-10f, 3 * 0x1p-11f, 1e-5f };
    /* E4M3 steps by 2^-5 in [0.25, 0.5): 1/3 is 10.67 steps, so 11 · 2^-5; 2^-10 is
     * the tie between 0 and 2^-9 (to 0), 1.5 · 2^-10 rounds up to 2^-9 */
    const float e4[6] = { 0.34375f, -448.0f, NAN, 0.0f, 0x1p-9f, 0.0f };
    /* E5M2 steps by 2^-4 in [0.25, 0.5): 5.33 steps; 1e-5 is 0.66 of 2^-16 */
    const float e5[6] = { 0.3125f, -448.0f, 512.0f, 0x1p-10f, 3 * 0x1p-11f, 0x1p-16f };
    float out[6];
    for (int k = 0; k < 2; k++) {
        const enum gan_dtype dt = k ? GAN_F8E5M2 : GAN_F8E4M3;
        const float *want = k ? e5 : e4;
        gan_tensor *t = gan_tensor_from_host(CTX, dt, 1, dims, v);
        ck_assert_msg(t != NULL, "%s", gan_ctx_error(CTX));
        ck_assert_int_eq(gan_tensor_dtype(t), dt);
        ck_assert_int_eq(gan_tensor_to_host(CTX, t, out, 6), GAN_OK);
        for (int i = 0; i < 6; i++)
            ck_assert_msg(isnan(want[i]) ? isnan(out[i]) : out[i] == want[i],
                          "%s element %d: %.9g, want %.9g", gan_dtype_name(dt), i,
                          (double)out[i], (double)want[i]);
        /* to F16 exactly, and from F32 rounding as from the host */
        gan_tensor *h = gan_tensor_new(CTX, GAN_F16, 1, dims);
        ck_assert_int_eq(gan_tensor_copy(CTX, h, t), GAN_OK);
        ck_assert_int_eq(gan_tensor_to_host(CTX, h, out, 6), GAN_OK);
        ck_assert_float_eq(out[0], want[0]);
        ck_assert_float_eq(out[4], want[4]);
        gan_tensor *f = gan_tensor_from_host(CTX, GAN_F32, 1, dims, v);
        gan_tensor *back = gan_tensor_new(CTX, dt, 1, dims);
        ck_assert_int_eq(gan_tensor_copy(CTX, back, f), GAN_OK);
        ck_assert_int_eq(gan_tensor_to_host(CTX, back, out, 6), GAN_OK);
        ck_assert_float_eq(out[1], -448.0f);
        ck_assert_float_eq(out[5], want[5]);
        assert_ok();
        /* storage only: an op refuses it */
        ck_assert_ptr_null(gan_relu(CTX, t));
        ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), gan_dtype_name(dt)));
        gan_ctx_clear_error(CTX);
    }
    /* a backend built before ABI 1.5 is given no FP8 tensor */
    gan_ctx_set_backend_abi_minor(CTX, 4);
    ck_assert_ptr_null(gan_tensor_new(CTX, GAN_F8E4M3, 1, dims));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "ABI 1.5 or later"));
    gan_ctx_clear_error(CTX);
    ck_assert_ptr_nonnull(gan_tensor_new(CTX, GAN_BF16, 1, dims));
}
END_TEST

START_TEST(test_random)
{
    int64_t dims[1] = { 4096 };
    gan_tensor *u1 = gan_tensor_uniform(CTX, GAN_F32, 1, dims, 7, 0, -2.0f, 3.0f);
    gan_tensor *u2 = gan_tensor_uniform(CTX, GAN_F32, 1, dims, 7, 0, -2.0f, 3.0f);
    gan_tensor *u3 = gan_tensor_uniform(CTX, GAN_F32, 1, dims, 8, 0, -2.0f, 3.0f);
    gan_tensor *nm = gan_tensor_normal(CTX, GAN_F32, 1, dims, 7, 0, 1.0f, 2.0f);
    ck_assert(u1 && u2 && u3 && nm);
    static float a[4096], b[4096], c[4096];
    ck_assert_int_eq(gan_tensor_to_host(CTX, u1, a, 4096), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, u2, b, 4096), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, u3, c, 4096), GAN_OK);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert(memcmp(a, c, sizeof a) != 0);
    double sum = 0, sq = 0;
    for (int i = 0; i < 4096; i++) {
        ck_assert(a[i] > -2.0f && a[i] < 3.0f);
        sum += a[i];
    }
    ck_assert_double_eq_tol(sum / 4096, 0.5, 0.1);  /* σ of the mean: 5/√12/64 = 0.023 */
    ck_assert_int_eq(gan_tensor_to_host(CTX, nm, a, 4096), GAN_OK);
    sum = 0;
    for (int i = 0; i < 4096; i++) {
        sum += a[i];
        sq += (double)a[i] * a[i];
    }
    double mean = sum / 4096, var = sq / 4096 - mean * mean;
    ck_assert_double_eq_tol(mean, 1.0, 0.15);       /* σ of the mean: 2/64 = 0.031 */
    ck_assert_double_eq_tol(sqrt(var), 2.0, 0.15);
}
END_TEST

/* ------------------------------------------------------------------ broadcasting */

struct bcase {
    int na; int64_t a[4];
    int nb; int64_t b[4];
    int ok;                    /* the shapes broadcast */
    int ny; int64_t y[4];
};

static const struct bcase bcases[] = {
    { 2, { 3, 4 }, 2, { 3, 4 }, 1, 2, { 3, 4 } },
    { 2, { 3, 4 }, 1, { 4 }, 1, 2, { 3, 4 } },
    { 1, { 4 }, 2, { 3, 4 }, 1, 2, { 3, 4 } },
    { 2, { 3, 1 }, 2, { 1, 5 }, 1, 2, { 3, 5 } },
    { 3, { 2, 1, 3 }, 2, { 4, 1 }, 1, 3, { 2, 4, 3 } },
    { 0, { 0 }, 2, { 2, 3 }, 1, 2, { 2, 3 } },
    { 3, { 1, 1, 1 }, 1, { 5 }, 1, 3, { 1, 1, 5 } },
    { 4, { 2, 1, 3, 1 }, 3, { 5, 1, 7 }, 1, 4, { 2, 5, 3, 7 } },
    { 1, { 3 }, 1, { 4 }, 0, 0, { 0 } },
    { 2, { 2, 3 }, 2, { 3, 2 }, 0, 0, { 0 } },
    { 3, { 2, 3, 4 }, 2, { 2, 4 }, 0, 0, { 0 } },
};

/* Element of t (row-major dims tn) reached by result index idx of shape (yn, y). */
static int64_t bindex(int tn, const int64_t *t, int yn, const int64_t *y, int64_t idx)
{
    int64_t off = 0, stride = 1;
    for (int d = yn - 1; d >= 0; d--) {
        int64_t i = idx % y[d];
        idx /= y[d];
        int td = d - (yn - tn);
        if (td >= 0) {
            if (t[td] != 1)
                off += i * stride;
            stride *= t[td];
        }
    }
    return off;
}

static int64_t count(int n, const int64_t *d)
{
    int64_t c = 1;
    for (int i = 0; i < n; i++)
        c *= d[i];
    return c;
}

START_TEST(test_broadcast)
{
    const struct bcase *c = &bcases[_i];
    int64_t na = count(c->na, c->a), nb = count(c->nb, c->b);
    float *av = malloc((size_t)na * sizeof *av), *bv = malloc((size_t)nb * sizeof *bv);
    for (int64_t i = 0; i < na; i++)
        av[i] = (float)(i + 1);
    for (int64_t i = 0; i < nb; i++)
        bv[i] = (float)(100 * (i + 1));
    gan_tensor *a = gan_tensor_from_host(CTX, GAN_F32, c->na, c->a, av);
    gan_tensor *b = gan_tensor_from_host(CTX, GAN_F32, c->nb, c->b, bv);
    gan_tensor *y = gan_add(CTX, a, b);
    gan_tensor *z = gan_mul(CTX, a, b);
    if (!c->ok) {
        ck_assert_ptr_null(y);
        ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
        ck_assert_msg(strstr(gan_ctx_error(CTX), "do not broadcast"), "message: %s",
                      gan_ctx_error(CTX));
        /* The failed result fed on keeps the first message. */
        char first[768];
        snprintf(first, sizeof first, "%s", gan_ctx_error(CTX));
        ck_assert_ptr_null(gan_tanh(CTX, gan_add(CTX, y, a)));
        ck_assert_str_eq(gan_ctx_error(CTX), first);
    } else {
        assert_ok();
        ck_assert_int_eq(gan_tensor_ndim(y), c->ny);
        for (int d = 0; d < c->ny; d++)
            ck_assert_int_eq(gan_tensor_dim(y, d), c->y[d]);
        int64_t ny = count(c->ny, c->y);
        float *yv = malloc((size_t)ny * sizeof *yv), *zv = malloc((size_t)ny * sizeof *zv);
        ck_assert_int_eq(gan_tensor_to_host(CTX, y, yv, (size_t)ny), GAN_OK);
        ck_assert_int_eq(gan_tensor_to_host(CTX, z, zv, (size_t)ny), GAN_OK);
        for (int64_t i = 0; i < ny; i++) {
            float ea = av[bindex(c->na, c->a, c->ny, c->y, i)];
            float eb = bv[bindex(c->nb, c->b, c->ny, c->y, i)];
            ck_assert_float_eq(yv[i], ea + eb);
            ck_assert_float_eq(zv[i], ea * eb);
        }
        free(yv);
        free(zv);
    }
    free(av);
    free(bv);
}
END_TEST

START_TEST(test_result_dtype)
{
    int64_t dims[1] = { 2 };
    float v[2] = { 1, 2 };
    gan_tensor *f32 = gan_tensor_from_host(CTX, GAN_F32, 1, dims, v);
    gan_tensor *f16 = gan_tensor_from_host(CTX, GAN_F16, 1, dims, v);
    gan_tensor *b16 = gan_tensor_from_host(CTX, GAN_BF16, 1, dims, v);
    ck_assert_int_eq(gan_tensor_dtype(gan_add(CTX, f16, f16)), GAN_F16);
    ck_assert_int_eq(gan_tensor_dtype(gan_add(CTX, f16, f32)), GAN_F32);
    ck_assert_int_eq(gan_tensor_dtype(gan_mul(CTX, b16, b16)), GAN_BF16);
    ck_assert_int_eq(gan_tensor_dtype(gan_mul(CTX, b16, f16)), GAN_F32);
    ck_assert_int_eq(gan_tensor_dtype(gan_tanh(CTX, b16)), GAN_BF16);
    gan_tensor *i32 = gan_tensor_from_host(CTX, GAN_I32, 1, dims, v);
    ck_assert_ptr_null(gan_add(CTX, i32, f32));
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_UNSUPPORTED);
}
END_TEST

/* gan_linear's shape refusals, its empty cases, and its dtypes with the policy off
 * (mode fp32): those of gan_add(gan_matmul(x, w, 0, 1), b), values included where the
 * sum is wider than the product (16-bit x and w, an FP32 b: the product rounded to
 * 16 bit, then added in FP32). */
START_TEST(test_linear_shapes_and_dtypes)
{
    float v[12] = { 1, -2, 3, 0.5f, -1, 2, 0.25f, 1.5f, -0.75f, 2, 1, -3 };
    int64_t d23[2] = { 2, 3 }, d42[2] = { 4, 2 }, d43[2] = { 4, 3 }, d3[1] = { 3 };
    int64_t d4[1] = { 4 }, d6[1] = { 6 };
    gan_tensor *x = gan_tensor_from_host(CTX, GAN_F32, 2, d23, v);
    gan_tensor *w = gan_tensor_from_host(CTX, GAN_F32, 2, d43, v);
    gan_tensor *b = gan_tensor_from_host(CTX, GAN_F32, 1, d4, v);
    struct { gan_tensor *x, *w, *b; const char *says; } bad[] = {
        { x, gan_tensor_from_host(CTX, GAN_F32, 2, d42, v), NULL, "with the same in" },
        { gan_tensor_from_host(CTX, GAN_F32, 1, d6, v), w, b, "both must be 2-D" },
        { x, w, gan_tensor_from_host(CTX, GAN_F32, 1, d3, v), "the bias must be [4]" },
        { x, w, gan_tensor_from_host(CTX, GAN_F32, 2, d42, v), "the bias must be [4]" },
    };
    assert_ok();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_ptr_null(gan_linear(CTX, bad[i].x, bad[i].w, bad[i].b));
        ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
        ck_assert_msg(strstr(gan_ctx_error(CTX), bad[i].says), "%zu: %s", i, gan_ctx_error(CTX));
        gan_ctx_clear_error(CTX);
    }

    /* k = 0: every row is b (zeros without one); m = 0: an empty [0, out]. */
    int64_t d20[2] = { 2, 0 }, d40[2] = { 4, 0 }, d03[2] = { 0, 3 };
    gan_tensor *x0 = gan_tensor_new(CTX, GAN_F32, 2, d20), *w0 = gan_tensor_new(CTX, GAN_F32, 2, d40);
    float y[8];
    ck_assert_int_eq(gan_tensor_to_host(CTX, gan_linear(CTX, x0, w0, b), y, 8), GAN_OK);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(y[i], v[i % 4]);
    ck_assert_int_eq(gan_tensor_to_host(CTX, gan_linear(CTX, x0, w0, NULL), y, 8), GAN_OK);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(y[i], 0.0f);
    gan_tensor *e = gan_linear(CTX, gan_tensor_new(CTX, GAN_F32, 2, d03), w, b);
    assert_ok();
    ck_assert_int_eq(gan_tensor_dim(e, 0), 0);
    ck_assert_int_eq(gan_tensor_dim(e, 1), 4);

    /* Mixed dtypes: the composition's result dtype, and its values. */
    static const enum gan_dtype mix[][3] = {
        { GAN_F16, GAN_F16, GAN_F32 }, { GAN_F32, GAN_F32, GAN_F16 }, { GAN_BF16, GAN_BF16, GAN_BF16 },
        { GAN_F16, GAN_BF16, GAN_F16 }, { GAN_F16, GAN_F16, GAN_F16 },
    };
    for (size_t i = 0; i < sizeof mix / sizeof mix[0]; i++) {
        float xv[6] = { 1.2345f, -2.5f, 0.3333f, 3.75f, 1.0f / 7, -0.625f }, yl[8], yc[8];
        gan_tensor *tx = gan_tensor_from_host(CTX, mix[i][0], 2, d23, xv);
        gan_tensor *tw = gan_tensor_from_host(CTX, mix[i][1], 2, d43, v);
        gan_tensor *tb = gan_tensor_from_host(CTX, mix[i][2], 1, d4, v + 8);
        gan_tensor *yl_t = gan_linear(CTX, tx, tw, tb);
        gan_tensor *yc_t = gan_add(CTX, gan_matmul(CTX, tx, tw, 0, 1), tb);
        assert_ok();
        ck_assert_int_eq(gan_tensor_dtype(yl_t), gan_tensor_dtype(yc_t));
        ck_assert_int_eq(gan_tensor_to_host(CTX, yl_t, yl, 8), GAN_OK);
        ck_assert_int_eq(gan_tensor_to_host(CTX, yc_t, yc, 8), GAN_OK);
        /* Where the product is rounded apart from the sum (its dtype is narrower than
         * the result's), the two agree exactly; otherwise within one rounding. */
        int apart = gan_tensor_dtype(yl_t) == GAN_F32 && mix[i][0] == mix[i][1]
                    && mix[i][0] != GAN_F32;
        double u = gan_tensor_dtype(yl_t) == GAN_F32 ? 0x1p-23
                   : gan_tensor_dtype(yl_t) == GAN_F16 ? 0x1p-10 : 0x1p-7;
        for (int k = 0; k < 8; k++) {
            if (apart)
                ck_assert_msg(yl[k] == yc[k], "%zu[%d]: %.9g vs %.9g", i, k, (double)yl[k],
                              (double)yc[k]);
            else
                ck_assert_msg(fabs(yl[k] - yc[k]) <= u * fabs(yc[k]) + 1e-6, "%zu[%d]: %.9g vs "
                              "%.9g", i, k, (double)yl[k], (double)yc[k]);
        }
    }
    gan_ctx_step_end(CTX);
}
END_TEST

/* ------------------------------------------------------------------ steps */

START_TEST(test_step_end)
{
    struct gan_ctx_stats s0, s1, s2;
    int64_t dims[2] = { 4, 5 };
    float v[20];
    for (int i = 0; i < 20; i++)
        v[i] = (float)i - 9.5f;
    gan_tensor *p = gan_tensor_new_persistent(CTX, GAN_F32, 2, dims);
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, p, v, 20), GAN_OK);
    gan_tensor_set_requires_grad(p, 1);
    gan_ctx_get_stats(CTX, &s0);
    ck_assert_uint_eq(s0.persistent_tensors, 1);

    gan_tensor *y = gan_sum(CTX, gan_tanh(CTX, gan_mul(CTX, p, p)), GAN_ALL_AXES, 0);
    gan_tensor *g;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &p, &g, 0), GAN_OK);
    gan_ctx_get_stats(CTX, &s1);
    ck_assert_uint_gt(s1.step_tensors, 3);
    ck_assert_uint_eq(s1.nodes, 3);
    uint64_t allocs = s1.backend_allocs;

    gan_ctx_step_end(CTX);
    gan_ctx_get_stats(CTX, &s2);
    ck_assert_uint_eq(s2.step_tensors, 0);
    ck_assert_uint_eq(s2.nodes, 0);
    ck_assert_uint_eq(s2.persistent_tensors, 1);
    ck_assert_uint_eq(s2.pool_buffers, s1.step_tensors);     /* every step buffer kept */
    ck_assert_uint_eq(s2.device_buffers, s1.device_buffers);
    float out[20];
    ck_assert_int_eq(gan_tensor_to_host(CTX, p, out, 20), GAN_OK);
    ck_assert_mem_eq(out, v, sizeof v);
    ck_assert_int_eq(gan_tensor_requires_grad(p), 1);

    /* The same step again takes every buffer from the pool. */
    y = gan_sum(CTX, gan_tanh(CTX, gan_mul(CTX, p, p)), GAN_ALL_AXES, 0);
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &p, &g, 0), GAN_OK);
    gan_ctx_get_stats(CTX, &s1);
    ck_assert_uint_eq(s1.backend_allocs, allocs);

    /* A step tensor is not freed on its own; a persistent one is. */
    gan_tensor_free(y);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "step tensor"));
    gan_ctx_clear_error(CTX);
    gan_ctx_step_end(CTX);
    gan_tensor_free(p);
    gan_ctx_get_stats(CTX, &s2);
    ck_assert_uint_eq(s2.persistent_tensors, 0);
    gan_ctx_pool_trim(CTX);
    gan_ctx_get_stats(CTX, &s2);
    ck_assert_uint_eq(s2.device_buffers, 0);
    ck_assert_uint_eq(s2.pool_buffers, 0);
}
END_TEST

START_TEST(test_no_grad_nesting)
{
    int64_t dims[1] = { 3 };
    gan_tensor *p = gan_tensor_full(CTX, GAN_F32, 1, dims, 0.5f);
    gan_tensor_set_requires_grad(p, 1);
    gan_ctx_no_grad_push(CTX);
    gan_ctx_no_grad_push(CTX);
    gan_ctx_no_grad_pop(CTX);
    ck_assert_int_eq(gan_tensor_requires_grad(gan_tanh(CTX, p)), 0);
    gan_ctx_no_grad_pop(CTX);
    ck_assert_int_eq(gan_tensor_requires_grad(gan_tanh(CTX, p)), 1);
    assert_ok();
    gan_ctx_no_grad_pop(CTX);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
}
END_TEST

/* The penalty's pattern, many times over: an MLP critic's forward, the input gradient
 * with create_graph, the penalty, and its gradient with respect to the weights. The
 * pool, the spare lists and the device memory must stop growing after the first step. */
#define MEMORY_STEPS 10000

/* One step; *tape gets the number of nodes it recorded. */
static gan_status penalty_step(gan_tensor *w1, gan_tensor *w2, uint64_t step, size_t *tape)
{
    int64_t xd[2] = { 8, 2 };
    gan_tensor *x = gan_tensor_uniform(CTX, GAN_F32, 2, xd, 11, step * 4, -1.0f, 1.0f);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor *h = gan_tanh(CTX, gan_matmul(CTX, x, w1, 0, 0));
    gan_tensor *d = gan_sum(CTX, gan_matmul(CTX, h, w2, 0, 0), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    gan_status st = gan_grad(CTX, 1, &d, NULL, 1, &x, &gx, 1);
    if (st != GAN_OK)
        return st;
    gan_tensor *norm = gan_sqrt(CTX, gan_sum(CTX, gan_square(CTX, gx), 1, 0));
    gan_tensor *pen = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX, norm, -1.0f)),
                               GAN_ALL_AXES, 0);
    gan_tensor *params[2] = { w1, w2 }, *grads[2];
    st = gan_grad(CTX, 1, &pen, NULL, 2, params, grads, 0);
    struct gan_ctx_stats s;
    gan_ctx_get_stats(CTX, &s);
    *tape = s.nodes;
    gan_ctx_step_end(CTX);
    return st;
}

START_TEST(test_memory_flat)
{
    int64_t d1[2] = { 2, 16 }, d2[2] = { 16, 1 };
    gan_tensor *w1 = gan_tensor_new_persistent(CTX, GAN_F32, 2, d1);
    gan_tensor *w2 = gan_tensor_new_persistent(CTX, GAN_F32, 2, d2);
    ck_assert_int_eq(gan_tensor_copy(CTX, w1, gan_tensor_normal(CTX, GAN_F32, 2, d1, 1, 0, 0, 1)),
                     GAN_OK);
    ck_assert_int_eq(gan_tensor_copy(CTX, w2, gan_tensor_normal(CTX, GAN_F32, 2, d2, 2, 0, 0, 1)),
                     GAN_OK);
    gan_tensor_set_requires_grad(w1, 1);
    gan_tensor_set_requires_grad(w2, 1);
    gan_ctx_step_end(CTX);

    struct gan_ctx_stats warm, s;
    size_t tape0 = 0, tape;
    for (uint64_t step = 0; step < 3; step++)
        ck_assert_msg(penalty_step(w1, w2, step, &tape0) == GAN_OK, "%s", gan_ctx_error(CTX));
    gan_ctx_get_stats(CTX, &warm);
    /* Forward (4 nodes), the recorded inner backward (6) and the penalty (6). */
    ck_assert_uint_eq(tape0, 16);
    ck_assert_uint_eq(warm.spare_nodes, tape0);
    for (uint64_t step = 3; step < MEMORY_STEPS; step++) {
        ck_assert_msg(penalty_step(w1, w2, step, &tape) == GAN_OK, "step %llu: %s",
                      (unsigned long long)step, gan_ctx_error(CTX));
        ck_assert_uint_eq(tape, tape0);
        if (step % 1000 == 0 || step == MEMORY_STEPS - 1) {
            gan_ctx_get_stats(CTX, &s);
            ck_assert_uint_eq(s.step_tensors, 0);
            ck_assert_uint_eq(s.nodes, 0);
            ck_assert_uint_eq(s.persistent_tensors, 2);
            ck_assert_uint_eq(s.pool_buffers, warm.pool_buffers);
            ck_assert_uint_eq(s.pool_bytes, warm.pool_bytes);
            ck_assert_uint_eq(s.device_buffers, warm.device_buffers);
            ck_assert_uint_eq(s.device_bytes, warm.device_bytes);
            ck_assert_uint_eq(s.spare_tensors, warm.spare_tensors);
            ck_assert_uint_eq(s.spare_nodes, warm.spare_nodes);
            ck_assert_uint_eq(s.backend_allocs, warm.backend_allocs);
        }
    }
}
END_TEST

/* A model's own refusal reaches the caller, and the first failure of a chain is the
 * one kept: the NULL inputs that follow from it must not overwrite it. */
START_TEST(test_ctx_fail)
{
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_OK);
    ck_assert_int_eq(gan_ctx_fail(CTX, GAN_ERR_INVALID, "model %s: width %d", "mlp", -1),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_str_eq(gan_ctx_error(CTX), "model mlp: width -1");
    ck_assert_ptr_null(gan_relu(CTX, NULL));
    gan_ctx_fail(CTX, GAN_ERR_NUMERIC, "a later failure");
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_str_eq(gan_ctx_error(CTX), "model mlp: width -1");
    gan_ctx_clear_error(CTX);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_OK);
    ck_assert_str_eq(gan_ctx_error(CTX), "");
}
END_TEST

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");

    TCase *tc = tcase_create("creation");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_new_queries);
    tcase_add_test(tc, test_new_invalid);
    tcase_add_test(tc, test_random);
    tcase_add_test(tc, test_ctx_fail);
    suite_add_tcase(s, tc);

    tc = tcase_create("host");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_host_round_trip);
    tcase_add_test(tc, test_host_errors);
    tcase_add_test(tc, test_copy_casts);
    tcase_add_test(tc, test_fp8_tensors);
    suite_add_tcase(s, tc);

    tc = tcase_create("broadcast");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_broadcast, 0, (int)(sizeof bcases / sizeof bcases[0]));
    tcase_add_test(tc, test_result_dtype);
    tcase_add_test(tc, test_linear_shapes_and_dtypes);
    suite_add_tcase(s, tc);

    tc = tcase_create("steps");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_step_end);
    tcase_add_test(tc, test_no_grad_nesting);
    tcase_add_test(tc, test_memory_flat);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tensor_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
