/* SPDX-License-Identifier: MIT */
/* reduce.cu — the CUDA backend's reductions (sum, mean, max, min, sum of squares, abs-max)
 * along any set of axes, accumulated in FP32 in a fixed order, so that a call repeats bit for bit. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/reduce_checks.h"
#include "../common/reduce_ops.h"

/* Semantics, and each op's per-element math, are backends/common/reduce_ops.h's, the
 * functions the CPU backend calls; axes = 0 passes each element through the op's
 * transform.
 *
 * Work. The outputs (the kept dimensions) times the reduced elements are cut into
 * tasks (output o, split s), each a contiguous range of the reduced index:
 *   - thread tasks, one thread each, when neighbouring outputs are neighbours in x
 *     (a column reduction such as a bias gradient: the threads of a warp read one
 *     row together) or when there is little to reduce;
 *   - block tasks, 256 threads striding the range and a tree in shared memory, when
 *     the reduced elements are the contiguous ones (a row reduction).
 * With more than one split per output, the partial results (FP32) go to scratch and a
 * second kernel combines them in split order. Sums therefore run over at most a few
 * thousand elements sequentially and then pairwise; the order depends only on the
 * shape, never on timing, so the same call gives the same bits every time (no atomics). */

#define RED_THREAD_CHUNK 4096   /* most elements one thread sums alone */
#define RED_BLOCK_CHUNK 65536   /* most elements one block task covers */

struct red_args {
    enum gan_reduce_op op;
    int nk, nr;
    int64_t kdim[GAN_MAX_DIMS], kx[GAN_MAX_DIMS], ky[GAN_MAX_DIMS];
    int64_t rdim[GAN_MAX_DIMS], rx[GAN_MAX_DIMS];
    int64_t nout, rcount, splits, chunk;
    const unsigned char *x;       /* element 0 of x's view */
    unsigned char *y;             /* element 0 of y's view */
    enum gan_dtype xt, yt;
    float *partial;               /* nout · splits results when splits > 1 */
};

static const char *const reduce_names[GAN_REDUCE_OP_COUNT] = {
    "reduce(SUM)", "reduce(MEAN)", "reduce(MAX)", "reduce(MIN)", "reduce(SUM_SQUARES)",
    "reduce(ABS_MAX)"
};

/* x and y offsets of output o (row-major over the kept dimensions). */
__device__ __forceinline__ void out_offsets(const red_args &a, int64_t o, int64_t *xo,
                                            int64_t *yo)
{
    int64_t x = 0, y = 0;
    for (int d = a.nk - 1; d >= 0; d--) {
        int64_t idx = o;
        if (d > 0) {
            idx = o % a.kdim[d];
            o /= a.kdim[d];
        }
        x += idx * a.kx[d];
        y += idx * a.ky[d];
    }
    *xo = x;
    *yo = y;
}

/* x offset of reduced element r (row-major over the reduced dimensions). */
__device__ __forceinline__ int64_t red_offset(const red_args &a, int64_t r)
{
    int64_t x = 0;
    for (int d = a.nr - 1; d >= 0; d--) {
        int64_t idx = r;
        if (d > 0) {
            idx = r % a.rdim[d];
            r /= a.rdim[d];
        }
        x += idx * a.rx[d];
    }
    return x;
}

/* Where a task's result goes: the output itself, or its slot among the partials. */
__device__ __forceinline__ void red_deliver(const red_args &a, int64_t o, int64_t s, int64_t yo,
                                            float acc)
{
    if (a.splits == 1)
        gan_store(a.y, a.yt, yo, gan_red_finish(a.op, acc, a.rcount));
    else
        a.partial[o * a.splits + s] = acc;
}

/* Thread tasks, numbered split-major (task = s · nout + o) so that the threads of a
 * warp take neighbouring outputs of the same split. */
__global__ void red_thread_tasks(red_args a)
{
    const int64_t tasks = a.nout * a.splits, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < tasks; t += step) {
        int64_t s = t / a.nout, o = t % a.nout, xo, yo;
        out_offsets(a, o, &xo, &yo);
        int64_t lo = s * a.chunk, hi = lo + a.chunk < a.rcount ? lo + a.chunk : a.rcount;
        float acc = gan_red_identity(a.op);
        for (int64_t r = lo; r < hi; r++)
            acc = gan_red_combine(
                a.op, acc, gan_red_transform(a.op, gan_load(a.x, a.xt, xo + red_offset(a, r))));
        red_deliver(a, o, s, yo, acc);
    }
}

/* Block tasks (task = o · splits + s): the block's threads stride the range, then
 * combine their results in a fixed tree. */
