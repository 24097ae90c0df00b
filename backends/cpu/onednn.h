/* SPDX-License-Identifier: MIT */
/* onednn.h — the CPU backend's oneDNN state, shared by onednn.c (engine, stream, the
 * cache of primitives, running one) and the files that build primitives for one kind
 * of call (onednn_matmul.c, onednn_conv.c). Included only where oneDNN is built. */
#ifndef GANCTL_CPU_ONEDNN_H
#define GANCTL_CPU_ONEDNN_H

#include <dnnl.h>

#include "cpu_backend.h"

/* What a primitive was made for: the kind of call and every size, dtype and scalar its
 * descriptor depends on. Zero-filled before it is set, so that two keys compare with
 * memcmp. */
enum cpu_onednn_kind {
    CPU_ONEDNN_MATMUL = 1,
    CPU_ONEDNN_CONV_FORWARD,
    CPU_ONEDNN_CONV_BACKWARD_DATA,
    CPU_ONEDNN_CONV_BACKWARD_FILTER,
};
#define CPU_ONEDNN_KEY_INTS 20
struct cpu_onednn_key {
    int kind;
    int64_t v[CPU_ONEDNN_KEY_INTS];
    float alpha, beta;
};

/* One tensor argument of a primitive. `user` wraps the caller's memory (its handle set
 * on every call); when the primitive wants another layout or dtype, `inner` is the
 * primitive's own buffer and `reorder` converts user → inner (an input) or inner →
 * user (an output). */
struct cpu_onednn_arg {
    int which;                 /* DNNL_ARG_SRC, … */
    int output;
    dnnl_memory_t user;
    dnnl_memory_t inner;       /* NULL when the primitive reads or writes user directly */
    dnnl_primitive_t reorder;
    void *buffer;              /* inner's memory */
};

#define CPU_ONEDNN_MAX_ARGS 3
struct cpu_onednn_entry {
    struct cpu_onednn_key key;
    int refused;               /* no primitive, or one slower than OpenBLAS: use OpenBLAS */
    unsigned long last_use;
    dnnl_primitive_t prim;
    char impl[64];             /* the implementation oneDNN chose, e.g. "brg:avx512_core" */
    int nargs;
    struct cpu_onednn_arg args[CPU_ONEDNN_MAX_ARGS];
    /* Space the convolutions keep for an FP32 result they add into the output. */
    void *extra;
    size_t extra_bytes;
};

#define CPU_ONEDNN_CACHE 128
struct cpu_onednn {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    struct cpu_onednn_entry *entries[CPU_ONEDNN_CACHE];
    int count;
    unsigned long clock;
    long created;
    char version[24];          /* "2.6.3" */
    char bf16_impl[64];        /* the implementation of a probe BF16 matmul */
};

/* The cached entry for `key`, made empty (refused = 0, prim = NULL) when it is new:
 * then *fresh is 1 and the caller builds it, or marks it refused. The least recently
 * used entry makes room when the cache is full. NULL when out of memory. */
struct cpu_onednn_entry *cpu_onednn_lookup(struct cpu_onednn *o,
                                           const struct cpu_onednn_key *key, int *fresh);

/* Makes e->prim from `pd` (which it then destroys) and notes its implementation;
 * in "auto", a reference implementation (oneDNN's slow fallback) refuses the entry.
 * Returns 0 when the entry has a primitive. */
int cpu_onednn_set_primitive(gan_backend *be, struct cpu_onednn_entry *e,
                             dnnl_primitive_desc_t pd);

/* Adds an argument to e: `user_md` describes the caller's memory, `prim_md` what the
 * primitive wants. Returns 0, or −1 when oneDNN refused the memory or its reorder. */
int cpu_onednn_add_arg(struct cpu_onednn *o, struct cpu_onednn_entry *e, int which,
                       int output, const dnnl_memory_desc_t *user_md,
                       const dnnl_memory_desc_t *prim_md);

/* Space of at least `bytes` kept with the entry, 64-byte aligned; NULL when out of
 * memory. */
void *cpu_onednn_extra(struct cpu_onednn_entry *e, size_t bytes);

/* Runs e on the caller's memory, ptrs[i] for e->args[i]: the input reorders, the
 * primitive on be->threads OpenMP threads, the output reorders. */
gan_status cpu_onednn_execute(gan_backend *be, struct cpu_onednn_entry *e, void *const *ptrs);

/* The dnnl dtype of a backend dtype (F32, BF16, F16). */
dnnl_data_type_t cpu_onednn_dtype(enum gan_dtype dtype);

#endif
