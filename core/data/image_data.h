/* SPDX-License-Identifier: MIT */
/* image_data.h — the Fashion-MNIST data set (any MNIST-format set of 28×28 grey images):
 * train or test images with labels, pixels scaled to [−1, 1], shuffled per epoch from a seed. */
#ifndef GANCTL_CORE_IMAGE_DATA_H
#define GANCTL_CORE_IMAGE_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"

/* Where Debian's package puts the files, the package, and the setting that names the
 * folder: messages about a missing data set name all three. */
#define GAN_IMAGE_DATA_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define GAN_IMAGE_DATA_PACKAGE "dataset-fashion-mnist"
#define GAN_IMAGE_DATA_SETTING "data.path"

/* Every Fashion-MNIST image is one channel of GAN_IMAGE_SIDE × GAN_IMAGE_SIDE pixels; a
 * set made with gan_image_set_wrap has its own channels and side. */
#define GAN_IMAGE_SIDE 28
#define GAN_IMAGE_PIXELS (GAN_IMAGE_SIDE * GAN_IMAGE_SIDE)
#define GAN_IMAGE_CLASSES 10

enum gan_image_split {
    GAN_IMAGE_TRAIN = 0,   /* train-images-idx3-ubyte, train-labels-idx1-ubyte: 60,000 */
    GAN_IMAGE_TEST = 1     /* t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte: 10,000 */
};

typedef struct gan_image_set gan_image_set;

/* Loads one split from the folder `dir` (NULL or "": GAN_IMAGE_DATA_DEFAULT_DIR). Each
 * file is looked up as NAME.gz, then NAME (a decompressed copy). The images must be an
 * IDX array [N, 28, 28] of unsigned bytes, the labels [N] of unsigned bytes 0 … 9, with
 * the same N ≥ 1. A missing file is GAN_ERR_NOT_FOUND with a message that names the
 * folder, the Debian package that provides the files and the setting that points
 * elsewhere; a malformed one is the IDX reader's error (idx.h). */
gan_status gan_image_set_load(const char *dir, enum gan_image_split split,
                              gan_image_set **out, struct gan_error *err);
void gan_image_set_free(gan_image_set *set);

/* A set of `count` images made elsewhere (the image folder's, image_folder.h): `pixels`
 * holds count × channels × side × side bytes, each image's channels one after the other
 * (CHW), rows top first, scaled like Fashion-MNIST's bytes; the set takes it (also when
 * this fails). It has no labels (gan_image_set_label gives −1). `dir` and `split` are
 * what gan_image_set_dir and gan_image_set_split report; `label` (a string that outlives
 * the set) names it in messages. */
gan_status gan_image_set_wrap(const char *dir, enum gan_image_split split, const char *label,
                              size_t count, unsigned channels, unsigned side,
                              unsigned char *pixels, gan_image_set **out,
                              struct gan_error *err);

size_t gan_image_set_count(const gan_image_set *set);
/* Each image's shape: channels, and the side of its square; sample_size =
 * channels × side × side (GAN_IMAGE_PIXELS for Fashion-MNIST). */
unsigned gan_image_set_channels(const gan_image_set *set);
unsigned gan_image_set_side(const gan_image_set *set);
size_t gan_image_set_sample_size(const gan_image_set *set);
/* The folder the files came from, and the split. */
const char *gan_image_set_dir(const gan_image_set *set);
enum gan_image_split gan_image_set_split(const gan_image_set *set);
/* Image i's sample_size bytes as stored (0 = background, 255 = full ink), rows top
 * first; i < count. */
const unsigned char *gan_image_set_raw(const gan_image_set *set, size_t i);
int gan_image_set_label(const gan_image_set *set, size_t i);

/* A stored byte v as the networks see it: v / 127.5 − 1, so 0 → −1 and 255 → 1
 * exactly (the generator's tanh covers the same range). */
float gan_image_pixel_value(unsigned char v);
/* Images first … first + n − 1 into out (n × sample_size floats, each image's
 * pixels row-major: NCHW), scaled as above; labels into `labels` unless NULL.
 * GAN_ERR_INVALID when the range runs past the end. */
gan_status gan_image_set_copy(const gan_image_set *set, size_t first, size_t n, float *out,
                              int *labels, struct gan_error *err);

/* Fashion-MNIST's class names ("T-shirt/top", … "Ankle boot"); "?" outside 0 … 9. */
const char *gan_image_class_name(int label);

/* ------------------------------------------------------------------ sampling
 * Batches without replacement in a fresh order each epoch, as a training loop reads
 * them. The order of epoch e is a Fisher–Yates shuffle of 0 … N − 1 whose random words
 * are Philox4x32-10 (<ganctl/philox.h>) under the key (seed low, seed high) of the
 * counters (k, e low, e high, GAN_IMAGE_SHUFFLE_TAG), k = 0, 1, …, four words per
 * counter: the tag keeps this stream apart from the backend's (whose counters end in
 * 0, 0) under the same seed, and every machine shuffles alike. Each draw from [0, i]
 * is Lemire's multiply-and-reject method, exact. A batch never straddles two epochs:
 * when fewer than `batch` images remain, they are skipped and the next epoch starts
 * (the paper's MNIST code's generator yields whole batches only; 60,000 is a multiple of the
 * usual sizes). */
#define GAN_IMAGE_SHUFFLE_TAG 0x53485546u   /* "SHUF" */

typedef struct gan_image_sampler gan_image_sampler;

/* Where the next batch starts: `index` into the order of epoch `epoch`. Saved with a
 * checkpoint and restored with gan_image_sampler_seek, it makes a resumed run read the
 * very batches the uninterrupted run would have. */
struct gan_image_position {
    uint64_t epoch;
    uint64_t index;
};

/* A sampler over `set` (borrowed; it must outlive the sampler) at epoch 0, index 0. */
gan_status gan_image_sampler_new(const gan_image_set *set, uint64_t seed,
                                 gan_image_sampler **out, struct gan_error *err);
void gan_image_sampler_free(gan_image_sampler *s);

/* The next `batch` images (batch × sample_size floats, scaled) and, unless NULL,
 * their labels. GAN_ERR_INVALID when batch is 0 or exceeds the set's size. */
gan_status gan_image_sampler_next(gan_image_sampler *s, size_t batch, float *images,
                                  int *labels, struct gan_error *err);

struct gan_image_position gan_image_sampler_tell(const gan_image_sampler *s);
/* Moves to `pos` (index ≤ the set's size), reshuffling for its epoch. GAN_ERR_INVALID,
 * with a message, when the index is past the end (a checkpoint from another data set). */
gan_status gan_image_sampler_seek(gan_image_sampler *s, struct gan_image_position pos,
                                  struct gan_error *err);
/* The current epoch's order: count indices into the set. */
const uint32_t *gan_image_sampler_order(const gan_image_sampler *s);

/* The order of epoch `epoch` for `seed` over n items, written into order[0 … n − 1]
 * (what a sampler uses; exposed so that it can be checked and reproduced). */
void gan_image_shuffle(uint64_t seed, uint64_t epoch, uint32_t *order, size_t n);

#endif
