/* SPDX-License-Identifier: MIT */
/* gradient_penalty.c — the loss-term plugin "gradient-penalty": WGAN-GP's critic term
 * λ·mean((‖∇ₓD(x̂)‖₂ − target)²) at random interpolates x̂ of real and fake samples (the
 * sum over the batch instead of the mean with reduction = "sum"). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

#include "loss_common.h"

/* The norm is sqrt(Σ g² + eps), not sqrt(Σ g²); eps is the setting "eps", 1e-12 unless
 * set, and 0 gives the paper's plain norm.
 *
 * Why: d sqrt(s)/ds = 1/(2·sqrt(s)) is infinite at s = 0, and the chain rule multiplies
 * it by ds/dg = 2g = 0, so a sample whose gradient is exactly zero (a dead ReLU
 * critic, an FP16 gradient that underflowed, a critic with zero weights) turns the
 * whole penalty gradient into NaN. With eps = 1e-12 the factor is at most 1/(2·1e-6)
 * = 5e5, times 0: the sample contributes a zero gradient, which is also what PyTorch
 * gives — its vector-norm backward defines the derivative at a zero vector as 0 — and
 * what TensorFlow's tf.sqrt(tf.reduce_sum(tf.square(g))) in the original code does not
 * (NaN). eps = 0 keeps that NaN, for reproducing the original code's failure.
 *
 * What it changes: the norm is at least sqrt(eps) (so a zero gradient is penalised as
 * (sqrt(eps) − target)², (1e-6 − target)² by default, instead of target²), and for a
 * norm n it adds about eps/(2n): with the default below FP32's resolution of n² once
 * n ≳ 0.01, i.e. the value is bit-identical there. The sum of squares is taken to FP32
 * before eps is added, since FP16 would round 1e-12 to zero and bring the NaN back.
 * The default, 1e-12, is the settings table's (gp_settings). */

struct gan_loss {
    const struct gan_host *host;
    float lambda;
    float target;
    int one_sided;
    float inner_scale;
    float eps;                    /* added to Σ g² under the norm's square root */
    int sum;                      /* reduction = "sum": Σ over the batch instead of the mean */
};

/* ------------------------------------------------------------------ settings */

static const char who[] = "loss gradient-penalty";

static gan_status gp_create(const struct gan_host *host, gan_loss **out)
{
    *out = NULL;
    double lambda, target, inner_scale, eps;
    int one_sided = 0;
    const char *reduction = NULL;
    gan_status st;
    if ((st = loss_get_float(host, who, "lambda", &lambda)) != GAN_OK
        || (st = loss_get_float(host, who, "target", &target)) != GAN_OK
        || (st = loss_get_float(host, who, "inner_scale", &inner_scale)) != GAN_OK
        || (st = loss_get_float(host, who, "eps", &eps)) != GAN_OK
        || (st = loss_setting_result(host, who, "one_sided", host->get_bool(host->ctx, "one_sided", &one_sided),
                             "a boolean; write true or false")) != GAN_OK
        || (st = loss_setting_result(host, who, "reduction",
                             host->get_string(host->ctx, "reduction", &reduction),
                             "a string; write \"mean\" or \"sum\"")) != GAN_OK)
        return st;
    if (!reduction)
        return loss_setting_result(host, who, "reduction", GAN_ERR_INVALID, "a string; write \"mean\" or \"sum\"");
    if (!isfinite(lambda) || lambda < 0.0 || lambda > 1e30)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss gradient-penalty: lambda = %g; "
                          "the penalty weight must be finite and 0 or more (10 in the paper, "
                          "0.1 for the toys)", lambda);
    if (!isfinite(target) || target < 0.0 || target > 1e30)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss gradient-penalty: target = %g; "
                          "the target gradient norm must be finite and 0 or more (1 is the "
                          "Lipschitz constant WGAN-GP enforces)", target);
    if (!isfinite(inner_scale) || !(inner_scale > 0.0) || inner_scale > 1e30)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss gradient-penalty: inner_scale = "
                          "%g; the scale of the inner gradient's seed must be a positive "
                          "finite number (1 = no scaling)", inner_scale);
    /* At most 1e30, like the others, so that the FP32 copy stays finite. */
    if (!isfinite(eps) || eps < 0.0 || eps > 1e30)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss gradient-penalty: eps = %g; the "
                          "guard added under the norm's square root must be a finite number, "
                          "0 or more (1e-12 keeps a zero gradient's derivative finite; 0 is "
                          "the paper's plain norm, NaN there)", eps);
    if (strcmp(reduction, "mean") != 0 && strcmp(reduction, "sum") != 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "loss gradient-penalty: reduction = "
                          "\"%s\"; write \"mean\" (the paper's mean over the batch) or "
                          "\"sum\" (its sum)", reduction);
    gan_loss *l = calloc(1, sizeof *l);
    if (!l)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "loss gradient-penalty: out of memory");
    l->sum = strcmp(reduction, "sum") == 0;
    l->host = host;
    l->lambda = (float)lambda;
    l->target = (float)target;
    l->one_sided = one_sided != 0;
    l->inner_scale = (float)inner_scale;
    l->eps = (float)eps;
    *out = l;
    return GAN_OK;
}


