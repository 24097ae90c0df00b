/* SPDX-License-Identifier: MIT */
/* onednn.c — an instance's oneDNN: its engine and stream, the cache of primitives
 * (made once per shape and reused: making one costs far more than running it), and
 * running a cached primitive within the instance's thread budget. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

dnnl_data_type_t cpu_onednn_dtype(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_BF16: return dnnl_bf16;
    case GAN_F16: return dnnl_f16;
    case GAN_F32:
    default: return dnnl_f32;
    }
}

/* The inverse of cpu_onednn_dtype for the float types the backend hands oneDNN. */
static enum gan_dtype gan_dtype_of(dnnl_data_type_t t)
{
    return t == dnnl_bf16 ? GAN_BF16 : t == dnnl_f16 ? GAN_F16 : GAN_F32;
}

void cpu_onednn_arg_clear(const struct cpu_dnnl_api *api, struct cpu_onednn_arg *a)
{
    if (a->reorder)
        api->dnnl_primitive_destroy(a->reorder);
    if (a->inner)
        api->dnnl_memory_destroy(a->inner);
    if (a->user)
        api->dnnl_memory_destroy(a->user);
    free(a->buffer);
    memset(a, 0, sizeof *a);
}

static void entry_clear(const struct cpu_dnnl_api *api, struct cpu_onednn_entry *e)
{
    for (int i = 0; i < e->nargs; i++)
        cpu_onednn_arg_clear(api, &e->args[i]);
    if (e->filter)
        cpu_onednn_filter_free(api, e->filter);
    if (e->rows)
        cpu_onednn_rows_free(api, e->rows);
    if (e->prim)
        api->dnnl_primitive_destroy(e->prim);
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
        entry_clear(&o->api, e);
    }
    memcpy(&e->key, key, sizeof *key); /* every byte, as the lookup compares them */
    e->last_use = o->clock;
    *fresh = 1;
    return e;
}

void cpu_onednn_reset(struct cpu_onednn *o, struct cpu_onednn_entry *e)
{
    const struct cpu_onednn_key key = e->key;
    const unsigned long last_use = e->last_use;
    entry_clear(&o->api, e);
    e->key = key;
    e->last_use = last_use;
}

