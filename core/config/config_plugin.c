/* SPDX-License-Identifier: MIT */
/* config_plugin.c — checking the settings of a plugin's group against the settings the
 * loaded plugin declares, its defaults, and the groups of loss terms and FP8 recipes
 * nobody loads. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config/config_private.h"

/* ------------------------------------------------------------------ plugins */

gan_status gan_config_apply_plugin(gan_config *cfg, const char *group, const char *label,
                                   const struct gan_setting_spec *spec, struct gan_error *err)
{
    size_t glen = strlen(group);
    char full[256], why[512];
    gan_status st;

    /* The plugin's own declarations first: a broken spec is the plugin's bug. */
    for (const struct gan_setting_spec *s = spec; s && s->name; s++) {
        snprintf(full, sizeof full, "%s.%s", group, s->name);
        if (!gan_config_valid_key(s->name) || gan_config_core_key(full))
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "%s declares a setting \"%s\" that %s: fix the plugin",
                                 label, s->name,
                                 gan_config_core_key(full) ? "ganctl already uses" : "is not a valid name");
        if (!s->default_value)
            continue;
        struct parsed p;
        st = gan_config_parse_value(s->default_value, &p, why, sizeof why);
        /* A default beyond a double's range reads as inf, which no setting may hold. */
        int infinite = st == GAN_OK && p.type == GAN_CONFIG_FLOAT && !isfinite(p.f);
        if (st == GAN_OK && (infinite || !gan_config_type_accepts(s->type, p.type))) {
            gan_config_parsed_release(&p);
            st = GAN_ERR_INVALID;
        }
        if (st != GAN_OK)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "%s declares the default %s for \"%s\", which is not %s: fix the plugin",
                                 label, s->default_value, full,
                                 infinite ? "a finite number" : gan_setting_type_phrase(s->type));
        gan_config_parsed_release(&p);
    }

    /* Then everything the user wrote in the group. */
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (strncmp(v->key, group, glen) != 0 || v->key[glen] != '.' || gan_config_core_key(v->key))
            continue;
        const char *name = v->key + glen + 1;
        const struct gan_setting_spec *s = spec;
        while (s && s->name && strcmp(s->name, name) != 0)
            s++;
        /* ganctl's own defaults for its shipped plugins fit only those. */
        if (v->source == GAN_CONFIG_DEFAULT &&
            (!s || !s->name || !gan_config_type_accepts(s->type, v->type))) {
            gan_config_remove_at(cfg, i--);
            continue;
        }
        int known = s && s->name;
        if ((!known || !gan_config_type_accepts(s->type, v->type)) &&
            gan_config_source_is_saved(v->source))
            return gan_config_saved_refusal(err, v->origin, known ? v->key : NULL, v->source);
        if (!known)
            return gan_config_unknown_key(err, v->origin, v->key, group, label, spec);
        if (!gan_config_type_accepts(s->type, v->type))
            return gan_config_wrong_type(err, v->origin, v->key, s->type, v->type, v->s);
    }

    /* Defaults for what nobody set, so every declared key has a value. */
    for (const struct gan_setting_spec *s = spec; s && s->name; s++) {
        snprintf(full, sizeof full, "%s.%s", group, s->name);
        if (!s->default_value || gan_config_find_index(cfg, full) >= 0)
            continue;
        struct parsed p;
        if ((st = gan_config_parse_value(s->default_value, &p, why, sizeof why)) != GAN_OK)
            return gan_error_set(err, st, "%s: %s", label, why);
        if ((st = gan_config_store(cfg, full, &p, "default", GAN_CONFIG_DEFAULT, err)) != GAN_OK)
            return st;
    }
    return GAN_OK;
}

int gan_config_of_unlisted_term(const gan_config *cfg, const char *key)
{
    size_t n = strlen(LOSS_GROUP), count;
    const char *term = strncmp(key, LOSS_GROUP, n) == 0 && key[n] == '.' ? key + n + 1 : NULL;
    const char *dot = term ? strchr(term, '.') : NULL;
    const char *const *terms;
    if (!dot || gan_config_get_strings(cfg, "loss.terms", &terms, &count) != GAN_OK)
        return 0;
    for (size_t i = 0; i < count; i++)
        if (strlen(terms[i]) == (size_t)(dot - term) &&
            strncmp(terms[i], term, (size_t)(dot - term)) == 0)
            return 0;
    return 1;
}

gan_status gan_config_check_loss_groups(gan_config *cfg, const char *const *terms,
                                        size_t count,
                                        const struct gan_config_replaced_terms *replaced,
                                        struct gan_error *err)
{
    size_t n = strlen(LOSS_GROUP);
    const struct gan_config_value *list = gan_config_find(cfg, "loss.terms");
    enum gan_config_source list_source = list ? list->source : GAN_CONFIG_DEFAULT;
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (!gan_config_in_plugin_group(v->key) || strncmp(v->key, LOSS_GROUP, n) != 0 || v->key[n] != '.')
            continue;
        const char *term = v->key + n + 1;
        size_t len = (size_t)(strchr(term, '.') - term);
        int listed = 0;
        for (size_t t = 0; t < count && !listed; t++)
            listed = strlen(terms[t]) == len && strncmp(terms[t], term, len) == 0;
        if (!listed && v->source == GAN_CONFIG_DEFAULT) {
            gan_config_remove_at(cfg, i--);
            continue;
        }
        /* Written for the list that a later source replaced: not a mistake of the text
         * that holds it, and never read. */
        if (!listed && replaced && v->source < list_source &&
            !gan_config_source_is_saved(list_source) && !gan_config_source_is_saved(v->source)) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)len, term);
            if (replaced->installed && replaced->installed(replaced->ctx, name)) {
                if (replaced->dropped)
                    replaced->dropped(replaced->ctx, v->key, v->origin);
                gan_config_remove_at(cfg, i--);
                continue;
            }
        }
        if (!listed && gan_config_source_is_saved(v->source))
            return gan_config_saved_refusal(err, v->origin, NULL, v->source);
        if (!listed)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: \"%s\" configures the loss term \"%.*s\", which loss.terms does not list: add \"%.*s\" to loss.terms or remove the setting",
                                 v->origin, v->key, (int)len, term, (int)len, term);
    }
    return GAN_OK;
}

gan_status gan_config_check_recipe_groups(gan_config *cfg, const char *recipe,
                                          struct gan_error *err)
{
    size_t n = strlen(GAN_CONFIG_RECIPE_GROUP);
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (!gan_config_in_plugin_group(v->key) || strncmp(v->key, GAN_CONFIG_RECIPE_GROUP, n) != 0 ||
            v->key[n] != '.')
            continue;
        const char *name = v->key + n + 1;
        int len = (int)(strchr(name, '.') - name);
        if (recipe && strlen(recipe) == (size_t)len && strncmp(recipe, name, (size_t)len) == 0)
            continue;
        if (v->source == GAN_CONFIG_DEFAULT) {
            gan_config_remove_at(cfg, i--);
            continue;
        }
        if (gan_config_source_is_saved(v->source))
            return gan_config_saved_refusal(err, v->origin, NULL, v->source);
        if (!recipe)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: \"%s\" configures the FP8 recipe \"%.*s\", but this run uses no FP8 recipe: remove the setting",
                                 v->origin, v->key, len, name);
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" configures the FP8 recipe \"%.*s\", but fp8.recipe selects \"%s\": remove the setting, or select \"%.*s\"",
                             v->origin, v->key, len, name, recipe, len, name);
    }
    return GAN_OK;
}
