/* SPDX-License-Identifier: MIT */
/* shape_checks.h — the element-wise kernels' argument checks (an iteration shape, an
 * operand walked over it), the folding of the checked iteration space, and the unary
 * and binary entry points up to the backend's walk. Host code. */
#ifndef GANCTL_COMMON_SHAPE_CHECKS_H
#define GANCTL_COMMON_SHAPE_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member:
 * the checks compare views against it. Failures go through host->fail with the kernel's
 * name `fn` and the operand's `name` in the message. */
#include <stdint.h>
#include <string.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "elementwise_ops.h"
#include "hostdev.h"

/* Checks a kernel's iteration shape (ndim 0…GAN_MAX_DIMS, sizes ≥ 0) and, when `count`
 * is not NULL, returns its element count. */
static inline gan_status gan_check_shape(const struct gan_host *host, const char *fn,
                                         const struct gan_shape *shape, int64_t *count)
{
    if (!shape)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: the shape is NULL", fn);
    if (shape->ndim < 0 || shape->ndim > GAN_MAX_DIMS)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: ndim is %d; it must be 0 (a scalar) to %d (GAN_MAX_DIMS)",
                          fn, shape->ndim, GAN_MAX_DIMS);
    /* The product of the non-zero sizes must fit too, so that any sub-product a kernel
     * forms (the kept dimensions of an empty reduction) cannot overflow. */
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
                              "%s: the shape has more than 2^63 elements (dimension %d "
                              "is %lld)", fn, d, (long long)n);
        nonzero *= n;
    }
    if (count)
        *count = empty ? 0 : nonzero;
    return GAN_OK;
}

/* An operand walked over a checked `shape`: a float dtype, and every element it
 * reaches inside its buffer (negative strides allowed). */
static inline gan_status gan_check_operand(const struct gan_host *host, const char *fn,
                                           const char *name, const struct gan_shape *shape,
                                           const struct gan_operand *op)
{
    if (!op)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: operand %s is NULL", fn, name);
    if (!gan_is_float(op->dtype)) {
        const char *dn = gan_dtype_name(op->dtype);
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: operand %s has dtype %s (%d); this kernel takes F32, F16 "
                          "or BF16: cast it first", fn, name, dn ? dn : "unknown",
                          (int)op->dtype);
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
                          "%s: operand %s starts at element %zu but its buffer holds %zu "
                          "%s elements: fix the view's offset",
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
                              "%s: operand %s has stride %lld on dimension %d of size "
                              "%lld, which overflows any buffer",
                              fn, name, (long long)s, d, (long long)shape->dim[d]);
        int64_t step = (s < 0 ? -s : s) * span;
        if (s > 0)
            hi = hi > INT64_MAX - step ? INT64_MAX : hi + step;
        else
            lo = lo < INT64_MIN + step ? INT64_MIN : lo - step;
    }
    if (lo < 0 || (uint64_t)hi >= cap)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: operand %s reaches elements %lld to %lld (offset %zu, "
                          "%d dimensions) but its buffer holds %zu %s elements (0 to "
                          "%zu): fix the view's offset, strides or shape",
                          fn, name, (long long)lo, (long long)hi, op->offset, shape->ndim,
                          cap, gan_dtype_name(op->dtype), cap - 1);
    return GAN_OK;
}

/* The iteration space of an element-wise kernel after checking: size-1 dimensions
 * dropped and neighbours merged wherever every operand's strides chain, so that a
 * contiguous tensor is one run and a bias row broadcast is (rows, row). Strides are
 * per operand, in elements; negative ones are allowed. */
struct gan_iter {
    int ndim;                              /* ≥ 1 */
    int64_t count;                         /* elements; 0: nothing to do */
    int64_t dim[GAN_MAX_DIMS];
    int64_t stride[3][GAN_MAX_DIMS];
};

/* Folds a checked shape for `nops` (≤ 3) operands: from the innermost dimension
 * outwards, size-1 dimensions are dropped and a dimension folds into the one inside it
 * when, for every operand, one step of it equals dim steps of the inner one. A scalar,
 * or a shape of sizes 1, is one element with stride 0. */
static inline void gan_iter_fold(const struct gan_shape *shape, int nops,
                                 const struct gan_operand *const *ops, int64_t count,
                                 struct gan_iter *it)
{
    memset(it, 0, sizeof *it);
    it->count = count;
    it->ndim = 1;
    it->dim[0] = 1;
    if (count == 0)
        return;
    /* Built innermost first, then reversed into row-major order. */
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
    if (n == 0)
        return;
    it->ndim = n;
    for (int i = 0; i < n; i++) {
        it->dim[i] = dim[n - 1 - i];
        for (int k = 0; k < nops; k++)
            it->stride[k][i] = str[k][n - 1 - i];
    }
}

