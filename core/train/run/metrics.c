/* SPDX-License-Identifier: MIT */
/* metrics.c — the metrics sink: metrics.csv's columns and rows, grad_stats.csv, curves.png,
 * the progress report and summary.json, from the values the trainer hands it. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "amp/underflow_probe.h"
#include "base/strings.h"
#include "io/plot/curves.h"
#include "train/run/metrics.h"

static gan_status nomem(struct gan_error *err)
{
    return gan_error_nomem(err, "setting up training");
}

/* ------------------------------------------------------------------ columns */

/* Each network's loss-scaling columns (critic first, as the other columns). */
static const char *const scaling_columns[GAN_NET_ROLES][4] = {
    { "generator_scale", "generator_skipped", "generator_overflow", "generator_underflow_frac" },
    { "critic_scale", "critic_skipped", "critic_overflow", "critic_underflow_frac" },
};

gan_status gan_metrics_make_columns(struct gan_metrics_sink *m,
                                    const struct gan_metrics_layout *layout,
                                    struct gan_error *err)
{
    const char *names[3 * GAN_TRAINER_MAX_METRICS + 24];
    size_t n = 0;
    m->layout = *layout;
    names[n++] = "iteration";
    if (layout->time)
        names[n++] = "time_s";
    names[n++] = "critic_loss";
    names[n++] = "generator_loss";
    for (size_t i = 0; i < m->n_metrics[GAN_NET_CRITIC]; i++)
        names[n++] = m->metric_names[GAN_NET_CRITIC][i];
    for (size_t i = 0; i < m->n_metrics[GAN_NET_GENERATOR]; i++)
        names[n++] = m->metric_names[GAN_NET_GENERATOR][i];
    names[n++] = "critic_grad_norm";
    names[n++] = "generator_grad_norm";
    for (int i = GAN_NET_CRITIC; i >= 0; i--)
        for (int k = 0; k < 4; k++)
            names[n++] = scaling_columns[i][k];
    names[n++] = "critic_true_underflow";
    names[n++] = "generator_true_underflow";
    if (layout->fp8) {
        /* Over every FP8 cast since the previous row: the range of the scales the recipe
         * chose, the share of non-zero values flushed to zero, the values saturated. */
        names[n++] = "fp8_scale_min";
        names[n++] = "fp8_scale_max";
        names[n++] = "fp8_flushed_frac";
        names[n++] = "fp8_saturated";
    }
    if (layout->image) {
        names[n++] = "sliced_w1_pixel";
        /* An image folder's metrics have no Fréchet distance (image_run.h): no column. */
        if (layout->frechet)
            names[n++] = "frechet";
    } else {
        if (layout->modes) {
            names[n++] = "modes_covered";
            names[n++] = "high_quality_pct";
        }
        names[n++] = "sliced_w1";
    }
    m->columns = calloc(n, sizeof *m->columns);
    if (!m->columns)
        return nomem(err);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "a loss term reports a value named \"%s\", which ganctl's metrics already have: rename it in the plugin",
                                     names[i]);
        if (!(m->columns[i] = gan_strdup(names[i])))
            return nomem(err);
        m->n_columns = i + 1;
    }
    return GAN_OK;
}

/* grad_stats.csv's columns: one row per gradient tensor of each network's last update
 * before a metrics row. */
static const char *const grad_columns[] = {
    "iteration", "network", "tensor", "role", "dtype", "scale", "elements", "zero_frac",
    "subnormal_frac", "nonfinite", "absmax", "min_nonzero", "norm",
};
#define GRAD_COLUMNS (sizeof grad_columns / sizeof grad_columns[0])

/* ------------------------------------------------------------------ the tables */

/* A table a resumed run continues, checked as gan_metrics_csv_open will take it. A
 * table the run did not write before (a debug level raised on resume) is new then. */
static gan_status check_table(const char *run_dir, const char *name, const char *const *columns,
                              size_t count, int64_t resume_after, int must_exist,
                              struct gan_error *err)
{
    char *path = gan_run_path(run_dir, name);
    if (!path)
        return nomem(err);
    gan_status st = must_exist || access(path, F_OK) == 0
        ? gan_metrics_csv_check(path, columns, count, resume_after, err) : GAN_OK;
    free(path);
    return st;
}

