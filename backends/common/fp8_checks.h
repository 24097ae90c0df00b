/* SPDX-License-Identifier: MIT */
/* fp8_checks.h — the argument checks of the FP8 products' slots (backend.h: fp8_stats,
 * fp8_quantize, fp8_dequantize, gemm_fp8): layouts, operands, their scales, and the
 * limits struct gan_gemm_fp8 puts on a GEMM. Host code. */
#ifndef GANCTL_COMMON_FP8_CHECKS_H
#define GANCTL_COMMON_FP8_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member. */
#include <limits.h>
#include <string.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>
#include <ganctl/fp8.h>

#include "hostdev.h"
#include "ref_checks.h"

/* A layout's sizes and block, and its element count in *elements. The count must fit
 * in size_t and int64 both, since kernels index with either. */
static inline gan_status gan_fp8_check_layout(const struct gan_host *host, const char *fn,
                                              const struct gan_fp8_layout *l,
                                              int64_t *elements)
{
    if (!l)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: the layout is NULL; pass a struct gan_fp8_layout", fn);
    if (l->rows < 0 || l->cols < 0 || l->block < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: rows = %lld, cols = %lld, block = %lld; none may be negative",
                          fn, (long long)l->rows, (long long)l->cols, (long long)l->block);
    if (l->block > 0 && l->along != GAN_FP8_ALONG_ROWS && l->along != GAN_FP8_ALONG_COLUMNS)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: along = %d; use GAN_FP8_ALONG_ROWS or GAN_FP8_ALONG_COLUMNS",
                          fn, (int)l->along);
    /* both are non-negative: the product overflows exactly when this division says */
    if (l->cols != 0 && (l->rows > INT64_MAX / l->cols ||
                         (uint64_t)(l->rows * l->cols) > SIZE_MAX / 4))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %lld×%lld elements do not fit in memory; check the shape", fn,
                          (long long)l->rows, (long long)l->cols);
    *elements = l->rows * l->cols;
    return GAN_OK;
}

/* The scales of a layout: F32, gan_fp8_scale_count of them inside their buffer. */
static inline gan_status gan_fp8_check_scales(const struct gan_host *host, const char *fn,
                                              const char *name, const struct gan_ref *s,
                                              const struct gan_fp8_layout *l)
{
    return gan_check_ref(host, fn, name, s, (size_t)gan_fp8_scale_count(l), GAN_F32);
}

/* n elements of an FP8 type inside their buffer. */
static inline gan_status gan_fp8_check_fp8_ref(const struct gan_host *host, const char *fn,
                                               const char *name, const struct gan_ref *r,
                                               size_t n)
{
    gan_status st = gan_check_ref(host, fn, name, r, n, GAN_ANY_DTYPE);
    if (st == GAN_OK && !gan_is_fp8(r->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: %s has dtype %s; it must be F8_E4M3 or F8_E5M2", fn, name,
                          gan_dtype_name(r->dtype));
    return st;
}

/* An output of n elements that shares no byte with an input of n elements: refs in
 * different buffers never do (each buffer is its own allocation). */
static inline gan_status gan_fp8_check_apart(const struct gan_host *host, const char *fn,
                                             const char *out_name, const struct gan_ref *out,
                                             const char *in_name, const struct gan_ref *in,
                                             size_t n_out, size_t n_in)
{
    if (out->buf != in->buf)
        return GAN_OK;
    size_t o0 = out->offset * gan_dtype_size(out->dtype), i0 = in->offset * gan_dtype_size(in->dtype);
    size_t o1 = o0 + n_out * gan_dtype_size(out->dtype), i1 = i0 + n_in * gan_dtype_size(in->dtype);
    if (o0 < i1 && i0 < o1)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s and %s overlap in one buffer; write the result into "
                          "memory apart from its inputs", fn, out_name, in_name);
    return GAN_OK;
}

/* fp8_stats: n elements of x (F32, BF16 or F16). When the arguments are good, *stats
 * starts as the measurement of nothing but the element count, and an empty operand's
 * block maxima are written (all 0): the kernel has nothing left to do when *n is 0. */
