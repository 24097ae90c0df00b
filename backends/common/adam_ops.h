/* SPDX-License-Identifier: MIT */
/* adam_ops.h — one fused Adam step as both backends take it: the checks on its
 * hyperparameters, the per-step constants, and the update of one element. */
#ifndef GANCTL_COMMON_ADAM_OPS_H
#define GANCTL_COMMON_ADAM_OPS_H

#include <math.h>
#include <ganctl/status.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "hostdev.h"

/* torch.optim.Adam's order of operations (single-tensor path), with L2 weight decay:
 * the bias corrections in double on the host, then per element
 *   g = grad·grad_scale + weight_decay·param
 *   m = beta1·m + (1 − beta1)·g;  v = beta2·v + (1 − beta2)·g·g
 *   param −= step_size · (m / (sqrt(v) / sqrt(1 − beta2^t) + eps))
 * with step_size = lr / (1 − beta1^t): the ABI's formula with m̂ and v̂ spelled out. In
 * FP32, each operation rounded on its own (the CUDA module is built with -fmad=false;
 * sqrt and division are IEEE-exact on both), so every backend gives the same bits. */

/* The step's constants in FP32, as the update uses them. */
struct gan_adam_consts {
    float grad_scale, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2;
    float bc2_sqrt, eps, step_size;
};

/* The hyperparameters of a step: `kernel` names it in the messages. Each test is
 * written as !(ok), so that NaN fails it. */
static inline gan_status gan_adam_check(const struct gan_host *h, const char *kernel,
                                        const struct gan_adam *p)
{
    if (!p)
        return h->fail(h->ctx, GAN_ERR_INVALID, "%s: the gan_adam parameters are NULL",
                       kernel);
    if (p->step < 1)
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: step is %lld; steps count from 1 (bias correction divides "
                       "by 1 - beta^step)", kernel, (long long)p->step);
    if (!(p->lr >= 0.0f) || isinf(p->lr))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: lr is %g; it must be a finite number >= 0", kernel, (double)p->lr);
    if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: beta1 is %g; it must be in [0, 1)", kernel, (double)p->beta1);
    if (!(p->beta2 >= 0.0f && p->beta2 < 1.0f))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: beta2 is %g; it must be in [0, 1)", kernel, (double)p->beta2);
    if (!(p->eps > 0.0f) || isinf(p->eps))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: eps is %g; it must be a finite number > 0", kernel, (double)p->eps);
    if (!(p->weight_decay >= 0.0f) || isinf(p->weight_decay))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: weight_decay is %g; it must be a finite number >= 0", kernel,
                       (double)p->weight_decay);
    if (!isfinite(p->grad_scale))
        return h->fail(h->ctx, GAN_ERR_INVALID,
                       "%s: grad_scale is %g; it must be finite (a step whose scale "
                       "overflowed should be skipped, not applied)", kernel,
                       (double)p->grad_scale);
    return GAN_OK;
}

/* The constants of a checked step; the bias corrections in double, rounded once. */
static inline struct gan_adam_consts gan_adam_consts_of(const struct gan_adam *p)
{
    double bc1 = 1.0 - pow((double)p->beta1, (double)p->step);
    double bc2 = 1.0 - pow((double)p->beta2, (double)p->step);
    struct gan_adam_consts k;
    k.grad_scale = p->grad_scale;
    k.weight_decay = p->weight_decay;
    k.beta1 = p->beta1;
    k.one_minus_beta1 = 1.0f - p->beta1;
    k.beta2 = p->beta2;
    k.one_minus_beta2 = 1.0f - p->beta2;
    k.bc2_sqrt = (float)sqrt(bc2);
    k.eps = p->eps;
    k.step_size = (float)((double)p->lr / bc1);
    return k;
}

/* One element: the new parameter, with *m and *v updated in place; g is the
 * gradient as FP32. */
GAN_HD static inline float gan_adam_element(const struct gan_adam_consts *k, float param,
                                            float g, float *m, float *v)
{
    float gi = g * k->grad_scale + k->weight_decay * param;
    float mi = k->beta1 * *m + k->one_minus_beta1 * gi;
    float vi = k->beta2 * *v + k->one_minus_beta2 * gi * gi;
    float denom = sqrtf(vi) / k->bc2_sqrt + k->eps;
    *m = mi;
    *v = vi;
    return param - k->step_size * (mi / denom);
}

#endif
