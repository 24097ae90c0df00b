/* SPDX-License-Identifier: MIT */
/* fp8.cu — the CUDA backend's FP8 measurement, quantization and dequantization (backend.h:
 * fp8_stats, fp8_quantize, fp8_dequantize), one kernel each, and the refusal of all four
 * FP8 slots on a GPU older than compute capability 8.9. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/fp8_ops.h"
#include "../common/fp8_checks.h"

/* The results are the CPU backend's bit for bit: each element goes through the very
 * functions its passes are tested against (backends/common/fp8.h and fp8_ops.h), and
 * what is gathered across threads is integer (counts, histogram bins) or a maximum of
 * FP32 bits (amax, block maxima), which atomics combine exactly in any order. Each
 * warp combines its counts with shuffles first and one lane adds them to the device
 * counters; a block keeps its histogram in shared memory and adds the bins it touched. */

/* ---------------------------------------------------------------- refusal */

gan_status cuda_fp8_refused(gan_backend *be, const char *slot)
{
    return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: %s (compute capability %d.%d) has no FP8 products; they need "
                          "8.9 or newer (Ada, Hopper): choose another precision.mode on this "
                          "GPU, or the cpu backend, which emulates them",
                          slot, be->device_name, be->cc_major, be->cc_minor);
}

/* ---------------------------------------------------------------- warp sums */

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v)
{
    for (int w = 16; w > 0; w >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, w);
    return v;
}

__device__ __forceinline__ unsigned int warp_max(unsigned int v)
{
    for (int w = 16; w > 0; w >>= 1) {
        unsigned int o = __shfl_down_sync(0xffffffffu, v, w);
        v = o > v ? o : v;
    }
    return v;
}

/* The scale index of flat element i. */
__device__ __forceinline__ int64_t element_scale(const struct gan_fp8_layout &l, int64_t nb,
                                                 int64_t i)
{
    if (l.block <= 0)
        return 0;
    int64_t r = i / l.cols;
    return gan_fp8_scale_index(&l, nb, r, i - r * l.cols);
}

/* ---------------------------------------------------------------- fp8_stats */

/* Device results of one measurement, in scratch: counts, amax, histogram, then the
 * block maxima. */
struct stats_result {
    unsigned long long zeros, nonfinite;
    unsigned int amax_bits, pad;
    unsigned long long hist[GAN_FP8_LOG2_BINS];
};

struct stats_args {
    const unsigned char *x;
    enum gan_dtype xt;
    int64_t n, nb;
    struct gan_fp8_layout l;
    int histogram;
    struct stats_result *out;
    unsigned int *block_amax;       /* FP32 bits, or NULL */
};

__global__ void fp8_stats_kernel(stats_args a)
{
    __shared__ unsigned int hist[GAN_FP8_LOG2_BINS];
    if (a.histogram) {
        for (int b = (int)threadIdx.x; b < GAN_FP8_LOG2_BINS; b += (int)blockDim.x)
            hist[b] = 0;
        __syncthreads();
    }
    unsigned long long zeros = 0, nonfinite = 0;
    unsigned int amax = 0;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        uint32_t ax = gan_f32_bits(gan_load(a.x, a.xt, i)) & 0x7fffffffu;
        if (ax >= GAN_FP8_NONFINITE_BITS) {
            nonfinite++;
            continue;
        }
        if (ax == 0) {
            zeros++;
            continue;
        }
        amax = ax > amax ? ax : amax;
        if (a.histogram)
            atomicAdd(&hist[gan_fp8_log2_bin(ax)], 1u);
        if (a.block_amax)
            atomicMax(&a.block_amax[element_scale(a.l, a.nb, i)], ax);
    }
    zeros = warp_sum(zeros);
    nonfinite = warp_sum(nonfinite);
    amax = warp_max(amax);
    if ((threadIdx.x & 31u) == 0) {
        if (zeros)
            atomicAdd(&a.out->zeros, zeros);
        if (nonfinite)
            atomicAdd(&a.out->nonfinite, nonfinite);
        if (amax)
            atomicMax(&a.out->amax_bits, amax);
    }
    if (a.histogram) {
        __syncthreads();
        for (int b = (int)threadIdx.x; b < GAN_FP8_LOG2_BINS; b += (int)blockDim.x)
            if (hist[b])
                atomicAdd(&a.out->hist[b], (unsigned long long)hist[b]);
    }
}