/* ------------------------------------------------------------------ the term */

static int same_shape(const gan_tensor *a, const gan_tensor *b)
{
    int n = gan_tensor_ndim(a);
    if (n != gan_tensor_ndim(b))
        return 0;
    for (int d = 0; d < n; d++)
        if (gan_tensor_dim(a, d) != gan_tensor_dim(b, d))
            return 0;
    return 1;
}

/* The term itself, from checked inputs; runs inside the "penalty" scope. */
static gan_tensor *gp_compute(gan_loss *l, gan_ctx *ctx, const struct gan_loss_inputs *in,
                              const struct gan_metric_sink *metrics, int ndim, int64_t batch);

static gan_tensor *gp_term(gan_loss *l, gan_ctx *ctx, enum gan_loss_target target,
                           const struct gan_loss_inputs *in,
                           const struct gan_metric_sink *metrics)
{
    const struct gan_host *host = l->host;
    if (target != GAN_LOSS_CRITIC) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss gradient-penalty: asked for objective "
                   "%d; it contributes to the critic's objective (1) only", (int)target);
        return NULL;
    }
    /* The stream is needed only when α is drawn. */
    if (!in || !in->real || !in->fake || !in->critic || (!in->offset && !in->alpha)) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss gradient-penalty: the critic objective "
                   "needs the real and fake batches, the critic and the random stream (or "
                   "given alpha); %s is missing", !in ? "everything" : !in->real ? "real"
                   : !in->fake ? "fake" : !in->critic ? "critic" : "offset");
        return NULL;
    }
    int ndim = gan_tensor_ndim(in->real);
    if (ndim < 1 || !same_shape(in->real, in->fake) || gan_tensor_dim(in->real, 0) < 1) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss gradient-penalty: real and fake batches "
                   "must have the same shape [B, sample...] with B ≥ 1 (real has %d "
                   "dimensions, fake %d)", ndim, gan_tensor_ndim(in->fake));
        return NULL;
    }
    int64_t batch = gan_tensor_dim(in->real, 0);
    if (in->alpha && gan_tensor_numel(in->alpha) != batch) {
        host->fail(host->ctx, GAN_ERR_INVALID, "loss gradient-penalty: the given alpha has "
                   "%lld values for a batch of %lld; give one per sample, shaped [%lld, 1]",
                   (long long)gan_tensor_numel(in->alpha), (long long)batch, (long long)batch);
        return NULL;
    }
    /* Everything the penalty computes — x̂, the critic's forward on it, the inner
     * gradient and the norm — runs in the scope "penalty", so that the precision policy
     * pattern "penalty" keeps all of it in FP32 (the backward passes run in the scope
     * of the nodes they differentiate, so they follow). */
    if (gan_ctx_scope_push(ctx, "penalty") != GAN_OK)
        return NULL;
    gan_tensor *term = gp_compute(l, ctx, in, metrics, ndim, batch);
    gan_ctx_scope_pop(ctx);
    return term;
}

