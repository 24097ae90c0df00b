/* SPDX-License-Identifier: MIT */
/* adam_checks.h — a whole Adam call as both backends take it: its hyperparameters and
 * refs checked, then the step's constants and operands' addresses as the update loops
 * use them. Host code, but for the plan itself, which a kernel takes by value. */
#ifndef GANCTL_COMMON_ADAM_CHECKS_H
#define GANCTL_COMMON_ADAM_CHECKS_H

/* The including backend defines, before this header, struct gan_buffer (with its
 * `size_t bytes`, for the checks) and gan_buffer_at, the address of a byte of a buffer
 * (transfer.h says how). */
#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "adam_ops.h"
#include "ref_checks.h"

/* A checked call: the step's constants, and n elements of FP32 param, m and v, of a
 * gradient of grad_dtype, and of the working copy (NULL when the call writes none). */
struct gan_adam_plan {
    struct gan_adam_consts k;
    int64_t n;
    float *param, *m, *v;
    const unsigned char *grad;
    enum gan_dtype grad_dtype;
    unsigned char *copy;
    enum gan_dtype copy_dtype;    /* F32 when there is no copy */
};

/* The address of a checked ref's first element. */
static inline unsigned char *gan_adam_ref_at(const struct gan_ref *r)
{
    return gan_buffer_at(r->buf, r->offset * gan_dtype_size(r->dtype));
}

/* Checks a call, its hyperparameters (gan_adam_check) and then its refs of n elements
 * in the ABI's order: the FP32 master state param, m and v, a gradient and a working
 * copy of any float type, the copy only when the call writes one (param_copy given
 * with a buffer: a NULL buf is the ABI's way of saying there is none). The first
 * failure is the one reported, with `kernel` and the ref's name in its message. On
 * success fills *plan. */
static inline gan_status gan_adam_prepare(const struct gan_host *host, const char *kernel,
                                          const struct gan_adam *p, size_t n,
                                          const struct gan_ref *param,
                                          const struct gan_ref *grad,
                                          const struct gan_ref *m, const struct gan_ref *v,
                                          const struct gan_ref *param_copy,
                                          struct gan_adam_plan *plan)
{
    static const char *const names[5] = { "param", "grad", "m", "v", "param_copy" };
    static const int want[5] = { GAN_F32, GAN_ANY_FLOAT, GAN_F32, GAN_F32, GAN_ANY_FLOAT };
    const struct gan_ref *const refs[5] = { param, grad, m, v, param_copy };
    const int copy = param_copy && param_copy->buf;
    gan_status st = gan_adam_check(host, kernel, p);
    for (int i = 0; i < (copy ? 5 : 4) && st == GAN_OK; i++)
        st = gan_check_ref(host, kernel, names[i], refs[i], n, want[i]);
    if (st != GAN_OK)
        return st;
    /* torch.optim.Adam's order of operations: adam_ops.h. */
    plan->k = gan_adam_consts_of(p);
    plan->n = (int64_t)n;
    plan->param = (float *)(void *)gan_adam_ref_at(param);
    plan->m = (float *)(void *)gan_adam_ref_at(m);
    plan->v = (float *)(void *)gan_adam_ref_at(v);
    plan->grad = gan_adam_ref_at(grad);
    plan->grad_dtype = grad->dtype;
    plan->copy = copy ? gan_adam_ref_at(param_copy) : NULL;
    plan->copy_dtype = copy ? param_copy->dtype : GAN_F32;
    return GAN_OK;
}

#endif
