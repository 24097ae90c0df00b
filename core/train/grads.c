/* grads.c — the replay behind `ganctl grads`: both objectives of a training step at a checkpoint's parameters
 * on a given batch (real, z, α), their gradients and reported values, written as safetensors. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train/checkpoint.h"
#include "config/configuration.h"
#include "train/grads.h"
#include "plugin/host.h"
#include "nn/net.h"
#include "nn/objective.h"
#include "nn/optimizer.h"
#include "train/run_dir.h"
#include "io/safetensors.h"
#include "tensor/tensor_core.h"
#include "data/toy_data.h"

/* As the trainer: at most this many loss terms. */
#define MAX_TERMS GAN_OBJECTIVE_MAX_TERMS

/* The trainer builds its networks for the toy data sets' 2-D points. */
#define SAMPLE_SIZE 2

static const char *const net_names[2] = { "generator", "critic" };

/* ------------------------------------------------------------------ the instance
 * The part of the trainer's set-up (trainer.c) that one step needs — plugins, backend,
 * precision, networks, loss terms, scalers, the checkpoint — without the run folder,
 * the data sampler and the evaluation sets it also makes. It reads the same settings
 * the same way, and must follow trainer.c when that changes how a step is computed; the
 * objectives themselves are objective.c's, which the trainer builds its own with.
 * check_grads compares the result with finite differences and a host computation. */

struct model_inst {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_model *model;
};

struct loss_inst {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_loss *loss;
    unsigned targets;
    const char *name;             /* points into the configuration's loss.terms */
};

struct scaler_inst {
    struct gan_module *module;
    char group[32];               /* "scaler", or "NET.scaler" when the net has its own */
    struct gan_plugin_host host;
    gan_scaler *sc;
};

struct gan_grads {
    gan_config *cfg;
    const struct gan_log *log;
    char *checkpoint;
    int64_t iteration;
    uint64_t seed, loss_offset;
    int64_t z_dim;
    /* The precision policy and the penalty's inner seed, read as the trainer reads them. */
    enum gan_dtype precision;
    enum gan_precision_level level;
    int inner_outer_scale;        /* penalty.inner_scale = "outer" */
    double inner_scale;
    double scale[2];              /* each network's loss scale from its scaler's saved state */

    struct gan_module *backend_module;
    struct gan_module *model_module[2];
    struct gan_module *loss_module[MAX_TERMS];
    size_t n_modules;             /* loss modules opened */
    struct gan_backend_instance *backend;
    gan_ctx *ctx;
    gan_net *net[2];
    gan_optimizer *opt[2];        /* only to receive the checkpoint's moments */
    struct model_inst model[2];
    struct scaler_inst scaler[2];
    struct loss_inst loss[MAX_TERMS];
    size_t n_loss;
    struct gan_objective objective;   /* the models and terms above, for objective() */

    /* Debug level 2: each network's FP32 shadow comparison, and the inputs of the
     * evaluation in progress, for the shadow to build its objectives again. */
    gan_probe *probe[2];
    struct {
        gan_tensor *real, *fake, *z, *alpha;
        int net;
        size_t tape_start[2];     /* each objective's first node on the tape */
    } shadow;
};

gan_ctx *gan_grads_ctx(const gan_grads *g)
{
    return g->ctx;
}

gan_net *gan_grads_net(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? g->net[0] : role == GAN_MODEL_CRITIC ? g->net[1] : NULL;
}

const char *gan_grads_checkpoint(const gan_grads *g)
{
    return g->checkpoint;
}

int64_t gan_grads_iteration(const gan_grads *g)
{
    return g->iteration;
}

int64_t gan_grads_sample_size(const gan_grads *g)
{
    (void)g;
    return SAMPLE_SIZE;
}

int64_t gan_grads_z_size(const gan_grads *g)
{
    return g->z_dim;
}

const char *gan_grads_backend_description(const gan_grads *g)
{
    return gan_backend_instance_describe(g->backend);
}

double gan_grads_scale(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? g->scale[0] : role == GAN_MODEL_CRITIC ? g->scale[1] : NAN;
}

const char *gan_grads_precision(const gan_grads *g)
{
    if (g->precision == GAN_F32)
        return "fp32";
    if (g->precision == GAN_F16)
        return g->level == GAN_PRECISION_O1 ? "fp16 O1" : "fp16 O2";
    return g->level == GAN_PRECISION_O1 ? "bf16 O1" : "bf16 O2";
}

gan_status gan_grads_set_debug_level(gan_grads *g, int level, struct gan_error *err)
{
    if (level < 2 || g->precision == GAN_F32)
        return GAN_OK;
    for (int i = 0; i < 2; i++)
        if (!g->probe[i] && gan_probe_new(&g->probe[i]) != GAN_OK)
            return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for --debug-level 2");
    return GAN_OK;
}

const gan_probe *gan_grads_probe(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? g->probe[0] : role == GAN_MODEL_CRITIC ? g->probe[1] : NULL;
}

void gan_grads_report_free(struct gan_grads_report *report)
{
    for (int i = 0; i < 2; i++) {
        gan_probe_free(report->probe[i]);
        report->probe[i] = NULL;
    }
}

