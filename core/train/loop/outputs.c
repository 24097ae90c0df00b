/* SPDX-License-Identifier: MIT */
/* outputs.c — what a run writes: metrics.csv's columns and rows, grad_stats.csv, the run
 * folder with config.conf, checkpoints, the progress report and summary.json. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strings.h"
#include "tensor/tensor_core.h"
#include "io/plot/curves.h"
#include "train/loop/trainer_internal.h"

/* ------------------------------------------------------------------ columns */

/* Each network's loss-scaling columns (critic first, as the other columns). */
static const char *const scaling_columns[GAN_NET_ROLES][4] = {
    { "generator_scale", "generator_skipped", "generator_overflow", "generator_underflow_frac" },
    { "critic_scale", "critic_skipped", "critic_overflow", "critic_underflow_frac" },
};

/* metrics.csv's columns: fixed ones around the reported values. */
gan_status gan_trainer_make_columns(gan_trainer *t, struct gan_error *err)
{
    const char *names[3 * GAN_TRAINER_MAX_METRICS + 24];
    size_t n = 0;
    names[n++] = "iteration";
    if (t->set.metrics_time)
        names[n++] = "time_s";
    names[n++] = "critic_loss";
    names[n++] = "generator_loss";
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_CRITIC]; i++)
        names[n++] = t->metrics.metric_names[GAN_NET_CRITIC][i];
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_GENERATOR]; i++)
        names[n++] = t->metrics.metric_names[GAN_NET_GENERATOR][i];
    names[n++] = "critic_grad_norm";
    names[n++] = "generator_grad_norm";
    for (int i = GAN_NET_CRITIC; i >= 0; i--)
        for (int k = 0; k < 4; k++)
            names[n++] = scaling_columns[i][k];
    names[n++] = "critic_true_underflow";
    names[n++] = "generator_true_underflow";
    if (t->s->set.is_image) {
        names[n++] = "sliced_w1_pixel";
        /* An image folder's metrics have no Fréchet distance (image_run.h): no column. */
        if (gan_image_run_has_frechet(t->batch.images))
            names[n++] = "frechet";
    } else {
        if (t->eval.modes.count) {
            names[n++] = "modes_covered";
            names[n++] = "high_quality_pct";
        }
        names[n++] = "sliced_w1";
    }
    t->metrics.columns = calloc(n, sizeof *t->metrics.columns);
    if (!t->metrics.columns)
        return gan_trainer_nomem(err);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "a loss term reports a value named \"%s\", which ganctl's metrics already have: rename it in the plugin",
                                     names[i]);
        if (!(t->metrics.columns[i] = gan_strdup(names[i])))
            return gan_trainer_nomem(err);
        t->metrics.n_columns = i + 1;
    }
    return GAN_OK;
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
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        const struct gan_amp_net *sg = &t->s->amp[i];
        if (sg->n_entries == 0)
            gan_log_write(t->log, GAN_LOG_INFO, "  %s: no gradients yet, or its last objective was not finite",
                          gan_net_role_names[i]);
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
            gan_status st = gan_metrics_csv_row(t->metrics.grad_csv, cells, c, err);
            if (st != GAN_OK)
                return st;
        }
    }
    return GAN_OK;
}

/* curves.png from the rows written so far (io/plot/curves.h). */
gan_status gan_trainer_draw_curves(gan_trainer *t, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    char *csv = gan_run_path(t->folder.run_dir, GAN_RUN_METRICS);
    char *png = gan_run_path(t->folder.run_dir, GAN_RUN_CURVES);
    gan_status st = csv && png ? gan_curves_draw(csv, png, t->folder.run_dir, err) : gan_trainer_nomem(err);
    free(csv);
    free(png);
    return st;
}

