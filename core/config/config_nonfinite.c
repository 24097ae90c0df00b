/* SPDX-License-Identifier: MIT */
/* config_nonfinite.c — a syntax error that is really a setting written as nan or inf:
 * libconfig has no token for them and says only "syntax error", so the offending line
 * is read here to name the setting and say what it must be. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/config_private.h"

/* Deep enough for any configuration ganctl reads; deeper groups lose their outer names. */
#define MAX_DEPTH 16
#define MAX_NAME 128

struct scope {
    char names[MAX_DEPTH][MAX_NAME]; /* "" for a group without a name (in a list) */
    int depth;
};

/* Skips a comment or a string at c, counting lines; returns c unchanged when none. */
static const char *skip_quiet(const char *c, int *line)
{
    if (*c == '#' || (c[0] == '/' && c[1] == '/')) {
        while (*c && *c != '\n')
            c++;
    } else if (c[0] == '/' && c[1] == '*') {
        c += 2;
        while (*c && !(c[0] == '*' && c[1] == '/'))
            *line += *c++ == '\n';
        c += *c ? 2 : 0;
    } else if (*c == '"') {
        c++;
        while (*c && *c != '"') {
            if (*c == '\\' && c[1])
                c++;
            *line += *c++ == '\n';
        }
        c += *c ? 1 : 0;
    }
    return c;
}

/* The groups open at the start of line `target`: each `{` after `name =` (or `name :`)
 * opens the group `name`; any other `{`, `(` or `[` opens one without a name. */
static const char *open_groups(const char *text, int target, struct scope *sc)
{
    char last[MAX_NAME] = "";
    int named = 0; /* the last tokens were a name and = or : */
    int line = 1;
    const char *c = text;
    sc->depth = 0;
    while (*c && line < target) {
        const char *q = skip_quiet(c, &line);
        if (q != c) {
            c = q;
            named = 0;
            continue;
        }
        if (*c == '\n') {
            line++;
            c++;
        } else if (*c == ' ' || *c == '\t' || *c == '\r') {
            c++;
        } else if (gan_config_name_char(*c, 1)) {
            size_t n = 0;
            while (gan_config_name_char(*c, 0)) {
                if (n + 1 < sizeof last)
                    last[n++] = *c;
                c++;
            }
            last[n] = '\0';
            named = 1;
        } else if ((*c == '=' || *c == ':') && named == 1) {
            named = 2;
            c++;
        } else {
            if (*c == '{' || *c == '(' || *c == '[') {
                if (sc->depth < MAX_DEPTH)
                    snprintf(sc->names[sc->depth], MAX_NAME, "%s",
                             *c == '{' && named == 2 ? last : "");
                sc->depth++;
            } else if ((*c == '}' || *c == ')' || *c == ']') && sc->depth > 0) {
                sc->depth--;
            }
            named = 0;
            c++;
        }
    }
    return line == target ? c : NULL;
}

/* Nonzero when `c` starts nan, inf or infinity (any case, an optional sign) followed by
 * the end of the value; the word is copied to `word`. */
static int nonfinite_value(const char *c, char *word, size_t size)
{
    const char *start = c;
    if (*c == '+' || *c == '-')
        c++;
    const char *w = c;
    while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))
        c++;
    size_t n = (size_t)(c - w);
    if (!((n == 3 && (!strncasecmp(w, "nan", 3) || !strncasecmp(w, "inf", 3))) ||
          (n == 8 && !strncasecmp(w, "infinity", 8))))
        return 0;
    while (*c == ' ' || *c == '\t' || *c == '\r')
        c++;
    if (*c && *c != ';' && *c != ',' && *c != '\n' && *c != '#' && *c != '/' && *c != '}')
        return 0;
    snprintf(word, size, "%.*s", (int)(c - start), start);
    /* The blanks before a ; are not part of the word. */
    size_t len = strlen(word);
    while (len && (word[len - 1] == ' ' || word[len - 1] == '\t' || word[len - 1] == '\r'))
        word[--len] = '\0';
    return 1;
}

int gan_config_nonfinite_line(const char *text, int line, char *key, size_t key_size,
                              char *word, size_t word_size)
{
    struct scope sc;
    const char *c = line > 0 ? open_groups(text, line, &sc) : NULL;
    if (!c)
        return 0;
    /* The line's text: blanks, a name, blanks, = or :, blanks, the value. */
    while (*c == ' ' || *c == '\t')
        c++;
    const char *name = c;
    if (!gan_config_name_char(*c, 1))
        return 0;
    while (gan_config_name_char(*c, 0))
        c++;
    size_t name_len = (size_t)(c - name);
    while (*c == ' ' || *c == '\t')
        c++;
    if (*c != '=' && *c != ':')
        return 0;
    c++;
    while (*c == ' ' || *c == '\t')
        c++;
    if (!nonfinite_value(c, word, word_size))
        return 0;
    /* The enclosing groups' names, when every one has a name; else the line's key. */
    size_t used = 0;
    key[0] = '\0';
    int all_named = sc.depth <= MAX_DEPTH;
    for (int i = 0; all_named && i < sc.depth; i++)
        all_named = sc.names[i][0] != '\0';
    for (int i = 0; all_named && i < sc.depth && used < key_size; i++)
        used += (size_t)snprintf(key + used, key_size - used, "%s.", sc.names[i]);
    if (used < key_size)
        snprintf(key + used, key_size - used, "%.*s", (int)name_len, name);
    return 1;
}
