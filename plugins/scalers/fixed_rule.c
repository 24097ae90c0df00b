/* SPDX-License-Identifier: MIT */
/* fixed_rule.c — a scale that never changes, for the "none" and "static" scalers: apply
 * every step whose loss and gradients are finite, skip the others, count both. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixed_rule.h"
#include "scaler_common.h"

struct gan_scaler {
    const struct gan_host *host;
    const char *name;
    double scale;
    /* The state: counters only, since the scale comes from the settings. */
    int64_t updates, skipped, gradient_overflows, forward_overflows;
    char line[200];
};

gan_status fixed_create(const struct gan_host *host, const char *name, double scale,
                        gan_scaler **out)
{
    *out = NULL;
    gan_scaler *sc = calloc(1, sizeof *sc);
    if (!sc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "scaler %s: out of memory", name);
    sc->host = host;
    sc->name = name;
    sc->scale = scale;
    *out = sc;
    return GAN_OK;
}

void fixed_destroy(gan_scaler *sc)
{
    free(sc);
}

double fixed_scale(gan_scaler *sc)
{
    return sc->scale;
}

gan_status fixed_update(gan_scaler *sc, const struct gan_scaler_input *in,
                        struct gan_scaler_decision *out)
{
    enum gan_scaler_overflow ov;
    gan_status st = scaler_classify(sc->host, sc->name, in, sc->scale, &ov);
    if (st != GAN_OK)
        return st;
    if (!out)
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID,
                              "scaler %s: update() was given nowhere to write its decision",
                              sc->name);
    sc->updates++;
    if (ov != GAN_SCALER_NO_OVERFLOW)
        sc->skipped++;
    if (ov == GAN_SCALER_GRADIENT_OVERFLOW)
        sc->gradient_overflows++;
    else if (ov == GAN_SCALER_FORWARD_OVERFLOW)
        sc->forward_overflows++;
    scaler_decide(out, ov != GAN_SCALER_NO_OVERFLOW, sc->scale, ov, GAN_SCALER_HELD);
    return GAN_OK;
}

#define FIXED_STATE_VERSION 1

static const struct scaler_field fixed_fields[] = {
    { "updates", GAN_SCALER_INT64 },
    { "skipped", GAN_SCALER_INT64 },
    { "gradient_overflows", GAN_SCALER_INT64 },
    { "forward_overflows", GAN_SCALER_INT64 },
};

gan_status fixed_save_state(gan_scaler *sc, struct gan_scaler_state *out)
{
    if (!out)
        return sc->host->fail(sc->host->ctx, GAN_ERR_INVALID,
                              "scaler %s: save_state() was given nowhere to write", sc->name);
    scaler_state_begin(out, sc->name, FIXED_STATE_VERSION);
    scaler_state_put_int(out, "updates", sc->updates);
    scaler_state_put_int(out, "skipped", sc->skipped);
    scaler_state_put_int(out, "gradient_overflows", sc->gradient_overflows);
    scaler_state_put_int(out, "forward_overflows", sc->forward_overflows);
    return GAN_OK;
}

gan_status fixed_load_state(gan_scaler *sc, const struct gan_scaler_state *in)
{
    const struct gan_host *host = sc->host;
    gan_status st = scaler_state_check(host, sc->name, in, FIXED_STATE_VERSION, fixed_fields,
                                       sizeof fixed_fields / sizeof fixed_fields[0]);
    int64_t updates, skipped, gradient, forward;
    if (st != GAN_OK ||
        (st = scaler_state_counter(host, sc->name, in, "updates", 0, &updates)) != GAN_OK ||
        (st = scaler_state_counter(host, sc->name, in, "skipped", 0, &skipped)) != GAN_OK ||
        (st = scaler_state_counter(host, sc->name, in, "gradient_overflows", 0,
                                   &gradient)) != GAN_OK ||
        (st = scaler_state_counter(host, sc->name, in, "forward_overflows", 0,
                                   &forward)) != GAN_OK)
        return st;
    sc->updates = updates;
    sc->skipped = skipped;
    sc->gradient_overflows = gradient;
    sc->forward_overflows = forward;
    return GAN_OK;
}

const char *fixed_describe(gan_scaler *sc)
{
    snprintf(sc->line, sizeof sc->line,
             "%s: fixed scale %.9g; %lld of %lld steps skipped (%lld gradient, %lld forward "
             "overflows)", sc->name, sc->scale, (long long)sc->skipped, (long long)sc->updates,
             (long long)sc->gradient_overflows, (long long)sc->forward_overflows);
    return sc->line;
}
