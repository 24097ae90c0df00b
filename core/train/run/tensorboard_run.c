/* SPDX-License-Identifier: MIT */
/* tensorboard_run.c — run.tensorboard: each metrics.csv row also as scalars of the metrics
 * sink's TensorBoard event file in the run folder, and the final picture as an image. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "train/run/metrics.h"

static double unix_time_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

gan_status gan_metrics_open_events(struct gan_metrics_sink *m, const char *run_dir,
                                   int64_t resume_after, const struct gan_log *log,
                                   struct gan_error *err)
{
    double now = unix_time_s();
    gan_status st = gan_tb_writer_open(run_dir, now, &m->events_file, err);
    /* A resumed run writes the rows after its checkpoint again: the restart mark makes
     * TensorBoard drop what earlier files hold from there on, as metrics.csv does. */
    if (st == GAN_OK && resume_after >= 0)
        st = gan_tb_write_session_start(m->events_file, now, resume_after + 1, err);
    if (st == GAN_OK)
        gan_log_write(log, GAN_LOG_DEBUG, "TensorBoard events: %s",
                      gan_tb_writer_path(m->events_file));
    return st;
}

/* The overflow column's words as a number a plot can show: bit 0 a gradient overflow,
 * bit 1 a forward one. */
static float overflow_code(const char *word)
{
    return strcmp(word, "gradient") == 0 ? 1.0f
         : strcmp(word, "forward") == 0 ? 2.0f
         : strcmp(word, "both") == 0 ? 3.0f : 0.0f;
}

gan_status gan_metrics_events_row(struct gan_metrics_sink *m, int64_t iteration,
                                  const struct gan_cell *cells, size_t count,
                                  struct gan_error *err)
{
    if (!m->events_file)
        return GAN_OK;
    struct gan_tb_scalar values[3 * GAN_TRAINER_MAX_METRICS + 24];
    size_t n = 0;
    /* The first column is the iteration: the events' step. */
    for (size_t i = 1; i < count && i < m->n_columns && n < sizeof values / sizeof values[0]; i++) {
        const struct gan_cell *c = &cells[i];
        if (c->kind == GAN_CELL_EMPTY)
            continue;
        float v = c->kind == GAN_CELL_INT ? (float)c->i
                : c->kind == GAN_CELL_FLOAT ? (float)c->f : overflow_code(c->s);
        values[n++] = (struct gan_tb_scalar){ m->columns[i], v };
    }
    return gan_tb_write_scalars(m->events_file, unix_time_s(), iteration, values, n, err);
}

/* The bytes of the file at `path` (malloc'd). */
static gan_status read_file(const char *path, unsigned char **out, size_t *len,
                            struct gan_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gan_error_set(err, GAN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 0;
    gan_status st = GAN_OK;
    for (;;) {
        if (*len == cap) {
            unsigned char *grown = realloc(*out, cap ? 2 * cap : 65536);
            if (!grown) {
                st = gan_error_nomem(err, "setting up training");
                break;
            }
            *out = grown;
            cap = cap ? 2 * cap : 65536;
        }
        size_t got = fread(*out + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0) {
            if (ferror(f))
                st = gan_error_set(err, GAN_ERR_IO, "cannot read %s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (st != GAN_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

gan_status gan_metrics_events_final_image(struct gan_metrics_sink *m,
                                          const struct gan_run_folder *f, int64_t iteration,
                                          struct gan_error *err)
{
    if (!m->events_file || f->image_iteration != iteration)
        return GAN_OK;
    char *path = gan_run_path(f->run_dir, GAN_RUN_FINAL_IMAGE);
    if (!path)
        return gan_error_nomem(err, "setting up training");
    unsigned char *png = NULL;
    size_t len = 0;
    gan_status st = read_file(path, &png, &len, err);
    struct gan_tb_image image = { .tag = "final", .png = png, .png_len = len };
    if (st == GAN_OK &&
        gan_tb_png_size(image.png, len, &image.width, &image.height, &image.channels) != GAN_OK)
        st = gan_error_set(err, GAN_ERR_FORMAT, "%s: not a PNG file, so TensorBoard cannot show it",
                           path);
    if (st == GAN_OK)
        st = gan_tb_write_image(m->events_file, unix_time_s(), iteration, &image, err);
    free(png);
    free(path);
    return st;
}
