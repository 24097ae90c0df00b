/* SPDX-License-Identifier: MIT */
/* objective.h — one objective of a training step (the sum of the loss terms that contribute
 * to the critic's or the generator's), built the same way by the trainer and `ganctl grads`. */
#ifndef GAN_CORE_OBJECTIVE_H
#define GAN_CORE_OBJECTIVE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "nn/net_role.h"
#include "plugin/plugin_loader.h"

/* Most loss terms, and most scalars one objective's terms may report. */
#define GAN_OBJECTIVE_MAX_TERMS 16
#define GAN_OBJECTIVE_MAX_REPORTED 32

/* What building an objective needs, borrowed from its owner: the two models (generator,
 * critic), the loss terms in the order of loss.terms, and the per-step inputs the terms
 * read besides the batches. The owner fills it once its instances exist and updates
 * iteration and inner_scale before each objective. */
struct gan_objective {
    gan_ctx *ctx;
    struct {
        struct gan_module *module;
        gan_model *model;
    } model[GAN_NET_ROLES];
    struct {
        struct gan_module *module;
        gan_loss *loss;
        struct gan_plugin_host *host;   /* its error message names a failure */
        unsigned targets;
        const char *name;
    } term[GAN_OBJECTIVE_MAX_TERMS];
    size_t n_terms;
    uint64_t seed;                      /* run.seed: the loss stream's */
    /* critic.join_batches, where the critic's model declares its samples independent:
     * see critic_scores */
    int join_batches;
    int64_t iteration;
    /* The run's critic step the next critic objective belongs to (loss.h's critic_step),
     * counted from 0; the owner sets it before each critic objective. */
    int64_t critic_step;
    double inner_scale;                 /* the penalty's inner seed (loss.h) */
    /* loss.h's inner_grad, or NULL when nobody measures inner gradients. */
    void (*inner_grad)(void *inner_ctx, const char *name, gan_tensor *wrt, gan_tensor *grad,
                       double seed);
    void *inner_ctx;
};

/* One objective's reported scalars (loss.h's gan_metric_sink); start it zeroed. */
struct gan_objective_sink {
    const char *names[GAN_OBJECTIVE_MAX_REPORTED];
    gan_tensor *values[GAN_OBJECTIVE_MAX_REPORTED];
    size_t count;
    int overflow;
};

/* The model of `role` forward inside its network's scope. NULL when x is NULL or with
 * the failure in the context. */
gan_tensor *gan_objective_forward(const struct gan_objective *o, enum gan_net_role role,
                                  gan_ctx *ctx, gan_tensor *x);

/* The objective of `target` on a batch: the sum of the terms that contribute to it, in the
 * order of loss.terms. real (the critic's only) and alpha (NULL: the terms draw it from
 * the loss stream) are ignored for the generator's. The critic's scores are computed
 * here. Reported scalars go to sink. Returns NULL with the failure in the context; a term
 * that fails without saying why is named. */
gan_tensor *gan_objective_build(const struct gan_objective *o, enum gan_loss_target target,
                                gan_tensor *real, gan_tensor *fake, gan_tensor *alpha,
                                uint64_t *loss_offset, struct gan_objective_sink *sink);

/* The tensor a sink holds for `name`, or NULL when no term reported it. */
gan_tensor *gan_objective_reported(const struct gan_objective_sink *sink, const char *name);

#endif
