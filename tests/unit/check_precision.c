/* SPDX-License-Identifier: MIT */
/* check_precision.c — the tensor core's precision policy: result dtypes of every op under
 * fp16/bf16 at O1 and O2, values against host rounding, FP16 underflow and overflow, scopes
 * and FP32 patterns, the per-step weight-cast cache, 16-bit gradient records, the penalty
 * in an FP32 scope (with the shipped mlp and gradient-penalty modules too), and first- and
 * second-order gradients under 16-bit O2 against finite differences.
 *
 * Tolerances of the finite-difference checks. The reference is the same function in FP32
 * (mode fp32), differentiated by central differences with h = 1e-2 and summed on the
 * host in double: its error is FP32 rounding over 2h (~1e-7·|f|/2e-2 ≈ 5e-6·|f|) plus
 * truncation (h²/6·f''' ≈ 2e-5·f'''), far below the 16-bit error. Under O2 every stored
 * value is rounded with relative error at most u = 2^-11 (FP16) or 2^-8 (BF16). A
 * parameter gradient of the test's three-layer tanh critic passes through at most about
 * a dozen roundings in the forward pass that feeds it (input, weight and bias casts,
 * GEMM outputs, bias sums, tanh) and as many in the backward pass (the seed's
 * broadcast, GEMMs, the tanh derivative's square, sum and product), each adding at most
 * u relative to the magnitude of the terms it touches; so the gradient is within about
 * 24·u of the terms' magnitude. Sums over the batch can cancel, so the magnitude is
 * taken as |fd| plus the largest |fd| of the same tensor, and the first-order tolerance
 * is |analytic − fd| ≤ 32·u·(|fd| + max|fd|) + 1e-5 (the last term is the FP32
 * reference's own error). The second-order penalty gradient goes through the forward,
 * the inner backward, the norm and the outer backward of both: twice the roundings,
 * K = 64. With FP16 that is 1.6 % and 3.1 % of the scale. Measured, the worst errors
 * are 0.15 (FP16, first order), 0.05 (FP16, second), 0.06 and 0.07 (BF16) of their
 * tolerances; a tanh derivative made 5 % too large fails both FP16 checks. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "nn/net.h"

#ifndef GAN_TEST_LOSS_DIR
#error "GAN_TEST_LOSS_DIR must name the folder that holds the loss modules"
#endif
#ifndef GAN_TEST_MODEL_DIR
#error "GAN_TEST_MODEL_DIR must name the folder that holds model-mlp.so"
#endif

#define CTX (fx.ctx)

/* ------------------------------------------------------------------ host rounding
 * Written from the formats' definitions (IEEE 754 binary16, bfloat16), independently of the backend:
 * round to nearest, ties to even, at the value's own spacing. */

static double spacing(double ax, int mant_bits, int min_exp)
{
    int e;
    frexp(ax, &e);              /* ax = f·2^e, f in [0.5, 1): the leading bit is 2^(e−1) */
    int lead = e - 1;
    if (lead < min_exp)
        lead = min_exp;         /* subnormals share the smallest normal's spacing */
    return ldexp(1.0, lead - mant_bits);
}

static float round_fmt(float x, int mant_bits, int min_exp, double overflow_at)
{
    if (!isfinite(x) || x == 0.0f)
        return x;
    double ax = fabs((double)x);
    double q = spacing(ax, mant_bits, min_exp);
    double r = nearbyint(ax / q) * q;   /* the default mode rounds ties to even */
    if (r >= overflow_at)
        return x < 0 ? -INFINITY : INFINITY;
    return (float)(x < 0 ? -r : r);
}

/* FP16: 10 fraction bits, smallest normal 2^-14, values that round to 65520 or more
 * overflow. BF16: 7 fraction bits, FP32's range. */
static float round_f16(float x)
{
    return round_fmt(x, 10, -14, 65520.0);
}

static float round_bf16(float x)
{
    return round_fmt(x, 7, -126, 3.3961775292304e38);
}

static float round_to(enum gan_dtype dt, float x)
{
    return dt == GAN_F16 ? round_f16(x) : dt == GAN_BF16 ? round_bf16(x) : x;
}

/* The unit roundoff of a 16-bit type. */
static double unit_roundoff(enum gan_dtype dt)
{
    return dt == GAN_F16 ? 0x1p-11 : 0x1p-8;
}

/* ------------------------------------------------------------------ helpers */

static uint64_t rng_state;

static double uniform01(void)
{
    /* splitmix64: the same test inputs on every machine. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

static float uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)uniform01();
}

static int64_t count_of(int nd, const int64_t *d)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= d[i];
    return n;
}

static gan_tensor *make(enum gan_dtype dt, int nd, const int64_t *d, const float *v)
{
    gan_tensor *t = gan_tensor_from_host(CTX, dt, nd, d, v);
    ck_assert_msg(t, "gan_tensor_from_host: %s", gan_ctx_error(CTX));
    return t;
}

/* A persistent FP32 leaf that requires a gradient: a parameter. */
static gan_tensor *param(int nd, const int64_t *d, const float *v)
{
    gan_tensor *t = gan_tensor_new_persistent(CTX, GAN_F32, nd, d);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, t, v, (size_t)count_of(nd, d)), GAN_OK);
    gan_tensor_set_requires_grad(t, 1);
    return t;
}

static void fetch(const gan_tensor *t, float *v, size_t n)
{
    ck_assert_msg(t, "no tensor: %s", gan_ctx_error(CTX));
    ck_assert_int_eq((int64_t)n, gan_tensor_numel(t));
    ck_assert_msg(gan_tensor_to_host(CTX, t, v, n) == GAN_OK, "%s", gan_ctx_error(CTX));
}

static float scalar_of(const gan_tensor *t)
{
    float v;
    fetch(t, &v, 1);
    return v;
}

static void policy(enum gan_dtype mode, enum gan_precision_level level)
{
    ck_assert_msg(gan_ctx_set_precision(CTX, mode, level) == GAN_OK, "%s", gan_ctx_error(CTX));
}

static void ok(void)
{
    ck_assert_msg(gan_ctx_status(CTX) == GAN_OK, "%s", gan_ctx_error(CTX));
}

static const char *dn(enum gan_dtype dt)
{
    const char *s = gan_dtype_name(dt);
    return s ? s : "?";
}

static uint64_t backend_casts(void)
{
    struct gan_ctx_stats s;
    gan_ctx_get_stats(CTX, &s);
    return s.backend_casts;
}

/* ------------------------------------------------------------------ result dtypes */

enum pclass { C_GEMM, C_POINT, C_LOSS, C_SHAPE };

enum pop {
    P_ADD, P_SUB, P_MUL, P_DIV, P_SCALE, P_ADD_SCALAR, P_NEG, P_RELU, P_LEAKY, P_TANH,
    P_SIGMOID, P_SQUARE, P_SQRT, P_STEP, P_SUM_AXIS, P_MEAN_AXIS, P_SUM_ALL, P_MEAN_ALL,
    P_SUM_TO, P_BROADCAST_TO, P_MATMUL, P_CONV2D, P_CONV2D_T, P_CONV2D_BF, P_RESHAPE,
    P_CONCAT0, P_SLICE0
};

struct dcase {
    const char *name;
    enum pop op;
    enum pclass cls;
    int n_in;
    int nd[2];
    int64_t d[2][4];
};

static const struct dcase dtype_cases[] = {
    { "add", P_ADD, C_POINT, 2, { 2, 1 }, { { 3, 4 }, { 4 } } },
    { "sub", P_SUB, C_POINT, 2, { 2, 1 }, { { 3, 4 }, { 4 } } },
    { "mul", P_MUL, C_POINT, 2, { 2, 1 }, { { 3, 4 }, { 4 } } },
    { "div", P_DIV, C_POINT, 2, { 2, 1 }, { { 3, 4 }, { 4 } } },
    { "scale", P_SCALE, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "add_scalar", P_ADD_SCALAR, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "neg", P_NEG, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "relu", P_RELU, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "leaky_relu", P_LEAKY, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "tanh", P_TANH, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "sigmoid", P_SIGMOID, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "square", P_SQUARE, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "sqrt", P_SQRT, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "step", P_STEP, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "sum axis 1", P_SUM_AXIS, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "mean axis 0", P_MEAN_AXIS, C_POINT, 1, { 2 }, { { 3, 4 } } },
    { "sum over all", P_SUM_ALL, C_LOSS, 1, { 2 }, { { 3, 4 } } },
    { "mean over all", P_MEAN_ALL, C_LOSS, 1, { 2 }, { { 3, 4 } } },
    { "sum_to", P_SUM_TO, C_SHAPE, 1, { 2 }, { { 3, 4 } } },
    { "broadcast_to", P_BROADCAST_TO, C_SHAPE, 1, { 1 }, { { 4 } } },
    { "matmul", P_MATMUL, C_GEMM, 2, { 2, 2 }, { { 3, 4 }, { 4, 2 } } },
    { "conv2d", P_CONV2D, C_GEMM, 2, { 4, 4 }, { { 1, 2, 5, 5 }, { 3, 2, 3, 3 } } },
    { "conv2d_transpose", P_CONV2D_T, C_GEMM, 2, { 4, 4 }, { { 1, 3, 3, 3 }, { 3, 2, 3, 3 } } },
    { "conv2d_backward_filter", P_CONV2D_BF, C_GEMM, 2, { 4, 4 },
      { { 1, 2, 5, 5 }, { 1, 3, 5, 5 } } },
    { "reshape", P_RESHAPE, C_SHAPE, 1, { 2 }, { { 3, 4 } } },
    { "concat0", P_CONCAT0, C_SHAPE, 2, { 2, 2 }, { { 3, 4 }, { 2, 4 } } },
    { "slice0", P_SLICE0, C_SHAPE, 1, { 2 }, { { 3, 4 } } },
};
#define N_DTYPE_CASES ((int)(sizeof dtype_cases / sizeof dtype_cases[0]))

