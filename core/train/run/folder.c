/* SPDX-License-Identifier: MIT */
/* folder.c — the run folder as a part of the trainer: a new run's made, a resumed run's
 * named, locked and checked, config.conf, real.png, and the checkpoint written into it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/run/folder.h"

static gan_status nomem(struct gan_error *err)
{
    return gan_error_nomem(err, "setting up training");
}

gan_status gan_run_folder_refuse_id(const gan_config *cfg, struct gan_error *err)
{
    /* The id names one run: a configuration copied from another run's folder carries
     * that run's. */
    const struct gan_config_value *v = gan_config_find(cfg, GAN_RUN_ID_KEY);
    if (v)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: run.id is set by ganctl when it creates a run, never by hand: remove it (a copied config.conf carries its run's id), or continue that run with ganctl --resume and its folder",
                             v->origin);
    return GAN_OK;
}

gan_status gan_run_folder_name(struct gan_run_folder *f, const char *resume_dir,
                               struct gan_error *err)
{
    /* The files are named from the folder: no trailing slashes. */
    size_t n = strlen(resume_dir);
    while (n > 1 && resume_dir[n - 1] == '/')
        n--;
    if (!(f->run_dir = malloc(n + 1)))
        return nomem(err);
    memcpy(f->run_dir, resume_dir, n);
    f->run_dir[n] = '\0';
    if (!(f->checkpoint_path = gan_run_path(f->run_dir, GAN_RUN_CHECKPOINT)))
        return nomem(err);
    return GAN_OK;
}

/* Reads a checkpoint's configuration text (`label` names it in messages) or, with text
 * NULL, the run folder's file `label`, into a new configuration: as data, includes refused. */
static gan_status read_config(const char *text, const char *label, gan_config **out,
                              struct gan_error *err)
{
    gan_status st = gan_config_new(out, err);
    if (st == GAN_OK)
        st = text ? gan_config_read_string(*out, text, label, GAN_CONFIG_CHECKPOINT, err)
                  : gan_config_read_file(*out, label, GAN_CONFIG_RUN_FOLDER, err);
    if (st != GAN_OK) {
        gan_config_free(*out);
        *out = NULL;
    }
    return st;
}

/* The checkpoint against the folder's config.conf: the same run (run.id), data set and
 * network shapes. A checkpoint copied in from another run would otherwise continue in
 * this folder, its rows appended to this run's metrics.csv. */
static gan_status check_checkpoint_identity(const struct gan_run_folder *f,
                                            const char *conf_path, const struct gan_log *log,
                                            struct gan_error *err)
{
    char *text = NULL;
    gan_config *folder = NULL, *saved = NULL;
    gan_status st = gan_checkpoint_read_config(f->checkpoint_path, &text, err);
    char *label = st == GAN_OK ? malloc(strlen(f->checkpoint_path) + 32) : NULL;
    if (st == GAN_OK && !label)
        st = nomem(err);
    if (st == GAN_OK) {
        sprintf(label, "%s (saved configuration)", f->checkpoint_path);
        st = read_config(text, label, &saved, err);
    }
    if (st == GAN_OK)
        st = read_config(NULL, conf_path, &folder, err);
    if (st == GAN_OK)
        st = gan_run_check_identity(folder, conf_path, saved, f->checkpoint_path, err);
    if (st == GAN_OK && !gan_config_find(folder, GAN_RUN_ID_KEY))
        gan_log_write(log, GAN_LOG_INFO,
                      "%s was made before ganctl gave each run an id (run.id): its checkpoint is checked by data set and network shapes only",
                      f->run_dir);
    gan_config_free(folder);
    gan_config_free(saved);
    free(label);
    free(text);
    return st;
}

gan_status gan_run_folder_claim(struct gan_run_folder *f, const struct gan_log *log,
                                struct gan_error *err)
{
    /* Locked before anything in it is read: what is checked then stays as checked. */
    gan_status st = gan_run_lock_take(f->run_dir, &f->lock, err);
    if (st != GAN_OK)
        return st;
    char *conf_path = gan_run_path(f->run_dir, GAN_RUN_CONFIG);
    if (!conf_path)
        return nomem(err);
    int has_conf = access(conf_path, F_OK) == 0;
    if (f->restart) {
        if (access(f->checkpoint_path, F_OK) == 0)
            st = gan_error_set(err, GAN_ERR_IO,
                               "%s was written while ganctl read %s: resume again to continue from it",
                               f->checkpoint_path, conf_path);
        else if (!has_conf)
            st = gan_error_set(err, GAN_ERR_NOT_FOUND,
                               "%s: no checkpoint and no config.conf: the folder holds no run to resume; start a new run with run.dir=%s",
                               f->run_dir, f->run_dir);
        else
            gan_log_write(log, GAN_LOG_INFO,
                          "%s holds the configuration of a run that stopped before its first checkpoint: nothing was saved, so the run starts again from iteration 0",
                          f->run_dir);
    } else if (!has_conf) {
        gan_log_write(log, GAN_LOG_WARN,
                      "%s is missing: the checkpoint cannot be checked against the run's configuration, and the run continues with the checkpoint's own",
                      conf_path);
    } else {
        st = check_checkpoint_identity(f, conf_path, log, err);
    }
    free(conf_path);
    return st;
}

