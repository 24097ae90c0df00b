/* SPDX-License-Identifier: MIT */
/* onednn.c — an instance's oneDNN: its engine and stream, the cache of primitives
 * (made once per shape and reused: making one costs far more than running it), and
 * running a cached primitive within the instance's thread budget. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* Debian's oneDNN runs on OpenMP (DNNL_CPU_RUNTIME_OMP): its kernels use as many
 * threads as omp_get_max_threads() says on the calling thread. The prototype is
 * declared here rather than through <omp.h>, which not every compiler that builds the
 * backend ships. */
void omp_set_num_threads(int n);

dnnl_data_type_t cpu_onednn_dtype(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_BF16: return dnnl_bf16;
    case GAN_F16: return dnnl_f16;
    case GAN_F32:
    default: return dnnl_f32;
    }
}

static void entry_clear(struct cpu_onednn_entry *e)
{
    for (int i = 0; i < e->nargs; i++) {
        struct cpu_onednn_arg *a = &e->args[i];
        if (a->reorder)
            dnnl_primitive_destroy(a->reorder);
        if (a->inner)
            dnnl_memory_destroy(a->inner);
        if (a->user)
            dnnl_memory_destroy(a->user);
        free(a->buffer);
    }
    if (e->prim)
        dnnl_primitive_destroy(e->prim);
    free(e->extra);
    memset(e, 0, sizeof *e);
}

struct cpu_onednn_entry *cpu_onednn_lookup(struct cpu_onednn *o,
                                           const struct cpu_onednn_key *key, int *fresh)
{
    *fresh = 0;
    o->clock++;
    for (int i = 0; i < o->count; i++) {
        struct cpu_onednn_entry *e = o->entries[i];
        if (memcmp(&e->key, key, sizeof *key) == 0) {
            e->last_use = o->clock;
            return e;
        }
    }
    struct cpu_onednn_entry *e;
    if (o->count < CPU_ONEDNN_CACHE) {
        e = calloc(1, sizeof *e);
        if (!e)
            return NULL;
        o->entries[o->count++] = e;
    } else {
        /* The least recently used makes room: a run uses a fixed set of shapes,
         * which fits, so this happens only when the shapes keep changing. */
        e = o->entries[0];
        for (int i = 1; i < o->count; i++)
            if (o->entries[i]->last_use < e->last_use)
                e = o->entries[i];
        entry_clear(e);
    }
    e->key = *key;
    e->last_use = o->clock;
    *fresh = 1;
    return e;
}

int cpu_onednn_set_primitive(gan_backend *be, struct cpu_onednn_entry *e,
                             dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = NULL;
    snprintf(e->impl, sizeof e->impl, "%s", impl ? impl : "unknown");
    /* oneDNN's reference kernels are plain loops, far slower than staging through
     * sgemm; only an explicit gemm = "onednn" takes them. */
    if (be->gemm_path != CPU_GEMM_ONEDNN && strncmp(e->impl, "ref", 3) == 0) {
        dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    dnnl_status_t s = dnnl_primitive_create(&e->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success) {
        e->prim = NULL;
        return -1;
    }
    be->onednn->created++;
    return 0;
}

int cpu_onednn_add_arg(struct cpu_onednn *o, struct cpu_onednn_entry *e, int which,
                       int output, const dnnl_memory_desc_t *user_md,
                       const dnnl_memory_desc_t *prim_md)
{
    if (e->nargs >= CPU_ONEDNN_MAX_ARGS || !prim_md)
        return -1;
    struct cpu_onednn_arg *a = &e->args[e->nargs++];
    a->which = which;
    a->output = output;
    if (dnnl_memory_create(&a->user, user_md, o->engine, DNNL_MEMORY_NONE) != dnnl_success) {
        a->user = NULL;
        return -1;
    }
    if (dnnl_memory_desc_equal(user_md, prim_md))
        return 0;
    size_t bytes = dnnl_memory_desc_get_size(prim_md);
    a->buffer = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!a->buffer)
        return -1;
    if (dnnl_memory_create(&a->inner, prim_md, o->engine, a->buffer) != dnnl_success) {
        a->inner = NULL;
        return -1;
    }
    dnnl_primitive_desc_t rpd;
    const dnnl_memory_desc_t *from = output ? prim_md : user_md;
    const dnnl_memory_desc_t *to = output ? user_md : prim_md;
    if (dnnl_reorder_primitive_desc_create(&rpd, from, o->engine, to, o->engine, NULL) !=
        dnnl_success)
        return -1;
    dnnl_status_t s = dnnl_primitive_create(&a->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    if (s != dnnl_success) {
        a->reorder = NULL;
        return -1;
    }
    return 0;
}

void *cpu_onednn_extra(struct cpu_onednn_entry *e, size_t bytes)
{
    if (e->extra_bytes >= bytes && e->extra)
        return e->extra;
    free(e->extra);
    e->extra = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    e->extra_bytes = e->extra ? bytes : 0;
    return e->extra;
}

static gan_status exec_failed(gan_backend *be, const struct cpu_onednn_entry *e,
                              const char *what, dnnl_status_t s)
{
    return be->host->fail(be->host->ctx, GAN_ERR_DEVICE,
                          "oneDNN %s (%s) failed with status %d; set backend.gemm = "
                          "\"openblas\" to compute without oneDNN", what, e->impl, (int)s);
}

gan_status cpu_onednn_execute(gan_backend *be, struct cpu_onednn_entry *e, void *const *ptrs)
{
    struct cpu_onednn *o = be->onednn;
    /* One thread budget for both libraries: oneDNN's OpenMP team gets the instance's
     * threads, as OpenBLAS does, and the two never run at once. */
    omp_set_num_threads(be->threads);
    dnnl_exec_arg_t args[CPU_ONEDNN_MAX_ARGS];
    dnnl_status_t s;
    for (int i = 0; i < e->nargs; i++) {
        struct cpu_onednn_arg *a = &e->args[i];
        if ((s = dnnl_memory_set_data_handle(a->user, ptrs[i])) != dnnl_success)
            return exec_failed(be, e, "memory", s);
        args[i].arg = a->which;
        args[i].memory = a->inner ? a->inner : a->user;
        if (a->reorder && !a->output) {
            dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, a->user }, { DNNL_ARG_TO, a->inner } };
            if ((s = dnnl_primitive_execute(a->reorder, o->stream, 2, r)) != dnnl_success)
                return exec_failed(be, e, "reorder", s);
        }
    }
    if ((s = dnnl_primitive_execute(e->prim, o->stream, e->nargs, args)) != dnnl_success)
        return exec_failed(be, e, "primitive", s);
    for (int i = 0; i < e->nargs; i++) {
        struct cpu_onednn_arg *a = &e->args[i];
        if (a->reorder && a->output) {
            dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, a->inner }, { DNNL_ARG_TO, a->user } };
            if ((s = dnnl_primitive_execute(a->reorder, o->stream, 2, r)) != dnnl_success)
                return exec_failed(be, e, "reorder", s);
        }
    }
    if ((s = dnnl_stream_wait(o->stream)) != dnnl_success)
        return exec_failed(be, e, "stream", s);
    return GAN_OK;
}

