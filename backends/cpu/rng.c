/* SPDX-License-Identifier: MIT */
/* rng.c — the CPU backend's random numbers: raw bits, uniform and normal values
 * drawn from the Philox4x32-10 stream defined in include/ganctl/backend.h. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include "../common/rng_ops.h"

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
    if (st == GAN_OK)
        st = cpu_kept_ref_written(be, y, n);
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

gan_status cpu_rng_uniform(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                           float low, float high, const struct gan_ref *y)
{
    gan_status st = check_output(be, "rng_uniform", n, y, 1);
    if (st == GAN_OK)
        st = gan_rng_check_uniform(be->host, low, high);
    if (st == GAN_OK)
        st = cpu_kept_ref_written(be, y, n);
    if (st != GAN_OK)
        return st;
    unsigned char *out = cpu_ref_ptr(y);
    double lo = low, width = (double)high - (double)low;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w[4];
        gan_philox_block(seed, offset + i / 4, w);
        size_t m = n - i < 4 ? n - i : 4;
        for (size_t k = 0; k < m; k++)
            gan_store_bits(out, y->dtype, (int64_t)(i + k),
                           gan_uniform_bits(y->dtype, gan_rng_uniform_value(lo, width, w[k]),
                                            low, high));
    }
    return GAN_OK;
}

gan_status cpu_rng_normal(gan_backend *be, size_t n, uint64_t seed, uint64_t offset,
                          float mean, float std, const struct gan_ref *y)
{
    gan_status st = check_output(be, "rng_normal", n, y, 1);
    if (st == GAN_OK)
        st = gan_rng_check_normal(be->host, mean, std);
    if (st == GAN_OK)
        st = cpu_kept_ref_written(be, y, n);
    if (st != GAN_OK)
        return st;
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
            gan_store_bits(out, y->dtype, (int64_t)(i + k),
                           gan_rounded_bits(y->dtype, gan_rng_normal_value(mean, std, z[k])));
    }
    return GAN_OK;
}
