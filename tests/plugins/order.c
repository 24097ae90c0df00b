/* SPDX-License-Identifier: MIT */
/* order.c — backend-order.so, built three times into three folders with ORDER_TAG
 * "first", "second" and "third", to show which folder of the search path wins. */
#include "config.h"

#include "fake_backend.h"

static const struct gan_backend_ops order_ops = 
    FAKE_BACKEND_OPS(sizeof(struct gan_backend_ops), fake_create, fake_gemm, NULL);

static const struct gan_plugin order_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "order",
    .version = ORDER_TAG,
    .summary = "the copy in the " ORDER_TAG " folder",
    .ops = &order_ops,
};

GAN_DEFINE_PLUGIN(order_plugin)