gan_status gan_trainer_write_row(gan_trainer *t, struct gan_error *err)
{
    /* Data parallel: rank 0 writes the run folder (data_parallel.c). */
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    struct gan_cell cells[3 * GAN_TRAINER_MAX_METRICS + 24];
    size_t n = 0;
    int evaluated = t->eval.has_quality && t->eval.quality_iteration == t->iteration;
    int generator_ran = t->iteration > 1;
    cells[n++] = cell_int(1, t->iteration);
    if (t->set.metrics_time)
        cells[n++] = cell_float(1, t->elapsed_before + gan_trainer_session_s(t));
    cells[n++] = cell_float(1, t->metrics.latest.loss[GAN_NET_CRITIC]);
    cells[n++] = cell_float(generator_ran, t->metrics.latest.loss[GAN_NET_GENERATOR]);
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_CRITIC]; i++)
        cells[n++] = cell_float(1, t->metrics.latest.metric[GAN_NET_CRITIC][i]);
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_GENERATOR]; i++)
        cells[n++] = cell_float(generator_ran, t->metrics.latest.metric[GAN_NET_GENERATOR][i]);
    cells[n++] = cell_float(1, t->metrics.latest.norm[GAN_NET_CRITIC]);
    cells[n++] = cell_float(generator_ran, t->metrics.latest.norm[GAN_NET_GENERATOR]);
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        struct gan_amp_net *sg = &t->s->amp[i];
        int ran = i == 1 || generator_ran;
        cells[n++] = cell_float(1, gan_amp_scale(sg));
        cells[n++] = cell_int(1, sg->skipped);
        cells[n++] = ran ? cell_text(overflow_cell(sg->overflows)) : cell_int(0, 0);
        cells[n++] = cell_float(ran, sg->underflow_frac);
    }
    /* Debug level 2: filled where a network's last step was compared with its shadow. */
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        double frac = gan_probe_param_fraction(t->shadow.probe[i]);
        cells[n++] = cell_float(!isnan(frac), frac);
    }
    if (t->s->set.is_image) {
        cells[n++] = cell_float(evaluated, t->eval.image_quality.sliced_w1);
        if (gan_image_run_has_frechet(t->batch.images))
            cells[n++] = cell_float(evaluated, t->eval.image_quality.frechet);
    } else {
        if (t->eval.modes.count) {
            cells[n++] = cell_int(evaluated, t->eval.quality.modes_covered);
            cells[n++] = cell_float(evaluated, t->eval.quality.high_quality_pct);
        }
        cells[n++] = cell_float(evaluated, t->eval.quality.sliced_w1);
    }
    gan_status st = gan_metrics_csv_row(t->metrics.csv, cells, n, err);
    if (st == GAN_OK)
        st = gan_trainer_events_row(t, cells, n, err);
    if (st == GAN_OK && (evaluated || t->iteration == t->set.iterations))
        st = gan_trainer_draw_curves(t, err);
    if (st == GAN_OK && t->metrics.grad_csv)
        st = write_grad_stats(t, err);
    if (st == GAN_OK && t->shadow.csv)
        st = gan_trainer_write_underflow(t, err);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        if (t->shadow.probe[i])
            gan_probe_clear(t->shadow.probe[i]);
    for (int i = 0; i < GAN_NET_ROLES; i++)
        t->s->amp[i].overflows = 0;
    return st;
}

gan_status gan_trainer_save_checkpoint(gan_trainer *t, struct gan_error *err)
{
    /* Every rank checks that the replicas are the same; rank 0 writes them. */
    gan_status dp = gan_trainer_dp_check_weights(t, err);
    if (dp != GAN_OK)
        return dp;
    if (!gan_trainer_dp_leader(t)) {
        t->folder.checkpoint_iteration = t->iteration;
        return GAN_OK;
    }
    struct gan_checkpoint_state state;
    memset(&state, 0, sizeof state);
    state.iteration = t->iteration;
    state.seed = t->s->set.seed;
    state.z_offset = t->batch.z_offset;
    state.loss_offset = t->batch.loss_offset;
    if (t->batch.images) {
        state.has_image = 1;
        state.image = gan_image_run_tell(t->batch.images);
    } else {
        gan_toy_sampler_get_state(t->batch.sampler, &state.data);
    }
    state.elapsed_s = t->elapsed_before + gan_trainer_session_s(t);
    state.config_text = t->folder.config_text;
    gan_status st = gan_metrics_csv_sync(t->metrics.csv, err);
    if (st == GAN_OK)
        st = gan_trainer_events_sync(t, err);
    if (st == GAN_OK)
        st = gan_session_save_checkpoint(t->s, t->folder.checkpoint_path, &state, err);
    if (st == GAN_OK) {
        t->folder.checkpoint_iteration = t->iteration;
        gan_log_write(t->log, GAN_LOG_DEBUG, "checkpoint at iteration %lld: %s",
                      (long long)t->iteration, t->folder.checkpoint_path);
    }
    return st;
}

