/* SPDX-License-Identifier: MIT */
/* sgemm_split.c — OpenBLAS's sgemm on the instance's own threads. OpenBLAS is held at
 * one thread (blas.c), and a product large enough is cut into runs of whole blocks of
 * C's rows (or of its columns, when C has too few rows), one run a thread, each an
 * sgemm call of its own on the thread that claims it (thread_pool.c).
 *
 * Why not OpenBLAS's own threads: they sleep between calls, and every product woke them
 * again, tens of microseconds a call; the backend's workers stay awake between the
 * step's kernels, so the products and the element-wise work between them share one
 * set of threads that are already running (bench/README.md, "Products cut by the
 * backend").
 *
 * The bits: every element of C is still one call's dot product over all of k, in the
 * order the kernel takes it, whichever run it falls in, so a split product equals the
 * unsplit one (check_threads compares them for every transpose, on the kernel the
 * backend chose). Each run, the smallest included, is kept at SPLIT_MIN_MACS
 * multiply-adds or more (SPLIT_MIN_MACS_DIRECT where OpenBLAS has a kernel of its own
 * for smaller products of that kind), so that OpenBLAS never takes a run for a
 * smaller product than the whole: its kernels for those may sum in another order.
 * Haswell's kernel sums the tiles at a call's edge in another order (blas.c): with it
 * OpenBLAS keeps its own threads. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#define CBLAS_ROW_MAJOR 101
#define CBLAS_TRANS 112

/* Runs are whole blocks of this many rows or columns: a multiple of every kernel's
 * tile, so that a run's edge falls where the unsplit product has a tile edge too. */
#define SPLIT_ALIGN 64
/* The fewest multiply-adds a run does: OpenBLAS's small-matrix kernels take products
 * of up to a million. */
#define SPLIT_MIN_MACS ((int64_t)1 << 21)
/* On one thread OpenBLAS 0.3.21 computes a product with neither operand transposed,
 * alpha 1 and beta 0 by its "direct" SkylakeX kernel below 28 · 512 · 512
 * multiply-adds: such a product's runs stay at or above that whenever they are cut. */
#define SPLIT_MIN_MACS_DIRECT ((int64_t)28 * 512 * 512)

struct split_job {
    const struct cpu_blas *blas;
    int trans_a, trans_b, m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
};

/* rows begin .. end of C: the same rows of A (its columns when transposed) */
static void rows_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct split_job *j = arg;
    const float *a = j->trans_a == CBLAS_TRANS ? j->a + begin : j->a + begin * j->lda;
    j->blas->sgemm(CBLAS_ROW_MAJOR, j->trans_a, j->trans_b, (int)(end - begin), j->n, j->k,
                   j->alpha, a, j->lda, j->b, j->ldb, j->beta, j->c + begin * j->ldc, j->ldc);
}

/* columns begin .. end of C: the same columns of B (its rows when transposed) */
static void cols_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct split_job *j = arg;
    const float *b = j->trans_b == CBLAS_TRANS ? j->b + begin * j->ldb : j->b + begin;
    j->blas->sgemm(CBLAS_ROW_MAJOR, j->trans_a, j->trans_b, j->m, (int)(end - begin), j->k,
                   j->alpha, j->a, j->lda, b, j->ldb, j->beta, j->c + begin, j->ldc);
}

void cpu_sgemm(gan_backend *be, int trans_a, int trans_b, int m, int n, int k, float alpha,
               const float *a, int lda, const float *b, int ldb, float beta, float *c,
               int ldc)
{
    const int64_t min_macs = trans_a != CBLAS_TRANS && trans_b != CBLAS_TRANS &&
                                     alpha == 1.0f && beta == 0.0f
                                 ? SPLIT_MIN_MACS_DIRECT
                                 : SPLIT_MIN_MACS;
    const int cut = be->blas.one_thread_calls && be->blas_threads > 1 &&
                    (int64_t)m * n * k >= 2 * min_macs;
    const int by_rows = cut ? cpu_runs(be->blas_threads, m, SPLIT_ALIGN, (int64_t)n * k,
                                       min_macs) : 1;
    const int by_cols = cut ? cpu_runs(be->blas_threads, n, SPLIT_ALIGN, (int64_t)m * k,
                                       min_macs) : 1;
    if (by_rows <= 1 && by_cols <= 1) {
        /* OpenBLAS on threads of its own: the watching workers leave it the cores */
        if (!be->blas.one_thread_calls && be->blas_threads > 1)
            cpu_pool_hush(be);
        be->blas.sgemm(CBLAS_ROW_MAJOR, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb,
                       beta, c, ldc);
        return;
    }
    struct split_job j = { &be->blas, trans_a, trans_b, m, n, k, lda, ldb, ldc,
                           alpha, beta, a, b, c };
    /* Rows when they give as many runs: each run then packs all of B and its own
     * rows of A, which ran faster at the toy's shapes than the other way round. */
    if (by_rows >= by_cols)
        cpu_parallel_for(be, by_rows, m, SPLIT_ALIGN, rows_range, &j);
    else
        cpu_parallel_for(be, by_cols, n, SPLIT_ALIGN, cols_range, &j);
}
