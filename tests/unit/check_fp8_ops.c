/* SPDX-License-Identifier: MIT */
/* check_fp8_ops.c — FP8 products in the tensor engine (tensor_core.h, "FP8 products"):
 * the wiring, where every cast is exact, gives FP32's values and gradients bit for bit
 * at first and second order for a linear layer and a convolution; the operands' names
 * and formats (E4M3 forward, E5M2 gradients, a seed given to gan_grad included); a
 * scaled product against a reference written here (its own FP8 rounding, FP64 sums);
 * flushes counted; FP32 scopes exempt. */
#include "config.h"

#include <math.h>
#include <stdio.h>
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

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* FP32 to BF16 and back, rounding to nearest even (finite values). */
static float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ------------------------------------------------------------------ test recipes */

/* Two recipes written here, so that the engine is tested without the shipped plugins:
 * "unit" (scale 1, no statistics) and "pow2" (per tensor, the largest power of two that
 * keeps amax·s within the format's largest value: the "current" rule with margin 0). */
struct test_recipe {
    int pow2;
};

static gan_status tr_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                          struct gan_recipe_plan *plan)
{
    (void)op;
    plan->want = ((struct test_recipe *)(void *)rc)->pow2 ? GAN_RECIPE_WANT_AMAX : 0;
    plan->block = 0;
    plan->scale_type = GAN_RECIPE_SCALE_E8M0;
    return GAN_OK;
}

static gan_status tr_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                            const struct gan_fp8_stats *stats, const float *block_amax,
                            float *scales, char reason[96])
{
    (void)block_amax;
    (void)reason;
    float s = 1.0f;
    if (((struct test_recipe *)(void *)rc)->pow2 && stats->amax > 0.0f) {
        double max = op->format == GAN_F8E4M3 ? 448.0 : 57344.0;
        s = (float)ldexp(1.0, (int)floor(log2(max / stats->amax)));
    }
    scales[0] = s;
    return GAN_OK;
}

static const struct gan_recipe_ops test_recipe_ops = {
    .struct_size = sizeof(struct gan_recipe_ops), .plan = tr_plan, .scales = tr_scales
};

/* What the report callback saw, in order. */
#define MAX_SEEN 64
static struct seen {
    char name[128];
    enum gan_dtype format;
    int gradient;
    float scale;
    uint64_t underflow, elements;
} seen[MAX_SEEN];
static int n_seen;

static void record(void *arg, const struct gan_fp8_operand_report *r)
{
    (void)arg;
    if (n_seen == MAX_SEEN)
        return;
    struct seen *s = &seen[n_seen++];
    snprintf(s->name, sizeof s->name, "%s", r->name);
    s->format = r->format;
    s->gradient = r->gradient;
    s->scale = r->scale_min;
    s->underflow = r->cast.underflow;
    s->elements = r->cast.elements;
}

static struct test_recipe unit_recipe = { 0 }, pow2_recipe = { 1 };

static void fp8_on(struct test_recipe *r, enum gan_dtype gradient_format)
{
    ck_assert_msg(gan_ctx_set_precision(CTX, GAN_BF16, GAN_PRECISION_O2) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    struct gan_fp8_setup s;
    memset(&s, 0, sizeof s);
    s.forward_format = GAN_F8E4M3;
    s.gradient_format = gradient_format;
    s.cast_flags = GAN_CAST_SATURATE;
    s.recipe = &test_recipe_ops;
    s.recipe_instance = (gan_recipe *)(void *)r;
    s.recipe_name = r->pow2 ? "pow2" : "unit";
    s.report = record;
    ck_assert_msg(gan_ctx_set_fp8(CTX, &s) == GAN_OK, "%s", gan_ctx_error(CTX));
    n_seen = 0;
}

static void fp32_on(void)
{
    ck_assert_int_eq(gan_ctx_set_fp8(CTX, NULL), GAN_OK);
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_F32, GAN_PRECISION_O2), GAN_OK);
}

/* Values every format here holds exactly (E5M2 too) and whose small sums BF16 holds. */
static void exact_values(float *v, size_t n, unsigned seed)
{
    static const float pick[5] = { -1.0f, -0.5f, 0.0f, 0.5f, 1.0f };
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = pick[(seed >> 16) % 5];
    }
}

/* ------------------------------------------------------------------ the wiring */

enum { B = 4, IN = 8, OUT = 3 };

/* y = linear(x, w, b) in scope "fc"; loss = Σ y⊙g. Returns the first-order gradients
 * of x, w and b, and the second-order one: ∂/∂w Σ h⊙(∂loss/∂x). */
