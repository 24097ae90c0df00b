/* SPDX-License-Identifier: MIT */
/* grad_stats.c — the CPU backend's gradient statistics (non-finite, zero and FP16-subnormal
 * counts of the stored values; absmax, Σu² and min |u| of the unscaled ones), with a fused unscale. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "cpu_backend.h"
#include "convert.h"

/* What is measured on what:
 *   - the counts look at x as stored (converted exactly to FP32): what the loss scale
 *     did to the gradient;
 *   - absmax, sum_squares and min_nonzero look at u = x · inv_scale over finite,
 *     non-zero x, formed in double (exact: a product of two 24-bit significands), so
 *     they do not depend on FP32 rounding or underflow of the unscaled value. Σu² is
 *     accumulated in double, per block and across blocks.
 *   - the fused output is fl32(x · inv_scale) for finite x, the value an FP32 multiply
 *     gives; an inf or NaN in x is written through unchanged.
 * inv_scale may be inf (a loss scale that collapsed to 0): u is then inf for every
 * finite non-zero x, and the statistics say so rather than the call failing. Only a
 * NaN inv_scale is refused. */

#define STATS_BLOCK 1024

static gan_status check_ref(gan_backend *be, const char *name, const struct gan_ref *r,
                            size_t n)
{
    if (!r || !r->buf)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_grad_stats: %s is NULL or has no buffer", name);
    const char *dn = gan_dtype_name(r->dtype);
    if (!cpu_is_float(r->dtype))
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "cpu_grad_stats: %s has dtype %s; it must be F32, F16 or BF16",
                              name, dn ? dn : "unknown");
    size_t cap = r->buf->bytes / gan_dtype_size(r->dtype);
    if (r->offset > cap || n > cap - r->offset)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_grad_stats: %s needs elements %zu to %zu + %zu but its "
                              "buffer holds %zu %s elements: fix the offset or the count",
                              name, r->offset, r->offset, n, cap, dn);
    return GAN_OK;
}

gan_status cpu_grad_stats(gan_backend *be, size_t n, const struct gan_ref *x,
                          float inv_scale, const struct gan_ref *unscaled,
                          struct gan_grad_stats *stats)
{
    if (!stats)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_grad_stats: stats is NULL; pass a struct gan_grad_stats "
                              "to fill");
    if (isnan(inv_scale))
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_grad_stats: inv_scale is NaN; pass 1 / loss scale");
    gan_status st = check_ref(be, "x", x, n);
    int fused = unscaled && unscaled->buf;
    if (st == GAN_OK && fused)
        st = check_ref(be, "unscaled", unscaled, n);
    if (st != GAN_OK)
        return st;

    const unsigned char *xp = cpu_ref_ptr(x);
    unsigned char *up = fused ? cpu_ref_ptr(unscaled) : NULL;
    int direct_out = fused && unscaled->dtype == GAN_F32;
    double inv = (double)inv_scale;
    uint64_t nonfinite = 0, zeros = 0, subnormal = 0;
    double absmax = 0.0, sum = 0.0, minnz = INFINITY;
    int any_nonzero = 0;
    float xs[STATS_BLOCK], us[STATS_BLOCK];

    for (size_t start = 0; start < n; start += STATS_BLOCK) {
        size_t len = n - start < STATS_BLOCK ? n - start : STATS_BLOCK;
        const float *v;
        if (x->dtype == GAN_F32) {
            v = (const float *)xp + start;
        } else {
            cpu_convert(be->isa, xp + start * gan_dtype_size(x->dtype), x->dtype, xs, GAN_F32,
                        len);
            v = xs;
        }
        /* In place (unscaled is x) works: element i is read before it is written. */
        float *u = direct_out ? (float *)up + start : us;
        double part[4] = { 0.0, 0.0, 0.0, 0.0 };
        for (size_t i = 0; i < len; i++) {
            float xi = v[i];
            if (!isfinite(xi)) {
                nonfinite++;
                u[i] = xi;
                continue;
            }
            u[i] = xi * inv_scale;
            float a = fabsf(xi);
            if (a == 0.0f) {
                zeros++;
                continue;
            }
            if (a < 0x1p-14f)
                subnormal++;
            double au = (double)a * fabs(inv);
            if (au == 0.0)
                continue; /* inv_scale is 0: u is zero everywhere */
            any_nonzero = 1;
            absmax = au > absmax ? au : absmax;
            minnz = au < minnz ? au : minnz;
            part[i & 3] += au * au;
        }
        sum += (part[0] + part[1]) + (part[2] + part[3]);
        if (fused && !direct_out)
            cpu_convert(be->isa, u, GAN_F32, up + start * gan_dtype_size(unscaled->dtype),
                        unscaled->dtype, len);
    }

    stats->elements = n;
    stats->nonfinite = nonfinite;
    stats->zeros = zeros;
    stats->subnormal = subnormal;
    stats->absmax = absmax;
    stats->sum_squares = sum;
    stats->min_nonzero = any_nonzero ? minnz : 0.0;
    return GAN_OK;
}
