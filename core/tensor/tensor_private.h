/* SPDX-License-Identifier: MIT */
/* tensor_private.h — the tensor engine's own layout of contexts, tensors and the tape,
 * and the helpers that the engine's sources (context.c, pool.c, tensor.c, kernel_views.c,
 * autograd.c, precision.c and the ops_*.c files) share. */
#ifndef GANCTL_TENSOR_PRIVATE_H
#define GANCTL_TENSOR_PRIVATE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>
#include "tensor/tensor_core.h"

/* Only the engine's own sources, in core/tensor/, include this: the rest of the core
 * and the tests go through tensor_core.h and <ganctl/tensor.h>, so that these structs
 * can change freely. */

struct ti_node;
struct ti_scope;

/* A cast of a tensor that the precision policy made for an op's input, reused while
 * the tensor's values and the step are the same (see ti_policy_input). */
struct ti_cast_cache {
    gan_tensor *copy;           /* a step tensor of the target dtype */
    uint64_t version;           /* the source's version when it was made */
    uint64_t step;              /* the context's step when it was made */
};

struct gan_tensor {
    gan_ctx *ctx;
    enum gan_dtype dtype;
    int ndim;
    int64_t dim[GAN_TENSOR_MAX_DIMS];
    int64_t numel;
    gan_buffer *buf;
    size_t buf_bytes;           /* the buffer's pool class (its real size) */
    uint64_t id;                /* creation order within the context */
    int persistent;
    int requires_grad;          /* a leaf marked by gan_tensor_set_requires_grad */
    struct ti_node *grad_fn;    /* the node that made it, when recorded */
    gan_tensor *prev, *next;    /* in the context's step or persistent list */

    /* Scratch of one gan_grad call, valid while epoch matches the context's. */
    uint64_t grad_epoch;
    gan_tensor *grad;           /* the gradient accumulated so far */
    uint64_t grad_own_epoch;    /* grad is a buffer of this call's alone: added into in place */
    uint64_t input_epoch;       /* is one of the call's inputs */

    /* Precision policy (precision.c). */
    uint64_t version;           /* bumped whenever the values change in place */
    struct ti_cast_cache cast[2];  /* [1]: a recorded cast, [0]: an unrecorded one */
    gan_tensor *grad16;         /* the 16-bit gradient its cast passed back (gan_tensor_grad16) */
    unsigned char from_backward;  /* made while a backward pass ran: a gradient operand */
    uint64_t grad16_step;       /* the step it belongs to */
};

/* Writes the gradients of a node's inputs, given the gradient `g` of its output.
 * gin[i] is NULL on entry; set it where node->needs[i]. Written only in gan_* ops, so
 * that with create_graph the backward itself is recorded. Returns the context's
 * status (an op that failed has already recorded why). */
typedef gan_status (*ti_backward_fn)(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                     gan_tensor **gin);

/* Two for most ops; three for gan_linear (x, w and the bias). */
#define TI_NODE_MAX_IN 3

struct ti_node {
    const char *op;             /* "gan_tanh": names the op in messages */
    ti_backward_fn backward;
    size_t seq;                 /* index on the tape: a topological order */
    int n_in;
    gan_tensor *in[TI_NODE_MAX_IN];
    int needs[TI_NODE_MAX_IN];  /* input i needed a gradient when the op ran */
    gan_tensor *out;            /* the output (tanh, sigmoid and sqrt reuse it) */
    float fparam[2];
    int64_t iparam[GAN_TENSOR_MAX_DIMS];
    uint64_t needed_epoch;      /* leads to an input of the current gan_grad */
    struct ti_node *next_spare;
    /* Where it ran, so that its backward runs under the same precision policy. */
    struct ti_scope *scope;     /* NULL: the top level */
    unsigned char policy_off;   /* recorded while the policy was suspended */
    unsigned char from_backward;  /* recorded by a backward pass (create_graph) */
    /* For one call of backward, by backward_pass (autograd.c): into[i] is input i's
     * gradient so far where backward may add its gradient for input i onto it in place
     * (gin[i] = into[i]), NULL where not; backward sets bit i of `fresh` when gin[i] is
     * a tensor it made for this call alone. */
    gan_tensor *into[TI_NODE_MAX_IN];
    unsigned fresh;
};


/* y ← op(a)·op(b) + beta·y, a 2-D product, by the backend's GEMM (FP8's where the context
 * emulates it, a_name and b_name naming the operands for its recipe), a, b and y of one
 * dtype, none of m, n and k zero (ops_matmul.c). */
gan_status ti_gemm(gan_ctx *ctx, const char *op, gan_tensor *a, const char *a_name,
                   gan_tensor *b, const char *b_name, int trans_a, int trans_b, float beta,
                   gan_tensor *y);

