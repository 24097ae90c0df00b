/* SPDX-License-Identifier: MIT */
/* image_run.h — the image side of a training run: Fashion-MNIST's splits, the shuffling
 * sampler of real batches, the image quality metrics with their floors, and the PNG grids. */
#ifndef GANCTL_CORE_IMAGE_RUN_H
#define GANCTL_CORE_IMAGE_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "data/image_data.h"
#include "eval/image_metrics.h"

/* The data.name that selects images. */
#define GAN_IMAGE_DATA_NAME "fashion-mnist"
/* A sample grid: GAN_IMAGE_GRID_SIDE² images, row by row. */
#define GAN_IMAGE_GRID_SIDE 8u
#define GAN_IMAGE_GRID_COUNT (GAN_IMAGE_GRID_SIDE * GAN_IMAGE_GRID_SIDE)
/* The grid of real images, written once when a run starts. */
#define GAN_IMAGE_REAL_GRID "real.png"
/* Generated images each evaluation scores against as many test images (the n of
 * image_metrics.h's documented measurements): enough for stable pixel and feature
 * statistics, few enough that an evaluation of a small generator costs seconds. */
#define GAN_IMAGE_EVAL_SAMPLES ((unsigned)GAN_IMAGE_METRICS_SAMPLES)

typedef struct gan_image_run gan_image_run;

/* Loads the train and test splits from `dir` (image_data.h: NULL or "" is the Debian
 * folder; a missing set names the package), makes the sampler of real batches over the
 * train split, shuffled per epoch from the run's `seed`, and the quality metrics
 * (image_metrics.h) for GAN_IMAGE_EVAL_SAMPLES images with their real-vs-real floors,
 * under GAN_IMAGE_METRICS_SEED so that every run meets the same reference images.
 * `classifier` (eval.classifier; "" = the cached default) and `ctx`, whose backend the
 * classifier runs on, are passed to the metrics. */
gan_status gan_image_run_new(const char *dir, const char *classifier, uint64_t seed,
                             gan_ctx *ctx, gan_image_run **out, struct gan_error *err);
/* The classifier file the Fréchet distance uses. */
const char *gan_image_run_classifier(const gan_image_run *r);
void gan_image_run_free(gan_image_run *r);

/* The next `batch` real training images, batch × GAN_IMAGE_PIXELS floats in [−1, 1]. */
gan_status gan_image_run_batch(gan_image_run *r, size_t batch, float *images,
                               struct gan_error *err);
/* The sampler's position, for a checkpoint; and back to one. */
struct gan_image_position gan_image_run_tell(const gan_image_run *r);
gan_status gan_image_run_seek(gan_image_run *r, struct gan_image_position pos,
                              struct gan_error *err);

/* The first n test images, n × GAN_IMAGE_PIXELS floats: held-out images that never
 * move the sampler (the set-up's trial step, the real grid). */
gan_status gan_image_run_test_images(const gan_image_run *r, size_t n, float *images,
                                     struct gan_error *err);

/* Scores `fake` (n × GAN_IMAGE_PIXELS) against the test split; and the floors. */
gan_status gan_image_run_eval(gan_image_run *r, const float *fake, size_t n,
                              struct gan_image_quality *out, struct gan_error *err);
struct gan_image_quality gan_image_run_floor(const gan_image_run *r);

/* An 8 × 8 grid PNG of `images` (count ≤ GAN_IMAGE_GRID_COUNT of them, NCHW with one
 * channel) at `path`, with `title` in the file (may be NULL). */
gan_status gan_image_run_write_grid(const char *path, const float *images, size_t count,
                                    const char *title, struct gan_error *err);

#endif