static gan_tensor *run_dcase(const struct dcase *c, gan_tensor *a, gan_tensor *b)
{
    static const int64_t four[1] = { 4 }, three_four[2] = { 3, 4 }, twelve[1] = { 12 };
    switch (c->op) {
    case P_ADD: return gan_add(CTX, a, b);
    case P_SUB: return gan_sub(CTX, a, b);
    case P_MUL: return gan_mul(CTX, a, b);
    case P_DIV: return gan_div(CTX, a, b);
    case P_SCALE: return gan_scale(CTX, a, 0.5f);
    case P_ADD_SCALAR: return gan_add_scalar(CTX, a, 0.25f);
    case P_NEG: return gan_neg(CTX, a);
    case P_RELU: return gan_relu(CTX, a);
    case P_LEAKY: return gan_leaky_relu(CTX, a, 0.2f);
    case P_TANH: return gan_tanh(CTX, a);
    case P_SIGMOID: return gan_sigmoid(CTX, a);
    case P_SQUARE: return gan_square(CTX, a);
    case P_SQRT: return gan_sqrt(CTX, a);
    case P_STEP: return gan_step(CTX, a);
    case P_SUM_AXIS: return gan_sum(CTX, a, 1, 0);
    case P_MEAN_AXIS: return gan_mean(CTX, a, 0, 1);
    case P_SUM_ALL: return gan_sum(CTX, a, GAN_ALL_AXES, 0);
    case P_MEAN_ALL: return gan_mean(CTX, a, GAN_ALL_AXES, 0);
    case P_SUM_TO: return gan_sum_to(CTX, a, 1, four);
    case P_BROADCAST_TO: return gan_broadcast_to(CTX, a, 2, three_four);
    case P_MATMUL: return gan_matmul(CTX, a, b, 0, 0);
    case P_CONV2D: return gan_conv2d(CTX, a, b, 1, 1);
    case P_CONV2D_T: return gan_conv2d_transpose(CTX, a, b, 2, 1, 0);
    case P_CONV2D_BF: return gan_conv2d_backward_filter(CTX, a, b, 1, 1, 3, 3);
    case P_RESHAPE: return gan_reshape(CTX, a, 1, twelve);
    case P_CONCAT0: return gan_concat0(CTX, a, b);
    case P_SLICE0: return gan_slice0(CTX, a, 1, 3);
    }
    return NULL;
}

struct pconfig {
    const char *name;
    enum gan_dtype mode;
    enum gan_precision_level level;
    int fp32_scope;
};

static const struct pconfig configs[] = {
    { "fp32", GAN_F32, GAN_PRECISION_O2, 0 },
    { "fp16 O1", GAN_F16, GAN_PRECISION_O1, 0 },
    { "fp16 O2", GAN_F16, GAN_PRECISION_O2, 0 },
    { "bf16 O1", GAN_BF16, GAN_PRECISION_O1, 0 },
    { "bf16 O2", GAN_BF16, GAN_PRECISION_O2, 0 },
    { "fp16 O2 in an FP32 scope", GAN_F16, GAN_PRECISION_O2, 1 },
    { "bf16 O1 in an FP32 scope", GAN_BF16, GAN_PRECISION_O1, 1 },
};

static int low(enum gan_dtype dt)
{
    return dt == GAN_F16 || dt == GAN_BF16;
}

/* The documented rule (tensor.h), written out per class. */
static enum gan_dtype expected_dtype(const struct pconfig *p, enum pclass cls,
                                     enum gan_dtype a, int has_b, enum gan_dtype b)
{
    enum gan_dtype widest = !has_b || a == b ? a : GAN_F32;
    if (cls == C_SHAPE || p->mode == GAN_F32)
        return widest;
    if (p->fp32_scope)
        return GAN_F32;
    switch (cls) {
    case C_GEMM:
        return p->mode;
    case C_POINT:
        if (p->level == GAN_PRECISION_O2 && (low(a) || (has_b && low(b))))
            return p->mode;
        return GAN_F32;
    default:
        return GAN_F32;
    }
}

/* Every op under every configuration and input dtype mix: the result's dtype follows
 * the rule, and gan_grad gives each input a gradient of the input's own dtype (the
 * policy's casts are recorded, their backward rounds back). */
START_TEST(test_result_dtypes)
{
    const struct dcase *c = &dtype_cases[_i];
    static const enum gan_dtype mixes[5][2] = {
        { GAN_F32, GAN_F32 }, { GAN_F16, GAN_F32 }, { GAN_F32, GAN_BF16 },
        { GAN_F16, GAN_F16 }, { GAN_BF16, GAN_BF16 },
    };
    rng_state = 100 + (uint64_t)_i;
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "exact"), GAN_OK);
    for (size_t p = 0; p < sizeof configs / sizeof configs[0]; p++) {
        const struct pconfig *cfg = &configs[p];
        for (int m = 0; m < 5; m++) {
            if (c->n_in == 1 && m == 2)
                continue;   /* a unary op sees only the first dtype */
            policy(cfg->mode, cfg->level);
            if (cfg->fp32_scope)
                ck_assert_int_eq(gan_ctx_scope_push(CTX, "exact"), GAN_OK);
            gan_tensor *in[2] = { NULL, NULL };
            for (int j = 0; j < c->n_in; j++) {
                int64_t n = count_of(c->nd[j], c->d[j]);
                float *v = malloc((size_t)n * sizeof *v);
                for (int64_t k = 0; k < n; k++)
                    v[k] = uniform(0.5f, 2.0f);
                in[j] = make(mixes[m][j], c->nd[j], c->d[j], v);
                gan_tensor_set_requires_grad(in[j], 1);
                free(v);
            }
            gan_tensor *y = run_dcase(c, in[0], in[1]);
            ck_assert_msg(y, "%s under %s: %s", c->name, cfg->name, gan_ctx_error(CTX));
            enum gan_dtype want = expected_dtype(cfg, c->cls, mixes[m][0], c->n_in == 2,
                                                 mixes[m][1]);
            ck_assert_msg(gan_tensor_dtype(y) == want, "%s under %s with %s%s%s gave %s, "
                          "want %s", c->name, cfg->name, dn(mixes[m][0]),
                          c->n_in == 2 ? " and " : "", c->n_in == 2 ? dn(mixes[m][1]) : "",
                          dn(gan_tensor_dtype(y)), dn(want));
            if (c->op != P_STEP) {
                int64_t yd[GAN_TENSOR_MAX_DIMS];
                for (int k = 0; k < gan_tensor_ndim(y); k++)
                    yd[k] = gan_tensor_dim(y, k);
                gan_tensor *seed = gan_tensor_full(CTX, gan_tensor_dtype(y),
                                                   gan_tensor_ndim(y), yd, 1.0f);
                gan_tensor *g[2] = { NULL, NULL };
                ck_assert_msg(gan_grad(CTX, 1, &y, &seed, c->n_in, in, g, 0) == GAN_OK,
                              "%s under %s: %s", c->name, cfg->name, gan_ctx_error(CTX));
                for (int j = 0; j < c->n_in; j++)
                    ck_assert_msg(gan_tensor_dtype(g[j]) == gan_tensor_dtype(in[j]),
                                  "%s under %s: the gradient of input %d is %s, the input %s",
                                  c->name, cfg->name, j, dn(gan_tensor_dtype(g[j])),
                                  dn(gan_tensor_dtype(in[j])));
            }
            if (cfg->fp32_scope)
                gan_ctx_scope_pop(CTX);
            ok();
            gan_ctx_step_end(CTX);
        }
    }
}
END_TEST

START_TEST(test_policy_settings)
{
    enum gan_dtype mode;
    enum gan_precision_level level;
    gan_ctx_get_precision(CTX, &mode, &level);
    ck_assert_int_eq(mode, GAN_F32);
    policy(GAN_BF16, GAN_PRECISION_O1);
    gan_ctx_get_precision(CTX, &mode, &level);
    ck_assert_int_eq(mode, GAN_BF16);
    ck_assert_int_eq(level, GAN_PRECISION_O1);
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_I32, GAN_PRECISION_O1), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "GAN_F16"));
    gan_ctx_clear_error(CTX);
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_F16, (enum gan_precision_level)3),
                     GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "level 3"));
    gan_ctx_clear_error(CTX);
    /* A refused setting changes nothing. */
    gan_ctx_get_precision(CTX, &mode, &level);
    ck_assert_int_eq(mode, GAN_BF16);
    ck_assert_int_eq(level, GAN_PRECISION_O1);
}
END_TEST

/* ------------------------------------------------------------------ values */

/* A value whose 16-bit rounding is `r` but which is not r itself: r + 0.3 of the
 * format's spacing at r, so the cast visibly rounds it. */
static float off_grid(enum gan_dtype dt, float r)
{
    if (r == 0.0f)
        return r;
    int bits = dt == GAN_F16 ? 10 : 7;
    return (float)((double)r + 0.3 * spacing(fabs((double)r), bits, dt == GAN_F16 ? -14 : -126)
                               * (r < 0 ? -1.0 : 1.0));
}

/* O1: a matmul equals the FP32 product of the 16-bit-rounded inputs, rounded once.
 * The rounded inputs are multiples of 1/16 in [−2, 2], so the FP32 accumulation of
 * 16 products (multiples of 1/256 below 64 in size) is exact and the single rounding
 * of the result is the only one; the inputs themselves sit 0.3 spacings off the 16-bit
 * grid, so a product of unrounded inputs would differ. */
START_TEST(test_matmul_rounds_inputs_then_result)
{
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    enum { M = 5, K = 16, N = 6 };
    float a[M * K], b[K * N], ar[M * K], br[K * N], y[M * N];
    rng_state = 7;
    for (int i = 0; i < M * K; i++) {
        ar[i] = (float)((int)floor(uniform01() * 64) - 32) / 16.0f;
        a[i] = off_grid(dt, ar[i]);
        ck_assert(round_to(dt, a[i]) == ar[i]);
    }
    for (int i = 0; i < K * N; i++) {
        br[i] = (float)((int)floor(uniform01() * 64) - 32) / 16.0f;
        b[i] = off_grid(dt, br[i]);
    }
    int64_t ad[2] = { M, K }, bd[2] = { K, N };
    gan_tensor *ta = make(GAN_F32, 2, ad, a);
    gan_tensor *tb = param(2, bd, b);
    policy(dt, GAN_PRECISION_O1);
    gan_tensor *ty = gan_matmul(CTX, ta, tb, 0, 0);
    ck_assert_int_eq(gan_tensor_dtype(ty), dt);
    fetch(ty, y, M * N);
    int differs = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, s_unrounded = 0;
            for (int k = 0; k < K; k++) {
                s += (double)ar[i * K + k] * br[k * N + j];
                s_unrounded += (double)a[i * K + k] * b[k * N + j];
            }
            float want = round_to(dt, (float)s);
            ck_assert_msg(y[i * N + j] == want, "%s y[%d][%d] = %.9g, want %.9g", dn(dt), i, j,
                          (double)y[i * N + j], (double)want);
            differs += round_to(dt, (float)s_unrounded) != want;
        }
    ck_assert_msg(differs > 0, "the unrounded inputs give the same products: the test "
                  "would not see a missing input cast");
}
END_TEST

/* O2: an element-wise op with a 16-bit input casts its FP32 parameter to 16 bit and
 * rounds its FP32 result once: y = r(x·r(w)) + r(b) rounded again, x already 16-bit. A
 * product of two 11-bit (8-bit) significands is exact in FP32, and so is the sum of
 * values of similar size, so the host's rounding of the exact value is the reference. */
