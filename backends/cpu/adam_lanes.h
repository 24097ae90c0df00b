/* SPDX-License-Identifier: MIT */
/* adam_lanes.h — adam.c's update on the lanes of one vector level (the lane interface
 * included before this file): the gradient widened in registers when 16-bit, the moments
 * and the parameter updated, and the parameter's 16-bit copy rounded and stored, in one
 * pass over memory. Each lane computes adam.c's scalar expression with the same IEEE
 * operations in the same order (no FMA: it would round once where the scalar code rounds
 * twice), so the results are the same bits; tests/check_optim_stats.c compares the
 * levels. Instantiated by adam_avx512.c and adam_avx2.c. */
#include "../common/adam_ops.h"

#ifdef LANES_N
LANES_TARGET
void LANES_FN(cpu_vec_adam)(const struct gan_adam_consts *k, float *param, float *m, float *v,
                            const void *grad, enum gan_dtype grad_dtype, void *copy,
                            enum gan_dtype copy_dtype, int64_t n)
{
    const lanes_f32 gs = lanes_set1(k->grad_scale), wd = lanes_set1(k->weight_decay);
    const lanes_f32 b1 = lanes_set1(k->beta1), one_b1 = lanes_set1(k->one_minus_beta1);
    const lanes_f32 b2 = lanes_set1(k->beta2), one_b2 = lanes_set1(k->one_minus_beta2);
    const lanes_f32 bc2 = lanes_set1(k->bc2_sqrt), eps = lanes_set1(k->eps);
    const lanes_f32 step = lanes_set1(k->step_size);
    for (int64_t i = 0; i < n; i += LANES_N) {
        lanes_in in = lanes_inside(i, n);
        lanes_f32 g = lanes_load(grad, grad_dtype, i, in);
        lanes_f32 p = lanes_load_f32(param + i, in);
        lanes_f32 mo = lanes_load_f32(m + i, in);
        lanes_f32 ve = lanes_load_f32(v + i, in);
        /* gi = g·gs + wd·P;  mi = b1·M + (1 − b1)·gi;  vi = b2·V + ((1 − b2)·gi)·gi */
        lanes_f32 gi = lanes_add(lanes_mul(g, gs), lanes_mul(wd, p));
        lanes_f32 mi = lanes_add(lanes_mul(b1, mo), lanes_mul(one_b1, gi));
        lanes_f32 vi = lanes_add(lanes_mul(b2, ve), lanes_mul(lanes_mul(one_b2, gi), gi));
        /* denom = sqrt(vi) / sqrt(1 − b2^t) + eps;  P −= step · (mi / denom) */
        lanes_f32 denom = lanes_add(lanes_div(lanes_sqrt(vi), bc2), eps);
        p = lanes_sub(p, lanes_mul(step, lanes_div(mi, denom)));
        lanes_store_f32(m + i, in, mi);
        lanes_store_f32(v + i, in, vi);
        lanes_store_f32(param + i, in, p);
        if (copy)
            lanes_store(copy, copy_dtype, i, in, p);
    }
}
#else
/* Not an x86 CPU: the level is never chosen, and the scalar loop does everything. */
void LANES_FN(cpu_vec_adam)(const struct gan_adam_consts *k, float *param, float *m, float *v,
                            const void *grad, enum gan_dtype grad_dtype, void *copy,
                            enum gan_dtype copy_dtype, int64_t n)
{
    (void)k, (void)param, (void)m, (void)v, (void)grad, (void)grad_dtype, (void)copy;
    (void)copy_dtype, (void)n;
}
#endif
