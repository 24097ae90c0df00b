/* conv2d.c — the CPU backend's 2-D convolution: forward, backward-data and
 * backward-filter, each as im2col (or col2im) around one BLAS sgemm per image. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"

/* CBLAS's enum values, passed as integers (see cpu_backend.h). */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

/* The sizes every kernel derives from a descriptor. Per image: the input has
 * `in_elems` values (c_in × h_in × w_in), the output `out_elems` (c_out × P); the
 * column matrix is K × P with K = c_in·kh·kw rows (one per filter tap) and
 * P = h_out·w_out columns (one per output pixel). */
struct conv_dims {
    size_t k, p;
    size_t in_elems, out_elems, w_elems;
    size_t x_all, y_all;  /* n·in_elems, n·out_elems */
    int pointwise;    /* 1×1, stride 1, no padding: the column matrix is the image itself */
};

/* Products of descriptor sizes, refusing what would not fit in size_t. */
static int mul_fits(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

static gan_status check_ref(gan_backend *be, const char *op, const char *name,
                            const struct gan_ref *r, enum gan_dtype dtype, size_t count)
{
    if (!r || !r->buf || !r->buf->data)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %s has no buffer; pass a ref to an allocated buffer", op, name);
    if (r->dtype != dtype) {
        const char *given = gan_dtype_name(r->dtype);
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %s is %s but the descriptor's dtype is %s; every tensor "
                              "of a convolution has the descriptor's dtype", op, name,
                              given ? given : "(invalid)", gan_dtype_name(dtype));
    }
    size_t cap = r->buf->bytes / gan_dtype_size(dtype);
    if (r->offset > cap || count > cap - r->offset)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %s needs %zu elements from element %zu but its buffer holds "
                              "%zu %s elements; allocate a larger buffer or fix the shape",
                              op, name, count, r->offset, cap, gan_dtype_name(dtype));
    return GAN_OK;
}

/* Rejects an output that shares memory with an input: the kernels read the inputs
 * while they write the output. */
static gan_status check_disjoint(gan_backend *be, const char *op, const char *out_name,
                                 const struct gan_ref *out, size_t out_count,
                                 const char *in_name, const struct gan_ref *in,
                                 size_t in_count)
{
    if (out->buf != in->buf)
        return GAN_OK;
    size_t a0 = out->offset, a1 = out->offset + out_count;
    size_t b0 = in->offset, b1 = in->offset + in_count;
    if (a0 < b1 && b0 < a1)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %s (elements %zu..%zu) overlaps %s (elements %zu..%zu) in "
                              "the same buffer; give the output its own memory",
                              op, out_name, a0, a1, in_name, b0, b1);
    return GAN_OK;
}

/* One spatial axis: the output size the descriptor must state, or a failure that
 * says why there is none. */
static gan_status check_axis(gan_backend *be, const char *op, char axis, int64_t in,
                             int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                             int64_t out)
{
    int64_t extent = dilation * (k - 1) + 1;
    int64_t padded = in + 2 * pad;
    if (extent > padded)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: the dilated kernel spans %lld %s-positions (dilation %lld · "
                              "(k%c %lld − 1) + 1) but the padded input has only %lld "
                              "(%c_in %lld + 2 · pad %lld); use a smaller kernel or dilation, "
                              "or more padding", op, (long long)extent,
                              axis == 'h' ? "row" : "column", (long long)dilation, axis,
                              (long long)k, (long long)padded, axis, (long long)in,
                              (long long)pad);
    int64_t expect = (padded - extent) / stride + 1;
    if (out != expect)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %c_out is %lld but (%c_in %lld + 2·pad %lld − dilation %lld·"
                              "(k%c %lld − 1) − 1) / stride %lld + 1 = %lld; set %c_out to %lld",
                              op, axis, (long long)out, axis, (long long)in, (long long)pad,
                              (long long)dilation, axis, (long long)k, (long long)stride,
                              (long long)expect, axis, (long long)expect);
    return GAN_OK;
}

