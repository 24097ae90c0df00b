/* SPDX-License-Identifier: MIT */
/* plugin_loader.c — dlopen-based module loading: the search path, descriptor and ABI
 * checks, the host's copies of a plugin's tables, backend creation; the listing is
 * plugin_list.c. */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strings.h"
#include "plugin/plugin_loader.h"

/* ------------------------------------------------------------------ the search path */

struct gan_loader {
    char **dirs;
    size_t count, cap;
};

static gan_status add_dir(gan_loader *l, const char *begin, size_t len, struct gan_error *err)
{
    /* "a/" and "a" are the same folder; keep messages tidy by dropping the slash. */
    while (len > 1 && begin[len - 1] == '/')
        len--;
    if (len == 0)
        return GAN_OK;
    for (size_t i = 0; i < l->count; i++)
        if (strlen(l->dirs[i]) == len && memcmp(l->dirs[i], begin, len) == 0)
            return GAN_OK;
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **grown = realloc(l->dirs, cap * sizeof *grown);
        if (!grown)
            return gan_error_nomem(err, "loading plugins");
        l->dirs = grown;
        l->cap = cap;
    }
    char *d = malloc(len + 1);
    if (!d)
        return gan_error_nomem(err, "loading plugins");
    memcpy(d, begin, len);
    d[len] = '\0';
    l->dirs[l->count++] = d;
    return GAN_OK;
}

gan_status gan_loader_new(gan_loader **out, const char *const *plugin_dirs, size_t dir_count,
                          const char *env_path, const char *pkglibdir, struct gan_error *err)
{
    *out = NULL;
    gan_loader *l = calloc(1, sizeof *l);
    if (!l)
        return gan_error_nomem(err, "loading plugins");
    gan_status st = GAN_OK;
    for (size_t i = 0; st == GAN_OK && i < dir_count; i++)
        st = add_dir(l, plugin_dirs[i], strlen(plugin_dirs[i]), err);
    for (const char *p = env_path; st == GAN_OK && p && *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        st = add_dir(l, p, len, err);
        p = colon ? colon + 1 : p + len;
    }
    if (st == GAN_OK && pkglibdir)
        st = add_dir(l, pkglibdir, strlen(pkglibdir), err);
    if (st != GAN_OK) {
        gan_loader_free(l);
        return st;
    }
    *out = l;
    return GAN_OK;
}

void gan_loader_free(gan_loader *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++)
        free(l->dirs[i]);
    free(l->dirs);
    free(l);
}

size_t gan_loader_dir_count(const gan_loader *l)
{
    return l->count;
}

const char *gan_loader_dir_at(const gan_loader *l, size_t index)
{
    return index < l->count ? l->dirs[index] : NULL;
}

