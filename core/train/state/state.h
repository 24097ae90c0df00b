/* SPDX-License-Identifier: MIT */
/* state.h — the state room of core/train, as the rooms above it and the program include
 * it: the session, the plugins opened and computed, checkpoints, the saved configuration,
 * an image run's data and the run's evaluator. */
#ifndef GANCTL_TRAIN_STATE_STATE_H
#define GANCTL_TRAIN_STATE_STATE_H

#include "train/state/checkpoint.h"
#include "train/state/compute.h"
#include "train/state/image_run.h"
#include "train/state/run_eval.h"
#include "train/state/saved_config.h"
#include "train/state/session.h"
#include "train/state/streams.h"

#endif
