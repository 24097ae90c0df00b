/* configuration.h — ganctl's settings: read from libconfig files and --set assignments,
 * checked against the core's schema and the loaded plugins' declared settings. */
#ifndef GANCTL_CORE_CONFIGURATION_H
#define GANCTL_CORE_CONFIGURATION_H

/* Not "config.h": that name belongs to configure's header, which every .c includes first. */

#include <stddef.h>
#include <ganctl/host.h>
#include "error.h"

typedef struct gan_config gan_config;

/* Where a value came from, lowest precedence first. A source read later replaces what
 * earlier ones set; the program reads them in this order. */
enum gan_config_source {
    GAN_CONFIG_DEFAULT = 0,      /* the schema's or the plugin's default */
    GAN_CONFIG_INSTALLED,        /* $(sysconfdir)/ganctl/ganctl.conf; may be missing */
    GAN_CONFIG_ENV,              /* the file named by $GANCTL_CONFIG; must exist */
    GAN_CONFIG_FILE,             /* --config FILE; must exist */
    GAN_CONFIG_COMMAND_LINE      /* --set key=value and flags such as --backend */
};

/* The type of a stored value. Groups, arrays and lists are kept only so that a
 * setting written as one can be reported as the wrong type. */
enum gan_config_type {
    GAN_CONFIG_INT = 0,
    GAN_CONFIG_FLOAT,
    GAN_CONFIG_BOOL,
    GAN_CONFIG_STRING,
    GAN_CONFIG_GROUP,
    GAN_CONFIG_ARRAY,
    GAN_CONFIG_LIST
};

struct gan_config_value {
    const char *key;              /* full dotted name, e.g. "backend.threads" */
    enum gan_config_type type;
    long long i;                  /* GAN_CONFIG_INT */
    double f;                     /* GAN_CONFIG_FLOAT */
    int b;                        /* GAN_CONFIG_BOOL: 0 or 1 */
    const char *s;                /* GAN_CONFIG_STRING */
    const char *origin;           /* "file:line", "--set key=value", "--backend cpu", "default" */
    enum gan_config_source source;
};

/* A configuration holding the core's defaults (backend.name = "cpu", log.level = "info"). */
gan_status gan_config_new(gan_config **out, struct gan_error *err);
void gan_config_free(gan_config *cfg);

/* Reads one libconfig file. Values in it replace values already present. Core keys
 * are checked here; keys inside a plugin's group (backend.*) other than the core's
 * wait for gan_config_apply_plugin. A missing file is an error except for
 * GAN_CONFIG_INSTALLED. `source` is GAN_CONFIG_INSTALLED, _ENV or _FILE. */
gan_status gan_config_read_file(gan_config *cfg, const char *path,
                                enum gan_config_source source, struct gan_error *err);

/* The three files, each optional (NULL), read in precedence order. */
struct gan_config_files {
    const char *installed;
    const char *env;
    const char *file;
};
gan_status gan_config_read_files(gan_config *cfg, const struct gan_config_files *files,
                                 struct gan_error *err);

/* A --set assignment "key=value". The value is read as libconfig reads a value:
 * integers (decimal, 0x hex, L suffix), floats, true/false, "quoted strings"; any
 * other word is a string as written (a bare string). */
gan_status gan_config_set(gan_config *cfg, const char *assignment, struct gan_error *err);

/* Sets a string from a command-line flag; `origin` names the flag ("--backend cuda"). */
gan_status gan_config_set_string(gan_config *cfg, const char *key, const char *value,
                                 const char *origin, struct gan_error *err);

/* Checks every value in `group` that is not a core key against a plugin's declared
 * settings (NULL-terminated `spec`, may be NULL), then stores the spec's defaults for
 * the keys nobody set. `label` names the plugin in messages, e.g. `backend "cpu"`.
 * GAN_ERR_CONFIG for the user's mistakes; GAN_ERR_INVALID for a plugin whose spec is
 * itself wrong (a default of the wrong type, a name the core already uses). */
gan_status gan_config_apply_plugin(gan_config *cfg, const char *group, const char *label,
                                   const struct gan_setting_spec *spec, struct gan_error *err);

/* Looking values up. NULL / GAN_ERR_NOT_FOUND when the key has no value. The typed
 * getters return GAN_ERR_CONFIG when the stored type differs (an integer is accepted
 * as a float). Strings live as long as the configuration is not changed. */
const struct gan_config_value *gan_config_find(const gan_config *cfg, const char *key);
gan_status gan_config_get_int(const gan_config *cfg, const char *key, long long *out);
gan_status gan_config_get_float(const gan_config *cfg, const char *key, double *out);
gan_status gan_config_get_bool(const gan_config *cfg, const char *key, int *out);
gan_status gan_config_get_string(const gan_config *cfg, const char *key, const char **out);

/* Every value, in the order keys were first set. */
size_t gan_config_count(const gan_config *cfg);
const struct gan_config_value *gan_config_at(const gan_config *cfg, size_t index);

/* The files actually read ("path (given with --config)"), in order. */
size_t gan_config_file_count(const gan_config *cfg);
const char *gan_config_file_at(const gan_config *cfg, size_t index);

/* The value as it would be written in a config file (strings quoted). */
void gan_config_format_value(const struct gan_config_value *value, char *buf, size_t size);

/* "an integer", "a float", "a boolean", "a string", "a group", "an array", "a list". */
const char *gan_config_type_phrase(enum gan_config_type type);
const char *gan_setting_type_phrase(enum gan_setting_type type);

/* Edit distance (insertions, deletions, substitutions), for "did you mean". */
size_t gan_config_edit_distance(const char *a, const char *b);

#endif