void gan_trainer_fill_progress(const gan_trainer *t, struct gan_progress *p)
{
    memset(p, 0, sizeof *p);
    p->iteration = t->iteration;
    p->total = t->set.iterations;
    p->elapsed_s = gan_trainer_session_s(t);
    int64_t done = t->iteration - t->start_iteration;
    p->it_per_s = done > 0 && p->elapsed_s > 0 ? (double)done / p->elapsed_s : 0.0;
    p->critic_loss = t->iteration > 0 ? t->metrics.latest.loss[GAN_NET_CRITIC] : NAN;
    p->generator_loss = t->iteration > 1 ? t->metrics.latest.loss[GAN_NET_GENERATOR] : NAN;
    p->w_distance = NAN;
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_CRITIC]; i++)
        if (strcmp(t->metrics.metric_names[GAN_NET_CRITIC][i], "w_distance") == 0)
            p->w_distance = t->metrics.latest.metric[GAN_NET_CRITIC][i];
    p->has_quality = t->eval.has_quality;
    p->evaluated = t->eval.has_quality && t->eval.quality_iteration == t->iteration;
    p->quality_iteration = t->eval.quality_iteration;
    p->quality = t->eval.quality;
    if (t->batch.images) {
        p->quality_values = t->eval.quality_values;
        p->quality_count = gan_image_run_has_frechet(t->batch.images) ? 2 : 1;
    }
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        const struct gan_amp_net *a = &t->s->amp[i];
        if (a->module && a->module->plugin.name && strcmp(a->module->plugin.name, "none") != 0)
            p->scaled = 1;
    }
    p->critic_scale = gan_amp_scale(&t->s->amp[GAN_NET_CRITIC]);
    p->generator_scale = gan_amp_scale(&t->s->amp[GAN_NET_GENERATOR]);
    p->critic_skipped = t->s->amp[GAN_NET_CRITIC].skipped;
    p->generator_skipped = t->s->amp[GAN_NET_GENERATOR].skipped;
}

