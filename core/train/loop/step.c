/* SPDX-License-Identifier: MIT */
/* step.c — one training step of one network, as the paper's algorithm reads: batch,
 * objective, scaled backward, verdict, update. With more than one rank the data-parallel
 * layer takes this rank's rows and joins the ranks' values and gradients; with one it is
 * never entered. */
#include "config.h"

#include <math.h>

#include "tensor/tensor_core.h"
#include "train/loop/trainer_internal.h"

/* ------------------------------------------------------------------ batch and objective */

/* The step's inputs: real samples (critic only), z, and G(z), the generator recorded
 * only when its own step differentiates it. */
struct step_batch {
    gan_tensor *real, *z, *fake;
};

static gan_status draw_batch(gan_trainer *t, enum gan_net_role role, struct step_batch *in,
                             struct gan_error *err)
{
    gan_session *s = t->s;
    *in = (struct step_batch){ 0 };
    if (role == GAN_NET_CRITIC) {
        gan_status st = t->dp ? gan_dp_real(t->dp, &t->batch, s, &in->real, err)
                              : gan_batch_real(&t->batch, s, &in->real, err);
        if (st != GAN_OK)
            return st;
        gan_ctx_no_grad_push(s->ctx);
    }
    in->z = t->dp ? gan_dp_z(t->dp, &t->batch, s) : gan_batch_z(&t->batch, s);
    in->fake = gan_session_forward(s, GAN_NET_GENERATOR, in->z);
    if (role == GAN_NET_CRITIC)
        gan_ctx_no_grad_pop(s->ctx);
    return GAN_OK;
}

/* One value of a single-element tensor. */
static gan_status scalar_value(gan_ctx *ctx, gan_tensor *v, double *out)
{
    float f;
    if (gan_tensor_numel(v) != 1)
        return ti_fail(ctx, GAN_ERR_INVALID, "a reported value has %lld elements; it must have one",
                       (long long)gan_tensor_numel(v));
    gan_status st = gan_tensor_to_host(ctx, v, &f, 1);
    *out = f;
    return st;
}

/* The objective's value and the values its terms reported, as the metrics keep them: in
 * the order of the terms' names. A name not reported this time keeps its last value (NaN
 * before its first): a lazy term reports on the steps that compute it. */
static gan_status read_values(struct gan_metrics_sink *m, gan_ctx *ctx, enum gan_net_role role,
                              gan_tensor *loss, const struct gan_objective_sink *sink)
{
    gan_status st = scalar_value(ctx, loss, &m->latest.loss[role]);
    char **names = role == GAN_NET_CRITIC ? m->metric_names[GAN_NET_CRITIC] : m->generator_reported;
    for (size_t k = 0; st == GAN_OK && k < m->n_metrics[role]; k++) {
        gan_tensor *v = gan_objective_reported(sink, names[k]);
        st = v ? scalar_value(ctx, v, &m->latest.metric[role][k]) : GAN_OK;
    }
    return st;
}

/* The objective of `role` at the loss scale this step uses, its value and its terms'
 * values read (averaged over the ranks with more than one). */
static gan_status objective(gan_trainer *t, enum gan_net_role role, const struct step_batch *in,
                            gan_tensor **loss, struct gan_error *err)
{
    gan_session *s = t->s;
    enum gan_loss_target target = role == GAN_NET_CRITIC ? GAN_LOSS_CRITIC : GAN_LOSS_GENERATOR;
    double scale = s->amp[role].scale_used;
    struct gan_objective_sink sink = { .count = 0 };
    *loss = NULL;
    if (in->fake && (role == GAN_NET_GENERATOR || in->real))
        *loss = t->dp ? gan_dp_objective(t->dp, &t->batch, s, target, t->iteration, scale,
                                         in->real, in->fake, &sink)
                      : gan_batch_objective(&t->batch, s, target, t->iteration, scale, in->real,
                                            in->fake, &sink);
    if (!*loss || gan_ctx_status(s->ctx) != GAN_OK ||
        read_values(&t->metrics, s->ctx, role, *loss, &sink) != GAN_OK)
        return gan_session_ctx_fail(s, err, role == GAN_NET_CRITIC ? "critic step" : "generator step");
    if (!t->dp)
        return GAN_OK;
    return gan_dp_average_values(t->dp, &t->metrics.latest.loss[role], t->metrics.latest.metric[role],
                                 t->metrics.n_metrics[role], err);
}

/* ------------------------------------------------------------------ backward, verdict, update */

/* The loss scaled, its backward into the network's FP32 gradients, their statistics
 * (reduced over the ranks with more than one). */