enum gan_plugin_kind gan_plugin_kind_parse(const char *word)
{
    static const enum gan_plugin_kind kinds[] = {
        GAN_PLUGIN_BACKEND, GAN_PLUGIN_MODEL, GAN_PLUGIN_LOSS, GAN_PLUGIN_SCALER
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (word && strcmp(word, gan_plugin_kind_name(kinds[i])) == 0)
            return kinds[i];
    return (enum gan_plugin_kind)0;
}

/* ------------------------------------------------------------------ one module */

/* A slot of an ops table: its name, where it is, and whether a module must fill it. */
struct slot {
    const char *name;
    size_t offset;
    enum gan_slot_requirement requirement;
};

/* A backend's slots: backend.h's list, the one place that says which are required. */
static const struct slot backend_slots[] = {
#define SLOT(s, id, requirement) { #s, offsetof(struct gan_backend_ops, s), requirement },
    GAN_BACKEND_SLOTS(SLOT)
#undef SLOT
};

/* The list is the table: each slot at its number's place after the first, in order,
 * and nothing in the table that the list lacks. A slot added to one and not the other
 * stops the build here rather than going unchecked. */
#define FIRST_SLOT offsetof(struct gan_backend_ops, create)
#define SLOT_IN_ORDER(s, id, requirement) \
    _Static_assert(offsetof(struct gan_backend_ops, s) == \
                   FIRST_SLOT + GAN_BACKEND_SLOT_##id * sizeof(void (*)(void)), \
                   "GAN_BACKEND_SLOTS lists " #s " out of struct gan_backend_ops's order");
GAN_BACKEND_SLOTS(SLOT_IN_ORDER)
#undef SLOT_IN_ORDER
_Static_assert(sizeof(struct gan_backend_ops) ==
               FIRST_SLOT + GAN_BACKEND_SLOT_COUNT * sizeof(void (*)(void)),
               "a slot of struct gan_backend_ops is missing from GAN_BACKEND_SLOTS");
#undef FIRST_SLOT

/* A model without destroy keeps nothing to free; without describe it is logged by name. */
static const struct slot model_required[] = {
    { "create", offsetof(struct gan_model_ops, create), GAN_SLOT_REQUIRED },
    { "forward", offsetof(struct gan_model_ops, forward), GAN_SLOT_REQUIRED },
};

/* A loss term without destroy keeps nothing to free. */
static const struct slot loss_required[] = {
    { "create", offsetof(struct gan_loss_ops, create), GAN_SLOT_REQUIRED },
    { "targets", offsetof(struct gan_loss_ops, targets), GAN_SLOT_REQUIRED },
    { "term", offsetof(struct gan_loss_ops, term), GAN_SLOT_REQUIRED },
};

/* A scaler without destroy keeps nothing to free; without describe it is logged by name;
 * without save_state and load_state it keeps no state (gan_scaler_save_state). */
static const struct slot scaler_required[] = {
    { "create", offsetof(struct gan_scaler_ops, create), GAN_SLOT_REQUIRED },
    { "scale", offsetof(struct gan_scaler_ops, scale), GAN_SLOT_REQUIRED },
    { "update", offsetof(struct gan_scaler_ops, update), GAN_SLOT_REQUIRED },
};

/* A synchronous backend has no queued work to wait for. */
static gan_status default_synchronize(gan_backend *be)
{
    (void)be;
    return GAN_OK;
}

static int slot_filled(const void *ops, size_t offset)
{
    void (*fn)(void);
    memcpy(&fn, (const unsigned char *)ops + offset, sizeof fn);
    return fn != NULL;
}

/* The host's copy of a plugin's ops table (`dst`, `size` bytes, whose first member is
 * the table's struct_size): at most the plugin's struct_size bytes are read, the rest
 * stays zero, and every required slot of `slots` must be filled. `what` names the table. */
static gan_status copy_ops(struct gan_module *m, void *dst, size_t size,
                           const struct slot *slots, size_t n_slots, const char *what,
                           struct gan_error *err)
{
    const void *ops = m->plugin.ops;
    if (!ops)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "%s: its descriptor has no ops table: fix the plugin (set .ops to its struct gan_%s_ops)",
                             m->path, what);
    size_t declared;
    memcpy(&declared, ops, sizeof declared);
    if (declared < sizeof declared)
        return gan_error_set(err, GAN_ERR_ABI,
                             "%s: its %s ops table declares struct_size %zu: rebuild the plugin against these headers",
                             m->path, what, declared);
    memset(dst, 0, size);
    memcpy(dst, ops, declared < size ? declared : size);
    for (size_t i = 0; i < n_slots; i++)
        if (slots[i].requirement == GAN_SLOT_REQUIRED && !slot_filled(dst, slots[i].offset))
            return gan_error_set(err, GAN_ERR_ABI,
                                 "%s: required slot %s missing from its %s ops table: implement it, or rebuild the plugin against these headers",
                                 m->path, slots[i].name, what);
    /* Every table starts with its size: the host's copy is its own size. */
    memcpy(dst, &size, sizeof size);
    m->plugin.ops = dst;
    return GAN_OK;
}

#define COUNT_OF(a) (sizeof (a) / sizeof (a)[0])

/* The host's copy of the table of whichever kind the plugin is. */
static gan_status copy_kind_ops(struct gan_module *m, struct gan_error *err)
{
    gan_status st;
    switch (m->plugin.kind) {
    case GAN_PLUGIN_BACKEND:
        st = copy_ops(m, &m->backend, sizeof m->backend, backend_slots,
                      COUNT_OF(backend_slots), "backend", err);
        if (st == GAN_OK && !m->backend.synchronize)
            m->backend.synchronize = default_synchronize;
        return st;
    case GAN_PLUGIN_MODEL:
        return copy_ops(m, &m->model, sizeof m->model, model_required,
                        COUNT_OF(model_required), "model", err);
    case GAN_PLUGIN_LOSS:
        return copy_ops(m, &m->loss, sizeof m->loss, loss_required, COUNT_OF(loss_required),
                        "loss", err);
    case GAN_PLUGIN_SCALER:
        st = copy_ops(m, &m->scaler, sizeof m->scaler, scaler_required,
                      COUNT_OF(scaler_required), "scaler", err);
        /* Half a state interface would save what cannot be loaded, or load what was
         * never saved. */
        if (st == GAN_OK && !m->scaler.save_state != !m->scaler.load_state)
            return gan_error_set(err, GAN_ERR_ABI,
                                 "%s: its scaler ops table sets %s but not %s: set both, or leave both NULL for a scaler without state",
                                 m->path, m->scaler.save_state ? "save_state" : "load_state",
                                 m->scaler.save_state ? "load_state" : "save_state");
        /* The core saves a stateless scaler's state under its name (scaler.h). */
        if (st == GAN_OK && !m->scaler.save_state &&
            strlen(m->plugin.name) >= GAN_SCALER_NAME_MAX)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "%s: the scaler name \"%s\" is longer than a scaler state holds (%d bytes): shorten it",
                                 m->path, m->plugin.name, GAN_SCALER_NAME_MAX - 1);
        return st;
    case GAN_PLUGIN_RECIPE:
        /* ABI 1.6 declares the kind; the host learns to load it with FP8 training, and
         * until then refuses a recipe module rather than keep a table it cannot check. */
        return gan_error_set(err, GAN_ERR_UNSUPPORTED,
                             "%s: recipe modules are not loaded by this version of ganctl",
                             m->path);
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ backend slots */

const char *gan_backend_slot_name(enum gan_backend_slot slot)
{
    return (unsigned)slot < COUNT_OF(backend_slots) ? backend_slots[slot].name : NULL;
}

int gan_backend_slot_parse(const char *name, enum gan_backend_slot *out)
{
    for (size_t i = 0; name && i < COUNT_OF(backend_slots); i++)
        if (strcmp(backend_slots[i].name, name) == 0) {
            *out = (enum gan_backend_slot)i;
            return 1;
        }
    return 0;
}

int gan_backend_supports(const struct gan_module *backend, enum gan_backend_slot slot)
{
    if ((unsigned)slot >= COUNT_OF(backend_slots))
        return 0;
    /* A loaded module has every required slot (copy_ops checked); the host's copy also
     * holds the defaults the core supplies, so an optional slot counts when filled. */
    return backend_slots[slot].requirement == GAN_SLOT_REQUIRED ||
           slot_filled(&backend->backend, backend_slots[slot].offset);
}

gan_status gan_backend_check_model(const struct gan_module *backend,
                                   const struct gan_module *model, const char *net,
                                   struct gan_error *err)
{
    const char *const *names = model->model.backend_slots;
    for (size_t i = 0; names && names[i]; i++) {
        enum gan_backend_slot slot;
        if (!gan_backend_slot_parse(names[i], &slot))
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "the %s's model \"%s\" (%s) lists \"%.64s\" in its backend_slots, which is no backend slot of plugin ABI %d.%d: fix the model",
                                 net, model->plugin.name, model->path, names[i], GAN_ABI_MAJOR,
                                 GAN_ABI_MINOR);
        if (!gan_backend_supports(backend, slot))
            return gan_error_set(err, GAN_ERR_UNSUPPORTED,
                                 "backend \"%s\" (%s) has no %s, which the %s's model \"%s\" needs: choose a backend that has it (ganctl --list-plugins) or another model",
                                 backend->plugin.name, backend->path, names[i], net,
                                 model->plugin.name);
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ scaler state */

/* The version of the state the core saves for a stateless scaler. */
#define STATELESS_VERSION 1

gan_status gan_scaler_save_state(const struct gan_module *m, gan_scaler *sc,
                                 struct gan_scaler_state *out)
{
    if (m->scaler.save_state)
        return m->scaler.save_state(sc, out);
    memset(out, 0, sizeof *out);
    snprintf(out->scaler, sizeof out->scaler, "%s", m->plugin.name);
    out->version = STATELESS_VERSION;
    return GAN_OK;
}

gan_status gan_scaler_load_state(const struct gan_module *m, gan_scaler *sc,
                                 const struct gan_host *host, const struct gan_scaler_state *in)
{
    if (m->scaler.load_state)
        return m->scaler.load_state(sc, in);
    const char *name = m->plugin.name;
    if (strncmp(in->scaler, name, sizeof in->scaler) != 0)
        return host->fail(host->ctx, GAN_ERR_INVALID, "the state is scaler \"%.*s\"'s, not %s's",
                          (int)sizeof in->scaler, in->scaler, name);
    if (in->version > STATELESS_VERSION)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "state version %lld is newer than this build of %s, which keeps no state, reads (%d)",
                          (long long)in->version, name, STATELESS_VERSION);
    if (in->version < STATELESS_VERSION)
        return host->fail(host->ctx, GAN_ERR_FORMAT, "state version %lld was never written by %s",
                          (long long)in->version, name);
    /* Refused, not ignored: the values come from a build of this scaler that kept state,
     * and resuming without them would not continue the run that was saved. */
    if (in->count > 0)
        return host->fail(host->ctx, GAN_ERR_FORMAT,
                          "the saved state holds %zu value%s, but this build of %s keeps no state: resume with the build that saved it",
                          in->count, in->count == 1 ? "" : "s", name);
    return GAN_OK;
}

/* dlerror() usually starts with the path; the message names it already. */
static const char *without_path(const char *text, const char *path)
{
    size_t n = strlen(path);
    if (text && strncmp(text, path, n) == 0 && text[n] == ':' && text[n + 1] == ' ')
        return text + n + 2;
    return text ? text : "unknown reason";
}

static gan_status check_descriptor(struct gan_module *m, const struct gan_plugin *d,
                                   enum gan_plugin_kind kind, const char *name,
                                   struct gan_error *err)
{
    if (d->abi_major != GAN_ABI_MAJOR || d->abi_minor > GAN_ABI_MINOR)
        return gan_error_set(err, GAN_ERR_ABI,
                             "%s: built for plugin ABI %u.%u, this ganctl has ABI %d.%d: rebuild the plugin against these headers",
                             m->path, (unsigned)d->abi_major, (unsigned)d->abi_minor,
                             GAN_ABI_MAJOR, GAN_ABI_MINOR);
    /* Every 1.x descriptor has at least the fields up to ops. */
    size_t least = offsetof(struct gan_plugin, ops) + sizeof d->ops;
    if (d->struct_size < least)
        return gan_error_set(err, GAN_ERR_ABI,
                             "%s: its descriptor is %u bytes, too small for plugin ABI %u.%u (at least %zu): rebuild the plugin against these headers",
                             m->path, (unsigned)d->struct_size, (unsigned)d->abi_major,
                             (unsigned)d->abi_minor, least);
    memset(&m->plugin, 0, sizeof m->plugin);
    memcpy(&m->plugin, d, d->struct_size < sizeof m->plugin ? d->struct_size : sizeof m->plugin);

    const char *declared_kind = gan_plugin_kind_name(m->plugin.kind);
    if (!declared_kind)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "%s: declares an unknown plugin kind %d: rebuild the plugin against these headers",
                             m->path, (int)m->plugin.kind);
    if (!m->plugin.name || !*m->plugin.name)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: its descriptor has no name: fix the plugin",
                             m->path);
    if (m->plugin.kind != kind || strcmp(m->plugin.name, name) != 0)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "%s: declares %s \"%s\", but its file name says %s \"%s\": rename the file to %s-%s.so",
                             m->path, declared_kind, m->plugin.name, gan_plugin_kind_name(kind),
                             name, declared_kind, m->plugin.name);
    return copy_kind_ops(m, err);
}

