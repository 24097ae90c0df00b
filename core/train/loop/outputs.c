/* SPDX-License-Identifier: MIT */
/* outputs.c — what the loop hands run/'s parts: the metrics sink (run/metrics.h) and the
 * run folder (run/folder.h) get the other parts' values here, a few lines a function. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "train/loop/trainer_internal.h"

/* Where the run stands now. */
static struct gan_run_clock clock_now(const gan_trainer *t)
{
    return (struct gan_run_clock){
        .iteration = t->iteration, .planned = t->set.iterations,
        .start_iteration = t->start_iteration, .session_s = gan_trainer_session_s(t),
        .elapsed_before = t->elapsed_before,
    };
}

/* The evaluation part's last quality, as the sink shows it. */
static struct gan_run_quality quality_now(const gan_trainer *t)
{
    struct gan_run_quality q = {
        .has = t->eval.has_quality, .iteration = t->eval.quality_iteration,
        .samples = GAN_EVAL_SAMPLES, .toy = t->eval.quality, .toy_floor = t->eval.floor,
    };
    if (t->batch.images) {
        q.samples = gan_image_run_eval_samples(t->batch.images);
        q.values = t->eval.quality_values;
        q.floor_values = t->eval.floor_values;
        q.count = gan_image_run_has_frechet(t->batch.images) ? 2 : 1;
    }
    return q;
}

/* A run that is neither resumed nor restarted: its folder is made here. */
static int new_run(const gan_trainer *t)
{
    return !t->folder.resumed && !t->folder.restart;
}

gan_status gan_trainer_make_columns(gan_trainer *t, struct gan_error *err)
{
    struct gan_metrics_layout layout = {
        .time = t->set.metrics_time, .image = t->s->set.is_image,
        .frechet = t->batch.images && gan_image_run_has_frechet(t->batch.images),
        .modes = gan_evaluator_modes(t->eval.evaluator)->count != 0,
        .fp8 = t->s->set.fp8.on,
    };
    t->metrics.latest.fp8_scale_min = t->metrics.latest.fp8_scale_max = NAN;
    return gan_metrics_make_columns(&t->metrics, &layout, err);
}

/* ------------------------------------------------------------------ the run folder */

gan_status gan_trainer_claim_run_dir(gan_trainer *t, const char *resume_dir,
                                     struct gan_error *err)
{
    t->folder.resumed = resume_dir && !t->folder.restart;
    if (!resume_dir)
        return gan_run_folder_refuse_id(t->cfg, err);
    gan_status st = gan_run_folder_name(&t->folder, resume_dir, err);
    /* Data parallel: the other ranks only read the folder rank 0 locks and checks. */
    return st == GAN_OK && gan_trainer_dp_leader(t) ? gan_run_folder_claim(&t->folder, t->log, err)
                                                    : st;
}

gan_status gan_trainer_create_run_dir(gan_trainer *t, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t) || !new_run(t))
        return GAN_OK;
    return gan_run_folder_create(&t->folder, t->cfg, t->s->set.data_name, err);
}

/* The last value of every reported column, into the checkpoint: a lazy term's rows
 * between its steps show it (checkpoint.h). */
static void keep_reported_values(const struct gan_metrics_sink *m, struct gan_checkpoint_state *state)
{
    for (int role = 0; role < GAN_NET_ROLES; role++)
        for (size_t k = 0; k < m->n_metrics[role] && state->n_reported < GAN_CHECKPOINT_MAX_REPORTED; k++) {
            struct gan_checkpoint_reported *r = &state->reported[state->n_reported++];
            snprintf(r->name, sizeof r->name, "%s", m->metric_names[role][k]);
            r->value = m->latest.metric[role][k];
        }
}

/* ...and back, for the columns this run has. */
static void restore_reported_values(struct gan_metrics_sink *m, const struct gan_checkpoint_state *state)
{
    for (size_t i = 0; i < state->n_reported; i++)
        for (int role = 0; role < GAN_NET_ROLES; role++)
            for (size_t k = 0; k < m->n_metrics[role]; k++)
                if (strcmp(m->metric_names[role][k], state->reported[i].name) == 0)
                    m->latest.metric[role][k] = state->reported[i].value;
}

/* Every rank loads the checkpoint; its sampler and counters go where it left off. */
gan_status gan_trainer_resume(gan_trainer *t, int64_t *resume_after, struct gan_error *err)
{
    struct gan_checkpoint_state state;
    *resume_after = -1;
    if (!t->folder.resumed)
        return GAN_OK;
    gan_status st = gan_run_folder_load_checkpoint(&t->folder, t->s, t->batch.images != NULL,
                                                   &state, err);
    if (st == GAN_OK) {
        st = t->batch.images ? gan_image_run_seek(t->batch.images, state.image, err)
                             : gan_toy_sampler_set_state(t->batch.sampler, &state.data, err);
        /* The samplers know their data, not the file the position came from. */
        if (st != GAN_OK) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            return gan_error_set(err, st, "%s: %s", t->folder.checkpoint_path, why);
        }
    }
    if (st != GAN_OK)
        return st;
    restore_reported_values(&t->metrics, &state);
    t->iteration = state.iteration;
    t->batch.z_offset = state.z_offset;
    t->batch.loss_offset = state.loss_offset;
    t->elapsed_before = state.elapsed_s;
    *resume_after = state.iteration;
    return GAN_OK;
}

