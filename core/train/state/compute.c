/* SPDX-License-Identifier: MIT */
/* compute.c — the plugins a configuration names, opened with their settings checked, and
 * a backend instance with a compute context: the start of training, grads and classifier. */
#include "config.h"

#include <stdio.h>

#include "tensor/tensor_core.h"
#include "train/state/compute.h"

gan_status gan_open_configured(const gan_loader *loader, gan_config *cfg,
                               enum gan_plugin_kind kind, const char *name, const char *group,
                               struct gan_module **out, struct gan_error *err)
{
    gan_status st = gan_loader_open(loader, kind, name, out, err);
    if (st != GAN_OK)
        return st;
    char label[300];
    snprintf(label, sizeof label, "%s \"%s\"", gan_plugin_kind_name(kind), name);
    return gan_config_apply_plugin(cfg, group, label, (*out)->plugin.settings, err);
}

gan_status gan_open_backend(const gan_loader *loader, gan_config *cfg, struct gan_module **out,
                            struct gan_error *err)
{
    const char *name = NULL;
    if (gan_config_get_string(cfg, "backend.name", &name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "backend.name has no value");
    return gan_open_configured(loader, cfg, GAN_PLUGIN_BACKEND, name, "backend", out, err);
}

/* The context's hook for a failed kernel: what the backend told its host last. */
static const char *backend_message(void *arg)
{
    struct gan_backend_instance *inst = arg;
    return inst->host.error.message;
}

gan_status gan_compute_new(struct gan_module *module, const gan_config *cfg,
                           const struct gan_log *log, struct gan_backend_instance **backend,
                           gan_ctx **ctx, struct gan_error *err)
{
    *ctx = NULL;
    gan_status st = gan_backend_instance_new(module, cfg, log, backend, err);
    if (st != GAN_OK)
        return st;
    if ((st = gan_ctx_new(&module->backend, (*backend)->be, ctx)) != GAN_OK)
        return gan_error_set(err, st, "cannot make the compute context: out of memory");
    gan_ctx_set_backend_message(*ctx, backend_message, *backend);
    gan_ctx_set_backend_abi_minor(*ctx, module->plugin.abi_minor);
    return GAN_OK;
}