__global__ void red_block_tasks(red_args a)
{
    __shared__ float sh[CUDA_THREADS];
    const int64_t tasks = a.nout * a.splits;
    const unsigned tid = threadIdx.x;
    for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
        int64_t o = t / a.splits, s = t % a.splits, xo, yo;
        out_offsets(a, o, &xo, &yo);
        int64_t lo = s * a.chunk, hi = lo + a.chunk < a.rcount ? lo + a.chunk : a.rcount;
        float acc = gan_red_identity(a.op);
        for (int64_t r = lo + tid; r < hi; r += CUDA_THREADS)
            acc = gan_red_combine(
                a.op, acc, gan_red_transform(a.op, gan_load(a.x, a.xt, xo + red_offset(a, r))));
        sh[tid] = acc;
        __syncthreads();
        for (unsigned w = CUDA_THREADS / 2; w > 0; w >>= 1) {
            if (tid < w)
                sh[tid] = gan_red_combine(a.op, sh[tid], sh[tid + w]);
            __syncthreads();
        }
        if (tid == 0)
            red_deliver(a, o, s, yo, sh[0]);
        __syncthreads(); /* sh is reused by the block's next task */
    }
}

/* Combines each output's partial results, in split order, and stores it. */
__global__ void red_finish_partials(red_args a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < a.nout; o += step) {
        int64_t xo, yo;
        out_offsets(a, o, &xo, &yo);
        const float *p = a.partial + o * a.splits;
        float acc = p[0];
        for (int64_t s = 1; s < a.splits; s++)
            acc = gan_red_combine(a.op, acc, p[s]);
        gan_store(a.y, a.yt, yo, gan_red_finish(a.op, acc, a.rcount));
    }
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

gan_status cuda_reduce(gan_backend *be, enum gan_reduce_op op, const struct gan_shape *shape,
                       const struct gan_operand *x, uint32_t axes,
                       const struct gan_operand *y)
{
    const struct gan_host *host = be->host;
    if ((unsigned)op >= GAN_REDUCE_OP_COUNT)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "reduce: op %d is not a gan_reduce_op (0 to %d)", (int)op,
                          GAN_REDUCE_OP_COUNT - 1);
    const char *fn = reduce_names[op];
    int64_t rcount = 0, kcount = 0;
    gan_status st = gan_reduce_check(host, fn, shape, x, axes, y, &rcount, &kcount);
    if (st != GAN_OK)
        return st;
    if (kcount == 0)
        return GAN_OK; /* no outputs */

    red_args a;
    memset(&a, 0, sizeof a);
    a.op = op;
    a.nout = kcount;
    a.rcount = rcount;
    a.nk = gan_reduce_group(shape, axes, 0, x, y, a.kdim, a.kx, a.ky);
    a.nr = rcount ? gan_reduce_group(shape, axes, 1, x, y, a.rdim, a.rx, NULL) : 0;
    /* x needs no buffer when nothing is reduced from it (an empty reduced dimension) */
    a.x = x->buf ? (const unsigned char *)x->buf->ptr + x->offset * gan_dtype_size(x->dtype)
                 : NULL;
    a.y = (unsigned char *)y->buf->ptr + y->offset * gan_dtype_size(y->dtype);
    a.xt = x->dtype;
    a.yt = y->dtype;

    int thread_tasks = rcount <= 32 ||
                       (a.nk > 0 && (a.kx[a.nk - 1] == 1 || a.kx[a.nk - 1] == -1));
    /* Enough tasks to fill the GPU (about 64 Ki threads, or 1 Ki blocks) where the
     * outputs alone do not, each at least 32 (or 4096) elements long; and never more
     * than RED_THREAD_CHUNK (RED_BLOCK_CHUNK) elements in one task. */
    if (thread_tasks)
        a.splits = max64(ceil_div(rcount, RED_THREAD_CHUNK),
                         min64(ceil_div(rcount, 32), 65536 / a.nout));
    else
        a.splits = max64(ceil_div(rcount, RED_BLOCK_CHUNK),
                         min64(ceil_div(rcount, 4096), 1024 / a.nout));
    a.splits = max64(a.splits, 1);
    a.chunk = rcount ? ceil_div(rcount, a.splits) : 0;

    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    if (a.splits > 1) {
        void *p = NULL;
        if ((st = cuda_scratch(be, fn, (size_t)(a.nout * a.splits) * sizeof(float), &p)) != GAN_OK)
            return st;
        a.partial = (float *)p;
    }
    const int64_t tasks = a.nout * a.splits;
    unsigned cap = (unsigned)be->sm_count * 32u;
    if (thread_tasks)
        red_thread_tasks<<<cuda_blocks(tasks, cap), CUDA_THREADS, 0, be->stream>>>(a);
    else
        red_block_tasks<<<(unsigned)(tasks < (int64_t)cap ? tasks : cap), CUDA_THREADS, 0,
                          be->stream>>>(a);
    if ((st = cuda_launched(be, fn)) != GAN_OK || a.splits == 1)
        return st;
    red_finish_partials<<<cuda_blocks(a.nout, cap), CUDA_THREADS, 0, be->stream>>>(a);
    return cuda_launched(be, fn);
}
