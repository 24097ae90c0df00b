/* SPDX-License-Identifier: MIT */
/* tensor.h — tensors on a backend and the eager, define-by-run autodiff over them.
 * Models and loss terms build their computations from these calls. */
#ifndef GANCTL_TENSOR_H
#define GANCTL_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/api.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The core's compute context: a backend instance, the step's memory, the tape of
 * recorded ops and the last error. One per thread of work; not thread-safe. */
typedef struct gan_ctx gan_ctx;

/* An n-dimensional, row-major, contiguous array of `dtype` on the context's backend.
 * A tensor made during a step (every op result) belongs to the step and is freed by
 * gan_ctx_step_end; a persistent tensor (parameters, their gradients, optimizer
 * state, fixed inputs) lives until gan_tensor_free. */
typedef struct gan_tensor gan_tensor;

#define GAN_TENSOR_MAX_DIMS 6

/* ------------------------------------------------------------------ errors
 * Every op returns NULL on failure and records a message in the context; an op
 * given a NULL input returns NULL at once and keeps the first message. So a forward
 * pass can be written as a chain of calls and checked once, at the end. */
GAN_API gan_status gan_ctx_status(const gan_ctx *ctx);   /* first failure since the last clear */
GAN_API const char *gan_ctx_error(const gan_ctx *ctx);   /* its message; "" when none */
GAN_API void gan_ctx_clear_error(gan_ctx *ctx);
/* Records a failure found by a model or loss term itself (a refused input), so that
 * the caller of the op chain sees its reason; keeps an earlier failure. Returns
 * `status`. */
GAN_API gan_status gan_ctx_fail(gan_ctx *ctx, gan_status status, const char *fmt, ...)
    GAN_PRINTF_LIKE(3, 4);

/* ------------------------------------------------------------------ steps */
/* Frees every step tensor and the tape. Persistent tensors keep their values;
 * their gradients are untouched. Freed buffers are kept in a pool by size and reused,
 * so a training loop that repeats its shapes stops allocating after its first step. */
GAN_API void gan_ctx_step_end(gan_ctx *ctx);

/* While no-grad is on, ops record nothing (inference, optimizer updates). Nests. */
GAN_API void gan_ctx_no_grad_push(gan_ctx *ctx);
GAN_API void gan_ctx_no_grad_pop(gan_ctx *ctx);

/* ------------------------------------------------------------------ creation
 * An FP8 tensor (GAN_F8E4M3, GAN_F8E5M2; ABI 1.5, on a backend of 1.5 or later) is
 * storage only: it can be made, set from and read to the host, and copied to and from
 * the float types (rounding to nearest even, a value beyond its range becoming inf, or
 * NaN in E4M3); the ops refuse it. */
GAN_API gan_tensor *gan_tensor_new(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                   const int64_t *dims);
GAN_API gan_tensor *gan_tensor_new_persistent(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                              const int64_t *dims);
/* Persistent tensors only, and not while the tape still refers to one (free it after
 * gan_ctx_step_end). */
GAN_API void gan_tensor_free(gan_tensor *t);
GAN_API gan_tensor *gan_tensor_from_host(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                         const int64_t *dims, const float *values);
GAN_API gan_tensor *gan_tensor_full(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                    const int64_t *dims, float value);
/* Philox draws (backend.h): uniform in (low, high) and normal(mean, std). */
GAN_API gan_tensor *gan_tensor_uniform(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                       const int64_t *dims, uint64_t seed, uint64_t offset,
                                       float low, float high);
GAN_API gan_tensor *gan_tensor_normal(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                      const int64_t *dims, uint64_t seed, uint64_t offset,
                                      float mean, float std);

/* Marks a tensor as a leaf whose gradient gan_grad may be asked for: a persistent one
 * (a parameter) or a step one (the penalty's x̂). Refused for the result of a recorded
 * op. gan_tensor_requires_grad is also true for such results. */
GAN_API void gan_tensor_set_requires_grad(gan_tensor *t, int requires_grad);
GAN_API int gan_tensor_requires_grad(const gan_tensor *t);

/* ------------------------------------------------------------------ queries */
GAN_API int gan_tensor_ndim(const gan_tensor *t);
GAN_API int64_t gan_tensor_dim(const gan_tensor *t, int axis); /* negative axis: from the end */
GAN_API int64_t gan_tensor_numel(const gan_tensor *t);
GAN_API enum gan_dtype gan_tensor_dtype(const gan_tensor *t);
/* Copies the values out as FP32 (waits for the backend). */
GAN_API gan_status gan_tensor_to_host(gan_ctx *ctx, const gan_tensor *t, float *values,
                                      size_t count);
