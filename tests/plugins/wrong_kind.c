/* SPDX-License-Identifier: MIT */
/* wrong_kind.c — backend-wrongkind.so: a file named as a backend whose descriptor
 * says it is a scaler. */
#include "config.h"

#include <stddef.h>
#include <ganctl/ganctl.h>

static const struct gan_plugin wrongkind_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_SCALER,
    .name = "wrongkind",
    .version = "1.0.0",
    .summary = "a scaler in a backend's file",
    .ops = NULL,
};

GAN_DEFINE_PLUGIN(wrongkind_plugin)
