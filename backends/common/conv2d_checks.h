/* SPDX-License-Identifier: MIT */
/* conv2d_checks.h — the argument checks of a 2-D convolution: the descriptor, each
 * spatial axis's output size, the element counts of its tensors, and the tensors
 * themselves. Host code. */
#ifndef GANCTL_COMMON_CONV2D_CHECKS_H
#define GANCTL_COMMON_CONV2D_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "hostdev.h"

/* *out = a · b, or 0 when that does not fit in size_t. */
static inline int gan_mul_fits(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

/* The output size of one spatial axis: (in + 2·pad − dilation·(k − 1) − 1) / stride + 1,
 * or −1 when the dilated kernel is wider than the padded input. The sizes are checked
 * to lie in 1…INT_MAX (pad in 0…INT_MAX) first, so nothing here overflows. */
static inline int64_t gan_conv2d_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad,
                                          int64_t dilation)
{
    int64_t extent = dilation * (k - 1) + 1;
    int64_t padded = in + 2 * pad;
    return extent > padded ? -1 : (padded - extent) / stride + 1;
}

/* One spatial axis ('h' or 'w'): `out` must be the size the others give. */
static inline gan_status gan_conv2d_check_axis(const struct gan_host *host, const char *op,
                                               char axis, int64_t in, int64_t k,
                                               int64_t stride, int64_t pad,
                                               int64_t dilation, int64_t out)
{
    int64_t expect = gan_conv2d_out_size(in, k, stride, pad, dilation);
    if (expect < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: the dilated kernel spans %lld %s-positions (dilation %lld · "
                          "(k%c %lld − 1) + 1) but the padded input has only %lld "
                          "(%c_in %lld + 2 · pad %lld); use a smaller kernel or dilation, "
                          "or more padding", op, (long long)(dilation * (k - 1) + 1),
                          axis == 'h' ? "row" : "column", (long long)dilation, axis,
                          (long long)k, (long long)(in + 2 * pad), axis, (long long)in,
                          (long long)pad);
    if (out != expect)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %c_out is %lld but (%c_in %lld + 2·pad %lld − dilation %lld·"
                          "(k%c %lld − 1) − 1) / stride %lld + 1 = %lld; set %c_out to %lld",
                          op, axis, (long long)out, axis, (long long)in, (long long)pad,
                          (long long)dilation, axis, (long long)k, (long long)stride,
                          (long long)expect, axis, (long long)expect);
    return GAN_OK;
}

/* Checks the descriptor and beta: every size at least its minimum and at most INT_MAX
 * (`limit` says whose limit that is, for the message), a float dtype, beta 0 or 1, and
 * the output sizes the input, kernel, stride, padding and dilation give. */
static inline gan_status gan_conv2d_check_desc(const struct gan_host *host, const char *op,
                                               const char *limit, const struct gan_conv2d *c,
                                               float beta)
{
    if (!c)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: the descriptor is NULL; pass a struct gan_conv2d", op);
    const struct { const char *name; int64_t v, min; } sizes[] = {
        { "n", c->n, 1 }, { "c_in", c->c_in, 1 }, { "h_in", c->h_in, 1 },
        { "w_in", c->w_in, 1 }, { "c_out", c->c_out, 1 }, { "kh", c->kh, 1 },
        { "kw", c->kw, 1 }, { "stride_h", c->stride_h, 1 }, { "stride_w", c->stride_w, 1 },
        { "pad_h", c->pad_h, 0 }, { "pad_w", c->pad_w, 0 },
        { "dilation_h", c->dilation_h, 1 }, { "dilation_w", c->dilation_w, 1 },
        { "h_out", c->h_out, 1 }, { "w_out", c->w_out, 1 },
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (sizes[i].v < sizes[i].min)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: %s is %lld; it must be at least %lld", op, sizes[i].name,
                              (long long)sizes[i].v, (long long)sizes[i].min);
        /* Bounding every size by INT_MAX keeps the axis arithmetic in range and every
         * dimension representable for the libraries' int arguments. */
        if (sizes[i].v > INT_MAX)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: %s is %lld, more than the %d %s", op, sizes[i].name,
                              (long long)sizes[i].v, INT_MAX, limit);
    }
    if (!gan_is_float(c->dtype)) {
        const char *name = gan_dtype_name(c->dtype);
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: dtype %s is not supported; use F32, F16 or BF16", op,
                          name ? name : "(invalid)");
    }
    if (beta != 0.0f && beta != 1.0f)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: beta is %g; it must be 0 (overwrite) or 1 (accumulate)",
                          op, (double)beta);
    gan_status st = gan_conv2d_check_axis(host, op, 'h', c->h_in, c->kh, c->stride_h,
                                          c->pad_h, c->dilation_h, c->h_out);
    if (st == GAN_OK)
        st = gan_conv2d_check_axis(host, op, 'w', c->w_in, c->kw, c->stride_w, c->pad_w,
                                   c->dilation_w, c->w_out);
    return st;
}