void gan_grads_free(gan_grads *g)
{
    if (!g)
        return;
    for (int i = 0; i < 2; i++)
        gan_probe_free(g->probe[i]);
    for (size_t i = 0; i < g->n_loss; i++)
        if (g->loss[i].loss && g->loss[i].module->loss.destroy)
            g->loss[i].module->loss.destroy(g->loss[i].loss);
    for (int i = 0; i < 2; i++) {
        if (g->model[i].model && g->model[i].module->model.destroy)
            g->model[i].module->model.destroy(g->model[i].model);
        if (g->scaler[i].sc && g->scaler[i].module->scaler.destroy)
            g->scaler[i].module->scaler.destroy(g->scaler[i].sc);
        gan_optimizer_free(g->opt[i]);
        gan_net_free(g->net[i]);
    }
    gan_ctx_free(g->ctx);
    gan_backend_instance_free(g->backend);
    gan_module_close(g->backend_module);
    for (int i = 0; i < 2; i++) {
        gan_module_close(g->model_module[i]);
        gan_module_close(g->scaler[i].module);
    }
    for (size_t i = 0; i < g->n_modules; i++)
        gan_module_close(g->loss_module[i]);
    gan_config_free(g->cfg);
    free(g->checkpoint);
    free(g);
}

/* The context's failure as `err`, naming what was being done. */
static gan_status ctx_fail(gan_grads *g, struct gan_error *err, const char *doing)
{
    gan_status st = gan_ctx_status(g->ctx);
    if (st == GAN_OK)
        st = GAN_ERR_INTERNAL;
    gan_error_set(err, st, "%s: %s", doing, gan_ctx_error(g->ctx));
    gan_ctx_clear_error(g->ctx);
    return st;
}

static const char *backend_message(void *arg)
{
    struct gan_backend_instance *inst = arg;
    return inst->host.error.message;
}

/* The checkpoint file: `path` itself, or the one in the run folder `path`. */
static char *checkpoint_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return gan_run_path(path, GAN_RUN_CHECKPOINT);
    char *copy = malloc(strlen(path) + 1);
    if (copy)
        strcpy(copy, path);
    return copy;
}

/* The saved configuration, with the command line's backend changes. */
static gan_status load_config(gan_grads *g, const struct gan_grads_setting *settings,
                              size_t count, struct gan_error *err)
{
    char *text = NULL;
    gan_status st = gan_checkpoint_read_config(g->checkpoint, &text, err);
    if (st != GAN_OK)
        return st;
    char label[4200];
    snprintf(label, sizeof label, "%s (saved configuration)", g->checkpoint);
    st = gan_config_new(&g->cfg, err);
    if (st == GAN_OK)
        st = gan_config_read_string(g->cfg, text, label, GAN_CONFIG_FILE, err);
    free(text);
    for (size_t i = 0; st == GAN_OK && i < count; i++) {
        const struct gan_grads_setting *s = &settings[i];
        if (s->backend) {
            char origin[512];
            snprintf(origin, sizeof origin, "--backend %s", s->backend);
            st = gan_config_set_string(g->cfg, "backend.name", s->backend, origin, err);
            continue;
        }
        const char *a = s->assignment ? s->assignment : "";
        size_t key = strcspn(a, "= ");
        if (!(strncmp(a, "backend.", 8) == 0 || (key == 9 && strncmp(a, "log.level", 9) == 0)))
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "--set %s: ganctl grads computes with the checkpoint's configuration; only backend.* and log.level may be set",
                                 a);
        st = gan_config_set(g->cfg, a, err);
    }
    return st;
}

/* Opens the plugin `name` of `kind` and checks the settings of `group` against it. */
static gan_status open_named(gan_grads *g, const gan_loader *loader, enum gan_plugin_kind kind,
                             const char *name, const char *group, struct gan_module **out,
                             struct gan_error *err)
{
    gan_status st = gan_loader_open(loader, kind, name, out, err);
    if (st != GAN_OK)
        return st;
    char label[300];
    snprintf(label, sizeof label, "%s \"%s\"", gan_plugin_kind_name(kind), name);
    return gan_config_apply_plugin(g->cfg, group, label, (*out)->plugin.settings, err);
}

