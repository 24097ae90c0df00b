/* SPDX-License-Identifier: MIT */
/* gemm.c — C = alpha·op(A)·op(B) + beta·C on the CPU through BLAS's sgemm, batched,
 * with FP16/BF16 operands staged through FP32 (widened and narrowed on the instance's
 * threads, cast.c) and the result rounded once; BF16
 * products through oneDNN's matmul where the instance has it (onednn_matmul.c). */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include "gemm16.h"
#include "gemm_thin.h"
#include "../common/gemm_checks.h"

/* CBLAS's enum values (cblas.h), passed as ints; see cpu_sgemm_fn. */
#define CBLAS_NO_TRANS 111
#define CBLAS_TRANS 112

/* C = beta·C without a product (k = 0, or alpha = 0 where BLAS does not read A, B).
 * beta = 0 writes zeros without reading C, so NaN or inf there does not survive. */
static void scale_c(const struct gan_gemm_stored *sc, int64_t m, int64_t n, float beta,
                    unsigned char *c)
{
    enum gan_dtype dt = sc->ref->dtype;
    for (int64_t r = 0; r < m; r++) {
        int64_t row = r * sc->ld;
        for (int64_t j = 0; j < n; j++)
            cpu_store(c, dt, row + j, beta == 0.0f ? 0.0f : beta * cpu_load(c, dt, row + j));
    }
}

/* The staged operands are 64-byte aligned pieces of one scratch allocation. */
#define GEMM_STAGE_ALIGN 64

/* A checked product with a non-empty C (backends/common/gemm_checks.h). */
static gan_status gemm_product(gan_backend *be, const struct gan_gemm *g,
                               const struct gan_gemm_stored *sa,
                               const struct gan_gemm_stored *sb,
                               const struct gan_gemm_stored *sc)
{
    gan_status st = cpu_kept_gemm(be, g);
    if (st != GAN_OK)
        return st;
    const int64_t m = g->m, n = g->n, k = g->k;

    const size_t esz_a = gan_dtype_size(g->a.dtype), esz_b = gan_dtype_size(g->b.dtype),
                 esz_c = gan_dtype_size(g->c.dtype);
    unsigned char *a0 = k ? cpu_ref_ptr(&g->a) : NULL;
    unsigned char *b0 = k ? cpu_ref_ptr(&g->b) : NULL;
    unsigned char *c0 = cpu_ref_ptr(&g->c);

    /* BLAS does not reference A and B when alpha = 0 (or k = 0): the result is beta·C
     * even if A or B hold NaN. Follow that convention here too. */
    if (k == 0 || g->alpha == 0.0f) {
        for (int64_t i = 0; i < g->batch; i++)
            scale_c(sc, m, n, g->beta, c0 + (size_t)(i * g->stride_c) * esz_c);
        return GAN_OK;
    }

    /* BF16 products with a thin side are passes over memory, the backend's own. */
    if (cpu_gemm_thin_takes(be, g))
        return cpu_gemm_thin(be, g);
    /* BF16 (and, when asked for, FP32) products go to oneDNN where the instance has it;
     * it declines a product it has no primitive for, which then stays here. */
    if (cpu_onednn_gemm(be, g, &st))
        return st;
    /* Other 16-bit products to the backend's own GEMM, which widens while it packs. */
    if (cpu_gemm16_takes(be, g))
        return cpu_gemm16(be, g);

    /* 16-bit operands are widened to FP32 (exactly) in scratch; a 16-bit C gets an
     * FP32 accumulator that is rounded once at the end, as a tensor core does. */
    const int stage_a = g->a.dtype != GAN_F32, stage_b = g->b.dtype != GAN_F32,
              stage_c = g->c.dtype != GAN_F32;
    size_t bytes_a = stage_a ? gan_gemm_align((size_t)(sa->rows * sa->cols) * sizeof(float),
                                              GEMM_STAGE_ALIGN) : 0;
    size_t bytes_b = stage_b ? gan_gemm_align((size_t)(sb->rows * sb->cols) * sizeof(float),
                                              GEMM_STAGE_ALIGN) : 0;
    size_t bytes_c = stage_c ? gan_gemm_align((size_t)(m * n) * sizeof(float),
                                              GEMM_STAGE_ALIGN) : 0;
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

        /* The staged operands are widened together, one job on the instance's threads
         * (FP16 → FP32 and BF16 → FP32 are exact); a shared operand (stride 0) once
         * for the whole batch. */
        struct cpu_convert_rows wide[3];
        int nwide = 0;
        if (stage_a) {
            if (i == 0 || g->stride_a != 0)
                wide[nwide++] = (struct cpu_convert_rows){ ai, g->a.dtype, sa->ld, wa, GAN_F32,
                                                           sa->cols, sa->rows, sa->cols };
            pa = wa;
            lda = (int)(sa->cols > 1 ? sa->cols : 1);
        }
        if (stage_b) {
            if (i == 0 || g->stride_b != 0)
                wide[nwide++] = (struct cpu_convert_rows){ bi, g->b.dtype, sb->ld, wb, GAN_F32,
                                                           sb->cols, sb->rows, sb->cols };
            pb = wb;
            ldb = (int)(sb->cols > 1 ? sb->cols : 1);
        }
        if (stage_c) {
            if (g->beta != 0.0f)
                wide[nwide++] = (struct cpu_convert_rows){ ci, g->c.dtype, sc->ld, wc, GAN_F32,
                                                           n, m, n };
            pc = wc;
            ldc = (int)n;
        }
        cpu_convert_rows_threads(be, wide, nwide);
        /* beta = 0 promises that C is not read. OpenBLAS keeps that promise (a NaN in
         * C does not come through), but a BLAS that computes 0·C would not: for such
         * a library C is zeroed first, a pass over C that OpenBLAS does not need (it
         * was 2 % of the paper toy's time). */
        if (g->beta == 0.0f && !be->blas.beta_zero_unread)
            for (int64_t r = 0; r < m; r++)
                memset(pc + r * ldc, 0, (size_t)n * sizeof(float));

        cpu_sgemm(be, ta, tb, (int)m, (int)n, (int)k, g->alpha, pa, lda, pb, ldb, g->beta,
                  pc, ldc);

        /* the FP32 result rounded once (to nearest even) into the 16-bit C */
        if (stage_c) {
            const struct cpu_convert_rows narrow = { wc, GAN_F32, n, ci, g->c.dtype, sc->ld, m, n };
            cpu_convert_rows_threads(be, &narrow, 1);
        }
    }
    return GAN_OK;
}

gan_status cpu_gemm(gan_backend *be, const struct gan_gemm *g)
{
    return gan_gemm_entry(be, be->host, "BLAS", INT64_MAX, gemm_product, g);
}
