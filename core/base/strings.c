/* SPDX-License-Identifier: MIT */
/* strings.c — the core's string helper: a copy of a string, as strdup would make it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base/strings.h"

char *gan_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}
