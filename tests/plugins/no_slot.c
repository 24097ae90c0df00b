/* SPDX-License-Identifier: MIT */
/* no_slot.c — backend-noslot.so: a backend whose ops table lacks the required gemm. */
#include "config.h"

#include "fake_backend.h"

static const struct gan_backend_ops noslot_ops =
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), fake_create, NULL, NULL);

static const struct gan_plugin noslot_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "noslot",
    .version = "1.0.0",
    .summary = "missing gemm",
    .ops = &noslot_ops,
};

GAN_DEFINE_PLUGIN(noslot_plugin)
