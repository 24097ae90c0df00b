/* SPDX-License-Identifier: MIT */
/* run_guard.h — what keeps a run folder to one run: the lock a training process holds
 * on it, the run's identity (run.id) and its check against a checkpoint, and the
 * removal of the temporary files a killed ganctl left behind. */
#ifndef GANCTL_CORE_RUN_GUARD_H
#define GANCTL_CORE_RUN_GUARD_H

#include <stddef.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "base/log.h"
#include "config/configuration.h"

/* The lock file in a run folder: it holds the pid of the process training there. */
#define GAN_RUN_LOCK ".lock"
/* The setting that names a run; ganctl sets it when it creates the run. */
#define GAN_RUN_ID_KEY "run.id"
/* A run id: 32 lower-case hex digits (128 random bits) and the terminating NUL. */
#define GAN_RUN_ID_SIZE 33

typedef struct gan_run_lock gan_run_lock;

/* Takes the lock of the run folder `dir` (flock(2) on dir/.lock, which then holds this
 * process's pid) without waiting. A folder another process holds is refused with
 * GAN_ERR_IO and a line naming that process's pid. */
gan_status gan_run_lock_take(const char *dir, gan_run_lock **out, struct gan_error *err);
/* Removes the lock file and releases the lock; NULL is allowed. */
void gan_run_lock_release(gan_run_lock *lock);

/* A new run's id, from the system's random source. */
gan_status gan_run_id_make(char id[GAN_RUN_ID_SIZE], struct gan_error *err);

/* Checks that a checkpoint's saved configuration (`saved`, read from `saved_path`)
 * belongs to the run of the folder's configuration (`folder`, read from
 * `folder_path`): the same data.name, the same network shapes (generator.z_dim and
 * every generator.model.* and critic.model.* setting) and the same run.id (a
 * configuration without one, from a folder made before ganctl kept ids, matches only
 * another without one). GAN_ERR_FORMAT with one line naming the file and the first
 * difference. */
gan_status gan_run_check_identity(const gan_config *folder, const char *folder_path,
                                  const gan_config *saved, const char *saved_path,
                                  struct gan_error *err);

/* Whether `name` is a temporary file a ganctl process makes in a run folder while it
 * writes one of the folder's files (a checkpoint's ".checkpoint.safetensors.tmp.PID.N",
 * a text file's ".config.conf.XXXXXX", a picture's ".final.png.XXXXXX", and the visible
 * "final.png.XXXXXX" of earlier versions). */
int gan_run_is_leftover(const char *name);

/* Removes every leftover temporary file (gan_run_is_leftover) from `dir` and returns how
 * many went. Only for a process holding the folder's lock: no other writer is then at
 * work in it, so every such file is a dead process's. */
size_t gan_run_remove_leftovers(const char *dir, const struct gan_log *log);

#endif
