/* SPDX-License-Identifier: MIT */
/* image_run.h — the image side of a training run: Fashion-MNIST's splits or an image
 * folder's, the shuffling sampler of real batches, the image quality metrics with their
 * floors, and the PNG grids. */
#ifndef GANCTL_CORE_IMAGE_RUN_H
#define GANCTL_CORE_IMAGE_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "config/configuration.h"
#include "data/image_data.h"
#include "data/image_folder.h"
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
/* An image folder's run (image_folder.h: spec's folder, channels, size and held-out
 * fraction; `log` gets its progress lines, `report` what was skipped): the training
 * images feed the sampler, shuffled from `seed`, and the held-out ones the metrics, which
 * are of pixels only (gan_image_metrics_new_pixels: no Fréchet distance, since the
 * classifier knows only Fashion-MNIST) over min(GAN_IMAGE_EVAL_SAMPLES, held-out, train)
 * images. */
gan_status gan_image_run_new_folder(const struct gan_image_folder_spec *spec, uint64_t seed,
                                    const struct gan_log *log, gan_image_run **out,
                                    struct gan_image_folder_report *report,
                                    struct gan_error *err);
/* data.name = "folder": the folder `dir` as the configuration shapes it (data.holdout, or
 * GAN_IMAGE_FOLDER_DEFAULT_HOLDOUT) for images of channels × side × side; the trainer
 * and a finished run's generator (generator_run.c) read the same images from it. */
struct gan_image_folder_spec gan_image_run_folder_spec(const gan_config *cfg, const char *dir,
                                                       unsigned channels, unsigned side);
/* The images each evaluation scores (GAN_IMAGE_EVAL_SAMPLES for Fashion-MNIST), whether
 * it has a Fréchet distance, and the images' shape. */
size_t gan_image_run_eval_samples(const gan_image_run *r);
/* The training images, and the held-out (test) ones. */
size_t gan_image_run_train_images(const gan_image_run *r);
size_t gan_image_run_held_out(const gan_image_run *r);
int gan_image_run_has_frechet(const gan_image_run *r);
unsigned gan_image_run_channels(const gan_image_run *r);
unsigned gan_image_run_side(const gan_image_run *r);
size_t gan_image_run_sample_size(const gan_image_run *r);
/* The classifier file the Fréchet distance uses ("" when there is none). */
const char *gan_image_run_classifier(const gan_image_run *r);
void gan_image_run_free(gan_image_run *r);

/* The next `batch` real training images, batch × sample size floats in [−1, 1]. */
gan_status gan_image_run_batch(gan_image_run *r, size_t batch, float *images,
                               struct gan_error *err);
/* The sampler's position, for a checkpoint; and back to one. */
struct gan_image_position gan_image_run_tell(const gan_image_run *r);
gan_status gan_image_run_seek(gan_image_run *r, struct gan_image_position pos,
                              struct gan_error *err);

/* The first n test images, n × sample size floats: held-out images that never move the
 * sampler (the set-up's trial step, the real grid). A held-out set smaller than n (an
 * image folder's) is repeated from its start. */
gan_status gan_image_run_test_images(const gan_image_run *r, size_t n, float *images,
                                     struct gan_error *err);

/* The metrics that score generated images against the test split, with their floors,
 * for an evaluator (eval/evaluator.h); owned by the run. */
gan_image_metrics *gan_image_run_metrics(gan_image_run *r);

/* An 8 × 8 grid PNG of `images` (count ≤ GAN_IMAGE_GRID_COUNT of them, NCHW with one
 * channel of 28 × 28: Fashion-MNIST's) at `path`, with `title` in the file (may be NULL). */
gan_status gan_image_run_write_grid(const char *path, const float *images, size_t count,
                                    const char *title, struct gan_error *err);
/* The same for images of `channels` (1 or 3) × side × side: magnified 3 times up to a
 * side of 32, twice up to 64, else drawn at their own size. */
gan_status gan_image_run_write_grid_sized(const char *path, const float *images, size_t count,
                                          unsigned channels, unsigned side, const char *title,
                                          struct gan_error *err);

#endif
