/* SPDX-License-Identifier: MIT */
/* onednn.h — the CPU backend's oneDNN state, shared by onednn.c (engine, stream, the
 * cache of primitives, running one) and the files that build primitives for one kind
 * of call (onednn_matmul.c, onednn_conv.c). Included only where oneDNN is built. */
#ifndef GANCTL_CPU_ONEDNN_H
#define GANCTL_CPU_ONEDNN_H

#include <dnnl.h>

#include "cpu_backend.h"

/* The oneDNN functions the backend calls. The library is loaded at open, not linked:
 * it runs on OpenMP, whose libgomp reads OMP_WAIT_POLICY once, when it is loaded, and
 * the backend chooses that policy first (onednn.c). Each field has the type and name of
 * the function it holds, so a call reads as the API's own: api->dnnl_stream_wait(s). */
#define CPU_DNNL_FUNCTIONS(X)                                                               \
    X(dnnl_version) X(dnnl_engine_create) X(dnnl_engine_destroy) X(dnnl_stream_create)     \
    X(dnnl_stream_destroy) X(dnnl_stream_wait) X(dnnl_memory_desc_init_by_tag)             \
    X(dnnl_memory_desc_init_by_strides) X(dnnl_memory_desc_equal)                          \
    X(dnnl_memory_desc_get_size) X(dnnl_memory_create) X(dnnl_memory_destroy)              \
    X(dnnl_memory_get_memory_desc)                                                         \
    X(dnnl_memory_set_data_handle) X(dnnl_primitive_attr_create)                           \
    X(dnnl_primitive_attr_destroy) X(dnnl_primitive_attr_set_output_scales)                \
    X(dnnl_primitive_attr_set_scratchpad_mode)                                             \
    X(dnnl_primitive_attr_set_post_ops) X(dnnl_post_ops_create) X(dnnl_post_ops_destroy)   \
    X(dnnl_post_ops_append_sum) X(dnnl_matmul_desc_init)                                   \
    X(dnnl_dilated_convolution_forward_desc_init)                                          \
    X(dnnl_dilated_convolution_backward_data_desc_init)                                    \
    X(dnnl_dilated_convolution_backward_weights_desc_init)                                 \
    X(dnnl_reorder_primitive_desc_create) X(dnnl_primitive_desc_create)                    \
    X(dnnl_primitive_desc_destroy) X(dnnl_primitive_desc_query)                            \
    X(dnnl_primitive_desc_query_md) X(dnnl_primitive_create) X(dnnl_primitive_destroy)     \
    X(dnnl_primitive_execute)

struct cpu_dnnl_api {
#define CPU_DNNL_FIELD(name) __typeof__(&name) name;
    CPU_DNNL_FUNCTIONS(CPU_DNNL_FIELD)
#undef CPU_DNNL_FIELD
    /* from the libgomp oneDNN brings in: its team size on the calling thread */
    void (*omp_set_num_threads)(int);
};

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
    int64_t kind;              /* 64 bits, so that the struct has no padding */
    int64_t v[CPU_ONEDNN_KEY_INTS];
    float alpha, beta;
};

/* One tensor argument of a primitive. `user` wraps the caller's memory (its handle set
 * on every call); when the primitive wants another layout or dtype, `inner` is the
 * primitive's own buffer and `reorder` converts user → inner (an input) or inner →
 * user (an output). Where user is a plain FP32 or BF16 tensor and inner its channel
 * blocks of the same type, the backend moves them itself (channel_blocks.c: `blocks`, and
 * no `reorder`); FP32 blocks may then be of 16-bit caller's memory (`plain`), widened or
 * rounded on the way. */
struct cpu_onednn_arg {
    int which;                 /* DNNL_ARG_SRC, … */
    int output;
    dnnl_memory_t user;
    dnnl_memory_t inner;       /* NULL when the primitive reads or writes user directly */
    dnnl_primitive_t reorder;
    void *buffer;              /* inner's memory */
    struct cpu_channel_blocks blocks; /* block 0: not channel blocks */
    void *blocks_at;           /* where inner's memory is: buffer, or the caller's kept blocks */
    enum gan_dtype plain;      /* the type of the caller's memory */
};

