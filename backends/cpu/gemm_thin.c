/* SPDX-License-Identifier: MIT */
/* gemm_thin.c — BF16 products with at most CPU_THIN_MAX columns or rows, by the backend
 * itself. Such a product reads its large operand once and does a few multiply-adds per
 * element of it: a pass over memory, not a GEMM, and oneDNN's matmul spent most of its
 * time on the rest. On a Zen 4 core (`bench/sgemm --dtype BF16 --gemm auto` against
 * `--gemm onednn`, which keeps them on oneDNN), these loops ran the paper toy's
 * 256×2×512 with B transposed at 40 GFLOP/s against oneDNN's 28, 512×2×256 with A
 * transposed at 38 against 16, 256×1×512 at 37 against 14 and 1×512×256 at 47 against
 * 32; 2×512×256 at 47 against 60 (bench/README.md). Products with few values of k but
 * many rows and columns (the toy's 2-D input layer) write a large C: oneDNN's kernel,
 * which rounds to BF16 in one instruction, ran them three times as fast, and keeps them.
 *
 * The thin operand is widened to FP32 first (a few thousand values at most), the large
 * one as it is read; each element of C is summed over k in an order fixed by the shape
 * (gemm_thin_lanes.h), on the calling thread, so that the result does not depend on
 * backend.threads. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "gemm_thin.h"

static const struct cpu_thin_level *level(const gan_backend *be)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (__builtin_cpu_supports("fma")) {
        if (be->isa == CPU_ISA_AVX512)
            return &cpu_thin_level_avx512;
        if (be->isa == CPU_ISA_F16C)
            return &cpu_thin_level_avx2;
    }
#else
    (void)be;
#endif
    return NULL;
}

int cpu_gemm_thin_on(const gan_backend *be)
{
    /* "onednn" asks for oneDNN's matmul for every product it takes */
    return be->gemm_path != CPU_GEMM_ONEDNN && level(be) != NULL;
}

int cpu_gemm_thin_takes(const gan_backend *be, const struct gan_gemm *g)
{
    return g->a.dtype == GAN_BF16 && g->b.dtype == GAN_BF16 &&
           (g->c.dtype == GAN_BF16 || g->c.dtype == GAN_F32) &&
           (g->n <= CPU_THIN_MAX || g->m <= CPU_THIN_MAX) && cpu_gemm_thin_on(be);
}

static float widen(const uint16_t *p, int64_t i)
{
    uint32_t u = (uint32_t)p[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

gan_status cpu_gemm_thin(gan_backend *be, const struct gan_gemm *g)
{
    const struct cpu_thin_level *lv = level(be);
    const int64_t k = g->k;
    /* Few columns: the large operand is A, the thin one op(B)'s columns. Few rows: the
     * large one is B, the thin one op(A)'s rows. (rs, qs) step the thin operand's
     * stored matrix to its next row of `small` and its next value of k. */
    const int few_cols = g->n <= CPU_THIN_MAX;
    const int64_t thin = few_cols ? g->n : g->m;
    const int64_t thin_ld = few_cols ? g->ldb : g->lda;
    const int thin_along_k = few_cols ? g->trans_b : !g->trans_a;
    const int64_t rs = thin_along_k ? thin_ld : 1, qs = thin_along_k ? 1 : thin_ld;
    float *small = NULL;
    gan_status st = cpu_scratch(be, (size_t)(thin * k) * sizeof(float), (void **)&small);
    if (st != GAN_OK)
        return st;
    const size_t esz_c = gan_dtype_size(g->c.dtype);
    for (int64_t e = 0; e < g->batch; e++) {
        const uint16_t *a = (const uint16_t *)cpu_ref_ptr(&g->a) + e * g->stride_a;
        const uint16_t *b = (const uint16_t *)cpu_ref_ptr(&g->b) + e * g->stride_b;
        const struct cpu_thin t = {
            .big = few_cols ? a : b,
            .ld = few_cols ? g->lda : g->ldb,
            .along_k = few_cols ? !g->trans_a : g->trans_b,
            .count = few_cols ? g->m : g->n,
            .thin = thin,
            .k = k,
            .small = small,
            .c = (unsigned char *)cpu_ref_ptr(&g->c) + (size_t)(e * g->stride_c) * esz_c,
            .c_dtype = g->c.dtype,
            .cv = few_cols ? g->ldc : 1,
            .cs = few_cols ? 1 : g->ldc,
            .alpha = g->alpha,
            .beta = g->beta,
        };
        /* A shared thin operand (stride 0) is widened once for the batch. */
        const uint16_t *from = few_cols ? b : a;
        if (e == 0 || (few_cols ? g->stride_b : g->stride_a) != 0)
            for (int64_t r = 0; r < thin; r++)
                for (int64_t q = 0; q < k; q++)
                    small[r * k + q] = widen(from, r * rs + q * qs);
        (t.along_k ? lv->dots : lv->chains)(&t);
    }
    return GAN_OK;
}
