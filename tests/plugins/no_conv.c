/* SPDX-License-Identifier: MIT */
/* no_conv.c — backend-noconv.so: a backend without the optional convolution slots. */
#include "config.h"

#include "fake_backend.h"

/* Every required slot, no convolutions (backend.h makes the three optional since ABI
 * 1.4): it loads, and a run whose model lists them is refused when it starts. */
static const struct gan_backend_ops noconv_ops = {
    .struct_size = sizeof(struct gan_backend_ops),
    .create = fake_create, .destroy = fake_destroy, .describe = fake_describe,
    .buffer_alloc = fake_buffer_alloc, .buffer_free = fake_buffer_free,
    .upload = fake_upload, .download = fake_download, .copy = fake_copy,
    .gemm = fake_gemm, .unary = fake_unary, .binary = fake_binary, .reduce = fake_reduce,
    .cast = fake_cast, .rng_bits = fake_rng_bits, .rng_uniform = fake_rng_uniform,
    .rng_normal = fake_rng_normal, .adam = fake_adam, .grad_stats = fake_grad_stats,
};

static const struct gan_plugin noconv_plugin = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_BACKEND,
    .name = "noconv",
    .version = "1.0.0",
    .summary = "no convolutions",
    .ops = &noconv_ops,
};

GAN_DEFINE_PLUGIN(noconv_plugin)