gan_status gan_trainer_write_summary(gan_trainer *t, const char *status, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    struct gan_named_value final[8 + 2 * GAN_TRAINER_MAX_METRICS];
    size_t n = 0;
    final[n++] = (struct gan_named_value){ "critic_loss", t->metrics.latest.loss[GAN_NET_CRITIC] };
    final[n++] = (struct gan_named_value){ "generator_loss", t->metrics.latest.loss[GAN_NET_GENERATOR] };
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_CRITIC]; i++)
        final[n++] = (struct gan_named_value){ t->metrics.metric_names[GAN_NET_CRITIC][i], t->metrics.latest.metric[GAN_NET_CRITIC][i] };
    for (size_t i = 0; i < t->metrics.n_metrics[GAN_NET_GENERATOR]; i++)
        final[n++] = (struct gan_named_value){ t->metrics.metric_names[GAN_NET_GENERATOR][i], t->metrics.latest.metric[GAN_NET_GENERATOR][i] };
    final[n++] = (struct gan_named_value){ "critic_grad_norm", t->metrics.latest.norm[GAN_NET_CRITIC] };
    final[n++] = (struct gan_named_value){ "generator_grad_norm", t->metrics.latest.norm[GAN_NET_GENERATOR] };
    for (int i = GAN_NET_CRITIC; i >= 0; i--) {
        const struct gan_amp_net *sg = &t->s->amp[i];
        final[n++] = (struct gan_named_value){ scaling_columns[i][0],
                                               gan_amp_scale(sg) };
        final[n++] = (struct gan_named_value){ scaling_columns[i][1], (double)sg->skipped };
    }
    double session = gan_trainer_session_s(t);
    int64_t done = t->iteration - t->start_iteration;
    struct gan_run_summary s;
    memset(&s, 0, sizeof s);
    s.status = status;
    s.version = gan_version();
    s.backend = gan_backend_instance_describe(t->s->backend);
    s.generator = t->s->model[GAN_NET_GENERATOR].description;
    s.critic = t->s->model[GAN_NET_CRITIC].description;
    s.data = t->s->set.data_name;
    s.run_dir = t->folder.run_dir;
    s.run_id = NULL;
    s.ranks = gan_trainer_ranks(t);
    gan_config_get_string(t->cfg, GAN_RUN_ID_KEY, &s.run_id);
    s.iterations = t->iteration;
    s.iterations_planned = t->set.iterations;
    s.wall_time_s = t->elapsed_before + session;
    s.iterations_per_s = done > 0 && session > 0 ? (double)done / session : NAN;
    s.final = final;
    s.final_count = t->iteration > 0 ? n : 0;
    s.has_quality = t->eval.has_quality;
    s.quality_iteration = t->eval.quality_iteration;
    s.quality_samples = GAN_EVAL_SAMPLES;
    s.quality = t->eval.quality;
    s.floor = t->eval.floor;
    if (t->batch.images) {
        s.quality_samples = gan_image_run_eval_samples(t->batch.images);
        s.quality_values = t->eval.quality_values;
        s.floor_values = t->eval.floor_values;
        s.quality_count = gan_image_run_has_frechet(t->batch.images) ? 2 : 1;
    }
    s.checkpoint = t->folder.checkpoint_iteration >= 0 ? GAN_RUN_CHECKPOINT : NULL;
    s.final_image = t->folder.image_iteration == t->set.iterations ? GAN_RUN_FINAL_IMAGE : NULL;
    s.config = t->cfg;
    if (t->metrics.events_file) {
        const char *path = gan_tb_writer_path(t->metrics.events_file);
        const char *slash = strrchr(path, '/');
        s.events_file = slash ? slash + 1 : path;
    }
    const struct gan_divergence *d = &t->divergence;
    struct gan_run_divergence why = {
        gan_net_role_names[d->net], gan_divergence_reason_name(d->reason), d->message,
        d->skipped, d->steps, d->since_iteration, d->loss, d->scale,
    };
    if (d->reason != GAN_DIVERGED_NOT)
        s.divergence = &why;
    return gan_run_summary_write(t->folder.run_dir, &s, err);
}

/* ------------------------------------------------------------------ the run folder */

/* t->folder.run_dir and t->folder.checkpoint_path for a resumed run: its folder as named, less
 * trailing slashes (the files are named from it). */
static gan_status name_resumed_dir(gan_trainer *t, const char *resume_dir, struct gan_error *err)
{
    size_t n = strlen(resume_dir);
    while (n > 1 && resume_dir[n - 1] == '/')
        n--;
    if (!(t->folder.run_dir = malloc(n + 1)))
        return gan_trainer_nomem(err);
    memcpy(t->folder.run_dir, resume_dir, n);
    t->folder.run_dir[n] = '\0';
    if (!(t->folder.checkpoint_path = gan_run_path(t->folder.run_dir, GAN_RUN_CHECKPOINT)))
        return gan_trainer_nomem(err);
    return GAN_OK;
}

/* Reads configuration text (`label` names it in messages) or, with text NULL, the file
 * `label`, into a new configuration. */
static gan_status read_config(const char *text, const char *label, gan_config **out,
                              struct gan_error *err)
{
    gan_status st = gan_config_new(out, err);
    if (st == GAN_OK)
        st = text ? gan_config_read_string(*out, text, label, GAN_CONFIG_FILE, err)
                  : gan_config_read_file(*out, label, GAN_CONFIG_FILE, err);
    if (st != GAN_OK) {
        gan_config_free(*out);
        *out = NULL;
    }
    return st;
}

/* The checkpoint against the folder's config.conf: the same run (run.id), data set and
 * network shapes. A checkpoint copied in from another run would otherwise continue in
 * this folder, its rows appended to this run's metrics.csv. */
