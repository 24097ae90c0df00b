/* SPDX-License-Identifier: MIT */
/* check.c — the CUDA backend's argument checks, done on the host before anything is queued
 * (a bad view must be an error, never a fault on the device), and the element-wise walk plan. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"

gan_status cuda_check_shape(gan_backend *be, const char *fn, const struct gan_shape *shape,
                            int64_t *count)
{
    const struct gan_host *host = be->host;
    if (!shape)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: the shape is NULL", fn);
    if (shape->ndim < 0 || shape->ndim > GAN_MAX_DIMS)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: ndim is %d; it must be 0 (a scalar) to %d (GAN_MAX_DIMS)",
                          fn, shape->ndim, GAN_MAX_DIMS);
    /* The product of the non-zero sizes must fit too, so that the kept part of an
     * empty reduction cannot overflow. */
    int64_t nonzero = 1;
    int empty = 0;
    for (int d = 0; d < shape->ndim; d++) {
        int64_t n = shape->dim[d];
        if (n < 0)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: dimension %d is %lld; sizes must be 0 or more",
                              fn, d, (long long)n);
        if (n == 0) {
            empty = 1;
            continue;
        }
        if (n > INT64_MAX / nonzero)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: the shape has more than 2^63 elements (dimension %d is "
                              "%lld)", fn, d, (long long)n);
        nonzero *= n;
    }
    if (count)
        *count = empty ? 0 : nonzero;
    return GAN_OK;
}

gan_status cuda_check_operand(gan_backend *be, const char *fn, const char *name,
                              const struct gan_shape *shape, const struct gan_operand *op)
{
    const struct gan_host *host = be->host;
    if (!op)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: operand %s is NULL", fn, name);
    if (!cuda_is_float(op->dtype)) {
        const char *dn = gan_dtype_name(op->dtype);
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: operand %s has dtype %s (%d); this kernel takes F32, F16 or "
                          "BF16: cast it first", fn, name, dn ? dn : "unknown", (int)op->dtype);
    }
    for (int d = 0; d < shape->ndim; d++)
        if (shape->dim[d] == 0)
            return GAN_OK; /* an empty iteration reaches no element */
    if (!op->buf)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: operand %s has no buffer", fn,
                          name);
    size_t cap = op->buf->bytes / gan_dtype_size(op->dtype);
    if (op->offset > (size_t)INT64_MAX || op->offset >= cap)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: operand %s starts at element %zu but its buffer holds %zu %s "
                          "elements: fix the view's offset",
                          fn, name, op->offset, cap, gan_dtype_name(op->dtype));
    /* The lowest and highest element the walk reaches: each dimension moves the index
     * by stride·(dim − 1), downwards for a negative stride. */
    int64_t lo = (int64_t)op->offset, hi = lo;
    for (int d = 0; d < shape->ndim; d++) {
        int64_t s = op->stride[d], span = shape->dim[d] - 1;
        if (s == 0 || span == 0)
            continue;
        if (s == INT64_MIN || (s < 0 ? -s : s) > INT64_MAX / span)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: operand %s has stride %lld on dimension %d of size %lld, "
                              "which overflows any buffer", fn, name, (long long)s, d,
                              (long long)shape->dim[d]);
        int64_t step = (s < 0 ? -s : s) * span;
        if (s > 0)
            hi = hi > INT64_MAX - step ? INT64_MAX : hi + step;
        else
            lo = lo < INT64_MIN + step ? INT64_MIN : lo - step;
    }
    if (lo < 0 || (uint64_t)hi >= cap)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: operand %s reaches elements %lld to %lld (offset %zu, %d "
                          "dimensions) but its buffer holds %zu %s elements (0 to %zu): fix "
                          "the view's offset, strides or shape", fn, name, (long long)lo,
                          (long long)hi, op->offset, shape->ndim, cap,
                          gan_dtype_name(op->dtype), cap - 1);
    return GAN_OK;
}

gan_status cuda_iter_plan(gan_backend *be, const char *fn, const struct gan_shape *shape,
                          int nops, const struct gan_operand *const *ops,
                          const char *const *names, struct cuda_iter *it)
{
    int64_t count;
    gan_status st = cuda_check_shape(be, fn, shape, &count);
    if (st != GAN_OK)
        return st;
    for (int k = 0; k < nops; k++)
        if ((st = cuda_check_operand(be, fn, names[k], shape, ops[k])) != GAN_OK)
            return st;
    memset(it, 0, sizeof *it);
    it->count = count;
    it->ndim = 1;
    it->dim[0] = 1;
    if (count == 0)
        return GAN_OK;

    /* From the innermost dimension outwards: size-1 dimensions are dropped, and a
     * dimension folds into the one inside it when, for every operand, one step of it
     * equals dim steps of the inner one. Built innermost first, then reversed. Fewer
     * dimensions mean fewer divisions per element on the device. */
    int64_t dim[GAN_MAX_DIMS], str[3][GAN_MAX_DIMS];
    int n = 0;
    for (int d = shape->ndim - 1; d >= 0; d--) {
        if (shape->dim[d] == 1)
            continue;
        if (n > 0) {
            int merge = 1;
            for (int k = 0; k < nops; k++)
                if (ops[k]->stride[d] != str[k][n - 1] * dim[n - 1])
                    merge = 0;
            if (merge) {
                dim[n - 1] *= shape->dim[d];
                continue;
            }
        }
        dim[n] = shape->dim[d];
        for (int k = 0; k < nops; k++)
            str[k][n] = ops[k]->stride[d];
        n++;
    }
    if (n == 0) /* a scalar, or every size 1: one element, already set up */
        return GAN_OK;
    it->ndim = n;
    for (int i = 0; i < n; i++) {
        it->dim[i] = dim[n - 1 - i];
        for (int k = 0; k < nops; k++)
            it->stride[k][i] = str[k][n - 1 - i];
    }
    return GAN_OK;
}

gan_status cuda_check_ref(gan_backend *be, const char *fn, const char *name,
                          const struct gan_ref *r, size_t n, int want)
{
    const struct gan_host *host = be->host;
    if (!r)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: %s is NULL; pass a gan_ref",
                          fn, name);
    size_t esz = gan_dtype_size(r->dtype);
    const char *dn = gan_dtype_name(r->dtype);
    if (!esz)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s has dtype %d, which is not a gan_dtype", fn, name,
                          (int)r->dtype);
    if (want >= 0 && r->dtype != (enum gan_dtype)want)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED, "%s: %s has dtype %s; it must be %s",
                          fn, name, dn, gan_dtype_name((enum gan_dtype)want));
    if (want == CUDA_ANY_FLOAT && !cuda_is_float(r->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: %s has dtype %s; it must be F32, F16 or BF16", fn, name, dn);
    if (!r->buf)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s has no buffer for %zu elements; pass a buffer from "
                          "buffer_alloc", fn, name, n);
    size_t have = r->buf->bytes / esz;
    if (r->offset > have || n > have - r->offset)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s needs %zu %s elements from element offset %zu, but its "
                          "buffer holds %zu; fix the count or offset, or allocate a larger "
                          "buffer", fn, name, n, dn, r->offset, have);
    return GAN_OK;
}
