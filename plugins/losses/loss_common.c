/* SPDX-License-Identifier: MIT */
/* loss_common.c — the helpers every shipped loss term links in (loss_common.h). */
#include "config.h"

#include <stdlib.h>

#include "loss_common.h"

gan_status loss_setting_result(const struct gan_host *host, const char *who, const char *key,
                               gan_status st, const char *what)
{
    if (st == GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "%s: the host gave no value for the "
                          "setting %s, whose default the term declares", who, key);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "%s: the setting %s is not %s", who, key,
                          what);
    return GAN_OK;
}

gan_status loss_get_float(const struct gan_host *host, const char *who, const char *key,
                          double *value)
{
    return loss_setting_result(host, who, key, host->get_float(host->ctx, key, value),
                               "a number");
}

gan_status loss_get_int(const struct gan_host *host, const char *who, const char *key,
                        long long *value)
{
    return loss_setting_result(host, who, key, host->get_int(host->ctx, key, value),
                               "a whole number");
}

void loss_free(gan_loss *l)
{
    free(l);
}

unsigned loss_critic_only(gan_loss *l)
{
    (void)l;
    return GAN_LOSS_CRITIC;
}

gan_tensor *loss_reduce(gan_ctx *ctx, gan_tensor *t, int sum)
{
    return sum ? gan_sum(ctx, t, GAN_ALL_AXES, 0) : gan_mean(ctx, t, GAN_ALL_AXES, 0);
}

void loss_report(gan_ctx *ctx, const struct gan_metric_sink *metrics, const char *name,
                 gan_tensor *value, float factor)
{
    if (!metrics || !metrics->report || !value)
        return;
    gan_ctx_no_grad_push(ctx);
    gan_tensor *r = factor == 1.0f ? value : gan_scale(ctx, value, factor);
    gan_ctx_no_grad_pop(ctx);
    if (r)
        metrics->report(metrics->ctx, name, r);
}

void loss_report_mean(gan_ctx *ctx, const struct gan_metric_sink *metrics, const char *name,
                      gan_tensor *scores)
{
    if (!metrics || !metrics->report || !scores)
        return;
    gan_ctx_no_grad_push(ctx);
    gan_tensor *m = loss_reduce(ctx, loss_scores_f32(ctx, scores), 0);
    gan_ctx_no_grad_pop(ctx);
    if (m)
        metrics->report(metrics->ctx, name, m);
}

gan_tensor *loss_detached(gan_ctx *ctx, gan_tensor *t)
{
    return !t || !gan_tensor_requires_grad(t) ? t : loss_copy(ctx, t);
}

gan_tensor *loss_copy(gan_ctx *ctx, gan_tensor *t)
{
    if (!t)
        return NULL;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    int n = gan_tensor_ndim(t);
    for (int d = 0; d < n; d++)
        dims[d] = gan_tensor_dim(t, d);
    gan_tensor *c = gan_tensor_new(ctx, gan_tensor_dtype(t), n, dims);
    if (!c || gan_tensor_copy(ctx, c, t) != GAN_OK)
        return NULL;
    return c;
}

gan_tensor *loss_scores_f32(gan_ctx *ctx, gan_tensor *scores)
{
    if (!scores || gan_tensor_dtype(scores) == GAN_F32)
        return scores;
    return gan_cast(ctx, scores, GAN_F32);
}

gan_tensor *loss_inner_sum_squares(gan_ctx *ctx, const struct gan_loss_inputs *in,
                                   gan_tensor *d, gan_tensor *x, const char *name,
                                   float fallback)
{
    float inner = in->inner_scale > 0.0 ? (float)in->inner_scale : fallback;
    int64_t ddims[GAN_TENSOR_MAX_DIMS];
    int dn = gan_tensor_ndim(d);
    for (int k = 0; k < dn; k++)
        ddims[k] = gan_tensor_dim(d, k);
    gan_tensor *seed = gan_tensor_full(ctx, gan_tensor_dtype(d), dn, ddims, inner);
    gan_tensor *g = NULL;
    if (!seed || gan_grad(ctx, 1, &d, &seed, 1, &x, &g, 1) != GAN_OK)
        return NULL;
    if (in->inner_grad)
        in->inner_grad(in->inner_ctx, name, x, g, (double)inner);
    if (inner != 1.0f)
        g = gan_scale(ctx, g, 1.0f / inner);
    int64_t batch = gan_tensor_dim(x, 0);
    int64_t flat[2] = { batch, gan_tensor_numel(x) / batch };
    gan_tensor *sumsq = gan_sum(ctx, gan_square(ctx, gan_reshape(ctx, g, 2, flat)), 1, 0);
    if (sumsq && gan_tensor_dtype(sumsq) != GAN_F32)
        sumsq = gan_cast(ctx, sumsq, GAN_F32);
    return sumsq;
}
