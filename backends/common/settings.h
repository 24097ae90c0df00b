/* SPDX-License-Identifier: MIT */
/* settings.h — a backend's settings read through its own table: a setting the host leaves
 * unset takes the default the table declares, so each default is written once. */
#ifndef GANCTL_BACKENDS_COMMON_SETTINGS_H
#define GANCTL_BACKENDS_COMMON_SETTINGS_H

#include <stdlib.h>
#include <string.h>

#include <ganctl/host.h>

/* The default `table` declares for `key`; NULL when it declares none. The core's host
 * answers an unset setting with this default already; a host that answers "not found"
 * (a test's, or another program's) gets the same value through these readers. */
static inline const char *gan_setting_default(const struct gan_setting_spec *table,
                                              const char *key)
{
    for (; table && table->name; table++)
        if (strcmp(table->name, key) == 0)
            return table->default_value;
    return NULL;
}

/* The host's value of `key`, or the table's default when the host has none: GAN_OK, or
 * the host's status for a value of the wrong type. */
static inline gan_status gan_setting_int(const struct gan_host *host,
                                         const struct gan_setting_spec *table, const char *key,
                                         long long *out)
{
    gan_status st = host->get_int(host->ctx, key, out);
    const char *def = st == GAN_ERR_NOT_FOUND ? gan_setting_default(table, key) : NULL;
    if (def) {
        *out = strtoll(def, NULL, 10);
        return GAN_OK;
    }
    return st;
}

static inline gan_status gan_setting_string(const struct gan_host *host,
                                            const struct gan_setting_spec *table,
                                            const char *key, const char **out)
{
    gan_status st = host->get_string(host->ctx, key, out);
    const char *def = st == GAN_ERR_NOT_FOUND ? gan_setting_default(table, key) : NULL;
    if (def) {
        *out = def;
        return GAN_OK;
    }
    return st;
}

static inline gan_status gan_setting_bool(const struct gan_host *host,
                                          const struct gan_setting_spec *table, const char *key,
                                          int *out)
{
    gan_status st = host->get_bool(host->ctx, key, out);
    const char *def = st == GAN_ERR_NOT_FOUND ? gan_setting_default(table, key) : NULL;
    if (def) {
        *out = strcmp(def, "true") == 0;
        return GAN_OK;
    }
    return st;
}

#endif
