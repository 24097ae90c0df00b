/* SPDX-License-Identifier: MIT */
/* fp8.c — FP8 products under a scaling recipe: each operand of a 16-bit product is
 * measured as its recipe asks, scaled, cast to FP8 in one counted pass, and multiplied
 * by the backend's FP8 GEMM (or widened back for an emulated convolution). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

/* A tag, a scope path (at most 1023 characters), an op, an occurrence and an operand. */
#define NAME_MAX_ 1200

static int is_fp8(enum gan_dtype dt)
{
    return dt == GAN_F8E4M3 || dt == GAN_F8E5M2;
}

gan_status gan_ctx_set_fp8(gan_ctx *ctx, const struct gan_fp8_setup *setup)
{
    const char *op = "gan_ctx_set_fp8";
    if (!ctx)
        return GAN_ERR_INVALID;
    if (!setup) {
        ctx->fp8_on = 0;
        return GAN_OK;
    }
    if (!is_fp8(setup->forward_format) || !is_fp8(setup->gradient_format))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: the formats must be GAN_F8E4M3 or "
                       "GAN_F8E5M2", op);
    if (!setup->recipe || !setup->recipe->plan || !setup->recipe->scales)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: FP8 products need a scaling recipe", op);
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    const char *missing = !ops->fp8_stats ? "fp8_stats"
                          : !ops->fp8_quantize ? "fp8_quantize"
                          : !ops->fp8_dequantize ? "fp8_dequantize"
                          : !ops->gemm_fp8 ? "gemm_fp8" : NULL;
    if (missing)
        return ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: this backend has no FP8 products (its "
                       "%s slot is empty): use precision.mode \"bf16\" or \"fp16\", or a "
                       "backend with FP8 products", op, missing);
    /* A module whose devices differ (CUDA below compute capability 8.9) fills the
     * slots and refuses every call on an instance without FP8: an empty measurement
     * asks (backend.h). */
    struct gan_fp8_layout none = { 0, 0, 0, GAN_FP8_ALONG_ROWS };
    struct gan_ref nothing = { NULL, 0, GAN_BF16 };
    struct gan_fp8_stats stats;
    gan_status st = ops->fp8_stats(ctx->be, &none, &nothing, 0, NULL, &stats);
    if (st != GAN_OK)
        return ti_backend_fail(ctx, op, "fp8_stats", st);
    ctx->fp8 = *setup;
    ctx->fp8_on = 1;
    return GAN_OK;
}

int gan_ctx_fp8_on(const gan_ctx *ctx)
{
    return ctx && ctx->fp8_on;
}

void gan_ctx_fp8_totals(gan_ctx *ctx, struct gan_fp8_totals *out, int reset)
{
    if (!ctx)
        return;
    if (out)
        *out = ctx->fp8_totals;
    if (reset)
        memset(&ctx->fp8_totals, 0, sizeof ctx->fp8_totals);
}

void gan_ctx_fp8_hold(gan_ctx *ctx, int hold)
{
    if (ctx)
        ctx->fp8_held += hold ? 1 : (ctx->fp8_held > 0 ? -1 : 0);
}

void gan_ctx_fp8_set_tag(gan_ctx *ctx, const char *tag)
{
    if (!ctx)
        return;
    tag = tag ? tag : "";
    /* Another kind of step counts its occurrences from 0, as a step of its own does. */
    if (strcmp(ctx->fp8_tag, tag) != 0)
        ctx->n_fp8_uses = 0;
    snprintf(ctx->fp8_tag, sizeof ctx->fp8_tag, "%s", tag);
}

void gan_ctx_fp8_set_totals(gan_ctx *ctx, const struct gan_fp8_totals *totals)
{
    if (ctx && totals)
        ctx->fp8_totals = *totals;
}

int ti_fp8_active(const gan_ctx *ctx, enum gan_dtype dt)
{
    return ctx->fp8_on && ctx->policy_off == 0 && ctx->prec_mode != GAN_F32
           && (dt == GAN_F16 || dt == GAN_BF16);
}

uint32_t ti_fp8_occurrence(gan_ctx *ctx, const char *op)
{
    for (size_t i = 0; i < ctx->n_fp8_uses; i++) {
        struct ti_fp8_use *u = &ctx->fp8_uses[i];
        if (u->scope == ctx->scope && strcmp(u->op, op) == 0)
            return u->count++;
    }
    if (ctx->n_fp8_uses == ctx->cap_fp8_uses) {
        size_t cap = ctx->cap_fp8_uses ? 2 * ctx->cap_fp8_uses : 32;
        struct ti_fp8_use *p = realloc(ctx->fp8_uses, cap * sizeof *p);
        if (!p)
            return UINT32_MAX;   /* the name then says so; the cast still runs */
        ctx->fp8_uses = p;
        ctx->cap_fp8_uses = cap;
    }
    ctx->fp8_uses[ctx->n_fp8_uses++] = (struct ti_fp8_use){ ctx->scope, op, 1 };
    return 0;
}