static inline gan_status gan_fp8_check_stats(const struct gan_host *host,
                                             const struct gan_fp8_layout *l,
                                             const struct gan_ref *x, float *block_amax,
                                             struct gan_fp8_stats *stats, int64_t *n)
{
    gan_status st = gan_fp8_check_layout(host, "fp8_stats", l, n);
    if (st != GAN_OK)
        return st;
    if (!stats)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "fp8_stats: stats is NULL; pass a struct gan_fp8_stats to fill");
    if (*n > 0 && (st = gan_check_ref(host, "fp8_stats", "x", x, (size_t)*n, GAN_ANY_FLOAT))
                      != GAN_OK)
        return st;
    memset(stats, 0, sizeof *stats);
    stats->elements = (uint64_t)*n;
    if (*n == 0 && block_amax)
        memset(block_amax, 0, (size_t)gan_fp8_scale_count(l) * sizeof *block_amax);
    return GAN_OK;
}

/* fp8_quantize: x (float) into y (FP8) through F32 scales, with flags cast_flags takes.
 * When the arguments are good, *stats (where given) starts as the counts of nothing but
 * the element count: the kernel has nothing left to do when *n is 0. */
static inline gan_status gan_fp8_check_quantize(const struct gan_host *host,
                                                const struct gan_fp8_layout *l,
                                                const struct gan_ref *x,
                                                const struct gan_ref *scale, uint32_t flags,
                                                const struct gan_ref *y,
                                                struct gan_fp8_cast_stats *stats, int64_t *n)
{
    const char *fn = "fp8_quantize";
    gan_status st = gan_fp8_check_layout(host, fn, l, n);
    if (st != GAN_OK)
        return st;
    if (flags & ~(uint32_t)GAN_CAST_SATURATE)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: flags 0x%x hold bits that are not enum gan_cast_flag's; pass "
                          "0 or GAN_CAST_SATURATE", fn, (unsigned)flags);
    if (*n > 0) {
        size_t count = (size_t)*n;
        if ((st = gan_check_ref(host, fn, "x", x, count, GAN_ANY_FLOAT)) != GAN_OK ||
            (st = gan_fp8_check_fp8_ref(host, fn, "y", y, count)) != GAN_OK ||
            (st = gan_fp8_check_scales(host, fn, "scale", scale, l)) != GAN_OK ||
            (st = gan_fp8_check_apart(host, fn, "y", y, "x", x, count, count)) != GAN_OK ||
            (st = gan_fp8_check_apart(host, fn, "y", y, "scale", scale, count,
                                      (size_t)gan_fp8_scale_count(l))) != GAN_OK)
            return st;
    }
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->elements = (uint64_t)*n;
    }
    return GAN_OK;
}

/* fp8_dequantize: q (FP8) into y (float) through F32 scales. */
static inline gan_status gan_fp8_check_dequantize(const struct gan_host *host,
                                                  const struct gan_fp8_layout *l,
                                                  const struct gan_ref *q,
                                                  const struct gan_ref *scale,
                                                  const struct gan_ref *y, int64_t *n)
{
    const char *fn = "fp8_dequantize";
    gan_status st = gan_fp8_check_layout(host, fn, l, n);
    if (st != GAN_OK || *n == 0)
        return st;
    size_t count = (size_t)*n;
    if ((st = gan_fp8_check_fp8_ref(host, fn, "q", q, count)) != GAN_OK ||
        (st = gan_check_ref(host, fn, "y", y, count, GAN_ANY_FLOAT)) != GAN_OK ||
        (st = gan_fp8_check_scales(host, fn, "scale", scale, l)) != GAN_OK ||
        (st = gan_fp8_check_apart(host, fn, "y", y, "q", q, count, count)) != GAN_OK)
        return st;
    return gan_fp8_check_apart(host, fn, "y", y, "scale", scale, count,
                               (size_t)gan_fp8_scale_count(l));
}

/* One matrix of a gan_gemm_fp8 as the contract wants it: contiguous (ld the stored
 * row length; any ld ≤ 1 for a matrix without columns), inside its buffer when the
 * product touches it. */
static inline gan_status gan_gemm_fp8_check_matrix(const struct gan_host *host, char name,
                                                   const struct gan_ref *r, int64_t ld,
                                                   int64_t rows, int64_t cols, int used)
{
    char what[2] = { name, '\0' };
    if (ld != cols && !(cols == 0 && ld <= 1 && ld >= 0))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm_fp8: ld%c = %lld for a stored %lld×%lld %s; FP8 products take "
                          "contiguous matrices only (ld%c = %lld): copy it into one first",
                          name - 'A' + 'a', (long long)ld, (long long)rows, (long long)cols,
                          what, name - 'A' + 'a', (long long)cols);
    if (!used)
        return GAN_OK;
    return gan_check_ref(host, "gemm_fp8", what, r, (size_t)(rows * cols), GAN_ANY_DTYPE);
}