/* op(a)·op(b) as the gradient of input i of `node`, inside its backward
 * (ops_matmul.c): added onto node->into[i] in place and that returned, where it is
 * offered and the product is FP32; else gan_matmul's new product, with bit i of
 * node->fresh set. */
gan_tensor *ti_backward_matmul(gan_ctx *ctx, struct ti_node *node, int i, gan_tensor *a,
                               gan_tensor *b, int trans_a, int trans_b);

/* A new step tensor with uninitialised contents, or NULL (recorded). */
gan_tensor *ti_new_step(gan_ctx *ctx, const char *op, enum gan_dtype dtype, int ndim,
                        const int64_t *dims);
/* The op's result dtype: the widest float type of its inputs (b may be NULL). F32 wins;
 * F16 with BF16 gives F32, since neither holds the other. */
enum gan_dtype ti_result_dtype(const gan_tensor *a, const gan_tensor *b);
/* dst ← src rounded to dst's dtype by the backend's cast kernel (same element count). */
gan_status ti_cast_into(gan_ctx *ctx, const char *op, const gan_tensor *src, gan_tensor *dst);
/* t itself when it already has `dtype`, else an unrecorded step copy rounded to it:
 * for kernels whose operands must share one dtype (GEMM, conv). */
gan_tensor *ti_as_dtype(gan_ctx *ctx, const char *op, gan_tensor *t, enum gan_dtype dtype);

/* Kernel views. */
struct gan_shape ti_shape(int ndim, const int64_t *dims);
/* t walked over the iteration shape (ndim, dims), trailing dimensions aligned, with
 * stride 0 where t has size 1 or lacks the dimension (numpy broadcasting). */
struct gan_operand ti_operand(const gan_tensor *t, int ndim, const int64_t *dims);
struct gan_ref ti_ref(const gan_tensor *t);
/* Contiguous row-major strides of dims. */
void ti_strides(int ndim, const int64_t *dims, int64_t *strides);
/* Runs the unary kernel over y's shape with x broadcast to it. */
gan_status ti_unary(gan_ctx *ctx, const char *op, enum gan_unary_op uop, float alpha,
                    const gan_tensor *x, gan_tensor *y);
/* Ones shaped and typed like t, as a constant step tensor. */
gan_tensor *ti_ones_like(gan_ctx *ctx, const char *op, const gan_tensor *t);
/* y ← x rounded to y's dtype by the backend's cast kernel, n elements, both at offset 0:
 * the raw buffers, for host transfers that stage through an FP32 buffer of the pool. */
gan_status ti_raw_cast(gan_ctx *ctx, const char *op, gan_buffer *x, enum gan_dtype xt,
                       gan_buffer *y, enum gan_dtype yt, size_t n);

/* Recording. ti_wants_grad: recording is on and t requires a gradient.
 * ti_record: when in0 or in1 (either may be NULL) wants a gradient, makes out's node
 * and sets *node to it, for the op to fill in its parameters; otherwise *node = NULL
 * and nothing is recorded. Fails (recorded) only when out of memory. */
int ti_wants_grad(const gan_ctx *ctx, const gan_tensor *t);
gan_status ti_record(gan_ctx *ctx, gan_tensor *out, const char *op, ti_backward_fn fn,
                     gan_tensor *in0, gan_tensor *in1, struct ti_node **node);
/* ti_record with a third input in2 (NULL: none; in1 must then be given too). */
gan_status ti_record3(gan_ctx *ctx, gan_tensor *out, const char *op, ti_backward_fn fn,
                      gan_tensor *in0, gan_tensor *in1, gan_tensor *in2,
                      struct ti_node **node);
/* ------------------------------------------------------------------ precision policy
 * (precision.c; the rules are documented in tensor.h). */

/* How the policy treats an op. Shape ops (reshape, concat0, slice0, sum_to,
 * broadcast_to) and gan_cast are not governed: they keep their inputs' dtype. */
enum ti_op_class {
    TI_CLASS_GEMM,          /* matmul and the three convolutions */
    TI_CLASS_POINTWISE,     /* element-wise ops, and sums or means over some axes */
    TI_CLASS_LOSS_REDUCE    /* a sum or mean over every element */
};

/* A module scope: its full dotted path, interned for the context's lifetime so that
 * nodes can point at it. */
struct ti_scope {
    char *path;                 /* "critic.fc3" */
    const char *name;           /* its last part, inside path */
    int fp32;                   /* an FP32 pattern matches it */
    struct ti_scope *parent;    /* NULL at the top level */
    struct ti_scope *child, *sibling;
    struct ti_scope *all_next;  /* every scope of the context, for re-matching */
};

#define TI_SCOPE_MAX_DEPTH 16

