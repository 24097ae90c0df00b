/* SPDX-License-Identifier: MIT */
/* cast.cu — the CUDA backend's element type conversion between F32, F16, BF16, I32 and U32,
 * rounding to nearest even, counting what overflowed, underflowed or became subnormal. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "convert.cuh"

/* The results are the CPU backend's bit for bit (backends/cpu/cast.c): the same
 * conversions (convert.cuh), the same classification of stored bits, the same integer
 * rules (saturation counted as overflow, NaN to 0 and inf saturated counted as
 * non-finite input, integers rounded to odd before a 16-bit float so that they round
 * once). Counting costs nothing extra in memory traffic: each thread classifies the
 * values it has in registers, a warp sums its counts with shuffles, and one lane adds
 * them to four device counters. The host waits only when it asked for the counts. */

struct cast_args {
    const unsigned char *x;
    unsigned char *y;
    int xt, yt;
    int store;                      /* 0: an in-place cast of a float type to itself */
    int64_t n;
    unsigned long long *counts;     /* overflow, underflow, subnormal, nonfinite; or NULL */
};

enum { FC_ZERO, FC_SUBNORMAL, FC_NORMAL, FC_INF, FC_NAN };

/* The class of a stored float from its bits, so that no flush-to-zero can hide a
 * subnormal. */
__device__ __forceinline__ int fclass(uint32_t bits, int dtype)
{
    uint32_t exp, exp_max, mant;
    if (dtype == GAN_F16) {
        exp = (bits >> 10) & 0x1fu;
        exp_max = 0x1fu;
        mant = bits & 0x3ffu;
    } else if (dtype == GAN_BF16) {
        exp = (bits >> 7) & 0xffu;
        exp_max = 0xffu;
        mant = bits & 0x7fu;
    } else {
        exp = (bits >> 23) & 0xffu;
        exp_max = 0xffu;
        mant = bits & 0x7fffffu;
    }
    if (exp == 0)
        return mant ? FC_SUBNORMAL : FC_ZERO;
    if (exp == exp_max)
        return mant ? FC_NAN : FC_INF;
    return FC_NORMAL;
}

__device__ __forceinline__ int dev_is_16bit(int dtype)
{
    return dtype == GAN_F16 || dtype == GAN_BF16;
}

__device__ __forceinline__ int dev_is_float(int dtype)
{
    return dtype == GAN_F32 || dev_is_16bit(dtype);
}

__device__ __forceinline__ uint32_t load_bits(const unsigned char *p, int dtype, int64_t i)
{
    if (dev_is_16bit(dtype))
        return ((const uint16_t *)p)[i];
    return ((const uint32_t *)p)[i];
}

__device__ __forceinline__ void store_bits(unsigned char *p, int dtype, int64_t i, uint32_t b)
{
    if (dev_is_16bit(dtype))
        ((uint16_t *)p)[i] = (uint16_t)b;
    else
        ((uint32_t *)p)[i] = b;
}

/* The stored bits of FP32 value v in float type `dtype`, rounded to nearest even. */
__device__ __forceinline__ uint32_t float_bits(int dtype, float v)
{
    switch (dtype) {
    case GAN_F16: return dev_f32_to_f16(v);
    case GAN_BF16: return dev_f32_to_bf16(v);
    default: return __float_as_uint(v);
    }
}

__device__ __forceinline__ float bits_value(int dtype, uint32_t b)
{
    switch (dtype) {
    case GAN_F16: return dev_f16_to_f32((uint16_t)b);
    case GAN_BF16: return dev_bf16_to_f32((uint16_t)b);
    default: return __uint_as_float(b);
    }
}

/* u as FP32 rounded to odd: truncated to 24 significant bits, the last one set when
 * anything was cut off; rounding that to FP16 or BF16 is then rounding u once. */
__device__ __forceinline__ float u32_to_f32_odd(uint32_t u)
{
    if (u < (1u << 24))
        return (float)u;
    int shift = 8 - __clz(u);
    uint32_t t = (u >> shift) << shift;
    if (t != u)
        t |= 1u << shift;
    return (float)t;
}

