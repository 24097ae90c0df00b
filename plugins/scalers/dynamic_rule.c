/* SPDX-License-Identifier: MIT */
/* dynamic_rule.c — the dynamic loss-scale rule of PyTorch, MindSpore and DeepSpeed in one
 * parameterised form, and the underflow-aware raise built on it; ganctl-scaler(7) states it. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_rule.h"
#include "scaler_common.h"

/* Each library's rule reduced to these numbers (the libraries' documented defaults,
 * checked against their sources; tests/check_scalers.c replays each source's own formulation):
 *   PyTorch   GradScaler's _amp_update_scale kernel:
 *             FP32 scale, ×backoff on inf/NaN and the growth tracker to 0; else the
 *             tracker + 1, and at growth_interval ×growth unless that is inf, tracker 0.
 *   MindSpore DynamicLossScaleUpdateCell: FP32 scale,
 *             max(scale / factor, 1) on overflow; growth when
 *             cur_iter − last_overflow_iter ≥ scale_window, both counters reset then.
 *   DeepSpeed DynamicLossScaler.update_scale
 *             with the config defaults (initial_scale_power 16, loss_scale_window 1000,
 *             hysteresis 2, min_loss_scale 1, consecutive_hysteresis false,
 *             raise_error_at_min_scale true). */
struct preset {
    const char *name;
    double init, growth, backoff, min, max;
    int64_t interval, hysteresis;
    int consecutive, fail_at_min;
};

static const struct preset presets[] = {
    /* ganctl's own: PyTorch's numbers, with a floor so that a run of NaN losses cannot
     * halve the scale to 0, and Apex's cap of 2^24. */
    { "none", 65536.0, 2.0, 0.5, 1.0, 16777216.0, 2000, 1, 0, 0 },
    { "pytorch", 65536.0, 2.0, 0.5, 0.0, FLT_MAX, 2000, 1, 0, 0 },
    { "mindspore", 16777216.0, 2.0, 0.5, 1.0, FLT_MAX, 2000, 1, 0, 0 },
    { "deepspeed", 65536.0, 2.0, 0.5, 1.0, FLT_MAX, 1000, 2, 0, 1 },
};

#define PRESET_COUNT (sizeof presets / sizeof presets[0])

struct dyn_config {
    const struct preset *preset;
    double init, growth, backoff, min, max;
    int64_t interval, hysteresis;
    int consecutive, fail_at_min;
    int forward_hold;             /* forward_overflow = "hold" */
    int underflow_aware;
    double norm_threshold, underflow_threshold, headroom;
};

/* Everything that changes; all of it is saved. */
struct dyn_state {
    double scale;
    int64_t good_steps;           /* clean updates since the last overflow, growth or raise */
    int64_t hysteresis_left;      /* overflows still absorbed, counting the one that backs off */
    int64_t updates, skipped;
    int64_t gradient_overflows, forward_overflows;
    int64_t growths, backoffs, raises;
    double ceiling;               /* underflow-aware: the scale of the last overflow, 0 = none */
};

struct gan_scaler {
    const struct gan_host *host;
    const char *name;
    struct dyn_config cfg;
    struct dyn_state st;
    char line[640];
};

/* ------------------------------------------------------------------ settings */

/* A setting out of range: its name, its value, and what it must be. */
static gan_status bad(gan_scaler *sc, const char *key, double value, const char *why)
{
    return sc->host->fail(sc->host->ctx, GAN_ERR_CONFIG, "scaler %s: %s = %.9g %s", sc->name,
                          key, value, why);
}

