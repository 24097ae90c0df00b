/* SPDX-License-Identifier: MIT */
/* fuzz_nets.c — the checkpoint harness's networks: built by hand (gan_net_param) rather
 * than through the model plugins, so that nothing but the backend module is loaded and
 * the parameters are few; the names follow the mlp model's, as in a real checkpoint. */
#include "config.h"

#include <stdlib.h>

#include "tensor/tensor_core.h"
#include "train/state/compute.h"
#include "fuzz_nets.h"
#include "fuzz.h"

struct layer {
    const char *name;
    int ndim;
    int64_t dims[2];
    enum gan_init_kind init;
};

static const struct layer generator_layers[] = {
    { "fc0.weight", 2, { 4, 2 }, GAN_INIT_HE_NORMAL }, { "fc0.bias", 1, { 4 }, GAN_INIT_ZEROS },
    { "fc1.weight", 2, { 2, 4 }, GAN_INIT_HE_NORMAL }, { "fc1.bias", 1, { 2 }, GAN_INIT_ZEROS },
    { NULL, 0, { 0 }, 0 },
};
static const struct layer critic_layers[] = {
    { "fc0.weight", 2, { 3, 2 }, GAN_INIT_HE_NORMAL }, { "fc0.bias", 1, { 3 }, GAN_INIT_ZEROS },
    { "fc1.weight", 2, { 1, 3 }, GAN_INIT_HE_NORMAL }, { "fc1.bias", 1, { 1 }, GAN_INIT_ZEROS },
    { NULL, 0, { 0 }, 0 },
};

static void must(gan_status st, const struct gan_error *err, const char *what)
{
    if (st != GAN_OK)
        fuzz_fail("%s: %s (%s)", what, err->message, gan_status_string(st));
}

static gan_net *make_net(struct fuzz_nets *n, const char *prefix, const struct layer *layers,
                         uint64_t *offset)
{
    gan_net *net = NULL;
    if (gan_net_new(n->ctx, prefix, &net) != GAN_OK)
        fuzz_fail("gan_net_new: %s", gan_ctx_error(n->ctx));
    for (const struct layer *l = layers; l->name; l++) {
        struct gan_init init = { l->init, 0.0f };
        if (!gan_net_param(net, l->name, l->ndim, l->dims, init))
            fuzz_fail("gan_net_param %s.%s: %s", prefix, l->name, gan_ctx_error(n->ctx));
    }
    if (gan_net_init(net, 1, offset) != GAN_OK)
        fuzz_fail("gan_net_init %s: %s", prefix, gan_ctx_error(n->ctx));
    return net;
}

void fuzz_nets_open(struct fuzz_nets *n)
{
    struct gan_error err;
    gan_error_clear(&err);
    *n = (struct fuzz_nets){ 0 };
    gan_log_init(&n->log, NULL, NULL);
    must(gan_config_new(&n->cfg, &err), &err, "gan_config_new");
    /* The tensors are tiny: one BLAS thread, and no threads started per core. */
    must(gan_config_set(n->cfg, "backend.threads=1", &err), &err, "backend.threads");
    const char *dirs[1] = { GAN_FUZZ_PLUGIN_DIR };
    must(gan_loader_new(&n->loader, dirs, 1, getenv("GANCTL_PLUGIN_PATH"), NULL, &err), &err,
         "gan_loader_new");
    must(gan_open_backend(n->loader, n->cfg, &n->module, &err), &err, "the CPU backend");
    must(gan_compute_new(n->module, n->cfg, &n->log, &n->backend, &n->ctx, &err), &err,
         "the compute context");
    uint64_t offset = 0;
    n->net[0] = make_net(n, "generator", generator_layers, &offset);
    n->net[1] = make_net(n, "critic", critic_layers, &offset);
    const struct gan_adam_settings adam = { 1e-3, 0.5, 0.9, 1e-8, 0.0, 0.0 };
    for (int i = 0; i < 2; i++)
        if (gan_optimizer_new(n->net[i], &adam, &n->opt[i]) != GAN_OK)
            fuzz_fail("gan_optimizer_new: %s", gan_ctx_error(n->ctx));
    n->cn[0] = (struct gan_checkpoint_net){ "generator", n->net[0], n->opt[0], NULL };
    n->cn[1] = (struct gan_checkpoint_net){ "critic", n->net[1], n->opt[1], &n->scaling };
}

void fuzz_nets_close(struct fuzz_nets *n)
{
    for (int i = 1; i >= 0; i--) {
        gan_optimizer_free(n->opt[i]);
        gan_net_free(n->net[i]);
    }
    gan_ctx_free(n->ctx);
    gan_backend_instance_free(n->backend);
    gan_module_close(n->module);
    gan_loader_free(n->loader);
    gan_config_free(n->cfg);
    *n = (struct fuzz_nets){ 0 };
}