START_TEST(test_o2_elementwise_rounding)
{
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    enum { R = 4, C = 8 };
    float x[R * C], w[C], b[C], y[R * C];
    rng_state = 11;
    for (int i = 0; i < R * C; i++)
        x[i] = round_to(dt, uniform(-2.0f, 2.0f));
    for (int j = 0; j < C; j++) {
        w[j] = uniform(0.5f, 1.5f);
        b[j] = uniform(0.5f, 1.0f);
    }
    int64_t xd[2] = { R, C }, vd[1] = { C };
    gan_tensor *tx = make(dt, 2, xd, x);
    gan_tensor *tw = param(1, vd, w), *tb = param(1, vd, b);
    policy(dt, GAN_PRECISION_O2);
    gan_tensor *prod = gan_mul(CTX, tx, tw);
    gan_tensor *ty = gan_add(CTX, prod, tb);
    ck_assert_int_eq(gan_tensor_dtype(prod), dt);
    ck_assert_int_eq(gan_tensor_dtype(ty), dt);
    fetch(ty, y, R * C);
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float p = round_to(dt, x[i * C + j] * round_to(dt, w[j]));
            float want = round_to(dt, p + round_to(dt, b[j]));
            ck_assert_msg(y[i * C + j] == want, "%s y[%d][%d] = %.9g, want %.9g", dn(dt), i, j,
                          (double)y[i * C + j], (double)want);
        }
}
END_TEST

/* O2 reductions accumulate in FP32: over one axis the result is 16 bit (rounded once),
 * over everything it is FP32 (the loss). Inputs are multiples of 1/64, so the FP32 sums
 * are exact and only the final rounding remains. */
START_TEST(test_o2_reductions)
{
    enum { R = 3, C = 40 };
    float x[R * C], row[R], all;
    double sums[R], total = 0;
    rng_state = 12;
    for (int i = 0; i < R; i++) {
        sums[i] = 0;
        for (int j = 0; j < C; j++) {
            x[i * C + j] = (float)((int)floor(uniform01() * 256) - 96) / 64.0f + 1.0f / 1024;
            x[i * C + j] = round_f16(x[i * C + j]);
            sums[i] += x[i * C + j];
        }
        total += sums[i];
    }
    int64_t d[2] = { R, C };
    gan_tensor *tx = make(GAN_F16, 2, d, x);
    policy(GAN_F16, GAN_PRECISION_O2);
    gan_tensor *rs = gan_sum(CTX, tx, 1, 0);
    gan_tensor *m = gan_mean(CTX, tx, GAN_ALL_AXES, 0);
    ck_assert_int_eq(gan_tensor_dtype(rs), GAN_F16);
    ck_assert_int_eq(gan_tensor_dtype(m), GAN_F32);
    fetch(rs, row, R);
    for (int i = 0; i < R; i++)
        ck_assert_msg(row[i] == round_f16((float)sums[i]), "row %d: %.9g, want %.9g", i,
                      (double)row[i], (double)round_f16((float)sums[i]));
    all = scalar_of(m);
    ck_assert_msg(fabs(all - total / (R * C)) <= 1e-6 * fabs(total / (R * C)),
                  "mean %.9g, want %.9g (FP32, not rounded to FP16)", (double)all,
                  total / (R * C));
    ck_assert_msg(round_f16(all) != all, "the mean %.9g is an FP16 value: pick data that "
                  "shows the FP32 result", (double)all);
}
END_TEST

/* O1: ops other than GEMM take 16-bit inputs exactly into FP32 and stay FP32. */
/* gan_linear against FP64 and against the composition gan_add(gan_matmul(x, w, 0, 1), b)
 * it replaces, in each precision setting: mode fp32; fp16 and bf16 at O2 and at O1; and
 * fp16 O2 inside an FP32 scope. Its result must have the composition's dtype. Values:
 * with 16-bit arithmetic x and w are multiples of 1/64 in [−2, 2] (on both 16-bit grids)
 * moved 0.3 spacings off the grid, as in test_matmul_rounds_inputs_then_result, and b
 * multiples of 1/256 in [−2, 2], so that every FP32 sum of their rounded values is
 * exact (multiples of 2^-12 below 2^7 in size: 19 bits) and the exact value in double
 * is what the backend accumulates, while a sum of 16 products is finer than FP16's
 * spacing and so is rounded in the composition:
 *   O2   y = r(b̂ + Σ x̂·ŵ), one rounding (hats: rounded to 16 bit), where the composition
 *        gives r(b̂ + r(Σ x̂·ŵ)): gan_linear must equal the first, be no farther from the
 *        exact value than the composition anywhere, and differ from it somewhere;
 *   O1   y = fl32(r(Σ x̂·ŵ) + b) in FP32 with b unrounded, as the composition, bit for bit;
 *   FP32 (and the FP32 scope) the unrounded inputs, |y − exact| ≤ (K + 2)·2^-24·(|b| +
 *        Σ|x·w|), the standard bound for a sum of K + 1 terms.
 * The gradients of Σ c ⊙ y (c fixed) with respect to x, w and b must equal the
 * composition's bit for bit: the backward is the same ops on the same seed. */
START_TEST(test_linear_against_fp64)
{
    static const struct { enum gan_dtype mode; enum gan_precision_level level; int scope; }
        cfg[] = {
        { GAN_F32, GAN_PRECISION_O1, 0 }, { GAN_F16, GAN_PRECISION_O2, 0 },
        { GAN_BF16, GAN_PRECISION_O2, 0 }, { GAN_F16, GAN_PRECISION_O1, 0 },
        { GAN_BF16, GAN_PRECISION_O1, 0 }, { GAN_F16, GAN_PRECISION_O2, 1 },
    };
    enum gan_dtype mode = cfg[_i].mode;
    int o2 = cfg[_i].level == GAN_PRECISION_O2, low = mode != GAN_F32 && !cfg[_i].scope;
    enum { M = 5, K = 16, N = 6 };
    float x[M * K], w[N * K], b[N], xr[M * K], wr[N * K], br[N], c[M * N];
    rng_state = 23;
    for (int i = 0; i < M * K; i++) {
        xr[i] = (float)((int)floor(uniform01() * 256) - 128) / 64.0f;
        x[i] = low ? off_grid(mode, xr[i]) : uniform(-2.0f, 2.0f);
        ck_assert(!low || round_to(mode, x[i]) == xr[i]);
    }
    for (int i = 0; i < N * K; i++) {
        wr[i] = (float)((int)floor(uniform01() * 256) - 128) / 64.0f;
        w[i] = low ? off_grid(mode, wr[i]) : uniform(-2.0f, 2.0f);
        ck_assert(!low || round_to(mode, w[i]) == wr[i]);
    }
    for (int j = 0; j < N; j++) {
        br[j] = (float)((int)floor(uniform01() * 1024) - 512) / 256.0f;
        b[j] = low ? off_grid(mode, br[j]) : uniform(-2.0f, 2.0f);
        if (low)
            ck_assert(round_to(mode, b[j]) == round_to(mode, br[j]));
    }
    for (int i = 0; i < M * N; i++)
        c[i] = uniform(-1.0f, 1.0f);
    int64_t xd[2] = { M, K }, wd[2] = { N, K }, bd[1] = { N }, yd[2] = { M, N };
    gan_tensor *tw = param(2, wd, w), *tb = param(1, bd, b);
    policy(mode, cfg[_i].level);
    if (cfg[_i].scope) {
        ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "critic.fc3"), GAN_OK);
        ck_assert_int_eq(gan_ctx_scope_push(CTX, "critic"), GAN_OK);
        ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc3"), GAN_OK);
    }
    float y[M * N], yc[M * N], g[2][M * K + N * K + N];
    enum gan_dtype dts[2];
    for (int v = 0; v < 2; v++) {
        gan_tensor *tx = make(GAN_F32, 2, xd, x);
        gan_tensor_set_requires_grad(tx, 1);
        gan_tensor *ty = v == 0 ? gan_linear(CTX, tx, tw, tb)
                                : gan_add(CTX, gan_matmul(CTX, tx, tw, 0, 1), tb);
        ok();
        dts[v] = gan_tensor_dtype(ty);
        fetch(ty, v == 0 ? y : yc, M * N);
        gan_tensor *L = gan_sum(CTX, gan_mul(CTX, make(GAN_F32, 2, yd, c), ty), GAN_ALL_AXES, 0);
        gan_tensor *ins[3] = { tx, tw, tb }, *gs[3];
        ck_assert_msg(gan_grad(CTX, 1, &L, NULL, 3, ins, gs, 0) == GAN_OK, "%s",
                      gan_ctx_error(CTX));
        fetch(gs[0], g[v], M * K);
        fetch(gs[1], g[v] + M * K, N * K);
        fetch(gs[2], g[v] + M * K + N * K, N);
        gan_ctx_step_end(CTX);
    }
    if (cfg[_i].scope) {
        gan_ctx_scope_pop(CTX);
        gan_ctx_scope_pop(CTX);
    }
    ck_assert_msg(dts[0] == dts[1], "gan_linear gives %s, the composition %s", dn(dts[0]),
                  dn(dts[1]));
    ck_assert_int_eq(dts[0], low && o2 ? mode : GAN_F32);
    for (int i = 0; i < M * K + N * K + N; i++)
        ck_assert_msg(g[0][i] == g[1][i], "gradient element %d: %.9g, the composition's %.9g",
                      i, (double)g[0][i], (double)g[1][i]);
    int fewer = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sabs = 0;
            for (int k = 0; k < K; k++) {
                double t = low ? (double)xr[i * K + k] * wr[j * K + k]
                               : (double)x[i * K + k] * w[j * K + k];
                s += t;
                sabs += fabs(t);
            }
            float got = y[i * N + j], comp = yc[i * N + j];
            if (!low) {
                double exact = s + b[j], bound = (K + 2) * 0x1p-24 * (sabs + fabs(b[j]));
                ck_assert_msg(fabs(got - exact) <= bound, "y[%d][%d] = %.9g, exact %.9g, "
                              "bound %.3g", i, j, (double)got, exact, bound);
            } else if (o2 && mode == GAN_F16) {
                /* FP16 keeps the composition's two roundings, bit for bit. */
                float want = round_to(mode, round_to(mode, (float)s) + round_to(mode, br[j]));
                ck_assert_msg(got == comp && got == want, "F16 O2 y[%d][%d] = %.9g, the "
                              "composition %.9g, two roundings %.9g", i, j, (double)got,
                              (double)comp, (double)want);
            } else if (o2) {
                double exact = s + round_to(mode, br[j]);
                float want = round_to(mode, (float)exact);
                ck_assert_msg(got == want, "%s O2 y[%d][%d] = %.9g, want %.9g", dn(mode), i, j,
                              (double)got, (double)want);
                ck_assert(fabs(got - exact) <= fabs(comp - exact));
                fewer += got != comp;
            } else {
                float want = (float)((double)round_to(mode, (float)s) + b[j]);
                ck_assert_msg(got == want && got == comp, "%s O1 y[%d][%d] = %.9g, want %.9g "
                              "(composition %.9g)", dn(mode), i, j, (double)got, (double)want,
                              (double)comp);
            }
        }
    if (low && o2 && mode != GAN_F16)
        ck_assert_msg(fewer > 0, "%s O2: no element shows the composition's second rounding; "
                      "the test would not tell the fused sum from it", dn(mode));
}
END_TEST

