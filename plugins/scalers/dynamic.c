/* SPDX-License-Identifier: MIT */
/* dynamic.c — the scaler plugin "dynamic": the overflow-only rule of PyTorch's GradScaler,
 * MindSpore, DeepSpeed (presets) or ganctl's own defaults; it cannot see underflow. */
#include "config.h"

#include <ganctl/ganctl.h>

#include "dynamic_rule.h"

static gan_status dynamic_create(const struct gan_host *host, gan_scaler **out)
{
    return dyn_create(host, "dynamic", 0, out);
}

static const struct gan_scaler_ops dynamic_ops = {
    .struct_size = sizeof(struct gan_scaler_ops),
    .create = dynamic_create,
    .destroy = dyn_destroy,
    .scale = dyn_scale,
    .update = dyn_update,
    .save_state = dyn_save_state,
    .load_state = dyn_load_state,
    .describe = dyn_describe,
};

/* Libraries cannot tell a forward overflow from a gradient one, so by default neither
 * does this scaler: both back off. */
static const struct gan_setting_spec dynamic_settings[] = {
    DYN_SETTINGS("\"backoff\""),
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin dynamic_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "dynamic",
    .version = PACKAGE_VERSION,
    .summary = "overflow-only dynamic loss scaling (presets: pytorch, mindspore, deepspeed)",
    .ops = &dynamic_ops,
    .settings = dynamic_settings,
};

GAN_DEFINE_PLUGIN(dynamic_descriptor)
