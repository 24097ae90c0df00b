/* SPDX-License-Identifier: MIT */
/* error.h — the error context a core call fills when it fails: a status and one line
 * that names what was wrong and how to fix it. The library never prints; the program does. */
#ifndef GANCTL_CORE_ERROR_H
#define GANCTL_CORE_ERROR_H

#include <stdarg.h>
#include <ganctl/status.h>

struct gan_error {
    gan_status status;   /* GAN_OK while nothing has failed */
    char message[1024];  /* one line, no trailing newline, no "ganctl: " prefix */
};

/* Empties `err` (NULL is allowed everywhere and discards the message). */
void gan_error_clear(struct gan_error *err);

/* Records status and message and returns status, so that a caller can write
 * `return gan_error_set(err, GAN_ERR_X, "...")`. Newlines in the message become
 * spaces: every error is exactly one line. */
gan_status gan_error_set(struct gan_error *err, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
gan_status gan_error_vset(struct gan_error *err, gan_status status, const char *fmt,
                          va_list ap) __attribute__((format(printf, 3, 0)));

/* GAN_ERR_NOMEM with "out of memory while <doing>": a failed allocation says what the
 * program was doing, and every layer words it the same way. */
gan_status gan_error_nomem(struct gan_error *err, const char *doing);

#endif
