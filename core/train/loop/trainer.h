/* SPDX-License-Identifier: MIT */
/* trainer.h — WGAN-GP training: the loop of the paper's toy code (n_critic critic steps
 * per generator step) over a session, evaluation, outputs and resume. */
#ifndef GANCTL_CORE_TRAINER_H
#define GANCTL_CORE_TRAINER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "config/configuration.h"
#include "base/error.h"
#include "base/log.h"
#include "nn/net.h"
#include "plugin/plugin_loader.h"
#include "train/run/run.h"
#include "eval/evaluator.h"
#include "eval/toy_metrics.h"
#include "train/state/state.h"

/* The critic's value field of a picture: a GAN_PLOT_GRID² lattice over [−3, 3]². */
#define GAN_PLOT_GRID 100u
/* Points of each kind a picture shows. */
#define GAN_PLOT_POINTS 1000u

/* Called by the trainer after each logged iteration (run.log_every), after each
 * evaluation, and once at the end (final = 1). The program prints from here. */
struct gan_train_step;
struct gan_train_events {
    void *ctx;
    void (*progress)(void *ctx, const struct gan_progress *p, int final);
    /* Optional, for tests and tools: called after each step's verdict and before its
     * update, while the network's gradient arena holds the unscaled FP32 gradient the
     * update applies (gan_net_grad_to_host). */
    void (*step)(void *ctx, const struct gan_train_step *step);
};

/* One step as gan_train_events.step sees it; everything is borrowed for the call. */
struct gan_train_step {
    enum gan_model_role role;
    int64_t iteration;            /* completed generator iterations before this step */
    int64_t critic_step;          /* 0 to critic.iterations - 1; -1 for the generator's */
    int applied;                  /* 0: the scaler skipped it and nothing will change */
    gan_ctx *ctx;
    gan_net *net;
    gan_tensor *real;             /* the critic's real batch; NULL for the generator */
    gan_tensor *z;                /* the z its fake batch came from */
};

struct gan_trainer_setup {
    gan_config *config;           /* read and checked; plugin defaults are added to it */
    const gan_loader *loader;
    const struct gan_log *log;    /* may be NULL */
    /* NULL: a new run in run.dir (made by gan_trainer_new). Otherwise the folder of the
     * run to continue from its checkpoint; the configuration must then be the one the
     * checkpoint holds (gan_checkpoint_read_config), changed only where a resumed run
     * may differ (the program checks that). */
    const char *resume_dir;
    /* With resume_dir: the folder holds config.conf but no checkpoint yet (its run
     * stopped before writing one), and `config` is config.conf's: the run starts again
     * from iteration 0. Without it a missing checkpoint is refused. */
    int restart;
    /* Checked between generator iterations: when nonzero, training stops after the
     * iteration in progress, writes a checkpoint and the summary, and gan_trainer_run
     * returns with result.interrupted set. May be NULL. */
    volatile sig_atomic_t *stop;
    struct gan_train_events events;
    /* Data parallelism (comm/comm.h): this process is one rank of comm's. NULL: one
     * process. Borrowed; must outlive the trainer. */
    struct gan_comm *comm;
};

typedef struct gan_trainer gan_trainer;

/* Opens every plugin the configuration names (backend, both models, each loss term),
 * checks the configuration's plugin groups against their declared settings and adds
 * their defaults, then closes them. What --print-config and a resumed run's checks need. */
gan_status gan_trainer_check_config(gan_config *config, const gan_loader *loader,
                                    struct gan_error *err);

/* Everything for a run: the plugins, the backend instance and the compute context, both
 * networks (initialised from run.seed, or loaded from the checkpoint when resuming),
 * Adam for each, the data sampler, the held-out evaluation sets and their floor, one
 * trial step that finds the metric names, then the run folder (a new run's is made
 * here, after everything else has worked) with config.conf and metrics.csv opened.
 * The folder is locked (run_guard.h) until gan_trainer_free: a resumed run's first of
 * all, and its checkpoint checked against config.conf (GAN_ERR_FORMAT for another
 * run's); a new run's as it is made, and its run.id drawn (GAN_ERR_CONFIG when the
 * configuration brings one). Every check comes before the first change to the folder,
 * which then loses the temporary files killed processes left in it. */
gan_status gan_trainer_new(const struct gan_trainer_setup *setup, gan_trainer **out,
                           struct gan_error *err);
void gan_trainer_free(gan_trainer *t);

/* The ranks training this run and this process's (0 writes the run folder). */
int gan_trainer_ranks(const gan_trainer *t);
int gan_trainer_rank(const gan_trainer *t);

/* What a run did. Strings stay valid until gan_trainer_free. */
struct gan_trainer_result {
    int interrupted;              /* stopped by setup.stop before run.iterations */
    int64_t iterations;           /* completed generator iterations, over all sessions */
    int64_t planned;              /* run.iterations */
    double wall_time_s;           /* training time, over all sessions */
    double session_s;             /* this session's */
    double it_per_s;              /* this session's rate */
    const char *run_dir;
    const char *data;
    int has_quality;
    int64_t quality_iteration;
    struct gan_toy_quality quality, floor;
    size_t quality_samples;       /* generated samples an evaluation scores */
    /* Image data: the evaluation's values and their floors by name (sliced_w1_pixel,
     * frechet) instead of quality and floor; quality_count 0 for the toys. */
    const struct gan_named_value *quality_values, *floor_values;
    size_t quality_count;
    /* The run completed but diverged (divergence.h; summary.json's status "diverged"):
     * `divergence` is the line that says which network, why and what to try. */
    int diverged;
    const char *divergence;
};

/* Trains to run.iterations (or until setup.stop), writing metrics.csv rows, evaluations,
 * pictures and checkpoints as configured; at the end (or on stop) a checkpoint, the
 * final evaluation and picture (not on stop), and summary.json. */
gan_status gan_trainer_run(gan_trainer *t, struct gan_trainer_result *result,
                           struct gan_error *err);

/* For tests and tools. */
gan_ctx *gan_trainer_ctx(const gan_trainer *t);
/* Nonzero when the trainer continues a run from its checkpoint (not a new run, nor a
 * restart of a run that had written none). */
int gan_trainer_resumed(const gan_trainer *t);
gan_net *gan_trainer_net(const gan_trainer *t, enum gan_model_role role);
const char *gan_trainer_run_dir(const gan_trainer *t);
int64_t gan_trainer_iteration(const gan_trainer *t);
const char *gan_trainer_backend_description(const gan_trainer *t);
/* The metrics.csv columns, in order. */
size_t gan_trainer_column_count(const gan_trainer *t);
const char *gan_trainer_column(const gan_trainer *t, size_t index);

#endif