static gan_status check_checkpoint_identity(gan_trainer *t, const char *conf_path,
                                            struct gan_error *err)
{
    char *text = NULL;
    gan_config *folder = NULL, *saved = NULL;
    gan_status st = gan_checkpoint_read_config(t->folder.checkpoint_path, &text, err);
    char *label = st == GAN_OK ? malloc(strlen(t->folder.checkpoint_path) + 32) : NULL;
    if (st == GAN_OK && !label)
        st = gan_trainer_nomem(err);
    if (st == GAN_OK) {
        sprintf(label, "%s (saved configuration)", t->folder.checkpoint_path);
        st = read_config(text, label, &saved, err);
    }
    if (st == GAN_OK)
        st = read_config(NULL, conf_path, &folder, err);
    if (st == GAN_OK)
        st = gan_run_check_identity(folder, conf_path, saved, t->folder.checkpoint_path, err);
    if (st == GAN_OK && !gan_config_find(folder, GAN_RUN_ID_KEY))
        gan_log_write(t->log, GAN_LOG_INFO,
                      "%s was made before ganctl gave each run an id (run.id): its checkpoint is checked by data set and network shapes only",
                      t->folder.run_dir);
    gan_config_free(folder);
    gan_config_free(saved);
    free(label);
    free(text);
    return st;
}

gan_status gan_trainer_claim_run_dir(gan_trainer *t, const char *resume_dir,
                                     struct gan_error *err)
{
    gan_status st;
    if (!resume_dir) {
        /* The id names one run: a configuration copied from another run's folder
         * carries that run's. */
        const struct gan_config_value *v = gan_config_find(t->cfg, GAN_RUN_ID_KEY);
        if (v)
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "%s: run.id is set by ganctl when it creates a run, never by hand: remove it (a copied config.conf carries its run's id), or continue that run with ganctl --resume and its folder",
                                 v->origin);
        return GAN_OK;
    }
    /* Data parallel: the other ranks only read the folder rank 0 locks and checks. */
    if (!gan_trainer_dp_leader(t))
        return name_resumed_dir(t, resume_dir, err);
    if ((st = name_resumed_dir(t, resume_dir, err)) != GAN_OK)
        return st;
    /* Locked before anything in it is read: what is checked then stays as checked. */
    if ((st = gan_run_lock_take(t->folder.run_dir, &t->folder.lock, err)) != GAN_OK)
        return st;
    char *conf_path = gan_run_path(t->folder.run_dir, GAN_RUN_CONFIG);
    if (!conf_path)
        return gan_trainer_nomem(err);
    int has_conf = access(conf_path, F_OK) == 0;
    if (t->folder.restart) {
        if (access(t->folder.checkpoint_path, F_OK) == 0)
            st = gan_error_set(err, GAN_ERR_IO,
                               "%s was written while ganctl read %s: resume again to continue from it",
                               t->folder.checkpoint_path, conf_path);
        else if (!has_conf)
            st = gan_error_set(err, GAN_ERR_NOT_FOUND,
                               "%s: no checkpoint and no config.conf: the folder holds no run to resume; start a new run with run.dir=%s",
                               t->folder.run_dir, t->folder.run_dir);
        else
            gan_log_write(t->log, GAN_LOG_INFO,
                          "%s holds the configuration of a run that stopped before its first checkpoint: nothing was saved, so the run starts again from iteration 0",
                          t->folder.run_dir);
    } else if (!has_conf) {
        gan_log_write(t->log, GAN_LOG_WARN,
                      "%s is missing: the checkpoint cannot be checked against the run's configuration, and the run continues with the checkpoint's own",
                      conf_path);
    } else {
        st = check_checkpoint_identity(t, conf_path, err);
    }
    free(conf_path);
    return st;
}

/* A new run's folder, made from run.dir and locked, which then records the folder made
 * so that config.conf names it. */