static gan_status read_settings(gan_scaler *sc)
{
    const struct gan_host *host = sc->host;
    const char *who = sc->name;
    struct dyn_config *c = &sc->cfg;
    gan_status st;

    /* Defaults of the settings that declare one are the settings table's (DYN_SETTINGS
     * and the underflow-aware ones), given by the host: no second copy here. */
    const char *preset;
    if ((st = scaler_get_string(host, who, "preset", &preset)) != GAN_OK)
        return st;
    c->preset = NULL;
    for (size_t i = 0; i < PRESET_COUNT; i++)
        if (strcmp(presets[i].name, preset) == 0)
            c->preset = &presets[i];
    if (!c->preset)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: preset = \"%s\" is not one it knows: write \"none\", "
                          "\"pytorch\", \"mindspore\" or \"deepspeed\"", who, preset);
    const struct preset *p = c->preset;
    c->init = p->init;
    c->growth = p->growth;
    c->backoff = p->backoff;
    c->min = p->min;
    c->max = p->max;
    c->interval = p->interval;
    c->hysteresis = p->hysteresis;
    c->consecutive = p->consecutive;
    c->fail_at_min = p->fail_at_min;

    /* Explicit settings override the preset, one by one. */
    if ((st = scaler_read_float(host, who, "init", &c->init, NULL)) != GAN_OK ||
        (st = scaler_read_float(host, who, "growth_factor", &c->growth, NULL)) != GAN_OK ||
        (st = scaler_read_float(host, who, "backoff_factor", &c->backoff, NULL)) != GAN_OK ||
        (st = scaler_read_int(host, who, "growth_interval", &c->interval, NULL)) != GAN_OK ||
        (st = scaler_read_int(host, who, "hysteresis", &c->hysteresis, NULL)) != GAN_OK ||
        (st = scaler_read_bool(host, who, "hysteresis_consecutive", &c->consecutive, NULL)) != GAN_OK ||
        (st = scaler_read_float(host, who, "min", &c->min, NULL)) != GAN_OK ||
        (st = scaler_read_float(host, who, "max", &c->max, NULL)) != GAN_OK ||
        (st = scaler_read_bool(host, who, "fail_at_min", &c->fail_at_min, NULL)) != GAN_OK)
        return st;

    const char *forward;
    if ((st = scaler_get_string(host, who, "forward_overflow", &forward)) != GAN_OK)
        return st;
    if (strcmp(forward, "hold") == 0)
        c->forward_hold = 1;
    else if (strcmp(forward, "backoff") == 0)
        c->forward_hold = 0;
    else
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: forward_overflow = \"%s\" is not a policy: write \"backoff\" "
                          "(lower the scale as for a gradient overflow) or \"hold\" (skip the "
                          "step, keep the scale)", who, forward);

    if (!isfinite(c->growth) || c->growth <= 1)
        return bad(sc, "growth_factor", c->growth,
                   "does not grow the scale: it must be a finite number > 1 (e.g. 2)");
    if (!isfinite(c->backoff) || c->backoff <= 0 || c->backoff >= 1)
        return bad(sc, "backoff_factor", c->backoff,
                   "does not lower the scale: it must be > 0 and < 1 (e.g. 0.5)");
    if (c->interval < 1)
        return bad(sc, "growth_interval", (double)c->interval,
                   "is not a number of updates: it must be at least 1 (e.g. 2000)");
    if (c->hysteresis < 1)
        return bad(sc, "hysteresis", (double)c->hysteresis,
                   "is not a count of overflows: it must be at least 1 (1 backs off on every "
                   "overflow)");
    if ((st = scaler_check_scale(host, who, "min", &c->min, 0)) != GAN_OK ||
        (st = scaler_check_scale(host, who, "max", &c->max, 1)) != GAN_OK ||
        (st = scaler_check_scale(host, who, "init", &c->init, 1)) != GAN_OK)
        return st;
    if (c->min > c->max)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: min = %.9g is above max = %.9g: lower min or raise max",
                          who, c->min, c->max);
    if (c->init < c->min || c->init > c->max)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: init = %.9g is outside [min, max] = [%.9g, %.9g]: set "
                          "init inside it, or move %s", who, c->init, c->min, c->max,
                          c->init < c->min ? "min down to init" : "max up to init");

    if (!c->underflow_aware)
        return GAN_OK;
    if ((st = scaler_get_float(host, who, "norm_threshold", &c->norm_threshold)) != GAN_OK ||
        (st = scaler_get_float(host, who, "underflow_threshold", &c->underflow_threshold)) != GAN_OK ||
        (st = scaler_get_float(host, who, "headroom", &c->headroom)) != GAN_OK)
        return st;
    if (!isfinite(c->norm_threshold) || c->norm_threshold < 0)
        return bad(sc, "norm_threshold", c->norm_threshold,
                   "is not a gradient norm: it must be a finite number >= 0 (0 turns the norm "
                   "signal off)");
    if (!isfinite(c->underflow_threshold) || c->underflow_threshold <= 0 ||
        c->underflow_threshold > 1)
        return bad(sc, "underflow_threshold", c->underflow_threshold,
                   "is not a fraction of elements: it must be > 0 and <= 1 (1 turns the "
                   "fraction signal off)");
    if (!isfinite(c->headroom) || c->headroom < 1)
        return bad(sc, "headroom", c->headroom,
                   "leaves no margin: it must be a finite factor >= 1 (e.g. 16)");
    return GAN_OK;
}

