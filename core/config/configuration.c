/* configuration.c — reading ganctl's settings from libconfig files and --set, with the
 * core's schema, per-value origins, and one-line errors that name file, line and key. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libconfig.h>

#include "config/configuration.h"

/* ------------------------------------------------------------------ the schema */

struct schema_key {
    const char *key;
    enum gan_setting_type type;
    const char *default_value;    /* written as in a config file */
    const char *const *choices;   /* allowed strings, NULL-terminated; NULL = any */
    int list;                     /* a list of strings, ["a", "b"], rather than one value */
    int has_min, has_max;         /* numbers: the bounds below apply */
    double min, max;
    const char *summary;          /* one line, as ganctl.conf(5) says it */
    /* A string key (one of `choices`) that also takes a number > 0: penalty.inner_scale. */
    int or_positive_number;
};

static const char *const log_levels[] = { "error", "warn", "info", "debug", NULL };
static const char *const data_names[] = { "8gaussians", "25gaussians", "swissroll", "fashion-mnist", NULL };
static const char *const decays[] = { "none", "linear", NULL };
static const char *const precision_modes[] = { "fp32", "fp16", "bf16", NULL };
static const char *const precision_levels[] = { "O1", "O2", NULL };
static const char *const inner_scales[] = { "outer", NULL };

#define STR(k, d, ch, sum) { k, GAN_SETTING_STRING, d, ch, 0, 0, 0, 0, 0, sum, 0 }
#define INT_MIN_(k, d, lo, sum) { k, GAN_SETTING_INT, d, NULL, 0, 1, 0, lo, 0, sum, 0 }
#define INT_RANGE(k, d, lo, hi, sum) { k, GAN_SETTING_INT, d, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define FLOAT_RANGE(k, d, lo, hi, sum) { k, GAN_SETTING_FLOAT, d, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define FLOAT_MIN(k, d, lo, sum) { k, GAN_SETTING_FLOAT, d, NULL, 0, 1, 0, lo, 0, sum, 0 }
#define BOOL(k, d, sum) { k, GAN_SETTING_BOOL, d, NULL, 0, 0, 0, 0, 0, sum, 0 }
#define LIST(k, d, sum) { k, GAN_SETTING_STRING, d, NULL, 1, 0, 0, 0, 0, sum, 0 }
/* A list of strings that may be empty. */
#define LIST0(k, d, sum) { k, GAN_SETTING_STRING, d, NULL, 2, 0, 0, 0, 0, sum, 0 }
/* A word of `ch` or a number > 0. */
#define STR_OR_NUMBER(k, d, ch, sum) { k, GAN_SETTING_STRING, d, ch, 0, 0, 0, 0, 0, sum, 1 }

/* The optimizer settings of one network; both networks have the same. The betas are
 * the WGAN-GP paper's; the learning rate and its decay are the demo's (ganctl.conf(5):
 * the paper's 1e-4 without decay converges far more slowly on the toys). */
#define OPTIMIZER_KEYS(net) \
    FLOAT_MIN(net ".optimizer.lr", "1e-3", 0, "Adam's learning rate"), \
    FLOAT_RANGE(net ".optimizer.beta1", "0.5", 0, 0.999999, "Adam's first-moment decay, in [0, 1)"), \
    FLOAT_RANGE(net ".optimizer.beta2", "0.9", 0, 0.999999, "Adam's second-moment decay, in [0, 1)"), \
    FLOAT_RANGE(net ".optimizer.eps", "1e-8", 1e-30, 1, "Adam's epsilon, added to the root of the second moment"), \
    FLOAT_MIN(net ".optimizer.weight_decay", "0.0", 0, "L2 penalty added to the gradient, as torch.optim.Adam"), \
    FLOAT_MIN(net ".optimizer.clip_norm", "0.0", 0, "clip the global gradient norm to this; 0 = no clipping"), \
    STR(net ".optimizer.lr_decay", "\"linear\"", decays, "\"linear\": lr falls to 0 at run.iterations; \"none\": constant")

/* The core's own settings. ganctl.conf(5) and etc/ganctl.conf list the same keys. The
 * defaults train the demo (ganctl with no configuration): the WGAN-GP paper's toy
 * set-up where that converges fast enough, etc/toy-paper.conf for the paper's own. */
