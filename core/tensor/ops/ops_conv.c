/* SPDX-License-Identifier: MIT */
/* ops_conv.c — 2-D convolution, its transpose and its filter gradient as three ops whose
 * backwards are written in one another, so that every conv gradient is differentiable. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

/* All three ops are the same trilinear form T(x, w, dy) = ⟨dy, conv2d(x, w)⟩ read
 * three ways: conv2d(x, w) = ∂T/∂dy, the transpose (backward-data) BD(dy, w) = ∂T/∂x,
 * the filter gradient BF(x, dy) = ∂T/∂w. Differentiating ⟨G, op(·, ·)⟩ therefore
 * gives the other two ops:
 *   conv2d(x, w):          dx = BD(G, w)            dw = BF(x, G)
 *   BD(x, w) (transpose):  dx = conv2d(G, w)        dw = BF(G, x)
 *   BF(x, dy):             dx = BD(dy, G)           ddy = conv2d(x, G)
 * The only bookkeeping is BD's output size: a strided convolution maps several input
 * sizes to one output size, and output_padding picks the right one. */

/* The descriptor of conv2d over x [n, c_in, h, w] into [n, c_out, h_out, w_out]. */
static struct gan_conv2d conv_desc(const int64_t *x, int64_t c_out, int64_t kh, int64_t kw,
                                   int stride, int pad, int64_t h_out, int64_t w_out,
                                   enum gan_dtype dtype)
{
    struct gan_conv2d c;
    memset(&c, 0, sizeof c);
    c.n = x[0];
    c.c_in = x[1];
    c.h_in = x[2];
    c.w_in = x[3];
    c.c_out = c_out;
    c.kh = kh;
    c.kw = kw;
    c.stride_h = c.stride_w = stride;
    c.pad_h = c.pad_w = pad;
    c.dilation_h = c.dilation_w = 1;
    c.h_out = h_out;
    c.w_out = w_out;
    c.dtype = dtype;
    return c;
}

static int check_4d(gan_ctx *ctx, const char *op, const char *name, const gan_tensor *t,
                    const char *layout)
{
    char s[160];
    if (t->ndim == 4)
        return 1;
    ti_fail(ctx, GAN_ERR_INVALID, "%s: %s is %s; it must be 4-D %s", op, name,
            ti_dims_str(s, sizeof s, t->ndim, t->dim), layout);
    return 0;
}

static int check_geometry(gan_ctx *ctx, const char *op, int stride, int pad)
{
    if (stride >= 1 && pad >= 0)
        return 1;
    ti_fail(ctx, GAN_ERR_INVALID, "%s: stride %d and pad %d: the stride must be at least 1 "
            "and the padding at least 0", op, stride, pad);
    return 0;
}

/* Output size of a convolution along one axis; 0 when the kernel does not fit. */
static int64_t conv_out(int64_t in, int64_t k, int stride, int pad)
{
    int64_t span = in + 2 * (int64_t)pad - k;
    return span < 0 ? 0 : span / stride + 1;
}

/* The output padding that makes a transposed convolution of `out` rows give `in`. */
static int64_t out_padding(int64_t in, int64_t out, int64_t k, int stride, int pad)
{
    return in - ((out - 1) * stride - 2 * (int64_t)pad + k);
}

/* ------------------------------------------------------------------ conv2d */

/* One of the backend's three convolution kernels, which share a signature. */
typedef gan_status conv_kernel_fn(gan_backend *be, const struct gan_conv2d *c,
                                  const struct gan_ref *a, const struct gan_ref *b, float beta,
                                  const struct gan_ref *y);

/* y = kernel(a, b) in c->dtype, or, when the op's operands go through FP8 (fp8.c), in
 * FP32 from a and b cast to FP8 and widened back (each a rows × cols operand, a sample
 * or a filter's output channel per row), then rounded once into y's dtype: the CPU's
 * emulation of an FP8 convolution, exact up to the final rounding and the FP32 sums. */
static gan_status run_conv(gan_ctx *ctx, const char *op, const char *kernel_name,
                           conv_kernel_fn *kernel, struct gan_conv2d c, gan_tensor *a,
                           const char *a_name, gan_tensor *b, const char *b_name,
                           gan_tensor *y)
{
    gan_tensor *out = y;
    if (ti_fp8_active(ctx, c.dtype) && a->numel > 0 && b->numel > 0) {
        uint32_t occurrence = ti_fp8_occurrence(ctx, op);
        a = ti_fp8_widened(ctx, op, occurrence, a, a_name, a->dim[0], a->numel / a->dim[0]);
        b = a ? ti_fp8_widened(ctx, op, occurrence, b, b_name, b->dim[0],
                               b->numel / b->dim[0]) : NULL;
        out = b ? ti_new_step(ctx, op, GAN_F32, y->ndim, y->dim) : NULL;
        if (!out)
            return ti_result(ctx, 0);
        c.dtype = GAN_F32;
    }
    struct gan_ref ar = ti_ref(a), br = ti_ref(b), yr = ti_ref(out);
    gan_status st = kernel(ctx->be, &c, &ar, &br, 0.0f, &yr);
    if (st != GAN_OK)
        return ti_backend_fail(ctx, op, kernel_name, st);
    return out == y ? GAN_OK : ti_cast_into(ctx, op, out, y);
}