gan_status gan_module_open(const char *path, enum gan_plugin_kind kind, const char *name,
                           struct gan_module **out, struct gan_error *err)
{
    *out = NULL;
    struct gan_module *m = calloc(1, sizeof *m);
    if (!m || !(m->path = gan_strdup(path))) {
        free(m);
        return gan_error_nomem(err, "loading plugins");
    }
    gan_status st;
    m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!m->handle) {
        st = gan_error_set(err, GAN_ERR_NOT_FOUND,
                           "%s: not a loadable module (%s): remove it from the plugin folder or rebuild it",
                           path, without_path(dlerror(), path));
        gan_module_close(m);
        return st;
    }
    dlerror();
    void *sym = dlsym(m->handle, GAN_PLUGIN_SYMBOL);
    if (!sym) {
        st = gan_error_set(err, GAN_ERR_NOT_FOUND,
                           "%s: no symbol " GAN_PLUGIN_SYMBOL " (not a ganctl plugin): remove it from the plugin folder, or define its descriptor with GAN_DEFINE_PLUGIN",
                           path);
        gan_module_close(m);
        return st;
    }
    /* POSIX guarantees that a dlsym result converts to a function pointer. */
    gan_plugin_descriptor_fn describe_fn;
    memcpy(&describe_fn, &sym, sizeof describe_fn);
    const struct gan_plugin *d = describe_fn();
    if (!d)
        st = gan_error_set(err, GAN_ERR_INVALID,
                           "%s: " GAN_PLUGIN_SYMBOL "() returned NULL: fix the plugin", path);
    else
        st = check_descriptor(m, d, kind, name, err);
    if (st != GAN_OK) {
        gan_module_close(m);
        return st;
    }
    *out = m;
    return GAN_OK;
}