#define CPU_ONEDNN_MAX_ARGS 3
struct cpu_onednn_filter;
struct cpu_onednn_rows;
struct cpu_onednn_entry {
    struct cpu_onednn_key key;
    int refused;               /* no primitive, or one slower than OpenBLAS: use OpenBLAS */
    unsigned long last_use;
    dnnl_primitive_t prim;
    char impl[64];             /* the implementation oneDNN chose, e.g. "brg:avx512_core" */
    int threads;               /* OpenMP threads it runs on; 0 = the instance's */
    int nargs;
    struct cpu_onednn_arg args[CPU_ONEDNN_MAX_ARGS];
    /* Space the convolutions keep for an FP32 result they add into the output. */
    void *extra;
    size_t extra_bytes;
    /* A filter gradient computed in parts of the batch (onednn_filter.c), which holds
     * its own arguments in place of args[]; NULL for every other entry. */
    struct cpu_onednn_filter *filter;
    /* A matmul cut into runs of C's rows on the instance's threads (onednn_rows.c), its
     * first run's primitive in prim; NULL for every other entry. */
    struct cpu_onednn_rows *rows;
    /* A staged 16-bit convolution's arguments (a, b, out) that read or write the caller's
     * 16-bit memory themselves (cpu_onednn_takes_plain), not an FP32 copy of it. */
    int takes_plain[CPU_ONEDNN_MAX_ARGS];
};

#define CPU_ONEDNN_CACHE 128
struct cpu_onednn {
    void *handle;              /* from dlopen */
    struct cpu_dnnl_api api;
    char waits[112];           /* how OpenMP's idle threads wait, for the description */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    struct cpu_onednn_entry *entries[CPU_ONEDNN_CACHE];
    int count;
    unsigned long clock;
    long created;
    char version[24];          /* "2.6.3" */
    char bf16_impl[64];        /* the implementation of a probe BF16 matmul */
    /* How much faster oneDNN's BF16 matmul ran than its FP32 one here (onednn_probe.c);
     * 0 where it was not timed. */
    double bf16_speed;
    /* Whether BF16 products go through oneDNN: as backend.bf16 says where it is set;
     * under its "auto", always with gemm = "onednn", and with "auto" where the CPU has a
     * BF16 dot product (AVX512-BF16 or AMX-BF16) and oneDNN's BF16 kernels ran faster
     * than its FP32 ones by CPU_ONEDNN_BF16_MIN_SPEED; elsewhere they are slower than
     * the staged path. */
    int bf16;
    /* Whether BF16 convolutions do: the same, but never without the dot product, where
     * oneDNN 2.6 has no BF16 convolution but its reference loops. Otherwise they are
     * staged through the FP32 ones, as FP16's always are. */
    int bf16_convs;
};

/* The speed over FP32 oneDNN's BF16 kernels must show for "auto" to take them. */
#define CPU_ONEDNN_BF16_MIN_SPEED 1.2

/* Fills o->bf16_impl, and with `timed` o->bf16_speed (in hundredths), from a probe
 * run once per process (onednn_probe.c); a timed probe leaves the calling thread's
 * OpenMP team size at 1. */
void cpu_onednn_probe_bf16(struct cpu_onednn *o, int timed);

/* The cached entry for `key`, made empty (refused = 0, prim = NULL) when it is new:
 * then *fresh is 1 and the caller builds it, or marks it refused. The least recently
 * used entry makes room when the cache is full. NULL when out of memory. */
struct cpu_onednn_entry *cpu_onednn_lookup(struct cpu_onednn *o,
                                           const struct cpu_onednn_key *key, int *fresh);