static void linear_grads(float *y_out, float *gx, float *gw, float *gb, float *ggw)
{
    float xv[B * IN], wv[OUT * IN], bv[OUT], gv[B * OUT], hv[B * IN], one = 1.0f;
    exact_values(xv, B * IN, 1);
    exact_values(wv, OUT * IN, 2);
    exact_values(bv, OUT, 3);
    exact_values(gv, B * OUT, 4);
    exact_values(hv, B * IN, 5);
    int64_t dx[2] = { B, IN }, dw[2] = { OUT, IN }, db = OUT, dg[2] = { B, OUT };
    gan_tensor *x = make(GAN_F32, 2, dx, xv), *w = make(GAN_F32, 2, dw, wv);
    gan_tensor *b = make(GAN_F32, 1, &db, bv), *g = make(GAN_F32, 2, dg, gv);
    gan_tensor *h = make(GAN_F32, 2, dx, hv), *seed = make(GAN_F32, 0, NULL, &one);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor_set_requires_grad(w, 1);
    gan_tensor_set_requires_grad(b, 1);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc"), GAN_OK);
    gan_tensor *y = gan_linear(CTX, x, w, b);
    gan_ctx_scope_pop(CTX);
    gan_tensor *loss = gan_sum(CTX, gan_mul(CTX, y, g), GAN_ALL_AXES, 0);
    ok();
    fetch(y, y_out, B * OUT);
    gan_tensor *in[3] = { x, w, b }, *gr[3];
    ck_assert_msg(gan_grad(CTX, 1, &loss, &seed, 3, in, gr, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    fetch(gr[0], gx, B * IN);
    fetch(gr[1], gw, OUT * IN);
    fetch(gr[2], gb, OUT);
    gan_tensor *outer = gan_sum(CTX, gan_mul(CTX, gr[0], h), GAN_ALL_AXES, 0), *gg;
    ok();
    ck_assert_msg(gan_grad(CTX, 1, &outer, &seed, 1, &w, &gg, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    fetch(gg, ggw, OUT * IN);
    gan_ctx_step_end(CTX);
}

START_TEST(test_linear_wiring_exact)
{
    float y[2][B * OUT], gx[2][B * IN], gw[2][OUT * IN], gb[2][OUT], ggw[2][OUT * IN];
    fp32_on();
    linear_grads(y[0], gx[0], gw[0], gb[0], ggw[0]);
    fp8_on(&unit_recipe, GAN_F8E5M2);
    linear_grads(y[1], gx[1], gw[1], gb[1], ggw[1]);
    ck_assert_msg(n_seen >= 6, "the FP8 run cast %d operands", n_seen);
    for (int i = 0; i < B * OUT; i++)
        ck_assert_msg(same_bits(y[0][i], y[1][i]), "y[%d]: fp32 %g, fp8 %g", i,
                      (double)y[0][i], (double)y[1][i]);
    for (int i = 0; i < B * IN; i++)
        ck_assert_msg(same_bits(gx[0][i], gx[1][i]), "dx[%d]: %g vs %g", i,
                      (double)gx[0][i], (double)gx[1][i]);
    for (int i = 0; i < OUT * IN; i++) {
        ck_assert_msg(same_bits(gw[0][i], gw[1][i]), "dw[%d]: %g vs %g", i,
                      (double)gw[0][i], (double)gw[1][i]);
        ck_assert_msg(same_bits(ggw[0][i], ggw[1][i]), "d2w[%d]: %g vs %g", i,
                      (double)ggw[0][i], (double)ggw[1][i]);
    }
    for (int i = 0; i < OUT; i++)
        ck_assert_msg(same_bits(gb[0][i], gb[1][i]), "db[%d]", i);
    /* Not a vacuous comparison: the second-order gradient is not all zeros. */
    int nonzero = 0;
    for (int i = 0; i < OUT * IN; i++)
        nonzero += ggw[0][i] != 0.0f;
    ck_assert_int_gt(nonzero, 0);
}
END_TEST

/* The same for a convolution: forward, data and filter gradients, and the filter's
 * second-order gradient through the data gradient. */
static void conv_grads(float *y_out, float *gx, float *gw, float *ggw)
{
    enum { N = 2, C = 2, H = 5, K = 3, CO = 3 };
    float xv[N * C * H * H], wv[CO * C * K * K], gv[N * CO * H * H], hv[N * C * H * H];
    float one = 1.0f;
    exact_values(xv, N * C * H * H, 11);
    exact_values(wv, CO * C * K * K, 12);
    exact_values(gv, N * CO * H * H, 13);
    exact_values(hv, N * C * H * H, 14);
    int64_t dx[4] = { N, C, H, H }, dw[4] = { CO, C, K, K }, dy[4] = { N, CO, H, H };
    gan_tensor *x = make(GAN_F32, 4, dx, xv), *w = make(GAN_F32, 4, dw, wv);
    gan_tensor *g = make(GAN_F32, 4, dy, gv), *h = make(GAN_F32, 4, dx, hv);
    gan_tensor *seed = make(GAN_F32, 0, NULL, &one);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor_set_requires_grad(w, 1);
    gan_tensor *y = gan_conv2d(CTX, x, w, 1, 1);
    gan_tensor *loss = gan_sum(CTX, gan_mul(CTX, y, g), GAN_ALL_AXES, 0);
    ok();
    fetch(y, y_out, N * CO * H * H);
    gan_tensor *in[2] = { x, w }, *gr[2];
    ck_assert_msg(gan_grad(CTX, 1, &loss, &seed, 2, in, gr, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    fetch(gr[0], gx, N * C * H * H);
    fetch(gr[1], gw, CO * C * K * K);
    gan_tensor *outer = gan_sum(CTX, gan_mul(CTX, gr[0], h), GAN_ALL_AXES, 0), *gg;
    ok();
    ck_assert_msg(gan_grad(CTX, 1, &outer, &seed, 1, &w, &gg, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    fetch(gg, ggw, CO * C * K * K);
    gan_ctx_step_end(CTX);
}

START_TEST(test_conv_wiring_exact)
{
    enum { NY = 2 * 3 * 25, NX = 2 * 2 * 25, NW = 3 * 2 * 9 };
    static float y[2][NY], gx[2][NX], gw[2][NW], ggw[2][NW];
    fp32_on();
    conv_grads(y[0], gx[0], gw[0], ggw[0]);
    fp8_on(&unit_recipe, GAN_F8E5M2);
    conv_grads(y[1], gx[1], gw[1], ggw[1]);
    ck_assert_msg(n_seen >= 6, "the FP8 run cast %d operands", n_seen);
    for (int i = 0; i < NY; i++)
        ck_assert_msg(same_bits(y[0][i], y[1][i]), "y[%d]: %g vs %g", i, (double)y[0][i],
                      (double)y[1][i]);
    for (int i = 0; i < NX; i++)
        ck_assert_msg(same_bits(gx[0][i], gx[1][i]), "dx[%d]: %g vs %g", i,
                      (double)gx[0][i], (double)gx[1][i]);
    int nonzero = 0;
    for (int i = 0; i < NW; i++) {
        ck_assert_msg(same_bits(gw[0][i], gw[1][i]), "dw[%d]: %g vs %g", i,
                      (double)gw[0][i], (double)gw[1][i]);
        ck_assert_msg(same_bits(ggw[0][i], ggw[1][i]), "d2w[%d]: %g vs %g", i,
                      (double)ggw[0][i], (double)ggw[1][i]);
        nonzero += ggw[0][i] != 0.0f;
    }
    ck_assert_int_gt(nonzero, 0);
}
END_TEST

/* ------------------------------------------------------------------ names and formats */

static const struct seen *find_seen(const char *name)
{
    for (int i = 0; i < n_seen; i++)
        if (strcmp(seen[i].name, name) == 0)
            return &seen[i];
    ck_abort_msg("no operand named %s was cast (%d were)", name, n_seen);
    return NULL;
}

START_TEST(test_names_and_formats)
{
    int e4m3_everywhere = _i;
    float y[B * OUT], gx[B * IN], gw[OUT * IN], gb[OUT], ggw[OUT * IN];
    fp8_on(&unit_recipe, e4m3_everywhere ? GAN_F8E4M3 : GAN_F8E5M2);
    linear_grads(y, gx, gw, gb, ggw);
    enum gan_dtype grad_fmt = e4m3_everywhere ? GAN_F8E4M3 : GAN_F8E5M2;
    /* The forward product: activation and weight. */
    const struct seen *s = find_seen("fc/gan_linear#0/x");
    ck_assert(!s->gradient && s->format == GAN_F8E4M3);
    s = find_seen("fc/gan_linear#0/w");
    ck_assert(!s->gradient && s->format == GAN_F8E4M3);
    /* The backward's products, in the node's scope: dx = g·w, then dw = gᵀ·x. */
    s = find_seen("fc/gan_matmul#0/a");
    ck_assert(s->gradient && s->format == grad_fmt);
    s = find_seen("fc/gan_matmul#0/b");
    ck_assert(!s->gradient && s->format == GAN_F8E4M3);
    s = find_seen("fc/gan_matmul#1/a");
    ck_assert(s->gradient && s->format == grad_fmt);
    s = find_seen("fc/gan_matmul#1/b");
    ck_assert(!s->gradient && s->format == GAN_F8E4M3);
    /* The double backward differentiates the first backward's dx = g·w: its products
     * take the outer gradient, made by a backward pass, in the gradient format. */
    int outer_grads = 0;
    for (int i = 0; i < n_seen; i++)
        outer_grads += seen[i].gradient && seen[i].format == grad_fmt;
    ck_assert_int_ge(outer_grads, 3);
    /* The names start again at #0 in the next step. */
    fp8_on(&unit_recipe, grad_fmt);
    linear_grads(y, gx, gw, gb, ggw);
    find_seen("fc/gan_linear#0/x");
}
END_TEST

/* A seed given to gan_grad is a gradient wherever it was made: the backward's first
 * product casts it in the gradient format even where it reaches the product uncast,
 * already in the product's dtype (a 16-bit seed of a 16-bit output under O2, as the
 * gradient penalty seeds its inner gradient). The scale is 1, so 9 tells the formats
 * apart: E4M3 holds it, E5M2 rounds it to 8. */
START_TEST(test_seed_is_a_gradient)
{
    float xv[2] = { 1, 1 }, wv[2] = { 1, 1 }, sv[1] = { 9 }, got[2];
    int64_t d[2] = { 1, 2 }, dy[2] = { 1, 1 };
    fp8_on(&unit_recipe, GAN_F8E5M2);
    gan_tensor *x = make(GAN_F32, 2, d, xv), *w = make(GAN_F32, 2, d, wv);
    gan_tensor_set_requires_grad(x, 1);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "fc"), GAN_OK);
    gan_tensor *y = gan_linear(CTX, x, w, NULL);
    gan_ctx_scope_pop(CTX);
    ok();
    ck_assert_int_eq(gan_tensor_dtype(y), GAN_BF16);
    gan_tensor *seed = make(GAN_BF16, 2, dy, sv), *gx;
    ck_assert_msg(gan_grad(CTX, 1, &y, &seed, 1, &x, &gx, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    const struct seen *s = find_seen("fc/gan_matmul#0/a");
    ck_assert_msg(s->gradient && s->format == GAN_F8E5M2,
                  "the seed was cast as %s, a %s operand", s->format == GAN_F8E5M2 ? "E5M2"
                  : "E4M3", s->gradient ? "gradient" : "forward");
    fetch(gx, got, 2);
    ck_assert_msg(got[0] == 8.0f && got[1] == 8.0f, "dx = (%g, %g), not (8, 8)",
                  (double)got[0], (double)got[1]);
    gan_ctx_step_end(CTX);
}
END_TEST

/* ------------------------------------------------------------------ a scaled product */

/* FP8 rounding written out: round to nearest even with `mant` stored mantissa bits, a
 * bias, subnormals, and saturation to `max`. */
static double to_fp8(double v, int mant, int min_normal_exp, double max)
{
    if (v == 0.0)
        return v;
    double a = fabs(v);
    int e;
    frexp(a, &e);                      /* a = m·2^e, m in [0.5, 1) */
    int exp = e - 1;
    if (exp < min_normal_exp)
        exp = min_normal_exp;          /* subnormal: the spacing of the smallest binade */
    double quantum = ldexp(1.0, exp - mant);
    double r = nearbyint(a / quantum) * quantum;   /* the FPU rounds to nearest even */
    if (r > max)
        r = max;
    return v < 0 ? -r : r;
}

START_TEST(test_scaled_product_reference)
{
    enum { M = 5, K = 37, N = 6 };
    float av[M * K], bv[K * N];
    unsigned s = 7;
    for (int i = 0; i < M * K; i++) {
        s = s * 1664525u + 1013904223u;
        av[i] = (float)(((int)(s >> 9) % 2001 - 1000) * 1e-5);
    }
    for (int i = 0; i < K * N; i++) {
        s = s * 1664525u + 1013904223u;
        bv[i] = (float)(((int)(s >> 9) % 2001 - 1000) * 3e-3);
    }
    fp8_on(&pow2_recipe, GAN_F8E5M2);
    int64_t da[2] = { M, K }, db[2] = { K, N };
    gan_tensor *a = make(GAN_F32, 2, da, av), *b = make(GAN_F32, 2, db, bv);
    gan_tensor *y = gan_matmul(CTX, a, b, 0, 0);
    ok();
    ck_assert_int_eq(gan_tensor_dtype(y), GAN_BF16);
    ck_assert_int_eq(n_seen, 2);
    float got[M * N];
    fetch(y, got, M * N);
    /* The reference: each operand rounded to BF16 (the policy's cast), scaled by the
     * scale the recipe chose, rounded to E4M3, multiplied out in FP64. */
    double sa = seen[0].scale, sb = seen[1].scale;
    ck_assert(sa > 1.0 && sb > 1.0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                float a16 = bf16_round(av[i * K + k]);
                float b16 = bf16_round(bv[k * N + j]);
                double qa = to_fp8((double)(float)(a16 * (float)sa), 3, -6, 448.0) / sa;
                double qb = to_fp8((double)(float)(b16 * (float)sb), 3, -6, 448.0) / sb;
                ref += qa * qb;
                mag += fabs(qa * qb);
            }
            /* FP32 sums (k·2^-24 of the magnitudes) and one rounding to BF16. */
            double bound = K * ldexp(mag, -24) + ldexp(fabs(ref), -8) + 1e-30;
            ck_assert_msg(fabs(got[i * N + j] - ref) <= bound,
                          "y[%d][%d] = %.9g, reference %.9g (bound %.3g)", i, j,
                          (double)got[i * N + j], ref, bound);
        }
}
END_TEST

/* Scale 1 flushes what lies below half E4M3's smallest subnormal (2^-10); the pow2
 * recipe moves the same values into range and flushes none. */
START_TEST(test_flushes_counted)
{
    enum { M = 4, K = 16 };
    float av[M * K], bv[K];
    for (int i = 0; i < M * K; i++)
        av[i] = 1e-4f * (float)(1 + i % 7);
    for (int i = 0; i < K; i++)
        bv[i] = 1.0f;
    int64_t da[2] = { M, K }, db[2] = { K, 1 };
    for (int pass = 0; pass < 2; pass++) {
        fp8_on(pass ? &pow2_recipe : &unit_recipe, GAN_F8E5M2);
        gan_ctx_fp8_totals(CTX, NULL, 1);
        gan_tensor *y = gan_matmul(CTX, make(GAN_F32, 2, da, av), make(GAN_F32, 2, db, bv),
                                   0, 0);
        ok();
        float got[M];
        fetch(y, got, M);
        struct gan_fp8_totals t;
        gan_ctx_fp8_totals(CTX, &t, 1);
        ck_assert_int_eq(t.operands, 2);
        ck_assert_int_eq(t.elements, M * K + K);
        if (pass == 0) {
            ck_assert_int_eq(t.underflow, M * K);
            ck_assert_int_eq(seen[0].underflow, M * K);
            for (int i = 0; i < M; i++)
                ck_assert(got[i] == 0.0f);
        } else {
            ck_assert_int_eq(t.underflow, 0);
            ck_assert(t.log2_scale_max >= 11.0);
            for (int i = 0; i < M; i++)
                ck_assert(got[i] > 0.0f);
        }
        gan_ctx_step_end(CTX);
    }
}
END_TEST

/* An FP32 scope casts nothing and computes in FP32. */
START_TEST(test_fp32_scope_exempt)
{
    float av[6] = { 0.25f, 2, 3, 4, 5, 6 }, bv[6] = { 1, 1, 1, 1, 1, 1 };
    int64_t d[2] = { 2, 3 }, dt[2] = { 3, 2 };
    fp8_on(&unit_recipe, GAN_F8E5M2);
    ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, "keep"), GAN_OK);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "keep"), GAN_OK);
    gan_tensor *y = gan_matmul(CTX, make(GAN_F32, 2, d, av), make(GAN_F32, 2, dt, bv), 0, 0);
    gan_ctx_scope_pop(CTX);
    ok();
    ck_assert_int_eq(gan_tensor_dtype(y), GAN_F32);
    ck_assert_int_eq(n_seen, 0);
    float got[4];
    fetch(y, got, 4);
    ck_assert(got[0] == 5.25f);
}
END_TEST

static Suite *fp8_ops_suite(void)
{
    Suite *s = suite_create("fp8_ops");
    TCase *tc = tcase_create("wiring");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_linear_wiring_exact);
    tcase_add_test(tc, test_conv_wiring_exact);
    tcase_add_loop_test(tc, test_names_and_formats, 0, 2);
    tcase_add_test(tc, test_seed_is_a_gradient);
    suite_add_tcase(s, tc);
    tc = tcase_create("scaled");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_scaled_product_reference);
    tcase_add_test(tc, test_flushes_counted);
    tcase_add_test(tc, test_fp32_scope_exempt);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(fp8_ops_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
