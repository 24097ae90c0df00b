/* SPDX-License-Identifier: MIT */
/* gemm16.c — products with a 16-bit operand on CPUs without a 16-bit dot product, by
 * the backend itself: OpenBLAS's sgemm reads only FP32, so the operands had to be
 * widened first, each in a pass of its own over the whole tensor (and a 16-bit C
 * narrowed in another). Here they are widened as they are packed into the panels the
 * tile reads anyway, and C is rounded as the tile stores it (gemm16_lanes.h).
 *
 * The blocking: each part of the work is a run of B's column panels; for each block of
 * GEMM16_COLS columns of it and CPU_GEMM16_DEPTH values of k, B is packed once, then A
 * GEMM16_ROWS rows at a time, and every tile of the two computed. A tile's chains are
 * kept in FP32 between blocks of k and go on from where they stopped, so each element
 * is one FMA chain over all of k, and what a part computes does not depend on how many
 * parts there are. A product over a few values of k skips the tiles (gemm16_shallow),
 * computing the same chains. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "gemm16.h"

/* Columns of B packed at a time and rows of A, with CPU_GEMM16_DEPTH values of k
 * (gemm16.h): B's block is 512 KiB and A's 96 KiB, in the L2 cache; one A panel (12 ×
 * 256 floats on AVX-512) stays in the L1 cache while the tiles of its row read B's
 * panels from L2 at a few bytes a cycle, as the tile does 24 FMAs per k. */
#define GEMM16_COLS 512
#define GEMM16_ROWS 96

/* What the tile's multiply-adds cost against an element-wise add, in the units
 * cpu_parallel_parts plans with: 64 of them to an add, so that a product is split from
 * 8.4 million multiply-adds (2 · CPU_PARALLEL_MIN · 64), below which a split did not
 * pay. In FP16 on a 2-core Zen 4 (bench/sgemm --dtype F16 --shapes
 * ..., GFLOP/s on 1 and on 2 threads, each split in two): 256×512×8 61 and 30, ×16 79
 * and 54, ×32 (4.2 million) 92 and 88, ×64 (8.4 million) 101 and 122. */
#define GEMM16_MACS_PER_ADD 64

gan_status cpu_gemm16_setting(const struct gan_host *host, enum cpu_gemm16_path *path)
{
    const char *want = NULL;
    if (gan_setting_string(host, cpu_settings, "gemm16", &want) != GAN_OK ||
        (want && strcmp(want, "auto") != 0 && strcmp(want, "packed") != 0 &&
         strcmp(want, "staged") != 0))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: gemm16 = \"%s\" is not a way to widen 16-bit "
                          "products; use \"auto\" (while packing, in the backend's own "
                          "GEMM, on AVX-512), \"packed\" (also on AVX2 with FMA) or "
                          "\"staged\" (a pass of its own, then OpenBLAS's sgemm)",
                          want ? want : "(not a string)");
    *path = !want || strcmp(want, "auto") == 0 ? CPU_GEMM16_AUTO
            : strcmp(want, "packed") == 0      ? CPU_GEMM16_PACKED
                                               : CPU_GEMM16_STAGED;
    return GAN_OK;
}

const struct cpu_gemm16_level *cpu_gemm16_level(const gan_backend *be, const char **why)
{
    const char *unused;
    why = why ? why : &unused;
    if (be->gemm16_path == CPU_GEMM16_STAGED) {
        *why = "set by backend.gemm16";
        return NULL;
    }
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (__builtin_cpu_supports("fma")) {
        if (be->isa == CPU_ISA_AVX512)
            return &cpu_gemm16_level_avx512;
        /* On AVX2 the tile ran 0.87-0.93x OpenBLAS's Haswell kernel on widened copies
         * (bench/README.md), so only "packed" takes it there. */
        if (be->isa == CPU_ISA_F16C && be->gemm16_path == CPU_GEMM16_PACKED)
            return &cpu_gemm16_level_avx2;
        if (be->isa == CPU_ISA_F16C) {
            *why = "the backend's own GEMM was slower on AVX2; backend.gemm16 = \"packed\" "
                   "takes it";
            return NULL;
        }
    }
#endif
    *why = "the backend's own GEMM needs AVX2 with FMA";
    return NULL;
}

int cpu_gemm16_takes(const gan_backend *be, const struct gan_gemm *g)
{
    if (g->a.dtype == GAN_F32 && g->b.dtype == GAN_F32 && g->c.dtype == GAN_F32)
        return 0;
    if (g->m < CPU_GEMM16_MIN_ROWS || g->n < CPU_GEMM16_MIN_COLS)
        return 0;
    return cpu_gemm16_level(be, NULL) != NULL;
}

/* How much of a full run of `full` is left when `left` remain: a tile's rows or columns. */
static inline int edge(int64_t left, int full)
{
    return left < full ? (int)left : full;
}