/* Checks the shape and every operand (named by `names`), then folds the space. */
static inline gan_status gan_iter_plan(const struct gan_host *host, const char *fn,
                                       const struct gan_shape *shape, int nops,
                                       const struct gan_operand *const *ops,
                                       const char *const *names, struct gan_iter *it)
{
    int64_t count = 0;
    gan_status st = gan_check_shape(host, fn, shape, &count);
    if (st != GAN_OK)
        return st;
    for (int k = 0; k < nops; k++)
        if ((st = gan_check_operand(host, fn, names[k], shape, ops[k])) != GAN_OK)
            return st;
    gan_iter_fold(shape, nops, ops, count, it);
    return GAN_OK;
}

/* The plan of a unary kernel (operands x, y) or a binary one (a, b, y): `op` in range,
 * then gan_iter_plan with the op's name from `op_names` in the messages. `kernel`
 * names the entry point for an op out of range. */
static inline gan_status gan_unary_plan(const struct gan_host *host, const char *kernel,
                                        const char *const *op_names, enum gan_unary_op op,
                                        const struct gan_shape *shape,
                                        const struct gan_operand *const ops[2],
                                        struct gan_iter *it)
{
    static const char *const names[2] = { "x", "y" };
    it->count = 0; /* nothing to do, whatever fails */
    if ((unsigned)op >= GAN_UNARY_OP_COUNT)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: op %d is not a gan_unary_op (0 to %d)", kernel, (int)op,
                          GAN_UNARY_OP_COUNT - 1);
    return gan_iter_plan(host, op_names[op], shape, 2, ops, names, it);
}

/* `with_alpha`: the call came through binary_alpha, which alone takes the ops that have a
 * parameter (MASK_LEAKY's and ADD_LEAKY's slope); binary refuses them. */
static inline gan_status gan_binary_plan(const struct gan_host *host, const char *kernel,
                                         const char *const *op_names, enum gan_binary_op op,
                                         int with_alpha, const struct gan_shape *shape,
                                         const struct gan_operand *const ops[3],
                                         struct gan_iter *it)
{
    static const char *const names[3] = { "a", "b", "y" };
    it->count = 0; /* nothing to do, whatever fails */
    if ((unsigned)op >= GAN_BINARY_OP_COUNT)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: op %d is not a gan_binary_op (0 to %d)", kernel, (int)op,
                          GAN_BINARY_OP_COUNT - 1);
    if (gan_ew_binary_has_alpha(op) && !with_alpha)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s needs its slope: it is computed by binary_alpha", kernel,
                          op == GAN_BINARY_MASK_LEAKY ? "MASK_LEAKY" : "ADD_LEAKY");
    return gan_iter_plan(host, op_names[op], shape, 3, ops, names, it);
}

/* The backend's own part of an element-wise kernel: the walk over a planned, non-empty
 * iteration space. nops is 2 for a unary op (x, y) and 3 for a binary one (a, b, y),
 * `op` the gan_unary_op or gan_binary_op, `name` the op's name for messages. */
typedef gan_status gan_ew_walk_fn(gan_backend *be, const char *name, int nops, int op,
                                  float alpha, const struct gan_iter *it,
                                  const struct gan_operand *const *ops);

/* The unary and binary entry points up to the backend's walk, as every backend has
 * them: the operands in kernel order, the plan, and nothing more to do when the space
 * is empty or the plan refused the call. A backend's slot function passes its host,
 * its names and its walk. */
static inline gan_status gan_unary_entry(gan_backend *be, const struct gan_host *host,
                                         const char *kernel, const char *const *op_names,
                                         gan_ew_walk_fn *walk, enum gan_unary_op op,
                                         float alpha, const struct gan_shape *shape,
                                         const struct gan_operand *x,
                                         const struct gan_operand *y)
{
    const struct gan_operand *ops[2] = { x, y };
    struct gan_iter it;
    gan_status st = gan_unary_plan(host, kernel, op_names, op, shape, ops, &it);
    if (st != GAN_OK || it.count == 0)
        return st;
    return walk(be, op_names[op], 2, (int)op, alpha, &it, ops);
}

/* binary (with_alpha 0, alpha unused) and binary_alpha (with_alpha 1). */
static inline gan_status gan_binary_entry(gan_backend *be, const struct gan_host *host,
                                          const char *kernel, const char *const *op_names,
                                          gan_ew_walk_fn *walk, enum gan_binary_op op,
                                          int with_alpha, float alpha,
                                          const struct gan_shape *shape,
                                          const struct gan_operand *a,
                                          const struct gan_operand *b,
                                          const struct gan_operand *y)
{
    const struct gan_operand *ops[3] = { a, b, y };
    struct gan_iter it;
    gan_status st = gan_binary_plan(host, kernel, op_names, op, with_alpha, shape, ops, &it);
    if (st != GAN_OK || it.count == 0)
        return st;
    return walk(be, op_names[op], 3, (int)op, with_alpha ? alpha : 0.0f, &it, ops);
}

#endif
