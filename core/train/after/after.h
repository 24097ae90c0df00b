/* SPDX-License-Identifier: MIT */
/* after.h — the after room of core/train, as the program includes it: a finished run's
 * generator opened, its samples written, its export, and the replay of ganctl grads. */
#ifndef GANCTL_TRAIN_AFTER_AFTER_H
#define GANCTL_TRAIN_AFTER_AFTER_H

#include "train/after/generator_export.h"
#include "train/after/generator_run.h"
#include "train/after/grads.h"
#include "train/after/sample_files.h"

#endif
