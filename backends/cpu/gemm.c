/* SPDX-License-Identifier: MIT */
/* gemm.c — C = alpha·op(A)·op(B) + beta·C on the CPU through BLAS's sgemm, batched,
 * with FP16/BF16 operands staged through FP32 and the result rounded once; BF16
 * products through oneDNN's matmul where the instance has it (onednn_matmul.c). */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"

/* CBLAS's enum values (cblas.h), passed as ints; see cpu_sgemm_fn. */
#define CBLAS_ROW_MAJOR 101
#define CBLAS_NO_TRANS 111
#define CBLAS_TRANS 112

/* One operand as stored in memory: rows × cols with row stride ld, repeated `batch`
 * times `stride` elements apart. */
struct stored {
    const char *name;             /* "A", "B", "C" for messages */
    const struct gan_ref *ref;
    int64_t rows, cols, ld, stride;
};

/* Elements from the operand's first element to one past its last, over all batch
 * entries; -1 when that does not fit in int64. Zero when it has no elements. */
static int64_t stored_extent(const struct stored *s, int64_t batch)
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
 * touch (A and B when m, n or k is 0; C when m or n is 0) needs no buffer. */
static gan_status check_stored(gan_backend *be, const struct stored *s, int64_t batch,
                               int used)
{
    const struct gan_host *host = be->host;
    const char *tname = gan_dtype_name(s->ref->dtype);
    if (!cpu_is_float(s->ref->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "gemm: %s has dtype %s; GEMM takes F32, F16 or BF16 operands: "
                          "cast it first", s->name, tname ? tname : "(invalid)");
    int64_t min_ld = s->cols > 1 ? s->cols : 1;
    if (s->ld < min_ld || s->ld > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: ld%c = %lld for a stored %lld×%lld %s; it must be at least "
                          "%lld (the stored row length) and at most %d (BLAS's int)",
                          s->name[0] + 'a' - 'A', (long long)s->ld, (long long)s->rows,
                          (long long)s->cols, s->name, (long long)min_ld, INT_MAX);
    if (batch > 1 && s->stride < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: stride_%c = %lld is negative; batch entries must follow "
                          "matrix 0 in memory", s->name[0] + 'a' - 'A', (long long)s->stride);
    int64_t extent = stored_extent(s, batch);
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

static gan_status validate(gan_backend *be, const struct gan_gemm *g, struct stored *sa,
                           struct stored *sb, struct stored *sc)
{
    const struct gan_host *host = be->host;
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
                          "gemm: m = %lld, n = %lld, k = %lld; BLAS takes sizes up to %d: "
                          "split the product", (long long)g->m, (long long)g->n,
                          (long long)g->k, INT_MAX);
    if (g->batch < 1)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: batch = %lld; it must be at least 1", (long long)g->batch);

    *sa = (struct stored){ "A", &g->a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k,
                           g->lda, g->stride_a };
    *sb = (struct stored){ "B", &g->b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n,
                           g->ldb, g->stride_b };
    *sc = (struct stored){ "C", &g->c, g->m, g->n, g->ldc, g->stride_c };
    const int out = g->m > 0 && g->n > 0, product = out && g->k > 0;
    gan_status st = check_stored(be, sa, g->batch, product);
    if (st == GAN_OK)
        st = check_stored(be, sb, g->batch, product);
    if (st == GAN_OK)
        st = check_stored(be, sc, g->batch, out);
    if (st != GAN_OK)
        return st;
    /* Two batch entries writing the same C would race in a parallel backend and give
     * an order-dependent sum here; no caller means that. */
    if (g->batch > 1 && g->stride_c == 0 && g->m > 0 && g->n > 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "gemm: stride_c = 0 with batch = %lld: every product would write "
                          "the same C; give each its own C, or sum the inputs first",
                          (long long)g->batch);
    return GAN_OK;
}

/* dst (row stride dst_ld) = src (row stride src_ld) converted, rows × cols. Goes
 * through cpu_cast for its vectorised F16C path (about 6x the scalar conversion
 * here): FP16 → FP32 is exact, FP32 → FP16/BF16 rounds to nearest even. Each run of
 * contiguous elements is wrapped in a buffer descriptor on the stack. */
static gan_status convert(gan_backend *be, unsigned char *src, enum gan_dtype src_type,
                          int64_t src_ld, unsigned char *dst, enum gan_dtype dst_type,
                          int64_t dst_ld, int64_t rows, int64_t cols)
{
    const size_t ss = gan_dtype_size(src_type), ds = gan_dtype_size(dst_type);
    if (src_ld == cols && dst_ld == cols) { /* both packed: one run */
        cols *= rows;
        rows = 1;
    }
    for (int64_t r = 0; r < rows; r++) {
        struct gan_buffer sb = { (size_t)cols * ss, src + (size_t)(r * src_ld) * ss };
        struct gan_buffer db = { (size_t)cols * ds, dst + (size_t)(r * dst_ld) * ds };
        struct gan_ref x = { &sb, 0, src_type }, y = { &db, 0, dst_type };
        gan_status st = cpu_cast(be, (size_t)cols, &x, &y, NULL);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* C = beta·C without a product (k = 0, or alpha = 0 where BLAS does not read A, B).
 * beta = 0 writes zeros without reading C, so NaN or inf there does not survive. */
static void scale_c(const struct stored *sc, int64_t m, int64_t n, float beta,
                    unsigned char *c)
{
    enum gan_dtype dt = sc->ref->dtype;
    for (int64_t r = 0; r < m; r++) {
        int64_t row = r * sc->ld;
        for (int64_t j = 0; j < n; j++)
            cpu_store(c, dt, row + j, beta == 0.0f ? 0.0f : beta * cpu_load(c, dt, row + j));
    }
}

/* 64-byte aligned pieces of one scratch allocation. */
static size_t align64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

gan_status cpu_gemm(gan_backend *be, const struct gan_gemm *g)
{
    struct stored sa, sb, sc;
    gan_status st = validate(be, g, &sa, &sb, &sc);
    if (st != GAN_OK)
        return st;
    const int64_t m = g->m, n = g->n, k = g->k;
    if (m == 0 || n == 0)
        return GAN_OK;

    const size_t esz_a = gan_dtype_size(g->a.dtype), esz_b = gan_dtype_size(g->b.dtype),
                 esz_c = gan_dtype_size(g->c.dtype);
    unsigned char *a0 = k ? cpu_ref_ptr(&g->a) : NULL;
    unsigned char *b0 = k ? cpu_ref_ptr(&g->b) : NULL;
    unsigned char *c0 = cpu_ref_ptr(&g->c);

    /* BLAS does not reference A and B when alpha = 0 (or k = 0): the result is beta·C
     * even if A or B hold NaN. Follow that convention here too. */
    if (k == 0 || g->alpha == 0.0f) {
        for (int64_t i = 0; i < g->batch; i++)
            scale_c(&sc, m, n, g->beta, c0 + (size_t)(i * g->stride_c) * esz_c);
        return GAN_OK;
    }

    /* BF16 (and, when asked for, FP32) products go to oneDNN where the instance has it;
     * it declines a product it has no primitive for, which then stays here. */
    if (cpu_onednn_gemm(be, g, &st))
        return st;

    /* 16-bit operands are widened to FP32 (exactly) in scratch; a 16-bit C gets an
     * FP32 accumulator that is rounded once at the end, as a tensor core does. */
    const int stage_a = g->a.dtype != GAN_F32, stage_b = g->b.dtype != GAN_F32,
              stage_c = g->c.dtype != GAN_F32;
    size_t bytes_a = stage_a ? align64((size_t)(sa.rows * sa.cols) * sizeof(float)) : 0;
    size_t bytes_b = stage_b ? align64((size_t)(sb.rows * sb.cols) * sizeof(float)) : 0;
    size_t bytes_c = stage_c ? align64((size_t)(m * n) * sizeof(float)) : 0;
    unsigned char *scratch = NULL;
    if (bytes_a + bytes_b + bytes_c) {
        st = cpu_scratch(be, bytes_a + bytes_b + bytes_c, (void **)&scratch);
        if (st != GAN_OK)
            return st;
    }
    float *wa = (float *)scratch, *wb = (float *)(scratch + bytes_a),
          *wc = (float *)(scratch + bytes_a + bytes_b);

    const int ta = g->trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS;
    const int tb = g->trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS;
    for (int64_t i = 0; i < g->batch; i++) {
        unsigned char *ai = a0 + (size_t)(i * g->stride_a) * esz_a;
        unsigned char *bi = b0 + (size_t)(i * g->stride_b) * esz_b;
        unsigned char *ci = c0 + (size_t)(i * g->stride_c) * esz_c;
        const float *pa = (const float *)ai, *pb = (const float *)bi;
        float *pc = (float *)ci;
        int lda = (int)g->lda, ldb = (int)g->ldb, ldc = (int)g->ldc;

        /* A shared operand (stride 0) is widened once for the whole batch. */
        if (stage_a) {
            if ((i == 0 || g->stride_a != 0) &&
                (st = convert(be, ai, g->a.dtype, sa.ld, (unsigned char *)wa, GAN_F32,
                              sa.cols, sa.rows, sa.cols)) != GAN_OK)
                return st;
            pa = wa;
            lda = (int)(sa.cols > 1 ? sa.cols : 1);
        }
        if (stage_b) {
            if ((i == 0 || g->stride_b != 0) &&
                (st = convert(be, bi, g->b.dtype, sb.ld, (unsigned char *)wb, GAN_F32,
                              sb.cols, sb.rows, sb.cols)) != GAN_OK)
                return st;
            pb = wb;
            ldb = (int)(sb.cols > 1 ? sb.cols : 1);
        }
        if (stage_c) {
            if (g->beta != 0.0f &&
                (st = convert(be, ci, g->c.dtype, sc.ld, (unsigned char *)wc, GAN_F32, n,
                              m, n)) != GAN_OK)
                return st;
            pc = wc;
            ldc = (int)n;
        }
        /* beta = 0 promises that C is not read. OpenBLAS 0.3.21 keeps that promise
         * (a NaN in C does not come through), but a BLAS that computes 0·C would not;
         * zeroing first costs one pass over C and makes it hold for any library. */
        if (g->beta == 0.0f)
            for (int64_t r = 0; r < m; r++)
                memset(pc + r * ldc, 0, (size_t)n * sizeof(float));

        be->blas.sgemm(CBLAS_ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, g->alpha, pa, lda,
                       pb, ldb, g->beta, pc, ldc);

        if (stage_c &&
            (st = convert(be, (unsigned char *)wc, GAN_F32, n, ci, g->c.dtype, sc.ld, m,
                          n)) != GAN_OK)
            return st;
    }
    return GAN_OK;
}
