/* SPDX-License-Identifier: MIT */
/* metrics.h — the metrics sink as a part of the trainer: metrics.csv's columns and rows,
 * grad_stats.csv, run.tensorboard's events, curves.png, the progress report and
 * summary.json, each written from the sink and the values handed to it. */
#ifndef GANCTL_TRAIN_RUN_METRICS_H
#define GANCTL_TRAIN_RUN_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"
#include "io/metrics_csv.h"
#include "io/tensorboard.h"
#include "nn/objective.h"
#include "tensor/tensor_core.h"
#include "train/run/folder.h"
#include "train/run/run_dir.h"
#include "train/state/state.h"

#define GAN_TRAINER_MAX_METRICS GAN_OBJECTIVE_MAX_REPORTED

/* The last known value of everything a metrics row holds. */
struct gan_trainer_latest {
    double loss[GAN_NET_ROLES];
    double norm[GAN_NET_ROLES];
    double metric[GAN_NET_ROLES][GAN_TRAINER_MAX_METRICS];
    double fp8_scale_min, fp8_scale_max;   /* the last row's; NaN before one */
};

/* Which columns a row has besides the fixed ones and the reported values. */
struct gan_metrics_layout {
    int time;                     /* run.metrics_time: time_s */
    int image;                    /* an image run's quality (sliced_w1_pixel), else a toy's */
    int frechet;                  /* image: frechet, where the data has the distance */
    int modes;                    /* toy: modes_covered and high_quality_pct */
    int fp8;                      /* precision.mode "fp8": the casts' scales and flushes */
};

/* Where the rows go: the values each network's terms report, by their column names (a
 * generator's value the critic also reports gets the prefix "generator_") and, for the
 * generator, as the terms name them; metrics.csv, grad_stats.csv at debug level 1 and
 * run.tensorboard's event file (NULL without it). */
struct gan_metrics_sink {
    char *metric_names[GAN_NET_ROLES][GAN_TRAINER_MAX_METRICS];
    char *generator_reported[GAN_TRAINER_MAX_METRICS];
    size_t n_metrics[GAN_NET_ROLES];
    struct gan_metrics_layout layout;
    char **columns;
    size_t n_columns;
    struct gan_trainer_latest latest;
    gan_metrics_csv *csv;
    gan_metrics_csv *grad_csv;
    gan_tb_writer *events_file;
};

/* Where the run stands: its iteration of the plan, and its training time. */
struct gan_run_clock {
    int64_t iteration, planned;
    int64_t start_iteration;      /* this session's first */
    double session_s;             /* this session's training time so far */
    double elapsed_before;        /* earlier sessions' */
};

/* How a run ended, for summary.json. */
struct gan_run_outcome {
    const char *status;           /* "completed", "interrupted" or "diverged" */
    int ranks;
    const struct gan_run_divergence *divergence;  /* "diverged": why; else NULL */
};

/* metrics.csv's columns: the fixed ones around the reported values (m->metric_names).
 * A reported name that is one of the fixed ones is refused. */
gan_status gan_metrics_make_columns(struct gan_metrics_sink *m,
                                    const struct gan_metrics_layout *layout,
                                    struct gan_error *err);

/* The tables a resumed run continues in `run_dir`, checked as they will be opened:
 * metrics.csv, and grad_stats.csv and grad_underflow.csv where the run writes them and
 * they exist (a debug level raised on resume makes them new). */
gan_status gan_metrics_check_tables(const struct gan_metrics_sink *m, const char *run_dir,
                                    int grad_stats, int grad_underflow, int64_t resume_after,
                                    struct gan_error *err);

/* Opens metrics.csv, run.tensorboard's event file (`tensorboard`) and grad_stats.csv
 * (`grad_stats`) in `run_dir`; resume_after ≥ 0 continues a resumed run's from there. */
gan_status gan_metrics_open(struct gan_metrics_sink *m, const char *run_dir, int tensorboard,
                            int grad_stats, int64_t resume_after, const struct gan_log *log,
                            struct gan_error *err);

/* One row of metrics.csv and run.tensorboard, from m->latest, each network's loss
 * scaling (amp), the shadow's share of true underflow (NaN where not compared) and the
 * quality; curves.png when the row is evaluated or the last; at debug level 1 each
 * network's gradients into grad_stats.csv and the log. */
gan_status gan_metrics_write_row(struct gan_metrics_sink *m, const char *run_dir,
                                 const struct gan_run_clock *c,
                                 const struct gan_amp_net amp[GAN_NET_ROLES],
                                 const double true_underflow[GAN_NET_ROLES],
                                 const struct gan_fp8_totals *fp8,
                                 const struct gan_run_quality *q, const struct gan_log *log,
                                 struct gan_error *err);

/* curves.png in `run_dir` from the rows its metrics.csv holds so far (io/curves.h). */
gan_status gan_metrics_draw_curves(const char *run_dir, struct gan_error *err);

/* metrics.csv and the event file to disk, before a checkpoint names their rows. */
gan_status gan_metrics_sync(struct gan_metrics_sink *m, struct gan_error *err);

/* The progress report after a logged iteration. */
void gan_metrics_fill_progress(const struct gan_metrics_sink *m, const struct gan_run_clock *c,
                               const struct gan_amp_net amp[GAN_NET_ROLES],
                               const struct gan_run_quality *q, struct gan_progress *p);

/* summary.json in the run folder: the last values, the quality, the session's plugins,
 * the folder's files and every setting of cfg. */
gan_status gan_metrics_write_summary(const struct gan_metrics_sink *m,
                                     const struct gan_run_folder *f, const gan_session *s,
                                     const gan_config *cfg, const struct gan_run_clock *c,
                                     const struct gan_run_quality *q,
                                     const struct gan_run_outcome *o, struct gan_error *err);

/* tensorboard_run.c: run.tensorboard. The event file gets each row's cells and, at the
 * end, final.png when the folder's picture is of this iteration. */
gan_status gan_metrics_open_events(struct gan_metrics_sink *m, const char *run_dir,
                                   int64_t resume_after, const struct gan_log *log,
                                   struct gan_error *err);
gan_status gan_metrics_events_row(struct gan_metrics_sink *m, int64_t iteration,
                                  const struct gan_cell *cells, size_t count,
                                  struct gan_error *err);
gan_status gan_metrics_events_final_image(struct gan_metrics_sink *m,
                                          const struct gan_run_folder *f, int64_t iteration,
                                          struct gan_error *err);

/* Closes the files and frees the names; the sink may be all zeros. */
void gan_metrics_free(struct gan_metrics_sink *m);

#endif
