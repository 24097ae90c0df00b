/* wasserstein.c — the loss-term plugin "wasserstein": the WGAN objectives, critic
 * mean D(fake) − mean D(real) and generator −mean D(fake), with the W-distance estimate. */
#include "config.h"

#include <stdlib.h>

#include <ganctl/ganctl.h>

struct gan_loss {
    const struct gan_host *host;
};

static gan_status ws_create(const struct gan_host *host, gan_loss **out)
{
    *out = NULL;
    gan_loss *l = calloc(1, sizeof *l);
    if (!l)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "loss wasserstein: out of memory");
    l->host = host;
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
    return GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR;
}

/* A report outside the graph: the core only reads its value. */
static void report_negated(gan_ctx *ctx, const struct gan_metric_sink *metrics,
                           const char *name, gan_tensor *value)
{
    if (!metrics || !metrics->report || !value)
        return;
    gan_ctx_no_grad_push(ctx);
    gan_tensor *r = gan_neg(ctx, value);
    gan_ctx_no_grad_pop(ctx);
    if (r)
        metrics->report(metrics->ctx, name, r);
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
        return gan_neg(ctx, gan_mean(ctx, in->d_fake, GAN_ALL_AXES, 0));
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
    gan_tensor *term = gan_sub(ctx, gan_mean(ctx, in->d_fake, GAN_ALL_AXES, 0),
                               gan_mean(ctx, in->d_real, GAN_ALL_AXES, 0));
    /* The critic minimises mean D(fake) − mean D(real); its negation is the estimate of
     * the Wasserstein-1 distance that WGAN papers plot. */
    report_negated(ctx, metrics, "w_distance", term);
    return term;
}

static const struct gan_loss_ops ws_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = ws_create,
    .destroy = ws_destroy,
    .targets = ws_targets,
    .term = ws_term,
};

static const struct gan_plugin ws_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "wasserstein",
    .version = PACKAGE_VERSION,
    .summary = "WGAN terms: critic mean D(fake) - mean D(real), generator -mean D(fake)",
    .ops = &ws_ops,
    .settings = NULL,
};

GAN_DEFINE_PLUGIN(ws_descriptor)
