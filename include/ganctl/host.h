/* SPDX-License-Identifier: MIT */
/* host.h — the services the host (libganctl) passes to every plugin instance.
 * Plugins never print, exit or keep global state: they log, report errors and read
 * their settings through this table. */
#ifndef GANCTL_HOST_H
#define GANCTL_HOST_H

#include <stddef.h>
#include <stdarg.h>
#include <ganctl/api.h>
#include <ganctl/status.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gan_log_level {
    GAN_LOG_ERROR = 0,
    GAN_LOG_WARN = 1,
    GAN_LOG_INFO = 2,
    GAN_LOG_DEBUG = 3
};

/* The type of a plugin setting, as declared in its gan_setting_spec. */
enum gan_setting_type {
    GAN_SETTING_INT = 0,    /* libconfig int or int64 */
    GAN_SETTING_FLOAT = 1,  /* libconfig float (an int is accepted too) */
    GAN_SETTING_BOOL = 2,
    GAN_SETTING_STRING = 3
};

/* One setting a plugin reads, declared so that the host can reject unknown keys and
 * wrong types before the plugin runs, fill in defaults, and list them for the user. */
struct gan_setting_spec {
    const char *name;             /* key relative to the plugin's group, e.g. "threads" */
    enum gan_setting_type type;
    const char *default_value;    /* as it would be written in the config file; NULL = none */
    const char *summary;          /* one line for --list-plugins and the man page */
};

struct gan_host {
    size_t struct_size;           /* sizeof(struct gan_host) as the host was built */
    void *ctx;                    /* passed back as the first argument of every call below */

    /* A message for the user at a level; the host decides where it goes. */
    void (*log)(void *ctx, enum gan_log_level level, const char *fmt, ...)
        GAN_PRINTF_LIKE(3, 4);

    /* Records the message that explains the status the plugin is about to return.
     * Returns `status` so that a plugin can write `return host->fail(host->ctx, GAN_ERR_X, ...)`. */
    gan_status (*fail)(void *ctx, gan_status status, const char *fmt, ...)
        GAN_PRINTF_LIKE(3, 4);

    /* Host memory. Plugins may use malloc directly; these exist so the host can count. */
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *ptr);

    /* Settings of this plugin instance, by key relative to its group. Every key the
     * plugin declared has a value here (its default when the user set none); a key it
     * did not declare returns GAN_ERR_NOT_FOUND. A string stays valid for the
     * instance's lifetime. */
    gan_status (*get_int)(void *ctx, const char *key, long long *value);
    gan_status (*get_float)(void *ctx, const char *key, double *value);
    gan_status (*get_bool)(void *ctx, const char *key, int *value);
    gan_status (*get_string)(void *ctx, const char *key, const char **value);
};

#ifdef __cplusplus
}
#endif
#endif
