/* SPDX-License-Identifier: MIT */
/* test_host.c — the tests' gan_host: stderr logging, a recorded last error, and
 * settings answered from "key=value" strings. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>

#include "test_host.h"

static void th_log(void *ctx, enum gan_log_level level, const char *fmt, ...)
{
    struct test_host *th = ctx;
    if (th->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[test-host %d] ", (int)level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static gan_status th_fail(void *ctx, gan_status status, const char *fmt, ...)
{
    struct test_host *th = ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(th->last_error, sizeof th->last_error, fmt, ap);
    va_end(ap);
    th->last_status = status;
    return status;
}

static void *th_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return malloc(bytes);
}

static void th_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static const char *th_find(struct test_host *th, const char *key)
{
    size_t len = strlen(key);
    for (const char *const *s = th->settings; s && *s; s++)
        if (strncmp(*s, key, len) == 0 && (*s)[len] == '=')
            return *s + len + 1;
    /* Each string default in a buffer of its own: a plugin may hold several at once. */
    size_t at = 0;
    for (const struct gan_setting_spec *d = th->specs; d && d->name; d++, at++) {
        if (strcmp(d->name, key) != 0 || !d->default_value)
            continue;
        const char *v = d->default_value;
        size_t n = strlen(v);
        if (d->type != GAN_SETTING_STRING || n < 2 || v[0] != '"' || v[n - 1] != '"')
            return v;
        if (at >= sizeof th->unquoted / sizeof th->unquoted[0])
            return NULL;
        snprintf(th->unquoted[at], sizeof th->unquoted[at], "%.*s", (int)(n - 2), v + 1);
        return th->unquoted[at];
    }
    return NULL;
}

static gan_status th_get_int(void *ctx, const char *key, long long *value)
{
    const char *v = th_find(ctx, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    char *end;
    errno = 0;
    *value = strtoll(v, &end, 10);
    return (errno || *end) ? GAN_ERR_CONFIG : GAN_OK;
}

static gan_status th_get_float(void *ctx, const char *key, double *value)
{
    const char *v = th_find(ctx, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    char *end;
    errno = 0;
    *value = strtod(v, &end);
    return (errno || *end) ? GAN_ERR_CONFIG : GAN_OK;
}

static gan_status th_get_bool(void *ctx, const char *key, int *value)
{
    const char *v = th_find(ctx, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (strcmp(v, "true") == 0)
        *value = 1;
    else if (strcmp(v, "false") == 0)
        *value = 0;
    else
        return GAN_ERR_CONFIG;
    return GAN_OK;
}

static gan_status th_get_string(void *ctx, const char *key, const char **value)
{
    const char *v = th_find(ctx, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    *value = v;
    return GAN_OK;
}

void test_host_init(struct test_host *th, const char *const *settings)
{
    memset(th, 0, sizeof *th);
    th->settings = settings;
    th->host.struct_size = sizeof th->host;
    th->host.ctx = th;
    th->host.log = th_log;
    th->host.fail = th_fail;
    th->host.alloc = th_alloc;
    th->host.free = th_free;
    th->host.get_int = th_get_int;
    th->host.get_float = th_get_float;
    th->host.get_bool = th_get_bool;
    th->host.get_string = th_get_string;
    th->quiet = getenv("GANCTL_TEST_VERBOSE") == NULL;
}

void test_host_init_declared(struct test_host *th, const char *const *settings,
                             const struct gan_setting_spec *specs)
{
    test_host_init(th, settings);
    th->specs = specs;
}