static gan_status conv2d_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gan_tensor *x = node->in[0], *w = node->in[1];
    int stride = (int)node->iparam[0], pad = (int)node->iparam[1];
    if (node->needs[0]) {
        int oph = (int)out_padding(x->dim[2], g->dim[2], w->dim[2], stride, pad);
        int opw = (int)out_padding(x->dim[3], g->dim[3], w->dim[3], stride, pad);
        gin[0] = gan_conv2d_transpose_hw(ctx, g, w, stride, pad, oph, opw);
    }
    if (node->needs[1])
        gin[1] = gan_conv2d_backward_filter(ctx, x, g, stride, pad, (int)w->dim[2],
                                            (int)w->dim[3]);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

gan_tensor *gan_conv2d(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride, int pad)
{
    const char *op = "gan_conv2d";
    char xs[160], ws[160];
    if (!ctx || !ti_check_input(ctx, op, "x", x) || !ti_check_input(ctx, op, "w", w)
        || !check_4d(ctx, op, "x", x, "[n, c_in, h, w]")
        || !check_4d(ctx, op, "w", w, "[c_out, c_in, kh, kw]")
        || !check_geometry(ctx, op, stride, pad))
        return NULL;
    int64_t ho = conv_out(x->dim[2], w->dim[2], stride, pad);
    int64_t wo = conv_out(x->dim[3], w->dim[3], stride, pad);
    if (x->dim[1] != w->dim[1] || ho < 1 || wo < 1) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: x %s and w %s with stride %d, pad %d: the channel "
                "counts (x dim 1, w dim 1) must agree and the padded input must hold the "
                "kernel", op, ti_dims_str(xs, sizeof xs, 4, x->dim),
                ti_dims_str(ws, sizeof ws, 4, w->dim), stride, pad);
        return NULL;
    }
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_GEMM, &x, &w);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    int64_t dims[4] = { x->dim[0], w->dim[0], ho, wo };
    gan_tensor *y = ti_new_step(ctx, op, dt, 4, dims);
    gan_tensor *x2 = y ? ti_as_dtype(ctx, op, x, dt) : NULL;
    gan_tensor *w2 = x2 ? ti_as_dtype(ctx, op, w, dt) : NULL;
    if (!w2 || !TI_HAS(ctx, op, conv2d_forward))
        return NULL;
    if (y->numel > 0) {
        struct gan_conv2d c = conv_desc(x->dim, w->dim[0], w->dim[2], w->dim[3], stride, pad,
                                        ho, wo, dt);
        if (run_conv(ctx, op, "conv2d_forward", ctx->ops.conv2d_forward, c, x2, "x", w2,
                     "w", y) != GAN_OK)
            return NULL;
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, conv2d_backward, x, w, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = stride;
        node->iparam[1] = pad;
    }
    return ti_policy_clamp(ctx, y, 0);
}

/* ------------------------------------------------------------------ conv2d_transpose */

