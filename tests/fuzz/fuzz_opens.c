/* SPDX-License-Identifier: MIT */
/* fuzz_opens.c — the open functions of a harness's program, which watch the paths a
 * reader opens by name (fuzz_opens.h) and otherwise hand each call to the next
 * definition, the C library's (or a sanitizer's, which then calls the C library). */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "fuzz_opens.h"
#include "fuzz.h"

static const char *watch_allowed;     /* NULL: no watch */
static size_t watch_refused;
static char watch_first[4096];

void fuzz_opens_begin(const char *allowed)
{
    watch_refused = 0;
    watch_first[0] = '\0';
    watch_allowed = allowed;
}

size_t fuzz_opens_end(char *first, size_t cap)
{
    watch_allowed = NULL;
    if (cap)
        snprintf(first, cap, "%s", watch_first);
    return watch_refused;
}

/* Whether the watch lets `path` be opened; counts the refusal when not. */
static int may_open(const char *path)
{
    /* /dev/urandom: a new configuration draws its run seed there, as every run does. */
    if (!watch_allowed || (path && (strcmp(path, watch_allowed) == 0
                                    || strcmp(path, "/dev/urandom") == 0)))
        return 1;
    if (watch_refused++ == 0)
        snprintf(watch_first, sizeof watch_first, "%s", path ? path : "(null)");
    errno = EACCES;
    return 0;
}

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f)
        fuzz_fail("dlsym %s: %s", name, dlerror());
    return f;
}

/* The mode argument exists only with O_CREAT or O_TMPFILE; reading it otherwise would
 * read what the caller never passed. */
static mode_t mode_of(int flags, va_list ap)
{
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return (mode_t)va_arg(ap, unsigned);
#endif
    return flags & O_CREAT ? (mode_t)va_arg(ap, unsigned) : 0;
}

/* Each is defined under its own C name and given the library's symbol by an assembler
 * label, so that whatever the headers map open or fopen to (the 64-bit names, under
 * _FILE_OFFSET_BITS=64), both symbols are defined here, once each. */
#define FUZZ_FOPEN(fn, symbol)                                                       \
    FILE *fn(const char *path, const char *mode) __asm__(symbol);                    \
    FILE *fn(const char *path, const char *mode)                                     \
    {                                                                                \
        static FILE *(*real)(const char *, const char *);                            \
        if (!real)                                                                   \
            real = (FILE * (*)(const char *, const char *)) next(symbol);            \
        return may_open(path) ? real(path, mode) : NULL;                             \
    }
#define FUZZ_OPEN(fn, symbol)                                                        \
    int fn(const char *path, int flags, ...) __asm__(symbol);                        \
    int fn(const char *path, int flags, ...)                                         \
    {                                                                                \
        static int (*real)(const char *, int, ...);                                  \
        if (!real)                                                                   \
            real = (int (*)(const char *, int, ...))next(symbol);                    \
        va_list ap;                                                                  \
        va_start(ap, flags);                                                         \
        mode_t mode = mode_of(flags, ap);                                            \
        va_end(ap);                                                                  \
        return may_open(path) ? real(path, flags, mode) : -1;                        \
    }
#define FUZZ_OPENAT(fn, symbol)                                                      \
    int fn(int dir, const char *path, int flags, ...) __asm__(symbol);               \
    int fn(int dir, const char *path, int flags, ...)                                \
    {                                                                                \
        static int (*real)(int, const char *, int, ...);                             \
        if (!real)                                                                   \
            real = (int (*)(int, const char *, int, ...))next(symbol);               \
        va_list ap;                                                                  \
        va_start(ap, flags);                                                         \
        mode_t mode = mode_of(flags, ap);                                            \
        va_end(ap);                                                                  \
        return may_open(path) ? real(dir, path, flags, mode) : -1;                   \
    }

FUZZ_FOPEN(fuzz_fopen, "fopen")
FUZZ_FOPEN(fuzz_fopen64, "fopen64")
FUZZ_OPEN(fuzz_open, "open")
FUZZ_OPEN(fuzz_open64, "open64")
FUZZ_OPENAT(fuzz_openat, "openat")
FUZZ_OPENAT(fuzz_openat64, "openat64")
