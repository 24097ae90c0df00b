/* SPDX-License-Identifier: MIT */
/* cuda_backend.h — the CUDA backend's private state and the kernels each of its files
 * provides; backend.c gathers them into the gan_backend_ops table. C and C++ (nvcc) alike. */
#ifndef GANCTL_CUDA_BACKEND_H
#define GANCTL_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cublas_v2.h>
/* cublasLt.h declares a function without a prototype (cublasLtLoggerForceDisable()),
 * which the C files' -Wstrict-prototypes -Werror would refuse; C++ has no such warning. */
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
#include <cublasLt.h>
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic pop
#endif
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
    cublasLtHandle_t lt;           /* cuBLASLt, for FP8 products */
    cudnnHandle_t dnn;
    /* FP8 products need compute capability 8.9 (Ada, Hopper) or newer; on an older GPU
     * every FP8 slot refuses, naming the device (fp8.cu). */
    int fp8;
    int cc_major, cc_minor;
    char device_name[256];
    /* Staging copies and partial results of one call at a time, grown on demand;
     * work on the one stream is ordered, so reusing it call after call is safe. */
    void *scratch;
    size_t scratch_bytes;
    /* A second such area, for operands a kernel stages before it calls another kernel
     * that takes the scratch for itself (gemm_fp8's BF16 operands, read by cuda_gemm). */
    void *operand_scratch;
    size_t operand_scratch_bytes;
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

/* Address of byte `offset` of a buffer (backends/common/transfer.h resolves the memory
 * slots' ranges with it). */
static inline unsigned char *gan_buffer_at(const gan_buffer *buf, size_t offset)
{
    return (unsigned char *)buf->ptr + offset;
}

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
gan_backend_buffer_alloc_fn cuda_buffer_alloc;
gan_backend_buffer_free_fn cuda_buffer_free;
gan_backend_upload_fn cuda_upload;
gan_backend_download_fn cuda_download;
gan_backend_copy_fn cuda_copy;
gan_backend_synchronize_fn cuda_synchronize;
/* Device scratch of at least `bytes` (256-byte aligned), valid until the next call
 * that asks for scratch; `what` names the kernel for an out-of-memory message. */
gan_status cuda_scratch(gan_backend *be, const char *what, size_t bytes, void **out);
/* The operand scratch of at least `bytes`, likewise. */
gan_status cuda_operand_scratch(gan_backend *be, const char *what, size_t bytes, void **out);
/* cuDNN's workspace of at least `bytes` (NULL for 0). */
gan_status cuda_workspace(gan_backend *be, const char *what, size_t bytes, void **out);
/* Copies `bytes` (at most CUDA_RESULT_BYTES) of device results at be->results to
 * `host`, waiting for the stream: the one synchronisation of a call that returns
 * values. */
gan_status cuda_read_results(gan_backend *be, const char *what, void *host, size_t bytes);

/* ---------------------------------------------------------------- kernels */

/* gemm.c (cuBLAS) */
gan_backend_gemm_fn cuda_gemm;

/* elementwise.cu */
gan_backend_unary_fn cuda_unary;
gan_backend_binary_fn cuda_binary;
gan_backend_binary_alpha_fn cuda_binary_alpha;

/* reduce.cu */
gan_backend_reduce_fn cuda_reduce;

/* conv2d.c (cuDNN) */
gan_backend_conv2d_forward_fn cuda_conv2d_forward;
gan_backend_conv2d_backward_data_fn cuda_conv2d_backward_data;
gan_backend_conv2d_backward_filter_fn cuda_conv2d_backward_filter;
void cuda_conv_plans_free(gan_backend *be);

/* cast.cu */
gan_backend_cast_fn cuda_cast;
gan_backend_cast_flags_fn cuda_cast_flags;
/* Queues dst[i] = src[i] for n contiguous elements of float types, rounding to
 * nearest even; no checks, no counts (staging inside other kernels). */
gan_status cuda_convert(gan_backend *be, const void *src, enum gan_dtype src_type,
                        void *dst, enum gan_dtype dst_type, size_t n);

/* rng.cu */
gan_backend_rng_bits_fn cuda_rng_bits;
gan_backend_rng_uniform_fn cuda_rng_uniform;
gan_backend_rng_normal_fn cuda_rng_normal;

/* adam.cu */
gan_backend_adam_fn cuda_adam;

/* grad_stats.cu */
gan_backend_grad_stats_fn cuda_grad_stats;

/* fp8.cu: the FP8 products' element-wise kernels */
gan_backend_fp8_stats_fn cuda_fp8_stats;
gan_backend_fp8_quantize_fn cuda_fp8_quantize;
gan_backend_fp8_dequantize_fn cuda_fp8_dequantize;
/* The refusal of FP8 slot `slot` on a GPU without FP8 products: one line naming the
 * device and its compute capability. */
gan_status cuda_fp8_refused(gan_backend *be, const char *slot);
/* Queues y = q · (1/scale of its block) rounded once into float type yt, for an operand
 * of layout l (checked), or y = q itself when scale is NULL: fp8_dequantize without its
 * checks, for gemm_fp8's fallback. */
gan_status cuda_fp8_widen(gan_backend *be, const struct gan_fp8_layout *l, const void *q,
                          enum gan_dtype qt, const float *scale, void *y, enum gan_dtype yt);
/* Queues inv[0] = 1/scale_a[0], inv[1] = 1/scale_b[0] (device memory, FP32). */
gan_status cuda_fp8_inverses(gan_backend *be, const float *scale_a, const float *scale_b,
                             float *inv);

/* gemm_fp8.c (cuBLASLt, or a BF16 product) */
gan_backend_gemm_fp8_fn cuda_gemm_fp8;

#ifdef __cplusplus
}
#endif

/* The argument checks both backends share (they read struct gan_buffer above): every
 * view is checked on the host before anything is queued, so that a bad view is an
 * error, never a fault on the device. */
#include "../common/shape_checks.h"
#include "../common/ref_checks.h"
#endif
