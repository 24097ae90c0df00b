/* SPDX-License-Identifier: MIT */
/* folder.h — the run folder as a part of the trainer: its path, lock, checkpoint and
 * what the run has written to it. */
#ifndef GANCTL_TRAIN_RUN_FOLDER_H
#define GANCTL_TRAIN_RUN_FOLDER_H

#include <stdint.h>

#include "train/run/run_guard.h"

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

#endif
