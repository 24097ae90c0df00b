/* SPDX-License-Identifier: MIT */
/* grad_stats.cu — the CUDA backend's gradient statistics (non-finite, zero and FP16-subnormal
 * counts; absmax, Σu², min |u| of u = x · inv_scale), fused with the unscale; one pass, one wait. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"

/* What is measured is the CPU backend's (backends/cpu/grad_stats.c): the counts look
 * at x as stored; absmax, Σu² and min |u| look at u = |x|·|inv_scale| formed in double
 * over finite non-zero x; the fused output is fl32(x · inv_scale) for finite x and x
 * itself for inf and NaN. Counts, absmax and min |u| are exact, so they equal the
 * CPU's; Σu² is a double sum in another order, equal to the CPU's within a few ulp of
 * double.
 *
 * Two kernels and one wait: a fixed grid (its size depends on n only) in which each
 * block reduces its elements to one partial record, then one block that combines the
 * records in a fixed tree and writes the result where the host reads it. No atomics,
 * so the same gradient gives the same bits every time. */

#define GS_MAX_BLOCKS 1024

struct gs_record {
    unsigned long long nonfinite, zeros, subnormal, nonzero;
    double absmax, minnz, sum;
};

struct gs_args {
    const unsigned char *x;
    unsigned char *u;                 /* the fused unscaled output, or NULL */
    enum gan_dtype xt, ut;
    int64_t n;
    float inv;
    double inv_abs;
    struct gs_record *part;           /* one per block of the first kernel */
    struct gs_record *out;
};

__device__ __forceinline__ void gs_merge(gs_record *a, const gs_record *b)
{
    a->nonfinite += b->nonfinite;
    a->zeros += b->zeros;
    a->subnormal += b->subnormal;
    a->nonzero += b->nonzero;
    a->absmax = b->absmax > a->absmax ? b->absmax : a->absmax;
    a->minnz = b->minnz < a->minnz ? b->minnz : a->minnz;
    a->sum += b->sum;
}

/* Combines the block's records in shared memory (a fixed tree); thread 0 gets it. */
__device__ __forceinline__ void gs_block_reduce(gs_record *sh, const gs_record &mine)
{
    const unsigned tid = threadIdx.x;
    sh[tid] = mine;
    __syncthreads();
    for (unsigned w = CUDA_THREADS / 2; w > 0; w >>= 1) {
        if (tid < w)
            gs_merge(&sh[tid], &sh[tid + w]);
        __syncthreads();
    }
}

__device__ __forceinline__ gs_record gs_empty(void)
{
    gs_record r;
    r.nonfinite = r.zeros = r.subnormal = r.nonzero = 0;
    r.absmax = 0.0;
    r.minnz = INFINITY;
    r.sum = 0.0;
    return r;
}

__global__ void gs_blocks(gs_args a)
{
    __shared__ gs_record sh[CUDA_THREADS];
    gs_record r = gs_empty();
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float xi = gan_load(a.x, a.xt, i);
        if (!isfinite(xi)) {
            r.nonfinite++;
            if (a.u)
                gan_store(a.u, a.ut, i, xi);
            continue;
        }
        if (a.u)
            gan_store(a.u, a.ut, i, xi * a.inv);
        float ax = fabsf(xi);
        if (ax == 0.0f) {
            r.zeros++;
            continue;
        }
        if (ax < 0x1p-14f)
            r.subnormal++;
        double au = (double)ax * a.inv_abs; /* exact: two 24-bit significands */
        if (au == 0.0)
            continue; /* inv_scale is 0: u is zero everywhere */
        r.nonzero++;
        r.absmax = au > r.absmax ? au : r.absmax;
        r.minnz = au < r.minnz ? au : r.minnz;
        r.sum += au * au;
    }
    gs_block_reduce(sh, r);
    if (threadIdx.x == 0)
        a.part[blockIdx.x] = sh[0];
}

__global__ void gs_final(gs_args a, int parts)
{
    __shared__ gs_record sh[CUDA_THREADS];
    gs_record r = gs_empty();
    for (int p = (int)threadIdx.x; p < parts; p += CUDA_THREADS)
        gs_merge(&r, &a.part[p]);
    gs_block_reduce(sh, r);
    if (threadIdx.x == 0)
        *a.out = sh[0];
}

gan_status cuda_grad_stats(gan_backend *be, size_t n, const struct gan_ref *x,
                           float inv_scale, const struct gan_ref *unscaled,
                           struct gan_grad_stats *stats)
{
    const struct gan_host *host = be->host;
    if (!stats)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "grad_stats: stats is NULL; pass a struct gan_grad_stats to fill");
    if (isnan(inv_scale))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "grad_stats: inv_scale is NaN; pass 1 / loss scale");
    gan_status st = gan_check_ref(be->host, "grad_stats", "x", x, n, GAN_ANY_FLOAT);
    int fused = unscaled && unscaled->buf;
    if (st == GAN_OK && fused)
        st = gan_check_ref(be->host, "grad_stats", "unscaled", unscaled, n, GAN_ANY_FLOAT);
    if (st != GAN_OK)
        return st;
    memset(stats, 0, sizeof *stats);
    stats->elements = n;
    if (n == 0)
        return GAN_OK;

    gs_args a;
    memset(&a, 0, sizeof a);
    a.x = cuda_ref_ptr(x);
    a.xt = x->dtype;
    a.u = fused ? cuda_ref_ptr(unscaled) : NULL;
    a.ut = fused ? unscaled->dtype : GAN_F32;
    a.n = (int64_t)n;
    a.inv = inv_scale;
    a.inv_abs = fabs((double)inv_scale);
    a.out = (gs_record *)be->results;
    unsigned blocks = cuda_blocks(a.n, GS_MAX_BLOCKS);
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    void *part = NULL;
    if ((st = cuda_scratch(be, "grad_stats", blocks * sizeof(gs_record), &part)) != GAN_OK)
        return st;
    a.part = (gs_record *)part;
    gs_blocks<<<blocks, CUDA_THREADS, 0, be->stream>>>(a);
    if ((st = cuda_launched(be, "grad_stats")) != GAN_OK)
        return st;
    gs_final<<<1, CUDA_THREADS, 0, be->stream>>>(a, (int)blocks);
    if ((st = cuda_launched(be, "grad_stats")) != GAN_OK)
        return st;
    gs_record r;
    if ((st = cuda_read_results(be, "grad_stats", &r, sizeof r)) != GAN_OK)
        return st;
    stats->nonfinite = r.nonfinite;
    stats->zeros = r.zeros;
    stats->subnormal = r.subnormal;
    stats->absmax = r.absmax;
    stats->sum_squares = r.sum;
    stats->min_nonzero = r.nonzero ? r.minnz : 0.0;
    return GAN_OK;
}
