/* SPDX-License-Identifier: MIT */
/* session.h — everything a training step needs, made from a configuration: the plugins it
 * names, the backend instance and compute context, both networks with their optimizers,
 * models, loss terms and loss scalers, the objective and the precision policy.
 *
 * The trainer, `ganctl grads` and the checks of --print-config and --resume all start
 * here, so that a step replayed by `ganctl grads` is made of exactly what the trainer's
 * is. The session owns every instance in it; the configuration and the log are
 * borrowed and must outlive it. */
#ifndef GANCTL_TRAIN_SESSION_H
#define GANCTL_TRAIN_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "amp/fp8_recipe.h"
#include "amp/scaling.h"
#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"
#include "data/toy_data.h"
#include "nn/net.h"
#include "nn/net_role.h"
#include "nn/objective.h"
#include "nn/optimizer.h"
#include "plugin/plugin_loader.h"
#include "train/state/checkpoint.h"

#define GAN_SESSION_MAX_TERMS GAN_OBJECTIVE_MAX_TERMS

/* A model plugin instance for one network. */
struct gan_session_model {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_model *model;
    char description[256];
};

/* A loss-term plugin instance. */
struct gan_session_loss {
    struct gan_module *module;
    struct gan_plugin_host host;
    gan_loss *loss;
    unsigned targets;
    const char *name;             /* points into the configuration's loss.terms */
};

/* What a step reads from the configuration besides the plugins' own settings. */
struct gan_session_settings {
    uint64_t seed;                /* run.seed */
    int64_t batch, z_dim, n_critic;
    int join_batches;             /* critic.join_batches */
    enum gan_dtype precision;     /* GAN_F32, GAN_F16 or GAN_BF16 */
    enum gan_precision_level level;
    double clamp;                 /* precision.clamp; 0 (off) when unset */
    struct gan_fp8_settings fp8;  /* precision.mode "fp8" (precision is then fp8.rest) */
    int inner_outer_scale;        /* penalty.inner_scale = "outer" */
    double inner_scale;           /* ... else this number */
    const char *data_name;        /* data.name */
    int is_image;
    int is_folder;                /* an image folder (data.name = "folder"), an image run too */
    enum gan_toy_kind kind;       /* the toys' */
    /* One real sample's shape without the batch: [2] for the toys, [1, 28, 28] for
     * Fashion-MNIST, [data.channels, data.size, data.size] for an image folder (what the
     * models are built for and the real batches are shaped as). */
    int sample_ndim;
    int64_t sample_dims[3];
    int64_t sample_size;
};

typedef struct gan_session {
    gan_config *cfg;
    const struct gan_log *log;
    struct gan_session_settings set;

    struct gan_module *backend_module;
    struct gan_module *model_module[GAN_NET_ROLES];
    struct gan_module *loss_module[GAN_SESSION_MAX_TERMS];
    const char *loss_name[GAN_SESSION_MAX_TERMS];
    size_t n_loss_modules;
    /* Each network's scaler module and the settings group it reads ("scaler" or
     * "critic.scaler"), and the shared group's scaler, opened only to check its
     * settings when no network reads that group. */
    struct gan_module *scaler_module[GAN_NET_ROLES];
    char scaler_group[GAN_NET_ROLES][32];
    struct gan_module *scaler_shared;
    struct gan_module *recipe_module;          /* precision.mode "fp8": fp8.recipe's */

    struct gan_backend_instance *backend;
    gan_ctx *ctx;
    gan_net *net[GAN_NET_ROLES];
    gan_optimizer *opt[GAN_NET_ROLES];
    struct gan_session_model model[GAN_NET_ROLES];
    struct gan_session_loss loss[GAN_SESSION_MAX_TERMS];
    size_t n_loss;
    struct gan_amp_net amp[GAN_NET_ROLES];     /* each network's loss scaling */
    struct gan_amp_fp8 fp8;                    /* the FP8 scaling recipe's instance */
    struct gan_objective objective;
    struct gan_amp_inner inner;                /* the objective being built */
} gan_session;

/* Opens every plugin the configuration names (backend, both models, each loss term, each
 * network's scaler), checks the configuration's plugin groups against their declared
 * settings and adds their defaults, checks the precision settings against the scalers
 * (a scaler alone implies fp16), then closes them. What --print-config and a resumed
 * run's checks need. */
