/* SPDX-License-Identifier: MIT */
/* generator_run.h — a finished (or stopped) run's generator, opened from its run folder or
 * checkpoint for `ganctl sample`, `ganctl eval` and `ganctl export`: samples, quality. */
#ifndef GANCTL_TRAIN_GENERATOR_RUN_H
#define GANCTL_TRAIN_GENERATOR_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "base/log.h"
#include "eval/evaluator.h"
#include "plugin/plugin_loader.h"
#include "train/state/state.h"

/* Where `ganctl sample` reads z: the Philox stream of its --seed at this block offset,
 * a stream no training draw uses, so a sample never repeats a training batch's z. */
#define GAN_SAMPLE_Z_STREAM (UINT64_C(9) << 56)

/* One --set KEY=VALUE or --backend NAME, in command-line order. Only backend.* and
 * log.level may be set: anything else would describe another generator than the
 * checkpoint's. */
typedef struct gan_generator_run gan_generator_run;

/* Opens `path` (a run folder, or a checkpoint file): its configuration from the
 * checkpoint's metadata with `settings` applied, the session it describes (session.h)
 * with the checkpoint's parameters loaded, under the run's precision policy, so that
 * the generator computes as it did in training. The critic is built and loaded with
 * it (the checkpoint holds both) but never run. With `metrics` set, an image run's
 * data and metrics are opened too, before the precision policy, as the trainer opens
 * them (what gan_generator_run_eval needs). Errors name the path and the fix: a folder
 * that is not a run folder, a run folder without a checkpoint yet, a file that is not
 * a ganctl checkpoint or is of another format version. `loader` and `log` (may be
 * NULL) must outlive the result. */
gan_status gan_generator_run_open(const char *path, const struct gan_saved_setting *settings,
                                  size_t setting_count, int metrics, const gan_loader *loader,
                                  const struct gan_log *log, gan_generator_run **out,
                                  struct gan_error *err);
void gan_generator_run_free(gan_generator_run *g);

const char *gan_generator_run_checkpoint(const gan_generator_run *g);   /* the file read */
int64_t gan_generator_run_iteration(const gan_generator_run *g);
gan_session *gan_generator_run_session(const gan_generator_run *g);
const gan_config *gan_generator_run_config(const gan_generator_run *g);
/* Whether `path` names the checkpoint the run was opened from (an output must not). */
int gan_generator_run_is_checkpoint(const gan_generator_run *g, const char *path);
/* The configuration as the checkpoint saved it (libconfig text). */
const char *gan_generator_run_config_text(const gan_generator_run *g);

/* n samples (n × sample_size floats, the generator's outputs as it computes them) for
 * the z of Philox stream `seed` from block `offset` on, drawn and run `chunk` at a time
 * (gan_eval_generate; GAN_EVAL_CHUNK is the trainer's). With z_out, the z used too
 * (n × Z floats). The same arguments give the same numbers on a backend. */
gan_status gan_generator_run_generate(gan_generator_run *g, size_t n, uint64_t seed,
                                      uint64_t offset, size_t chunk, float *samples,
                                      float *z_out, struct gan_error *err);

/* The run's quality metrics by the trainer's evaluator (run_eval.h), on n generated
 * samples (0: the trainer's own count, GAN_EVAL_SAMPLES for the toys and
 * GAN_IMAGE_EVAL_SAMPLES for images) from the trainer's evaluation z, against as many
 * held-out real samples, with the real-vs-real floors at that n. With the trainer's n
 * the numbers are those of the run's summary.json for a checkpoint written at the end
 * of the run. An image run needs its metrics opened (gan_generator_run_open). */
gan_status gan_generator_run_eval(gan_generator_run *g, size_t n, struct gan_eval_quality *q,
                                  struct gan_error *err);

#endif
