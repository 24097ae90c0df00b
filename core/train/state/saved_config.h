/* SPDX-License-Identifier: MIT */
/* saved_config.h — a checkpoint's saved configuration, opened for a command that computes
 * with it (ganctl grads, sample, eval, export): the run's settings, with only the ones
 * that choose where it runs (--backend, backend.*, log.level) open to the command line. */
#ifndef GANCTL_CORE_SAVED_CONFIG_H
#define GANCTL_CORE_SAVED_CONFIG_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "config/configuration.h"

/* One change from the command line, in its order there. */
struct gan_saved_setting {
    const char *assignment;       /* "backend.threads=1", or NULL */
    const char *backend;          /* the NAME of --backend NAME, or NULL */
};

/* Reads the configuration saved in `checkpoint` into a new *cfg and applies `settings`.
 * A setting other than backend.* or log.level is refused with GAN_ERR_CONFIG, the line
 * ending in `why_fixed` (what the command does with the checkpoint's configuration, e.g.
 * "ganctl grads computes with the checkpoint's configuration"). *cfg, once made, and
 * *text (the saved text, when `text` is not NULL) are the caller's to free, on failure
 * too. */
gan_status gan_saved_config_open(const char *checkpoint, const struct gan_saved_setting *settings,
                                 size_t count, const char *why_fixed, gan_config **cfg,
                                 char **text, struct gan_error *err);

#endif
