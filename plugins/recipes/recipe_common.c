/* SPDX-License-Identifier: MIT */
/* recipe_common.c — settings, operand and plan checks, the FP8 formats' limits and
 * exact power-of-two scales, shared by the shipped recipe modules (linked into each;
 * nothing is exported). */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "recipe_common.h"

/* ------------------------------------------------------------------ settings */

/* Every setting these recipes read declares a default, which the host gives for an
 * unset key (host.h); NOT_FOUND therefore means a host that breaks the contract, and
 * another failure a value of a type the host should have refused. */
static gan_status unread(const struct gan_host *host, const char *who, const char *key,
                         gan_status st, const char *what)
{
    if (st == GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "recipe %s: the host gave no value for the setting \"%s\", whose "
                          "default the recipe declares", who, key);
    return host->fail(host->ctx, st == GAN_ERR_CONFIG ? st : GAN_ERR_CONFIG,
                      "recipe %s: setting \"%s\" could not be read as %s", who, key, what);
}

gan_status recipe_get_int(const struct gan_host *host, const char *who, const char *key,
                          long long least, long long most, long long *value)
{
    long long v = 0;
    gan_status st = host->get_int(host->ctx, key, &v);
    if (st != GAN_OK)
        return unread(host, who, key, st, "an integer");
    if (v < least || v > most)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "recipe %s: %s = %lld is out of range: write an integer from %lld to %lld",
                          who, key, v, least, most);
    *value = v;
    return GAN_OK;
}

gan_status recipe_get_fraction(const struct gan_host *host, const char *who, const char *key,
                               double above, double below, double *value)
{
    double v = 0;
    gan_status st = host->get_float(host->ctx, key, &v);
    if (st != GAN_OK)
        return unread(host, who, key, st, "a number");
    /* Written as !(inside) so that NaN is outside too. */
    if (!(v > above && v < below))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "recipe %s: %s = %g is out of range: write a number above %g and below %g",
                          who, key, v, above, below);
    *value = v;
    return GAN_OK;
}

gan_status recipe_get_choice(const struct gan_host *host, const char *who, const char *key,
                             const char *const *choices, int *index)
{
    const char *v = NULL;
    gan_status st = host->get_string(host->ctx, key, &v);
    if (st != GAN_OK)
        return unread(host, who, key, st, "a string");
    for (int i = 0; v && choices[i]; i++)
        if (strcmp(v, choices[i]) == 0) {
            *index = i;
            return GAN_OK;
        }
    char list[160] = "";
    size_t used = 0;
    for (int i = 0; choices[i] && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s\"%s\"",
                                 i == 0 ? "" : choices[i + 1] ? ", " : " or ", choices[i]);
    return host->fail(host->ctx, GAN_ERR_CONFIG, "recipe %s: %s = \"%s\" is not one it knows: write %s",
                      who, key, v ? v : "", list);
}

/* ------------------------------------------------------------------ operands */

gan_status recipe_check_operand(const struct gan_host *host, const char *who,
                                const struct gan_recipe_operand *op, struct recipe_format *fmt,
                                int64_t *count)
{
    if (!op)
        return host->fail(host->ctx, GAN_ERR_INVALID, "recipe %s: no operand was given", who);
    size_t least = offsetof(struct gan_recipe_operand, step) + sizeof op->step;
    if (op->struct_size < least)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: the operand's struct_size is %zu, smaller than struct "
                          "gan_recipe_operand of ABI 1.6 (%zu): set it to sizeof the struct",
                          who, op->struct_size, least);
    if (!op->name || !*op->name)
        return host->fail(host->ctx, GAN_ERR_INVALID, "recipe %s: the operand has no name", who);
    if (op->format == GAN_F8E4M3)
        *fmt = (struct recipe_format){ "E4M3", 448.0, -9 };
    else if (op->format == GAN_F8E5M2)
        *fmt = (struct recipe_format){ "E5M2", 57344.0, -16 };
    else
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: operand %s is to be cast to element type %d, which is "
                          "not an FP8 format (GAN_F8E4M3 or GAN_F8E5M2)", who, op->name,
                          (int)op->format);
    const struct gan_fp8_layout *l = &op->layout;
    if (l->rows < 0 || l->cols < 0 || l->block < 0)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: operand %s has the layout %lld x %lld, block %lld: no "
                          "size may be negative", who, op->name, (long long)l->rows,
                          (long long)l->cols, (long long)l->block);
    if (l->block > 0 && l->along != GAN_FP8_ALONG_ROWS && l->along != GAN_FP8_ALONG_COLUMNS)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: operand %s has blocks along direction %d, which is "
                          "neither rows nor columns", who, op->name, (int)l->along);
    if (count)
        *count = gan_fp8_scale_count(l);
    return GAN_OK;
}

