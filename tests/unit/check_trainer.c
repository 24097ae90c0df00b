/* SPDX-License-Identifier: MIT */
/* check_trainer.c — the training loop on a tiny WGAN-GP: finite losses and complete outputs,
 * byte-identical metrics from the same seed, flat memory over many steps, stop, bad set-ups,
 * and mixed precision with each loss scaler: its columns, implied precision, underflow. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config/configuration.h"
#include "plugin/plugin_loader.h"
#include "train/run/run_dir.h"
#include "tensor/tensor_core.h"
#include "train/loop/trainer.h"
#include "../lib/scratch.h"

/* ------------------------------------------------------------------ helpers */

/* A scratch folder (scratch.h) for the test's runs; removed (with its files) by the teardown. */
static void scratch_setup(void)
{
    test_scratch_make("ganctl-trainer");
}

/* A WGAN-GP small enough to train in well under a second per hundred iterations. */
static const char *const tiny[] = {
    "backend.threads=1",
    "generator.model.width=16", "generator.model.depth=2",
    "critic.model.width=16", "critic.model.depth=2",
    "data.batch_size=32", "critic.iterations=2",
    "generator.optimizer.lr=1e-3", "critic.optimizer.lr=1e-3",
    "loss.gradient-penalty.lambda=0.1",
    "run.iterations=20", "run.log_every=5", "run.eval_every=10", "run.image_every=10",
    "run.checkpoint_every=10", "run.metrics_time=false",
    NULL,
};

static gan_config *tiny_config(const char *dir, const char *const *extra)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    for (const char *const *s = tiny; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    for (const char *const *s = extra; s && *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    char path[700];
    snprintf(path, sizeof path, "%s/%s", test_scratch, dir);
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", path, "test", &err), GAN_OK);
    return cfg;
}

static gan_loader *test_loader(void)
{
    gan_loader *l = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_loader_new(&l, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err) == GAN_OK,
                  "%s", err.message);
    return l;
}

/* What the progress callback sees; it can ask the trainer to stop. */
static volatile sig_atomic_t stop_flag;

struct watch {
    int64_t stop_at;              /* set stop_flag once this iteration is reported; 0 never */
    gan_trainer **trainer;
    int calls, finals;
    int64_t last;
    int all_finite;
    struct gan_ctx_stats at[4];   /* context stats at the iterations in `when` */
    int64_t when[4];
};

static void on_progress(void *ctx, const struct gan_progress *p, int final)
{
    struct watch *w = ctx;
    w->calls++;
    w->finals += final;
    w->last = p->iteration;
    if (!isfinite(p->critic_loss) || (p->iteration > 1 && !isfinite(p->generator_loss)))
        w->all_finite = 0;
    for (int i = 0; i < 4; i++)
        if (w->when[i] == p->iteration && w->trainer && *w->trainer)
            gan_ctx_get_stats(gan_trainer_ctx(*w->trainer), &w->at[i]);
    if (w->stop_at && p->iteration >= w->stop_at)
        stop_flag = SIGINT;
}

/* Builds and runs a trainer; returns it (for inspection) with its result. */
static gan_trainer *train(gan_config *cfg, gan_loader *loader, struct watch *w,
                          struct gan_trainer_result *r)
{
    static gan_trainer *current;
    stop_flag = 0;
    current = NULL;
    w->trainer = &current;
    w->all_finite = 1;
    struct gan_trainer_setup setup = {
        .config = cfg, .loader = loader, .log = NULL, .resume_dir = NULL, .stop = &stop_flag,
        .events = { .ctx = w, .progress = on_progress },
    };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_trainer_new(&setup, &current, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_trainer_run(current, r, &err) == GAN_OK, "%s", err.message);
    return current;
}

