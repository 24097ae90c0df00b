/* SPDX-License-Identifier: MIT */
/* fp8_recipe.h — precision.mode "fp8" for a run: its settings, the scaling recipe's
 * instance handed to the context, the debug log of every cast, and the recipe's state
 * as the checkpoint stores it. */
#ifndef GANCTL_AMP_FP8_RECIPE_H
#define GANCTL_AMP_FP8_RECIPE_H

#include <stddef.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"
#include "plugin/plugin_loader.h"
#include "plugin/recipe_instance.h"

/* What the settings say, with what unset means (ganctl.conf(5)). */
struct gan_fp8_settings {
    int on;                          /* precision.mode = "fp8" */
    const char *recipe;              /* fp8.recipe: "current" */
    enum gan_dtype forward_format;   /* fp8.format "hybrid" and "e4m3": E4M3 */
    enum gan_dtype gradient_format;  /* "hybrid": E5M2; "e4m3": E4M3 */
    enum gan_dtype rest;             /* fp8.rest: GAN_BF16 or GAN_F16 */
    int saturate;                    /* fp8.saturate: true */
};

/* Reads the fp8 settings (and whether precision.mode is "fp8"). */
void gan_fp8_read_settings(const gan_config *cfg, struct gan_fp8_settings *out);

/* "fp8 hybrid (E4M3/E5M2) under \"current\", bf16 between products". */
const char *gan_fp8_describe(const struct gan_fp8_settings *set, char *buf, size_t size);

/* A run's recipe instance. */
struct gan_amp_fp8 {
    struct gan_fp8_settings set;
    struct gan_recipe_instance *recipe;
    const struct gan_log *log;
    int log_casts;                   /* casts at debug (run.debug_level 2) ... */
    int log_now;                     /* ... during the steps before a metrics row */
};

/* Whether the casts from now on are logged (at debug level 2: the trainer turns it on
 * for the iterations that end in a metrics row). */
void gan_amp_fp8_log_now(struct gan_amp_fp8 *f, int on);

/* Creates the instance from the module (opened with its group's settings checked). */
gan_status gan_amp_fp8_init(struct gan_amp_fp8 *f, const struct gan_fp8_settings *set,
                            struct gan_module *module, const gan_config *cfg,
                            const struct gan_log *log, int log_casts, struct gan_error *err);
/* Turns the context's FP8 products on with this instance. */
gan_status gan_amp_fp8_apply(struct gan_amp_fp8 *f, gan_ctx *ctx, struct gan_error *err);
void gan_amp_fp8_free(struct gan_amp_fp8 *f);

/* A recipe's state as named arrays, owned (the checkpoint's form of it). */
struct gan_fp8_state {
    char recipe[64];                 /* the recipe's name; "" when none was saved */
    struct gan_recipe_array *arrays; /* names and values malloc'd */
    size_t count, cap;
};
gan_status gan_fp8_state_add(struct gan_fp8_state *st, const char *name,
                             const double *values, size_t count);
void gan_fp8_state_clear(struct gan_fp8_state *st);

/* The instance's state into *out (cleared first); a recipe without state gives its
 * name and no arrays. */
gan_status gan_amp_fp8_save(struct gan_amp_fp8 *f, struct gan_fp8_state *out,
                            struct gan_error *err);
/* Hands a saved state back. Another recipe's state is refused (GAN_ERR_INVALID, naming
 * both); arrays for a recipe without state are refused as a damaged file. `path` names
 * the checkpoint in messages. */
gan_status gan_amp_fp8_load(struct gan_amp_fp8 *f, const struct gan_fp8_state *in,
                            const char *path, struct gan_error *err);

#endif
