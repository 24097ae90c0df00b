/* SPDX-License-Identifier: MIT */
/* log.h — the program's log: messages with a level, filtered by log.level, handed to
 * a sink the program chooses (ganctl's writes "ganctl: ..." lines to stderr). */
#ifndef GANCTL_CORE_LOG_H
#define GANCTL_CORE_LOG_H

#include <stdarg.h>
#include <ganctl/host.h>

/* Receives one finished line (no newline) that passed the level filter. */
typedef void (*gan_log_sink)(void *sink_ctx, enum gan_log_level level, const char *line);

struct gan_log {
    enum gan_log_level level;    /* messages above this level are dropped */
    gan_log_sink sink;           /* NULL: every message is dropped */
    void *sink_ctx;
};

/* A log at level info writing to `sink`. */
void gan_log_init(struct gan_log *log, gan_log_sink sink, void *sink_ctx);

/* Nonzero when a message at `level` would reach the sink. */
int gan_log_enabled(const struct gan_log *log, enum gan_log_level level);

/* `log` may be NULL (the message is dropped). */
void gan_log_write(const struct gan_log *log, enum gan_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gan_log_vwrite(const struct gan_log *log, enum gan_log_level level, const char *fmt,
                    va_list ap) __attribute__((format(printf, 3, 0)));

/* "error", "warn", "info", "debug" ↔ the enum. parse returns GAN_ERR_INVALID for any
 * other word; name returns "?" for a value outside the enum. */
gan_status gan_log_level_parse(const char *word, enum gan_log_level *out);
const char *gan_log_level_name(enum gan_log_level level);

#endif
