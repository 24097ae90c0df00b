/* SPDX-License-Identifier: MIT */
/* abi_newer.c — backend-abinewer.so: a backend built for a newer minor ABI than this
 * host's, with a descriptor grown at the end as a later minor version would. */
#include "config.h"

#include "fake_backend.h"

static const struct gan_backend_ops abinewer_ops = 
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), fake_create, fake_gemm, NULL);

/* A later minor version's descriptor: this host's struct and one more field. */
struct newer_plugin {
    struct gan_plugin base;
    void *added_later;
};

static const struct newer_plugin abinewer_plugin = {
    .base = {
        .abi_major = GAN_ABI_MAJOR,
        .abi_minor = GAN_ABI_MINOR + 1,
        .struct_size = (uint32_t)sizeof(struct newer_plugin),
        .kind = GAN_PLUGIN_BACKEND,
        .name = "abinewer",
        .version = "1.1.0",
        .summary = "built for a newer minor ABI",
        .ops = &abinewer_ops,
    },
    .added_later = (void *)&abinewer_ops,
};

GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void);
GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void)
{
    return &abinewer_plugin.base;
}
