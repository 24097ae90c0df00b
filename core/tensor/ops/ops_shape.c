/* SPDX-License-Identifier: MIT */
/* ops_shape.c — ops that move values without arithmetic: reshape, concatenation and
 * slicing along the batch axis, and dtype casts, each with its backward. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

/* dst[dst_row0 …] ← src[src_row0 …], `rows` rows of `row` elements (rounding when the
 * dtypes differ: COPY between dtypes is a cast). */
static gan_status copy_rows(gan_ctx *ctx, const char *op, const gan_tensor *src,
                            int64_t src_row0, gan_tensor *dst, int64_t dst_row0, int64_t rows,
                            int64_t row)
{
    if (rows == 0 || row == 0)
        return GAN_OK;
    if (!TI_HAS(ctx, op, unary))
        return ctx->status;
    int64_t n = rows * row;
    struct gan_shape shape = ti_shape(1, &n);
    struct gan_operand x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.buf = src->buf;
    x.offset = (size_t)(src_row0 * row);
    x.dtype = src->dtype;
    x.stride[0] = 1;
    y.buf = dst->buf;
    y.offset = (size_t)(dst_row0 * row);
    y.dtype = dst->dtype;
    y.stride[0] = 1;
    gan_status st = ctx->ops.unary(ctx->be, GAN_UNARY_COPY, 0.0f, &shape, &x, &y);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "unary", st);
}

/* Elements per row along axis 0. */
static int64_t row_size(const gan_tensor *t)
{
    int64_t r = 1;
    for (int d = 1; d < t->ndim; d++)
        r *= t->dim[d];
    return r;
}

/* ------------------------------------------------------------------ reshape */

static gan_status reshape_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                   gan_tensor **gin)
{
    gin[0] = gan_reshape(ctx, g, node->in[0]->ndim, node->in[0]->dim);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_reshape(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims)
{
    const char *op = "gan_reshape";
    char as[160], ts[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    /* Tensors own their buffers (no views), so the result is a copy: the tape may hold
     * both, and neither is ever written again. */
    gan_tensor *y = ti_new_step(ctx, op, a->dtype, ndim, dims);
    if (!y)
        return NULL;
    if (y->numel != a->numel) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s has %lld elements and %s has %lld; a reshape "
                "keeps the element count", op, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                (long long)a->numel, ti_dims_str(ts, sizeof ts, ndim, dims),
                (long long)y->numel);
        return NULL;
    }
    if (a->numel > 0) {
        if (!TI_HAS(ctx, op, copy))
            return NULL;
        gan_status st = ctx->ops.copy(ctx->be, y->buf, 0, a->buf, 0,
                                      (size_t)a->numel * gan_dtype_size(a->dtype));
        if (st != GAN_OK) {
            ti_backend_fail(ctx, op, "copy", st);
            return NULL;
        }
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, reshape_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    return y;
}

/* ------------------------------------------------------------------ concat0, slice0 */

/* d concat0(a, b) = (g[0 : n_a], g[n_a : n_a + n_b]). */
static gan_status concat0_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                   gan_tensor **gin)
{
    int64_t na = node->in[0]->dim[0], nb = node->in[1]->dim[0];
    if (node->needs[0])
        gin[0] = gan_slice0(ctx, g, 0, na);
    if (node->needs[1])
        gin[1] = gan_slice0(ctx, g, na, na + nb);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

gan_tensor *gan_concat0(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    const char *op = "gan_concat0";
    char as[160], bs[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !ti_check_input(ctx, op, "b", b))
        return NULL;
    int same = a->ndim == b->ndim && a->ndim >= 1;
    for (int d = 1; same && d < a->ndim; d++)
        same = a->dim[d] == b->dim[d];
    if (!same) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s and %s cannot be joined along axis 0: both "
                "need at least one dimension and the same sizes after the first", op,
                ti_dims_str(as, sizeof as, a->ndim, a->dim),
                ti_dims_str(bs, sizeof bs, b->ndim, b->dim));
        return NULL;
    }
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    memcpy(dims, a->dim, sizeof dims);
    dims[0] = a->dim[0] + b->dim[0];
    gan_tensor *y = ti_new_step(ctx, op, ti_result_dtype(a, b), a->ndim, dims);
    if (!y)
        return NULL;
    int64_t row = row_size(a);
    if (copy_rows(ctx, op, a, 0, y, 0, a->dim[0], row) != GAN_OK
        || copy_rows(ctx, op, b, 0, y, a->dim[0], b->dim[0], row) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, concat0_backward, a, b, &node) != GAN_OK)
        return NULL;
    return y;
}

