/* SPDX-License-Identifier: MIT */
/* config_schema.c — the core's settings (their types, defaults, bounds and groups), the
 * checks a value for one of them must pass, and "did you mean" for unknown keys. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_private.h"

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
static const char *const data_names[] = { "8gaussians", "25gaussians", "swissroll", "fashion-mnist", "folder", NULL };
static const char *const decays[] = { "none", "linear", NULL };
static const char *const precision_modes[] = { "fp32", "fp16", "bf16", "fp8", NULL };
static const char *const fp8_formats[] = { "hybrid", "e4m3", NULL };
static const char *const fp8_rests[] = { "bf16", "fp16", NULL };
static const char *const precision_levels[] = { "O1", "O2", NULL };
static const char *const inner_scales[] = { "outer", NULL };

#define STR(k, d, ch, sum) { k, GAN_SETTING_STRING, d, ch, 0, 0, 0, 0, 0, sum, 0 }
#define INT_MIN_(k, d, lo, sum) { k, GAN_SETTING_INT, d, NULL, 0, 1, 0, lo, 0, sum, 0 }
#define INT_RANGE(k, d, lo, hi, sum) { k, GAN_SETTING_INT, d, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define FLOAT_RANGE(k, d, lo, hi, sum) { k, GAN_SETTING_FLOAT, d, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define FLOAT_MIN(k, d, lo, sum) { k, GAN_SETTING_FLOAT, d, NULL, 0, 1, 0, lo, 0, sum, 0 }
#define INT_RANGE_NO_DEFAULT(k, lo, hi, sum) { k, GAN_SETTING_INT, NULL, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define FLOAT_RANGE_NO_DEFAULT(k, lo, hi, sum) { k, GAN_SETTING_FLOAT, NULL, NULL, 0, 1, 1, lo, hi, sum, 0 }
#define BOOL(k, d, sum) { k, GAN_SETTING_BOOL, d, NULL, 0, 0, 0, 0, 0, sum, 0 }
#define LIST(k, d, sum) { k, GAN_SETTING_STRING, d, NULL, 1, 0, 0, 0, 0, sum, 0 }
/* A list of strings that may be empty. */
#define LIST0(k, d, sum) { k, GAN_SETTING_STRING, d, NULL, 2, 0, 0, 0, 0, sum, 0 }
/* A word of `ch` or a number > 0. */
#define STR_OR_NUMBER(k, d, ch, sum) { k, GAN_SETTING_STRING, d, ch, 0, 0, 0, 0, 0, sum, 1 }

/* The optimizer settings of one network; both networks have the same. The betas are
 * the WGAN-GP paper's; the learning rate and its decay are the demo's (ganctl.conf(5):
 * the paper's 1e-4 without decay converges far more slowly on the toys). */
/* The update computes in FP32, so the learning rate and the weight decay stay below
 * FP32's largest number (3.4028235e38), written so that the bound itself passes. */
