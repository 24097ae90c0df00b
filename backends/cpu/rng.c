/* SPDX-License-Identifier: MIT */
/* rng.c — the CPU backend's random numbers: raw bits, uniform and normal values
 * drawn from the Philox4x32-10 stream defined in include/ganctl/backend.h. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include <ganctl/philox.h>

/* d rounded to FP32 with round-to-odd: toward zero, and the last bit set when that
 * was inexact. Rounding that result to a format with at least two fewer significant
 * bits (FP16: 11, BF16: 8) is the same as rounding d to that format directly, so
 * the 16-bit outputs are rounded once from the double value, as the ABI asks, and
 * agree with a backend that converts from double in one step. */
static float f32_round_to_odd(double d)
{
    float f = (float)d;
    if ((double)f == d || isnan(d) || isinf(f))
        return f;
    uint32_t b = cpu_f32_bits(f);
    if (fabs((double)f) > fabs(d))
        b -= 1u; /* f was rounded away from zero: its magnitude's predecessor is below d */
    return cpu_bits_f32(b | 1u);
}

/* Stores d as element i of y's array, rounded once to `dtype`. */
static inline void store_rounded(void *base, enum gan_dtype dtype, size_t i, double d)
{
    switch (dtype) {
    case GAN_F16: ((uint16_t *)base)[i] = cpu_f32_to_f16(f32_round_to_odd(d)); break;
    case GAN_BF16: ((uint16_t *)base)[i] = cpu_f32_to_bf16(f32_round_to_odd(d)); break;
    case GAN_F32:
    default: ((float *)base)[i] = (float)d; break;
    }
}

/* Checks that y is a usable output of n elements of an accepted dtype. `what` names
 * the kernel for the message; `f32_family` selects F32/F16/BF16 instead of U32. */
static gan_status check_output(gan_backend *be, const char *what, size_t n,
                               const struct gan_ref *y, int f32_family)
{
    if (!y || !y->buf || !y->buf->data)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: the output ref has no buffer; pass a ref to an allocated buffer",
                              what);
    if (f32_family ? !cpu_is_float(y->dtype) : y->dtype != GAN_U32) {
        const char *name = gan_dtype_name(y->dtype);
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "%s: output dtype %s is not supported; use %s", what,
                              name ? name : "(invalid)",
                              f32_family ? "F32, F16 or BF16" : "U32");
    }
    size_t size = gan_dtype_size(y->dtype);
    size_t cap = y->buf->bytes / size;
    if (y->offset > cap || n > cap - y->offset)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: %zu elements from element %zu run past the output buffer, "
                              "which holds %zu %s elements; allocate more or write fewer",
                              what, n, y->offset, cap, gan_dtype_name(y->dtype));
    return GAN_OK;
}

gan_status cpu_rng_bits(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                        const struct gan_ref *y)
{
    gan_status st = check_output(be, "rng_bits", n, y, 0);
    if (st != GAN_OK)
        return st;
    uint32_t *out = (uint32_t *)cpu_ref_ptr(y);
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w[4];
        gan_philox_block(seed, offset + i / 4, w);
        size_t m = n - i < 4 ? n - i : 4;
        for (size_t k = 0; k < m; k++)
            out[i + k] = w[k];
    }
    return GAN_OK;
}

/* The dtype's neighbour of the stored value `v` (element 0 of `p`), one step toward
 * `toward`; used to keep a rounded uniform strictly inside (low, high). Writes it
 * back and returns it, or returns v unchanged when v == toward. */
static float step_toward(void *p, enum gan_dtype dtype, float v, float toward)
{
    if (v == toward)
        return v;
    int up = toward > v; /* the direction on the real line */
    if (dtype == GAN_F32) {
        float r = nextafterf(v, toward);
        *(float *)p = r;
        return r;
    }
    /* 16-bit sign-magnitude patterns: the magnitude grows with the pattern. A zero
     * of either sign steps to the smallest subnormal on the side of `toward`. */
    uint16_t h = *(uint16_t *)p;
    int neg = (h & 0x8000u) != 0;
    if ((h & 0x7fffu) == 0)
        h = (uint16_t)(up ? 0x0001u : 0x8001u);
    else if (up != neg)
        h = (uint16_t)(h + 1u);
    else
        h = (uint16_t)(h - 1u);
    *(uint16_t *)p = h;
    return dtype == GAN_F16 ? cpu_f16_to_f32(h) : cpu_bf16_to_f32(h);
}

/* Stores the uniform value d as element i, rounded once. The exact value is inside
 * (low, high), but rounding can land on an end (FP32 rounds 1 − 2^-25 up to 1; FP16
 * rounds far more values to 1); such a value steps one place back inside, so that
 * callers can rely on the open interval (log(u), log(1 − u)). When the dtype has no
 * value strictly between low and high, the rounded value stays. */
static void store_uniform(void *base, enum gan_dtype dtype, size_t i, double d,
                          float low, float high)
{
    store_rounded(base, dtype, i, d);
    if (!(low < high))
        return;
    size_t size = gan_dtype_size(dtype);
    unsigned char *p = (unsigned char *)base + i * size;
    float v = cpu_load(p, dtype, 0);
    if (v > low && v < high)
        return;
    unsigned char saved[4];
    memcpy(saved, p, size);
    float inside = step_toward(p, dtype, v, v >= high ? low : high);
    if (!(inside > low && inside < high))
        memcpy(p, saved, size);
}

gan_status cpu_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                           float low, float high, const struct gan_ref *y)
{
    gan_status st = check_output(be, "rng_uniform", n, y, 1);
    if (st != GAN_OK)
        return st;
    if (!isfinite(low) || !isfinite(high) || low > high)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "rng_uniform: the interval [%g, %g) is not valid; low and high "
                              "must be finite with low <= high", (double)low, (double)high);
    unsigned char *out = cpu_ref_ptr(y);
    double lo = low, width = (double)high - (double)low;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w[4];
        gan_philox_block(seed, offset + i / 4, w);
        size_t m = n - i < 4 ? n - i : 4;
        for (size_t k = 0; k < m; k++)
            store_uniform(out, y->dtype, i + k, lo + width * gan_philox_word_uniform(w[k]), low, high);
    }
    return GAN_OK;
}

gan_status cpu_rng_normal(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                          float mean, float std, const struct gan_ref *y)
{
    gan_status st = check_output(be, "rng_normal", n, y, 1);
    if (st != GAN_OK)
        return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0.0f)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "rng_normal: mean %g and std %g are not valid; both must be "
                              "finite and std >= 0", (double)mean, (double)std);
    unsigned char *out = cpu_ref_ptr(y);
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w[4];
        gan_philox_block(seed, offset + i / 4, w);
        size_t m = n - i < 4 ? n - i : 4;
        double z[4];
        /* Box–Muller on the pairs (w0, w1) and (w2, w3). */
        gan_philox_word_normals(w[0], w[1], z);
        gan_philox_word_normals(w[2], w[3], z + 2);
        for (size_t k = 0; k < m; k++)
            store_rounded(out, y->dtype, i + k, (double)mean + (double)std * z[k]);
    }
    return GAN_OK;
}