static int file_exists(const char *dir, const char *name)
{
    char path[900];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

/* Index of column `name` in a CSV header line, or -1. */
static int column_of(const char *header, const char *name)
{
    int index = 0;
    size_t n = strlen(name);
    for (const char *p = header; *p && *p != '\n'; index++) {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\n'))
            return index;
        p = strpbrk(p, ",\n");
        if (!p || *p == '\n')
            break;
        p++;
    }
    return -1;
}

/* Cell `col` of line `line` (0 = header) as text, into buf. */
static const char *cell(const char *csv, int line, int col, char *buf, size_t size)
{
    const char *p = csv;
    for (int i = 0; i < line && p; i++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    ck_assert_ptr_nonnull(p);
    for (int i = 0; i < col && p; i++) {
        p = strpbrk(p, ",\n");
        ck_assert_msg(p && *p == ',', "line %d has fewer than %d cells", line, col + 1);
        p++;
    }
    size_t n = strcspn(p, ",\n");
    snprintf(buf, size, "%.*s", (int)n, p);
    return buf;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* ------------------------------------------------------------------ the loop */

START_TEST(trains_and_writes_outputs)
{
    gan_loader *loader = test_loader();
    gan_config *cfg = tiny_config("run", NULL);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    ck_assert_int_eq(r.interrupted, 0);
    ck_assert_int_eq(r.iterations, 20);
    ck_assert_int_eq(gan_trainer_iteration(t), 20);
    ck_assert(w.all_finite);
    ck_assert_int_eq(w.finals, 1);
    ck_assert_int_eq(w.last, 20);
    ck_assert(r.has_quality);
    ck_assert_int_eq(r.quality_iteration, 20);
    ck_assert_int_eq(r.floor.modes_covered, 8);
    ck_assert(isfinite(r.quality.sliced_w1) && r.quality.sliced_w1 > 0);

    const char *dir = gan_trainer_run_dir(t);
    char *csv = test_read_run_file(dir, GAN_RUN_METRICS);
    /* Rows at 5, 10, 15, 20 (log_every 5; evaluations at 10 and 20 fall on them). */
    ck_assert_int_eq(count_lines(csv), 5);
    static const char *const expected[] = {
        "iteration", "critic_loss", "generator_loss", "w_distance", "penalty",
        "critic_grad_norm", "generator_grad_norm", "modes_covered", "high_quality_pct",
        "sliced_w1",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        ck_assert_msg(column_of(csv, expected[i]) >= 0, "metrics.csv lacks %s: %.200s",
                      expected[i], csv);
    ck_assert_int_eq(column_of(csv, "time_s"), -1);   /* run.metrics_time=false */
    ck_assert_int_eq(column_of(csv, "iteration"), 0);
    char buf[64];
    ck_assert_str_eq(cell(csv, 1, 0, buf, sizeof buf), "5");
    ck_assert_str_eq(cell(csv, 4, 0, buf, sizeof buf), "20");
    /* Every loss value is a finite number; the quality only at evaluations. */
    for (int line = 1; line <= 4; line++) {
        for (const char *name = "critic_loss"; name; name = strcmp(name, "critic_loss") == 0 ? "generator_loss" : NULL) {
            char *end;
            double v = strtod(cell(csv, line, column_of(csv, name), buf, sizeof buf), &end);
            ck_assert_msg(*end == '\0' && isfinite(v), "line %d %s = \"%s\"", line, name, buf);
        }
    }
    ck_assert_str_eq(cell(csv, 1, column_of(csv, "sliced_w1"), buf, sizeof buf), "");
    ck_assert_str_ne(cell(csv, 2, column_of(csv, "sliced_w1"), buf, sizeof buf), "");
    ck_assert_str_ne(cell(csv, 4, column_of(csv, "modes_covered"), buf, sizeof buf), "");
    free(csv);

    ck_assert(file_exists(dir, "samples-000010.png"));
    ck_assert(file_exists(dir, "samples-000020.png"));
    ck_assert(file_exists(dir, GAN_RUN_FINAL_IMAGE));
    ck_assert(file_exists(dir, GAN_RUN_CHECKPOINT));
    ck_assert(file_exists(dir, GAN_RUN_CONFIG));

    /* summary.json: parses, says what happened, and keeps the floors beside the values. */
    char path[900];
    snprintf(path, sizeof path, "%s/%s", dir, GAN_RUN_SUMMARY);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "summary.json: %s", jerr.text);
    ck_assert_str_eq(json_string_value(json_object_get(root, "status")), "completed");
    ck_assert_int_eq(json_integer_value(json_object_get(root, "iterations")), 20);
    json_t *q = json_object_get(root, "quality");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(q, "real_vs_real_floor"),
                                                        "modes_covered")), 8);
    ck_assert(json_is_real(json_object_get(json_object_get(q, "generated"), "sliced_w1")));
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
                         json_object_get(json_object_get(root, "config"), "critic"), "model"),
                         "width")), 16);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(root, "backend")), "cpu"));
    json_decref(root);

    /* config.conf reads back as the same configuration. */
    char *text = test_read_run_file(dir, GAN_RUN_CONFIG);
    gan_config *back = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_config_new(&back, &err), GAN_OK);
    ck_assert_msg(gan_config_read_string(back, text, "config.conf", GAN_CONFIG_FILE, &err) == GAN_OK,
                  "%s", err.message);
    for (size_t i = 0; i < gan_config_count(cfg); i++) {
        const struct gan_config_value *v = gan_config_at(cfg, i);
        const struct gan_config_value *b = gan_config_find(back, v->key);
        ck_assert_msg(b != NULL, "config.conf lacks %s", v->key);
        char x[512], y[512];
        gan_config_format_value(v, x, sizeof x);
        gan_config_format_value(b, y, sizeof y);
        ck_assert_str_eq(x, y);
    }
    gan_config_free(back);
    free(text);

    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* The same seed gives byte-identical metrics (the time column off); another seed does
 * not. Swept over the data sets, whose samplers differ. */
