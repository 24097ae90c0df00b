/* SPDX-License-Identifier: MIT */
/* abi_major.c — backend-abimajor.so: a backend built for the next major plugin ABI,
 * which this host must refuse. */
#include "config.h"

#include "fake_backend.h"

static const struct gan_backend_ops abimajor_ops = 
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), fake_create, fake_gemm, NULL);

static const struct gan_plugin abimajor_plugin = {
    .abi_major = GAN_ABI_MAJOR + 1,
    .abi_minor = 0,
    .struct_size = (uint32_t)sizeof(struct gan_plugin),
    .kind = GAN_PLUGIN_BACKEND,
    .name = "abimajor",
    .version = "9.0.0",
    .summary = "built for a future major ABI",
    .ops = &abimajor_ops,
};

GAN_DEFINE_PLUGIN(abimajor_plugin)
