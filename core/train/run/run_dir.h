/* SPDX-License-Identifier: MIT */
/* run_dir.h — a training run's folder and what it holds besides checkpoints: the saved
 * configuration, metrics.csv, summary.json, and what the progress line shows. */
#ifndef GANCTL_CORE_RUN_DIR_H
#define GANCTL_CORE_RUN_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "config/configuration.h"
#include "base/error.h"
#include "eval/toy_metrics.h"
#include "io/metrics_csv.h"
#include "io/text_file.h"
#include "train/run/run_guard.h"

/* File names inside a run folder. */
#define GAN_RUN_CONFIG "config.conf"
#define GAN_RUN_METRICS "metrics.csv"
#define GAN_RUN_SUMMARY "summary.json"
#define GAN_RUN_CHECKPOINT "checkpoint.safetensors"
#define GAN_RUN_FINAL_IMAGE "final.png"
#define GAN_RUN_CURVES "curves.png"        /* metrics.csv drawn, at each evaluation */
#define GAN_RUN_GRAD_STATS "grad_stats.csv"   /* run.debug_level >= 1 */

/* Makes the folder for a new run, locks it (*lock, see run_guard.h) and gives its path
 * (malloc'd, without a trailing '/'). `dir` is the run.dir setting: "" means
 * runs/DATA-YYYYMMDD-HHMMSS under the current folder (with -2, -3, … appended when that
 * exists already). A given folder is created with its parents; one that exists already
 * must hold no run (no config.conf, no checkpoint and no metrics.csv), which is checked
 * once it is locked: ganctl never mixes two runs in one folder. `origin` names where dir
 * was set, for messages. */
gan_status gan_run_dir_create(const char *dir, const char *origin, const char *data_name,
                              char **out, gan_run_lock **lock, struct gan_error *err);

/* "dir/name" (malloc'd), or NULL when out of memory. */
char *gan_run_path(const char *dir, const char *name);

/* Writes `text` to dir/name atomically: a temporary file in the folder, fsync, rename. */
gan_status gan_run_write_text(const char *dir, const char *name, const char *text,
                              struct gan_error *err);

/* ------------------------------------------------------------------ summary.json */

/* One named final value ("critic_loss"). A non-finite value is written as null. */
struct gan_named_value {
    const char *name;
    double value;
};

/* Why a run diverged, as summary.json's "divergence" object holds it. */
struct gan_run_divergence {
    const char *network;          /* "critic" or "generator" */
    const char *reason;           /* "non-finite loss" or "skipped steps" */
    const char *message;          /* the line the program prints last */
    int64_t skipped, steps;       /* the network's, since since_iteration */
    int64_t since_iteration;
    double loss, scale;           /* its last objective and loss scale */
};

/* The last quality measured, as rows, the progress line and summary.json show it. */
struct gan_run_quality {
    int has;                      /* measured at least once */
    int64_t iteration;            /* where */
    size_t samples;               /* how many samples it was measured on */
    struct gan_toy_quality toy, toy_floor;
    /* An image run's, as named values (sliced_w1_pixel, then frechet): count 1 or 2;
     * 0 for a toy. */
    const struct gan_named_value *values, *floor_values;
    size_t count;
};

struct gan_run_summary {
    const char *status;           /* "completed", "interrupted" or "diverged" */
    const char *version;          /* ganctl's */
    const char *backend;          /* the backend's describe() line */
    const char *generator, *critic;  /* the models' describe() lines */
    const char *data;             /* data.name */
    const char *run_dir;
    const char *run_id;           /* run.id; NULL for a run made before ganctl kept ids */
    int ranks;                    /* data-parallel ranks that trained; 0: not written */
    int64_t iterations;           /* completed generator iterations */
    int64_t iterations_planned;   /* run.iterations */
    double wall_time_s;           /* training time over every session of the run */
    double iterations_per_s;      /* of this session */
    const struct gan_named_value *final;  /* the last logged training values */
    size_t final_count;
    struct gan_run_quality quality;  /* the last measured, with its floors */
    const char *checkpoint;       /* its file name in the folder, or NULL */
    const char *final_image;      /* likewise */
    const gan_config *config;     /* every setting, nested as in the file */
    const char *events_file;      /* run.tensorboard: the event file's name, or NULL */
    const struct gan_run_divergence *divergence;  /* status "diverged": why; else NULL */
};

/* jansson's json_t, by its struct tag, so that this header needs no jansson.h. */
struct json_t;

/* A number as summary.json writes it: null when it is not finite (JSON has no NaN). */
struct json_t *gan_run_json_number(double x);

/* A toy run's quality as summary.json writes it: modes (when the data set has them),
 * the high-quality share and the sliced W1; NULL when out of memory. `ganctl eval
 * --json` writes the same object. */
struct json_t *gan_run_toy_quality_json(const struct gan_toy_quality *q);

/* Writes summary.json (atomically) into `dir`. */
gan_status gan_run_summary_write(const char *dir, const struct gan_run_summary *s,
                                 struct gan_error *err);

/* ------------------------------------------------------------------ progress */

/* What the trainer reports after a logged iteration; the program draws the line. */
struct gan_progress {
    int64_t iteration, total;     /* completed and planned generator iterations */
    double elapsed_s;             /* this session */
    double it_per_s;              /* recent rate; 0 while unknown */
    double critic_loss, generator_loss;  /* NaN while unknown */
    double w_distance;            /* NaN when no term reports it */
    int has_quality;              /* quality below holds the latest evaluation */
    int evaluated;                /* ... and it was made at this iteration */
    int64_t quality_iteration;
    struct gan_toy_quality quality;
    /* Image data: the quality as named values, shown instead of `quality` when
     * quality_count > 0. */
    const struct gan_named_value *quality_values;
    size_t quality_count;
    /* Loss scaling, which the line shows when `scaled` (a network's scaler is not
     * "none"): each network's scale and its steps skipped since the run began. */
    int scaled;
    double critic_scale, generator_scale;
    int64_t critic_skipped, generator_skipped;
    /* FP8 products: the range of the scales the recipe chose up to the last row. */
    int fp8;
    double fp8_scale_min, fp8_scale_max;
};

/* "1h02m", "3m09s", "12s": a duration for people. */
void gan_format_duration(char *buf, size_t size, double seconds);

#endif
