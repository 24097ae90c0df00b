/* SPDX-License-Identifier: MIT */
/* recipe_instance.c — an FP8 scaling recipe with its host, and its state to and from a
 * checkpoint: the module's own save_state and load_state, or the core's stand-ins. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/recipe_instance.h"

void gan_recipe_group(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s.%s", GAN_CONFIG_RECIPE_GROUP, name);
}

gan_status gan_recipe_instance_new(struct gan_module *m, const gan_config *config,
                                   const struct gan_log *log,
                                   struct gan_recipe_instance **out, struct gan_error *err)
{
    *out = NULL;
    if (m->plugin.kind != GAN_PLUGIN_RECIPE)
        return gan_error_set(err, GAN_ERR_INTERNAL, "%s is not a recipe", m->path);
    struct gan_recipe_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return gan_error_nomem(err, "starting the FP8 recipe");
    inst->module = m;
    char label[96], group[96];
    snprintf(label, sizeof label, "recipe %s", m->plugin.name);
    gan_recipe_group(group, sizeof group, m->plugin.name);
    gan_plugin_host_init(&inst->host, label, group, m->plugin.settings, config, log);

    gan_status st = m->recipe.create(&inst->host.host, &inst->rc);
    if (st == GAN_OK && !inst->rc)
        st = gan_error_set(err, GAN_ERR_INTERNAL,
                           "recipe \"%s\" (%s): create succeeded but gave no instance: fix the plugin",
                           m->plugin.name, m->path);
    else if (st != GAN_OK)
        gan_error_set(err, st, "recipe \"%s\" (%s) could not start: %s", m->plugin.name, m->path,
                      inst->host.error.message[0] ? inst->host.error.message
                                                  : "it gave no reason");
    if (st != GAN_OK) {
        free(inst);
        return st;
    }
    const char *d = m->recipe.describe ? m->recipe.describe(inst->rc) : NULL;
    snprintf(inst->description, sizeof inst->description, "%s", d && *d ? d : m->plugin.name);
    *out = inst;
    return GAN_OK;
}

void gan_recipe_instance_free(struct gan_recipe_instance *inst)
{
    if (!inst)
        return;
    if (inst->rc && inst->module->recipe.destroy)
        inst->module->recipe.destroy(inst->rc);
    if (inst->host.live_blocks)
        gan_log_write(inst->host.log, GAN_LOG_DEBUG,
                      "%s: %zu blocks (%zu bytes) from host->alloc not freed at destroy",
                      inst->host.label, inst->host.live_blocks, inst->host.live_bytes);
    free(inst);
}

/* ------------------------------------------------------------------ state */

#define ARRAY_NAME_MAX 255

int gan_recipe_array_name_ok(const char *name)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789_.#/-";
    if (!name)
        return 0;
    size_t n = strnlen(name, ARRAY_NAME_MAX + 1);
    return n > 0 && n <= ARRAY_NAME_MAX && strspn(name, allowed) == n;
}

/* What the instance's put hands on: the caller's put, and where to say what went wrong. */
struct checked_put {
    struct gan_recipe_instance *inst;
    gan_recipe_put_fn *put;
    void *arg;
    struct gan_error *err;
    int refused;                      /* a name or values were malformed: the module's bug */
};

static gan_status put_checked(void *arg, const char *name, const double *values, size_t count)
{
    struct checked_put *c = arg;
    const struct gan_module *m = c->inst->module;
    if (!gan_recipe_array_name_ok(name) || (count && !values)) {
        c->refused = 1;
        return gan_error_set(c->err, GAN_ERR_INTERNAL,
                             "recipe \"%s\" (%s) saved an array %s: fix the plugin (recipe.h: names are [A-Za-z0-9_.#/-]+, at most 255 bytes)",
                             m->plugin.name, m->path,
                             count && !values ? "without values" : "with a malformed name");
    }
    return c->put(c->arg, name, values, count);
}

gan_status gan_recipe_instance_save_state(struct gan_recipe_instance *inst,
                                          gan_recipe_put_fn *put, void *arg,
                                          struct gan_error *err)
{
    const struct gan_module *m = inst->module;
    if (!m->recipe.save_state)
        return GAN_OK;
    struct checked_put c = { inst, put, arg, err, 0 };
    inst->host.error.message[0] = '\0';
    gan_status st = m->recipe.save_state(inst->rc, put_checked, &c);
    /* A failure of the caller's put has set err already; so has a refused array. */
    if (st != GAN_OK && !c.refused && inst->host.error.message[0])
        gan_error_set(err, st, "recipe \"%s\" (%s) could not save its state: %s",
                      m->plugin.name, m->path, inst->host.error.message);
    return st;
}

/* A name as a user types one: letters, digits, '-' and '_', 1 to 31 bytes. A saved name
 * is quoted only then, so that a crafted file cannot put its words into a message. */
static int plain_name(const char *s)
{
    size_t n = strnlen(s, GAN_RECIPE_NAME_MAX);
    return n > 0 && n < GAN_RECIPE_NAME_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n;
}

gan_status gan_recipe_instance_load_state(struct gan_recipe_instance *inst, const char *saved,
                                          const struct gan_recipe_array *arrays, size_t count,
                                          struct gan_error *err)
{
    const struct gan_module *m = inst->module;
    const char *name = m->plugin.name;
    if (!saved || strcmp(saved, name) != 0) {
        int plain = saved && plain_name(saved);
        return gan_error_set(err, GAN_ERR_INVALID,
                             "the checkpoint's FP8 state belongs to %s%s%s, not to recipe \"%s\": resume with that recipe (fp8.recipe), or start afresh",
                             plain ? "recipe \"" : "another recipe", plain ? saved : "",
                             plain ? "\"" : "", name);
    }
    if (count && !arrays)
        return gan_error_set(err, GAN_ERR_INTERNAL, "%zu state arrays for recipe \"%s\" without a list",
                             count, name);
    for (size_t i = 0; i < count; i++) {
        if (!gan_recipe_array_name_ok(arrays[i].name))
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "the checkpoint's state of recipe \"%s\" has an array whose name is not one a recipe writes: the checkpoint is damaged",
                                 name);
        if (arrays[i].count && !arrays[i].values)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "the checkpoint's state array \"%s\" of recipe \"%s\" has no values",
                                 arrays[i].name, name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(arrays[j].name, arrays[i].name) == 0)
                return gan_error_set(err, GAN_ERR_FORMAT,
                                     "the checkpoint's state of recipe \"%s\" has the array \"%s\" twice",
                                     name, arrays[i].name);
    }
    if (!m->recipe.load_state) {
        if (count)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "the checkpoint holds %zu state array%s (\"%s\" first) for recipe \"%s\", which keeps no state in this build: resume with the build that saved it",
                                 count, count == 1 ? "" : "s", arrays[0].name, name);
        return GAN_OK;
    }
    inst->host.error.message[0] = '\0';
    gan_status st = m->recipe.load_state(inst->rc, arrays, count);
    if (st != GAN_OK)
        gan_error_set(err, st, "recipe \"%s\" (%s) refused the checkpoint's state: %s", name,
                      m->path, inst->host.error.message[0] ? inst->host.error.message
                                                           : "it gave no reason");
    return st;
}
