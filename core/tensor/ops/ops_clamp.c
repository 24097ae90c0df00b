/* SPDX-License-Identifier: MIT */
/* ops_clamp.c — clamping to [lo, hi] as torch.clamp does it: NaN stays NaN, and the
 * gradient passes only where the value was inside, through a mask op that is its own
 * derivative, so that a clamped forward can be differentiated twice. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

/* ------------------------------------------------------------------ kernel calls */

/* A 0-d step tensor of `dtype` holding `value`, rounded to it. */
static gan_tensor *scalar(gan_ctx *ctx, const char *op, enum gan_dtype dtype, float value)
{
    int64_t none[1] = { 1 };
    gan_tensor *t = ti_new_step(ctx, op, dtype, 0, none);
    if (t && ti_fill(ctx, op, t, value) != GAN_OK)
        return NULL;
    return t;
}

/* y ← a `bop` b over y's shape, a and b broadcast to it; y may be a or b (in place). */
static gan_status binary_into(gan_ctx *ctx, const char *op, enum gan_binary_op bop,
                              const gan_tensor *a, const gan_tensor *b, gan_tensor *y)
{
    if (!TI_HAS(ctx, op, binary))
        return ctx->status;
    struct gan_shape shape = ti_shape(y->ndim, y->dim);
    struct gan_operand ao = ti_operand(a, y->ndim, y->dim), bo = ti_operand(b, y->ndim, y->dim);
    struct gan_operand yo = ti_operand(y, y->ndim, y->dim);
    gan_status st = ctx->ops.binary(ctx->be, bop, &shape, &ao, &bo, &yo);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "binary", st);
}

/* The bounds as 0-d tensors of a's dtype, so that every comparison and the clamp itself
 * see the same rounded values. */
struct bounds {
    gan_tensor *lo, *hi;
};

static int make_bounds(gan_ctx *ctx, const char *op, enum gan_dtype dtype, float lo, float hi,
                       struct bounds *b)
{
    b->lo = scalar(ctx, op, dtype, lo);
    b->hi = b->lo ? scalar(ctx, op, dtype, hi) : NULL;
    return b->hi != NULL;
}

/* [lo ≤ a ≤ hi] as 0 or 1 in `dtype`: 1 − [a > hi] − [lo > a]. Both comparisons give 0
 * for a NaN, so the mask is 1 there: a NaN's output is NaN, and so is what reaches it. */
static gan_tensor *inside(gan_ctx *ctx, const char *op, const gan_tensor *a,
                          const struct bounds *b, enum gan_dtype dtype)
{
    gan_tensor *m = ti_new_step(ctx, op, dtype, a->ndim, a->dim);
    gan_tensor *under = m ? ti_new_step(ctx, op, dtype, a->ndim, a->dim) : NULL;
    gan_tensor *one = under ? scalar(ctx, op, dtype, 1.0f) : NULL;
    if (!one || binary_into(ctx, op, GAN_BINARY_GREATER, a, b->hi, m) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_GREATER, b->lo, a, under) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_SUB, one, m, m) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_SUB, m, under, m) != GAN_OK)
        return NULL;
    return m;
}

/* ------------------------------------------------------------------ the mask op */

static gan_tensor *clamp_mask(gan_ctx *ctx, gan_tensor *g, gan_tensor *a, float lo, float hi);

/* d(g·[lo ≤ a ≤ hi]) = gg·[lo ≤ a ≤ hi] with respect to g; the mask is a constant of the
 * graph (piecewise constant in a), so a's gradient through it is zero and not asked for. */
static gan_status clamp_mask_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                      gan_tensor **gin)
{
    gin[0] = clamp_mask(ctx, g, node->in[1], node->fparam[0], node->fparam[1]);
    return ti_result(ctx, gin[0] != NULL);
}

/* g·[lo ≤ a ≤ hi] in g's dtype (g shaped like a): a multiply, as ReLU's backward is, so
 * an infinite g where a was outside gives NaN rather than hiding the overflow. Recorded
 * when g wants a gradient (create_graph), with a riding along for the next order. */
