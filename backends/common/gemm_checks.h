/* SPDX-License-Identifier: MIT */
/* gemm_checks.h — the argument checks of a GEMM descriptor (sizes, transposes, leading
 * dimensions, batch strides, every operand inside its buffer), and gemm's entry point
 * up to the backend's product. Host code. */
#ifndef GANCTL_COMMON_GEMM_CHECKS_H
#define GANCTL_COMMON_GEMM_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member. */
#include <limits.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "hostdev.h"

/* One operand as stored in memory: rows × cols with row stride ld, repeated `batch`
 * times `stride` elements apart. */
struct gan_gemm_stored {
    const char *name;             /* "A", "B", "C" for messages */
    const struct gan_ref *ref;
    int64_t rows, cols, ld, stride;
};

/* Elements from the operand's first element to one past its last, over all batch
 * entries; -1 when that does not fit in int64. Zero when it has no elements. */
static inline int64_t gan_gemm_extent(const struct gan_gemm_stored *s, int64_t batch)
{
    if (s->rows == 0 || s->cols == 0)
        return 0;
    int64_t last_row, one, across;
    if (__builtin_mul_overflow(s->rows - 1, s->ld, &last_row) ||
        __builtin_add_overflow(last_row, s->cols, &one) ||
        __builtin_mul_overflow(batch - 1, s->stride, &across) ||
        __builtin_add_overflow(across, one, &one))
        return -1;
    return one;
}

/* `used`: whether the product reads or writes the operand at all; one it does not
 * touch (A and B when m, n or k is 0; C when m or n is 0) needs no buffer. `lib` names
 * the library whose int arguments bound ld. */
static inline gan_status gan_gemm_check_stored(const struct gan_host *host, const char *lib,
                                               const struct gan_gemm_stored *s,
                                               int64_t batch, int used)
{
    const char *tname = gan_dtype_name(s->ref->dtype);
    const char lc = (char)(s->name[0] - 'A' + 'a');
    if (!gan_is_float(s->ref->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm: %s has dtype %s; GEMM takes F32, F16 or BF16 operands: "
                          "cast it first", s->name, tname ? tname : "(invalid)");
    int64_t min_ld = s->cols > 1 ? s->cols : 1;
    if (s->ld < min_ld || s->ld > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: ld%c = %lld for a stored %lld×%lld %s; it must be at least "
                          "%lld (the stored row length) and at most %d (%s's int)", lc,
                          (long long)s->ld, (long long)s->rows, (long long)s->cols, s->name,
                          (long long)min_ld, INT_MAX, lib);
    if (batch > 1 && s->stride < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: stride_%c = %lld is negative; batch entries must follow "
                          "matrix 0 in memory", lc, (long long)s->stride);
    int64_t extent = gan_gemm_extent(s, batch);
    if (extent < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: %s (%lld×%lld, ld %lld, batch %lld, stride %lld) spans more "
                          "elements than fit in 64 bits; check the shape and strides",
                          s->name, (long long)s->rows, (long long)s->cols,
                          (long long)s->ld, (long long)batch, (long long)s->stride);
    if (extent == 0 || !used)
        return GAN_OK;
    if (!s->ref->buf)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: %s has no buffer but %lld elements to address; pass a "
                          "buffer from buffer_alloc", s->name, (long long)extent);
    size_t have = s->ref->buf->bytes / gan_dtype_size(s->ref->dtype);
    if (s->ref->offset > have || (uint64_t)extent > have - s->ref->offset)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: %s (stored %lld×%lld %s, ld %lld, batch %lld, stride %lld) "
                          "needs %lld elements from element offset %zu, but its buffer holds "
                          "%zu %s elements; fix the shape, strides or offset, or allocate a "
                          "larger buffer",
                          s->name, (long long)s->rows, (long long)s->cols, tname,
                          (long long)s->ld, (long long)batch, (long long)s->stride,
                          (long long)extent, s->ref->offset, have, tname);
    return GAN_OK;
}

/* Checks a GEMM descriptor and describes its three operands as stored. `lib` names the
 * library whose int arguments bound m, n, k and the leading dimensions ("BLAS",
 * "cuBLAS"); `max_batch` is the largest batch it takes. */
