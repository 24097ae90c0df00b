/* SPDX-License-Identifier: MIT */
/* sample_files.c — writing a generator's samples in the form the output path names: CSV
 * points, a PNG of points or an image grid, a folder of PNG files, safetensors. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image/image_grid.h"
#include "io/safetensors/safetensors.h"
#include "io/text_file.h"
#include "io/plot/toy_plot.h"
#include "train/after/sample_files.h"

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

gan_status gan_sample_kind_of(const char *path, int is_image, enum gan_sample_kind *kind,
                              struct gan_error *err)
{
    struct stat sb;
    if (ends_with(path, "/") || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)))
        *kind = GAN_SAMPLE_FOLDER;
    else if (ends_with(path, ".csv"))
        *kind = GAN_SAMPLE_CSV;
    else if (ends_with(path, ".png"))
        *kind = GAN_SAMPLE_PNG;
    else if (ends_with(path, ".safetensors"))
        *kind = GAN_SAMPLE_SAFETENSORS;
    else
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s: name a .png, .safetensors%s file or a folder (ending in /)%s",
                             path, is_image ? "" : " or .csv", is_image ? " for one PNG per image" : "");
    if (*kind == GAN_SAMPLE_CSV && is_image)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s: a CSV holds toy points; this run generates images: write a .png grid, a folder of PNG files (ending in /) or .safetensors",
                             path);
    if (*kind == GAN_SAMPLE_FOLDER && !is_image)
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s: a folder of PNG files holds images; this run generates 2-D points: write a .csv, a .png or .safetensors",
                             path);
    return GAN_OK;
}

static gan_status write_csv(const char *path, const float *xy, size_t n, struct gan_error *err)
{
    size_t cap = 16 + n * 40, used = 0;
    char *text = malloc(cap);
    if (!text)
        return gan_error_nomem(err, path);
    used += (size_t)snprintf(text, cap, "x,y\n");
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(text + used, cap - used, "%.9g,%.9g\n", xy[2 * i], xy[2 * i + 1]);
    gan_status st = gan_file_write_atomic(path, text, used, err);
    free(text);
    return st;
}

/* One image grid of `count` images of the run's shape. */
static gan_status write_grid(const struct gan_session_settings *set, const char *path,
                             const float *images, size_t count, unsigned cols, unsigned scale,
                             unsigned separator, const char *title, struct gan_error *err)
{
    struct gan_image_grid g;
    memset(&g, 0, sizeof g);
    g.images = images;
    g.count = count;
    g.channels = (unsigned)set->sample_dims[0];
    g.height = (unsigned)set->sample_dims[1];
    g.width = (unsigned)set->sample_dims[2];
    g.cols = cols;
    g.rows = (unsigned)((count + cols - 1) / cols);
    g.scale = scale;
    g.separator = separator;
    g.title = title;
    return gan_image_grid_write(path, &g, err);
}

static gan_status write_folder(const struct gan_session_settings *set, const char *path,
                               const float *images, size_t n, struct gan_error *err)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return gan_error_set(err, GAN_ERR_IO, "%s: cannot make the folder: %s", path,
                             strerror(errno));
    size_t len = strlen(path);
    const char *sep = len && path[len - 1] == '/' ? "" : "/";
    gan_status st = GAN_OK;
    for (size_t i = 0; st == GAN_OK && i < n; i++) {
        char file[4200];
        snprintf(file, sizeof file, "%s%s%06zu.png", path, sep, i);
        st = write_grid(set, file, images + i * (size_t)set->sample_size, 1, 1, 1, 0, NULL, err);
    }
    return st;
}

static gan_status write_safetensors(const gan_generator_run *g, const char *path,
                                    const float *samples, const float *z, size_t n,
                                    uint64_t seed, struct gan_error *err)
{
    const gan_session *s = gan_generator_run_session(g);
    gan_st_writer *w = gan_st_writer_new();
    if (!w)
        return gan_error_nomem(err, path);
    uint64_t shape[4] = { n }, zshape[2] = { n, (uint64_t)s->set.z_dim };
    for (int d = 0; d < s->set.sample_ndim; d++)
        shape[d + 1] = (uint64_t)s->set.sample_dims[d];
    char msg[768], seed_text[32], stream[32], iteration[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    snprintf(stream, sizeof stream, "%llu", (unsigned long long)GAN_SAMPLE_Z_STREAM);
    snprintf(iteration, sizeof iteration, "%lld", (long long)gan_generator_run_iteration(g));
    const struct { const char *key, *value; } meta[] = {
        { "format", GAN_SAMPLES_FORMAT }, { "format_version", GAN_SAMPLES_VERSION },
        { "ganctl_version", PACKAGE_VERSION }, { "checkpoint", gan_generator_run_checkpoint(g) },
        { "iteration", iteration }, { "seed", seed_text }, { "z_stream", stream },
        { "precision", gan_session_precision_name(s) },
    };
    gan_status st = GAN_OK;
    if (gan_st_writer_add(w, "samples", GAN_ST_F32, s->set.sample_ndim + 1, shape, samples,
                          n * (size_t)s->set.sample_size * sizeof *samples, msg, sizeof msg) != GAN_OK ||
        gan_st_writer_add(w, "z", GAN_ST_F32, 2, zshape, z, n * (size_t)s->set.z_dim * sizeof *z,
                          msg, sizeof msg) != GAN_OK)
        st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    for (size_t i = 0; st == GAN_OK && i < sizeof meta / sizeof meta[0]; i++)
        if (gan_st_writer_set_metadata(w, meta[i].key, meta[i].value, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    if (st == GAN_OK && (st = gan_st_writer_write(w, path, msg, sizeof msg)) != GAN_OK)
        gan_error_set(err, st, "%s", msg);
    gan_st_writer_free(w);
    return st;
}

gan_status gan_samples_write(const gan_generator_run *g, const char *path,
                             enum gan_sample_kind kind, const float *samples, const float *z,
                             size_t n, uint64_t seed, struct gan_error *err)
{
    if (gan_generator_run_is_checkpoint(g, path))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s is the run's checkpoint; write the samples to another file",
                             path);
    const struct gan_session_settings *set = &gan_generator_run_session(g)->set;
    char title[160];
    snprintf(title, sizeof title, "%zu samples, iteration %lld, seed %llu", n,
             (long long)gan_generator_run_iteration(g), (unsigned long long)seed);
    switch (kind) {
    case GAN_SAMPLE_CSV:
        return write_csv(path, samples, n, err);
    case GAN_SAMPLE_FOLDER:
        return write_folder(set, path, samples, n, err);
    case GAN_SAMPLE_SAFETENSORS:
        return write_safetensors(g, path, samples, z, n, seed, err);
    case GAN_SAMPLE_PNG:
    default:
        break;
    }
    if (set->is_image) {
        unsigned cols = (unsigned)ceil(sqrt((double)n));
        /* 3× magnification for a sheet the size of the run's grids; larger sheets at 1×. */
        return write_grid(set, path, samples, n, cols ? cols : 1, n <= 64 ? 3 : 1, 2, title, err);
    }
    struct gan_toy_plot plot;
    memset(&plot, 0, sizeof plot);
    plot.fake = samples;
    plot.n_fake = n;
    plot.title = title;
    return gan_toy_plot_write(path, &plot, err);
}