/* d slice0(a, begin, end) = g padded with zero rows back to a's length: concat0 of
 * constants and g, so it stays differentiable in g. */
static gan_status slice0_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    const gan_tensor *a = node->in[0];
    int64_t begin = node->iparam[0], end = node->iparam[1];
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    memcpy(dims, a->dim, sizeof dims);
    gan_tensor *r = g;
    if (end - begin == 0) {
        gin[0] = gan_tensor_full(ctx, g->dtype, a->ndim, a->dim, 0.0f);
        return ti_result(ctx, gin[0] != NULL);
    }
    if (begin > 0) {
        dims[0] = begin;
        r = gan_concat0(ctx, gan_tensor_full(ctx, g->dtype, a->ndim, dims, 0.0f), r);
    }
    if (end < a->dim[0]) {
        dims[0] = a->dim[0] - end;
        r = gan_concat0(ctx, r, gan_tensor_full(ctx, g->dtype, a->ndim, dims, 0.0f));
    }
    gin[0] = r;
    return ti_result(ctx, r != NULL);
}

gan_tensor *gan_slice0(gan_ctx *ctx, gan_tensor *a, int64_t begin, int64_t end)
{
    const char *op = "gan_slice0";
    char as[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    if (a->ndim < 1 || begin < 0 || begin > end || end > a->dim[0]) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: rows [%lld, %lld) of %s: need 0 <= begin <= end "
                "<= %lld on a tensor with at least one dimension", op, (long long)begin,
                (long long)end, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                a->ndim ? (long long)a->dim[0] : 0LL);
        return NULL;
    }
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    memcpy(dims, a->dim, sizeof dims);
    dims[0] = end - begin;
    gan_tensor *y = ti_new_step(ctx, op, a->dtype, a->ndim, dims);
    if (!y || copy_rows(ctx, op, a, begin, y, 0, end - begin, row_size(a)) != GAN_OK)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, slice0_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = begin;
        node->iparam[1] = end;
    }
    return y;
}

/* ------------------------------------------------------------------ cast */

/* d cast(x) = g cast back to x's dtype (rounding there, as a real mixed-precision
 * backward does). A 16-bit gradient about to be widened into an FP32 tensor (a
 * parameter's, under the precision policy) is kept for gan_tensor_grad16 first. */
static gan_status cast_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    if (node->in[0]->dtype == GAN_F32 && g->dtype != GAN_F32)
        ti_note_grad16(ctx, node->in[0], g);
    gin[0] = gan_cast(ctx, g, node->in[0]->dtype);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_cast(gan_ctx *ctx, gan_tensor *a, enum gan_dtype dtype)
{
    const char *op = "gan_cast";
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    if (dtype != GAN_F32 && dtype != GAN_F16 && dtype != GAN_BF16) {
        const char *dn = gan_dtype_name(dtype);
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: the target dtype %s is not F32, F16 or BF16",
                op, dn ? dn : "(invalid)");
        return NULL;
    }
    gan_tensor *y = ti_new_step(ctx, op, dtype, a->ndim, a->dim);
    if (!y)
        return NULL;
    if (dtype == a->dtype) {
        if (ti_unary(ctx, op, GAN_UNARY_COPY, 0.0f, a, y) != GAN_OK)
            return NULL;
    } else if (ti_cast_into(ctx, op, a, y) != GAN_OK) {
        return NULL;
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, cast_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    return y;
}