#define FP32_MAX_BOUND 3.4028234e38
#define OPTIMIZER_KEYS(net) \
    FLOAT_RANGE(net ".optimizer.lr", "1e-3", 0, FP32_MAX_BOUND, "Adam's learning rate"), \
    FLOAT_RANGE(net ".optimizer.beta1", "0.5", 0, 0.999999, "Adam's first-moment decay, in [0, 1)"), \
    FLOAT_RANGE(net ".optimizer.beta2", "0.9", 0, 0.999999, "Adam's second-moment decay, in [0, 1)"), \
    FLOAT_RANGE(net ".optimizer.eps", "1e-8", 1e-30, 1, "Adam's epsilon, added to the root of the second moment"), \
    FLOAT_RANGE(net ".optimizer.weight_decay", "0.0", 0, FP32_MAX_BOUND, "L2 penalty added to the gradient, as torch.optim.Adam"), \
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
    STR("run.id", NULL, NULL, "set by ganctl, never by hand: the run's identity, 32 hex digits drawn when the run is created"),
    INT_MIN_("run.iterations", "4000", 1, "generator iterations to train"),
    INT_MIN_("run.log_every", "10", 1, "write a metrics.csv row every this many iterations"),
    INT_MIN_("run.eval_every", "500", 0, "toy quality metrics every this many iterations; 0 = at the end only"),
    INT_MIN_("run.image_every", "1000", 0, "a PNG every this many iterations; 0 = at the end only"),
    INT_MIN_("run.checkpoint_every", "1000", 0, "a checkpoint every this many iterations; 0 = at the end only"),
    BOOL("run.metrics_time", "true", "write the time_s column (wall clock) in metrics.csv"),
    BOOL("run.tensorboard", "false", "also write each metrics.csv row, and the final picture, to a TensorBoard event file in the run folder"),
    FLOAT_RANGE("run.diverged_skip_fraction", "0.5", 0, 1, "a run whose network skipped more than this fraction of its steps since the last evaluation ends \"diverged\" (exit status 3)"),
    INT_MIN_("run.diverged_window", "100", 0, "a run whose every critic step in this many was skipped for non-finite values ends then \"diverged\" (exit status 3); 0 = off"),
    INT_RANGE("run.debug_level", "0", 0, 2, "1: per-parameter gradient statistics in the log and grad_stats.csv at every row; 2: also an FP32 shadow backward per row and its true-underflow counts in grad_underflow.csv"),
    STR("precision.mode", "\"fp32\"", precision_modes, "fp32, or mixed precision with FP16 or BF16 compute and FP32 master weights"),
    STR("precision.level", "\"O2\"", precision_levels, "O1: GEMM and conv in 16 bit; O2: nearly everything in 16 bit"),
    LIST0("precision.fp32", "[]", "module scopes kept in FP32, e.g. [\"penalty\", \"critic.fc3\"]"),
    /* No default: a run that does not set it keeps its config.conf and checkpoints as
     * they were before the setting existed; unset means 0. At most FP16's largest finite
     * value, so that the limit is a finite number in both 16-bit types. */
    FLOAT_RANGE_NO_DEFAULT("precision.clamp", 0, 65504, "fp16 and bf16: clamp every 16-bit result of a matrix product or convolution to +-this (StyleGAN2-ADA's conv_clamp, 256); 0 (off) when unset"),
    /* No defaults: a run that sets none keeps its config.conf and checkpoints as they
     * were before FP8 existed; core/amp/fp8_recipe.c has what unset means. */
    STR("fp8.recipe", NULL, NULL, "precision.mode = \"fp8\": the scaling recipe, recipe-NAME.so; \"current\" when unset"),
    STR("fp8.format", NULL, fp8_formats, "precision.mode = \"fp8\": \"hybrid\" (E4M3 forward operands, E5M2 gradients) or \"e4m3\" (E4M3 everywhere); hybrid when unset"),
    STR("fp8.rest", NULL, fp8_rests, "precision.mode = \"fp8\": the 16-bit type between the FP8 products, \"bf16\" or \"fp16\"; bf16 when unset"),
    { "fp8.saturate", GAN_SETTING_BOOL, NULL, NULL, 0, 0, 0, 0, 0, "precision.mode = \"fp8\": a cast beyond the format's range saturates to +-max (true, as GPUs' satfinite) or overflows to inf (E5M2) or NaN (E4M3); true when unset", 0 },
    STR_OR_NUMBER("penalty.inner_scale", "\"outer\"", inner_scales, "seed of the penalty's inner gradient: \"outer\" (the critic's loss scale) or a number"),
    STR("scaler.name", "\"none\"", NULL, "the loss scaler of both networks, scaler-NAME.so"),
    STR("data.name", "\"8gaussians\"", data_names, "the data set: a 2-D toy, \"fashion-mnist\" (28x28 images), or \"folder\" (your PNG and JPEG images in data.path)"),
    STR("data.path", "\"/usr/share/datasets/fashion-mnist\"", NULL, "the folder of fashion-mnist's IDX files (Debian package dataset-fashion-mnist), or the image folder"),
    /* An image folder's settings. No default here: a run that does not set them keeps its
     * config.conf and checkpoint as they were; core/data/image_folder.h has what their
     * absence means (3, 64, 0.1). */
    INT_RANGE_NO_DEFAULT("data.channels", 1, 3, "data.name = \"folder\": 1 (grey) or 3 (RGB) channels; 3 when unset"),
    INT_RANGE_NO_DEFAULT("data.size", 4, 1024, "data.name = \"folder\": the side of the square images, e.g. 28, 32 or 64; 64 when unset"),
    FLOAT_RANGE_NO_DEFAULT("data.holdout", 0, 0.9, "data.name = \"folder\": the fraction of the images held out for the quality metrics; 0.1 when unset"),
    INT_RANGE("data.batch_size", "256", 1, 1048576, "real and generated samples per step"),
    STR("eval.classifier", "\"\"", NULL, "image runs: the classifier file of the Frechet distance; \"\" = the cached default"),
    INT_RANGE("generator.z_dim", "2", 1, 65536, "the size of the generator's input noise z"),
    STR("generator.model.name", "\"mlp\"", NULL, "the generator's model plugin, model-NAME.so"),
    STR("generator.scaler.name", NULL, NULL, "the generator's own loss scaler, instead of scaler.name"),
    OPTIMIZER_KEYS("generator"),
    INT_RANGE("critic.iterations", "5", 1, 1000, "critic steps per generator step (n_critic)"),
    BOOL("critic.join_batches", "false", "score the real and the fake batch as one batch of 2B rows where the critic model allows (faster; the sums run in another order)"),
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
    "precision", "penalty", "scaler", "eval", GAN_CONFIG_RECIPE_GROUP
};
#define CORE_GROUP_COUNT (sizeof core_groups / sizeof core_groups[0])