START_TEST(test_o1_rest_is_fp32)
{
    float a[6] = { 0.1f, -0.7f, 1.3f, 2.9f, -0.05f, 0.3f }, w[6] = { 0.3f, -1.1f, 0.7f, 0.2f,
                                                                      0.9f, -0.4f };
    float b[2] = { 0.1f, 0.2f }, h[4], y[4];
    int64_t ad[2] = { 2, 3 }, wd[2] = { 3, 2 }, bd[1] = { 2 };
    gan_tensor *ta = make(GAN_F32, 2, ad, a), *tw = param(2, wd, w), *tb = param(1, bd, b);
    policy(GAN_F16, GAN_PRECISION_O1);
    gan_tensor *mm = gan_matmul(CTX, ta, tw, 0, 0);
    gan_tensor *ty = gan_tanh(CTX, gan_add(CTX, mm, tb));
    ck_assert_int_eq(gan_tensor_dtype(mm), GAN_F16);
    ck_assert_int_eq(gan_tensor_dtype(ty), GAN_F32);
    fetch(mm, h, 4);
    fetch(ty, y, 4);
    for (int i = 0; i < 4; i++) {
        float want = tanhf(h[i] + b[i % 2]);
        ck_assert_msg(fabsf(y[i] - want) <= 2e-7f, "y[%d] = %.9g, want %.9g (FP32 of the "
                      "FP16 product)", i, (double)y[i], (double)want);
    }
}
END_TEST

/* ------------------------------------------------------------------ range */

/* A gradient of 1e-8 is below half of FP16's smallest subnormal (2^-25 ≈ 2.98e-8): under
 * fp16 O2 it reaches the 16-bit output of the matmul and becomes 0 there, so the weight
 * gets nothing (and its 16-bit gradient record shows the 0). In an FP32 scope, and under
 * bf16 (FP32's exponent range), it survives. */
START_TEST(test_fp16_underflow)
{
    static const struct {
        const char *name;
        enum gan_dtype mode;
        int fp32_scope;
        int survives;
    } cases[] = {
        { "fp16 O2", GAN_F16, 0, 0 },
        { "fp16 O2, the layer in an FP32 scope", GAN_F16, 1, 1 },
        { "bf16 O2", GAN_BF16, 0, 1 },
        { "fp32", GAN_F32, 0, 1 },
    };
    int k = _i;
    float one = 1.0f, two[2] = { 1.0f, 1.0f };
    int64_t d11[2] = { 1, 1 }, d2[2] = { 1, 2 };
    gan_tensor *w = param(2, d11, &one);
    gan_tensor *x = make(GAN_F32, 2, d2, two);
    policy(cases[k].mode, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "head"), GAN_OK);
    if (cases[k].fp32_scope)
        ck_assert_int_eq(gan_ctx_scope_push(CTX, "head"), GAN_OK);
    /* y [1, 1] = x[:, 0:1]·w, by a matmul of the first column. */
    int64_t col[2] = { 2, 1 };
    float sel[2] = { 1.0f, 0.0f };
    gan_tensor *y = gan_matmul(CTX, gan_matmul(CTX, x, make(GAN_F32, 2, col, sel), 0, 0), w, 0, 0);
    if (cases[k].fp32_scope)
        gan_ctx_scope_pop(CTX);
    gan_tensor *loss = gan_scale(CTX, gan_sum(CTX, y, GAN_ALL_AXES, 0), 1e-8f);
    gan_tensor *g = NULL;
    ck_assert_msg(gan_grad(CTX, 1, &loss, NULL, 1, &w, &g, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_dtype(g), GAN_F32);
    float gv = scalar_of(g);
    if (cases[k].survives) {
        double rel = cases[k].mode == GAN_BF16 ? 0x1p-8 : 1e-6;
        ck_assert_msg(fabs(gv - 1e-8) <= rel * 1e-8, "%s: the gradient is %.9g, want 1e-8",
                      cases[k].name, (double)gv);
    } else {
        ck_assert_msg(gv == 0.0f, "%s: the gradient is %.9g, want 0 (underflow)",
                      cases[k].name, (double)gv);
        gan_tensor *g16 = gan_tensor_grad16(w);
        ck_assert_ptr_nonnull(g16);
        ck_assert_int_eq(gan_tensor_dtype(g16), GAN_F16);
        ck_assert(scalar_of(g16) == 0.0f);
    }
    ok();
}
END_TEST

/* 300·300 = 90000 is above FP16's largest value (65504): inf under fp16, and 90112 (the
 * nearest BF16) under bf16; under O2 the same holds for an element-wise square, and the
 * gradient of the square, 2·300·g, overflows too once g is large. */
START_TEST(test_overflow)
{
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    float v = 300.0f, out;
    int64_t d11[2] = { 1, 1 };
    gan_tensor *a = make(GAN_F32, 2, d11, &v);
    gan_tensor *w = param(2, d11, &v);
    policy(dt, GAN_PRECISION_O1);
    gan_tensor *y = gan_matmul(CTX, a, w, 0, 0);
    ck_assert_int_eq(gan_tensor_dtype(y), dt);
    out = scalar_of(y);
    if (dt == GAN_F16) {
        ck_assert_msg(isinf(out) && out > 0, "fp16 300·300 = %g, want inf", (double)out);
    } else {
        ck_assert_msg(out == round_bf16(90000.0f) && out == 90112.0f, "bf16 300·300 = %.9g, "
                      "want 90112", (double)out);
    }
    policy(dt, GAN_PRECISION_O2);
    gan_tensor *h = gan_cast(CTX, w, dt);
    gan_tensor *sq = gan_square(CTX, h);
    ck_assert_int_eq(gan_tensor_dtype(sq), dt);
    out = scalar_of(sq);
    ck_assert(dt == GAN_F16 ? isinf(out) : isfinite(out) && out == 90112.0f);
    /* d(sq)/dw = 600·g: with g = 200 that is 120000. */
    gan_tensor *seed = gan_tensor_full(CTX, dt, 2, d11, 200.0f);
    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &sq, &seed, 1, &w, &g, 0), GAN_OK);
    out = scalar_of(g);
    ck_assert_msg(dt == GAN_F16 ? isinf(out) : out == round_bf16(120000.0f), "%s gradient "
                  "%.9g", dn(dt), (double)out);
    ok();
}
END_TEST

/* ------------------------------------------------------------------ scopes */

START_TEST(test_scope_paths)
{
    ck_assert_str_eq(gan_ctx_scope(CTX), "");
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "critic"), GAN_OK);
    ck_assert_str_eq(gan_ctx_scope(CTX), "critic");
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc3"), GAN_OK);
    ck_assert_str_eq(gan_ctx_scope(CTX), "critic.fc3");
    gan_ctx_scope_pop(CTX);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "norm-1_b"), GAN_OK);
    ck_assert_str_eq(gan_ctx_scope(CTX), "critic.norm-1_b");
    gan_ctx_scope_pop(CTX);
    gan_ctx_scope_pop(CTX);
    ck_assert_str_eq(gan_ctx_scope(CTX), "");
    /* The same name in two places is two scopes. */
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc3"), GAN_OK);
    ck_assert_str_eq(gan_ctx_scope(CTX), "fc3");
    gan_ctx_scope_pop(CTX);
    ok();
}
END_TEST

START_TEST(test_scope_refusals)
{
    static const char *const bad_names[] = { "", "a.b", "fc*", "with space", "é" };
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        ck_assert_int_eq(gan_ctx_scope_push(CTX, bad_names[i]), GAN_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "not a scope name"));
        gan_ctx_clear_error(CTX);
    }
    ck_assert_int_eq(gan_ctx_scope_push(CTX, NULL), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    ck_assert_str_eq(gan_ctx_scope(CTX), "");
    gan_ctx_scope_pop(CTX);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "no scope to leave"));
    gan_ctx_clear_error(CTX);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(gan_ctx_scope_push(CTX, "deep"), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "deep"), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "without its pop"));
    gan_ctx_clear_error(CTX);
    static const char *const bad_patterns[] = { "", ".critic", "critic.", "a..b", "fc?",
                                                "a b", "[fc]" };
    for (size_t i = 0; i < sizeof bad_patterns / sizeof bad_patterns[0]; i++) {
        ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, bad_patterns[i]), GAN_ERR_INVALID);
        ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "not a scope pattern"));
        gan_ctx_clear_error(CTX);
    }
    ck_assert_uint_eq(gan_ctx_fp32_scope_count(CTX), 0);
}
END_TEST

struct match_case {
    const char *pattern;
    const char *path;      /* parts joined with '.', pushed one by one */
    int fp32;
};

static const struct match_case match_cases[] = {
    /* exact */
    { "penalty", "penalty", 1 },
    { "critic.fc3", "critic.fc3", 1 },
    { "critic.fc3", "critic.fc30", 0 },
    { "critic.fc3", "critic.fc", 0 },
    { "critic.fc3", "critic", 0 },
    { "critic.fc3", "generator.fc3", 0 },
    { "fc3", "critic.fc3", 1 },
    { "critic", "critic2.fc0", 0 },
    /* nesting: a match covers everything inside */
    { "penalty", "penalty.critic.fc0", 1 },
    { "critic.fc3", "penalty.critic.fc3", 1 },
    { "critic.fc3", "critic.fc3.inner", 1 },
    { "critic.fc0", "penalty.critic.fc1", 0 },
    /* glob */
    { "critic.norm*", "critic.norm1", 1 },
    { "critic.norm*", "critic.norm12.x", 1 },
    { "critic.norm*", "critic.conv1", 0 },
    { "critic.norm*", "generator.norm1", 0 },
    { "*norm*", "generator.layernorm0", 1 },
    { "critic.*", "critic.fc0", 1 },
    { "critic.*", "critic", 0 },
    { "c*c.fc*", "critic.fc2", 1 },
    { "*", "anything", 1 },
    { "fc*3", "critic.fc1.fc2", 0 },
};
#define N_MATCH ((int)(sizeof match_cases / sizeof match_cases[0]))

/* Enters the parts of `path` one by one; returns how many. */
static int enter_path(const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    int n = 0;
    for (char *part = strtok(buf, "."); part; part = strtok(NULL, ".")) {
        ck_assert_int_eq(gan_ctx_scope_push(CTX, part), GAN_OK);
        n++;
    }
    return n;
}