static gan_status create_run_dir(gan_trainer *t, struct gan_error *err)
{
    gan_status st;
    const char *dir = "";
    gan_config_get_string(t->cfg, "run.dir", &dir);
    const struct gan_config_value *v = gan_config_find(t->cfg, "run.dir");
    if ((st = gan_run_dir_create(dir, v ? v->origin : "run.dir", t->s->set.data_name, &t->folder.run_dir,
                                 &t->folder.lock, err)) != GAN_OK)
        return st;
    if (!(t->folder.checkpoint_path = gan_run_path(t->folder.run_dir, GAN_RUN_CHECKPOINT)))
        return gan_trainer_nomem(err);
    return gan_config_set_string(t->cfg, "run.dir", t->folder.run_dir, v ? v->origin : "default", err);
}

/* A new run's identity, in its configuration: config.conf, every checkpoint and
 * summary.json then name it. */
static gan_status name_new_run(gan_trainer *t, struct gan_error *err)
{
    char id[GAN_RUN_ID_SIZE];
    gan_status st = gan_run_id_make(id, err);
    return st == GAN_OK ? gan_config_set_string(t->cfg, GAN_RUN_ID_KEY, id,
                                                "made by ganctl for this run", err)
                        : st;
}

/* A resumed run's checkpoint: loaded into the session, checked against the run's
 * configuration (a checkpoint that disagrees with it is damaged or another run's),
 * and the data sampler and counters put where it left off. *resume_after is the
 * iteration it was written at. */
static gan_status resume_checkpoint(gan_trainer *t, int64_t *resume_after,
                                    struct gan_error *err)
{
    struct gan_checkpoint_state state;
    gan_status st;
    if ((st = gan_session_load_checkpoint(t->s, t->folder.checkpoint_path, &state, err)) != GAN_OK)
        return st;
    if (state.seed != t->s->set.seed)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint was written with seed %llu but its configuration says run.seed = %llu: the file is damaged",
                             t->folder.checkpoint_path, (unsigned long long)state.seed,
                             (unsigned long long)t->s->set.seed);
    if (state.has_image != (t->batch.images != NULL))
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint holds the position of %s sampler, but the run's data.name is \"%s\": the file belongs to another run",
                             t->folder.checkpoint_path, state.has_image ? "an image" : "a toy",
                             t->s->set.data_name);
    st = t->batch.images ? gan_image_run_seek(t->batch.images, state.image, err)
                   : gan_toy_sampler_set_state(t->batch.sampler, &state.data, err);
    if (st != GAN_OK)
        return st;
    t->iteration = state.iteration;
    t->batch.z_offset = state.z_offset;
    t->batch.loss_offset = state.loss_offset;
    t->elapsed_before = state.elapsed_s;
    t->folder.checkpoint_iteration = state.iteration;
    *resume_after = state.iteration;
    return GAN_OK;
}

/* config.conf, every setting with its origin under a head that says how to repeat
 * the run; t->folder.config_text, the same settings without origins, goes into each
 * checkpoint's metadata. */
static gan_status write_config_file(gan_trainer *t, struct gan_error *err)
{
    char *text = gan_config_to_text(t->cfg, 1);
    t->folder.config_text = gan_config_to_text(t->cfg, 0);
    if (!text || !t->folder.config_text) {
        free(text);
        return gan_trainer_nomem(err);
    }
    static const char head[] =
        "# config.conf - the configuration of this run, every setting with where it came from.\n"
        "# ganctl -c config.conf repeats the run: set run.dir to a new folder and delete\n"
        "# run.id first (ganctl gives each run its own); ganctl --resume continues this one.\n";
    char *full = malloc(strlen(head) + strlen(text) + 1);
    if (!full) {
        free(text);
        return gan_trainer_nomem(err);
    }
    strcpy(full, head);
    strcat(full, text);
    free(text);
    gan_status st = gan_run_write_text(t->folder.run_dir, GAN_RUN_CONFIG, full, err);
    free(full);
    return st;
}

/* A table a resumed run continues, checked as gan_metrics_csv_open will take it. A
 * table the run did not write before (a debug level raised on resume) is new then. */
static gan_status check_table(const gan_trainer *t, const char *name, const char *const *columns,
                              size_t count, int64_t resume_after, int must_exist,
                              struct gan_error *err)
{
    char *path = gan_run_path(t->folder.run_dir, name);
    if (!path)
        return gan_trainer_nomem(err);
    gan_status st = must_exist || access(path, F_OK) == 0
        ? gan_metrics_csv_check(path, columns, count, resume_after, err) : GAN_OK;
    free(path);
    return st;
}