static gan_status open_plugins(gan_grads *g, const gan_loader *loader, struct gan_error *err)
{
    const char *name;
    gan_status st;
    if (gan_config_get_string(g->cfg, "backend.name", &name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "backend.name has no value");
    if ((st = open_named(g, loader, GAN_PLUGIN_BACKEND, name, "backend", &g->backend_module,
                         err)) != GAN_OK)
        return st;
    for (int i = 0; i < 2; i++) {
        char key[64], group[64];
        snprintf(key, sizeof key, "%s.model.name", net_names[i]);
        snprintf(group, sizeof group, "%s.model", net_names[i]);
        if (gan_config_get_string(g->cfg, key, &name) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INTERNAL, "%s has no value", key);
        if ((st = open_named(g, loader, GAN_PLUGIN_MODEL, name, group, &g->model_module[i],
                             err)) != GAN_OK)
            return st;
    }
    /* Each network's loss scaler, as the trainer picks it: the group NET.scaler once any
     * key in it is set, else the shared group scaler; the name from the group chosen,
     * else scaler.name. */
    for (int i = 0; i < 2; i++) {
        char key[64], prefix[64];
        snprintf(prefix, sizeof prefix, "%s.scaler.", net_names[i]);
        int own = 0;
        for (size_t k = 0; k < gan_config_count(g->cfg) && !own; k++)
            own = strncmp(gan_config_at(g->cfg, k)->key, prefix, strlen(prefix)) == 0;
        snprintf(g->scaler[i].group, sizeof g->scaler[i].group, "%s%s", own ? net_names[i] : "",
                 own ? ".scaler" : "scaler");
        snprintf(key, sizeof key, "%s.scaler.name", net_names[i]);
        const struct gan_config_value *v = gan_config_find(g->cfg, key);
        if (!v)
            v = gan_config_find(g->cfg, "scaler.name");
        if (!v || v->type != GAN_CONFIG_STRING)
            return gan_error_set(err, GAN_ERR_INTERNAL, "scaler.name has no value");
        if ((st = open_named(g, loader, GAN_PLUGIN_SCALER, v->s, g->scaler[i].group,
                             &g->scaler[i].module, err)) != GAN_OK)
            return st;
    }
    const char *const *terms;
    size_t n;
    if (gan_config_get_strings(g->cfg, "loss.terms", &terms, &n) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "loss.terms has no value");
    if (n > MAX_TERMS)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: loss.terms lists %zu terms; at most %d are supported",
                             g->checkpoint, n, MAX_TERMS);
    for (size_t i = 0; i < n; i++) {
        char group[300];
        snprintf(group, sizeof group, "loss.%s", terms[i]);
        g->loss[i].name = terms[i];
        st = open_named(g, loader, GAN_PLUGIN_LOSS, terms[i], group, &g->loss_module[i], err);
        if (g->loss_module[i])
            g->n_modules = i + 1;
        if (st != GAN_OK)
            return st;
    }
    return gan_config_check_loss_groups(g->cfg, terms, n, err);
}

static gan_status make_models(gan_grads *g, struct gan_error *err)
{
    for (int i = 0; i < 2; i++) {
        struct model_inst *mi = &g->model[i];
        mi->module = g->model_module[i];
        if (gan_net_new(g->ctx, net_names[i], &g->net[i]) != GAN_OK)
            return ctx_fail(g, err, "creating a network");
        char label[200], group[64];
        snprintf(label, sizeof label, "model %s (%s)", mi->module->plugin.name, net_names[i]);
        snprintf(group, sizeof group, "%s.model", net_names[i]);
        gan_plugin_host_init(&mi->host, label, group, mi->module->plugin.settings, g->cfg, g->log);
        struct gan_model_io io;
        memset(&io, 0, sizeof io);
        io.in_ndim = io.out_ndim = 1;
        io.in_dims[0] = i == 0 ? g->z_dim : SAMPLE_SIZE;
        io.out_dims[0] = i == 0 ? SAMPLE_SIZE : 1;
        gan_net_set_host(g->net[i], &mi->host.host);
        gan_status st = mi->module->model.create(&mi->host.host,
                                                 i == 0 ? GAN_MODEL_GENERATOR : GAN_MODEL_CRITIC,
                                                 &io, g->net[i], &mi->model);
        gan_net_set_host(g->net[i], NULL);
        if (st == GAN_OK && !mi->model)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK) {
            const char *why = mi->host.error.message[0] ? mi->host.error.message
                            : gan_ctx_error(g->ctx)[0] ? gan_ctx_error(g->ctx) : "it gave no reason";
            gan_error_set(err, st, "model \"%s\" (%s) could not build the %s: %s",
                          mi->module->plugin.name, mi->module->path, net_names[i], why);
            gan_ctx_clear_error(g->ctx);
            return st;
        }
    }
    return GAN_OK;
}

static gan_status make_losses(gan_grads *g, struct gan_error *err)
{
    for (size_t i = 0; i < g->n_modules; i++) {
        struct loss_inst *li = &g->loss[i];
        li->module = g->loss_module[i];
        char label[200], group[200];
        snprintf(label, sizeof label, "loss %s", li->name);
        snprintf(group, sizeof group, "loss.%s", li->name);
        gan_plugin_host_init(&li->host, label, group, li->module->plugin.settings, g->cfg, g->log);
        gan_status st = li->module->loss.create(&li->host.host, &li->loss);
        if (st == GAN_OK && !li->loss)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK)
            return gan_error_set(err, st, "loss \"%s\" (%s) could not start: %s", li->name,
                                 li->module->path,
                                 li->host.error.message[0] ? li->host.error.message : "it gave no reason");
        g->n_loss = i + 1;
        li->targets = li->module->loss.targets(li->loss);
    }
    return GAN_OK;
}

/* What objective() builds from: the models and terms just made, and the run's seed. */
static void bind_objective(gan_grads *g)
{
    struct gan_objective *o = &g->objective;
    memset(o, 0, sizeof *o);
    o->ctx = g->ctx;
    for (int i = 0; i < 2; i++) {
        o->model[i].module = g->model[i].module;
        o->model[i].model = g->model[i].model;
    }
    for (size_t i = 0; i < g->n_loss; i++) {
        o->term[i].module = g->loss[i].module;
        o->term[i].loss = g->loss[i].loss;
        o->term[i].host = &g->loss[i].host;
        o->term[i].targets = g->loss[i].targets;
        o->term[i].name = g->loss[i].name;
    }
    o->n_terms = g->n_loss;
    o->seed = g->seed;
}

/* The settings of the training step that do not live in a plugin: the precision policy
 * (precision.mode, .level, .fp32) and the penalty's inner seed (penalty.inner_scale). */