START_TEST(test_pattern_matching)
{
    const struct match_case *c = &match_cases[_i];
    /* Pattern first, then the scope. */
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, c->pattern), GAN_OK);
    int n = enter_path(c->path);
    ck_assert_msg(gan_ctx_scope_is_fp32(CTX) == c->fp32, "pattern \"%s\", scope \"%s\": %s",
                  c->pattern, gan_ctx_scope(CTX), c->fp32 ? "should match" : "should not");
    while (n--)
        gan_ctx_scope_pop(CTX);
    /* Scope first (it exists already), then the pattern: matched again when added. */
    gan_ctx_clear_fp32_scopes(CTX);
    n = enter_path(c->path);
    ck_assert(!gan_ctx_scope_is_fp32(CTX));
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "unrelated"), GAN_OK);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, c->pattern), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_is_fp32(CTX), c->fp32);
    ck_assert_uint_eq(gan_ctx_fp32_scope_count(CTX), 2);
    ck_assert_str_eq(gan_ctx_fp32_scope(CTX, 1), c->pattern);
    ck_assert_ptr_null(gan_ctx_fp32_scope(CTX, 2));
    while (n--)
        gan_ctx_scope_pop(CTX);
    ok();
}
END_TEST

/* The tape names each node's op and scope, in the order the ops ran, with its inputs,
 * output and (after gan_grad) the gradient that reached the output. */
/* gan_linear's node: x and w in inputs[] (n_inputs 2, as a reader of the 1.2 struct
 * indexes it), the bias in input3; input3 is NULL for a two-input op and for a linear
 * without a bias, and a caller whose struct ends before input3 gets nothing past its
 * end. The bias's gradient flows through the third input. */
START_TEST(test_linear_tape_entry)
{
    float w[6] = { 0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f }, b[3] = { 0.1f, -0.2f, 0.3f };
    float x[2] = { 1.0f, 2.0f };
    int64_t wd[2] = { 3, 2 }, bd[1] = { 3 }, xd[2] = { 1, 2 };
    gan_tensor *tw = param(2, wd, w), *tb = param(1, bd, b);
    gan_tensor *tx = make(GAN_F32, 2, xd, x);
    gan_tensor *y = gan_linear(CTX, tx, tw, tb);
    gan_tensor *y0 = gan_linear(CTX, tx, tw, NULL);
    gan_tensor *loss = gan_sum(CTX, gan_mul(CTX, y, y0), GAN_ALL_AXES, 0);
    ok();
    ck_assert_uint_eq(gan_ctx_tape_length(CTX), 4);
    struct gan_tape_entry e;
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 0, &e, sizeof e), GAN_OK);
    ck_assert_str_eq(e.op, "gan_linear");
    ck_assert_int_eq(e.n_inputs, 2);
    ck_assert_ptr_eq(e.inputs[0], tx);
    ck_assert_ptr_eq(e.inputs[1], tw);
    ck_assert_ptr_eq(e.input3, tb);
    ck_assert_ptr_eq(e.output, y);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 1, &e, sizeof e), GAN_OK);
    ck_assert_str_eq(e.op, "gan_linear");
    ck_assert_int_eq(e.n_inputs, 2);
    ck_assert_ptr_null(e.input3);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 2, &e, sizeof e), GAN_OK);
    ck_assert_str_eq(e.op, "gan_mul");
    ck_assert_ptr_null(e.input3);
    struct gan_tape_entry small;
    memset(&small, 0x5a, sizeof small);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 0, &small, offsetof(struct gan_tape_entry, input3)),
                     GAN_OK);
    ck_assert_ptr_eq(small.inputs[1], tw);
    unsigned char pad[sizeof small.input3];
    memset(pad, 0x5a, sizeof pad);
    ck_assert(memcmp(&small.input3, pad, sizeof pad) == 0);
    /* d/db Σ y ⊙ y0 = Σ over rows of y0 = x·wᵀ. */
    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 1, &tb, &g, 0), GAN_OK);
    float gb[3];
    fetch(g, gb, 3);
    for (int j = 0; j < 3; j++)
        ck_assert_float_eq(gb[j], x[0] * w[2 * j] + x[1] * w[2 * j + 1]);
}
END_TEST

START_TEST(test_tape_entries)
{
    float w[4] = { 0.5f, -1.0f, 2.0f, 0.25f }, x[2] = { 1.0f, 2.0f };
    int64_t wd[2] = { 2, 2 }, xd[2] = { 1, 2 };
    gan_tensor *tw = param(2, wd, w);
    gan_tensor *tx = make(GAN_F32, 2, xd, x);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "critic"), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc0"), GAN_OK);
    gan_tensor *h = gan_matmul(CTX, tx, tw, 0, 1);
    gan_ctx_scope_pop(CTX);
    gan_tensor *a = gan_tanh(CTX, h);
    gan_ctx_scope_pop(CTX);
    gan_tensor *loss = gan_sum(CTX, a, GAN_ALL_AXES, 0);
    ok();
    ck_assert_uint_eq(gan_ctx_tape_length(CTX), 3);
    static const char *const ops[3] = { "gan_matmul", "gan_tanh", "gan_sum" };
    static const char *const scopes[3] = { "critic.fc0", "critic", "" };
    gan_tensor *outs[3] = { h, a, loss };
    struct gan_tape_entry e;
    for (size_t i = 0; i < 3; i++) {
        ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
        ck_assert_str_eq(e.op, ops[i]);
        ck_assert_str_eq(e.scope, scopes[i]);
        ck_assert_ptr_eq(e.output, outs[i]);
        ck_assert_ptr_null(e.grad);
        ck_assert_int_eq(e.from_backward, 0);
        ck_assert_int_eq(e.fp32_scope, 0);
    }
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 0, &e, sizeof e), GAN_OK);
    ck_assert_int_eq(e.n_inputs, 2);
    ck_assert_ptr_eq(e.inputs[0], tx);
    ck_assert_ptr_eq(e.inputs[1], tw);
    /* A caller built against a shorter struct gets only what it asked for. */
    struct gan_tape_entry small;
    memset(&small, 0x5a, sizeof small);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 1, &small, offsetof(struct gan_tape_entry, fp32_scope)),
                     GAN_OK);
    ck_assert_str_eq(small.op, "gan_tanh");
    ck_assert_int_eq(small.fp32_scope, 0x5a5a5a5a);

    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 1, &tw, &g, 0), GAN_OK);
    ck_assert_uint_eq(gan_ctx_tape_length(CTX), 3);   /* no create_graph: nothing new */
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 1, &e, sizeof e), GAN_OK);
    ck_assert_ptr_nonnull(e.grad);
    float ga[2], av[2];
    fetch(e.grad, ga, 2);
    fetch(a, av, 2);
    for (int i = 0; i < 2; i++)   /* d Σ tanh / d tanh = 1 */
        ck_assert(ga[i] == 1.0f);
    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 0, &e, sizeof e), GAN_OK);
    fetch(e.grad, ga, 2);
    for (int i = 0; i < 2; i++)   /* d/dh = 1 − tanh² */
        ck_assert(fabsf(ga[i] - (1.0f - av[i] * av[i])) <= 1e-6f);

    ck_assert_int_eq(gan_ctx_tape_entry(CTX, 3, &e, sizeof e), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "tape of 3"));
    gan_ctx_clear_error(CTX);
    gan_ctx_step_end(CTX);
    ck_assert_uint_eq(gan_ctx_tape_length(CTX), 0);
}
END_TEST

/* O2 with an FP32 scope: a 16-bit value entering the scope is cast up by a recorded
 * cast in the scope, the scope's results are FP32, and the first 16-bit op after the
 * scope casts them down; the gradient flows back through both casts, rounded to each
 * tensor's dtype. */
START_TEST(test_fp32_scope_boundaries)
{
    float xv[3] = { 0.1f, 0.2f, 0.3f }, wv[3] = { 1.1f, 1.3f, 1.7f };
    int64_t d[1] = { 3 };
    gan_tensor *w = param(1, d, wv);
    gan_tensor *x = make(GAN_F32, 1, d, xv);
    policy(GAN_F16, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "keep"), GAN_OK);
    gan_tensor *h = gan_mul(CTX, gan_cast(CTX, x, GAN_F16), w);        /* 16 bit */
    ck_assert_int_eq(gan_tensor_dtype(h), GAN_F16);
    size_t before = gan_ctx_tape_length(CTX);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "keep"), GAN_OK);
    gan_tensor *inside = gan_mul(CTX, h, w);
    gan_ctx_scope_pop(CTX);
    ck_assert_int_eq(gan_tensor_dtype(inside), GAN_F32);
    struct gan_tape_entry e;
    int casts_in_scope = 0;
    for (size_t i = before; i < gan_ctx_tape_length(CTX); i++) {
        ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
        ck_assert_str_eq(e.scope, "keep");
        ck_assert_int_eq(e.fp32_scope, 1);
        if (strcmp(e.op, "gan_cast") == 0) {
            ck_assert_ptr_eq(e.inputs[0], h);
            ck_assert_int_eq(gan_tensor_dtype(e.output), GAN_F32);
            casts_in_scope++;
        }
    }
    ck_assert_int_eq(casts_in_scope, 1);
    gan_tensor *after = gan_add(CTX, inside, h);
    ck_assert_int_eq(gan_tensor_dtype(after), GAN_F16);
    gan_tensor *loss = gan_sum(CTX, after, GAN_ALL_AXES, 0);
    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 1, &w, &g, 0), GAN_OK);
    ck_assert_int_eq(gan_tensor_dtype(g), GAN_F32);
    /* loss = Σ (h·w + h) with h = x·w in FP16 and h·w in FP32. d/dw: h (FP32, inside
     * the scope) plus, through h, (w + 1)·x: the inside path's w is rounded to FP16 by
     * the cast's backward where it reaches h, added there to the outside path's 1 in
     * FP16, and multiplied by x in FP16. */
    float gv[3];
    fetch(g, gv, 3);
    for (int i = 0; i < 3; i++) {
        float x16 = round_f16(xv[i]), h16 = round_f16(x16 * round_f16(wv[i]));
        float dh = round_f16(round_f16(wv[i]) + 1.0f);
        float want = h16 + round_f16(dh * x16);
        ck_assert_msg(gv[i] == want, "dw[%d] = %.9g, want %.9g", i, (double)gv[i],
                      (double)want);
    }
    ok();
}
END_TEST

/* A penalty-like inner gradient: the forward ran in the FP32 scope "penalty", gan_grad
 * (create_graph) is called outside any scope, and every node its backward records sits
 * in "penalty" and is FP32; nodes of the 16-bit part stay 16 bit. */
