/* SPDX-License-Identifier: MIT */
/* session.c — the set-up every command that takes a training step shares: plugins,
 * backend and context, networks, models, loss terms, scalers, objective, precision. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image_data.h"
#include "tensor/tensor_core.h"
#include "train/state/compute.h"
#include "train/state/image_run.h"
#include "train/state/session.h"
#include "train/state/streams.h"

/* ------------------------------------------------------------------ the plugins */

/* A network has a scaler group of its own once any key NET.scaler.* is set; it then
 * replaces the shared group "scaler" for that network (the settings are not merged). */
static int own_scaler_group(const gan_config *cfg, const char *net)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.scaler.", net);
    size_t n = strlen(prefix);
    for (size_t i = 0; i < gan_config_count(cfg); i++)
        if (strncmp(gan_config_at(cfg, i)->key, prefix, n) == 0)
            return 1;
    return 0;
}

/* The setting that names network i's scaler: NET.scaler.name, or scaler.name when the
 * network's group does not name one. */
static const struct gan_config_value *scaler_name_value(const gan_config *cfg, int i)
{
    char key[64];
    snprintf(key, sizeof key, "%s.scaler.name", gan_net_role_names[i]);
    const struct gan_config_value *v = gan_config_find(cfg, key);
    return v ? v : gan_config_find(cfg, "scaler.name");
}

/* Each network's scaler module, its settings checked against the group it reads; and
 * the shared group's scaler when no network reads that group, so that its settings are
 * checked all the same. */
static gan_status open_scalers(gan_session *s, gan_config *cfg, const gan_loader *loader,
                               struct gan_error *err)
{
    gan_status st;
    int shared_used = 0;
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        const struct gan_config_value *v = scaler_name_value(cfg, i);
        if (!v || v->type != GAN_CONFIG_STRING)
            return gan_error_set(err, GAN_ERR_INTERNAL, "scaler.name has no value");
        int own = own_scaler_group(cfg, gan_net_role_names[i]);
        snprintf(s->scaler_group[i], sizeof s->scaler_group[i], "%s%s", own ? gan_net_role_names[i] : "",
                 own ? ".scaler" : "scaler");
        shared_used |= !own;
        if ((st = gan_open_configured(loader, cfg, GAN_PLUGIN_SCALER, v->s, s->scaler_group[i],
                             &s->scaler_module[i], err)) != GAN_OK)
            return st;
    }
    if (shared_used)
        return GAN_OK;
    const char *name;
    if (gan_config_get_string(cfg, "scaler.name", &name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "scaler.name has no value");
    return gan_open_configured(loader, cfg, GAN_PLUGIN_SCALER, name, "scaler", &s->scaler_shared, err);
}

/* gan_ctx_add_fp32_scope's patterns: parts of letters, digits, '_', '-' and '*', joined
 * by single dots; at most 255 characters. */
static int valid_fp32_pattern(const char *pattern)
{
    size_t n = strlen(pattern);
    if (n == 0 || n > 255 || pattern[0] == '.' || pattern[n - 1] == '.' || strstr(pattern, ".."))
        return 0;
    for (const char *c = pattern; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '.' || *c == '*'))
            return 0;
    return 1;
}

/* The precision settings against the scalers: a scaler other than "none" without a
 * precision.mode anywhere implies fp16 (at precision.level, O2 by default), since a loss
 * scale is pointless in FP32; with precision.mode = "fp32" given, it is an error. Also
 * checks the FP32 patterns and that the penalty's seed is set where ganctl reads it. */