struct gemm16_job {
    const struct cpu_gemm16_level *lv;
    struct cpu_gemm16_operand a, b;
    struct cpu_gemm16_c c;
    int64_t m, n, k;
    int64_t rows;       /* of A packed at a time: GEMM16_ROWS in whole tiles */
    float *scratch;
    size_t part_floats; /* each part's share of scratch: */
    size_t b_floats;    /* B's block, then A's, */
    size_t a_floats;    /* then the chains kept between blocks of k */
};

static void gemm16_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct gemm16_job *job = arg;
    const struct cpu_gemm16_level *lv = job->lv;
    const int64_t panels_per_block = GEMM16_COLS / lv->nr, rows = job->rows,
                  tile = lv->mr * lv->nr;
    float *bp = job->scratch + (size_t)part * job->part_floats, *ap = bp + job->b_floats,
          *kept = ap + job->a_floats;

    for (int64_t p0 = begin; p0 < end; p0 += panels_per_block) {
        const int64_t p1 = end - p0 < panels_per_block ? end : p0 + panels_per_block;
        for (int64_t kb = 0; kb < job->k; kb += CPU_GEMM16_DEPTH) {
            const int64_t kc = edge(job->k - kb, CPU_GEMM16_DEPTH);
            const int first = kb == 0, last = kb + kc == job->k;
            for (int64_t p = p0; p < p1; p++) {
                const int64_t j = p * lv->nr;
                lv->pack_b(&job->b, j, edge(job->n - j, lv->nr), kb, kc,
                           bp + (size_t)((p - p0) * kc * lv->nr));
            }
            for (int64_t i0 = 0; i0 < job->m; i0 += rows) {
                const int64_t i1 = job->m - i0 < rows ? job->m : i0 + rows;
                for (int64_t i = i0; i < i1; i += lv->mr)
                    lv->pack_a(&job->a, i, edge(i1 - i, lv->mr), kb, kc,
                               ap + (size_t)((i - i0) * CPU_GEMM16_DEPTH));
                for (int64_t i = i0; i < i1; i += lv->mr) {
                    const int mr = edge(i1 - i, lv->mr);
                    for (int64_t p = p0; p < p1; p++) {
                        const int64_t j = p * lv->nr;
                        const int nr = edge(job->n - j, lv->nr);
                        float *own = kept + (size_t)((i / lv->mr * panels_per_block + p - p0) *
                                                     tile);
                        lv->tile(&job->c, ap + (size_t)((i - i0) * CPU_GEMM16_DEPTH),
                                 !job->a.trans,
                                 bp + (size_t)((p - p0) * kc * lv->nr), kc, i, j, mr, nr, own,
                                 first, last);
                    }
                }
            }
        }
    }
}

/* A product over k ≤ CPU_GEMM16_SHALLOW: C's rows split across the threads, each row its
 * own (the same bits on any split). */
struct shallow_job {
    const struct cpu_gemm16_level *lv;
    struct cpu_gemm16_c c;
    const float *aw, *bw;
    int64_t m, ldw, n, k;
};

static void shallow_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct shallow_job *j = arg;
    j->lv->shallow(&j->c, j->aw, j->m, j->bw, j->ldw, j->n, j->k, begin, end);
}

/* op(X)'s k lines of `len` values widened into w (lines ld_w apart, zeros up to ld_w):
 * A's columns (len = m) or B's rows (len = n), where X is stored `along` (k × len, each
 * line a run of memory) or across (len × k: each of its len rows widened into `stage`,
 * then dealt out to the lines). A few lines, once per batch entry. */
static void widen_lines(enum cpu_isa isa, const struct cpu_gemm16_operand *x, int along,
                        int64_t len, int64_t k, float *w, int64_t ld_w, float *stage)
{
    const size_t es = gan_dtype_size(x->dtype);
    const unsigned char *p0 = x->p;
    if (along) {
        for (int64_t p = 0; p < k; p++)
            cpu_convert(isa, p0 + (size_t)(p * x->ld) * es, x->dtype, w + p * ld_w, GAN_F32,
                        (size_t)len);
    } else {
        if (x->ld == k)
            cpu_convert(isa, p0, x->dtype, stage, GAN_F32, (size_t)(len * k));
        else
            for (int64_t i = 0; i < len; i++)
                cpu_convert(isa, p0 + (size_t)(i * x->ld) * es, x->dtype, stage + i * k,
                            GAN_F32, (size_t)k);
        for (int64_t i = 0; i < len; i++)
            for (int64_t p = 0; p < k; p++)
                w[p * ld_w + i] = stage[i * k + p];
    }
    for (int64_t p = 0; p < k; p++)
        memset(w + p * ld_w + len, 0, (size_t)(ld_w - len) * sizeof *w);
}