/* One element with an integer on either side; counts go to c[0..3] as in cast_args. */
__device__ __forceinline__ void int_convert(const cast_args &a, int64_t i,
                                            unsigned long long c[4])
{
    const int x_float = dev_is_float(a.xt);
    const int64_t lo = a.yt == GAN_I32 ? INT32_MIN : 0;
    const int64_t hi = a.yt == GAN_I32 ? (int64_t)INT32_MAX : (int64_t)UINT32_MAX;
    if (dev_is_float(a.yt)) {
        /* integer → float: |v| < 2^32 never underflows or becomes subnormal */
        int64_t v = a.xt == GAN_I32 ? (int64_t)((const int32_t *)a.x)[i]
                                    : (int64_t)((const uint32_t *)a.x)[i];
        float f;
        if (a.yt == GAN_F32) {
            f = (float)v;
        } else {
            uint32_t mag = v < 0 ? (uint32_t)(-v) : (uint32_t)v;
            f = u32_to_f32_odd(mag);
            f = v < 0 ? -f : f;
        }
        uint32_t b = float_bits(a.yt, f);
        store_bits(a.y, a.yt, i, b);
        c[0] += isinf(bits_value(a.yt, b)) ? 1u : 0u;
        return;
    }
    int64_t v;
    if (x_float) {
        float f = dev_load(a.x, a.xt, i);
        if (isnan(f)) {
            c[3]++;
            v = 0;
        } else if (isinf(f)) {
            c[3]++;
            v = f > 0 ? hi : lo;
        } else {
            /* nearest even; values this large are integers already */
            double r = fabsf(f) < 0x1p62f ? nearbyint((double)f) : (double)f;
            if (r < (double)lo || r > (double)hi) {
                c[0]++;
                v = r < (double)lo ? lo : hi;
            } else {
                v = (int64_t)r;
                if (v == 0 && f != 0.0f)
                    c[1]++;
            }
        }
    } else {
        v = a.xt == GAN_I32 ? (int64_t)((const int32_t *)a.x)[i]
                            : (int64_t)((const uint32_t *)a.x)[i];
        if (v < lo || v > hi) {
            c[0]++;
            v = v < lo ? lo : hi;
        }
    }
    if (a.yt == GAN_I32)
        ((int32_t *)a.y)[i] = (int32_t)v;
    else
        ((uint32_t *)a.y)[i] = (uint32_t)v;
}

__global__ void cast_kernel(cast_args a)
{
    unsigned long long c[4] = { 0, 0, 0, 0 };
    const int both_float = dev_is_float(a.xt) && dev_is_float(a.yt);
    const int same = a.xt == a.yt;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        if (same) {
            uint32_t b = load_bits(a.x, a.xt, i);
            if (a.store)
                store_bits(a.y, a.yt, i, b);
            if (both_float) {
                int cl = fclass(b, a.xt);
                c[2] += cl == FC_SUBNORMAL;
                c[3] += cl >= FC_INF;
            }
        } else if (both_float) {
            uint32_t xb = load_bits(a.x, a.xt, i);
            uint32_t yb = float_bits(a.yt, bits_value(a.xt, xb));
            store_bits(a.y, a.yt, i, yb);
            int cx = fclass(xb, a.xt), cy = fclass(yb, a.yt);
            c[0] += cx < FC_INF && cy == FC_INF;
            c[1] += (cx == FC_SUBNORMAL || cx == FC_NORMAL) && cy == FC_ZERO;
            c[2] += cy == FC_SUBNORMAL;
            c[3] += cx >= FC_INF;
        } else {
            int_convert(a, i, c);
        }
    }
    if (!a.counts)
        return;
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
    a.xt = (int)src_type;
    a.yt = (int)dst_type;
    a.store = 1;
    a.n = (int64_t)n;
    return cast_launch(be, a);
}

gan_status cuda_cast(gan_backend *be, size_t n, const struct gan_ref *x,
                     const struct gan_ref *y, struct gan_cast_counts *counts)
{
    const struct gan_host *host = be->host;
    for (int k = 0; k < 2; k++) {
        const struct gan_ref *r = k ? y : x;
        const char *name = k ? "y" : "x";
        if (!r)
            return host->fail(host->ctx, GAN_ERR_INVALID, "cast: %s is NULL; pass a gan_ref",
                              name);
        gan_status st = n ? cuda_check_ref(be, "cast", name, r, n, CUDA_ANY_DTYPE)
                          : (gan_dtype_size(r->dtype) ? GAN_OK
                             : host->fail(host->ctx, GAN_ERR_INVALID,
                                          "cast: %s has dtype %d, which is not a gan_dtype",
                                          name, (int)r->dtype));
        if (st != GAN_OK)
            return st;
    }
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
    size_t xbytes = n * gan_dtype_size(x->dtype), ybytes = n * gan_dtype_size(y->dtype);
    int same_view = xp == yp && x->dtype == y->dtype;
    if (!same_view && xp < yp + ybytes && yp < xp + xbytes)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "cast: x (%s at element %zu) and y (%s at element %zu) overlap in "
                          "one buffer; cast into a separate buffer, or in place with the "
                          "same view and dtype", gan_dtype_name(x->dtype), x->offset,
                          gan_dtype_name(y->dtype), y->offset);
    /* Between equal types, with nothing to count (integers count nothing), a cast is
     * a plain device copy, or nothing at all in place. */
    int plain = x->dtype == y->dtype && (!counts || !cuda_is_float(x->dtype));
    gan_status st = cuda_enter(be);
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
    a.xt = (int)x->dtype;
    a.yt = (int)y->dtype;
    a.store = !same_view;
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
