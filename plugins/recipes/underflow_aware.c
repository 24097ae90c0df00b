/* SPDX-License-Identifier: MIT */
/* underflow_aware.c — the recipe plugin "underflow-aware": per-tensor power-of-two
 * scaling from each operand's magnitude histogram. It raises the scale only as far as
 * it takes to keep all but a `target` fraction of the non-zero values from falling
 * wholly below the format's smallest subnormal, which leaves the most room above the
 * amax; when even the largest scale that does not overflow cannot meet the target, it
 * takes that scale and says how much still falls below. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <ganctl/ganctl.h>

#include "recipe_common.h"

struct gan_recipe {
    const struct gan_host *host;
    double target;
    char line[96];
};

static gan_status ua_create(const struct gan_host *host, gan_recipe **out)
{
    *out = NULL;
    double target;
    gan_status st = recipe_get_fraction(host, "underflow-aware", "target", 0, 1, &target);
    if (st != GAN_OK)
        return st;
    gan_recipe *rc = calloc(1, sizeof *rc);
    if (!rc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory");
    rc->host = host;
    rc->target = target;
    *out = rc;
    return GAN_OK;
}

static void ua_destroy(gan_recipe *rc)
{
    free(rc);
}

static gan_status ua_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                          struct gan_recipe_plan *plan)
{
    struct recipe_format fmt;
    gan_status st = recipe_check_operand(rc->host, "underflow-aware", op, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    return recipe_fill_plan(rc->host, "underflow-aware", plan,
                            GAN_RECIPE_WANT_AMAX | GAN_RECIPE_WANT_HISTOGRAM, 0,
                            GAN_RECIPE_SCALE_E8M0);
}

/* The values of the bins up to and including exponent `last`, of the histogram. */
static uint64_t count_up_to(const struct gan_fp8_stats *stats, int last)
{
    uint64_t n = 0;
    for (int b = GAN_FP8_LOG2_MIN; b <= last && b < GAN_FP8_LOG2_MIN + GAN_FP8_LOG2_BINS; b++)
        n += stats->log2_hist[b - GAN_FP8_LOG2_MIN];
    return n;
}

/* Bin b holds the values in [2^b, 2^(b+1)); scaled by 2^e it lies wholly below the
 * smallest subnormal 2^u when b + e + 1 <= u, so the values lost at e are those of the
 * bins up to u − e − 1. That count only falls as e grows. The smallest e that loses at
 * most target · nonzero is therefore u − b1, with b1 the first bin at which the running
 * count exceeds target · nonzero. */
static int underflow_exponent(const struct gan_fp8_stats *stats, uint64_t nonzero,
                              double target, int log2_subnormal)
{
    double allowed = target * (double)nonzero;
    uint64_t running = 0;
    int b = GAN_FP8_LOG2_MIN;
    for (; b < GAN_FP8_LOG2_MIN + GAN_FP8_LOG2_BINS; b++) {
        running += stats->log2_hist[b - GAN_FP8_LOG2_MIN];
        if ((double)running > allowed)
            break;
    }
    return log2_subnormal - b;
}

static gan_status ua_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                            const struct gan_fp8_stats *stats, const float *block_amax,
                            float *scales, char reason[96])
{
    (void)block_amax;
    const char *who = "underflow-aware";
    struct recipe_format fmt;
    gan_status st = recipe_check_blocks(rc->host, who, op, 0, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    if (!stats)
        return rc->host->fail(rc->host->ctx, GAN_ERR_INVALID,
                              "recipe %s: operand %s came without the statistics its plan "
                              "wanted", who, op->name);
    if ((st = recipe_check_amax(rc->host, who, "the operand's amax", stats->amax)) != GAN_OK)
        return st;
    uint64_t nonzero = count_up_to(stats, GAN_FP8_LOG2_MIN + GAN_FP8_LOG2_BINS - 1);
    if ((nonzero == 0) != (stats->amax == 0))
        return rc->host->fail(rc->host->ctx, GAN_ERR_INVALID,
                              "recipe %s: operand %s has amax %g but %llu values in its "
                              "histogram: the histogram was not measured", who, op->name,
                              (double)stats->amax, (unsigned long long)nonzero);
    if (nonzero == 0) {
        scales[0] = 1.0f;
        recipe_reason(reason, "no finite non-zero value → 1");
        return GAN_OK;
    }
    int e_over = recipe_headroom_exponent(stats->amax, fmt.max);
    int e_under = underflow_exponent(stats, nonzero, rc->target, fmt.log2_subnormal);
    int e = e_under <= e_over ? e_under : e_over;
    int used = recipe_clamp_exponent(e);
    scales[0] = recipe_pow2(used);
    const char *clamped = used != e ? " (clamped)" : "";
    if (e_under <= e_over) {
        recipe_reason(reason, "underflow target bound: amax %.3g → 2^%d%s, %d binades of "
                      "headroom", (double)stats->amax, used, clamped, e_over - e_under);
    } else {
        /* What still lies wholly below the smallest subnormal at the scale used. */
        uint64_t lost = count_up_to(stats, fmt.log2_subnormal - used - 1);
        recipe_reason(reason, "overflow bound: %.3g%% of the non-zero values still below the "
                      "subnormal limit at 2^%d%s", 100.0 * (double)lost / (double)nonzero, used,
                      clamped);
    }
    return GAN_OK;
}

static const char *ua_describe(gan_recipe *rc)
{
    snprintf(rc->line, sizeof rc->line,
             "underflow-aware: per tensor, at most %.3g of the non-zero values below the "
             "subnormals", rc->target);
    return rc->line;
}

static const struct gan_recipe_ops ua_ops = {
    .struct_size = sizeof(struct gan_recipe_ops),
    .create = ua_create,
    .destroy = ua_destroy,
    .plan = ua_plan,
    .scales = ua_scales,
    .describe = ua_describe,
};

static const struct gan_setting_spec ua_settings[] = {
    { "target", GAN_SETTING_FLOAT, "0.001",
      "the fraction of non-zero values allowed below the smallest subnormal, in (0, 1)" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin ua_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = "underflow-aware",
    .version = PACKAGE_VERSION,
    .summary = "per-tensor power-of-two scale meeting an underflow target from the histogram",
    .ops = &ua_ops,
    .settings = ua_settings,
};

GAN_DEFINE_PLUGIN(ua_descriptor)
