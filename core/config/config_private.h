/* SPDX-License-Identifier: MIT */
/* config_private.h — what the files of core/config share: the store's layout, a value
 * being parsed, and the schema's checks. Nothing outside core/config/ includes it. */
#ifndef GANCTL_CORE_CONFIG_PRIVATE_H
#define GANCTL_CORE_CONFIG_PRIVATE_H

#include <stddef.h>
#include <sys/stat.h>

#include "base/strings.h"
#include "config/configuration.h"

struct gan_config {
    struct gan_config_value *values;
    size_t count, cap;
    char **files;
    size_t file_count, file_cap;
};

/* A value being parsed, before it has a key and an origin. */
struct parsed {
    enum gan_config_type type;
    long long i;
    double f;
    int b;
    char *s;                      /* owned */
    char **items;                 /* arrays and lists whose elements are all strings: owned */
    size_t n_items;
    int items_ok;                 /* an array or list of strings only (or empty) */
};

/* The group whose subgroups loss.TERM hold the settings of the loss term TERM. */
#define LOSS_GROUP "loss"

/* ---------------------------------------------------------- the store (configuration.c) */

void gan_config_parsed_release(struct parsed *p);
gan_status gan_config_nomem(struct gan_error *err);
/* Removes value `at`, keeping the order of the rest. */
void gan_config_remove_at(gan_config *cfg, size_t at);
/* The index of `key`'s value, or -1. */
long gan_config_find_index(const gan_config *cfg, const char *key);
/* Stores (or replaces) a value. Takes ownership of p->s and p->items. */
gan_status gan_config_store(gan_config *cfg, const char *key, struct parsed *p,
                            const char *origin, enum gan_config_source source,
                            struct gan_error *err);

/* ---------------------------------------------------------- the schema (config_schema.c) */

/* One of the core's settings. */
struct schema_key;

/* How to write a value of the wanted type: the fix in a wrong-type message. */
const char *gan_config_type_hint(enum gan_setting_type type);
/* The message for a value of type `got` where `want` belongs (`text`: the string, when
 * it is one); for a word such as nan or inf where a number belongs, that it must be
 * finite. */
gan_status gan_config_wrong_type(struct gan_error *err, const char *origin, const char *key,
                                 enum gan_setting_type want, enum gan_config_type got,
                                 const char *text);
/* Nonzero when a stored value of type `got` is a valid `want` (an integer is a number). */
int gan_config_type_accepts(enum gan_setting_type want, enum gan_config_type got);
/* The message for a key nobody reads, with a "did you mean" when one is close; `group`,
 * `label` and `spec` name the plugin whose group holds it, or are NULL. */
gan_status gan_config_unknown_key(struct gan_error *err, const char *origin, const char *key,
                                  const char *group, const char *label,
                                  const struct gan_setting_spec *spec);
/* The core's setting `key`, or NULL. */
const struct schema_key *gan_config_core_key(const char *key);
/* Nonzero when `key` is one of the groups the core knows. */
int gan_config_is_core_group(const char *key);
/* Nonzero when `key` is loss.TERM (one name after "loss.") and not a core key. */
int gan_config_is_loss_term_group(const char *key);
/* Nonzero when `key` is fp8.RECIPE (one name after "fp8.") and not a core key. */
int gan_config_is_recipe_group(const char *key);
/* Nonzero when `key` is group.something for a plugin group, loss.TERM.something or
 * fp8.RECIPE.something. */
int gan_config_in_plugin_group(const char *key);
/* A character of a libconfig name ([A-Za-z][-A-Za-z0-9_]*), `first` or not. */
int gan_config_name_char(char c, int first);
/* libconfig's names joined by dots. */
int gan_config_valid_key(const char *key);
/* Accepts one scalar (or aggregate, to be reported) for a key: a core key's value is
 * checked against the schema, a plugin group's kept for the plugin. Takes p->s. */
gan_status gan_config_put(gan_config *cfg, const char *key, struct parsed *p,
                          const char *origin, enum gan_config_source source,
                          struct gan_error *err);

/* ---------------------------------------------------------- reading (config_read.c) */

/* A value as --set or a plugin's default writes it. Returns GAN_OK or GAN_ERR_CONFIG
 * with the reason in `why` (GAN_ERR_NOMEM when out of memory). */
