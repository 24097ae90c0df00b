/* SPDX-License-Identifier: MIT */
/* rng.cu — the CUDA backend's random numbers: raw bits, uniform and normal values from the
 * Philox4x32-10 stream of include/ganctl/backend.h, one thread per block of four words. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "convert.cuh"
#include <ganctl/philox.h>

/* Same numbers as the CPU backend (backends/cpu/rng.c) for the same seed and offset:
 * the words come from the same header (<ganctl/philox.h>, compiled for the device),
 * the uniform mapping and the final `low + width · u` are exact double operations
 * written with explicit round-to-nearest intrinsics (never fused), the 16-bit outputs
 * are rounded once through FP32 rounded to odd, and the step back inside (low, high)
 * is the CPU's. Raw bits and uniforms are therefore bit-identical. Normals go through
 * log, sqrt, cos and sin in double precision; CUDA's log, cos and sin are within 1 to
 * 2 ulp of the exact value in double, so a normal can differ from the CPU's by one unit
 * in the last place of FP32 (or of the 16-bit type) where the double result lies that
 * close to a rounding boundary. */

enum rng_kind { RNG_BITS, RNG_UNIFORM, RNG_NORMAL };

struct rng_args {
    unsigned char *y;             /* element 0 of the output */
    int yt;
    int kind;
    int64_t n;
    uint64_t seed, offset;
    double a, b;                  /* uniform: low and high − low; normal: mean and std */
    float low, high;
};

/* d rounded to FP32 with round-to-odd; rounding that to FP16 or BF16 equals rounding
 * d directly (both have at least two fewer significant bits than FP32). */
__device__ __forceinline__ float f32_round_to_odd(double d)
{
    float f = __double2float_rn(d);
    if ((double)f == d || isnan(d) || isinf(f))
        return f;
    uint32_t b = __float_as_uint(f);
    if (fabs((double)f) > fabs(d))
        b -= 1u; /* rounded away from zero: the predecessor of its magnitude is below d */
    return __uint_as_float(b | 1u);
}

/* The stored bits of d in float type `dtype`, rounded once. */
__device__ __forceinline__ uint32_t rounded_bits(int dtype, double d)
{
    switch (dtype) {
    case GAN_F16: return dev_f32_to_f16(f32_round_to_odd(d));
    case GAN_BF16: return dev_f32_to_bf16(f32_round_to_odd(d));
    default: return __float_as_uint(__double2float_rn(d));
    }
}

__device__ __forceinline__ float bits_float(int dtype, uint32_t b)
{
    switch (dtype) {
    case GAN_F16: return dev_f16_to_f32((uint16_t)b);
    case GAN_BF16: return dev_bf16_to_f32((uint16_t)b);
    default: return __uint_as_float(b);
    }
}

/* The dtype's neighbour of the stored value (bits b, value v) one step toward `toward`. */
__device__ __forceinline__ uint32_t step_toward(int dtype, uint32_t b, float v, float toward)
{
    if (v == toward)
        return b;
    if (dtype == GAN_F32)
        return __float_as_uint(nextafterf(v, toward));
    /* 16-bit sign-magnitude patterns: the magnitude grows with the pattern; a zero of
     * either sign steps to the smallest subnormal on the side of `toward`. */
    int up = toward > v, neg = (b & 0x8000u) != 0;
    if ((b & 0x7fffu) == 0)
        return up ? 0x0001u : 0x8001u;
    return (up != neg) ? (b + 1u) & 0xffffu : (b - 1u) & 0xffffu;
}

/* A uniform value d, rounded once; a value that rounds onto low or high steps one
 * place back inside when the dtype has a value there. */
__device__ __forceinline__ uint32_t uniform_bits(int dtype, double d, float low, float high)
{
    uint32_t b = rounded_bits(dtype, d);
    if (!(low < high))
        return b;
    float v = bits_float(dtype, b);
    if (v > low && v < high)
        return b;
    uint32_t in = step_toward(dtype, b, v, v >= high ? low : high);
    float inside = bits_float(dtype, in);
    return (inside > low && inside < high) ? in : b;
}

