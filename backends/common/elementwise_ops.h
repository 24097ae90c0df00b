/* SPDX-License-Identifier: MIT */
/* elementwise_ops.h — the per-element math of the unary and binary element-wise ops, in
 * FP32, as both backends compute it. */
#ifndef GANCTL_COMMON_ELEMENTWISE_OPS_H
#define GANCTL_COMMON_ELEMENTWISE_OPS_H

#include <math.h>
#include <ganctl/backend.h>

#include "convert.h"
#include "hostdev.h"

/* NaN and signed-zero semantics, chosen to match PyTorch where the ABI leaves room:
 *   RELU         x <= 0 ? +0 : x        NaN propagates; -0 becomes +0
 *   LEAKY_RELU   x > 0 ? x : alpha·x    NaN propagates
 *   STEP         x > 0 ? 1 : 0          NaN gives 0 (as the header specifies)
 *   LEAKY_STEP   x > 0 ? 1 : alpha      NaN gives alpha, as STEP's 0 gives alpha in
 *                                       leaky_relu's derivative, alpha + (1 − alpha)·step
 *   SIGN         (x > 0) − (x < 0)      ±0 and NaN give 0
 *   ABS          fabsf                  NaN propagates (sign bit cleared)
 *   SQRT, RSQRT, LOG of a negative number give NaN; RSQRT(0) = +inf, LOG(0) = −inf,
 *   RECIPROCAL(±0) = ±inf, all as IEEE 754 and libm say.
 *   FILL         alpha, whatever x holds (x must be a valid view but is not read)
 *   MAX, MIN     fmaxf, fminf: a NaN loses to a number, so MAX(NaN, 1) = 1
 *   GREATER      a > b ? 1 : 0          any NaN gives 0
 *   MASK_POSITIVE  a · (b > 0 ? 1 : 0)  a real multiply, not a select, so that it is
 *                the bits of MUL(a, STEP(b)): a NaN or inf in a where b <= 0 (or b is
 *                NaN) gives NaN, and a negative a there gives −0
 *   MASK_LEAKY   a · (b > 0 ? 1 : alpha)  the bits of MUL(a, LEAKY_STEP(b)) when alpha
 *                is LEAKY_STEP's slope as stored: a multiply, as MASK_POSITIVE's
 *   ADD_LEAKY    LEAKY_RELU(z), ADD_RELU RELU(z), z = a + b as the result's dtype stores
 *                it: the bits of ADD and then the activation, each stored (gan_ew_into)
 * Everything else is plain FP32 arithmetic and propagates NaN. The ops IEEE 754 rounds
 * exactly (+, −, ·, /, sqrt, the comparisons) give the same bits on every backend;
 * sigmoid, exp and log come from each platform's math library (glibc, CUDA's), and
 * tanh from CUDA's on the GPU and from the CPU backend's own (backends/cpu/tanh.c,
 * fdlibm's algorithm) on the CPU, within 2.2 ulp of the exact value; they may differ
 * in the last bits between the backends.
 *
 * One function per op, so that the CPU backend's loops (one per op, vectorised by the
 * compiler) and the CUDA kernel's switch (gan_ew_unary, gan_ew_binary) call the same
 * expression. */

GAN_HD static inline float gan_ew_neg(float x) { return -x; }
GAN_HD static inline float gan_ew_scale(float alpha, float x) { return alpha * x; }
GAN_HD static inline float gan_ew_add_scalar(float alpha, float x) { return x + alpha; }
GAN_HD static inline float gan_ew_relu(float x) { return x <= 0.0f ? 0.0f : x; }
GAN_HD static inline float gan_ew_leaky_relu(float alpha, float x)
{
    return x > 0.0f ? x : alpha * x;
}
GAN_HD static inline float gan_ew_step(float x) { return x > 0.0f ? 1.0f : 0.0f; }
GAN_HD static inline float gan_ew_leaky_step(float alpha, float x)
{
    return x > 0.0f ? 1.0f : alpha;
}
GAN_HD static inline float gan_ew_tanh(float x) { return tanhf(x); }
/* exp(-x) overflows to inf for x < -88 and the quotient is then exactly 0. */
GAN_HD static inline float gan_ew_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
GAN_HD static inline float gan_ew_square(float x) { return x * x; }
GAN_HD static inline float gan_ew_sqrt(float x) { return sqrtf(x); }
GAN_HD static inline float gan_ew_rsqrt(float x) { return 1.0f / sqrtf(x); }
GAN_HD static inline float gan_ew_reciprocal(float x) { return 1.0f / x; }
GAN_HD static inline float gan_ew_exp(float x) { return expf(x); }
GAN_HD static inline float gan_ew_log(float x) { return logf(x); }
GAN_HD static inline float gan_ew_abs(float x) { return fabsf(x); }
GAN_HD static inline float gan_ew_sign(float x) { return (float)((x > 0.0f) - (x < 0.0f)); }

