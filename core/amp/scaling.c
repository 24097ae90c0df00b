/* SPDX-License-Identifier: MIT */
/* scaling.c — one network's loss-scaled step: scaled backward, fused unscale and
 * statistics, inner gradients, and the scaler's verdict with the core's skip contract. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/scaling.h"
#include "tensor/tensor_core.h"

/* ------------------------------------------------------------------ the scaler instance */

gan_status gan_amp_net_init(struct gan_amp_net *a, struct gan_module *module, const char *group,
                            const char *net_name, size_t n_params, const gan_config *cfg,
                            const struct gan_log *log, struct gan_error *err)
{
    memset(a, 0, sizeof *a);
    a->module = module;
    a->net_name = net_name;
    a->n_params = n_params;
    a->grad_norm = NAN;
    char label[200];
    snprintf(label, sizeof label, "scaler %s (%s)", module->plugin.name, net_name);
    gan_plugin_host_init(&a->host, label, group, module->plugin.settings, cfg, log);
    gan_status st = module->scaler.create(&a->host.host, &a->sc);
    if (st == GAN_OK && !a->sc)
        st = GAN_ERR_INTERNAL;
    if (st != GAN_OK)
        return gan_error_set(err, st, "scaler \"%s\" (%s) could not start for the %s: %s",
                             module->plugin.name, module->path, net_name,
                             a->host.error.message[0] ? a->host.error.message : "it gave no reason");
    const char *d = module->scaler.describe ? module->scaler.describe(a->sc) : NULL;
    snprintf(a->description, sizeof a->description, "%s", d && *d ? d : module->plugin.name);
    a->entries = calloc(n_params + GAN_AMP_MAX_INNER, sizeof *a->entries);
    a->grads = calloc(n_params ? n_params : 1, sizeof *a->grads);
    if (!a->entries || !a->grads)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the %s's gradient statistics",
                             net_name);
    return GAN_OK;
}

void gan_amp_net_release(struct gan_amp_net *a)
{
    if (a->sc && a->module->scaler.destroy)
        a->module->scaler.destroy(a->sc);
    free(a->entries);
    free(a->grads);
    memset(a, 0, sizeof *a);
}

double gan_amp_scale(const struct gan_amp_net *a)
{
    return a->module->scaler.scale(a->sc);
}

/* ------------------------------------------------------------------ measuring */

/* Statistics of a gradient tensor x seen through inv_scale, and with `out` the fused
 * unscale x · inv_scale into it (backend.h's grad_stats). Failures go to the context. */
static gan_status measure(gan_ctx *ctx, gan_tensor *x, float inv_scale, const struct gan_ref *out,
                          struct gan_grad_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    size_t n = (size_t)gan_tensor_numel(x);
    if (n == 0)
        return GAN_OK;
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    struct gan_ref xr = { gan_tensor_buffer(x), 0, gan_tensor_dtype(x) };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    gan_status st = ops->grad_stats(gan_ctx_backend(ctx), n, &xr, inv_scale, out ? out : &none,
                                    stats);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, "measuring gradients", "grad_stats", st);
}

void gan_amp_inner_begin(struct gan_amp_inner *in, gan_ctx *ctx, double outer_scale)
{
    in->ctx = ctx;
    in->count = 0;
    in->outer_scale = outer_scale;
}

/* Measured in the dtype the gradient was computed in: the 16-bit gradient that reached
 * `wrt`'s cast, when the policy cast it. */
void gan_amp_on_inner_grad(void *arg, const char *name, gan_tensor *wrt, gan_tensor *grad,
                           double seed)
{
    struct gan_amp_inner *in = arg;
    /* A shadow's inner gradient is FP32 and no scaler's business. */
    if (!grad || in->count == GAN_AMP_MAX_INNER || !(seed > 0.0) || in->paused)
        return;
    gan_tensor *g16 = wrt ? gan_tensor_grad16(wrt) : NULL;
    gan_tensor *x = g16 && gan_tensor_numel(g16) == gan_tensor_numel(grad) ? g16 : grad;
    size_t k = in->count;
    struct gan_scaler_tensor *e = &in->entry[k];
    memset(e, 0, sizeof *e);
    snprintf(in->name[k], sizeof in->name[k], "%s", name && *name ? name : "inner");
    e->name = in->name[k];
    e->dtype = gan_tensor_dtype(x);
    e->role = GAN_SCALER_INNER_GRAD;
    /* Scales are FP32 numbers; a term may have passed the seed through a float. */
    in->outer[k] = (float)seed == (float)in->outer_scale;
    if (measure(in->ctx, x, (float)(1.0 / seed), NULL, &e->stats) == GAN_OK)
        in->count++;
}

