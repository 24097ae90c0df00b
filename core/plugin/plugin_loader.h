/* SPDX-License-Identifier: MIT */
/* plugin_loader.h — finding plugin modules (KIND-NAME.so) on the search path, checking
 * their descriptors against this host's ABI, creating backends, and listing what exists. */
#ifndef GANCTL_CORE_PLUGIN_LOADER_H
#define GANCTL_CORE_PLUGIN_LOADER_H

#include <stddef.h>
#include <ganctl/ganctl.h>
#include "config/configuration.h"
#include "base/error.h"
#include "plugin/host.h"
#include "base/log.h"

/* An ordered list of folders to look in. */
typedef struct gan_loader gan_loader;

/* The standard search path: every `plugin_dirs` entry (--plugin-dir, in order), then
 * each folder of `env_path` ($GANCTL_PLUGIN_PATH, colon-separated; NULL or empty for
 * none), then `pkglibdir`. Empty parts and repeats are dropped. */
gan_status gan_loader_new(gan_loader **out, const char *const *plugin_dirs, size_t dir_count,
                          const char *env_path, const char *pkglibdir, struct gan_error *err);
void gan_loader_free(gan_loader *loader);
size_t gan_loader_dir_count(const gan_loader *loader);
const char *gan_loader_dir_at(const gan_loader *loader, size_t index);

/* A loaded module with the host's own copies of its tables. */
struct gan_module {
    void *handle;                     /* from dlopen */
    char *path;
    /* Fields beyond the plugin's struct_size are zero. plugin.ops points at the copy of
     * its kind's table below, not into the module. */
    struct gan_plugin plugin;
    /* The copy of the kind's table (the others stay zero): slots beyond the plugin's
     * struct_size are zero, and struct_size is the host's. Backends' optional slots the
     * plugin left NULL get the core's defaults where it has one (synchronize: nothing
     * to wait for); GAN_BACKEND_SLOTS (backend.h) says which slots are required. */
    struct gan_backend_ops backend;
    struct gan_model_ops model;       /* required: create, forward */
    struct gan_loss_ops loss;         /* required: create, targets, term */
    struct gan_scaler_ops scaler;     /* required: create, scale, update; save_state and
                                         load_state both or neither */
    struct gan_recipe_ops recipe;     /* required: create, plan, scales; save_state and
                                         load_state both or neither */
};

/* Opens the module file at `path`, which must be the plugin of `kind` named `name`.
 * GAN_ERR_NOT_FOUND: the file is not a loadable ganctl module; GAN_ERR_ABI: built for
 * another ABI or lacking a required slot; GAN_ERR_INVALID: its descriptor is wrong. */
gan_status gan_module_open(const char *path, enum gan_plugin_kind kind, const char *name,
                           struct gan_module **out, struct gan_error *err);

/* Finds KIND-NAME.so in the first folder of the search path that has it and opens it.
 * A file found but broken is an error; later folders are not tried, as for listing. */
gan_status gan_loader_open(const gan_loader *loader, enum gan_plugin_kind kind,
                           const char *name, struct gan_module **out, struct gan_error *err);
void gan_module_close(struct gan_module *module);

/* A scaler module's state through its save_state and load_state, or, when it has none
 * (a stateless scaler), the core's stand-ins that scaler.h describes: saving gives its
 * name, version 1 and no values; loading accepts exactly that, and otherwise fails
 * through host->fail like a load_state (GAN_ERR_INVALID, _UNSUPPORTED or _FORMAT).
 * `host` is the instance's. */
gan_status gan_scaler_save_state(const struct gan_module *module, gan_scaler *sc,
                                 struct gan_scaler_state *out);
gan_status gan_scaler_load_state(const struct gan_module *module, gan_scaler *sc,
                                 const struct gan_host *host, const struct gan_scaler_state *in);

/* Backend slots by name: "gemm" for GAN_BACKEND_SLOT_GEMM (NULL for a number this
 * build does not know), and back (0 when `name` names no slot). */
const char *gan_backend_slot_name(enum gan_backend_slot slot);
int gan_backend_slot_parse(const char *name, enum gan_backend_slot *out);

/* Whether a loaded backend module supports `slot`: a required slot always (the loader
 * refused the module otherwise), an optional one when the module filled it or the core
 * supplies a default (synchronize). */
int gan_backend_supports(const struct gan_module *backend, enum gan_backend_slot slot);

/* Refuses a run whose model (network `net`, "generator" or "critic") lists in its
 * backend_slots a slot that `backend` does not support: GAN_ERR_UNSUPPORTED with one
 * line naming the slot, the backend and the model; GAN_ERR_INVALID for a name that is
 * no backend slot. Needs only the modules, so it runs before anything is created. */
gan_status gan_backend_check_model(const struct gan_module *backend,
                                   const struct gan_module *model, const char *net,
                                   struct gan_error *err);

/* A backend instance with its host services. */
struct gan_backend_instance {
    struct gan_module *module;        /* borrowed: must outlive the instance */
    struct gan_plugin_host host;      /* the services this instance was given */
    gan_backend *be;
};

/* Calls the module's create. `config` should have been through
 * gan_config_apply_plugin(config, "backend", ...) with the module's settings; it and
 * `log` must outlive the instance. A create that fails with GAN_ERR_DEVICE gives
 * 'backend "x" (path) reports no usable device: <its reason>'. */
gan_status gan_backend_instance_new(struct gan_module *module, const gan_config *config,
                                    const struct gan_log *log,
                                    struct gan_backend_instance **out, struct gan_error *err);
void gan_backend_instance_free(struct gan_backend_instance *inst);
const char *gan_backend_instance_describe(struct gan_backend_instance *inst);

/* What --list-plugins shows about one file. */
struct gan_plugin_setting_info {
    char *name;                       /* full key, e.g. "backend.threads" */
    enum gan_setting_type type;
    char *default_value;              /* NULL when none */
    char *summary;                    /* "" when none */
};

struct gan_plugin_info {
    char *path;
    char *kind, *name;                /* as the file name says */
    char *shadowed_by;                /* the earlier file with the same kind and name, or NULL */
    char *error;                      /* why it did not load, one line; NULL when it loaded */
    char *version, *summary;          /* from the descriptor; "" when it gave none */
    struct gan_plugin_setting_info *settings;
    size_t setting_count;
    int is_backend;                   /* loaded and a backend: the fields below are set */
    int available;                    /* its create succeeded with default settings */
    char *status;                     /* describe() when available, the failure when not */
};

struct gan_plugin_list {
    struct gan_plugin_info *items;
    size_t count;
};

/* Every *-*.so in every folder of the search path, folders in order and files sorted
 * by name within one. Modules that fail to load are listed with their error; a file
 * whose kind and name an earlier one already has is listed as shadowed, unopened.
 * Fails only for lack of memory. */
gan_status gan_loader_scan(const gan_loader *loader, struct gan_plugin_list *out,
                           struct gan_error *err);
void gan_plugin_list_clear(struct gan_plugin_list *list);

/* The enum for "backend", "model", "loss", "scaler", "recipe"; 0 for anything else. */
enum gan_plugin_kind gan_plugin_kind_parse(const char *word);

#endif
