/* SPDX-License-Identifier: MIT */
/* plugin_list.c — what --list-plugins shows: every module in the search path's folders,
 * opened and described (kind, version, settings), a backend also tried on this machine. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strings.h"
#include "plugin/plugin_loader.h"

/* ------------------------------------------------------------------ listing */

static void info_clear(struct gan_plugin_info *p)
{
    free(p->path);
    free(p->kind);
    free(p->name);
    free(p->shadowed_by);
    free(p->error);
    free(p->version);
    free(p->summary);
    free(p->status);
    for (size_t i = 0; i < p->setting_count; i++) {
        free(p->settings[i].name);
        free(p->settings[i].default_value);
        free(p->settings[i].summary);
    }
    free(p->settings);
}

void gan_plugin_list_clear(struct gan_plugin_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        info_clear(&list->items[i]);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "KIND-NAME.so" with both parts non-empty. */
static int module_file_name(const char *f)
{
    size_t n = strlen(f);
    const char *dash = strchr(f, '-');
    return n > 3 && strcmp(f + n - 3, ".so") == 0 && dash && dash != f && dash < f + n - 4;
}

/* The sorted module file names in one folder; a folder that cannot be read has none. */
static gan_status folder_modules(const char *dir, char ***names, size_t *count)
{
    *names = NULL;
    *count = 0;
    DIR *dp = opendir(dir);
    if (!dp)
        return GAN_OK;
    size_t cap = 0;
    gan_status st = GAN_OK;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (!module_file_name(e->d_name))
            continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(*names, cap * sizeof *grown);
            if (!grown) {
                st = GAN_ERR_NOMEM;
                break;
            }
            *names = grown;
        }
        if (!((*names)[*count] = gan_strdup(e->d_name))) {
            st = GAN_ERR_NOMEM;
            break;
        }
        (*count)++;
    }
    closedir(dp);
    if (*count)
        qsort(*names, *count, sizeof **names, compare_names);
    return st;
}

static gan_status describe_settings(struct gan_plugin_info *p, const struct gan_plugin *d)
{
    size_t n = 0;
    for (const struct gan_setting_spec *s = d->settings; s && s->name; s++)
        n++;
    if (!n)
        return GAN_OK;
    p->settings = calloc(n, sizeof *p->settings);
    if (!p->settings)
        return GAN_ERR_NOMEM;
    p->setting_count = n;
    /* Where the settings go in a configuration: a model's under the group of the
     * network that uses it, a loss term's and a recipe's under their own names. */
    char group[300];
    if (d->kind == GAN_PLUGIN_MODEL)
        snprintf(group, sizeof group, "{generator,critic}.model");
    else if (d->kind == GAN_PLUGIN_LOSS)
        snprintf(group, sizeof group, "loss.%s", d->name ? d->name : "?");
    else if (d->kind == GAN_PLUGIN_RECIPE)
        snprintf(group, sizeof group, GAN_CONFIG_RECIPE_GROUP ".%s", d->name ? d->name : "?");
    else
        snprintf(group, sizeof group, "%s", gan_plugin_kind_name(d->kind));
    for (size_t i = 0; i < n; i++) {
        const struct gan_setting_spec *s = &d->settings[i];
        struct gan_plugin_setting_info *o = &p->settings[i];
        size_t len = strlen(group) + strlen(s->name) + 2;
        if (!(o->name = malloc(len)))
            return GAN_ERR_NOMEM;
        snprintf(o->name, len, "%s.%s", group, s->name);
        o->type = s->type;
        if (s->default_value && !(o->default_value = gan_strdup(s->default_value)))
            return GAN_ERR_NOMEM;
        if (!(o->summary = gan_strdup(s->summary ? s->summary : "")))
            return GAN_ERR_NOMEM;
    }
    return GAN_OK;
}

/* Tries the backend's create with default settings, as --list-plugins reports it. */
static gan_status probe_backend(struct gan_plugin_info *p, struct gan_module *m)
{
    struct gan_error e;
    gan_error_clear(&e);
    gan_config *cfg = NULL;
    char label[96];
    snprintf(label, sizeof label, "backend \"%s\"", m->plugin.name);
    gan_status st = gan_config_new(&cfg, &e);
    if (st == GAN_OK)
        st = gan_config_apply_plugin(cfg, "backend", label, m->plugin.settings, &e);
    struct gan_backend_instance *inst = NULL;
    if (st == GAN_OK)
        st = gan_backend_instance_new(m, cfg, NULL, &inst, &e);
    p->is_backend = 1;
    p->available = st == GAN_OK;
    p->status = gan_strdup(st == GAN_OK ? gan_backend_instance_describe(inst) : e.message);
    gan_backend_instance_free(inst);
    gan_config_free(cfg);
    if (st == GAN_ERR_NOMEM || !p->status)
        return GAN_ERR_NOMEM;
    return GAN_OK;
}