static float float_of_bits(unsigned int b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

gan_status cuda_fp8_stats(gan_backend *be, const struct gan_fp8_layout *l,
                          const struct gan_ref *x, int histogram, float *block_amax,
                          struct gan_fp8_stats *stats)
{
    if (!be->fp8)
        return cuda_fp8_refused(be, "fp8_stats");
    int64_t n = 0;
    gan_status st = gan_fp8_check_stats(be->host, l, x, block_amax, stats, &n);
    if (st != GAN_OK || n == 0)
        return st;
    const int64_t count = gan_fp8_scale_count(l);
    const int blocked = block_amax && l->block > 0;
    const size_t head = (sizeof(struct stats_result) + 255) & ~(size_t)255;
    const size_t tail = blocked ? (size_t)count * sizeof(unsigned int) : 0;
    void *area = NULL;
    if ((st = cuda_enter(be)) != GAN_OK ||
        (st = cuda_scratch(be, "fp8_stats", head + tail, &area)) != GAN_OK)
        return st;
    if ((st = cuda_check_rt(be, "fp8_stats: cudaMemsetAsync",
                            cudaMemsetAsync(area, 0, head + tail, be->stream))) != GAN_OK)
        return st;
    stats_args a;
    memset(&a, 0, sizeof a);
    a.x = cuda_ref_ptr(x);
    a.xt = x->dtype;
    a.n = n;
    a.l = *l;
    a.nb = gan_fp8_blocks_along_k(l);
    a.histogram = histogram != 0;
    a.out = (struct stats_result *)area;
    a.block_amax = blocked ? (unsigned int *)((unsigned char *)area + head) : NULL;
    fp8_stats_kernel<<<cuda_blocks(n, (unsigned)be->sm_count * 8u), CUDA_THREADS, 0,
                       be->stream>>>(a);
    if ((st = cuda_launched(be, "fp8_stats")) != GAN_OK)
        return st;

    struct stats_result r;
    unsigned int *bits = NULL;
    if (blocked && !(bits = (unsigned int *)malloc(tail)))
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "fp8_stats: out of memory for %lld block maxima",
                              (long long)count);
    st = cuda_check_rt(be, "fp8_stats: reading the results back",
                       cudaMemcpyAsync(&r, area, sizeof r, cudaMemcpyDeviceToHost, be->stream));
    if (st == GAN_OK && blocked)
        st = cuda_check_rt(be, "fp8_stats: reading the block maxima back",
                           cudaMemcpyAsync(bits, a.block_amax, tail, cudaMemcpyDeviceToHost,
                                           be->stream));
    if (st == GAN_OK)
        st = cuda_check_rt(be, "fp8_stats: cudaStreamSynchronize",
                           cudaStreamSynchronize(be->stream));
    if (st == GAN_OK) {
        stats->zeros = r.zeros;
        stats->nonfinite = r.nonfinite;
        stats->amax = float_of_bits(r.amax_bits);
        if (histogram)
            memcpy(stats->log2_hist, r.hist, sizeof stats->log2_hist);
        for (int64_t i = 0; blocked && i < count; i++)
            block_amax[i] = float_of_bits(bits[i]);
        if (block_amax && !blocked)
            block_amax[0] = stats->amax;
    }
    free(bits);
    return st;
}

/* ---------------------------------------------------------------- fp8_quantize */

struct quantize_args {
    const unsigned char *x;
    enum gan_dtype xt, yt;
    uint8_t *y;
    int64_t n, nb;
    struct gan_fp8_layout l;
    const float *scale;
    int saturate;
    unsigned long long *counts;     /* overflow, underflow, subnormal, nonfinite; or NULL */
    unsigned int *amax_bits;
};

__global__ void fp8_quantize_kernel(quantize_args a)
{
    const struct gan_fp8_format f = gan_fp8_format_of(a.yt);
    struct gan_fp8_tally t = { 0, 0, 0, 0, 0 };
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float x = gan_load(a.x, a.xt, i);
        float p = gan_fmul_rn(x, a.scale[element_scale(a.l, a.nb, i)]);
        uint32_t q = gan_fp8_encode(&f, p, a.saturate);
        a.y[i] = (uint8_t)q;
        if (a.counts)
            gan_fp8_tally_element(&t, &f, gan_f32_bits(x), gan_f32_bits(p), q);
    }
    if (!a.counts)
        return;
    unsigned long long c[4] = { t.overflow, t.underflow, t.subnormal, t.nonfinite };
    for (int k = 0; k < 4; k++)
        c[k] = warp_sum(c[k]);
    unsigned int amax = warp_max(t.amax_bits);
    if ((threadIdx.x & 31u) == 0) {
        for (int k = 0; k < 4; k++)
            if (c[k])
                atomicAdd(a.counts + k, c[k]);
        if (amax)
            atomicMax(a.amax_bits, amax);
    }
}

