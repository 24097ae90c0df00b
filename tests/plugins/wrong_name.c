/* SPDX-License-Identifier: MIT */
/* wrong_name.c — backend-wrongname.so: a backend whose descriptor gives another name
 * than its file. */
#include "config.h"

#include "fake_backend.h"

static const struct gan_backend_ops wrongname_ops = 
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), fake_create, fake_gemm, NULL);

static const struct gan_plugin wrongname_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "other",
    .version = "1.0.0",
    .summary = "named other in a file named wrongname",
    .ops = &wrongname_ops,
};

GAN_DEFINE_PLUGIN(wrongname_plugin)
