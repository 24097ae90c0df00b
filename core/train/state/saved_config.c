/* SPDX-License-Identifier: MIT */
/* saved_config.c — a checkpoint's saved configuration with the command line's changes of
 * where it runs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/state/checkpoint.h"
#include "train/state/saved_config.h"

/* Whether the command line may change `assignment`'s key: where the run computes and
 * what it logs, never what it computes. */
static int may_change(const char *assignment)
{
    size_t key = strcspn(assignment, "= ");
    return strncmp(assignment, "backend.", 8) == 0 ||
           (key == 9 && strncmp(assignment, "log.level", 9) == 0);
}

gan_status gan_saved_config_open(const char *checkpoint, const struct gan_saved_setting *settings,
                                 size_t count, const char *why_fixed, gan_config **cfg,
                                 char **text, struct gan_error *err)
{
    *cfg = NULL;
    char *saved = NULL;
    gan_status st = gan_checkpoint_read_config(checkpoint, &saved, err);
    if (st == GAN_OK) {
        char label[4200];
        snprintf(label, sizeof label, "%s (saved configuration)", checkpoint);
        st = gan_config_new(cfg, err);
        if (st == GAN_OK)
            st = gan_config_read_string(*cfg, saved, label, GAN_CONFIG_CHECKPOINT, err);
    }
    for (size_t i = 0; st == GAN_OK && i < count; i++) {
        const struct gan_saved_setting *s = &settings[i];
        if (s->backend) {
            char origin[512];
            snprintf(origin, sizeof origin, "--backend %s", s->backend);
            st = gan_config_set_string(*cfg, "backend.name", s->backend, origin, err);
            continue;
        }
        const char *a = s->assignment ? s->assignment : "";
        if (!may_change(a)) {
            st = gan_error_set(err, GAN_ERR_CONFIG,
                               "--set %s: %s; only backend.* and log.level may be set", a,
                               why_fixed);
            break;
        }
        st = gan_config_set(*cfg, a, err);
    }
    if (text)
        *text = saved;
    else
        free(saved);
    return st;
}
