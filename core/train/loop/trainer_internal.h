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
#include "eval/evaluator.h"
#include "eval/image_metrics.h"
#include "eval/toy_metrics.h"
#include "io/tensorboard.h"
#include "train/loop/divergence.h"
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

/* Debug level 2 in 16-bit precision: each network's FP32 shadow of its last backward
 * before a metrics row, and what that step's objective was built from, for the shadow to
 * build it again: the real and fake batches (critic), z (generator), the loss stream's
 * offset before the step. */
struct gan_trainer_shadow {
    gan_probe *probe[GAN_NET_ROLES];
    int due;                      /* this step is the last before a row: compare it */
    enum gan_net_role net;
    gan_tensor *real, *fake, *z;
    uint64_t loss_offset;
    gan_metrics_csv *csv;         /* grad_underflow.csv */
};

/* Data parallelism (data_parallel.c): this rank's place in the run and its rows of the
 * global batch. */
struct gan_trainer_dp {
    gan_comm *comm;               /* borrowed; the single-process engine by default */
    gan_comm *grad_comm;          /* the gradients' engine: comm, or a device engine owned here */
    int rank, size;
    int64_t first_row, rows;
    float *grads;                 /* a host copy of a gradient arena, for the all-reduce */
    size_t grads_count;
    int overflow_rank;            /* the test hook's (GANCTL_TEST_OVERFLOW); -1 none */
    int64_t overflow_iteration;
    double comm_s;                /* time in the collectives, this session */
    int64_t collectives;
    int trained;                  /* an iteration began: the collectives' time is worth a line */
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

/* Where a step's inputs come from: the real samples (the toy's sampler, or an image
 * run's data) and the positions of the z and loss-term streams, which a checkpoint
 * holds. */
struct gan_batch {
    gan_toy_sampler *sampler;
    /* Image runs (image_run.h): the data, metrics and grids; NULL for the toys. */
    gan_image_run *images;
    float *real_batch;            /* batch × sample_size */
    uint64_t z_offset, loss_offset;
};

/* The evaluation (eval/evaluator.h: the held-out sets, their floors, the fixed z) and
 * the last quality measured with it. */
struct gan_trainer_eval {
    gan_evaluator *evaluator;
    /* The real samples of the set-up's trial step and the pictures, n_eval_real of them:
     * the evaluator's held-out points for the toys, real_images for an image run. */
    const float *eval_real;
    size_t n_eval_real;
    float *real_images;           /* an image run's first test images (real.png) */
    struct gan_toy_modes modes;
    struct gan_toy_quality floor, quality;
    int has_quality;
    int64_t quality_iteration;
    /* An image run's quality is image_quality, also as named values for the progress
     * line and the summary. */
    struct gan_image_quality image_quality, image_floor;
    struct gan_named_value quality_values[2], floor_values[2];
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
    struct gan_trainer_shadow shadow;
    struct gan_trainer_eval eval;
    struct gan_metrics_sink metrics;
    struct gan_run_folder folder;
    struct gan_trainer_dp dp;

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

/* data_parallel.c: N ranks × B/N rows as one process × B rows (see there). attach comes
 * first (the run folder's set-up asks whether this rank leads); set_up after the session
 * is open. With one rank each is the single-process step. */
void gan_trainer_dp_attach(gan_trainer *t, gan_comm *comm);
int gan_trainer_dp_leader(const gan_trainer *t);   /* rank 0: the one that writes */
gan_status gan_trainer_dp_set_up(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_dp_check_weights(gan_trainer *t, struct gan_error *err);
/* This rank's rows of a critic step's real batch, and of z; the objective with this
 * rank's rows of the loss terms' draws. Each advances its stream as one process would. */
gan_status gan_trainer_dp_real(gan_trainer *t, gan_tensor **real, struct gan_error *err);
gan_tensor *gan_trainer_dp_draw_z(gan_trainer *t);
gan_tensor *gan_trainer_dp_objective(gan_trainer *t, enum gan_loss_target target, double scale,
                                     gan_tensor *real, gan_tensor *fake,
                                     struct gan_objective_sink *sink);
/* The step's values (objective, reported terms) averaged over the ranks: before the
 * scaled backward, which then sees the global objective's value. */
gan_status gan_trainer_dp_reduce_values(gan_trainer *t, enum gan_net_role role,
                                        struct gan_error *err);
/* Between the scaled backward and the verdict: the scaler's statistics reduced over the
 * ranks and the FP32 gradient averaged. critic_step is -1 for the generator. */
gan_status gan_trainer_dp_reduce_grads(gan_trainer *t, enum gan_net_role role,
                                       int64_t critic_step, struct gan_error *err);
/* Whether to stop now: setup.stop on any rank. */
int gan_trainer_dp_stop(gan_trainer *t);
void gan_trainer_dp_free(gan_trainer *t);

/* shadow.c: debug level 2. */
gan_status gan_trainer_set_up_probes(gan_trainer *t, int64_t resume_after, struct gan_error *err);
/* Records what the step of `role` builds its objective from, and attaches the shadow's
 * comparison to that network's scaled backward when the step is due for one (detaches
 * it otherwise). */
void gan_trainer_shadow_step(gan_trainer *t, enum gan_net_role role, gan_tensor *real,
                             gan_tensor *fake, gan_tensor *z);
gan_status gan_trainer_write_underflow(gan_trainer *t, struct gan_error *err);
void gan_trainer_shadow_free(gan_trainer *t);

#endif
