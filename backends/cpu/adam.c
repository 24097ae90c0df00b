/* SPDX-License-Identifier: MIT */
/* adam.c — the CPU backend's fused Adam step (torch.optim.Adam with L2 weight decay)
 * over FP32 parameters and moments, reading a gradient of any float type. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "cpu_backend.h"
#include "convert.h"

/* Gradient elements converted to FP32 per block when the gradient is 16-bit. */
#define ADAM_BLOCK 1024

/* Checks that `r` is a usable ref of n elements; `want` is the dtype it must have,
 * or -1 for any float type. */
static gan_status check_ref(gan_backend *be, const char *name, const struct gan_ref *r,
                            size_t n, int want)
{
    if (!r || !r->buf)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_adam: %s is NULL or has no buffer", name);
    const char *dn = gan_dtype_name(r->dtype);
    if (want >= 0 && r->dtype != (enum gan_dtype)want)
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "cpu_adam: %s has dtype %s; it must be %s (FP32 master state)",
                              name, dn ? dn : "unknown", gan_dtype_name((enum gan_dtype)want));
    if (!cpu_is_float(r->dtype))
        return be->host->fail(be->host->ctx, GAN_ERR_UNSUPPORTED,
                              "cpu_adam: %s has dtype %s; it must be F32, F16 or BF16",
                              name, dn ? dn : "unknown");
    size_t cap = r->buf->bytes / gan_dtype_size(r->dtype);
    if (r->offset > cap || n > cap - r->offset)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_adam: %s needs elements %zu to %zu + %zu but its buffer "
                              "holds %zu %s elements: fix the offset or the count",
                              name, r->offset, r->offset, n, cap, dn);
    return GAN_OK;
}

static gan_status check_hyper(gan_backend *be, const struct gan_adam *p)
{
    const struct gan_host *h = be->host;
    if (!p)
        return h->fail(h->ctx, GAN_ERR_INVALID, "cpu_adam: the gan_adam parameters are NULL");
    if (p->step < 1)
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: step is %lld; steps count from 1 (bias correction divides "
                       "by 1 - beta^step)", (long long)p->step);
    /* Written as !(ok) so that NaN fails each test. */
    if (!(p->lr >= 0.0f) || isinf(p->lr))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: lr is %g; it must be a finite number >= 0", (double)p->lr);
    if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: beta1 is %g; it must be in [0, 1)", (double)p->beta1);
    if (!(p->beta2 >= 0.0f && p->beta2 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: beta2 is %g; it must be in [0, 1)", (double)p->beta2);
    if (!(p->eps > 0.0f) || isinf(p->eps))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: eps is %g; it must be a finite number > 0", (double)p->eps);
    if (!(p->weight_decay >= 0.0f) || isinf(p->weight_decay))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: weight_decay is %g; it must be a finite number >= 0",
                       (double)p->weight_decay);
    if (!isfinite(p->grad_scale))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "cpu_adam: grad_scale is %g; it must be finite (a step whose scale "
                       "overflowed should be skipped, not applied)", (double)p->grad_scale);
    return GAN_OK;
}

/* One call's update, split across the instance's threads by ranges of whole blocks:
 * every element's result depends on that element alone, so any split gives the same
 * bits. */
struct adam_job {
    struct cpu_adam_consts k;
    enum cpu_isa isa;
    float *param, *m, *v;
    const unsigned char *grad;
    enum gan_dtype grad_dtype;
    unsigned char *copy; /* NULL: no 16-bit copy */
    enum gan_dtype copy_dtype;
};

