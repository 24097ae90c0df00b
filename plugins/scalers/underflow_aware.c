/* SPDX-License-Identifier: MIT */
/* underflow_aware.c — the scaler plugin "underflow-aware": the dynamic rule, plus an early
 * raise of the scale when the FP16 gradients underflow and there is headroom to raise it. */
#include "config.h"

#include <ganctl/ganctl.h>

#include "dynamic_rule.h"

static gan_status ua_create(const struct gan_host *host, gan_scaler **out)
{
    return dyn_create(host, "underflow-aware", 1, out);
}

static const struct gan_scaler_ops ua_ops = {
    .struct_size = sizeof(struct gan_scaler_ops),
    .create = ua_create,
    .destroy = dyn_destroy,
    .scale = dyn_scale,
    .update = dyn_update,
    .save_state = dyn_save_state,
    .load_state = dyn_load_state,
    .describe = dyn_describe,
};

/* underflow_threshold: a healthy critic flushes a tiny fraction of its gradient elements
 * (at most 0.05 % in the calibration runs), but exact zeros also come from ReLU units
 * inactive for a whole batch, which the scale cannot change and which are commonly a
 * tenth to a third of a ReLU MLP's weight-gradient elements; a collapsed critic shows
 * 92–97 %. One half sits between: structural zeros alone do not trigger it, a collapse
 * does at its first update. headroom 16: after a raise the largest FP16 gradient is at
 * most 65504 / 16 ≈ 4094, four binades of margin for the growth of gradients between
 * updates and for intermediate values of the backward that the statistics do not see. */
static const struct gan_setting_spec ua_settings[] = {
    DYN_SETTINGS("\"hold\""),
    { "norm_threshold", GAN_SETTING_FLOAT, "1e-06",
      "raise while the unscaled FP16 gradient norm is below this (0: off)" },
    { "underflow_threshold", GAN_SETTING_FLOAT, "0.5",
      "raise while more than this fraction of FP16 gradient elements is zero or subnormal" },
    { "headroom", GAN_SETTING_FLOAT, "16.0",
      "raise only if absmax x new scale x headroom < 65504" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin ua_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "underflow-aware",
    .version = PACKAGE_VERSION,
    .summary = "dynamic loss scaling that also raises the scale when FP16 gradients underflow",
    .ops = &ua_ops,
    .settings = ua_settings,
};

GAN_DEFINE_PLUGIN(ua_descriptor)
