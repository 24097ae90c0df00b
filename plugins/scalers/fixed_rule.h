/* SPDX-License-Identifier: MIT */
/* fixed_rule.h — the rule of the "none" and "static" scalers: one scale that never
 * changes; a step with a non-finite loss or gradient is skipped. */
#ifndef GANCTL_PLUGINS_FIXED_RULE_H
#define GANCTL_PLUGINS_FIXED_RULE_H

#include <ganctl/ganctl.h>

/* `scale` has been checked (scaler_check_scale); `name` is the descriptor's. */
gan_status fixed_create(const struct gan_host *host, const char *name, double scale,
                        gan_scaler **out);
void fixed_destroy(gan_scaler *sc);
double fixed_scale(gan_scaler *sc);
gan_status fixed_update(gan_scaler *sc, const struct gan_scaler_input *in,
                        struct gan_scaler_decision *out);
gan_status fixed_save_state(gan_scaler *sc, struct gan_scaler_state *out);
gan_status fixed_load_state(gan_scaler *sc, const struct gan_scaler_state *in);
const char *fixed_describe(gan_scaler *sc);

#endif
