/* SPDX-License-Identifier: MIT */
/* host.h — the services the core gives each plugin instance (struct gan_host): its log
 * lines, its error messages, counted memory, and its settings from the configuration. */
#ifndef GANCTL_CORE_HOST_H
#define GANCTL_CORE_HOST_H

#include <stddef.h>
#include <ganctl/ganctl.h>
#include "config/configuration.h"
#include "base/error.h"
#include "base/log.h"

struct gan_plugin_host {
    struct gan_host host;                    /* what the plugin receives; host.ctx is this */
    char label[160];                         /* "backend cpu": prefixes its log lines */
    char group[160];                         /* its configuration group, e.g. "backend",
                                                "critic.model", "loss.gradient-penalty" */
    const struct gan_setting_spec *settings; /* what it declared; other keys are NOT_FOUND */
    const gan_config *config;                /* borrowed; may be NULL (no values at all) */
    const struct gan_log *log;               /* borrowed; may be NULL (silent) */
    struct gan_error error;                  /* what its last fail() said */
    size_t live_bytes, peak_bytes, live_blocks;
};

/* Fills `h`. `config` should have been through gan_config_apply_plugin for this
 * plugin's spec and `group`, so that every declared key has a value. config and log
 * must outlive every instance created with &h->host. */
void gan_plugin_host_init(struct gan_plugin_host *h, const char *label, const char *group,
                          const struct gan_setting_spec *settings, const gan_config *config,
                          const struct gan_log *log);

#endif
