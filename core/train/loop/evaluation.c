/* SPDX-License-Identifier: MIT */
/* evaluation.c — the trainer's view of quality: its evaluator (run_eval.h) set up with the
 * run's data, the evaluation at an iteration, and the pictures. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/plot/toy_plot.h"
#include "tensor/tensor_core.h"
#include "train/loop/trainer_internal.h"
#include "train/state/state.h"

/* ------------------------------------------------------------------ set-up */

/* An image folder's data and metrics (image_folder.h), and the log's account of what was
 * read and skipped. */
static gan_status open_folder(gan_trainer *t, const char *dir, struct gan_error *err)
{
    /* Fashion-MNIST's folder, data.path's default, is never what a folder run means. */
    const struct gan_config_value *path = gan_config_find(t->cfg, GAN_IMAGE_DATA_SETTING);
    if (path && path->source == GAN_CONFIG_DEFAULT)
        return gan_error_set(err, GAN_ERR_CONFIG, "data.name = \"folder\" trains on the images in data.path, which is not set (its default is fashion-mnist's folder %s): set data.path to your image folder",
                             dir);
    struct gan_image_folder_spec spec =
        gan_image_run_folder_spec(t->cfg, dir, (unsigned)t->s->set.sample_dims[0],
                                  (unsigned)t->s->set.sample_dims[1]);
    struct gan_image_folder_report report;
    gan_status st = gan_image_run_new_folder(&spec, t->s->set.seed, t->log, &t->batch.images, &report,
                                             err);
    if (st != GAN_OK)
        return st;
    /* Refused here, before the run folder is made, rather than by the first batch. */
    size_t train = gan_image_run_train_images(t->batch.images);
    if ((size_t)t->s->set.batch > train)
        return gan_error_set(err, GAN_ERR_CONFIG, "image folder %s: %zu training images (%zu of %zu read, %zu held out), fewer than data.batch_size = %lld: set data.batch_size to %zu or less, or add images",
                             dir, train, report.files - report.skipped, report.files,
                             gan_image_run_held_out(t->batch.images), (long long)t->s->set.batch, train);
    if (report.skipped)
        gan_log_write(t->log, GAN_LOG_WARN, "image folder %s: skipped %zu of %zu image files that could not be read; the first: %s",
                      dir, report.skipped, report.files, report.first_skipped);
    gan_log_write(t->log, GAN_LOG_INFO, "image folder %s: %zu images of %u x %u x %u, %zu held out; image quality: sliced W1 of %zu images against held-out ones (no Frechet distance: its classifier knows only fashion-mnist)",
                  dir, report.files - report.skipped, spec.channels, spec.size, spec.size,
                  gan_image_run_held_out(t->batch.images), gan_image_run_eval_samples(t->batch.images));
    return GAN_OK;
}

/* An image run's data and metrics, and its real images: real_images holds the first
 * test images, as many as the trial step and the real grid use. */
static gan_status open_images(gan_trainer *t, struct gan_error *err)
{
    const char *dir = "", *classifier = "";
    gan_config_get_string(t->cfg, GAN_IMAGE_DATA_SETTING, &dir);
    gan_config_get_string(t->cfg, "eval.classifier", &classifier);
    gan_status st;
    if (t->s->set.is_folder) {
        st = open_folder(t, dir, err);
    } else {
        st = gan_image_run_new(dir, classifier, t->s->set.seed, t->s->ctx, &t->batch.images, err);
        if (st == GAN_OK)
            gan_log_write(t->log, GAN_LOG_INFO, "image quality: %u images against the test split; Frechet distance in the features of %s",
                          GAN_IMAGE_EVAL_SAMPLES, gan_image_run_classifier(t->batch.images));
    }
    if (st != GAN_OK)
        return st;
    const size_t n_eval = gan_image_run_eval_samples(t->batch.images);
    size_t trial = t->s->set.batch < (int64_t)n_eval ? (size_t)t->s->set.batch : n_eval;
    t->eval.n_eval_real = trial > GAN_IMAGE_GRID_COUNT ? trial : GAN_IMAGE_GRID_COUNT;
    t->eval.real_images = malloc(t->eval.n_eval_real * (size_t)t->s->set.sample_size
                                 * sizeof *t->eval.real_images);
    if (!t->eval.real_images)
        return gan_trainer_nomem(err);
    t->eval.eval_real = t->eval.real_images;
    return gan_image_run_test_images(t->batch.images, t->eval.n_eval_real, t->eval.real_images,
                                     err);
}

