/* SPDX-License-Identifier: MIT */
/* onednn_rows.c — a oneDNN matmul cut into runs of C's rows on the backend's threads.
 * Each run is a primitive of its own, made for one OpenMP thread, over its rows of A and
 * C and all of B, with a scratchpad and a stream of its own; the runs go to the
 * instance's pool (thread_pool.c), one a thread, as OpenBLAS's products do
 * (sgemm_split.c).
 *
 * Why not oneDNN's own threads: they wait passively between calls (onednn.c), and every
 * product woke them again, while the backend's workers stay awake between a step's
 * kernels. On a 2-core Zen 4, BF16 256×512×512 with B transposed or not ran at 440 and
 * 438 GFLOP/s in two runs on two threads (`bench/sgemm --dtype BF16 --gemm auto
 * --threads 1,2`; 229 and 221 on one) against 393 and 397 on oneDNN's two OpenMP
 * threads (`bench/limits --threads 2`); inside the paper toy's BF16 step at 2 threads
 * they had run at 361–373 (bench/README.md).
 *
 * The bits: with one thread, BF16 operands and A not transposed, oneDNN's AVX512-BF16
 * matmul kernel (2.6, "brg:avx512_core_bf16") sums every element of C over all of k in
 * an order that does not depend on how many rows the call has, so a run's rows are
 * those of the whole product on one thread, and the result is the same at any thread
 * count (check_onednn compares them for both layouts of B, BF16 and FP32 results, with
 * alpha and beta). Other products differ: cut at any multiple of 64 rows (or of
 * columns), with A transposed 256×512×512 differed from the whole in BF16 and FP32 and
 * 512×512×256 in FP32 with a sum post-op, and the FP32 kernel ("brg:avx512_core")
 * differed in the rows of the last tiles. They stay on oneDNN's own threads, as do the
 * products of kernels not measured here (AMX's): a product is cut only when oneDNN
 * takes the whole of it on one thread, and every run, on that kernel.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* Runs are whole blocks of this many rows, so that a run's edge falls on a tile edge
 * of the whole product's kernel. */
#define ROWS_ALIGN 64
/* The fewest multiply-adds a run does: 2^22, about 37 µs of BF16 work on one Zen 4
 * core, against a microsecond or two to hand a run to a worker that is awake. */
#define ROWS_MIN_MACS ((int64_t)1 << 22)

struct rows_part {
    int64_t rows;
    dnnl_primitive_t prim;      /* part 0's is the entry's own (e->prim) */
    dnnl_memory_t a, b, c;      /* over the caller's memory, set on every call */
    dnnl_memory_t scratch;      /* NULL when the primitive needs none */
    void *scratch_buffer;
    dnnl_stream_t stream;
};

struct cpu_onednn_rows {
    int parts;
    int64_t m, lda, ldc;        /* A is never transposed here: its rows are C's */
    size_t esz_a, esz_c;
    dnnl_status_t failed[CPU_MAX_PARTS];
    struct rows_part part[];
};

int cpu_onednn_rows_parts(const gan_backend *be, const struct gan_gemm *g)
{
    if (be->threads < 2 || g->batch != 1 || g->trans_a || g->a.dtype != GAN_BF16 ||
        g->b.dtype != GAN_BF16 || g->m <= 0 || g->n <= 0 || g->k <= 0)
        return 1;
    return cpu_runs(be->threads, g->m, ROWS_ALIGN, g->n * g->k, ROWS_MIN_MACS);
}

int cpu_onednn_rows_kernel(const char *impl)
{
    return strcmp(impl, "brg:avx512_core_bf16") == 0;
}

int64_t cpu_onednn_rows_of(const struct gan_gemm *g, int parts, int p)
{
    return cpu_part_begin(g->m, ROWS_ALIGN, parts, p + 1) -
           cpu_part_begin(g->m, ROWS_ALIGN, parts, p);
}

int cpu_onednn_rows_init(struct cpu_onednn_entry *e, const struct gan_gemm *g, int parts)
{
    if (parts < 2 || parts > CPU_MAX_PARTS)
        return -1;
    struct cpu_onednn_rows *r = calloc(1, sizeof *r + (size_t)parts * sizeof r->part[0]);
    if (!r)
        return -1;
    e->rows = r;
    r->parts = parts;
    r->m = g->m;
    r->lda = g->lda;
    r->ldc = g->ldc;
    r->esz_a = gan_dtype_size(g->a.dtype);
    r->esz_c = gan_dtype_size(g->c.dtype);
    return 0;
}