static gan_status check_precision(gan_config *cfg, const gan_session *s,
                                  struct gan_error *err)
{
    gan_status st;
    int scaled = -1;              /* the network whose scaler scales, critic first */
    for (int i = GAN_NET_CRITIC; i >= 0 && scaled < 0; i--)
        if (strcmp(s->scaler_module[i]->plugin.name, "none") != 0)
            scaled = i;
    const struct gan_config_value *mode = gan_config_find(cfg, "precision.mode");
    if (!mode || mode->type != GAN_CONFIG_STRING)
        return gan_error_set(err, GAN_ERR_INTERNAL, "precision.mode has no value");
    if (scaled >= 0) {
        const struct gan_config_value *sv = scaler_name_value(cfg, scaled);
        if (mode->source == GAN_CONFIG_DEFAULT) {
            char origin[700];
            snprintf(origin, sizeof origin, "implied by %s = \"%s\" (%s)", sv->key, sv->s,
                     sv->origin);
            if ((st = gan_config_set_string(cfg, "precision.mode", "fp16", origin, err)) != GAN_OK)
                return st;
        } else if (strcmp(mode->s, "fp32") == 0) {
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: precision.mode = \"fp32\" with the loss scaler \"%s\" (%s = \"%s\", %s): a loss scale does nothing in FP32; use --scaler none, or --precision fp16",
                                 mode->origin, sv->s, sv->key, sv->s, sv->origin);
        }
    }
    const struct gan_config_value *pv = gan_config_find(cfg, "precision.fp32");
    for (size_t k = 0; pv && k < pv->n_items; k++)
        if (!valid_fp32_pattern(pv->items[k]))
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: precision.fp32 lists \"%.80s\", which is not a scope pattern: write scope names of letters, digits, '_' and '-' joined by single dots, with '*' for any characters (\"penalty\", \"critic.fc3\", \"critic.norm*\")",
                                 pv->origin, pv->items[k]);
    /* The gradient-penalty term's own seed is for hosts that pass none; ganctl always
     * passes penalty.inner_scale, so a different value there would be silently unused. */
    const struct gan_config_value *gv = gan_config_find(cfg, "loss.gradient-penalty.inner_scale");
    double seed = 1.0;
    if (gv && gan_config_get_float(cfg, gv->key, &seed) == GAN_OK && seed != 1.0)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: loss.gradient-penalty.inner_scale = %g: ganctl seeds the penalty's inner gradient with penalty.inner_scale (\"outer\": the critic's loss scale, or a number); set penalty.inner_scale = %g instead",
                             gv->origin, seed, seed);
    return GAN_OK;
}

/* What gan_config_check_loss_groups asks about a term a replaced loss.terms named. */
struct replaced_terms {
    const gan_loader *loader;
    const struct gan_log *log;
};

static int term_installed(void *arg, const char *term)
{
    struct replaced_terms *r = arg;
    struct gan_module *m = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    if (gan_loader_open(r->loader, GAN_PLUGIN_LOSS, term, &m, &err) != GAN_OK)
        return 0;
    gan_module_close(m);
    return 1;
}

/* A loss term's setting left unused because a later source replaced loss.terms. */
static void note_unused(void *arg, const char *key, const char *origin)
{
    struct replaced_terms *r = arg;
    gan_log_write(r->log, GAN_LOG_WARN, "%s: %s is not used: loss.terms, replaced since, "
                  "no longer lists its term", origin, key);
}

static gan_status plugins_open(gan_session *s, gan_config *cfg, const gan_loader *loader,
                               struct gan_error *err)
{
    const char *name;
    gan_status st;
    if ((st = gan_open_backend(loader, cfg, &s->backend_module, err)) != GAN_OK)
        return st;
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        char key[64], group[64];
        snprintf(key, sizeof key, "%s.model.name", gan_net_role_names[i]);
        snprintf(group, sizeof group, "%s.model", gan_net_role_names[i]);
        if (gan_config_get_string(cfg, key, &name) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INTERNAL, "%s has no value", key);
        if ((st = gan_open_configured(loader, cfg, GAN_PLUGIN_MODEL, name, group, &s->model_module[i], err)) != GAN_OK)
            return st;
        if ((st = gan_backend_check_model(s->backend_module, s->model_module[i], gan_net_role_names[i], err)) != GAN_OK)
            return st;
    }
    const char *const *terms;
    size_t n;
    if (gan_config_get_strings(cfg, "loss.terms", &terms, &n) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "loss.terms has no value");
    if (n > GAN_SESSION_MAX_TERMS)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: loss.terms lists %zu terms; at most %d are supported",
                             gan_config_find(cfg, "loss.terms")->origin, n, GAN_SESSION_MAX_TERMS);
    for (size_t i = 0; i < n; i++) {
        char group[300];
        snprintf(group, sizeof group, "loss.%s", terms[i]);
        s->loss_name[i] = terms[i];
        st = gan_open_configured(loader, cfg, GAN_PLUGIN_LOSS, terms[i], group, &s->loss_module[i], err);
        if (s->loss_module[i])
            s->n_loss_modules = i + 1;
        if (st != GAN_OK)
            return st;
    }
    struct replaced_terms rt = { loader, s->log };
    const struct gan_config_replaced_terms replaced = { term_installed, note_unused, &rt };
    if ((st = gan_config_check_loss_groups(cfg, terms, n, &replaced, err)) != GAN_OK)
        return st;
    if ((st = open_scalers(s, cfg, loader, err)) != GAN_OK ||
        (st = gan_session_fp8_open(s, cfg, loader, err)) != GAN_OK)
        return st;
    return check_precision(cfg, s, err);
}


