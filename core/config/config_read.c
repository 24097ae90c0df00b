/* SPDX-License-Identifier: MIT */
/* config_read.c — reading settings from libconfig files and text, and from --set and
 * flags, with per-value origins and one-line errors that name file, line and key; the
 * settings ganctl saved itself read as data, with no include and no echo of their text. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libconfig.h>

#include "base/file_open.h"
#include "config/config_private.h"

/* ------------------------------------------------------------------ files */

static enum gan_config_type from_libconfig(int type)
{
    switch (type) {
    case CONFIG_TYPE_INT: case CONFIG_TYPE_INT64: return GAN_CONFIG_INT;
    case CONFIG_TYPE_FLOAT: return GAN_CONFIG_FLOAT;
    case CONFIG_TYPE_BOOL: return GAN_CONFIG_BOOL;
    case CONFIG_TYPE_STRING: return GAN_CONFIG_STRING;
    case CONFIG_TYPE_ARRAY: return GAN_CONFIG_ARRAY;
    case CONFIG_TYPE_LIST: return GAN_CONFIG_LIST;
    case CONFIG_TYPE_GROUP:
    default: return GAN_CONFIG_GROUP;
    }
}

/* The elements of an array or list, when every one is a string. */
static gan_status collect_strings(const config_setting_t *s, struct parsed *p,
                                  struct gan_error *err)
{
    int n = config_setting_length(s);
    for (int i = 0; i < n; i++)
        if (config_setting_type(config_setting_get_elem(s, (unsigned)i)) != CONFIG_TYPE_STRING)
            return GAN_OK;
    p->items_ok = 1;
    if (n <= 0)
        return GAN_OK;
    p->items = calloc((size_t)n, sizeof *p->items);
    if (!p->items)
        return gan_config_nomem(err);
    for (int i = 0; i < n; i++) {
        p->items[i] = gan_strdup(config_setting_get_string(config_setting_get_elem(s, (unsigned)i)));
        if (!p->items[i]) {
            gan_config_parsed_release(p);
            return gan_config_nomem(err);
        }
        p->n_items = (size_t)i + 1;
    }
    return GAN_OK;
}

/* The value of a libconfig setting; groups keep only their type, arrays and lists of
 * strings keep their elements. */
static gan_status from_setting(const config_setting_t *s, struct parsed *p, struct gan_error *err)
{
    memset(p, 0, sizeof *p);
    p->type = from_libconfig(config_setting_type(s));
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST:
        return collect_strings(s, p, err);
    case CONFIG_TYPE_INT: p->i = config_setting_get_int(s); break;
    case CONFIG_TYPE_INT64: p->i = config_setting_get_int64(s); break;
    case CONFIG_TYPE_FLOAT: p->f = config_setting_get_float(s); break;
    case CONFIG_TYPE_BOOL: p->b = config_setting_get_bool(s) != 0; break;
    case CONFIG_TYPE_STRING:
        p->s = gan_strdup(config_setting_get_string(s));
        if (!p->s)
            return gan_config_nomem(err);
        break;
    default: break;
    }
    return GAN_OK;
}

/* Stores the settings of `group`. Their origins are "label:line", or, with `map`, the
 * file and line each line of the expanded text came from. */
static gan_status walk(gan_config *cfg, const config_setting_t *group, const char *prefix,
                       const char *label, const struct gan_config_expanded *map,
                       enum gan_config_source source, struct gan_error *err)
{
    int n = config_setting_length(group);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        if (!name)
            continue;
        char key[256], origin[1024];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", name);
        unsigned line = (unsigned)config_setting_source_line(s);
        const char *file = map ? gan_config_expanded_where(map, line, &line) : label;
        snprintf(origin, sizeof origin, "%s:%u", file, line);
        gan_status st;
        if (config_setting_type(s) == CONFIG_TYPE_GROUP &&
            (gan_config_is_core_group(key) || gan_config_is_loss_term_group(key) ||
             gan_config_is_recipe_group(key))) {
            if ((st = walk(cfg, s, key, label, map, source, err)) != GAN_OK)
                return st;
            continue;
        }
        struct parsed p;
        if ((st = from_setting(s, &p, err)) != GAN_OK)
            return st;
        if ((st = gan_config_put(cfg, key, &p, origin, source, err)) != GAN_OK)
            return st == GAN_ERR_CONFIG && gan_config_source_is_saved(source)
                       ? gan_config_saved_refusal(err, origin,
                                                  gan_config_is_core_key(key) ? key : NULL, source)
                       : st;
    }
    return GAN_OK;
}

int gan_config_source_is_saved(enum gan_config_source source)
{
    return source == GAN_CONFIG_CHECKPOINT || source == GAN_CONFIG_RUN_FOLDER;
}