/* A checked FP8 product whose A and B are not read (k = 0, or alpha = 0, as BLAS has it):
 * *w becomes the plain product that computes it, beta·C with nothing to sum, for the
 * backend's own gemm. Returns 0, leaving *w alone, for a product that reads them. */
static inline int gan_gemm_fp8_unread(const struct gan_gemm *g, struct gan_gemm *w)
{
    if (g->k != 0 && g->alpha != 0.0f)
        return 0;
    *w = *g;
    w->k = 0;
    w->a = (struct gan_ref){ NULL, 0, GAN_F32 };
    w->b = (struct gan_ref){ NULL, 0, GAN_F32 };
    w->lda = w->trans_a ? w->m : 1;
    w->ldb = w->trans_b ? 1 : w->n;
    return 1;
}

/* A gan_gemm_fp8 within backend.h's limits; `lib` names the library whose int
 * arguments bound the sizes. */
static inline gan_status gan_gemm_fp8_check(const struct gan_host *host, const char *lib,
                                            const struct gan_gemm_fp8 *f)
{
    if (!f)
        return host->fail(host->ctx, GAN_ERR_INVALID, "gemm_fp8: the descriptor is NULL");
    const struct gan_gemm *g = &f->g;
    if ((g->trans_a != 0 && g->trans_a != 1) || (g->trans_b != 0 && g->trans_b != 1))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm_fp8: trans_a = %d, trans_b = %d; each must be 0 or 1",
                          g->trans_a, g->trans_b);
    if (g->m < 0 || g->n < 0 || g->k < 0 || f->block_a < 0 || f->block_b < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm_fp8: m = %lld, n = %lld, k = %lld, block_a = %lld, block_b = "
                          "%lld; none may be negative", (long long)g->m, (long long)g->n,
                          (long long)g->k, (long long)f->block_a, (long long)f->block_b);
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm_fp8: m = %lld, n = %lld, k = %lld; %s takes sizes up to %d: "
                          "split the product", (long long)g->m, (long long)g->n,
                          (long long)g->k, lib, INT_MAX);
    if (g->batch != 1)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm_fp8: batch = %lld; FP8 products take one matrix each: call "
                          "once per batch entry", (long long)g->batch);
    if (!gan_is_fp8(g->a.dtype) || !gan_is_fp8(g->b.dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm_fp8: A is %s and B is %s; both must be F8_E4M3 or F8_E5M2 "
                          "(fp8_quantize makes them), or use gemm",
                          gan_dtype_name(g->a.dtype) ? gan_dtype_name(g->a.dtype) : "(invalid)",
                          gan_dtype_name(g->b.dtype) ? gan_dtype_name(g->b.dtype) : "(invalid)");
    if (!gan_is_float(g->c.dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm_fp8: C is %s; it must be F32, BF16 or F16",
                          gan_dtype_name(g->c.dtype) ? gan_dtype_name(g->c.dtype) : "(invalid)");
    struct gan_fp8_layout la, lb;
    gan_gemm_fp8_layouts(f, &la, &lb);
    const int out = g->m > 0 && g->n > 0, product = out && g->k > 0;
    gan_status st = gan_gemm_fp8_check_matrix(host, 'A', &g->a, g->lda, la.rows, la.cols, product);
    if (st == GAN_OK)
        st = gan_gemm_fp8_check_matrix(host, 'B', &g->b, g->ldb, lb.rows, lb.cols, product);
    if (st == GAN_OK)
        st = gan_gemm_fp8_check_matrix(host, 'C', &g->c, g->ldc, g->m, g->n, out);
    if (st != GAN_OK || !product)
        return st;
    if ((g->a.buf == g->c.buf || g->b.buf == g->c.buf) &&
        ((st = gan_fp8_check_apart(host, "gemm_fp8", "C", &g->c, "A", &g->a,
                                   (size_t)(g->m * g->n), (size_t)(g->m * g->k))) != GAN_OK ||
         (st = gan_fp8_check_apart(host, "gemm_fp8", "C", &g->c, "B", &g->b,
                                   (size_t)(g->m * g->n), (size_t)(g->k * g->n))) != GAN_OK))
        return st;
    /* The scales: F32 (cuBLASLt and the widening both read them as such). */
    if ((st = gan_fp8_check_scales(host, "gemm_fp8", "scale_a", &f->scale_a, &la)) != GAN_OK)
        return st;
    return gan_fp8_check_scales(host, "gemm_fp8", "scale_b", &f->scale_b, &lb);
}

#endif
