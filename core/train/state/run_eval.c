/* SPDX-License-Identifier: MIT */
/* run_eval.c — the evaluator of a run: its session's generator and where the run's
 * stream holds the evaluation's randomness. */
#include "config.h"

#include "train/state/run_eval.h"
#include "train/state/streams.h"

static gan_tensor *session_generator(void *self, gan_tensor *z)
{
    return gan_session_forward(self, GAN_NET_GENERATOR, z);
}

struct gan_eval_generator gan_run_eval_generator(gan_session *s)
{
    return (struct gan_eval_generator){
        .ctx = s->ctx,
        .z_dim = (size_t)s->set.z_dim,
        .sample_size = (size_t)s->set.sample_size,
        .forward = session_generator,
        .self = s,
    };
}

gan_status gan_run_evaluator_new(gan_session *s, gan_image_run *images, size_t n,
                                 gan_evaluator **out, struct gan_error *err)
{
    *out = NULL;
    if (s->set.is_image && !images)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "an image run's evaluation needs its image metrics");
    struct gan_evaluator_spec spec = {
        .generator = gan_run_eval_generator(s),
        .seed = s->set.seed,
        .z_offset = GAN_STREAM_EVAL_Z,
        .n = n,
        .images = s->set.is_image ? gan_image_run_metrics(images) : NULL,
        .kind = s->set.kind,
        .real_offset = GAN_STREAM_EVAL_REAL,
        .floor_offset = GAN_STREAM_FLOOR,
    };
    return gan_evaluator_new(&spec, out, err);
}