static gan_status gemm16_shallow(gan_backend *be, const struct cpu_gemm16_level *lv,
                                 const struct gan_gemm *g)
{
    struct shallow_job job = { .lv = lv, .m = g->m, .n = g->n, .k = g->k,
                               .ldw = (g->n + lv->lanes - 1) / lv->lanes * lv->lanes };
    /* A's lines, B's, and the stage a stored-across operand is widened through */
    const int64_t longest = g->m > g->n ? g->m : g->n;
    float *w = NULL;
    gan_status st = cpu_scratch(be, (size_t)((g->m + job.ldw + longest) * g->k) * sizeof *w,
                                (void **)&w);
    if (st != GAN_OK)
        return st;
    float *aw = w, *bw = w + g->m * g->k, *stage = bw + job.ldw * g->k;
    job.aw = aw;
    job.bw = bw;
    /* each row of C: n elements stored, k multiply-adds each */
    const int parts = cpu_parallel_parts(be, g->m, 1, g->n);
    const size_t esz_a = gan_dtype_size(g->a.dtype), esz_b = gan_dtype_size(g->b.dtype),
                 esz_c = gan_dtype_size(g->c.dtype);
    for (int64_t e = 0; e < g->batch; e++) {
        /* A is stored k × m when transposed (its columns of op(A) are runs), B k × n when
         * not */
        const struct cpu_gemm16_operand a = {
            cpu_ref_ptr(&g->a) + (size_t)(e * g->stride_a) * esz_a, g->a.dtype, g->lda,
            g->trans_a, g->trans_a ? g->m : g->k };
        const struct cpu_gemm16_operand b = {
            cpu_ref_ptr(&g->b) + (size_t)(e * g->stride_b) * esz_b, g->b.dtype, g->ldb,
            g->trans_b, g->trans_b ? g->k : g->n };
        if (e == 0 || g->stride_a != 0)
            widen_lines(be->isa, &a, g->trans_a, g->m, g->k, aw, g->m, stage);
        if (e == 0 || g->stride_b != 0)
            widen_lines(be->isa, &b, !g->trans_b, g->n, g->k, bw, job.ldw, stage);
        job.c = (struct cpu_gemm16_c){ cpu_ref_ptr(&g->c) + (size_t)(e * g->stride_c) * esz_c,
                                       g->c.dtype, g->ldc, g->alpha, g->beta };
        cpu_parallel_for(be, parts, g->m, 1, shallow_range, &job);
    }
    return GAN_OK;
}

gan_status cpu_gemm16(gan_backend *be, const struct gan_gemm *g)
{
    const struct cpu_gemm16_level *lv = cpu_gemm16_level(be, NULL);
    if (g->k >= 1 && g->k <= CPU_GEMM16_SHALLOW)
        return gemm16_shallow(be, lv, g);
    const int64_t panels = (g->n + lv->nr - 1) / lv->nr;
    /* One part per thread at most: each packs its own A, so more would only repack. */
    int parts = cpu_parallel_parts(be, panels, 1, g->m * g->k * lv->nr / GEMM16_MACS_PER_ADD);
    if (parts > be->threads)
        parts = be->threads;

    struct gemm16_job job = { .lv = lv, .m = g->m, .n = g->n, .k = g->k,
                              .rows = GEMM16_ROWS / lv->mr * lv->mr };
    const int64_t depth = g->k < CPU_GEMM16_DEPTH ? g->k : CPU_GEMM16_DEPTH;
    job.b_floats = (size_t)(depth * GEMM16_COLS);
    /* A's block, its panels' rows CPU_GEMM16_DEPTH apart in either layout, and the lanes
     * the last store of a k-major panel spills past it */
    job.a_floats = (size_t)(CPU_GEMM16_DEPTH * job.rows) + (size_t)lv->lanes;
    /* with more than one block of k, each tile's chains between them */
    const size_t kept = g->k > CPU_GEMM16_DEPTH
                            ? (size_t)(((g->m + lv->mr - 1) / lv->mr) * lv->mr * GEMM16_COLS)
                            : 0;
    job.part_floats = job.b_floats + job.a_floats + kept;
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
            g->trans_a, g->trans_a ? g->m : g->k };
        job.b = (struct cpu_gemm16_operand){
            cpu_ref_ptr(&g->b) + (size_t)(e * g->stride_b) * esz_b, g->b.dtype, g->ldb,
            g->trans_b, g->trans_b ? g->k : g->n };
        job.c = (struct cpu_gemm16_c){ cpu_ref_ptr(&g->c) + (size_t)(e * g->stride_c) * esz_c,
                                       g->c.dtype, g->ldc, g->alpha, g->beta };
        cpu_parallel_for(be, parts, panels, 1, gemm16_range, &job);
    }
    return GAN_OK;
}