static gan_status set_up_precision(gan_grads *g, struct gan_error *err)
{
    const char *mode = "fp32", *level = "O2";
    gan_config_get_string(g->cfg, "precision.mode", &mode);
    gan_config_get_string(g->cfg, "precision.level", &level);
    g->precision = strcmp(mode, "fp16") == 0 ? GAN_F16 : strcmp(mode, "bf16") == 0 ? GAN_BF16 : GAN_F32;
    g->level = strcmp(level, "O1") == 0 ? GAN_PRECISION_O1 : GAN_PRECISION_O2;
    const struct gan_config_value *inner = gan_config_find(g->cfg, "penalty.inner_scale");
    g->inner_outer_scale = !inner || inner->type == GAN_CONFIG_STRING;
    g->inner_scale = 1.0;
    if (!g->inner_outer_scale)
        gan_config_get_float(g->cfg, "penalty.inner_scale", &g->inner_scale);
    if (gan_ctx_set_precision(g->ctx, g->precision, g->level) != GAN_OK)
        return ctx_fail(g, err, "setting the precision");
    const char *const *patterns;
    size_t n = 0;
    if (gan_config_get_strings(g->cfg, "precision.fp32", &patterns, &n) != GAN_OK)
        n = 0;
    for (size_t i = 0; i < n; i++)
        if (gan_ctx_add_fp32_scope(g->ctx, patterns[i]) != GAN_OK)
            return ctx_fail(g, err, "precision.fp32");
    return GAN_OK;
}

static double config_float(const gan_config *cfg, const char *key)
{
    double v = 0;
    gan_config_get_float(cfg, key, &v);
    return v;
}

/* Everything of the checkpoint a step needs: both networks' parameters, the counters the
 * loss terms see, and each network's loss scale, which its scaler gives from the saved
 * state. checkpoint.c reads and checks the whole file, so Adam's moments are loaded too,
 * into optimizers made for the purpose. */
static gan_status load_checkpoint(gan_grads *g, struct gan_error *err)
{
    struct gan_checkpoint_net nets[2];
    struct gan_checkpoint_scaling scalings[2];
    for (int i = 0; i < 2; i++) {
        struct gan_adam_settings as;
        char key[96];
#define OPT(field) \
        snprintf(key, sizeof key, "%s.optimizer." #field, net_names[i]); \
        as.field = config_float(g->cfg, key);
        OPT(lr) OPT(beta1) OPT(beta2) OPT(eps) OPT(weight_decay) OPT(clip_norm)
#undef OPT
        if (gan_optimizer_new(g->net[i], &as, &g->opt[i]) != GAN_OK)
            return ctx_fail(g, err, net_names[i]);
        struct scaler_inst *si = &g->scaler[i];
        char label[200];
        snprintf(label, sizeof label, "scaler %s (%s)", si->module->plugin.name, net_names[i]);
        gan_plugin_host_init(&si->host, label, si->group, si->module->plugin.settings, g->cfg,
                             g->log);
        gan_status st = si->module->scaler.create(&si->host.host, &si->sc);
        if (st == GAN_OK && !si->sc)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK)
            return gan_error_set(err, st, "scaler \"%s\" (%s) could not start for the %s: %s",
                                 si->module->plugin.name, si->module->path, net_names[i],
                                 si->host.error.message[0] ? si->host.error.message : "it gave no reason");
        nets[i] = (struct gan_checkpoint_net){ net_names[i], g->net[i], g->opt[i], &scalings[i] };
    }
    struct gan_checkpoint_state state;
    gan_status st = gan_checkpoint_load(g->checkpoint, nets, 2, &state, err);
    if (st != GAN_OK)
        return st;
    g->iteration = state.iteration;
    g->loss_offset = state.loss_offset;
    for (int i = 0; i < 2; i++) {
        struct scaler_inst *si = &g->scaler[i];
        si->host.error.message[0] = '\0';
        if ((st = gan_scaler_load_state(si->module, si->sc, &si->host.host, &scalings[i].state)) != GAN_OK)
            return gan_error_set(err, st, "%s: the %s's loss scaler \"%s\" refuses the saved state (%s/%lld): %s",
                                 g->checkpoint, net_names[i], si->module->plugin.name,
                                 scalings[i].state.scaler, (long long)scalings[i].state.version,
                                 si->host.error.message[0] ? si->host.error.message : "it gave no reason");
        g->scale[i] = si->module->scaler.scale(si->sc);
    }
    return GAN_OK;
}