/* Element counts of a checked convolution: per image, the input (c_in·h_in·w_in) and
 * the output (c_out·h_out·w_out); the filter's rows (k = c_in·kh·kw) and all of it
 * (c_out·k); the whole input and output (n images); and h_out·w_out. */
struct gan_conv2d_sizes {
    size_t in_elems, out_elems, k, w_elems, x_all, y_all, hw_out;
};

/* The counts, or 0 when one does not fit in size_t. */
static inline int gan_conv2d_sizes(const struct gan_conv2d *c, struct gan_conv2d_sizes *z)
{
    size_t hw_in, khw;
    memset(z, 0, sizeof *z);
    return gan_mul_fits((size_t)c->h_in, (size_t)c->w_in, &hw_in)
        && gan_mul_fits((size_t)c->c_in, hw_in, &z->in_elems)
        && gan_mul_fits((size_t)c->h_out, (size_t)c->w_out, &z->hw_out)
        && gan_mul_fits((size_t)c->c_out, z->hw_out, &z->out_elems)
        && gan_mul_fits((size_t)c->kh, (size_t)c->kw, &khw)
        && gan_mul_fits((size_t)c->c_in, khw, &z->k)
        && gan_mul_fits((size_t)c->c_out, z->k, &z->w_elems)
        && gan_mul_fits((size_t)c->n, z->in_elems, &z->x_all)
        && gan_mul_fits((size_t)c->n, z->out_elems, &z->y_all);
}

/* One tensor of a convolution: the descriptor's dtype, `count` elements inside its
 * buffer. */
static inline gan_status gan_conv2d_check_ref(const struct gan_host *host, const char *op,
                                              const char *name, const struct gan_ref *r,
                                              enum gan_dtype dtype, size_t count)
{
    if (!r || !r->buf)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s has no buffer; pass a ref to an allocated buffer", op, name);
    if (r->dtype != dtype) {
        const char *given = gan_dtype_name(r->dtype);
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s is %s but the descriptor's dtype is %s; every tensor "
                          "of a convolution has the descriptor's dtype", op, name,
                          given ? given : "(invalid)", gan_dtype_name(dtype));
    }
    size_t cap = r->buf->bytes / gan_dtype_size(dtype);
    if (r->offset > cap || count > cap - r->offset)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s needs %zu elements from element %zu but its buffer holds "
                          "%zu %s elements; allocate a larger buffer or fix the shape",
                          op, name, count, r->offset, cap, gan_dtype_name(dtype));
    return GAN_OK;
}

/* Rejects an output that shares memory with an input: the kernels read the inputs
 * while they write the output. */
static inline gan_status gan_conv2d_check_disjoint(const struct gan_host *host,
                                                   const char *op, const char *out_name,
                                                   const struct gan_ref *out, size_t out_count,
                                                   const char *in_name,
                                                   const struct gan_ref *in, size_t in_count)
{
    if (out->buf != in->buf)
        return GAN_OK;
    size_t a0 = out->offset, a1 = out->offset + out_count;
    size_t b0 = in->offset, b1 = in->offset + in_count;
    if (a0 < b1 && b0 < a1)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s (elements %zu..%zu) overlaps %s (elements %zu..%zu) in "
                          "the same buffer; give the output its own memory",
                          op, out_name, a0, a1, in_name, b0, b1);
    return GAN_OK;
}

/* The three tensors of a call, two inputs and an output, each with its element count:
 * each checked, and the output apart from both inputs. */
static inline gan_status gan_conv2d_check_refs(const struct gan_host *host, const char *op,
                                               enum gan_dtype dtype, const char *a_name,
                                               const struct gan_ref *a, size_t a_count,
                                               const char *b_name, const struct gan_ref *b,
                                               size_t b_count, const char *out_name,
                                               const struct gan_ref *out, size_t out_count)
{
    gan_status st = gan_conv2d_check_ref(host, op, a_name, a, dtype, a_count);
    if (st == GAN_OK)
        st = gan_conv2d_check_ref(host, op, b_name, b, dtype, b_count);
    if (st == GAN_OK)
        st = gan_conv2d_check_ref(host, op, out_name, out, dtype, out_count);
    if (st == GAN_OK)
        st = gan_conv2d_check_disjoint(host, op, out_name, out, out_count, a_name, a, a_count);
    if (st == GAN_OK)
        st = gan_conv2d_check_disjoint(host, op, out_name, out, out_count, b_name, b, b_count);
    return st;
}

#endif