gan_status recipe_check_blocks(const struct gan_host *host, const char *who,
                               const struct gan_recipe_operand *op, int64_t block,
                               struct recipe_format *fmt, int64_t *count)
{
    gan_status st = recipe_check_operand(host, who, op, fmt, count);
    if (st == GAN_OK && op->layout.block != block)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: operand %s comes with blocks of %lld, but its plan chose "
                          "%lld", who, op->name, (long long)op->layout.block, (long long)block);
    return st;
}

gan_status recipe_fill_plan(const struct gan_host *host, const char *who,
                            struct gan_recipe_plan *plan, uint32_t want, int64_t block,
                            enum gan_recipe_scale_type type)
{
    size_t least = offsetof(struct gan_recipe_plan, scale_type) + sizeof plan->scale_type;
    if (!plan || plan->struct_size < least)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: the plan's struct_size is %zu, smaller than struct "
                          "gan_recipe_plan of ABI 1.6 (%zu): set it to sizeof the struct", who,
                          plan ? plan->struct_size : 0, least);
    plan->want = want;
    plan->block = block;
    plan->scale_type = type;
    return GAN_OK;
}

gan_status recipe_check_amax(const struct gan_host *host, const char *who, const char *what,
                             double amax)
{
    if (!(amax >= 0) || isinf(amax))
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "recipe %s: %s is %g; an amax is the largest finite magnitude, finite "
                          "and >= 0", who, what, amax);
    return GAN_OK;
}

/* ------------------------------------------------------------------ scales */

int recipe_headroom_exponent(double amax, double max)
{
    /* A first guess from the quotient, then exact comparisons (amax · 2^e is exact in
     * double for every e used here). For an FP32 amax the quotient's rounding error is
     * far smaller than its distance from the nearest power of two, so the guess stands;
     * the comparisons keep the result exact for any amax all the same. */
    int e;
    frexp(max / amax, &e);
    e -= 1;
    while (ldexp(amax, e + 1) <= max)
        e++;
    while (ldexp(amax, e) > max)
        e--;
    return e;
}

int recipe_clamp_exponent(int e)
{
    return e < RECIPE_EXPONENT_MIN ? RECIPE_EXPONENT_MIN
         : e > RECIPE_EXPONENT_MAX ? RECIPE_EXPONENT_MAX : e;
}

float recipe_pow2(int e)
{
    return ldexpf(1.0f, recipe_clamp_exponent(e));
}

void recipe_reason(char reason[96], const char *fmt, ...)
{
    if (!reason)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, 96, fmt, ap);
    va_end(ap);
}

float recipe_amax_scale(double amax, double max, int margin, char reason[96])
{
    if (amax == 0) {
        recipe_reason(reason, "amax 0 → 1");
        return 1.0f;
    }
    int wanted = recipe_headroom_exponent(amax, max) - margin;
    int e = recipe_clamp_exponent(wanted);
    const char *clamped = e != wanted ? " (clamped)" : "";
    if (margin)
        recipe_reason(reason, "amax %.3g, margin %d → 2^%d%s", amax, margin, e, clamped);
    else
        recipe_reason(reason, "amax %.3g → 2^%d%s", amax, e, clamped);
    return recipe_pow2(e);
}
