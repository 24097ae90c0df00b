/* SPDX-License-Identifier: MIT */
/* wasserstein.c — the loss-term plugin "wasserstein": the WGAN objectives, critic
 * mean D(fake) − mean D(real) and generator −mean D(fake) (or the sums, with reduction =
 * "sum"), with the W-distance estimate. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

#include "loss_common.h"

struct gan_loss {
    const struct gan_host *host;
    int sum; /* reduction = "sum": Σ over the batch instead of the mean */
};

static gan_status ws_create(const struct gan_host *host, gan_loss **out)
{
    *out = NULL;
    /* The default is the settings table's (ws_settings), which the host answers an unset
     * key with (host.h): no second copy here. */
    const char *reduction = NULL;
    gan_status st = host->get_string(host->ctx, "reduction", &reduction);
    if (st == GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss wasserstein: the host gave no value "
                          "for the setting reduction, whose default the term declares");
    if (st != GAN_OK || !reduction)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss wasserstein: the setting reduction "
                          "is not a string; write \"mean\" or \"sum\"");
    if (strcmp(reduction, "mean") != 0 && strcmp(reduction, "sum") != 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss wasserstein: reduction = \"%s\"; "
                          "write \"mean\" (the paper's means over the batch) or \"sum\" "
                          "(their sums)", reduction);
    gan_loss *l = calloc(1, sizeof *l);
    if (!l)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "loss wasserstein: out of memory");
    l->host = host;
    l->sum = strcmp(reduction, "sum") == 0;
    *out = l;
    return GAN_OK;
}

static void ws_destroy(gan_loss *l)
{
    free(l);
}

static unsigned ws_targets(gan_loss *l)
{
    (void)l;
    return GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR | GAN_LOSS_ADVERSARIAL;
}

static gan_tensor *ws_term(gan_loss *l, gan_ctx *ctx, enum gan_loss_target target,
                           const struct gan_loss_inputs *in,
                           const struct gan_metric_sink *metrics)
{
    const struct gan_host *host = l->host;
    if (!in || !in->d_fake) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss wasserstein: no critic scores of the "
                   "fake batch (d_fake) were given");
        return NULL;
    }
    if (target == GAN_LOSS_GENERATOR)
        return gan_neg(ctx, loss_reduce(ctx, in->d_fake, l->sum));
    if (target != GAN_LOSS_CRITIC) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss wasserstein: asked for objective %d; it "
                   "contributes to the critic (1) and the generator (2)", (int)target);
        return NULL;
    }
    if (!in->d_real) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss wasserstein: the critic objective needs "
                   "the critic scores of the real batch (d_real), and none were given");
        return NULL;
    }
    if (l->sum && gan_tensor_numel(in->d_fake) != gan_tensor_numel(in->d_real)) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss wasserstein: reduction = \"sum\" needs "
                   "as many real scores as fake ones (%lld and %lld were given); use "
                   "\"mean\"", (long long)gan_tensor_numel(in->d_real),
                   (long long)gan_tensor_numel(in->d_fake));
        return NULL;
    }
    gan_tensor *term = gan_sub(ctx, loss_reduce(ctx, in->d_fake, l->sum), loss_reduce(ctx, in->d_real, l->sum));
    /* The critic minimises mean D(fake) − mean D(real); its negation is the estimate of
     * the Wasserstein-1 distance that WGAN papers plot, reported as that mean whatever
     * the reduction so that runs compare. */
    loss_report(ctx, metrics, "w_distance", term,
                -(l->sum ? 1.0f / (float)gan_tensor_numel(in->d_fake) : 1.0f));
    return term;
}

static const struct gan_loss_ops ws_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = ws_create,
    .destroy = ws_destroy,
    .targets = ws_targets,
    .term = ws_term,
};

static const struct gan_setting_spec ws_settings[] = {
    { "reduction", GAN_SETTING_STRING, "mean",
      "mean (the paper) or sum of the critic scores over the batch in both objectives" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin ws_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "wasserstein",
    .version = PACKAGE_VERSION,
    .summary = "WGAN terms: critic mean D(fake) - mean D(real), generator -mean D(fake)",
    .ops = &ws_ops,
    .settings = ws_settings,
};

GAN_DEFINE_PLUGIN(ws_descriptor)