gan_status gan_grads_open(const char *checkpoint, const struct gan_grads_setting *settings,
                          size_t setting_count, const gan_loader *loader,
                          const struct gan_log *log, gan_grads **out, struct gan_error *err)
{
    *out = NULL;
    gan_grads *g = calloc(1, sizeof *g);
    if (!g || !(g->checkpoint = checkpoint_file(checkpoint))) {
        free(g);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while opening %s", checkpoint);
    }
    g->log = log;
    gan_status st = load_config(g, settings, setting_count, err);
    if (st == GAN_OK)
        st = open_plugins(g, loader, err);
    long long z_dim = 0, seed = 0;
    const char *data = NULL;
    if (st == GAN_OK) {
        gan_config_get_int(g->cfg, "generator.z_dim", &z_dim);
        gan_config_get_int(g->cfg, "run.seed", &seed);
        g->z_dim = z_dim;
        g->seed = (uint64_t)seed;
        enum gan_toy_kind kind;
        if (gan_config_get_string(g->cfg, "data.name", &data) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INTERNAL, "data.name has no value");
        else
            st = gan_toy_dataset_from_name(data, &kind, err);
    }
    if (st == GAN_OK)
        st = gan_backend_instance_new(g->backend_module, g->cfg, log, &g->backend, err);
    if (st == GAN_OK) {
        st = gan_ctx_new(&g->backend_module->backend, g->backend->be, &g->ctx);
        if (st != GAN_OK)
            gan_error_set(err, st, "cannot make the compute context: out of memory");
        else
            gan_ctx_set_backend_message(g->ctx, backend_message, g->backend);
    }
    if (st == GAN_OK)
        st = set_up_precision(g, err);
    if (st == GAN_OK)
        st = make_models(g, err);
    if (st == GAN_OK)
        st = make_losses(g, err);
    if (st == GAN_OK)
        st = load_checkpoint(g, err);
    if (st == GAN_OK)
        bind_objective(g);
    if (st != GAN_OK) {
        gan_grads_free(g);
        return st;
    }
    *out = g;
    return GAN_OK;
}

/* ------------------------------------------------------------------ the batch */

void gan_grads_batch_free(struct gan_grads_batch *batch)
{
    free(batch->real);
    free(batch->z);
    free(batch->alpha);
    memset(batch, 0, sizeof *batch);
}

static void shape_text(char *buf, size_t size, const struct gan_st_tensor *t)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)t->shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* One tensor of the batch file: 2-D, `cols` columns, `rows` rows (or any number ≥ 1 when
 * *rows is 0, which then becomes it), F32 or F64, finite; copied out as floats. */
static gan_status batch_tensor(const gan_st_file *f, const char *path, const char *name,
                               const char *cols_meaning, int64_t cols, int64_t *rows,
                               float **out, struct gan_error *err)
{
    const struct gan_st_tensor *t = gan_st_find(f, name);
    if (!t)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the batch has no tensor \"%s\"; a batch file holds real [B, %d], z [B, Z] and alpha [B, 1]",
                             path, name, SAMPLE_SIZE);
    char found[160];
    shape_text(found, sizeof found, t);
    char want[64];
    if (*rows)
        snprintf(want, sizeof want, "[%lld, %lld]", (long long)*rows, (long long)cols);
    else
        snprintf(want, sizeof want, "[B, %lld]", (long long)cols);
    if (t->ndim != 2 || t->shape[1] != (uint64_t)cols || t->shape[0] < 1 ||
        (*rows && t->shape[0] != (uint64_t)*rows))
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: %s is %s; it must be %s (%s%s)", path, name, found, want,
                             cols_meaning, *rows ? ", one row per sample of real" : ", B ≥ 1");
    if (t->dtype != GAN_ST_F32 && t->dtype != GAN_ST_F64)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: %s is %s; write it as F32 or F64", path,
                             name, gan_st_dtype_name(t->dtype));
    size_t n = (size_t)t->count;
    float *v = malloc(n * sizeof *v);
    if (!v)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory reading %s from %s", name, path);
    for (size_t k = 0; k < n; k++) {
        /* The data is little-endian and 8-byte aligned in gan_st_open's copy. */
        double x;
        if (t->dtype == GAN_ST_F32) {
            float y;
            memcpy(&y, (const char *)t->data + 4 * k, 4);
            x = y;
        } else {
            memcpy(&x, (const char *)t->data + 8 * k, 8);
        }
        v[k] = (float)x;
        if (!isfinite(v[k])) {
            free(v);
            return gan_error_set(err, GAN_ERR_FORMAT, "%s: %s[%zu][%zu] is %g%s", path, name,
                                 k / (size_t)cols, k % (size_t)cols, x,
                                 isfinite(x) ? ", beyond FP32's range" : "; the batch must be finite");
        }
    }
    *rows = (int64_t)t->shape[0];
    *out = v;
    return GAN_OK;
}

gan_status gan_grads_read_batch(const gan_grads *g, const char *path, struct gan_grads_batch *batch,
                                struct gan_error *err)
{
    memset(batch, 0, sizeof *batch);
    gan_st_file *f = NULL;
    char msg[768];
    gan_status st = gan_st_open(path, &f, msg, sizeof msg);
    if (st != GAN_OK)
        return gan_error_set(err, st, "--batch %s: %s", path, msg);
    char z_meaning[96];
    snprintf(z_meaning, sizeof z_meaning, "generator.z_dim = %lld", (long long)g->z_dim);
    int64_t rows = 0;
    st = batch_tensor(f, path, "real", "the checkpoint's critic takes 2-D points", SAMPLE_SIZE,
                      &rows, &batch->real, err);
    if (st == GAN_OK)
        st = batch_tensor(f, path, "z", z_meaning, g->z_dim, &rows, &batch->z, err);
    if (st == GAN_OK)
        st = batch_tensor(f, path, "alpha", "one interpolation weight per sample", 1, &rows,
                          &batch->alpha, err);
    for (int64_t i = 0; st == GAN_OK && i < rows; i++)
        if (!(batch->alpha[i] >= 0.0f && batch->alpha[i] <= 1.0f))
            st = gan_error_set(err, GAN_ERR_FORMAT,
                               "%s: alpha[%lld][0] is %g; interpolation weights lie in [0, 1]", path,
                               (long long)i, batch->alpha[i]);
    gan_st_close(f);
    if (st != GAN_OK) {
        gan_grads_batch_free(batch);
        return st;
    }
    batch->size = rows;
    return GAN_OK;
}

