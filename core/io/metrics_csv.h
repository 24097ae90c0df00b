/* SPDX-License-Identifier: MIT */
/* metrics_csv.h — the run folder's tables (metrics.csv, grad_stats.csv,
 * grad_underflow.csv): typed cells written as CSV rows, resumable at a checkpoint. */
#ifndef GANCTL_IO_METRICS_CSV_H
#define GANCTL_IO_METRICS_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* One header line of column names, then one row per logged iteration; cells are
 * integers, floats written with 9 significant digits (an FP32 value reads back exactly),
 * "nan"/"inf"/"-inf", plain words, or empty where the value does not exist at that row (the toy
 * quality columns between evaluations, the generator's values before its first step). */

enum gan_cell_kind { GAN_CELL_EMPTY = 0, GAN_CELL_INT, GAN_CELL_FLOAT, GAN_CELL_TEXT };

struct gan_cell {
    enum gan_cell_kind kind;
    long long i;
    double f;
    /* GAN_CELL_TEXT: written as it is, so it must hold no comma, quote or newline
     * (a word: "gradient", "critic.fc0.weight"); at most 255 bytes are written. */
    const char *s;
};

typedef struct gan_metrics_csv gan_metrics_csv;

/* A new metrics.csv at `path` with these columns (the first is the iteration). With
 * resume_after ≥ 0 the file must exist with exactly this header: rows for iterations
 * after resume_after (written after the checkpoint the run resumes from) are dropped
 * and new rows are appended, so a resumed run's file reads as if it had never stopped. */
gan_status gan_metrics_csv_open(const char *path, const char *const *columns, size_t count,
                                int64_t resume_after, gan_metrics_csv **out,
                                struct gan_error *err);
/* What gan_metrics_csv_open checks of an existing file it is to resume, without
 * writing anything: there, with exactly this header and rows that start with their
 * iteration. A resumed run checks its tables first, so that a refusal leaves the run
 * folder as it was. */
gan_status gan_metrics_csv_check(const char *path, const char *const *columns, size_t count,
                                 int64_t resume_after, struct gan_error *err);
/* Writes one row of `count` cells (as many as columns) and flushes it to the kernel. */
gan_status gan_metrics_csv_row(gan_metrics_csv *m, const struct gan_cell *cells, size_t count,
                               struct gan_error *err);
/* Waits until the rows so far are on disk (at a checkpoint). */
gan_status gan_metrics_csv_sync(gan_metrics_csv *m, struct gan_error *err);
gan_status gan_metrics_csv_close(gan_metrics_csv *m, struct gan_error *err);

#endif
