/* SPDX-License-Identifier: MIT */
/* divergence.c — the verdict on a finished run: healthy, or diverged with the network,
 * the reason and the advice that its scaler and precision point to. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/optimizer.h"
#include "train/loop/divergence.h"

void gan_divergence_begin(struct gan_divergence_watch *w, const gan_session *s,
                          int64_t iteration)
{
    memset(w, 0, sizeof *w);
    w->since_iteration = iteration;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        w->applied[i] = gan_optimizer_steps(s->opt[i]) > 0;
}

void gan_divergence_count(struct gan_divergence_watch *w, enum gan_net_role net, int skipped,
                          int nonfinite, int64_t iteration)
{
    /* Only the critic's run: it steps n_critic times an iteration, so that its window
     * is reached soonest, and a generator that learns from a broken critic is no use. */
    if (net == GAN_NET_CRITIC && skipped && nonfinite) {
        if (w->nonfinite_run++ == 0)
            w->nonfinite_since = iteration;
    } else if (net == GAN_NET_CRITIC) {
        w->nonfinite_run = 0;
    }
    w->steps[net]++;
    if (!skipped)
        w->applied[net] = 1;
    else if (w->applied[net])
        w->skipped[net]++;
    else
        w->calibration[net]++;
}

void gan_divergence_mark(struct gan_divergence_watch *w, int64_t iteration)
{
    w->since_iteration = iteration;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        w->steps[i] = w->skipped[i] = w->calibration[i] = 0;
}

const char *gan_divergence_reason_name(enum gan_divergence_reason reason)
{
    switch (reason) {
    case GAN_DIVERGED_NONFINITE_LOSS: return "non-finite loss";
    case GAN_DIVERGED_SKIPPED: return "skipped steps";
    case GAN_DIVERGED_STALLED: return "non-finite steps";
    default: return "none";
    }
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
    gan_amp_scale_text(scale, sizeof scale, gan_amp_scale(a));
    int is_static = strcmp(scaler, "static") == 0;
    int is_aware = strcmp(scaler, "underflow-aware") == 0;
    /* The shipped scalers with a starting scale (init) and a floor (min). */
    int is_dynamic = strcmp(scaler, "dynamic") == 0 || is_aware;
    /* Suggested in each case but where it is the scaler already. */
    const char *aware = is_aware ? "" : "--scaler underflow-aware, or ";
    double v = gan_amp_scale(a);
    /* The 16-bit type the network computes in: BF16 shares FP32's range, FP16 not. */
    const char *half = s->set.precision == GAN_BF16 ? "BF16" : "FP16";
    if (s->set.precision == GAN_F32 && strcmp(scaler, "none") == 0) {
        snprintf(buf, size,
                 "it trains in FP32, so the step itself ran away: try a smaller learning rate, e.g. -s %s.optimizer.lr=1e-4",
                 who);
    } else if (strcmp(scaler, "none") == 0) {
        snprintf(buf, size,
                 "its 16-bit gradients are not loss-scaled (scaler none): try --scaler underflow-aware; see ganctl-scaler(7)");
    } else if (is_static) {
        snprintf(buf, size,
                 "its fixed loss scale %s (scaler static) %s%s: try %s, e.g. -s %s.scale=1024, or --scaler underflow-aware; see ganctl-scaler(7)",
                 scale, v >= 65536.0 ? "overflows" : v < 1.0 ? "lets its gradients underflow"
                                                              : "does not suit its gradients",
                 v >= 65536.0 || v < 1.0 ? (s->set.precision == GAN_BF16 ? " BF16" : " FP16") : "",
                 v >= 1024.0 ? "a smaller one" : "a larger one",
                 group);
    } else if (is_dynamic && v < 1.0) {
        snprintf(buf, size,
                 "its loss scale fell to %s (scaler %s), where its gradients underflow %s: try %sa floor, e.g. -s %s.min=1; see ganctl-scaler(7)",
                 scale, scaler, half, aware, group);
    } else if (is_dynamic) {
        snprintf(buf, size,
                 "its loss scale is %s (scaler %s), brought down by overflows: try a lower start, e.g. -s %s.init=1024, %sthe penalty in FP32 with -s 'precision.fp32=[\"penalty\"]'; see ganctl-scaler(7)",
                 scale, scaler, group, is_aware ? "or " : aware);
    } else {
        snprintf(buf, size,
                 "its loss scale is %s (scaler %s): try --scaler underflow-aware, or the penalty in FP32 with -s 'precision.fp32=[\"penalty\"]'; see ganctl-scaler(7)",
                 scale, scaler);
    }
}