static gan_tensor *clamp_mask(gan_ctx *ctx, gan_tensor *g, gan_tensor *a, float lo, float hi)
{
    const char *op = "gan_clamp_mask";
    char gs[160], as[160];
    if (!ti_check_input(ctx, op, "g", g) || !ti_check_input(ctx, op, "a", a))
        return NULL;
    if (g->numel != a->numel || g->ndim != a->ndim
        || memcmp(g->dim, a->dim, (size_t)a->ndim * sizeof a->dim[0]) != 0) {
        ti_fail(ctx, GAN_ERR_INTERNAL, "%s: the gradient is %s for a clamp of %s; they must "
                "have one shape (a bug in the caller)", op,
                ti_dims_str(gs, sizeof gs, g->ndim, g->dim),
                ti_dims_str(as, sizeof as, a->ndim, a->dim));
        return NULL;
    }
    struct bounds b;
    if (!make_bounds(ctx, op, a->dtype, lo, hi, &b))
        return NULL;
    gan_tensor *m = inside(ctx, op, a, &b, g->dtype);
    gan_tensor *y = m ? ti_new_step(ctx, op, g->dtype, g->ndim, g->dim) : NULL;
    if (!y || binary_into(ctx, op, GAN_BINARY_MUL, g, m, y) != GAN_OK)
        return NULL;
    if (!ti_wants_grad(ctx, g))
        return y;
    struct ti_node *node;
    if (ti_record(ctx, y, op, clamp_mask_backward, g, a, &node) != GAN_OK)
        return NULL;
    node->needs[1] = 0;
    node->fparam[0] = lo;
    node->fparam[1] = hi;
    return y;
}

/* ------------------------------------------------------------------ the clamp */

static gan_status clamp_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                 gan_tensor **gin)
{
    gin[0] = clamp_mask(ctx, g, node->in[0], node->fparam[0], node->fparam[1]);
    return ti_result(ctx, gin[0] != NULL);
}

/* How many values of a lie outside [lo, hi]: [a > hi] + [lo > a] summed along the last
 * axis on the backend (in FP32, exact for rows of fewer than 2^24 values) and the rows
 * on the host, so the count is exact at any size. */
static gan_status count_outside(gan_ctx *ctx, const char *op, gan_tensor *a,
                                const struct bounds *b, uint64_t *changed)
{
    gan_tensor *over = ti_new_step(ctx, op, GAN_F32, a->ndim, a->dim);
    gan_tensor *under = over ? ti_new_step(ctx, op, GAN_F32, a->ndim, a->dim) : NULL;
    if (!under || binary_into(ctx, op, GAN_BINARY_GREATER, a, b->hi, over) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_GREATER, b->lo, a, under) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_ADD, over, under, over) != GAN_OK)
        return ti_result(ctx, 0);
    gan_tensor *rows = over;
    if (a->ndim > 0) {
        /* Unrecorded (over requires nothing) and in FP32 (the policy off keeps it). */
        ctx->policy_off++;
        rows = gan_sum(ctx, over, -1, 0);
        ctx->policy_off--;
        if (!rows)
            return ti_result(ctx, 0);
    }
    size_t n = (size_t)rows->numel;
    float *host = malloc((n ? n : 1) * sizeof *host);
    if (!host)
        return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory for the count", op);
    gan_status st = gan_tensor_to_host(ctx, rows, host, n);
    uint64_t sum = 0;
    for (size_t i = 0; st == GAN_OK && i < n; i++)
        sum += (uint64_t)host[i];
    free(host);
    if (st == GAN_OK)
        *changed += sum;
    return st;
}

gan_tensor *ti_clamp(gan_ctx *ctx, gan_tensor *a, float lo, float hi, uint64_t *changed)
{
    const char *op = "gan_clamp";
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    if (isnan(lo) || isnan(hi) || lo > hi) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: bounds [%g, %g]: lo must not be above hi, and "
                "neither may be NaN", op, (double)lo, (double)hi);
        return NULL;
    }
    struct bounds b;
    if (!make_bounds(ctx, op, a->dtype, lo, hi, &b))
        return NULL;
    gan_tensor *y = ti_new_step(ctx, op, a->dtype, a->ndim, a->dim);
    gan_tensor *num = y ? ti_new_step(ctx, op, a->dtype, a->ndim, a->dim) : NULL;
    gan_tensor *minus_one = num ? scalar(ctx, op, a->dtype, -1.0f) : NULL;
    if (!minus_one)
        return NULL;
    /* fmaxf and fminf let a number win over a NaN, so MIN(MAX(a, lo), hi) turns a NaN
     * into lo; num = [|a| > −1] is 1 for every number, infinities too, and 0 for a NaN,
     * and y·num/num gives y back where it is 1 and 0/0 = NaN where it is 0. */
    if (binary_into(ctx, op, GAN_BINARY_MAX, a, b.lo, y) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_MIN, y, b.hi, y) != GAN_OK
        || ti_unary(ctx, op, GAN_UNARY_ABS, 0.0f, a, num) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_GREATER, num, minus_one, num) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_MUL, y, num, y) != GAN_OK
        || binary_into(ctx, op, GAN_BINARY_DIV, y, num, y) != GAN_OK)
        return NULL;
    if (changed && a->numel > 0 && count_outside(ctx, op, a, &b, changed) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, clamp_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->fparam[0] = lo;
        node->fparam[1] = hi;
    }
    return y;
}

gan_tensor *gan_clamp(gan_ctx *ctx, gan_tensor *a, float lo, float hi)
{
    return ti_clamp(ctx, a, lo, hi, NULL);
}