/* ------------------------------------------------------------------ evaluation */

/* A model's forward inside its network's scope, as the trainer runs it. */
static gan_tensor *net_forward(gan_grads *g, int i, gan_ctx *ctx, gan_tensor *x)
{
    return gan_objective_forward(&g->objective, i, ctx, x);
}

/* The objective of `target` as the trainer builds it (objective.h). The penalty's inner
 * gradient is seeded as in training: with the network's loss scale, or with
 * penalty.inner_scale. NULL with the failure in the context. */
static gan_tensor *objective(gan_grads *g, enum gan_loss_target target, gan_tensor *real,
                             gan_tensor *fake, gan_tensor *alpha, uint64_t *loss_offset,
                             struct gan_objective_sink *sink)
{
    g->objective.iteration = g->iteration;
    g->objective.inner_scale = g->inner_outer_scale ? g->scale[target == GAN_LOSS_CRITIC ? 1 : 0]
                                                    : g->inner_scale;
    return gan_objective_build(&g->objective, target, real, fake, alpha, loss_offset, sink);
}

/* Appends name = the value of a single-element tensor. */
static gan_status add_value(gan_grads *g, struct gan_grads_values *out, const char *name,
                            gan_tensor *t, struct gan_error *err)
{
    if (gan_tensor_numel(t) != 1)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "a loss term reports %s with %lld elements; a reported value is one",
                             name, (long long)gan_tensor_numel(t));
    for (size_t i = 0; i < out->count; i++)
        if (strcmp(out->items[i].name, name) == 0)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "a loss term reports a value that becomes %s, which the dump already has: rename it in the plugin",
                                 name);
    if (out->count == GAN_GRADS_MAX_VALUES || strlen(name) >= sizeof out->items[0].name)
        return gan_error_set(err, GAN_ERR_INVALID, "too many or too long reported values (at %s)", name);
    float v;
    if (gan_tensor_to_host(g->ctx, t, &v, 1) != GAN_OK)
        return ctx_fail(g, err, "reading the loss values");
    struct gan_grads_value *item = &out->items[out->count++];
    snprintf(item->name, sizeof item->name, "%s", name);
    item->value = v;
    return GAN_OK;
}

/* Debug level 2: network g->shadow.net's objective again in FP32 (gan_probe_shadow sets
 * the precision), on the evaluation's batch: the critic's on the same real and G(z)
 * batches (G(z) is not differentiated there; a 16-bit one is widened, exactly) and α,
 * the generator's through G of the same z; the loss stream read from the checkpoint's
 * position, as the evaluation's objectives read it. */
static gan_tensor *shadow_objective(void *arg, gan_ctx *ctx)
{
    gan_grads *g = arg;
    uint64_t offset = g->loss_offset;
    struct gan_objective_sink sink = { .count = 0 };
    if (g->shadow.net == 1) {
        gan_tensor *fake = g->shadow.fake;
        if (fake && gan_tensor_dtype(fake) != GAN_F32) {
            gan_ctx_no_grad_push(ctx);
            fake = gan_cast(ctx, fake, GAN_F32);
            gan_ctx_no_grad_pop(ctx);
        }
        return fake ? objective(g, GAN_LOSS_CRITIC, g->shadow.real, fake, g->shadow.alpha, &offset,
                                &sink)
                    : NULL;
    }
    gan_tensor *fake = net_forward(g, 0, ctx, g->shadow.z);
    return fake ? objective(g, GAN_LOSS_GENERATOR, NULL, fake, NULL, &offset, &sink) : NULL;
}

/* The gradient of `loss` with respect to network i's parameters, into its arena, as a
 * training step forms it: the backward of s·loss (s the network's loss scale; 1 when it
 * trains in FP32 with no scaler), then each parameter's gradient times 1/s in FP32 by the
 * backend's fused unscale, the kernel the trainer unscales with. */
static gan_status scaled_gradient(gan_grads *g, int i, gan_tensor *loss)
{
    gan_ctx *ctx = g->ctx;
    gan_net *net = g->net[i];
    size_t count = gan_net_count(net);
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    int ndim = gan_tensor_ndim(loss);
    for (int d = 0; d < ndim; d++)
        dims[d] = gan_tensor_dim(loss, d);
    gan_tensor *seed = gan_tensor_full(ctx, GAN_F32, ndim, dims, (float)g->scale[i]);
    gan_tensor **grads = calloc(count ? count : 1, sizeof *grads);
    if (!grads)
        return gan_ctx_fail(ctx, GAN_ERR_NOMEM, "out of memory for the %s's gradients", net_names[i]);
    gan_status st = seed ? gan_grad(ctx, 1, &loss, &seed, (int)count, gan_net_tensors(net), grads, 0)
                         : gan_ctx_status(ctx);
    if (st == GAN_OK && g->probe[i]) {
        g->shadow.net = i;
        st = gan_probe_shadow(g->probe[i], net, g->scale[i], grads, g->shadow.tape_start[i],
                              shadow_objective, g);
    }
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    float inv = (float)(1.0 / g->scale[i]);
    for (size_t p = 0; st == GAN_OK && p < count; p++) {
        struct gan_ref arena = gan_net_grad_ref(net, p);
        if (!arena.buf) {
            st = gan_ctx_status(ctx);
            break;
        }
        size_t n = (size_t)gan_tensor_numel(grads[p]);
        struct gan_ref x = { gan_tensor_buffer(grads[p]), 0, gan_tensor_dtype(grads[p]) };
        struct gan_grad_stats stats;
        gan_status bst = n ? ops->grad_stats(gan_ctx_backend(ctx), n, &x, inv, &arena, &stats) : GAN_OK;
        if (bst != GAN_OK)
            st = ti_backend_fail(ctx, "unscaling a gradient", "grad_stats", bst);
    }
    free(grads);
    return st;
}