gan_status gan_metrics_check_tables(const struct gan_metrics_sink *m, const char *run_dir,
                                    int grad_stats, int grad_underflow, int64_t resume_after,
                                    struct gan_error *err)
{
    gan_status st = check_table(run_dir, GAN_RUN_METRICS, (const char *const *)m->columns,
                                m->n_columns, resume_after, 1, err);
    if (st == GAN_OK && grad_stats)
        st = check_table(run_dir, GAN_RUN_GRAD_STATS, grad_columns, GRAD_COLUMNS, resume_after,
                         0, err);
    if (st == GAN_OK && grad_underflow)
        st = check_table(run_dir, GAN_RUN_GRAD_UNDERFLOW, gan_probe_csv_columns,
                         GAN_PROBE_CSV_COLUMNS, resume_after, 0, err);
    return st;
}

gan_status gan_metrics_open(struct gan_metrics_sink *m, const char *run_dir, int tensorboard,
                            int grad_stats, int64_t resume_after, const struct gan_log *log,
                            struct gan_error *err)
{
    char *path = gan_run_path(run_dir, GAN_RUN_METRICS);
    if (!path)
        return nomem(err);
    gan_status st = gan_metrics_csv_open(path, (const char *const *)m->columns, m->n_columns,
                                         resume_after, &m->csv, err);
    free(path);
    if (st == GAN_OK && tensorboard)
        st = gan_metrics_open_events(m, run_dir, resume_after, log, err);
    if (st != GAN_OK || !grad_stats)
        return st;
    /* A resumed run may have started without the debug level: then the file is new. */
    if (!(path = gan_run_path(run_dir, GAN_RUN_GRAD_STATS)))
        return nomem(err);
    st = gan_metrics_csv_open(path, grad_columns, GRAD_COLUMNS,
                              resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                              &m->grad_csv, err);
    free(path);
    return st;
}

gan_status gan_metrics_sync(struct gan_metrics_sink *m, struct gan_error *err)
{
    gan_status st = gan_metrics_csv_sync(m->csv, err);
    return st == GAN_OK ? gan_tb_writer_sync(m->events_file, err) : st;
}

/* ------------------------------------------------------------------ rows */

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
    switch (overflows & (GAN_AMP_OVERFLOW_GRADIENT | GAN_AMP_OVERFLOW_FORWARD)) {
    case GAN_AMP_OVERFLOW_GRADIENT: return "gradient";
    case GAN_AMP_OVERFLOW_FORWARD: return "forward";
    case GAN_AMP_OVERFLOW_GRADIENT | GAN_AMP_OVERFLOW_FORWARD: return "both";
    default: return "none";
    }
}

/* Debug level 1: each network's last update, tensor by tensor, as grad_stats.csv rows
 * and as a table in the log. The statistics are those the scaler was given: counts of
 * the stored (scaled) values, magnitudes of the unscaled ones. */