static const struct schema_key core_keys[] = {
    STR("backend.name", "\"cpu\"", NULL, "the compute backend, backend-NAME.so"),
    STR("log.level", "\"info\"", log_levels, "how much ganctl writes to standard error"),
    STR("run.dir", "\"\"", NULL, "the run folder; \"\" = runs/DATA-YYYYMMDD-HHMMSS"),
    INT_RANGE("run.seed", "0", 0, 9007199254740991.0, "the seed of every random number of the run"),
    INT_MIN_("run.iterations", "4000", 1, "generator iterations to train"),
    INT_MIN_("run.log_every", "10", 1, "write a metrics.csv row every this many iterations"),
    INT_MIN_("run.eval_every", "500", 0, "toy quality metrics every this many iterations; 0 = at the end only"),
    INT_MIN_("run.image_every", "1000", 0, "a PNG every this many iterations; 0 = at the end only"),
    INT_MIN_("run.checkpoint_every", "1000", 0, "a checkpoint every this many iterations; 0 = at the end only"),
    BOOL("run.metrics_time", "true", "write the time_s column (wall clock) in metrics.csv"),
    INT_RANGE("run.debug_level", "0", 0, 2, "1: per-parameter gradient statistics in the log and grad_stats.csv at every row; 2: also an FP32 shadow backward per row and its true-underflow counts in grad_underflow.csv"),
    STR("precision.mode", "\"fp32\"", precision_modes, "fp32, or mixed precision with FP16 or BF16 compute and FP32 master weights"),
    STR("precision.level", "\"O2\"", precision_levels, "O1: GEMM and conv in 16 bit; O2: nearly everything in 16 bit"),
    LIST0("precision.fp32", "[]", "module scopes kept in FP32, e.g. [\"penalty\", \"critic.fc3\"]"),
    STR_OR_NUMBER("penalty.inner_scale", "\"outer\"", inner_scales, "seed of the penalty's inner gradient: \"outer\" (the critic's loss scale) or a number"),
    STR("scaler.name", "\"none\"", NULL, "the loss scaler of both networks, scaler-NAME.so"),
    STR("data.name", "\"8gaussians\"", data_names, "the data set: a 2-D toy, or \"fashion-mnist\" (28x28 images)"),
    STR("data.path", "\"/usr/share/datasets/fashion-mnist\"", NULL, "the folder of fashion-mnist's IDX files (Debian package dataset-fashion-mnist)"),
    INT_RANGE("data.batch_size", "256", 1, 1048576, "real and generated samples per step"),
    STR("eval.classifier", "\"\"", NULL, "image runs: the classifier file of the Frechet distance; \"\" = the cached default"),
    INT_RANGE("generator.z_dim", "2", 1, 65536, "the size of the generator's input noise z"),
    STR("generator.model.name", "\"mlp\"", NULL, "the generator's model plugin, model-NAME.so"),
    STR("generator.scaler.name", NULL, NULL, "the generator's own loss scaler, instead of scaler.name"),
    OPTIMIZER_KEYS("generator"),
    INT_RANGE("critic.iterations", "5", 1, 1000, "critic steps per generator step (n_critic)"),
    STR("critic.model.name", "\"mlp\"", NULL, "the critic's model plugin, model-NAME.so"),
    STR("critic.scaler.name", NULL, NULL, "the critic's own loss scaler, instead of scaler.name"),
    OPTIMIZER_KEYS("critic"),
    LIST("loss.terms", "[\"wasserstein\", \"gradient-penalty\"]", "the loss-term plugins, loss-NAME.so, summed into the objectives"),
};
#define CORE_KEY_COUNT (sizeof core_keys / sizeof core_keys[0])

/* Defaults ganctl gives settings of the plugins it ships, for the configuration that
 * runs without any file: the demo (ganctl.conf(5) says how and why it differs from the
 * paper's set-up, which etc/toy-paper.conf holds). Each applies only while the selected
 * plugin declares the key; for another plugin it is dropped, never an error. */
static const struct {
    const char *key, *value;
} plugin_defaults[] = {
    { "generator.model.width", "256" },
    { "critic.model.width", "256" },
    { "loss.gradient-penalty.lambda", "0.1" },
};
#define PLUGIN_DEFAULT_ORIGIN "default (ganctl's demo)"

/* Groups the core knows. */
static const char *const core_groups[] = {
    "backend", "log", "run", "data", "generator", "generator.model", "generator.optimizer",
    "generator.scaler", "critic", "critic.model", "critic.optimizer", "critic.scaler", "loss",
    "precision", "penalty", "scaler", "eval"
};
#define CORE_GROUP_COUNT (sizeof core_groups / sizeof core_groups[0])

/* Groups whose keys, beyond the core's, belong to the plugin selected for the group
 * and are checked against its declared settings once it is loaded. Besides these,
 * every group loss.TERM holds the settings of the loss term TERM. */
static const char *const plugin_groups[] = {
    "backend", "generator.model", "critic.model", "scaler", "generator.scaler", "critic.scaler"
};
#define PLUGIN_GROUP_COUNT (sizeof plugin_groups / sizeof plugin_groups[0])
#define LOSS_GROUP "loss"

/* ------------------------------------------------------------------ storage */

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