/* What saved settings are called in messages. */
static const char *saved_phrase(enum gan_config_source source)
{
    switch (source) {
    case GAN_CONFIG_CHECKPOINT: return "the checkpoint's saved settings";
    case GAN_CONFIG_RUN_FOLDER: return "the run folder's config.conf";
    default: return "the saved settings";
    }
}

/* The fix for saved settings ganctl would not have written. */
#define SAVED_FIX \
    "ganctl writes only the settings it knows, so the file was changed after ganctl wrote it or by another version; use a copy from a source you trust"

gan_status gan_config_saved_refusal(struct gan_error *err, const char *origin,
                                    const char *known_key, enum gan_config_source source)
{
    /* The origin is "label:line"; the label is ganctl's own name for the text. */
    const char *colon = strrchr(origin, ':');
    int label_len = colon ? (int)(colon - origin) : (int)strlen(origin);
    const char *line = colon ? colon + 1 : "?";
    /* A key the core or the plugin knows is ganctl's word, not the file's; anything else,
     * and every value, might be a secret pulled in from elsewhere. */
    if (known_key)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%.*s: the value of %s at line %s of %s is not one ganctl accepts: %s",
                             label_len, origin, known_key, line, saved_phrase(source), SAVED_FIX);
    return gan_error_set(err, GAN_ERR_CONFIG, "%.*s: an unknown setting at line %s of %s: %s",
                         label_len, origin, line, saved_phrase(source), SAVED_FIX);
}

static const char *source_phrase(enum gan_config_source source)
{
    switch (source) {
    case GAN_CONFIG_INSTALLED: return "the installed configuration";
    case GAN_CONFIG_ENV: return "named by GANCTL_CONFIG";
    case GAN_CONFIG_FILE: return "given with --config";
    case GAN_CONFIG_CHECKPOINT: return "saved in a checkpoint, read as data";
    case GAN_CONFIG_RUN_FOLDER: return "saved in a run folder, read as data";
    case GAN_CONFIG_COMMAND_LINE: return "the command line";
    case GAN_CONFIG_DEFAULT: break;
    }
    return "default";
}

static const char *source_fix(enum gan_config_source source)
{
    switch (source) {
    case GAN_CONFIG_ENV: return "fix the path or unset GANCTL_CONFIG";
    case GAN_CONFIG_FILE: return "check the path given to --config";
    default: return "check the file's permissions";
    }
}

/* Notes a file read, for the debug log: "PATH (PHRASE)". */
static gan_status note_file(gan_config *cfg, const char *path, const char *phrase,
                            struct gan_error *err)
{
    if (cfg->file_count == cfg->file_cap) {
        size_t cap = cfg->file_cap ? cfg->file_cap * 2 : 4;
        char **grown = realloc(cfg->files, cap * sizeof *grown);
        if (!grown)
            return gan_config_nomem(err);
        cfg->files = grown;
        cfg->file_cap = cap;
    }
    size_t n = strlen(path) + strlen(phrase) + 4;
    char *line = malloc(n);
    if (!line)
        return gan_config_nomem(err);
    snprintf(line, n, "%s (%s)", path, phrase);
    cfg->files[cfg->file_count++] = line;
    return GAN_OK;
}

/* A saved text read from a file (a run folder's config.conf): as data, through
 * gan_config_read_string. */
static gan_status read_saved_file(gan_config *cfg, const char *path,
                                  enum gan_config_source source, struct gan_error *err)
{
    char *text;
    const char *kind;
    struct stat sb;
    if (gan_config_read_regular(path, &text, &kind, &sb) != 0)
        return kind ? gan_error_set(err, GAN_ERR_CONFIG,
                                    "cannot read %s (%s): it is %s, not a regular file; only regular files are read",
                                    path, source_phrase(source), kind)
                    : gan_error_set(err, GAN_ERR_CONFIG, "cannot read %s (%s): %s", path,
                                    source_phrase(source), strerror(errno));
    gan_status st = gan_config_read_string(cfg, text, path, source, err);
    free(text);
    return st;
}

