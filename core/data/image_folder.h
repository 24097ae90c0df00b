/* SPDX-License-Identifier: MIT */
/* image_folder.h — a folder of the user's own PNG and JPEG images as a training set and a
 * held-out set: found recursively, decoded once, brought to one shape, bad files skipped. */
#ifndef GANCTL_CORE_IMAGE_FOLDER_H
#define GANCTL_CORE_IMAGE_FOLDER_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "base/log.h"
#include "data/image_data.h"

/* The data.name that selects an image folder, and its settings' defaults (the settings
 * have no default in the configuration, so a run that does not use them keeps its
 * config.conf; these are what an absent one means). */
#define GAN_IMAGE_FOLDER_NAME "folder"
#define GAN_IMAGE_FOLDER_DEFAULT_CHANNELS 3
#define GAN_IMAGE_FOLDER_DEFAULT_SIZE 64
#define GAN_IMAGE_FOLDER_DEFAULT_HOLDOUT 0.1
/* The held-out images are the first of a Philox permutation (gan_image_shuffle) of the
 * files in name order under this seed, not the run's: every run on the same folder scores
 * against the same images, as every Fashion-MNIST run meets the same test split. */
#define GAN_IMAGE_FOLDER_SPLIT_SEED 0x464f4c44u   /* "FOLD" */
/* The image metrics need two held-out images at least. */
#define GAN_IMAGE_FOLDER_MIN_HOLDOUT 2
/* A progress line in the log every this many files, when there are more. */
#define GAN_IMAGE_FOLDER_PROGRESS_EVERY 1000

struct gan_image_folder_spec {
    const char *dir;              /* data.path */
    unsigned channels;            /* data.channels: 1 (grey) or 3 (RGB) */
    unsigned size;                /* data.size: the side of the square images */
    double holdout;               /* data.holdout: the fraction held out, 0 … 1 */
};

/* What loading found. */
struct gan_image_folder_report {
    size_t files;                 /* *.png, *.jpg and *.jpeg files found */
    size_t skipped;               /* of those, not readable as an image */
    char first_skipped[1024];     /* the first skipped file's reason (names the file) */
};

/* Loads the folder: every file under spec->dir, recursively, whose name ends in .png,
 * .jpg or .jpeg (any case), in byte order of their paths; names that start with a dot
 * (hidden files and folders) are left out, and so are folders reached through a
 * symbolic link (no loops). Each file is recognised by its first bytes, not its name,
 * decoded (png_read.h, jpeg_read.h) and converted (image_resize.h) to spec's channels and
 * size; a file that cannot be decoded is skipped and counted in `report`, never fatal.
 * The decoded images are split: round(holdout · decoded) of them, at least
 * GAN_IMAGE_FOLDER_MIN_HOLDOUT, are the held-out set (GAN_IMAGE_TEST), chosen as described
 * above, and the rest the training set (GAN_IMAGE_TRAIN); each keeps name order.
 * Memory: decoded · channels · size² bytes for the images (64 × 64 RGB: 12 KiB each, so
 * 100,000 images take 1.2 GB), held-out ones twice while splitting, plus one file's
 * samples at a time (at most GAN_DECODED_MAX_PIXELS pixels). `log` (NULL: none) gets an
 * info line every GAN_IMAGE_FOLDER_PROGRESS_EVERY files.
 * Errors, each naming the folder and what to do: GAN_ERR_NOT_FOUND (no such folder; no
 * image file in it), GAN_ERR_FORMAT (no file readable, quoting the first reason; too few
 * images for the held-out set and one batch), GAN_ERR_IO, GAN_ERR_INVALID (channels not
 * 1 or 3, size 0), GAN_ERR_NOMEM (with the size asked for). */
gan_status gan_image_folder_load(const struct gan_image_folder_spec *spec,
                                 const struct gan_log *log, gan_image_set **train,
                                 gan_image_set **test, struct gan_image_folder_report *report,
                                 struct gan_error *err);

#endif