START_TEST(test_backward_runs_in_node_scope)
{
    float wv[6] = { 0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.6f }, xv[4] = { 0.5f, -0.25f, 1.0f, 0.75f };
    int64_t wd[2] = { 3, 2 }, xd[2] = { 2, 2 };
    gan_tensor *w = param(2, wd, wv);
    policy(GAN_F16, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "penalty"), GAN_OK);
    gan_tensor *x = make(GAN_F32, 2, xd, xv);
    gan_tensor *d_out = gan_tanh(CTX, gan_matmul(CTX, x, w, 0, 1));     /* 16 bit */
    ck_assert_int_eq(gan_tensor_dtype(d_out), GAN_F16);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "penalty"), GAN_OK);
    gan_tensor *xh = make(GAN_F32, 2, xd, xv);
    gan_tensor_set_requires_grad(xh, 1);
    gan_tensor *dp = gan_sum(CTX, gan_tanh(CTX, gan_matmul(CTX, xh, w, 0, 1)), 1, 0);
    gan_ctx_scope_pop(CTX);
    ck_assert_int_eq(gan_tensor_dtype(dp), GAN_F32);
    size_t before = gan_ctx_tape_length(CTX);
    gan_tensor *seed = gan_tensor_full(CTX, GAN_F32, 1, xd, 1.0f);
    gan_tensor *gx = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &dp, &seed, 1, &xh, &gx, 1), GAN_OK);
    ck_assert_int_eq(gan_tensor_dtype(gx), GAN_F32);
    struct gan_tape_entry e;
    int recorded = 0;
    for (size_t i = before; i < gan_ctx_tape_length(CTX); i++) {
        ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
        if (!e.from_backward || e.policy_off)
            continue;   /* gradient sums are gan_grad's bookkeeping, in the caller's scope */
        recorded++;
        ck_assert_msg(strcmp(e.scope, "penalty") == 0 && e.fp32_scope, "%s recorded by the "
                      "backward in scope \"%s\"", e.op, e.scope);
        ck_assert_msg(gan_tensor_dtype(e.output) == GAN_F32, "%s recorded by the backward "
                      "is %s", e.op, dn(gan_tensor_dtype(e.output)));
    }
    ck_assert_int_gt(recorded, 3);
    /* Differentiate the inner gradient again with the 16-bit part added: the outer
     * backward runs each node in its own scope, and w's gradient is FP32. */
    gan_tensor *loss = gan_add(CTX, gan_sum(CTX, gan_square(CTX, gx), GAN_ALL_AXES, 0),
                               gan_sum(CTX, d_out, GAN_ALL_AXES, 0));
    size_t mid = gan_ctx_tape_length(CTX);
    gan_tensor *gw = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 1, &w, &gw, 1), GAN_OK);
    ck_assert_int_eq(gan_tensor_dtype(gw), GAN_F32);
    int in_penalty = 0, outside = 0;
    for (size_t i = mid; i < gan_ctx_tape_length(CTX); i++) {
        ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
        if (!e.from_backward || e.policy_off || strcmp(e.op, "gan_cast") == 0)
            continue;
        if (strcmp(e.scope, "penalty") == 0) {
            in_penalty++;
            ck_assert_int_eq(gan_tensor_dtype(e.output), GAN_F32);
        } else if (strcmp(e.op, "gan_matmul") == 0) {
            outside++;
            ck_assert_int_eq(gan_tensor_dtype(e.output), GAN_F16);
        }
    }
    ck_assert_int_gt(in_penalty, 3);
    ck_assert_int_gt(outside, 0);
    ok();
}
END_TEST

/* ------------------------------------------------------------------ a small critic */

#define MC_IN 3
#define MC_HID 6
#define MC_B 4

/* 3 → 6 → 6 → 1 with tanh, scopes critic.fcI as the shipped models use. */
struct mini {
    gan_tensor *w[3], *b[3];
    float *host[6];
    int64_t n[6];
};

static void mini_make(struct mini *m, uint64_t seed)
{
    static const int64_t shapes[3][2] = { { MC_HID, MC_IN }, { MC_HID, MC_HID }, { 1, MC_HID } };
    rng_state = seed;
    for (int i = 0; i < 3; i++) {
        int64_t bd[1] = { shapes[i][0] };
        m->n[2 * i] = shapes[i][0] * shapes[i][1];
        m->n[2 * i + 1] = shapes[i][0];
        m->host[2 * i] = malloc((size_t)m->n[2 * i] * sizeof(float));
        m->host[2 * i + 1] = malloc((size_t)m->n[2 * i + 1] * sizeof(float));
        for (int64_t k = 0; k < m->n[2 * i]; k++)
            m->host[2 * i][k] = uniform(-0.9f, 0.9f);
        for (int64_t k = 0; k < m->n[2 * i + 1]; k++)
            m->host[2 * i + 1][k] = uniform(-0.3f, 0.3f);
        m->w[i] = param(2, shapes[i], m->host[2 * i]);
        m->b[i] = param(1, bd, m->host[2 * i + 1]);
    }
}

static void mini_free(struct mini *m)
{
    for (int i = 0; i < 6; i++)
        free(m->host[i]);
    for (int i = 0; i < 3; i++) {
        gan_tensor_free(m->w[i]);
        gan_tensor_free(m->b[i]);
    }
}

static gan_tensor *mini_param(struct mini *m, int p)
{
    return p % 2 ? m->b[p / 2] : m->w[p / 2];
}

static gan_tensor *mini_forward(struct mini *m, gan_tensor *x)
{
    /* Room for any int: under UBSan gcc loses the loop's bound on i and warns. */
    char name[16];
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "critic"), GAN_OK);
    gan_tensor *h = x;
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "fc%d", i);
        ck_assert_int_eq(gan_ctx_scope_push(CTX, name), GAN_OK);
        h = gan_add(CTX, gan_matmul(CTX, h, m->w[i], 0, 1), m->b[i]);
        gan_ctx_scope_pop(CTX);
        if (i < 2)
            h = gan_tanh(CTX, h);
    }
    gan_ctx_scope_pop(CTX);
    return h;
}

/* P = mean_b (‖∇ₓ Σ D(x)‖₂ − 1)², built as the gradient-penalty term builds it, in the
 * scope "penalty"; xhat is a leaf that requires a gradient. */
static gan_tensor *mini_penalty(struct mini *m, gan_tensor *xhat)
{
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "penalty"), GAN_OK);
    gan_tensor *d = mini_forward(m, xhat);
    int64_t dd[2] = { gan_tensor_dim(d, 0), 1 };
    gan_tensor *seed = gan_tensor_full(CTX, gan_tensor_dtype(d), 2, dd, 1.0f);
    gan_tensor *g = NULL;
    ck_assert_msg(gan_grad(CTX, 1, &d, &seed, 1, &xhat, &g, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    gan_tensor *sumsq = gan_sum(CTX, gan_square(CTX, g), 1, 0);
    if (gan_tensor_dtype(sumsq) != GAN_F32)
        sumsq = gan_cast(CTX, sumsq, GAN_F32);
    gan_tensor *norm = gan_sqrt(CTX, gan_add_scalar(CTX, sumsq, 1e-12f));
    gan_tensor *p = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX, norm, -1.0f)),
                             GAN_ALL_AXES, 0);
    gan_ctx_scope_pop(CTX);
    ck_assert_msg(p, "%s", gan_ctx_error(CTX));
    return p;
}

static gan_tensor *batch(uint64_t seed, int requires_grad)
{
    float v[MC_B * MC_IN];
    rng_state = seed;
    for (int i = 0; i < MC_B * MC_IN; i++)
        v[i] = uniform(-1.5f, 1.5f);
    int64_t d[2] = { MC_B, MC_IN };
    gan_tensor *t = make(GAN_F32, 2, d, v);
    if (requires_grad)
        gan_tensor_set_requires_grad(t, 1);
    return t;
}

/* The penalty with "penalty" as an FP32 scope gives the FP32 run's value and parameter
 * gradients bit for bit, while the critic on a real batch, outside the scope, ran in
 * 16 bit in the same step. */
START_TEST(test_penalty_fp32_scope_exact)
{
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    struct mini m;
    mini_make(&m, 21);
    gan_tensor *params[6];
    for (int p = 0; p < 6; p++)
        params[p] = mini_param(&m, p);
    float want_p, got_p, want_g[6][MC_HID * MC_HID], got_g[6][MC_HID * MC_HID];

    /* FP32. */
    gan_tensor *pen = mini_penalty(&m, batch(5, 1));
    gan_tensor *g[6];
    ck_assert_int_eq(gan_grad(CTX, 1, &pen, NULL, 6, params, g, 0), GAN_OK);
    want_p = scalar_of(pen);
    for (int p = 0; p < 6; p++)
        fetch(g[p], want_g[p], (size_t)m.n[p]);
    gan_ctx_step_end(CTX);

    /* 16-bit O2 with the penalty in FP32. */
    policy(dt, GAN_PRECISION_O2);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "penalty"), GAN_OK);
    gan_tensor *d_real = mini_forward(&m, batch(6, 0));
    ck_assert_int_eq(gan_tensor_dtype(d_real), dt);
    pen = mini_penalty(&m, batch(5, 1));
    ck_assert_int_eq(gan_tensor_dtype(pen), GAN_F32);
    ck_assert_int_eq(gan_grad(CTX, 1, &pen, NULL, 6, params, g, 0), GAN_OK);
    got_p = scalar_of(pen);
    ck_assert_msg(got_p == want_p, "%s penalty %.9g, FP32 %.9g", dn(dt), (double)got_p,
                  (double)want_p);
    for (int p = 0; p < 6; p++) {
        fetch(g[p], got_g[p], (size_t)m.n[p]);
        for (int64_t k = 0; k < m.n[p]; k++)
            ck_assert_msg(got_g[p][k] == want_g[p][k], "parameter %d[%lld]: %.9g, FP32 %.9g", p,
                          (long long)k, (double)got_g[p][k], (double)want_g[p][k]);
    }
    gan_ctx_step_end(CTX);

    /* Without the pattern the same penalty is computed in 16 bit, and differs. */
    gan_ctx_clear_fp32_scopes(CTX);
    pen = mini_penalty(&m, batch(5, 1));
    got_p = scalar_of(pen);
    ck_assert_msg(got_p != want_p && fabsf(got_p - want_p) <= 0.05f * fabsf(want_p),
                  "%s penalty without the FP32 scope: %.9g, FP32 %.9g", dn(dt),
                  (double)got_p, (double)want_p);
    gan_ctx_step_end(CTX);
    mini_free(&m);
}
END_TEST

/* ------------------------------------------------------------------ the cast cache */

static int64_t count_param_casts(gan_tensor *const *params, int n, int *per_param)
{
    int64_t total = 0;
    for (int p = 0; p < n; p++)
        per_param[p] = 0;
    struct gan_tape_entry e;
    for (size_t i = 0; i < gan_ctx_tape_length(CTX); i++) {
        ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
        if (strcmp(e.op, "gan_cast") != 0)
            continue;
        for (int p = 0; p < n; p++)
            if (e.inputs[0] == params[p]) {
                per_param[p]++;
                total++;
            }
    }
    return total;
}

/* One cast per weight per step: three matmuls with the same FP32 weight and a 16-bit
 * input cost the backend one cast in all. */
