/* SPDX-License-Identifier: MIT */
/* configuration.c — the configuration's value store: values by key with their origins,
 * replaced in place and kept in first-set order, the files read, and the typed lookups. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"

/* ------------------------------------------------------------------ storage */

void gan_config_parsed_release(struct parsed *p)
{
    free(p->s);
    p->s = NULL;
    for (size_t i = 0; i < p->n_items; i++)
        free(p->items[i]);
    free(p->items);
    p->items = NULL;
    p->n_items = 0;
}

static void value_release(struct gan_config_value *v)
{
    free((char *)v->key);
    free((char *)v->s);
    free((char *)v->origin);
    for (size_t i = 0; i < v->n_items; i++)
        free((char *)v->items[i]);
    free((void *)v->items);
}

gan_status gan_config_nomem(struct gan_error *err)
{
    return gan_error_nomem(err, "reading the configuration");
}

/* Removes value `at`, keeping the order of the rest. */
void gan_config_remove_at(gan_config *cfg, size_t at)
{
    value_release(&cfg->values[at]);
    memmove(&cfg->values[at], &cfg->values[at + 1], (cfg->count - at - 1) * sizeof cfg->values[0]);
    cfg->count--;
}

long gan_config_find_index(const gan_config *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->count; i++)
        if (strcmp(cfg->values[i].key, key) == 0)
            return (long)i;
    return -1;
}

/* Stores (or replaces) a value. Takes ownership of p->s and p->items. */
gan_status gan_config_store(gan_config *cfg, const char *key, struct parsed *p, const char *origin,
                            enum gan_config_source source, struct gan_error *err)
{
    struct gan_config_value v = {
        .key = gan_strdup(key), .type = p->type, .i = p->i, .f = p->f, .b = p->b,
        .s = p->s, .origin = gan_strdup(origin), .source = source,
        .items = (const char *const *)p->items, .n_items = p->n_items,
        .strings = p->items_ok,
    };
    p->s = NULL;
    p->items = NULL;
    p->n_items = 0;
    if (!v.key || !v.origin) {
        value_release(&v);
        return gan_config_nomem(err);
    }
    long at = gan_config_find_index(cfg, key);
    if (at >= 0) {
        value_release(&cfg->values[at]);
        cfg->values[at] = v;
        return GAN_OK;
    }
    if (cfg->count == cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap * 2 : 16;
        struct gan_config_value *grown = realloc(cfg->values, cap * sizeof *grown);
        if (!grown) {
            value_release(&v);
            return gan_config_nomem(err);
        }
        cfg->values = grown;
        cfg->cap = cap;
    }
    cfg->values[cfg->count++] = v;
    return GAN_OK;
}

/* ------------------------------------------------------------------ life and lookups */

void gan_config_free(gan_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->count; i++)
        value_release(&cfg->values[i]);
    for (size_t i = 0; i < cfg->file_count; i++)
        free(cfg->files[i]);
    free(cfg->values);
    free(cfg->files);
    free(cfg);
}

const struct gan_config_value *gan_config_find(const gan_config *cfg, const char *key)
{
    long at = gan_config_find_index(cfg, key);
    return at < 0 ? NULL : &cfg->values[at];
}

gan_status gan_config_get_int(const gan_config *cfg, const char *key, long long *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_INT)
        return GAN_ERR_CONFIG;
    *out = v->i;
    return GAN_OK;
}

gan_status gan_config_get_float(const gan_config *cfg, const char *key, double *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type == GAN_CONFIG_INT)
        *out = (double)v->i;
    else if (v->type == GAN_CONFIG_FLOAT)
        *out = v->f;
    else
        return GAN_ERR_CONFIG;
    return GAN_OK;
}

gan_status gan_config_get_bool(const gan_config *cfg, const char *key, int *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_BOOL)
        return GAN_ERR_CONFIG;
    *out = v->b;
    return GAN_OK;
}

gan_status gan_config_get_string(const gan_config *cfg, const char *key, const char **out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_STRING)
        return GAN_ERR_CONFIG;
    *out = v->s;
    return GAN_OK;
}

size_t gan_config_count(const gan_config *cfg)
{
    return cfg->count;
}

const struct gan_config_value *gan_config_at(const gan_config *cfg, size_t index)
{
    return index < cfg->count ? &cfg->values[index] : NULL;
}

size_t gan_config_file_count(const gan_config *cfg)
{
    return cfg->file_count;
}

const char *gan_config_file_at(const gan_config *cfg, size_t index)
{
    return index < cfg->file_count ? cfg->files[index] : NULL;
}

gan_status gan_config_get_strings(const gan_config *cfg, const char *key,
                                  const char *const **items, size_t *count)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if ((v->type != GAN_CONFIG_ARRAY && v->type != GAN_CONFIG_LIST) || !v->strings)
        return GAN_ERR_CONFIG;
    *items = v->items;
    *count = v->n_items;
    return GAN_OK;
}
