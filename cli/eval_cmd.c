/* SPDX-License-Identifier: MIT */
/* eval_cmd.c — `ganctl eval`: a run's quality metrics as its trainer measures them, beside
 * their real-vs-real floors, printed and optionally as JSON; the run folder is only read. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "eval_cmd.h"
#include "io/text_file.h"
#include "run_args.h"
#include "train/run/run.h"

static const char usage_text[] =
    "Usage: ganctl eval RUN_DIR|CHECKPOINT [OPTION]...\n"
    "Measure a run's generator as the trainer's final evaluation does (the same z and\n"
    "held-out data): toys: modes covered, high-quality %, sliced W1; images: sliced W1\n"
    "in pixels and the Frechet distance; each beside its real-vs-real floor. Nothing in\n"
    "the run folder is written.\n"
    "\n"
    "      --samples N        generated and real samples (default the trainer's: 2500\n"
    "                         points or 2000 images); the floors are measured at N too\n"
    "      --json FILE        also write the result as JSON, shaped like summary.json's\n"
    "                         \"quality\"\n"
    "      --backend NAME     compute on another backend than the run's\n"
    "  -s, --set KEY=VALUE    change a backend.* setting or log.level; repeatable\n"
    "      --plugin-dir DIR   look for plugins in DIR first; repeatable\n"
    "  -h, --help             show this help and exit\n"
    "\n"
    "See EVALUATION in ganctl(1).\n";

static json_t *image_json(const struct gan_image_quality *q, int has_frechet)
{
    json_t *o = json_object();
    json_object_set_new(o, "sliced_w1_pixel", gan_run_json_number(q->sliced_w1));
    if (has_frechet)
        json_object_set_new(o, "frechet", gan_run_json_number(q->frechet));
    return o;
}

static gan_status write_json(const char *path, const gan_generator_run *g,
                             const struct gan_eval_quality *q, struct gan_error *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "checkpoint", json_string(gan_generator_run_checkpoint(g)));
    json_object_set_new(o, "iteration", json_integer(gan_generator_run_iteration(g)));
    json_object_set_new(o, "samples", json_integer((json_int_t)q->samples));
    json_object_set_new(o, "generated", q->is_image ? image_json(&q->image, q->has_frechet) : gan_run_toy_quality_json(&q->toy));
    json_object_set_new(o, "real_vs_real_floor",
                        q->is_image ? image_json(&q->image_floor, q->has_frechet)
                                    : gan_run_toy_quality_json(&q->toy_floor));
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(o);
    if (!text)
        return gan_error_nomem(err, path);
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return gan_error_nomem(err, path);
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    gan_status st = gan_file_write_atomic(path, line, n + 1, err);
    free(line);
    return st;
}

static void print_quality(const gan_generator_run *g, const struct gan_eval_quality *q)
{
    const gan_session *s = gan_generator_run_session(g);
    printf("quality at iteration %lld (%s, %zu generated vs %zu %s):",
           (long long)gan_generator_run_iteration(g), s->set.data_name, q->samples, q->samples,
           q->is_image ? "test images" : "real samples");
    if (q->is_image) {
        printf(" sliced_w1_pixel %.4g (floor %.4g)", q->image.sliced_w1, q->image_floor.sliced_w1);
        if (q->has_frechet)
            printf(", frechet %.4g (floor %.4g)", q->image.frechet, q->image_floor.frechet);
        putchar('\n');
        return;
    }
    const struct gan_toy_quality *t = &q->toy, *f = &q->toy_floor;
    if (t->has_modes)
        printf(" modes %ld/%zu (floor %ld/%zu), high-quality %.1f%% (floor %.1f%%),",
               t->modes_covered, t->modes_total, f->modes_covered, f->modes_total,
               t->high_quality_pct, f->high_quality_pct);
    printf(" sliced W1 %.4f (floor %.4f)\n", t->sliced_w1, f->sliced_w1);
}

int gan_eval_command(int argc, char **argv)
{
    struct gan_log log;
    gan_run_log_init(&log);
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_run_args args;
    gan_loader *loader = NULL;
    gan_generator_run *g = NULL;
    struct gan_eval_quality q;
    int rc = 0;
    if (gan_run_args_parse("eval", GAN_RUN_OPT_SAMPLES | GAN_RUN_OPT_JSON | GAN_RUN_OPT_BACKEND, 0,
                           argc, argv, &args, &err) != GAN_OK)
        rc = gan_run_fail(&err);
    else if (args.help)
        fputs(usage_text, stdout);
    else if (gan_run_args_open(&args, 1, &log, &loader, &g, &err) != GAN_OK ||
             gan_generator_run_eval(g, args.count > 0 ? (size_t)args.count : 0, &q, &err) != GAN_OK ||
             (args.json && write_json(args.json, g, &q, &err) != GAN_OK))
        rc = gan_run_fail(&err);
    else
        print_quality(g, &q);
    fflush(stdout);
    gan_generator_run_free(g);
    gan_loader_free(loader);
    gan_run_args_free(&args);
    return rc;
}