static void plugins_close(gan_session *s)
{
    gan_module_close(s->backend_module);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_module_close(s->model_module[i]);
    for (size_t i = 0; i < s->n_loss_modules; i++)
        gan_module_close(s->loss_module[i]);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_module_close(s->scaler_module[i]);
    gan_module_close(s->scaler_shared);
    gan_module_close(s->recipe_module);
    s->backend_module = s->scaler_shared = s->recipe_module = NULL;
    memset(s->model_module, 0, sizeof s->model_module);
    memset(s->loss_module, 0, sizeof s->loss_module);
    memset(s->scaler_module, 0, sizeof s->scaler_module);
    s->n_loss_modules = 0;
}

gan_status gan_session_check_config(gan_config *cfg, const gan_loader *loader,
                                    struct gan_error *err)
{
    gan_session *s = calloc(1, sizeof *s);
    if (!s)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while checking the configuration");
    gan_status st = plugins_open(s, cfg, loader, err);
    plugins_close(s);
    free(s);
    return st;
}

/* ------------------------------------------------------------------ settings */

static long long get_int(const gan_config *cfg, const char *key)
{
    long long v = 0;
    gan_config_get_int(cfg, key, &v);
    return v;
}

static double get_float(const gan_config *cfg, const char *key)
{
    double v = 0;
    gan_config_get_float(cfg, key, &v);
    return v;
}

/* An image folder's images: data.channels × data.size × data.size, the settings' absence
 * meaning image_folder.h's defaults. */
static gan_status read_folder_shape(const gan_config *cfg, struct gan_session_settings *set,
                                    struct gan_error *err)
{
    long long channels = GAN_IMAGE_FOLDER_DEFAULT_CHANNELS, size = GAN_IMAGE_FOLDER_DEFAULT_SIZE;
    gan_config_get_int(cfg, "data.channels", &channels);
    gan_config_get_int(cfg, "data.size", &size);
    if (channels != 1 && channels != 3)
        return gan_error_set(err, GAN_ERR_CONFIG, "data.channels = %lld: an image folder's "
                             "images are grey (1) or RGB (3); set data.channels to 1 or 3",
                             channels);
    set->is_image = 1;
    set->sample_ndim = 3;
    set->sample_dims[0] = channels;
    set->sample_dims[1] = set->sample_dims[2] = size;
    set->sample_size = channels * size * size;
    return GAN_OK;
}

