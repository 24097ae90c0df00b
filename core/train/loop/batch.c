/* SPDX-License-Identifier: MIT */
/* batch.c — one step's inputs in one process: the whole real batch, z for every row, the
 * loss terms' draws; each stream moves on by one batch. */
#include "config.h"

#include <stdlib.h>

#include "train/loop/batch.h"
#include "train/state/state.h"

gan_status gan_batch_open(struct gan_batch *b, const gan_session *s, struct gan_error *err)
{
    b->z_offset = GAN_STREAM_Z;
    b->loss_offset = GAN_STREAM_LOSS;
    if (s->set.is_image)
        return GAN_OK;
    return gan_toy_sampler_new(s->set.kind, s->set.seed, GAN_STREAM_DATA, &b->sampler, err);
}

void gan_batch_free(struct gan_batch *b)
{
    gan_image_run_free(b->images);
    gan_toy_sampler_free(b->sampler);
    free(b->real_batch);
    b->images = NULL;
    b->sampler = NULL;
    b->real_batch = NULL;
}

gan_status gan_batch_draw_real(struct gan_batch *b, const gan_session *s, struct gan_error *err)
{
    size_t n = (size_t)s->set.batch;
    return b->images ? gan_image_run_batch(b->images, n, b->real_batch, err)
                     : gan_toy_sample(b->sampler, n, b->real_batch, err);
}

gan_status gan_batch_real(struct gan_batch *b, gan_session *s, gan_tensor **real,
                          struct gan_error *err)
{
    gan_status st = gan_batch_draw_real(b, s, err);
    if (st != GAN_OK)
        return st;
    int64_t dims[4];
    int ndim = gan_session_batch_dims(s, s->set.batch, dims);
    *real = gan_tensor_from_host(s->ctx, GAN_F32, ndim, dims, b->real_batch);
    return GAN_OK;
}

uint64_t gan_batch_z_blocks(const gan_session *s)
{
    return (uint64_t)(s->set.batch * s->set.z_dim + 3) / 4;
}

gan_tensor *gan_batch_z(struct gan_batch *b, gan_session *s)
{
    return gan_session_draw_z(s, s->set.batch, &b->z_offset);
}

gan_tensor *gan_batch_objective(struct gan_batch *b, gan_session *s, enum gan_loss_target target,
                                int64_t iteration, double scale, gan_tensor *real,
                                gan_tensor *fake, struct gan_objective_sink *sink)
{
    return gan_session_objective(s, target, iteration, scale, real, fake, NULL, &b->loss_offset,
                                 sink);
}
