/* SPDX-License-Identifier: MIT */
/* gemm16.c — products with a 16-bit operand on CPUs without a 16-bit dot product, by
 * the backend itself: OpenBLAS's sgemm reads only FP32, so the operands had to be
 * widened first, each in a pass of its own over the whole tensor (and a 16-bit C
 * narrowed in another). Here they are widened as they are packed into the panels the
 * tile reads anyway, and C is rounded as the tile stores it (gemm16_lanes.h).
 *
 * The blocking: each part of the work is a run of B's column panels; for each block of
 * GEMM16_COLS columns of it, B is packed once, then A GEMM16_ROWS rows at a time, and
 * every tile of the two computed over all of k. Nothing splits k, so each element is
 * one FMA chain, and what a part computes does not depend on how many parts there are. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "gemm16.h"

/* Columns of B packed at a time, and rows of A: at k = 512, B's block is 512 KiB and
 * A's 192 KiB, which stream from the L2 cache at a few bytes a cycle while the tile
 * does 24 FMAs per k (bench/README.md). */
#define GEMM16_COLS 512
#define GEMM16_ROWS 96

gan_status cpu_gemm16_setting(const struct gan_host *host, enum cpu_gemm16_path *path)
{
    const char *want = NULL;
    if (gan_setting_string(host, cpu_settings, "gemm16", &want) != GAN_OK ||
        (want && strcmp(want, "auto") != 0 && strcmp(want, "staged") != 0))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: gemm16 = \"%s\" is not a way to widen 16-bit "
                          "products; use \"auto\" (while packing, in the backend's own "
                          "GEMM, where the CPU has AVX2 and FMA) or \"staged\" (a pass "
                          "of its own, then OpenBLAS's sgemm)", want ? want : "(not a string)");
    *path = want && strcmp(want, "staged") == 0 ? CPU_GEMM16_STAGED : CPU_GEMM16_AUTO;
    return GAN_OK;
}

const struct cpu_gemm16_level *cpu_gemm16_level(const gan_backend *be)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (be->gemm16_path == CPU_GEMM16_STAGED || !__builtin_cpu_supports("fma"))
        return NULL;
    if (be->isa == CPU_ISA_AVX512)
        return &cpu_gemm16_level_avx512;
    if (be->isa == CPU_ISA_F16C)
        return &cpu_gemm16_level_avx2;
#else
    (void)be;
#endif
    return NULL;
}

int cpu_gemm16_takes(const gan_backend *be, const struct gan_gemm *g)
{
    if (g->a.dtype == GAN_F32 && g->b.dtype == GAN_F32 && g->c.dtype == GAN_F32)
        return 0;
    if (g->m < CPU_GEMM16_MIN_ROWS || g->n < CPU_GEMM16_MIN_COLS)
        return 0;
    return cpu_gemm16_level(be) != NULL;
}

struct gemm16_job {
    const struct cpu_gemm16_level *lv;
    struct cpu_gemm16_operand a, b;
    struct cpu_gemm16_c c;
    int64_t m, n, k;
    float *scratch;
    size_t part_floats; /* each part's share of scratch */
    size_t b_floats;    /* of which B's block, then A's */
};

static void gemm16_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct gemm16_job *job = arg;
    const struct cpu_gemm16_level *lv = job->lv;
    const int64_t k = job->k, panels_per_block = GEMM16_COLS / lv->nr,
                  rows = GEMM16_ROWS / lv->mr * lv->mr;
    float *bp = job->scratch + (size_t)part * job->part_floats, *ap = bp + job->b_floats;

    for (int64_t p0 = begin; p0 < end; p0 += panels_per_block) {
        const int64_t p1 = end - p0 < panels_per_block ? end : p0 + panels_per_block;
        for (int64_t p = p0; p < p1; p++) {
            const int64_t j = p * lv->nr;
            const int nr = job->n - j < lv->nr ? (int)(job->n - j) : lv->nr;
            lv->pack_b(&job->b, j, nr, k, bp + (size_t)((p - p0) * k * lv->nr));
        }
        for (int64_t i0 = 0; i0 < job->m; i0 += rows) {
            const int64_t i1 = job->m - i0 < rows ? job->m : i0 + rows;
            for (int64_t i = i0; i < i1; i += lv->mr) {
                const int mr = i1 - i < lv->mr ? (int)(i1 - i) : lv->mr;
                lv->pack_a(&job->a, i, mr, k, ap + (size_t)((i - i0) * k));
            }
            for (int64_t i = i0; i < i1; i += lv->mr) {
                const int mr = i1 - i < lv->mr ? (int)(i1 - i) : lv->mr;
                for (int64_t p = p0; p < p1; p++) {
                    const int64_t j = p * lv->nr;
                    const int nr = job->n - j < lv->nr ? (int)(job->n - j) : lv->nr;
                    lv->tile(&job->c, ap + (size_t)((i - i0) * k),
                             bp + (size_t)((p - p0) * k * lv->nr), k, i, j, mr, nr);
                }
            }
        }
    }
}

gan_status cpu_gemm16(gan_backend *be, const struct gan_gemm *g)
{
    const struct cpu_gemm16_level *lv = cpu_gemm16_level(be);
    const int64_t panels = (g->n + lv->nr - 1) / lv->nr;
    const int64_t rows = GEMM16_ROWS / lv->mr * lv->mr;

    /* One part per thread at most: each packs its own A, so more would only repack. */
    int parts = cpu_parallel_parts(be, panels, 1, g->m * g->k * lv->nr);
    if (parts > be->threads)
        parts = be->threads;

    struct gemm16_job job = { .lv = lv, .m = g->m, .n = g->n, .k = g->k };
    job.b_floats = (size_t)(g->k * GEMM16_COLS);
    /* A's block, and the lanes its last packed store spills past it */
    job.part_floats = job.b_floats + (size_t)(g->k * rows) + (size_t)lv->lanes;
    job.part_floats = (job.part_floats + 15) / 16 * 16; /* each part on its own lines */
    gan_status st = cpu_scratch(be, (size_t)parts * job.part_floats * sizeof(float),
                                (void **)&job.scratch);
    if (st != GAN_OK)
        return st;

    const size_t esz_a = gan_dtype_size(g->a.dtype), esz_b = gan_dtype_size(g->b.dtype),
                 esz_c = gan_dtype_size(g->c.dtype);
    for (int64_t e = 0; e < g->batch; e++) {
        job.a = (struct cpu_gemm16_operand){
            cpu_ref_ptr(&g->a) + (size_t)(e * g->stride_a) * esz_a, g->a.dtype, g->lda,
            g->trans_a };
        job.b = (struct cpu_gemm16_operand){
            cpu_ref_ptr(&g->b) + (size_t)(e * g->stride_b) * esz_b, g->b.dtype, g->ldb,
            g->trans_b };
        job.c = (struct cpu_gemm16_c){ cpu_ref_ptr(&g->c) + (size_t)(e * g->stride_c) * esz_c,
                                       g->c.dtype, g->ldc, g->alpha, g->beta };
        cpu_parallel_for(be, parts, panels, 1, gemm16_range, &job);
    }
    return GAN_OK;
}
