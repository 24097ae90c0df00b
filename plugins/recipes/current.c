/* SPDX-License-Identifier: MIT */
/* current.c — the recipe plugin "current": per-tensor current scaling. Each operand is
 * measured just before its cast and scaled by the largest power of two that keeps its
 * amax within the format (less `margin` binades), so that nothing can overflow. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <ganctl/ganctl.h>

#include "recipe_common.h"

struct gan_recipe {
    const struct gan_host *host;
    int margin;
    char line[96];
};

static gan_status current_create(const struct gan_host *host, gan_recipe **out)
{
    *out = NULL;
    long long margin;
    gan_status st = recipe_get_int(host, "current", "margin", 0, 127, &margin);
    if (st != GAN_OK)
        return st;
    gan_recipe *rc = calloc(1, sizeof *rc);
    if (!rc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory");
    rc->host = host;
    rc->margin = (int)margin;
    *out = rc;
    return GAN_OK;
}

static void current_destroy(gan_recipe *rc)
{
    free(rc);
}

static gan_status current_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                               struct gan_recipe_plan *plan)
{
    struct recipe_format fmt;
    gan_status st = recipe_check_operand(rc->host, "current", op, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    return recipe_fill_plan(rc->host, "current", plan, GAN_RECIPE_WANT_AMAX, 0,
                            GAN_RECIPE_SCALE_E8M0);
}

static gan_status current_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                                 const struct gan_fp8_stats *stats, const float *block_amax,
                                 float *scales, char reason[96])
{
    (void)block_amax;
    struct recipe_format fmt;
    gan_status st = recipe_check_blocks(rc->host, "current", op, 0, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    if (!stats)
        return rc->host->fail(rc->host->ctx, GAN_ERR_INVALID,
                              "operand %s came without the statistics its plan "
                              "wanted", op->name);
    if ((st = recipe_check_amax(rc->host, "current", "the operand's amax", stats->amax)) != GAN_OK)
        return st;
    /* No finite non-zero value: nothing to fit, and a scale of 1 changes nothing. */
    if (stats->amax == 0) {
        scales[0] = 1.0f;
        recipe_reason(reason, "%s → 1",
                      stats->nonfinite > 0 && stats->zeros + stats->nonfinite == stats->elements
                          ? "no finite non-zero value" : "all zeros");
        return GAN_OK;
    }
    scales[0] = recipe_amax_scale(stats->amax, fmt.max, rc->margin, reason);
    return GAN_OK;
}

static const char *current_describe(gan_recipe *rc)
{
    snprintf(rc->line, sizeof rc->line,
             "current: per tensor, 2^floor(log2(max / amax)) of each operand, margin %d",
             rc->margin);
    return rc->line;
}

static const struct gan_recipe_ops current_ops = {
    .struct_size = sizeof(struct gan_recipe_ops),
    .create = current_create,
    .destroy = current_destroy,
    .plan = current_plan,
    .scales = current_scales,
    .describe = current_describe,
};

static const struct gan_setting_spec current_settings[] = {
    { "margin", GAN_SETTING_INT, "0",
      "binades kept free above each operand's amax (0 to 127): the scale is divided by 2^margin" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin current_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = "current",
    .version = PACKAGE_VERSION,
    .summary = "per-tensor current scaling: each operand's amax measured before its cast",
    .ops = &current_ops,
    .settings = current_settings,
};

GAN_DEFINE_PLUGIN(current_descriptor)
