/* SPDX-License-Identifier: MIT */
/* image_metrics.h — quality of generated images against held-out test images: sliced
 * Wasserstein-1 in pixel space (any shape) and, for Fashion-MNIST's 28×28 grey images, a
 * Fréchet distance in a self-trained classifier's features. */
#ifndef GANCTL_CORE_IMAGE_METRICS_H
#define GANCTL_CORE_IMAGE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "data/image_data.h"

/* What is computed (ganctl.conf(5), IMAGE QUALITY, says the same for users).
 *
 * Both metrics compare n generated images with n reference images: the first n of a
 * fixed permutation of the test split (gan_image_shuffle under the metrics' seed), so
 * every evaluation of a run meets the same real images. Each comes with a floor: the
 * same metric between n training images (the first n of a permutation of the train
 * split) and those n test images, i.e. what two independent real samples of size n
 * score. A generator cannot be told from the data below its floor; both metrics are
 * biased upwards at small n, which is why the floor is measured at the n of the
 * evaluation rather than quoted once.
 *
 * sliced_w1 — K = GAN_IMAGE_METRICS_DIRECTIONS unit directions θₖ in R^dim (dim = 784 for
 *   Fashion-MNIST, C·H·W in general), each a
 *   vector of Philox standard normals (key: the seed; counters (j, k, 0,
 *   GAN_IMAGE_METRICS_TAG), Box–Muller on word pairs) divided by its norm, drawn once.
 *   Both sets are projected on θₖ (pixels in [−1, 1]), the projections sorted, and the
 *   1-D W1 is the mean |a₍ᵢ₎ − b₍ᵢ₎| over the sorted pairs; sliced_w1 is the mean over
 *   the K directions. In pixel units: shifting every pixel by c moves it by at most |c|.
 *
 * frechet — both sets go through the classifier (classifier.h); the means μ and the
 *   unbiased covariances Σ of the 128 penultimate ReLU features give
 *   ‖μ₁ − μ₂‖² + tr(Σ₁ + Σ₂ − 2 (Σ₁^½ Σ₂ Σ₁^½)^½), the square roots by a symmetric
 *   Jacobi eigendecomposition in double with negative eigenvalues clamped to 0
 *   (linalg.h). The FID formula, but in this classifier's features, so its values are
 *   comparable only between runs that use the same classifier file.
 *
 * Runs are comparable with each other when they use the same seed, n and classifier:
 * the trainer should pass GAN_IMAGE_METRICS_SEED rather than its run seed, so that the
 * directions and reference images do not change with the run. */
#define GAN_IMAGE_METRICS_DIRECTIONS 128
#define GAN_IMAGE_METRICS_SEED 20250101u
/* The n the documented measurements use (ganctl.conf(5)); any n ≥ 2 works. */
#define GAN_IMAGE_METRICS_SAMPLES 2000
#define GAN_IMAGE_METRICS_TAG 0x534c4943u   /* "SLIC": apart from other Philox streams */

/* The classifier, when the caller names none: this file under the user's cache
 * folder, $XDG_CACHE_HOME/ganctl/ or else $HOME/.cache/ganctl/. It is loaded when it
 * exists (and was trained on the same data folder); otherwise gan_image_metrics_new
 * trains one exactly as `ganctl classifier` does with its defaults (seed
 * GAN_CLASSIFIER_DEFAULT_SEED, GAN_CLASSIFIER_DEFAULT_EPOCHS epochs: ~15 s on one
 * core) and writes it there, so that every later run reuses it. The classifier's seed
 * is fixed, not the run's, for the same reason as GAN_IMAGE_METRICS_SEED. The trainer
 * keeps the path in its setting eval.classifier ("" = this default). */
#define GAN_IMAGE_METRICS_CACHE_NAME "fashion-mnist-classifier.safetensors"

typedef struct gan_image_metrics gan_image_metrics;

struct gan_image_quality {
    double sliced_w1;
    double frechet;               /* NAN when not computed */
};

