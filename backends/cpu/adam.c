/* SPDX-License-Identifier: MIT */
/* adam.c — the CPU backend's fused Adam step (torch.optim.Adam with L2 weight decay)
 * over FP32 parameters and moments, reading a gradient of any float type. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "cpu_backend.h"
#include "../common/adam_checks.h"
#include "convert.h"

/* Gradient elements converted to FP32 per block when the gradient is 16-bit. */
#define ADAM_BLOCK 1024

/* One call's update, split across the instance's threads by ranges of whole blocks:
 * every element's result depends on that element alone, so any split gives the same
 * bits. */
struct adam_job {
    struct gan_adam_plan a;
    enum cpu_isa isa;
};

static void adam_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct adam_job *j = arg;
    const struct gan_adam_plan *a = &j->a;
    const struct gan_adam_consts *k = &a->k;
    size_t gsize = gan_dtype_size(a->grad_dtype), csize = gan_dtype_size(a->copy_dtype);
    if (j->isa != CPU_ISA_PORTABLE) {
        (j->isa == CPU_ISA_AVX512 ? cpu_vec_adam_avx512 : cpu_vec_adam_avx2)(
            k, a->param + begin, a->m + begin, a->v + begin, a->grad + (size_t)begin * gsize,
            a->grad_dtype, a->copy ? a->copy + (size_t)begin * csize : NULL, a->copy_dtype,
            end - begin);
        return;
    }
    float stage[ADAM_BLOCK];
    /* A copy on the stack: the stores to the moments cannot alias it. */
    const struct gan_adam_consts kc = *k;
    for (int64_t start = begin; start < end; start += ADAM_BLOCK) {
        size_t len = (size_t)(end - start < ADAM_BLOCK ? end - start : ADAM_BLOCK);
        const float *g;
        if (a->grad_dtype == GAN_F32) {
            g = (const float *)(const void *)a->grad + start;
        } else {
            cpu_convert(j->isa, a->grad + (size_t)start * gsize, a->grad_dtype, stage, GAN_F32,
                        len);
            g = stage;
        }
        float *P = a->param + start, *M = a->m + start, *V = a->v + start;
        for (size_t i = 0; i < len; i++)
            P[i] = gan_adam_element(&kc, P[i], g[i], &M[i], &V[i]);
        if (a->copy)
            cpu_convert(j->isa, P, GAN_F32, a->copy + (size_t)start * csize, a->copy_dtype,
                        len);
    }
}

gan_status cpu_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                    const struct gan_ref *param, const struct gan_ref *grad,
                    const struct gan_ref *m, const struct gan_ref *v,
                    const struct gan_ref *param_copy)
{
    struct adam_job j = { .isa = be->isa };
    gan_status st = gan_adam_prepare(be->host, "cpu_adam", p, n, param, grad, m, v, param_copy,
                                     &j.a);
    const struct gan_ref *const touched[] = { param, grad, m, v, param_copy };
    for (size_t i = 0; i < sizeof touched / sizeof touched[0] && st == GAN_OK; i++)
        st = touched[i] ? cpu_kept_read(be, touched[i]->buf, n) : GAN_OK;
    if (st != GAN_OK)
        return st;
    /* About 20 operations an element: worth a thread from a few thousand elements. */
    int parts = cpu_parallel_parts(be, (int64_t)n, ADAM_BLOCK, 8);
    cpu_parallel_for(be, parts, (int64_t)n, ADAM_BLOCK, adam_range, &j);
    return GAN_OK;
}
