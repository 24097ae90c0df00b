/* SPDX-License-Identifier: MIT */
/* scaler_clamp.c — an example third-party ganctl scaler, "clamp": halve on overflow, double
 * after `interval` clean updates, never leave [low, high]. Built alone with pkg-config ganctl. */

/* A module built outside ganctl's tree has no config.h: everything it needs comes from
 * the installed headers. It exports one symbol (GAN_DEFINE_PLUGIN) and reaches the host
 * only through struct gan_host: it never prints, exits or keeps global state. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

struct gan_scaler {
    const struct gan_host *host;
    double low, high;
    long long interval;
    double scale;                 /* state: the scale */
    long long clean;              /* state: clean updates since the last change */
    char line[160];
};

/* Reads a number setting; an unset one keeps the default already in *value. */
static gan_status get_number(const struct gan_host *host, const char *key, double *value)
{
    gan_status st = host->get_float(host->ctx, key, value);
    if (st == GAN_ERR_NOT_FOUND)
        return GAN_OK;
    if (st != GAN_OK)
        return host->fail(host->ctx, st, "scaler clamp: %s must be a number", key);
    return GAN_OK;
}

static gan_status clamp_create(const struct gan_host *host, gan_scaler **out)
{
    *out = NULL;
    double init = 1024, low = 1, high = 65536;
    long long interval = 1000;
    gan_status st;
    if ((st = get_number(host, "init", &init)) != GAN_OK ||
        (st = get_number(host, "low", &low)) != GAN_OK ||
        (st = get_number(host, "high", &high)) != GAN_OK)
        return st;
    st = host->get_int(host->ctx, "interval", &interval);
    if (st != GAN_OK && st != GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, st, "scaler clamp: interval must be an integer");
    /* The core uses the scale as an FP32 number: keep every bound one. */
    if (!(low > 0) || !(high >= low) || !(high <= FLT_MAX))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler clamp: low = %g and high = %g must satisfy 0 < low <= high <= %g",
                          low, high, (double)FLT_MAX);
    if (!(init >= low && init <= high))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler clamp: init = %g must lie in [low, high] = [%g, %g]", init, low,
                          high);
    if (interval < 1)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler clamp: interval = %lld must be at least 1", interval);

    gan_scaler *sc = calloc(1, sizeof *sc);
    if (!sc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "scaler clamp: out of memory");
    sc->host = host;
    sc->low = (float)low;
    sc->high = (float)high;
    sc->interval = interval;
    sc->scale = (float)init;
    *out = sc;
    return GAN_OK;
}

/* x brought into [low, high]. Written out rather than with fmin and fmax so that the
 * module needs no libm and builds with the one command every plugin builds with. */
static double within(const gan_scaler *sc, double x)
{
    return x < sc->low ? sc->low : x > sc->high ? sc->high : x;
}

static void clamp_destroy(gan_scaler *sc)
{
    free(sc);
}

static double clamp_scale(gan_scaler *sc)
{
    return sc->scale;
}

static gan_status clamp_update(gan_scaler *sc, const struct gan_scaler_input *in,
                               struct gan_scaler_decision *out)
{
    if (!in || !out || (in->tensor_count && !in->tensors))
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID,
                              "scaler clamp: update() needs an input, its tensors and a decision");
    int forward = in->forward_overflow != 0;
    int bad = forward;
    for (size_t i = 0; i < in->tensor_count && !bad; i++)
        bad = in->tensors[i].stats.nonfinite > 0;

    double before = sc->scale;
    if (bad) {
        sc->clean = 0;
        sc->scale = within(sc, (float)(sc->scale / 2));
    } else if (++sc->clean >= sc->interval) {
        sc->clean = 0;
        sc->scale = within(sc, (float)(sc->scale * 2));
    }

    /* Write only the fields this version of the core's struct has. */
    if (out->struct_size >= offsetof(struct gan_scaler_decision, change) + sizeof out->change) {
        out->skip = bad;
        out->scale = sc->scale;
        out->overflow = !bad ? GAN_SCALER_NO_OVERFLOW :
                        forward ? GAN_SCALER_FORWARD_OVERFLOW : GAN_SCALER_GRADIENT_OVERFLOW;
        out->change = sc->scale > before ? GAN_SCALER_GREW :
                      sc->scale < before ? GAN_SCALER_BACKED_OFF : GAN_SCALER_HELD;
    }
    return GAN_OK;
}

#define CLAMP_STATE_VERSION 1

static gan_status clamp_save(gan_scaler *sc, struct gan_scaler_state *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->scaler, sizeof out->scaler, "clamp");
    out->version = CLAMP_STATE_VERSION;
    out->count = 2;
    snprintf(out->values[0].name, sizeof out->values[0].name, "scale");
    out->values[0].type = GAN_SCALER_FLOAT64;
    out->values[0].f = sc->scale;
    snprintf(out->values[1].name, sizeof out->values[1].name, "clean");
    out->values[1].type = GAN_SCALER_INT64;
    out->values[1].i = sc->clean;
    return GAN_OK;
}

static gan_status clamp_load(gan_scaler *sc, const struct gan_scaler_state *in)
{
    const struct gan_host *host = sc->host;
    if (strncmp(in->scaler, "clamp", sizeof in->scaler) != 0)
        return host->fail(host->ctx, GAN_ERR_INVALID, "scaler clamp: the state is another scaler's");
    if (in->version > CLAMP_STATE_VERSION)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "scaler clamp: state version %lld is newer than this build reads",
                          (long long)in->version);
    if (in->version < 1 || in->count != 2)
        return host->fail(host->ctx, GAN_ERR_FORMAT, "scaler clamp: malformed state");
    double scale = -1;
    long long clean = -1;
    for (size_t k = 0; k < in->count; k++) {
        const struct gan_scaler_value *v = &in->values[k];
        if (strncmp(v->name, "scale", sizeof v->name) == 0 && v->type == GAN_SCALER_FLOAT64)
            scale = v->f;
        else if (strncmp(v->name, "clean", sizeof v->name) == 0 && v->type == GAN_SCALER_INT64)
            clean = v->i;
    }
    if (!(scale > 0 && scale <= FLT_MAX) || clean < 0)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler clamp: the state needs a positive \"scale\" and a \"clean\" >= 0");
    sc->scale = within(sc, scale);
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
    .struct_size = sizeof(struct gan_scaler_ops),
    .create = clamp_create,
    .destroy = clamp_destroy,
    .scale = clamp_scale,
    .update = clamp_update,
    .save_state = clamp_save,
    .load_state = clamp_load,
    .describe = clamp_describe,
};

static const struct gan_setting_spec clamp_settings[] = {
    { "init", GAN_SETTING_FLOAT, "1024.0", "the first scale" },
    { "low", GAN_SETTING_FLOAT, "1.0", "the scale never goes below this" },
    { "high", GAN_SETTING_FLOAT, "65536.0", "the scale never goes above this" },
    { "interval", GAN_SETTING_INT, "1000", "clean updates before the scale doubles" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin clamp_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "clamp",
    .version = "1.0.0",
    .summary = "example: halve on overflow, double after interval clean updates, within [low, high]",
    .ops = &clamp_ops,
    .settings = clamp_settings,
};

GAN_DEFINE_PLUGIN(clamp_descriptor)
