/* SPDX-License-Identifier: MIT */
/* onednn_matmul.c — struct gan_gemm as a oneDNN matmul: C = alpha·op(A)·op(B) + beta·C,
 * batched, op(A) and op(B) expressed as strides of the stored matrices, alpha as the
 * output scale and beta as a sum post-op, accumulated in FP32 and rounded once. */
#include "config.h"

#include <string.h>

#include "onednn.h"

/* Whether oneDNN takes this product. BF16 × BF16 (into BF16 or FP32) where the
 * instance sends BF16 to oneDNN (o->bf16); FP32 only under gemm = "onednn": on the CPUs measured
 * (bench/README.md) OpenBLAS's sgemm is as fast or faster for every shape the
 * networks use, and FP32 results then stay those of the OpenBLAS path bit for bit. */
static int takes(const gan_backend *be, const struct gan_gemm *g)
{
    const enum gan_dtype a = g->a.dtype, b = g->b.dtype, c = g->c.dtype;
    if (a == GAN_BF16 && b == GAN_BF16)
        return be->onednn->bf16 && (c == GAN_BF16 || c == GAN_F32);
    if (a == GAN_F32 && b == GAN_F32 && c == GAN_F32)
        return be->gemm_path == CPU_GEMM_ONEDNN;
    return 0;
}

/* One operand as a (batch ×) rows × cols matrix whose element (r, q) is `rs`·r + `qs`·q
 * elements from its start: a transposed operand swaps the strides, a shared one
 * (stride 0 over a batch) is a batch of 1, which matmul broadcasts. */
static dnnl_status_t operand_md(const struct cpu_dnnl_api *api, dnnl_memory_desc_t *md,
                                int64_t batch, int64_t bstride,
                                int64_t rows, int64_t cols, int64_t rs, int64_t qs,
                                enum gan_dtype dtype)
{
    if (batch == 1) {
        const dnnl_dims_t dims = { rows, cols }, strides = { rs, qs };
        return api->dnnl_memory_desc_init_by_strides(md, 2, dims, cpu_onednn_dtype(dtype), strides);
    }
    const int64_t b = bstride == 0 ? 1 : batch;
    const int64_t bs = bstride == 0 ? rows * cols : bstride;
    const dnnl_dims_t dims = { b, rows, cols }, strides = { bs, rs, qs };
    return api->dnnl_memory_desc_init_by_strides(md, 3, dims, cpu_onednn_dtype(dtype), strides);
}

/* The descriptor of g's product over its first `rows` rows (all of them: g->m), made
 * for the OpenMP team in force, with alpha as the output scale and beta as a sum
 * post-op, and a scratchpad of the caller's when `own_scratchpad`; md[] gets A's, B's
 * and C's memory as the caller stores them. NULL when oneDNN has none. */
static dnnl_primitive_desc_t product_pd(gan_backend *be, const struct gan_gemm *g,
                                        int64_t rows, int own_scratchpad,
                                        dnnl_memory_desc_t md[3])
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    const int64_t n = g->n, k = g->k;
    if (operand_md(api, &md[0], g->batch, g->stride_a, rows, k, g->trans_a ? 1 : g->lda,
                   g->trans_a ? g->lda : 1, g->a.dtype) != dnnl_success ||
        operand_md(api, &md[1], g->batch, g->stride_b, k, n, g->trans_b ? 1 : g->ldb,
                   g->trans_b ? g->ldb : 1, g->b.dtype) != dnnl_success ||
        operand_md(api, &md[2], g->batch, g->stride_c, rows, n, g->ldc, 1, g->c.dtype) !=
            dnnl_success)
        return NULL;
    dnnl_matmul_desc_t desc;
    if (api->dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2]) != dnnl_success)
        return NULL;

    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    int bad = api->dnnl_primitive_attr_create(&attr) != dnnl_success;
    if (!bad && g->alpha != 1.0f)
        bad = api->dnnl_primitive_attr_set_output_scales(attr, 1, 0, &g->alpha) != dnnl_success;
    if (!bad && g->beta != 0.0f) {
        /* the sum post-op reads C (in its own dtype) and adds beta times it to the
         * scaled FP32 product before the one rounding to C's dtype */
        bad = api->dnnl_post_ops_create(&po) != dnnl_success ||
              api->dnnl_post_ops_append_sum(po, g->beta) != dnnl_success ||
              api->dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success;
    }
    if (!bad && own_scratchpad)
        bad = api->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) !=
              dnnl_success;
    dnnl_primitive_desc_t pd = NULL;
    if (!bad && api->dnnl_primitive_desc_create(&pd, &desc, attr, o->engine, NULL) !=
                    dnnl_success)
        pd = NULL;
    if (po)
        api->dnnl_post_ops_destroy(po);
    if (attr)
        api->dnnl_primitive_attr_destroy(attr);
    return pd;
}

/* g's product in runs of C's rows on the instance's threads, each made for one OpenMP
 * thread (onednn_rows.c). 0 when made; 1 when oneDNN chose a kernel that is not cut for
 * the whole product or a run, −1 when it has no primitive for one or memory ran out:
 * then the product is made whole. */
