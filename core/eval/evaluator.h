/* SPDX-License-Identifier: MIT */
/* evaluator.h — one evaluation of a generator, the trainer's and `ganctl eval`'s: the
 * held-out real samples and their real-vs-real floors, the fixed z, generation in chunks
 * and the scores (toy_metrics.h, image_metrics.h). */
#ifndef GANCTL_CORE_EVALUATOR_H
#define GANCTL_CORE_EVALUATOR_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "data/toy_data.h"
#include "eval/image_metrics.h"
#include "eval/toy_metrics.h"

/* Toy points each evaluation generates and compares with as many held-out real points
 * (the toy metrics' 2,500, toy_metrics.h). */
#define GAN_EVAL_SAMPLES 2500u
/* Images per forward pass when a generator's images are made (evaluations, grids,
 * `ganctl sample`): a training batch's order of size, so that the step's buffers stay
 * near a training step's whatever the count. Toy points, two floats each, are all made
 * in one pass. */
#define GAN_EVAL_CHUNK 250u

/* The generator an evaluation runs. The evaluator owns no network: it draws z on `ctx`
 * and hands it to `forward`, which returns the generator's samples for it (a tensor of
 * z's rows × sample_size floats that lives until gan_ctx_step_end), or NULL with ctx's
 * error set. It is called under gan_ctx_no_grad_push. */
struct gan_eval_generator {
    gan_ctx *ctx;
    size_t z_dim, sample_size;
    gan_tensor *(*forward)(void *self, gan_tensor *z);
    void *self;
};

/* n samples into `samples` (n × sample_size floats) for the standard normal z of Philox
 * key `seed` from block `offset` on, drawn and run `chunk` at a time (0: all n in one
 * pass); each draw of m × z_dim normals takes ceil(m·z_dim / 4) blocks, so the z and the
 * samples do not depend on the chunk where every chunk's m·z_dim is a multiple of 4.
 * With z_out, the z used too (n × z_dim floats). GAN_ERR_* of the context with what
 * failed. */
gan_status gan_eval_generate(const struct gan_eval_generator *g, size_t n, uint64_t seed,
                             uint64_t offset, size_t chunk, float *samples, float *z_out,
                             struct gan_error *err);

/* What an evaluator measures on: the generator and where its z lies in the run's
 * stream, and the data it is held against, toy points of `kind` or images through
 * `images`' metrics (borrowed: it must outlive the evaluator). */
struct gan_evaluator_spec {
    struct gan_eval_generator generator;
    uint64_t seed;                /* the run's Philox key: z, held-out points, floor */
    uint64_t z_offset;            /* first block of the evaluation's z */
    size_t n;                     /* samples per evaluation; 0: GAN_EVAL_SAMPLES for the
                                     toys, the metrics' own n for images */
    size_t chunk;                 /* samples per forward pass; 0: all toy points at
                                     once, GAN_EVAL_CHUNK images */
    gan_image_metrics *images;    /* NULL: the toys */
    enum gan_toy_kind kind;       /* the toys' data set */
    uint64_t real_offset;         /* the toys' held-out points: first block */
    uint64_t floor_offset;        /* the toys' two real sets of the floor: first block */
};

/* One evaluation's numbers beside the floors at the same n. */
struct gan_eval_quality {
    int is_image;
    int has_frechet;              /* images with a classifier: an image folder's have none */
    size_t samples;               /* generated, and real, samples compared */
    struct gan_toy_quality toy, toy_floor;          /* the toys' */
    struct gan_image_quality image, image_floor;    /* images' */
};

typedef struct gan_evaluator gan_evaluator;

/* The sets an evaluation needs, made once: for the toys the n held-out real points of
 * the stream at real_offset and the floor of two real sets of n from floor_offset; for
 * images the metrics hold the reference images and floors already. Nothing is
 * generated yet. GAN_ERR_INVALID for n < 2 or a generator without forward;
 * GAN_ERR_NOMEM; the samplers' errors. */
gan_status gan_evaluator_new(const struct gan_evaluator_spec *spec, gan_evaluator **out,
                             struct gan_error *err);
void gan_evaluator_free(gan_evaluator *e);

/* Generates n samples from the evaluation's z, the same at every call, and scores them
 * against the held-out ones; `out` gets the floors too. */
gan_status gan_evaluator_run(gan_evaluator *e, struct gan_eval_quality *out,
                             struct gan_error *err);

/* The floors alone, as gan_evaluator_run would report them beside its scores (whose
 * fields are zero here). */
void gan_evaluator_floors(const gan_evaluator *e, struct gan_eval_quality *out);

size_t gan_evaluator_samples(const gan_evaluator *e);
/* The toys' held-out points (n × 2 floats) and modes; NULL and no modes for images. */
const float *gan_evaluator_real(const gan_evaluator *e);
const struct gan_toy_modes *gan_evaluator_modes(const gan_evaluator *e);
/* The samples of the last gan_evaluator_run (n × sample_size floats). */
const float *gan_evaluator_fake(const gan_evaluator *e);
/* The generator it runs. */
const struct gan_eval_generator *gan_evaluator_generator(const gan_evaluator *e);

#endif