static void parsed_release(struct parsed *p)
{
    free(p->s);
    p->s = NULL;
    for (size_t i = 0; i < p->n_items; i++)
        free(p->items[i]);
    free(p->items);
    p->items = NULL;
    p->n_items = 0;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void value_release(struct gan_config_value *v)
{
    free((char *)v->key);
    free((char *)v->s);
    free((char *)v->origin);
    for (size_t i = 0; i < v->n_items; i++)
        free((char *)v->items[i]);
    free((void *)v->items);
}

static gan_status nomem(struct gan_error *err)
{
    return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while reading the configuration");
}

/* Removes value `at`, keeping the order of the rest. */
static void remove_at(gan_config *cfg, size_t at)
{
    value_release(&cfg->values[at]);
    memmove(&cfg->values[at], &cfg->values[at + 1], (cfg->count - at - 1) * sizeof cfg->values[0]);
    cfg->count--;
}

static long find_index(const gan_config *cfg, const char *key)
{
    for (size_t i = 0; i < cfg->count; i++)
        if (strcmp(cfg->values[i].key, key) == 0)
            return (long)i;
    return -1;
}

/* Stores (or replaces) a value. Takes ownership of p->s and p->items. */
static gan_status store(gan_config *cfg, const char *key, struct parsed *p, const char *origin,
                        enum gan_config_source source, struct gan_error *err)
{
    struct gan_config_value v = {
        .key = dup_string(key), .type = p->type, .i = p->i, .f = p->f, .b = p->b,
        .s = p->s, .origin = dup_string(origin), .source = source,
        .items = (const char *const *)p->items, .n_items = p->n_items,
        .strings = p->items_ok,
    };
    p->s = NULL;
    p->items = NULL;
    p->n_items = 0;
    if (!v.key || !v.origin) {
        value_release(&v);
        return nomem(err);
    }
    long at = find_index(cfg, key);
    if (at >= 0) {
        value_release(&cfg->values[at]);
        cfg->values[at] = v;
        return GAN_OK;
    }
    if (cfg->count == cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap * 2 : 16;
        struct gan_config_value *grown = realloc(cfg->values, cap * sizeof *grown);
        if (!grown) {
            value_release(&v);
            return nomem(err);
        }
        cfg->values = grown;
        cfg->cap = cap;
    }
    cfg->values[cfg->count++] = v;
    return GAN_OK;
}

/* ------------------------------------------------------------------ words */

const char *gan_config_type_phrase(enum gan_config_type type)
{
    switch (type) {
    case GAN_CONFIG_INT: return "an integer";
    case GAN_CONFIG_FLOAT: return "a float";
    case GAN_CONFIG_BOOL: return "a boolean";
    case GAN_CONFIG_STRING: return "a string";
    case GAN_CONFIG_GROUP: return "a group";
    case GAN_CONFIG_ARRAY: return "an array";
    case GAN_CONFIG_LIST: return "a list";
    }
    return "an unknown type";
}

const char *gan_setting_type_phrase(enum gan_setting_type type)
{
    switch (type) {
    case GAN_SETTING_INT: return "an integer";
    case GAN_SETTING_FLOAT: return "a number";
    case GAN_SETTING_BOOL: return "a boolean";
    case GAN_SETTING_STRING: return "a string";
    }
    return "an unknown type";
}

/* How to write a value of the wanted type: the fix in a wrong-type message. */
static const char *type_hint(enum gan_setting_type type)
{
    switch (type) {
    case GAN_SETTING_INT: return "write a whole number without quotes";
    case GAN_SETTING_FLOAT: return "write a number without quotes";
    case GAN_SETTING_BOOL: return "write true or false without quotes";
    case GAN_SETTING_STRING: return "write the value in double quotes";
    }
    return "see ganctl.conf(5)";
}

static int type_accepts(enum gan_setting_type want, enum gan_config_type got)
{
    switch (want) {
    case GAN_SETTING_INT: return got == GAN_CONFIG_INT;
    case GAN_SETTING_FLOAT: return got == GAN_CONFIG_FLOAT || got == GAN_CONFIG_INT;
    case GAN_SETTING_BOOL: return got == GAN_CONFIG_BOOL;
    case GAN_SETTING_STRING: return got == GAN_CONFIG_STRING;
    }
    return 0;
}

/* ------------------------------------------------------------------ suggestions */

size_t gan_config_edit_distance(const char *a, const char *b)
{
    enum { MAX = 128 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return la > lb ? la : lb;
    size_t prev[MAX], cur[MAX];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t best = sub < del ? sub : del;
            cur[j] = best < ins ? best : ins;
        }
        memcpy(prev, cur, (lb + 1) * sizeof prev[0]);
    }
    return prev[lb];
}

/* The closest name within a typo's reach, for "did you mean". */
struct suggestion {
    char best[160];
    size_t distance;
};

static void consider(struct suggestion *sg, const char *key, const char *candidate)
{
    size_t len = strlen(key);
    size_t reach = len / 4 < 1 ? 1 : (len / 4 > 3 ? 3 : len / 4);
    size_t d = gan_config_edit_distance(key, candidate);
    if (d > 0 && d <= reach && d < sg->distance) {
        sg->distance = d;
        snprintf(sg->best, sizeof sg->best, "%s", candidate);
    }
}

/* Candidates: the core's keys and groups, `group`.name for every spec entry, and the
 * key with its first part replaced by a plugin group it resembles ("bakend.threads"). */
