/* SPDX-License-Identifier: MIT */
/* trainer_internal.h — the trainer's state, shared by the files that make it up: the run
 * loop (trainer.c), evaluation (evaluation.c), what it hands the run folder and the
 * metrics sink (outputs.c) and the FP32 shadow of debug level 2 (shadow.c). The metrics
 * sink and the run folder are run/'s parts (run/metrics.h, run/folder.h). Nothing outside
 * core/train/loop/ includes it. */
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
#include "train/loop/batch.h"
#include "train/loop/data_parallel.h"
#include "train/loop/divergence.h"
#include "train/loop/shadow.h"
#include "train/state/state.h"
#include "train/run/run.h"
#include "train/loop/trainer.h"


/* The run's own settings (the step's are in the session's set). */
struct gan_run_settings {
    int64_t iterations;
    int64_t log_every, eval_every, image_every, checkpoint_every;
    int metrics_time;
    int lr_decay[GAN_NET_ROLES];  /* linear decay of each network's learning rate */
    long long debug_level;
    double diverged_skip_fraction;
    int64_t diverged_window;      /* critic steps all skipped that end the run; 0: never */
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
    struct gan_toy_quality floor, quality;
    int has_quality;
    int64_t quality_iteration;
    /* An image run's quality is image_quality, also as named values for the progress
     * line and the summary. */
    struct gan_image_quality image_quality, image_floor;
    struct gan_named_value quality_values[2], floor_values[2];
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

/* outputs.c: the glue between the trainer and run/'s parts, each function a few lines
 * that hand the metrics sink and the run folder what they need of the other parts. Each
 * that writes returns at once on a rank other than 0 (data_parallel.c). */
gan_status gan_trainer_make_columns(gan_trainer *t, struct gan_error *err);
/* Before the session is built: a new run's configuration must hold no run.id; a resumed
 * run's folder is named and, on rank 0, locked, and its checkpoint checked against the
 * folder's config.conf. */
gan_status gan_trainer_claim_run_dir(gan_trainer *t, const char *resume_dir,
                                     struct gan_error *err);
/* The run folder's set-up, in this order, every check before the first change to the
 * folder, so that a refused run leaves it as it was: a new run's folder made; a resumed
 * run's checkpoint loaded (every rank; resume_after is its iteration, -1 otherwise) and
 * the tables it continues checked; the folder's first changes (leftovers removed, a new
 * run named, config.conf); real.png; the tables opened. */
gan_status gan_trainer_create_run_dir(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_resume(gan_trainer *t, int64_t *resume_after, struct gan_error *err);
gan_status gan_trainer_check_tables(gan_trainer *t, int64_t resume_after,
                                    struct gan_error *err);
gan_status gan_trainer_write_run_config(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_write_real_grid(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_open_tables(gan_trainer *t, int64_t resume_after, struct gan_error *err);
gan_status gan_trainer_write_row(gan_trainer *t, struct gan_error *err);
gan_status gan_trainer_save_checkpoint(gan_trainer *t, struct gan_error *err);
/* curves.png from the rows metrics.csv holds so far. */
gan_status gan_trainer_draw_curves(gan_trainer *t, struct gan_error *err);
void gan_trainer_fill_progress(const gan_trainer *t, struct gan_progress *p);
gan_status gan_trainer_write_summary(gan_trainer *t, const char *status, struct gan_error *err);

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
