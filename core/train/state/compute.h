/* SPDX-License-Identifier: MIT */
/* compute.h — what every command that computes starts with: the plugins a configuration
 * names, opened with their settings checked, and a backend instance with a context on it. */
#ifndef GANCTL_TRAIN_COMPUTE_H
#define GANCTL_TRAIN_COMPUTE_H

#include <ganctl/ganctl.h>

#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"
#include "plugin/plugin_loader.h"

/* Opens the plugin `name` of `kind` through `loader` and checks the settings of
 * `group` ("backend", "critic.model", "loss.gradient-penalty") against what it
 * declares, adding its defaults to `cfg`. */
gan_status gan_open_configured(const gan_loader *loader, gan_config *cfg,
                               enum gan_plugin_kind kind, const char *name, const char *group,
                               struct gan_module **out, struct gan_error *err);

/* The backend that backend.name names, opened as above. */
gan_status gan_open_backend(const gan_loader *loader, gan_config *cfg, struct gan_module **out,
                            struct gan_error *err);

/* An instance of the backend `module` with the settings of `cfg`, and a compute context
 * on it whose kernel failures end with the backend's own message. `module`, `cfg` and
 * `log` must outlive both; free the context before the instance. */
gan_status gan_compute_new(struct gan_module *module, const gan_config *cfg,
                           const struct gan_log *log, struct gan_backend_instance **backend,
                           gan_ctx **ctx, struct gan_error *err);

#endif