int cpu_onednn_set_primitive(gan_backend *be, struct cpu_onednn_entry *e,
                             dnnl_primitive_desc_t pd)
{
    const struct cpu_dnnl_api *api = &be->onednn->api;
    const char *impl = NULL;
    if (api->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = NULL;
    snprintf(e->impl, sizeof e->impl, "%s", impl ? impl : "unknown");
    /* oneDNN's reference kernels are plain loops, far slower than staging through
     * sgemm; only an explicit gemm = "onednn" takes them. */
    if (be->gemm_path != CPU_GEMM_ONEDNN && strncmp(e->impl, "ref", 3) == 0) {
        api->dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    dnnl_status_t s = api->dnnl_primitive_create(&e->prim, pd);
    api->dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success) {
        e->prim = NULL;
        return -1;
    }
    be->onednn->created++;
    return 0;
}

/* Whether `inner` is the channel blocks (nChw16c or nChw8c) of the plain tensor `user`,
 * both FP32 or both BF16, with no padding channels; then *b says how channel_blocks.c
 * moves them. */
static int channel_blocks(const struct cpu_dnnl_api *api, const dnnl_memory_desc_t *user,
                          const dnnl_memory_desc_t *inner, struct cpu_channel_blocks *b)
{
    static const struct { dnnl_format_tag_t tag; int64_t block; } kinds[] = {
        { dnnl_nChw16c, 16 },
        { dnnl_nChw8c, 8 },
    };
    const dnnl_data_type_t t = user->data_type;
    if (user->ndims != 4 || (t != dnnl_f32 && t != dnnl_bf16))
        return 0;
    const dnnl_dim_t *d = user->dims;
    dnnl_memory_desc_t want;
    if (api->dnnl_memory_desc_init_by_tag(&want, 4, d, t, dnnl_nchw) != dnnl_success ||
        !api->dnnl_memory_desc_equal(&want, user))
        return 0;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (d[1] % kinds[k].block == 0 &&
            api->dnnl_memory_desc_init_by_tag(&want, 4, d, t, kinds[k].tag) == dnnl_success &&
            api->dnnl_memory_desc_equal(&want, inner)) {
            b->panels = d[0] * d[1] / kinds[k].block;
            b->hw = d[2] * d[3];
            b->block = kinds[k].block;
            b->blocks = gan_dtype_of(t);
            return 1;
        }
    return 0;
}

int cpu_onednn_arg_init(struct cpu_onednn *o, struct cpu_onednn_arg *a, int which, int output,
                        const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *prim_md,
                        const_dnnl_primitive_attr_t attr)
{
    const struct cpu_dnnl_api *api = &o->api;
    memset(a, 0, sizeof *a);
    if (!prim_md)
        return -1;
    a->which = which;
    a->output = output;
    a->plain = gan_dtype_of(user_md->data_type);
    if (api->dnnl_memory_create(&a->user, user_md, o->engine, DNNL_MEMORY_NONE) != dnnl_success) {
        a->user = NULL;
        return -1;
    }
    if (api->dnnl_memory_desc_equal(user_md, prim_md))
        return 0;
    size_t bytes = api->dnnl_memory_desc_get_size(prim_md);
    a->buffer = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!a->buffer)
        return -1;
    if (api->dnnl_memory_create(&a->inner, prim_md, o->engine, a->buffer) != dnnl_success) {
        a->inner = NULL;
        return -1;
    }
    if (channel_blocks(api, user_md, prim_md, &a->blocks)) {
        a->blocks_at = a->buffer;
        return 0;
    }
    dnnl_primitive_desc_t rpd;
    const dnnl_memory_desc_t *from = output ? prim_md : user_md;
    const dnnl_memory_desc_t *to = output ? user_md : prim_md;
    if (api->dnnl_reorder_primitive_desc_create(&rpd, from, o->engine, to, o->engine, attr) !=
        dnnl_success)
        return -1;
    const dnnl_memory_desc_t *scratch =
        attr ? api->dnnl_primitive_desc_query_md(rpd, dnnl_query_scratchpad_md, 0) : NULL;
    if (scratch && api->dnnl_memory_desc_get_size(scratch) != 0) {
        api->dnnl_primitive_desc_destroy(rpd);
        return -1;
    }
    dnnl_status_t s = api->dnnl_primitive_create(&a->reorder, rpd);
    api->dnnl_primitive_desc_destroy(rpd);
    if (s != dnnl_success) {
        a->reorder = NULL;
        return -1;
    }
    return 0;
}

int cpu_onednn_add_arg(struct cpu_onednn *o, struct cpu_onednn_entry *e, int which,
                       int output, const dnnl_memory_desc_t *user_md,
                       const dnnl_memory_desc_t *prim_md)
{
    if (e->nargs >= CPU_ONEDNN_MAX_ARGS)
        return -1;
    return cpu_onednn_arg_init(o, &e->args[e->nargs++], which, output, user_md, prim_md, NULL);
}