static gan_status read_settings(gan_session *s, struct gan_error *err)
{
    const gan_config *cfg = s->cfg;
    struct gan_session_settings *set = &s->set;
    set->seed = (uint64_t)get_int(cfg, "run.seed");
    set->batch = get_int(cfg, "data.batch_size");
    set->z_dim = get_int(cfg, "generator.z_dim");
    set->n_critic = get_int(cfg, "critic.iterations");
    set->join_batches = gan_config_get_bool(cfg, "critic.join_batches", &set->join_batches) == GAN_OK && set->join_batches;
    const char *mode = "fp32", *level = "O2";
    gan_config_get_string(cfg, "precision.mode", &mode);
    gan_config_get_string(cfg, "precision.level", &level);
    set->precision = strcmp(mode, "fp16") == 0 ? GAN_F16 : strcmp(mode, "bf16") == 0 ? GAN_BF16 : GAN_F32;
    gan_fp8_read_settings(cfg, &set->fp8);
    if (set->fp8.on)
        set->precision = set->fp8.rest;
    set->level = strcmp(level, "O1") == 0 ? GAN_PRECISION_O1 : GAN_PRECISION_O2;
    if (gan_config_get_float(cfg, "precision.clamp", &set->clamp) != GAN_OK)
        set->clamp = 0.0;
    const struct gan_config_value *inner = gan_config_find(cfg, "penalty.inner_scale");
    set->inner_outer_scale = !inner || inner->type == GAN_CONFIG_STRING;
    set->inner_scale = set->inner_outer_scale ? 1.0 : get_float(cfg, "penalty.inner_scale");
    if (gan_config_get_string(cfg, "data.name", &set->data_name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "data.name has no value");
    set->is_folder = strcmp(set->data_name, GAN_IMAGE_FOLDER_NAME) == 0;
    if (set->is_folder)
        return read_folder_shape(cfg, set, err);
    set->is_image = strcmp(set->data_name, GAN_IMAGE_DATA_NAME) == 0;
    if (set->is_image) {
        set->sample_ndim = 3;
        set->sample_dims[0] = 1;
        set->sample_dims[1] = set->sample_dims[2] = GAN_IMAGE_SIDE;
        set->sample_size = GAN_IMAGE_PIXELS;
        return GAN_OK;
    }
    set->sample_ndim = 1;
    set->sample_dims[0] = set->sample_size = 2;
    return gan_toy_dataset_from_name(set->data_name, &set->kind, err);
}

const char *gan_session_precision_name(const gan_session *s)
{
    if (s->set.precision == GAN_F32)
        return "fp32";
    if (s->set.fp8.on)
        return s->set.precision == GAN_F16 ? "fp8 (fp16 between products)"
                                           : "fp8 (bf16 between products)";
    if (s->set.precision == GAN_F16)
        return s->set.level == GAN_PRECISION_O1 ? "fp16 O1" : "fp16 O2";
    return s->set.level == GAN_PRECISION_O1 ? "bf16 O1" : "bf16 O2";
}

/* ------------------------------------------------------------------ instances */

gan_status gan_session_ctx_fail(gan_session *s, struct gan_error *err, const char *doing)
{
    gan_status st = gan_ctx_status(s->ctx);
    if (st == GAN_OK)
        st = GAN_ERR_INTERNAL;
    gan_error_set(err, st, "%s: %s", doing, gan_ctx_error(s->ctx));
    gan_ctx_clear_error(s->ctx);
    return st;
}

static gan_status make_models(gan_session *s, struct gan_error *err)
{
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        struct gan_session_model *mi = &s->model[i];
        const char *net = gan_net_role_names[i];
        mi->module = s->model_module[i];
        if (gan_net_new(s->ctx, net, &s->net[i]) != GAN_OK)
            return gan_session_ctx_fail(s, err, "creating a network");
        char label[200], group[64];
        snprintf(label, sizeof label, "model %s (%s)", mi->module->plugin.name, net);
        snprintf(group, sizeof group, "%s.model", net);
        gan_plugin_host_init(&mi->host, label, group, mi->module->plugin.settings, s->cfg, s->log);
        struct gan_model_io io;
        memset(&io, 0, sizeof io);
        /* The generator maps z to one sample of the data's shape, the critic such a
         * sample to one score. */
        int generator = i == GAN_NET_GENERATOR;
        int ndim = s->set.sample_ndim;
        io.in_ndim = generator ? 1 : ndim;
        io.out_ndim = generator ? ndim : 1;
        int64_t *sample = generator ? io.out_dims : io.in_dims;
        for (int d = 0; d < ndim; d++)
            sample[d] = s->set.sample_dims[d];
        if (generator)
            io.in_dims[0] = s->set.z_dim;
        else
            io.out_dims[0] = 1;
        gan_net_set_host(s->net[i], &mi->host.host);
        gan_status st = mi->module->model.create(&mi->host.host, gan_net_role_model(i), &io,
                                                 s->net[i], &mi->model);
        gan_net_set_host(s->net[i], NULL);
        if (st == GAN_OK && !mi->model)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK) {
            const char *why = mi->host.error.message[0] ? mi->host.error.message
                            : gan_ctx_error(s->ctx)[0] ? gan_ctx_error(s->ctx) : "it gave no reason";
            gan_error_set(err, st, "model \"%s\" (%s) could not build the %s: %s",
                          mi->module->plugin.name, mi->module->path, net, why);
            gan_ctx_clear_error(s->ctx);
            return st;
        }
        const char *d = mi->module->model.describe ? mi->module->model.describe(mi->model) : NULL;
        snprintf(mi->description, sizeof mi->description, "%s%s%s", mi->module->plugin.name,
                 d ? ": " : "", d ? d : "");
    }
    return GAN_OK;
}