void gan_module_close(struct gan_module *m)
{
    if (!m)
        return;
    if (m->handle)
        dlclose(m->handle);
    free(m->path);
    free(m);
}

/* Plugin names become file names: keep them free of '/' and leading dots. */
static int valid_name(const char *name)
{
    if (!*name || *name == '.')
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return 0;
    return 1;
}

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

gan_status gan_loader_open(const gan_loader *l, enum gan_plugin_kind kind, const char *name,
                           struct gan_module **out, struct gan_error *err)
{
    *out = NULL;
    const char *kind_name = gan_plugin_kind_name(kind);
    if (!kind_name)
        return gan_error_set(err, GAN_ERR_INTERNAL, "no plugin kind %d", (int)kind);
    if (!valid_name(name))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "\"%s\" is not a valid %s name (letters, digits, '-', '_' and '.'): run ganctl --list-plugins to see what is installed",
                             name, kind_name);
    char path[4096];
    for (size_t i = 0; i < l->count; i++) {
        snprintf(path, sizeof path, "%s/%s-%s.so", l->dirs[i], kind_name, name);
        if (is_file(path))
            return gan_module_open(path, kind, name, out, err);
    }
    char where[2048] = "";
    size_t used = 0;
    for (size_t i = 0; i < l->count && used < sizeof where; i++)
        used += (size_t)snprintf(where + used, sizeof where - used, "%s%s", i ? ", " : "",
                                 l->dirs[i]);
    return gan_error_set(err, GAN_ERR_NOT_FOUND,
                         "%s \"%s\" not found: looked for %s-%s.so in %s; run ganctl --list-plugins to see what is installed",
                         kind_name, name, kind_name, name, l->count ? where : "no folder");
}