static gan_status list_one(struct gan_plugin_list *list, const char *dir, const char *file)
{
    struct gan_plugin_info *p = &list->items[list->count];
    memset(p, 0, sizeof *p);
    list->count++;
    /* Joined by hand: with UBSan's null checks gcc takes `dir`, already read by strlen,
     * for a null snprintf argument and warns, which -Werror makes an error. */
    size_t dir_len = strlen(dir), file_len = strlen(file);
    if (!(p->path = malloc(dir_len + file_len + 2)))
        return GAN_ERR_NOMEM;
    memcpy(p->path, dir, dir_len);
    p->path[dir_len] = '/';
    memcpy(p->path + dir_len + 1, file, file_len + 1);
    const char *dash = strchr(file, '-');
    p->kind = malloc((size_t)(dash - file) + 1);
    p->name = gan_strdup(dash + 1);
    if (!p->kind || !p->name)
        return GAN_ERR_NOMEM;
    memcpy(p->kind, file, (size_t)(dash - file));
    p->kind[dash - file] = '\0';
    p->name[strlen(p->name) - 3] = '\0';

    for (size_t i = 0; i + 1 < list->count; i++) {
        const struct gan_plugin_info *q = &list->items[i];
        if (!q->shadowed_by && strcmp(q->kind, p->kind) == 0 && strcmp(q->name, p->name) == 0) {
            p->shadowed_by = gan_strdup(q->path);
            return p->shadowed_by ? GAN_OK : GAN_ERR_NOMEM;
        }
    }

    enum gan_plugin_kind kind = gan_plugin_kind_parse(p->kind);
    struct gan_error e;
    gan_error_clear(&e);
    struct gan_module *m = NULL;
    if (!kind)
        gan_error_set(&e, GAN_ERR_INVALID,
                      "%s: unknown plugin kind \"%s\" in its file name (modules are named backend-, model-, loss-, scaler- or recipe-NAME.so): rename or remove it",
                      p->path, p->kind);
    else if (gan_module_open(p->path, kind, p->name, &m, &e) == GAN_ERR_NOMEM)
        return GAN_ERR_NOMEM;
    if (!m) {
        p->error = gan_strdup(e.message);
        return p->error ? GAN_OK : GAN_ERR_NOMEM;
    }
    gan_status st = GAN_OK;
    p->version = gan_strdup(m->plugin.version ? m->plugin.version : "");
    p->summary = gan_strdup(m->plugin.summary ? m->plugin.summary : "");
    if (!p->version || !p->summary)
        st = GAN_ERR_NOMEM;
    if (st == GAN_OK)
        st = describe_settings(p, &m->plugin);
    if (st == GAN_OK && kind == GAN_PLUGIN_BACKEND)
        st = probe_backend(p, m);
    gan_module_close(m);
    return st;
}

gan_status gan_loader_scan(const gan_loader *l, struct gan_plugin_list *out, struct gan_error *err)
{
    out->items = NULL;
    out->count = 0;
    size_t cap = 0;
    gan_status st = GAN_OK;
    for (size_t d = 0; st == GAN_OK && d < gan_loader_dir_count(l); d++) {
        char **names;
        size_t n;
        st = folder_modules(gan_loader_dir_at(l, d), &names, &n);
        for (size_t i = 0; i < n; i++) {
            if (st == GAN_OK && out->count == cap) {
                cap = cap ? cap * 2 : 16;
                struct gan_plugin_info *grown = realloc(out->items, cap * sizeof *grown);
                if (grown)
                    out->items = grown;
                else
                    st = GAN_ERR_NOMEM;
            }
            if (st == GAN_OK)
                st = list_one(out, gan_loader_dir_at(l, d), names[i]);
            free(names[i]);
        }
        free(names);
    }
    if (st != GAN_OK) {
        gan_plugin_list_clear(out);
        return gan_error_nomem(err, "loading plugins");
    }
    return GAN_OK;
}