/* The implementation oneDNN picks for a BF16 matmul of the paper toy's shape, for the
 * description: it names the instruction set the BF16 path runs on. */
static void probe_bf16(struct cpu_onednn *o)
{
    snprintf(o->bf16_impl, sizeof o->bf16_impl, "unavailable");
    dnnl_memory_desc_t a, b, c;
    const dnnl_dims_t da = { 256, 512 }, db = { 512, 512 }, dc = { 256, 512 };
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd;
    if (dnnl_memory_desc_init_by_tag(&a, 2, da, dnnl_bf16, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&b, 2, db, dnnl_bf16, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_bf16, dnnl_ab) != dnnl_success ||
        dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &md, NULL, o->engine, NULL) != dnnl_success)
        return;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl)
        snprintf(o->bf16_impl, sizeof o->bf16_impl, "%s", impl);
    dnnl_primitive_desc_destroy(pd);
}

gan_status cpu_onednn_open(gan_backend *be)
{
    be->onednn = NULL;
    if (be->gemm_path == CPU_GEMM_OPENBLAS ||
        (be->gemm_path == CPU_GEMM_AUTO && !cpu_has_bf16_dot()))
        return GAN_OK;
    const struct gan_host *host = be->host;
    struct cpu_onednn *o = calloc(1, sizeof *o);
    if (!o)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: out of memory creating the oneDNN state");
    dnnl_status_t s = dnnl_engine_create(&o->engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = dnnl_stream_create(&o->stream, o->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        if (o->engine)
            dnnl_engine_destroy(o->engine);
        free(o);
        return host->fail(host->ctx, GAN_ERR_DEVICE,
                          "backend cpu: oneDNN could not make its CPU engine (status %d); "
                          "set backend.gemm = \"openblas\" to run without it", (int)s);
    }
    const dnnl_version_t *v = dnnl_version();
    snprintf(o->version, sizeof o->version, "%d.%d.%d", v->major, v->minor, v->patch);
    probe_bf16(o);
    be->onednn = o;
    return GAN_OK;
}

void cpu_onednn_close(gan_backend *be)
{
    struct cpu_onednn *o = be->onednn;
    if (!o)
        return;
    for (int i = 0; i < o->count; i++) {
        entry_clear(o->entries[i]);
        free(o->entries[i]);
    }
    if (o->stream)
        dnnl_stream_destroy(o->stream);
    if (o->engine)
        dnnl_engine_destroy(o->engine);
    free(o);
    be->onednn = NULL;
}

void cpu_onednn_describe(gan_backend *be, char *out, size_t size)
{
    const struct cpu_onednn *o = be->onednn;
    if (!o) {
        snprintf(out, size, "GEMM %s: OpenBLAS%s", cpu_gemm_path_name(be->gemm_path),
                 be->gemm_path == CPU_GEMM_AUTO ? " (this CPU has no BF16 dot product)" : "");
        return;
    }
    snprintf(out, size, "GEMM %s: oneDNN %s %s for BF16, %s for FP32, OpenBLAS for FP16",
             cpu_gemm_path_name(be->gemm_path), o->version, o->bf16_impl,
             be->gemm_path == CPU_GEMM_ONEDNN ? "oneDNN" : "OpenBLAS");
}

void cpu_onednn_cache_counts(gan_backend *be, int *held, long *created)
{
    *held = be->onednn ? be->onednn->count : 0;
    *created = be->onednn ? be->onednn->created : 0;
}