static inline gan_status gan_gemm_check(const struct gan_host *host, const char *lib,
                                        int64_t max_batch, const struct gan_gemm *g,
                                        struct gan_gemm_stored *sa, struct gan_gemm_stored *sb,
                                        struct gan_gemm_stored *sc)
{
    if (!g)
        return host->fail(host->ctx, GAN_ERR_INVALID, "gemm: the descriptor is NULL");
    if ((g->trans_a != 0 && g->trans_a != 1) || (g->trans_b != 0 && g->trans_b != 1))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: trans_a = %d, trans_b = %d; each must be 0 or 1",
                          g->trans_a, g->trans_b);
    if (g->m < 0 || g->n < 0 || g->k < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: m = %lld, n = %lld, k = %lld; sizes cannot be negative",
                          (long long)g->m, (long long)g->n, (long long)g->k);
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm: m = %lld, n = %lld, k = %lld; %s takes sizes up to %d: "
                          "split the product", (long long)g->m, (long long)g->n,
                          (long long)g->k, lib, INT_MAX);
    if (g->batch < 1)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: batch = %lld; it must be at least 1", (long long)g->batch);
    if (g->batch > max_batch)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: batch = %lld; %s takes at most %lld: split the batch",
                          (long long)g->batch, lib, (long long)max_batch);

    sa->name = "A";
    sa->ref = &g->a;
    sa->rows = g->trans_a ? g->k : g->m;
    sa->cols = g->trans_a ? g->m : g->k;
    sa->ld = g->lda;
    sa->stride = g->stride_a;
    sb->name = "B";
    sb->ref = &g->b;
    sb->rows = g->trans_b ? g->n : g->k;
    sb->cols = g->trans_b ? g->k : g->n;
    sb->ld = g->ldb;
    sb->stride = g->stride_b;
    sc->name = "C";
    sc->ref = &g->c;
    sc->rows = g->m;
    sc->cols = g->n;
    sc->ld = g->ldc;
    sc->stride = g->stride_c;
    const int out = g->m > 0 && g->n > 0, product = out && g->k > 0;
    gan_status st = gan_gemm_check_stored(host, lib, sa, g->batch, product);
    if (st == GAN_OK)
        st = gan_gemm_check_stored(host, lib, sb, g->batch, product);
    if (st == GAN_OK)
        st = gan_gemm_check_stored(host, lib, sc, g->batch, out);
    if (st != GAN_OK)
        return st;
    /* Two batch entries writing the same C would race in a parallel backend and give
     * an order-dependent sum in a sequential one; no caller means that. */
    if (g->batch > 1 && g->stride_c == 0 && out)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: stride_c = 0 with batch = %lld: every product would write "
                          "the same C; give each its own C, or sum the inputs first",
                          (long long)g->batch);
    return GAN_OK;
}

/* `bytes` rounded up to a multiple of `align`, a power of two: where the next operand
 * starts when a backend stages several in one scratch allocation. */
static inline size_t gan_gemm_align(size_t bytes, size_t align)
{
    return (bytes + align - 1) & ~(align - 1);
}

/* The backend's own part of a GEMM: a checked call whose C is not empty (k = 0 or
 * alpha = 0 may still leave it beta·C), with the stored operands gan_gemm_check made. */
typedef gan_status gan_gemm_product_fn(gan_backend *be, const struct gan_gemm *g,
                                       const struct gan_gemm_stored *sa,
                                       const struct gan_gemm_stored *sb,
                                       const struct gan_gemm_stored *sc);

/* gemm's entry point up to the backend's product, as every backend has it: the checks
 * (`lib` and `max_batch` as gan_gemm_check takes them), and nothing more to do when C
 * is empty or the checks refused the call. */
static inline gan_status gan_gemm_entry(gan_backend *be, const struct gan_host *host,
                                        const char *lib, int64_t max_batch,
                                        gan_gemm_product_fn *product, const struct gan_gemm *g)
{
    struct gan_gemm_stored sa, sb, sc;
    gan_status st = gan_gemm_check(host, lib, max_batch, g, &sa, &sb, &sc);
    if (st != GAN_OK || g->m == 0 || g->n == 0)
        return st;
    return product(be, g, &sa, &sb, &sc);
}

#endif