gan_status gan_trainer_set_up_eval(gan_trainer *t, struct gan_error *err)
{
    gan_status st = t->s->set.is_image ? open_images(t, err) : GAN_OK;
    if (st == GAN_OK)
        st = gan_run_evaluator_new(t->s, t->batch.images, 0, &t->eval.evaluator, err);
    if (st != GAN_OK)
        return st;
    t->batch.real_batch = malloc((size_t)t->s->set.batch * (size_t)t->s->set.sample_size
                                 * sizeof *t->batch.real_batch);
    if (!t->batch.real_batch)
        return gan_trainer_nomem(err);
    struct gan_eval_quality floors;
    gan_evaluator_floors(t->eval.evaluator, &floors);
    if (t->s->set.is_image) {
        t->eval.image_quality.sliced_w1 = t->eval.image_quality.frechet = NAN;
        t->eval.image_floor = floors.image_floor;
        t->eval.floor_values[0] = (struct gan_named_value){ "sliced_w1_pixel", t->eval.image_floor.sliced_w1 };
        t->eval.floor_values[1] = (struct gan_named_value){ "frechet", t->eval.image_floor.frechet };
    } else {
        t->eval.eval_real = gan_evaluator_real(t->eval.evaluator);
        t->eval.n_eval_real = gan_evaluator_samples(t->eval.evaluator);
        t->eval.floor = floors.toy_floor;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ evaluation */

static gan_status evaluate(gan_trainer *t, struct gan_error *err)
{
    /* Data parallel: the ranks' weights are the same; rank 0 evaluates for all. */
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    if (t->eval.has_quality && t->eval.quality_iteration == t->iteration)
        return GAN_OK;
    struct gan_eval_quality q;
    gan_status st = gan_evaluator_run(t->eval.evaluator, &q, err);
    if (st != GAN_OK)
        return st;
    if (q.is_image) {
        t->eval.image_quality = q.image;
        t->eval.quality_values[0] = (struct gan_named_value){ "sliced_w1_pixel", q.image.sliced_w1 };
        t->eval.quality_values[1] = (struct gan_named_value){ "frechet", q.image.frechet };
    } else {
        t->eval.quality = q.toy;
    }
    t->eval.has_quality = 1;
    t->eval.quality_iteration = t->iteration;
    return GAN_OK;
}

/* The critic's value on the picture's lattice, in chunks the size of an evaluation
 * batch so that the step's buffers are the ones evaluations use already. */
static gan_status critic_field(gan_trainer *t, float *field, struct gan_error *err)
{
    gan_ctx *ctx = t->s->ctx;
    const size_t n = (size_t)GAN_PLOT_GRID * GAN_PLOT_GRID;
    float *xy = malloc(GAN_EVAL_SAMPLES * 2 * sizeof *xy);
    if (!xy)
        return gan_trainer_nomem(err);
    gan_status st = GAN_OK;
    for (size_t at = 0; st == GAN_OK && at < n; at += GAN_EVAL_SAMPLES) {
        size_t m = n - at < GAN_EVAL_SAMPLES ? n - at : GAN_EVAL_SAMPLES;
        for (size_t k = 0; k < GAN_EVAL_SAMPLES; k++) {
            size_t p = at + (k < m ? k : 0);
            size_t i = p / GAN_PLOT_GRID, j = p % GAN_PLOT_GRID;
            xy[2 * k] = (float)(-GAN_TOY_PLOT_DEFAULT_EXTENT +
                                2.0 * GAN_TOY_PLOT_DEFAULT_EXTENT * (double)j / (GAN_PLOT_GRID - 1));
            xy[2 * k + 1] = (float)(-GAN_TOY_PLOT_DEFAULT_EXTENT +
                                    2.0 * GAN_TOY_PLOT_DEFAULT_EXTENT * (double)i / (GAN_PLOT_GRID - 1));
        }
        int64_t dims[2] = { GAN_EVAL_SAMPLES, 2 };
        gan_ctx_no_grad_push(ctx);
        gan_tensor *x = gan_tensor_from_host(ctx, GAN_F32, 2, dims, xy);
        gan_tensor *d = x ? gan_session_forward(t->s, GAN_NET_CRITIC, x) : NULL;
        gan_ctx_no_grad_pop(ctx);
        float *values = xy;   /* GAN_EVAL_SAMPLES × 2 floats; the lattice is not needed now */
        if (!d || gan_tensor_to_host(ctx, d, values, GAN_EVAL_SAMPLES) != GAN_OK)
            st = gan_session_ctx_fail(t->s, err, "drawing the critic's field");
        else
            memcpy(field + at, values, m * sizeof *field);
        gan_ctx_step_end(ctx);
    }
    free(xy);
    return st;
}

/* An image run's picture: the 8 × 8 grid of the fixed grid z, titled with the latest
 * evaluation when it is this iteration's. */
static gan_status image_picture(gan_trainer *t, const char *name, struct gan_error *err)
{
    float *images = malloc((size_t)GAN_IMAGE_GRID_COUNT * (size_t)t->s->set.sample_size
                           * sizeof *images);
    if (!images)
        return gan_trainer_nomem(err);
    /* The grid's z is fixed for the run, apart from the evaluation's; a resumed run
     * draws it alike. */
    gan_status st = gan_eval_generate(gan_evaluator_generator(t->eval.evaluator),
                                      GAN_IMAGE_GRID_COUNT, t->s->set.seed, GAN_STREAM_GRID_Z,
                                      GAN_EVAL_CHUNK, images, NULL, err);
    char title[200];
    int used = snprintf(title, sizeof title, "%s iteration %lld", t->s->set.data_name,
                        (long long)t->iteration);
    if (t->eval.has_quality && t->eval.quality_iteration == t->iteration && used > 0) {
        if (gan_image_run_has_frechet(t->batch.images))
            snprintf(title + used, sizeof title - (size_t)used, ", sliced W1 %.4g, Frechet %.4g",
                     t->eval.image_quality.sliced_w1, t->eval.image_quality.frechet);
        else
            snprintf(title + used, sizeof title - (size_t)used, ", sliced W1 %.4g",
                     t->eval.image_quality.sliced_w1);
    }
    char *path = st == GAN_OK ? gan_run_path(t->folder.run_dir, name) : NULL;
    if (st == GAN_OK)
        st = path ? gan_image_run_write_grid_sized(path, images, GAN_IMAGE_GRID_COUNT,
                                                   gan_image_run_channels(t->batch.images),
                                                   gan_image_run_side(t->batch.images), title, err)
                  : gan_trainer_nomem(err);
    free(path);
    free(images);
    if (st == GAN_OK)
        t->folder.image_iteration = t->iteration;
    return st;
}

/* A picture of the current state into `name` in the run folder. */
static gan_status picture(gan_trainer *t, const char *name, struct gan_error *err)
{
    if (!gan_trainer_dp_leader(t))
        return GAN_OK;
    if (t->batch.images)
        return image_picture(t, name, err);
    float *field = malloc((size_t)GAN_PLOT_GRID * GAN_PLOT_GRID * sizeof *field);
    if (!field)
        return gan_trainer_nomem(err);
    /* The evaluation's samples are the picture's generated points. */
    gan_status st = evaluate(t, err);
    if (st == GAN_OK)
        st = critic_field(t, field, err);
    /* The title strip holds 42 characters at the default size: the data set is in the
     * folder's name, and the separators shrink when the numbers grow. */
    char title[200];
    for (int sep = 2; sep >= 1; sep--) {
        const char *gap = sep == 2 ? "  " : " ";
        int used = snprintf(title, sizeof title, "iter %lld", (long long)t->iteration);
        if (t->eval.quality.has_modes && used > 0 && (size_t)used < sizeof title)
            used += snprintf(title + used, sizeof title - (size_t)used, "%smodes %ld/%zu%shq %.1f%%",
                             gap, t->eval.quality.modes_covered, t->eval.quality.modes_total, gap,
                             t->eval.quality.high_quality_pct);
        if (used > 0 && (size_t)used < sizeof title)
            used += snprintf(title + used, sizeof title - (size_t)used, "%ssW1 %.3f", gap,
                             t->eval.quality.sliced_w1);
        if (used <= 42)
            break;
    }
    if (st == GAN_OK) {
        struct gan_toy_plot plot;
        memset(&plot, 0, sizeof plot);
        plot.field = field;
        plot.grid = GAN_PLOT_GRID;
        plot.real = t->eval.eval_real;
        plot.n_real = GAN_PLOT_POINTS;
        plot.fake = gan_evaluator_fake(t->eval.evaluator);
        plot.n_fake = GAN_PLOT_POINTS;
        plot.title = title;
        char *path = gan_run_path(t->folder.run_dir, name);
        st = path ? gan_toy_plot_write(path, &plot, err) : gan_trainer_nomem(err);
        free(path);
    }
    free(field);
    if (st == GAN_OK)
        t->folder.image_iteration = t->iteration;
    return st;
}


/* Evaluations and pictures are forward passes, not training: FP8 casts there leave the
 * recipe's history and the metrics' counts alone (gan_ctx_fp8_hold), so that a run
 * trains the same whenever it evaluates, on one rank or several. Their operands take
 * their scales from the critic step's names, where the generator also runs forward
 * only, whichever step ran last (none, in a run resumed at its end). */
static void hold_fp8(gan_trainer *t)
{
    gan_ctx_fp8_hold(t->s->ctx, 1);
    gan_ctx_fp8_set_tag(t->s->ctx, "critic-step");
}

gan_status gan_trainer_evaluate(gan_trainer *t, struct gan_error *err)
{
    hold_fp8(t);
    gan_status st = evaluate(t, err);
    gan_ctx_fp8_hold(t->s->ctx, 0);
    return st;
}

gan_status gan_trainer_picture(gan_trainer *t, const char *name, struct gan_error *err)
{
    hold_fp8(t);
    gan_status st = picture(t, name, err);
    gan_ctx_fp8_hold(t->s->ctx, 0);
    return st;
}