static int build_rows(gan_backend *be, struct cpu_onednn_entry *e, const struct gan_gemm *g,
                      int parts)
{
    const struct cpu_dnnl_api *api = &be->onednn->api;
    e->threads = 1;
    api->omp_set_num_threads(1);
    /* The whole product on one thread, whose bits the runs are to have, on the same
     * kernel too: one whose rows keep their bits (oneDNN may choose by size). */
    dnnl_memory_desc_t whole_md[3];
    dnnl_primitive_desc_t whole = product_pd(be, g, g->m, 1, whole_md);
    const char *impl = NULL;
    const int same = whole &&
                     api->dnnl_primitive_desc_query(whole, dnnl_query_impl_info_str, 0, &impl) ==
                         dnnl_success &&
                     impl && cpu_onednn_rows_kernel(impl);
    if (whole)
        api->dnnl_primitive_desc_destroy(whole);
    if (!same)
        return 1;
    if (cpu_onednn_rows_init(e, g, parts) != 0)
        return -1;
    for (int p = 0; p < parts; p++) {
        dnnl_memory_desc_t md[3];
        dnnl_primitive_desc_t pd = product_pd(be, g, cpu_onednn_rows_of(g, parts, p), 1, md);
        const int made = pd ? cpu_onednn_rows_set(be, e, p, pd, md) : -1;
        if (made != 0)
            return made;
    }
    return 0;
}

static int build(gan_backend *be, struct cpu_onednn_entry *e, const struct gan_gemm *g)
{
    struct cpu_onednn *o = be->onednn;
    const int parts = cpu_onednn_rows_parts(be, g);
    if (parts > 1) {
        if (build_rows(be, e, g, parts) == 0)
            return 0;
        /* the whole product on oneDNN's own threads */
        cpu_onednn_reset(o, e);
    }
    /* a primitive divides its work for the OpenMP team size in force when it is made */
    e->threads = cpu_onednn_team(be, 2.0 * (double)g->m * (double)g->n * (double)g->k *
                                         (double)g->batch);
    o->api.omp_set_num_threads(e->threads);
    dnnl_memory_desc_t md[3];
    dnnl_primitive_desc_t pd = product_pd(be, g, g->m, 0, md);
    /* Plain strided memory descriptors are taken as given: the primitive reads and
     * writes the caller's memory with no reorder. */
    if (!pd || cpu_onednn_set_primitive(be, e, pd) != 0)
        return -1;
    if (cpu_onednn_add_arg(o, e, DNNL_ARG_SRC, 0, &md[0], &md[0]) != 0 ||
        cpu_onednn_add_arg(o, e, DNNL_ARG_WEIGHTS, 0, &md[1], &md[1]) != 0 ||
        cpu_onednn_add_arg(o, e, DNNL_ARG_DST, 1, &md[2], &md[2]) != 0)
        return -1;
    return 0;
}

/* The cached entry of g's product (made now when new), or NULL when oneDNN has no
 * primitive for it; *st says so when that is for want of memory. */
static struct cpu_onednn_entry *entry_of(gan_backend *be, const struct gan_gemm *g,
                                         gan_status *st)
{
    struct cpu_onednn *o = be->onednn;
    struct cpu_onednn_key key;
    memset(&key, 0, sizeof key);
    key.kind = CPU_ONEDNN_MATMUL;
    const int64_t v[] = { g->a.dtype, g->b.dtype, g->c.dtype, g->trans_a, g->trans_b,
                          g->m, g->n, g->k, g->lda, g->ldb, g->ldc, g->batch,
                          g->batch > 1 ? g->stride_a : 0, g->batch > 1 ? g->stride_b : 0,
                          g->batch > 1 ? g->stride_c : 0 };
    memcpy(key.v, v, sizeof v);
    key.alpha = g->alpha;
    key.beta = g->beta;
    int fresh;
    struct cpu_onednn_entry *e = cpu_onednn_lookup(o, &key, &fresh);
    if (!e) {
        *st = be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                             "gemm: out of memory for oneDNN's primitive cache");
        return NULL;
    }
    if (fresh && build(be, e, g) != 0) {
        /* what a build left is freed; the entry stays, refused, for OpenBLAS */
        cpu_onednn_reset(o, e);
        e->refused = 1;
    }
    return e->refused ? NULL : e;
}

int cpu_onednn_gemm(gan_backend *be, const struct gan_gemm *g, gan_status *st)
{
    if (!be->onednn || !takes(be, g))
        return 0;
    gan_status made = GAN_OK;
    struct cpu_onednn_entry *e = entry_of(be, g, &made);
    if (!e) {
        /* out of memory fails the call; a refused shape is OpenBLAS's */
        *st = made;
        return made != GAN_OK;
    }
    void *ptrs[3] = { cpu_ref_ptr(&g->a), cpu_ref_ptr(&g->b), cpu_ref_ptr(&g->c) };
    *st = e->rows ? cpu_onednn_rows_execute(be, e, ptrs) : cpu_onednn_execute(be, e, ptrs, 0);
    return 1;
}

int cpu_onednn_bf16(const gan_backend *be)
{
    return be->onednn && be->onednn->bf16;
}

int cpu_onednn_gemm_takes(gan_backend *be, const struct gan_gemm *g)
{
    gan_status st = GAN_OK;
    return be->onednn && takes(be, g) && entry_of(be, g, &st) != NULL;
}
