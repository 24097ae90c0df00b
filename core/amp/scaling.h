/* SPDX-License-Identifier: MIT */
/* scaling.h — one network's loss-scaled step: the backward seeded with the loss scale, the
 * fused unscale and gradient statistics, the inner gradients, and the scaler's verdict.
 *
 * A step of one network, whoever takes it (the trainer, `ganctl grads`), is
 *
 *     scale = gan_amp_scale(a);                       the scale this step's backward uses
 *     gan_amp_inner_begin(&inner, scale);             before its objective is built
 *     loss  = <the objective>                         terms report inner gradients
 *     gan_amp_scaled_backward(a, ctx, net, loss, value, &inner);
 *     gan_amp_verdict(a, step, &decision, err);       apply or skip, and the next scale
 *     if (!decision.skip) <the optimizer's update from the net's FP32 gradient arena>
 *
 * A reduction of the statistics across processes belongs between the backward and the
 * verdict: the verdict reads only a->entries. Nothing here knows the trainer or a
 * session: it takes one network, its scaler instance and the step's inputs. */
#ifndef GANCTL_AMP_SCALING_H
#define GANCTL_AMP_SCALING_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "config/configuration.h"
#include "base/log.h"
#include "nn/net.h"
#include "plugin/plugin_loader.h"

/* Most inner gradients (the penalty's ∇ₓD(x̂)) one objective's terms may show. */
#define GAN_AMP_MAX_INNER 8

/* What a metrics row's overflow cell collects: the kinds seen since the previous row. */
#define GAN_AMP_OVERFLOW_GRADIENT 1u
#define GAN_AMP_OVERFLOW_FORWARD 2u

/* The inner gradients the loss terms showed (loss.h's inner_grad) while one objective was
 * built, measured at once in the dtype they were computed in, and the outer scale the
 * objective is built for. */
struct gan_amp_inner {
    gan_ctx *ctx;
    struct gan_scaler_tensor entry[GAN_AMP_MAX_INNER];
    char name[GAN_AMP_MAX_INNER][64];
    /* Seeded with the outer scale, so that an overflow in it is the scale's
     * (GAN_SCALER_INNER_GRAD entries the scaler sees); others are only measured. */
    int outer[GAN_AMP_MAX_INNER];
    size_t count;
    double outer_scale;
    int paused;                   /* nonzero: ignore what the terms show (an FP32 shadow) */
};

/* Starts collecting for an objective built for `outer_scale`. */
void gan_amp_inner_begin(struct gan_amp_inner *in, gan_ctx *ctx, double outer_scale);

/* The objective's inner_grad callback (objective.h); arg is a struct gan_amp_inner. */
void gan_amp_on_inner_grad(void *arg, const char *name, gan_tensor *wrt, gan_tensor *grad,
                           double seed);

struct gan_amp_net;

/* Called by gan_amp_scaled_backward after the statistics and before it returns, with
 * `backward` nonzero when a backward ran (the objective was finite) and `grads` its
 * gradients: how the FP32 shadow of debug level 2 (underflow_probe.h) looks at a step
 * without the step knowing of it. */
struct gan_amp_hook {
    gan_status (*after_backward)(void *arg, struct gan_amp_net *a, int backward,
                                 gan_tensor *const *grads);
    void *arg;
};

/* One network's loss scaling: its scaler instance and what its last step measured. */
struct gan_amp_net {
    /* The scaler instance. */
    struct gan_module *module;    /* borrowed */
    struct gan_plugin_host host;
    gan_scaler *sc;
    const char *net_name;         /* "critic", for messages */
    char description[300];

    /* The last step: the statistics the scaler is given (parameters, then the inner
     * gradients seeded with the outer scale), and what the verdict made of them. */
    struct gan_scaler_tensor *entries;
    size_t n_entries;             /* 0 before the first step */
    char inner_names[GAN_AMP_MAX_INNER][64];
    double scale_used;            /* the scale of the last backward */
    int backward;                 /* the last objective was finite and differentiated */
    int forward_overflow;         /* ... or it was not, through no inner gradient */
    double norm2;                 /* the unscaled gradient's squared norm (finite elements) */
    uint64_t f16_elements, f16_low;   /* FP16 parameter gradient elements, zero or subnormal */
    double grad_norm;             /* after the verdict: sqrt(norm2), NaN without a backward */
    double underflow_frac;        /* ... f16_low / f16_elements */
    int64_t skipped;              /* steps skipped since the run began */
    unsigned overflows;           /* GAN_AMP_OVERFLOW_* since the caller last cleared it */
    gan_tensor **grads;           /* the backward's results, step tensors */
    size_t n_params;

    struct gan_amp_hook hook;     /* optional; set and cleared by the caller */
};

/* Creates the scaler instance of `module` for the network `net_name` with n_params
 * parameters, reading its settings from `group` ("scaler", "critic.scaler"). `cfg` and
 * `log` must outlive it. */
gan_status gan_amp_net_init(struct gan_amp_net *a, struct gan_module *module, const char *group,
                            const char *net_name, size_t n_params, const gan_config *cfg,
                            const struct gan_log *log, struct gan_error *err);
void gan_amp_net_release(struct gan_amp_net *a);

/* The scale the next backward uses: the scaler's. */
double gan_amp_scale(const struct gan_amp_net *a);
/* A loss scale as the exponent people read it by: "2^13", "2^-14", "2^9.97"; "0" and
 * "inf" as they are. For the progress line and the end-of-run advice. */
void gan_amp_scale_text(char *buf, size_t size, double scale);

/* The backward of `loss` (whose value is `value`) with respect to net's parameters,
 * seeded with a->scale_used, then one pass per parameter that measures its gradient as
 * the scaler must see it and writes it, times 1/scale, into the net's FP32 gradient
 * arena — the gradient an update applies. A non-finite objective is not differentiated:
 * it is the forward's overflow unless an inner gradient the scale seeded overflowed
 * first (scaler.h). Failures go to the context. */
gan_status gan_amp_scaled_backward(struct gan_amp_net *a, gan_ctx *ctx, gan_net *net,
                                   gan_tensor *loss, double value,
                                   const struct gan_amp_inner *inner);

/* The scaler's verdict on the statistics of the last gan_amp_scaled_backward: fills *d,
 * counts a skip and the overflow kind, and enforces the core's contract (scaler.h): a
 * step whose objective or gradients are not finite is never applied — a scaler that
 * says otherwise stops training with GAN_ERR_INTERNAL naming it. `step` numbers the
 * network's steps for messages. */
gan_status gan_amp_verdict(struct gan_amp_net *a, int64_t step, struct gan_scaler_decision *d,
                           struct gan_error *err);

#endif