/* ------------------------------------------------------------------ the backward */

/* Under the precision policy a parameter's gradient was 16 bit before its cast widened
 * it: that 16-bit gradient (gan_tensor_grad16) is what can underflow or overflow, so it
 * is the one measured. Without FP32 patterns a parameter is used only through its 16-bit
 * cast, and the widened gradient equals the 16-bit one exactly: one pass reads the 16-bit
 * values and writes the unscaled FP32 ones. With patterns a parameter may also be used in
 * FP32 (the critic inside an FP32 "penalty"), and the arena must get the sum: the 16-bit
 * part is measured in a pass of its own. Every element of the arena is written, so it
 * needs no zeroing. */
static gan_status backward(struct gan_amp_net *a, gan_ctx *ctx, gan_net *net, gan_tensor *loss)
{
    size_t count = gan_net_count(net);
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    int ndim = gan_tensor_ndim(loss);
    for (int d = 0; d < ndim; d++)
        dims[d] = gan_tensor_dim(loss, d);
    gan_tensor *seed = gan_tensor_full(ctx, GAN_F32, ndim, dims, (float)a->scale_used);
    if (!seed)
        return gan_ctx_status(ctx);
    gan_tensor *seeds[1] = { seed };
    gan_status st = gan_grad(ctx, 1, &loss, seeds, (int)count, gan_net_tensors(net), a->grads, 0);
    if (st != GAN_OK)
        return st;
    float inv = (float)(1.0 / a->scale_used);
    int mixed = gan_ctx_fp32_scope_count(ctx) > 0;
    for (size_t p = 0; p < count; p++) {
        struct gan_scaler_tensor *e = &a->entries[a->n_entries++];
        memset(e, 0, sizeof *e);
        e->name = gan_net_full_name(net, p);
        e->role = GAN_SCALER_PARAM_GRAD;
        struct gan_ref arena = gan_net_grad_ref(net, p);
        if (!arena.buf)
            return ti_result(ctx, 0);
        gan_tensor *g16 = gan_tensor_grad16(gan_net_tensor(net, p));
        if (g16 && gan_tensor_numel(g16) != gan_net_numel(net, p))
            g16 = NULL;
        struct gan_grad_stats full;
        if (g16 && !mixed) {
            st = measure(ctx, g16, inv, &arena, &full);
            e->stats = full;
        } else {
            st = measure(ctx, a->grads[p], inv, &arena, &full);
            e->stats = full;
            if (st == GAN_OK && g16) {
                uint64_t nonfinite = full.nonfinite;
                st = measure(ctx, g16, inv, NULL, &e->stats);
                if (e->stats.nonfinite < nonfinite)
                    e->stats.nonfinite = nonfinite;
            }
        }
        if (st != GAN_OK)
            return st;
        e->dtype = g16 ? gan_tensor_dtype(g16) : GAN_F32;
        a->norm2 += full.sum_squares;
        if (e->dtype == GAN_F16) {
            a->f16_elements += e->stats.elements;
            a->f16_low += e->stats.zeros + e->stats.subnormal;
        }
    }
    return GAN_OK;
}