/* Metrics against `test`, with floors from `train` (both borrowed: they must outlive
 * the result), for evaluations of `n` images (2 ≤ n ≤ the smaller split's size; the
 * trainer's GAN_IMAGE_EVAL_SAMPLES): the reference statistics and both floors are
 * computed here, once, so gan_image_metrics_floor has them at once. `classifier`: a
 * file from `ganctl classifier`, or NULL / "" for the cached default above (loaded, or
 * trained and saved). `ctx` lends its backend for the classifier's training and
 * forward passes, which run in FP32 on a private context (so the caller's precision
 * policy, tape and step tensors are untouched); the backend must outlive the result.
 * Errors: n out of range, the classifier file missing or malformed (the message names
 * it and says how to make one), no cache folder ($XDG_CACHE_HOME and $HOME unset), the
 * training's own errors. */
gan_status gan_image_metrics_new(const gan_image_set *train, const gan_image_set *test,
                                 const char *classifier, uint64_t seed, size_t n,
                                 gan_ctx *ctx, gan_image_metrics **out, struct gan_error *err);

/* Metrics of pixels only, for images of any shape (an image folder's): sliced W1 as above
 * in R^dim, dim = the sets' sample size (both must have the same), and no Fréchet
 * distance — frechet is NAN in every result and floor — since the classifier was trained
 * on Fashion-MNIST's ten labelled classes of 28×28 grey images and its features say
 * nothing about other pictures. No backend is needed. */
gan_status gan_image_metrics_new_pixels(const gan_image_set *train, const gan_image_set *test,
                                        uint64_t seed, size_t n, gan_image_metrics **out,
                                        struct gan_error *err);
/* Whether the metrics compute the Fréchet distance (made by gan_image_metrics_new). */
int gan_image_metrics_has_frechet(const gan_image_metrics *m);

/* Both metrics of n generated images (`fake`: n × sample size floats (784 for
 * Fashion-MNIST), pixels in [−1, 1], rows
 * top first). Normally n is the n given to gan_image_metrics_new; another n (2 ≤ n ≤
 * the smaller split's size, GAN_ERR_INVALID otherwise) first recomputes the reference
 * statistics and the floors for it (about twice an evaluation's cost), since both
 * metrics depend on n. An
 * image set holding any inf or NaN (a diverged generator) gives NAN for both metrics
 * and GAN_OK: it is a result, not a failure. */
gan_status gan_image_metrics_eval(gan_image_metrics *m, const float *fake, size_t n,
                                  struct gan_image_quality *out, struct gan_error *err);

/* The real-vs-real floors at the current n (gan_image_metrics_n). */
struct gan_image_quality gan_image_metrics_floor(const gan_image_metrics *m);

/* The n the floors belong to, the classifier file in use,
 * whether this gan_image_metrics_new trained it, and its test accuracy (a fraction, as
 * measured on the whole test split when it was trained); "" and NAN for metrics of
 * pixels only. */
size_t gan_image_metrics_n(const gan_image_metrics *m);
const char *gan_image_metrics_classifier_path(const gan_image_metrics *m);
int gan_image_metrics_classifier_trained(const gan_image_metrics *m);
double gan_image_metrics_classifier_accuracy(const gan_image_metrics *m);

void gan_image_metrics_free(gan_image_metrics *m);

/* ------------------------------------------------------------------ the parts, exposed
 * for tests and for callers with their own image sets. */

/* The K unit directions of `seed` in R^dim, as described above: out is k × dim doubles. */
void gan_sliced_directions(uint64_t seed, size_t k, size_t dim, double *out);

/* The sliced W1 of two sets of n rows of dim floats along k directions (k × dim), as
 * described above. GAN_ERR_INVALID for n or k = 0; GAN_ERR_NOMEM. */
gan_status gan_sliced_w1(const float *a, const float *b, size_t n, size_t dim,
                         const double *dirs, size_t k, double *out, struct gan_error *err);

/* The default classifier's path (above) into buf. GAN_ERR_NOT_FOUND when neither
 * $XDG_CACHE_HOME nor $HOME is set; GAN_ERR_INVALID when it does not fit. */
gan_status gan_image_metrics_default_classifier(char *buf, size_t size, struct gan_error *err);

/* Makes the folders above the file `path` that do not exist yet (mkdir -p), so that a
 * classifier can be saved there. GAN_ERR_IO with the folder and the reason. */
gan_status gan_image_metrics_make_folders(const char *path, struct gan_error *err);

#endif
