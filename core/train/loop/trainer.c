/* SPDX-License-Identifier: MIT */
/* trainer.c — the WGAN-GP run loop over a session: the paper's n_critic critic steps per
 * generator step (each step in step.c); the trainer's set-up and its queries. Evaluation,
 * outputs and debug level 2 live beside it (evaluation.c, outputs.c, shadow.c). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strings.h"
#include "tensor/tensor_core.h"
#include "train/loop/trainer_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double gan_trainer_session_s(const gan_trainer *t)
{
    return now_s() - ((double)t->t0.tv_sec + 1e-9 * (double)t->t0.tv_nsec);
}

gan_status gan_trainer_nomem(struct gan_error *err)
{
    return gan_error_nomem(err, "setting up training");
}

gan_status gan_trainer_check_config(gan_config *config, const gan_loader *loader,
                                    struct gan_error *err)
{
    return gan_session_check_config(config, loader, err);
}

/* ------------------------------------------------------------------ settings */

static long long get_int(const gan_config *cfg, const char *key)
{
    long long v = 0;
    gan_config_get_int(cfg, key, &v);
    return v;
}

/* The run's own settings; the step's are the session's. */
static void read_settings(struct gan_run_settings *set, const gan_config *cfg)
{
    set->iterations = get_int(cfg, "run.iterations");
    set->log_every = get_int(cfg, "run.log_every");
    set->eval_every = get_int(cfg, "run.eval_every");
    set->image_every = get_int(cfg, "run.image_every");
    set->checkpoint_every = get_int(cfg, "run.checkpoint_every");
    gan_config_get_bool(cfg, "run.metrics_time", &set->metrics_time);
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        char key[64];
        const char *decay = "none";
        snprintf(key, sizeof key, "%s.optimizer.lr_decay", gan_net_role_names[i]);
        gan_config_get_string(cfg, key, &decay);
        set->lr_decay[i] = strcmp(decay, "linear") == 0;
    }
    set->debug_level = get_int(cfg, "run.debug_level");
    set->diverged_skip_fraction = 0.5;
    gan_config_get_float(cfg, "run.diverged_skip_fraction", &set->diverged_skip_fraction);
    set->diverged_window = get_int(cfg, "run.diverged_window");
}

/* ------------------------------------------------------------------ the trial step */

static gan_status trial_step(gan_session *s, struct gan_metrics_sink *m, const float *samples,
                             int64_t n_real, int64_t iteration, struct gan_error *err);

/* The trial step changes nothing, an FP8 recipe's history included. */
static gan_status trial_step_keeping_fp8(gan_trainer *t, struct gan_error *err)
{
    gan_ctx_fp8_hold(t->s->ctx, 1);
    gan_status st = trial_step(t->s, &t->metrics, t->eval.eval_real,
                               (int64_t)t->eval.n_eval_real, t->iteration, err);
    gan_ctx_fp8_hold(t->s->ctx, 0);
    return st;
}

/* A reported value's name becomes a CSV column and a JSON key: keep it plain. */
static int plain_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '-'))
            return 0;
    return 1;
}