static gan_status make_losses(gan_session *s, struct gan_error *err)
{
    unsigned all = 0;
    const char *game = NULL;      /* the adversarial term met so far */
    for (size_t i = 0; i < s->n_loss_modules; i++) {
        struct gan_session_loss *li = &s->loss[i];
        li->module = s->loss_module[i];
        li->name = s->loss_name[i];
        char label[200], group[200];
        snprintf(label, sizeof label, "loss %s", li->name);
        snprintf(group, sizeof group, "loss.%s", li->name);
        gan_plugin_host_init(&li->host, label, group, li->module->plugin.settings, s->cfg, s->log);
        gan_status st = li->module->loss.create(&li->host.host, &li->loss);
        if (st == GAN_OK && !li->loss)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK)
            return gan_error_set(err, st, "loss \"%s\" (%s) could not start: %s", li->name,
                                 li->module->path,
                                 li->host.error.message[0] ? li->host.error.message : "it gave no reason");
        s->n_loss = i + 1;
        li->targets = li->module->loss.targets(li->loss);
        all |= li->targets;
        if ((li->targets & GAN_LOSS_ADVERSARIAL) && game)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: loss.terms holds two adversarial objectives, \"%s\" and \"%s\": each is a whole game between the networks, and their sum is none that trains; keep one (a penalty such as \"gradient-penalty\" or \"r1\" goes with either)",
                                 gan_config_find(s->cfg, "loss.terms")->origin, game, li->name);
        if (li->targets & GAN_LOSS_ADVERSARIAL)
            game = li->name;
    }
    const char *origin = gan_config_find(s->cfg, "loss.terms")->origin;
    if (!(all & GAN_LOSS_CRITIC))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: no term of loss.terms contributes to the critic's objective: add one, e.g. \"wasserstein\"",
                             origin);
    if (!(all & GAN_LOSS_GENERATOR))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: no term of loss.terms contributes to the generator's objective: add one, e.g. \"wasserstein\"",
                             origin);
    return GAN_OK;
}

/* What gan_session_objective builds from: the models and terms just made. */
static void bind_objective(gan_session *s)
{
    struct gan_objective *o = &s->objective;
    memset(o, 0, sizeof *o);
    o->ctx = s->ctx;
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        o->model[i].module = s->model[i].module;
        o->model[i].model = s->model[i].model;
    }
    for (size_t i = 0; i < s->n_loss; i++) {
        o->term[i].module = s->loss[i].module;
        o->term[i].loss = s->loss[i].loss;
        o->term[i].host = &s->loss[i].host;
        o->term[i].targets = s->loss[i].targets;
        o->term[i].name = s->loss[i].name;
    }
    o->n_terms = s->n_loss;
    o->seed = s->set.seed;
    const struct gan_model_ops *critic = &s->model[GAN_NET_CRITIC].module->model;
    o->join_batches = s->set.join_batches && critic->samples_independent &&
                      critic->samples_independent(s->model[GAN_NET_CRITIC].model);
    o->inner_grad = gan_amp_on_inner_grad;
    o->inner_ctx = &s->inner;
}

