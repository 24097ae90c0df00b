/* trainer.c — the WGAN-GP training loop over plugins: set-up from the configuration, the
 * generator and critic steps, evaluation, metrics rows, pictures, checkpoints and resume. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/image_run.h"
#include "nn/objective.h"
#include "nn/optimizer.h"
#include "tensor/tensor_internal.h"
#include "data/toy_data.h"
#include "amp/underflow_probe.h"
#include "io/toy_plot.h"
#include "train/trainer.h"

/* Most loss terms, and most scalars one objective's terms may report. */
#define MAX_TERMS GAN_OBJECTIVE_MAX_TERMS
#define MAX_METRICS GAN_OBJECTIVE_MAX_REPORTED
/* Most inner gradients (the penalty's ∇ₓD(x̂)) one objective's terms may show. */
#define MAX_INNER 8
/* What a metrics row's overflow cell collects: the kinds seen since the previous row. */
#define OVERFLOW_GRADIENT 1
#define OVERFLOW_FORWARD 2

/* ------------------------------------------------------------------ plugins */

/* A model plugin instance for one network. */
struct model_inst {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_model *model;
    char description[256];
};

/* A loss-term plugin instance. */
struct loss_inst {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_loss *loss;
    unsigned targets;
    const char *name;             /* points into the configuration's loss.terms */
};

/* A loss-scaler plugin instance for one network. */
struct scaler_inst {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_scaler *sc;
    char description[300];
};

/* The modules a configuration names, opened, with their settings applied. */
struct plugins {
    struct gan_module *backend;
    struct gan_module *model[2];  /* generator, critic */
    struct gan_module *loss[MAX_TERMS];
    const char *loss_name[MAX_TERMS];
    size_t n_loss;
    /* Each network's scaler, the group its settings come from ("scaler" or
     * "critic.scaler"), and the shared group's scaler, opened to check its settings. */
    struct gan_module *scaler[2];
    char scaler_group[2][32];
    struct gan_module *scaler_shared;
};

static const char *const net_names[2] = { "generator", "critic" };

static void plugins_close(struct plugins *p)
{
    gan_module_close(p->backend);
    for (int i = 0; i < 2; i++)
        gan_module_close(p->model[i]);
    for (size_t i = 0; i < p->n_loss; i++)
        gan_module_close(p->loss[i]);
    for (int i = 0; i < 2; i++)
        gan_module_close(p->scaler[i]);
    gan_module_close(p->scaler_shared);
    memset(p, 0, sizeof *p);
}

/* Opens a plugin named by `key` and checks the settings in `group` against its spec. */
static gan_status open_named(const gan_loader *loader, gan_config *cfg,
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
    snprintf(key, sizeof key, "%s.scaler.name", net_names[i]);
    const struct gan_config_value *v = gan_config_find(cfg, key);
    return v ? v : gan_config_find(cfg, "scaler.name");
}

/* Each network's scaler module, its settings checked against the group it reads; and
 * the shared group's scaler when no network reads that group, so that its settings are
 * checked all the same. */
