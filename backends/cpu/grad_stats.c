/* SPDX-License-Identifier: MIT */
/* grad_stats.c — the CPU backend's gradient statistics (non-finite, zero and FP16-subnormal
 * counts of the stored values; absmax, Σu² and min |u| of the unscaled ones), with a fused unscale. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

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

/* One call's measurement, split across the instance's threads by ranges of whole
 * blocks. Counts, absmax and min |u| do not depend on the order the elements are seen
 * in; Σu² does, so each block's sum is kept apart (block_sum) and the blocks are added
 * in their order once every part is done, exactly as a single thread adds them: the
 * result is the same bits at any thread count. */
struct stats_part {
    uint64_t nonfinite, zeros, subnormal;
    double absmax, minnz;
    int any_nonzero;
};

struct stats_job {
    enum cpu_isa isa;
    const unsigned char *x;
    enum gan_dtype x_dtype;
    unsigned char *u;       /* NULL: no fused output */
    enum gan_dtype u_dtype;
    float inv_scale;
    double *block_sum;      /* one per block of the whole call */
    struct stats_part *part;
};

static void stats_range(void *arg, int index, int64_t begin, int64_t end)
{
    const struct stats_job *j = arg;
    struct stats_part *r = &j->part[index];
    int fused = j->u != NULL, direct_out = fused && j->u_dtype == GAN_F32;
    float inv_scale = j->inv_scale;
    double inv = (double)inv_scale;
    uint64_t nonfinite = 0, zeros = 0, subnormal = 0;
    double absmax = 0.0, minnz = INFINITY;
    int any_nonzero = 0;
    float xs[STATS_BLOCK], us[STATS_BLOCK];

    if (j->isa != CPU_ISA_PORTABLE && (!fused || direct_out)) {
        double mag = fabs(inv);
        for (int64_t start = begin; start < end; start += STATS_BLOCK) {
            int64_t len = end - start < STATS_BLOCK ? end - start : STATS_BLOCK;
            struct cpu_stats_block b;
            (j->isa == CPU_ISA_AVX512 ? cpu_vec_stats_block_avx512 : cpu_vec_stats_block_avx2)(
                j->x + (size_t)start * gan_dtype_size(j->x_dtype), j->x_dtype, len, inv_scale,
                fused ? (float *)(void *)j->u + start : NULL, &b);
            nonfinite += b.nonfinite;
            zeros += b.zeros;
            subnormal += b.subnormal;
            if (b.absmin < INFINITY) { /* a finite non-zero x, and inv_scale is not 0 */
                double hi = (double)b.absmax * mag, lo = (double)b.absmin * mag;
                any_nonzero = 1;
                absmax = hi > absmax ? hi : absmax;
                minnz = lo < minnz ? lo : minnz;
            }
            j->block_sum[start / STATS_BLOCK] = b.sum;
        }
        begin = end; /* done: skip the scalar loop */
    }

    for (int64_t start = begin; start < end; start += STATS_BLOCK) {
        size_t len = (size_t)(end - start < STATS_BLOCK ? end - start : STATS_BLOCK);
        const float *v;
        if (j->x_dtype == GAN_F32) {
            v = (const float *)(const void *)j->x + start;
        } else {
            cpu_convert(j->isa, j->x + (size_t)start * gan_dtype_size(j->x_dtype), j->x_dtype,
                        xs, GAN_F32, len);
            v = xs;
        }
        /* In place (unscaled is x) works: element i is read before it is written. */
        float *u = direct_out ? (float *)(void *)j->u + start : us;
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
        j->block_sum[start / STATS_BLOCK] = (part[0] + part[1]) + (part[2] + part[3]);
        if (fused && !direct_out)
            cpu_convert(j->isa, u, GAN_F32, j->u + (size_t)start * gan_dtype_size(j->u_dtype),
                        j->u_dtype, len);
    }
    r->nonfinite = nonfinite;
    r->zeros = zeros;
    r->subnormal = subnormal;
    r->absmax = absmax;
    r->minnz = minnz;
    r->any_nonzero = any_nonzero;
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
    if (st == GAN_OK)
        st = cpu_kept_read(be, x->buf, n);
    if (st == GAN_OK && fused)
        st = cpu_kept_ref_written(be, unscaled, n);
    if (st != GAN_OK)
        return st;

    /* About ten operations an element. */
    int parts = cpu_parallel_parts(be, (int64_t)n, STATS_BLOCK, 4);
    size_t blocks = (n + STATS_BLOCK - 1) / STATS_BLOCK;
    struct stats_part one_part;
    double one_block_sum[64];
    struct stats_job j = {
        .isa = be->isa,
        .x = cpu_ref_ptr(x),
        .x_dtype = x->dtype,
        .u = fused ? cpu_ref_ptr(unscaled) : NULL,
        .u_dtype = fused ? unscaled->dtype : GAN_F32,
        .inv_scale = inv_scale,
        .block_sum = one_block_sum,
        .part = &one_part,
    };
    if (parts > 1 || blocks > sizeof one_block_sum / sizeof *one_block_sum) {
        void *space;
        size_t bytes = blocks * sizeof(double) + (size_t)parts * sizeof(struct stats_part);
        if ((st = cpu_scratch(be, bytes, &space)) != GAN_OK)
            return st;
        j.block_sum = space;
        j.part = (struct stats_part *)(void *)(j.block_sum + blocks);
    }
    memset(j.part, 0, (size_t)parts * sizeof *j.part);
    for (int p = 0; p < parts; p++)
        j.part[p].minnz = INFINITY;
    cpu_parallel_for(be, parts, (int64_t)n, STATS_BLOCK, stats_range, &j);

    uint64_t nonfinite = 0, zeros = 0, subnormal = 0;
    double absmax = 0.0, minnz = INFINITY;
    int any_nonzero = 0;
    for (int p = 0; p < parts; p++) {
        const struct stats_part *r = &j.part[p];
        nonfinite += r->nonfinite;
        zeros += r->zeros;
        subnormal += r->subnormal;
        absmax = r->absmax > absmax ? r->absmax : absmax;
        minnz = r->minnz < minnz ? r->minnz : minnz;
        any_nonzero |= r->any_nonzero;
    }
    double sum = 0.0;
    for (size_t b = 0; b < blocks; b++)
        sum += j.block_sum[b];

    stats->elements = n;
    stats->nonfinite = nonfinite;
    stats->zeros = zeros;
    stats->subnormal = subnormal;
    stats->absmax = absmax;
    stats->sum_squares = sum;
    stats->min_nonzero = any_nonzero ? minnz : 0.0;
    return GAN_OK;
}