gan_status gan_session_check_config(gan_config *cfg, const gan_loader *loader,
                                    struct gan_error *err);

/* Everything above made for real: the plugins, the backend instance and the context, both
 * networks initialised from run.seed with Adam for each, the model, loss-term and scaler
 * instances and the objective over them. The precision policy is not yet applied (see
 * gan_session_set_precision). */
gan_status gan_session_open(gan_config *cfg, const gan_loader *loader, const struct gan_log *log,
                            gan_session **out, struct gan_error *err);
void gan_session_free(gan_session *s);

/* The precision policy of the context: precision.mode and .level, the FP32 patterns of
 * precision.fp32, the activation clamp of precision.clamp. Separate from gan_session_open so that what must run in FP32 whatever
 * the run's precision (the trainer's evaluation sets, the image metrics' floor) is made
 * before it. */
gan_status gan_session_set_precision(gan_session *s, struct gan_error *err);

/* The context's failure as `err`, naming what was being done; clears it. */
gan_status gan_session_ctx_fail(gan_session *s, struct gan_error *err, const char *doing);

/* The forward of the model of `role` in its network's scope. */
gan_tensor *gan_session_forward(gan_session *s, enum gan_net_role role, gan_tensor *x);

/* z for a batch of n from the run's stream at *offset, which it advances. */
gan_tensor *gan_session_draw_z(gan_session *s, int64_t n, uint64_t *offset);

/* The dimensions of a batch of n real samples (n, then the sample's shape); returns
 * their count. */
int gan_session_batch_dims(const gan_session *s, int64_t n, int64_t *dims);

/* The objective of `target` at `iteration`, built for network `role`'s scale (which also
 * seeds the penalty's inner gradient when penalty.inner_scale is "outer"); the terms'
 * inner gradients are collected into s->inner. alpha NULL: the terms draw it from the
 * loss stream at *loss_offset. NULL with the failure in the context. */
gan_tensor *gan_session_objective(gan_session *s, enum gan_loss_target target, int64_t iteration,
                                  double scale, gan_tensor *real, gan_tensor *fake,
                                  gan_tensor *alpha, uint64_t *loss_offset,
                                  struct gan_objective_sink *sink);

/* Checkpoints: both networks, their optimizers and their scalers' states, with the rest
 * of the run's state in *state (checkpoint.h). Loading restores each scaler's state and
 * the skip and overflow counters, after gan_checkpoint_load's checks of the values and
 * these of the counts: each network's optimizer steps plus skipped steps must be the
 * backward passes the loop makes in the file's iterations (the generator's one per
 * iteration after the first, the critic's critic.iterations per iteration), else
 * GAN_ERR_FORMAT; and the iteration must not be past run.iterations, else
 * GAN_ERR_CONFIG (a resumed run continues only with run.iterations raised). */
gan_status gan_session_save_checkpoint(gan_session *s, const char *path,
                                       const struct gan_checkpoint_state *state,
                                       struct gan_error *err);
gan_status gan_session_load_checkpoint(gan_session *s, const char *path,
                                       struct gan_checkpoint_state *state, struct gan_error *err);

/* "fp32", "fp16 O2", ... */
const char *gan_session_precision_name(const gan_session *s);

/* session_fp8.c: precision.mode "fp8". Open: the recipe's module (plugins); init: its
 * instance (after the context); apply: the context's FP8 products (with the precision);
 * save and load: the recipe's state for a checkpoint (a run without FP8 saves none and
 * refuses a checkpoint that holds one). */
gan_status gan_session_fp8_open(gan_session *s, gan_config *cfg, const gan_loader *loader,
                                struct gan_error *err);
gan_status gan_session_fp8_init(gan_session *s, struct gan_error *err);
gan_status gan_session_fp8_apply(gan_session *s, struct gan_error *err);
gan_status gan_session_fp8_save(gan_session *s, struct gan_fp8_state *out,
                                struct gan_error *err);
gan_status gan_session_fp8_load(gan_session *s, const struct gan_fp8_state *in,
                                const char *path, struct gan_error *err);

#endif