static void suggest(struct suggestion *sg, const char *key, const char *group,
                    const struct gan_setting_spec *spec)
{
    sg->best[0] = '\0';
    sg->distance = (size_t)-1;
    for (size_t i = 0; i < CORE_KEY_COUNT; i++)
        consider(sg, key, core_keys[i].key);
    for (size_t i = 0; i < CORE_GROUP_COUNT; i++)
        consider(sg, key, core_groups[i]);
    for (const struct gan_setting_spec *s = spec; s && s->name; s++) {
        char full[160];
        snprintf(full, sizeof full, "%s.%s", group, s->name);
        consider(sg, key, full);
    }
    const char *dot = strchr(key, '.');
    if (dot && (size_t)(dot - key) < 64) {
        char first[64];
        memcpy(first, key, (size_t)(dot - key));
        first[dot - key] = '\0';
        for (size_t i = 0; i < PLUGIN_GROUP_COUNT; i++) {
            size_t d = gan_config_edit_distance(first, plugin_groups[i]);
            if (d > 0 && d <= 2 && d < sg->distance) {
                sg->distance = d;
                snprintf(sg->best, sizeof sg->best, "%s%s", plugin_groups[i], dot);
            }
        }
    }
}

static gan_status unknown_key(struct gan_error *err, const char *origin, const char *key,
                              const char *group, const char *label,
                              const struct gan_setting_spec *spec)
{
    struct suggestion sg;
    suggest(&sg, key, group, spec);
    if (sg.best[0])
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: unknown setting \"%s\"; did you mean \"%s\"?",
                             origin, key, sg.best);
    if (!label)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: unknown setting \"%s\": remove it; ganctl.conf(5) lists the settings",
                             origin, key);
    /* Name what the plugin does read, so the fix is at hand. */
    char known[512] = "";
    size_t used = 0;
    for (const struct gan_setting_spec *s = spec; s && s->name && used < sizeof known; s++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s.%s",
                                 used ? ", " : "", group, s->name);
    if (!known[0])
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: unknown setting \"%s\": %s has no settings of its own; remove it",
                             origin, key, label);
    return gan_error_set(err, GAN_ERR_CONFIG,
                         "%s: unknown setting \"%s\": %s reads %s (ganctl --list-plugins shows them)",
                         origin, key, label, known);
}

/* ------------------------------------------------------------------ keys */

static const struct schema_key *core_key(const char *key)
{
    for (size_t i = 0; i < CORE_KEY_COUNT; i++)
        if (strcmp(core_keys[i].key, key) == 0)
            return &core_keys[i];
    return NULL;
}

static int is_core_group(const char *key)
{
    for (size_t i = 0; i < CORE_GROUP_COUNT; i++)
        if (strcmp(core_groups[i], key) == 0)
            return 1;
    return 0;
}

/* Nonzero when `key` is loss.TERM (one name after "loss.") and not a core key: the
 * group of a loss term's settings. */
static int is_loss_term_group(const char *key)
{
    size_t n = strlen(LOSS_GROUP);
    return strncmp(key, LOSS_GROUP, n) == 0 && key[n] == '.' && key[n + 1] &&
           !strchr(key + n + 1, '.') && !core_key(key);
}

/* Nonzero when `key` is group.something for a plugin group, or loss.TERM.something. */
static int in_plugin_group(const char *key)
{
    for (size_t i = 0; i < PLUGIN_GROUP_COUNT; i++) {
        size_t n = strlen(plugin_groups[i]);
        if (strncmp(key, plugin_groups[i], n) == 0 && key[n] == '.' && key[n + 1])
            return 1;
    }
    size_t n = strlen(LOSS_GROUP);
    if (strncmp(key, LOSS_GROUP, n) == 0 && key[n] == '.') {
        const char *dot = strchr(key + n + 1, '.');
        return dot && dot > key + n + 1 && dot[1];
    }
    return 0;
}

static int name_char(char c, int first)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return 1;
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '_');
}

/* libconfig's names ([A-Za-z][-A-Za-z0-9_]*) joined by dots. */
static int valid_key(const char *key)
{
    int first = 1;
    if (!*key)
        return 0;
    for (const char *p = key; *p; p++) {
        if (*p == '.') {
            if (first)
                return 0;
            first = 1;
            continue;
        }
        if (!name_char(*p, first))
            return 0;
        first = 0;
    }
    return !first;
}

/* "1e-4" rather than "0.0001000000000000000048", and integers as integers. */
static void format_bound(char *buf, size_t size, double x)
{
    snprintf(buf, size, "%.15g", x);
}

/* Checks a list of strings: an array or list whose elements are all strings. */
static gan_status check_list(const struct schema_key *k, const struct parsed *p,
                             const char *origin, struct gan_error *err)
{
    if ((p->type != GAN_CONFIG_ARRAY && p->type != GAN_CONFIG_LIST) || !p->items_ok)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a list of strings, got %s: write it in brackets, e.g. %s = %s",
                             origin, k->key,
                             p->type == GAN_CONFIG_ARRAY || p->type == GAN_CONFIG_LIST
                                 ? "one that holds other values" : gan_config_type_phrase(p->type),
                             k->key, k->default_value);
    if (p->n_items == 0 && k->list == 1)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" is empty: list at least one name, e.g. %s = %s",
                             origin, k->key, k->key, k->default_value);
    for (size_t i = 0; i < p->n_items; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(p->items[i], p->items[j]) == 0)
                return gan_error_set(err, GAN_ERR_CONFIG,
                                     "%s: \"%s\" names \"%s\" twice: list each once",
                                     origin, k->key, p->items[i]);
    return GAN_OK;
}

