/* SPDX-License-Identifier: MIT */
/* objective.c — one objective of a training step, the sum of its loss terms on a batch, for
 * the trainer and `ganctl grads`: both must compute exactly the same thing. */
#include "config.h"

#include <string.h>

#include "nn/objective.h"
#include "tensor/tensor_core.h"

const char *const gan_net_role_names[GAN_NET_ROLES] = { "generator", "critic" };

static void sink_report(void *ctx, const char *name, gan_tensor *scalar)
{
    struct gan_objective_sink *s = ctx;
    if (!name || !scalar)
        return;
    /* A name reported again (a term reporting twice) keeps its place and the latest value. */
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->names[i], name) == 0) {
            s->values[i] = scalar;
            return;
        }
    if (s->count == GAN_OBJECTIVE_MAX_REPORTED) {
        s->overflow = 1;
        return;
    }
    s->names[s->count] = name;
    s->values[s->count++] = scalar;
}

gan_tensor *gan_objective_reported(const struct gan_objective_sink *sink, const char *name)
{
    for (size_t i = 0; i < sink->count; i++)
        if (strcmp(sink->names[i], name) == 0)
            return sink->values[i];
    return NULL;
}

gan_tensor *gan_objective_forward(const struct gan_objective *o, enum gan_net_role role,
                                  gan_ctx *ctx, gan_tensor *x)
{
    if (!x || gan_ctx_scope_push(ctx, gan_net_role_names[role]) != GAN_OK)
        return NULL;
    gan_tensor *y = o->model[role].module->model.forward(o->model[role].model, ctx, x);
    gan_ctx_scope_pop(ctx);
    return y;
}

/* loss.h's critic callback: the penalty evaluates the critic on inputs of its own. */
static gan_tensor *critic_forward(void *arg, gan_ctx *ctx, gan_tensor *x)
{
    return gan_objective_forward(arg, GAN_NET_CRITIC, ctx, x);
}

/* The critic's scores of the real and the fake batch. With critic.join_batches, where
 * the critic scores each sample on its own, both batches go through it as one of 2B
 * rows (half the products, each twice as tall, and one gradient sum per weight instead
 * of two); otherwise, or when the batches' sample shapes differ, one forward each. The
 * joined sums run in another order, so the run's numbers differ from a separate-batch
 * run's in the last bits and then drift as any reordering does: hence not the default,
 * which keeps every published figure reproducible. */
static void critic_scores(const struct gan_objective *o, gan_ctx *ctx, gan_tensor *real,
                          gan_tensor *fake, gan_tensor **d_real, gan_tensor **d_fake)
{
    int joined = o->join_batches && real && fake && gan_tensor_ndim(real) >= 1 &&
                 gan_tensor_ndim(real) == gan_tensor_ndim(fake);
    for (int d = 1; joined && d < gan_tensor_ndim(real); d++)
        joined = gan_tensor_dim(real, d) == gan_tensor_dim(fake, d);
    if (!joined) {
        *d_fake = critic_forward((void *)o, ctx, fake);
        *d_real = critic_forward((void *)o, ctx, real);
        return;
    }
    const int64_t n_real = gan_tensor_dim(real, 0), n_fake = gan_tensor_dim(fake, 0);
    gan_tensor *both = critic_forward((void *)o, ctx, gan_concat0(ctx, real, fake));
    *d_real = both ? gan_slice0(ctx, both, 0, n_real) : NULL;
    *d_fake = both ? gan_slice0(ctx, both, n_real, n_real + n_fake) : NULL;
}

gan_tensor *gan_objective_build(const struct gan_objective *o, enum gan_loss_target target,
                                gan_tensor *real, gan_tensor *fake, gan_tensor *alpha,
                                uint64_t *loss_offset, struct gan_objective_sink *sink)
{
    gan_ctx *ctx = o->ctx;
    const char *net = target == GAN_LOSS_CRITIC ? "critic" : "generator";
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.fake = fake;
    if (target == GAN_LOSS_CRITIC) {
        in.real = real;
        in.alpha = alpha;
        critic_scores(o, ctx, real, fake, &in.d_real, &in.d_fake);
    } else {
        in.d_fake = critic_forward((void *)o, ctx, fake);
    }
    in.critic = critic_forward;
    in.critic_ctx = (void *)o;
    in.seed = o->seed;
    in.offset = loss_offset;
    in.iteration = o->iteration;
    in.critic_step = target == GAN_LOSS_CRITIC ? o->critic_step : -1;
    in.inner_scale = o->inner_scale;
    in.inner_grad = o->inner_grad;
    in.inner_ctx = o->inner_ctx;
    struct gan_metric_sink ms = { sink, sink_report };
    if (!in.d_fake || (target == GAN_LOSS_CRITIC && !in.d_real))
        return NULL;
    gan_tensor *total = NULL;
    for (size_t i = 0; i < o->n_terms; i++) {
        const char *name = o->term[i].name;
        struct gan_plugin_host *host = o->term[i].host;
        if (!(o->term[i].targets & target))
            continue;
        host->error.message[0] = '\0';
        gan_tensor *v = o->term[i].module->loss.term(o->term[i].loss, ctx, target, &in, &ms);
        if (!v) {
            if (gan_ctx_status(ctx) == GAN_OK)
                ti_fail(ctx, GAN_ERR_INTERNAL, "loss \"%s\" failed: %s", name,
                        host->error.message[0] ? host->error.message : "it gave no reason");
            return NULL;
        }
        if (gan_tensor_numel(v) != 1) {
            ti_fail(ctx, GAN_ERR_INVALID,
                    "loss \"%s\" returned %lld values for the %s's objective; a term is one value",
                    name, (long long)gan_tensor_numel(v), net);
            return NULL;
        }
        total = total ? gan_add(ctx, total, v) : v;
    }
    if (sink->overflow) {
        ti_fail(ctx, GAN_ERR_INVALID, "the loss terms report more than %d values",
                GAN_OBJECTIVE_MAX_REPORTED);
        return NULL;
    }
    /* Set-up refuses a configuration that leaves a network without a term; a NULL total
     * still needs its reason in the context. */
    if (!total)
        ti_fail(ctx, GAN_ERR_CONFIG, "no term of loss.terms contributes to the %s's objective", net);
    return total;
}