static gan_status check_tables(const gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    gan_status st = check_table(t, GAN_RUN_METRICS, (const char *const *)t->metrics.columns,
                                t->metrics.n_columns, resume_after, 1, err);
    if (st == GAN_OK && t->set.debug_level >= 1)
        st = check_table(t, GAN_RUN_GRAD_STATS, grad_columns, GRAD_COLUMNS, resume_after, 0, err);
    if (st == GAN_OK && t->set.debug_level >= 2 && t->s->set.precision != GAN_F32)
        st = check_table(t, GAN_RUN_GRAD_UNDERFLOW, gan_probe_csv_columns, GAN_PROBE_CSV_COLUMNS,
                         resume_after, 0, err);
    return st;
}

/* A new run's folder and files; or a resumed run's, with its checkpoint loaded; or a
 * restarted run's, written again from iteration 0. Every check comes before the first
 * change to the folder, so that a refused run leaves it as it was. */
gan_status gan_trainer_set_up_run_dir(gan_trainer *t, const char *resume_dir,
                                      struct gan_error *err)
{
    gan_status st;
    int64_t resume_after = -1;
    t->folder.resumed = resume_dir && !t->folder.restart;
    /* Data parallel: the other ranks load the checkpoint and write nothing. */
    if (!gan_trainer_dp_leader(t))
        return t->folder.resumed ? resume_checkpoint(t, &resume_after, err) : GAN_OK;
    if (!resume_dir && (st = create_run_dir(t, err)) != GAN_OK)
        return st;
    if (t->folder.resumed && (st = resume_checkpoint(t, &resume_after, err)) != GAN_OK)
        return st;
    if (t->folder.resumed && (st = check_tables(t, resume_after, err)) != GAN_OK)
        return st;
    /* Checked and locked: from here on the folder changes. */
    gan_run_remove_leftovers(t->folder.run_dir, t->log);
    if (!resume_dir && (st = name_new_run(t, err)) != GAN_OK)
        return st;
    if ((st = write_config_file(t, err)) != GAN_OK)
        return st;
    /* An image run shows real test images once, beside which its grids are judged. */
    if (t->batch.images && !t->folder.resumed) {
        char *real = gan_run_path(t->folder.run_dir, GAN_IMAGE_REAL_GRID);
        const char *title = t->s->set.is_folder ? "held-out images of the image folder"
                                                : "fashion-mnist test images 1 to 64";
        /* Each held-out image once: a small folder's fill only the first cells. */
        size_t shown = gan_image_run_held_out(t->batch.images);
        if (shown > GAN_IMAGE_GRID_COUNT)
            shown = GAN_IMAGE_GRID_COUNT;
        st = real ? gan_image_run_write_grid_sized(real, t->eval.eval_real, shown,
                                                   gan_image_run_channels(t->batch.images),
                                                   gan_image_run_side(t->batch.images), title, err)
                  : gan_trainer_nomem(err);
        free(real);
        if (st != GAN_OK)
            return st;
    }
    char *path = gan_run_path(t->folder.run_dir, GAN_RUN_METRICS);
    if (!path)
        return gan_trainer_nomem(err);
    st = gan_metrics_csv_open(path, (const char *const *)t->metrics.columns, t->metrics.n_columns, resume_after,
                              &t->metrics.csv, err);
    free(path);
    if (st == GAN_OK)
        st = gan_trainer_open_events(t, resume_after, err);
    if (st != GAN_OK || t->set.debug_level < 1)
        return st;
    /* A resumed run may have started without the debug level: then the file is new. */
    if (!(path = gan_run_path(t->folder.run_dir, GAN_RUN_GRAD_STATS)))
        return gan_trainer_nomem(err);
    st = gan_metrics_csv_open(path, grad_columns, GRAD_COLUMNS,
                              resume_after >= 0 && access(path, F_OK) == 0 ? resume_after : -1,
                              &t->metrics.grad_csv, err);
    free(path);
    return st == GAN_OK ? gan_trainer_set_up_probes(t, resume_after, err) : st;
}
