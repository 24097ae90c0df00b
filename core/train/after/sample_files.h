/* SPDX-License-Identifier: MIT */
/* sample_files.h — `ganctl sample`'s outputs: a generator's samples as CSV points, a PNG of
 * points or a grid of images, a folder of one PNG per image, or a safetensors tensor. */
#ifndef GANCTL_TRAIN_SAMPLE_FILES_H
#define GANCTL_TRAIN_SAMPLE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "train/after/generator_run.h"

#define GAN_SAMPLES_FORMAT "ganctl-samples"
#define GAN_SAMPLES_VERSION "1"

/* What the output path asks for, by its form:
 *   ends with "/" or is an existing folder   a folder of N PNG files 000000.png …
 *                                            (images; the layout pytorch-fid and
 *                                            clean-fid read), made when missing
 *   *.csv                                    toy points: a header "x,y", one row each
 *   *.png                                    toys: the points on [−3, 3]² (as the run's
 *                                            pictures, without the critic's field);
 *                                            images: a grid of ceil(√N) columns
 *   *.safetensors                            "samples" [N, sample shape] and "z" [N, Z],
 *                                            F32, with metadata format = "ganctl-samples",
 *                                            format_version, checkpoint, iteration, seed,
 *                                            z_stream (the first block, decimal)
 * Anything else is GAN_ERR_CONFIG naming the forms. */
enum gan_sample_kind {
    GAN_SAMPLE_FOLDER, GAN_SAMPLE_CSV, GAN_SAMPLE_PNG, GAN_SAMPLE_SAFETENSORS
};
gan_status gan_sample_kind_of(const char *path, int is_image, enum gan_sample_kind *kind,
                              struct gan_error *err);

/* The n samples `samples` (n × sample_size) drawn from `z` (n × Z) with `seed` written
 * to `path` in the form its kind names. Files are written atomically. */
gan_status gan_samples_write(const gan_generator_run *g, const char *path,
                             enum gan_sample_kind kind, const float *samples, const float *z,
                             size_t n, uint64_t seed, struct gan_error *err);

#endif
