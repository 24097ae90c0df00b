/* SPDX-License-Identifier: MIT */
/* checkpoint_reported.h — a checkpoint's "reported.NAME" metadata: the last values of the
 * metrics that lazy loss terms report on some steps only (checkpoint.h). */
#ifndef GAN_TRAIN_STATE_CHECKPOINT_REPORTED_H
#define GAN_TRAIN_STATE_CHECKPOINT_REPORTED_H

#include "base/error.h"
#include "io/safetensors/safetensors.h"
#include "train/state/checkpoint.h"

/* Adds state->reported to the writer's metadata, each value in 17 digits (exact). */
gan_status gan_checkpoint_reported_save(gan_st_writer *w, const struct gan_checkpoint_state *state,
                                        const char *path, struct gan_error *err);

/* Fills state->reported from the file. A name that is not a plain column name, a value
 * that is not a number, or more entries than fit are refused as a damaged file
 * (GAN_ERR_FORMAT), naming the entry and never quoting its value. */
gan_status gan_checkpoint_reported_load(const gan_st_file *f, struct gan_checkpoint_state *state,
                                        const char *path, struct gan_error *err);

#endif