START_TEST(test_weight_cast_once)
{
    float wv[6] = { 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f }, xv[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t wd[2] = { 3, 2 }, xd[2] = { 2, 3 };
    gan_tensor *w = param(2, wd, wv);
    gan_tensor *x = make(GAN_F16, 2, xd, xv);
    policy(GAN_F16, GAN_PRECISION_O2);
    struct gan_ctx_stats s0, s1;
    gan_ctx_get_stats(CTX, &s0);
    for (int i = 0; i < 3; i++)
        ck_assert_ptr_nonnull(gan_matmul(CTX, x, w, 0, 0));
    gan_ctx_get_stats(CTX, &s1);
    ck_assert_uint_eq(s1.backend_casts - s0.backend_casts, 1);
    ck_assert_uint_eq(s1.policy_casts - s0.policy_casts, 1);
    ck_assert_uint_eq(s1.cast_cache_hits - s0.cast_cache_hits, 2);
    /* New values: cast again, once. */
    wv[0] = 0.7f;
    ck_assert_int_eq(gan_tensor_set_from_host(CTX, w, wv, 6), GAN_OK);
    uint64_t c0 = backend_casts();
    gan_tensor *y1 = gan_matmul(CTX, x, w, 0, 0), *y2 = gan_matmul(CTX, x, w, 0, 0);
    ck_assert_uint_eq(backend_casts() - c0, 1);
    float v1[4], v2[4];
    fetch(y1, v1, 4);
    fetch(y2, v2, 4);
    ck_assert(v1[0] == v2[0] && v1[0] == round_f16(round_f16(0.7f) + 2 * round_f16(0.3f)
                                                   + 3 * round_f16(0.5f)));
    /* gan_tensor_copy into it and gan_tensor_touch also invalidate the copy. */
    gan_tensor *src = make(GAN_F32, 2, wd, wv);
    ck_assert_int_eq(gan_tensor_copy(CTX, w, src), GAN_OK);
    c0 = backend_casts();
    gan_matmul(CTX, x, w, 0, 0);
    gan_matmul(CTX, x, w, 0, 0);
    ck_assert_uint_eq(backend_casts() - c0, 1);
    gan_tensor_touch(w);
    c0 = backend_casts();
    gan_matmul(CTX, x, w, 0, 0);
    ck_assert_uint_eq(backend_casts() - c0, 1);
    /* A new step: once again (the optimizer updates parameters between steps). */
    gan_ctx_step_end(CTX);
    x = make(GAN_F16, 2, xd, xv);
    c0 = backend_casts();
    gan_matmul(CTX, x, w, 0, 0);
    gan_matmul(CTX, x, w, 0, 0);
    ck_assert_uint_eq(backend_casts() - c0, 1);
    ok();
}
END_TEST

/* A use without gradient recording (no-grad) and one with each get their own cast: the
 * unrecorded copy has no node through which a gradient could reach the weight. */
START_TEST(test_cache_separates_no_grad)
{
    float wv[2] = { 0.5f, 0.25f }, xv[2] = { 1.0f, 2.0f };
    int64_t wd[2] = { 2, 1 }, xd[2] = { 1, 2 };
    gan_tensor *w = param(2, wd, wv);
    gan_tensor *x = make(GAN_F32, 2, xd, xv);
    policy(GAN_BF16, GAN_PRECISION_O1);
    uint64_t c0 = backend_casts();
    gan_ctx_no_grad_push(CTX);
    gan_tensor *y0 = gan_matmul(CTX, x, w, 0, 0);
    gan_ctx_no_grad_pop(CTX);
    ck_assert(!gan_tensor_requires_grad(y0));
    gan_tensor *y = gan_matmul(CTX, x, w, 0, 0);
    gan_tensor *y2 = gan_matmul(CTX, x, w, 0, 0);
    /* x never needs a gradient, so its one cast serves both kinds; w once per kind. */
    ck_assert_uint_eq(backend_casts() - c0, 3);
    gan_tensor *loss = gan_sum(CTX, gan_add(CTX, y, y2), GAN_ALL_AXES, 0);
    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 1, &w, &g, 0), GAN_OK);
    float gv[2];
    fetch(g, gv, 2);
    ck_assert(gv[0] == 2.0f && gv[1] == 4.0f);
    ok();
}
END_TEST

/* A critic evaluated three times in a step (real, fake, the penalty's interpolates)
 * casts each parameter once; every parameter's cast is on the tape exactly once. */
START_TEST(test_critic_casts_each_parameter_once)
{
    struct mini m;
    mini_make(&m, 31);
    gan_tensor *params[6];
    for (int p = 0; p < 6; p++)
        params[p] = mini_param(&m, p);
    policy(GAN_F16, GAN_PRECISION_O2);
    gan_tensor *dr = mini_forward(&m, batch(1, 0));
    gan_tensor *df = mini_forward(&m, batch(2, 0));
    gan_tensor *pen = mini_penalty(&m, batch(3, 1));
    gan_tensor *loss = gan_add(CTX, gan_sub(CTX, gan_mean(CTX, df, GAN_ALL_AXES, 0),
                                            gan_mean(CTX, dr, GAN_ALL_AXES, 0)), pen);
    gan_tensor *g[6];
    ck_assert_int_eq(gan_grad(CTX, 1, &loss, NULL, 6, params, g, 0), GAN_OK);
    int per[6];
    ck_assert_int_eq(count_param_casts(params, 6, per), 6);
    for (int p = 0; p < 6; p++) {
        ck_assert_msg(per[p] == 1, "parameter %d was cast %d times", p, per[p]);
        ck_assert_int_eq(gan_tensor_dtype(g[p]), GAN_F32);
    }
    gan_ctx_step_end(CTX);
    mini_free(&m);
}
END_TEST

/* gan_tensor_grad16: the 16-bit gradient that reached a parameter's cast, whose
 * widening is the FP32 gradient; a bias reshaped before use is found through the
 * reshape; nothing in fp32 mode, or after the step. */
START_TEST(test_grad16_record)
{
    float wv[6] = { 0.5f, -0.3f, 0.2f, 0.9f, -0.7f, 0.1f }, bv[3] = { 0.01f, 0.02f, 0.03f };
    float xv[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    int64_t wd[2] = { 3, 2 }, bd[1] = { 3 }, xd[2] = { 4, 2 }, b3[2] = { 1, 3 };
    gan_tensor *w = param(2, wd, wv), *b = param(1, bd, bv);
    gan_tensor *params[2] = { w, b };
    for (int mode = 0; mode < 2; mode++) {
        policy(mode ? GAN_F16 : GAN_F32, GAN_PRECISION_O2);
        gan_tensor *x = make(GAN_F32, 2, xd, xv);
        gan_tensor *y = gan_add(CTX, gan_matmul(CTX, x, w, 0, 1), gan_reshape(CTX, b, 2, b3));
        /* The loss is scaled as a loss scaler would scale it: 1024·Σ y/1000. */
        gan_tensor *loss = gan_scale(CTX, gan_sum(CTX, y, GAN_ALL_AXES, 0), 1.024f);
        gan_tensor *g[2];
        ck_assert_msg(gan_grad(CTX, 1, &loss, NULL, 2, params, g, 0) == GAN_OK, "%s",
                      gan_ctx_error(CTX));
        if (!mode) {
            ck_assert_ptr_null(gan_tensor_grad16(w));
            ck_assert_ptr_null(gan_tensor_grad16(b));
            gan_ctx_step_end(CTX);
            continue;
        }
        for (int p = 0; p < 2; p++) {
            gan_tensor *g16 = gan_tensor_grad16(params[p]);
            ck_assert_msg(g16, "no 16-bit gradient for parameter %d", p);
            ck_assert_int_eq(gan_tensor_dtype(g16), GAN_F16);
            ck_assert_int_eq(gan_tensor_numel(g16), gan_tensor_numel(params[p]));
            float a[6], c[6];
            fetch(g16, a, (size_t)gan_tensor_numel(g16));
            fetch(g[p], c, (size_t)gan_tensor_numel(g[p]));
            for (int64_t k = 0; k < gan_tensor_numel(g16); k++)
                ck_assert(a[k] == c[k] && a[k] == round_f16(a[k]));
        }
        /* dL/db = 4 rows · 1.024, dL/dw[j][k] = 1.024 · Σ_rows x[:, k]. */
        float gb[3], gw[6];
        fetch(gan_tensor_grad16(b), gb, 3);
        fetch(gan_tensor_grad16(w), gw, 6);
        ck_assert(gb[0] == round_f16(4 * round_f16(1.024f)));
        ck_assert(gw[0] == round_f16(round_f16(1.024f) * 16) && gw[1] == round_f16(round_f16(1.024f) * 20));
        gan_ctx_step_end(CTX);
        ck_assert_ptr_null(gan_tensor_grad16(w));
    }
    ok();
}
END_TEST

/* ------------------------------------------------------------------ the shipped modules */

struct module {
    void *handle;
    const struct gan_plugin *plugin;
};

static struct module mlp_mod, gp_mod;

static void open_module(struct module *m, const char *path)
{
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(m->handle, "%s did not load: %s", path, dlerror());
    void *sym = dlsym(m->handle, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym, "%s has no %s", path, GAN_PLUGIN_SYMBOL);
    gan_plugin_descriptor_fn get;
    memcpy(&get, &sym, sizeof get);
    m->plugin = get();
    ck_assert_ptr_nonnull(m->plugin);
    ck_assert_int_eq(m->plugin->abi_major, GAN_ABI_MAJOR);
}

static void modules_setup(void)
{
    backend_fixture_setup();
    open_module(&mlp_mod, GAN_TEST_MODEL_DIR "/model-mlp.so");
    open_module(&gp_mod, GAN_TEST_LOSS_DIR "/loss-gradient-penalty.so");
}

static void modules_teardown(void)
{
    backend_fixture_teardown();
    struct module *all[2] = { &mlp_mod, &gp_mod };
    for (int i = 0; i < 2; i++) {
        if (all[i]->handle)
            dlclose(all[i]->handle);
        memset(all[i], 0, sizeof *all[i]);
    }
}

struct critic_call {
    const struct gan_model_ops *ops;
    gan_model *model;
};

/* As the trainer calls a model: inside a scope named for the network. */
static gan_tensor *critic_in_scope(void *arg, gan_ctx *ctx, gan_tensor *x)
{
    struct critic_call *c = arg;
    if (gan_ctx_scope_push(ctx, "critic") != GAN_OK)
        return NULL;
    gan_tensor *y = c->ops->forward(c->model, ctx, x);
    gan_ctx_scope_pop(ctx);
    return y;
}

/* The shipped gradient-penalty term with the shipped mlp critic: with the pattern
 * "penalty" its value and parameter gradients under 16-bit O2 equal the FP32 run's
 * exactly, its ops are on the tape as penalty.critic.fcI, and the critic's own forward
 * on the real batch ran in 16 bit. */
START_TEST(test_penalty_module_in_fp32_scope)
{
    enum gan_dtype dt = _i ? GAN_BF16 : GAN_F16;
    const struct gan_model_ops *mo = mlp_mod.plugin->ops;
    const struct gan_loss_ops *lo = gp_mod.plugin->ops;
    const char *const ms[] = { "width=8", "depth=2", "activation=tanh", "init=torch", NULL };
    const char *const ls[] = { "lambda=10", NULL };
    struct test_host mh, lh;
    test_host_init_declared(&mh, ms, mlp_mod.plugin->settings);
    test_host_init_declared(&lh, ls, gp_mod.plugin->settings);
    struct gan_model_io io;
    memset(&io, 0, sizeof io);
    io.in_ndim = io.out_ndim = 1;
    io.in_dims[0] = 2;
    io.out_dims[0] = 1;
    gan_net *net = NULL;
    ck_assert_int_eq(gan_net_new(CTX, "critic", &net), GAN_OK);
    gan_model *model = NULL;
    ck_assert_msg(mo->create(&mh.host, GAN_MODEL_CRITIC, &io, net, &model) == GAN_OK, "%s",
                  mh.last_error);
    uint64_t off = 0;
    ck_assert_int_eq(gan_net_init(net, 4, &off), GAN_OK);
    gan_loss *loss = NULL;
    ck_assert_msg(lo->create(&lh.host, &loss) == GAN_OK, "%s", lh.last_error);
    int np = (int)gan_net_count(net);
    struct critic_call call = { mo, model };
    float want = 0, want_g[64], got_g[64];
    int64_t total = gan_net_total(net);
    ck_assert_int_le(total, 64 * 4);
    float *want_all = malloc((size_t)total * sizeof(float));

    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1) {
            policy(dt, GAN_PRECISION_O2);
            ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "penalty"), GAN_OK);
        } else if (pass == 2) {
            gan_ctx_clear_fp32_scopes(CTX);
        }
        rng_state = 77;
        float rv[16], fv[16];
        for (int i = 0; i < 16; i++) {
            rv[i] = uniform(-1.5f, 1.5f);
            fv[i] = uniform(-1.5f, 1.5f);
        }
        int64_t bd[2] = { 8, 2 };
        gan_tensor *real = make(GAN_F32, 2, bd, rv), *fake = make(GAN_F32, 2, bd, fv);
        gan_tensor *d_real = critic_in_scope(&call, CTX, real);
        ck_assert_int_eq(gan_tensor_dtype(d_real), pass ? dt : GAN_F32);
        uint64_t stream = 100;
        struct gan_loss_inputs in;
        memset(&in, 0, sizeof in);
        in.real = real;
        in.fake = fake;
        in.d_real = d_real;
        in.d_fake = d_real;
        in.critic = critic_in_scope;
        in.critic_ctx = &call;
        in.seed = 9;
        in.offset = &stream;
        gan_tensor *term = lo->term(loss, CTX, GAN_LOSS_CRITIC, &in, NULL);
        ck_assert_msg(term, "%s", gan_ctx_error(CTX));
        ck_assert_str_eq(gan_ctx_scope(CTX), "");
        gan_tensor **g = calloc((size_t)np, sizeof *g);
        ck_assert_int_eq(gan_grad(CTX, 1, &term, NULL, np, gan_net_tensors(net), g, 0), GAN_OK);
        float v = scalar_of(term);
        int64_t at = 0;
        if (pass == 0) {
            want = v;
            for (int p = 0; p < np; p++) {
                int64_t n = gan_net_numel(net, (size_t)p);
                fetch(g[p], want_all + at, (size_t)n);
                at += n;
            }
            /* The tape holds the critic's layers inside the penalty. */
            int seen = 0;
            struct gan_tape_entry e;
            for (size_t i = 0; i < gan_ctx_tape_length(CTX); i++) {
                ck_assert_int_eq(gan_ctx_tape_entry(CTX, i, &e, sizeof e), GAN_OK);
                seen += strcmp(e.scope, "penalty.critic.fc1") == 0
                        && strcmp(e.op, "gan_matmul") == 0;
            }
            ck_assert_int_ge(seen, 1);
        } else if (pass == 1) {
            ck_assert_msg(v == want, "%s penalty %.9g, FP32 %.9g", dn(dt), (double)v,
                          (double)want);
            for (int p = 0; p < np; p++) {
                int64_t n = gan_net_numel(net, (size_t)p);
                fetch(g[p], got_g, (size_t)n);
                memcpy(want_g, want_all + at, (size_t)n * sizeof(float));
                for (int64_t k = 0; k < n; k++)
                    ck_assert_msg(got_g[k] == want_g[k], "%s[%lld]: %.9g, FP32 %.9g",
                                  gan_net_full_name(net, (size_t)p), (long long)k,
                                  (double)got_g[k], (double)want_g[k]);
                at += n;
            }
        } else {
            ck_assert_msg(v != want && fabsf(v - want) <= 0.05f * fabsf(want) + 1e-3f,
                          "%s penalty in 16 bit %.9g, FP32 %.9g", dn(dt), (double)v,
                          (double)want);
        }
        free(g);
        gan_ctx_step_end(CTX);
    }
    free(want_all);
    lo->destroy(loss);
    mo->destroy(model);
    gan_net_free(net);
}
END_TEST