static gan_status open_scalers(struct plugins *p, gan_config *cfg, const gan_loader *loader,
                               struct gan_error *err)
{
    gan_status st;
    int shared_used = 0;
    for (int i = 0; i < 2; i++) {
        const struct gan_config_value *v = scaler_name_value(cfg, i);
        if (!v || v->type != GAN_CONFIG_STRING)
            return gan_error_set(err, GAN_ERR_INTERNAL, "scaler.name has no value");
        int own = own_scaler_group(cfg, net_names[i]);
        snprintf(p->scaler_group[i], sizeof p->scaler_group[i], "%s%s", own ? net_names[i] : "",
                 own ? ".scaler" : "scaler");
        shared_used |= !own;
        if ((st = open_named(loader, cfg, GAN_PLUGIN_SCALER, v->s, p->scaler_group[i],
                             &p->scaler[i], err)) != GAN_OK)
            return st;
    }
    if (shared_used)
        return GAN_OK;
    const char *name;
    if (gan_config_get_string(cfg, "scaler.name", &name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "scaler.name has no value");
    return open_named(loader, cfg, GAN_PLUGIN_SCALER, name, "scaler", &p->scaler_shared, err);
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
static gan_status check_precision(gan_config *cfg, const struct plugins *p,
                                  struct gan_error *err)
{
    gan_status st;
    int scaled = -1;              /* the network whose scaler scales, critic first */
    for (int i = 1; i >= 0 && scaled < 0; i--)
        if (strcmp(p->scaler[i]->plugin.name, "none") != 0)
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

static gan_status plugins_open(struct plugins *p, gan_config *cfg, const gan_loader *loader,
                               struct gan_error *err)
{
    memset(p, 0, sizeof *p);
    const char *name;
    gan_status st;
    if (gan_config_get_string(cfg, "backend.name", &name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "backend.name has no value");
    if ((st = open_named(loader, cfg, GAN_PLUGIN_BACKEND, name, "backend", &p->backend, err)) != GAN_OK)
        return st;
    for (int i = 0; i < 2; i++) {
        char key[64], group[64];
        snprintf(key, sizeof key, "%s.model.name", net_names[i]);
        snprintf(group, sizeof group, "%s.model", net_names[i]);
        if (gan_config_get_string(cfg, key, &name) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INTERNAL, "%s has no value", key);
        if ((st = open_named(loader, cfg, GAN_PLUGIN_MODEL, name, group, &p->model[i], err)) != GAN_OK)
            return st;
    }
    const char *const *terms;
    size_t n;
    if (gan_config_get_strings(cfg, "loss.terms", &terms, &n) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "loss.terms has no value");
    if (n > MAX_TERMS)
        return gan_error_set(err, GAN_ERR_CONFIG, "%s: loss.terms lists %zu terms; at most %d are supported",
                             gan_config_find(cfg, "loss.terms")->origin, n, MAX_TERMS);
    for (size_t i = 0; i < n; i++) {
        char group[300];
        snprintf(group, sizeof group, "loss.%s", terms[i]);
        p->loss_name[i] = terms[i];
        st = open_named(loader, cfg, GAN_PLUGIN_LOSS, terms[i], group, &p->loss[i], err);
        if (p->loss[i])
            p->n_loss = i + 1;
        if (st != GAN_OK)
            return st;
    }
    if ((st = gan_config_check_loss_groups(cfg, terms, n, err)) != GAN_OK)
        return st;
    if ((st = open_scalers(p, cfg, loader, err)) != GAN_OK)
        return st;
    return check_precision(cfg, p, err);
}

gan_status gan_trainer_check_config(gan_config *config, const gan_loader *loader,
                                    struct gan_error *err)
{
    struct plugins p;
    gan_status st = plugins_open(&p, config, loader, err);
    plugins_close(&p);
    return st;
}

/* ------------------------------------------------------------------ the trainer */

/* One network's loss scaling: its scaler, what its last backward measured (the
 * statistics the scaler was given) and the counters the metrics show. */
struct scaling {
    struct scaler_inst inst;
    struct gan_scaler_tensor *entries;  /* parameters, then inner gradients; count + MAX_INNER */
    size_t n_entries;             /* of the last update; 0 before the first */
    char inner_names[MAX_INNER][64];
    double scale_used;            /* the scale of the last backward */
    double grad_norm;             /* the unscaled gradient's L2 norm (finite elements) */
    double underflow_frac;        /* zeros and subnormals over the FP16 parameter gradients */
    int64_t skipped;              /* steps skipped since the run began */
    unsigned overflows;           /* OVERFLOW_* kinds since the last metrics row */
    gan_tensor **grads;           /* count: gan_grad's results, step tensors */
};

/* The last known value of everything a metrics row holds. */
struct latest {
    double critic_loss, generator_loss;
    double critic_norm, generator_norm;
    double critic_metric[MAX_METRICS], generator_metric[MAX_METRICS];
};

struct gan_trainer {
    gan_config *cfg;
    const struct gan_log *log;
    volatile sig_atomic_t *stop;
    struct gan_train_events events;

    struct plugins plugins;
    struct gan_backend_instance *backend;
    gan_ctx *ctx;
    gan_net *net[2];
    struct model_inst model[2];
    gan_optimizer *opt[2];
    struct loss_inst loss[MAX_TERMS];
    size_t n_loss;
    struct gan_objective objective;   /* the models and terms above, for objective() */
    struct scaling scaling[2];

    /* The inner gradients (loss.h) the terms showed in the objective being built, and
     * the loss scale it is built for. inner_outer[k]: seeded with that scale, so an
     * overflow in it is the scale's (GAN_SCALER_INNER_GRAD). */
    struct gan_scaler_tensor inner[MAX_INNER];
    char inner_name[MAX_INNER][64];
    int inner_outer[MAX_INNER];
    size_t n_inner;
    double outer_scale;

    /* Settings. */
    uint64_t seed;
    int64_t iterations, batch, z_dim, n_critic;
    int64_t log_every, eval_every, image_every, checkpoint_every;
    int metrics_time;
    int lr_decay[2];              /* linear decay of each network's learning rate */
    enum gan_dtype precision;     /* GAN_F32, GAN_F16 or GAN_BF16 */
    enum gan_precision_level level;
    int inner_outer_scale;        /* penalty.inner_scale = "outer" */
    double inner_scale;           /* ... else this number */
    long long debug_level;
    /* Debug level 2 in 16-bit precision: each network's FP32 shadow of its last backward
     * before a metrics row (underflow_probe.h), and what that step's objective was built
     * from, for the shadow to build it again: the real and fake batches (critic), z
     * (generator), the loss stream's offset before the step. */
    gan_probe *probe[2];
    struct {
        int due;                  /* this step is the last before a row: compare it */
        int running;              /* the shadow's objective is being built */
        int net;
        gan_tensor *real, *fake, *z;
        uint64_t loss_offset;
    } shadow;
    gan_metrics_csv *underflow_csv;   /* grad_underflow.csv */
    enum gan_toy_kind kind;
    const char *data_name;
    /* One real sample's shape without the batch: [2] for the toys, [1, 28, 28] for
     * images (what the models are built for and the real batches are shaped as). */
    int is_image;
    int sample_ndim;
    int64_t sample_dims[3];
    int64_t sample_size;

    /* State: what a checkpoint holds. */
    int64_t iteration;
    uint64_t z_offset, loss_offset;
    gan_toy_sampler *sampler;
    double elapsed_before;        /* training time of earlier sessions */

    /* Evaluation. */
    gan_tensor *eval_z;           /* [GAN_EVAL_SAMPLES, z_dim], persistent */
    float *eval_real;             /* GAN_EVAL_SAMPLES × 2 */
    float *eval_fake;
    struct gan_toy_modes modes;
    struct gan_toy_quality floor, quality;
    int has_quality;
    int64_t quality_iteration;
    /* Image runs (image_run.h): the data, metrics and grids; NULL for the toys. Their
     * quality is image_quality, also as named values for the progress line and the
     * summary; eval_real then holds the first test images (the trial step, real.png). */
    gan_image_run *images;
    struct gan_image_quality image_quality, image_floor;
    struct gan_named_value quality_values[2], floor_values[2];
    size_t n_eval_real;

    /* Metrics. */
    char *critic_names[MAX_METRICS], *generator_names[MAX_METRICS];
    char *generator_reported[MAX_METRICS];  /* as the terms name them */
    size_t n_critic_metrics, n_generator_metrics;
    char **columns;
    size_t n_columns;
    struct latest latest;
    float *real_batch;            /* batch × sample_size */

    /* Outputs. */
    char *run_dir;
    char *checkpoint_path;
    char *config_text;            /* for checkpoints */
    gan_metrics_csv *metrics;
    gan_metrics_csv *grad_csv;    /* grad_stats.csv at debug level 1 */
    int64_t checkpoint_iteration; /* of the last checkpoint written; -1 none */
    int64_t image_iteration;

    /* Timing of this session. */
    struct timespec t0;
    int64_t start_iteration;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double session_s(const gan_trainer *t)
{
    return now_s() - ((double)t->t0.tv_sec + 1e-9 * (double)t->t0.tv_nsec);
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static gan_status nomem(struct gan_error *err)
{
    return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while setting up training");
}

/* The context's failure as the trainer's error, naming what was being done. */
static gan_status ctx_fail(gan_trainer *t, struct gan_error *err, const char *doing)
{
    gan_status st = gan_ctx_status(t->ctx);
    if (st == GAN_OK)
        st = GAN_ERR_INTERNAL;
    gan_error_set(err, st, "%s: %s", doing, gan_ctx_error(t->ctx));
    gan_ctx_clear_error(t->ctx);
    return st;
}

static const char *backend_message(void *arg)
{
    struct gan_backend_instance *inst = arg;
    return inst->host.error.message;
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

static void adam_settings(const gan_config *cfg, const char *net, struct gan_adam_settings *s)
{
    char key[96];
#define OPT(field) \
    snprintf(key, sizeof key, "%s.optimizer." #field, net); \
    s->field = get_float(cfg, key);
    OPT(lr) OPT(beta1) OPT(beta2) OPT(eps) OPT(weight_decay) OPT(clip_norm)
#undef OPT
}

static gan_status read_settings(gan_trainer *t, struct gan_error *err)
{
    const gan_config *cfg = t->cfg;
    t->seed = (uint64_t)get_int(cfg, "run.seed");
    t->iterations = get_int(cfg, "run.iterations");
    t->log_every = get_int(cfg, "run.log_every");
    t->eval_every = get_int(cfg, "run.eval_every");
    t->image_every = get_int(cfg, "run.image_every");
    t->checkpoint_every = get_int(cfg, "run.checkpoint_every");
    gan_config_get_bool(cfg, "run.metrics_time", &t->metrics_time);
    t->batch = get_int(cfg, "data.batch_size");
    t->z_dim = get_int(cfg, "generator.z_dim");
    t->n_critic = get_int(cfg, "critic.iterations");
    for (int i = 0; i < 2; i++) {
        char key[64];
        const char *decay = "none";
        snprintf(key, sizeof key, "%s.optimizer.lr_decay", net_names[i]);
        gan_config_get_string(cfg, key, &decay);
        t->lr_decay[i] = strcmp(decay, "linear") == 0;
    }
    t->debug_level = get_int(cfg, "run.debug_level");
    const char *mode = "fp32", *level = "O2";
    gan_config_get_string(cfg, "precision.mode", &mode);
    gan_config_get_string(cfg, "precision.level", &level);
    t->precision = strcmp(mode, "fp16") == 0 ? GAN_F16 : strcmp(mode, "bf16") == 0 ? GAN_BF16 : GAN_F32;
    t->level = strcmp(level, "O1") == 0 ? GAN_PRECISION_O1 : GAN_PRECISION_O2;
    const struct gan_config_value *inner = gan_config_find(cfg, "penalty.inner_scale");
    t->inner_outer_scale = !inner || inner->type == GAN_CONFIG_STRING;
    t->inner_scale = t->inner_outer_scale ? 1.0 : get_float(cfg, "penalty.inner_scale");
    if (gan_config_get_string(cfg, "data.name", &t->data_name) != GAN_OK)
        return gan_error_set(err, GAN_ERR_INTERNAL, "data.name has no value");
    t->is_image = strcmp(t->data_name, GAN_IMAGE_DATA_NAME) == 0;
    if (t->is_image) {
        t->sample_ndim = 3;
        t->sample_dims[0] = 1;
        t->sample_dims[1] = t->sample_dims[2] = GAN_IMAGE_SIDE;
        t->sample_size = GAN_IMAGE_PIXELS;
        return GAN_OK;
    }
    t->sample_ndim = 1;
    t->sample_dims[0] = t->sample_size = 2;
    return gan_toy_dataset_from_name(t->data_name, &t->kind, err);
}

/* The precision policy of the context: the mode and level, and the FP32 patterns. */
static gan_status set_up_precision(gan_trainer *t, struct gan_error *err)
{
    if (gan_ctx_set_precision(t->ctx, t->precision, t->level) != GAN_OK)
        return ctx_fail(t, err, "setting the precision");
    const char *const *patterns;
    size_t n = 0;
    if (gan_config_get_strings(t->cfg, "precision.fp32", &patterns, &n) != GAN_OK)
        n = 0;
    for (size_t i = 0; i < n; i++)
        if (gan_ctx_add_fp32_scope(t->ctx, patterns[i]) != GAN_OK)
            return ctx_fail(t, err, "precision.fp32");
    return GAN_OK;
}

/* ------------------------------------------------------------------ set-up */

static gan_status make_models(gan_trainer *t, struct gan_error *err)
{
    for (int i = 0; i < 2; i++) {
        struct model_inst *mi = &t->model[i];
        mi->module = t->plugins.model[i];
        if (gan_net_new(t->ctx, net_names[i], &t->net[i]) != GAN_OK)
            return ctx_fail(t, err, "creating a network");
        char label[200], group[64];
        snprintf(label, sizeof label, "model %s (%s)", mi->module->plugin.name, net_names[i]);
        snprintf(group, sizeof group, "%s.model", net_names[i]);
        gan_plugin_host_init(&mi->host, label, group, mi->module->plugin.settings, t->cfg, t->log);
        struct gan_model_io io;
        memset(&io, 0, sizeof io);
        /* The generator maps z to one sample of the data's shape, the critic such a
         * sample to one score. */
        int ndim = t->sample_ndim;
        io.in_ndim = i == 0 ? 1 : ndim;
        io.out_ndim = i == 0 ? ndim : 1;
        int64_t *sample = i == 0 ? io.out_dims : io.in_dims;
        for (int d = 0; d < ndim; d++)
            sample[d] = t->sample_dims[d];
        if (i == 0)
            io.in_dims[0] = t->z_dim;
        else
            io.out_dims[0] = 1;
        gan_net_set_host(t->net[i], &mi->host.host);
        gan_status st = mi->module->model.create(&mi->host.host,
                                                 i == 0 ? GAN_MODEL_GENERATOR : GAN_MODEL_CRITIC,
                                                 &io, t->net[i], &mi->model);
        gan_net_set_host(t->net[i], NULL);
        if (st == GAN_OK && !mi->model)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK) {
            const char *why = mi->host.error.message[0] ? mi->host.error.message
                            : gan_ctx_error(t->ctx)[0] ? gan_ctx_error(t->ctx) : "it gave no reason";
            gan_error_set(err, st, "model \"%s\" (%s) could not build the %s: %s",
                          mi->module->plugin.name, mi->module->path, net_names[i], why);
            gan_ctx_clear_error(t->ctx);
            return st;
        }
        const char *d = mi->module->model.describe ? mi->module->model.describe(mi->model) : NULL;
        snprintf(mi->description, sizeof mi->description, "%s%s%s", mi->module->plugin.name,
                 d ? ": " : "", d ? d : "");
    }
    return GAN_OK;
}

static gan_status make_losses(gan_trainer *t, struct gan_error *err)
{
    unsigned all = 0;
    for (size_t i = 0; i < t->plugins.n_loss; i++) {
        struct loss_inst *li = &t->loss[i];
        li->module = t->plugins.loss[i];
        li->name = t->plugins.loss_name[i];
        char label[200], group[200];
        snprintf(label, sizeof label, "loss %s", li->name);
        snprintf(group, sizeof group, "loss.%s", li->name);
        gan_plugin_host_init(&li->host, label, group, li->module->plugin.settings, t->cfg, t->log);
        gan_status st = li->module->loss.create(&li->host.host, &li->loss);
        if (st == GAN_OK && !li->loss)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK)
            return gan_error_set(err, st, "loss \"%s\" (%s) could not start: %s", li->name,
                                 li->module->path,
                                 li->host.error.message[0] ? li->host.error.message : "it gave no reason");
        t->n_loss = i + 1;
        li->targets = li->module->loss.targets(li->loss);
        all |= li->targets;
    }
    const char *origin = gan_config_find(t->cfg, "loss.terms")->origin;
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

/* Each network's scaler instance, reading the group plugins_open chose for it. */
static gan_status make_scalers(gan_trainer *t, struct gan_error *err)
{
    for (int i = 0; i < 2; i++) {
        struct scaling *sg = &t->scaling[i];
        struct scaler_inst *si = &sg->inst;
        si->module = t->plugins.scaler[i];
        char label[200];
        snprintf(label, sizeof label, "scaler %s (%s)", si->module->plugin.name, net_names[i]);
        gan_plugin_host_init(&si->host, label, t->plugins.scaler_group[i],
                             si->module->plugin.settings, t->cfg, t->log);
        gan_status st = si->module->scaler.create(&si->host.host, &si->sc);
        if (st == GAN_OK && !si->sc)
            st = GAN_ERR_INTERNAL;
        if (st != GAN_OK)
            return gan_error_set(err, st, "scaler \"%s\" (%s) could not start for the %s: %s",
                                 si->module->plugin.name, si->module->path, net_names[i],
                                 si->host.error.message[0] ? si->host.error.message
                                                            : "it gave no reason");
        const char *d = si->module->scaler.describe ? si->module->scaler.describe(si->sc) : NULL;
        snprintf(si->description, sizeof si->description, "%s", d && *d ? d : si->module->plugin.name);
        size_t count = gan_net_count(t->net[i]);
        sg->entries = calloc(count + MAX_INNER, sizeof *sg->entries);
        sg->grads = calloc(count ? count : 1, sizeof *sg->grads);
        if (!sg->entries || !sg->grads)
            return nomem(err);
        sg->grad_norm = NAN;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ one objective */

/* A model's forward inside its network's scope ("generator", "critic"). */
static gan_tensor *net_forward(gan_trainer *t, int i, gan_ctx *ctx, gan_tensor *x)
{
    return gan_objective_forward(&t->objective, i, ctx, x);
}

/* Statistics of a gradient tensor x seen through inv_scale, and with `out` the fused
 * unscale x · inv_scale into it (backend.h's grad_stats). Failures go to the context. */
static gan_status measure(gan_trainer *t, gan_tensor *x, float inv_scale,
                          const struct gan_ref *out, struct gan_grad_stats *stats)
{
    gan_ctx *ctx = t->ctx;
    memset(stats, 0, sizeof *stats);
    size_t n = (size_t)gan_tensor_numel(x);
    if (n == 0)
        return GAN_OK;
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    struct gan_ref xr = { gan_tensor_buffer(x), 0, gan_tensor_dtype(x) };
    struct gan_ref none = { NULL, 0, GAN_F32 };
    gan_status st = ops->grad_stats(gan_ctx_backend(ctx), n, &xr, inv_scale, out ? out : &none,
                                    stats);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, "measuring gradients", "grad_stats", st);
}

/* loss.h's inner_grad: a term shows a gradient it took inside the objective, seeded with
 * `seed`. Measured at once, in the dtype it was computed in (the 16-bit gradient that
 * reached `wrt`'s cast, when the policy cast it). */
static void on_inner_grad(void *arg, const char *name, gan_tensor *wrt, gan_tensor *grad,
                          double seed)
{
    gan_trainer *t = arg;
    /* The shadow's inner gradient is FP32 and no scaler's business. */
    if (!grad || t->n_inner == MAX_INNER || !(seed > 0.0) || t->shadow.running)
        return;
    gan_tensor *g16 = wrt ? gan_tensor_grad16(wrt) : NULL;
    gan_tensor *x = g16 && gan_tensor_numel(g16) == gan_tensor_numel(grad) ? g16 : grad;
    size_t k = t->n_inner;
    struct gan_scaler_tensor *e = &t->inner[k];
    memset(e, 0, sizeof *e);
    snprintf(t->inner_name[k], sizeof t->inner_name[k], "%s", name && *name ? name : "inner");
    e->name = t->inner_name[k];
    e->dtype = gan_tensor_dtype(x);
    e->role = GAN_SCALER_INNER_GRAD;
    /* Scales are FP32 numbers; a term may have passed the seed through a float. */
    t->inner_outer[k] = (float)seed == (float)t->outer_scale;
    if (measure(t, x, (float)(1.0 / seed), NULL, &e->stats) == GAN_OK)
        t->n_inner++;
}

/* One value of a single-element tensor. */
static gan_status scalar_value(gan_trainer *t, gan_tensor *v, double *out)
{
    float f;
    if (gan_tensor_numel(v) != 1)
        return ti_fail(t->ctx, GAN_ERR_INVALID, "a reported value has %lld elements; it must have one",
                       (long long)gan_tensor_numel(v));
    gan_status st = gan_tensor_to_host(t->ctx, v, &f, 1);
    *out = f;
    return st;
}

/* The objective of `target` (critic or generator) on a batch (objective.h), with the
 * step's iteration and its penalty's inner seed; the terms show their inner gradients to
 * on_inner_grad. real may be NULL for the generator's. NULL with the failure in the context. */
static gan_tensor *objective(gan_trainer *t, enum gan_loss_target target, gan_tensor *real,
                             gan_tensor *fake, uint64_t *loss_offset,
                             struct gan_objective_sink *sink)
{
    t->objective.iteration = t->iteration;
    t->objective.inner_scale = t->inner_outer_scale ? t->outer_scale : t->inner_scale;
    t->n_inner = 0;
    return gan_objective_build(&t->objective, target, real, fake, NULL, loss_offset, sink);
}

/* What objective() builds from: the models and terms just made, and the step's inputs
 * that do not change between objectives. */
static void bind_objective(gan_trainer *t)
{
    struct gan_objective *o = &t->objective;
    memset(o, 0, sizeof *o);
    o->ctx = t->ctx;
    for (int i = 0; i < 2; i++) {
        o->model[i].module = t->model[i].module;
        o->model[i].model = t->model[i].model;
    }
    for (size_t i = 0; i < t->n_loss; i++) {
        o->term[i].module = t->loss[i].module;
        o->term[i].loss = t->loss[i].loss;
        o->term[i].host = &t->loss[i].host;
        o->term[i].targets = t->loss[i].targets;
        o->term[i].name = t->loss[i].name;
    }
    o->n_terms = t->n_loss;
    o->seed = t->seed;
    o->inner_grad = on_inner_grad;
    o->inner_ctx = t;
}

/* z for a batch of n from the training stream. */
static gan_tensor *draw_z(gan_trainer *t, int64_t n, uint64_t *offset)
{
    int64_t dims[2] = { n, t->z_dim };
    gan_tensor *z = gan_tensor_normal(t->ctx, GAN_F32, 2, dims, t->seed, *offset, 0.0f, 1.0f);
    *offset += (uint64_t)(n * t->z_dim + 3) / 4;
    return z;
}

/* A batch of n real samples as a tensor's dimensions: n, then the sample's shape.
 * Returns the dimension count. */
static int batch_dims(const gan_trainer *t, int64_t n, int64_t *dims)
{
    dims[0] = n;
    for (int d = 0; d < t->sample_ndim; d++)
        dims[d + 1] = t->sample_dims[d];
    return t->sample_ndim + 1;
}

/* Copies the reported values into `values` in the order of `names`, the names the
 * terms report (NaN when a name was not reported this time). */
static gan_status read_metrics(gan_trainer *t, const struct gan_objective_sink *s, char **names,
                               size_t n, double *values)
{
    for (size_t k = 0; k < n; k++) {
        values[k] = NAN;
        gan_tensor *v = gan_objective_reported(s, names[k]);
        gan_status st = v ? scalar_value(t, v, &values[k]) : GAN_OK;
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* The backward of a finite objective, seeded with the loss scale s, then one pass per
 * parameter that measures its gradient as the scaler must see it and writes it, times
 * 1/s, into the net's FP32 gradient arena (every element of the arena is written, so it
 * needs no zeroing). Under the precision policy a parameter's gradient was 16 bit before
 * its cast widened it: that 16-bit gradient (gan_tensor_grad16) is what can underflow or
 * overflow, so it is the one measured. Without FP32 patterns a parameter is used only
 * through its 16-bit cast, and the widened gradient equals the 16-bit one exactly: one
 * pass reads the 16-bit values and writes the unscaled FP32 ones. With patterns a
 * parameter may also be used in FP32 (the critic inside an FP32 "penalty"), and the
 * arena must get the sum: the 16-bit part is measured in a pass of its own. */
static gan_status scaled_backward(gan_trainer *t, int i, gan_tensor *loss, double *norm2,
                                  uint64_t *f16_elements, uint64_t *f16_low)
{
    struct scaling *sg = &t->scaling[i];
    gan_ctx *ctx = t->ctx;
    gan_net *net = t->net[i];
    size_t count = gan_net_count(net);
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    int ndim = gan_tensor_ndim(loss);
    for (int d = 0; d < ndim; d++)
        dims[d] = gan_tensor_dim(loss, d);
    gan_tensor *seed = gan_tensor_full(ctx, GAN_F32, ndim, dims, (float)sg->scale_used);
    if (!seed)
        return gan_ctx_status(ctx);
    gan_tensor *seeds[1] = { seed };
    gan_status st = gan_grad(ctx, 1, &loss, seeds, (int)count, gan_net_tensors(net), sg->grads, 0);
    if (st != GAN_OK)
        return st;
    float inv = (float)(1.0 / sg->scale_used);
    int mixed = gan_ctx_fp32_scope_count(ctx) > 0;
    for (size_t p = 0; p < count; p++) {
        struct gan_scaler_tensor *e = &sg->entries[sg->n_entries++];
        memset(e, 0, sizeof *e);
        e->name = gan_net_full_name(net, p);
        e->role = GAN_SCALER_PARAM_GRAD;
        struct gan_ref arena = gan_net_grad_ref(net, p);
        if (!arena.buf)
            return ti_result(ctx, 0);
        gan_tensor *g16 = gan_tensor_grad16(gan_net_tensor(net, p));
        if (g16 && gan_tensor_numel(g16) != gan_net_numel(net, p))
            g16 = NULL;
        struct gan_grad_stats full;
        if (g16 && !mixed) {
            st = measure(t, g16, inv, &arena, &full);
            e->stats = full;
        } else {
            st = measure(t, sg->grads[p], inv, &arena, &full);
            e->stats = full;
            if (st == GAN_OK && g16) {
                uint64_t nonfinite = full.nonfinite;
                st = measure(t, g16, inv, NULL, &e->stats);
                if (e->stats.nonfinite < nonfinite)
                    e->stats.nonfinite = nonfinite;
            }
        }
        if (st != GAN_OK)
            return st;
        e->dtype = g16 ? gan_tensor_dtype(g16) : GAN_F32;
        *norm2 += full.sum_squares;
        if (e->dtype == GAN_F16) {
            *f16_elements += e->stats.elements;
            *f16_low += e->stats.zeros + e->stats.subnormal;
        }
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ debug level 2 */

/* What the step's objective is built from, for its FP32 shadow; the loss stream's offset
 * is read before the objective advances it. */
static void shadow_inputs(gan_trainer *t, gan_tensor *real, gan_tensor *fake, gan_tensor *z)
{
    t->shadow.real = real;
    t->shadow.fake = fake;
    t->shadow.z = z;
    t->shadow.loss_offset = t->loss_offset;
}

/* The objective of network t->shadow.net again, with the precision set to FP32 (by
 * gan_probe_shadow), on the step's inputs. The critic's: the same real batch and the
 * same fake one (the critic step does not differentiate the generator, so G(z) is an
 * input like the data; a 16-bit one is widened, exactly). The generator's: G of the
 * same z, since its forward is part of what is differentiated. The loss terms read the
 * stream from a copy of the step's offset, so they draw the same α and advance nothing. */
static gan_tensor *shadow_objective(void *arg, gan_ctx *ctx)
{
    gan_trainer *t = arg;
    uint64_t offset = t->shadow.loss_offset;
    struct gan_objective_sink sink = { .count = 0 };
    gan_tensor *loss = NULL;
    size_t n_inner = t->n_inner;
    t->shadow.running = 1;
    if (t->shadow.net == 1) {
        gan_tensor *fake = t->shadow.fake;
        if (fake && gan_tensor_dtype(fake) != GAN_F32) {
            gan_ctx_no_grad_push(ctx);
            fake = gan_cast(ctx, fake, GAN_F32);
            gan_ctx_no_grad_pop(ctx);
        }
        if (fake && t->shadow.real)
            loss = objective(t, GAN_LOSS_CRITIC, t->shadow.real, fake, &offset, &sink);
    } else {
        gan_tensor *fake = net_forward(t, 0, ctx, t->shadow.z);
        if (fake)
            loss = objective(t, GAN_LOSS_GENERATOR, NULL, fake, &offset, &sink);
    }
    t->shadow.running = 0;
    t->n_inner = n_inner;
    return loss;
}

/* Network i's FP32 shadow of the backward scaled_backward just ran, compared with it. */
static gan_status shadow_compare(gan_trainer *t, int i)
{
    t->shadow.net = i;
    /* A step starts on an empty tape (the last one ended with gan_ctx_step_end), and
     * only its objective records: its nodes are the whole tape. */
    return gan_probe_shadow(t->probe[i], t->net[i], t->scaling[i].scale_used, t->scaling[i].grads,
                            0, shadow_objective, t);
}

static void log_line(void *arg, const char *text)
{
    gan_trainer *t = arg;
    gan_log_write(t->log, GAN_LOG_INFO, "%s", text);
}

/* Debug level 2's output at a metrics row: each network's comparison as
 * grad_underflow.csv rows and, the worst few ops only, as a table in the log. */
static gan_status write_underflow(gan_trainer *t, struct gan_error *err)
{
    gan_log_write(t->log, GAN_LOG_INFO,
                  "true underflow at iteration %lld (each network's last step: values zero in 16 bit but not in its FP32 shadow):",
                  (long long)t->iteration);
    for (int i = 1; i >= 0; i--) {
        gan_probe_report(t->probe[i], net_names[i], 5, log_line, t);
        gan_status st = gan_probe_write_csv(t->probe[i], t->underflow_csv, t->iteration,
                                            net_names[i], err);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* At debug level 2 in 16-bit precision: the probes and grad_underflow.csv (new, or
 * continued by a resumed run that had it). Level 2 in FP32 has nothing to compare. */
static gan_status set_up_probes(gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    if (t->debug_level < 2)
        return GAN_OK;
    if (t->precision == GAN_F32) {
        gan_log_write(t->log, GAN_LOG_INFO,
                      "run.debug_level 2 compares 16-bit backward passes with FP32 ones; this run computes in FP32, so it shows level 1's statistics only");
        return GAN_OK;
    }
    for (int i = 0; i < 2; i++)
        if (gan_probe_new(&t->probe[i]) != GAN_OK)
            return nomem(err);
    char *path = gan_run_path(t->run_dir, GAN_RUN_GRAD_UNDERFLOW);
    if (!path)
        return nomem(err);
    gan_status st = gan_metrics_csv_open(path, gan_probe_csv_columns, GAN_PROBE_CSV_COLUMNS,
                                         resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                                         &t->underflow_csv, err);
    free(path);
    return st;
}

static const char *overflow_word(enum gan_scaler_overflow o)
{
    return o == GAN_SCALER_GRADIENT_OVERFLOW ? "gradient overflow"
         : o == GAN_SCALER_FORWARD_OVERFLOW ? "forward overflow" : "no overflow";
}

/* One network's update from its objective `loss` (value `value`), built for the scale
 * sg->scale_used: the scaled backward (unless the objective is not finite), the scaler's
 * verdict, and Adam unless it says skip. A skipped step leaves the parameters and Adam's
 * state as they were. */
static gan_status scaled_update(gan_trainer *t, int i, gan_tensor *loss, double value,
                                struct gan_error *err)
{
    struct scaling *sg = &t->scaling[i];
    struct scaler_inst *si = &sg->inst;
    double norm2 = 0.0;
    uint64_t f16_elements = 0, f16_low = 0;
    struct gan_scaler_input in;
    memset(&in, 0, sizeof in);
    in.struct_size = sizeof in;
    in.step = gan_optimizer_steps(t->opt[i]) + sg->skipped;
    in.scale = sg->scale_used;
    sg->n_entries = 0;
    int backward = isfinite(value);
    if (!backward) {
        /* A non-finite objective is the forward's doing unless an inner gradient the
         * scale seeded overflowed first (scaler.h); either way there is nothing to
         * differentiate. */
        int inner_overflow = 0;
        for (size_t k = 0; k < t->n_inner; k++)
            inner_overflow |= t->inner_outer[k] && t->inner[k].stats.nonfinite > 0;
        in.forward_overflow = !inner_overflow;
    } else if (scaled_backward(t, i, loss, &norm2, &f16_elements, &f16_low) != GAN_OK) {
        return ctx_fail(t, err, i ? "critic step" : "generator step");
    }
    for (size_t k = 0; k < t->n_inner; k++)
        if (t->inner_outer[k]) {
            struct gan_scaler_tensor *e = &sg->entries[sg->n_entries];
            *e = t->inner[k];
            snprintf(sg->inner_names[k], sizeof sg->inner_names[k], "%s", t->inner_name[k]);
            e->name = sg->inner_names[k];
            sg->n_entries++;
        }
    if (t->shadow.due && t->probe[i]) {
        gan_probe_clear(t->probe[i]);
        if (backward && shadow_compare(t, i) != GAN_OK)
            return ctx_fail(t, err, i ? "the critic's FP32 shadow (run.debug_level 2)"
                                      : "the generator's FP32 shadow (run.debug_level 2)");
    }
    in.tensors = sg->n_entries ? sg->entries : NULL;
    in.tensor_count = sg->n_entries;
    struct gan_scaler_decision d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    si->host.error.message[0] = '\0';
    gan_status st = si->module->scaler.update(si->sc, &in, &d);
    if (st != GAN_OK)
        return gan_error_set(err, st, "the %s's loss scaler \"%s\" stopped training at step %lld: %s",
                             net_names[i], si->module->plugin.name, (long long)in.step,
                             si->host.error.message[0] ? si->host.error.message : "it gave no reason");
    uint64_t nonfinite = 0;
    for (size_t k = 0; k < sg->n_entries; k++)
        nonfinite += sg->entries[k].stats.nonfinite;
    if (!d.skip && (!backward || nonfinite))
        return gan_error_set(err, GAN_ERR_INTERNAL,
                             "the %s's loss scaler \"%s\" (%s) applied step %lld although %s: fix the scaler (scaler.h: such a step must be skipped)",
                             net_names[i], si->module->plugin.name, si->module->path,
                             (long long)in.step, backward ? "its gradients are not finite"
                                                          : "its objective is not finite");
    sg->grad_norm = backward ? sqrt(norm2) : NAN;
    sg->underflow_frac = !backward ? NAN
                       : f16_elements ? (double)f16_low / (double)f16_elements : 0.0;
    if (d.overflow == GAN_SCALER_GRADIENT_OVERFLOW)
        sg->overflows |= OVERFLOW_GRADIENT;
    else if (d.overflow == GAN_SCALER_FORWARD_OVERFLOW)
        sg->overflows |= OVERFLOW_FORWARD;
    if (d.skip) {
        sg->skipped++;
        gan_log_write(t->log, GAN_LOG_DEBUG, "%s step %lld skipped (%s) at scale %.9g; next scale %.9g",
                      net_names[i], (long long)in.step, overflow_word(d.overflow), in.scale,
                      si->module->scaler.scale(si->sc));
        return GAN_OK;
    }
    struct gan_optimizer_report rep;
    if (gan_optimizer_step_measured(t->opt[i], sg->grad_norm, &rep) != GAN_OK)
        return ctx_fail(t, err, i ? "critic step" : "generator step");
    return GAN_OK;
}

/* One critic step: a fresh real batch, fake from fresh z (the generator is not
 * differentiated), the critic's objective, its scaled gradient, the scaler, Adam. */
static gan_status critic_step(gan_trainer *t, struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    struct scaling *sg = &t->scaling[1];
    gan_status st = t->images ? gan_image_run_batch(t->images, (size_t)t->batch, t->real_batch, err)
                              : gan_toy_sample(t->sampler, (size_t)t->batch, t->real_batch, err);
    if (st != GAN_OK)
        return st;
    int64_t dims[4];
    int ndim = batch_dims(t, t->batch, dims);
    gan_tensor *real = gan_tensor_from_host(ctx, GAN_F32, ndim, dims, t->real_batch);
    gan_ctx_no_grad_push(ctx);
    gan_tensor *z = draw_z(t, t->batch, &t->z_offset);
    gan_tensor *fake = net_forward(t, 0, ctx, z);
    gan_ctx_no_grad_pop(ctx);
    sg->scale_used = t->outer_scale = sg->inst.module->scaler.scale(sg->inst.sc);
    shadow_inputs(t, real, fake, NULL);
    struct gan_objective_sink sink = { .count = 0 };
    gan_tensor *loss = real && fake ? objective(t, GAN_LOSS_CRITIC, real, fake, &t->loss_offset, &sink)
                                    : NULL;
    if (!loss || gan_ctx_status(ctx) != GAN_OK ||
        scalar_value(t, loss, &t->latest.critic_loss) != GAN_OK ||
        read_metrics(t, &sink, t->critic_names, t->n_critic_metrics, t->latest.critic_metric) != GAN_OK)
        return ctx_fail(t, err, "critic step");
    if ((st = scaled_update(t, 1, loss, t->latest.critic_loss, err)) != GAN_OK)
        return st;
    t->latest.critic_norm = sg->grad_norm;
    gan_ctx_step_end(ctx);
    return GAN_OK;
}

/* One generator step: fresh z, the generator's objective through the critic, its
 * scaled gradient with respect to the generator only, the scaler, Adam. */
static gan_status generator_step(gan_trainer *t, struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    struct scaling *sg = &t->scaling[0];
    gan_tensor *z = draw_z(t, t->batch, &t->z_offset);
    gan_tensor *fake = net_forward(t, 0, ctx, z);
    sg->scale_used = t->outer_scale = sg->inst.module->scaler.scale(sg->inst.sc);
    shadow_inputs(t, NULL, NULL, z);
    struct gan_objective_sink sink = { .count = 0 };
    gan_tensor *loss = fake ? objective(t, GAN_LOSS_GENERATOR, NULL, fake, &t->loss_offset, &sink)
                            : NULL;
    if (!loss || gan_ctx_status(ctx) != GAN_OK ||
        scalar_value(t, loss, &t->latest.generator_loss) != GAN_OK ||
        read_metrics(t, &sink, t->generator_reported, t->n_generator_metrics,
                     t->latest.generator_metric) != GAN_OK)
        return ctx_fail(t, err, "generator step");
    gan_status st = scaled_update(t, 0, loss, t->latest.generator_loss, err);
    if (st != GAN_OK)
        return st;
    t->latest.generator_norm = sg->grad_norm;
    gan_ctx_step_end(ctx);
    return GAN_OK;
}

/* ------------------------------------------------------------------ the trial step */

/* A reported value's name becomes a CSV column and a JSON key: keep it plain. */
static int plain_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '-'))
            return 0;
    return 1;
}

static int has_name(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* x must have the shape `want` (ndim dimensions, the batch first). */
static gan_status check_shape(gan_trainer *t, gan_tensor *x, int ndim, const int64_t *want,
                              const char *what, struct gan_error *err)
{
    int same = gan_tensor_ndim(x) == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = gan_tensor_dim(x, d) == want[d];
    if (same)
        return GAN_OK;
    int mi = strcmp(what, "generator") == 0 ? 0 : 1;
    char shape[128], expected[128];
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    for (int d = 0; d < gan_tensor_ndim(x); d++)
        dims[d] = gan_tensor_dim(x, d);
    return gan_error_set(err, GAN_ERR_INVALID,
                         "model \"%s\" (%s) gave the %s an output of shape %s for a batch of %lld; it must be %s: fix the model",
                         t->model[mi].module->plugin.name, t->model[mi].module->path, what,
                         ti_dims_str(shape, sizeof shape, gan_tensor_ndim(x), dims),
                         (long long)want[0], ti_dims_str(expected, sizeof expected, ndim, want));
}

/* Runs both objectives once on a small batch with scratch streams, changing nothing:
 * it checks that the models and terms work together and learns the names of the
 * values the terms report, which become metrics.csv's columns. */
static gan_status trial_step(gan_trainer *t, struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    int64_t n = t->batch < (int64_t)t->n_eval_real ? t->batch : (int64_t)t->n_eval_real;
    int64_t dims[4], score[2] = { n, 1 };
    int ndim = batch_dims(t, n, dims);
    uint64_t z_offset = GAN_STREAM_PROBE, loss_offset = GAN_STREAM_PROBE + (UINT64_C(1) << 40);
    t->outer_scale = 1.0;   /* the terms run as in training, unscaled */
    gan_tensor *real = gan_tensor_from_host(ctx, GAN_F32, ndim, dims, t->eval_real);
    gan_tensor *z = draw_z(t, n, &z_offset);
    gan_tensor *fake = net_forward(t, 0, ctx, z);
    if (!real || !fake)
        return ctx_fail(t, err, "trying the generator");
    gan_status st = check_shape(t, fake, ndim, dims, "generator", err);
    if (st != GAN_OK)
        return st;
    gan_tensor *d = net_forward(t, 1, ctx, real);
    if (!d)
        return ctx_fail(t, err, "trying the critic");
    if ((st = check_shape(t, d, 2, score, "critic", err)) != GAN_OK)
        return st;
    for (int which = 0; which < 2; which++) {
        struct gan_objective_sink sink = { .count = 0 };
        enum gan_loss_target target = which ? GAN_LOSS_GENERATOR : GAN_LOSS_CRITIC;
        gan_tensor *loss = objective(t, target, which ? NULL : real, fake, &loss_offset, &sink);
        if (!loss)
            return ctx_fail(t, err, which ? "trying the generator's objective"
                                          : "trying the critic's objective");
        for (size_t i = 0; i < sink.count; i++) {
            char name[160];
            if (!plain_name(sink.names[i]))
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "a loss term reports a value named \"%.80s\": names are 1 to 64 letters, digits, '_', '.' or '-' (they become metrics.csv columns); fix the plugin",
                                     sink.names[i]);
            if (which == 0) {
                snprintf(name, sizeof name, "%s", sink.names[i]);
                if (!(t->critic_names[t->n_critic_metrics] = dup_string(name)))
                    return nomem(err);
                t->n_critic_metrics++;
            } else {
                /* A name the critic's terms report already gets the network's prefix. */
                snprintf(name, sizeof name, "%s%s",
                         has_name(t->critic_names, t->n_critic_metrics, sink.names[i]) ? "generator_" : "",
                         sink.names[i]);
                t->generator_names[t->n_generator_metrics] = dup_string(name);
                t->generator_reported[t->n_generator_metrics] = dup_string(sink.names[i]);
                if (!t->generator_names[t->n_generator_metrics] ||
                    !t->generator_reported[t->n_generator_metrics]) {
                    free(t->generator_names[t->n_generator_metrics]);
                    free(t->generator_reported[t->n_generator_metrics]);
                    return nomem(err);
                }
                t->n_generator_metrics++;
            }
        }
    }
    gan_ctx_step_end(ctx);
    return GAN_OK;
}

/* Each network's loss-scaling columns (critic first, as the other columns). */
static const char *const scaling_columns[2][4] = {
    { "generator_scale", "generator_skipped", "generator_overflow", "generator_underflow_frac" },
    { "critic_scale", "critic_skipped", "critic_overflow", "critic_underflow_frac" },
};

/* metrics.csv's columns: fixed ones around the reported values. */
static gan_status make_columns(gan_trainer *t, struct gan_error *err)
{
    const char *names[3 * MAX_METRICS + 24];
    size_t n = 0;
    names[n++] = "iteration";
    if (t->metrics_time)
        names[n++] = "time_s";
    names[n++] = "critic_loss";
    names[n++] = "generator_loss";
    for (size_t i = 0; i < t->n_critic_metrics; i++)
        names[n++] = t->critic_names[i];
    for (size_t i = 0; i < t->n_generator_metrics; i++)
        names[n++] = t->generator_names[i];
    names[n++] = "critic_grad_norm";
    names[n++] = "generator_grad_norm";
    for (int i = 1; i >= 0; i--)
        for (int k = 0; k < 4; k++)
            names[n++] = scaling_columns[i][k];
    names[n++] = "critic_true_underflow";
    names[n++] = "generator_true_underflow";
    if (t->is_image) {
        names[n++] = "sliced_w1_pixel";
        names[n++] = "frechet";
    } else {
        if (t->modes.count) {
            names[n++] = "modes_covered";
            names[n++] = "high_quality_pct";
        }
        names[n++] = "sliced_w1";
    }
    t->columns = calloc(n, sizeof *t->columns);
    if (!t->columns)
        return nomem(err);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "a loss term reports a value named \"%s\", which ganctl's metrics already have: rename it in the plugin",
                                     names[i]);
        if (!(t->columns[i] = dup_string(names[i])))
            return nomem(err);
        t->n_columns = i + 1;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ evaluation */

/* The generator's samples for the fixed evaluation z, into t->eval_fake. */
static gan_status generate_eval(gan_trainer *t, struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    gan_ctx_no_grad_push(ctx);
    gan_tensor *fake = net_forward(t, 0, ctx, t->eval_z);
    gan_ctx_no_grad_pop(ctx);
    if (!fake || gan_tensor_to_host(ctx, fake, t->eval_fake, 2 * GAN_EVAL_SAMPLES) != GAN_OK)
        return ctx_fail(t, err, "evaluation");
    gan_ctx_step_end(ctx);
    return GAN_OK;
}

/* n generated images into `out` (n × sample_size) from the z of the stream at `offset`,
 * in chunks that keep the step's buffers near a training batch's size. The same offset
 * gives the same z every time: an evaluation's or a grid's z is fixed for the run, and
 * a resumed run draws it alike. */
static gan_status generate_images(gan_trainer *t, size_t n, uint64_t offset, float *out,
                                  struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    const size_t chunk = 250;
    for (size_t at = 0; at < n; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        gan_ctx_no_grad_push(ctx);
        gan_tensor *z = draw_z(t, (int64_t)m, &offset);
        gan_tensor *fake = net_forward(t, 0, ctx, z);
        gan_ctx_no_grad_pop(ctx);
        if (!fake || gan_tensor_to_host(ctx, fake, out + at * (size_t)t->sample_size,
                                        m * (size_t)t->sample_size) != GAN_OK)
            return ctx_fail(t, err, "generating images");
        gan_ctx_step_end(ctx);
    }
    return GAN_OK;
}

/* An image run's evaluation: GAN_IMAGE_EVAL_SAMPLES images from the fixed evaluation z,
 * scored against the test split. */
static gan_status evaluate_images(gan_trainer *t, struct gan_error *err)
{
    gan_status st = generate_images(t, GAN_IMAGE_EVAL_SAMPLES, GAN_STREAM_EVAL_Z, t->eval_fake, err);
    if (st == GAN_OK)
        st = gan_image_run_eval(t->images, t->eval_fake, GAN_IMAGE_EVAL_SAMPLES,
                                &t->image_quality, err);
    if (st != GAN_OK)
        return st;
    t->quality_values[0] = (struct gan_named_value){ "sliced_w1_pixel", t->image_quality.sliced_w1 };
    t->quality_values[1] = (struct gan_named_value){ "frechet", t->image_quality.frechet };
    t->has_quality = 1;
    t->quality_iteration = t->iteration;
    return GAN_OK;
}

static gan_status evaluate(gan_trainer *t, struct gan_error *err)
{
    if (t->has_quality && t->quality_iteration == t->iteration)
        return GAN_OK;
    if (t->images)
        return evaluate_images(t, err);
    gan_status st = generate_eval(t, err);
    if (st == GAN_OK)
        st = gan_toy_quality(t->kind, t->eval_fake, GAN_EVAL_SAMPLES, t->eval_real,
                             GAN_EVAL_SAMPLES, &t->quality, err);
    if (st != GAN_OK)
        return st;
    t->has_quality = 1;
    t->quality_iteration = t->iteration;
    return GAN_OK;
}

/* The critic's value on the picture's lattice, in chunks the size of an evaluation
 * batch so that the step's buffers are the ones evaluations use already. */
static gan_status critic_field(gan_trainer *t, float *field, struct gan_error *err)
{
    gan_ctx *ctx = t->ctx;
    const size_t n = (size_t)GAN_PLOT_GRID * GAN_PLOT_GRID;
    float *xy = malloc(GAN_EVAL_SAMPLES * 2 * sizeof *xy);
    if (!xy)
        return nomem(err);
    gan_status st = GAN_OK;
    for (size_t at = 0; st == GAN_OK && at < n; at += GAN_EVAL_SAMPLES) {
        size_t m = n - at < GAN_EVAL_SAMPLES ? n - at : GAN_EVAL_SAMPLES;
        for (size_t k = 0; k < GAN_EVAL_SAMPLES; k++) {
            size_t p = at + (k < m ? k : 0);
            size_t i = p / GAN_PLOT_GRID, j = p % GAN_PLOT_GRID;
            xy[2 * k] = (float)(-GAN_TOY_PLOT_DEFAULT_EXTENT +
                                2.0 * GAN_TOY_PLOT_DEFAULT_EXTENT * (double)j / (GAN_PLOT_GRID - 1));
            xy[2 * k + 1] = (float)(-GAN_TOY_PLOT_DEFAULT_EXTENT +
                                    2.0 * GAN_TOY_PLOT_DEFAULT_EXTENT * (double)i / (GAN_PLOT_GRID - 1));
        }
        int64_t dims[2] = { GAN_EVAL_SAMPLES, 2 };
        gan_ctx_no_grad_push(ctx);
        gan_tensor *x = gan_tensor_from_host(ctx, GAN_F32, 2, dims, xy);
        gan_tensor *d = x ? net_forward(t, 1, ctx, x) : NULL;
        gan_ctx_no_grad_pop(ctx);
        float *values = xy;   /* GAN_EVAL_SAMPLES × 2 floats; the lattice is not needed now */
        if (!d || gan_tensor_to_host(ctx, d, values, GAN_EVAL_SAMPLES) != GAN_OK)
            st = ctx_fail(t, err, "drawing the critic's field");
        else
            memcpy(field + at, values, m * sizeof *field);
        gan_ctx_step_end(ctx);
    }
    free(xy);
    return st;
}

/* An image run's picture: the 8 × 8 grid of the fixed grid z, titled with the latest
 * evaluation when it is this iteration's. */
static gan_status image_picture(gan_trainer *t, const char *name, struct gan_error *err)
{
    float *images = malloc((size_t)GAN_IMAGE_GRID_COUNT * GAN_IMAGE_PIXELS * sizeof *images);
    if (!images)
        return nomem(err);
    gan_status st = generate_images(t, GAN_IMAGE_GRID_COUNT, GAN_STREAM_GRID_Z, images, err);
    char title[200];
    int used = snprintf(title, sizeof title, "%s iteration %lld", t->data_name,
                        (long long)t->iteration);
    if (t->has_quality && t->quality_iteration == t->iteration && used > 0)
        snprintf(title + used, sizeof title - (size_t)used, ", sliced W1 %.4g, Frechet %.4g",
                 t->image_quality.sliced_w1, t->image_quality.frechet);
    char *path = st == GAN_OK ? gan_run_path(t->run_dir, name) : NULL;
    if (st == GAN_OK)
        st = path ? gan_image_run_write_grid(path, images, GAN_IMAGE_GRID_COUNT, title, err)
                  : nomem(err);
    free(path);
    free(images);
    if (st == GAN_OK)
        t->image_iteration = t->iteration;
    return st;
}

/* A picture of the current state into `name` in the run folder. */
static gan_status picture(gan_trainer *t, const char *name, struct gan_error *err)
{
    if (t->images)
        return image_picture(t, name, err);
    float *field = malloc((size_t)GAN_PLOT_GRID * GAN_PLOT_GRID * sizeof *field);
    if (!field)
        return nomem(err);
    /* The evaluation's samples are the picture's generated points. */
    gan_status st = evaluate(t, err);
    if (st == GAN_OK)
        st = critic_field(t, field, err);
    /* The title strip holds 42 characters at the default size: the data set is in the
     * folder's name, and the separators shrink when the numbers grow. */
    char title[200];
    for (int sep = 2; sep >= 1; sep--) {
        const char *gap = sep == 2 ? "  " : " ";
        int used = snprintf(title, sizeof title, "iter %lld", (long long)t->iteration);
        if (t->quality.has_modes && used > 0 && (size_t)used < sizeof title)
            used += snprintf(title + used, sizeof title - (size_t)used, "%smodes %ld/%zu%shq %.1f%%",
                             gap, t->quality.modes_covered, t->quality.modes_total, gap,
                             t->quality.high_quality_pct);
        if (used > 0 && (size_t)used < sizeof title)
            used += snprintf(title + used, sizeof title - (size_t)used, "%ssW1 %.3f", gap,
                             t->quality.sliced_w1);
        if (used <= 42)
            break;
    }
    if (st == GAN_OK) {
        struct gan_toy_plot plot;
        memset(&plot, 0, sizeof plot);
        plot.field = field;
        plot.grid = GAN_PLOT_GRID;
        plot.real = t->eval_real;
        plot.n_real = GAN_PLOT_POINTS;
        plot.fake = t->eval_fake;
        plot.n_fake = GAN_PLOT_POINTS;
        plot.title = title;
        char *path = gan_run_path(t->run_dir, name);
        st = path ? gan_toy_plot_write(path, &plot, err) : nomem(err);
        free(path);
    }
    free(field);
    if (st == GAN_OK)
        t->image_iteration = t->iteration;
    return st;
}

/* ------------------------------------------------------------------ outputs */

static struct gan_cell cell_int(int present, long long v)
{
    return (struct gan_cell){ present ? GAN_CELL_INT : GAN_CELL_EMPTY, v, 0.0, NULL };
}

static struct gan_cell cell_float(int present, double v)
{
    return (struct gan_cell){ present ? GAN_CELL_FLOAT : GAN_CELL_EMPTY, 0, v, NULL };
}

static struct gan_cell cell_text(const char *s)
{
    return (struct gan_cell){ GAN_CELL_TEXT, 0, 0.0, s };
}

/* The overflow cell: the kinds of overflow a network's steps had since the last row. */
static const char *overflow_cell(unsigned overflows)
{
    switch (overflows & (OVERFLOW_GRADIENT | OVERFLOW_FORWARD)) {
    case OVERFLOW_GRADIENT: return "gradient";
    case OVERFLOW_FORWARD: return "forward";
    case OVERFLOW_GRADIENT | OVERFLOW_FORWARD: return "both";
    default: return "none";
    }
}

/* grad_stats.csv's columns: one row per gradient tensor of each network's last update
 * before a metrics row. */
static const char *const grad_columns[] = {
    "iteration", "network", "tensor", "role", "dtype", "scale", "elements", "zero_frac",
    "subnormal_frac", "nonfinite", "absmax", "min_nonzero", "norm",
};
#define GRAD_COLUMNS (sizeof grad_columns / sizeof grad_columns[0])

/* Debug level 1: each network's last update, tensor by tensor, as grad_stats.csv rows
 * and as a table in the log. The statistics are those the scaler was given: counts of
 * the stored (scaled) values, magnitudes of the unscaled ones. */
static gan_status write_grad_stats(gan_trainer *t, struct gan_error *err)
{
    gan_log_write(t->log, GAN_LOG_INFO,
                  "gradients at iteration %lld (each network's last step; zero%% and subn%% of the stored values, magnitudes unscaled):",
                  (long long)t->iteration);
    gan_log_write(t->log, GAN_LOG_INFO, "  %-28s %-4s %11s %9s %7s %7s %7s %10s %10s", "tensor",
                  "type", "scale", "elements", "zero%", "subn%", "nonfin", "absmax", "norm");
    for (int i = 1; i >= 0; i--) {
        const struct scaling *sg = &t->scaling[i];
        if (sg->n_entries == 0)
            gan_log_write(t->log, GAN_LOG_INFO, "  %s: no gradients yet, or its last objective was not finite",
                          net_names[i]);
        for (size_t k = 0; k < sg->n_entries; k++) {
            const struct gan_scaler_tensor *e = &sg->entries[k];
            const struct gan_grad_stats *g = &e->stats;
            double n = g->elements ? (double)g->elements : 1.0;
            double zero = (double)g->zeros / n, sub = (double)g->subnormal / n;
            double norm = sqrt(g->sum_squares);
            const char *dtype = gan_dtype_name(e->dtype);
            const char *role = e->role == GAN_SCALER_INNER_GRAD ? "inner" : "param";
            gan_log_write(t->log, GAN_LOG_INFO, "  %-28s %-4s %11.5g %9llu %7.3f %7.3f %7llu %10.3e %10.3e",
                          e->name, dtype, sg->scale_used, (unsigned long long)g->elements,
                          100.0 * zero, 100.0 * sub, (unsigned long long)g->nonfinite, g->absmax,
                          norm);
            struct gan_cell cells[GRAD_COLUMNS];
            size_t c = 0;
            cells[c++] = cell_int(1, t->iteration);
            cells[c++] = cell_text(net_names[i]);
            cells[c++] = cell_text(e->name);
            cells[c++] = cell_text(role);
            cells[c++] = cell_text(dtype);
            cells[c++] = cell_float(1, sg->scale_used);
            cells[c++] = cell_int(1, (long long)g->elements);
            cells[c++] = cell_float(1, zero);
            cells[c++] = cell_float(1, sub);
            cells[c++] = cell_int(1, (long long)g->nonfinite);
            cells[c++] = cell_float(1, g->absmax);
            cells[c++] = cell_float(1, g->min_nonzero);
            cells[c++] = cell_float(1, norm);
            gan_status st = gan_metrics_csv_row(t->grad_csv, cells, c, err);
            if (st != GAN_OK)
                return st;
        }
    }
    return GAN_OK;
}

static gan_status write_row(gan_trainer *t, struct gan_error *err)
{
    struct gan_cell cells[3 * MAX_METRICS + 24];
    size_t n = 0;
    int evaluated = t->has_quality && t->quality_iteration == t->iteration;
    int generator_ran = t->iteration > 1;
    cells[n++] = cell_int(1, t->iteration);
    if (t->metrics_time)
        cells[n++] = cell_float(1, t->elapsed_before + session_s(t));
    cells[n++] = cell_float(1, t->latest.critic_loss);
    cells[n++] = cell_float(generator_ran, t->latest.generator_loss);
    for (size_t i = 0; i < t->n_critic_metrics; i++)
        cells[n++] = cell_float(1, t->latest.critic_metric[i]);
    for (size_t i = 0; i < t->n_generator_metrics; i++)
        cells[n++] = cell_float(generator_ran, t->latest.generator_metric[i]);
    cells[n++] = cell_float(1, t->latest.critic_norm);
    cells[n++] = cell_float(generator_ran, t->latest.generator_norm);
    for (int i = 1; i >= 0; i--) {
        struct scaling *sg = &t->scaling[i];
        int ran = i == 1 || generator_ran;
        cells[n++] = cell_float(1, sg->inst.module->scaler.scale(sg->inst.sc));
        cells[n++] = cell_int(1, sg->skipped);
        cells[n++] = ran ? cell_text(overflow_cell(sg->overflows)) : cell_int(0, 0);
        cells[n++] = cell_float(ran, sg->underflow_frac);
    }
    /* Debug level 2: filled where a network's last step was compared with its shadow. */
    for (int i = 1; i >= 0; i--) {
        double frac = gan_probe_param_fraction(t->probe[i]);
        cells[n++] = cell_float(!isnan(frac), frac);
    }
    if (t->is_image) {
        cells[n++] = cell_float(evaluated, t->image_quality.sliced_w1);
        cells[n++] = cell_float(evaluated, t->image_quality.frechet);
    } else {
        if (t->modes.count) {
            cells[n++] = cell_int(evaluated, t->quality.modes_covered);
            cells[n++] = cell_float(evaluated, t->quality.high_quality_pct);
        }
        cells[n++] = cell_float(evaluated, t->quality.sliced_w1);
    }
    gan_status st = gan_metrics_csv_row(t->metrics, cells, n, err);
    if (st == GAN_OK && t->grad_csv)
        st = write_grad_stats(t, err);
    if (st == GAN_OK && t->underflow_csv)
        st = write_underflow(t, err);
    for (int i = 0; i < 2; i++)
        if (t->probe[i])
            gan_probe_clear(t->probe[i]);
    for (int i = 0; i < 2; i++)
        t->scaling[i].overflows = 0;
    return st;
}

static gan_status save_checkpoint(gan_trainer *t, struct gan_error *err)
{
    struct gan_checkpoint_net nets[2];
    struct gan_checkpoint_scaling scalings[2];
    for (int i = 0; i < 2; i++) {
        struct scaling *sg = &t->scaling[i];
        memset(&scalings[i], 0, sizeof scalings[i]);
        if (gan_scaler_save_state(sg->inst.module, sg->inst.sc, &scalings[i].state) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INTERNAL, "the %s's loss scaler \"%s\" could not save its state: %s",
                                 net_names[i], sg->inst.module->plugin.name,
                                 sg->inst.host.error.message[0] ? sg->inst.host.error.message
                                                                : "it gave no reason");
        scalings[i].skipped = sg->skipped;
        scalings[i].overflows = sg->overflows;
        nets[i] = (struct gan_checkpoint_net){ net_names[i], t->net[i], t->opt[i], &scalings[i] };
    }
    struct gan_checkpoint_state state;
    memset(&state, 0, sizeof state);
    state.iteration = t->iteration;
    state.seed = t->seed;
    state.z_offset = t->z_offset;
    state.loss_offset = t->loss_offset;
    if (t->images) {
        state.has_image = 1;
        state.image = gan_image_run_tell(t->images);
    } else {
        gan_toy_sampler_get_state(t->sampler, &state.data);
    }
    state.elapsed_s = t->elapsed_before + session_s(t);
    state.config_text = t->config_text;
    gan_status st = gan_metrics_csv_sync(t->metrics, err);
    if (st == GAN_OK)
        st = gan_checkpoint_save(t->checkpoint_path, nets, 2, &state, err);
    if (st == GAN_OK) {
        t->checkpoint_iteration = t->iteration;
        gan_log_write(t->log, GAN_LOG_DEBUG, "checkpoint at iteration %lld: %s",
                      (long long)t->iteration, t->checkpoint_path);
    }
    return st;
}

static void fill_progress(const gan_trainer *t, struct gan_progress *p)
{
    memset(p, 0, sizeof *p);
    p->iteration = t->iteration;
    p->total = t->iterations;
    p->elapsed_s = session_s(t);
    int64_t done = t->iteration - t->start_iteration;
    p->it_per_s = done > 0 && p->elapsed_s > 0 ? (double)done / p->elapsed_s : 0.0;
    p->critic_loss = t->iteration > 0 ? t->latest.critic_loss : NAN;
    p->generator_loss = t->iteration > 1 ? t->latest.generator_loss : NAN;
    p->w_distance = NAN;
    for (size_t i = 0; i < t->n_critic_metrics; i++)
        if (strcmp(t->critic_names[i], "w_distance") == 0)
            p->w_distance = t->latest.critic_metric[i];
    p->has_quality = t->has_quality;
    p->evaluated = t->has_quality && t->quality_iteration == t->iteration;
    p->quality_iteration = t->quality_iteration;
    p->quality = t->quality;
    if (t->images) {
        p->quality_values = t->quality_values;
        p->quality_count = 2;
    }
}

static gan_status write_summary(gan_trainer *t, const char *status, struct gan_error *err)
{
    struct gan_named_value final[8 + 2 * MAX_METRICS];
    size_t n = 0;
    final[n++] = (struct gan_named_value){ "critic_loss", t->latest.critic_loss };
    final[n++] = (struct gan_named_value){ "generator_loss", t->latest.generator_loss };
    for (size_t i = 0; i < t->n_critic_metrics; i++)
        final[n++] = (struct gan_named_value){ t->critic_names[i], t->latest.critic_metric[i] };
    for (size_t i = 0; i < t->n_generator_metrics; i++)
        final[n++] = (struct gan_named_value){ t->generator_names[i], t->latest.generator_metric[i] };
    final[n++] = (struct gan_named_value){ "critic_grad_norm", t->latest.critic_norm };
    final[n++] = (struct gan_named_value){ "generator_grad_norm", t->latest.generator_norm };
    for (int i = 1; i >= 0; i--) {
        const struct scaling *sg = &t->scaling[i];
        final[n++] = (struct gan_named_value){ scaling_columns[i][0],
                                               sg->inst.module->scaler.scale(sg->inst.sc) };
        final[n++] = (struct gan_named_value){ scaling_columns[i][1], (double)sg->skipped };
    }
    double session = session_s(t);
    int64_t done = t->iteration - t->start_iteration;
    struct gan_run_summary s;
    memset(&s, 0, sizeof s);
    s.status = status;
    s.version = gan_version();
    s.backend = gan_backend_instance_describe(t->backend);
    s.generator = t->model[0].description;
    s.critic = t->model[1].description;
    s.data = t->data_name;
    s.run_dir = t->run_dir;
    s.iterations = t->iteration;
    s.iterations_planned = t->iterations;
    s.wall_time_s = t->elapsed_before + session;
    s.iterations_per_s = done > 0 && session > 0 ? (double)done / session : NAN;
    s.final = final;
    s.final_count = t->iteration > 0 ? n : 0;
    s.has_quality = t->has_quality;
    s.quality_iteration = t->quality_iteration;
    s.quality_samples = GAN_EVAL_SAMPLES;
    s.quality = t->quality;
    s.floor = t->floor;
    if (t->images) {
        s.quality_samples = GAN_IMAGE_EVAL_SAMPLES;
        s.quality_values = t->quality_values;
        s.floor_values = t->floor_values;
        s.quality_count = 2;
    }
    s.checkpoint = t->checkpoint_iteration >= 0 ? GAN_RUN_CHECKPOINT : NULL;
    s.final_image = t->image_iteration == t->iterations ? GAN_RUN_FINAL_IMAGE : NULL;
    s.config = t->cfg;
    return gan_run_summary_write(t->run_dir, &s, err);
}

/* ------------------------------------------------------------------ new, free */

/* An image run's data, metrics and floors, and its buffers; eval_real holds the first
 * test images, as many as the trial step and the real grid use. */
static gan_status set_up_images(gan_trainer *t, struct gan_error *err)
{
    const char *dir = "", *classifier = "";
    gan_config_get_string(t->cfg, GAN_IMAGE_DATA_SETTING, &dir);
    gan_config_get_string(t->cfg, "eval.classifier", &classifier);
    gan_status st = gan_image_run_new(dir, classifier, t->seed, t->ctx, &t->images, err);
    if (st != GAN_OK)
        return st;
    gan_log_write(t->log, GAN_LOG_INFO, "image quality: %u images against the test split; Frechet distance in the features of %s",
                  GAN_IMAGE_EVAL_SAMPLES, gan_image_run_classifier(t->images));
    size_t trial = t->batch < (int64_t)GAN_IMAGE_EVAL_SAMPLES ? (size_t)t->batch
                                                              : GAN_IMAGE_EVAL_SAMPLES;
    t->n_eval_real = trial > GAN_IMAGE_GRID_COUNT ? trial : GAN_IMAGE_GRID_COUNT;
    t->eval_real = malloc(t->n_eval_real * GAN_IMAGE_PIXELS * sizeof *t->eval_real);
    t->eval_fake = malloc((size_t)GAN_IMAGE_EVAL_SAMPLES * GAN_IMAGE_PIXELS * sizeof *t->eval_fake);
    t->real_batch = malloc((size_t)t->batch * GAN_IMAGE_PIXELS * sizeof *t->real_batch);
    if (!t->eval_real || !t->eval_fake || !t->real_batch)
        return nomem(err);
    if ((st = gan_image_run_test_images(t->images, t->n_eval_real, t->eval_real, err)) != GAN_OK)
        return st;
    t->image_quality.sliced_w1 = t->image_quality.frechet = NAN;
    t->image_floor = gan_image_run_floor(t->images);
    t->floor_values[0] = (struct gan_named_value){ "sliced_w1_pixel", t->image_floor.sliced_w1 };
    t->floor_values[1] = (struct gan_named_value){ "frechet", t->image_floor.frechet };
    return GAN_OK;
}

static gan_status set_up_eval(gan_trainer *t, struct gan_error *err)
{
    if (t->is_image)
        return set_up_images(t, err);
    t->n_eval_real = GAN_EVAL_SAMPLES;
    gan_toy_modes(t->kind, &t->modes);
    t->eval_real = malloc(GAN_EVAL_SAMPLES * 2 * sizeof *t->eval_real);
    t->eval_fake = malloc(GAN_EVAL_SAMPLES * 2 * sizeof *t->eval_fake);
    t->real_batch = malloc((size_t)t->batch * 2 * sizeof *t->real_batch);
    if (!t->eval_real || !t->eval_fake || !t->real_batch)
        return nomem(err);
    gan_toy_sampler *held_out;
    gan_status st = gan_toy_sampler_new(t->kind, t->seed, GAN_STREAM_EVAL_REAL, &held_out, err);
    if (st != GAN_OK)
        return st;
    st = gan_toy_sample(held_out, GAN_EVAL_SAMPLES, t->eval_real, err);
    gan_toy_sampler_free(held_out);
    if (st == GAN_OK)
        st = gan_toy_quality_floor(t->kind, t->seed, GAN_STREAM_FLOOR, GAN_EVAL_SAMPLES,
                                   &t->floor, err);
    if (st != GAN_OK)
        return st;
    int64_t dims[2] = { GAN_EVAL_SAMPLES, t->z_dim };
    gan_tensor *z = gan_tensor_new_persistent(t->ctx, GAN_F32, 2, dims);
    gan_tensor *drawn = gan_tensor_normal(t->ctx, GAN_F32, 2, dims, t->seed, GAN_STREAM_EVAL_Z,
                                          0.0f, 1.0f);
    if (!z || !drawn || gan_tensor_copy(t->ctx, z, drawn) != GAN_OK) {
        gan_tensor_free(z);
        return ctx_fail(t, err, "drawing the evaluation's z");
    }
    t->eval_z = z;
    gan_ctx_step_end(t->ctx);
    return GAN_OK;
}

/* A new run's folder and files; or a resumed run's, with its checkpoint loaded. */
static gan_status set_up_run_dir(gan_trainer *t, const char *resume_dir, struct gan_error *err)
{
    gan_status st;
    if (resume_dir) {
        size_t n = strlen(resume_dir);
        while (n > 1 && resume_dir[n - 1] == '/')
            n--;
        if (!(t->run_dir = malloc(n + 1)))
            return nomem(err);
        memcpy(t->run_dir, resume_dir, n);
        t->run_dir[n] = '\0';
    } else {
        const char *dir = "";
        gan_config_get_string(t->cfg, "run.dir", &dir);
        const struct gan_config_value *v = gan_config_find(t->cfg, "run.dir");
        if ((st = gan_run_dir_create(dir, v ? v->origin : "run.dir", t->data_name, &t->run_dir,
                                     err)) != GAN_OK)
            return st;
        if ((st = gan_config_set_string(t->cfg, "run.dir", t->run_dir, v ? v->origin : "default",
                                        err)) != GAN_OK)
            return st;
    }
    if (!(t->checkpoint_path = gan_run_path(t->run_dir, GAN_RUN_CHECKPOINT)))
        return nomem(err);
    int64_t resume_after = -1;
    if (resume_dir) {
        struct gan_checkpoint_net nets[2];
        struct gan_checkpoint_scaling scalings[2];
        for (int i = 0; i < 2; i++)
            nets[i] = (struct gan_checkpoint_net){ net_names[i], t->net[i], t->opt[i], &scalings[i] };
        struct gan_checkpoint_state state;
        if ((st = gan_checkpoint_load(t->checkpoint_path, nets, 2, &state, err)) != GAN_OK)
            return st;
        for (int i = 0; i < 2; i++) {
            struct scaling *sg = &t->scaling[i];
            struct scaler_inst *si = &sg->inst;
            si->host.error.message[0] = '\0';
            if ((st = gan_scaler_load_state(si->module, si->sc, &si->host.host, &scalings[i].state)) != GAN_OK)
                return gan_error_set(err, st, "%s: the %s's loss scaler \"%s\" refuses the saved state (%s/%lld): %s",
                                     t->checkpoint_path, net_names[i], si->module->plugin.name,
                                     scalings[i].state.scaler, (long long)scalings[i].state.version,
                                     si->host.error.message[0] ? si->host.error.message
                                                                : "it gave no reason");
            sg->skipped = scalings[i].skipped;
            sg->overflows = (unsigned)scalings[i].overflows;
        }
        if (state.seed != t->seed)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: the checkpoint was written with seed %llu but its configuration says run.seed = %llu: the file is damaged",
                                 t->checkpoint_path, (unsigned long long)state.seed,
                                 (unsigned long long)t->seed);
        if (state.has_image != (t->images != NULL))
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: the checkpoint holds the position of %s sampler, but the run's data.name is \"%s\": the file belongs to another run",
                                 t->checkpoint_path, state.has_image ? "an image" : "a toy",
                                 t->data_name);
        st = t->images ? gan_image_run_seek(t->images, state.image, err)
                       : gan_toy_sampler_set_state(t->sampler, &state.data, err);
        if (st != GAN_OK)
            return st;
        t->iteration = state.iteration;
        t->z_offset = state.z_offset;
        t->loss_offset = state.loss_offset;
        t->elapsed_before = state.elapsed_s;
        t->checkpoint_iteration = state.iteration;
        resume_after = state.iteration;
    }
    char *text = gan_config_to_text(t->cfg, 1);
    t->config_text = gan_config_to_text(t->cfg, 0);
    if (!text || !t->config_text) {
        free(text);
        return nomem(err);
    }
    static const char head[] =
        "# config.conf - the configuration of this run, every setting with where it came from.\n"
        "# ganctl -c config.conf repeats the run (set run.dir to a new folder first).\n";
    char *full = malloc(strlen(head) + strlen(text) + 1);
    if (!full) {
        free(text);
        return nomem(err);
    }
    strcpy(full, head);
    strcat(full, text);
    free(text);
    st = gan_run_write_text(t->run_dir, GAN_RUN_CONFIG, full, err);
    free(full);
    if (st != GAN_OK)
        return st;
    /* An image run shows real test images once, beside which its grids are judged. */
    if (t->images && !resume_dir) {
        char *real = gan_run_path(t->run_dir, GAN_IMAGE_REAL_GRID);
        st = real ? gan_image_run_write_grid(real, t->eval_real, GAN_IMAGE_GRID_COUNT,
                                             "fashion-mnist test images 1 to 64", err)
                  : nomem(err);
        free(real);
        if (st != GAN_OK)
            return st;
    }
    char *path = gan_run_path(t->run_dir, GAN_RUN_METRICS);
    if (!path)
        return nomem(err);
    st = gan_metrics_csv_open(path, (const char *const *)t->columns, t->n_columns, resume_after,
                              &t->metrics, err);
    free(path);
    if (st != GAN_OK || t->debug_level < 1)
        return st;
    /* A resumed run may have started without the debug level: then the file is new. */
    if (!(path = gan_run_path(t->run_dir, GAN_RUN_GRAD_STATS)))
        return nomem(err);
    st = gan_metrics_csv_open(path, grad_columns, GRAD_COLUMNS,
                              resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                              &t->grad_csv, err);
    free(path);
    return st == GAN_OK ? set_up_probes(t, resume_after, err) : st;
}

gan_status gan_trainer_new(const struct gan_trainer_setup *setup, gan_trainer **out,
                           struct gan_error *err)
{
    *out = NULL;
    gan_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return nomem(err);
    t->cfg = setup->config;
    t->log = setup->log;
    t->stop = setup->stop;
    t->events = setup->events;
    t->checkpoint_iteration = -1;
    t->image_iteration = -1;
    t->latest.critic_loss = t->latest.generator_loss = NAN;
    t->latest.critic_norm = t->latest.generator_norm = NAN;
    clock_gettime(CLOCK_MONOTONIC, &t->t0);

    gan_status st = plugins_open(&t->plugins, t->cfg, setup->loader, err);
    if (st == GAN_OK)
        st = read_settings(t, err);
    if (st == GAN_OK)
        st = gan_backend_instance_new(t->plugins.backend, t->cfg, t->log, &t->backend, err);
    if (st == GAN_OK) {
        st = gan_ctx_new(&t->plugins.backend->backend, t->backend->be, &t->ctx);
        if (st != GAN_OK)
            gan_error_set(err, st, "cannot make the compute context: out of memory");
        else
            gan_ctx_set_backend_message(t->ctx, backend_message, t->backend);
    }
    if (st == GAN_OK)
        st = make_models(t, err);
    if (st == GAN_OK)
        st = make_losses(t, err);
    if (st == GAN_OK)
        bind_objective(t);
    if (st == GAN_OK)
        st = make_scalers(t, err);
    /* Initialised from the seed even when resuming (the checkpoint then overwrites the
     * values): the same code path either way. */
    uint64_t init[2] = { GAN_STREAM_INIT_GENERATOR, GAN_STREAM_INIT_CRITIC };
    for (int i = 0; st == GAN_OK && i < 2; i++) {
        struct gan_adam_settings as;
        adam_settings(t->cfg, net_names[i], &as);
        if (gan_net_init(t->net[i], t->seed, &init[i]) != GAN_OK ||
            gan_optimizer_new(t->net[i], &as, &t->opt[i]) != GAN_OK)
            st = ctx_fail(t, err, net_names[i]);
    }
    t->z_offset = GAN_STREAM_Z;
    t->loss_offset = GAN_STREAM_LOSS;
    if (st == GAN_OK && !t->is_image)
        st = gan_toy_sampler_new(t->kind, t->seed, GAN_STREAM_DATA, &t->sampler, err);
    if (st == GAN_OK)
        st = set_up_eval(t, err);
    if (st == GAN_OK)
        st = set_up_precision(t, err);
    if (st == GAN_OK)
        st = trial_step(t, err);
    if (st == GAN_OK)
        st = make_columns(t, err);
    if (st == GAN_OK)
        st = set_up_run_dir(t, setup->resume_dir, err);
    if (st != GAN_OK) {
        gan_trainer_free(t);
        return st;
    }
    t->start_iteration = t->iteration;
    for (int i = 0; i < 2; i++)
        gan_log_write(t->log, GAN_LOG_INFO, "%s: %s (%lld parameters)", net_names[i],
                      t->model[i].description, (long long)gan_net_total(t->net[i]));
    if (t->precision != GAN_F32) {
        const char *const *patterns;
        size_t n = 0;
        if (gan_config_get_strings(t->cfg, "precision.fp32", &patterns, &n) != GAN_OK)
            n = 0;
        gan_log_write(t->log, GAN_LOG_INFO, "precision: %s %s, FP32 master weights%s%zu FP32 scope pattern%s",
                      t->precision == GAN_F16 ? "fp16" : "bf16",
                      t->level == GAN_PRECISION_O1 ? "O1" : "O2", ", ", n, n == 1 ? "" : "s");
    }
    for (int i = 1; i >= 0; i--)
        gan_log_write(t->log, GAN_LOG_INFO, "%s loss scaler: %s", net_names[i],
                      t->scaling[i].inst.description);
    *out = t;
    return GAN_OK;
}

void gan_trainer_free(gan_trainer *t)
{
    if (!t)
        return;
    gan_metrics_csv_close(t->metrics, NULL);
    gan_metrics_csv_close(t->grad_csv, NULL);
    gan_metrics_csv_close(t->underflow_csv, NULL);
    for (int i = 0; i < 2; i++)
        gan_probe_free(t->probe[i]);
    for (int i = 0; i < 2; i++) {
        struct scaler_inst *si = &t->scaling[i].inst;
        if (si->sc && si->module->scaler.destroy)
            si->module->scaler.destroy(si->sc);
        free(t->scaling[i].entries);
        free(t->scaling[i].grads);
    }
    for (size_t i = 0; i < t->n_loss; i++)
        if (t->loss[i].loss && t->loss[i].module->loss.destroy)
            t->loss[i].module->loss.destroy(t->loss[i].loss);
    for (int i = 0; i < 2; i++) {
        if (t->model[i].model && t->model[i].module->model.destroy)
            t->model[i].module->model.destroy(t->model[i].model);
        gan_optimizer_free(t->opt[i]);
        gan_net_free(t->net[i]);
    }
    gan_tensor_free(t->eval_z);
    /* The metrics' classifier runs on the backend: it goes first. */
    gan_image_run_free(t->images);
    gan_ctx_free(t->ctx);
    gan_backend_instance_free(t->backend);
    plugins_close(&t->plugins);
    gan_toy_sampler_free(t->sampler);
    for (size_t i = 0; i < t->n_critic_metrics; i++)
        free(t->critic_names[i]);
    for (size_t i = 0; i < t->n_generator_metrics; i++) {
        free(t->generator_names[i]);
        free(t->generator_reported[i]);
    }
    for (size_t i = 0; i < t->n_columns; i++)
        free(t->columns[i]);
    free(t->columns);
    free(t->eval_real);
    free(t->eval_fake);
    free(t->real_batch);
    free(t->run_dir);
    free(t->checkpoint_path);
    free(t->config_text);
    free(t);
}

/* ------------------------------------------------------------------ the loop */

static int due(int64_t iteration, int64_t every)
{
    return every > 0 && iteration % every == 0;
}

/* Whether completing iteration `it` writes a metrics row: a logged, evaluated or
 * pictured iteration, and the last. */
static int row_at(const gan_trainer *t, int64_t it)
{
    return due(it, t->log_every) || due(it, t->eval_every) || due(it, t->image_every) ||
           it == t->iterations;
}

static void report_progress(gan_trainer *t, int final)
{
    if (!t->events.progress)
        return;
    struct gan_progress p;
    fill_progress(t, &p);
    t->events.progress(t->events.ctx, &p, final);
}

static gan_status finish(gan_trainer *t, int interrupted, struct gan_trainer_result *r,
                         struct gan_error *err)
{
    gan_status st = GAN_OK;
    int complete = t->iteration >= t->iterations;
    if (!interrupted && complete) {
        st = evaluate(t, err);
        if (st == GAN_OK)
            st = picture(t, GAN_RUN_FINAL_IMAGE, err);
    }
    if (st == GAN_OK && t->checkpoint_iteration != t->iteration)
        st = save_checkpoint(t, err);
    if (st == GAN_OK)
        st = write_summary(t, interrupted ? "interrupted" : "completed", err);
    if (st == GAN_OK)
        report_progress(t, 1);
    memset(r, 0, sizeof *r);
    r->interrupted = interrupted;
    r->iterations = t->iteration;
    r->planned = t->iterations;
    r->session_s = session_s(t);
    r->wall_time_s = t->elapsed_before + r->session_s;
    int64_t done = t->iteration - t->start_iteration;
    r->it_per_s = done > 0 && r->session_s > 0 ? (double)done / r->session_s : 0.0;
    r->run_dir = t->run_dir;
    r->data = t->data_name;
    r->has_quality = t->has_quality;
    r->quality_iteration = t->quality_iteration;
    r->quality = t->quality;
    r->floor = t->floor;
    r->quality_samples = GAN_EVAL_SAMPLES;
    if (t->images) {
        r->quality_samples = GAN_IMAGE_EVAL_SAMPLES;
        r->quality_values = t->quality_values;
        r->floor_values = t->floor_values;
        r->quality_count = 2;
    }
    return st;
}

gan_status gan_trainer_run(gan_trainer *t, struct gan_trainer_result *result,
                           struct gan_error *err)
{
    clock_gettime(CLOCK_MONOTONIC, &t->t0);
    t->start_iteration = t->iteration;
    gan_status st = GAN_OK;
    int interrupted = 0;
    while (t->iteration < t->iterations) {
        if (t->stop && *t->stop) {
            interrupted = 1;
            break;
        }
        /* The learning rates of this iteration: linear decay (the WGAN-GP code's
         * schedule for CIFAR-10) goes from lr at iteration 0 to 0 at run.iterations. */
        for (int i = 0; i < 2; i++)
            gan_optimizer_set_lr_scale(t->opt[i], t->lr_decay[i]
                ? 1.0 - (double)t->iteration / (double)t->iterations : 1.0);
        /* gan_toy.py: the generator first (not on the very first iteration), then
         * n_critic critic steps, each on a fresh real batch. */
        /* Debug level 2 compares each network's last step before a metrics row. */
        int probe = t->probe[0] && row_at(t, t->iteration + 1);
        t->shadow.due = probe;
        if (t->iteration > 0 && (st = generator_step(t, err)) != GAN_OK)
            return st;
        for (int64_t c = 0; c < t->n_critic; c++) {
            t->shadow.due = probe && c == t->n_critic - 1;
            if ((st = critic_step(t, err)) != GAN_OK)
                return st;
        }
        t->shadow.due = 0;
        t->iteration++;
        int final = t->iteration == t->iterations;
        int eval = due(t->iteration, t->eval_every) || final;
        int image = due(t->iteration, t->image_every);
        if (eval && (st = evaluate(t, err)) != GAN_OK)
            return st;
        if (image) {
            char name[64];
            snprintf(name, sizeof name, "samples-%06lld.png", (long long)t->iteration);
            if ((st = picture(t, name, err)) != GAN_OK)
                return st;
        }
        int logged = row_at(t, t->iteration);
        if (logged && (st = write_row(t, err)) != GAN_OK)
            return st;
        if (due(t->iteration, t->checkpoint_every) && (st = save_checkpoint(t, err)) != GAN_OK)
            return st;
        if (logged && !final)
            report_progress(t, 0);
    }
    if (t->stop && *t->stop && t->iteration < t->iterations)
        interrupted = 1;
    return finish(t, interrupted, result, err);
}

/* ------------------------------------------------------------------ queries */

gan_ctx *gan_trainer_ctx(const gan_trainer *t)
{
    return t->ctx;
}

gan_net *gan_trainer_net(const gan_trainer *t, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? t->net[0] : role == GAN_MODEL_CRITIC ? t->net[1] : NULL;
}

const char *gan_trainer_run_dir(const gan_trainer *t)
{
    return t->run_dir;
}

int64_t gan_trainer_iteration(const gan_trainer *t)
{
    return t->iteration;
}

const char *gan_trainer_backend_description(const gan_trainer *t)
{
    return gan_backend_instance_describe(t->backend);
}

size_t gan_trainer_column_count(const gan_trainer *t)
{
    return t->n_columns;
}

const char *gan_trainer_column(const gan_trainer *t, size_t index)
{
    return index < t->n_columns ? t->columns[index] : NULL;
}
