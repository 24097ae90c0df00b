/* SPDX-License-Identifier: MIT */
/* adam.cu — the CUDA backend's fused Adam step (torch.optim.Adam with L2 weight decay) over
 * FP32 parameters and moments, reading a gradient of any float type, one thread per element. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"

/* The CPU backend's order of operations (backends/cpu/adam.c), which is torch's
 * single-tensor path: the bias corrections in double on the host, then per element
 *   g = grad·grad_scale + weight_decay·param
 *   m = beta1·m + (1 − beta1)·g;  v = beta2·v + (1 − beta2)·g·g
 *   param −= step_size · (m / (sqrt(v) / sqrt(1 − beta2^t) + eps))
 * in FP32, each operation rounded on its own (the module is built with -fmad=false;
 * sqrt and division are IEEE-exact on the device). The result is the CPU's bits. */

struct adam_args {
    float *p, *m, *v;
    const unsigned char *g;
    unsigned char *copy;              /* the 16-bit (or FP32) working copy, or NULL */
    enum gan_dtype gt, ct;
    int64_t n;
    float step_size, bc2_sqrt, b1, b2, one_b1, one_b2, eps, wd, gs;
};

__global__ void adam_kernel(adam_args a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float p = a.p[i];
        float gi = gan_load(a.g, a.gt, i) * a.gs + a.wd * p;
        float mi = a.b1 * a.m[i] + a.one_b1 * gi;
        float vi = a.b2 * a.v[i] + a.one_b2 * gi * gi;
        float denom = sqrtf(vi) / a.bc2_sqrt + a.eps;
        a.m[i] = mi;
        a.v[i] = vi;
        p -= a.step_size * (mi / denom);
        a.p[i] = p;
        if (a.copy)
            gan_store(a.copy, a.ct, i, p);
    }
}

static gan_status check_hyper(gan_backend *be, const struct gan_adam *p)
{
    const struct gan_host *h = be->host;
    if (!p)
        return h->fail(h->ctx, GAN_ERR_INVALID, "adam: the gan_adam parameters are NULL");
    if (p->step < 1)
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "adam: step is %lld; steps count from 1 (bias correction divides by "
                       "1 - beta^step)", (long long)p->step);
    /* Written as !(ok) so that NaN fails each test. */
    if (!(p->lr >= 0.0f) || isinf(p->lr))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "adam: lr is %g; it must be a finite number >= 0", (double)p->lr);
    if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID, "adam: beta1 is %g; it must be in [0, 1)",
                       (double)p->beta1);
    if (!(p->beta2 >= 0.0f && p->beta2 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID, "adam: beta2 is %g; it must be in [0, 1)",
                       (double)p->beta2);
    if (!(p->eps > 0.0f) || isinf(p->eps))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "adam: eps is %g; it must be a finite number > 0", (double)p->eps);
    if (!(p->weight_decay >= 0.0f) || isinf(p->weight_decay))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "adam: weight_decay is %g; it must be a finite number >= 0",
                       (double)p->weight_decay);
    if (!isfinite(p->grad_scale))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "adam: grad_scale is %g; it must be finite (a step whose scale "
                       "overflowed should be skipped, not applied)", (double)p->grad_scale);
    return GAN_OK;
}

gan_status cuda_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                     const struct gan_ref *param, const struct gan_ref *grad,
                     const struct gan_ref *m, const struct gan_ref *v,
                     const struct gan_ref *param_copy)
{
    gan_status st = check_hyper(be, p);
    if (st == GAN_OK)
        st = gan_check_ref(be->host, "adam", "param", param, n, GAN_F32);
    if (st == GAN_OK)
        st = gan_check_ref(be->host, "adam", "grad", grad, n, GAN_ANY_FLOAT);
    if (st == GAN_OK)
        st = gan_check_ref(be->host, "adam", "m", m, n, GAN_F32);
    if (st == GAN_OK)
        st = gan_check_ref(be->host, "adam", "v", v, n, GAN_F32);
    int copy = param_copy && param_copy->buf;
    if (st == GAN_OK && copy)
        st = gan_check_ref(be->host, "adam", "param_copy", param_copy, n, GAN_ANY_FLOAT);
    if (st != GAN_OK || n == 0)
        return st;

    double bc1 = 1.0 - pow((double)p->beta1, (double)p->step);
    double bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    adam_args a;
    memset(&a, 0, sizeof a);
    a.p = (float *)cuda_ref_ptr(param);
    a.m = (float *)cuda_ref_ptr(m);
    a.v = (float *)cuda_ref_ptr(v);
    a.g = cuda_ref_ptr(grad);
    a.gt = grad->dtype;
    a.copy = copy ? cuda_ref_ptr(param_copy) : NULL;
    a.ct = copy ? param_copy->dtype : GAN_F32;
    a.n = (int64_t)n;
    a.step_size = (float)((double)p->lr / bc1);
    a.bc2_sqrt = (float)sqrt(bc2);
    a.b1 = p->beta1;
    a.b2 = p->beta2;
    a.one_b1 = 1.0f - p->beta1;
    a.one_b2 = 1.0f - p->beta2;
    a.eps = p->eps;
    a.wd = p->weight_decay;
    a.gs = p->grad_scale;
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    adam_kernel<<<cuda_blocks(a.n, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                  be->stream>>>(a);
    return cuda_launched(be, "adam");
}