/* Applies the policy to an op's float inputs: each of *a and *b (b may be NULL) that
 * does not have the op's compute dtype is replaced by its cast (recorded, so gradients
 * flow back through it; cached per step, so a parameter is cast once per step).
 * Returns the dtype of the op's result: the compute dtype, or ti_result_dtype(a, b)
 * when the policy is off (mode fp32, or suspended). GAN_DTYPE_COUNT when a cast failed
 * (recorded). */
enum gan_dtype ti_policy_apply(gan_ctx *ctx, enum ti_op_class cls, gan_tensor **a,
                               gan_tensor **b);
/* ti_policy_apply(ctx, cls, a, b) for a second input b that the op reads as it is
 * and that only its dtype, b_dtype, speaks for: a is cast, b is not. ReLU's fused
 * backward reads x for its sign where the two-pass form read step(x), and types its
 * result as the mul of g and step(x) was typed; casting x as well could flush a tiny
 * positive value to zero and change the mask. */
enum gan_dtype ti_policy_apply_beside(gan_ctx *ctx, enum ti_op_class cls, gan_tensor **a,
                                      enum gan_dtype b_dtype);

/* The two halves of ti_policy_apply, for an op made of two steps whose second input
 * does not exist yet when the first runs (gan_linear's bias add after its product):
 * ti_policy_dtype is the dtype ti_policy_apply would return for inputs of dtypes a and
 * b (b: GAN_DTYPE_COUNT when there is none), and ti_policy_cast is the input
 * ti_policy_apply would hand the op for t under that dtype (t itself when the policy is
 * off or t has it already; NULL when the cast failed, recorded). */
enum gan_dtype ti_policy_dtype(const gan_ctx *ctx, enum ti_op_class cls, enum gan_dtype a,
                               enum gan_dtype b);
gan_tensor *ti_policy_cast(gan_ctx *ctx, gan_tensor *t, enum gan_dtype dtype);
/* The backward of a cast from F32 into 16 bit hands `g`, the 16-bit gradient of the
 * cast's output, to this: it is kept on the FP32 source (through reshapes, on the
 * tensor they were made from) for gan_tensor_grad16. */
void ti_note_grad16(gan_ctx *ctx, gan_tensor *src, gan_tensor *g);
/* Frees the scopes and patterns (gan_ctx_free). */
void ti_precision_destroy(gan_ctx *ctx);
/* The policy's activation clamp (gan_ctx_set_clamp): y itself, or y clamped to
 * [−limit, limit] by a recorded gan_clamp when the limit is set, the policy is on, y is
 * 16 bit and no backward pass is running (a gradient is no activation); counted while a
 * count is on and the scope matches. NULL when y is NULL or the clamp failed (recorded).
 * The GEMM-class ops call it on their result, after recording their own node; bias_add
 * says the result is gan_linear's sum with a bias (FP32 at O1), for gan_ctx_clamp_as. */
gan_tensor *ti_policy_clamp(gan_ctx *ctx, gan_tensor *y, int bias_add);

/* ops_clamp.c: gan_clamp, adding to *changed (when not NULL) how many values of a lay
 * outside [lo, hi] (a download: for counts, not for training). */
gan_tensor *ti_clamp(gan_ctx *ctx, gan_tensor *a, float lo, float hi, uint64_t *changed);

/* autograd.c: the tape's nodes go back to the spare list at step end; freed with the
 * context. */
void ti_tape_clear(gan_ctx *ctx);
void ti_tape_destroy(gan_ctx *ctx);

/* ------------------------------------------------------------------ FP8 products
 * (fp8.c; the rules are in tensor_core.h). */

/* How many times an op ran in a scope this step: the occurrence in an operand's name. */
struct ti_fp8_use {
    const struct ti_scope *scope;
    const char *op;
    uint32_t count;
};

/* Whether an op whose compute dtype is dt casts its operands to FP8. */
int ti_fp8_active(const gan_ctx *ctx, enum gan_dtype dt);
/* The next occurrence of `op` in the current scope this step (0, 1, …). */
uint32_t ti_fp8_occurrence(gan_ctx *ctx, const char *op);
/* C = op(a)·op(b) (+ beta·C) through the backend's FP8 product: g as for gemm, its a
 * and b the 16-bit operands, which are cast here under the recipe, named
 * "<scope>/<op>#<occurrence>/<a_name>" and "…/<b_name>". */
gan_status ti_fp8_gemm(gan_ctx *ctx, const char *op, uint32_t occurrence,
                       const struct gan_gemm *g, gan_tensor *a, const char *a_name,
                       gan_tensor *b, const char *b_name);
/* x cast to FP8 under the recipe as one rows × cols operand with blocks along its rows,
 * and widened back into a new FP32 step tensor shaped like x: the operand an emulated
 * convolution reads. NULL on failure (recorded). */
