/* SPDX-License-Identifier: MIT */
/* optimizer.h — Adam over one network's parameter arena: FP32 master weights and moments,
 * one fused backend kernel per parameter, and optional clipping of the global gradient norm. */
#ifndef GANCTL_CORE_OPTIMIZER_H
#define GANCTL_CORE_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "nn/net.h"

/* Adam's hyper-parameters (torch.optim.Adam's meaning), and the clipping bound. */
struct gan_adam_settings {
    double lr, beta1, beta2, eps;
    double weight_decay;          /* L2 added to the gradient, as torch.optim.Adam; 0 = none */
    double clip_norm;             /* > 0: scale the gradient so that its global L2 norm is at
                                     most this (torch.nn.utils.clip_grad_norm_); 0 = off */
};

/* What one step saw and did. */
struct gan_optimizer_report {
    double grad_norm;             /* the global L2 norm of the gradient, before clipping */
    double clip_factor;           /* what the gradient was multiplied by: 1 when not clipped */
    uint64_t nonfinite;           /* inf or NaN gradient elements (the step was refused) */
};

/* The moments live in two flat F32 arenas of gan_net_total(net) elements, laid out as
 * the net's gradient arena, so parameter i's state is at gan_net_offset(net, i). */
typedef struct gan_optimizer gan_optimizer;

/* Adam for `net` (borrowed: it must outlive the optimizer), moments zero, no step taken.
 * The settings are checked (lr ≥ 0, betas in [0, 1), eps > 0, weight_decay ≥ 0,
 * clip_norm ≥ 0, all finite); failures are recorded in the net's context. */
gan_status gan_optimizer_new(gan_net *net, const struct gan_adam_settings *settings,
                             gan_optimizer **out);
void gan_optimizer_free(gan_optimizer *opt);

/* One step from the gradients in the net's arena: measures their global norm (one
 * gan_grad_stats pass over the arena), works out the clipping factor, then updates every
 * parameter with the backend's fused Adam kernel (step count + 1, bias-corrected).
 * A gradient with any inf or NaN is refused with GAN_ERR_NUMERIC before anything
 * changes: in FP32 it means the run diverged. `report` may be NULL. Failures are
 * recorded in the net's context. */
gan_status gan_optimizer_step(gan_optimizer *opt, struct gan_optimizer_report *report);

/* The same step from gradients the caller has measured already (the trainer's fused
 * unscale and statistics pass): `grad_norm` is their global L2 norm, and the caller has
 * made sure they are finite. Saves the norm's pass over the arena. */
gan_status gan_optimizer_step_measured(gan_optimizer *opt, double grad_norm,
                                       struct gan_optimizer_report *report);

/* The global L2 norm of the net's gradient arena as it is now, with the count of inf or
 * NaN elements (which the norm leaves out). */
gan_status gan_optimizer_grad_norm(gan_optimizer *opt, double *norm, uint64_t *nonfinite);

/* Multiplies the learning rate of the following steps by `scale` (≥ 0): the trainer's
 * schedule (lr_decay). 1 until set. */
void gan_optimizer_set_lr_scale(gan_optimizer *opt, double scale);

/* Steps taken so far; setting it (from a checkpoint) makes the next step number + 1. */
int64_t gan_optimizer_steps(const gan_optimizer *opt);
void gan_optimizer_set_steps(gan_optimizer *opt, int64_t steps);

const struct gan_adam_settings *gan_optimizer_settings(const gan_optimizer *opt);
gan_net *gan_optimizer_net(const gan_optimizer *opt);

/* The first (which = 0) or second (which = 1) moment of every parameter, as one flat
 * array of gan_net_total(net) floats in the arena's layout: copied out, or written in
 * (a checkpoint). count must be gan_net_total(net). */
gan_status gan_optimizer_moment_to_host(gan_optimizer *opt, int which, float *values,
                                        size_t count);
gan_status gan_optimizer_moment_from_host(gan_optimizer *opt, int which, const float *values,
                                          size_t count);

#endif
