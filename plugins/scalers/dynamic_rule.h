/* SPDX-License-Identifier: MIT */
/* dynamic_rule.h — the overflow rule shared by the "dynamic" and "underflow-aware"
 * scalers (growth, backoff, hysteresis, floor, presets), and the underflow raise. */
#ifndef GANCTL_PLUGINS_DYNAMIC_RULE_H
#define GANCTL_PLUGINS_DYNAMIC_RULE_H

#include <ganctl/ganctl.h>

/* The settings both scalers read; forward_default is the forward_overflow default
 * (a quoted string, as in a config file). Their defaults come from the preset, so only
 * preset and forward_overflow declare one; ganctl-scaler(7) has the table. */
#define DYN_SETTINGS(forward_default) \
    { "preset", GAN_SETTING_STRING, "\"none\"", \
      "defaults for the settings below: \"none\" (ganctl's), \"pytorch\", \"mindspore\" or \"deepspeed\"" }, \
    { "init", GAN_SETTING_FLOAT, NULL, \
      "the first scale (preset: 65536; mindspore 16777216)" }, \
    { "growth_factor", GAN_SETTING_FLOAT, NULL, \
      "multiplies the scale after growth_interval clean updates in a row (preset: 2)" }, \
    { "backoff_factor", GAN_SETTING_FLOAT, NULL, \
      "multiplies the scale on an overflow (preset: 0.5)" }, \
    { "growth_interval", GAN_SETTING_INT, NULL, \
      "clean updates in a row before a growth (preset: 2000; deepspeed 1000)" }, \
    { "hysteresis", GAN_SETTING_INT, NULL, \
      "overflows absorbed before backing off, refilled at a growth (preset: 1; deepspeed 2)" }, \
    { "hysteresis_consecutive", GAN_SETTING_BOOL, NULL, \
      "refill hysteresis after every clean update instead (preset: false)" }, \
    { "min", GAN_SETTING_FLOAT, NULL, \
      "a backoff never takes the scale below this (preset: 1; pytorch 0)" }, \
    { "max", GAN_SETTING_FLOAT, NULL, \
      "a growth never takes the scale above this (preset: 16777216; others FP32's largest)" }, \
    { "fail_at_min", GAN_SETTING_BOOL, NULL, \
      "stop training on an overflow that would back off below min (preset: false; deepspeed true)" }, \
    { "forward_overflow", GAN_SETTING_STRING, forward_default, \
      "on a non-finite loss: \"backoff\" as for a gradient overflow, or \"hold\" the scale" }

/* Creates either scaler: `name` is the descriptor's, underflow_aware selects the
 * extra settings and the raise. */
gan_status dyn_create(const struct gan_host *host, const char *name, int underflow_aware,
                      gan_scaler **out);
void dyn_destroy(gan_scaler *sc);
double dyn_scale(gan_scaler *sc);
gan_status dyn_update(gan_scaler *sc, const struct gan_scaler_input *in,
                      struct gan_scaler_decision *out);
gan_status dyn_save_state(gan_scaler *sc, struct gan_scaler_state *out);
gan_status dyn_load_state(gan_scaler *sc, const struct gan_scaler_state *in);
const char *dyn_describe(gan_scaler *sc);

#endif