/* Checks a core key's type, allowed values and bounds. */
static gan_status check_core(const struct schema_key *k, const struct parsed *p,
                             const char *origin, struct gan_error *err)
{
    if (k->list)
        return check_list(k, p, origin, err);
    if (k->or_positive_number && (p->type == GAN_CONFIG_INT || p->type == GAN_CONFIG_FLOAT)) {
        double x = p->type == GAN_CONFIG_INT ? (double)p->i : p->f;
        char got[64];
        format_bound(got, sizeof got, x);
        /* Written as !(ok) so that NaN is refused too; 1e30 keeps 1/x a normal FP32. */
        if (!(x > 0.0 && x <= 1e30))
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: \"%s\" must be \"%s\" or a number > 0 (at most 1e30), got %s",
                                 origin, k->key, k->choices[0], got);
        return GAN_OK;
    }
    if (k->or_positive_number && p->type != GAN_CONFIG_STRING)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be \"%s\" or a number, got %s: write \"%s\" in double quotes or a number without",
                             origin, k->key, k->choices[0], gan_config_type_phrase(p->type),
                             k->choices[0]);
    if (!type_accepts(k->type, p->type))
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be %s, got %s: %s",
                             origin, k->key, gan_setting_type_phrase(k->type),
                             gan_config_type_phrase(p->type), type_hint(k->type));
    if (k->choices) {
        for (const char *const *c = k->choices; *c; c++)
            if (strcmp(*c, p->s) == 0)
                return GAN_OK;
        if (k->or_positive_number)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: \"%s\" must be \"%s\" or a number > 0, got \"%s\"",
                                 origin, k->key, k->choices[0], p->s);
        char list[256] = "";
        size_t used = 0;
        for (const char *const *c = k->choices; *c && used < sizeof list; c++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *c);
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be one of %s, got \"%s\"",
                             origin, k->key, list, p->s);
    }
    if (k->type == GAN_SETTING_INT || k->type == GAN_SETTING_FLOAT) {
        double x = p->type == GAN_CONFIG_INT ? (double)p->i : p->f;
        char lo[64], hi[64], got[64];
        format_bound(lo, sizeof lo, k->min);
        format_bound(hi, sizeof hi, k->max);
        if (p->type == GAN_CONFIG_INT)
            snprintf(got, sizeof got, "%lld", p->i);
        else
            format_bound(got, sizeof got, p->f);
        /* Written as !(ok) so that NaN is out of every range. */
        int below = k->has_min && !(x >= k->min), above = k->has_max && !(x <= k->max);
        if ((below || above) && k->has_min && k->has_max)
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be between %s and %s, got %s",
                                 origin, k->key, lo, hi, got);
        if (below)
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be at least %s, got %s",
                                 origin, k->key, lo, got);
        if (above)
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be at most %s, got %s",
                                 origin, k->key, hi, got);
    }
    return GAN_OK;
}

/* Accepts one scalar (or aggregate, to be reported) for a key. Takes p->s. */
static gan_status put(gan_config *cfg, const char *key, struct parsed *p, const char *origin,
                      enum gan_config_source source, struct gan_error *err)
{
    gan_status st;
    const struct schema_key *k = core_key(key);
    if (k) {
        if ((st = check_core(k, p, origin, err)) != GAN_OK) {
            parsed_release(p);
            return st;
        }
        return store(cfg, key, p, origin, source, err);
    }
    if (is_core_group(key) && p->type != GAN_CONFIG_GROUP) {
        parsed_release(p);
        /* Point at one key the group holds, as an example of what to write. */
        const char *example = key;
        size_t n = strlen(key);
        for (size_t i = 0; i < CORE_KEY_COUNT && example == key; i++)
            if (strncmp(core_keys[i].key, key, n) == 0 && core_keys[i].key[n] == '.')
                example = core_keys[i].key;
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a group, got %s: set the settings inside it, e.g. %s",
                             origin, key, gan_config_type_phrase(p->type), example);
    }
    if (in_plugin_group(key))
        return store(cfg, key, p, origin, source, err);
    parsed_release(p);
    if (is_loss_term_group(key))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a group, got %s: a loss term's settings go inside it, e.g. %s = { lambda = 0.1; }",
                             origin, key, gan_config_type_phrase(p->type), key);
    return unknown_key(err, origin, key, NULL, NULL, NULL);
}

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
        return nomem(err);
    for (int i = 0; i < n; i++) {
        p->items[i] = dup_string(config_setting_get_string(config_setting_get_elem(s, (unsigned)i)));
        if (!p->items[i]) {
            parsed_release(p);
            return nomem(err);
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
        p->s = dup_string(config_setting_get_string(s));
        if (!p->s)
            return nomem(err);
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
            (is_core_group(key) || is_loss_term_group(key))) {
            if ((st = walk(cfg, s, key, path, dir, source, err)) != GAN_OK)
                return st;
            continue;
        }
        struct parsed p;
        if ((st = from_setting(s, &p, err)) != GAN_OK)
            return st;
        if ((st = put(cfg, key, &p, origin, source, err)) != GAN_OK)
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
            return nomem(err);
        cfg->files = grown;
        cfg->file_cap = cap;
    }
    size_t n = strlen(path) + strlen(source_phrase(source)) + 4;
    char *line = malloc(n);
    if (!line)
        return nomem(err);
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
    return name_char(c, 0) || c == '+' || c == '.';
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
static gan_status parse_value(const char *text, struct parsed *p, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    if (!*text) {
        snprintf(why, why_size, "no value after '='");
        return GAN_ERR_CONFIG;
    }
    if (text[0] == '"') {
        if (!libconfig_value(text, p) || p->type != GAN_CONFIG_STRING) {
            parsed_release(p);
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
    parsed_release(p);
    p->type = GAN_CONFIG_STRING;
    p->s = dup_string(text);
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
        st = nomem(err);
    } else if (!valid_key(key)) {
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: \"%s\" is not a setting name (letters, digits, '-' and '_', groups joined by '.'): write --set KEY=VALUE",
                           origin, key);
    } else if ((st = parse_value(text, &p, why, sizeof why)) != GAN_OK) {
        if (st == GAN_ERR_NOMEM)
            nomem(err);
        else if (!*text)
            gan_error_set(err, st, "%s: %s: write --set %s=VALUE (an empty string is %s=\"\")",
                          origin, why, key, key);
        else
            gan_error_set(err, st, "%s: %s", origin, why);
    } else if (p.type == GAN_CONFIG_GROUP && !core_key(key) && !in_plugin_group(key)) {
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: --set takes one setting, not a group: set each one, e.g. --set %s.KEY=VALUE",
                           origin, key);
    } else {
        st = put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
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
    gan_status st = parse_value(text, &p, why, sizeof why);
    if (st == GAN_ERR_NOMEM)
        return nomem(err);
    if (st != GAN_OK)
        return gan_error_set(err, st, "%s: %s", origin, why);
    return put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
}

