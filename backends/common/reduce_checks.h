/* SPDX-License-Identifier: MIT */
/* reduce_checks.h — a reduction's argument checks (shape, axes, x, and y described over
 * x's shape with stride 0 on reduced dimensions) and the folding of its dimensions into
 * a kept and a reduced group. Host code. */
#ifndef GANCTL_COMMON_REDUCE_CHECKS_H
#define GANCTL_COMMON_REDUCE_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member. */
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "shape_checks.h"

/* Checks a reduction named `fn` (its op already known to be valid) and returns how many
 * elements each output reduces (rcount, 0 for an empty reduction) and how many outputs
 * there are (kcount). */
static inline gan_status gan_reduce_check(const struct gan_host *host, const char *fn,
                                          const struct gan_shape *shape,
                                          const struct gan_operand *x, uint32_t axes,
                                          const struct gan_operand *y, int64_t *rcount,
                                          int64_t *kcount)
{
    gan_status st = gan_check_shape(host, fn, shape, NULL);
    if (st != GAN_OK)
        return st;
    if (shape->ndim < 32 && (axes >> shape->ndim) != 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: axes 0x%x names a dimension beyond the shape's %d: "
                          "bit d selects dimension d, 0 to ndim − 1",
                          fn, (unsigned)axes, shape->ndim);
    if ((st = gan_check_operand(host, fn, "x", shape, x)) != GAN_OK)
        return st;
    /* y covers the kept dimensions only; a reduced dimension must not move it. */
    struct gan_shape yshape = *shape;
    int64_t r = 1, k = 1;
    for (int d = 0; d < shape->ndim; d++) {
        if (!((axes >> d) & 1u)) {
            k *= shape->dim[d];
            continue;
        }
        r *= shape->dim[d];
        yshape.dim[d] = 1;
        if (y && shape->dim[d] > 1 && y->stride[d] != 0)
            return host->fail(host->ctx, GAN_ERR_INVALID,
                              "%s: y has stride %lld on reduced dimension %d; describe "
                              "y over x's shape with stride 0 on every reduced dimension",
                              fn, (long long)y->stride[d], d);
    }
    if ((st = gan_check_operand(host, fn, "y", &yshape, y)) != GAN_OK)
        return st;
    *rcount = r;
    *kcount = k;
    return GAN_OK;
}

/* The dimensions of one group (reduced = 1: those in `axes`; 0: the kept ones), size-1
 * ones dropped and neighbours merged where the strides of x (and, for the kept group, of
 * y) chain, in row-major order; returns how many. Dimensions of the other group in
 * between do not matter: each group is walked by its own odometer. ys may be NULL for
 * the reduced group. */
static inline int gan_reduce_group(const struct gan_shape *s, uint32_t axes, int reduced,
                                   const struct gan_operand *x, const struct gan_operand *y,
                                   int64_t *dim, int64_t *xs, int64_t *ys)
{
    int64_t d0[GAN_MAX_DIMS], x0[GAN_MAX_DIMS], y0[GAN_MAX_DIMS];
    int n = 0;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if ((int)((axes >> d) & 1u) != reduced || s->dim[d] == 1)
            continue;
        if (n > 0 && x->stride[d] == x0[n - 1] * d0[n - 1] &&
            (reduced || y->stride[d] == y0[n - 1] * d0[n - 1])) {
            d0[n - 1] *= s->dim[d];
            continue;
        }
        d0[n] = s->dim[d];
        x0[n] = x->stride[d];
        y0[n] = reduced ? 0 : y->stride[d];
        n++;
    }
    for (int i = 0; i < n; i++) {
        dim[i] = d0[n - 1 - i];
        xs[i] = x0[n - 1 - i];
        if (ys)
            ys[i] = y0[n - 1 - i];
    }
    return n;
}

#endif