/* ------------------------------------------------------------------ backend instances */

gan_status gan_backend_instance_new(struct gan_module *m, const gan_config *config,
                                    const struct gan_log *log,
                                    struct gan_backend_instance **out, struct gan_error *err)
{
    *out = NULL;
    if (m->plugin.kind != GAN_PLUGIN_BACKEND)
        return gan_error_set(err, GAN_ERR_INTERNAL, "%s is not a backend", m->path);
    struct gan_backend_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return gan_error_nomem(err, "loading plugins");
    inst->module = m;
    char label[96];
    snprintf(label, sizeof label, "backend %s", m->plugin.name);
    gan_plugin_host_init(&inst->host, label, "backend", m->plugin.settings, config, log);

    gan_status st = m->backend.create(&inst->host.host, &inst->be);
    if (st == GAN_OK && !inst->be)
        st = gan_error_set(err, GAN_ERR_INTERNAL,
                           "backend \"%s\" (%s): create succeeded but gave no instance: fix the plugin",
                           m->plugin.name, m->path);
    else if (st != GAN_OK) {
        const char *why = inst->host.error.message[0] ? inst->host.error.message
                                                      : "it gave no reason";
        if (st == GAN_ERR_DEVICE)
            gan_error_set(err, st, "backend \"%s\" (%s) reports no usable device: %s",
                          m->plugin.name, m->path, why);
        else
            gan_error_set(err, st, "backend \"%s\" (%s) failed to start (%s): %s",
                          m->plugin.name, m->path, gan_status_string(st), why);
    }
    if (st != GAN_OK) {
        free(inst);
        return st;
    }
    *out = inst;
    return GAN_OK;
}

void gan_backend_instance_free(struct gan_backend_instance *inst)
{
    if (!inst)
        return;
    if (inst->be)
        inst->module->backend.destroy(inst->be);
    if (inst->host.live_blocks)
        gan_log_write(inst->host.log, GAN_LOG_DEBUG,
                      "%s: %zu blocks (%zu bytes) from host->alloc not freed at destroy",
                      inst->host.label, inst->host.live_blocks, inst->host.live_bytes);
    free(inst);
}

const char *gan_backend_instance_describe(struct gan_backend_instance *inst)
{
    const char *d = inst->module->backend.describe(inst->be);
    return d ? d : "";
}
