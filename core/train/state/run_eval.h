/* SPDX-License-Identifier: MIT */
/* run_eval.h — a run's evaluator (eval/evaluator.h): the session's generator, the run's
 * streams and its data, as the trainer and a finished run's generator both evaluate. */
#ifndef GANCTL_TRAIN_RUN_EVAL_H
#define GANCTL_TRAIN_RUN_EVAL_H

#include <stddef.h>

#include "base/error.h"
#include "eval/evaluator.h"
#include "train/state/image_run.h"
#include "train/state/session.h"

/* The session's generator for gan_eval_generate; the session must outlive it. */
struct gan_eval_generator gan_run_eval_generator(gan_session *s);

/* The evaluator of the session's run for n samples (0: the trainer's count): its z from
 * GAN_STREAM_EVAL_Z, the toys' held-out points and floor from GAN_STREAM_EVAL_REAL and
 * GAN_STREAM_FLOOR of run.seed, or an image run's metrics (`images`, which must outlive
 * it; required for an image run). */
gan_status gan_run_evaluator_new(gan_session *s, gan_image_run *images, size_t n,
                                 gan_evaluator **out, struct gan_error *err);

#endif
