/* SPDX-License-Identifier: MIT */
/* none.c — the recipe plugin "none": scale 1 for every block, i.e. a plain cast to FP8,
 * which overflows beyond the format's largest value and flushes below its smallest
 * subnormal. The baseline the other recipes are measured against. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <ganctl/ganctl.h>

#include "recipe_common.h"

struct gan_recipe {
    const struct gan_host *host;
};

static gan_status none_create(const struct gan_host *host, gan_recipe **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory");
    (*out)->host = host;
    return GAN_OK;
}

static void none_destroy(gan_recipe *rc)
{
    free(rc);
}

/* Nothing to measure; 1 is a power of two, so the cast back is exact. */
static gan_status none_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                            struct gan_recipe_plan *plan)
{
    struct recipe_format fmt;
    gan_status st = recipe_check_operand(rc->host, "none", op, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    return recipe_fill_plan(rc->host, "none", plan, 0, 0, GAN_RECIPE_SCALE_E8M0);
}

/* Whatever blocks the operand comes with, each gets 1. */
static gan_status none_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                              const struct gan_fp8_stats *stats, const float *block_amax,
                              float *scales, char reason[96])
{
    (void)stats;
    (void)block_amax;
    struct recipe_format fmt;
    int64_t count;
    gan_status st = recipe_check_operand(rc->host, "none", op, &fmt, &count);
    if (st != GAN_OK)
        return st;
    for (int64_t i = 0; i < count; i++)
        scales[i] = 1.0f;
    recipe_reason(reason, "no scaling → 1");
    return GAN_OK;
}

static const char *none_describe(gan_recipe *rc)
{
    (void)rc;
    return "none: every scale 1 (a plain cast)";
}

static const struct gan_recipe_ops none_ops = {
    .struct_size = sizeof(struct gan_recipe_ops),
    .create = none_create,
    .destroy = none_destroy,
    .plan = none_plan,
    .scales = none_scales,
    .describe = none_describe,
};

static const struct gan_plugin none_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = "none",
    .version = PACKAGE_VERSION,
    .summary = "no FP8 scaling: every scale 1",
    .ops = &none_ops,
    .settings = NULL,
};

GAN_DEFINE_PLUGIN(none_descriptor)