static const char *const data_sets[] = { "8gaussians", "25gaussians", "swissroll" };

START_TEST(same_seed_same_metrics)
{
    gan_loader *loader = test_loader();
    char data[64];
    snprintf(data, sizeof data, "data.name=%s", data_sets[_i]);
    const char *extra_a[] = { data, "run.seed=7", NULL };
    const char *extra_c[] = { data, "run.seed=8", NULL };
    char *csv[3];
    const char *names[3] = { "a", "b", "c" };
    for (int k = 0; k < 3; k++) {
        gan_config *cfg = tiny_config(names[k], k < 2 ? extra_a : extra_c);
        struct watch w = { 0 };
        struct gan_trainer_result r;
        gan_trainer *t = train(cfg, loader, &w, &r);
        csv[k] = test_read_run_file(gan_trainer_run_dir(t), GAN_RUN_METRICS);
        gan_trainer_free(t);
        gan_config_free(cfg);
    }
    ck_assert_str_eq(csv[0], csv[1]);
    ck_assert_str_ne(csv[0], csv[2]);
    /* swissroll has no modes: no mode columns. */
    ck_assert_int_eq(column_of(csv[0], "modes_covered") >= 0, strcmp(data_sets[_i], "swissroll") != 0);
    for (int k = 0; k < 3; k++)
        free(csv[k]);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ memory */

/* After the first evaluation and picture (new buffer sizes), nothing grows: no step
 * tensor or tape node survives a step, and the pool and device buffers stay the same. */
START_TEST(memory_is_flat)
{
    gan_loader *loader = test_loader();
    const char *extra[] = { "run.iterations=400", "run.log_every=1", "run.eval_every=25",
                            "run.image_every=50", "run.checkpoint_every=100", NULL };
    gan_config *cfg = tiny_config("mem", extra);
    struct watch w = { 0 };
    w.when[0] = 60;
    w.when[1] = 200;
    w.when[2] = 399;
    w.when[3] = -1;
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    ck_assert_int_eq(r.iterations, 400);
    for (int i = 0; i < 3; i++) {
        const struct gan_ctx_stats *s = &w.at[i];
        ck_assert_uint_eq(s->step_tensors, 0);
        ck_assert_uint_eq(s->nodes, 0);
        ck_assert_uint_eq(s->device_buffers, w.at[0].device_buffers);
        ck_assert_uint_eq(s->device_bytes, w.at[0].device_bytes);
        ck_assert_uint_eq(s->pool_buffers, w.at[0].pool_buffers);
        ck_assert_uint_eq(s->persistent_tensors, w.at[0].persistent_tensors);
        ck_assert_uint_eq(s->backend_allocs, w.at[0].backend_allocs);
    }
    ck_assert_uint_gt(w.at[0].device_buffers, 0);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ stopping */

START_TEST(stop_checkpoints_and_reports)
{
    gan_loader *loader = test_loader();
    const char *extra[] = { "run.log_every=1", "run.checkpoint_every=0", NULL };
    gan_config *cfg = tiny_config("stop", extra);
    struct watch w = { 0 };
    w.stop_at = 7;
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    ck_assert_int_eq(r.interrupted, 1);
    ck_assert_int_eq(r.iterations, 7);
    const char *dir = gan_trainer_run_dir(t);
    ck_assert(file_exists(dir, GAN_RUN_CHECKPOINT));
    ck_assert(!file_exists(dir, GAN_RUN_FINAL_IMAGE));
    char *summary = test_read_run_file(dir, GAN_RUN_SUMMARY);
    ck_assert_ptr_nonnull(strstr(summary, "\"status\": \"interrupted\""));
    ck_assert_ptr_nonnull(strstr(summary, "\"iterations\": 7"));
    free(summary);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ bad set-ups */

struct bad_case {
    const char *set[3];
    gan_status status;
    const char *message;          /* a part of the error */
};

static const struct bad_case bad_cases[] = {
    { { "loss.terms=[\"wasserstein\", \"no-such-term\"]", NULL }, GAN_ERR_NOT_FOUND,
      "loss \"no-such-term\" not found: looked for loss-no-such-term.so" },
    { { "loss.terms=[\"gradient-penalty\"]", NULL }, GAN_ERR_CONFIG,
      "no term of loss.terms contributes to the generator's objective" },
    { { "loss.terms=[\"wasserstein\"]", NULL }, GAN_ERR_CONFIG,
      "\"loss.gradient-penalty.lambda\" configures the loss term \"gradient-penalty\", which loss.terms does not list" },
    { { "critic.model.widht=8", NULL }, GAN_ERR_CONFIG,
      "unknown setting \"critic.model.widht\"; did you mean \"critic.model.width\"?" },
    { { "loss.gradient-penalty.lambda=\"big\"", NULL }, GAN_ERR_CONFIG,
      "\"loss.gradient-penalty.lambda\" must be a number, got a string" },
    { { "generator.model.name=nope", NULL }, GAN_ERR_NOT_FOUND, "model \"nope\" not found" },
    { { "precision.mode=fp32", "scaler.name=dynamic", NULL }, GAN_ERR_CONFIG,
      "precision.mode = \"fp32\" with the loss scaler \"dynamic\" (scaler.name = \"dynamic\", --set scaler.name=dynamic): a loss scale does nothing in FP32" },
    { { "precision.mode=fp32", "critic.scaler.name=static", NULL }, GAN_ERR_CONFIG,
      "with the loss scaler \"static\" (critic.scaler.name = \"static\"" },
    { { "scaler.name=nope", NULL }, GAN_ERR_NOT_FOUND, "scaler \"nope\" not found" },
    { { "scaler.name=dynamic", "scaler.growth_factor=0.5", NULL }, GAN_ERR_CONFIG,
      "growth_factor" },
    { { "scaler.name=dynamic", "scaler.init=\"high\"", NULL }, GAN_ERR_CONFIG,
      "\"scaler.init\" must be a number, got a string" },
    { { "critic.scaler.name=dynamic", "critic.scaler.intt=4", NULL }, GAN_ERR_CONFIG,
      "unknown setting \"critic.scaler.intt\"; did you mean \"critic.scaler.init\"?" },
    { { "scaler.scale=8", NULL }, GAN_ERR_CONFIG, "unknown setting \"scaler.scale\"" },
    { { "precision.fp32=[\"penalty\", \"critic..fc1\"]", NULL }, GAN_ERR_CONFIG,
      "precision.fp32 lists \"critic..fc1\", which is not a scope pattern" },
    { { "loss.gradient-penalty.inner_scale=8", NULL }, GAN_ERR_CONFIG,
      "set penalty.inner_scale = 8 instead" },
};

START_TEST(bad_setups_are_explained)
{
    const struct bad_case *c = &bad_cases[_i];
    gan_loader *loader = test_loader();
    gan_config *cfg = tiny_config("bad", c->set);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader };
    gan_trainer *t = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_trainer_new(&setup, &t, &err), c->status);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.message, c->message), "\"%s\" lacks \"%s\"", err.message, c->message);
    /* A set-up that fails makes no run folder. */
    char path[700];
    snprintf(path, sizeof path, "%s/bad", test_scratch);
    ck_assert_int_ne(access(path, F_OK), 0);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* A folder that holds a run already is refused, not mixed. */
