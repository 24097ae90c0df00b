/* SPDX-License-Identifier: MIT */
/* recipe_test.c — test recipes for the loader: recipe-unit.so is whole (scale 1, a state
 * of one array) and declares a table that ends before describe; recipe-noplan.so (built
 * with NO_PLAN) lacks the required plan; recipe-stateless.so (NO_STATE) has neither
 * save_state nor load_state; recipe-halfstate.so (NO_LOAD) has save_state without
 * load_state; and recipe-name-of-exactly-thirty-two-bytes.so has a name one byte
 * longer than a checkpoint keeps. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include <ganctl/ganctl.h>

/* One instance holds nothing: every create gives the same token. */
static int token;

static gan_status t_create(const struct gan_host *host, gan_recipe **out)
{
    (void)host;
    *out = (gan_recipe *)(void *)&token;
    return GAN_OK;
}

#ifndef NO_PLAN
static gan_status t_plan(gan_recipe *rc, const struct gan_recipe_operand *op,
                         struct gan_recipe_plan *plan)
{
    (void)rc;
    (void)op;
    plan->want = 0;
    plan->block = 0;
    plan->scale_type = GAN_RECIPE_SCALE_E8M0;
    return GAN_OK;
}
#endif

static gan_status t_scales(gan_recipe *rc, const struct gan_recipe_operand *op,
                           const struct gan_fp8_stats *stats, const float *block_amax,
                           float *scales, char reason[96])
{
    (void)rc;
    (void)op;
    (void)stats;
    (void)block_amax;
    scales[0] = 1.0f;
    strcpy(reason, "always 1");
    return GAN_OK;
}

#ifndef NO_STATE
/* The state is one array "calls" = { 7 }, so that a test can tell it passed through. */
static gan_status t_save(gan_recipe *rc, gan_recipe_put_fn *put, void *arg)
{
    (void)rc;
    static const double seven = 7;
    return put(arg, "calls", &seven, 1);
}

#ifndef NO_LOAD
static gan_status t_load(gan_recipe *rc, const struct gan_recipe_array *arrays, size_t count)
{
    (void)rc;
    return count == 1 && strcmp(arrays[0].name, "calls") == 0 && arrays[0].count == 1
               ? GAN_OK : GAN_ERR_FORMAT;
}
#endif
#endif

/* Set, but outside the declared size of the table: the host must not read it. */
static const char *t_describe(gan_recipe *rc)
{
    (void)rc;
    return "beyond the table";
}

static const struct gan_recipe_ops t_ops = {
    .struct_size = offsetof(struct gan_recipe_ops, describe),
    .create = t_create,
#ifndef NO_PLAN
    .plan = t_plan,
#endif
    .scales = t_scales,
#ifndef NO_STATE
    .save_state = t_save,
#ifndef NO_LOAD
    .load_state = t_load,
#endif
#endif
    .describe = t_describe,
};

/* One setting, so that the listing shows where a recipe's settings go. */
static const struct gan_setting_spec t_settings[] = {
    { "factor", GAN_SETTING_INT, "2", "read by nothing" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin t_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_RECIPE,
    .name = RECIPE_NAME,
    .version = "1.0.0",
    .summary = "a recipe for the loader's tests",
    .ops = &t_ops,
    .settings = t_settings,
};

GAN_DEFINE_PLUGIN(t_plugin)