/* Both objectives with their values, and the gradients `grads` asks for; everything
 * made here is a step tensor, freed by the caller's gan_ctx_step_end. */
static gan_status evaluate_step(gan_grads *g, const struct gan_grads_batch *b, unsigned grads,
                                struct gan_grads_values *values, struct gan_error *err)
{
    gan_ctx *ctx = g->ctx;
    int64_t rdims[2] = { b->size, SAMPLE_SIZE }, zdims[2] = { b->size, g->z_dim },
            adims[2] = { b->size, 1 };
    gan_tensor *real = gan_tensor_from_host(ctx, GAN_F32, 2, rdims, b->real);
    gan_tensor *z = gan_tensor_from_host(ctx, GAN_F32, 2, zdims, b->z);
    gan_tensor *alpha = gan_tensor_from_host(ctx, GAN_F32, 2, adims, b->alpha);
    if (!real || !z || !alpha)
        return ctx_fail(g, err, "copying the batch to the backend");
    g->shadow.real = real;
    g->shadow.z = z;
    g->shadow.alpha = alpha;

    /* The critic step: G(z) is not differentiated (the trainer computes it without
     * recording), so the critic's objective reaches the critic's parameters only. The
     * loss stream starts at the checkpoint's position for each objective, as the
     * critic's next step would find it. */
    uint64_t offset = g->loss_offset;
    struct gan_objective_sink cs = { .count = 0 };
    gan_ctx_no_grad_push(ctx);
    gan_tensor *fake = net_forward(g, 0, ctx, z);
    gan_ctx_no_grad_pop(ctx);
    g->shadow.fake = fake;
    g->shadow.tape_start[1] = gan_ctx_tape_length(ctx);
    gan_tensor *critic_loss = fake ? objective(g, GAN_LOSS_CRITIC, real, fake, alpha, &offset, &cs)
                                   : NULL;
    if (!critic_loss)
        return ctx_fail(g, err, "the critic's objective");
    if ((grads & GAN_LOSS_CRITIC) && scaled_gradient(g, 1, critic_loss) != GAN_OK)
        return ctx_fail(g, err, "the critic's gradient");

    /* The generator step: G(z) recorded, through the critic. */
    offset = g->loss_offset;
    struct gan_objective_sink gs = { .count = 0 };
    g->shadow.tape_start[0] = gan_ctx_tape_length(ctx);
    gan_tensor *fake_g = net_forward(g, 0, ctx, z);
    gan_tensor *generator_loss = fake_g ? objective(g, GAN_LOSS_GENERATOR, NULL, fake_g, NULL,
                                                    &offset, &gs)
                                        : NULL;
    if (!generator_loss)
        return ctx_fail(g, err, "the generator's objective");
    if ((grads & GAN_LOSS_GENERATOR) && scaled_gradient(g, 0, generator_loss) != GAN_OK)
        return ctx_fail(g, err, "the generator's gradient");

    values->count = 0;
    gan_status st = add_value(g, values, "loss.critic", critic_loss, err);
    if (st == GAN_OK)
        st = add_value(g, values, "loss.generator", generator_loss, err);
    char name[200];
    for (size_t i = 0; st == GAN_OK && i < cs.count; i++) {
        snprintf(name, sizeof name, "loss.%s", cs.names[i]);
        st = add_value(g, values, name, cs.values[i], err);
    }
    /* A name the critic's terms report already gets the network's prefix (metrics.csv's rule). */
    for (size_t i = 0; st == GAN_OK && i < gs.count; i++) {
        snprintf(name, sizeof name, "loss.%s%s", gan_objective_reported(&cs, gs.names[i]) ? "generator_" : "",
                 gs.names[i]);
        st = add_value(g, values, name, gs.values[i], err);
    }
    return st;
}

gan_status gan_grads_evaluate(gan_grads *g, const struct gan_grads_batch *batch, unsigned grads,
                              struct gan_grads_values *values, struct gan_error *err)
{
    if (!batch || batch->size < 1 || !batch->real || !batch->z || !batch->alpha)
        return gan_error_set(err, GAN_ERR_INVALID, "gan_grads_evaluate: an empty batch");
    gan_status st = evaluate_step(g, batch, grads, values, err);
    gan_ctx_step_end(g->ctx);
    return st;
}

const struct gan_grads_value *gan_grads_find_value(const struct gan_grads_values *values,
                                                   const char *name)
{
    for (size_t i = 0; i < values->count; i++)
        if (strcmp(values->items[i].name, name) == 0)
            return &values->items[i];
    return NULL;
}