/* op(x); FILL gives alpha without looking at x. */
GAN_HD static inline float gan_ew_unary(enum gan_unary_op op, float alpha, float x)
{
    switch (op) {
    case GAN_UNARY_COPY: return x;
    case GAN_UNARY_NEG: return gan_ew_neg(x);
    case GAN_UNARY_SCALE: return gan_ew_scale(alpha, x);
    case GAN_UNARY_ADD_SCALAR: return gan_ew_add_scalar(alpha, x);
    case GAN_UNARY_RELU: return gan_ew_relu(x);
    case GAN_UNARY_LEAKY_RELU: return gan_ew_leaky_relu(alpha, x);
    case GAN_UNARY_STEP: return gan_ew_step(x);
    case GAN_UNARY_TANH: return gan_ew_tanh(x);
    case GAN_UNARY_SIGMOID: return gan_ew_sigmoid(x);
    case GAN_UNARY_SQUARE: return gan_ew_square(x);
    case GAN_UNARY_SQRT: return gan_ew_sqrt(x);
    case GAN_UNARY_RSQRT: return gan_ew_rsqrt(x);
    case GAN_UNARY_RECIPROCAL: return gan_ew_reciprocal(x);
    case GAN_UNARY_EXP: return gan_ew_exp(x);
    case GAN_UNARY_LOG: return gan_ew_log(x);
    case GAN_UNARY_ABS: return gan_ew_abs(x);
    case GAN_UNARY_SIGN: return gan_ew_sign(x);
    case GAN_UNARY_LEAKY_STEP: return gan_ew_leaky_step(alpha, x);
    default: return alpha; /* GAN_UNARY_FILL */
    }
}

GAN_HD static inline float gan_ew_add(float a, float b) { return a + b; }
GAN_HD static inline float gan_ew_sub(float a, float b) { return a - b; }
GAN_HD static inline float gan_ew_mul(float a, float b) { return a * b; }
GAN_HD static inline float gan_ew_div(float a, float b) { return a / b; }
GAN_HD static inline float gan_ew_max(float a, float b) { return fmaxf(a, b); }
GAN_HD static inline float gan_ew_min(float a, float b) { return fminf(a, b); }
GAN_HD static inline float gan_ew_greater(float a, float b) { return a > b ? 1.0f : 0.0f; }

/* `one` is 1: a caller whose compiler might drop a multiply by a literal 1 (and so pass
 * a signalling NaN in a unquieted) hands in a 1 the compiler cannot see through; the
 * multiply is the explicitly rounded one, which nvcc keeps as well. */
GAN_HD static inline float gan_ew_mask_positive(float a, float b, float one)
{
    return gan_fmul_rn(a, b > 0.0f ? one : 0.0f);
}

/* LEAKY_STEP(b) with slope alpha, then MUL, in one: the multiply by 1 is kept as
 * MASK_POSITIVE keeps it. */
GAN_HD static inline float gan_ew_mask_leaky(float a, float b, float alpha, float one)
{
    return gan_fmul_rn(a, b > 0.0f ? one : alpha);
}

/* The binary ops with a parameter (a slope), which binary_alpha takes and binary refuses. */
GAN_HD static inline int gan_ew_binary_has_alpha(enum gan_binary_op op)
{
    return op == GAN_BINARY_MASK_LEAKY || op == GAN_BINARY_ADD_LEAKY;
}

/* The binary ops that store the sum a + b in the result's dtype and then activate it
 * (gan_ew_binary_into): a bias and its activation in one pass. */
GAN_HD static inline int gan_ew_binary_stores_sum(enum gan_binary_op op)
{
    return op == GAN_BINARY_ADD_LEAKY || op == GAN_BINARY_ADD_RELU;
}

/* `alpha` is the op's parameter where it has one (gan_ew_binary_has_alpha).
 * ADD_LEAKY and ADD_RELU as an FP32 result has them; gan_ew_binary_into for any. */
GAN_HD static inline float gan_ew_binary(enum gan_binary_op op, float a, float b, float alpha)
{
    switch (op) {
    case GAN_BINARY_ADD: return gan_ew_add(a, b);
    case GAN_BINARY_SUB: return gan_ew_sub(a, b);
    case GAN_BINARY_MUL: return gan_ew_mul(a, b);
    case GAN_BINARY_DIV: return gan_ew_div(a, b);
    case GAN_BINARY_MAX: return gan_ew_max(a, b);
    case GAN_BINARY_MIN: return gan_ew_min(a, b);
    case GAN_BINARY_GREATER: return gan_ew_greater(a, b);
    case GAN_BINARY_MASK_LEAKY: return gan_ew_mask_leaky(a, b, alpha, 1.0f);
    case GAN_BINARY_ADD_LEAKY: return gan_ew_leaky_relu(alpha, gan_ew_add(a, b));
    case GAN_BINARY_ADD_RELU: return gan_ew_relu(gan_ew_add(a, b));
    default: return gan_ew_mask_positive(a, b, 1.0f); /* GAN_BINARY_MASK_POSITIVE */
    }
}

/* v as a result of dtype `dt` holds it: rounded once, read back exactly. */
GAN_HD static inline float gan_ew_stored(enum gan_dtype dt, float v)
{
    return gan_bits_value(dt, gan_float_bits(dt, v));
}

/* gan_ew_binary for a result of dtype `dt`: ADD_LEAKY and ADD_RELU store their sum in dt
 * before the activation reads it, as ADD's result would be stored and read by the
 * activation after it. */
GAN_HD static inline float gan_ew_binary_into(enum gan_binary_op op, float a, float b,
                                              float alpha, enum gan_dtype dt)
{
    switch (op) {
    case GAN_BINARY_ADD_LEAKY: return gan_ew_leaky_relu(alpha, gan_ew_stored(dt, gan_ew_add(a, b)));
    case GAN_BINARY_ADD_RELU: return gan_ew_relu(gan_ew_stored(dt, gan_ew_add(a, b)));
    default: return gan_ew_binary(op, a, b, alpha);
    }
}

#endif