/* Checks the descriptor and beta, and fills the sizes the kernels use. */
static gan_status check_desc(gan_backend *be, const char *op, const struct gan_conv2d *c,
                             float beta, struct conv_dims *d)
{
    if (!c)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
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
            return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                                  "%s: %s is %lld; it must be at least %lld", op, sizes[i].name,
                                  (long long)sizes[i].v, (long long)sizes[i].min);
        /* Bounding every size by INT_MAX keeps the axis arithmetic below in range
         * and every GEMM dimension representable for BLAS's int arguments. */
        if (sizes[i].v > INT_MAX)
            return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                                  "%s: %s is %lld, more than the %d this backend supports",
                                  op, sizes[i].name, (long long)sizes[i].v, INT_MAX);
    }
    if (!cpu_is_float(c->dtype)) {
        const char *name = gan_dtype_name(c->dtype);
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "%s: dtype %s is not supported; use F32, F16 or BF16", op,
                              name ? name : "(invalid)");
    }
    if (beta != 0.0f && beta != 1.0f)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: beta is %g; it must be 0 (overwrite) or 1 (accumulate)",
                              op, (double)beta);
    gan_status st = check_axis(be, op, 'h', c->h_in, c->kh, c->stride_h, c->pad_h,
                               c->dilation_h, c->h_out);
    if (st == GAN_OK)
        st = check_axis(be, op, 'w', c->w_in, c->kw, c->stride_w, c->pad_w,
                        c->dilation_w, c->w_out);
    if (st != GAN_OK)
        return st;

    size_t hw_in, hw_out, khw, col_elems;
    int ok = mul_fits((size_t)c->h_in, (size_t)c->w_in, &hw_in)
          && mul_fits((size_t)c->c_in, hw_in, &d->in_elems)
          && mul_fits((size_t)c->h_out, (size_t)c->w_out, &hw_out)
          && mul_fits((size_t)c->c_out, hw_out, &d->out_elems)
          && mul_fits((size_t)c->kh, (size_t)c->kw, &khw)
          && mul_fits((size_t)c->c_in, khw, &d->k)
          && mul_fits((size_t)c->c_out, d->k, &d->w_elems)
          && mul_fits((size_t)c->n, d->in_elems, &d->x_all)
          && mul_fits((size_t)c->n, d->out_elems, &d->y_all)
          && mul_fits(d->k, hw_out, &col_elems);
    if (!ok || d->k > INT_MAX || hw_out > INT_MAX)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: the tensors of this convolution are too large to index "
                              "(c_in·kh·kw and h_out·w_out must each fit in an int)", op);
    d->p = hw_out;
    d->pointwise = c->kh == 1 && c->kw == 1 && c->stride_h == 1 && c->stride_w == 1
                && c->pad_h == 0 && c->pad_w == 0;
    if (!be->blas.sgemm)
        return be->host->fail(be->host->ctx, GAN_ERR_INTERNAL,
                              "%s: the backend has no sgemm; it was created without its BLAS",
                              op);
    return GAN_OK;
}

/* Checks the three tensors of a call: two inputs and an output. */
static gan_status check_refs(gan_backend *be, const char *op, const struct gan_conv2d *c,
                             const char *a_name, const struct gan_ref *a, size_t a_count,
                             const char *b_name, const struct gan_ref *b, size_t b_count,
                             const char *out_name, const struct gan_ref *out,
                             size_t out_count)
{
    gan_status st = check_ref(be, op, a_name, a, c->dtype, a_count);
    if (st == GAN_OK)
        st = check_ref(be, op, b_name, b, c->dtype, b_count);
    if (st == GAN_OK)
        st = check_ref(be, op, out_name, out, c->dtype, out_count);
    if (st == GAN_OK)
        st = check_disjoint(be, op, out_name, out, out_count, a_name, a, a_count);
    if (st == GAN_OK)
        st = check_disjoint(be, op, out_name, out, out_count, b_name, b, b_count);
    return st;
}

/* Carves FP32 arrays out of the backend's scratch, each 64-byte aligned. `counts`
 * and `outs` have `parts` entries; an entry with count 0 gets NULL. */
static gan_status scratch_parts(gan_backend *be, const char *op, size_t parts,
                                const size_t *counts, float **outs)
{
    size_t total = 0;
    for (size_t i = 0; i < parts; i++) {
        size_t bytes;
        if (!mul_fits(counts[i], sizeof(float), &bytes) || bytes > SIZE_MAX - 64 - total)
            return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                                  "%s: the scratch space this convolution needs does not fit "
                                  "in memory; use a smaller batch or image", op);
        total += (bytes + 63) & ~(size_t)63;
    }
    void *base = NULL;
    gan_status st = cpu_scratch(be, total ? total : 64, &base);
    if (st != GAN_OK)
        return st;
    unsigned char *p = base;
    for (size_t i = 0; i < parts; i++) {
        outs[i] = counts[i] ? (float *)p : NULL;
        p += ((counts[i] * sizeof(float)) + 63) & ~(size_t)63;
    }
    return GAN_OK;
}