/* ------------------------------------------------------------------ the dump */

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Adds every gradient of `net` to the writer from `host` (the arena's layout). */
static gan_status add_gradients(gan_grads *g, gan_st_writer *w, gan_net *net, float *host,
                                struct gan_error *err)
{
    for (size_t i = 0; i < gan_net_count(net); i++) {
        size_t n = (size_t)gan_net_numel(net, i);
        float *at = host + gan_net_offset(net, i);
        if (gan_net_grad_to_host(net, i, at, n) != GAN_OK)
            return ctx_fail(g, err, "reading the gradients");
        const gan_tensor *p = gan_net_tensor(net, i);
        uint64_t shape[GAN_ST_MAX_DIMS];
        int ndim = gan_tensor_ndim(p);
        for (int d = 0; d < ndim; d++)
            shape[d] = (uint64_t)gan_tensor_dim(p, d);
        char msg[512];
        if (gan_st_writer_add(w, gan_net_full_name(net, i), GAN_ST_F32, ndim, shape, at,
                              n * sizeof *at, msg, sizeof msg) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    }
    return GAN_OK;
}

gan_status gan_grads_dump(gan_grads *g, const struct gan_grads_batch *batch,
                          const char *batch_path, const char *out_path,
                          struct gan_grads_report *report, struct gan_error *err)
{
    memset(report, 0, sizeof *report);
    if (same_file(out_path, g->checkpoint) || (batch_path && same_file(out_path, batch_path)))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s is the %s file: name a new file for the gradients", out_path,
                             same_file(out_path, g->checkpoint) ? "checkpoint" : "batch");
    gan_status st = gan_grads_evaluate(g, batch, GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR,
                                       &report->values, err);
    if (st != GAN_OK)
        return st;
    gan_st_writer *w = gan_st_writer_new();
    float *host[2] = { NULL, NULL };
    for (int i = 0; i < 2; i++)
        host[i] = malloc(((size_t)gan_net_total(g->net[i]) + 1) * sizeof *host[i]);
    float *scalars = malloc((report->values.count + 1) * sizeof *scalars);
    if (!w || !host[0] || !host[1] || !scalars)
        st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory while writing %s", out_path);
    for (int i = 0; st == GAN_OK && i < 2; i++)
        st = add_gradients(g, w, g->net[i], host[i], err);
    char msg[768];
    for (size_t i = 0; st == GAN_OK && i < report->values.count; i++) {
        uint64_t one = 1;
        scalars[i] = (float)report->values.items[i].value;
        if (gan_st_writer_add(w, report->values.items[i].name, GAN_ST_F32, 1, &one, &scalars[i],
                              sizeof *scalars, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    }
    char numbers[4][40];
    snprintf(numbers[0], sizeof numbers[0], "%lld", (long long)g->iteration);
    snprintf(numbers[1], sizeof numbers[1], "%lld", (long long)batch->size);
    /* Scales are FP32 numbers: nine digits give them back exactly. */
    snprintf(numbers[2], sizeof numbers[2], "%.9g", g->scale[1]);
    snprintf(numbers[3], sizeof numbers[3], "%.9g", g->scale[0]);
    const struct { const char *key, *value; } meta[] = {
        { "format", GAN_GRADS_FORMAT }, { "format_version", GAN_GRADS_VERSION },
        { "ganctl_version", gan_version() }, { "checkpoint", g->checkpoint },
        { "batch", batch_path ? batch_path : "" }, { "iteration", numbers[0] },
        { "batch_size", numbers[1] }, { "precision", gan_grads_precision(g) },
        { "scale.critic", numbers[2] }, { "scale.generator", numbers[3] },
    };
    for (size_t i = 0; st == GAN_OK && i < sizeof meta / sizeof meta[0]; i++)
        if (gan_st_writer_set_metadata(w, meta[i].key, meta[i].value, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    if (st == GAN_OK && (st = gan_st_writer_write(w, out_path, msg, sizeof msg)) != GAN_OK)
        gan_error_set(err, st, "%s", msg);
    gan_st_writer_free(w);
    free(host[0]);
    free(host[1]);
    free(scalars);
    if (st != GAN_OK)
        return st;
    report->iteration = g->iteration;
    report->batch_size = batch->size;
    report->generator_tensors = gan_net_count(g->net[0]);
    report->critic_tensors = gan_net_count(g->net[1]);
    return GAN_OK;
}

gan_status gan_grads_run(const struct gan_grads_args *args, const gan_loader *loader,
                         const struct gan_log *log, struct gan_grads_report *report,
                         struct gan_error *err)
{
    memset(report, 0, sizeof *report);
    gan_grads *g = NULL;
    gan_status st = gan_grads_open(args->checkpoint, args->settings, args->setting_count, loader,
                                   log, &g, err);
    if (st != GAN_OK)
        return st;
    gan_log_write(log, GAN_LOG_DEBUG, "grads: %s at iteration %lld on %s", g->checkpoint,
                  (long long)g->iteration, gan_grads_backend_description(g));
    struct gan_grads_batch batch;
    memset(&batch, 0, sizeof batch);
    st = gan_grads_set_debug_level(g, args->debug_level, err);
    if (st == GAN_OK)
        st = gan_grads_read_batch(g, args->batch, &batch, err);
    if (st == GAN_OK)
        st = gan_grads_dump(g, &batch, args->batch, args->out, report, err);
    gan_grads_batch_free(&batch);
    /* The comparisons outlive the instance: the report takes them. */
    for (int i = 0; st == GAN_OK && i < 2; i++) {
        report->probe[i] = g->probe[i];
        g->probe[i] = NULL;
    }
    gan_grads_free(g);
    return st;
}