static void adam_settings(const gan_config *cfg, const char *net, struct gan_adam_settings *a)
{
    char key[96];
#define OPT(field) \
    snprintf(key, sizeof key, "%s.optimizer." #field, net); \
    a->field = get_float(cfg, key);
    OPT(lr) OPT(beta1) OPT(beta2) OPT(eps) OPT(weight_decay) OPT(clip_norm)
#undef OPT
}

gan_status gan_session_open(gan_config *cfg, const gan_loader *loader, const struct gan_log *log,
                            gan_session **out, struct gan_error *err)
{
    *out = NULL;
    gan_session *s = calloc(1, sizeof *s);
    if (!s)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while setting up training");
    s->cfg = cfg;
    s->log = log;
    gan_status st = plugins_open(s, cfg, loader, err);
    if (st == GAN_OK)
        st = read_settings(s, err);
    if (st == GAN_OK)
        st = gan_compute_new(s->backend_module, cfg, log, &s->backend, &s->ctx, err);
    if (st == GAN_OK)
        st = make_models(s, err);
    if (st == GAN_OK)
        st = make_losses(s, err);
    if (st == GAN_OK)
        bind_objective(s);
    for (int i = 0; st == GAN_OK && i < GAN_NET_ROLES; i++)
        st = gan_amp_net_init(&s->amp[i], s->scaler_module[i], s->scaler_group[i],
                              gan_net_role_names[i], gan_net_count(s->net[i]), cfg, log, err);
    if (st == GAN_OK)
        st = gan_session_fp8_init(s, err);
    /* Initialised from the seed even when a checkpoint is loaded next (it then
     * overwrites the values): the same code path either way. */
    uint64_t init[GAN_NET_ROLES] = { GAN_STREAM_INIT_GENERATOR, GAN_STREAM_INIT_CRITIC };
    for (int i = 0; st == GAN_OK && i < GAN_NET_ROLES; i++) {
        struct gan_adam_settings as;
        adam_settings(cfg, gan_net_role_names[i], &as);
        if (gan_net_init(s->net[i], s->set.seed, &init[i]) != GAN_OK ||
            gan_optimizer_new(s->net[i], &as, &s->opt[i]) != GAN_OK)
            st = gan_session_ctx_fail(s, err, gan_net_role_names[i]);
    }
    if (st != GAN_OK) {
        gan_session_free(s);
        return st;
    }
    *out = s;
    return GAN_OK;
}

void gan_session_free(gan_session *s)
{
    if (!s)
        return;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_amp_net_release(&s->amp[i]);
    gan_amp_fp8_free(&s->fp8);
    for (size_t i = 0; i < s->n_loss; i++)
        if (s->loss[i].loss && s->loss[i].module->loss.destroy)
            s->loss[i].module->loss.destroy(s->loss[i].loss);
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        if (s->model[i].model && s->model[i].module->model.destroy)
            s->model[i].module->model.destroy(s->model[i].model);
        gan_optimizer_free(s->opt[i]);
        gan_net_free(s->net[i]);
    }
    gan_ctx_free(s->ctx);
    gan_backend_instance_free(s->backend);
    plugins_close(s);
    free(s);
}

gan_status gan_session_set_precision(gan_session *s, struct gan_error *err)
{
    if (gan_ctx_set_precision(s->ctx, s->set.precision, s->set.level) != GAN_OK)
        return gan_session_ctx_fail(s, err, "setting the precision");
    if (gan_ctx_set_clamp(s->ctx, (float)s->set.clamp) != GAN_OK)
        return gan_session_ctx_fail(s, err, "precision.clamp");
    const char *const *patterns;
    size_t n = 0;
    if (gan_config_get_strings(s->cfg, "precision.fp32", &patterns, &n) != GAN_OK)
        n = 0;
    for (size_t i = 0; i < n; i++)
        if (gan_ctx_add_fp32_scope(s->ctx, patterns[i]) != GAN_OK)
            return gan_session_ctx_fail(s, err, "precision.fp32");
    return gan_session_fp8_apply(s, err);
}