int cpu_onednn_rows_set(gan_backend *be, struct cpu_onednn_entry *e, int p,
                        dnnl_primitive_desc_t pd, const dnnl_memory_desc_t md[3])
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    struct rows_part *q = &e->rows->part[p];
    q->rows = md[2].dims[0];
    /* The scratchpad is read before the descriptor goes into the primitive. */
    dnnl_memory_desc_t smd;
    memset(&smd, 0, sizeof smd);
    const dnnl_memory_desc_t *s =
        api->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (s)
        smd = *s;
    const size_t scratch_bytes = s ? api->dnnl_memory_desc_get_size(s) : 0;
    /* every run on the kernel whose rows keep their bits, or the product stays whole */
    const char *impl = NULL;
    if (api->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
            dnnl_success || !impl || !cpu_onednn_rows_kernel(impl)) {
        api->dnnl_primitive_desc_destroy(pd);
        return 1;
    }
    if (p == 0) {
        /* names the implementation, and refuses oneDNN's reference loops under "auto" */
        if (cpu_onednn_set_primitive(be, e, pd) != 0)
            return -1;
        q->prim = e->prim;
    } else {
        dnnl_status_t st = api->dnnl_primitive_create(&q->prim, pd);
        api->dnnl_primitive_desc_destroy(pd);
        if (st != dnnl_success) {
            q->prim = NULL;
            return -1;
        }
    }
    if (scratch_bytes) {
        q->scratch_buffer = aligned_alloc(64, (scratch_bytes + 63) & ~(size_t)63);
        if (!q->scratch_buffer ||
            api->dnnl_memory_create(&q->scratch, &smd, o->engine, q->scratch_buffer) !=
                dnnl_success) {
            q->scratch = NULL;
            return -1;
        }
    }
    if (api->dnnl_memory_create(&q->a, &md[0], o->engine, DNNL_MEMORY_NONE) != dnnl_success)
        q->a = NULL;
    if (api->dnnl_memory_create(&q->b, &md[1], o->engine, DNNL_MEMORY_NONE) != dnnl_success)
        q->b = NULL;
    if (api->dnnl_memory_create(&q->c, &md[2], o->engine, DNNL_MEMORY_NONE) != dnnl_success)
        q->c = NULL;
    if (api->dnnl_stream_create(&q->stream, o->engine, dnnl_stream_default_flags) !=
        dnnl_success)
        q->stream = NULL;
    return q->a && q->b && q->c && q->stream ? 0 : -1;
}

void cpu_onednn_rows_free(const struct cpu_dnnl_api *api, struct cpu_onednn_rows *r)
{
    for (int p = 0; p < r->parts; p++) {
        struct rows_part *q = &r->part[p];
        if (q->prim && p > 0)
            api->dnnl_primitive_destroy(q->prim);
        dnnl_memory_t mem[4] = { q->a, q->b, q->c, q->scratch };
        for (int i = 0; i < 4; i++)
            if (mem[i])
                api->dnnl_memory_destroy(mem[i]);
        free(q->scratch_buffer);
        if (q->stream)
            api->dnnl_stream_destroy(q->stream);
    }
    free(r);
}

struct rows_job {
    const struct cpu_dnnl_api *api;
    struct cpu_onednn_rows *r;
    unsigned char *a, *b, *c;
};

/* Run p, rows begin .. end of C, on the calling thread: the same rows of A and all of
 * B. */
static void rows_range(void *arg, int p, int64_t begin, int64_t end)
{
    const struct rows_job *j = arg;
    const struct cpu_dnnl_api *api = j->api;
    struct cpu_onednn_rows *r = j->r;
    struct rows_part *q = &r->part[p];
    if (end - begin != q->rows) { /* the pool cut otherwise than the build: a bug */
        r->failed[p] = dnnl_runtime_error;
        return;
    }
    /* A worker has OpenMP's default team size: the part runs on this thread alone, as
     * its primitive was made for. */
    api->omp_set_num_threads(1);
    unsigned char *a = j->a + (size_t)(begin * r->lda) * r->esz_a;
    unsigned char *c = j->c + (size_t)(begin * r->ldc) * r->esz_c;
    dnnl_status_t s;
    if ((s = api->dnnl_memory_set_data_handle(q->a, a)) != dnnl_success ||
        (s = api->dnnl_memory_set_data_handle(q->b, j->b)) != dnnl_success ||
        (s = api->dnnl_memory_set_data_handle(q->c, c)) != dnnl_success) {
        r->failed[p] = s;
        return;
    }
    dnnl_exec_arg_t args[4] = {
        { DNNL_ARG_SRC, q->a }, { DNNL_ARG_WEIGHTS, q->b }, { DNNL_ARG_DST, q->c },
        { DNNL_ARG_SCRATCHPAD, q->scratch },
    };
    s = api->dnnl_primitive_execute(q->prim, q->stream, q->scratch ? 4 : 3, args);
    if (s == dnnl_success)
        s = api->dnnl_stream_wait(q->stream);
    r->failed[p] = s;
}

gan_status cpu_onednn_rows_execute(gan_backend *be, struct cpu_onednn_entry *e,
                                   void *const *ptrs)
{
    struct cpu_onednn_rows *r = e->rows;
    struct rows_job j = { &be->onednn->api, r, ptrs[0], ptrs[1], ptrs[2] };
    cpu_parallel_for(be, r->parts, r->m, ROWS_ALIGN, rows_range, &j);
    /* the calling thread ran a run too: its OpenMP team back to the instance's, which an
     * OpenMP build of OpenBLAS also takes */
    be->onednn->api.omp_set_num_threads(be->threads);
    for (int p = 0; p < r->parts; p++)
        if (r->failed[p] != dnnl_success)
            return be->host->fail(be->host->ctx, GAN_ERR_DEVICE,
                                  "oneDNN matmul (%s, in runs of rows) failed with status %d; "
                                  "set backend.gemm = \"openblas\" to compute without oneDNN",
                                  e->impl, (int)r->failed[p]);
    return GAN_OK;
}
