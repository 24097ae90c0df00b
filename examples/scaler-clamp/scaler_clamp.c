/* SPDX-License-Identifier: MIT */
/* scaler_clamp.c — the example ganctl scaler "clamp": halve on overflow, double after
 * `interval` clean updates, never leave [low, high]. Plain C99; built with pkg-config. */
#include <float.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ganctl/ganctl.h>

/* Whether a struct the core hands over is big enough to hold `field`: a core built
 * with older headers hands smaller structs, and the rest is not there to read or write. */
#define INSIDE(p, type, field) ((p)->struct_size >= offsetof(type, field) + sizeof (p)->field)

struct gan_scaler {
    const struct gan_host *host;  /* create's host: valid for every call, update's too */
    double low, high, scale;      /* state: scale */
    long long interval, clean;    /* state: clean, the clean updates since a change */
    char line[128];
};

/* The host answers each setting with the user's value or the default in the table
 * below, so the defaults are written there only. */
static gan_status clamp_create(const struct gan_host *host, gan_scaler **out)
{
    double init, low, high;
    long long interval;
    *out = NULL;
    if (host->get_float(host->ctx, "init", &init) != GAN_OK ||
        host->get_float(host->ctx, "low", &low) != GAN_OK ||
        host->get_float(host->ctx, "high", &high) != GAN_OK ||
        host->get_int(host->ctx, "interval", &interval) != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "clamp: a setting has no value");
    /* The core uses the scale as an FP32 number: every bound must be one. */
    if (!(low > 0 && low <= init && init <= high && high <= FLT_MAX) || interval < 1)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "clamp: low = %g, init = %g, high = %g, "
                          "interval = %lld: need 0 < low <= init <= high <= %g, interval >= 1",
                          low, init, high, interval, (double)FLT_MAX);
    if (!(*out = calloc(1, sizeof **out)))
        return host->fail(host->ctx, GAN_ERR_NOMEM, "clamp: out of memory");
    (*out)->host = host;
    (*out)->low = (float)low;
    (*out)->high = (float)high;
    (*out)->scale = (float)init;
    (*out)->interval = interval;
    return GAN_OK;
}

static void clamp_destroy(gan_scaler *sc) { free(sc); }
static double clamp_scale(gan_scaler *sc) { return sc->scale; }

static gan_status clamp_update(gan_scaler *sc, const struct gan_scaler_input *in,
                               struct gan_scaler_decision *out)
{
    if (!INSIDE(in, struct gan_scaler_input, tensor_count) || (in->tensor_count && !in->tensors))
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID, "clamp: a malformed input");
    int bad = in->forward_overflow != 0;
    for (size_t k = 0; k < in->tensor_count; k++)
        bad |= in->tensors[k].stats.nonfinite > 0;
    double before = sc->scale, to = bad ? before / 2 : before * 2;
    if (bad || ++sc->clean >= sc->interval) {
        sc->clean = 0;
        sc->scale = (float)(to < sc->low ? sc->low : to > sc->high ? sc->high : to);
    }
    if (sc->scale != before)
        sc->host->log(sc->host->ctx, GAN_LOG_DEBUG, "clamp: step %lld, scale %g -> %g",
                      (long long)in->step, before, sc->scale);
    if (INSIDE(out, struct gan_scaler_decision, skip))
        out->skip = bad;  /* the skip contract: a non-finite step is never applied */
    if (INSIDE(out, struct gan_scaler_decision, scale))
        out->scale = sc->scale;
    if (INSIDE(out, struct gan_scaler_decision, overflow))
        out->overflow = !bad ? GAN_SCALER_NO_OVERFLOW : in->forward_overflow
                        ? GAN_SCALER_FORWARD_OVERFLOW : GAN_SCALER_GRADIENT_OVERFLOW;
    if (INSIDE(out, struct gan_scaler_decision, change))
        out->change = sc->scale > before ? GAN_SCALER_GREW
                    : sc->scale < before ? GAN_SCALER_BACKED_OFF : GAN_SCALER_HELD;
    return GAN_OK;
}

/* The state is the scale and the count of clean updates, version 1. */
static gan_status clamp_save(gan_scaler *sc, struct gan_scaler_state *out)
{
    memset(out, 0, sizeof *out);
    strcpy(out->scaler, "clamp");
    out->version = 1;
    out->count = 2;
    strcpy(out->values[0].name, "scale");
    out->values[0].type = GAN_SCALER_FLOAT64;
    out->values[0].f = sc->scale;
    strcpy(out->values[1].name, "clean");
    out->values[1].type = GAN_SCALER_INT64;
    out->values[1].i = sc->clean;
    return GAN_OK;
}

static gan_status clamp_load(gan_scaler *sc, const struct gan_scaler_state *in)
{
    const struct gan_host *host = sc->host;
    double scale = -1;
    long long clean = -1;
    if (strncmp(in->scaler, "clamp", sizeof in->scaler) != 0)
        return host->fail(host->ctx, GAN_ERR_INVALID, "clamp: the state is another scaler's");
    if (in->version > 1)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED, "clamp: state version %lld is newer "
                          "than this build reads", (long long)in->version);
    for (size_t k = 0; in->version == 1 && in->count == 2 && k < 2; k++) {
        const struct gan_scaler_value *v = &in->values[k];
        if (strncmp(v->name, "scale", sizeof v->name) == 0 && v->type == GAN_SCALER_FLOAT64)
            scale = v->f;
        else if (strncmp(v->name, "clean", sizeof v->name) == 0 && v->type == GAN_SCALER_INT64)
            clean = v->i;
    }
    if (!(scale > 0 && scale <= FLT_MAX && (double)(float)scale == scale) || clean < 0)
        return host->fail(host->ctx, GAN_ERR_FORMAT, "clamp: the state needs a \"scale\" "
                          "(an FP32 number > 0) and a \"clean\" >= 0");
    /* Resuming with other bounds is allowed: the scale moves inside them. */
    sc->scale = scale < sc->low ? sc->low : scale > sc->high ? sc->high : scale;
    sc->clean = clean;
    return GAN_OK;
}

static const char *clamp_describe(gan_scaler *sc)
{
    snprintf(sc->line, sizeof sc->line, "clamp: scale %g in [%g, %g], x2 after %lld clean",
             sc->scale, sc->low, sc->high, sc->interval);
    return sc->line;
}

static const struct gan_scaler_ops clamp_ops = {
    .struct_size = sizeof(struct gan_scaler_ops), .create = clamp_create,
    .destroy = clamp_destroy, .scale = clamp_scale, .update = clamp_update,
    .save_state = clamp_save, .load_state = clamp_load, .describe = clamp_describe,
};

static const struct gan_setting_spec clamp_settings[] = {
    { "init", GAN_SETTING_FLOAT, "1024.0", "the first scale" },
    { "low", GAN_SETTING_FLOAT, "1.0", "the scale never goes below this" },
    { "high", GAN_SETTING_FLOAT, "65536.0", "the scale never goes above this" },
    { "interval", GAN_SETTING_INT, "1000", "clean updates before the scale doubles" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin clamp_plugin = {
    GAN_PLUGIN_HEADER, .kind = GAN_PLUGIN_SCALER, .name = "clamp", .version = "1.0.0",
    .summary = "example: halve on overflow, double after interval clean updates, within [low, high]",
    .ops = &clamp_ops, .settings = clamp_settings,
};

GAN_DEFINE_PLUGIN(clamp_plugin)
