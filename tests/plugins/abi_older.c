/* SPDX-License-Identifier: MIT */
/* abi_older.c — backend-abiolder.so: a backend whose descriptor and ops table claim to
 * end early, as an older minor version's would. The bytes past each struct_size hold
 * values the host must not read: it has to see zeros and its own defaults there. */
#include "config.h"

#include <stddef.h>

#include "fake_backend.h"

/* Reached only if the host wrongly reads past the table's declared size. */
static gan_status older_synchronize(gan_backend *be)
{
    return be->host->fail(be->host->ctx, GAN_ERR_INTERNAL, "older: synchronize read past struct_size");
}

static const struct gan_backend_ops abiolder_ops =
    FAKE_BACKEND_OPS(offsetof(struct gan_backend_ops, synchronize), fake_create, fake_gemm,
                     older_synchronize);

/* Must stay invisible: it lies past the descriptor's declared size. */
static const struct gan_setting_spec hidden_settings[] = {
    { "hidden", GAN_SETTING_INT, "1", "read past struct_size" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin abiolder_plugin = {
    .abi_major = GAN_ABI_MAJOR,
    .abi_minor = GAN_ABI_MINOR > 0 ? GAN_ABI_MINOR - 1 : 0,
    .struct_size = (uint32_t)offsetof(struct gan_plugin, settings),
    .kind = GAN_PLUGIN_BACKEND,
    .name = "abiolder",
    .version = "1.0.0",
    .summary = "a descriptor that ends before settings",
    .ops = &abiolder_ops,
    .settings = hidden_settings,
    .reserved = { (void *)hidden_settings },
};

GAN_DEFINE_PLUGIN(abiolder_plugin)