static gan_status transpose_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                     gan_tensor **gin)
{
    gan_tensor *x = node->in[0], *w = node->in[1];
    int stride = (int)node->iparam[0], pad = (int)node->iparam[1];
    if (node->needs[0])
        gin[0] = gan_conv2d(ctx, g, w, stride, pad);
    if (node->needs[1])
        gin[1] = gan_conv2d_backward_filter(ctx, g, x, stride, pad, (int)w->dim[2],
                                            (int)w->dim[3]);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

gan_tensor *gan_conv2d_transpose_hw(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride,
                                    int pad, int output_padding_h, int output_padding_w)
{
    const char *op = "gan_conv2d_transpose";
    char xs[160], ws[160];
    if (!ctx || !ti_check_input(ctx, op, "x", x) || !ti_check_input(ctx, op, "w", w)
        || !check_4d(ctx, op, "x", x, "[n, c_in, h, w]")
        || !check_4d(ctx, op, "w", w, "[c_in, c_out, kh, kw]")
        || !check_geometry(ctx, op, stride, pad))
        return NULL;
    if (output_padding_h < 0 || output_padding_h >= stride || output_padding_w < 0
        || output_padding_w >= stride) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: output padding %d×%d with stride %d: it must be "
                "0 to stride − 1 (larger values would add rows no input reaches)", op,
                output_padding_h, output_padding_w, stride);
        return NULL;
    }
    int64_t kh = w->dim[2], kw = w->dim[3];
    int64_t ho = (x->dim[2] - 1) * stride - 2 * (int64_t)pad + kh + output_padding_h;
    int64_t wo = (x->dim[3] - 1) * stride - 2 * (int64_t)pad + kw + output_padding_w;
    if (x->dim[1] != w->dim[0] || ho < 1 || wo < 1
        || conv_out(ho, kh, stride, pad) != x->dim[2] || conv_out(wo, kw, stride, pad) != x->dim[3]) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: x %s and w %s with stride %d, pad %d: the channel "
                "counts (x dim 1, w dim 0) must agree and the padding must leave an output of "
                "at least 1×1", op, ti_dims_str(xs, sizeof xs, 4, x->dim),
                ti_dims_str(ws, sizeof ws, 4, w->dim), stride, pad);
        return NULL;
    }
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_GEMM, &x, &w);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    int64_t dims[4] = { x->dim[0], w->dim[1], ho, wo };
    gan_tensor *y = ti_new_step(ctx, op, dt, 4, dims);
    gan_tensor *x2 = y ? ti_as_dtype(ctx, op, x, dt) : NULL;
    gan_tensor *w2 = x2 ? ti_as_dtype(ctx, op, w, dt) : NULL;
    if (!w2 || !TI_HAS(ctx, op, conv2d_backward_data))
        return NULL;
    if (y->numel > 0) {
        /* The transpose of y = conv2d(·, w) seen from y's side: the convolution maps
         * [n, c_out_t, ho, wo] to x's shape, and its data gradient is this op. */
        struct gan_conv2d c = conv_desc(dims, x->dim[1], kh, kw, stride, pad, x->dim[2],
                                        x->dim[3], dt);
        if (run_conv(ctx, op, "conv2d_backward_data", ctx->ops.conv2d_backward_data, c,
                     x2, "x", w2, "w", y) != GAN_OK)
            return NULL;
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, transpose_backward, x, w, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = stride;
        node->iparam[1] = pad;
    }
    return ti_policy_clamp(ctx, y, 0);
}

gan_tensor *gan_conv2d_transpose(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride,
                                 int pad, int output_padding)
{
    return gan_conv2d_transpose_hw(ctx, x, w, stride, pad, output_padding, output_padding);
}

/* ------------------------------------------------------------------ filter gradient */

static gan_status filter_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gan_tensor *x = node->in[0], *dy = node->in[1];
    int stride = (int)node->iparam[0], pad = (int)node->iparam[1];
    if (node->needs[0]) {
        int oph = (int)out_padding(x->dim[2], dy->dim[2], g->dim[2], stride, pad);
        int opw = (int)out_padding(x->dim[3], dy->dim[3], g->dim[3], stride, pad);
        gin[0] = gan_conv2d_transpose_hw(ctx, dy, g, stride, pad, oph, opw);
    }
    if (node->needs[1])
        gin[1] = gan_conv2d(ctx, x, g, stride, pad);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

gan_tensor *gan_conv2d_backward_filter(gan_ctx *ctx, gan_tensor *x, gan_tensor *dy,
                                       int stride, int pad, int kh, int kw)
{
    const char *op = "gan_conv2d_backward_filter";
    char xs[160], ds[160];
    if (!ctx || !ti_check_input(ctx, op, "x", x) || !ti_check_input(ctx, op, "dy", dy)
        || !check_4d(ctx, op, "x", x, "[n, c_in, h, w]")
        || !check_4d(ctx, op, "dy", dy, "[n, c_out, h_out, w_out]")
        || !check_geometry(ctx, op, stride, pad))
        return NULL;
    if (kh < 1 || kw < 1 || x->dim[0] != dy->dim[0]
        || conv_out(x->dim[2], kh, stride, pad) != dy->dim[2]
        || conv_out(x->dim[3], kw, stride, pad) != dy->dim[3]) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: x %s and dy %s do not belong to one %d×%d "
                "convolution with stride %d, pad %d (batch sizes must agree and dy must "
                "have the convolution's output size)", op,
                ti_dims_str(xs, sizeof xs, 4, x->dim), ti_dims_str(ds, sizeof ds, 4, dy->dim),
                kh, kw, stride, pad);
        return NULL;
    }
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_GEMM, &x, &dy);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    int64_t dims[4] = { dy->dim[1], x->dim[1], kh, kw };
    gan_tensor *y = ti_new_step(ctx, op, dt, 4, dims);
    gan_tensor *x2 = y ? ti_as_dtype(ctx, op, x, dt) : NULL;
    gan_tensor *d2 = x2 ? ti_as_dtype(ctx, op, dy, dt) : NULL;
    if (!d2 || !TI_HAS(ctx, op, conv2d_backward_filter))
        return NULL;
    if (y->numel > 0) {
        struct gan_conv2d c = conv_desc(x->dim, dy->dim[1], kh, kw, stride, pad, dy->dim[2],
                                        dy->dim[3], dt);
        if (run_conv(ctx, op, "conv2d_backward_filter", ctx->ops.conv2d_backward_filter,
                     c, x2, "x", d2, "dy", y) != GAN_OK)
            return NULL;
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, filter_backward, x, dy, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = stride;
        node->iparam[1] = pad;
    }
    return y;
}
