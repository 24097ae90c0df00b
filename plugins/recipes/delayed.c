/* SPDX-License-Identifier: MIT */
/* delayed.c — the recipe plugin "delayed": Transformer Engine's delayed scaling. Each
 * operand (by its name, the same use of the same tensor from step to step) is scaled
 * from the amaxes its earlier casts measured, so that it needs no pass of its own
 * before the cast; an operand that outgrew its history overflows, which is counted. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

#include "recipe_common.h"

/* The state's arrays are PREFIX + operand name; recipe.h limits a name to 255 bytes. */
#define HISTORY_PREFIX "amax_history/"
#define OVERFLOWS_PREFIX "overflows/"
#define ARRAY_NAME_MAX 255
#define OPERAND_NAME_MAX (ARRAY_NAME_MAX - (sizeof HISTORY_PREFIX - 1))

/* A count in the state is a double: exact up to 2^53. */
#define COUNT_MAX 9007199254740992.0

/* One operand's history: the amaxes of its last casts, oldest first from `start`, in a
 * buffer that grows to the window as casts come. */
struct history {
    char *name;
    float *amax;
    int64_t capacity, count, start;
    uint64_t overflows;           /* values its casts overflowed, summed */
    int has_amax, has_overflows;  /* while loading: which of its two arrays were seen */
};

/* Histories by name: open addressing, a power-of-two number of slots, at most half full. */
struct table {
    struct history **slots;
    size_t size, used;
};

enum algorithm { ALGORITHM_MAX = 0, ALGORITHM_MOST_RECENT = 1 };
static const char *const algorithm_words[] = { "max", "most_recent", NULL };

struct gan_recipe {
    const struct gan_host *host;
    int64_t window;
    enum algorithm algorithm;
    int margin;
    struct table table;
    uint64_t overflows;           /* over every operand */
    char line[200];
};

/* ------------------------------------------------------------------ the table */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;           /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void history_free(struct history *h)
{
    if (!h)
        return;
    free(h->name);
    free(h->amax);
    free(h);
}