/* Frees what a failed build left in e and makes it empty again, its key kept. */
void cpu_onednn_reset(struct cpu_onednn *o, struct cpu_onednn_entry *e);

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

/* Sets up one argument `a` as cpu_onednn_add_arg does, its reorder made with `attr`
 * (NULL: oneDNN's defaults). With an attr that asks for a scratchpad of the caller's,
 * a reorder that would need one is refused: the arguments of parts run at once have
 * none to give it. Returns 0, or −1 (what was made is freed by cpu_onednn_arg_clear). */
int cpu_onednn_arg_init(struct cpu_onednn *o, struct cpu_onednn_arg *a, int which, int output,
                        const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *prim_md,
                        const_dnnl_primitive_attr_t attr);
void cpu_onednn_arg_clear(const struct cpu_dnnl_api *api, struct cpu_onednn_arg *a);
/* Points argument a's primitive memory (it has channel blocks) at `caller`, the caller's
 * tensor, where that is kept in the blocks a takes and of their type (`kept`), else at
 * a's own buffer; oneDNN's handle is set only when it moves. Returns oneDNN's status. */
dnnl_status_t cpu_onednn_point_blocks(const struct cpu_dnnl_api *api, struct cpu_onednn_arg *a,
                                      void *caller, int kept);
/* Lets argument i of e (for a filter gradient in parts: 0 = x, 1 = dy) read or write the
 * caller's memory in `dtype`, widened or rounded as its channel blocks are moved; sets and
 * returns e->takes_plain[i]: 0 where the argument has no channel blocks of its own. */
int cpu_onednn_takes_plain(struct cpu_onednn_entry *e, int i, enum gan_dtype dtype);
int cpu_onednn_filter_takes_plain(struct cpu_onednn_entry *e, int i, enum gan_dtype dtype);

/* Space of at least `bytes` kept with the entry, 64-byte aligned; NULL when out of
 * memory. */
void *cpu_onednn_extra(struct cpu_onednn_entry *e, size_t bytes);

/* The OpenMP team a primitive of `flop` floating-point operations is made for: one
 * thread below CPU_ONEDNN_TEAM_MIN_FLOP, else the instance's threads. oneDNN's idle
 * threads wait passively (load_library in onednn.c), and waking one and joining it
 * again cost about 40 µs a call on a 2-core Zen 4, so a small product ran slower on 2
 * threads than on 1: BF16 matmuls of the paper toy's 2-wide input and 1-wide output
 * layers at 9–14 GFLOP/s on 2 threads against 16–96 on 1 (256×512×2 88 against 12.6),
 * and of 256×512×16, ×32 and ×64 at 212, 219 and 226 on 1 against 81, 145 and 213 on 2,
 * where 64×512×512 (34 MFLOP) ran at 213 on 1 and 271 on 2 (bench/limits, the same
 * invocations; bench/README.md). Which thread computes what changes no bits: the toy's
 * BF16 metrics were the same at 1 and 2 threads before and after. */
#define CPU_ONEDNN_TEAM_MIN_FLOP 16.0e6
static inline int cpu_onednn_team(const gan_backend *be, double flop)
{
    return flop < CPU_ONEDNN_TEAM_MIN_FLOP ? 1 : be->threads;
}

/* Runs e on the caller's memory, ptrs[i] for e->args[i]: the inputs moved or reordered
 * to the primitive's layouts, the primitive on be->threads OpenMP threads, the outputs
 * moved or reordered back. Bit i of `kept` says that ptrs[i] is already (an input) or
 * is to be left (an output) in the argument's channel blocks (kept_blocks.c): it is
 * not moved. */
gan_status cpu_onednn_execute(gan_backend *be, struct cpu_onednn_entry *e, void *const *ptrs,
                              unsigned kept);

/* The dnnl dtype of a backend dtype (F32, BF16, F16). */
dnnl_data_type_t cpu_onednn_dtype(enum gan_dtype dtype);