static gan_status write_grad_stats(struct gan_metrics_sink *m, int64_t iteration,
                                   const struct gan_amp_net amp[GAN_NET_ROLES],
                                   const struct gan_log *log, struct gan_error *err)
{
    gan_log_write(log, GAN_LOG_INFO,
                  "gradients at iteration %lld (each network's last step; zero%% and subn%% of the stored values, magnitudes unscaled):",
                  (long long)iteration);
    gan_log_write(log, GAN_LOG_INFO, "  %-28s %-4s %11s %9s %7s %7s %7s %10s %10s", "tensor",
                  "type", "scale", "elements", "zero%", "subn%", "nonfin", "absmax", "norm");
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        const struct gan_amp_net *sg = &amp[i];
        if (sg->n_entries == 0)
            gan_log_write(log, GAN_LOG_INFO, "  %s: no gradients yet, or its last objective was not finite",
                          gan_net_role_names[i]);
        for (size_t k = 0; k < sg->n_entries; k++) {
            const struct gan_scaler_tensor *e = &sg->entries[k];
            const struct gan_grad_stats *g = &e->stats;
            double n = g->elements ? (double)g->elements : 1.0;
            double zero = (double)g->zeros / n, sub = (double)g->subnormal / n;
            double norm = sqrt(g->sum_squares);
            const char *dtype = gan_dtype_name(e->dtype);
            const char *role = e->role == GAN_SCALER_INNER_GRAD ? "inner" : "param";
            gan_log_write(log, GAN_LOG_INFO, "  %-28s %-4s %11.5g %9llu %7.3f %7.3f %7llu %10.3e %10.3e",
                          e->name, dtype, sg->scale_used, (unsigned long long)g->elements,
                          100.0 * zero, 100.0 * sub, (unsigned long long)g->nonfinite, g->absmax,
                          norm);
            struct gan_cell cells[GRAD_COLUMNS];
            size_t c = 0;
            cells[c++] = cell_int(1, iteration);
            cells[c++] = cell_text(gan_net_role_names[i]);
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
            gan_status st = gan_metrics_csv_row(m->grad_csv, cells, c, err);
            if (st != GAN_OK)
                return st;
        }
    }
    return GAN_OK;
}

gan_status gan_metrics_draw_curves(const char *run_dir, struct gan_error *err)
{
    char *csv = gan_run_path(run_dir, GAN_RUN_METRICS);
    char *png = gan_run_path(run_dir, GAN_RUN_CURVES);
    gan_status st = csv && png ? gan_curves_draw(csv, png, run_dir, err) : nomem(err);
    free(csv);
    free(png);
    return st;
}

static int evaluated_now(const struct gan_run_quality *q, const struct gan_run_clock *c)
{
    return q->has && q->iteration == c->iteration;
}

gan_status gan_metrics_write_row(struct gan_metrics_sink *m, const char *run_dir,
                                 const struct gan_run_clock *c,
                                 const struct gan_amp_net amp[GAN_NET_ROLES],
                                 const double true_underflow[GAN_NET_ROLES],
                                 const struct gan_fp8_totals *fp8,
                                 const struct gan_run_quality *q, const struct gan_log *log,
                                 struct gan_error *err)
{
    struct gan_cell cells[3 * GAN_TRAINER_MAX_METRICS + 24];
    size_t n = 0;
    int evaluated = evaluated_now(q, c);
    int generator_ran = c->iteration > 1;
    cells[n++] = cell_int(1, c->iteration);
    if (m->layout.time)
        cells[n++] = cell_float(1, c->elapsed_before + c->session_s);
    cells[n++] = cell_float(1, m->latest.loss[GAN_NET_CRITIC]);
    cells[n++] = cell_float(generator_ran, m->latest.loss[GAN_NET_GENERATOR]);
    for (size_t i = 0; i < m->n_metrics[GAN_NET_CRITIC]; i++)
        cells[n++] = cell_float(1, m->latest.metric[GAN_NET_CRITIC][i]);
    for (size_t i = 0; i < m->n_metrics[GAN_NET_GENERATOR]; i++)
        cells[n++] = cell_float(generator_ran, m->latest.metric[GAN_NET_GENERATOR][i]);
    cells[n++] = cell_float(1, m->latest.norm[GAN_NET_CRITIC]);
    cells[n++] = cell_float(generator_ran, m->latest.norm[GAN_NET_GENERATOR]);
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        const struct gan_amp_net *sg = &amp[i];
        int ran = i == 1 || generator_ran;
        cells[n++] = cell_float(1, gan_amp_scale(sg));
        cells[n++] = cell_int(1, sg->skipped);
        cells[n++] = ran ? cell_text(overflow_cell(sg->overflows)) : cell_int(0, 0);
        cells[n++] = cell_float(ran, sg->underflow_frac);
    }
    /* Debug level 2: filled where a network's last step was compared with its shadow. */
    for (int i = GAN_NET_CRITIC; i >= 0; i--)
        cells[n++] = cell_float(!isnan(true_underflow[i]), true_underflow[i]);
    if (m->layout.fp8) {
        int cast = fp8 && fp8->operands > 0;
        double lo = cast ? exp2(fp8->log2_scale_min) : NAN;
        double hi = cast ? exp2(fp8->log2_scale_max) : NAN;
        cells[n++] = cell_float(cast, lo);
        cells[n++] = cell_float(cast, hi);
        cells[n++] = cell_float(cast && fp8->elements > 0,
                                cast && fp8->elements > 0
                                    ? (double)fp8->underflow / (double)fp8->elements : 0.0);
        cells[n++] = cell_int(cast, cast ? (int64_t)fp8->overflow : 0);
        m->latest.fp8_scale_min = lo;
        m->latest.fp8_scale_max = hi;
    }
    if (m->layout.image) {
        cells[n++] = cell_float(evaluated, q->values[0].value);
        if (m->layout.frechet)
            cells[n++] = cell_float(evaluated, q->values[1].value);
    } else {
        if (m->layout.modes) {
            cells[n++] = cell_int(evaluated, q->toy.modes_covered);
            cells[n++] = cell_float(evaluated, q->toy.high_quality_pct);
        }
        cells[n++] = cell_float(evaluated, q->toy.sliced_w1);
    }
    gan_status st = gan_metrics_csv_row(m->csv, cells, n, err);
    if (st == GAN_OK)
        st = gan_metrics_events_row(m, c->iteration, cells, n, err);
    if (st == GAN_OK && (evaluated || c->iteration == c->planned))
        st = gan_metrics_draw_curves(run_dir, err);
    if (st == GAN_OK && m->grad_csv)
        st = write_grad_stats(m, c->iteration, amp, log, err);
    return st;
}