gan_status dyn_create(const struct gan_host *host, const char *name, int underflow_aware,
                      gan_scaler **out)
{
    *out = NULL;
    gan_scaler *sc = calloc(1, sizeof *sc);
    if (!sc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "scaler %s: out of memory", name);
    sc->host = host;
    sc->name = name;
    sc->cfg.underflow_aware = underflow_aware;
    gan_status st = read_settings(sc);
    if (st != GAN_OK) {
        free(sc);
        return st;
    }
    sc->st.scale = sc->cfg.init;
    sc->st.hysteresis_left = sc->cfg.hysteresis;
    *out = sc;
    return GAN_OK;
}

void dyn_destroy(gan_scaler *sc)
{
    free(sc);
}

double dyn_scale(gan_scaler *sc)
{
    return sc->st.scale;
}

/* ------------------------------------------------------------------ the rule */

/* s · growth_factor as FP32, capped at max; s itself when that product is not a
 * finite FP32 number (PyTorch refuses to grow to inf). */
static double grown(const struct dyn_config *c, double s)
{
    double g = scaler_times(s, c->growth);
    if (!isfinite(g))
        return s;
    return g > c->max ? c->max : g;
}

/* What the underflow signals see: the FP16 gradients of parameters (only those can
 * underflow at this scale) and, for headroom, every FP16 gradient the scale touched. */
struct underflow_view {
    uint64_t elements, small;     /* small: exact zeros + FP16 subnormals */
    double sum_squares, absmax;
};

static void look(const struct gan_scaler_input *in, struct underflow_view *v)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < in->tensor_count; i++) {
        const struct gan_scaler_tensor *t = &in->tensors[i];
        if (t->dtype != GAN_F16)
            continue;
        if (t->stats.absmax > v->absmax)
            v->absmax = t->stats.absmax;
        if (t->role != GAN_SCALER_PARAM_GRAD)
            continue;
        v->elements += t->stats.elements;
        v->small += t->stats.zeros + t->stats.subnormal;
        v->sum_squares += t->stats.sum_squares;
    }
}

/* The raise: on a clean update that did not grow, when the gradients show underflow
 * and the raised scale keeps headroom and stays below the last overflow's scale. */
static int raise_to(gan_scaler *sc, const struct gan_scaler_input *in, double s, double *to)
{
    const struct dyn_config *c = &sc->cfg;
    struct underflow_view v;
    look(in, &v);
    if (v.elements == 0)
        return 0;
    double fraction = (double)v.small / (double)v.elements;
    double norm = sqrt(v.sum_squares);
    int by_fraction = fraction > c->underflow_threshold;
    int by_norm = c->norm_threshold > 0 && norm < c->norm_threshold;
    if (!by_fraction && !by_norm)
        return 0;
    double g = grown(c, s);
    if (g <= s)
        return 0;
    if (v.absmax * g * c->headroom >= SCALER_F16_MAX) {
        sc->host->log(sc->host->ctx, GAN_LOG_DEBUG,
                      "scaler %s: underflow (%.3g%% zero or subnormal, norm %.3g) but no "
                      "headroom: absmax %.3g at scale %.9g, times headroom %g, reaches 65504",
                      sc->name, 100 * fraction, norm, v.absmax, g, c->headroom);
        return 0;
    }
    if (sc->st.ceiling > 0 && g >= sc->st.ceiling)
        return 0;
    sc->host->log(sc->host->ctx, GAN_LOG_DEBUG,
                  "scaler %s: raising the scale %.9g -> %.9g: %.3g%% of FP16 gradient elements "
                  "zero or subnormal (threshold %.3g%%), norm %.3g (threshold %.3g)",
                  sc->name, s, g, 100 * fraction, 100 * c->underflow_threshold, norm,
                  c->norm_threshold);
    *to = g;
    return 1;
}

