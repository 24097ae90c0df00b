/* SPDX-License-Identifier: MIT */
/* adam.c — the CPU backend's fused Adam step (torch.optim.Adam with L2 weight decay)
 * over FP32 parameters and moments, reading a gradient of any float type. */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "cpu_backend.h"
#include "../common/adam_ops.h"
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

/* One call's update, split across the instance's threads by ranges of whole blocks:
 * every element's result depends on that element alone, so any split gives the same
 * bits. */
struct adam_job {
    struct gan_adam_consts k;
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
    const struct gan_adam_consts *k = &j->k;
    size_t gsize = gan_dtype_size(j->grad_dtype), csize = gan_dtype_size(j->copy_dtype);
    if (j->isa == CPU_ISA_AVX512) {
        cpu_vec_adam(k, j->param + begin, j->m + begin, j->v + begin,
                     j->grad + (size_t)begin * gsize, j->grad_dtype,
                     j->copy ? j->copy + (size_t)begin * csize : NULL, j->copy_dtype,
                     end - begin);
        return;
    }
    float stage[ADAM_BLOCK];
    /* A copy on the stack: the stores to the moments cannot alias it. */
    const struct gan_adam_consts kc = *k;
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
        for (size_t i = 0; i < len; i++)
            P[i] = gan_adam_element(&kc, P[i], g[i], &M[i], &V[i]);
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
    gan_status st = gan_adam_check(be->host, "cpu_adam", p);
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

    /* torch.optim.Adam's order of operations: backends/common/adam_ops.h. */
    struct adam_job j = {
        .k = gan_adam_consts_of(p),
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
