/* strings.h — the small string helper every layer of the core needs and C11 lacks. */
#ifndef GANCTL_BASE_STRINGS_H
#define GANCTL_BASE_STRINGS_H

/* A malloc'ed copy of s, or NULL when out of memory. (strdup is POSIX, not C11.) */
char *gan_strdup(const char *s);

#endif