gan_status dyn_update(gan_scaler *sc, const struct gan_scaler_input *in,
                      struct gan_scaler_decision *out)
{
    const struct dyn_config *c = &sc->cfg;
    enum gan_scaler_overflow ov;
    gan_status status = scaler_classify(sc->host, sc->name, in, sc->st.scale, &ov);
    if (status != GAN_OK)
        return status;
    if (!out)
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID,
                              "scaler %s: update() was given nowhere to write its decision",
                              sc->name);

    struct dyn_state n = sc->st;
    const double s = n.scale;
    enum gan_scaler_change change = GAN_SCALER_HELD;
    n.updates++;
    if (ov != GAN_SCALER_NO_OVERFLOW)
        n.skipped++;
    if (ov == GAN_SCALER_FORWARD_OVERFLOW)
        n.forward_overflows++;
    else if (ov == GAN_SCALER_GRADIENT_OVERFLOW)
        n.gradient_overflows++;

    if (ov == GAN_SCALER_FORWARD_OVERFLOW && c->forward_hold) {
        /* The scale had no part in it: skip, and leave every counter of the rule alone. */
    } else if (ov != GAN_SCALER_NO_OVERFLOW) {
        n.good_steps = 0;
        n.ceiling = c->underflow_aware ? s : 0;
        if (c->hysteresis > 1 && n.hysteresis_left > 1) {
            n.hysteresis_left--;
            change = GAN_SCALER_HYSTERESIS;
        } else {
            if (c->fail_at_min && s <= c->min)
                return sc->host->fail(sc->host->ctx, GAN_ERR_NUMERIC,
                                      "scaler %s: %s overflow at step %lld with the scale already "
                                      "at its minimum %.9g (fail_at_min, DeepSpeed's rule): lower "
                                      "min, set fail_at_min = false, or find the overflow with "
                                      "--debug-level", sc->name,
                                      ov == GAN_SCALER_FORWARD_OVERFLOW ? "a forward" : "a gradient",
                                      (long long)in->step, c->min);
            double b = scaler_times(s, c->backoff);
            if (b < c->min)
                b = c->min;
            if (b != s) {
                change = GAN_SCALER_BACKED_OFF;
                n.backoffs++;
            }
            n.scale = b;
        }
    } else {
        if (c->consecutive)
            n.hysteresis_left = c->hysteresis;
        n.good_steps++;
        double to;
        if (n.good_steps >= c->interval) {
            /* A growth is due even when it is refused at max or at FP32's limit: the
             * count starts again either way, as PyTorch's tracker does. */
            n.good_steps = 0;
            if (!c->consecutive)
                n.hysteresis_left = c->hysteresis;
            n.ceiling = 0;
            double g = grown(c, s);
            if (g != s) {
                change = GAN_SCALER_GREW;
                n.growths++;
            }
            n.scale = g;
        } else if (c->underflow_aware && raise_to(sc, in, s, &to)) {
            n.scale = to;
            n.good_steps = 0;
            n.raises++;
            change = GAN_SCALER_RAISED;
        }
    }

    if (change == GAN_SCALER_BACKED_OFF || change == GAN_SCALER_HYSTERESIS)
        sc->host->log(sc->host->ctx, GAN_LOG_DEBUG,
                      "scaler %s: %s overflow at step %lld, scale %.9g -> %.9g%s", sc->name,
                      ov == GAN_SCALER_FORWARD_OVERFLOW ? "forward" : "gradient",
                      (long long)in->step, s, n.scale,
                      change == GAN_SCALER_HYSTERESIS ? " (absorbed by hysteresis)" : "");
    sc->st = n;
    scaler_decide(out, ov != GAN_SCALER_NO_OVERFLOW, n.scale, ov, change);
    return GAN_OK;
}

/* ------------------------------------------------------------------ state */

#define DYN_STATE_VERSION 1

static const struct scaler_field dynamic_fields[] = {
    { "scale", GAN_SCALER_FLOAT64 },
    { "good_steps", GAN_SCALER_INT64 },
    { "hysteresis_left", GAN_SCALER_INT64 },
    { "updates", GAN_SCALER_INT64 },
    { "skipped", GAN_SCALER_INT64 },
    { "gradient_overflows", GAN_SCALER_INT64 },
    { "forward_overflows", GAN_SCALER_INT64 },
    { "growths", GAN_SCALER_INT64 },
    { "backoffs", GAN_SCALER_INT64 },
    /* underflow-aware only, from here */
    { "raises", GAN_SCALER_INT64 },
    { "ceiling", GAN_SCALER_FLOAT64 },
};

static size_t field_count(const gan_scaler *sc)
{
    size_t all = sizeof dynamic_fields / sizeof dynamic_fields[0];
    return sc->cfg.underflow_aware ? all : all - 2;
}

