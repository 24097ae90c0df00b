/* SPDX-License-Identifier: MIT */
/* classifier.h — the small Fashion-MNIST classifier whose penultimate layer is the feature
 * space of ganctl's Fréchet distance: an MLP trained with the core's autograd, saved as safetensors. */
#ifndef GANCTL_CORE_CLASSIFIER_H
#define GANCTL_CORE_CLASSIFIER_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "data/image_data.h"

/* The network: 784 → 256 → 128 → 10, ReLU after the first two layers, each layer
 * y = x Wᵀ + b with W [out, in] (torch.nn.Linear's layout and initialisation,
 * U(±1/√fan_in) for weights and biases). The features are the 128 ReLU outputs of the
 * second layer, for images scaled to [−1, 1] as gan_image_set_copy and the generator
 * give them. An MLP and not a conv net because it trains to ~88 % test accuracy in
 * seconds on one core, which is enough for features that separate the classes.
 *
 * Training: softmax cross-entropy, Adam (lr 1e-3, β 0.9 / 0.999), batches of 128 in a
 * fresh order each epoch (gan_image_shuffle under the seed), parameters drawn from the
 * Philox stream of the seed. The cross-entropy's gradient with respect to the logits,
 * (softmax − one-hot) / batch, is formed on the host and seeds the autograd backward
 * through the network: the core has no exp or log op, and the loss needs no second
 * derivative. Everything runs in FP32 on its own context, whatever the precision
 * policy of the caller's context. The same seed, data and backend thread count give
 * the same bytes. */
#define GAN_CLASSIFIER_INPUT GAN_IMAGE_PIXELS
#define GAN_CLASSIFIER_HIDDEN 256
#define GAN_CLASSIFIER_FEATURES 128
#define GAN_CLASSIFIER_CLASSES GAN_IMAGE_CLASSES

#define GAN_CLASSIFIER_DEFAULT_SEED 1
#define GAN_CLASSIFIER_DEFAULT_EPOCHS 5
#define GAN_CLASSIFIER_BATCH 128

/* The file: tensors fc0.weight [256, 784], fc0.bias [256], fc1.weight [128, 256],
 * fc1.bias [128], fc2.weight [10, 128], fc2.bias [10], all F32; metadata format =
 * "ganctl-classifier", format_version = "1", layers = "784,256,128,10", seed, epochs,
 * train_images, test_accuracy (a fraction, %.6f), train_seconds, data (the folder),
 * ganctl_version. */
#define GAN_CLASSIFIER_FORMAT "ganctl-classifier"
#define GAN_CLASSIFIER_VERSION "1"

typedef struct gan_classifier gan_classifier;

/* Labelled images: either `set` (its first `count` images, or all when count is 0) or
 * `images` (count × 784 floats in [−1, 1]) with `labels` (count values 0 … 9). */
struct gan_classifier_data {
    const gan_image_set *set;
    const float *images;
    const int *labels;
    size_t count;
};

struct gan_classifier_epoch {
    int epoch, epochs;            /* 1-based */
    double loss;                  /* mean cross-entropy over the epoch's batches */
    double train_accuracy;        /* on the epoch's batches, as they were seen */
    double seconds;               /* since training began */
};

typedef void (*gan_classifier_progress_fn)(void *arg, const struct gan_classifier_epoch *e);

/* A new classifier with parameters drawn from `seed`, computing on a private context
 * over `ctx`'s backend (borrowed: it must outlive the classifier). */
gan_status gan_classifier_new(gan_ctx *ctx, uint64_t seed, gan_classifier **out,
                              struct gan_error *err);
void gan_classifier_free(gan_classifier *c);

/* Trains for `epochs` ≥ 1 epochs over `train` (at least one batch of images), calling
 * `progress` (may be NULL) after each. */
gan_status gan_classifier_train(gan_classifier *c, const struct gan_classifier_data *train,
                                int epochs, gan_classifier_progress_fn progress, void *arg,
                                struct gan_error *err);

/* The fraction of `data` classified correctly; remembered as the classifier's test
 * accuracy (saved with it). */
gan_status gan_classifier_evaluate(gan_classifier *c, const struct gan_classifier_data *data,
                                   double *accuracy, struct gan_error *err);

/* The features of n images (n × 784 floats) into `features` (n × 128 floats). */
gan_status gan_classifier_features(gan_classifier *c, const float *images, size_t n,
                                   float *features, struct gan_error *err);

/* Writes the file described above, atomically. `data_dir` (may be NULL) is recorded. */
gan_status gan_classifier_save(const gan_classifier *c, const char *path, const char *data_dir,
                               struct gan_error *err);
/* Reads a file gan_classifier_save wrote; every tensor is checked by name, dtype and
 * shape, and the format and layers metadata must match. */
gan_status gan_classifier_load(gan_ctx *ctx, const char *path, gan_classifier **out,
                               struct gan_error *err);

/* What the classifier knows about itself: its seed, the epochs and images it was
 * trained on, its test accuracy (NAN before gan_classifier_evaluate or when the file
 * did not say), training seconds, and the data folder the file names ("" when none). */
uint64_t gan_classifier_seed(const gan_classifier *c);
int gan_classifier_epochs(const gan_classifier *c);
size_t gan_classifier_train_images(const gan_classifier *c);
double gan_classifier_accuracy(const gan_classifier *c);
double gan_classifier_train_seconds(const gan_classifier *c);
const char *gan_classifier_data_dir(const gan_classifier *c);

#endif