int cpu_onednn_takes_plain(struct cpu_onednn_entry *e, int i, enum gan_dtype dtype)
{
    if (e->filter)
        e->takes_plain[i] = cpu_onednn_filter_takes_plain(e, i, dtype);
    else if (i < e->nargs && e->args[i].blocks.block && e->args[i].blocks.blocks == GAN_F32) {
        e->args[i].plain = dtype;
        e->takes_plain[i] = 1;
    }
    return e->takes_plain[i];
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

dnnl_status_t cpu_onednn_point_blocks(const struct cpu_dnnl_api *api, struct cpu_onednn_arg *a,
                                      void *caller, int kept)
{
    void *blocks = kept && a->plain == a->blocks.blocks ? caller : a->buffer;
    if (blocks == a->blocks_at)
        return dnnl_success;
    dnnl_status_t s = api->dnnl_memory_set_data_handle(a->inner, blocks);
    if (s == dnnl_success)
        a->blocks_at = blocks;
    return s;
}

gan_status cpu_onednn_execute(gan_backend *be, struct cpu_onednn_entry *e, void *const *ptrs,
                              unsigned kept)
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    /* One thread budget for both: oneDNN's OpenMP team gets the instance's threads, and
     * the backend's workers, hushed before each of oneDNN's calls, sleep meanwhile. */
    api->omp_set_num_threads(e->threads > 0 && e->threads < be->threads ? e->threads
                                                                         : be->threads);
    dnnl_exec_arg_t args[CPU_ONEDNN_MAX_ARGS];
    dnnl_status_t s;
    for (int i = 0; i < e->nargs; i++) {
        struct cpu_onednn_arg *a = &e->args[i];
        if ((s = api->dnnl_memory_set_data_handle(a->user, ptrs[i])) != dnnl_success)
            return exec_failed(be, e, "memory", s);
        args[i].arg = a->which;
        args[i].memory = a->inner ? a->inner : a->user;
        if (a->blocks.block) {
            /* The primitive reads or writes the caller's blocks, or its own: moved from
             * the caller's NCHW tensor, or widened from its 16-bit blocks. */
            const int mine = (kept >> i) & 1u, same = a->plain == a->blocks.blocks;
            if ((s = cpu_onednn_point_blocks(api, a, ptrs[i], mine)) != dnnl_success)
                return exec_failed(be, e, "memory", s);
            if (!a->output && !mine)
                cpu_to_channel_blocks_threads(be, &a->blocks, ptrs[i], a->plain, a->buffer);
            else if (!a->output && !same)
                cpu_convert_threads(be, ptrs[i], a->plain, a->buffer, a->blocks.blocks,
                                    cpu_channel_blocks_count(&a->blocks));
        } else if (a->reorder && !a->output) {
            dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, a->user }, { DNNL_ARG_TO, a->inner } };
            cpu_pool_hush(be);
            if ((s = api->dnnl_primitive_execute(a->reorder, o->stream, 2, r)) != dnnl_success)
                return exec_failed(be, e, "reorder", s);
        }
    }
    cpu_pool_hush(be);
    if ((s = api->dnnl_primitive_execute(e->prim, o->stream, e->nargs, args)) != dnnl_success)
        return exec_failed(be, e, "primitive", s);
    /* The backend's own moves run on its threads, after oneDNN's work is done. */
    if ((s = api->dnnl_stream_wait(o->stream)) != dnnl_success)
        return exec_failed(be, e, "stream", s);
    for (int i = 0; i < e->nargs; i++) {
        struct cpu_onednn_arg *a = &e->args[i];
        const int mine = (kept >> i) & 1u;
        if (a->blocks.block && a->output && !mine)
            cpu_from_channel_blocks_threads(be, &a->blocks, a->buffer, ptrs[i], a->plain);
        else if (a->blocks.block && a->output && a->plain != a->blocks.blocks)
            cpu_convert_threads(be, a->buffer, a->blocks.blocks, ptrs[i], a->plain,
                                cpu_channel_blocks_count(&a->blocks));
        if (a->reorder && a->output) {
            dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, a->inner }, { DNNL_ARG_TO, a->user } };
            cpu_pool_hush(be);
            if ((s = api->dnnl_primitive_execute(a->reorder, o->stream, 2, r)) != dnnl_success)
                return exec_failed(be, e, "reorder", s);
        }
    }
    if ((s = api->dnnl_stream_wait(o->stream)) != dnnl_success)
        return exec_failed(be, e, "stream", s);
    return GAN_OK;
}

/* Loads oneDNN. It runs on OpenMP, and libgomp's idle threads spin for a while after
 * each parallel region (GOMP_SPINCOUNT, 300,000 rounds by default, about 3 ms) before
 * they sleep: on cores shared with other work, or between oneDNN's calls and OpenBLAS's
 * or the backend's own, a spinning thread takes the core a working one needs. Measured
 * on the paper toy in BF16 at 2 threads on 2 busy cores (bench/README.md), passive
 * waiting ran at 9–16 it/s where spinning ran at 2–18. A short spin of 20,000 rounds
 * ran the dcgan at 2 threads 1.17–1.25 times as fast as passive waiting on idle cores,
 * but 2.5–3.2 times slower with another program busy on one of the two, so the backend
 * asks for passive waiting, unless the environment sets a policy or a spin count, or
 * libgomp was loaded (and read its environment) before. */