static void adam_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct adam_job *j = arg;
    const struct cpu_adam_consts *k = &j->k;
    size_t gsize = gan_dtype_size(j->grad_dtype), csize = gan_dtype_size(j->copy_dtype);
    if (j->isa == CPU_ISA_AVX512) {
        cpu_vec_adam(k, j->param + begin, j->m + begin, j->v + begin,
                     j->grad + (size_t)begin * gsize, j->grad_dtype,
                     j->copy ? j->copy + (size_t)begin * csize : NULL, j->copy_dtype,
                     end - begin);
        return;
    }
    float stage[ADAM_BLOCK];
    float b1 = k->beta1, b2 = k->beta2, one_b1 = k->one_minus_beta1, one_b2 = k->one_minus_beta2;
    float eps = k->eps, wd = k->weight_decay, gs = k->grad_scale;
    float step_size = k->step_size, bc2_sqrt = k->bc2_sqrt;
    for (int64_t start = begin; start < end; start += ADAM_BLOCK) {
        size_t len = (size_t)(end - start < ADAM_BLOCK ? end - start : ADAM_BLOCK);
        const float *g;
        if (j->grad_dtype == GAN_F32) {
            g = (const float *)(const void *)j->grad + start;
        } else {
            cpu_convert(j->isa, j->grad + (size_t)start * gsize, j->grad_dtype, stage, GAN_F32,
                        len);
            g = stage;
        }
        float *P = j->param + start, *M = j->m + start, *V = j->v + start;
        for (size_t i = 0; i < len; i++) {
            float gi = g[i] * gs + wd * P[i];
            float mi = b1 * M[i] + one_b1 * gi;
            float vi = b2 * V[i] + one_b2 * gi * gi;
            float denom = sqrtf(vi) / bc2_sqrt + eps;
            M[i] = mi;
            V[i] = vi;
            P[i] -= step_size * (mi / denom);
        }
        if (j->copy)
            cpu_convert(j->isa, P, GAN_F32, j->copy + (size_t)start * csize, j->copy_dtype,
                        len);
    }
}

gan_status cpu_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                    const struct gan_ref *param, const struct gan_ref *grad,
                    const struct gan_ref *m, const struct gan_ref *v,
                    const struct gan_ref *param_copy)
{
    gan_status st = check_hyper(be, p);
    if (st == GAN_OK)
        st = check_ref(be, "param", param, n, GAN_F32);
    if (st == GAN_OK)
        st = check_ref(be, "grad", grad, n, -1);
    if (st == GAN_OK)
        st = check_ref(be, "m", m, n, GAN_F32);
    if (st == GAN_OK)
        st = check_ref(be, "v", v, n, GAN_F32);
    int copy = param_copy && param_copy->buf;
    if (st == GAN_OK && copy)
        st = check_ref(be, "param_copy", param_copy, n, -1);
    if (st != GAN_OK)
        return st;

    /* torch.optim.Adam's order of operations (single-tensor path): the bias
     * corrections in double, then
     *   denom = sqrt(v) / sqrt(1 − beta2^t) + eps,  param −= (lr / (1 − beta1^t)) · m / denom,
     * which equals the header's formula with m̂ and v̂ spelled out. */
    double bc1 = 1.0 - pow((double)p->beta1, (double)p->step);
    double bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    struct adam_job j = {
        .k = {
            .grad_scale = p->grad_scale,
            .weight_decay = p->weight_decay,
            .beta1 = p->beta1,
            .one_minus_beta1 = 1.0f - p->beta1,
            .beta2 = p->beta2,
            .one_minus_beta2 = 1.0f - p->beta2,
            .bc2_sqrt = (float)sqrt(bc2),
            .eps = p->eps,
            .step_size = (float)((double)p->lr / bc1),
        },
        .isa = be->isa,
        .param = (float *)(void *)cpu_ref_ptr(param),
        .m = (float *)(void *)cpu_ref_ptr(m),
        .v = (float *)(void *)cpu_ref_ptr(v),
        .grad = cpu_ref_ptr(grad),
        .grad_dtype = grad->dtype,
        .copy = copy ? cpu_ref_ptr(param_copy) : NULL,
        .copy_dtype = copy ? param_copy->dtype : GAN_F32,
    };
    /* About 20 operations an element: worth a thread from a few thousand elements. */
    int parts = cpu_parallel_parts(be, (int64_t)n, ADAM_BLOCK, 8);
    cpu_parallel_for(be, parts, (int64_t)n, ADAM_BLOCK, adam_range, &j);
    return GAN_OK;
}
