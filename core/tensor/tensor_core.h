/* SPDX-License-Identifier: MIT */
/* tensor_core.h — what the rest of the core (and its tests) may use of the tensor engine
 * beyond <ganctl/tensor.h>: making contexts, reaching their backend, and recording failures. */
#ifndef GANCTL_TENSOR_CORE_H
#define GANCTL_TENSOR_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

/* None of this is exported by libganctl: plugins get a context from the core and work
 * with tensor.h alone. The engine's layout (the structs behind gan_ctx and gan_tensor,
 * the tape) is in tensor_private.h, for core/tensor/ only, so that it can change
 * without touching the code that trains, saves and measures. */

/* ------------------------------------------------------------------ contexts */

/* Makes a context over a backend instance. Both are borrowed: `ops` and `be` must
 * outlive the context. The ops table is read up to min(ops->struct_size, sizeof);
 * a kernel slot that is NULL fails, with a message, only when an op needs it. */
gan_status gan_ctx_new(const struct gan_backend_ops *ops, gan_backend *be, gan_ctx **out);
/* Frees every tensor of the context (persistent ones too), the tape and the buffer
 * pool. The backend instance is not destroyed. */
void gan_ctx_free(gan_ctx *ctx);

/* Backends explain failures through their gan_host's fail(), which the context does
 * not own. When the owner of the host sets this, a failed kernel's message in the
 * context ends with `last_message(arg)`. */
void gan_ctx_set_backend_message(gan_ctx *ctx, const char *(*last_message)(void *arg),
                                 void *arg);

/* The plugin ABI minor version the backend was built for (its descriptor's
 * abi_minor). A new context assumes these headers' GAN_ABI_MINOR, which is right for a
 * table compiled with them; the owner of a loaded backend module sets the module's, so
 * that the context keeps ops a backend built for an older minor does not know (a new
 * enum value) away from it, and composes them from older ones. */
void gan_ctx_set_backend_abi_minor(gan_ctx *ctx, unsigned minor);
unsigned gan_ctx_backend_abi_minor(const gan_ctx *ctx);

/* The backend and its ops table, for core code outside the engine (optimizer,
 * gradient statistics) that calls kernels on tensors' buffers. */
gan_backend *gan_ctx_backend(const gan_ctx *ctx);
const struct gan_backend_ops *gan_ctx_backend_ops(const gan_ctx *ctx);
/* A tensor's buffer (element 0 is the tensor's first element). */
gan_buffer *gan_tensor_buffer(const gan_tensor *t);

/* What the context holds now; the memory test checks that these stay flat over steps. */
struct gan_ctx_stats {
    size_t step_tensors;        /* live step tensors (freed by gan_ctx_step_end) */
    size_t persistent_tensors;  /* live persistent tensors */
    size_t nodes;               /* nodes on the tape */
    size_t pool_buffers;        /* free buffers kept for reuse */
    size_t pool_bytes;
    size_t device_buffers;      /* buffers obtained from the backend and not returned */
    size_t device_bytes;
    size_t spare_tensors;       /* tensor structs kept for reuse */
    size_t spare_nodes;         /* node structs kept for reuse */
    uint64_t backend_allocs;    /* buffer_alloc calls since the context was made */
    /* The precision policy's work, since the context was made: */
    uint64_t backend_casts;     /* calls of the backend's cast kernel (any cause) */
    uint64_t policy_casts;      /* casts the policy made for an op's inputs */
    uint64_t cast_cache_hits;   /* inputs it found already cast this step */
};
void gan_ctx_get_stats(const gan_ctx *ctx, struct gan_ctx_stats *stats);
/* Returns every pooled buffer to the backend (after a change of batch size, say). */
void gan_ctx_pool_trim(gan_ctx *ctx);

/* ------------------------------------------------------------------ activation clamp
 * StyleGAN2-ADA's conv_clamp as a part of the precision policy (precision.clamp of
 * ganctl.conf(5)): with a limit above 0, in fp16 and bf16, every result that gan_matmul,
 * gan_linear, gan_conv2d or gan_conv2d_transpose(_hw) gives in 16 bit during a forward
 * pass is clamped to [−limit, limit] by a recorded gan_clamp, so that a 16-bit
 * activation cannot overflow there. Results an FP32 scope or mode fp32 computes, an
 * O1 gan_linear's FP32 sum, and the products and convolutions a backward pass runs (a
 * gradient is not an activation) are left alone. */