void ti_fp8_step_end(gan_ctx *ctx)
{
    ctx->n_fp8_uses = 0;
}

void ti_fp8_destroy(gan_ctx *ctx)
{
    free(ctx->fp8_uses);
    free(ctx->fp8_host);
    ctx->fp8_uses = NULL;
    ctx->fp8_host = NULL;
    ctx->n_fp8_uses = ctx->cap_fp8_uses = ctx->fp8_host_cap = 0;
}

static float *host_scratch(gan_ctx *ctx, size_t n)
{
    if (n > ctx->fp8_host_cap) {
        float *p = realloc(ctx->fp8_host, n * sizeof *p);
        if (!p)
            return NULL;
        ctx->fp8_host = p;
        ctx->fp8_host_cap = n;
    }
    return ctx->fp8_host;
}

/* The recipe's own reason for a failure, when its host kept one. */
static const char *why(const gan_ctx *ctx)
{
    return ctx->fp8.recipe_message ? ctx->fp8.recipe_message : "";
}

static const char *why_sep(const gan_ctx *ctx)
{
    return why(ctx)[0] ? ": " : "";
}

static int power_of_two(float s)
{
    int e;
    return frexpf(s, &e) == 0.5f;
}

/* One operand cast to FP8: q (FP8, x's shape), its scales (F32) and block length. */
struct fp8_operand {
    gan_tensor *q, *scale;
    int64_t block;
};

static gan_status quantize(gan_ctx *ctx, const char *op, const char *name, gan_tensor *x,
                           struct gan_fp8_layout layout, struct fp8_operand *out)
{
    const struct gan_recipe_ops *r = ctx->fp8.recipe;
    gan_recipe *rc = ctx->fp8.recipe_instance;
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    struct gan_recipe_operand operand;
    memset(&operand, 0, sizeof operand);
    operand.struct_size = sizeof operand;
    operand.name = name;
    operand.gradient = x->from_backward;
    operand.format = operand.gradient ? ctx->fp8.gradient_format : ctx->fp8.forward_format;
    operand.layout = layout;
    operand.layout.block = 0;
    operand.step = (int64_t)ctx->step_no;
    struct gan_recipe_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    gan_status st = r->plan(rc, &operand, &plan);
    if (st != GAN_OK)
        return ti_fail(ctx, st, "%s: recipe \"%s\" could not plan the cast of %s%s%s",
                       op, ctx->fp8.recipe_name, name, why_sep(ctx), why(ctx));
    if (plan.block < 0)
        return ti_fail(ctx, GAN_ERR_INTERNAL, "%s: recipe \"%s\" planned blocks of %lld "
                       "for %s", op, ctx->fp8.recipe_name, (long long)plan.block, name);
    operand.layout.block = plan.block;
    size_t n_scales = (size_t)gan_fp8_scale_count(&operand.layout);
    /* The host scratch holds the block amaxes, then (in place of them) the scales. */
    float *host = host_scratch(ctx, 2 * n_scales + 2);
    if (!host)
        return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory for %zu FP8 scales", op,
                       n_scales);
    float *block_amax = NULL, *scales = host + n_scales;
    struct gan_fp8_stats stats;
    int measured = (plan.want & (GAN_RECIPE_WANT_AMAX | GAN_RECIPE_WANT_HISTOGRAM)) != 0;
    if (plan.want) {
        if ((plan.want & GAN_RECIPE_WANT_BLOCK_AMAX) && plan.block > 0)
            block_amax = host;
        struct gan_ref xr = ti_ref(x);
        st = ops->fp8_stats(ctx->be, &operand.layout, &xr,
                            (plan.want & GAN_RECIPE_WANT_HISTOGRAM) != 0, block_amax, &stats);
        if (st != GAN_OK)
            return ti_backend_fail(ctx, op, "fp8_stats", st);
    }
    char reason[96] = "";
    st = r->scales(rc, &operand, measured ? &stats : NULL, block_amax, scales, reason);
    reason[sizeof reason - 1] = '\0';
    if (st != GAN_OK)
        return ti_fail(ctx, st, "%s: recipe \"%s\" gave no scales for %s%s%s", op,
                       ctx->fp8.recipe_name, name, why_sep(ctx), why(ctx));
    float smin = INFINITY, smax = 0.0f;
    for (size_t i = 0; i < n_scales; i++) {
        float s = scales[i];
        if (!(s > 0.0f) || !isfinite(s)
            || (plan.scale_type == GAN_RECIPE_SCALE_E8M0 && !power_of_two(s)))
            return ti_fail(ctx, GAN_ERR_INTERNAL, "%s: recipe \"%s\" gave %s the scale %g "
                           "(block %zu): a scale must be a positive finite FP32 number%s",
                           op, ctx->fp8.recipe_name, name, (double)s, i,
                           plan.scale_type == GAN_RECIPE_SCALE_E8M0
                               ? ", and a power of two under E8M0" : "");
        smin = fminf(smin, s);
        smax = fmaxf(smax, s);
    }
    int64_t sdim = (int64_t)n_scales;
    out->scale = gan_tensor_from_host(ctx, GAN_F32, 1, &sdim, scales);
    out->q = out->scale ? ti_new_step(ctx, op, operand.format, x->ndim, x->dim) : NULL;
    out->block = plan.block;
    if (!out->q)
        return ti_result(ctx, 0);
    struct gan_ref xr = ti_ref(x), sr = ti_ref(out->scale), qr = ti_ref(out->q);
    struct gan_fp8_cast_stats cast;
    memset(&cast, 0, sizeof cast);
    st = ops->fp8_quantize(ctx->be, &operand.layout, &xr, &sr, ctx->fp8.cast_flags, &qr,
                           &cast);
    if (st != GAN_OK)
        return ti_backend_fail(ctx, op, "fp8_quantize", st);
    if (ctx->fp8_held)
        return GAN_OK;
    if (r->observe && (st = r->observe(rc, &operand, &cast, scales)) != GAN_OK)
        return ti_fail(ctx, st, "%s: recipe \"%s\" could not take the cast of %s%s%s", op,
                       ctx->fp8.recipe_name, name, why_sep(ctx), why(ctx));

    struct gan_fp8_totals *t = &ctx->fp8_totals;
    double lmin = log2((double)smin), lmax = log2((double)smax);
    if (t->operands == 0 || lmin < t->log2_scale_min)
        t->log2_scale_min = lmin;
    if (t->operands == 0 || lmax > t->log2_scale_max)
        t->log2_scale_max = lmax;
    t->operands++;
    t->elements += cast.elements;
    t->overflow += cast.overflow;
    t->underflow += cast.underflow;
    t->subnormal += cast.subnormal;
    t->nonfinite += cast.nonfinite;
    if (ctx->fp8.report) {
        struct gan_fp8_operand_report rep = { name, operand.format, operand.gradient,
                                              operand.layout, smin, smax, cast, reason };
        ctx->fp8.report(ctx->fp8.report_arg, &rep);
    }
    return GAN_OK;
}

