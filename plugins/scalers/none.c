/* SPDX-License-Identifier: MIT */
/* none.c — the scaler plugin "none": scale 1, i.e. no loss scaling; a step whose loss or
 * gradients are not finite is skipped. The choice for FP32 and BF16 training. */
#include "config.h"

#include <ganctl/ganctl.h>

#include "fixed_rule.h"

static gan_status none_create(const struct gan_host *host, gan_scaler **out)
{
    return fixed_create(host, "none", 1.0, out);
}

static const struct gan_scaler_ops none_ops = {
    .struct_size = sizeof(struct gan_scaler_ops),
    .create = none_create,
    .destroy = fixed_destroy,
    .scale = fixed_scale,
    .update = fixed_update,
    .save_state = fixed_save_state,
    .load_state = fixed_load_state,
    .describe = fixed_describe,
};

static const struct gan_plugin none_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "none",
    .version = PACKAGE_VERSION,
    .summary = "no loss scaling (scale 1); skips steps with inf or NaN",
    .ops = &none_ops,
    .settings = NULL,
};

GAN_DEFINE_PLUGIN(none_descriptor)
