/* SPDX-License-Identifier: MIT */
/* host.c — the gan_host table behind every plugin instance: settings answered from the
 * plugin's configuration group, messages routed to the program's log and error context. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "plugin/host.h"

static void host_log(void *ctx, enum gan_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gan_status host_fail(void *ctx, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void host_log(void *ctx, enum gan_log_level level, const char *fmt, ...)
{
    struct gan_plugin_host *h = ctx;
    if (!gan_log_enabled(h->log, level))
        return;
    char line[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    gan_log_write(h->log, level, "%s: %s", h->label, line);
}

static gan_status host_fail(void *ctx, gan_status status, const char *fmt, ...)
{
    struct gan_plugin_host *h = ctx;
    va_list ap;
    va_start(ap, fmt);
    gan_error_vset(&h->error, status, fmt, ap);
    va_end(ap);
    return status;
}

/* Each block carries its size in front so that free can count without asking. */
union block_header {
    max_align_t align;
    size_t bytes;
};

static void *host_alloc(void *ctx, size_t bytes)
{
    struct gan_plugin_host *h = ctx;
    if (bytes > (size_t)-1 - sizeof(union block_header))
        return NULL;
    union block_header *b = malloc(sizeof *b + bytes);
    if (!b)
        return NULL;
    b->bytes = bytes;
    h->live_bytes += bytes;
    h->live_blocks++;
    if (h->live_bytes > h->peak_bytes)
        h->peak_bytes = h->live_bytes;
    return b + 1;
}

static void host_free(void *ctx, void *ptr)
{
    struct gan_plugin_host *h = ctx;
    if (!ptr)
        return;
    union block_header *b = (union block_header *)ptr - 1;
    h->live_bytes -= b->bytes;
    h->live_blocks--;
    free(b);
}

/* The declared spec entry and the configuration's value for `key`, or NOT_FOUND. */
static gan_status lookup(struct gan_plugin_host *h, const char *key,
                         const struct gan_setting_spec **spec,
                         const struct gan_config_value **value)
{
    const struct gan_setting_spec *s = h->settings;
    while (s && s->name && strcmp(s->name, key) != 0)
        s++;
    if (!s || !s->name || !h->config)
        return GAN_ERR_NOT_FOUND;
    char full[400];
    snprintf(full, sizeof full, "%s.%s", h->group, key);
    *value = gan_config_find(h->config, full);
    *spec = s;
    return *value ? GAN_OK : GAN_ERR_NOT_FOUND;
}

/* A plugin asking for a setting as a type it did not declare is a plugin bug; a value
 * of the wrong type means the configuration was not checked against the plugin's spec. */
static gan_status wrong_getter(struct gan_plugin_host *h, const struct gan_setting_spec *s,
                               const struct gan_config_value *v, int spec_ok, const char *asked)
{
    if (!spec_ok)
        return gan_error_set(&h->error, GAN_ERR_INVALID,
                             "%s asked for setting \"%s.%s\" as %s, but declared it %s: fix the plugin",
                             h->label, h->group, s->name, asked, gan_setting_type_phrase(s->type));
    return gan_error_set(&h->error, GAN_ERR_CONFIG, "%s: \"%s\" must be %s, got %s",
                         v->origin, v->key, gan_setting_type_phrase(s->type),
                         gan_config_type_phrase(v->type));
}

static gan_status host_get_int(void *ctx, const char *key, long long *out)
{
    const struct gan_setting_spec *s;
    const struct gan_config_value *v;
    gan_status st = lookup(ctx, key, &s, &v);
    if (st != GAN_OK)
        return st;
    if (s->type != GAN_SETTING_INT || v->type != GAN_CONFIG_INT)
        return wrong_getter(ctx, s, v, s->type == GAN_SETTING_INT, "an integer");
    *out = v->i;
    return GAN_OK;
}

static gan_status host_get_float(void *ctx, const char *key, double *out)
{
    const struct gan_setting_spec *s;
    const struct gan_config_value *v;
    gan_status st = lookup(ctx, key, &s, &v);
    if (st != GAN_OK)
        return st;
    int spec_ok = s->type == GAN_SETTING_FLOAT || s->type == GAN_SETTING_INT;
    if (!spec_ok || (v->type != GAN_CONFIG_FLOAT && v->type != GAN_CONFIG_INT))
        return wrong_getter(ctx, s, v, spec_ok, "a number");
    *out = v->type == GAN_CONFIG_INT ? (double)v->i : v->f;
    return GAN_OK;
}

static gan_status host_get_bool(void *ctx, const char *key, int *out)
{
    const struct gan_setting_spec *s;
    const struct gan_config_value *v;
    gan_status st = lookup(ctx, key, &s, &v);
    if (st != GAN_OK)
        return st;
    if (s->type != GAN_SETTING_BOOL || v->type != GAN_CONFIG_BOOL)
        return wrong_getter(ctx, s, v, s->type == GAN_SETTING_BOOL, "a boolean");
    *out = v->b;
    return GAN_OK;
}

static gan_status host_get_string(void *ctx, const char *key, const char **out)
{
    const struct gan_setting_spec *s;
    const struct gan_config_value *v;
    gan_status st = lookup(ctx, key, &s, &v);
    if (st != GAN_OK)
        return st;
    if (s->type != GAN_SETTING_STRING || v->type != GAN_CONFIG_STRING)
        return wrong_getter(ctx, s, v, s->type == GAN_SETTING_STRING, "a string");
    *out = v->s;
    return GAN_OK;
}

void gan_plugin_host_init(struct gan_plugin_host *h, const char *label, const char *group,
                          const struct gan_setting_spec *settings, const gan_config *config,
                          const struct gan_log *log)
{
    memset(h, 0, sizeof *h);
    h->host.struct_size = sizeof h->host;
    h->host.ctx = h;
    h->host.log = host_log;
    h->host.fail = host_fail;
    h->host.alloc = host_alloc;
    h->host.free = host_free;
    h->host.get_int = host_get_int;
    h->host.get_float = host_get_float;
    h->host.get_bool = host_get_bool;
    h->host.get_string = host_get_string;
    snprintf(h->label, sizeof h->label, "%s", label);
    snprintf(h->group, sizeof h->group, "%s", group);
    h->settings = settings;
    h->config = config;
    h->log = log;
}
