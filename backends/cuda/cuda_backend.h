/* SPDX-License-Identifier: MIT */
/* cuda_backend.h — the CUDA backend's private state and the kernels each of its files
 * provides; backend.c gathers them into the gan_backend_ops table. C and C++ (nvcc) alike. */
#ifndef GANCTL_CUDA_BACKEND_H
#define GANCTL_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/plugin.h>
#include <ganctl/backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory. `ptr` is never NULL, even for an empty buffer, so that a ref to one
 * is a valid (if unusable) address, as on the CPU. */
struct gan_buffer {
    size_t bytes;
    void *ptr;
};

struct cuda_conv_plan; /* conv2d.c: a cached cuDNN set-up for one convolution */

/* Threads per block of the backend's own kernels. */
#define CUDA_THREADS 256

struct gan_backend {
    const struct gan_host *host;
    int device;
    int pools;                     /* stream-ordered allocation (cudaMallocAsync) works */
    int sm_count;
    int deterministic;             /* prefer deterministic cuDNN algorithms */
    cudaStream_t stream;           /* every kernel, copy and library call is queued here */
    cudaMemPool_t pool;            /* the instance's own pool for buffers (when `pools`) */
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    /* Staging copies and partial results of one call at a time, grown on demand;
     * work on the one stream is ordered, so reusing it call after call is safe. */
    void *scratch;
    size_t scratch_bytes;
    /* cuDNN's workspace, grown on demand up to workspace_limit. */
    void *workspace;
    size_t workspace_bytes, workspace_limit;
    /* Small results of reductions the host reads (cast counts, gradient statistics):
     * written on the device, copied to the page-locked `pinned` and read after one
     * stream synchronisation. CUDA_RESULT_BYTES each. */
    void *results;
    void *pinned;
    struct cuda_conv_plan *plans;
    char description[1024];         /* describe(): room for any device name and versions */
};

#define CUDA_RESULT_BYTES ((size_t)256)

/* Address of element `offset` of a ref or operand. */
static inline unsigned char *cuda_ref_ptr(const struct gan_ref *r)
{
    return (unsigned char *)r->buf->ptr + r->offset * gan_dtype_size(r->dtype);
}

/* ---------------------------------------------------------------- backend.c */

/* Turn a failed CUDA runtime, cuBLAS or cuDNN call into a status, with the call and
 * the library's own message. GAN_OK when the call succeeded. */
gan_status cuda_check_rt(gan_backend *be, const char *call, cudaError_t err);
gan_status cuda_check_blas(gan_backend *be, const char *call, cublasStatus_t err);
gan_status cuda_check_dnn(gan_backend *be, const char *call, cudnnStatus_t err);
/* Makes the instance's device current for the calling thread (a thread starts on
 * device 0; the host may call from any thread). */
gan_status cuda_enter(gan_backend *be);
/* After a kernel launch: reports a launch that failed (bad configuration, no kernel
 * image for this device), named by `kernel`. */
gan_status cuda_launched(gan_backend *be, const char *kernel);
/* Blocks for `n` elements at CUDA_THREADS threads each, at most `cap` (the kernels
 * loop over the rest); 1 for n = 0. */
unsigned cuda_blocks(int64_t n, unsigned cap);

/* ---------------------------------------------------------------- memory.c */
gan_status cuda_device_alloc(gan_backend *be, size_t bytes, void **out);
void cuda_device_free(gan_backend *be, void *ptr);
gan_status cuda_buffer_alloc(gan_backend *be, size_t bytes, gan_buffer **out);
void cuda_buffer_free(gan_backend *be, gan_buffer *buf);
gan_status cuda_upload(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                       const void *src, size_t bytes);
gan_status cuda_download(gan_backend *be, void *dst, gan_buffer *src,
                         size_t src_byte_offset, size_t bytes);
gan_status cuda_copy(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                     gan_buffer *src, size_t src_byte_offset, size_t bytes);
gan_status cuda_synchronize(gan_backend *be);
/* Device scratch of at least `bytes` (256-byte aligned), valid until the next call
 * that asks for scratch; `what` names the kernel for an out-of-memory message. */
gan_status cuda_scratch(gan_backend *be, const char *what, size_t bytes, void **out);
/* cuDNN's workspace of at least `bytes` (NULL for 0). */
gan_status cuda_workspace(gan_backend *be, const char *what, size_t bytes, void **out);
/* Copies `bytes` (at most CUDA_RESULT_BYTES) of device results at be->results to
 * `host`, waiting for the stream: the one synchronisation of a call that returns
 * values. */
gan_status cuda_read_results(gan_backend *be, const char *what, void *host, size_t bytes);

/* ---------------------------------------------------------------- kernels */

/* gemm.c (cuBLAS) */
gan_status cuda_gemm(gan_backend *be, const struct gan_gemm *g);

/* elementwise.cu */
gan_status cuda_unary(gan_backend *be, enum gan_unary_op op, float alpha,
                      const struct gan_shape *shape, const struct gan_operand *x,
                      const struct gan_operand *y);
gan_status cuda_binary(gan_backend *be, enum gan_binary_op op, const struct gan_shape *shape,
                       const struct gan_operand *a, const struct gan_operand *b,
                       const struct gan_operand *y);

/* reduce.cu */
gan_status cuda_reduce(gan_backend *be, enum gan_reduce_op op, const struct gan_shape *shape,
                       const struct gan_operand *x, uint32_t axes,
                       const struct gan_operand *y);

/* conv2d.c (cuDNN) */
gan_status cuda_conv2d_forward(gan_backend *be, const struct gan_conv2d *c,
                               const struct gan_ref *x, const struct gan_ref *w,
                               float beta, const struct gan_ref *y);
gan_status cuda_conv2d_backward_data(gan_backend *be, const struct gan_conv2d *c,
                                     const struct gan_ref *dy, const struct gan_ref *w,
                                     float beta, const struct gan_ref *dx);
gan_status cuda_conv2d_backward_filter(gan_backend *be, const struct gan_conv2d *c,
                                       const struct gan_ref *x, const struct gan_ref *dy,
                                       float beta, const struct gan_ref *dw);
void cuda_conv_plans_free(gan_backend *be);

/* cast.cu */
gan_status cuda_cast(gan_backend *be, size_t n, const struct gan_ref *x,
                     const struct gan_ref *y, struct gan_cast_counts *counts);
/* Queues dst[i] = src[i] for n contiguous elements of float types, rounding to
 * nearest even; no checks, no counts (staging inside other kernels). */
gan_status cuda_convert(gan_backend *be, const void *src, enum gan_dtype src_type,
                        void *dst, enum gan_dtype dst_type, size_t n);

/* rng.cu */
gan_status cuda_rng_bits(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                         const struct gan_ref *y);
gan_status cuda_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                            float low, float high, const struct gan_ref *y);
gan_status cuda_rng_normal(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                           float mean, float std, const struct gan_ref *y);

/* adam.cu */
gan_status cuda_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                     const struct gan_ref *param, const struct gan_ref *grad,
                     const struct gan_ref *m, const struct gan_ref *v,
                     const struct gan_ref *param_copy);

/* grad_stats.cu */
gan_status cuda_grad_stats(gan_backend *be, size_t n, const struct gan_ref *x,
                           float inv_scale, const struct gan_ref *unscaled,
                           struct gan_grad_stats *stats);

#ifdef __cplusplus
}
#endif

/* The argument checks both backends share (they read struct gan_buffer above): every
 * view is checked on the host before anything is queued, so that a bad view is an
 * error, never a fault on the device. */
#include "../common/shape_checks.h"
#include "../common/ref_checks.h"
#endif