gan_status gan_config_set_string(gan_config *cfg, const char *key, const char *value,
                                 const char *origin, struct gan_error *err)
{
    struct parsed p = { .type = GAN_CONFIG_STRING, .s = dup_string(value) };
    if (!p.s)
        return nomem(err);
    return put(cfg, key, &p, origin, GAN_CONFIG_COMMAND_LINE, err);
}

/* ------------------------------------------------------------------ plugins */

gan_status gan_config_apply_plugin(gan_config *cfg, const char *group, const char *label,
                                   const struct gan_setting_spec *spec, struct gan_error *err)
{
    size_t glen = strlen(group);
    char full[256], why[512];
    gan_status st;

    /* The plugin's own declarations first: a broken spec is the plugin's bug. */
    for (const struct gan_setting_spec *s = spec; s && s->name; s++) {
        snprintf(full, sizeof full, "%s.%s", group, s->name);
        if (!valid_key(s->name) || core_key(full))
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "%s declares a setting \"%s\" that %s: fix the plugin",
                                 label, s->name,
                                 core_key(full) ? "ganctl already uses" : "is not a valid name");
        if (!s->default_value)
            continue;
        struct parsed p;
        st = parse_value(s->default_value, &p, why, sizeof why);
        if (st == GAN_OK && !type_accepts(s->type, p.type)) {
            parsed_release(&p);
            st = GAN_ERR_INVALID;
        }
        if (st != GAN_OK)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "%s declares the default %s for \"%s\", which is not %s: fix the plugin",
                                 label, s->default_value, full, gan_setting_type_phrase(s->type));
        parsed_release(&p);
    }

    /* Then everything the user wrote in the group. */
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (strncmp(v->key, group, glen) != 0 || v->key[glen] != '.' || core_key(v->key))
            continue;
        const char *name = v->key + glen + 1;
        const struct gan_setting_spec *s = spec;
        while (s && s->name && strcmp(s->name, name) != 0)
            s++;
        /* ganctl's own defaults for its shipped plugins fit only those. */
        if (v->source == GAN_CONFIG_DEFAULT &&
            (!s || !s->name || !type_accepts(s->type, v->type))) {
            remove_at(cfg, i--);
            continue;
        }
        if (!s || !s->name)
            return unknown_key(err, v->origin, v->key, group, label, spec);
        if (!type_accepts(s->type, v->type))
            return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be %s, got %s: %s",
                                 v->origin, v->key, gan_setting_type_phrase(s->type),
                                 gan_config_type_phrase(v->type), type_hint(s->type));
    }

    /* Defaults for what nobody set, so every declared key has a value. */
    for (const struct gan_setting_spec *s = spec; s && s->name; s++) {
        snprintf(full, sizeof full, "%s.%s", group, s->name);
        if (!s->default_value || find_index(cfg, full) >= 0)
            continue;
        struct parsed p;
        if ((st = parse_value(s->default_value, &p, why, sizeof why)) != GAN_OK)
            return gan_error_set(err, st, "%s: %s", label, why);
        if ((st = store(cfg, full, &p, "default", GAN_CONFIG_DEFAULT, err)) != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ life and lookups */

gan_status gan_config_new(gan_config **out, struct gan_error *err)
{
    *out = NULL;
    gan_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return nomem(err);
    for (size_t i = 0; i < CORE_KEY_COUNT; i++) {
        struct parsed p;
        char why[256];
        /* A key without a default has no value until someone sets it. */
        if (!core_keys[i].default_value)
            continue;
        gan_status st = parse_value(core_keys[i].default_value, &p, why, sizeof why);
        if (st == GAN_OK)
            st = store(cfg, core_keys[i].key, &p, "default", GAN_CONFIG_DEFAULT, err);
        if (st != GAN_OK) {
            gan_config_free(cfg);
            return st == GAN_ERR_NOMEM ? nomem(err) : gan_error_set(err, GAN_ERR_INTERNAL, "bad core default: %s", why);
        }
    }
    for (size_t i = 0; i < sizeof plugin_defaults / sizeof plugin_defaults[0]; i++) {
        struct parsed p;
        char why[256];
        gan_status st = parse_value(plugin_defaults[i].value, &p, why, sizeof why);
        if (st == GAN_OK)
            st = store(cfg, plugin_defaults[i].key, &p, PLUGIN_DEFAULT_ORIGIN, GAN_CONFIG_DEFAULT,
                       err);
        if (st != GAN_OK) {
            gan_config_free(cfg);
            return st == GAN_ERR_NOMEM ? nomem(err) : gan_error_set(err, GAN_ERR_INTERNAL, "bad default: %s", why);
        }
    }
    *out = cfg;
    return GAN_OK;
}

void gan_config_free(gan_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->count; i++)
        value_release(&cfg->values[i]);
    for (size_t i = 0; i < cfg->file_count; i++)
        free(cfg->files[i]);
    free(cfg->values);
    free(cfg->files);
    free(cfg);
}

const struct gan_config_value *gan_config_find(const gan_config *cfg, const char *key)
{
    long at = find_index(cfg, key);
    return at < 0 ? NULL : &cfg->values[at];
}

gan_status gan_config_get_int(const gan_config *cfg, const char *key, long long *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_INT)
        return GAN_ERR_CONFIG;
    *out = v->i;
    return GAN_OK;
}