static void table_clear(struct table *t)
{
    for (size_t i = 0; i < t->size; i++)
        history_free(t->slots[i]);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The slot that holds `name`, or the empty one where it would go. */
static size_t table_slot(const struct table *t, const char *name)
{
    size_t i = (size_t)hash_name(name) & (t->size - 1);
    while (t->slots[i] && strcmp(t->slots[i]->name, name) != 0)
        i = (i + 1) & (t->size - 1);
    return i;
}

static struct history *table_find(const struct table *t, const char *name)
{
    return t->size ? t->slots[table_slot(t, name)] : NULL;
}

static int table_grow(struct table *t)
{
    size_t size = t->size ? t->size * 2 : 64;
    struct history **slots = calloc(size, sizeof *slots);
    if (!slots)
        return 0;
    struct table grown = { slots, size, t->used };
    for (size_t i = 0; i < t->size; i++)
        if (t->slots[i])
            slots[table_slot(&grown, t->slots[i]->name)] = t->slots[i];
    free(t->slots);
    *t = grown;
    return 1;
}

/* The history of `name`, made empty when there is none; NULL when out of memory. */
static struct history *table_get(struct table *t, const char *name)
{
    struct history *h = table_find(t, name);
    if (h)
        return h;
    if ((t->used + 1) * 2 > t->size && !table_grow(t))
        return NULL;
    h = calloc(1, sizeof *h);
    if (!h || !(h->name = strdup(name))) {
        free(h);
        return NULL;
    }
    t->slots[table_slot(t, name)] = h;
    t->used++;
    return h;
}

/* ------------------------------------------------------------------ one history */

static float history_at(const struct history *h, int64_t i)
{
    return h->amax[(h->start + i) % h->capacity];
}

/* Appends an amax, dropping the oldest once `window` are held. */
static int history_push(struct history *h, int64_t window, float amax)
{
    if (h->count < window && h->count == h->capacity) {
        /* Not yet full, so the values lie in order from index 0. */
        int64_t capacity = h->capacity ? h->capacity * 2 : 16;
        if (capacity > window)
            capacity = window;
        float *grown = realloc(h->amax, (size_t)capacity * sizeof *grown);
        if (!grown)
            return 0;
        h->amax = grown;
        h->capacity = capacity;
    }
    if (h->count < window) {
        h->amax[(h->start + h->count) % h->capacity] = amax;
        h->count++;
    } else {
        h->amax[h->start] = amax;
        h->start = (h->start + 1) % h->capacity;
    }
    return 1;
}

/* The amax the scale is made from: the largest in the window, or the latest. */
static float history_amax(const struct history *h, enum algorithm algorithm)
{
    if (algorithm == ALGORITHM_MOST_RECENT)
        return history_at(h, h->count - 1);
    float m = 0;
    for (int64_t i = 0; i < h->count; i++)
        m = fmaxf(m, history_at(h, i));
    return m;
}

/* ------------------------------------------------------------------ the recipe */

static gan_status delayed_create(const struct gan_host *host, gan_recipe **out)
{
    *out = NULL;
    long long window, margin;
    int algorithm;
    gan_status st = recipe_get_int(host, "delayed", "history", 1, 65536, &window);
    if (st == GAN_OK)
        st = recipe_get_choice(host, "delayed", "algorithm", algorithm_words, &algorithm);
    if (st == GAN_OK)
        st = recipe_get_int(host, "delayed", "margin", 0, 127, &margin);
    if (st != GAN_OK)
        return st;
    gan_recipe *rc = calloc(1, sizeof *rc);
    if (!rc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory");
    rc->host = host;
    rc->window = window;
    rc->algorithm = (enum algorithm)algorithm;
    rc->margin = (int)margin;
    *out = rc;
    return GAN_OK;
}

static void delayed_destroy(gan_recipe *rc)
{
    if (!rc)
        return;
    table_clear(&rc->table);
    free(rc);
}

/* Nothing is measured before the cast: the cast measures the amax that observe() keeps. */
static gan_status delayed_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                               struct gan_recipe_plan *plan)
{
    struct recipe_format fmt;
    gan_status st = recipe_check_operand(rc->host, "delayed", op, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    return recipe_fill_plan(rc->host, "delayed", plan, 0, 0, GAN_RECIPE_SCALE_E8M0);
}

static gan_status delayed_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                                 const struct gan_fp8_stats *stats, const float *block_amax,
                                 float *scales, char reason[96])
{
    (void)stats;
    (void)block_amax;
    struct recipe_format fmt;
    gan_status st = recipe_check_blocks(rc->host, "delayed", op, 0, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    const struct history *h = table_find(&rc->table, op->name);
    /* Transformer Engine starts every scale at 1, before any amax is known. (A history
     * is empty only when memory ran out for its first amax.) */
    if (!h || h->count == 0) {
        scales[0] = 1.0f;
        recipe_reason(reason, "no history yet → 1");
        return GAN_OK;
    }
    scales[0] = recipe_amax_scale(history_amax(h, rc->algorithm), fmt.max, rc->margin, reason);
    return GAN_OK;
}

/* A name the state can keep: the characters of recipe.h's array names, short enough
 * for the longer of the two prefixes. */
static int keepable_name(const char *name)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789_.#/-";
    size_t n = strlen(name);
    return n > 0 && n <= OPERAND_NAME_MAX && strspn(name, allowed) == n;
}

static gan_status delayed_observe(gan_recipe *rc, const struct gan_recipe_operand *op,
                                  const struct gan_fp8_cast_stats *cast, const float *scales)
{
    const struct gan_host *host = rc->host;
    struct recipe_format fmt;
    gan_status st = recipe_check_blocks(host, "delayed", op, 0, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    if (!cast)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "observe() was given no cast statistics for %s",
                          op->name);
    if ((st = recipe_check_amax(host, "delayed", "the cast's amax", cast->amax)) != GAN_OK)
        return st;
    if (!keepable_name(op->name))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "the operand name \"%.64s...\" cannot be kept in a "
                          "checkpoint: names are [A-Za-z0-9_.#/-]+ of at most %zu bytes",
                          op->name, (size_t)OPERAND_NAME_MAX);
    struct history *h = table_get(&rc->table, op->name);
    if (!h || !history_push(h, rc->window, cast->amax))
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "out of memory for the amax history of %s", op->name);
    if (cast->overflow > 0) {
        if (h->overflows == 0)
            host->log(host->ctx, GAN_LOG_WARN,
                      "%s overflowed %s at step %lld: %llu of %llu values "
                      "beyond %g at scale %g (amax %g); its later overflows are only counted",
                      op->name, fmt.name, (long long)op->step,
                      (unsigned long long)cast->overflow, (unsigned long long)cast->elements,
                      fmt.max, scales ? (double)scales[0] : 1.0, (double)cast->amax);
        h->overflows += cast->overflow;
        rc->overflows += cast->overflow;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ state */

static int compare_names(const void *a, const void *b)
{
    const struct history *x = *(const struct history *const *)a;
    const struct history *y = *(const struct history *const *)b;
    return strcmp(x->name, y->name);
}

/* Every operand's history, oldest first, and its overflow count; in the order of the
 * names, so that the same state always writes the same checkpoint. */
static gan_status delayed_save_state(gan_recipe *rc, gan_recipe_put_fn *put, void *arg)
{
    const struct gan_host *host = rc->host;
    size_t n = rc->table.used;
    struct history **sorted = calloc(n ? n : 1, sizeof *sorted);
    double *values = calloc((size_t)rc->window, sizeof *values);
    if (!sorted || !values) {
        free(sorted);
        free(values);
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory saving");
    }
    size_t k = 0;
    for (size_t i = 0; i < rc->table.size; i++)
        if (rc->table.slots[i] && rc->table.slots[i]->count > 0)
            sorted[k++] = rc->table.slots[i];
    n = k;
    qsort(sorted, n, sizeof *sorted, compare_names);
    gan_status st = GAN_OK;
    char name[ARRAY_NAME_MAX + 1];
    for (size_t i = 0; i < n && st == GAN_OK; i++) {
        const struct history *h = sorted[i];
        for (int64_t j = 0; j < h->count; j++)
            values[j] = history_at(h, j);
        snprintf(name, sizeof name, HISTORY_PREFIX "%s", h->name);
        st = put(arg, name, values, (size_t)h->count);
        double overflows = (double)h->overflows;
        snprintf(name, sizeof name, OVERFLOWS_PREFIX "%s", h->name);
        if (st == GAN_OK)
            st = put(arg, name, &overflows, 1);
    }
    free(sorted);
    free(values);
    return st;
}

/* An array of the state, checked, into the table being built. */
static gan_status load_array(gan_recipe *rc, struct table *t, const struct gan_recipe_array *a)
{
    const struct gan_host *host = rc->host;
    int is_history = strncmp(a->name, HISTORY_PREFIX, sizeof HISTORY_PREFIX - 1) == 0;
    int is_overflows = strncmp(a->name, OVERFLOWS_PREFIX, sizeof OVERFLOWS_PREFIX - 1) == 0;
    const char *operand = is_history ? a->name + sizeof HISTORY_PREFIX - 1
                        : is_overflows ? a->name + sizeof OVERFLOWS_PREFIX - 1 : NULL;
    if (!operand || !keepable_name(operand))
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the state array \"%s\" is not one it writes", a->name);
    if (a->count && !a->values)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the state array \"%s\" has no values", a->name);
    if (is_history && a->count == 0)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the state array \"%s\" is empty; a history is saved "
                          "only once it holds an amax", a->name);
    if (is_overflows && a->count != 1)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the state array \"%s\" holds %zu values; it holds one",
                          a->name, a->count);
    for (size_t i = 0; i < a->count; i++) {
        double v = a->values[i];
        int good = is_history ? v >= 0 && v <= FLT_MAX && (double)(float)v == v
                              : v >= 0 && v <= COUNT_MAX && v == floor(v);
        if (!good)
            return host->fail(host->ctx, GAN_ERR_FORMAT,
                              "value %zu of the state array \"%s\" is %.17g, not "
                              "%s", i, a->name, v,
                              is_history ? "an amax (a finite FP32 number >= 0)"
                                         : "a count (a whole number from 0 to 2^53)");
    }
    struct history *h = table_get(t, operand);
    if (!h)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory loading");
    if (is_history ? h->has_amax : h->has_overflows)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the state has the array \"%s\" twice", a->name);
    if (is_overflows) {
        h->has_overflows = 1;
        h->overflows = (uint64_t)a->values[0];
        return GAN_OK;
    }
    h->has_amax = 1;
    /* A history longer than this run's window keeps its most recent amaxes. */
    size_t skip = a->count > (size_t)rc->window ? a->count - (size_t)rc->window : 0;
    for (size_t i = skip; i < a->count; i++)
        if (!history_push(h, rc->window, (float)a->values[i]))
            return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory loading");
    return GAN_OK;
}