gan_status gan_run_folder_create(struct gan_run_folder *f, gan_config *cfg,
                                 const char *data_name, struct gan_error *err)
{
    gan_status st;
    const char *dir = "";
    gan_config_get_string(cfg, "run.dir", &dir);
    const struct gan_config_value *v = gan_config_find(cfg, "run.dir");
    if ((st = gan_run_dir_create(dir, v ? v->origin : "run.dir", data_name, &f->run_dir,
                                 &f->lock, err)) != GAN_OK)
        return st;
    if (!(f->checkpoint_path = gan_run_path(f->run_dir, GAN_RUN_CHECKPOINT)))
        return nomem(err);
    return gan_config_set_string(cfg, "run.dir", f->run_dir, v ? v->origin : "default", err);
}

gan_status gan_run_folder_load_checkpoint(struct gan_run_folder *f, gan_session *s, int image,
                                          struct gan_checkpoint_state *state,
                                          struct gan_error *err)
{
    gan_status st = gan_session_load_checkpoint(s, f->checkpoint_path, state, err);
    if (st != GAN_OK)
        return st;
    /* A checkpoint that disagrees with its configuration is damaged or another run's. */
    if (state->seed != s->set.seed)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint was written with seed %llu but its configuration says run.seed = %llu: the file is damaged",
                             f->checkpoint_path, (unsigned long long)state->seed,
                             (unsigned long long)s->set.seed);
    if (state->has_image != (image != 0))
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint holds the position of %s sampler, but the run's data.name is \"%s\": the file belongs to another run",
                             f->checkpoint_path, state->has_image ? "an image" : "a toy",
                             s->set.data_name);
    f->checkpoint_iteration = state->iteration;
    return GAN_OK;
}

gan_status gan_run_folder_name_run(gan_config *cfg, struct gan_error *err)
{
    char id[GAN_RUN_ID_SIZE];
    gan_status st = gan_run_id_make(id, err);
    return st == GAN_OK ? gan_config_set_string(cfg, GAN_RUN_ID_KEY, id,
                                                "made by ganctl for this run", err)
                        : st;
}

gan_status gan_run_folder_write_config(struct gan_run_folder *f, const gan_config *cfg,
                                       struct gan_error *err)
{
    /* Every setting with its origin under a head that says how to repeat the run. */
    char *text = gan_config_to_text(cfg, 1);
    f->config_text = gan_config_to_text(cfg, 0);
    if (!text || !f->config_text) {
        free(text);
        return nomem(err);
    }
    static const char head[] =
        "# config.conf - the configuration of this run, every setting with where it came from.\n"
        "# ganctl -c config.conf repeats the run: set run.dir to a new folder and delete\n"
        "# run.id first (ganctl gives each run its own); ganctl --resume continues this one.\n";
    char *full = malloc(strlen(head) + strlen(text) + 1);
    if (!full) {
        free(text);
        return nomem(err);
    }
    strcpy(full, head);
    strcat(full, text);
    free(text);
    gan_status st = gan_run_write_text(f->run_dir, GAN_RUN_CONFIG, full, err);
    free(full);
    return st;
}

gan_status gan_run_folder_write_real_grid(const struct gan_run_folder *f,
                                          const gan_image_run *images, const float *eval_real,
                                          int is_folder, struct gan_error *err)
{
    char *real = gan_run_path(f->run_dir, GAN_IMAGE_REAL_GRID);
    const char *title = is_folder ? "held-out images of the image folder"
                                  : "fashion-mnist test images 1 to 64";
    /* Each held-out image once: a small folder's fill only the first cells. */
    size_t shown = gan_image_run_held_out(images);
    if (shown > GAN_IMAGE_GRID_COUNT)
        shown = GAN_IMAGE_GRID_COUNT;
    gan_status st = real ? gan_image_run_write_grid_sized(real, eval_real, shown,
                                                          gan_image_run_channels(images),
                                                          gan_image_run_side(images), title, err)
                         : nomem(err);
    free(real);
    return st;
}

gan_status gan_run_folder_save_checkpoint(struct gan_run_folder *f, gan_session *s,
                                          struct gan_checkpoint_state *state,
                                          const struct gan_log *log, struct gan_error *err)
{
    state->config_text = f->config_text;
    gan_status st = gan_session_save_checkpoint(s, f->checkpoint_path, state, err);
    if (st == GAN_OK) {
        f->checkpoint_iteration = state->iteration;
        gan_log_write(log, GAN_LOG_DEBUG, "checkpoint at iteration %lld: %s",
                      (long long)state->iteration, f->checkpoint_path);
    }
    return st;
}

void gan_run_folder_free(struct gan_run_folder *f)
{
    free(f->run_dir);
    free(f->checkpoint_path);
    free(f->config_text);
    f->run_dir = f->checkpoint_path = f->config_text = NULL;
    /* Last: until here the process may still write into the folder. */
    gan_run_lock_release(f->lock);
    f->lock = NULL;
}
