/* SPDX-License-Identifier: MIT */
/* config_write.c — the configuration as libconfig text: one value as a file writes it,
 * and every value, groups nested, in the order keys were first set. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"

/* ------------------------------------------------------------------ values */

/* Appends `s` quoted as libconfig reads it; stops short of the end of buf. */
static size_t put_quoted(char *buf, size_t size, size_t o, const char *s)
{
    if (o + 3 > size)
        return o;
    buf[o++] = '"';
    for (const char *c = s; *c && o + 3 < size; c++) {
        if (*c == '"' || *c == '\\')
            buf[o++] = '\\';
        buf[o++] = *c;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return o;
}

/* ["a", "b"]: always written as an array, which is what the schema's lists are. */
static void format_strings(const struct gan_config_value *v, char *buf, size_t size)
{
    if (size < 3) {
        if (size)
            buf[0] = '\0';
        return;
    }
    size_t o = 0;
    buf[o++] = '[';
    buf[o] = '\0';
    for (size_t i = 0; i < v->n_items && o + 4 < size; i++) {
        if (i) {
            buf[o++] = ',';
            buf[o++] = ' ';
            buf[o] = '\0';
        }
        o = put_quoted(buf, size - 1, o, v->items[i]);
    }
    buf[o++] = ']';
    buf[o] = '\0';
}

void gan_config_format_value(const struct gan_config_value *v, char *buf, size_t size)
{
    switch (v->type) {
    case GAN_CONFIG_INT:
        snprintf(buf, size, "%lld", v->i);
        break;
    case GAN_CONFIG_FLOAT:
        /* The shortest form that reads back as the same double: 0.2, not 0.2000…01. */
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, size, "%.*g", digits, v->f);
            if (strtod(buf, NULL) == v->f)
                break;
        }
        /* Keep it a float when read back: libconfig reads "2" as an integer. */
        if (!strpbrk(buf, ".eEn"))
            strncat(buf, ".0", size - strlen(buf) - 1);
        break;
    case GAN_CONFIG_BOOL:
        snprintf(buf, size, "%s", v->b ? "true" : "false");
        break;
    case GAN_CONFIG_STRING: {
        size_t o = 0;
        if (size < 3) {
            if (size)
                buf[0] = '\0';
            break;
        }
        buf[o++] = '"';
        for (const char *c = v->s; *c && o + 3 < size; c++) {
            if (*c == '"' || *c == '\\')
                buf[o++] = '\\';
            buf[o++] = *c;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        break;
    }
    case GAN_CONFIG_GROUP: snprintf(buf, size, "{ ... }"); break;
    case GAN_CONFIG_ARRAY:
    case GAN_CONFIG_LIST:
        if (!v->strings) {
            snprintf(buf, size, v->type == GAN_CONFIG_ARRAY ? "[ ... ]" : "( ... )");
            break;
        }
        format_strings(v, buf, size);
        break;
    }
}

/* ------------------------------------------------------------------ writing */

/* A growing string; `failed` once an allocation failed. */
struct text {
    char *s;
    size_t len, cap;
    int failed;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (t->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n + 1);
    t->len += n;
}

static void text_indent(struct text *t, int depth)
{
    for (int i = 0; i < depth; i++)
        text_add(t, "  ");
}

/* Writes every value under `prefix` ("" or "a.b."), groups nested, in first-set order. */
static void write_group(struct text *t, const gan_config *cfg, const char *prefix, int depth,
                        int with_origins)
{
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (strncmp(v->key, prefix, plen) != 0)
            continue;
        const char *rest = v->key + plen;
        const char *dot = strchr(rest, '.');
        if (!dot) {
            char value[4096];
            gan_config_format_value(v, value, sizeof value);
            /* libconfig 1.5 reads an integer beyond 32 bits from a file only with L. */
            if (v->type == GAN_CONFIG_INT && (v->i > 2147483647LL || v->i < -2147483647LL))
                strncat(value, "L", sizeof value - strlen(value) - 1);
            text_indent(t, depth);
            text_add(t, rest);
            text_add(t, " = ");
            text_add(t, value);
            text_add(t, ";");
            if (with_origins) {
                text_add(t, "  # ");
                text_add(t, v->origin);
            }
            text_add(t, "\n");
            continue;
        }
        /* A group: written where its first key was set, with all its keys. */
        size_t glen = (size_t)(dot - rest);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strncmp(cfg->values[j].key, v->key, plen + glen + 1) == 0;
        if (seen)
            continue;
        char sub[512];
        if (plen + glen + 2 > sizeof sub)
            continue;
        memcpy(sub, v->key, plen + glen + 1);
        sub[plen + glen + 1] = '\0';
        text_indent(t, depth);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)glen, rest);
        text_add(t, name);
        text_add(t, " = {\n");
        write_group(t, cfg, sub, depth + 1, with_origins);
        text_indent(t, depth);
        text_add(t, "};\n");
    }
}

char *gan_config_to_text(const gan_config *cfg, int with_origins)
{
    struct text t = { NULL, 0, 0, 0 };
    text_add(&t, "");
    write_group(&t, cfg, "", 0, with_origins);
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
