/* SPDX-License-Identifier: MIT */
/* hinge.c — the loss-term plugin "hinge": the hinge game of SNGAN and BigGAN (Lim & Ye
 * 2017, Miyato et al. 2018), critic mean relu(1 − D(x)) + mean relu(1 + D(G(z))),
 * generator −mean D(G(z)). */
#include "config.h"

#include <ganctl/ganctl.h>

#include "game_term.h"
#include "loss_common.h"

/* mean relu(1 + sign · scores), in FP32 as the other losses' sums are: a margin of 1
 * beside scores of a few hundred keeps its bits. */
static gan_tensor *mean_hinge(gan_ctx *ctx, gan_tensor *scores, float sign)
{
    gan_tensor *d = loss_scores_f32(ctx, scores);
    return loss_reduce(ctx, gan_relu(ctx, gan_add_scalar(ctx, sign < 0.0f ? gan_neg(ctx, d) : d,
                                                         1.0f)), 0);
}

static gan_tensor *hinge_term(gan_loss *l, gan_ctx *ctx, enum gan_loss_target target,
                              const struct gan_loss_inputs *in,
                              const struct gan_metric_sink *metrics)
{
    if (!game_inputs_ok(l, target, in))
        return NULL;
    if (target == GAN_LOSS_GENERATOR)
        return gan_neg(ctx, loss_reduce(ctx, loss_scores_f32(ctx, in->d_fake), 0));
    gan_tensor *term = gan_add(ctx, mean_hinge(ctx, in->d_real, -1.0f),
                               mean_hinge(ctx, in->d_fake, 1.0f));
    loss_report_mean(ctx, metrics, "d_real", in->d_real);
    loss_report_mean(ctx, metrics, "d_fake", in->d_fake);
    return term;
}

static gan_status hinge_create(const struct gan_host *host, gan_loss **out)
{
    return game_create(host, "loss hinge", out);
}

static const struct gan_loss_ops hinge_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = hinge_create,
    .destroy = game_destroy,
    .targets = game_targets,
    .term = hinge_term,
};

static const struct gan_plugin hinge_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "hinge",
    .version = PACKAGE_VERSION,
    .summary = "hinge GAN: critic relu(1 - D(x)) + relu(1 + D(G(z))), generator -D(G(z))",
    .ops = &hinge_ops,
    .settings = NULL,
};

GAN_DEFINE_PLUGIN(hinge_descriptor)
