/* SPDX-License-Identifier: MIT */
/* log.c — level filtering and formatting for the program's log. A line is formatted
 * only when its level passes, so debug messages cost nothing at level info. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void gan_log_init(struct gan_log *log, gan_log_sink sink, void *sink_ctx)
{
    log->level = GAN_LOG_INFO;
    log->sink = sink;
    log->sink_ctx = sink_ctx;
}

int gan_log_enabled(const struct gan_log *log, enum gan_log_level level)
{
    return log && log->sink && level <= log->level;
}

void gan_log_vwrite(const struct gan_log *log, enum gan_log_level level, const char *fmt,
                    va_list ap)
{
    if (!gan_log_enabled(log, level))
        return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    /* A sink prints one line per call; keep a plugin's stray newline from breaking that. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    log->sink(log->sink_ctx, level, line);
}

void gan_log_write(const struct gan_log *log, enum gan_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gan_log_vwrite(log, level, fmt, ap);
    va_end(ap);
}

gan_status gan_log_level_parse(const char *word, enum gan_log_level *out)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++)
        if (word && strcmp(word, level_names[i]) == 0) {
            *out = (enum gan_log_level)i;
            return GAN_OK;
        }
    return GAN_ERR_INVALID;
}

const char *gan_log_level_name(enum gan_log_level level)
{
    if ((int)level < 0 || (size_t)level >= sizeof level_names / sizeof level_names[0])
        return "?";
    return level_names[level];
}