/* Groups whose keys, beyond the core's, belong to the plugin selected for the group
 * and are checked against its declared settings once it is loaded. Besides these,
 * every group loss.TERM holds the settings of the loss term TERM, and every group
 * fp8.RECIPE those of the FP8 scaling recipe RECIPE. */
static const char *const plugin_groups[] = {
    "backend", "generator.model", "critic.model", "scaler", "generator.scaler", "critic.scaler"
};
#define PLUGIN_GROUP_COUNT (sizeof plugin_groups / sizeof plugin_groups[0])

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
const char *gan_config_type_hint(enum gan_setting_type type)
{
    switch (type) {
    case GAN_SETTING_INT: return "write a whole number without quotes";
    case GAN_SETTING_FLOAT: return "write a number without quotes";
    case GAN_SETTING_BOOL: return "write true or false without quotes";
    case GAN_SETTING_STRING: return "write the value in double quotes";
    }
    return "see ganctl.conf(5)";
}

/* Nonzero when `s` reads as a number that is not finite ("nan", "inf", "-Infinity"):
 * a word that looks like a number to its writer, but names none a setting can hold. */
static int nonfinite_word(const char *s)
{
    char *end;
    double x = s && *s ? strtod(s, &end) : 0.0;
    return s && *s && !*end && !isfinite(x);
}

gan_status gan_config_wrong_type(struct gan_error *err, const char *origin, const char *key,
                                 enum gan_setting_type want, enum gan_config_type got,
                                 const char *text)
{
    /* "write a number without quotes" would not help whoever wrote nan without them. */
    if (want == GAN_SETTING_FLOAT && got == GAN_CONFIG_STRING && nonfinite_word(text))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a finite number, got \"%s\": write a finite number without quotes",
                             origin, key, text);
    return gan_error_set(err, GAN_ERR_CONFIG, "%s: \"%s\" must be %s, got %s: %s", origin, key,
                         gan_setting_type_phrase(want), gan_config_type_phrase(got),
                         gan_config_type_hint(want));
}

int gan_config_type_accepts(enum gan_setting_type want, enum gan_config_type got)
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

