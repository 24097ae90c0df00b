/* SPDX-License-Identifier: MIT */
/* ops_reduce.c — sums and means over axes, and the pair sum_to / broadcast_to, each
 * the other's gradient. Reductions accumulate in FP32 in the backend. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

/* Reduces x over the axes set in `axes` (bits of x's dimensions) into y, whose
 * element count is x's with those dimensions dropped. */
static gan_status reduce_into(gan_ctx *ctx, const char *op, enum gan_reduce_op rop,
                              const gan_tensor *x, uint32_t axes, gan_tensor *y)
{
    if (axes == 0)
        return ti_unary(ctx, op, GAN_UNARY_COPY, 0.0f, x, y);
    if (!TI_HAS(ctx, op, reduce))
        return ctx->status;
    /* y seen over x's shape: its contiguous strides with the reduced dimensions
     * kept as size 1, then stride 0 on those. */
    int64_t kept[GAN_TENSOR_MAX_DIMS], strides[GAN_TENSOR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        kept[d] = axes & (1u << d) ? 1 : x->dim[d];
    ti_strides(x->ndim, kept, strides);
    struct gan_shape shape = ti_shape(x->ndim, x->dim);
    struct gan_operand xo = ti_operand(x, x->ndim, x->dim);
    struct gan_operand yo;
    memset(&yo, 0, sizeof yo);
    yo.buf = y->buf;
    yo.dtype = y->dtype;
    for (int d = 0; d < x->ndim; d++)
        yo.stride[d] = axes & (1u << d) ? 0 : strides[d];
    gan_status st = ctx->ops.reduce(ctx->be, rop, &shape, &xo, axes, &yo);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "reduce", st);
}

/* ------------------------------------------------------------------ sum and mean */

/* g, shaped like the reduction's output, stretched back over its input. */
static gan_tensor *expand_back(gan_ctx *ctx, const struct ti_node *node, gan_tensor *g)
{
    const gan_tensor *a = node->in[0];
    uint32_t axes = (uint32_t)node->iparam[0];
    if (g->ndim != a->ndim) {
        /* keepdim was off: put the reduced axes back as size 1 first. */
        int64_t kept[GAN_TENSOR_MAX_DIMS];
        for (int d = 0; d < a->ndim; d++)
            kept[d] = axes & (1u << d) ? 1 : a->dim[d];
        g = gan_reshape(ctx, g, a->ndim, kept);
    }
    return gan_broadcast_to(ctx, g, a->ndim, a->dim);
}

/* d Σ = g broadcast back. */
static gan_status sum_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    gin[0] = expand_back(ctx, node, g);
    return ti_result(ctx, gin[0] != NULL);
}

/* d mean = g broadcast back, divided by the number of elements averaged. */
static gan_status mean_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    double count = (double)node->in[0]->numel / (double)(node->out->numel ? node->out->numel : 1);
    gin[0] = gan_scale(ctx, expand_back(ctx, node, g), count > 0 ? (float)(1.0 / count) : 0.0f);
    return ti_result(ctx, gin[0] != NULL);
}

static gan_tensor *reduce_forward(gan_ctx *ctx, const char *op, enum gan_reduce_op rop,
                                  gan_tensor *a, int axis, int keepdim, ti_backward_fn backward)
{
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    uint32_t axes = 0;
    if (axis == GAN_ALL_AXES) {
        axes = a->ndim ? (uint32_t)((1u << a->ndim) - 1u) : 0u;
    } else {
        int ax = axis < 0 ? axis + a->ndim : axis;
        if (ax < 0 || ax >= a->ndim) {
            ti_fail(ctx, GAN_ERR_INVALID, "%s: axis %d is outside a tensor of %d dimensions "
                    "(use 0 to %d, -1 for the last, or GAN_ALL_AXES)", op, axis, a->ndim,
                    a->ndim - 1);
            return NULL;
        }
        axes = 1u << ax;
    }
    int ndim = 0;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    for (int d = 0; d < a->ndim; d++) {
        if (!(axes & (1u << d)))
            dims[ndim++] = a->dim[d];
        else if (keepdim)
            dims[ndim++] = 1;
    }
    /* Over every element it is a loss reduction: FP32 under every policy. */
    int every = axes == (a->ndim ? (uint32_t)((1u << a->ndim) - 1u) : 0u);
    enum gan_dtype dt = ti_policy_apply(ctx, every ? TI_CLASS_LOSS_REDUCE : TI_CLASS_POINTWISE,
                                        &a, NULL);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *y = ti_new_step(ctx, op, dt, ndim, dims);
    if (!y || reduce_into(ctx, op, rop, a, axes, y) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, backward, a, NULL, &node) != GAN_OK)
        return NULL;
    if (node)
        node->iparam[0] = axes;
    return y;
}

