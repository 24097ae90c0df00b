/* SPDX-License-Identifier: MIT */
/* configuration.h — ganctl's settings: read from libconfig files and --set assignments,
 * checked against the core's schema and the loaded plugins' declared settings. */
#ifndef GANCTL_CORE_CONFIGURATION_H
#define GANCTL_CORE_CONFIGURATION_H

/* Not "config.h": that name belongs to configure's header, which every .c includes first. */

#include <stddef.h>
#include <ganctl/host.h>
#include "base/error.h"

typedef struct gan_config gan_config;

/* The group under which each FP8 scaling recipe (recipe.h) has a group of its own, named
 * after it, as each loss term has one under "loss": fp8.delayed.history. */
#define GAN_CONFIG_RECIPE_GROUP "fp8"

/* Where a value came from, lowest precedence first. A source read later replaces what
 * earlier ones set; the program reads them in this order. */
enum gan_config_source {
    GAN_CONFIG_DEFAULT = 0,      /* the schema's or the plugin's default */
    /* Settings ganctl saved itself and reads back as data (includes refused, messages
     * that echo nothing of the text): a resumed run reads them before --config. */
    GAN_CONFIG_CHECKPOINT,       /* the configuration saved in a checkpoint */
    GAN_CONFIG_RUN_FOLDER,       /* a run folder's config.conf */
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
    /* GAN_CONFIG_ARRAY and _LIST: when `strings` is set every element was a string and
     * items holds them (n_items of them, possibly none); otherwise items is NULL. */
    const char *const *items;
    size_t n_items;
    int strings;
};

/* A configuration holding the core's defaults (backend.name = "cpu", log.level = "info",
 * run.*, data.*, generator.*, critic.*, loss.terms: ganctl.conf(5) lists them). */
gan_status gan_config_new(gan_config **out, struct gan_error *err);
void gan_config_free(gan_config *cfg);

/* Reads one libconfig file. Values in it replace values already present. Core keys
 * are checked here; keys inside a plugin's group (backend.*) other than the core's
 * wait for gan_config_apply_plugin. A missing file is an error except for
 * GAN_CONFIG_INSTALLED. `source` is GAN_CONFIG_INSTALLED, _ENV or _FILE. */
gan_status gan_config_read_file(gan_config *cfg, const char *path,
                                enum gan_config_source source, struct gan_error *err);

/* Reads settings from libconfig text (a run's saved configuration). `label` names the
 * text in origins and messages ("run/checkpoint.safetensors (saved configuration)"),
 * followed by ":line". Otherwise as gan_config_read_file. */
gan_status gan_config_read_string(gan_config *cfg, const char *text, const char *label,
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

/* Sets `key` from a command-line flag's value, read as --set reads one (so "1" is an
 * integer and "fp16" a string); `origin` names the flag ("--debug-level 1"). */
gan_status gan_config_set_flag(gan_config *cfg, const char *key, const char *text,
                               const char *origin, struct gan_error *err);

/* Sets a string from a command-line flag; `origin` names the flag ("--backend cuda"). */
gan_status gan_config_set_string(gan_config *cfg, const char *key, const char *value,
                                 const char *origin, struct gan_error *err);

/* Checks every value in `group` that is not a core key against a plugin's declared
 * settings (NULL-terminated `spec`, may be NULL), then stores the spec's defaults for
 * the keys nobody set. ganctl's defaults for its shipped plugins (source
 * GAN_CONFIG_DEFAULT) that the spec does not declare, or declares with another type,
 * are dropped rather than reported. `label` names the plugin in messages, e.g. `backend "cpu"`.
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
/* A list of strings (loss.terms): GAN_ERR_CONFIG when the value is not one. */
gan_status gan_config_get_strings(const gan_config *cfg, const char *key,
                                  const char *const **items, size_t *count);

/* Nonzero when `key` is one of the core's settings (not a plugin's). */
int gan_config_is_core_key(const char *key);
/* The core's one-line description of `key`, or NULL for a key that is not the core's. */
const char *gan_config_key_summary(const char *key);

/* Nonzero when `key` is loss.TERM.something and loss.terms does not list TERM. */
int gan_config_of_unlisted_term(const gan_config *cfg, const char *key);

/* How gan_config_check_loss_groups treats the settings of a term loss.terms does not
 * list that a source below loss.terms' own wrote (a file's loss.gradient-penalty.lambda
 * when --set replaced the file's list): `installed` says whether TERM is a loss term
 * that exists (a misspelt one is still refused), and `dropped` is told each setting
 * left unused. Both take `ctx`. */
struct gan_config_replaced_terms {
    int (*installed)(void *ctx, const char *term);
    void (*dropped)(void *ctx, const char *key, const char *origin);
    void *ctx;
};

/* Keys loss.TERM.* whose TERM is not in `terms` (count names): the first one found is
 * reported as GAN_ERR_CONFIG, since no loaded plugin would ever read it; ganctl's own
 * defaults for such a term are dropped instead. So is, when `replaced` is given, a
 * setting of an installed term from a source that loss.terms' own source overrides: it
 * configured a term of the list that was replaced. A saved setting is never dropped. */
gan_status gan_config_check_loss_groups(gan_config *cfg, const char *const *terms,
                                        size_t count,
                                        const struct gan_config_replaced_terms *replaced,
                                        struct gan_error *err);

/* Keys fp8.NAME.* of every recipe but `recipe` (the one the run uses; NULL when it
 * uses none): the first one found is GAN_ERR_CONFIG, as a setting no loaded plugin
 * would read (a saved one with the refusal of a saved setting); ganctl's own defaults
 * are dropped instead. The selected recipe's own group is checked against what it
 * declares by gan_config_apply_plugin(cfg, "fp8.NAME", ...). */
gan_status gan_config_check_recipe_groups(gan_config *cfg, const char *recipe,
                                          struct gan_error *err);

/* Every value as a libconfig file: nested groups, values in the order their keys were
 * first set, each followed by "# origin" when with_origins is set. Reading the text
 * back gives the same values. NULL when out of memory; free() the result. */
char *gan_config_to_text(const gan_config *cfg, int with_origins);

/* Every value, in the order keys were first set. */
size_t gan_config_count(const gan_config *cfg);
const struct gan_config_value *gan_config_at(const gan_config *cfg, size_t index);

/* The files actually read ("path (given with --config)"), in order. */
size_t gan_config_file_count(const gan_config *cfg);
const char *gan_config_file_at(const gan_config *cfg, size_t index);

/* The value as it would be written in a config file (strings quoted, lists of strings
 * in brackets). */
void gan_config_format_value(const struct gan_config_value *value, char *buf, size_t size);

/* "an integer", "a float", "a boolean", "a string", "a group", "an array", "a list". */
const char *gan_config_type_phrase(enum gan_config_type type);
const char *gan_setting_type_phrase(enum gan_setting_type type);

/* Edit distance (insertions, deletions, substitutions), for "did you mean". */
size_t gan_config_edit_distance(const char *a, const char *b);

#endif
