/* SPDX-License-Identifier: MIT */
/* image_run.c — what a training run on images needs besides the networks: Fashion-MNIST's
 * splits or an image folder's, real batches in a per-epoch shuffled order, quality metrics
 * and sample grids. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/image/image_grid.h"
#include "train/state/image_run.h"

struct gan_image_run {
    gan_image_set *train, *test;
    gan_image_sampler *sampler;
    gan_image_metrics *metrics;
    size_t eval_samples;
};

void gan_image_run_free(gan_image_run *r)
{
    if (!r)
        return;
    gan_image_metrics_free(r->metrics);
    gan_image_sampler_free(r->sampler);
    gan_image_set_free(r->train);
    gan_image_set_free(r->test);
    free(r);
}

gan_status gan_image_run_new(const char *dir, const char *classifier, uint64_t seed,
                             gan_ctx *ctx, gan_image_run **out, struct gan_error *err)
{
    *out = NULL;
    gan_image_run *r = calloc(1, sizeof *r);
    if (!r)
        return gan_error_set(err, GAN_ERR_NOMEM, "fashion-mnist: out of memory");
    gan_status st = gan_image_set_load(dir, GAN_IMAGE_TRAIN, &r->train, err);
    if (st == GAN_OK)
        st = gan_image_set_load(dir, GAN_IMAGE_TEST, &r->test, err);
    if (st == GAN_OK)
        st = gan_image_sampler_new(r->train, seed, &r->sampler, err);
    if (st == GAN_OK && gan_image_set_count(r->test) < GAN_IMAGE_EVAL_SAMPLES)
        st = gan_error_set(err, GAN_ERR_FORMAT, "fashion-mnist: the test split in %s has %zu "
                           "images; the evaluation compares %u generated images with as many "
                           "test images: use the full test files (10,000 images)",
                           gan_image_set_dir(r->test), gan_image_set_count(r->test),
                           GAN_IMAGE_EVAL_SAMPLES);
    if (st == GAN_OK)
        st = gan_image_metrics_new(r->train, r->test, classifier, GAN_IMAGE_METRICS_SEED,
                                   GAN_IMAGE_EVAL_SAMPLES, ctx, &r->metrics, err);
    if (st != GAN_OK) {
        gan_image_run_free(r);
        return st;
    }
    r->eval_samples = GAN_IMAGE_EVAL_SAMPLES;
    *out = r;
    return GAN_OK;
}

struct gan_image_folder_spec gan_image_run_folder_spec(const gan_config *cfg, const char *dir,
                                                       unsigned channels, unsigned side)
{
    struct gan_image_folder_spec spec = {
        .dir = dir, .channels = channels, .size = side,
        .holdout = GAN_IMAGE_FOLDER_DEFAULT_HOLDOUT,
    };
    gan_config_get_float(cfg, "data.holdout", &spec.holdout);
    return spec;
}

gan_status gan_image_run_new_folder(const struct gan_image_folder_spec *spec, uint64_t seed,
                                    const struct gan_log *log, gan_image_run **out,
                                    struct gan_image_folder_report *report,
                                    struct gan_error *err)
{
    *out = NULL;
    gan_image_run *r = calloc(1, sizeof *r);
    if (!r)
        return gan_error_set(err, GAN_ERR_NOMEM, "image folder: out of memory");
    gan_status st = gan_image_folder_load(spec, log, &r->train, &r->test, report, err);
    if (st == GAN_OK)
        st = gan_image_sampler_new(r->train, seed, &r->sampler, err);
    if (st == GAN_OK) {
        size_t n = GAN_IMAGE_EVAL_SAMPLES;
        if (gan_image_set_count(r->test) < n)
            n = gan_image_set_count(r->test);
        if (gan_image_set_count(r->train) < n)
            n = gan_image_set_count(r->train);
        if (n < 2)
            st = gan_error_set(err, GAN_ERR_FORMAT, "image folder %s: %zu training images; "
                               "the quality metrics compare 2 at least: add images",
                               spec->dir, gan_image_set_count(r->train));
        else
            st = gan_image_metrics_new_pixels(r->train, r->test, GAN_IMAGE_METRICS_SEED, n,
                                              &r->metrics, err);
        r->eval_samples = n;
    }
    if (st != GAN_OK) {
        gan_image_run_free(r);
        return st;
    }
    *out = r;
    return GAN_OK;
}

size_t gan_image_run_eval_samples(const gan_image_run *r)
{
    return r->eval_samples;
}

size_t gan_image_run_train_images(const gan_image_run *r)
{
    return gan_image_set_count(r->train);
}

size_t gan_image_run_held_out(const gan_image_run *r)
{
    return gan_image_set_count(r->test);
}

int gan_image_run_has_frechet(const gan_image_run *r)
{
    return gan_image_metrics_has_frechet(r->metrics);
}

unsigned gan_image_run_channels(const gan_image_run *r)
{
    return gan_image_set_channels(r->test);
}

unsigned gan_image_run_side(const gan_image_run *r)
{
    return gan_image_set_side(r->test);
}

size_t gan_image_run_sample_size(const gan_image_run *r)
{
    return gan_image_set_sample_size(r->test);
}

const char *gan_image_run_classifier(const gan_image_run *r)
{
    return gan_image_metrics_classifier_path(r->metrics);
}

gan_status gan_image_run_batch(gan_image_run *r, size_t batch, float *images,
                               struct gan_error *err)
{
    return gan_image_sampler_next(r->sampler, batch, images, NULL, err);
}

struct gan_image_position gan_image_run_tell(const gan_image_run *r)
{
    return gan_image_sampler_tell(r->sampler);
}

gan_status gan_image_run_seek(gan_image_run *r, struct gan_image_position pos,
                              struct gan_error *err)
{
    return gan_image_sampler_seek(r->sampler, pos, err);
}

gan_status gan_image_run_test_images(const gan_image_run *r, size_t n, float *images,
                                     struct gan_error *err)
{
    size_t have = gan_image_set_count(r->test), d = gan_image_set_sample_size(r->test);
    gan_status st = GAN_OK;
    for (size_t at = 0; st == GAN_OK && at < n; at += have) {
        size_t m = n - at < have ? n - at : have;
        st = gan_image_set_copy(r->test, 0, m, images + at * d, NULL, err);
    }
    return st;
}

gan_image_metrics *gan_image_run_metrics(gan_image_run *r)
{
    return r->metrics;
}

gan_status gan_image_run_write_grid(const char *path, const float *images, size_t count,
                                    const char *title, struct gan_error *err)
{
    return gan_image_run_write_grid_sized(path, images, count, 1, GAN_IMAGE_SIDE, title, err);
}

gan_status gan_image_run_write_grid_sized(const char *path, const float *images, size_t count,
                                          unsigned channels, unsigned side, const char *title,
                                          struct gan_error *err)
{
    struct gan_image_grid g;
    memset(&g, 0, sizeof g);
    g.images = images;
    g.count = count < GAN_IMAGE_GRID_COUNT ? count : GAN_IMAGE_GRID_COUNT;
    g.channels = channels;
    g.height = g.width = side;
    g.rows = g.cols = GAN_IMAGE_GRID_SIDE;
    /* Two pixels of grey between cells and a 3× magnification: 28-pixel garments are
     * too small to judge at their own size on a screen; larger images need less. */
    g.separator = 2;
    g.scale = side <= 32 ? 3 : side <= 64 ? 2 : 1;
    g.title = title;
    return gan_image_grid_write(path, &g, err);
}
