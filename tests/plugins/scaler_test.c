/* SPDX-License-Identifier: MIT */
/* scaler_test.c — test scalers for the loader: scaler-short.so declares a table that ends
 * before describe, scaler-noslot.so (built with NO_UPDATE) lacks the required update,
 * scaler-stateless.so (NO_STATE) has neither save_state nor load_state,
 * scaler-halfstate.so (NO_LOAD) has save_state without load_state, and
 * scaler-skipper.so (SKIP_THREE_OF_FOUR) skips three steps of every four after the
 * first, finite or not, which a diverged run's test needs. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include <ganctl/ganctl.h>

/* One instance holds nothing: every create gives the same token. */
static int token;

static gan_status t_create(const struct gan_host *host, gan_scaler **out)
{
    (void)host;
    *out = (gan_scaler *)(void *)&token;
    return GAN_OK;
}

static double t_scale(gan_scaler *sc)
{
    (void)sc;
    return 1.0;
}

#ifndef NO_UPDATE
static gan_status t_update(gan_scaler *sc, const struct gan_scaler_input *in,
                           struct gan_scaler_decision *out)
{
    (void)sc;
    out->skip = in->forward_overflow;
#ifdef SKIP_THREE_OF_FOUR
    out->skip = out->skip || in->step % 4 != 0;
#endif
    out->scale = 1.0;
    out->overflow = in->forward_overflow ? GAN_SCALER_FORWARD_OVERFLOW : GAN_SCALER_NO_OVERFLOW;
    out->change = GAN_SCALER_HELD;
    return GAN_OK;
}
#endif

#ifndef NO_STATE
static gan_status t_save(gan_scaler *sc, struct gan_scaler_state *out)
{
    (void)sc;
    memset(out, 0, sizeof *out);
    strcpy(out->scaler, SCALER_NAME);
    out->version = 1;
    return GAN_OK;
}

#ifndef NO_LOAD
static gan_status t_load(gan_scaler *sc, const struct gan_scaler_state *in)
{
    (void)sc;
    return strcmp(in->scaler, SCALER_NAME) == 0 ? GAN_OK : GAN_ERR_INVALID;
}
#endif
#endif

/* Set, but outside the declared size of scaler-short's table: the host must not read it. */
static const char *t_describe(gan_scaler *sc)
{
    (void)sc;
    return "beyond the table";
}

static const struct gan_scaler_ops t_ops = {
#ifdef SHORT_TABLE
    .struct_size = offsetof(struct gan_scaler_ops, describe),
#else
    .struct_size = sizeof(struct gan_scaler_ops),
#endif
    .create = t_create,
    .scale = t_scale,
#ifndef NO_UPDATE
    .update = t_update,
#endif
#ifndef NO_STATE
    .save_state = t_save,
#ifndef NO_LOAD
    .load_state = t_load,
#endif
#endif
    .describe = t_describe,
};

static const struct gan_plugin t_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = SCALER_NAME,
    .version = "1.0.0",
    .summary = "a scaler for the loader's tests",
    .ops = &t_ops,
};

GAN_DEFINE_PLUGIN(t_plugin)
