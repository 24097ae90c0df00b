/* SPDX-License-Identifier: MIT */
/* folder.h — the run folder as a part of the trainer: claimed (named, locked, checked)
 * before the session is built, set up job by job, and the checkpoint written into it. */
#ifndef GANCTL_TRAIN_RUN_FOLDER_H
#define GANCTL_TRAIN_RUN_FOLDER_H

#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"
#include "train/run/run_dir.h"
#include "train/run/run_guard.h"
#include "train/state/state.h"

/* The run folder and what the run has written to it. */
struct gan_run_folder {
    char *run_dir;
    gan_run_lock *lock;           /* the run folder's, held from its set-up to the end */
    int restart;                  /* resuming a folder without a checkpoint: from 0 */
    int resumed;                  /* continuing from the folder's checkpoint */
    char *checkpoint_path;
    char *config_text;            /* for checkpoints */
    int64_t checkpoint_iteration; /* of the last checkpoint written; -1 none */
    int64_t image_iteration;
};

/* A new run's configuration must hold no run.id: ganctl gives each run its own. */
gan_status gan_run_folder_refuse_id(const gan_config *cfg, struct gan_error *err);

/* f->run_dir and f->checkpoint_path for a resumed run: its folder as named, less
 * trailing slashes. Every rank names it; only the one that writes claims it. */
gan_status gan_run_folder_name(struct gan_run_folder *f, const char *resume_dir,
                               struct gan_error *err);

/* A resumed run's folder, named: locked before anything in it is read, then its
 * checkpoint checked against its config.conf (or, restarting, that it has none). */
gan_status gan_run_folder_claim(struct gan_run_folder *f, const struct gan_log *log,
                                struct gan_error *err);

/* A new run's folder, made from run.dir and locked; cfg's run.dir then names the
 * folder made, for config.conf. */
gan_status gan_run_folder_create(struct gan_run_folder *f, gan_config *cfg,
                                 const char *data_name, struct gan_error *err);

/* A resumed run's checkpoint loaded into the session and checked against the run's
 * configuration: its seed, and whether it holds the position of an image sampler
 * (`image`) or a toy's. *state then says where the run left off, for the caller to put
 * its sampler and counters there. */
gan_status gan_run_folder_load_checkpoint(struct gan_run_folder *f, gan_session *s, int image,
                                          struct gan_checkpoint_state *state,
                                          struct gan_error *err);

/* A new run's identity (run.id) into its configuration: config.conf, every checkpoint
 * and summary.json then name it. */
gan_status gan_run_folder_name_run(gan_config *cfg, struct gan_error *err);

/* config.conf; f->config_text, the same settings without origins, goes into each
 * checkpoint's metadata. */
gan_status gan_run_folder_write_config(struct gan_run_folder *f, const gan_config *cfg,
                                       struct gan_error *err);

/* real.png: an image run's held-out images (eval_real), each once, beside which its
 * grids are judged. `is_folder`: an image folder's, not Fashion-MNIST's. */
gan_status gan_run_folder_write_real_grid(const struct gan_run_folder *f,
                                          const gan_image_run *images, const float *eval_real,
                                          int is_folder, struct gan_error *err);

/* The checkpoint: the session's networks with `state` (its config_text is the folder's),
 * then f->checkpoint_iteration. */
gan_status gan_run_folder_save_checkpoint(struct gan_run_folder *f, gan_session *s,
                                          struct gan_checkpoint_state *state,
                                          const struct gan_log *log, struct gan_error *err);

/* Frees the names and releases the lock: the last thing a run does to its folder. */
void gan_run_folder_free(struct gan_run_folder *f);

#endif