gan_status gan_config_read_file(gan_config *cfg, const char *path,
                                enum gan_config_source source, struct gan_error *err)
{
    if (gan_config_source_is_saved(source))
        return read_saved_file(cfg, path, source, err);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (source == GAN_CONFIG_INSTALLED && errno == ENOENT)
            return GAN_OK; /* an installation without ganctl.conf uses the defaults */
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "cannot read configuration file %s (%s): %s: %s", path,
                             source_phrase(source), strerror(errno), source_fix(source));
    }
    if (S_ISDIR(sb.st_mode))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "cannot read configuration file %s (%s): it is a directory: %s",
                             path, source_phrase(source), source_fix(source));
    /* Read here, not by libconfig: a FIFO or a device is refused at once, not waited on. */
    char *text;
    const char *kind;
    if (gan_config_read_regular(path, &text, &kind, &sb) != 0)
        return kind ? gan_error_set(err, GAN_ERR_CONFIG,
                                    "cannot read configuration file %s (%s): it is %s, not a regular file: %s",
                                    path, source_phrase(source), kind, source_fix(source))
                    : gan_error_set(err, GAN_ERR_CONFIG,
                                    "cannot read configuration file %s (%s): %s: %s", path,
                                    source_phrase(source), strerror(errno), source_fix(source));
    /* The includes are expanded here too, each against its own file's folder, so that
     * libconfig reads one text that includes nothing. */
    struct gan_config_expanded x;
    gan_status st = gan_config_expand(path, text, &sb, &x, err);
    free(text);
    if (st != GAN_OK)
        return st;
    config_t lc;
    config_init(&lc);
    if (!config_read_string(&lc, x.text)) {
        char key[256], word[32];
        int eline = config_error_line(&lc);
        unsigned line;
        const char *efile = gan_config_expanded_where(&x, eline > 0 ? (unsigned)eline : 1, &line);
        if (gan_config_nonfinite_line(x.text, eline, key, sizeof key, word, sizeof word))
            st = gan_error_set(err, GAN_ERR_CONFIG,
                               "%s:%u: %s = %s: a setting must be a finite number; write a number",
                               efile, line, key, word);
        else
            st = gan_error_set(err, GAN_ERR_CONFIG,
                               "%s:%u: syntax error (libconfig: %s): fix the file; ganctl.conf(5) describes the syntax",
                               efile, line, config_error_text(&lc));
    } else {
        st = walk(cfg, config_root_setting(&lc), "", path, &x, source, err);
    }
    config_destroy(&lc);
    if (st == GAN_OK)
        st = note_file(cfg, path, source_phrase(source), err);
    /* The debug log names each included file and where it was included. */
    for (size_t i = 1; st == GAN_OK && i < x.n_files; i++) {
        char phrase[900];
        snprintf(phrase, sizeof phrase, "included at %s:%u", x.files[x.files[i].parent].name,
                 x.files[i].line);
        st = note_file(cfg, x.files[i].name, phrase, err);
    }
    gan_config_expanded_free(&x);
    return st;
}

gan_status gan_config_read_files(gan_config *cfg, const struct gan_config_files *files,
                                 struct gan_error *err)
{
    gan_status st;
    if (files->installed &&
        (st = gan_config_read_file(cfg, files->installed, GAN_CONFIG_INSTALLED, err)) != GAN_OK)
        return st;
    if (files->env && (st = gan_config_read_file(cfg, files->env, GAN_CONFIG_ENV, err)) != GAN_OK)
        return st;
    if (files->file && (st = gan_config_read_file(cfg, files->file, GAN_CONFIG_FILE, err)) != GAN_OK)
        return st;
    return GAN_OK;
}

gan_status gan_config_read_string(gan_config *cfg, const char *text, const char *label,
                                  enum gan_config_source source, struct gan_error *err)
{
    /* A saved text is data: ganctl writes the expanded settings, never an include, and
     * one found here would make libconfig open a file the text names. */
    unsigned include_line = gan_config_include_line(text);
    if (include_line)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: line %u of %s holds an @include directive; saved settings are data and include nothing, and ganctl never writes one, so the file was changed after ganctl wrote it: nothing was read; use a copy from a source you trust",
                             label, include_line, saved_phrase(source));
    config_t lc;
    config_init(&lc);
    gan_status st;
    if (!config_read_string(&lc, text))
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s:%d: syntax error (libconfig: %s): the saved configuration is damaged; fix or remove it",
                           label, config_error_line(&lc), config_error_text(&lc));
    else
        st = walk(cfg, config_root_setting(&lc), "", label, NULL, source, err);
    config_destroy(&lc);
    if (st == GAN_OK)
        st = note_file(cfg, label, source_phrase(source), err);
    return st;
}

/* ------------------------------------------------------------------ --set values */

/* Reads `v = TEXT;` with libconfig. Returns nonzero when it holds exactly that one
 * setting, and fills p (aggregates keep only their type). */
static int libconfig_value(const char *text, struct parsed *p)
{
    size_t n = strlen(text) + 8;
    char *src = malloc(n);
    if (!src)
        return 0;
    snprintf(src, n, "v = %s;", text);
    config_t lc;
    config_init(&lc);
    int ok = config_read_string(&lc, src) == CONFIG_TRUE;
    free(src);
    const config_setting_t *root = config_root_setting(&lc);
    if (ok && config_setting_length(root) == 1) {
        const config_setting_t *s = config_setting_get_elem(root, 0);
        ok = strcmp(config_setting_name(s), "v") == 0 && from_setting(s, p, NULL) == GAN_OK;
    } else {
        ok = 0;
    }
    config_destroy(&lc);
    return ok;
}