void gan_divergence_judge(const struct gan_divergence_watch *w, const gan_session *s,
                          const gan_config *cfg, const double loss[GAN_NET_ROLES],
                          double max_skip_fraction, int64_t iteration, struct gan_divergence *d)
{
    memset(d, 0, sizeof *d);
    static const enum gan_net_role order[GAN_NET_ROLES] = { GAN_NET_CRITIC, GAN_NET_GENERATOR };
    for (int k = 0; k < GAN_NET_ROLES && d->reason == GAN_DIVERGED_NOT; k++) {
        enum gan_net_role net = order[k];
        /* A network that took no step since the mark (the generator of a one-iteration
         * run, a resumed run with nothing left to train) has no loss of this session. */
        if (w->steps[net] == 0)
            continue;
        /* Calibration skips count only while no step has been applied: a scaler that
         * never found a usable scale skipped every step. */
        int64_t forgiven = w->applied[net] ? w->calibration[net] : 0;
        int64_t steps = w->steps[net] - forgiven;
        int64_t skipped = w->skipped[net] + w->calibration[net] - forgiven;
        int nonfinite = !isfinite(loss[net]);
        int skipping = (double)skipped > max_skip_fraction * (double)steps;
        if (!nonfinite && !skipping)
            continue;
        d->reason = nonfinite ? GAN_DIVERGED_NONFINITE_LOSS : GAN_DIVERGED_SKIPPED;
        d->net = net;
        d->loss = loss[net];
        d->skipped = skipped;
        d->calibration = forgiven;
        d->steps = steps;
        d->since_iteration = w->since_iteration;
    }
    if (d->reason == GAN_DIVERGED_NOT)
        return;
    d->scale = gan_amp_scale(&s->amp[d->net]);
    const char *who = gan_net_role_names[d->net];
    char why[320], what[400], calibration[96] = "";
    if (d->calibration > 0)
        snprintf(calibration, sizeof calibration, ", after the %lld its scaler skipped while calibrating",
                 (long long)d->calibration);
    double pct = d->steps > 0 ? 100.0 * (double)d->skipped / (double)d->steps : 0.0;
    if (d->reason == GAN_DIVERGED_NONFINITE_LOSS)
        snprintf(why, sizeof why, "the %s's loss is %s at iteration %lld (%lld of its %lld steps since iteration %lld skipped%s)",
                 who, isnan(d->loss) ? "NaN" : d->loss > 0 ? "inf" : "-inf", (long long)iteration,
                 (long long)d->skipped, (long long)d->steps, (long long)d->since_iteration,
                 calibration);
    else
        snprintf(why, sizeof why, "the %s skipped %lld of its %lld steps since iteration %lld%s (%.0f%%, more than run.diverged_skip_fraction = %g)",
                 who, (long long)d->skipped, (long long)d->steps, (long long)d->since_iteration,
                 calibration, pct, max_skip_fraction);
    advice(s, cfg, d->net, what, sizeof what);
    snprintf(d->message, sizeof d->message, "diverged: %s; %s", why, what);
}

int gan_divergence_stalled(const struct gan_divergence_watch *w, const gan_session *s,
                           const gan_config *cfg, const double loss[GAN_NET_ROLES],
                           int64_t window, int64_t iteration, int64_t checkpoint_iteration,
                           struct gan_divergence *d)
{
    memset(d, 0, sizeof *d);
    if (window <= 0 || w->nonfinite_run < window)
        return 0;
    d->reason = GAN_DIVERGED_STALLED;
    d->net = GAN_NET_CRITIC;
    d->loss = loss[GAN_NET_CRITIC];
    d->skipped = d->steps = w->nonfinite_run;
    d->since_iteration = w->nonfinite_since;
    d->scale = gan_amp_scale(&s->amp[GAN_NET_CRITIC]);
    char kept[96], what[400];
    if (checkpoint_iteration >= 0)
        snprintf(kept, sizeof kept, "its checkpoint at iteration %lld is kept",
                 (long long)checkpoint_iteration);
    else
        snprintf(kept, sizeof kept, "it has no checkpoint");
    advice(s, cfg, GAN_NET_CRITIC, what, sizeof what);
    snprintf(d->message, sizeof d->message,
             "diverged: the critic's last %lld steps (since iteration %lld) were all skipped for non-finite values, at least run.diverged_window = %lld, so the run stopped at iteration %lld and %s; %s",
             (long long)d->steps, (long long)d->since_iteration, (long long)window,
             (long long)iteration, kept, what);
    return 1;
}
