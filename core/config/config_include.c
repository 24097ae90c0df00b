/* SPDX-License-Identifier: MIT */
/* config_include.c — the @include directives of a libconfig text, found as libconfig's
 * own scanner finds them: refused in settings ganctl saved, checked in the user's files. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"

/* libconfig 1.5 has no hook to refuse or redirect an include, so the text is read here
 * first, with the scanner's rules (lib/scanner.l): a directive is `@include` at the
 * start of a line after optional blanks, then blanks and a quoted path, outside strings
 * (with backslash escapes) and comments (`#` and `//` to the end of the line, and
 * `/ * ... * /` blocks). Anything that reads as a directive counts, even one libconfig
 * would then refuse for its path, so that no include slips past. */

/* The path of a directive, its quote consumed: `\\` and `\"` are one character, as
 * libconfig's INCLUDE state reads them; an unterminated path runs to the end. Fills
 * d->path, d->truncated and d->closed; returns what follows the closing quote. */
static const char *include_path(const char *c, unsigned *line, struct gan_config_directive *d,
                                char *path, size_t size)
{
    size_t n = 0;
    d->truncated = 0;
    while (*c && *c != '"') {
        char ch = *c++;
        if (ch == '\\' && (*c == '\\' || *c == '"'))
            ch = *c++;
        if (ch == '\n')
            (*line)++;
        if (n + 1 < size)
            path[n++] = ch;
        else
            d->truncated = 1;
    }
    path[n] = '\0';
    d->path = path;
    d->closed = *c == '"';
    return *c ? c + 1 : c;
}

/* Nonzero when `c` starts a directive's `@include` plus blanks plus a quote; *after
 * points past the quote. */
static int directive_at(const char *c, const char **after)
{
    static const char word[] = "@include";
    if (strncmp(c, word, sizeof word - 1) != 0)
        return 0;
    c += sizeof word - 1;
    if (*c != ' ' && *c != '\t')
        return 0;
    while (*c == ' ' || *c == '\t')
        c++;
    if (*c != '"')
        return 0;
    *after = c + 1;
    return 1;
}

int gan_config_scan_includes(const char *text, gan_config_include_visit visit, void *ctx)
{
    unsigned line = 1;
    int line_start = 1;
    const char *c = text;
    while (*c) {
        if (line_start) {
            const char *p = c, *after;
            while (*p == ' ' || *p == '\t')
                p++;
            if (directive_at(p, &after)) {
                struct gan_config_directive d;
                char path[4096];
                d.line = line;
                d.start = (size_t)(p - text);
                c = include_path(after, &line, &d, path, sizeof path);
                d.end = (size_t)(c - text);
                d.end_line = line;
                int r = visit(ctx, &d);
                if (r)
                    return r;
                line_start = 0;
                continue;
            }
        }
        line_start = 0;
        if (*c == '\n') {
            line++;
            line_start = 1;
            c++;
        } else if (*c == '#' || (c[0] == '/' && c[1] == '/')) {
            while (*c && *c != '\n')
                c++;
        } else if (c[0] == '/' && c[1] == '*') {
            c += 2;
            while (*c && !(c[0] == '*' && c[1] == '/'))
                line += *c++ == '\n';
            c += *c ? 2 : 0;
        } else if (*c == '"') {
            c++;
            while (*c && *c != '"') {
                /* A backslash takes the next character with it: an escaped quote does
                 * not end the string. */
                if (*c == '\\' && c[1])
                    c++;
                line += *c++ == '\n';
            }
            c += *c ? 1 : 0;
        } else {
            c++;
        }
    }
    return 0;
}

static int first_line(void *ctx, const struct gan_config_directive *d)
{
    *(unsigned *)ctx = d->line;
    return 1;
}

unsigned gan_config_include_line(const char *text)
{
    unsigned line = 0;
    gan_config_scan_includes(text, first_line, &line);
    return line;
}
