/* SPDX-License-Identifier: MIT */
/* backend_module.h — a backend module's ops table and plugin descriptor, made from the
 * ABI's list of slots the same way for every backend. */
#ifndef GANCTL_COMMON_BACKEND_MODULE_H
#define GANCTL_COMMON_BACKEND_MODULE_H

#include <ganctl/backend.h>
#include <ganctl/plugin.h>

/* The including file first defines GAN_OPS_PREFIX, the prefix of its names (`#define
 * GAN_OPS_PREFIX cpu`): slot s is filled with its function prefix_s (cpu_gemm), its
 * settings table is prefix_settings, and the module is named by the prefix ("cpu").
 * Made from GAN_BACKEND_SLOTS, the list the loader checks modules against, a table
 * cannot skip a slot or pair one with another slot's function, and a slot a later
 * minor appends is a compile error in every backend until it provides it. A backend
 * that leaves an optional slot empty defines that slot's name as NULL (the CPU:
 * `#define cpu_synchronize NULL`), so that it says so where the table is made. */
#define GAN_OPS_PASTE_(prefix, name) prefix##_##name
#define GAN_OPS_NAME_(prefix, name) GAN_OPS_PASTE_(prefix, name)
#define GAN_OPS_QUOTE_(prefix) #prefix
#define GAN_OPS_STRING_(prefix) GAN_OPS_QUOTE_(prefix)
#define GAN_OPS_SLOT_(slot, id, requirement) .slot = GAN_OPS_NAME_(GAN_OPS_PREFIX, slot),

/* The ops table, the descriptor (version PACKAGE_VERSION, from config.h) and the
 * module's one exported function. */
#define GAN_BACKEND_MODULE(summary_text)                                                 \
    static const struct gan_backend_ops gan_backend_ops_ = {                             \
        .struct_size = sizeof(struct gan_backend_ops),                                   \
        GAN_BACKEND_SLOTS(GAN_OPS_SLOT_)                                                 \
    };                                                                                   \
    static const struct gan_plugin gan_backend_descriptor_ = {                           \
        GAN_PLUGIN_HEADER,                                                               \
        .kind = GAN_PLUGIN_BACKEND,                                                      \
        .name = GAN_OPS_STRING_(GAN_OPS_PREFIX),                                         \
        .version = PACKAGE_VERSION,                                                      \
        .summary = summary_text,                                                         \
        .ops = &gan_backend_ops_,                                                        \
        .settings = GAN_OPS_NAME_(GAN_OPS_PREFIX, settings),                             \
    };                                                                                   \
    GAN_DEFINE_PLUGIN(gan_backend_descriptor_)

#endif
