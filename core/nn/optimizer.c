/* SPDX-License-Identifier: MIT */
/* optimizer.c — Adam with FP32 master weights over a gan_net: moments in flat arenas laid
 * out like the gradient arena, the backend's fused update per parameter, global-norm clipping. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/optimizer.h"
#include "tensor/tensor_core.h"

struct gan_optimizer {
    gan_net *net;
    struct gan_adam_settings s;
    gan_tensor *m, *v;            /* [total] F32, persistent; NULL for an empty net */
    int64_t steps;
    double lr_scale;
};

static int finite_at_least(double x, double lo)
{
    return isfinite(x) && x >= lo;
}

static gan_status check_settings(gan_ctx *ctx, const char *net, const struct gan_adam_settings *s)
{
    const char *op = "gan_optimizer_new";
    if (!finite_at_least(s->lr, 0.0))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: %s: lr is %g; it must be a finite number >= 0",
                       op, net, s->lr);
    if (!(s->beta1 >= 0.0 && s->beta1 < 1.0))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: %s: beta1 is %g; it must be in [0, 1)", op,
                       net, s->beta1);
    if (!(s->beta2 >= 0.0 && s->beta2 < 1.0))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: %s: beta2 is %g; it must be in [0, 1)", op,
                       net, s->beta2);
    if (!(isfinite(s->eps) && s->eps > 0.0))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: %s: eps is %g; it must be a finite number > 0",
                       op, net, s->eps);
    if (!finite_at_least(s->weight_decay, 0.0))
        return ti_fail(ctx, GAN_ERR_INVALID,
                       "%s: %s: weight_decay is %g; it must be a finite number >= 0", op, net,
                       s->weight_decay);
    if (!finite_at_least(s->clip_norm, 0.0))
        return ti_fail(ctx, GAN_ERR_INVALID,
                       "%s: %s: clip_norm is %g; it must be a finite number >= 0 (0 turns clipping off)",
                       op, net, s->clip_norm);
    return GAN_OK;
}

static const char *net_label(const gan_net *net)
{
    const char *p = gan_net_prefix(net);
    return *p ? p : "network";
}

gan_status gan_optimizer_new(gan_net *net, const struct gan_adam_settings *settings,
                             gan_optimizer **out)
{
    if (!out)
        return GAN_ERR_INVALID;
    *out = NULL;
    if (!net || !settings)
        return net ? ti_fail(gan_net_ctx(net), GAN_ERR_INVALID,
                             "gan_optimizer_new: settings is NULL") : GAN_ERR_INVALID;
    gan_ctx *ctx = gan_net_ctx(net);
    gan_status st = check_settings(ctx, net_label(net), settings);
    if (st != GAN_OK)
        return st;
    gan_optimizer *opt = calloc(1, sizeof *opt);
    if (!opt)
        return ti_fail(ctx, GAN_ERR_NOMEM, "gan_optimizer_new: out of host memory");
    opt->net = net;
    opt->s = *settings;
    opt->lr_scale = 1.0;
    int64_t total = gan_net_total(net);
    if (total > 0) {
        /* Zero moments, as Adam starts; the gradient arena is made now too, so that the
         * net is closed to new parameters before the layouts are relied on. */
        int64_t dims[1] = { total };
        opt->m = gan_tensor_new_persistent(ctx, GAN_F32, 1, dims);
        opt->v = opt->m ? gan_tensor_new_persistent(ctx, GAN_F32, 1, dims) : NULL;
        if (!opt->v || ti_fill(ctx, "gan_optimizer_new", opt->m, 0.0f) != GAN_OK ||
            ti_fill(ctx, "gan_optimizer_new", opt->v, 0.0f) != GAN_OK || !gan_net_grads(net)) {
            gan_optimizer_free(opt);
            return ti_result(ctx, 0);
        }
    }
    *out = opt;
    return GAN_OK;
}

void gan_optimizer_free(gan_optimizer *opt)
{
    if (!opt)
        return;
    gan_tensor_free(opt->m);
    gan_tensor_free(opt->v);
    free(opt);
}

gan_status gan_optimizer_grad_norm(gan_optimizer *opt, double *norm, uint64_t *nonfinite)
{
    const char *op = "gan_optimizer_grad_norm";
    gan_ctx *ctx = gan_net_ctx(opt->net);
    *norm = 0.0;
    if (nonfinite)
        *nonfinite = 0;
    int64_t total = gan_net_total(opt->net);
    if (total == 0)
        return GAN_OK;
    gan_tensor *grads = gan_net_grads(opt->net);
    if (!grads)
        return ti_result(ctx, 0);
    if (!TI_HAS(ctx, op, grad_stats))
        return ti_result(ctx, 0);
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    struct gan_ref x = { gan_tensor_buffer(grads), 0, gan_tensor_dtype(grads) };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    struct gan_grad_stats stats;
    memset(&stats, 0, sizeof stats);
    gan_status st = ops->grad_stats(gan_ctx_backend(ctx), (size_t)total, &x, 1.0f, &none, &stats);
    if (st != GAN_OK)
        return ti_backend_fail(ctx, op, "grad_stats", st);
    *norm = sqrt(stats.sum_squares);
    if (nonfinite)
        *nonfinite = stats.nonfinite;
    return GAN_OK;
}

