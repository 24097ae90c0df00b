/* SPDX-License-Identifier: MIT */
/* session_fp8.c — a session's FP8 part (precision.mode "fp8"): the scaling recipe's
 * module and instance, the context's FP8 products, and the recipe's state around a
 * checkpoint. */
#include "config.h"

#include <string.h>

#include "train/state/compute.h"
#include "train/state/session.h"

gan_status gan_session_fp8_open(gan_session *s, gan_config *cfg, const gan_loader *loader,
                                struct gan_error *err)
{
    struct gan_fp8_settings set;
    gan_fp8_read_settings(cfg, &set);
    gan_status st = gan_config_check_recipe_groups(cfg, set.on ? set.recipe : NULL, err);
    if (st != GAN_OK || !set.on)
        return st;
    char group[96];
    gan_recipe_group(group, sizeof group, set.recipe);
    return gan_open_configured(loader, cfg, GAN_PLUGIN_RECIPE, set.recipe, group,
                               &s->recipe_module, err);
}

gan_status gan_session_fp8_init(gan_session *s, struct gan_error *err)
{
    if (!s->set.fp8.on)
        return GAN_OK;
    long long debug = 0;
    gan_config_get_int(s->cfg, "run.debug_level", &debug);
    return gan_amp_fp8_init(&s->fp8, &s->set.fp8, s->recipe_module, s->cfg, s->log,
                            debug >= 2, err);
}

gan_status gan_session_fp8_apply(gan_session *s, struct gan_error *err)
{
    return s->set.fp8.on ? gan_amp_fp8_apply(&s->fp8, s->ctx, err) : GAN_OK;
}

gan_status gan_session_fp8_save(gan_session *s, struct gan_fp8_state *out,
                                struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    return s->set.fp8.on ? gan_amp_fp8_save(&s->fp8, out, err) : GAN_OK;
}

gan_status gan_session_fp8_load(gan_session *s, const struct gan_fp8_state *in,
                                const char *path, struct gan_error *err)
{
    if (s->set.fp8.on)
        return gan_amp_fp8_load(&s->fp8, in, path, err);
    if (in->recipe[0])
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: the checkpoint was saved by a run "
                             "with FP8 products (its metadata \"recipe\" is set), and this "
                             "one has precision.mode other than \"fp8\": resume with "
                             "precision.mode = \"fp8\" and the fp8 settings that saved it",
                             path);
    return GAN_OK;
}