START_TEST(existing_run_is_not_overwritten)
{
    gan_loader *loader = test_loader();
    const char *extra[] = { "run.iterations=2", NULL };
    gan_config *cfg = tiny_config("twice", extra);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    gan_trainer_free(t);
    gan_config_free(cfg);
    cfg = tiny_config("twice", extra);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_trainer_new(&setup, &t, &err), GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "already holds a run: continue it with ganctl --resume"));
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ mixed precision */

/* The cell of column `name` in row `line` as a number; fails when it is not one. */
static double number_at(const char *csv, int line, const char *name)
{
    int col = column_of(csv, name);
    ck_assert_msg(col >= 0, "metrics.csv lacks %s", name);
    char buf[64], *end;
    double v = strtod(cell(csv, line, col, buf, sizeof buf), &end);
    ck_assert_msg(buf[0] && *end == '\0', "line %d %s = \"%s\" is not a number", line, name, buf);
    return v;
}

/* A summary.json "final" value. */
static double final_value(const char *dir, const char *name)
{
    char path[900];
    snprintf(path, sizeof path, "%s/%s", dir, GAN_RUN_SUMMARY);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "summary.json: %s", jerr.text);
    json_t *v = json_object_get(json_object_get(root, "final"), name);
    ck_assert_msg(json_is_number(v), "summary.json's final lacks %s", name);
    double x = json_number_value(v);
    json_decref(root);
    return x;
}

