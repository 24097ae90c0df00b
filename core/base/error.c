/* SPDX-License-Identifier: MIT */
/* error.c — filling an error context with a status and its one-line explanation.
 * The message is truncated, never overflowed, when it does not fit. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

void gan_error_clear(struct gan_error *err)
{
    if (!err)
        return;
    err->status = GAN_OK;
    err->message[0] = '\0';
}

gan_status gan_error_vset(struct gan_error *err, gan_status status, const char *fmt,
                          va_list ap)
{
    if (!err)
        return status;
    err->status = status;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* Text from dlerror() or libconfig can carry newlines; one error is one line. */
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return status;
}

gan_status gan_error_set(struct gan_error *err, gan_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gan_error_vset(err, status, fmt, ap);
    va_end(ap);
    return status;
}

gan_status gan_error_nomem(struct gan_error *err, const char *doing)
{
    return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while %s", doing);
}
