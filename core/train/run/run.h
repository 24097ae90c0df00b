/* SPDX-License-Identifier: MIT */
/* run.h — the run room of core/train, as the rooms above it and the program include it:
 * the run folder (its files, lock and guard) and the metrics sink. */
#ifndef GANCTL_TRAIN_RUN_RUN_H
#define GANCTL_TRAIN_RUN_RUN_H

#include "train/run/folder.h"
#include "train/run/metrics.h"
#include "train/run/run_dir.h"
#include "train/run/run_guard.h"

#endif