static gan_status delayed_load_state(gan_recipe *rc, const struct gan_recipe_array *arrays,
                                     size_t count)
{
    const struct gan_host *host = rc->host;
    if (count && !arrays)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "load_state() was given %zu arrays without a list",
                          count);
    struct table t = { 0 };
    gan_status st = GAN_OK;
    size_t longest = 0;
    for (size_t i = 0; i < count && st == GAN_OK; i++) {
        if (!arrays[i].name)
            st = host->fail(host->ctx, GAN_ERR_FORMAT,
                            "state array %zu has no name", i);
        else
            st = load_array(rc, &t, &arrays[i]);
        if (st == GAN_OK && arrays[i].count > longest &&
            strncmp(arrays[i].name, HISTORY_PREFIX, sizeof HISTORY_PREFIX - 1) == 0)
            longest = arrays[i].count;
    }
    /* Each operand has both arrays, or the state was cut. */
    uint64_t overflows = 0;
    for (size_t i = 0; i < t.size && st == GAN_OK; i++) {
        const struct history *h = t.slots[i];
        if (h && h->has_amax != h->has_overflows)
            st = host->fail(host->ctx, GAN_ERR_FORMAT,
                            "the state array \"%s%s\" has no \"%s%s\" beside it",
                            h->has_amax ? HISTORY_PREFIX : OVERFLOWS_PREFIX, h->name,
                            h->has_amax ? OVERFLOWS_PREFIX : HISTORY_PREFIX, h->name);
        else if (h)
            overflows += h->overflows;
    }
    if (st != GAN_OK) {
        table_clear(&t);
        return st;
    }
    if (longest > (size_t)rc->window)
        host->log(host->ctx, GAN_LOG_WARN,
                  "the saved amax histories hold up to %zu casts, more than "
                  "history = %lld; each keeps its most recent %lld", longest,
                  (long long)rc->window, (long long)rc->window);
    table_clear(&rc->table);
    rc->table = t;
    rc->overflows = overflows;
    return GAN_OK;
}

