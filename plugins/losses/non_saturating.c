/* SPDX-License-Identifier: MIT */
/* non_saturating.c — the loss-term plugin "non-saturating": the original GAN's logistic
 * game with the generator's non-saturating loss (Goodfellow et al. 2014), as StyleGAN2
 * trains it: critic softplus(−D(x)) + softplus(D(G(z))), generator softplus(−D(G(z))),
 * each a mean over the batch. */
#include "config.h"

#include <ganctl/ganctl.h>

#include "game_term.h"
#include "loss_common.h"

/* Written with softplus, never as log(sigmoid(·)): −log σ(d) = softplus(−d) and
 * −log(1 − σ(d)) = softplus(d), and gan_softplus takes no exponential of a positive
 * number, so a critic score of ±100 gives 100 and 0, not inf or log(0). The scores are
 * widened to FP32 first: in FP16, 1 + e^−|d| rounds to 1 once |d| > 7.7, and the loss
 * would lose the small end of its slope.
 *
 * mean softplus(sign · scores). */
static gan_tensor *mean_softplus(gan_ctx *ctx, gan_tensor *scores, float sign)
{
    gan_tensor *d = loss_scores_f32(ctx, scores);
    return loss_reduce(ctx, gan_softplus(ctx, sign < 0.0f ? gan_neg(ctx, d) : d), 0);
}

static gan_tensor *ns_term(gan_loss *l, gan_ctx *ctx, enum gan_loss_target target,
                           const struct gan_loss_inputs *in,
                           const struct gan_metric_sink *metrics)
{
    if (!game_inputs_ok(l, target, in))
        return NULL;
    if (target == GAN_LOSS_GENERATOR)
        return mean_softplus(ctx, in->d_fake, -1.0f);
    gan_tensor *term = gan_add(ctx, mean_softplus(ctx, in->d_real, -1.0f),
                               mean_softplus(ctx, in->d_fake, 1.0f));
    /* The mean scores, whose gap the critic widens: the logistic game's counterpart of
     * WGAN's w_distance. */
    loss_report_mean(ctx, metrics, "d_real", in->d_real);
    loss_report_mean(ctx, metrics, "d_fake", in->d_fake);
    return term;
}

static gan_status ns_create(const struct gan_host *host, gan_loss **out)
{
    return game_create(host, "loss non-saturating", out);
}

static const struct gan_loss_ops ns_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = ns_create,
    .destroy = game_destroy,
    .targets = game_targets,
    .term = ns_term,
};

static const struct gan_plugin ns_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "non-saturating",
    .version = PACKAGE_VERSION,
    .summary = "logistic GAN: critic softplus(-D(x)) + softplus(D(G(z))), generator softplus(-D(G(z)))",
    .ops = &ns_ops,
    .settings = NULL,
};

GAN_DEFINE_PLUGIN(ns_descriptor)