/* Overwrites the values of t (same element count) from FP32 host values. Refused for
 * the result of a recorded op, whose values the tape still needs. */
GAN_API gan_status gan_tensor_set_from_host(gan_ctx *ctx, gan_tensor *t, const float *values,
                                            size_t count);
/* dst ← src (same shape; dtypes may differ: rounds once). Not recorded; refused when
 * dst is the result of a recorded op. */
GAN_API gan_status gan_tensor_copy(gan_ctx *ctx, gan_tensor *dst, const gan_tensor *src);

/* ------------------------------------------------------------------ ops
 * Each op runs at once. When an input requires a gradient (a leaf so marked, or the
 * result of a recorded op) and no-grad is off, the op records a node whose backward
 * is itself written in these ops, so a gradient can be differentiated again.
 * Binary ops broadcast numpy-style (trailing dimensions aligned; size-1 stretches). */
GAN_API gan_tensor *gan_add(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_sub(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_mul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_div(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_scale(gan_ctx *ctx, gan_tensor *a, float s);        /* s·a */
GAN_API gan_tensor *gan_add_scalar(gan_ctx *ctx, gan_tensor *a, float s);   /* a + s */
GAN_API gan_tensor *gan_neg(gan_ctx *ctx, gan_tensor *a);
GAN_API gan_tensor *gan_relu(gan_ctx *ctx, gan_tensor *a);
GAN_API gan_tensor *gan_leaky_relu(gan_ctx *ctx, gan_tensor *a, float slope);
/* leaky_relu(a + b, slope) and relu(a + b) (ABI 1.9): a layer's bias and its activation.
 * The values and gradients (at every order) are those of gan_add and then the
 * activation, bit for bit; with a slope ≥ 0 and a backend of ABI 1.9 that fills
 * binary_alpha they come from one pass and one recorded node, whose backward reads the
 * output's sign (the sum's, for such a slope), so the sum is never kept. Both run in
 * the caller's scope. */
GAN_API gan_tensor *gan_add_leaky_relu(gan_ctx *ctx, gan_tensor *a, gan_tensor *b, float slope);
GAN_API gan_tensor *gan_add_relu(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_tanh(gan_ctx *ctx, gan_tensor *a);
GAN_API gan_tensor *gan_sigmoid(gan_ctx *ctx, gan_tensor *a);
GAN_API gan_tensor *gan_square(gan_ctx *ctx, gan_tensor *a);
GAN_API gan_tensor *gan_sqrt(gan_ctx *ctx, gan_tensor *a);
/* log(1 + eᵃ), without overflow for any a (plugin ABI 1.5): the logistic losses
 * softplus(−D(x)) and softplus(D(G(z))). Its derivative is sigmoid(a). Under the 16-bit
 * policy it computes in the 16-bit type, where 1 + e^−|a| rounds to 1 once |a| > 7.7
 * (FP16) or 5.5 (BF16): a loss widens its input to FP32 first, as the shipped games do. */
GAN_API gan_tensor *gan_softplus(gan_ctx *ctx, gan_tensor *a);
/* Heaviside step (a > 0): no gradient flows through it (it is piecewise constant). */
GAN_API gan_tensor *gan_step(gan_ctx *ctx, gan_tensor *a);
/* torch.clamp(a, lo, hi): min(max(a, lo), hi), with lo and hi rounded to a's dtype; a
 * NaN stays NaN, lo > hi or a NaN bound is refused. Not governed by the precision
 * policy: the result has a's dtype, which the clamp cannot overflow. The gradient is
 * g·[lo ≤ a ≤ hi] (passed at the bounds themselves, and where a is NaN), a multiply as
 * ReLU's is, so that an infinite g outside gives NaN; that mask is itself an op whose
 * derivative is the same mask, so a clamped forward can be differentiated twice.
 * Since ABI 1.5. */
GAN_API gan_tensor *gan_clamp(gan_ctx *ctx, gan_tensor *a, float lo, float hi);

/* Sum / mean over one axis (keepdim: the axis stays with size 1), or over all
 * elements with axis = GAN_ALL_AXES (a 0-d result). */
#define GAN_ALL_AXES INT32_MIN
GAN_API gan_tensor *gan_sum(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim);
GAN_API gan_tensor *gan_mean(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim);
/* Sums a down to `dims` (the reverse of broadcasting): the gradient of a broadcast. */
GAN_API gan_tensor *gan_sum_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);
/* Broadcasts a up to `dims`. */
GAN_API gan_tensor *gan_broadcast_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);

/* Matrix product of 2-D tensors, op(a)·op(b), op = transpose when trans_* is set. */
GAN_API gan_tensor *gan_matmul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b, int trans_a,
                               int trans_b);
/* An affine layer, torch.nn.functional.linear: x·wᵀ + b for x [batch, in], w [out, in]
 * and b [out] (added to every row), or x·wᵀ when b is NULL; the result is [batch, out].
 * It is gan_add(gan_matmul(x, w, 0, 1), b) in one op: the rows of b are written into
 * the result and the product is accumulated onto them, so there is no separate pass
 * over the result for the bias. The precision policy treats it as that composition: the
 * product is a GEMM-class op, the bias add an element-wise one, so the result has the
 * dtype the composition's sum would have (16 bit at O2, FP32 at O1 and in an FP32
 * scope). Where that dtype is the product's and not FP16, the bias enters the GEMM's
 * FP32 accumulator and the sum is rounded once, not the product and then the sum: a
 * BF16 result can differ from the composition's by one rounding, and is the closer of
 * the two to the exact value; an FP32 one in the last bits (none where the inner size
 * fits one of the GEMM's blocks). Otherwise (FP16, whose documented experiments were
 * measured on the composition; O1: a 16-bit product, an FP32 result) the product is
 * rounded to 16 bit and then added, bit for bit as the composition does. Gradients: dx = g·w, dw = gᵀ·x, db = g summed over the rows, in the same ops,
 * so that they can be differentiated again. Since ABI 1.3. */
GAN_API gan_tensor *gan_linear(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, gan_tensor *b);

GAN_API gan_tensor *gan_reshape(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);
/* Along axis 0 (the batch). */
GAN_API gan_tensor *gan_concat0(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
GAN_API gan_tensor *gan_slice0(gan_ctx *ctx, gan_tensor *a, int64_t begin, int64_t end);

/* 2-D convolution (NCHW, weight [c_out, c_in, kh, kw]) and its transpose
 * (weight [c_in, c_out, kh, kw], as torch.nn.ConvTranspose2d; output_padding adds
 * rows/columns at the bottom/right). Bias is added separately with gan_add. */
GAN_API gan_tensor *gan_conv2d(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride, int pad);
GAN_API gan_tensor *gan_conv2d_transpose(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride,
                                         int pad, int output_padding);
/* gan_conv2d_transpose with its own output padding for rows and for columns (each 0 to
 * stride − 1), for an output whose height and width differ in parity: the output is
 * [n, c_out, (h − 1)·stride − 2·pad + kh + output_padding_h,
 *            (w − 1)·stride − 2·pad + kw + output_padding_w].
 * gan_conv2d_transpose(…, p) is gan_conv2d_transpose_hw(…, p, p). Since ABI 1.2. */
GAN_API gan_tensor *gan_conv2d_transpose_hw(gan_ctx *ctx, gan_tensor *x, gan_tensor *w,
                                            int stride, int pad, int output_padding_h,
                                            int output_padding_w);

/* Rounds to another dtype; the gradient is cast back to the input's dtype. */
GAN_API gan_tensor *gan_cast(gan_ctx *ctx, gan_tensor *a, enum gan_dtype dtype);

/* ------------------------------------------------------------------ precision policy
 * Mixed precision (the precision settings of ganctl.conf(5)): the context decides, op by op, the
 * dtype an op computes in, and casts its inputs to it. Models and loss terms write
 * plain FP32 code; the policy makes it 16-bit.
 *
 * Modes. fp32 (GAN_F32, the default): the policy is off, every op computes in the
 * widest dtype of its inputs (F32 wins; F16 with BF16 gives F32), nothing is cast.
 * fp16 (GAN_F16) and bf16 (GAN_BF16) at one of two levels, with "16 bit" meaning the
 * mode's type:
 *   O1  GEMM-class ops (gan_matmul, the product of gan_linear, gan_conv2d,
 *       gan_conv2d_transpose and the filter gradient of a convolution) compute in 16
 *       bit: their inputs are cast to 16 bit, the backend accumulates in FP32 and
 *       rounds the result once to 16 bit. Every other governed op (gan_linear's bias
 *       add too) computes in FP32 (16-bit inputs are cast up, exactly).
 *   O2  GEMM-class ops as in O1. An element-wise op (gan_add … gan_step, and the bias
 *       add of gan_linear) and a sum or
 *       mean over some axes computes in 16 bit when any of its inputs is 16 bit — from
 *       the first GEMM on, the activations are — and its FP32 inputs (parameters, data)
 *       are cast down: the result is 16 bit, rounded once from an FP32 computation, and
 *       reductions accumulate in FP32 inside the backend. One whose inputs are all FP32
 *       (data before the first layer, the loss after its reduction) stays FP32. A sum
 *       or mean over every element (GAN_ALL_AXES: the loss reduction) casts its input
 *       up and gives an FP32 result, so losses, their scaling and their first
 *       gradients are FP32.
 * Shape ops (gan_reshape, gan_concat0, gan_slice0, gan_sum_to, gan_broadcast_to) and
 * gan_cast are not governed: they keep their inputs' dtype (concat0 of two dtypes
 * gives the wider).
 *
 * Parameters stay FP32 masters (optimizer state too); an op that needs one in 16 bit
 * casts it at use. Casts made by the policy are recorded ops (gan_cast): a gradient
 * flows back through the cast and is rounded to the source's dtype there, so every
 * gradient has the dtype of its forward tensor and a parameter's gradient arrives in
 * FP32. Each cast is cached on its source until the source's values change
 * (gan_tensor_set_from_host, gan_tensor_copy) or the step ends (the optimizer updates
 * parameters between steps): a weight used by many ops in a step is cast once, as
 * PyTorch's autocast caches its weight casts for one forward region. The 16-bit
 * gradient a parameter's cast passed back stays readable (gan_tensor_grad16), so that
 * a loss scaler can count its underflow.
 *
 * Scopes and FP32 overrides. Models and loss terms name their parts with
 * gan_ctx_scope_push / _pop; nested names join with '.' ("critic.fc3"; the network's
 * name is pushed around a model's forward by its caller, the layer's name by the
 * model). A scope that an FP32 pattern matches runs every governed op in FP32, as mode
 * fp32 would with FP32 inputs: 16-bit inputs are cast up as they enter (recorded, so
 * their gradients flow back cast down), and results leaving the scope stay FP32 until
 * an op under the 16-bit policy casts them. A pattern matches a scope when it matches
 * a run of whole parts of its path: "penalty" matches "penalty" and everything nested
 * in it ("penalty.critic.fc0"); "critic.fc3" matches "critic.fc3" and
 * "penalty.critic.fc3" but not "critic.fc30"; '*' matches any characters, dots
 * included ("critic.norm*" matches "critic.norm1"). Every recorded node keeps the
 * scope it ran in (and whether the policy was on), and its backward runs in that same
 * scope, whenever and wherever gan_grad is called: so a penalty whose forward ran in
 * an FP32 scope also has an FP32 inner gradient and an FP32 double backward.
 *
 * Activation clamp. The host may also clamp (precision.clamp of ganctl.conf(5),
 * StyleGAN2-ADA's conv_clamp): then, in fp16 and bf16, every 16-bit result of
 * gan_matmul, gan_linear, gan_conv2d and gan_conv2d_transpose(_hw) in a forward pass
 * comes out of a recorded gan_clamp to [−limit, limit], which follows the op's own node
 * on the tape. FP32 results (an FP32 scope, O1's gan_linear with a bias) and the
 * products of a backward pass are not clamped. */
enum gan_precision_level {
    GAN_PRECISION_O1 = 1,
    GAN_PRECISION_O2 = 2
};

/* Sets the mode (GAN_F32, GAN_F16 or GAN_BF16) and level (ignored for GAN_F32, but
 * still checked). Takes effect from the next op, backward passes included: a node
 * keeps its scope, not the mode it ran under (so a forward can be recorded in 16 bit
 * and differentiated in FP32, or the reverse). GAN_ERR_INVALID (recorded) for anything
 * else. */
GAN_API gan_status gan_ctx_set_precision(gan_ctx *ctx, enum gan_dtype mode,
                                         enum gan_precision_level level);
GAN_API void gan_ctx_get_precision(const gan_ctx *ctx, enum gan_dtype *mode,
                                   enum gan_precision_level *level);
/* Adds an FP32 pattern: letters, digits, '_', '-', '.' between parts, and '*'; at most
 * 255 characters. Applies to scopes entered before and after. */
GAN_API gan_status gan_ctx_add_fp32_scope(gan_ctx *ctx, const char *pattern);
GAN_API void gan_ctx_clear_fp32_scopes(gan_ctx *ctx);
GAN_API size_t gan_ctx_fp32_scope_count(const gan_ctx *ctx);
GAN_API const char *gan_ctx_fp32_scope(const gan_ctx *ctx, size_t i);   /* NULL past the end */

/* Enters scope `name` (letters, digits, '_' and '-', 1 to 63 characters) inside the
 * current one; at most 16 deep. Every push needs its pop, also on the failure paths of
 * the code between them. */
GAN_API gan_status gan_ctx_scope_push(gan_ctx *ctx, const char *name);
GAN_API void gan_ctx_scope_pop(gan_ctx *ctx);
/* The current scope's full path ("" at the top level) and whether a pattern makes it
 * FP32. */
GAN_API const char *gan_ctx_scope(const gan_ctx *ctx);
GAN_API int gan_ctx_scope_is_fp32(const gan_ctx *ctx);

/* The 16-bit gradient of a tensor used through the policy's 16-bit cast (a parameter
 * under O1 or O2): what the last gan_grad of this step that reached the cast passed
 * back into it, before it was widened to the tensor's FP32 — the values a loss scaler
 * must inspect for underflow and overflow, since the FP32 gradient that arrives after
 * the cast can no longer show them. A parameter reshaped before use (a bias as
 * [C, 1, 1]) counts as used: the gradient is shaped like the reshaped tensor, with the
 * parameter's element count. NULL when no such gradient exists this step: mode fp32, a
 * parameter only FP32 ops used (a bias under O1, anything in an FP32 scope), no gan_grad
 * yet. Such a gradient was never 16 bit, so it cannot have underflowed in storage. When
 * a parameter is used both in 16 bit and in FP32, this holds the 16-bit part only. A
 * step tensor. */
GAN_API gan_tensor *gan_tensor_grad16(const gan_tensor *t);

/* ------------------------------------------------------------------ the tape
 * For diagnostics: the nodes recorded this step, oldest first (a topological order),
 * each with its op, its scope and its output. Valid until gan_ctx_step_end. */
struct gan_tape_entry {
    const char *op;             /* "gan_matmul" */
    const char *scope;          /* "critic.fc0"; "" at the top level */
    int fp32_scope;             /* an FP32 pattern matches the scope (now) */
    int policy_off;             /* recorded with the policy suspended (gradient sums) */
    int from_backward;          /* recorded by a backward pass (gan_grad, create_graph) */
    int n_inputs;               /* 1 or 2: the entries of inputs[] in use */
    gan_tensor *inputs[2];
    gan_tensor *output;
    /* The gradient that reached `output` in the most recent gan_grad call, in the
     * output's dtype, or NULL when that call did not reach it. */
    gan_tensor *grad;
    /* A third input, not counted in n_inputs: gan_linear's bias; NULL for every other
     * op and for gan_linear without a bias. Since ABI 1.3. */
    gan_tensor *input3;
};
GAN_API size_t gan_ctx_tape_length(const gan_ctx *ctx);
/* Fills min(entry_size, sizeof *entry) bytes of *entry for node `index`
 * (0 ≤ index < gan_ctx_tape_length): pass sizeof your struct, so that a caller built
 * against an older, shorter struct keeps working. */
GAN_API gan_status gan_ctx_tape_entry(gan_ctx *ctx, size_t index, struct gan_tape_entry *entry,
                                      size_t entry_size);

/* ------------------------------------------------------------------ gradients
 * PyTorch's torch.autograd.grad: the gradients of Σᵢ ⟨seedsᵢ, outputsᵢ⟩ with respect
 * to each input. seeds may be NULL (each output must then be a single element; seed
 * 1). grads[j] is a new step tensor shaped like inputs[j] (zeros when the outputs do
 * not depend on it). With create_graph the backward pass is itself recorded, so the
 * grads can be differentiated again (the gradient penalty needs this); without it the
 * backward records nothing. Only the gradients the inputs need are computed. Fails
 * (GAN_ERR_INVALID, with the reason in the context) when an output depends on no tensor
 * that requires a gradient, or a seed is not shaped like its output. */
GAN_API gan_status gan_grad(gan_ctx *ctx, int n_outputs, gan_tensor *const *outputs,
                            gan_tensor *const *seeds, int n_inputs, gan_tensor *const *inputs,
                            gan_tensor **grads, int create_graph);

#ifdef __cplusplus
}
#endif
#endif