gan_status gan_config_unknown_key(struct gan_error *err, const char *origin, const char *key,
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

const struct schema_key *gan_config_core_key(const char *key)
{
    for (size_t i = 0; i < CORE_KEY_COUNT; i++)
        if (strcmp(core_keys[i].key, key) == 0)
            return &core_keys[i];
    return NULL;
}

int gan_config_is_core_group(const char *key)
{
    for (size_t i = 0; i < CORE_GROUP_COUNT; i++)
        if (strcmp(core_groups[i], key) == 0)
            return 1;
    return 0;
}

/* Nonzero when `key` is PARENT.NAME (one name after the parent) and not a core key. */
static int named_group(const char *key, const char *parent)
{
    size_t n = strlen(parent);
    return strncmp(key, parent, n) == 0 && key[n] == '.' && key[n + 1] &&
           !strchr(key + n + 1, '.') && !gan_config_core_key(key);
}

/* Nonzero when `key` is PARENT.NAME.something. */
static int in_named_group(const char *key, const char *parent)
{
    size_t n = strlen(parent);
    if (strncmp(key, parent, n) != 0 || key[n] != '.')
        return 0;
    const char *dot = strchr(key + n + 1, '.');
    return dot && dot > key + n + 1 && dot[1];
}

/* Nonzero when `key` is loss.TERM (one name after "loss.") and not a core key: the
 * group of a loss term's settings. */
int gan_config_is_loss_term_group(const char *key)
{
    return named_group(key, LOSS_GROUP);
}

int gan_config_is_recipe_group(const char *key)
{
    return named_group(key, GAN_CONFIG_RECIPE_GROUP);
}

/* Nonzero when `key` is group.something for a plugin group, loss.TERM.something or
 * fp8.RECIPE.something. */
int gan_config_in_plugin_group(const char *key)
{
    for (size_t i = 0; i < PLUGIN_GROUP_COUNT; i++) {
        size_t n = strlen(plugin_groups[i]);
        if (strncmp(key, plugin_groups[i], n) == 0 && key[n] == '.' && key[n + 1])
            return 1;
    }
    return in_named_group(key, LOSS_GROUP) || in_named_group(key, GAN_CONFIG_RECIPE_GROUP);
}

int gan_config_name_char(char c, int first)
{
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return 1;
    return !first && ((c >= '0' && c <= '9') || c == '-' || c == '_');
}

/* libconfig's names ([A-Za-z][-A-Za-z0-9_]*) joined by dots. */
int gan_config_valid_key(const char *key)
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
        if (!gan_config_name_char(*p, first))
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
    if (!gan_config_type_accepts(k->type, p->type))
        return gan_config_wrong_type(err, origin, k->key, k->type, p->type, p->s);
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
gan_status gan_config_put(gan_config *cfg, const char *key, struct parsed *p, const char *origin,
                          enum gan_config_source source, struct gan_error *err)
{
    gan_status st;
    /* A float beyond a double's range (1e410) is read as inf. No setting, the core's or
     * a plugin's, means that, and --print-config could not write it back: libconfig
     * reads no inf or nan. */
    if (p->type == GAN_CONFIG_FLOAT && !isfinite(p->f)) {
        int is_nan = isnan(p->f);
        gan_config_parsed_release(p);
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a finite number, got %s: write a finite number%s",
                             origin, key, is_nan ? "NaN" : "one beyond a double's range",
                             is_nan ? "" : " of magnitude below 1.8e308");
    }
    const struct schema_key *k = gan_config_core_key(key);
    if (k) {
        if ((st = check_core(k, p, origin, err)) != GAN_OK) {
            gan_config_parsed_release(p);
            return st;
        }
        return gan_config_store(cfg, key, p, origin, source, err);
    }
    if (gan_config_is_core_group(key) && p->type != GAN_CONFIG_GROUP) {
        gan_config_parsed_release(p);
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
    if (gan_config_in_plugin_group(key))
        return gan_config_store(cfg, key, p, origin, source, err);
    gan_config_parsed_release(p);
    if (gan_config_is_loss_term_group(key))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a group, got %s: a loss term's settings go inside it, e.g. %s = { lambda = 0.1; }",
                             origin, key, gan_config_type_phrase(p->type), key);
    if (gan_config_is_recipe_group(key))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: \"%s\" must be a group, got %s: a recipe's settings go inside it, e.g. %s = { margin = 1; }",
                             origin, key, gan_config_type_phrase(p->type), key);
    return gan_config_unknown_key(err, origin, key, NULL, NULL, NULL);
}

int gan_config_is_core_key(const char *key)
{
    return gan_config_core_key(key) != NULL;
}

const char *gan_config_key_summary(const char *key)
{
    const struct schema_key *k = gan_config_core_key(key);
    return k ? k->summary : NULL;
}

/* ------------------------------------------------------------------ a new configuration */

gan_status gan_config_new(gan_config **out, struct gan_error *err)
{
    *out = NULL;
    gan_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return gan_config_nomem(err);
    for (size_t i = 0; i < CORE_KEY_COUNT; i++) {
        struct parsed p;
        char why[256];
        /* A key without a default has no value until someone sets it. */
        if (!core_keys[i].default_value)
            continue;
        gan_status st = gan_config_parse_value(core_keys[i].default_value, &p, why, sizeof why);
        if (st == GAN_OK)
            st = gan_config_store(cfg, core_keys[i].key, &p, "default", GAN_CONFIG_DEFAULT, err);
        if (st != GAN_OK) {
            gan_config_free(cfg);
            return st == GAN_ERR_NOMEM ? gan_config_nomem(err) : gan_error_set(err, GAN_ERR_INTERNAL, "bad core default: %s", why);
        }
    }
    for (size_t i = 0; i < sizeof plugin_defaults / sizeof plugin_defaults[0]; i++) {
        struct parsed p;
        char why[256];
        gan_status st = gan_config_parse_value(plugin_defaults[i].value, &p, why, sizeof why);
        if (st == GAN_OK)
            st = gan_config_store(cfg, plugin_defaults[i].key, &p, PLUGIN_DEFAULT_ORIGIN,
                                  GAN_CONFIG_DEFAULT, err);
        if (st != GAN_OK) {
            gan_config_free(cfg);
            return st == GAN_ERR_NOMEM ? gan_config_nomem(err) : gan_error_set(err, GAN_ERR_INTERNAL, "bad default: %s", why);
        }
    }
    *out = cfg;
    return GAN_OK;
}
