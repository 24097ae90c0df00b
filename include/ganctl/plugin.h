/* SPDX-License-Identifier: MIT */
/* plugin.h — the descriptor every ganctl module exports, and how the host finds it.
 * A module exports exactly one symbol, ganctl_plugin_descriptor, returning this struct. */
#ifndef GANCTL_PLUGIN_H
#define GANCTL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/version.h>
#include <ganctl/host.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gan_plugin_kind {
    GAN_PLUGIN_BACKEND = 1, /* ops: const struct gan_backend_ops * (backend.h) */
    GAN_PLUGIN_MODEL = 2,   /* ops: const struct gan_model_ops *   (model.h) */
    GAN_PLUGIN_LOSS = 3,    /* ops: const struct gan_loss_ops *    (loss.h) */
    GAN_PLUGIN_SCALER = 4,  /* ops: const struct gan_scaler_ops *  (scaler.h) */
    GAN_PLUGIN_RECIPE = 5   /* ops: const struct gan_recipe_ops *  (recipe.h; ABI 1.6) */
};

struct gan_plugin {
    /* Set these three from the headers the plugin was compiled with: write
     * GAN_PLUGIN_HEADER, below. The host reads only min(struct_size, its own size)
     * bytes and treats what it did not read as zero. */
    uint16_t abi_major;
    uint16_t abi_minor;
    uint32_t struct_size;

    enum gan_plugin_kind kind;
    const char *name;     /* what the user selects it by: "cpu", "underflow-aware" */
    const char *version;  /* the plugin's own version, e.g. "1.0.0" */
    const char *summary;  /* one line for --list-plugins */

    const void *ops;      /* the kind's table of functions; see `kind` */

    /* The settings the plugin reads (under its config group), terminated by an entry
     * whose name is NULL. NULL when it reads none. */
    const struct gan_setting_spec *settings;

    void *reserved[8];    /* zero; room for later minor versions */
};

#define GAN_PLUGIN_HEADER \
    .abi_major = GAN_ABI_MAJOR, .abi_minor = GAN_ABI_MINOR, \
    .struct_size = (uint32_t)sizeof(struct gan_plugin)

/* The one symbol a module exports. */
#define GAN_PLUGIN_SYMBOL "ganctl_plugin_descriptor"
typedef const struct gan_plugin *(*gan_plugin_descriptor_fn)(void);

#if defined(__GNUC__) || defined(__clang__)
#define GAN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GAN_PLUGIN_EXPORT
#endif

/* Write this in a plugin's source, once: GAN_DEFINE_PLUGIN(my_descriptor) */
#define GAN_DEFINE_PLUGIN(descriptor) \
    GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void); \
    GAN_PLUGIN_EXPORT const struct gan_plugin *ganctl_plugin_descriptor(void) { return &(descriptor); }

/* Human-readable kind ("backend", "model", "loss", "scaler", "recipe"), or NULL. */
static inline const char *gan_plugin_kind_name(enum gan_plugin_kind kind)
{
    switch (kind) {
    case GAN_PLUGIN_BACKEND: return "backend";
    case GAN_PLUGIN_MODEL: return "model";
    case GAN_PLUGIN_LOSS: return "loss";
    case GAN_PLUGIN_SCALER: return "scaler";
    case GAN_PLUGIN_RECIPE: return "recipe";
    default: return NULL;
    }
}

#ifdef __cplusplus
}
#endif
#endif
