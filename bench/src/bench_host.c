/* SPDX-License-Identifier: MIT */
/* bench_host.c — the bench programs' host (bench_host.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_host.h"

static char last_error[512];

const char *bench_last_error(void)
{
    return last_error;
}

static void bench_log(void *ctx, enum gan_log_level level, const char *fmt, ...)
{
    (void)ctx;
    if (level > GAN_LOG_WARN)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static gan_status bench_fail(void *ctx, gan_status status, const char *fmt, ...)
{
    (void)ctx;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

static void *bench_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return malloc(bytes);
}

static void bench_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

/* No setting has a value: the programs set the backend's fields themselves. */
static gan_status no_int(void *ctx, const char *key, long long *value)
{
    (void)ctx; (void)key; (void)value;
    return GAN_ERR_NOT_FOUND;
}

static gan_status no_float(void *ctx, const char *key, double *value)
{
    (void)ctx; (void)key; (void)value;
    return GAN_ERR_NOT_FOUND;
}

static gan_status no_bool(void *ctx, const char *key, int *value)
{
    (void)ctx; (void)key; (void)value;
    return GAN_ERR_NOT_FOUND;
}

static gan_status no_string(void *ctx, const char *key, const char **value)
{
    (void)ctx; (void)key; (void)value;
    return GAN_ERR_NOT_FOUND;
}

const struct gan_host bench_host = {
    .struct_size = sizeof(struct gan_host),
    .log = bench_log,
    .fail = bench_fail,
    .alloc = bench_alloc,
    .free = bench_free,
    .get_int = no_int,
    .get_float = no_float,
    .get_bool = no_bool,
    .get_string = no_string,
};