gan_status dyn_save_state(gan_scaler *sc, struct gan_scaler_state *out)
{
    if (!out)
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID,
                              "scaler %s: save_state() was given nowhere to write", sc->name);
    const struct dyn_state *s = &sc->st;
    scaler_state_begin(out, sc->name, DYN_STATE_VERSION);
    scaler_state_put_float(out, "scale", s->scale);
    scaler_state_put_int(out, "good_steps", s->good_steps);
    scaler_state_put_int(out, "hysteresis_left", s->hysteresis_left);
    scaler_state_put_int(out, "updates", s->updates);
    scaler_state_put_int(out, "skipped", s->skipped);
    scaler_state_put_int(out, "gradient_overflows", s->gradient_overflows);
    scaler_state_put_int(out, "forward_overflows", s->forward_overflows);
    scaler_state_put_int(out, "growths", s->growths);
    scaler_state_put_int(out, "backoffs", s->backoffs);
    if (sc->cfg.underflow_aware) {
        scaler_state_put_int(out, "raises", s->raises);
        scaler_state_put_float(out, "ceiling", s->ceiling);
    }
    return GAN_OK;
}

gan_status dyn_load_state(gan_scaler *sc, const struct gan_scaler_state *in)
{
    const struct gan_host *host = sc->host;
    const char *who = sc->name;
    const struct dyn_config *c = &sc->cfg;
    gan_status st = scaler_state_check(host, who, in, DYN_STATE_VERSION, dynamic_fields,
                                       field_count(sc));
    if (st != GAN_OK)
        return st;
    struct dyn_state n;
    memset(&n, 0, sizeof n);
    if ((st = scaler_state_scale(host, who, in, "scale", &n.scale)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "good_steps", 0, &n.good_steps)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "hysteresis_left", 1,
                                   &n.hysteresis_left)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "updates", 0, &n.updates)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "skipped", 0, &n.skipped)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "gradient_overflows", 0,
                                   &n.gradient_overflows)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "forward_overflows", 0,
                                   &n.forward_overflows)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "growths", 0, &n.growths)) != GAN_OK ||
        (st = scaler_state_counter(host, who, in, "backoffs", 0, &n.backoffs)) != GAN_OK)
        return st;
    if (c->underflow_aware &&
        ((st = scaler_state_counter(host, who, in, "raises", 0, &n.raises)) != GAN_OK ||
         (st = scaler_state_scale(host, who, in, "ceiling", &n.ceiling)) != GAN_OK))
        return st;

    /* Valid, but the resumed run may have changed its settings: obey them. */
    if (n.scale < c->min || n.scale > c->max) {
        double to = n.scale < c->min ? c->min : c->max;
        host->log(host->ctx, GAN_LOG_WARN,
                  "scaler %s: the saved scale %.9g is outside [min, max] = [%.9g, %.9g] of "
                  "these settings; continuing from %.9g", who, n.scale, c->min, c->max, to);
        n.scale = to;
    }
    if (n.hysteresis_left > c->hysteresis) {
        host->log(host->ctx, GAN_LOG_WARN,
                  "scaler %s: the saved state had %lld overflows of hysteresis left, more than "
                  "hysteresis = %lld allows; continuing with %lld", who,
                  (long long)n.hysteresis_left, (long long)c->hysteresis,
                  (long long)c->hysteresis);
        n.hysteresis_left = c->hysteresis;
    }
    sc->st = n;
    return GAN_OK;
}

const char *dyn_describe(gan_scaler *sc)
{
    const struct dyn_config *c = &sc->cfg;
    int used = snprintf(sc->line, sizeof sc->line,
                        "%s (preset %s): scale %.9g; x%g after %lld clean updates, x%g on "
                        "overflow, hysteresis %lld%s, min %.9g, max %.9g%s; forward overflow: %s",
                        sc->name, c->preset->name, sc->st.scale, c->growth,
                        (long long)c->interval, c->backoff, (long long)c->hysteresis,
                        c->consecutive ? " (consecutive)" : "", c->min, c->max,
                        c->fail_at_min ? ", fails at min" : "",
                        c->forward_hold ? "hold" : "backoff");
    if (c->underflow_aware && used > 0 && (size_t)used < sizeof sc->line)
        snprintf(sc->line + used, sizeof sc->line - (size_t)used,
                 "; raise when norm < %g or zero/subnormal fraction > %g, headroom %g",
                 c->norm_threshold, c->underflow_threshold, c->headroom);
    return sc->line;
}
