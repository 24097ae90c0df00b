/* SPDX-License-Identifier: MIT */
/* fuzz_nets.h — two tiny networks with their optimizers on the real CPU backend, for
 * the checkpoint harness and for make-corpus, which writes its seeds from the same
 * networks so that they fit them. */
#ifndef GANCTL_TEST_FUZZ_NETS_H
#define GANCTL_TEST_FUZZ_NETS_H

#include "base/log.h"
#include "config/configuration.h"
#include "nn/net.h"
#include "nn/optimizer.h"
#include "plugin/plugin_loader.h"
#include "train/state/checkpoint.h"

struct fuzz_nets {
    gan_config *cfg;
    gan_loader *loader;
    struct gan_module *module;
    struct gan_backend_instance *backend;
    gan_ctx *ctx;
    struct gan_log log;
    gan_net *net[2];              /* "generator" 2 → 4 → 2, "critic" 2 → 3 → 1 */
    gan_optimizer *opt[2];
    struct gan_checkpoint_scaling scaling;   /* the critic's: it has a loss scaler */
    struct gan_checkpoint_net cn[2];         /* both, as gan_checkpoint_load takes them */
};

/* Loads backend-cpu.so (from the build tree, then $GANCTL_PLUGIN_PATH), makes a context
 * and both networks, initialised from seed 1. Aborts with the reason on failure. */
void fuzz_nets_open(struct fuzz_nets *n);
void fuzz_nets_close(struct fuzz_nets *n);

#endif
