/* SPDX-License-Identifier: MIT */
/* adam.cu — the CUDA backend's fused Adam step (torch.optim.Adam with L2 weight decay) over
 * FP32 parameters and moments, reading a gradient of any float type, one thread per element. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/convert.h"
#include "../common/adam_checks.h"

/* The update of each element is backends/common/adam_ops.h's, the function the CPU
 * backend's scalar loop calls, compiled for the device: the same order of operations,
 * each rounded on its own (the module is built with -fmad=false; sqrt and division are
 * IEEE-exact on the device). The result is the CPU's bits. */

__global__ void adam_kernel(gan_adam_plan a)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {
        float p = gan_adam_element(&a.k, a.param[i], gan_load(a.grad, a.grad_dtype, i), &a.m[i],
                                   &a.v[i]);
        a.param[i] = p;
        if (a.copy)
            gan_store(a.copy, a.copy_dtype, i, p);
    }
}

gan_status cuda_adam(gan_backend *be, const struct gan_adam *p, size_t n,
                     const struct gan_ref *param, const struct gan_ref *grad,
                     const struct gan_ref *m, const struct gan_ref *v,
                     const struct gan_ref *param_copy)
{
    gan_adam_plan a;
    gan_status st = gan_adam_prepare(be->host, "adam", p, n, param, grad, m, v, param_copy, &a);
    if (st != GAN_OK || n == 0)
        return st;
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    adam_kernel<<<cuda_blocks(a.n, (unsigned)be->sm_count * 32u), CUDA_THREADS, 0,
                  be->stream>>>(a);
    return cuda_launched(be, "adam");
}