gan_status gan_trainer_check_tables(gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t) || !t->folder.resumed)
        return GAN_OK;
    return gan_metrics_check_tables(&t->metrics, t->folder.run_dir, t->set.debug_level >= 1,
                                    t->set.debug_level >= 2 && t->s->set.precision != GAN_F32,
                                    resume_after, err);
}

gan_status gan_trainer_write_run_config(gan_trainer *t, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    /* Checked and locked: from here on the folder changes. */
    gan_run_remove_leftovers(t->folder.run_dir, t->log);
    gan_status st = new_run(t) ? gan_run_folder_name_run(t->cfg, err) : GAN_OK;
    return st == GAN_OK ? gan_run_folder_write_config(&t->folder, t->cfg, err) : st;
}

gan_status gan_trainer_write_real_grid(gan_trainer *t, struct gan_error *err)
{
    /* Once per run: a resumed run's is there. */
    if (!gan_trainer_dp_leader(t) || !t->batch.images || t->folder.resumed)
        return GAN_OK;
    return gan_run_folder_write_real_grid(&t->folder, t->batch.images, t->eval.eval_real,
                                          t->s->set.is_folder, err);
}

gan_status gan_trainer_open_tables(gan_trainer *t, int64_t resume_after, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    int tensorboard = 0;
    gan_config_get_bool(t->cfg, "run.tensorboard", &tensorboard);
    gan_status st = gan_metrics_open(&t->metrics, t->folder.run_dir, tensorboard,
                                     t->set.debug_level >= 1, resume_after, t->log, err);
    if (st != GAN_OK || t->set.debug_level < 1)
        return st;
    return gan_trainer_set_up_probes(t, resume_after, err);
}

/* ------------------------------------------------------------------ rows, checkpoints */

gan_status gan_trainer_write_row(gan_trainer *t, struct gan_error *err)
{
    /* Data parallel: rank 0 writes the run folder (data_parallel.c). */
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    struct gan_run_clock c = clock_now(t);
    struct gan_run_quality q = quality_now(t);
    double true_underflow[GAN_NET_ROLES];
    for (int i = 0; i < GAN_NET_ROLES; i++)
        true_underflow[i] = gan_probe_param_fraction(t->shadow.probe[i]);
    struct gan_fp8_totals fp8;
    gan_ctx_fp8_totals(t->s->ctx, &fp8, 1);
    gan_status st = gan_metrics_write_row(&t->metrics, t->folder.run_dir, &c, t->s->amp,
                                          true_underflow, &fp8, &q, t->log, err);
    if (st == GAN_OK && t->shadow.csv)
        st = gan_trainer_write_underflow(t, err);
    /* The next row counts from here. */
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
    gan_status st = gan_trainer_dp_check_weights(t, err);
    if (st != GAN_OK)
        return st;
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
    keep_reported_values(&t->metrics, &state);
    /* The rows the checkpoint follows are on disk before it. */
    st = gan_metrics_sync(&t->metrics, err);
    return st == GAN_OK ? gan_run_folder_save_checkpoint(&t->folder, t->s, &state, t->log, err)
                        : st;
}

gan_status gan_trainer_draw_curves(gan_trainer *t, struct gan_error *err)
{
    return gan_trainer_dp_leader(t) ? gan_metrics_draw_curves(t->folder.run_dir, err) : GAN_OK;
}

void gan_trainer_fill_progress(const gan_trainer *t, struct gan_progress *p)
{
    struct gan_run_clock c = clock_now(t);
    struct gan_run_quality q = quality_now(t);
    gan_metrics_fill_progress(&t->metrics, &c, t->s->amp, &q, p);
}

gan_status gan_trainer_write_summary(gan_trainer *t, const char *status, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    const struct gan_divergence *d = &t->divergence;
    struct gan_run_divergence why = {
        gan_net_role_names[d->net], gan_divergence_reason_name(d->reason), d->message,
        d->skipped, d->steps, d->since_iteration, d->loss, d->scale,
    };
    struct gan_run_outcome o = { status, gan_trainer_ranks(t), d->reason != GAN_DIVERGED_NOT ? &why : NULL };
    struct gan_run_clock c = clock_now(t);
    struct gan_run_quality q = quality_now(t);
    return gan_metrics_write_summary(&t->metrics, &t->folder, t->s, t->cfg, &c, &q, &o, err);
}