gan_status cuda_fp8_quantize(gan_backend *be, const struct gan_fp8_layout *l,
                             const struct gan_ref *x, const struct gan_ref *scale,
                             uint32_t flags, const struct gan_ref *y,
                             struct gan_fp8_cast_stats *stats)
{
    if (!be->fp8)
        return cuda_fp8_refused(be, "fp8_quantize");
    int64_t n = 0;
    gan_status st = gan_fp8_check_quantize(be->host, l, x, scale, flags, y, stats, &n);
    if (st != GAN_OK || n == 0)
        return st;
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    quantize_args a;
    memset(&a, 0, sizeof a);
    a.x = cuda_ref_ptr(x);
    a.xt = x->dtype;
    a.y = cuda_ref_ptr(y);
    a.yt = y->dtype;
    a.n = n;
    a.nb = gan_fp8_blocks_along_k(l);
    a.l = *l;
    a.scale = (const float *)cuda_ref_ptr(scale);
    a.saturate = (flags & GAN_CAST_SATURATE) != 0;
    if (stats) {
        a.counts = (unsigned long long *)be->results;
        a.amax_bits = (unsigned int *)(a.counts + 4);
        st = cuda_check_rt(be, "fp8_quantize: cudaMemsetAsync",
                           cudaMemsetAsync(be->results, 0, 5 * sizeof(unsigned long long),
                                           be->stream));
        if (st != GAN_OK)
            return st;
    }
    fp8_quantize_kernel<<<cuda_blocks(n, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                          be->stream>>>(a);
    if ((st = cuda_launched(be, "fp8_quantize")) != GAN_OK || !stats)
        return st;
    unsigned long long got[5];
    if ((st = cuda_read_results(be, "fp8_quantize", got, sizeof got)) != GAN_OK)
        return st;
    stats->overflow = got[0];
    stats->underflow = got[1];
    stats->subnormal = got[2];
    stats->nonfinite = got[3];
    unsigned int amax_bits;
    memcpy(&amax_bits, &got[4], sizeof amax_bits);
    stats->amax = float_of_bits(amax_bits);
    return GAN_OK;
}

/* ---------------------------------------------------------------- fp8_dequantize */

struct dequantize_args {
    const uint8_t *q;
    enum gan_dtype qt, yt;
    unsigned char *y;
    int64_t n, nb;
    struct gan_fp8_layout l;
    const float *scale;             /* NULL: q as it is (an inverse of 1) */
};

__global__ void fp8_dequantize_kernel(dequantize_args a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float qv = gan_fp8_decode(a.qt, a.q[i]);
        float inv = a.scale ? __fdiv_rn(1.0f, a.scale[element_scale(a.l, a.nb, i)]) : 1.0f;
        gan_store_bits(a.y, a.yt, i, gan_fp8_dequantize_bits(qv, inv, a.yt));
    }
}

gan_status cuda_fp8_widen(gan_backend *be, const struct gan_fp8_layout *l, const void *q,
                          enum gan_dtype qt, const float *scale, void *y, enum gan_dtype yt)
{
    dequantize_args a;
    memset(&a, 0, sizeof a);
    a.q = (const uint8_t *)q;
    a.qt = qt;
    a.yt = yt;
    a.y = (unsigned char *)y;
    a.n = l->rows * l->cols;
    a.nb = gan_fp8_blocks_along_k(l);
    a.l = *l;
    a.scale = scale;
    if (a.n == 0)
        return GAN_OK;
    fp8_dequantize_kernel<<<cuda_blocks(a.n, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                            be->stream>>>(a);
    return cuda_launched(be, "fp8_dequantize");
}

gan_status cuda_fp8_dequantize(gan_backend *be, const struct gan_fp8_layout *l,
                               const struct gan_ref *q, const struct gan_ref *scale,
                               const struct gan_ref *y)
{
    if (!be->fp8)
        return cuda_fp8_refused(be, "fp8_dequantize");
    int64_t n = 0;
    gan_status st = gan_fp8_check_dequantize(be->host, l, q, scale, y, &n);
    if (st != GAN_OK || n == 0)
        return st;
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    return cuda_fp8_widen(be, l, cuda_ref_ptr(q), q->dtype,
                          (const float *)cuda_ref_ptr(scale), cuda_ref_ptr(y), y->dtype);
}

/* ---------------------------------------------------------------- scales of a product */

__global__ void fp8_inverses_kernel(const float *scale_a, const float *scale_b, float *inv)
{
    inv[0] = __fdiv_rn(1.0f, scale_a[0]);
    inv[1] = __fdiv_rn(1.0f, scale_b[0]);
}

gan_status cuda_fp8_inverses(gan_backend *be, const float *scale_a, const float *scale_b,
                             float *inv)
{
    fp8_inverses_kernel<<<1, 1, 0, be->stream>>>(scale_a, scale_b, inv);
    return cuda_launched(be, "gemm_fp8's inverse scales");
}