/* ------------------------------------------------------------------ progress, summary */

void gan_metrics_fill_progress(const struct gan_metrics_sink *m, const struct gan_run_clock *c,
                               const struct gan_amp_net amp[GAN_NET_ROLES],
                               const struct gan_run_quality *q, struct gan_progress *p)
{
    memset(p, 0, sizeof *p);
    p->iteration = c->iteration;
    p->total = c->planned;
    p->elapsed_s = c->session_s;
    int64_t done = c->iteration - c->start_iteration;
    p->it_per_s = done > 0 && p->elapsed_s > 0 ? (double)done / p->elapsed_s : 0.0;
    p->critic_loss = c->iteration > 0 ? m->latest.loss[GAN_NET_CRITIC] : NAN;
    p->generator_loss = c->iteration > 1 ? m->latest.loss[GAN_NET_GENERATOR] : NAN;
    p->w_distance = NAN;
    for (size_t i = 0; i < m->n_metrics[GAN_NET_CRITIC]; i++)
        if (strcmp(m->metric_names[GAN_NET_CRITIC][i], "w_distance") == 0)
            p->w_distance = m->latest.metric[GAN_NET_CRITIC][i];
    p->has_quality = q->has;
    p->evaluated = evaluated_now(q, c);
    p->quality_iteration = q->iteration;
    p->quality = q->toy;
    if (q->count) {
        p->quality_values = q->values;
        p->quality_count = q->count;
    }
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        const struct gan_amp_net *a = &amp[i];
        if (a->module && a->module->plugin.name && strcmp(a->module->plugin.name, "none") != 0)
            p->scaled = 1;
    }
    p->critic_scale = gan_amp_scale(&amp[GAN_NET_CRITIC]);
    p->generator_scale = gan_amp_scale(&amp[GAN_NET_GENERATOR]);
    p->critic_skipped = amp[GAN_NET_CRITIC].skipped;
    p->fp8 = m->layout.fp8 && !isnan(m->latest.fp8_scale_min);
    p->fp8_scale_min = m->latest.fp8_scale_min;
    p->fp8_scale_max = m->latest.fp8_scale_max;
    p->generator_skipped = amp[GAN_NET_GENERATOR].skipped;
}

