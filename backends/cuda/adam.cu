/* SPDX-License-Identifier: MIT */
/* adam.cu — the CUDA backend's fused Adam step (torch.optim.Adam with L2 weight decay) over
 * FP32 parameters and moments, reading a gradient of any float type, one thread per element. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/adam_ops.h"

/* The update of each element is backends/common/adam_ops.h's, the function the CPU
 * backend's scalar loop calls, compiled for the device: the same order of operations,
 * each rounded on its own (the module is built with -fmad=false; sqrt and division are
 * IEEE-exact on the device). The result is the CPU's bits. */

struct adam_args {
    float *p, *m, *v;
    const unsigned char *g;
    unsigned char *copy;              /* the 16-bit (or FP32) working copy, or NULL */
    enum gan_dtype gt, ct;
    int64_t n;
    struct gan_adam_consts k;
};

__global__ void adam_kernel(adam_args a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float p = gan_adam_element(&a.k, a.p[i], gan_load(a.g, a.gt, i), &a.m[i], &a.v[i]);
        a.p[i] = p;
        if (a.copy)
            gan_store(a.copy, a.ct, i, p);
    }
}

gan_status cuda_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                     const struct gan_ref *param, const struct gan_ref *grad,
                     const struct gan_ref *m, const struct gan_ref *v,
                     const struct gan_ref *param_copy)
{
    gan_status st = gan_adam_check(be->host, "adam", p);
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
    a.k = gan_adam_consts_of(p);
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    adam_kernel<<<cuda_blocks(a.n, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                  be->stream>>>(a);
    return cuda_launched(be, "adam");
}
