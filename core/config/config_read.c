/* SPDX-License-Identifier: MIT */
/* config_read.c — reading settings from libconfig files and text, and from --set and
 * flags, with per-value origins and one-line errors that name file, line and key. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libconfig.h>

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

/* libconfig names an @include'd file as the directive wrote it; messages should name
 * the file that was read, which is relative to the including file's folder. */
static void source_name(char *out, size_t size, const char *file, const char *path,
                        const char *dir)
{
    if (!file || strcmp(file, path) == 0)
        snprintf(out, size, "%s", path);
    else if (file[0] == '/' || !dir)
        snprintf(out, size, "%s", file);
    else
        snprintf(out, size, "%s/%s", dir, file);
}

static gan_status walk(gan_config *cfg, const config_setting_t *group, const char *prefix,
                       const char *path, const char *dir, enum gan_config_source source,
                       struct gan_error *err)
{
    int n = config_setting_length(group);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        if (!name)
            continue;
        char key[256], origin[1024];
        snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "", name);
        char file[800];
        source_name(file, sizeof file, config_setting_source_file(s), path, dir);
        snprintf(origin, sizeof origin, "%s:%u", file, (unsigned)config_setting_source_line(s));
        gan_status st;
        if (config_setting_type(s) == CONFIG_TYPE_GROUP &&
            (gan_config_is_core_group(key) || gan_config_is_loss_term_group(key))) {
            if ((st = walk(cfg, s, key, path, dir, source, err)) != GAN_OK)
                return st;
            continue;
        }
        struct parsed p;
        if ((st = from_setting(s, &p, err)) != GAN_OK)
            return st;
        if ((st = gan_config_put(cfg, key, &p, origin, source, err)) != GAN_OK)
            return st;
    }
    return GAN_OK;
}

static const char *source_phrase(enum gan_config_source source)
{
    switch (source) {
    case GAN_CONFIG_INSTALLED: return "the installed configuration";
    case GAN_CONFIG_ENV: return "named by GANCTL_CONFIG";
    case GAN_CONFIG_FILE: return "given with --config";
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

static gan_status note_file(gan_config *cfg, const char *path, enum gan_config_source source,
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
    size_t n = strlen(path) + strlen(source_phrase(source)) + 4;
    char *line = malloc(n);
    if (!line)
        return gan_config_nomem(err);
    snprintf(line, n, "%s (%s)", path, source_phrase(source));
    cfg->files[cfg->file_count++] = line;
    return GAN_OK;
}

gan_status gan_config_read_file(gan_config *cfg, const char *path,
                                enum gan_config_source source, struct gan_error *err)
{
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
    FILE *probe = fopen(path, "r");
    if (!probe)
        return gan_error_set(err, GAN_ERR_CONFIG, "cannot read configuration file %s (%s): %s: %s",
                             path, source_phrase(source), strerror(errno), source_fix(source));
    fclose(probe);

    config_t lc;
    config_init(&lc);
    /* @include "x.conf" is resolved next to the including file. */
    char dir_buf[1024];
    const char *dir = NULL;
    snprintf(dir_buf, sizeof dir_buf, "%s", path);
    char *slash = strrchr(dir_buf, '/');
    if (slash) {
        slash[slash == dir_buf ? 1 : 0] = '\0';
        dir = dir_buf;
        config_set_include_dir(&lc, dir);
    }
    gan_status st = GAN_OK;
    if (!config_read_file(&lc, path)) {
        char efile[800];
        source_name(efile, sizeof efile, config_error_file(&lc), path, dir);
        if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
            st = gan_error_set(err, GAN_ERR_CONFIG, "cannot read configuration file %s (%s): %s: %s",
                               efile, source_phrase(source), config_error_text(&lc),
                               source_fix(source));
        else
            st = gan_error_set(err, GAN_ERR_CONFIG,
                               "%s:%d: syntax error (libconfig: %s): fix the file; ganctl.conf(5) describes the syntax",
                               efile, config_error_line(&lc), config_error_text(&lc));
    } else {
        st = walk(cfg, config_root_setting(&lc), "", path, dir, source, err);
    }
    config_destroy(&lc);
    if (st == GAN_OK)
        st = note_file(cfg, path, source, err);
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
        st = note_file(cfg, label, source, err);
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
