/* SPDX-License-Identifier: MIT */
/* generator_run.c — a run's generator opened from its folder or checkpoint: the session of
 * its saved configuration with the checkpoint loaded, its samples and its quality (the
 * trainer's evaluator, run_eval.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strings.h"
#include "tensor/tensor_core.h"
#include "train/state/state.h"
#include "train/after/generator_run.h"
#include "train/run/run.h"

struct gan_generator_run {
    gan_config *cfg;
    char *checkpoint;
    char *config_text;
    gan_session *s;
    gan_image_run *images;        /* with metrics, for an image run */
    int64_t iteration;
};

const char *gan_generator_run_checkpoint(const gan_generator_run *g)
{
    return g->checkpoint;
}

int64_t gan_generator_run_iteration(const gan_generator_run *g)
{
    return g->iteration;
}

gan_session *gan_generator_run_session(const gan_generator_run *g)
{
    return g->s;
}

const gan_config *gan_generator_run_config(const gan_generator_run *g)
{
    return g->cfg;
}

const char *gan_generator_run_config_text(const gan_generator_run *g)
{
    return g->config_text;
}

int gan_generator_run_is_checkpoint(const gan_generator_run *g, const char *path)
{
    struct stat a, b;
    return stat(path, &a) == 0 && stat(g->checkpoint, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

void gan_generator_run_free(gan_generator_run *g)
{
    if (!g)
        return;
    /* The image metrics' classifier runs on the session's backend: freed before it. */
    gan_image_run_free(g->images);
    gan_session_free(g->s);
    gan_config_free(g->cfg);
    free(g->checkpoint);
    free(g->config_text);
    free(g);
}

/* The checkpoint `path` names: the file itself, or the one in a run folder, with the
 * reason when there is none to read. */
static gan_status resolve_checkpoint(const char *path, char **out, struct gan_error *err)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "%s: no such file or folder; give a run folder ganctl wrote (run.dir) or its %s",
                             path, GAN_RUN_CHECKPOINT);
    if (!S_ISDIR(sb.st_mode))
        return (*out = gan_strdup(path)) ? GAN_OK : gan_error_nomem(err, path);
    char *file = gan_run_path(path, GAN_RUN_CHECKPOINT);
    char *conf = gan_run_path(path, GAN_RUN_CONFIG);
    gan_status st = GAN_OK;
    if (!file || !conf)
        st = gan_error_nomem(err, path);
    else if (access(file, F_OK) == 0)
        *out = file, file = NULL;
    else if (access(conf, F_OK) == 0)
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: a run folder without a checkpoint yet; it writes %s every run.checkpoint_every iterations, on a stop and at the end (continue it with ganctl --resume %s)",
                           path, GAN_RUN_CHECKPOINT, path);
    else
        st = gan_error_set(err, GAN_ERR_CONFIG,
                           "%s: not a run folder (it holds neither %s nor %s); give the run.dir of a run or a checkpoint file",
                           path, GAN_RUN_CHECKPOINT, GAN_RUN_CONFIG);
    free(file);
    free(conf);
    return st;
}

/* The saved configuration, with the command line's backend changes. */
static gan_status load_config(gan_generator_run *g, const struct gan_saved_setting *settings,
                              size_t count, struct gan_error *err)
{
    /* A checkpoint of another format version is told to use the ganctl that wrote it
     * (checkpoint.c). */
    return gan_saved_config_open(g->checkpoint, settings, count,
                                 "the generator is the checkpoint's, as its configuration describes it",
                                 &g->cfg, &g->config_text, err);
}

/* An image run's data and metrics, as the trainer opens them: Fashion-MNIST's, or the
 * run's image folder with the same held-out images (evaluation.c). */
static gan_status open_images(gan_generator_run *g, const struct gan_log *log,
                              struct gan_error *err)
{
    const char *dir = "", *classifier = "";
    gan_config_get_string(g->cfg, GAN_IMAGE_DATA_SETTING, &dir);
    gan_config_get_string(g->cfg, "eval.classifier", &classifier);
    if (!g->s->set.is_folder)
        return gan_image_run_new(dir, classifier, g->s->set.seed, g->s->ctx, &g->images, err);
    struct gan_image_folder_spec spec =
        gan_image_run_folder_spec(g->cfg, dir, (unsigned)g->s->set.sample_dims[0],
                                  (unsigned)g->s->set.sample_dims[1]);
    struct gan_image_folder_report report;
    return gan_image_run_new_folder(&spec, g->s->set.seed, log, &g->images, &report, err);
}

gan_status gan_generator_run_open(const char *path, const struct gan_saved_setting *settings,
                                  size_t setting_count, int metrics, const gan_loader *loader,
                                  const struct gan_log *log, gan_generator_run **out,
                                  struct gan_error *err)
{
    *out = NULL;
    gan_generator_run *g = calloc(1, sizeof *g);
    if (!g)
        return gan_error_nomem(err, path);
    gan_status st = resolve_checkpoint(path, &g->checkpoint, err);
    if (st == GAN_OK)
        st = load_config(g, settings, setting_count, err);
    if (st == GAN_OK)
        st = gan_session_open(g->cfg, loader, log, &g->s, err);
    if (st == GAN_OK && metrics && g->s->set.is_image)
        st = open_images(g, log, err);
    if (st == GAN_OK)
        st = gan_session_set_precision(g->s, err);
    struct gan_checkpoint_state state;
    if (st == GAN_OK)
        st = gan_session_load_checkpoint(g->s, g->checkpoint, &state, err);
    if (st != GAN_OK) {
        gan_generator_run_free(g);
        return st;
    }
    /* Forward passes at the checkpoint, not training: an FP8 recipe's history stays as
     * the checkpoint holds it, whatever the chunk size (gan_ctx_fp8_hold). */
    gan_ctx_fp8_hold(g->s->ctx, 1);
    gan_ctx_fp8_set_tag(g->s->ctx, "critic-step");
    g->iteration = state.iteration;
    *out = g;
    return GAN_OK;
}

gan_status gan_generator_run_generate(gan_generator_run *g, size_t n, uint64_t seed,
                                      uint64_t offset, size_t chunk, float *samples,
                                      float *z_out, struct gan_error *err)
{
    struct gan_eval_generator gen = gan_run_eval_generator(g->s);
    return gan_eval_generate(&gen, n, seed, offset, chunk, samples, z_out, err);
}

gan_status gan_generator_run_eval(gan_generator_run *g, size_t n, struct gan_eval_quality *q,
                                  struct gan_error *err)
{
    memset(q, 0, sizeof *q);
    if (g->s->set.is_image && !g->images)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "%s: the image metrics were not opened with the run", g->checkpoint);
    /* The trainer's evaluator at n: its z, held-out data and floors. */
    gan_evaluator *e;
    gan_status st = gan_run_evaluator_new(g->s, g->images, n, &e, err);
    if (st == GAN_OK)
        st = gan_evaluator_run(e, q, err);
    gan_evaluator_free(e);
    return st;
}