static gan_status scaled_backward(gan_trainer *t, enum gan_net_role role, gan_tensor *loss,
                                  int64_t critic_step, struct gan_error *err)
{
    gan_session *s = t->s;
    if (gan_amp_scaled_backward(&s->amp[role], s->ctx, s->net[role], loss,
                                t->metrics.latest.loss[role], &s->inner) != GAN_OK)
        return gan_session_ctx_fail(s, err, role == GAN_NET_CRITIC ? "critic step" : "generator step");
    return t->dp ? gan_dp_reduce_grads(t->dp, s, role, t->iteration, critic_step, err) : GAN_OK;
}

/* The scaler's verdict on the step: apply or skip, and the next scale. Its step number
 * for its messages counts every backward so far. */
static gan_status verdict(gan_trainer *t, enum gan_net_role role, struct gan_scaler_decision *v,
                          struct gan_error *err)
{
    struct gan_amp_net *amp = &t->s->amp[role];
    int64_t step = gan_optimizer_steps(t->s->opt[role]) + amp->skipped;
    gan_status st = gan_amp_verdict(amp, step, v, err);
    /* Non-finite as the host measured it (an objective that had no backward, or a
     * gradient with inf or NaN), not as the scaler reports it. */
    uint64_t nonfinite = !amp->backward;
    for (size_t k = 0; k < amp->n_entries; k++)
        nonfinite += amp->entries[k].stats.nonfinite;
    if (st == GAN_OK)
        gan_divergence_count(&t->divergence_watch, role, v->skip, nonfinite > 0, t->iteration);
    return st;
}

/* gan_train_events.step, when set: the step between its verdict and its update. */
static void show_step(gan_trainer *t, enum gan_net_role role, int64_t critic_step,
                      const struct gan_scaler_decision *v, const struct step_batch *in)
{
    if (!t->events.step)
        return;
    struct gan_train_step shown = {
        .role = gan_net_role_model(role), .iteration = t->iteration, .critic_step = critic_step,
        .applied = !v->skip, .ctx = t->s->ctx, .net = t->s->net[role], .real = in->real,
        .z = in->z,
    };
    t->events.step(t->events.ctx, &shown);
}

/* The optimizer's update from the FP32 gradient in the net's arena, unless the verdict
 * skipped the step (then nothing changes). */
static gan_status update(gan_session *s, enum gan_net_role role, const struct gan_scaler_decision *v,
                         struct gan_error *err)
{
    struct gan_optimizer_report rep;
    if (v->skip)
        return GAN_OK;
    if (gan_optimizer_step_measured(s->opt[role], s->amp[role].grad_norm, &rep) != GAN_OK)
        return gan_session_ctx_fail(s, err, role == GAN_NET_CRITIC ? "critic step" : "generator step");
    return GAN_OK;
}

/* ------------------------------------------------------------------ the steps */

/* One step of `role`; critic_step is -1 for the generator. */
static gan_status step(gan_trainer *t, enum gan_net_role role, int64_t critic_step,
                       struct gan_error *err)
{
    gan_session *s = t->s;
    struct gan_amp_net *amp = &s->amp[role];
    struct step_batch in;
    struct gan_scaler_decision v;

    gan_shadow_begin(&t->shadow, s, role);
    /* FP8 operands are named for the kind of step, the fake batch's forward included. */
    gan_ctx_fp8_set_tag(s->ctx, role == GAN_NET_CRITIC ? "critic-step" : "generator-step");
    gan_status st = draw_batch(t, role, &in, err);
    if (st != GAN_OK)
        return st;
    amp->scale_used = gan_amp_scale(amp);
    /* A lazy term keys on the run's count of critic steps, which the iteration fixes:
     * a resumed run applies it at the same steps as one never stopped. */
    if (role == GAN_NET_CRITIC)
        s->objective.critic_step = t->iteration * s->set.n_critic + critic_step;
    if (role == GAN_NET_CRITIC)
        gan_shadow_step(&t->shadow, s, role, t->iteration, t->batch.loss_offset, in.real, in.fake,
                        NULL);
    else
        gan_shadow_step(&t->shadow, s, role, t->iteration, t->batch.loss_offset, NULL, NULL, in.z);
    gan_tensor *loss;
    if ((st = objective(t, role, &in, &loss, err)) != GAN_OK)
        return st;
    if ((st = scaled_backward(t, role, loss, critic_step, err)) != GAN_OK)
        return st;
    if ((st = verdict(t, role, &v, err)) != GAN_OK)
        return st;
    show_step(t, role, critic_step, &v, &in);
    if ((st = update(s, role, &v, err)) != GAN_OK)
        return st;
    t->metrics.latest.norm[role] = amp->grad_norm;
    gan_ctx_step_end(s->ctx);
    return GAN_OK;
}

gan_status gan_trainer_critic_step(gan_trainer *t, int64_t critic_step, struct gan_error *err)
{
    return step(t, GAN_NET_CRITIC, critic_step, err);
}

gan_status gan_trainer_generator_step(gan_trainer *t, struct gan_error *err)
{
    return step(t, GAN_NET_GENERATOR, -1, err);
}
