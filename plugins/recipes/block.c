/* SPDX-License-Identifier: MIT */
/* block.c — the recipe plugin "block": one scale per `size` consecutive elements along
 * the product's reduction dimension, from each block's own amax. With power-of-two
 * (E8M0) scales and blocks of 32 it is the OCP Microscaling format MXFP8; with FP32
 * scales and blocks of 128 it is DeepSeek-V3's blockwise recipe. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <ganctl/ganctl.h>

#include "recipe_common.h"

struct gan_recipe {
    const struct gan_host *host;
    int64_t size;
    enum gan_recipe_scale_type type;
    char line[96];
};

static const char *const scale_words[] = { "e8m0", "fp32", NULL };

static gan_status block_create(const struct gan_host *host, gan_recipe **out)
{
    *out = NULL;
    long long size;
    int type;
    gan_status st = recipe_get_int(host, "block", "size", 1, INT32_MAX, &size);
    if (st == GAN_OK)
        st = recipe_get_choice(host, "block", "scale", scale_words, &type);
    if (st != GAN_OK)
        return st;
    gan_recipe *rc = calloc(1, sizeof *rc);
    if (!rc)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "out of memory");
    rc->host = host;
    rc->size = size;
    rc->type = type == 0 ? GAN_RECIPE_SCALE_E8M0 : GAN_RECIPE_SCALE_F32;
    *out = rc;
    return GAN_OK;
}

static void block_destroy(gan_recipe *rc)
{
    free(rc);
}

static gan_status block_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                             struct gan_recipe_plan *plan)
{
    struct recipe_format fmt;
    gan_status st = recipe_check_operand(rc->host, "block", op, &fmt, NULL);
    if (st != GAN_OK)
        return st;
    return recipe_fill_plan(rc->host, "block", plan, GAN_RECIPE_WANT_BLOCK_AMAX, rc->size,
                            rc->type);
}

/* One block's scale; 1 for a block without a finite non-zero value. FP32 scales are
 * max / amax rounded once to FP32, as DeepSeek-V3 computes them, kept within the
 * exponent range of the power-of-two ones so that a tiny amax gives no infinite scale. */
static float block_scale(const gan_recipe *rc, double max, float amax)
{
    if (amax == 0)
        return 1.0f;
    if (rc->type == GAN_RECIPE_SCALE_E8M0)
        return recipe_pow2(recipe_headroom_exponent(amax, max));
    float s = (float)max / amax;
    float highest = recipe_pow2(RECIPE_EXPONENT_MAX);
    return s > highest ? highest : s;
}

static gan_status block_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                               const struct gan_fp8_stats *stats, const float *block_amax,
                               float *scales, char reason[96])
{
    (void)stats;
    struct recipe_format fmt;
    int64_t count;
    gan_status st = recipe_check_blocks(rc->host, "block", op, rc->size, &fmt, &count);
    if (st != GAN_OK)
        return st;
    if (count > 0 && !block_amax)
        return rc->host->fail(rc->host->ctx, GAN_ERR_INVALID,
                              "operand %s came without the block amax its plan "
                              "wanted", op->name);
    /* Every amax is checked before any scale is written. */
    for (int64_t i = 0; i < count; i++) {
        char what[64];
        snprintf(what, sizeof what, "the amax of block %lld", (long long)i);
        if ((st = recipe_check_amax(rc->host, "block", what, block_amax[i])) != GAN_OK)
            return st;
    }
    /* The reason gives the spread over the blocks that hold a value. */
    float lo_amax = INFINITY, hi_amax = 0, lo_scale = INFINITY, hi_scale = 0;
    int64_t zero_blocks = 0;
    for (int64_t i = 0; i < count; i++) {
        float a = block_amax[i];
        scales[i] = block_scale(rc, fmt.max, a);
        if (a == 0) {
            zero_blocks++;
            continue;
        }
        lo_amax = fminf(lo_amax, a);
        hi_amax = fmaxf(hi_amax, a);
        lo_scale = fminf(lo_scale, scales[i]);
        hi_scale = fmaxf(hi_scale, scales[i]);
    }
    if (zero_blocks == count) {
        lo_amax = hi_amax = 0;
        lo_scale = hi_scale = 1;
    }
    recipe_reason(reason, "%lld blocks of %lld, %lld without a value: amax %.3g…%.3g → "
                  "%.3g…%.3g", (long long)count, (long long)rc->size, (long long)zero_blocks,
                  lo_amax, hi_amax, lo_scale, hi_scale);
    return GAN_OK;
}

static const char *block_describe(gan_recipe *rc)
{
    snprintf(rc->line, sizeof rc->line, "block: blocks of %lld along k, %s scales",
             (long long)rc->size, rc->type == GAN_RECIPE_SCALE_E8M0 ? "E8M0" : "FP32");
    return rc->line;
}

static const struct gan_recipe_ops block_ops = {
    .struct_size = sizeof(struct gan_recipe_ops),
    .create = block_create,
    .destroy = block_destroy,
    .plan = block_plan,
    .scales = block_scales,
    .describe = block_describe,
};

static const struct gan_setting_spec block_settings[] = {
    { "size", GAN_SETTING_INT, "32", "elements of a block along the reduction dimension k (>= 1)" },
    { "scale", GAN_SETTING_STRING, "\"e8m0\"",
      "\"e8m0\": power-of-two scales (MXFP8 with size 32); \"fp32\": max / amax of each block" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin block_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = "block",
    .version = PACKAGE_VERSION,
    .summary = "a scale per block along k: MXFP8 (32, E8M0), DeepSeek-V3 (128, FP32)",
    .ops = &block_ops,
    .settings = block_settings,
};

GAN_DEFINE_PLUGIN(block_descriptor)