/* 16-bit tensors are staged through FP32: these convert n elements each way. */
static void load_f32(float *dst, const void *src, enum gan_dtype dtype, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = cpu_load(src, dtype, (int64_t)i);
}

static void store_from_f32(void *dst, enum gan_dtype dtype, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cpu_store(dst, dtype, (int64_t)i, src[i]);
}

/* The output positions o in [0, out) whose input position o·stride − pad + off lies
 * in [0, in): a contiguous range [*lo, *hi), so the inner loops need no test. */
static void valid_range(int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t off,
                        int64_t *lo, int64_t *hi)
{
    int64_t shift = off - pad; /* input position of o = 0 */
    int64_t a = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
    int64_t b = in - shift <= 0 ? 0 : (in - shift + stride - 1) / stride;
    if (b > out)
        b = out;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

/* col[K, P] from one image x[c_in, h_in, w_in]: row (ci, i, j) holds, for every output
 * pixel, the input value filter tap (i, j) of channel ci sees there (0 in padding). */
static void im2col(const struct gan_conv2d *c, const float *x, float *col)
{
    const int64_t hw_out = c->h_out * c->w_out;
    for (int64_t ci = 0; ci < c->c_in; ci++) {
        const float *xc = x + ci * c->h_in * c->w_in;
        for (int64_t i = 0; i < c->kh; i++) {
            int64_t oh_lo, oh_hi;
            valid_range(c->h_in, c->h_out, c->stride_h, c->pad_h, i * c->dilation_h,
                        &oh_lo, &oh_hi);
            for (int64_t j = 0; j < c->kw; j++) {
                int64_t ow_lo, ow_hi;
                valid_range(c->w_in, c->w_out, c->stride_w, c->pad_w, j * c->dilation_w,
                            &ow_lo, &ow_hi);
                float *row = col + ((ci * c->kh + i) * c->kw + j) * hw_out;
                for (int64_t oh = 0; oh < c->h_out; oh++) {
                    float *dst = row + oh * c->w_out;
                    if (oh < oh_lo || oh >= oh_hi) {
                        memset(dst, 0, (size_t)c->w_out * sizeof *dst);
                        continue;
                    }
                    const float *src = xc + (oh * c->stride_h - c->pad_h + i * c->dilation_h)
                                            * c->w_in;
                    int64_t iw0 = j * c->dilation_w - c->pad_w;
                    for (int64_t ow = 0; ow < ow_lo; ow++)
                        dst[ow] = 0.0f;
                    if (c->stride_w == 1) {
                        if (ow_hi > ow_lo)
                            memcpy(dst + ow_lo, src + ow_lo + iw0,
                                   (size_t)(ow_hi - ow_lo) * sizeof *dst);
                    } else {
                        for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                            dst[ow] = src[ow * c->stride_w + iw0];
                    }
                    for (int64_t ow = ow_hi; ow < c->w_out; ow++)
                        dst[ow] = 0.0f;
                }
            }
        }
    }
}

/* The adjoint of im2col: adds every entry of col[K, P] into the input position it
 * was gathered from (positions in the padding are dropped). x must be initialised. */
static void col2im_add(const struct gan_conv2d *c, const float *col, float *x)
{
    const int64_t hw_out = c->h_out * c->w_out;
    for (int64_t ci = 0; ci < c->c_in; ci++) {
        float *xc = x + ci * c->h_in * c->w_in;
        for (int64_t i = 0; i < c->kh; i++) {
            int64_t oh_lo, oh_hi;
            valid_range(c->h_in, c->h_out, c->stride_h, c->pad_h, i * c->dilation_h,
                        &oh_lo, &oh_hi);
            for (int64_t j = 0; j < c->kw; j++) {
                int64_t ow_lo, ow_hi;
                valid_range(c->w_in, c->w_out, c->stride_w, c->pad_w, j * c->dilation_w,
                            &ow_lo, &ow_hi);
                const float *row = col + ((ci * c->kh + i) * c->kw + j) * hw_out;
                int64_t iw0 = j * c->dilation_w - c->pad_w;
                for (int64_t oh = oh_lo; oh < oh_hi; oh++) {
                    const float *src = row + oh * c->w_out;
                    float *dst = xc + (oh * c->stride_h - c->pad_h + i * c->dilation_h)
                                      * c->w_in;
                    for (int64_t ow = ow_lo; ow < ow_hi; ow++)
                        dst[ow * c->stride_w + iw0] += src[ow];
                }
            }
        }
    }
}

gan_status cpu_conv2d_forward(gan_backend *be, const struct gan_conv2d *c,
                              const struct gan_ref *x, const struct gan_ref *w,
                              float beta, const struct gan_ref *y)
{
    static const char op[] = "conv2d_forward";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = check_refs(be, op, c, "x", x, d.x_all, "w", w, d.w_elems,
                        "y", y, d.y_all);
    if (st != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    /* Scratch: [0] columns, [1] FP32 filters, [2] FP32 image, [3] FP32 output. */
    size_t counts[4] = { d.pointwise ? 0 : d.k * d.p, f32 ? 0 : d.w_elems,
                         f32 ? 0 : d.in_elems, f32 ? 0 : d.out_elems };
    float *part[4];
    if ((st = scratch_parts(be, op, 4, counts, part)) != GAN_OK)
        return st;

    const float *wf = f32 ? (const float *)cpu_ref_ptr(w) : part[1];
    if (!f32)
        load_f32(part[1], cpu_ref_ptr(w), c->dtype, d.w_elems);
    const unsigned char *xb = cpu_ref_ptr(x), *yb = cpu_ref_ptr(y);
    const size_t es = gan_dtype_size(c->dtype);
    for (int64_t b = 0; b < c->n; b++) {
        const void *xi = xb + (size_t)b * d.in_elems * es;
        void *yi = (void *)(yb + (size_t)b * d.out_elems * es);
        const float *xf = xi;
        float *yf = yi;
        if (!f32) {
            load_f32(part[2], xi, c->dtype, d.in_elems);
            xf = part[2];
            yf = part[3];
            if (beta != 0.0f)
                load_f32(yf, yi, c->dtype, d.out_elems);
        }
        const float *colm = xf;
        if (!d.pointwise) {
            im2col(c, xf, part[0]);
            colm = part[0];
        }
        /* y[c_out, P] = w[c_out, K] · col[K, P] + beta · y */
        be->blas.sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, (int)c->c_out, (int)d.p, (int)d.k,
                       1.0f, wf, (int)d.k, colm, (int)d.p, beta, yf, (int)d.p);
        if (!f32)
            store_from_f32(yi, c->dtype, yf, d.out_elems);
    }
    return GAN_OK;
}

gan_status cpu_conv2d_backward_data(gan_backend *be, const struct gan_conv2d *c,
                                    const struct gan_ref *dy, const struct gan_ref *w,
                                    float beta, const struct gan_ref *dx)
{
    static const char op[] = "conv2d_backward_data";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = check_refs(be, op, c, "dy", dy, d.y_all, "w", w, d.w_elems,
                        "dx", dx, d.x_all);
    if (st != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    /* Scratch: [0] columns, [1] FP32 filters, [2] FP32 dy image, [3] FP32 dx image. */
    size_t counts[4] = { d.pointwise ? 0 : d.k * d.p, f32 ? 0 : d.w_elems,
                         f32 ? 0 : d.out_elems, f32 ? 0 : d.in_elems };
    float *part[4];
    if ((st = scratch_parts(be, op, 4, counts, part)) != GAN_OK)
        return st;

    const float *wf = f32 ? (const float *)cpu_ref_ptr(w) : part[1];
    if (!f32)
        load_f32(part[1], cpu_ref_ptr(w), c->dtype, d.w_elems);
    const unsigned char *dyb = cpu_ref_ptr(dy), *dxb = cpu_ref_ptr(dx);
    const size_t es = gan_dtype_size(c->dtype);
    for (int64_t b = 0; b < c->n; b++) {
        const void *dyi = dyb + (size_t)b * d.out_elems * es;
        void *dxi = (void *)(dxb + (size_t)b * d.in_elems * es);
        const float *dyf = dyi;
        float *dxf = dxi;
        if (!f32) {
            load_f32(part[2], dyi, c->dtype, d.out_elems);
            dyf = part[2];
            dxf = part[3];
            if (beta != 0.0f)
                load_f32(dxf, dxi, c->dtype, d.in_elems);
        }
        if (d.pointwise) {
            /* dx[c_in, P] = wᵀ[c_in, c_out] · dy[c_out, P] + beta · dx */
            be->blas.sgemm(ROW_MAJOR, TRANS, NO_TRANS, (int)c->c_in, (int)d.p, (int)c->c_out,
                           1.0f, wf, (int)d.k, dyf, (int)d.p, beta, dxf, (int)d.p);
        } else {
            /* col[K, P] = wᵀ[K, c_out] · dy[c_out, P], then scattered onto dx. */
            be->blas.sgemm(ROW_MAJOR, TRANS, NO_TRANS, (int)d.k, (int)d.p, (int)c->c_out,
                           1.0f, wf, (int)d.k, dyf, (int)d.p, 0.0f, part[0], (int)d.p);
            if (beta == 0.0f)
                memset(dxf, 0, d.in_elems * sizeof *dxf);
            col2im_add(c, part[0], dxf);
        }
        if (!f32)
            store_from_f32(dxi, c->dtype, dxf, d.in_elems);
    }
    return GAN_OK;
}

gan_status cpu_conv2d_backward_filter(gan_backend *be, const struct gan_conv2d *c,
                                      const struct gan_ref *x, const struct gan_ref *dy,
                                      float beta, const struct gan_ref *dw)
{
    static const char op[] = "conv2d_backward_filter";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = check_refs(be, op, c, "x", x, d.x_all, "dy", dy,
                        d.y_all, "dw", dw, d.w_elems);
    if (st != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    /* Scratch: [0] columns, [1] FP32 dw, [2] FP32 image, [3] FP32 dy image. */
    size_t counts[4] = { d.pointwise ? 0 : d.k * d.p, f32 ? 0 : d.w_elems,
                         f32 ? 0 : d.in_elems, f32 ? 0 : d.out_elems };
    float *part[4];
    if ((st = scratch_parts(be, op, 4, counts, part)) != GAN_OK)
        return st;

    /* dw accumulates in FP32 across the batch and, for 16-bit dtypes, is rounded
     * once at the end. One GEMM per image (beta 1 after the first) because each
     * image's dy is already a contiguous [c_out, P] matrix in NCHW; a single GEMM
     * over the batch would need dy regathered into [c_out, n·P] and n times the
     * column scratch, for GEMMs that are already large enough to keep BLAS busy. */
    float *dwf = f32 ? (float *)cpu_ref_ptr(dw) : part[1];
    if (!f32 && beta != 0.0f)
        load_f32(dwf, cpu_ref_ptr(dw), c->dtype, d.w_elems);
    const unsigned char *xb = cpu_ref_ptr(x), *dyb = cpu_ref_ptr(dy);
    const size_t es = gan_dtype_size(c->dtype);
    for (int64_t b = 0; b < c->n; b++) {
        const void *xi = xb + (size_t)b * d.in_elems * es;
        const void *dyi = dyb + (size_t)b * d.out_elems * es;
        const float *xf = xi, *dyf = dyi;
        if (!f32) {
            load_f32(part[2], xi, c->dtype, d.in_elems);
            load_f32(part[3], dyi, c->dtype, d.out_elems);
            xf = part[2];
            dyf = part[3];
        }
        const float *colm = xf;
        if (!d.pointwise) {
            im2col(c, xf, part[0]);
            colm = part[0];
        }
        /* dw[c_out, K] = dy[c_out, P] · colᵀ[P, K] + beta_b · dw */
        float beta_b = b == 0 ? beta : 1.0f;
        be->blas.sgemm(ROW_MAJOR, NO_TRANS, TRANS, (int)c->c_out, (int)d.k, (int)d.p, 1.0f,
                       dyf, (int)d.p, colm, (int)d.p, beta_b, dwf, (int)d.k);
    }
    if (!f32)
        store_from_f32(cpu_ref_ptr(dw), c->dtype, dwf, d.w_elems);
    return GAN_OK;
}
