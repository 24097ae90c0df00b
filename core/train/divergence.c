/* SPDX-License-Identifier: MIT */
/* divergence.c — the verdict on a finished run: healthy, or diverged with the network,
 * the reason and the advice that its scaler and precision point to. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/optimizer.h"
#include "train/divergence.h"

/* Every backward of the network so far, taken or skipped. */
static int64_t steps_of(const gan_session *s, enum gan_net_role role)
{
    return gan_optimizer_steps(s->opt[role]) + s->amp[role].skipped;
}

void gan_divergence_mark(struct gan_divergence_mark *m, const gan_session *s, int64_t iteration)
{
    m->iteration = iteration;
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        m->steps[i] = steps_of(s, (enum gan_net_role)i);
        m->skipped[i] = s->amp[i].skipped;
    }
}

const char *gan_divergence_reason_name(enum gan_divergence_reason reason)
{
    switch (reason) {
    case GAN_DIVERGED_NONFINITE_LOSS: return "non-finite loss";
    case GAN_DIVERGED_SKIPPED: return "skipped steps";
    default: return "none";
    }
}

/* "2^13", "2^-14", "0", "2^9.97": a loss scale as the exponent people read it by. */
static void format_scale(char *buf, size_t size, double scale)
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

/* The settings group of the network's scaler: its own when the configuration gives it
 * one, else the shared "scaler". */
static void scaler_group(const gan_config *cfg, enum gan_net_role net, char *buf, size_t size)
{
    char key[64];
    const char *name = NULL;
    snprintf(key, sizeof key, "%s.scaler.name", gan_net_role_names[net]);
    if (cfg && gan_config_get_string(cfg, key, &name) == GAN_OK && name)
        snprintf(buf, size, "%s.scaler", gan_net_role_names[net]);
    else
        snprintf(buf, size, "scaler");
}

/* What to try, from the network's precision, scaler and final scale. */
static void advice(const gan_session *s, const gan_config *cfg, enum gan_net_role net,
                   char *buf, size_t size)
{
    const struct gan_amp_net *a = &s->amp[net];
    const char *scaler = a->module && a->module->plugin.name ? a->module->plugin.name : "none";
    const char *who = gan_net_role_names[net];
    char group[64], scale[32];
    scaler_group(cfg, net, group, sizeof group);
    format_scale(scale, sizeof scale, gan_amp_scale(a));
    int is_static = strcmp(scaler, "static") == 0;
    if (s->set.precision == GAN_F32 && strcmp(scaler, "none") == 0) {
        snprintf(buf, size,
                 "it trains in FP32, so the step itself ran away: try a smaller learning rate, e.g. -s %s.optimizer.lr=1e-4",
                 who);
    } else if (strcmp(scaler, "none") == 0) {
        snprintf(buf, size,
                 "its 16-bit gradients are not loss-scaled (scaler none): try --scaler underflow-aware; see ganctl-scaler(7)");
    } else if (gan_amp_scale(a) >= 65536.0 && is_static) {
        snprintf(buf, size,
                 "its fixed loss scale %s (scaler static) overflows FP16: try a smaller one, e.g. -s %s.scale=1024, or --scaler underflow-aware; see ganctl-scaler(7)",
                 scale, group);
    } else if (gan_amp_scale(a) < 1.0 && is_static) {
        snprintf(buf, size,
                 "its fixed loss scale %s (scaler static) lets its gradients underflow FP16: try a larger one, e.g. -s %s.scale=1024, or --scaler underflow-aware; see ganctl-scaler(7)",
                 scale, group);
    } else if (gan_amp_scale(a) < 1.0) {
        snprintf(buf, size,
                 "its loss scale fell to %s (scaler %s), where its gradients underflow FP16: try --scaler underflow-aware, or a floor, e.g. -s %s.min=1; see ganctl-scaler(7)",
                 scale, scaler, group);
    } else if (!is_static) {
        snprintf(buf, size,
                 "its loss scale is %s (scaler %s), brought down by overflows: start lower, e.g. -s %s.init=1024, or try --scaler underflow-aware, or the penalty in FP32 with -s 'precision.fp32=[\"penalty\"]'; see ganctl-scaler(7)",
                 scale, scaler, group);
    } else {
        snprintf(buf, size,
                 "its loss scale is %s (scaler static): try --scaler underflow-aware, or the penalty in FP32 with -s 'precision.fp32=[\"penalty\"]'; see ganctl-scaler(7)",
                 scale);
    }
}

void gan_divergence_judge(const struct gan_divergence_mark *m, const gan_session *s,
                          const gan_config *cfg, const double loss[GAN_NET_ROLES],
                          double max_skip_fraction, int64_t iteration, struct gan_divergence *d)
{
    memset(d, 0, sizeof *d);
    static const enum gan_net_role order[GAN_NET_ROLES] = { GAN_NET_CRITIC, GAN_NET_GENERATOR };
    for (int k = 0; k < GAN_NET_ROLES && d->reason == GAN_DIVERGED_NOT; k++) {
        enum gan_net_role net = order[k];
        int64_t steps = steps_of(s, net) - m->steps[net];
        int64_t skipped = s->amp[net].skipped - m->skipped[net];
        /* A network that took no step since the mark (the generator of a one-iteration
         * run, a resumed run with nothing left to train) has no loss of this session. */
        if (steps == 0)
            continue;
        int nonfinite = !isfinite(loss[net]);
        int skipping = (double)skipped > max_skip_fraction * (double)steps;
        if (!nonfinite && !skipping)
            continue;
        d->reason = nonfinite ? GAN_DIVERGED_NONFINITE_LOSS : GAN_DIVERGED_SKIPPED;
        d->net = net;
        d->loss = loss[net];
        d->skipped = skipped;
        d->steps = steps;
        d->since_iteration = m->iteration;
    }
    if (d->reason == GAN_DIVERGED_NOT)
        return;
    d->scale = gan_amp_scale(&s->amp[d->net]);
    const char *who = gan_net_role_names[d->net];
    char why[256], what[400];
    double pct = d->steps > 0 ? 100.0 * (double)d->skipped / (double)d->steps : 0.0;
    if (d->reason == GAN_DIVERGED_NONFINITE_LOSS)
        snprintf(why, sizeof why, "the %s's loss is %s at iteration %lld (%lld of its %lld steps since iteration %lld skipped)",
                 who, isnan(d->loss) ? "NaN" : d->loss > 0 ? "inf" : "-inf", (long long)iteration, (long long)d->skipped, (long long)d->steps,
                 (long long)d->since_iteration);
    else
        snprintf(why, sizeof why, "the %s skipped %lld of its %lld steps since iteration %lld (%.0f%%, more than run.diverged_skip_fraction = %g)",
                 who, (long long)d->skipped, (long long)d->steps, (long long)d->since_iteration,
                 pct, max_skip_fraction);
    advice(s, cfg, d->net, what, sizeof what);
    snprintf(d->message, sizeof d->message, "diverged: %s; %s", why, what);
}