gan_tensor *gan_sum(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim)
{
    return reduce_forward(ctx, "gan_sum", GAN_REDUCE_SUM, a, axis, keepdim, sum_backward);
}

gan_tensor *gan_mean(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim)
{
    return reduce_forward(ctx, "gan_mean", GAN_REDUCE_MEAN, a, axis, keepdim, mean_backward);
}

/* ------------------------------------------------------------------ sum_to, broadcast_to */

static int check_target(gan_ctx *ctx, const char *op, int ndim, const int64_t *dims)
{
    if (ndim < 0 || ndim > GAN_TENSOR_MAX_DIMS || (ndim > 0 && !dims)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: the target has ndim %d%s; it must have 0 to %d "
                "dimensions", op, ndim, ndim > 0 && !dims ? " and dims NULL" : "",
                GAN_TENSOR_MAX_DIMS);
        return 0;
    }
    return 1;
}

/* Whether `small` broadcasts to `big` (trailing dimensions aligned, equal or 1). */
static int broadcasts_to(int small_ndim, const int64_t *small, int big_ndim, const int64_t *big)
{
    if (small_ndim > big_ndim)
        return 0;
    for (int d = 0; d < small_ndim; d++) {
        int64_t s = small[d], b = big[d + big_ndim - small_ndim];
        if (s != b && s != 1)
            return 0;
    }
    return 1;
}

static gan_status sum_to_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gin[0] = gan_broadcast_to(ctx, g, node->in[0]->ndim, node->in[0]->dim);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_sum_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims)
{
    const char *op = "gan_sum_to";
    char as[160], ts[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !check_target(ctx, op, ndim, dims))
        return NULL;
    if (!broadcasts_to(ndim, dims, a->ndim, a->dim)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s cannot be summed down to %s: the target must "
                "broadcast to the tensor (trailing dimensions equal or 1, no more of them)",
                op, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                ti_dims_str(ts, sizeof ts, ndim, dims));
        return NULL;
    }
    int lead = a->ndim - ndim;
    uint32_t axes = 0;
    for (int d = 0; d < a->ndim; d++)
        if (d < lead || (dims[d - lead] == 1 && a->dim[d] != 1))
            axes |= 1u << d;
    gan_tensor *y = ti_new_step(ctx, op, a->dtype, ndim, dims);
    if (!y || reduce_into(ctx, op, GAN_REDUCE_SUM, a, axes, y) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, sum_to_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    return y;
}

static gan_status broadcast_to_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                        gan_tensor **gin)
{
    gin[0] = gan_sum_to(ctx, g, node->in[0]->ndim, node->in[0]->dim);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_broadcast_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims)
{
    const char *op = "gan_broadcast_to";
    char as[160], ts[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !check_target(ctx, op, ndim, dims))
        return NULL;
    if (!broadcasts_to(a->ndim, a->dim, ndim, dims)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s does not broadcast to %s (trailing dimensions "
                "must be equal or 1, and the target needs at least as many)", op,
                ti_dims_str(as, sizeof as, a->ndim, a->dim),
                ti_dims_str(ts, sizeof ts, ndim, dims));
        return NULL;
    }
    gan_tensor *y = ti_new_step(ctx, op, a->dtype, ndim, dims);
    if (!y || ti_unary(ctx, op, GAN_UNARY_COPY, 0.0f, a, y) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, broadcast_to_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    return y;
}
