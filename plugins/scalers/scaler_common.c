/* SPDX-License-Identifier: MIT */
/* scaler_common.c — settings, overflow classification, FP32 scale arithmetic and state
 * lists shared by the shipped scaler modules (linked into each; nothing is exported). */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scaler_common.h"

/* ------------------------------------------------------------------ settings */

/* NOT_FOUND is "unset": the caller keeps its default. The core's host has type-checked
 * the configuration already, so another failure is a value of the wrong type from a
 * host that does not check. (Scalers use nothing from libganctl, so no status phrase.) */
static gan_status read_result(const struct gan_host *host, const char *who, const char *key,
                              gan_status st, const char *what, const char *example, int *set)
{
    if (set)
        *set = st == GAN_OK;
    if (st == GAN_OK || st == GAN_ERR_NOT_FOUND)
        return GAN_OK;
    return host->fail(host->ctx, st,
                      "scaler %s: setting \"%s\" could not be read as %s: write it as %s",
                      who, key, what, example);
}

gan_status scaler_read_float(const struct gan_host *host, const char *who, const char *key,
                             double *value, int *set)
{
    double v = *value;
    gan_status st = host->get_float(host->ctx, key, &v);
    if (st == GAN_OK)
        *value = v;
    return read_result(host, who, key, st, "a number", "e.g. 2.0", set);
}

gan_status scaler_read_int(const struct gan_host *host, const char *who, const char *key,
                           int64_t *value, int *set)
{
    long long v = *value;
    gan_status st = host->get_int(host->ctx, key, &v);
    if (st == GAN_OK)
        *value = (int64_t)v;
    return read_result(host, who, key, st, "an integer", "e.g. 2000", set);
}

gan_status scaler_read_bool(const struct gan_host *host, const char *who, const char *key,
                            int *value, int *set)
{
    int v = *value;
    gan_status st = host->get_bool(host->ctx, key, &v);
    if (st == GAN_OK)
        *value = v != 0;
    return read_result(host, who, key, st, "a boolean", "true or false", set);
}

gan_status scaler_read_string(const struct gan_host *host, const char *who, const char *key,
                              const char **value, int *set)
{
    const char *v = *value;
    gan_status st = host->get_string(host->ctx, key, &v);
    if (st == GAN_OK)
        *value = v;
    return read_result(host, who, key, st, "a string", "a quoted string", set);
}

/* A setting with a declared default: the host answers an unset key with that default
 * (host.h), so NOT_FOUND here means a host that breaks the contract. */
static gan_status declared(const struct gan_host *host, const char *who, const char *key,
                           gan_status st, int set)
{
    if (st == GAN_OK && !set)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: the host gave no value for the setting \"%s\", whose "
                          "default the scaler declares", who, key);
    return st;
}

gan_status scaler_get_float(const struct gan_host *host, const char *who, const char *key,
                            double *value)
{
    int set = 0;
    gan_status st = scaler_read_float(host, who, key, value, &set);
    return declared(host, who, key, st, set);
}

gan_status scaler_get_string(const struct gan_host *host, const char *who, const char *key,
                             const char **value)
{
    int set = 0;
    gan_status st = scaler_read_string(host, who, key, value, &set);
    if (st == GAN_OK && set && !*value)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "scaler %s: setting \"%s\" has no text",
                          who, key);
    return declared(host, who, key, st, set);
}

gan_status scaler_check_scale(const struct gan_host *host, const char *who, const char *key,
                              double *value, int positive)
{
    double v = *value;
    if (!isfinite(v) || v < 0 || (positive && v == 0) || v > FLT_MAX)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: %s = %g is not a usable scale: it must be a finite number "
                          "%s and at most %g (FP32's largest)", who, key, v,
                          positive ? "> 0" : ">= 0", (double)FLT_MAX);
    float f = (float)v;
    if (positive && f == 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "scaler %s: %s = %g is below FP32's smallest positive number (%g): "
                          "the core would use a scale of 0", who, key, v, (double)FLT_TRUE_MIN);
    *value = (double)f;
    return GAN_OK;
}

double scaler_times(double s, double factor)
{
    /* Both are FP32 values in practice; their double product is exact for factors of
     * 2 and 0.5, and the one rounding to FP32 is where subnormal scales reach 0. */
    return (double)(float)(s * factor);
}

/* ------------------------------------------------------------------ update */