static int load_library(struct cpu_onednn *o, char *why, size_t why_size)
{
    const char *env = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    int we_set_it = 0;
    if (gomp) {
        snprintf(o->waits, sizeof o->waits, "OpenMP wait policy %s (libgomp was loaded first)",
                 env && *env ? env : "libgomp's default");
        dlclose(gomp);
    } else if (env && *env) {
        snprintf(o->waits, sizeof o->waits, "OMP_WAIT_POLICY=%.40s from the environment", env);
    } else if (spin && *spin) {
        /* libgomp takes a spin count over the policy */
        snprintf(o->waits, sizeof o->waits, "GOMP_SPINCOUNT=%.40s from the environment", spin);
    } else if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0) {
        we_set_it = 1;
        snprintf(o->waits, sizeof o->waits, "OpenMP threads wait passively");
    } else {
        snprintf(o->waits, sizeof o->waits, "libgomp's default wait policy (the environment "
                 "could not take OMP_WAIT_POLICY)");
    }
    o->handle = dlopen(GAN_ONEDNN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    /* libgomp has read the variable; leave the environment as it was found */
    if (we_set_it)
        unsetenv("OMP_WAIT_POLICY");
    if (!o->handle) {
        const char *err = dlerror();
        snprintf(why, why_size, "%s cannot be loaded: %s", GAN_ONEDNN_LIBRARY,
                 err ? err : "unknown error");
        return -1;
    }
    /* dlsym's object pointers become function pointers through memcpy, as in blas.c */
    void *sym;
#define CPU_DNNL_RESOLVE(name)                                                              \
    if (!(sym = dlsym(o->handle, #name))) {                                                 \
        snprintf(why, why_size, "%s has no %s: it is not the oneDNN 2 the backend was "     \
                 "built for", GAN_ONEDNN_LIBRARY, #name);                                   \
        return -1;                                                                          \
    }                                                                                       \
    memcpy(&o->api.name, &sym, sizeof sym);
    CPU_DNNL_FUNCTIONS(CPU_DNNL_RESOLVE)
    CPU_DNNL_RESOLVE(omp_set_num_threads)
#undef CPU_DNNL_RESOLVE
    const struct cpu_dnnl_api *api = &o->api;
    dnnl_status_t s = api->dnnl_engine_create(&o->engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = api->dnnl_stream_create(&o->stream, o->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        snprintf(why, why_size, "oneDNN could not make its CPU engine (status %d)", (int)s);
        return -1;
    }
    return 0;
}

static void release(struct cpu_onednn *o)
{
    const struct cpu_dnnl_api *api = &o->api;
    for (int i = 0; i < o->count; i++) {
        entry_clear(api, o->entries[i]);
        free(o->entries[i]);
    }
    if (o->stream)
        api->dnnl_stream_destroy(o->stream);
    if (o->engine)
        api->dnnl_engine_destroy(o->engine);
    if (o->handle)
        dlclose(o->handle);
    free(o);
}

gan_status cpu_onednn_open(gan_backend *be)
{
    be->onednn = NULL;
    be->onednn_absent[0] = '\0';
    if (be->gemm_path == CPU_GEMM_OPENBLAS)
        return GAN_OK;
#if !defined(__x86_64__)
    /* oneDNN's speed was measured on x86-64 CPUs only: elsewhere "auto" keeps to the
     * OpenBLAS path, which is known there. */
    if (be->gemm_path == CPU_GEMM_AUTO) {
        snprintf(be->onednn_absent, sizeof be->onednn_absent, "not an x86-64 CPU");
        return GAN_OK;
    }
#endif
    const struct gan_host *host = be->host;
    struct cpu_onednn *o = calloc(1, sizeof *o);
    if (!o)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: out of memory creating the oneDNN state");
    char why[sizeof be->onednn_absent];
    if (load_library(o, why, sizeof why) != 0) {
        release(o);
        /* "auto" runs on without it, as a build without oneDNN would */
        if (be->gemm_path == CPU_GEMM_AUTO) {
            snprintf(be->onednn_absent, sizeof be->onednn_absent, "%s", why);
            host->log(host->ctx, GAN_LOG_WARN, "backend cpu: %s; GEMMs and convolutions go "
                      "through OpenBLAS (install libdnnl2 for oneDNN)", why);
            return GAN_OK;
        }
        return host->fail(host->ctx, GAN_ERR_NOT_FOUND,
                          "backend cpu: gemm = \"onednn\", but %s; install libdnnl2 (oneDNN "
                          "2), or set backend.gemm = \"auto\" or \"openblas\"", why);
    }
    const dnnl_version_t *v = o->api.dnnl_version();
    snprintf(o->version, sizeof o->version, "%d.%d.%d", v->major, v->minor, v->patch);
    const int forced = be->gemm_path == CPU_GEMM_ONEDNN, dot = cpu_has_bf16_dot();
    /* timed only where "auto" has a choice to make */
    cpu_onednn_probe_bf16(o, !forced && be->bf16_path == CPU_BF16_AUTO && dot);
    o->api.omp_set_num_threads(be->threads);
    const int pays = dot && o->bf16_speed >= CPU_ONEDNN_BF16_MIN_SPEED;
    o->bf16 = be->bf16_path == CPU_BF16_ONEDNN ||
              (be->bf16_path == CPU_BF16_AUTO && (forced || pays));
    o->bf16_convs = dot && o->bf16;
    be->onednn = o;
    return GAN_OK;
}

void cpu_onednn_close(gan_backend *be)
{
    if (be->onednn)
        release(be->onednn);
    be->onednn = NULL;
}

/* For each of FP32 GEMM, FP32 convolutions and BF16, the path and why. */
void cpu_onednn_describe(gan_backend *be, char *out, size_t size)
{
    const struct cpu_onednn *o = be->onednn;
    const char *path = cpu_gemm_path_name(be->gemm_path);
    if (!o) {
        snprintf(out, size, "GEMM %s: OpenBLAS for FP32 GEMM, FP32 convolutions and BF16 "
                 "(%s)", path, be->onednn_absent[0] ? be->onednn_absent
                                                    : "set by backend.gemm");
        return;
    }
    const int forced = be->gemm_path == CPU_GEMM_ONEDNN;
    char dot[192];
    if (!cpu_has_bf16_dot())
        snprintf(dot, sizeof dot, "this CPU has no BF16 dot product");
    else if (o->bf16_speed > 0.0 && o->bf16)
        snprintf(dot, sizeof dot, "this CPU has a BF16 dot product; oneDNN's BF16 matmul ran "
                 "%.2f times as fast as its FP32 one here", o->bf16_speed);
    else if (o->bf16_speed > 0.0)
        snprintf(dot, sizeof dot, "this CPU has a BF16 dot product, but oneDNN's BF16 matmul "
                 "ran %.2f times as fast as its FP32 one here, under the %.1f it must",
                 o->bf16_speed, CPU_ONEDNN_BF16_MIN_SPEED);
    else if (!forced && be->bf16_path == CPU_BF16_AUTO)
        snprintf(dot, sizeof dot, "this CPU has a BF16 dot product, but oneDNN's BF16 matmul "
                 "could not be made or timed");
    else
        snprintf(dot, sizeof dot, "this CPU has a BF16 dot product");
    const char *staged = o->bf16_convs ? "" : ", convolutions staged through oneDNN's FP32 ones";
    const char *set = be->bf16_path != CPU_BF16_AUTO ? "set by backend.bf16; "
                      : forced                      ? "set by backend.gemm; "
                                                    : "";
    char bf16[352];
    if (o->bf16 && strcmp(o->bf16_impl, "unavailable") == 0)
        /* oneDNN makes no BF16 primitive for this CPU: every call falls back */
        snprintf(bf16, sizeof bf16, "OpenBLAS (oneDNN has no BF16 kernel for this CPU; %s)%s",
                 dot, staged);
    else if (o->bf16)
        snprintf(bf16, sizeof bf16, "oneDNN %s (%s%s)%s", o->bf16_impl, set, dot, staged);
    else
        snprintf(bf16, sizeof bf16, "products without oneDNN, convolutions staged through "
                 "oneDNN's FP32 ones (%s%s)", set, dot);
    /* FP16 products stay off oneDNN (gemm16.c or OpenBLAS); FP16 convolutions run on
     * oneDNN's FP32 ones. */
    char few[128] = "";
    if (!forced)
        snprintf(few, sizeof few, ", but the input gradient of fewer than %d channels on "
                 "im2col + sgemm (oneDNN's AVX-512 kernel pads them to 16)",
                 CPU_ONEDNN_AUTO_DATA_MIN_CHANNELS);
    snprintf(out, size, "GEMM %s: oneDNN %s; FP32 GEMM: %s; FP32 convolutions: oneDNN (%s), "
             "FP16 ones staged in FP32%s; BF16: %s; FP16 products: without oneDNN; %s",
             path, o->version,
             forced ? "oneDNN (set by backend.gemm)"
                    : "OpenBLAS (its sgemm is as fast for the networks' shapes)",
             forced ? "set by backend.gemm" : "faster than im2col + sgemm", few, bf16,
             o->waits);
}

void cpu_onednn_cache_counts(gan_backend *be, int *held, long *created)
{
    *held = be->onednn ? be->onednn->count : 0;
    *created = be->onednn ? be->onednn->created : 0;
}