gan_status gan_amp_scaled_backward(struct gan_amp_net *a, gan_ctx *ctx, gan_net *net,
                                   gan_tensor *loss, double value,
                                   const struct gan_amp_inner *inner)
{
    a->n_entries = 0;
    a->norm2 = 0.0;
    a->f16_elements = a->f16_low = 0;
    a->forward_overflow = 0;
    a->backward = isfinite(value);
    if (!a->backward) {
        /* Nothing to differentiate; an inner gradient the scale seeded that overflowed
         * first makes it the scale's overflow, not the forward's. */
        int inner_overflow = 0;
        for (size_t k = 0; k < inner->count; k++)
            inner_overflow |= inner->outer[k] && inner->entry[k].stats.nonfinite > 0;
        a->forward_overflow = !inner_overflow;
    } else {
        gan_status st = backward(a, ctx, net, loss);
        if (st != GAN_OK)
            return st;
    }
    for (size_t k = 0; k < inner->count; k++)
        if (inner->outer[k]) {
            struct gan_scaler_tensor *e = &a->entries[a->n_entries];
            *e = inner->entry[k];
            snprintf(a->inner_names[k], sizeof a->inner_names[k], "%s", inner->name[k]);
            e->name = a->inner_names[k];
            a->n_entries++;
        }
    if (a->hook.after_backward)
        return a->hook.after_backward(a->hook.arg, a, a->backward, a->grads);
    return GAN_OK;
}

/* ------------------------------------------------------------------ the verdict */

static const char *overflow_word(enum gan_scaler_overflow o)
{
    return o == GAN_SCALER_GRADIENT_OVERFLOW ? "gradient overflow"
         : o == GAN_SCALER_FORWARD_OVERFLOW ? "forward overflow" : "no overflow";
}

gan_status gan_amp_verdict(struct gan_amp_net *a, int64_t step, struct gan_scaler_decision *d,
                           struct gan_error *err)
{
    struct gan_scaler_input in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    in.step = step;
    in.scale = a->scale_used;
    in.forward_overflow = a->forward_overflow;
    in.tensors = a->n_entries ? a->entries : NULL;
    in.tensor_count = a->n_entries;
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    a->host.error.message[0] = '\0';
    gan_status st = a->module->scaler.update(a->sc, &in, d);
    if (st != GAN_OK)
        return gan_error_set(err, st, "the %s's loss scaler \"%s\" stopped training at step %lld: %s",
                             a->net_name, a->module->plugin.name, (long long)step,
                             a->host.error.message[0] ? a->host.error.message : "it gave no reason");
    uint64_t nonfinite = 0;
    for (size_t k = 0; k < a->n_entries; k++)
        nonfinite += a->entries[k].stats.nonfinite;
    if (!d->skip && (!a->backward || nonfinite))
        return gan_error_set(err, GAN_ERR_INTERNAL,
                             "the %s's loss scaler \"%s\" (%s) applied step %lld although %s: fix the scaler (scaler.h: such a step must be skipped)",
                             a->net_name, a->module->plugin.name, a->module->path, (long long)step,
                             a->backward ? "its gradients are not finite"
                                         : "its objective is not finite");
    a->grad_norm = a->backward ? sqrt(a->norm2) : NAN;
    a->underflow_frac = !a->backward ? NAN
                      : a->f16_elements ? (double)a->f16_low / (double)a->f16_elements : 0.0;
    if (d->overflow == GAN_SCALER_GRADIENT_OVERFLOW)
        a->overflows |= GAN_AMP_OVERFLOW_GRADIENT;
    else if (d->overflow == GAN_SCALER_FORWARD_OVERFLOW)
        a->overflows |= GAN_AMP_OVERFLOW_FORWARD;
    if (d->skip) {
        a->skipped++;
        gan_log_write(a->host.log, GAN_LOG_DEBUG, "%s step %lld skipped (%s) at scale %.9g; next scale %.9g",
                      a->net_name, (long long)step, overflow_word(d->overflow), in.scale,
                      gan_amp_scale(a));
    }
    return GAN_OK;
}

void gan_amp_scale_text(char *buf, size_t size, double scale)
{
    if (!(scale > 0) || !isfinite(scale)) {
        snprintf(buf, size, "%g", scale);
        return;
    }
    double k = log2(scale);
    if (k == floor(k))
        snprintf(buf, size, "2^%.0f", k);
    else
        snprintf(buf, size, "2^%.2f", k);
}
