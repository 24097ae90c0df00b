/* SPDX-License-Identifier: MIT */
/* recipe_instance.h — an FP8 scaling recipe (recipe.h) created with its host services
 * and its settings group, and its state kept in or restored from a checkpoint through
 * the module's save_state and load_state, or the core's stand-ins for a recipe without
 * state. */
#ifndef GANCTL_CORE_RECIPE_INSTANCE_H
#define GANCTL_CORE_RECIPE_INSTANCE_H

#include <stddef.h>
#include <ganctl/ganctl.h>
#include "config/configuration.h"
#include "base/error.h"
#include "base/log.h"
#include "plugin/host.h"
#include "plugin/plugin_loader.h"

/* One recipe serves the whole run (recipe.h), so one instance does. */
struct gan_recipe_instance {
    struct gan_module *module;        /* borrowed: must outlive the instance */
    struct gan_plugin_host host;      /* label "recipe NAME", group "fp8.NAME" */
    gan_recipe *rc;
    char description[256];            /* describe() after create, or the name */
};

/* The configuration group of the recipe `name`: "fp8.NAME", into buf. */
void gan_recipe_group(char *buf, size_t size, const char *name);

/* Calls the module's create with a host whose settings are the group fp8.NAME of
 * `config`, which should have been through gan_config_apply_plugin for that group and
 * the module's settings (and gan_config_check_recipe_groups). `config` and `log` must
 * outlive the instance. A create that fails gives 'recipe "x" (path) could not start:
 * <its reason>' with its status (GAN_ERR_CONFIG for a setting out of range). */
gan_status gan_recipe_instance_new(struct gan_module *module, const gan_config *config,
                                   const struct gan_log *log,
                                   struct gan_recipe_instance **out, struct gan_error *err);
void gan_recipe_instance_free(struct gan_recipe_instance *inst);

/* The recipe's state through `put` (recipe.h), each array's name checked first
 * ([A-Za-z0-9_.#/-]+, at most 255 bytes; GAN_ERR_INTERNAL naming the recipe otherwise).
 * A recipe without state writes nothing. */
gan_status gan_recipe_instance_save_state(struct gan_recipe_instance *inst,
                                          gan_recipe_put_fn *put, void *arg,
                                          struct gan_error *err);

/* Restores the state a checkpoint saved for the recipe `saved` (its metadata "recipe"):
 * GAN_ERR_INVALID when that is another recipe; GAN_ERR_FORMAT for an array whose name is
 * malformed or repeated or whose values are missing, and for any array at all when the
 * recipe keeps no state (it can only come from a build that kept some, and resuming
 * without it would not continue the saved run). Otherwise the module's load_state,
 * which changes nothing unless all of it is good; its refusal comes back with its
 * status and reason. */
gan_status gan_recipe_instance_load_state(struct gan_recipe_instance *inst, const char *saved,
                                          const struct gan_recipe_array *arrays, size_t count,
                                          struct gan_error *err);

/* Nonzero when `name` may name an array of a recipe's state. */
int gan_recipe_array_name_ok(const char *name);

#endif
