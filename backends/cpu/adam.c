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
    float step_size = (float)((double)p->lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float b1 = p->beta1, b2 = p->beta2, one_b1 = 1.0f - p->beta1, one_b2 = 1.0f - p->beta2;
    float eps = p->eps, wd = p->weight_decay, gs = p->grad_scale;

    float *pp = (float *)cpu_ref_ptr(param);
    float *mp = (float *)cpu_ref_ptr(m);
    float *vp = (float *)cpu_ref_ptr(v);
    const unsigned char *gp = cpu_ref_ptr(grad);
    unsigned char *cp = copy ? cpu_ref_ptr(param_copy) : NULL;
    float stage[ADAM_BLOCK];

    for (size_t start = 0; start < n; start += ADAM_BLOCK) {
        size_t len = n - start < ADAM_BLOCK ? n - start : ADAM_BLOCK;
        const float *g;
        if (grad->dtype == GAN_F32) {
            g = (const float *)gp + start;
        } else {
            cpu_convert(be->isa, gp + start * gan_dtype_size(grad->dtype), grad->dtype, stage,
                        GAN_F32, len);
            g = stage;
        }
        float *P = pp + start, *M = mp + start, *V = vp + start;
        for (size_t i = 0; i < len; i++) {
            float gi = g[i] * gs + wd * P[i];
            float mi = b1 * M[i] + one_b1 * gi;
            float vi = b2 * V[i] + one_b2 * gi * gi;
            float denom = sqrtf(vi) / bc2_sqrt + eps;
            M[i] = mi;
            V[i] = vi;
            P[i] -= step_size * (mi / denom);
        }
        if (copy)
            cpu_convert(be->isa, P, GAN_F32, cp + start * gan_dtype_size(param_copy->dtype),
                        param_copy->dtype, len);
    }
    return GAN_OK;
}