gan_status gan_config_get_float(const gan_config *cfg, const char *key, double *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type == GAN_CONFIG_INT)
        *out = (double)v->i;
    else if (v->type == GAN_CONFIG_FLOAT)
        *out = v->f;
    else
        return GAN_ERR_CONFIG;
    return GAN_OK;
}

gan_status gan_config_get_bool(const gan_config *cfg, const char *key, int *out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_BOOL)
        return GAN_ERR_CONFIG;
    *out = v->b;
    return GAN_OK;
}

gan_status gan_config_get_string(const gan_config *cfg, const char *key, const char **out)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if (v->type != GAN_CONFIG_STRING)
        return GAN_ERR_CONFIG;
    *out = v->s;
    return GAN_OK;
}

size_t gan_config_count(const gan_config *cfg)
{
    return cfg->count;
}

const struct gan_config_value *gan_config_at(const gan_config *cfg, size_t index)
{
    return index < cfg->count ? &cfg->values[index] : NULL;
}

size_t gan_config_file_count(const gan_config *cfg)
{
    return cfg->file_count;
}

const char *gan_config_file_at(const gan_config *cfg, size_t index)
{
    return index < cfg->file_count ? cfg->files[index] : NULL;
}

/* Appends `s` quoted as libconfig reads it; stops short of the end of buf. */
static size_t put_quoted(char *buf, size_t size, size_t o, const char *s)
{
    if (o + 3 > size)
        return o;
    buf[o++] = '"';
    for (const char *c = s; *c && o + 3 < size; c++) {
        if (*c == '"' || *c == '\\')
            buf[o++] = '\\';
        buf[o++] = *c;
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return o;
}

/* ["a", "b"]: always written as an array, which is what the schema's lists are. */
static void format_strings(const struct gan_config_value *v, char *buf, size_t size)
{
    if (size < 3) {
        if (size)
            buf[0] = '\0';
        return;
    }
    size_t o = 0;
    buf[o++] = '[';
    buf[o] = '\0';
    for (size_t i = 0; i < v->n_items && o + 4 < size; i++) {
        if (i) {
            buf[o++] = ',';
            buf[o++] = ' ';
            buf[o] = '\0';
        }
        o = put_quoted(buf, size - 1, o, v->items[i]);
    }
    buf[o++] = ']';
    buf[o] = '\0';
}

void gan_config_format_value(const struct gan_config_value *v, char *buf, size_t size)
{
    switch (v->type) {
    case GAN_CONFIG_INT:
        snprintf(buf, size, "%lld", v->i);
        break;
    case GAN_CONFIG_FLOAT:
        /* The shortest form that reads back as the same double: 0.2, not 0.2000…01. */
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(buf, size, "%.*g", digits, v->f);
            if (strtod(buf, NULL) == v->f)
                break;
        }
        /* Keep it a float when read back: libconfig reads "2" as an integer. */
        if (!strpbrk(buf, ".eEn"))
            strncat(buf, ".0", size - strlen(buf) - 1);
        break;
    case GAN_CONFIG_BOOL:
        snprintf(buf, size, "%s", v->b ? "true" : "false");
        break;
    case GAN_CONFIG_STRING: {
        size_t o = 0;
        if (size < 3) {
            if (size)
                buf[0] = '\0';
            break;
        }
        buf[o++] = '"';
        for (const char *c = v->s; *c && o + 3 < size; c++) {
            if (*c == '"' || *c == '\\')
                buf[o++] = '\\';
            buf[o++] = *c;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        break;
    }
    case GAN_CONFIG_GROUP: snprintf(buf, size, "{ ... }"); break;
    case GAN_CONFIG_ARRAY:
    case GAN_CONFIG_LIST:
        if (!v->strings) {
            snprintf(buf, size, v->type == GAN_CONFIG_ARRAY ? "[ ... ]" : "( ... )");
            break;
        }
        format_strings(v, buf, size);
        break;
    }
}

/* ------------------------------------------------------------------ more lookups */

gan_status gan_config_get_strings(const gan_config *cfg, const char *key,
                                  const char *const **items, size_t *count)
{
    const struct gan_config_value *v = gan_config_find(cfg, key);
    if (!v)
        return GAN_ERR_NOT_FOUND;
    if ((v->type != GAN_CONFIG_ARRAY && v->type != GAN_CONFIG_LIST) || !v->strings)
        return GAN_ERR_CONFIG;
    *items = v->items;
    *count = v->n_items;
    return GAN_OK;
}

int gan_config_is_core_key(const char *key)
{
    return core_key(key) != NULL;
}

const char *gan_config_key_summary(const char *key)
{
    const struct schema_key *k = core_key(key);
    return k ? k->summary : NULL;
}

gan_status gan_config_check_loss_groups(gan_config *cfg, const char *const *terms,
                                        size_t count, struct gan_error *err)
{
    size_t n = strlen(LOSS_GROUP);
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (!in_plugin_group(v->key) || strncmp(v->key, LOSS_GROUP, n) != 0 || v->key[n] != '.')
            continue;
        const char *term = v->key + n + 1;
        size_t len = (size_t)(strchr(term, '.') - term);
        int listed = 0;
        for (size_t t = 0; t < count && !listed; t++)
            listed = strlen(terms[t]) == len && strncmp(terms[t], term, len) == 0;
        if (!listed && v->source == GAN_CONFIG_DEFAULT) {
            remove_at(cfg, i--);
            continue;
        }
        if (!listed)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: \"%s\" configures the loss term \"%.*s\", which loss.terms does not list: add \"%.*s\" to loss.terms or remove the setting",
                                 v->origin, v->key, (int)len, term, (int)len, term);
    }
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

