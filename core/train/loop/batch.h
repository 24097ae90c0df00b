/* SPDX-License-Identifier: MIT */
/* batch.h — the inputs of one step in one process: the real samples (the toy's sampler or
 * an image run's data), the generator's noise z and the loss terms' draws. */
#ifndef GANCTL_TRAIN_LOOP_BATCH_H
#define GANCTL_TRAIN_LOOP_BATCH_H

#include <stdint.h>

#include "base/error.h"
#include "data/toy_data.h"
#include "train/state/state.h"

/* Where a step's inputs come from. The stream positions are what a checkpoint holds of
 * it, with the sampler's or the image run's own position. */
struct gan_batch {
    gan_toy_sampler *sampler;     /* the toys; NULL for an image run */
    gan_image_run *images;        /* an image run's data, metrics and grids; NULL for the toys */
    float *real_batch;            /* the host copy of a whole real batch: batch × sample_size */
    uint64_t z_offset, loss_offset;
};

/* The streams at their start and, for the toys, the sampler; an image run's data and
 * the host batch are made with the evaluation sets (evaluation.c). */
gan_status gan_batch_open(struct gan_batch *b, const gan_session *s, struct gan_error *err);
void gan_batch_free(struct gan_batch *b);

/* The next real batch into b->real_batch, all of its rows. */
gan_status gan_batch_draw_real(struct gan_batch *b, const gan_session *s, struct gan_error *err);
/* The real batch as a tensor: the next one drawn, on the session's context. */
gan_status gan_batch_real(struct gan_batch *b, gan_session *s, gan_tensor **real,
                          struct gan_error *err);
/* The next batch of z, [batch, z_dim]. */
gan_tensor *gan_batch_z(struct gan_batch *b, gan_session *s);
/* The objective of `target` at the given loss scale, the loss terms drawing from the
 * batch's loss stream; sink receives the values the terms report. */
gan_tensor *gan_batch_objective(struct gan_batch *b, gan_session *s, enum gan_loss_target target,
                                int64_t iteration, double scale, gan_tensor *real,
                                gan_tensor *fake, struct gan_objective_sink *sink);
/* How far one batch moves the z stream: batch × z_dim values, four to a block. */
uint64_t gan_batch_z_blocks(const gan_session *s);

#endif
