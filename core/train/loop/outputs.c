/* SPDX-License-Identifier: MIT */
/* outputs.c — what the loop hands the metrics sink (run/metrics.h), a few lines a
 * function; and the run folder with config.conf and checkpoints. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

gan_status gan_trainer_make_columns(gan_trainer *t, struct gan_error *err)
{
    struct gan_metrics_layout layout = {
        .time = t->set.metrics_time, .image = t->s->set.is_image,
        .frechet = t->batch.images && gan_image_run_has_frechet(t->batch.images),
        .modes = t->eval.modes.count != 0,
    };
    return gan_metrics_make_columns(&t->metrics, &layout, err);
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
    gan_status st = gan_metrics_write_row(&t->metrics, t->folder.run_dir, &c, t->s->amp,
                                          true_underflow, &q, t->log, err);
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
    /* The rows the checkpoint follows are on disk before it. */
    state.config_text = t->folder.config_text;
    st = gan_metrics_sync(&t->metrics, err);
    if (st == GAN_OK)
        st = gan_session_save_checkpoint(t->s, t->folder.checkpoint_path, &state, err);
    if (st == GAN_OK) {
        t->folder.checkpoint_iteration = t->iteration;
        gan_log_write(t->log, GAN_LOG_DEBUG, "checkpoint at iteration %lld: %s",
                      (long long)t->iteration, t->folder.checkpoint_path);
    }
    return st;
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
    struct gan_run_outcome o = { status, t->dp.size, d->reason != GAN_DIVERGED_NOT ? &why : NULL };
    struct gan_run_clock c = clock_now(t);
    struct gan_run_quality q = quality_now(t);
    return gan_metrics_write_summary(&t->metrics, &t->folder, t->s, t->cfg, &c, &q, &o, err);
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
    if (t->folder.resumed &&
        (st = gan_metrics_check_tables(&t->metrics, t->folder.run_dir, t->set.debug_level >= 1,
                                       t->set.debug_level >= 2 && t->s->set.precision != GAN_F32,
                                       resume_after, err)) != GAN_OK)
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
    int tensorboard = 0;
    gan_config_get_bool(t->cfg, "run.tensorboard", &tensorboard);
    st = gan_metrics_open(&t->metrics, t->folder.run_dir, tensorboard, t->set.debug_level >= 1,
                          resume_after, t->log, err);
    if (st != GAN_OK || t->set.debug_level < 1)
        return st;
    return gan_trainer_set_up_probes(t, resume_after, err);
}