static void operand_name(gan_ctx *ctx, char *buf, const char *op, uint32_t occurrence,
                         const char *operand)
{
    snprintf(buf, NAME_MAX_, "%s%s%s/%s#%u/%s", ctx->fp8_tag, ctx->fp8_tag[0] ? "/" : "",
             ctx->scope ? ctx->scope->path : "-", op, (unsigned)occurrence, operand);
}

gan_status ti_fp8_gemm(gan_ctx *ctx, const char *op, uint32_t occurrence,
                       const struct gan_gemm *g, gan_tensor *a, const char *a_name,
                       gan_tensor *b, const char *b_name)
{
    char name[NAME_MAX_];
    struct gan_gemm_fp8 f;
    memset(&f, 0, sizeof f);
    f.g = *g;
    /* Each operand's blocks run along k, as the backend will read its scales. */
    struct gan_fp8_layout la, lb;
    gan_gemm_fp8_layouts(&f, &la, &lb);
    struct fp8_operand qa, qb;
    operand_name(ctx, name, op, occurrence, a_name);
    if (quantize(ctx, op, name, a, la, &qa) != GAN_OK)
        return ti_result(ctx, 0);
    operand_name(ctx, name, op, occurrence, b_name);
    if (quantize(ctx, op, name, b, lb, &qb) != GAN_OK)
        return ti_result(ctx, 0);
    f.g.a = ti_ref(qa.q);
    f.g.b = ti_ref(qb.q);
    f.scale_a = ti_ref(qa.scale);
    f.scale_b = ti_ref(qb.scale);
    f.block_a = qa.block;
    f.block_b = qb.block;
    gan_status st = gan_ctx_backend_ops(ctx)->gemm_fp8(ctx->be, &f);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "gemm_fp8", st);
}

gan_tensor *ti_fp8_widened(gan_ctx *ctx, const char *op, uint32_t occurrence,
                           gan_tensor *x, const char *name, int64_t rows, int64_t cols)
{
    char full[NAME_MAX_];
    operand_name(ctx, full, op, occurrence, name);
    struct gan_fp8_layout l = { rows, cols, 0, GAN_FP8_ALONG_ROWS };
    struct fp8_operand q;
    if (quantize(ctx, op, full, x, l, &q) != GAN_OK)
        return NULL;
    gan_tensor *y = ti_new_step(ctx, op, GAN_F32, x->ndim, x->dim);
    if (!y)
        return NULL;
    l.block = q.block;
    struct gan_ref qr = ti_ref(q.q), sr = ti_ref(q.scale), yr = ti_ref(y);
    gan_status st = gan_ctx_backend_ops(ctx)->fp8_dequantize(ctx->be, &l, &qr, &sr, &yr);
    if (st != GAN_OK) {
        ti_backend_fail(ctx, op, "fp8_dequantize", st);
        return NULL;
    }
    y->from_backward = x->from_backward;
    return y;
}
