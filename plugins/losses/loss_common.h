/* SPDX-License-Identifier: MIT */
/* loss_common.h — what the shipped loss terms share: reading their declared settings,
 * the batch reduction, reports outside the graph, cutting a tensor from the graph, and
 * critic scores widened to FP32 for the losses that must not round in 16 bit. */
#ifndef GANCTL_PLUGINS_LOSS_COMMON_H
#define GANCTL_PLUGINS_LOSS_COMMON_H

#include <stdint.h>
#include <ganctl/ganctl.h>

/* A setting the term's settings table declares with a default: the host answers an
 * unset key with it (host.h), so NOT_FOUND breaks that contract and fails, as does a
 * value of another type, both through host->fail naming `who` ("loss r1") and the key;
 * `what` says what the value must be ("a number"). */
gan_status loss_setting_result(const struct gan_host *host, const char *who, const char *key,
                               gan_status st, const char *what);
gan_status loss_get_float(const struct gan_host *host, const char *who, const char *key,
                          double *value);
gan_status loss_get_int(const struct gan_host *host, const char *who, const char *key,
                        long long *value);

/* A term's destroy when its instance is one malloc'd block. */
void loss_free(gan_loss *l);
/* The targets of a penalty: the critic's objective only. */
unsigned loss_critic_only(gan_loss *l);

/* A penalty's inner gradient, per sample: ‖∇ₓD‖² for each row of x, in FP32 ([B]).
 * d = D(x) with x marked as requiring a gradient. The gradient is taken with the graph
 * recorded (the critic's update differentiates it again), seeded with s, the seed the
 * host asks for (in->inner_scale: the critic's loss scale or penalty.inner_scale), else
 * `fallback`; shown to the host as `name` before the seed is divided out, so that an
 * overflow the seed caused reaches its loss scaler as a gradient overflow; then ·1/s
 * (PyTorch's recipe for a penalty under loss scaling). The sums of squares are taken to
 * FP32 before anything is added to them or averaged. */
gan_tensor *loss_inner_sum_squares(gan_ctx *ctx, const struct gan_loss_inputs *in,
                                   gan_tensor *d, gan_tensor *x, const char *name,
                                   float fallback);

/* The batch's mean, or its sum with `sum` set, of every element of t: a 0-d tensor. */
gan_tensor *loss_reduce(gan_ctx *ctx, gan_tensor *t, int sum);

/* Reports `value`·factor as `name`, computed outside the graph: the core only reads it. */
void loss_report(gan_ctx *ctx, const struct gan_metric_sink *metrics, const char *name,
                 gan_tensor *value, float factor);

/* Reports the mean of `scores` in FP32 as `name`, computed outside the graph. */
void loss_report_mean(gan_ctx *ctx, const struct gan_metric_sink *metrics, const char *name,
                      gan_tensor *scores);

/* An unrecorded copy of t, a new leaf of the graph. */
gan_tensor *loss_copy(gan_ctx *ctx, gan_tensor *t);
/* t cut from the graph: its copy, or t itself when nothing flows through it. */
gan_tensor *loss_detached(gan_ctx *ctx, gan_tensor *t);

/* Critic scores in FP32: a 16-bit run's scores widened (a recorded cast, so the gradient
 * flows back), for a loss whose exponentials and sums must not round to 16 bit. */
gan_tensor *loss_scores_f32(gan_ctx *ctx, gan_tensor *scores);

#endif