/* ------------------------------------------------------------------ a step's parts */

gan_tensor *gan_session_forward(gan_session *s, enum gan_net_role role, gan_tensor *x)
{
    return gan_objective_forward(&s->objective, role, s->ctx, x);
}

gan_tensor *gan_session_draw_z(gan_session *s, int64_t n, uint64_t *offset)
{
    int64_t dims[2] = { n, s->set.z_dim };
    gan_tensor *z = gan_tensor_normal(s->ctx, GAN_F32, 2, dims, s->set.seed, *offset, 0.0f, 1.0f);
    *offset += (uint64_t)(n * s->set.z_dim + 3) / 4;
    return z;
}

int gan_session_batch_dims(const gan_session *s, int64_t n, int64_t *dims)
{
    dims[0] = n;
    for (int d = 0; d < s->set.sample_ndim; d++)
        dims[d + 1] = s->set.sample_dims[d];
    return s->set.sample_ndim + 1;
}

gan_tensor *gan_session_objective(gan_session *s, enum gan_loss_target target, int64_t iteration,
                                  double scale, gan_tensor *real, gan_tensor *fake,
                                  gan_tensor *alpha, uint64_t *loss_offset,
                                  struct gan_objective_sink *sink)
{
    s->objective.iteration = iteration;
    s->objective.inner_scale = s->set.inner_outer_scale ? scale : s->set.inner_scale;
    /* An FP32 shadow rebuilds an objective in the middle of a step: what the step's own
     * objective collected stays. */
    if (!s->inner.paused)
        gan_amp_inner_begin(&s->inner, s->ctx, scale);
    return gan_objective_build(&s->objective, target, real, fake, alpha, loss_offset, sink);
}

/* ------------------------------------------------------------------ checkpoints */

gan_status gan_session_save_checkpoint(gan_session *s, const char *path,
                                       const struct gan_checkpoint_state *state,
                                       struct gan_error *err)
{
    struct gan_checkpoint_net nets[GAN_NET_ROLES];
    struct gan_checkpoint_scaling scalings[GAN_NET_ROLES];
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        struct gan_amp_net *a = &s->amp[i];
        memset(&scalings[i], 0, sizeof scalings[i]);
        if (gan_scaler_save_state(a->module, a->sc, &scalings[i].state) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INTERNAL, "the %s's loss scaler \"%s\" could not save its state: %s",
                                 gan_net_role_names[i], a->module->plugin.name,
                                 a->host.error.message[0] ? a->host.error.message : "it gave no reason");
        scalings[i].skipped = a->skipped;
        scalings[i].overflows = a->overflows;
        nets[i] = (struct gan_checkpoint_net){ gan_net_role_names[i], s->net[i], s->opt[i], &scalings[i] };
    }
    struct gan_checkpoint_state with_fp8 = *state;
    struct gan_fp8_state fp8;
    gan_status st = gan_session_fp8_save(s, &fp8, err);
    with_fp8.fp8 = &fp8;
    gan_ctx_fp8_totals(s->ctx, &with_fp8.fp8_totals, 0);
    if (st == GAN_OK)
        st = gan_checkpoint_save(path, nets, GAN_NET_ROLES, &with_fp8, err);
    gan_fp8_state_clear(&fp8);
    return st;
}

/* The backward passes a network has made by the end of `iteration`, as the trainer's
 * loop makes them: the generator one per iteration from the second on, the critic
 * n_critic per iteration. Each ends in an Adam step or a skipped one, so a checkpoint's
 * optimizer.NET.step plus trainer.NET.skipped must equal this. */
static uint64_t backward_passes(const gan_session *s, enum gan_net_role role, int64_t iteration)
{
    if (role == GAN_NET_GENERATOR)
        return iteration > 0 ? (uint64_t)iteration - 1 : 0;
    return (uint64_t)iteration * (uint64_t)s->set.n_critic;
}

/* A loaded checkpoint's counts against each other and the configuration: the file's
 * checks (checkpoint.c) bound each value alone; these need n_critic. */
