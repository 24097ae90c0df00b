/* SPDX-License-Identifier: MIT */
/* static.c — the scaler plugin "static": one fixed scale (default 1024); a step whose loss
 * or gradients are not finite is skipped. With the optimizer's clip_norm, the "large fixed
 * scale + gradient clipping" cure. */
#include "config.h"

#include <ganctl/ganctl.h>

#include "fixed_rule.h"
#include "scaler_common.h"

static gan_status static_create(const struct gan_host *host, gan_scaler **out)
{
    *out = NULL;
    double scale;
    gan_status st = scaler_get_float(host, "static", "scale", &scale);
    if (st == GAN_OK)
        st = scaler_check_scale(host, "static", "scale", &scale, 1);
    if (st != GAN_OK)
        return st;
    return fixed_create(host, "static", scale, out);
}

static const struct gan_scaler_ops static_ops = {
    .struct_size = sizeof(struct gan_scaler_ops),
    .create = static_create,
    .destroy = fixed_destroy,
    .scale = fixed_scale,
    .update = fixed_update,
    .save_state = fixed_save_state,
    .load_state = fixed_load_state,
    .describe = fixed_describe,
};

static const struct gan_setting_spec static_settings[] = {
    { "scale", GAN_SETTING_FLOAT, "1024.0", "the loss scale, fixed (> 0, an FP32 number)" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin static_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "static",
    .version = PACKAGE_VERSION,
    .summary = "a fixed loss scale (default 1024); skips steps with inf or NaN",
    .ops = &static_ops,
    .settings = static_settings,
};

GAN_DEFINE_PLUGIN(static_descriptor)
