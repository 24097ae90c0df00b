/* SPDX-License-Identifier: MIT */
/* cast.cu — the CUDA backend's element type conversion between F32, F16, BF16, the FP8
 * types, I32 and U32, rounding to nearest even (saturating FP8 on request), counting what
 * overflowed, underflowed or became subnormal. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/cast_ops.h"

/* The results are the CPU backend's bit for bit: each element goes through the very
 * functions its cast.c uses (backends/common/convert.h and cast_ops.h: the conversions,
 * the classification of stored bits, the counting rule, the integer rules). Counting
 * costs nothing extra in memory traffic: each thread classifies the values it has in
 * registers, a warp sums its counts with shuffles, and one lane adds them to four
 * device counters. The host waits only when it asked for the counts. */

struct cast_args {
    const unsigned char *x;
    unsigned char *y;
    enum gan_dtype xt, yt;
    int store;                      /* 0: an in-place cast of a float type to itself */
    int saturate;                   /* GAN_CAST_SATURATE: for an FP8 output */
    int64_t n;
    unsigned long long *counts;     /* overflow, underflow, subnormal, nonfinite; or NULL */
};

__global__ void cast_kernel(cast_args a)
{
    struct gan_cast_tally t = { 0, 0, 0, 0 };
    const int both_float = gan_is_cast_float(a.xt) && gan_is_cast_float(a.yt);
    const int same = a.xt == a.yt;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        if (same) {
            uint32_t b = gan_load_bits(a.x, a.xt, i);
            if (a.store)
                gan_store_bits(a.y, a.yt, i, b);
            if (both_float)
                gan_cast_tally_float(&t, gan_fclass(a.xt, b), gan_fclass(a.xt, b));
        } else if (both_float) {
            gan_cast_float_element(a.x, a.xt, a.y, a.yt, i, a.saturate, &t);
        } else {
            gan_cast_int_element(a.x, a.xt, a.y, a.yt, i, &t);
        }
    }
    if (!a.counts)
        return;
    unsigned long long c[4] = { t.overflow, t.underflow, t.subnormal, t.nonfinite };
    for (int k = 0; k < 4; k++)
        for (int w = 16; w > 0; w >>= 1)
            c[k] += __shfl_down_sync(0xffffffffu, c[k], w);
    if ((threadIdx.x & 31u) == 0)
        for (int k = 0; k < 4; k++)
            if (c[k])
                atomicAdd(a.counts + k, c[k]);
}

static gan_status cast_launch(gan_backend *be, const cast_args &a)
{
    unsigned blocks = cuda_blocks(a.n, (unsigned)be->sm_count * 32u);
    cast_kernel<<<blocks, CUDA_THREADS, 0, be->stream>>>(a);
    return cuda_launched(be, "cast");
}

gan_status cuda_convert(gan_backend *be, const void *src, enum gan_dtype src_type, void *dst,
                        enum gan_dtype dst_type, size_t n)
{
    if (!n)
        return GAN_OK;
    cast_args a;
    memset(&a, 0, sizeof a);
    a.x = (const unsigned char *)src;
    a.y = (unsigned char *)dst;
    a.xt = src_type;
    a.yt = dst_type;
    a.store = 1;
    a.n = (int64_t)n;
    return cast_launch(be, a);
}

gan_status cuda_cast_flags(gan_backend *be, size_t n, const struct gan_ref *x,
                           const struct gan_ref *y, uint32_t flags,
                           struct gan_cast_counts *counts)
{
    const struct gan_host *host = be->host;
    gan_status st = gan_check_cast_refs(host, n, x, y);
    if (st == GAN_OK)
        st = gan_check_cast_types(host, x, y, flags);
    if (st != GAN_OK)
        return st;
    struct gan_cast_counts c;
    memset(&c, 0, sizeof c);
    c.elements = n;
    if (n == 0) {
        if (counts)
            *counts = c;
        return GAN_OK;
    }
    const unsigned char *xp = cuda_ref_ptr(x);
    unsigned char *yp = cuda_ref_ptr(y);
    if ((st = gan_check_cast_overlap(host, n, x, xp, y, yp)) != GAN_OK)
        return st;
    size_t xbytes = n * gan_dtype_size(x->dtype);
    int same_view = xp == yp && x->dtype == y->dtype;
    /* Between equal types, with nothing to count (integers count nothing), a cast is
     * a plain device copy, or nothing at all in place. */
    int plain = x->dtype == y->dtype && (!counts || !gan_is_cast_float(x->dtype));
    st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    if (plain) {
        if (!same_view)
            st = cuda_check_rt(be, "cast: cudaMemcpyAsync",
                               cudaMemcpyAsync(yp, xp, xbytes, cudaMemcpyDeviceToDevice,
                                               be->stream));
        if (st == GAN_OK && counts)
            *counts = c;
        return st;
    }
    cast_args a;
    memset(&a, 0, sizeof a);
    a.x = xp;
    a.y = yp;
    a.xt = x->dtype;
    a.yt = y->dtype;
    a.store = !same_view;
    a.saturate = (flags & GAN_CAST_SATURATE) != 0;
    a.n = (int64_t)n;
    if (counts) {
        a.counts = (unsigned long long *)be->results;
        st = cuda_check_rt(be, "cast: cudaMemsetAsync",
                           cudaMemsetAsync(be->results, 0, 4 * sizeof(unsigned long long),
                                           be->stream));
        if (st != GAN_OK)
            return st;
    }
    if ((st = cast_launch(be, a)) != GAN_OK || !counts)
        return st;
    unsigned long long got[4];
    if ((st = cuda_read_results(be, "cast", got, sizeof got)) != GAN_OK)
        return st;
    c.overflow = got[0];
    c.underflow = got[1];
    c.subnormal = got[2];
    c.nonfinite = got[3];
    *counts = c;
    return GAN_OK;
}

gan_status cuda_cast(gan_backend *be, size_t n, const struct gan_ref *x,
                     const struct gan_ref *y, struct gan_cast_counts *counts)
{
    return cuda_cast_flags(be, n, x, y, 0, counts);
}