gan_status gan_metrics_write_summary(const struct gan_metrics_sink *m,
                                     const struct gan_run_folder *f, const gan_session *se,
                                     const gan_config *cfg, const struct gan_run_clock *c,
                                     const struct gan_run_quality *q,
                                     const struct gan_run_outcome *o, struct gan_error *err)
{
    struct gan_named_value final[8 + 2 * GAN_TRAINER_MAX_METRICS];
    size_t n = 0;
    final[n++] = (struct gan_named_value){ "critic_loss", m->latest.loss[GAN_NET_CRITIC] };
    final[n++] = (struct gan_named_value){ "generator_loss", m->latest.loss[GAN_NET_GENERATOR] };
    for (size_t i = 0; i < m->n_metrics[GAN_NET_CRITIC]; i++)
        final[n++] = (struct gan_named_value){ m->metric_names[GAN_NET_CRITIC][i],
                                               m->latest.metric[GAN_NET_CRITIC][i] };
    for (size_t i = 0; i < m->n_metrics[GAN_NET_GENERATOR]; i++)
        final[n++] = (struct gan_named_value){ m->metric_names[GAN_NET_GENERATOR][i],
                                               m->latest.metric[GAN_NET_GENERATOR][i] };
    final[n++] = (struct gan_named_value){ "critic_grad_norm", m->latest.norm[GAN_NET_CRITIC] };
    final[n++] = (struct gan_named_value){ "generator_grad_norm", m->latest.norm[GAN_NET_GENERATOR] };
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        const struct gan_amp_net *sg = &se->amp[i];
        final[n++] = (struct gan_named_value){ scaling_columns[i][0], gan_amp_scale(sg) };
        final[n++] = (struct gan_named_value){ scaling_columns[i][1], (double)sg->skipped };
    }
    int64_t done = c->iteration - c->start_iteration;
    struct gan_run_summary s;
    memset(&s, 0, sizeof s);
    s.status = o->status;
    s.version = gan_version();
    s.backend = gan_backend_instance_describe(se->backend);
    s.generator = se->model[GAN_NET_GENERATOR].description;
    s.critic = se->model[GAN_NET_CRITIC].description;
    s.data = se->set.data_name;
    s.run_dir = f->run_dir;
    s.run_id = NULL;
    s.ranks = o->ranks;
    gan_config_get_string(cfg, GAN_RUN_ID_KEY, &s.run_id);
    s.iterations = c->iteration;
    s.iterations_planned = c->planned;
    s.wall_time_s = c->elapsed_before + c->session_s;
    s.iterations_per_s = done > 0 && c->session_s > 0 ? (double)done / c->session_s : NAN;
    s.final = final;
    s.final_count = c->iteration > 0 ? n : 0;
    s.quality = *q;
    s.checkpoint = f->checkpoint_iteration >= 0 ? GAN_RUN_CHECKPOINT : NULL;
    s.final_image = f->image_iteration == c->planned ? GAN_RUN_FINAL_IMAGE : NULL;
    s.config = cfg;
    if (m->events_file) {
        const char *path = gan_tb_writer_path(m->events_file);
        const char *slash = strrchr(path, '/');
        s.events_file = slash ? slash + 1 : path;
    }
    s.divergence = o->divergence;
    return gan_run_summary_write(f->run_dir, &s, err);
}

void gan_metrics_free(struct gan_metrics_sink *m)
{
    gan_metrics_csv_close(m->csv, NULL);
    gan_metrics_csv_close(m->grad_csv, NULL);
    gan_tb_writer_close(m->events_file, NULL);
    m->csv = m->grad_csv = NULL;
    m->events_file = NULL;
    for (size_t i = 0; i < m->n_metrics[GAN_NET_CRITIC]; i++)
        free(m->metric_names[GAN_NET_CRITIC][i]);
    for (size_t i = 0; i < m->n_metrics[GAN_NET_GENERATOR]; i++) {
        free(m->metric_names[GAN_NET_GENERATOR][i]);
        free(m->generator_reported[i]);
    }
    for (size_t i = 0; i < m->n_columns; i++)
        free(m->columns[i]);
    free(m->columns);
    m->columns = NULL;
    m->n_columns = m->n_metrics[GAN_NET_CRITIC] = m->n_metrics[GAN_NET_GENERATOR] = 0;
}