static int has_name(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* x must have the shape `want` (ndim dimensions, the batch first). */
static gan_status check_shape(const gan_session *s, gan_tensor *x, int ndim, const int64_t *want,
                              const char *what, struct gan_error *err)
{
    int same = gan_tensor_ndim(x) == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = gan_tensor_dim(x, d) == want[d];
    if (same)
        return GAN_OK;
    enum gan_net_role mi = strcmp(what, "generator") == 0 ? GAN_NET_GENERATOR : GAN_NET_CRITIC;
    char shape[128], expected[128];
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    for (int d = 0; d < gan_tensor_ndim(x); d++)
        dims[d] = gan_tensor_dim(x, d);
    return gan_error_set(err, GAN_ERR_INVALID,
                         "model \"%s\" (%s) gave the %s an output of shape %s for a batch of %lld; it must be %s: fix the model",
                         s->model[mi].module->plugin.name, s->model[mi].module->path, what,
                         ti_dims_str(shape, sizeof shape, gan_tensor_ndim(x), dims),
                         (long long)want[0], ti_dims_str(expected, sizeof expected, ndim, want));
}

/* Runs both objectives once on a small batch of real samples (up to n_real of them) with
 * scratch streams, changing nothing: it checks that the models and terms work together
 * and learns the names of the values the terms report, which become metrics.csv's
 * columns. */
static gan_status trial_step(gan_session *s, struct gan_metrics_sink *m, const float *samples,
                             int64_t n_real, int64_t iteration, struct gan_error *err)
{
    gan_ctx *ctx = s->ctx;
    int64_t n = s->set.batch < n_real ? s->set.batch : n_real;
    int64_t dims[4], score[2] = { n, 1 };
    int ndim = gan_session_batch_dims(s, n, dims);
    uint64_t z_offset = GAN_STREAM_PROBE, loss_offset = GAN_STREAM_PROBE + (UINT64_C(1) << 40);
    gan_tensor *real = gan_tensor_from_host(ctx, GAN_F32, ndim, dims, samples);
    gan_tensor *z = gan_session_draw_z(s, n, &z_offset);
    gan_tensor *fake = gan_session_forward(s, GAN_NET_GENERATOR, z);
    if (!real || !fake)
        return gan_session_ctx_fail(s, err, "trying the generator");
    gan_status st = check_shape(s, fake, ndim, dims, "generator", err);
    if (st != GAN_OK)
        return st;
    gan_tensor *d = gan_session_forward(s, GAN_NET_CRITIC, real);
    if (!d)
        return gan_session_ctx_fail(s, err, "trying the critic");
    if ((st = check_shape(s, d, 2, score, "critic", err)) != GAN_OK)
        return st;
    /* Critic step 0 is one that every lazy term applies at, so each reports its names. */
    s->objective.critic_step = 0;
    for (int which = 0; which < 2; which++) {
        struct gan_objective_sink sink = { .count = 0 };
        enum gan_loss_target target = which ? GAN_LOSS_GENERATOR : GAN_LOSS_CRITIC;
        /* The terms run as in training, unscaled. */
        gan_tensor *loss = gan_session_objective(s, target, iteration, 1.0,
                                                 which ? NULL : real, fake, NULL, &loss_offset,
                                                 &sink);
        if (!loss)
            return gan_session_ctx_fail(s, err, which ? "trying the generator's objective"
                                          : "trying the critic's objective");
        for (size_t i = 0; i < sink.count; i++) {
            char name[160];
            if (!plain_name(sink.names[i]))
                return gan_error_set(err, GAN_ERR_INVALID,
                                     "a loss term reports a value named \"%.80s\": names are 1 to 64 letters, digits, '_', '.' or '-' (they become metrics.csv columns); fix the plugin",
                                     sink.names[i]);
            if (which == 0) {
                snprintf(name, sizeof name, "%s", sink.names[i]);
                if (!(m->metric_names[GAN_NET_CRITIC][m->n_metrics[GAN_NET_CRITIC]] = gan_strdup(name)))
                    return gan_trainer_nomem(err);
                m->n_metrics[GAN_NET_CRITIC]++;
            } else {
                /* A name the critic's terms report already gets the network's prefix. */
                snprintf(name, sizeof name, "%s%s",
                         has_name(m->metric_names[GAN_NET_CRITIC], m->n_metrics[GAN_NET_CRITIC], sink.names[i]) ? "generator_" : "",
                         sink.names[i]);
                m->metric_names[GAN_NET_GENERATOR][m->n_metrics[GAN_NET_GENERATOR]] = gan_strdup(name);
                m->generator_reported[m->n_metrics[GAN_NET_GENERATOR]] = gan_strdup(sink.names[i]);
                if (!m->metric_names[GAN_NET_GENERATOR][m->n_metrics[GAN_NET_GENERATOR]] ||
                    !m->generator_reported[m->n_metrics[GAN_NET_GENERATOR]]) {
                    free(m->metric_names[GAN_NET_GENERATOR][m->n_metrics[GAN_NET_GENERATOR]]);
                    free(m->generator_reported[m->n_metrics[GAN_NET_GENERATOR]]);
                    return gan_trainer_nomem(err);
                }
                m->n_metrics[GAN_NET_GENERATOR]++;
            }
        }
    }
    gan_ctx_step_end(ctx);
    return GAN_OK;
}

/* ------------------------------------------------------------------ new, free */

gan_status gan_trainer_new(const struct gan_trainer_setup *setup, gan_trainer **out,
                           struct gan_error *err)
{
    *out = NULL;
    gan_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return gan_trainer_nomem(err);
    t->cfg = setup->config;
    t->log = setup->log;
    t->stop = setup->stop;
    t->events = setup->events;
    t->folder.checkpoint_iteration = -1;
    t->folder.image_iteration = -1;
    t->metrics.latest.loss[GAN_NET_CRITIC] = t->metrics.latest.loss[GAN_NET_GENERATOR] = NAN;
    t->metrics.latest.norm[GAN_NET_CRITIC] = t->metrics.latest.norm[GAN_NET_GENERATOR] = NAN;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        for (int k = 0; k < GAN_TRAINER_MAX_METRICS; k++)
            t->metrics.latest.metric[i][k] = NAN;
    clock_gettime(CLOCK_MONOTONIC, &t->t0);
    t->folder.restart = setup->resume_dir && setup->restart;
    /* Data parallel first: the run folder's set-up asks whether this rank leads. */
    gan_status st = gan_dp_open(setup->comm, t->log, &t->dp, err);
    /* The run folder's refusals come next: they need nothing built. */
    if (st == GAN_OK)
        st = gan_trainer_claim_run_dir(t, setup->resume_dir, err);
    if (st == GAN_OK)
        st = gan_session_open(t->cfg, setup->loader, t->log, &t->s, err);
    if (st == GAN_OK)
        read_settings(&t->set, t->cfg);
    if (st == GAN_OK && t->dp)
        st = gan_dp_set_up(t->dp, t->s, t->cfg, err);
    if (st == GAN_OK)
        st = gan_batch_open(&t->batch, t->s, err);
    if (st == GAN_OK)
        st = gan_trainer_set_up_eval(t, err);
    if (st == GAN_OK)
        st = gan_session_set_precision(t->s, err);
    if (st == GAN_OK)
        st = trial_step_keeping_fp8(t, err);
    if (st == GAN_OK)
        st = gan_trainer_make_columns(t, err);
    /* The run folder (outputs.c), every check before its first change. */
    int64_t resume_after = -1;
    if (st == GAN_OK)
        st = gan_trainer_create_run_dir(t, err);
    if (st == GAN_OK)
        st = gan_trainer_resume(t, &resume_after, err);
    if (st == GAN_OK)
        st = gan_trainer_check_tables(t, resume_after, err);
    if (st == GAN_OK)
        st = gan_trainer_write_run_config(t, err);
    if (st == GAN_OK)
        st = gan_trainer_write_real_grid(t, err);
    if (st == GAN_OK)
        st = gan_trainer_open_tables(t, resume_after, err);
    if (st == GAN_OK)
        st = gan_trainer_dp_check_weights(t, err);
    if (st != GAN_OK) {
        gan_trainer_free(t);
        return st;
    }
    t->start_iteration = t->iteration;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_log_write(t->log, GAN_LOG_INFO, "%s: %s (%lld parameters)", gan_net_role_names[i],
                      t->s->model[i].description, (long long)gan_net_total(t->s->net[i]));
    if (t->s->set.precision != GAN_F32) {
        const char *const *patterns;
        size_t n = 0;
        if (gan_config_get_strings(t->cfg, "precision.fp32", &patterns, &n) != GAN_OK)
            n = 0;
        char clamp[64] = "";
        if (t->s->set.clamp > 0)
            snprintf(clamp, sizeof clamp, ", products and convolutions clamped to +-%g", t->s->set.clamp);
        gan_log_write(t->log, GAN_LOG_INFO, "precision: %s %s, FP32 master weights%s%zu FP32 scope pattern%s%s",
                      t->s->set.precision == GAN_F16 ? "fp16" : "bf16",
                      t->s->set.level == GAN_PRECISION_O1 ? "O1" : "O2", ", ", n, n == 1 ? "" : "s", clamp);
    } else if (t->s->set.clamp > 0) {
        gan_log_write(t->log, GAN_LOG_INFO, "precision.clamp = %g is ignored: this run computes in FP32, where nothing is clamped",
                      t->s->set.clamp);
    }
    for (int i = GAN_NET_CRITIC; i >= 0; i--)
        gan_log_write(t->log, GAN_LOG_INFO, "%s loss scaler: %s", gan_net_role_names[i],
                      t->s->amp[i].description);
    *out = t;
    return GAN_OK;
}

void gan_trainer_free(gan_trainer *t)
{
    if (!t)
        return;
    gan_metrics_free(&t->metrics);
    gan_shadow_free(&t->shadow);
    gan_evaluator_free(t->eval.evaluator);
    /* The metrics' classifier runs on the backend: the batch's image run goes first. */
    gan_batch_free(&t->batch);
    gan_dp_free(t->dp, t->s ? gan_trainer_session_s(t) : 0.0);
    gan_session_free(t->s);
    free(t->eval.real_images);
    /* Last: until here the process may still write into the folder. */
    gan_run_folder_free(&t->folder);
    free(t);
}

/* ------------------------------------------------------------------ the loop */

static int due(int64_t iteration, int64_t every)
{
    return every > 0 && iteration % every == 0;
}

/* Whether completing iteration `it` writes a metrics row: a logged, evaluated or
 * pictured iteration, and the last. */
static int row_at(const gan_trainer *t, int64_t it)
{
    return due(it, t->set.log_every) || due(it, t->set.eval_every) || due(it, t->set.image_every) ||
           it == t->set.iterations;
}

static void report_progress(gan_trainer *t, int final)
{
    if (!t->events.progress)
        return;
    struct gan_progress p;
    gan_trainer_fill_progress(t, &p);
    t->events.progress(t->events.ctx, &p, final);
}

/* `stalled`: ended early by run.diverged_window, t->divergence says why. */
static gan_status finish(gan_trainer *t, int interrupted, int stalled,
                         struct gan_trainer_result *r, struct gan_error *err)
{
    gan_status st = GAN_OK;
    int complete = !stalled && t->iteration >= t->set.iterations;
    if (!interrupted && complete) {
        st = gan_trainer_evaluate(t, err);
        if (st == GAN_OK)
            st = gan_trainer_picture(t, GAN_RUN_FINAL_IMAGE, err);
        if (st == GAN_OK)
            st = gan_metrics_events_final_image(&t->metrics, &t->folder, t->iteration, err);
        gan_divergence_judge(&t->divergence_watch, t->s, t->cfg, t->metrics.latest.loss,
                             t->set.diverged_skip_fraction, t->iteration, &t->divergence);
    }
    /* A run stopped by a signal, or for good, is often one its user wants to look at. */
    if (st == GAN_OK && (interrupted || stalled))
        st = gan_trainer_draw_curves(t, err);
    int diverged = t->divergence.reason != GAN_DIVERGED_NOT;
    /* A stalled run's weights are what no step could train from: the checkpoint keeps
     * the last state that trained. */
    if (st == GAN_OK && !stalled && t->folder.checkpoint_iteration != t->iteration)
        st = gan_trainer_save_checkpoint(t, err);
    if (st == GAN_OK)
        st = gan_trainer_write_summary(t, interrupted ? "interrupted"
                                          : diverged ? "diverged" : "completed", err);
    if (st == GAN_OK)
        report_progress(t, 1);
    memset(r, 0, sizeof *r);
    r->interrupted = interrupted;
    r->iterations = t->iteration;
    r->planned = t->set.iterations;
    r->session_s = gan_trainer_session_s(t);
    r->wall_time_s = t->elapsed_before + r->session_s;
    int64_t done = t->iteration - t->start_iteration;
    r->it_per_s = done > 0 && r->session_s > 0 ? (double)done / r->session_s : 0.0;
    r->run_dir = t->folder.run_dir;
    r->data = t->s->set.data_name;
    r->has_quality = t->eval.has_quality;
    r->quality_iteration = t->eval.quality_iteration;
    r->quality = t->eval.quality;
    r->floor = t->eval.floor;
    r->quality_samples = GAN_EVAL_SAMPLES;
    if (t->batch.images) {
        r->quality_samples = gan_image_run_eval_samples(t->batch.images);
        r->quality_values = t->eval.quality_values;
        r->floor_values = t->eval.floor_values;
        r->quality_count = gan_image_run_has_frechet(t->batch.images) ? 2 : 1;
    }
    r->diverged = diverged;
    r->divergence = diverged ? t->divergence.message : NULL;
    return st;
}

gan_status gan_trainer_run(gan_trainer *t, struct gan_trainer_result *result,
                           struct gan_error *err)
{
    clock_gettime(CLOCK_MONOTONIC, &t->t0);
    t->start_iteration = t->iteration;
    gan_divergence_begin(&t->divergence_watch, t->s, t->iteration);
    gan_status st = GAN_OK;
    int interrupted = 0, stalled = 0;
    while (t->iteration < t->set.iterations) {
        int stop_here = t->stop && *t->stop;
        if (t->dp ? gan_dp_stop(t->dp, stop_here) : stop_here) {
            interrupted = 1;
            break;
        }
        /* The learning rates of this iteration: linear decay (the WGAN-GP code's
         * schedule for CIFAR-10) goes from lr at iteration 0 to 0 at run.iterations. */
        for (int i = 0; i < GAN_NET_ROLES; i++)
            gan_optimizer_set_lr_scale(t->s->opt[i], t->set.lr_decay[i]
                ? 1.0 - (double)t->iteration / (double)t->set.iterations : 1.0);
        /* The paper's toy code: the generator first (not on the very first iteration), then
         * n_critic critic steps, each on a fresh real batch. */
        /* Debug level 2 compares each network's last step before a metrics row. */
        int probe = t->shadow.probe[GAN_NET_GENERATOR] && row_at(t, t->iteration + 1);
        /* ... and logs its FP8 casts in the same iteration. */
        gan_amp_fp8_log_now(&t->s->fp8, row_at(t, t->iteration + 1));
        t->shadow.due = probe;
        if (t->iteration > 0 && (st = gan_trainer_generator_step(t, err)) != GAN_OK)
            return st;
        for (int64_t c = 0; c < t->s->set.n_critic; c++) {
            t->shadow.due = probe && c == t->s->set.n_critic - 1;
            if ((st = gan_trainer_critic_step(t, c, err)) != GAN_OK)
                return st;
        }
        t->shadow.due = 0;
        t->iteration++;
        /* No step can apply again: ending now saves the rest of the run's time. */
        if (gan_divergence_stalled(&t->divergence_watch, t->s, t->cfg, t->metrics.latest.loss,
                                   t->set.diverged_window, t->iteration,
                                   t->folder.checkpoint_iteration, &t->divergence)) {
            stalled = 1;
            if ((st = gan_trainer_write_row(t, err)) != GAN_OK)
                return st;
            break;
        }
        int final = t->iteration == t->set.iterations;
        int eval = due(t->iteration, t->set.eval_every) || final;
        int image = due(t->iteration, t->set.image_every);
        if (eval && (st = gan_trainer_evaluate(t, err)) != GAN_OK)
            return st;
        /* The divergence verdict judges the interval since the last evaluation. */
        if (eval && !final)
            gan_divergence_mark(&t->divergence_watch, t->iteration);
        if (image) {
            char name[64];
            snprintf(name, sizeof name, "samples-%06lld.png", (long long)t->iteration);
            if ((st = gan_trainer_picture(t, name, err)) != GAN_OK)
                return st;
        }
        int logged = row_at(t, t->iteration);
        if (logged && (st = gan_trainer_write_row(t, err)) != GAN_OK)
            return st;
        if (due(t->iteration, t->set.checkpoint_every) && (st = gan_trainer_save_checkpoint(t, err)) != GAN_OK)
            return st;
        if (logged && !final)
            report_progress(t, 0);
    }
    if (!stalled && t->stop && *t->stop && t->iteration < t->set.iterations)
        interrupted = 1;
    return finish(t, interrupted, stalled, result, err);
}

/* ------------------------------------------------------------------ queries */

gan_status gan_trainer_set_up_probes(gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    return gan_shadow_open(&t->shadow, t->s, t->set.debug_level, t->folder.run_dir, resume_after,
                           t->log, err);
}

gan_status gan_trainer_write_underflow(gan_trainer *t, struct gan_error *err)
{
    return gan_shadow_write(&t->shadow, t->iteration, t->log, err);
}

int gan_trainer_dp_leader(const gan_trainer *t)
{
    return gan_dp_rank(t->dp) == 0;
}

gan_status gan_trainer_dp_check_weights(gan_trainer *t, struct gan_error *err)
{
    return t->dp ? gan_dp_check_weights(t->dp, t->s, t->iteration, err) : GAN_OK;
}

int gan_trainer_ranks(const gan_trainer *t)
{
    return gan_dp_size(t->dp);
}

int gan_trainer_rank(const gan_trainer *t)
{
    return gan_dp_rank(t->dp);
}

gan_ctx *gan_trainer_ctx(const gan_trainer *t)
{
    return t->s->ctx;
}

int gan_trainer_resumed(const gan_trainer *t)
{
    return t->folder.resumed;
}

gan_net *gan_trainer_net(const gan_trainer *t, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? t->s->net[GAN_NET_GENERATOR]
         : role == GAN_MODEL_CRITIC ? t->s->net[GAN_NET_CRITIC] : NULL;
}

const char *gan_trainer_run_dir(const gan_trainer *t)
{
    return t->folder.run_dir;
}

int64_t gan_trainer_iteration(const gan_trainer *t)
{
    return t->iteration;
}

const char *gan_trainer_backend_description(const gan_trainer *t)
{
    return gan_backend_instance_describe(t->s->backend);
}

size_t gan_trainer_column_count(const gan_trainer *t)
{
    return t->metrics.n_columns;
}

const char *gan_trainer_column(const gan_trainer *t, size_t index)
{
    return index < t->metrics.n_columns ? t->metrics.columns[index] : NULL;
}