gan_tensor *ti_fp8_widened(gan_ctx *ctx, const char *op, uint32_t occurrence,
                           gan_tensor *x, const char *name, int64_t rows, int64_t cols);
/* Forgets the occurrences (gan_ctx_step_end) and frees (gan_ctx_free). */
void ti_fp8_step_end(gan_ctx *ctx);
void ti_fp8_destroy(gan_ctx *ctx);

/* ------------------------------------------------------------------ buffer pool
 * (pool.c) */

/* A buffer of at least `bytes`, from the pool or else the backend; *cls receives its
 * class, which ti_pool_put takes back. Fails (recorded) when no buffer can be had. */
gan_status ti_pool_get(gan_ctx *ctx, const char *op, size_t bytes, gan_buffer **out,
                       size_t *cls);
/* Keeps buf (NULL: nothing) in the pool under class cls, or returns it to the backend
 * when the pool has no room to remember it. */
void ti_pool_put(gan_ctx *ctx, gan_buffer *buf, size_t cls);
/* tensor.c: gives a tensor's buffer back to the pool and its struct to the context's
 * spare list, for gan_ctx_step_end and gan_ctx_free (context.c). */
void ti_tensor_release(gan_ctx *ctx, gan_tensor *t);

/* The free buffers of one pool class. */
struct ti_pool_bucket {
    size_t bytes;
    gan_buffer **bufs;
    size_t n, cap;
};

struct gan_ctx {
    struct gan_backend_ops ops;          /* a copy, zero past the plugin's struct_size */
    gan_backend *be;
    const char *(*backend_message)(void *arg);
    void *backend_message_arg;
    /* The ABI minor version the backend was built for: ops added after it (binary
     * MASK_POSITIVE, 1.3) are composed from older ones instead of sent to it. */
    unsigned backend_abi_minor;

    gan_status status;
    char error[768];
    int no_grad;                         /* depth of no-grad pushes */

    /* Tensors: live lists, and structs kept for reuse. */
    gan_tensor *step_head, *persist_head;
    size_t n_step, n_persist;
    gan_tensor *spare_tensors;           /* linked through ->next */
    size_t n_spare_tensors;
    uint64_t next_id;

    /* Buffers: free ones by pool class, sorted by size. */
    struct ti_pool_bucket *buckets;
    size_t n_buckets, cap_buckets;
    size_t pool_buffers, pool_bytes;
    size_t device_buffers, device_bytes;
    uint64_t backend_allocs;

    /* The tape (autograd.c). */
    struct ti_node **nodes;
    size_t n_nodes, cap_nodes;
    struct ti_node *spare_nodes;
    size_t n_spare_nodes;
    uint64_t epoch;                      /* one per gan_grad call */

    /* The precision policy (precision.c). */
    enum gan_dtype prec_mode;            /* GAN_F32 (off), GAN_F16 or GAN_BF16 */
    int prec_level;                      /* GAN_PRECISION_O1 or _O2 */
    int policy_off;                      /* > 0: suspended (gradient accumulation) */
    char **fp32_patterns;
    size_t n_patterns, cap_patterns;
    struct ti_scope *scope;              /* the current scope; NULL at the top level */
    struct ti_scope *scope_stack[TI_SCOPE_MAX_DEPTH];
    int scope_depth;
    struct ti_scope *scope_top;          /* the top-level scopes (siblings) */
    struct ti_scope *scope_all;          /* every scope made */
    int in_backward;                     /* a backward function is running */
    uint64_t step_no;                    /* gan_ctx_step_end calls + 1 */
    uint64_t backend_casts, policy_casts, cast_cache_hits;
    /* The activation clamp of 16-bit GEMM results (0: off), and its count. */
    float clamp;
    int clamp_counting;                  /* a count is on (gan_ctx_clamp_count_start) */
    char clamp_pattern[256];             /* ... of the scopes this matches ("": all) */
    uint64_t clamp_changed, clamp_seen;
    int clamp_as;                        /* gan_ctx_clamp_as: an FP32 shadow of a 16-bit pass */
    int clamp_as_level;

    /* FP8 products (fp8.c). */
    int fp8_on;
    int fp8_held;                        /* gan_ctx_fp8_hold depth */
    char fp8_tag[32];                    /* gan_ctx_fp8_set_tag */
    struct gan_fp8_setup fp8;
    struct ti_fp8_use *fp8_uses;         /* occurrences this step, per scope and op */
    size_t n_fp8_uses, cap_fp8_uses;
    struct gan_fp8_totals fp8_totals;
    float *fp8_host;                     /* scratch: block amaxes, then scales */
    size_t fp8_host_cap;
};

#endif