/* 0 (the default) turns it off; GAN_ERR_INVALID (recorded) for a negative or
 * non-finite limit. The limit is rounded to the 16-bit type where it is applied. */
gan_status gan_ctx_set_clamp(gan_ctx *ctx, float limit);
float gan_ctx_clamp(const gan_ctx *ctx);
/* Counts the values the clamp changes (those beyond the limit; a NaN stays NaN and is
 * not counted) and the values it sees, from now until gan_ctx_clamp_count_stop, for the
 * clamps that run in a scope `pattern` matches as an FP32 pattern would ("critic"
 * matches "critic.conv0" and "penalty.critic.conv0"; NULL or "": every scope). Each
 * counted clamp waits for the backend and downloads its count: for diagnostics, not
 * for every step. GAN_ERR_INVALID (recorded) for a pattern of 256 characters or more. */
gan_status gan_ctx_clamp_count_start(gan_ctx *ctx, const char *pattern);
/* Ends the count and gives its two totals (either pointer may be NULL). */
void gan_ctx_clamp_count_stop(gan_ctx *ctx, uint64_t *changed, uint64_t *seen);
/* For an FP32 shadow of a 16-bit pass (debug level 2): while the mode is fp32 and this
 * names a 16-bit `mode` (GAN_F32 ends it), the clamp applies to the FP32 results of the
 * ops whose results that mode at `level` would have given in 16 bit (not in an FP32
 * scope, not O1's gan_linear with a bias), so that the shadow computes the same
 * function and differs from the 16-bit pass by rounding alone. */
void gan_ctx_clamp_as(gan_ctx *ctx, enum gan_dtype mode, enum gan_precision_level level);

/* ------------------------------------------------------------------ FP8 products
 * precision.mode "fp8" of ganctl.conf(5), on top of the 16-bit policy (O2 in the "rest"
 * type, FP16 or BF16, which gan_ctx_set_precision sets): every gan_matmul, gan_linear
 * and convolution whose compute type is 16 bit casts both its operands to FP8 under the
 * scaling recipe (recipe.h) and multiplies them through the backend's FP8 product
 * (gemm_fp8; convolutions through fp8_dequantize into FP32 and the FP32 convolution).
 * An operand made by a backward pass (a gradient) takes gradient_format, any other
 * forward_format ("hybrid": E4M3 forward, E5M2 gradients).
 *
 * The cast's derivative is the identity (straight through): the node records the
 * 16-bit operands, and its backward is made of products that cast their own operands,
 * so that a double backward runs through FP8 products at every order. */

/* What one operand's cast did, for the debug log (GANCTL debug level 2). */
struct gan_fp8_operand_report {
    const char *name;              /* "critic.fc1/gan_linear#0/x" */
    enum gan_dtype format;
    int gradient;
    struct gan_fp8_layout layout;
    float scale_min, scale_max;    /* over its blocks (equal per tensor) */
    struct gan_fp8_cast_stats cast;
    const char *reason;            /* the recipe's, "" when it gave none */
};

struct gan_fp8_setup {
    enum gan_dtype forward_format, gradient_format;   /* GAN_F8E4M3 or GAN_F8E5M2 */
    uint32_t cast_flags;                              /* GAN_CAST_SATURATE or 0 */
    const struct gan_recipe_ops *recipe;              /* borrowed; outlives the setting */
    gan_recipe *recipe_instance;
    const char *recipe_name;                          /* for messages */
    /* Optional: where the recipe's host keeps the reason of its last failure (the
     * recipe's host->fail), added to the context's message when a call fails. */
    const char *recipe_message;
    /* Optional: called after every operand's cast. */
    void (*report)(void *arg, const struct gan_fp8_operand_report *r);
    void *report_arg;
};

/* Turns FP8 products on (setup copied) or off (NULL). GAN_ERR_UNSUPPORTED (recorded)
 * when the backend lacks one of the four FP8 slots, GAN_ERR_INVALID for a format that
 * is not FP8 or a setup without a recipe. */
gan_status gan_ctx_set_fp8(gan_ctx *ctx, const struct gan_fp8_setup *setup);
int gan_ctx_fp8_on(const gan_ctx *ctx);

/* What the casts did since the last reset: summed counts, and the range of the scales
 * chosen (log2; both 0 when no operand was cast). */
