/* SPDX-License-Identifier: MIT */
/* r1.c — the loss-term plugin "r1": the R1 penalty (Mescheder et al. 2018), γ/2 ·
 * mean ‖∇ₓD(x)‖² over the real batch, applied lazily as StyleGAN2 does (every k-th
 * critic step with weight k·γ/2, none between); with samples = "fake", R2, the same on
 * the generator's samples. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

#include "loss_common.h"

/* Lazy regularisation (Karras et al. 2020, StyleGAN2 §3.1): the penalty's double
 * backward is the costliest part of a critic step, and applying it on 1 step in k with
 * k times the weight trains as well. The step is chosen by the run's critic step count
 * (loss.h's critic_step), so a resumed run applies it where a run never stopped would,
 * with nothing of the term's own to save. With k = 1 every step carries γ/2 · penalty,
 * the plain term. */
struct gan_loss {
    const struct gan_host *host;
    float weight;                 /* k·γ/2, the factor on the steps that carry it */
    long long interval;           /* k */
    int on_fake;                  /* samples = "fake": R2 */
};

static const char who[] = "loss r1";

static gan_status r1_create(const struct gan_host *host, gan_loss **out)
{
    *out = NULL;
    double gamma;
    long long interval;
    const char *samples = NULL;
    gan_status st;
    if ((st = loss_get_float(host, who, "gamma", &gamma)) != GAN_OK ||
        (st = loss_get_int(host, who, "interval", &interval)) != GAN_OK ||
        (st = loss_setting_result(host, who, "samples",
                                  host->get_string(host->ctx, "samples", &samples),
                                  "a string; write \"real\" or \"fake\"")) != GAN_OK)
        return st;
    if (!isfinite(gamma) || gamma < 0.0 || gamma > 1e30)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "%s: gamma = %g; the penalty weight γ "
                          "must be finite and 0 or more (StyleGAN2 uses 0.01 to 10, by the "
                          "data set)", who, gamma);
    if (interval < 1 || interval > 1000000)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "%s: interval = %lld; the lazy interval "
                          "k must be a whole number from 1 (every critic step) to 1000000 "
                          "(StyleGAN2 uses 16)", who, interval);
    if (!samples || (strcmp(samples, "real") != 0 && strcmp(samples, "fake") != 0))
        return host->fail(host->ctx, GAN_ERR_CONFIG, "%s: samples = \"%s\"; write \"real\" "
                          "(R1, the penalty on the data) or \"fake\" (R2, on the generator's "
                          "samples)", who, samples ? samples : "");
    gan_loss *l = calloc(1, sizeof *l);
    if (!l)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "%s: out of memory", who);
    l->host = host;
    l->interval = interval;
    l->weight = (float)((double)interval * gamma / 2.0);
    l->on_fake = strcmp(samples, "fake") == 0;
    *out = l;
    return GAN_OK;
}


/* mean over the batch of ‖∇ₓD(x)‖², from checked inputs, inside the "penalty" scope. */
static gan_tensor *r1_penalty(gan_loss *l, gan_ctx *ctx, const struct gan_loss_inputs *in,
                              gan_tensor *samples)
{
    /* x, cut from the generator's graph (R2 trains the critic only) and marked, so that
     * the critic's gradient with respect to it can be asked for. */
    gan_tensor *x = loss_copy(ctx, samples);
    if (!x)
        return NULL;
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor *d = in->critic(in->critic_ctx, ctx, x);
    if (!d)
        return NULL;
    /* The inner gradient as gradient-penalty takes it (loss_common.h), seeded with
     * the host's scale, else 1. */
    gan_tensor *sumsq = loss_inner_sum_squares(ctx, in, d, x,
                                               l->on_fake ? "r2.inner" : "r1.inner", 1.0f);
    return gan_mean(ctx, sumsq, GAN_ALL_AXES, 0);
}

static gan_tensor *r1_term(gan_loss *l, gan_ctx *ctx, enum gan_loss_target target,
                           const struct gan_loss_inputs *in,
                           const struct gan_metric_sink *metrics)
{
    const struct gan_host *host = l->host;
    gan_tensor *samples = in ? (l->on_fake ? in->fake : in->real) : NULL;
    if (target != GAN_LOSS_CRITIC || !samples || !in->critic || in->critic_step < 0 ||
        gan_tensor_ndim(samples) < 1 || gan_tensor_dim(samples, 0) < 1) {
        host->fail(host->ctx, GAN_ERR_INVALID, "%s: %s", who, target != GAN_LOSS_CRITIC
                   ? "asked for an objective other than the critic's (1), the only one it "
                     "contributes to"
                   : !samples ? "the critic objective needs the batch it penalises"
                   : !in->critic ? "the critic objective needs the critic"
                   : in->critic_step < 0 ? "the host gave no critic step (it needs plugin ABI 1.5)"
                   : "the batch it penalises is empty");
        return NULL;
    }
    /* Between its steps the term is an exact zero outside the graph: adding it changes
     * no bit of the objective. */
    if (in->critic_step % l->interval != 0)
        return gan_tensor_full(ctx, GAN_F32, 0, NULL, 0.0f);
    /* Everything the penalty computes runs in the scope "penalty", as gradient-penalty's
     * does, so that precision.fp32 = ["penalty"] keeps it in FP32. */
    if (gan_ctx_scope_push(ctx, "penalty") != GAN_OK)
        return NULL;
    gan_tensor *penalty = r1_penalty(l, ctx, in, samples);
    gan_ctx_scope_pop(ctx);
    if (!penalty)
        return NULL;
    gan_tensor *term = gan_scale(ctx, penalty, l->weight);
    /* The plain mean of ‖∇D‖², reported only on the steps that compute it. */
    loss_report(ctx, metrics, l->on_fake ? "r2" : "r1", penalty, 1.0f);
    return term;
}

static const struct gan_loss_ops r1_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = r1_create,
    .destroy = loss_free,
    .targets = loss_critic_only,
    .term = r1_term,
};

static const struct gan_setting_spec r1_settings[] = {
    { "gamma", GAN_SETTING_FLOAT, "10.0",
      "the penalty weight: the term is gamma/2 * mean |grad_x D(x)|^2" },
    { "interval", GAN_SETTING_INT, "16",
      "lazy interval k: applied on every k-th critic step with weight k*gamma/2; 1 = every step" },
    { "samples", GAN_SETTING_STRING, "real",
      "real (R1, the penalty on the data) or fake (R2, on the generator's samples)" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin r1_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "r1",
    .version = PACKAGE_VERSION,
    .summary = "R1: gamma/2 * mean |grad_x D(x)|^2 on real samples, lazily every k critic steps",
    .ops = &r1_ops,
    .settings = r1_settings,
};

GAN_DEFINE_PLUGIN(r1_descriptor)