/* A short FP16 O2 run with each shipped scaler trains and writes each network's scale,
 * skipped count, overflow kind and underflow fraction (and the final ones in summary.json). */
static const char *const scaler_names[] = { "none", "static", "dynamic", "underflow-aware" };

START_TEST(each_scaler_trains_fp16)
{
    gan_loader *loader = test_loader();
    char name[64];
    snprintf(name, sizeof name, "scaler.name=%s", scaler_names[_i]);
    const char *extra[] = { "precision.mode=fp16", name, NULL };
    gan_config *cfg = tiny_config("fp16", extra);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    ck_assert_int_eq(r.iterations, 20);
    ck_assert(w.all_finite);
    const char *dir = gan_trainer_run_dir(t);
    char *csv = test_read_run_file(dir, GAN_RUN_METRICS);
    ck_assert_int_eq(count_lines(csv), 5);
    static const char *const nets[] = { "critic", "generator" };
    for (int k = 0; k < 2; k++) {
        char col[64];
        for (int line = 1; line <= 4; line++) {
            snprintf(col, sizeof col, "%s_scale", nets[k]);
            double scale = number_at(csv, line, col);
            ck_assert_msg(scale > 0 && isfinite(scale), "%s = %g", col, scale);
            /* none is scale 1; static holds its 1024; the dynamic ones start at 65536 and
             * back off from overflow of the FP16 gradients but never grow within 20. */
            if (_i == 0)
                ck_assert_double_eq(scale, 1.0);
            if (_i == 1)
                ck_assert_double_eq(scale, 1024.0);
            if (_i >= 2)
                ck_assert_double_le(scale, 65536.0);
            snprintf(col, sizeof col, "%s_skipped", nets[k]);
            double skipped = number_at(csv, line, col);
            ck_assert(skipped >= 0 && skipped == floor(skipped));
            snprintf(col, sizeof col, "%s_underflow_frac", nets[k]);
            double frac = number_at(csv, line, col);
            ck_assert_msg(frac >= 0 && frac <= 1, "%s = %g", col, frac);
            snprintf(col, sizeof col, "%s_overflow", nets[k]);
            char buf[32];
            cell(csv, line, column_of(csv, col), buf, sizeof buf);
            ck_assert_msg(strcmp(buf, "none") == 0 || strcmp(buf, "gradient") == 0 ||
                          strcmp(buf, "forward") == 0 || strcmp(buf, "both") == 0,
                          "line %d %s = \"%s\"", line, col, buf);
        }
        snprintf(col, sizeof col, "%s_scale", nets[k]);
        ck_assert_double_eq(final_value(dir, col), number_at(csv, 4, col));
        snprintf(col, sizeof col, "%s_skipped", nets[k]);
        ck_assert_double_eq(final_value(dir, col), number_at(csv, 4, col));
    }
    /* The skipped count only grows. */
    for (int line = 2; line <= 4; line++)
        ck_assert_double_ge(number_at(csv, line, "critic_skipped"),
                            number_at(csv, line - 1, "critic_skipped"));
    free(csv);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* A scaler other than none, with no precision.mode given, means fp16 at level O2; the
 * configuration says so and where it came from. Given, the mode stays as given. */
struct implied_case {
    const char *set[3];
    const char *mode;
    const char *origin;           /* a part of precision.mode's origin */
};

static const struct implied_case implied_cases[] = {
    { { "scaler.name=underflow-aware", NULL }, "fp16",
      "implied by scaler.name = \"underflow-aware\" (--set scaler.name=underflow-aware)" },
    { { "generator.scaler.name=static", NULL }, "fp16", "implied by generator.scaler.name" },
    { { "scaler.name=dynamic", "precision.mode=bf16", NULL }, "bf16", "--set precision.mode=bf16" },
    { { "scaler.name=none", NULL }, "fp32", "default" },
};

START_TEST(scaler_implies_fp16)
{
    const struct implied_case *c = &implied_cases[_i];
    gan_loader *loader = test_loader();
    const char *extra[4] = { c->set[0], c->set[1], "run.iterations=1", NULL };
    if (!c->set[1])
        extra[1] = "run.iterations=1", extra[2] = NULL;
    gan_config *cfg = tiny_config("implied", extra);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    const struct gan_config_value *mode = gan_config_find(cfg, "precision.mode");
    ck_assert_ptr_nonnull(mode);
    ck_assert_str_eq(mode->s, c->mode);
    ck_assert_msg(strstr(mode->origin, c->origin), "origin \"%s\" lacks \"%s\"", mode->origin,
                  c->origin);
    const char *level = NULL;
    ck_assert_int_eq(gan_config_get_string(cfg, "precision.level", &level), GAN_OK);
    ck_assert_str_eq(level, "O2");
    enum gan_dtype dtype;
    enum gan_precision_level lv;
    gan_ctx_get_precision(gan_trainer_ctx(t), &dtype, &lv);
    ck_assert_int_eq(dtype, strcmp(c->mode, "fp16") == 0 ? GAN_F16
                            : strcmp(c->mode, "bf16") == 0 ? GAN_BF16 : GAN_F32);
    /* The run's saved configuration holds the mode, so that a resumed run keeps it. */
    char *text = test_read_run_file(gan_trainer_run_dir(t), GAN_RUN_CONFIG);
    char want[64];
    snprintf(want, sizeof want, "mode = \"%s\";", c->mode);
    ck_assert_ptr_nonnull(strstr(text, want));
    free(text);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* A static scale of 1e-6 flushes the FP16 gradients to zero, and metrics.csv shows it;
 * FP32 has no 16-bit gradients to flush. */
START_TEST(low_scale_shows_underflow)
{
    gan_loader *loader = test_loader();
    const char *low[] = { "scaler.name=static", "scaler.scale=1e-6", NULL };
    const char *fp32[] = { "precision.mode=fp32", NULL };
    gan_config *cfg_low = tiny_config("low", low), *cfg_32 = tiny_config("fp32", fp32);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *a = train(cfg_low, loader, &w, &r);
    gan_trainer *b = train(cfg_32, loader, &w, &r);
    char *csv_low = test_read_run_file(gan_trainer_run_dir(a), GAN_RUN_METRICS);
    char *csv_32 = test_read_run_file(gan_trainer_run_dir(b), GAN_RUN_METRICS);
    for (int line = 1; line <= 4; line++) {
        /* 1e-6 is not an FP32 number: the scale is the nearest one, written with 9 digits. */
        ck_assert_double_eq_tol(number_at(csv_low, line, "critic_scale"), (double)1e-6f, 1e-15);
        double frac = number_at(csv_low, line, "critic_underflow_frac");
        ck_assert_msg(frac > 0.5, "line %d: critic_underflow_frac %g at scale 1e-6", line, frac);
        ck_assert_double_gt(number_at(csv_low, line, "generator_underflow_frac"), 0.5);
        ck_assert_double_eq(number_at(csv_32, line, "critic_underflow_frac"), 0.0);
        ck_assert_double_eq(number_at(csv_32, line, "generator_underflow_frac"), 0.0);
        ck_assert_double_eq(number_at(csv_32, line, "critic_scale"), 1.0);
    }
    free(csv_low);
    free(csv_32);
    gan_trainer_free(a);
    gan_trainer_free(b);
    gan_config_free(cfg_low);
    gan_config_free(cfg_32);
    gan_loader_free(loader);
}
END_TEST

/* Every parameter of a network, as host floats (count in *n). */
static float *net_values(gan_trainer *t, enum gan_model_role role, size_t *n)
{
    gan_net *net = gan_trainer_net(t, role);
    *n = (size_t)gan_net_total(net);
    float *v = malloc(*n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0, at = 0; i < gan_net_count(net); i++) {
        size_t m = (size_t)gan_net_numel(net, i);
        ck_assert_int_eq(gan_tensor_to_host(gan_trainer_ctx(t), gan_net_tensor(net, i), v + at, m),
                         GAN_OK);
        at += m;
    }
    return v;
}

/* A scale of 1e30 overflows every FP16 gradient: each step is skipped as a gradient
 * overflow and the parameters never move. The critic's objective is itself infinite
 * then (the penalty's inner gradient, seeded with the scale, overflowed), which must
 * count as the scale's overflow, not the forward pass's. A critic driven to huge weights
 * by a huge learning rate overflows in its forward pass instead, and says so. */
START_TEST(overflows_are_told_apart)
{
    gan_loader *loader = test_loader();
    const char *huge[] = { "scaler.name=static", "scaler.scale=1e30", NULL };
    gan_config *cfg = tiny_config("huge", huge);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader, .stop = &stop_flag };
    gan_trainer *t = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    stop_flag = 0;
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    size_t n0, n1;
    float *before = net_values(t, GAN_MODEL_CRITIC, &n0);
    struct gan_trainer_result r;
    ck_assert_msg(gan_trainer_run(t, &r, &err) == GAN_OK, "%s", err.message);
    float *after = net_values(t, GAN_MODEL_CRITIC, &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert_msg(memcmp(before, after, n0 * sizeof *before) == 0, "a skipped step moved the critic");
    char *csv = test_read_run_file(gan_trainer_run_dir(t), GAN_RUN_METRICS);
    char buf[32];
    for (int line = 1; line <= 4; line++) {
        ck_assert_str_eq(cell(csv, line, column_of(csv, "critic_overflow"), buf, sizeof buf), "gradient");
        ck_assert_double_eq(number_at(csv, line, "critic_skipped"), 2.0 * 5 * line);
    }
    ck_assert_double_eq(final_value(gan_trainer_run_dir(t), "critic_skipped"), 40.0);
    free(csv);
    free(before);
    free(after);
    gan_trainer_free(t);
    gan_config_free(cfg);

    const char *wild[] = { "precision.mode=fp16", "critic.optimizer.lr=10",
                           "critic.optimizer.lr_decay=none", NULL };
    cfg = tiny_config("wild", wild);
    struct watch w = { 0 };
    t = train(cfg, loader, &w, &r);
    csv = test_read_run_file(gan_trainer_run_dir(t), GAN_RUN_METRICS);
    int forward = 0;
    for (int line = 1; line <= 4; line++) {
        cell(csv, line, column_of(csv, "critic_overflow"), buf, sizeof buf);
        forward += strcmp(buf, "forward") == 0 || strcmp(buf, "both") == 0;
    }
    ck_assert_msg(forward > 0, "no forward overflow: %s", csv);
    after = net_values(t, GAN_MODEL_CRITIC, &n1);
    for (size_t i = 0; i < n1; i++)
        ck_assert_msg(isfinite(after[i]), "critic parameter %zu is %g", i, after[i]);
    free(after);
    free(csv);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

/* Debug level 1: grad_stats.csv holds, at every metrics row, one line per gradient the
 * scalers saw: each parameter and the penalty's inner gradient (seeded with the critic's
 * scale), with counts that add up. */
START_TEST(debug_level_writes_grad_stats)
{
    gan_loader *loader = test_loader();
    const char *extra[] = { "scaler.name=dynamic", "run.debug_level=1", NULL };
    gan_config *cfg = tiny_config("debug", extra);
    struct watch w = { 0 };
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, &w, &r);
    const char *dir = gan_trainer_run_dir(t);
    char *csv = test_read_run_file(dir, GAN_RUN_GRAD_STATS);
    gan_net *critic = gan_trainer_net(t, GAN_MODEL_CRITIC);
    gan_net *generator = gan_trainer_net(t, GAN_MODEL_GENERATOR);
    /* 4 rows of metrics; each: the critic's parameters, penalty.inner, the generator's. */
    int per_row = (int)(gan_net_count(critic) + 1 + gan_net_count(generator));
    ck_assert_int_eq(count_lines(csv), 1 + 4 * per_row);
    ck_assert_int_eq(column_of(csv, "iteration"), 0);
    int c_tensor = column_of(csv, "tensor"), c_dtype = column_of(csv, "dtype");
    int c_role = column_of(csv, "role"), c_el = column_of(csv, "elements");
    int c_zero = column_of(csv, "zero_frac"), c_scale = column_of(csv, "scale");
    ck_assert(c_tensor > 0 && c_dtype > 0 && c_role > 0 && c_el > 0 && c_zero > 0 && c_scale > 0);
    int saw_inner = 0;
    for (int line = 1; line <= 4 * per_row; line++) {
        char name[128], dtype[16], role[16], buf[64];
        cell(csv, line, c_tensor, name, sizeof name);
        cell(csv, line, c_dtype, dtype, sizeof dtype);
        cell(csv, line, c_role, role, sizeof role);
        ck_assert_str_eq(dtype, "F16");
        if (strcmp(name, "penalty.inner") == 0) {
            saw_inner++;
            ck_assert_str_eq(role, "inner");
            /* [batch, 2]: the gradient at every interpolate. */
            ck_assert_str_eq(cell(csv, line, c_el, buf, sizeof buf), "64");
        } else {
            ck_assert_str_eq(role, "param");
            gan_net *net = strncmp(name, "critic.", 7) == 0 ? critic : generator;
            long p = gan_net_find(net, name);
            ck_assert_msg(p >= 0, "grad_stats.csv names %s", name);
            ck_assert_int_eq(atoll(cell(csv, line, c_el, buf, sizeof buf)), gan_net_numel(net, (size_t)p));
        }
        double zero = atof(cell(csv, line, c_zero, buf, sizeof buf));
        ck_assert(zero >= 0 && zero <= 1);
        ck_assert_double_gt(atof(cell(csv, line, c_scale, buf, sizeof buf)), 0);
    }
    ck_assert_int_eq(saw_inner, 4);
    free(csv);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_loader_free(loader);
}
END_TEST

static Suite *trainer_suite(void)
{
    Suite *s = suite_create("trainer");
    TCase *loop = tcase_create("loop");
    tcase_add_checked_fixture(loop, scratch_setup, test_scratch_remove);
    tcase_set_timeout(loop, 120);
    tcase_add_test(loop, trains_and_writes_outputs);
    tcase_add_loop_test(loop, same_seed_same_metrics, 0,
                        (int)(sizeof data_sets / sizeof data_sets[0]));
    suite_add_tcase(s, loop);

    TCase *memory = tcase_create("memory");
    tcase_add_checked_fixture(memory, scratch_setup, test_scratch_remove);
    tcase_set_timeout(memory, 120);
    tcase_add_test(memory, memory_is_flat);
    suite_add_tcase(s, memory);

    TCase *stop = tcase_create("stop");
    tcase_add_checked_fixture(stop, scratch_setup, test_scratch_remove);
    tcase_set_timeout(stop, 120);
    tcase_add_test(stop, stop_checkpoints_and_reports);
    suite_add_tcase(s, stop);

    TCase *bad = tcase_create("set-up errors");
    tcase_add_checked_fixture(bad, scratch_setup, test_scratch_remove);
    tcase_set_timeout(bad, 120);
    tcase_add_loop_test(bad, bad_setups_are_explained, 0,
                        (int)(sizeof bad_cases / sizeof bad_cases[0]));
    tcase_add_test(bad, existing_run_is_not_overwritten);
    suite_add_tcase(s, bad);

    TCase *mixed = tcase_create("mixed precision");
    tcase_add_checked_fixture(mixed, scratch_setup, test_scratch_remove);
    tcase_set_timeout(mixed, 120);
    tcase_add_loop_test(mixed, each_scaler_trains_fp16, 0,
                        (int)(sizeof scaler_names / sizeof scaler_names[0]));
    tcase_add_loop_test(mixed, scaler_implies_fp16, 0,
                        (int)(sizeof implied_cases / sizeof implied_cases[0]));
    tcase_add_test(mixed, low_scale_shows_underflow);
    tcase_add_test(mixed, overflows_are_told_apart);
    tcase_add_test(mixed, debug_level_writes_grad_stats);
    suite_add_tcase(s, mixed);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(trainer_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
