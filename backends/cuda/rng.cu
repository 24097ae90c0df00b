/* SPDX-License-Identifier: MIT */
/* rng.cu — the CUDA backend's random numbers: raw bits, uniform and normal values from the
 * Philox4x32-10 stream of include/ganctl/backend.h, one thread per block of four words. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/rng_ops.h"

/* Same numbers as the CPU backend for the same seed and offset: the words come from
 * <ganctl/philox.h> and every value from backends/common/rng_ops.h, the functions the
 * CPU backend calls, compiled for the device: the uniform mapping and `low + width · u`
 * are exact double operations written with explicit round-to-nearest intrinsics (never
 * fused), the 16-bit outputs are rounded once through FP32 rounded to odd, and the
 * step back inside (low, high) is one rule. Raw bits and uniforms are therefore
 * bit-identical. Normals go through log, sqrt, cos and sin in double precision; CUDA's
 * log, cos and sin are within 1 to 2 ulp of the exact value in double, so a normal can
 * differ from the CPU's by one unit in the last place of FP32 (or of the 16-bit type)
 * where the double result lies that close to a rounding boundary. */

enum rng_kind { RNG_BITS, RNG_UNIFORM, RNG_NORMAL };

struct rng_args {
    unsigned char *y;             /* element 0 of the output */
    enum gan_dtype yt;
    int kind;
    int64_t n;
    uint64_t seed, offset;
    double a, b;                  /* uniform: low and high − low; normal: mean and std */
    float low, high;
};

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
                ((uint32_t *)a.y)[i0 + k] = w[k];
        } else if (a.kind == RNG_UNIFORM) {
            for (int k = 0; k < m; k++)
                gan_store_bits(a.y, a.yt, i0 + k,
                               gan_uniform_bits(a.yt, gan_rng_uniform_value(a.a, a.b, w[k]),
                                                a.low, a.high));
        } else {
            double z[4];
            gan_philox_word_normals(w[0], w[1], z);
            gan_philox_word_normals(w[2], w[3], z + 2);
            for (int k = 0; k < m; k++)
                gan_store_bits(a.y, a.yt, i0 + k,
                               gan_rounded_bits(a.yt, gan_rng_normal_value(a.a, a.b, z[k])));
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
    a->yt = y->dtype;
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
    gan_status st = gan_check_ref(be->host, "rng_bits", "the output", y, n, GAN_U32);
    if (st != GAN_OK)
        return st;
    rng_args a = rng_start(RNG_BITS, n, seed, offset);
    return rng_launch(be, "rng_bits", &a, y);
}

gan_status cuda_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                            float low, float high, const struct gan_ref *y)
{
    gan_status st = gan_check_ref(be->host, "rng_uniform", "the output", y, n, GAN_ANY_FLOAT);
    if (st == GAN_OK)
        st = gan_rng_check_uniform(be->host, low, high);
    if (st != GAN_OK)
        return st;
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
    gan_status st = gan_check_ref(be->host, "rng_normal", "the output", y, n, GAN_ANY_FLOAT);
    if (st == GAN_OK)
        st = gan_rng_check_normal(be->host, mean, std);
    if (st != GAN_OK)
        return st;
    rng_args a = rng_start(RNG_NORMAL, n, seed, offset);
    a.a = (double)mean;
    a.b = (double)std;
    return rng_launch(be, "rng_normal", &a, y);
}