static gan_tensor *gp_compute(gan_loss *l, gan_ctx *ctx, const struct gan_loss_inputs *in,
                              const struct gan_metric_sink *metrics, int ndim, int64_t batch)
{
    gan_tensor *real = loss_detached(ctx, in->real), *fake = loss_detached(ctx, in->fake);
    if (!real || !fake)
        return NULL;

    /* α ~ U(0, 1), one per sample, [B, 1, …, 1] so that it broadcasts over the sample's
     * dimensions; B numbers take ceil(B / 4) blocks of the stream. A given α (checked
     * by gp_term) takes the same layout and dtype, cut from any graph, and draws nothing. */
    int64_t adims[GAN_TENSOR_MAX_DIMS];
    adims[0] = batch;
    for (int d = 1; d < ndim; d++)
        adims[d] = 1;
    gan_tensor *alpha;
    if (in->alpha) {
        alpha = gan_reshape(ctx, loss_detached(ctx, in->alpha), ndim, adims);
        if (alpha && gan_tensor_dtype(alpha) != gan_tensor_dtype(real))
            alpha = gan_cast(ctx, alpha, gan_tensor_dtype(real));
    } else {
        alpha = gan_tensor_uniform(ctx, gan_tensor_dtype(real), ndim, adims, in->seed,
                                   *in->offset, 0.0f, 1.0f);
        if (alpha)
            *in->offset += (uint64_t)(batch + 3) / 4;
    }
    if (!alpha)
        return NULL;

    /* x̂ = α·real + (1 − α)·fake, written fake + α·(real − fake): one op fewer. Built from
     * constants, so it is a leaf; marked, the critic's gradient with respect to it can be
     * asked for. */
    gan_tensor *xhat = gan_add(ctx, fake, gan_mul(ctx, alpha, gan_sub(ctx, real, fake)));
    if (!xhat)
        return NULL;
    gan_tensor_set_requires_grad(xhat, 1);
    gan_tensor *d = in->critic(in->critic_ctx, ctx, xhat);
    if (!d)
        return NULL;

    /* Σ (∇ₓ̂ D(x̂))² per sample, the gradient seeded with the host's scale (the critic's
     * loss scale or penalty.inner_scale), else the inner_scale setting (loss_common.h). */
    gan_tensor *sumsq = loss_inner_sum_squares(ctx, in, d, xhat, "penalty.inner",
                                               l->inner_scale);
    /* eps = 0 adds nothing, so the op is left out: the paper's norm, op for op. */
    gan_tensor *norm = gan_sqrt(ctx, l->eps > 0.0f ? gan_add_scalar(ctx, sumsq, l->eps) : sumsq);
    gan_tensor *dev = gan_add_scalar(ctx, norm, -l->target);
    /* One-sided: only norms above the target are penalised (max(0, ‖g‖ − target)²). */
    if (l->one_sided)
        dev = gan_relu(ctx, dev);
    gan_tensor *sq = gan_square(ctx, dev);
    gan_tensor *penalty = l->sum ? gan_sum(ctx, sq, GAN_ALL_AXES, 0)
                                 : gan_mean(ctx, sq, GAN_ALL_AXES, 0);
    gan_tensor *term = gan_scale(ctx, penalty, l->lambda);
    if (!term)
        return NULL;

    /* The metric stays the batch mean whatever the reduction, so runs compare. */
    gan_ctx_no_grad_push(ctx);
    gan_tensor *shown = l->sum ? gan_scale(ctx, penalty, 1.0f / (float)batch) : penalty;
    gan_ctx_no_grad_pop(ctx);
    loss_report(ctx, metrics, "penalty", shown, 1.0f);
    gan_ctx_no_grad_push(ctx);
    gan_tensor *mean_norm = gan_mean(ctx, norm, GAN_ALL_AXES, 0);
    gan_ctx_no_grad_pop(ctx);
    loss_report(ctx, metrics, "grad_norm", mean_norm, 1.0f);
    return term;
}

/* ------------------------------------------------------------------ descriptor */

static const struct gan_loss_ops gp_ops = {
    .struct_size = sizeof(struct gan_loss_ops),
    .create = gp_create,
    .destroy = loss_free,
    .targets = loss_critic_only,
    .term = gp_term,
};

static const struct gan_setting_spec gp_settings[] = {
    { "lambda", GAN_SETTING_FLOAT, "10.0", "penalty weight (the WGAN-GP toys use 0.1)" },
    { "target", GAN_SETTING_FLOAT, "1.0", "the gradient norm the penalty pulls toward" },
    { "one_sided", GAN_SETTING_BOOL, "false", "penalise only norms above the target" },
    { "inner_scale", GAN_SETTING_FLOAT, "1.0",
      "seed of the inner gradient, divided out before the norm, when the host gives none "
      "(ganctl gives penalty.inner_scale)" },
    { "eps", GAN_SETTING_FLOAT, "1e-12",
      "added to the sum of squares under the norm's square root, so that a zero gradient "
      "has a finite derivative; 0 = the paper's plain norm, whose derivative there is NaN" },
    { "reduction", GAN_SETTING_STRING, "mean",
      "mean (the paper) or sum of the per-sample penalties over the batch" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin gp_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_LOSS,
    .name = "gradient-penalty",
    .version = PACKAGE_VERSION,
    .summary = "WGAN-GP: lambda * mean((|grad_x D(x_hat)| - 1)^2) at random interpolates",
    .ops = &gp_ops,
    .settings = gp_settings,
};

GAN_DEFINE_PLUGIN(gp_descriptor)