/* onednn_conv.c: whether gemm = "auto" sends a convolution of this kind and shape to
 * oneDNN; the input gradient of fewer than CPU_ONEDNN_AUTO_DATA_MIN_CHANNELS input
 * channels goes to im2col + sgemm (the measurements are in onednn_conv.c). */
int cpu_onednn_conv_auto_takes(enum cpu_conv_kind kind, const struct gan_conv2d *c);

/* onednn_filter.c: a convolution's filter gradient on the instance's threads, the
 * batch cut into parts by its shape alone (so the same bits at any thread count). */
/* How many equal parts of the batch the filter gradient of c is computed in; 1: as one
 * call of a primitive, on one thread. */
int cpu_onednn_filter_parts(const struct gan_conv2d *c);
/* Makes e a filter gradient in `parts` parts from `pd`, a backward-weights descriptor
 * for one part's images (made with a scratchpad of the caller's, on one OpenMP thread),
 * which it destroys: users[0] and users[1] describe one part's images of x and dy as the
 * caller stores them, users[2] the caller's dw, inner[] what the primitive wants.
 * Returns 0 when e can run. */
int cpu_onednn_filter_build(gan_backend *be, struct cpu_onednn_entry *e,
                            dnnl_primitive_desc_t pd, int parts,
                            const dnnl_memory_desc_t *const users[3],
                            const dnnl_memory_desc_t inner[3]);
/* Runs such an entry on x, dy and dw (ptrs[0 … 2]), as cpu_onednn_execute runs others;
 * bits 0 and 1 of `kept` as there. */
gan_status cpu_onednn_filter_execute(gan_backend *be, struct cpu_onednn_entry *e,
                                     void *const *ptrs, unsigned kept);
/* The channel blocks the parts' primitive takes x (i = 0) or dy (1) in, one part's
 * images; block 0 when it takes another layout. */
const struct cpu_channel_blocks *cpu_onednn_filter_blocks(const struct cpu_onednn_entry *e,
                                                          int i);
void cpu_onednn_filter_free(const struct cpu_dnnl_api *api, struct cpu_onednn_filter *f);

/* onednn_rows.c: a matmul cut into runs of whole 64-row blocks of C, one primitive
 * made for one OpenMP thread a run, the runs on the instance's threads. */
/* How many runs g's product is cut into on this instance: 1 (not cut) with one thread,
 * a batch, operands other than BF16, A transposed, or too little work for two runs of
 * 2^22 multiply-adds. */
int cpu_onednn_rows_parts(const gan_backend *be, const struct gan_gemm *g);
/* Whether products on oneDNN's kernel `impl` are cut (the kernels whose rows keep their
 * bits when cut). */
int cpu_onednn_rows_kernel(const char *impl);
/* The rows of run p of `parts`. */
int64_t cpu_onednn_rows_of(const struct gan_gemm *g, int parts, int p);
/* Makes e a product in `parts` runs (then its runs are set one by one); 0, or −1. */
int cpu_onednn_rows_init(struct cpu_onednn_entry *e, const struct gan_gemm *g, int parts);
/* Run p from `pd` (made for one thread, with a scratchpad of the caller's), which it
 * destroys, and md[] (A, B and C over the run's rows, as the caller stores them).
 * Returns 0 when the run can go, 1 when oneDNN chose a kernel whose products are not
 * cut (cpu_onednn_rows_kernel), −1 when it failed. */
int cpu_onednn_rows_set(gan_backend *be, struct cpu_onednn_entry *e, int p,
                        dnnl_primitive_desc_t pd, const dnnl_memory_desc_t md[3]);
/* Runs e's product on ptrs (A, B, C: the caller's memory). */
gan_status cpu_onednn_rows_execute(gan_backend *be, struct cpu_onednn_entry *e,
                                   void *const *ptrs);
void cpu_onednn_rows_free(const struct cpu_dnnl_api *api, struct cpu_onednn_rows *r);

#endif