gan_status gan_config_parse_value(const char *text, struct parsed *p, char *why,
                                  size_t why_size);

/* Nonzero for the settings ganctl saved itself (a checkpoint's, a run folder's). */
int gan_config_source_is_saved(enum gan_config_source source);
/* The refusal of a saved setting at `origin` ("label:line") that ganctl would not have
 * written: it names `known_key` (a key the core or the plugin declares) or says "an
 * unknown setting", and never quotes the text's names or values. GAN_ERR_CONFIG. */
gan_status gan_config_saved_refusal(struct gan_error *err, const char *origin,
                                    const char *known_key, enum gan_config_source source);

/* ---------------------------------------------------------- includes (config_include.c) */

/* One @include directive as libconfig's scanner reads it. */
struct gan_config_directive {
    unsigned line;                /* the line of `@include` */
    unsigned end_line;            /* the line of its closing quote (a path may hold newlines) */
    size_t start;                 /* the offset of its `@` in the text */
    size_t end;                   /* the offset just past its closing quote */
    const char *path;             /* as libconfig reads it: at most 4095 bytes kept */
    int truncated;                /* the path was longer than what is kept */
    int closed;                   /* a closing quote ends the path (not the end of the text) */
};
/* Called for each @include directive; a nonzero return stops the scan and is its result. */
typedef int (*gan_config_include_visit)(void *ctx, const struct gan_config_directive *d);
/* Visits the @include directives of `text` that libconfig's scanner would act on: at
 * the start of a line after blanks, outside strings and comments. Returns 0 or the
 * first nonzero result of `visit`. */
int gan_config_scan_includes(const char *text, gan_config_include_visit visit, void *ctx);
/* The line of the first @include directive in `text`, or 0 when it holds none. */
unsigned gan_config_include_line(const char *text);

/* ---------------------------------------------- expanding includes (config_expand.c) */

/* The whole of a regular file as text (/dev/null reads as empty), and what fstat says
 * of it; anything else (a FIFO, a device) is refused by `*kind` without a wait.
 * Returns 0; or -1 with errno, or with *kind set. */
int gan_config_read_regular(const char *path, char **out, const char **kind, struct stat *sb);

/* A file of an expanded text: the named one first, then each included one. */
struct gan_config_file {
    char *name;                   /* as opened: read against the including file's folder */
    size_t parent;                /* the file whose @include names it (SIZE_MAX: none) */
    unsigned line;                /* that @include's line */
};

/* From line `first` of the expanded text on, the lines of file `file` from `file_line`. */
struct gan_config_span {
    unsigned first;
    size_t file;
    unsigned file_line;
};

/* A user's file with its @include directives replaced by the files they name. */
struct gan_config_expanded {
    char *text;
    size_t len, cap;
    unsigned lines;               /* the line the text ends on */
    struct gan_config_file *files;
    size_t n_files, cap_files;
    struct gan_config_span *spans;
    size_t n_spans, cap_spans;
};

/* Expands the includes of `text`, the file `path` (`sb`: what fstat said of it): each
 * path read against the folder of the file that holds the directive, each file opened
 * only when it is a regular one, at most ten levels deep, no file including itself
 * through any chain. On GAN_ERR_CONFIG the message names the file and line of the
 * directive at fault. */
gan_status gan_config_expand(const char *path, const char *text, const struct stat *sb,
                             struct gan_config_expanded *out, struct gan_error *err);
/* The file (its name) and, in *file_line, the line that line `line` of the expanded
 * text came from. */
const char *gan_config_expanded_where(const struct gan_config_expanded *x, unsigned line,
                                      unsigned *file_line);
void gan_config_expanded_free(struct gan_config_expanded *x);

/* ------------------------------------------------- nan and inf (config_nonfinite.c) */

/* Nonzero when line `line` of `text` sets a key to nan, inf or infinity (any case, a
 * sign or none), which libconfig reports only as a syntax error: fills `key` (with its
 * enclosing groups, as the text spells them) and `word` (the value as written). */
int gan_config_nonfinite_line(const char *text, int line, char *key, size_t key_size,
                              char *word, size_t word_size);

#endif