static int token_char(char c)
{
    return gan_config_name_char(c, 0) || c == '+' || c == '.';
}

/* libconfig 1.5 wraps decimal integers beyond 32 bits silently; read them exactly. */
static int exact_integer(const char *text, long long *out)
{
    const char *digits = text + (*text == '+' || *text == '-');
    int hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, hex ? 16 : 10);
    if (*end == 'L' && end[1] == '\0')
        end++;
    if (*end || errno)
        return 0;
    *out = v;
    return 1;
}

/* A value as --set or a plugin's default writes it. Returns GAN_OK or GAN_ERR_CONFIG
 * with the reason in `why`. */
gan_status gan_config_parse_value(const char *text, struct parsed *p, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    if (!*text) {
        snprintf(why, why_size, "no value after '='");
        return GAN_ERR_CONFIG;
    }
    if (text[0] == '"') {
        if (!libconfig_value(text, p) || p->type != GAN_CONFIG_STRING) {
            gan_config_parsed_release(p);
            snprintf(why, why_size, "%s is not a complete quoted string (escape \\\" and \\\\ inside it)", text);
            return GAN_ERR_CONFIG;
        }
        return GAN_OK;
    }
    if (strchr("[({", text[0])) {
        if (!libconfig_value(text, p)) {
            snprintf(why, why_size, "%s is not a valid libconfig array, list or group", text);
            return GAN_ERR_CONFIG;
        }
        return GAN_OK;
    }
    int token = 1;
    for (const char *c = text; *c; c++)
        token = token && token_char(*c);
    if (token && libconfig_value(text, p) && p->type != GAN_CONFIG_STRING) {
        if (p->type == GAN_CONFIG_INT && !exact_integer(text, &p->i)) {
            snprintf(why, why_size, "%s does not fit in a 64-bit integer", text);
            return GAN_ERR_CONFIG;
        }
        return GAN_OK;
    }
    /* Anything else is a bare string, as written. */
    gan_config_parsed_release(p);
    p->type = GAN_CONFIG_STRING;
    p->s = gan_strdup(text);
    if (!p->s) {
        snprintf(why, why_size, "out of memory");
        return GAN_ERR_NOMEM;
    }
    return GAN_OK;
}

static char *trimmed(const char *begin, const char *end)
{
    while (begin < end && (*begin == ' ' || *begin == '\t'))
        begin++;
    while (end > begin && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    char *s = malloc((size_t)(end - begin) + 1);
    if (s) {
        memcpy(s, begin, (size_t)(end - begin));
        s[end - begin] = '\0';
    }
    return s;
}

gan_status gan_config_set(gan_config *cfg, const char *assignment, struct gan_error *err)
{
    char origin[1024];
    snprintf(origin, sizeof origin, "--set %s", assignment);
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: expected KEY=VALUE, e.g. --set backend.threads=4", origin);
    char *key = trimmed(assignment, eq);
    char *text = trimmed(eq + 1, eq + strlen(eq));
    gan_status st = GAN_OK;
    struct parsed p;
    char why[512];
    if (!key || !text) {
        st = gan_config_nomem(err);
    } else if (!gan_config_valid_key(key)) {
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: \"%s\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE",
                           origin, key);
    } else if ((st = gan_config_parse_value(text, &p, why, sizeof why)) != GAN_OK) {
        if (st == GAN_ERR_NOMEM)
            gan_config_nomem(err);
        else if (!*text)
            gan_error_set(err, st, "%s: %s: write --set %s=VALUE (an empty string is %s=\"\")",
                          origin, why, key, key);
        else
            gan_error_set(err, st, "%s: %s", origin, why);
    } else if (p.type == GAN_CONFIG_GROUP && !gan_config_core_key(key) && !gan_config_in_plugin_group(key)) {
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: --set takes one setting, not a group: set each one, e.g. --set %s.KEY=VALUE",
                           origin, key);
    } else {
        st = gan_config_put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
    }
    free(key);
    free(text);
    return st;
}

gan_status gan_config_set_flag(gan_config *cfg, const char *key, const char *text,
                               const char *origin, struct gan_error *err)
{
    struct parsed p;
    char why[512];
    gan_status st = gan_config_parse_value(text, &p, why, sizeof why);
    if (st == GAN_ERR_NOMEM)
        return gan_config_nomem(err);
    if (st != GAN_OK)
        return gan_error_set(err, st, "%s: %s", origin, why);
    return gan_config_put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
}

gan_status gan_config_set_string(gan_config *cfg, const char *key, const char *value,
                                 const char *origin, struct gan_error *err)
{
    struct parsed p = { .type = GAN_CONFIG_STRING, .s = gan_strdup(value) };
    if (!p.s)
        return gan_config_nomem(err);
    return gan_config_put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
}