static gan_status check_counts(const gan_session *s, const char *path,
                               const struct gan_checkpoint_state *state,
                               const struct gan_checkpoint_scaling *scalings,
                               struct gan_error *err)
{
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        const char *net = gan_net_role_names[i];
        int64_t steps = gan_optimizer_steps(s->opt[i]);
        uint64_t done = (uint64_t)steps + (uint64_t)scalings[i].skipped;
        uint64_t want = backward_passes(s, (enum gan_net_role)i, state->iteration);
        if (done == want)
            continue;
        char take[128];
        if (i == GAN_NET_GENERATOR)
            snprintf(take, sizeof take, "make %" PRIu64 " (one per iteration after the first)", want);
        else
            snprintf(take, sizeof take, "make %" PRIu64 " (critic.iterations = %lld per iteration)",
                     want, (long long)s->set.n_critic);
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's optimizer.%s.step = %lld and trainer.%s.skipped = %lld count %" PRIu64 " %s steps, but its %lld iterations %s: the file is damaged or belongs to another configuration; resume from a copy of the run folder or start a new run",
                             path, net, (long long)steps, net, (long long)scalings[i].skipped,
                             done, net, (long long)state->iteration, take);
    }
    return GAN_OK;
}

/* A run resumed past its end would report more iterations than planned and divide
 * the learning-rate decay past zero; at its end it only finishes again. */
static gan_status check_plan(const gan_session *s, const char *path,
                             const struct gan_checkpoint_state *state, struct gan_error *err)
{
    long long planned = 0;
    if (gan_config_get_int(s->cfg, "run.iterations", &planned) != GAN_OK ||
        state->iteration <= planned)
        return GAN_OK;
    const struct gan_config_value *v = gan_config_find(s->cfg, "run.iterations");
    return gan_error_set(err, GAN_ERR_CONFIG,
                         "%s: the checkpoint is at iteration %lld, past run.iterations = %lld (%s): set run.iterations above %lld to continue the run",
                         path, (long long)state->iteration, planned, v ? v->origin : "default",
                         (long long)state->iteration);
}

gan_status gan_session_load_checkpoint(gan_session *s, const char *path,
                                       struct gan_checkpoint_state *state, struct gan_error *err)
{
    struct gan_checkpoint_net nets[GAN_NET_ROLES];
    struct gan_checkpoint_scaling scalings[GAN_NET_ROLES];
    for (int i = 0; i < GAN_NET_ROLES; i++)
        nets[i] = (struct gan_checkpoint_net){ gan_net_role_names[i], s->net[i], s->opt[i], &scalings[i] };
    struct gan_fp8_state fp8;
    memset(&fp8, 0, sizeof fp8);
    state->fp8 = &fp8;
    gan_status st = gan_checkpoint_load(path, nets, GAN_NET_ROLES, state, err);
    state->fp8 = NULL;
    if (st == GAN_OK)
        st = check_counts(s, path, state, scalings, err);
    if (st == GAN_OK)
        st = gan_session_fp8_load(s, &fp8, path, err);
    if (st == GAN_OK && s->set.fp8.on)
        gan_ctx_fp8_set_totals(s->ctx, &state->fp8_totals);
    gan_fp8_state_clear(&fp8);
    if (st != GAN_OK)
        return st;
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        struct gan_amp_net *a = &s->amp[i];
        a->host.error.message[0] = '\0';
        if ((st = gan_scaler_load_state(a->module, a->sc, &a->host.host, &scalings[i].state)) != GAN_OK)
            /* The state's own name and version are the file's text: not quoted. */
            return gan_error_set(err, st, "%s: the %s's loss scaler \"%s\" refuses the saved state (metadata \"scaler.%s\"): %s",
                                 path, gan_net_role_names[i], a->module->plugin.name,
                                 gan_net_role_names[i],
                                 a->host.error.message[0] ? a->host.error.message : "it gave no reason");
        a->skipped = scalings[i].skipped;
        a->overflows = (unsigned)scalings[i].overflows;
    }
    return check_plan(s, path, state, err);
}