struct gan_fp8_totals {
    uint64_t operands, elements, overflow, underflow, subnormal, nonfinite;
    double log2_scale_min, log2_scale_max;
};
void gan_ctx_fp8_totals(gan_ctx *ctx, struct gan_fp8_totals *out, int reset);
/* While held (calls nest), casts still ask the recipe for their scales but tell it
 * nothing back (no observe) and count nothing: forward passes that are not training
 * steps (the trial step, evaluations, pictures) leave the recipe's history and the
 * metrics as they were, so that a run's training does not depend on when it evaluated
 * or where it was stopped. */
void gan_ctx_fp8_hold(gan_ctx *ctx, int hold);
/* The kind of step the casts from now on belong to, the first part of every operand's
 * name ("critic-step", "generator-step"; "" or NULL: none): the same layer's operand is
 * another tensor in a critic step (its input x, the real or fake batch; the weight
 * gradient's product) than in a generator step (the fakes; the input gradient's
 * product), and a recipe keeps a history per name. At most 31 characters of
 * [A-Za-z0-9_-]. */
void gan_ctx_fp8_set_tag(gan_ctx *ctx, const char *tag);
/* (A new tag also starts the occurrences again from 0, as gan_ctx_step_end does.) */
/* Puts back totals a checkpoint kept, so that a resumed run's next row counts what the
 * row of a run never stopped counts. */
void gan_ctx_fp8_set_totals(gan_ctx *ctx, const struct gan_fp8_totals *totals);

/* ------------------------------------------------------------------ ops */

/* The filter gradient of a convolution as an op of its own, so that the gradient of a
 * conv2d's weight can itself be differentiated: for x [n, c_in, h, w] and dy
 * [n, c_out, h_out, w_out], returns dw [c_out, c_in, kh, kw] with
 * dw = ∂⟨dy, conv2d(x, w, stride, pad)⟩/∂w. Recorded like any op. */
gan_tensor *gan_conv2d_backward_filter(gan_ctx *ctx, gan_tensor *x, gan_tensor *dy,
                                       int stride, int pad, int kh, int kw);

/* Tells the context that t's values changed behind its back (a kernel wrote t's buffer
 * directly, as the optimizer's fused update does): a 16-bit copy the precision policy
 * cached for t is not used again. gan_tensor_set_from_host and gan_tensor_copy do this
 * themselves, and gan_ctx_step_end drops every cached copy, so only a writer that
 * changes a tensor in the middle of a step needs it. */
void gan_tensor_touch(gan_tensor *t);

/* Fills t with `value` (the backend's fill kernel); `op` names the caller in messages. */
gan_status ti_fill(gan_ctx *ctx, const char *op, gan_tensor *t, float value);

/* ------------------------------------------------------------------ failures */

/* Records the first failure in the context (later ones are dropped: the first
 * explains the rest) and returns `status`; gan_ctx_fail under the engine's name. */
gan_status ti_fail(gan_ctx *ctx, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records a failed kernel call: "<op>: the backend's <kernel> failed (<status>): …". */
gan_status ti_backend_fail(gan_ctx *ctx, const char *op, const char *kernel, gan_status st);
/* Records that the backend lacks kernel slot `slot`, which `op` needs; returns 0. */
int ti_missing_kernel(gan_ctx *ctx, const char *op, const char *slot);
/* Nonzero when the context's backend has kernel slot `slot` (of struct
 * gan_backend_ops); otherwise records why `op` cannot run and gives 0. */
#define TI_HAS(ctx, op, slot) \
    (gan_ctx_backend_ops(ctx)->slot != NULL || ti_missing_kernel((ctx), (op), #slot))
/* Checks an op's tensor argument: NULL (after an earlier failure, or given), from
 * another context, or not a float type; records why not. Nonzero when it can be used. */
int ti_check_input(gan_ctx *ctx, const char *op, const char *name, const gan_tensor *t);
/* "[2, 3, 4]" into buf. */
const char *ti_dims_str(char *buf, size_t size, int ndim, const int64_t *dims);

/* What a function that calls ops returns: GAN_OK when `ok`, else the failure the context
 * holds (GAN_ERR_INTERNAL if, against the rules, none was recorded). */
static inline gan_status ti_result(const gan_ctx *ctx, int ok)
{
    gan_status st = gan_ctx_status(ctx);
    return ok ? GAN_OK : st != GAN_OK ? st : GAN_ERR_INTERNAL;
}

#endif
