/* tensor.h — tensors on a backend and the eager, define-by-run autodiff over them.
 * Models and loss terms build their computations from these calls. */
#ifndef GANCTL_TENSOR_H
#define GANCTL_TENSOR_H

#include <stddef.h>
#include <stdint.h>
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
gan_status gan_ctx_status(const gan_ctx *ctx);       /* first failure since the last clear */
const char *gan_ctx_error(const gan_ctx *ctx);       /* its message; "" when none */
void gan_ctx_clear_error(gan_ctx *ctx);
/* Records a failure found by a model or loss term itself (a refused input), so that
 * the caller of the op chain sees its reason; keeps an earlier failure. Returns
 * `status`. */
gan_status gan_ctx_fail(gan_ctx *ctx, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ steps */
/* Frees every step tensor and the tape. Persistent tensors keep their values;
 * their gradients are untouched. Freed buffers are kept in a pool by size and reused,
 * so a training loop that repeats its shapes stops allocating after its first step. */
void gan_ctx_step_end(gan_ctx *ctx);

/* While no-grad is on, ops record nothing (inference, optimizer updates). Nests. */
void gan_ctx_no_grad_push(gan_ctx *ctx);
void gan_ctx_no_grad_pop(gan_ctx *ctx);

/* ------------------------------------------------------------------ creation */
gan_tensor *gan_tensor_new(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims);
gan_tensor *gan_tensor_new_persistent(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                      const int64_t *dims);
/* Persistent tensors only, and not while the tape still refers to one (free it after
 * gan_ctx_step_end). */
void gan_tensor_free(gan_tensor *t);
gan_tensor *gan_tensor_from_host(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                 const int64_t *dims, const float *values);
gan_tensor *gan_tensor_full(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                            const int64_t *dims, float value);
/* Philox draws (backend.h): uniform in (low, high) and normal(mean, std). */
gan_tensor *gan_tensor_uniform(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims,
                               uint64_t seed, uint64_t offset, float low, float high);
gan_tensor *gan_tensor_normal(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims,
                              uint64_t seed, uint64_t offset, float mean, float std);

/* Marks a tensor as a leaf whose gradient gan_grad may be asked for: a persistent one
 * (a parameter) or a step one (the penalty's x̂). Refused for the result of a recorded
 * op. gan_tensor_requires_grad is also true for such results. */
void gan_tensor_set_requires_grad(gan_tensor *t, int requires_grad);
int gan_tensor_requires_grad(const gan_tensor *t);

/* ------------------------------------------------------------------ queries */
int gan_tensor_ndim(const gan_tensor *t);
int64_t gan_tensor_dim(const gan_tensor *t, int axis);   /* negative axis counts from the end */
int64_t gan_tensor_numel(const gan_tensor *t);
enum gan_dtype gan_tensor_dtype(const gan_tensor *t);
/* Copies the values out as FP32 (waits for the backend). */
gan_status gan_tensor_to_host(gan_ctx *ctx, const gan_tensor *t, float *values, size_t count);
/* Overwrites the values of t (same element count) from FP32 host values. Refused for
 * the result of a recorded op, whose values the tape still needs. */
gan_status gan_tensor_set_from_host(gan_ctx *ctx, gan_tensor *t, const float *values, size_t count);
/* dst ← src (same shape; dtypes may differ: rounds once). Not recorded; refused when
 * dst is the result of a recorded op. */
gan_status gan_tensor_copy(gan_ctx *ctx, gan_tensor *dst, const gan_tensor *src);

/* ------------------------------------------------------------------ ops
 * Each op runs at once. When an input requires a gradient (a leaf so marked, or the
 * result of a recorded op) and no-grad is off, the op records a node whose backward
 * is itself written in these ops, so a gradient can be differentiated again.
 * Binary ops broadcast numpy-style (trailing dimensions aligned; size-1 stretches). */
gan_tensor *gan_add(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
gan_tensor *gan_sub(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
gan_tensor *gan_mul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
gan_tensor *gan_div(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
gan_tensor *gan_scale(gan_ctx *ctx, gan_tensor *a, float s);        /* s·a */
gan_tensor *gan_add_scalar(gan_ctx *ctx, gan_tensor *a, float s);   /* a + s */
gan_tensor *gan_neg(gan_ctx *ctx, gan_tensor *a);
gan_tensor *gan_relu(gan_ctx *ctx, gan_tensor *a);
gan_tensor *gan_leaky_relu(gan_ctx *ctx, gan_tensor *a, float slope);
gan_tensor *gan_tanh(gan_ctx *ctx, gan_tensor *a);
gan_tensor *gan_sigmoid(gan_ctx *ctx, gan_tensor *a);
gan_tensor *gan_square(gan_ctx *ctx, gan_tensor *a);
gan_tensor *gan_sqrt(gan_ctx *ctx, gan_tensor *a);
/* Heaviside step (a > 0): no gradient flows through it (it is piecewise constant). */
gan_tensor *gan_step(gan_ctx *ctx, gan_tensor *a);

/* Sum / mean over one axis (keepdim: the axis stays with size 1), or over all
 * elements with axis = GAN_ALL_AXES (a 0-d result). */
#define GAN_ALL_AXES INT32_MIN
gan_tensor *gan_sum(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim);
gan_tensor *gan_mean(gan_ctx *ctx, gan_tensor *a, int axis, int keepdim);
/* Sums a down to `dims` (the reverse of broadcasting): the gradient of a broadcast. */
gan_tensor *gan_sum_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);
/* Broadcasts a up to `dims`. */
gan_tensor *gan_broadcast_to(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);

/* Matrix product of 2-D tensors, op(a)·op(b), op = transpose when trans_* is set. */
gan_tensor *gan_matmul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b, int trans_a, int trans_b);

gan_tensor *gan_reshape(gan_ctx *ctx, gan_tensor *a, int ndim, const int64_t *dims);
/* Along axis 0 (the batch). */
gan_tensor *gan_concat0(gan_ctx *ctx, gan_tensor *a, gan_tensor *b);
gan_tensor *gan_slice0(gan_ctx *ctx, gan_tensor *a, int64_t begin, int64_t end);

/* 2-D convolution (NCHW, weight [c_out, c_in, kh, kw]) and its transpose
 * (weight [c_in, c_out, kh, kw], as torch.nn.ConvTranspose2d; output_padding adds
 * rows/columns at the bottom/right). Bias is added separately with gan_add. */
gan_tensor *gan_conv2d(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride, int pad);
gan_tensor *gan_conv2d_transpose(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, int stride,
                                 int pad, int output_padding);

/* Rounds to another dtype; the gradient is cast back to the input's dtype. */
gan_tensor *gan_cast(gan_ctx *ctx, gan_tensor *a, enum gan_dtype dtype);

/* ------------------------------------------------------------------ gradients
 * PyTorch's torch.autograd.grad: the gradients of Σᵢ ⟨seedsᵢ, outputsᵢ⟩ with respect
 * to each input. seeds may be NULL (each output must then be a single element; seed
 * 1). grads[j] is a new step tensor shaped like inputs[j] (zeros when the outputs do
 * not depend on it). With create_graph the backward pass is itself recorded, so the
 * grads can be differentiated again (the gradient penalty needs this); without it the
 * backward records nothing. Only the gradients the inputs need are computed. Fails
 * (GAN_ERR_INVALID, with the reason in the context) when an output depends on no tensor
 * that requires a gradient, or a seed is not shaped like its output. */
gan_status gan_grad(gan_ctx *ctx, int n_outputs, gan_tensor *const *outputs,
                    gan_tensor *const *seeds, int n_inputs, gan_tensor *const *inputs,
                    gan_tensor **grads, int create_graph);

#ifdef __cplusplus
}
#endif
#endif
