/* SPDX-License-Identifier: MIT */
/* elementwise.cu — the CUDA backend's strided, broadcasting unary and binary kernels: one
 * thread per element, operands loaded as FP32, computed in FP32 and rounded once on store. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/elementwise_ops.h"

/* The per-element math is backends/common/elementwise_ops.h, the very functions the
 * CPU backend's loops call, compiled here for the device; 16-bit operands are loaded and
 * stored with backends/common/convert.h. The module is compiled with -fmad=false, so
 * a·b + c is two roundings here as on the CPU: every op that IEEE 754 rounds exactly
 * (+, −, ·, /, sqrt, the comparisons) gives the CPU's bits. tanh, sigmoid, exp and log
 * come from CUDA's math library, within 2 ulp of the exact value, and may differ from
 * glibc's in the last bits.
 *
 * Layout: the host merges dimensions first (gan_iter_plan), so a contiguous tensor
 * is one dimension and each thread does one division per remaining dimension. An
 * output that is the same view as an input is safe: the thread that reads an element
 * is the one that writes it. */

struct ew_args {
    int ndim;
    int op;
    float alpha;
    int64_t count;
    int64_t dim[GAN_MAX_DIMS];
    unsigned char *base[3];           /* element 0 of each operand's view */
    enum gan_dtype dtype[3];
    int64_t stride[3][GAN_MAX_DIMS];
};

static const char *const unary_names[GAN_UNARY_OP_COUNT] = {
    "unary(COPY)", "unary(NEG)", "unary(SCALE)", "unary(ADD_SCALAR)", "unary(RELU)",
    "unary(LEAKY_RELU)", "unary(STEP)", "unary(TANH)", "unary(SIGMOID)", "unary(SQUARE)",
    "unary(SQRT)", "unary(RSQRT)", "unary(RECIPROCAL)", "unary(EXP)", "unary(LOG)",
    "unary(ABS)", "unary(SIGN)", "unary(FILL)", "unary(LEAKY_STEP)"
};

static const char *const binary_names[GAN_BINARY_OP_COUNT] = {
    "binary(ADD)", "binary(SUB)", "binary(MUL)", "binary(DIV)", "binary(MAX)",
    "binary(MIN)", "binary(GREATER)", "binary(MASK_POSITIVE)", "binary(MASK_LEAKY)",
    "binary(ADD_LEAKY)", "binary(ADD_RELU)"
};

/* NOPS = 2: unary (x, y); 3: binary (a, b, y). */
template <int NOPS>
__global__ void ew_kernel(ew_args a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += step) {
        int64_t off[NOPS], rest = i;
#pragma unroll
        for (int k = 0; k < NOPS; k++)
            off[k] = 0;
        /* Row-major decomposition of i, innermost dimension first. */
        for (int d = a.ndim - 1; d >= 0; d--) {
            int64_t idx = rest;
            if (d > 0) {
                idx = rest % a.dim[d];
                rest /= a.dim[d];
            }
#pragma unroll
            for (int k = 0; k < NOPS; k++)
                off[k] += idx * a.stride[k][d];
        }
        float y;
        if (NOPS == 2) {
            float x = a.op == GAN_UNARY_FILL ? 0.0f : gan_load(a.base[0], a.dtype[0], off[0]);
            y = gan_ew_unary((enum gan_unary_op)a.op, a.alpha, x);
        } else {
            y = gan_ew_binary_into((enum gan_binary_op)a.op,
                                   gan_load(a.base[0], a.dtype[0], off[0]),
                                   gan_load(a.base[1], a.dtype[1], off[1]), a.alpha, a.dtype[2]);
        }
        gan_store(a.base[NOPS - 1], a.dtype[NOPS - 1], off[NOPS - 1], y);
    }
}

/* Used at create time: fails when this build has no kernel image for the device. */
extern "C" cudaError_t cuda_kernels_probe(void);
extern "C" cudaError_t cuda_kernels_probe(void)
{
    struct cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, ew_kernel<2>);
}

static gan_status ew_launch(gan_backend *be, const char *name, int nops, int op, float alpha,
                            const struct gan_iter *it, const struct gan_operand *const *ops)
{
    ew_args a;
    memset(&a, 0, sizeof a);
    a.ndim = it->ndim;
    a.op = op;
    a.alpha = alpha;
    a.count = it->count;
    for (int d = 0; d < it->ndim; d++)
        a.dim[d] = it->dim[d];
    for (int k = 0; k < nops; k++) {
        const struct gan_operand *o = ops[k];
        a.base[k] = (unsigned char *)o->buf->ptr + o->offset * gan_dtype_size(o->dtype);
        a.dtype[k] = o->dtype;
        for (int d = 0; d < it->ndim; d++)
            a.stride[k][d] = it->stride[k][d];
    }
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    unsigned blocks = cuda_blocks(it->count, (unsigned)be->sm_count * 32u);
    if (nops == 2)
        ew_kernel<2><<<blocks, CUDA_THREADS, 0, be->stream>>>(a);
    else
        ew_kernel<3><<<blocks, CUDA_THREADS, 0, be->stream>>>(a);
    return cuda_launched(be, name);
}

gan_status cuda_unary(gan_backend *be, enum gan_unary_op op, float alpha,
                      const struct gan_shape *shape, const struct gan_operand *x,
                      const struct gan_operand *y)
{
    return gan_unary_entry(be, be->host, "unary", unary_names, ew_launch, op, alpha, shape,
                           x, y);
}

gan_status cuda_binary(gan_backend *be, enum gan_binary_op op, const struct gan_shape *shape,
                       const struct gan_operand *a, const struct gan_operand *b,
                       const struct gan_operand *y)
{
    return gan_binary_entry(be, be->host, "binary", binary_names, ew_launch, op, 0, 0.0f,
                            shape, a, b, y);
}

gan_status cuda_binary_alpha(gan_backend *be, enum gan_binary_op op, float alpha,
                             const struct gan_shape *shape, const struct gan_operand *a,
                             const struct gan_operand *b, const struct gan_operand *y)
{
    return gan_binary_entry(be, be->host, "binary_alpha", binary_names, ew_launch, op, 1,
                            alpha, shape, a, b, y);
}