gan_status scaler_classify(const struct gan_host *host, const char *who,
                           const struct gan_scaler_input *in, double own_scale,
                           enum gan_scaler_overflow *overflow)
{
    if (!in)
        return host->fail(host->ctx, GAN_ERR_INVALID, "scaler %s: update() was given no input",
                          who);
    size_t least = offsetof(struct gan_scaler_input, tensor_count) + sizeof in->tensor_count;
    if (in->struct_size < least)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "scaler %s: the input's struct_size is %zu, smaller than any version "
                          "of struct gan_scaler_input (%zu): set it to sizeof the struct",
                          who, in->struct_size, least);
    if (in->tensor_count && !in->tensors)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "scaler %s: the input counts %zu tensors but its tensors pointer is NULL",
                          who, in->tensor_count);
    /* Bit equality: both sides hold the same FP32 value, widened. */
    if (in->scale != own_scale)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "scaler %s: step %lld was run at scale %.9g, but the scaler's scale is "
                          "%.9g: the caller must use scale() for every backward",
                          who, (long long)in->step, in->scale, own_scale);
    if (in->forward_overflow) {
        *overflow = GAN_SCALER_FORWARD_OVERFLOW;
        return GAN_OK;
    }
    /* At scale 0 the gradients are 0·loss and dividing them by 0 gives NaN: there is
     * nothing to apply, exactly as if they had overflowed. */
    int bad = own_scale == 0;
    for (size_t i = 0; i < in->tensor_count && !bad; i++)
        bad = in->tensors[i].stats.nonfinite > 0;
    *overflow = bad ? GAN_SCALER_GRADIENT_OVERFLOW : GAN_SCALER_NO_OVERFLOW;
    return GAN_OK;
}

void scaler_decide(struct gan_scaler_decision *out, int skip, double scale,
                   enum gan_scaler_overflow overflow, enum gan_scaler_change change)
{
#define FITS(field) (out->struct_size >= offsetof(struct gan_scaler_decision, field) + \
                     sizeof out->field)
    if (FITS(skip))
        out->skip = skip;
    if (FITS(scale))
        out->scale = scale;
    if (FITS(overflow))
        out->overflow = overflow;
    if (FITS(change))
        out->change = change;
#undef FITS
}

/* ------------------------------------------------------------------ state */

static void copy_name(char *dst, const char *src)
{
    snprintf(dst, GAN_SCALER_NAME_MAX, "%s", src);
}

void scaler_state_begin(struct gan_scaler_state *st, const char *scaler, int64_t version)
{
    memset(st, 0, sizeof *st);
    copy_name(st->scaler, scaler);
    st->version = version;
}

/* The formats are fixed and small; a state that overflowed would be a bug caught by
 * the tests' round trips, so a put beyond the end is dropped rather than written. */
static struct gan_scaler_value *put(struct gan_scaler_state *st, const char *name,
                                    enum gan_scaler_value_type type)
{
    if (st->count >= GAN_SCALER_STATE_MAX)
        return NULL;
    struct gan_scaler_value *v = &st->values[st->count++];
    copy_name(v->name, name);
    v->type = type;
    return v;
}

void scaler_state_put_int(struct gan_scaler_state *st, const char *name, int64_t value)
{
    struct gan_scaler_value *v = put(st, name, GAN_SCALER_INT64);
    if (v)
        v->i = value;
}

void scaler_state_put_float(struct gan_scaler_state *st, const char *name, double value)
{
    struct gan_scaler_value *v = put(st, name, GAN_SCALER_FLOAT64);
    if (v)
        v->f = value;
}

static int terminated(const char *s)
{
    return memchr(s, '\0', GAN_SCALER_NAME_MAX) != NULL;
}

static const char *type_word(enum gan_scaler_value_type type)
{
    return type == GAN_SCALER_INT64 ? "int64" : type == GAN_SCALER_FLOAT64 ? "float64" : "unknown";
}

/* A scaler name as --scaler takes one: 1 to 31 letters, digits, '-' or '_'. */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 32 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == n;
}