__device__ __forceinline__ void store_word(const rng_args &a, int64_t i, uint32_t bits)
{
    if (a.yt == GAN_F16 || a.yt == GAN_BF16)
        ((uint16_t *)a.y)[i] = (uint16_t)bits;
    else
        ((uint32_t *)a.y)[i] = bits;
}

__global__ void rng_kernel(rng_args a)
{
    const int64_t blocks = (a.n + 3) / 4, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t blk = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; blk < blocks;
         blk += step) {
        uint32_t w[4];
        gan_philox_block(a.seed, a.offset + (uint64_t)blk, w);
        int64_t i0 = blk * 4;
        int m = a.n - i0 < 4 ? (int)(a.n - i0) : 4;
        if (a.kind == RNG_BITS) {
            for (int k = 0; k < m; k++)
                store_word(a, i0 + k, w[k]);
        } else if (a.kind == RNG_UNIFORM) {
            for (int k = 0; k < m; k++) {
                double d = __dadd_rn(a.a, __dmul_rn(a.b, gan_philox_word_uniform(w[k])));
                store_word(a, i0 + k, uniform_bits(a.yt, d, a.low, a.high));
            }
        } else {
            double z[4];
            gan_philox_word_normals(w[0], w[1], z);
            gan_philox_word_normals(w[2], w[3], z + 2);
            for (int k = 0; k < m; k++)
                store_word(a, i0 + k, rounded_bits(a.yt, __dadd_rn(a.a, __dmul_rn(a.b, z[k]))));
        }
    }
}

static gan_status rng_launch(gan_backend *be, const char *what, rng_args *a,
                             const struct gan_ref *y)
{
    if (a->n == 0)
        return GAN_OK;
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    a->y = cuda_ref_ptr(y);
    a->yt = (int)y->dtype;
    int64_t blocks = (a->n + 3) / 4;
    rng_kernel<<<cuda_blocks(blocks, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                 be->stream>>>(*a);
    return cuda_launched(be, what);
}

static rng_args rng_start(int kind, size_t n, uint64_t seed, uint64_t offset)
{
    rng_args a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.n = (int64_t)n;
    a.seed = seed;
    a.offset = offset;
    return a;
}

gan_status cuda_rng_bits(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                         const struct gan_ref *y)
{
    gan_status st = cuda_check_ref(be, "rng_bits", "the output", y, n, GAN_U32);
    if (st != GAN_OK)
        return st;
    rng_args a = rng_start(RNG_BITS, n, seed, offset);
    return rng_launch(be, "rng_bits", &a, y);
}

gan_status cuda_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                            float low, float high, const struct gan_ref *y)
{
    gan_status st = cuda_check_ref(be, "rng_uniform", "the output", y, n, CUDA_ANY_FLOAT);
    if (st != GAN_OK)
        return st;
    if (!isfinite(low) || !isfinite(high) || low > high)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "rng_uniform: the interval [%g, %g) is not valid; low and high "
                              "must be finite with low <= high", (double)low, (double)high);
    rng_args a = rng_start(RNG_UNIFORM, n, seed, offset);
    a.a = (double)low;
    a.b = (double)high - (double)low;
    a.low = low;
    a.high = high;
    return rng_launch(be, "rng_uniform", &a, y);
}

gan_status cuda_rng_normal(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                           float mean, float std, const struct gan_ref *y)
{
    gan_status st = cuda_check_ref(be, "rng_normal", "the output", y, n, CUDA_ANY_FLOAT);
    if (st != GAN_OK)
        return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "rng_normal: mean %g and std %g are not valid; both must be "
                              "finite and std >= 0", (double)mean, (double)std);
    rng_args a = rng_start(RNG_NORMAL, n, seed, offset);
    a.a = (double)mean;
    a.b = (double)std;
    return rng_launch(be, "rng_normal", &a, y);
}
