/* SPDX-License-Identifier: MIT */
/* fp8_checkpoint.c — an FP8 run's part of a checkpoint (checkpoint.h): the scaling
 * recipe's name and state arrays, and the casts' counts since the last metrics row.
 * The file is untrusted: names and counts are checked here, values by the recipe. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amp/fp8_checkpoint.h"

#define DAMAGED "the file is damaged; resume from a copy of the run folder or start a new run"

static gan_status set_meta(gan_st_writer *w, const char *key, const char *value,
                           const char *path, struct gan_error *err)
{
    char msg[512];
    gan_status st = gan_st_writer_set_metadata(w, key, value, msg, sizeof msg);
    return st == GAN_OK ? GAN_OK : gan_error_set(err, st, "%s: %s", path, msg);
}

/* The FP8 recipe's state: metadata "recipe" and a tensor recipe.ARRAY per array. The
 * values stay in *fp8 while the writer needs them. */
gan_status gan_fp8_checkpoint_save(gan_st_writer *w, const struct gan_fp8_state *fp8,
                             const struct gan_fp8_totals *t, const char *path,
                             struct gan_error *err)
{
    if (!fp8 || !fp8->recipe[0])
        return GAN_OK;
    char totals[320];
    snprintf(totals, sizeof totals, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
             " %" PRIu64 " %.17g %.17g", t->operands, t->elements, t->overflow, t->underflow,
             t->subnormal, t->nonfinite, t->log2_scale_min, t->log2_scale_max);
    gan_status st = set_meta(w, "recipe", fp8->recipe, path, err);
    if (st == GAN_OK)
        st = set_meta(w, "recipe.totals", totals, path, err);
    for (size_t i = 0; st == GAN_OK && i < fp8->count; i++) {
        const struct gan_recipe_array *a = &fp8->arrays[i];
        char name[300], msg[512];
        snprintf(name, sizeof name, "recipe.%s", a->name);
        uint64_t shape[1] = { a->count };
        st = gan_st_writer_add(w, name, GAN_ST_F64, 1, shape, a->values,
                               a->count * sizeof(double), msg, sizeof msg);
        if (st != GAN_OK)
            gan_error_set(err, st, "%s: %s", path, msg);
    }
    return st;
}

/* Whether a recipe's name or array name is one ganctl writes: the characters recipe.h
 * allows, not empty, shorter than `max`. */
static int plain_name(const char *s, size_t max, const char *extra)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || strchr(extra, s[i])))
            return 0;
    return 1;
}

/* The FP8 casts' counts as add_recipe writes them: six unsigned decimal counts (no sign),
 * none above the elements, all zero when no operand was cast, then the least and the
 * most log2 scale, within FP32's exponent range. */
static int parse_totals(const char *text, struct gan_fp8_totals *t)
{
    uint64_t v[6];
    const char *p = text;
    if (!p)
        return 0;
    for (int i = 0; i < 6; i++) {
        if (*p < '0' || *p > '9')
            return 0;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno || *end != ' ')
            return 0;
        v[i] = x;
        p = end + 1;
    }
    char *end;
    double lo = strtod(p, &end);
    if (end == p || *end != ' ')
        return 0;
    p = end + 1;
    double hi = strtod(p, &end);
    if (end == p || *end != '\0' || !(lo >= -150.0 && lo <= hi && hi <= 150.0))
        return 0;
    for (int i = 2; i < 6; i++)
        if (v[i] > v[1])
            return 0;
    if (v[0] == 0 && (v[1] != 0 || lo != 0.0 || hi != 0.0))
        return 0;
    *t = (struct gan_fp8_totals){ v[0], v[1], v[2], v[3], v[4], v[5], lo, hi };
    return 1;
}

/* The FP8 recipe's state from the file: metadata "recipe" and every recipe.* tensor.
 * The names are checked, never quoted; the values are the recipe's to check. */
gan_status gan_fp8_checkpoint_load(const gan_st_file *f, struct gan_fp8_state *fp8,
                              struct gan_fp8_totals *totals_out, const char *path,
                              struct gan_error *err)
{
    const char *name = gan_st_metadata_get(f, "recipe");
    gan_fp8_state_clear(fp8);
    if (name && !plain_name(name, sizeof fp8->recipe, ""))
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: the checkpoint's metadata \"recipe\" "
                             "is not a scaling recipe's name: " DAMAGED, path);
    const char *totals = gan_st_metadata_get(f, "recipe.totals");
    if (name && !parse_totals(totals, totals_out))
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: the checkpoint's metadata "
                             "\"recipe.totals\" is missing or not the FP8 casts' eight "
                             "counts: " DAMAGED, path);
    /* Each array is checked against the others by the recipe: bound their number, which
     * the file alone sets (a run's recipes keep two arrays per operand, a few hundred). */
    size_t arrays = 0;
    for (size_t k = 0; k < gan_st_count(f); k++)
        arrays += strncmp(gan_st_tensor_at(f, k)->name, "recipe.", 7) == 0;
    if (arrays > GAN_CHECKPOINT_MAX_RECIPE_ARRAYS)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: the checkpoint holds %zu arrays of FP8 "
                             "recipe state, more than the %d a run keeps: " DAMAGED, path,
                             arrays, GAN_CHECKPOINT_MAX_RECIPE_ARRAYS);
    if (name)
        snprintf(fp8->recipe, sizeof fp8->recipe, "%s", name);
    for (size_t k = 0; k < gan_st_count(f); k++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, k);
        if (strncmp(t->name, "recipe.", 7) != 0)
            continue;
        if (!name || !plain_name(t->name + 7, 256, ".#/") || t->dtype != GAN_ST_F64 ||
            t->ndim != 1)
            return gan_error_set(err, GAN_ERR_FORMAT, "%s: the checkpoint's tensor %zu is "
                                 "named as FP8 recipe state but is not one (an F64 vector "
                                 "with a plain name, beside the metadata \"recipe\"): "
                                 DAMAGED, path, k);
        double *values = malloc(t->nbytes ? t->nbytes : 1);
        if (!values)
            return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory", path);
        memcpy(values, t->data, t->nbytes);
        gan_status st = gan_fp8_state_add(fp8, t->name + 7, values, (size_t)t->count);
        free(values);
        if (st != GAN_OK)
            return gan_error_set(err, st, "%s: out of memory", path);
    }
    return GAN_OK;
}

