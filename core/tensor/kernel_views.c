/* SPDX-License-Identifier: MIT */
/* kernel_views.c — the views of tensors that kernels take (shapes, strided operands,
 * refs) and the kernel calls every op builds on: unary kernels, fills and casts. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

/* ------------------------------------------------------------------ kernel views */

void ti_strides(int ndim, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

struct gan_shape ti_shape(int ndim, const int64_t *dims)
{
    struct gan_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int d = 0; d < ndim; d++)
        s.dim[d] = dims[d];
    return s;
}

struct gan_operand ti_operand(const gan_tensor *t, int ndim, const int64_t *dims)
{
    struct gan_operand o;
    int64_t own[GAN_TENSOR_MAX_DIMS];
    memset(&o, 0, sizeof o);
    o.buf = t->buf;
    o.offset = 0;
    o.dtype = t->dtype;
    ti_strides(t->ndim, t->dim, own);
    int lead = ndim - t->ndim;
    for (int d = 0; d < ndim; d++) {
        int td = d - lead;
        o.stride[d] = td < 0 || t->dim[td] == 1 ? 0 : own[td];
    }
    return o;
}

struct gan_ref ti_ref(const gan_tensor *t)
{
    struct gan_ref r;
    r.buf = t->buf;
    r.offset = 0;
    r.dtype = t->dtype;
    return r;
}

enum gan_dtype ti_result_dtype(const gan_tensor *a, const gan_tensor *b)
{
    if (!b || a->dtype == b->dtype)
        return a->dtype;
    /* F32 holds both 16-bit types; F16 and BF16 do not hold each other. */
    return GAN_F32;
}

gan_status ti_unary(gan_ctx *ctx, const char *op, enum gan_unary_op uop, float alpha,
                    const gan_tensor *x, gan_tensor *y)
{
    if (!TI_HAS(ctx, op, unary))
        return ctx->status;
    struct gan_shape shape = ti_shape(y->ndim, y->dim);
    struct gan_operand xo = ti_operand(x, y->ndim, y->dim);
    struct gan_operand yo = ti_operand(y, y->ndim, y->dim);
    gan_status st = ctx->ops.unary(ctx->be, uop, alpha, &shape, &xo, &yo);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "unary", st);
}

gan_status ti_fill(gan_ctx *ctx, const char *op, gan_tensor *t, float value)
{
    return ti_unary(ctx, op, GAN_UNARY_FILL, value, t, t);
}

gan_tensor *ti_ones_like(gan_ctx *ctx, const char *op, const gan_tensor *t)
{
    gan_tensor *o = ti_new_step(ctx, op, t->dtype, t->ndim, t->dim);
    if (o && ti_fill(ctx, op, o, 1.0f) != GAN_OK)
        return NULL;
    return o;
}

/* y ← x rounded to y's dtype, n elements, both at offset 0. */
gan_status ti_raw_cast(gan_ctx *ctx, const char *op, gan_buffer *x, enum gan_dtype xt,
                       gan_buffer *y, enum gan_dtype yt, size_t n)
{
    if (n == 0)
        return GAN_OK;
    if (!TI_HAS(ctx, op, cast))
        return ctx->status;
    struct gan_ref xr = { x, 0, xt }, yr = { y, 0, yt };
    ctx->backend_casts++;
    gan_status st = ctx->ops.cast(ctx->be, n, &xr, &yr, NULL);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "cast", st);
}

gan_status ti_cast_into(gan_ctx *ctx, const char *op, const gan_tensor *src, gan_tensor *dst)
{
    return ti_raw_cast(ctx, op, src->buf, src->dtype, dst->buf, dst->dtype,
                       (size_t)src->numel);
}

gan_tensor *ti_as_dtype(gan_ctx *ctx, const char *op, gan_tensor *t, enum gan_dtype dtype)
{
    if (t->dtype == dtype)
        return t;
    gan_tensor *c = ti_new_step(ctx, op, dtype, t->ndim, t->dim);
    if (c && ti_raw_cast(ctx, op, t->buf, t->dtype, c->buf, dtype, (size_t)t->numel) != GAN_OK)
        return NULL;
    return c;
}