/* Clipping and the fused update, from a norm already measured over finite gradients. */
static gan_status apply(gan_optimizer *opt, const char *op, struct gan_optimizer_report rep,
                        struct gan_optimizer_report *report)
{
    gan_net *net = opt->net;
    gan_ctx *ctx = gan_net_ctx(net);
    gan_status st;
    /* torch.nn.utils.clip_grad_norm_'s rule: scale by max / (norm + 1e-6) when that is
     * below 1, so a norm at the bound is left alone. */
    if (opt->s.clip_norm > 0.0) {
        double f = opt->s.clip_norm / (rep.grad_norm + 1e-6);
        if (f < 1.0)
            rep.clip_factor = f;
    }
    if (report)
        *report = rep;
    if (gan_net_total(net) == 0) {
        opt->steps++;
        return GAN_OK;
    }
    if (!TI_HAS(ctx, op, adam))
        return ti_result(ctx, 0);
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    struct gan_adam p = {
        .lr = (float)(opt->s.lr * opt->lr_scale), .beta1 = (float)opt->s.beta1, .beta2 = (float)opt->s.beta2,
        .eps = (float)opt->s.eps, .weight_decay = (float)opt->s.weight_decay,
        .step = opt->steps + 1, .grad_scale = (float)rep.clip_factor,
    };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    for (size_t i = 0; i < gan_net_count(net); i++) {
        int64_t n = gan_net_numel(net, i);
        if (n == 0)
            continue;
        gan_tensor *t = gan_net_tensor(net, i);
        struct gan_ref param = { gan_tensor_buffer(t), 0, gan_tensor_dtype(t) };
        struct gan_ref grad = gan_net_grad_ref(net, i);
        if (!grad.buf)
            return ti_result(ctx, 0);
        size_t at = (size_t)gan_net_offset(net, i);
        struct gan_ref m = { gan_tensor_buffer(opt->m), at, GAN_F32 };
        struct gan_ref v = { gan_tensor_buffer(opt->v), at, GAN_F32 };
        st = ops->adam(gan_ctx_backend(ctx), &p, (size_t)n, &param, &grad, &m, &v, &none);
        if (st != GAN_OK)
            return ti_backend_fail(ctx, op, "adam", st);
    }
    opt->steps++;
    return GAN_OK;
}

gan_status gan_optimizer_step(gan_optimizer *opt, struct gan_optimizer_report *report)
{
    const char *op = "gan_optimizer_step";
    if (!opt)
        return GAN_ERR_INVALID;
    gan_net *net = opt->net;
    gan_ctx *ctx = gan_net_ctx(net);
    struct gan_optimizer_report rep = { 0.0, 1.0, 0 };
    gan_status st = gan_optimizer_grad_norm(opt, &rep.grad_norm, &rep.nonfinite);
    if (report)
        *report = rep;
    if (st != GAN_OK)
        return st;
    if (rep.nonfinite)
        return ti_fail(ctx, GAN_ERR_NUMERIC,
                       "%s: the %s's gradient has %llu inf or NaN values after step %lld: the run "
                       "diverged; lower the learning rate, or set a clip_norm",
                       op, net_label(net), (unsigned long long)rep.nonfinite,
                       (long long)opt->steps);
    return apply(opt, op, rep, report);
}

gan_status gan_optimizer_step_measured(gan_optimizer *opt, double grad_norm,
                                       struct gan_optimizer_report *report)
{
    const char *op = "gan_optimizer_step_measured";
    if (!opt)
        return GAN_ERR_INVALID;
    struct gan_optimizer_report rep = { grad_norm, 1.0, 0 };
    if (report)
        *report = rep;
    if (!(grad_norm >= 0.0) || isinf(grad_norm))
        return ti_fail(gan_net_ctx(opt->net), GAN_ERR_INVALID,
                       "%s: the %s's gradient norm is %g; measure a finite gradient first",
                       op, net_label(opt->net), grad_norm);
    return apply(opt, op, rep, report);
}

void gan_optimizer_set_lr_scale(gan_optimizer *opt, double scale)
{
    if (opt && scale >= 0.0 && isfinite(scale))
        opt->lr_scale = scale;
}

int64_t gan_optimizer_steps(const gan_optimizer *opt)
{
    return opt ? opt->steps : 0;
}

void gan_optimizer_set_steps(gan_optimizer *opt, int64_t steps)
{
    if (opt && steps >= 0)
        opt->steps = steps;
}

const struct gan_adam_settings *gan_optimizer_settings(const gan_optimizer *opt)
{
    return &opt->s;
}

gan_net *gan_optimizer_net(const gan_optimizer *opt)
{
    return opt->net;
}

static gan_tensor *moment(gan_optimizer *opt, int which, size_t count, const char *op)
{
    gan_ctx *ctx = gan_net_ctx(opt->net);
    if (which != 0 && which != 1) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: moment %d; 0 is the first, 1 the second", op, which);
        return NULL;
    }
    if (count != (size_t)gan_net_total(opt->net)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: count is %zu but the %s has %lld parameter elements",
                op, count, net_label(opt->net), (long long)gan_net_total(opt->net));
        return NULL;
    }
    return which ? opt->v : opt->m;
}

gan_status gan_optimizer_moment_to_host(gan_optimizer *opt, int which, float *values,
                                        size_t count)
{
    const char *op = "gan_optimizer_moment_to_host";
    gan_ctx *ctx = gan_net_ctx(opt->net);
    gan_tensor *t = moment(opt, which, count, op);
    if (count == 0 && gan_ctx_status(ctx) == GAN_OK)
        return GAN_OK;
    return t ? gan_tensor_to_host(ctx, t, values, count) : ti_result(ctx, 0);
}

gan_status gan_optimizer_moment_from_host(gan_optimizer *opt, int which, const float *values,
                                          size_t count)
{
    const char *op = "gan_optimizer_moment_from_host";
    gan_ctx *ctx = gan_net_ctx(opt->net);
    gan_tensor *t = moment(opt, which, count, op);
    if (count == 0 && gan_ctx_status(ctx) == GAN_OK)
        return GAN_OK;
    return t ? gan_tensor_set_from_host(ctx, t, values, count) : ti_result(ctx, 0);
}
