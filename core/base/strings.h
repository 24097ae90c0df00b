/* SPDX-License-Identifier: MIT */
/* strings.h — the small string helper every layer of the core needs and C11 lacks. */
#ifndef GANCTL_BASE_STRINGS_H
#define GANCTL_BASE_STRINGS_H

/* A malloc'ed copy of s; NULL when s is NULL or memory is out. (strdup is POSIX, not
 * C11, and does not take NULL.) */
char *gan_strdup(const char *s);

#endif