/* ------------------------------------------------------------------ finite differences */

/* L(θ) = mean D(x) (first order) or the penalty P(θ) of mini_penalty (second order). */
static double mini_objective(struct mini *m, int second, gan_tensor **out)
{
    gan_tensor *v;
    if (second) {
        v = mini_penalty(m, batch(41, 1));
    } else {
        v = gan_mean(CTX, mini_forward(m, batch(41, 0)), GAN_ALL_AXES, 0);
    }
    ck_assert_msg(v, "%s", gan_ctx_error(CTX));
    if (out)
        *out = v;
    return scalar_of(v);
}

/* Analytic gradients under 16-bit O2 against central differences of the FP32 function;
 * the tolerance is derived at the top of this file. */
START_TEST(test_gradients_against_finite_differences)
{
    int second = _i % 2;
    enum gan_dtype dt = _i / 2 ? GAN_BF16 : GAN_F16;
    double u = unit_roundoff(dt), K = second ? 64.0 : 32.0, h = 1e-2;
    struct mini m;
    mini_make(&m, 51 + (uint64_t)second);
    gan_tensor *params[6];
    for (int p = 0; p < 6; p++)
        params[p] = mini_param(&m, p);

    policy(dt, GAN_PRECISION_O2);
    gan_tensor *obj = NULL;
    mini_objective(&m, second, &obj);
    ck_assert_int_eq(gan_tensor_dtype(obj), GAN_F32);
    gan_tensor *g[6];
    ck_assert_msg(gan_grad(CTX, 1, &obj, NULL, 6, params, g, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    float an[6][MC_HID * MC_HID];
    for (int p = 0; p < 6; p++) {
        ck_assert_int_eq(gan_tensor_dtype(g[p]), GAN_F32);
        fetch(g[p], an[p], (size_t)m.n[p]);
    }
    gan_ctx_step_end(CTX);

    policy(GAN_F32, GAN_PRECISION_O2);
    double worst = 0, reach = 0;
    for (int p = 0; p < 6; p++) {
        double fd[MC_HID * MC_HID], scale = 0;
        for (int64_t k = 0; k < m.n[p]; k++) {
            float keep = m.host[p][k];
            double f[2];
            for (int s = 0; s < 2; s++) {
                m.host[p][k] = keep + (s ? -(float)h : (float)h);
                ck_assert_int_eq(gan_tensor_set_from_host(CTX, params[p], m.host[p],
                                                          (size_t)m.n[p]), GAN_OK);
                f[s] = mini_objective(&m, second, NULL);
                gan_ctx_step_end(CTX);
            }
            m.host[p][k] = keep;
            ck_assert_int_eq(gan_tensor_set_from_host(CTX, params[p], m.host[p],
                                                      (size_t)m.n[p]), GAN_OK);
            /* The step actually taken, in FP32. */
            double step = (double)(keep + (float)h) - (double)(keep - (float)h);
            fd[k] = (f[0] - f[1]) / step;
            if (fabs(fd[k]) > scale)
                scale = fabs(fd[k]);
        }
        if (scale > reach)
            reach = scale;
        for (int64_t k = 0; k < m.n[p]; k++) {
            double tol = K * u * (fabs(fd[k]) + scale) + 1e-5;
            double err = fabs(an[p][k] - fd[k]);
            if (err / tol > worst)
                worst = err / tol;
            ck_assert_msg(err <= tol, "%s %s order, parameter %d[%lld]: analytic %.7g, "
                          "finite differences %.7g (tolerance %.3g)", dn(dt),
                          second ? "second" : "first", p, (long long)k, (double)an[p][k],
                          fd[k], tol);
        }
    }
    /* The derivatives are not all tiny, so no rule hides under the tolerance. */
    ck_assert_msg(reach > 0.05, "largest derivative %.3g", reach);
    fprintf(stderr, "check_precision: %s %s order: worst error %.2f of its tolerance\n",
            dn(dt), second ? "second" : "first", worst);
    mini_free(&m);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *precision_suite(void)
{
    Suite *s = suite_create("precision");
    TCase *tc = tcase_create("dtypes");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_policy_settings);
    tcase_add_loop_test(tc, test_result_dtypes, 0, N_DTYPE_CASES);
    suite_add_tcase(s, tc);

    tc = tcase_create("values");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_matmul_rounds_inputs_then_result, 0, 2);
    tcase_add_loop_test(tc, test_o2_elementwise_rounding, 0, 2);
    tcase_add_test(tc, test_o2_reductions);
    tcase_add_test(tc, test_o1_rest_is_fp32);
    tcase_add_loop_test(tc, test_linear_against_fp64, 0, 6);
    suite_add_tcase(s, tc);

    tc = tcase_create("range");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_fp16_underflow, 0, 4);
    tcase_add_loop_test(tc, test_overflow, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("scopes");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_scope_paths);
    tcase_add_test(tc, test_scope_refusals);
    tcase_add_loop_test(tc, test_pattern_matching, 0, N_MATCH);
    tcase_add_test(tc, test_tape_entries);
    tcase_add_test(tc, test_linear_tape_entry);
    tcase_add_test(tc, test_fp32_scope_boundaries);
    tcase_add_test(tc, test_backward_runs_in_node_scope);
    suite_add_tcase(s, tc);

    tc = tcase_create("penalty");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_penalty_fp32_scope_exact, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("modules");
    tcase_add_checked_fixture(tc, modules_setup, modules_teardown);
    tcase_add_loop_test(tc, test_penalty_module_in_fp32_scope, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("cast_cache");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_weight_cast_once);
    tcase_add_test(tc, test_cache_separates_no_grad);
    tcase_add_test(tc, test_critic_casts_each_parameter_once);
    tcase_add_test(tc, test_grad16_record);
    suite_add_tcase(s, tc);

    tc = tcase_create("finite_differences");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_gradients_against_finite_differences, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(precision_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