static const char *delayed_describe(gan_recipe *rc)
{
    snprintf(rc->line, sizeof rc->line,
             "delayed: per tensor, from the %s of the last %lld amaxes of each operand, margin "
             "%d; %llu values overflowed in %zu operands", algorithm_words[rc->algorithm],
             (long long)rc->window, rc->margin, (unsigned long long)rc->overflows,
             rc->table.used);
    return rc->line;
}

static const struct gan_recipe_ops delayed_ops = {
    .struct_size = sizeof(struct gan_recipe_ops),
    .create = delayed_create,
    .destroy = delayed_destroy,
    .plan = delayed_plan,
    .scales = delayed_scales,
    .observe = delayed_observe,
    .save_state = delayed_save_state,
    .load_state = delayed_load_state,
    .describe = delayed_describe,
};

/* Transformer Engine's defaults: a window of 1024 casts, its largest amax, no margin. */
static const struct gan_setting_spec delayed_settings[] = {
    { "history", GAN_SETTING_INT, "1024", "the amaxes of this many past casts of an operand (1 to 65536)" },
    { "algorithm", GAN_SETTING_STRING, "\"max\"",
      "\"max\": the largest amax of the window; \"most_recent\": the last one" },
    { "margin", GAN_SETTING_INT, "0",
      "binades kept free above that amax (0 to 127): the scale is divided by 2^margin" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin delayed_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = "delayed",
    .version = PACKAGE_VERSION,
    .summary = "delayed scaling: each operand's scale from the amax history of its casts",
    .ops = &delayed_ops,
    .settings = delayed_settings,
};

GAN_DEFINE_PLUGIN(delayed_descriptor)
