/* SPDX-License-Identifier: MIT */
/* trainer_internal.h — the trainer's state, shared by the files that make it up: the run
 * loop (trainer.c), evaluation (evaluation.c), outputs (outputs.c) and the FP32 shadow
 * of debug level 2 (shadow.c). Nothing outside core/train/ includes it. */
#ifndef GANCTL_TRAIN_TRAINER_INTERNAL_H
#define GANCTL_TRAIN_TRAINER_INTERNAL_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "amp/underflow_probe.h"
#include "comm/comm.h"
#include "eval/image_metrics.h"
#include "eval/toy_metrics.h"
#include "io/tensorboard.h"
#include "train/loop/batch.h"
#include "train/loop/data_parallel.h"
#include "train/loop/divergence.h"
#include "train/loop/shadow.h"
#include "train/state/image_run.h"
#include "train/run/run_dir.h"
#include "train/run/run_guard.h"
#include "train/state/session.h"
#include "train/loop/trainer.h"

#define GAN_TRAINER_MAX_METRICS GAN_OBJECTIVE_MAX_REPORTED

/* The last known value of everything a metrics row holds. */
struct gan_trainer_latest {
    double loss[GAN_NET_ROLES];
    double norm[GAN_NET_ROLES];
    double metric[GAN_NET_ROLES][GAN_TRAINER_MAX_METRICS];
};

/* The run's own settings (the step's are in the session's set). */
struct gan_run_settings {
    int64_t iterations;
    int64_t log_every, eval_every, image_every, checkpoint_every;
    int metrics_time;
    int lr_decay[GAN_NET_ROLES];  /* linear decay of each network's learning rate */
    long long debug_level;
    double diverged_skip_fraction;
};

/* The evaluation sets and the last quality measured on them. */
struct gan_trainer_eval {
    gan_tensor *eval_z;           /* [GAN_EVAL_SAMPLES, z_dim], persistent */
    float *eval_real;             /* GAN_EVAL_SAMPLES × 2 */
    float *eval_fake;
    struct gan_toy_modes modes;
    struct gan_toy_quality floor, quality;
    int has_quality;
    int64_t quality_iteration;
    /* An image run's quality is image_quality, also as named values for the progress
     * line and the summary; eval_real then holds the first test images (the trial step,
     * real.png). */
    struct gan_image_quality image_quality, image_floor;
    struct gan_named_value quality_values[2], floor_values[2];
    size_t n_eval_real;
};

/* Where the rows go: the values each network's terms report, by their column names (a
 * generator's value the critic also reports gets the prefix "generator_") and, for the
 * generator, as the terms name them; metrics.csv, grad_stats.csv at debug level 1 and
 * run.tensorboard's event file (NULL without it). */
struct gan_metrics_sink {
    char *metric_names[GAN_NET_ROLES][GAN_TRAINER_MAX_METRICS];
    char *generator_reported[GAN_TRAINER_MAX_METRICS];
    size_t n_metrics[GAN_NET_ROLES];
    char **columns;
    size_t n_columns;
    struct gan_trainer_latest latest;
    gan_metrics_csv *csv;
    gan_metrics_csv *grad_csv;
    gan_tb_writer *events_file;
};

/* The run folder and what the run has written to it. */
struct gan_run_folder {
    char *run_dir;
    gan_run_lock *lock;           /* the run folder's, held from its set-up to the end */
    int restart;                  /* resuming a folder without a checkpoint: from 0 */
    int resumed;                  /* continuing from the folder's checkpoint */
    char *checkpoint_path;
    char *config_text;            /* for checkpoints */
    int64_t checkpoint_iteration; /* of the last checkpoint written; -1 none */
    int64_t image_iteration;
};

struct gan_trainer {
    gan_session *s;               /* everything a step is made of */
    gan_config *cfg;
    const struct gan_log *log;
    volatile sig_atomic_t *stop;
    struct gan_train_events events;
    struct gan_run_settings set;

    /* State: what a checkpoint holds besides the session's and the batch's. */
    int64_t iteration;
    double elapsed_before;        /* training time of earlier sessions */
    /* Timing of this session. */
    struct timespec t0;
    int64_t start_iteration;

    struct gan_batch batch;
    struct gan_shadow shadow;
    struct gan_trainer_eval eval;
    struct gan_metrics_sink metrics;
    struct gan_run_folder folder;
    gan_data_parallel *dp;        /* NULL with one rank: the steps never enter it */

    /* The divergence verdict: where the interval it judges began, its result. */
    struct gan_divergence_watch divergence_watch;
    struct gan_divergence divergence;
};

/* trainer.c */
double gan_trainer_session_s(const gan_trainer *t);
gan_status gan_trainer_nomem(struct gan_error *err);

/* evaluation.c: the held-out sets and floors (before the precision policy is set), the
 * quality at the current iteration, and pictures. */
gan_status gan_trainer_set_up_eval(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_evaluate(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_picture(gan_trainer *t, const char *name, struct gan_error *err);

/* outputs.c: metrics.csv's columns, the run folder and its files, rows, checkpoints,
 * progress and the summary. */
gan_status gan_trainer_make_columns(gan_trainer *t, struct gan_error *err);
/* Before the session is built: a new run's configuration must hold no run.id; a resumed
 * run's folder is locked, and its checkpoint checked against the folder's config.conf. */
gan_status gan_trainer_claim_run_dir(gan_trainer *t, const char *resume_dir,
                                     struct gan_error *err);
gan_status gan_trainer_set_up_run_dir(gan_trainer *t, const char *resume_dir,
                                      struct gan_error *err);
gan_status gan_trainer_write_row(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_save_checkpoint(gan_trainer *t, struct gan_error *err);
/* curves.png from the rows metrics.csv holds so far; rank 0 only. */
gan_status gan_trainer_draw_curves(gan_trainer *t, struct gan_error *err);
void gan_trainer_fill_progress(const gan_trainer *t, struct gan_progress *p);
gan_status gan_trainer_write_summary(gan_trainer *t, const char *status, struct gan_error *err);

/* tensorboard_run.c: run.tensorboard. The file is opened with the run folder's tables
 * (resume_after ≥ 0 for a resumed run), gets each metrics row's cells and, at the end,
 * final.png; it is synced with each checkpoint. */
gan_status gan_trainer_open_events(gan_trainer *t, int64_t resume_after, struct gan_error *err);
gan_status gan_trainer_events_row(gan_trainer *t, const struct gan_cell *cells, size_t count,
                                  struct gan_error *err);
gan_status gan_trainer_events_final_image(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_events_sync(gan_trainer *t, struct gan_error *err);

/* trainer.c: data parallel as the trainer sees it. Rank 0 (the leader, and the one
 * process without data parallel) writes the run folder; the parameters are checked
 * bit-identical over the ranks at start-up and at each checkpoint. */
int gan_trainer_dp_leader(const gan_trainer *t);
gan_status gan_trainer_dp_check_weights(gan_trainer *t, struct gan_error *err);

/* step.c: one step of each network: batch, objective, scaled backward, verdict, update.
 * critic_step counts the critic steps of the iteration from 0. */
gan_status gan_trainer_critic_step(gan_trainer *t, int64_t critic_step, struct gan_error *err);
gan_status gan_trainer_generator_step(gan_trainer *t, struct gan_error *err);

/* trainer.c: debug level 2 (shadow.h) over the trainer's run folder and iteration. */
gan_status gan_trainer_set_up_probes(gan_trainer *t, int64_t resume_after, struct gan_error *err);
gan_status gan_trainer_write_underflow(gan_trainer *t, struct gan_error *err);

#endif