/* ------------------------------------------------------------------ writing */

/* A growing string; `failed` once an allocation failed. */
struct text {
    char *s;
    size_t len, cap;
    int failed;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (t->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n + 1);
    t->len += n;
}

static void text_indent(struct text *t, int depth)
{
    for (int i = 0; i < depth; i++)
        text_add(t, "  ");
}

/* Writes every value under `prefix` ("" or "a.b."), groups nested, in first-set order. */
static void write_group(struct text *t, const gan_config *cfg, const char *prefix, int depth,
                        int with_origins)
{
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < cfg->count; i++) {
        const struct gan_config_value *v = &cfg->values[i];
        if (strncmp(v->key, prefix, plen) != 0)
            continue;
        const char *rest = v->key + plen;
        const char *dot = strchr(rest, '.');
        if (!dot) {
            char value[4096];
            gan_config_format_value(v, value, sizeof value);
            /* libconfig 1.5 reads an integer beyond 32 bits from a file only with L. */
            if (v->type == GAN_CONFIG_INT && (v->i > 2147483647LL || v->i < -2147483647LL))
                strncat(value, "L", sizeof value - strlen(value) - 1);
            text_indent(t, depth);
            text_add(t, rest);
            text_add(t, " = ");
            text_add(t, value);
            text_add(t, ";");
            if (with_origins) {
                text_add(t, "  # ");
                text_add(t, v->origin);
            }
            text_add(t, "\n");
            continue;
        }
        /* A group: written where its first key was set, with all its keys. */
        size_t glen = (size_t)(dot - rest);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strncmp(cfg->values[j].key, v->key, plen + glen + 1) == 0;
        if (seen)
            continue;
        char sub[512];
        if (plen + glen + 2 > sizeof sub)
            continue;
        memcpy(sub, v->key, plen + glen + 1);
        sub[plen + glen + 1] = '\0';
        text_indent(t, depth);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)glen, rest);
        text_add(t, name);
        text_add(t, " = {\n");
        write_group(t, cfg, sub, depth + 1, with_origins);
        text_indent(t, depth);
        text_add(t, "};\n");
    }
}

char *gan_config_to_text(const gan_config *cfg, int with_origins)
{
    struct text t = { NULL, 0, 0, 0 };
    text_add(&t, "");
    write_group(&t, cfg, "", 0, with_origins);
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
