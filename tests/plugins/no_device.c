/* SPDX-License-Identifier: MIT */
/* no_device.c — backend-nodevice.so: a backend whose create finds no device and says
 * why through host->fail, as the CUDA backend does on a machine without a GPU. */
#include "config.h"

#include "fake_backend.h"

static gan_status nodevice_create(const struct gan_host *host, gan_backend **out)
{
    (void)out;
    return host->fail(host->ctx, GAN_ERR_DEVICE, "no widget attached to /dev/widget%d", 0);
}

static const struct gan_backend_ops nodevice_ops =
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), nodevice_create, fake_gemm, NULL);

static const struct gan_plugin nodevice_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "nodevice",
    .version = "1.0.0",
    .summary = "finds no device",
    .ops = &nodevice_ops,
};

GAN_DEFINE_PLUGIN(nodevice_plugin)