gan_status scaler_state_check(const struct gan_host *host, const char *who,
                              const struct gan_scaler_state *st, int64_t version,
                              const struct scaler_field *fields, size_t n)
{
    if (!st)
        return host->fail(host->ctx, GAN_ERR_INVALID, "scaler %s: load_state() was given no state",
                          who);
    if (!terminated(st->scaler))
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler %s: the saved state's scaler name is not NUL-terminated", who);
    /* The name is the file's text: said only when it names a scaler as a user types
     * one, so that a crafted file cannot put its words into the message. */
    if (strcmp(st->scaler, who) != 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "scaler %s: the saved state belongs to %s%s%s: resume with "
                          "that scaler, or start this one afresh", who,
                          plain_name(st->scaler) ? "scaler \"" : "another scaler",
                          plain_name(st->scaler) ? st->scaler : "",
                          plain_name(st->scaler) ? "\"" : "");
    if (st->version > version)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "scaler %s: the saved state is version %lld, newer than this scaler "
                          "reads (%lld): resume with the ganctl that wrote it",
                          who, (long long)st->version, (long long)version);
    if (st->version < version)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler %s: the saved state is version %lld, but this scaler only "
                          "ever wrote version %lld: the checkpoint is damaged",
                          who, (long long)st->version, (long long)version);
    if (st->count > GAN_SCALER_STATE_MAX)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler %s: the saved state claims %zu values, more than a state holds "
                          "(%d)", who, st->count, GAN_SCALER_STATE_MAX);
    for (size_t k = 0; k < st->count; k++) {
        const struct gan_scaler_value *v = &st->values[k];
        if (!terminated(v->name))
            return host->fail(host->ctx, GAN_ERR_FORMAT,
                              "scaler %s: value %zu of the saved state has a name that is not "
                              "NUL-terminated", who, k);
        size_t f = 0;
        while (f < n && strcmp(fields[f].name, v->name) != 0)
            f++;
        if (f == n)
            return host->fail(host->ctx, GAN_ERR_FORMAT,
                              "scaler %s: the saved state has a value \"%s\" that version %lld "
                              "does not define", who, v->name, (long long)version);
        if (v->type != fields[f].type)
            return host->fail(host->ctx, GAN_ERR_FORMAT,
                              "scaler %s: the saved value \"%s\" is %s; version %lld stores it "
                              "as %s", who, v->name, type_word(v->type), (long long)version,
                              type_word(fields[f].type));
        for (size_t j = 0; j < k; j++)
            if (strcmp(st->values[j].name, v->name) == 0)
                return host->fail(host->ctx, GAN_ERR_FORMAT,
                                  "scaler %s: the saved state has value \"%s\" twice", who,
                                  v->name);
    }
    for (size_t f = 0; f < n; f++) {
        size_t k = 0;
        while (k < st->count && strcmp(st->values[k].name, fields[f].name) != 0)
            k++;
        if (k == st->count)
            return host->fail(host->ctx, GAN_ERR_FORMAT,
                              "scaler %s: the saved state lacks the value \"%s\" that version "
                              "%lld always has", who, fields[f].name, (long long)version);
    }
    return GAN_OK;
}

static const struct gan_scaler_value *find(const struct gan_scaler_state *st, const char *name)
{
    for (size_t k = 0; k < st->count; k++)
        if (strcmp(st->values[k].name, name) == 0)
            return &st->values[k];
    return NULL;
}

int64_t scaler_state_int(const struct gan_scaler_state *st, const char *name)
{
    const struct gan_scaler_value *v = find(st, name);
    return v ? v->i : 0;
}

double scaler_state_float(const struct gan_scaler_state *st, const char *name)
{
    const struct gan_scaler_value *v = find(st, name);
    return v ? v->f : 0;
}

gan_status scaler_state_counter(const struct gan_host *host, const char *who,
                                const struct gan_scaler_state *st, const char *name,
                                int64_t least, int64_t *out)
{
    int64_t v = scaler_state_int(st, name);
    if (v < least)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler %s: the saved value \"%s\" is %lld; it is never below %lld",
                          who, name, (long long)v, (long long)least);
    *out = v;
    return GAN_OK;
}

gan_status scaler_state_scale(const struct gan_host *host, const char *who,
                              const struct gan_scaler_state *st, const char *name, double *out)
{
    double v = scaler_state_float(st, name);
    if (!isfinite(v) || v < 0 || v > FLT_MAX || (double)(float)v != v)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "scaler %s: the saved value \"%s\" is %.17g, not a finite FP32 "
                          "number >= 0", who, name, v);
    *out = v;
    return GAN_OK;
}
