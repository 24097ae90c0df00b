/* SPDX-License-Identifier: MIT */
/* check_checkpoint.c — checkpoints of a tiny WGAN-GP: the round trip, a resumed run that ends
 * bit-identical to an uninterrupted one (also in FP16 with loss scalers, whose state the
 * checkpoint holds, and with FP8 products), and damaged or mismatched files refused with a reason. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/state/checkpoint.h"
#include "config/configuration.h"
#include "plugin/plugin_loader.h"
#include "train/run/run_dir.h"
#include "io/safetensors/safetensors.h"
#include "train/loop/trainer.h"
#include "../lib/scratch.h"

/* ------------------------------------------------------------------ helpers */

static void scratch_setup(void)
{
    test_scratch_make("ganctl-checkpoint");
}

static const char *const tiny[] = {
    "backend.threads=1",
    "generator.model.width=16", "generator.model.depth=2",
    "critic.model.width=12", "critic.model.depth=2",
    "data.batch_size=32", "critic.iterations=3",
    "generator.optimizer.lr=1e-3", "critic.optimizer.lr=1e-3", "critic.optimizer.clip_norm=5",
    "loss.gradient-penalty.lambda=0.1",
    "run.iterations=20", "run.log_every=2", "run.eval_every=10", "run.image_every=0",
    "run.checkpoint_every=0", "run.metrics_time=false",
    NULL,
};

static void set_all(gan_config *cfg, const char *const *sets)
{
    struct gan_error err;
    gan_error_clear(&err);
    for (const char *const *s = sets; s && *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
}

static char *dir_of(const char *name)
{
    static char paths[4][700];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", test_scratch, name);
    return p;
}

static gan_config *new_config(const char *dir, const char *const *extra)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    set_all(cfg, tiny);
    set_all(cfg, extra);
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", dir_of(dir), "test", &err), GAN_OK);
    return cfg;
}

/* The configuration a resumed run starts from: the one saved in the checkpoint. */
static gan_config *saved_config(const char *dir, const char *const *extra)
{
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, GAN_RUN_CHECKPOINT);
    char *text = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_checkpoint_read_config(path, &text, &err) == GAN_OK, "%s", err.message);
    gan_config *cfg = NULL;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    ck_assert_msg(gan_config_read_string(cfg, text, path, GAN_CONFIG_FILE, &err) == GAN_OK, "%s",
                  err.message);
    free(text);
    set_all(cfg, extra);
    return cfg;
}

static gan_loader *test_loader(void)
{
    gan_loader *l = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_loader_new(&l, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err), GAN_OK);
    return l;
}

static volatile sig_atomic_t stop_flag;
static int64_t stop_at;

static void on_progress(void *ctx, const struct gan_progress *p, int final)
{
    (void)ctx;
    (void)final;
    if (stop_at && p->iteration >= stop_at)
        stop_flag = SIGTERM;
}

/* Builds a trainer (new, or resuming `resume_dir`), runs it, and returns it. */
static gan_trainer *train(gan_config *cfg, gan_loader *loader, const char *resume_dir,
                          int64_t stop_after, struct gan_trainer_result *r)
{
    stop_flag = 0;
    stop_at = stop_after;
    struct gan_trainer_setup setup = {
        .config = cfg, .loader = loader, .resume_dir = resume_dir, .stop = &stop_flag,
        .events = { .ctx = NULL, .progress = on_progress },
    };
    gan_trainer *t = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_trainer_run(t, r, &err) == GAN_OK, "%s", err.message);
    return t;
}

/* Every parameter of a trainer's networks, in order, as host floats. */
static float *parameters(gan_trainer *t, size_t *count)
{
    gan_net *g = gan_trainer_net(t, GAN_MODEL_GENERATOR), *c = gan_trainer_net(t, GAN_MODEL_CRITIC);
    size_t n = (size_t)(gan_net_total(g) + gan_net_total(c));
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    size_t at = 0;
    gan_net *nets[2] = { g, c };
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < gan_net_count(nets[k]); i++) {
            size_t m = (size_t)gan_net_numel(nets[k], i);
            ck_assert_int_eq(gan_tensor_to_host(gan_trainer_ctx(t), gan_net_tensor(nets[k], i),
                                                v + at, m), GAN_OK);
            at += m;
        }
    *count = n;
    return v;
}

/* Two checkpoint files hold the same tensors, bit for bit, and the same counters. */
static void assert_same_state(const char *dir_a, const char *dir_b)
{
    char pa[800], pb[800], msg[512];
    snprintf(pa, sizeof pa, "%s/%s", dir_a, GAN_RUN_CHECKPOINT);
    snprintf(pb, sizeof pb, "%s/%s", dir_b, GAN_RUN_CHECKPOINT);
    gan_st_file *a, *b;
    ck_assert_msg(gan_st_open(pa, &a, msg, sizeof msg) == GAN_OK, "%s", msg);
    ck_assert_msg(gan_st_open(pb, &b, msg, sizeof msg) == GAN_OK, "%s", msg);
    ck_assert_uint_eq(gan_st_count(a), gan_st_count(b));
    for (size_t i = 0; i < gan_st_count(a); i++) {
        const struct gan_st_tensor *ta = gan_st_tensor_at(a, i);
        const struct gan_st_tensor *tb = gan_st_find(b, ta->name);
        ck_assert_msg(tb != NULL, "%s lacks %s", pb, ta->name);
        ck_assert_uint_eq(ta->nbytes, tb->nbytes);
        ck_assert_msg(memcmp(ta->data, tb->data, ta->nbytes) == 0, "%s differs", ta->name);
    }
    static const char *const keys[] = {
        "iteration", "rng.seed", "rng.z_offset", "rng.loss_offset", "data.block",
        "data.shuffle_block", "data.cursor", "optimizer.generator.step", "optimizer.critic.step",
        "scaler.generator", "scaler.critic", "trainer.generator.skipped", "trainer.critic.skipped",
        "trainer.generator.overflows", "trainer.critic.overflows",
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_str_eq(gan_st_metadata_get(a, keys[i]), gan_st_metadata_get(b, keys[i]));
    gan_st_close(a);
    gan_st_close(b);
}

/* ------------------------------------------------------------------ round trip */

START_TEST(round_trip_restores_everything)
{
    gan_loader *loader = test_loader();
    gan_config *cfg = new_config("rt", NULL);
    struct gan_trainer_result r;
    gan_trainer *a = train(cfg, loader, NULL, 0, &r);
    size_t na;
    float *pa = parameters(a, &na);
    /* It holds the folder's lock until it goes: one trainer at a time in a folder. */
    gan_trainer_free(a);

    /* Resumed with nothing left to do: the state is the file's and nothing moves. */
    gan_config *again = saved_config(dir_of("rt"), NULL);
    struct gan_trainer_setup setup = { .config = again, .loader = loader, .resume_dir = dir_of("rt") };
    gan_trainer *b = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_trainer_new(&setup, &b, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(gan_trainer_iteration(b), 20);
    size_t nb;
    float *pb = parameters(b, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(pa, pb, na * sizeof *pa) == 0);
    /* And they are trained values, not the initialisation. */
    gan_config *fresh_cfg = new_config("rt-fresh", (const char *const[]){ "run.iterations=1", NULL });
    gan_trainer *c = train(fresh_cfg, loader, NULL, 0, &r);
    size_t nc;
    float *pc = parameters(c, &nc);
    ck_assert(memcmp(pa, pc, na * sizeof *pa) != 0);

    /* The file's names are PyTorch's, with the network in front. */
    char path[800], msg[512];
    snprintf(path, sizeof path, "%s/%s", dir_of("rt"), GAN_RUN_CHECKPOINT);
    gan_st_file *f;
    ck_assert_int_eq(gan_st_open(path, &f, msg, sizeof msg), GAN_OK);
    const struct gan_st_tensor *w0 = gan_st_find(f, "critic.fc0.weight");
    ck_assert_ptr_nonnull(w0);
    ck_assert_int_eq(w0->ndim, 2);
    ck_assert_uint_eq(w0->shape[0], 12);
    ck_assert_uint_eq(w0->shape[1], 2);
    ck_assert_ptr_nonnull(gan_st_find(f, "generator.fc2.bias"));
    ck_assert_ptr_nonnull(gan_st_find(f, "optimizer.critic.exp_avg_sq.fc1.weight"));
    ck_assert_str_eq(gan_st_metadata_get(f, "iteration"), "20");
    ck_assert_str_eq(gan_st_metadata_get(f, "optimizer.critic.step"), "60");
    ck_assert_str_eq(gan_st_metadata_get(f, "optimizer.generator.step"), "19");
    ck_assert_str_eq(gan_st_metadata_get(f, "format"), GAN_CHECKPOINT_FORMAT);
    /* Each network's loss scaler ("none" here) and the trainer's skip count. */
    ck_assert_str_eq(gan_st_metadata_get(f, "scaler.critic"), "none/1");
    ck_assert_str_eq(gan_st_metadata_get(f, "trainer.critic.skipped"), "0");
    const struct gan_st_tensor *updates = gan_st_find(f, "scaler.critic.updates");
    ck_assert_ptr_nonnull(updates);
    ck_assert_int_eq(updates->dtype, GAN_ST_I64);
    int64_t n_updates;
    memcpy(&n_updates, updates->data, sizeof n_updates);
    ck_assert_int_eq(n_updates, 60);
    gan_st_close(f);

    free(pa);
    free(pb);
    free(pc);
    gan_trainer_free(b);
    gan_trainer_free(c);
    gan_config_free(cfg);
    gan_config_free(again);
    gan_config_free(fresh_cfg);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ resume */

/* Stopped after k iterations and resumed, a run ends where an uninterrupted one does:
 * the same parameters, moments and counters bit for bit, and the same metrics.csv. */
struct resume_case {
    const char *data;
    int64_t stop_after;
    const char *checkpoint_every;
    const char *scaling[4];       /* up to four precision and loss-scaling settings */
    double moved_from;            /* > 0: the critic's scale must end away from this */
};

/* The FP16 cases have loss scales that move while the run is stopped and resumed: the
 * underflow-aware scaler raises a scale started at 2^-14 at nearly every update, the
 * pytorch preset backs off from 2^16 at the first overflows. */
static const struct resume_case resume_cases[] = {
    { "8gaussians", 7, "run.checkpoint_every=0", { NULL }, 0 },
    { "8gaussians", 1, "run.checkpoint_every=0", { NULL }, 0 },
    { "25gaussians", 10, "run.checkpoint_every=5", { NULL }, 0 },
    { "swissroll", 13, "run.checkpoint_every=4", { NULL }, 0 },
    { "8gaussians", 7, "run.checkpoint_every=0",
      { "scaler.name=underflow-aware", "scaler.init=6.103515625e-05", "scaler.min=0", NULL },
      0x1p-14 },
    { "8gaussians", 3, "run.checkpoint_every=2",
      { "scaler.name=dynamic", "scaler.preset=pytorch", NULL }, 65536.0 },
    { "swissroll", 9, "run.checkpoint_every=0",
      { "precision.mode=bf16", "critic.scaler.name=static", "critic.scaler.scale=64" }, 0 },
    /* A lazy r1 every 4 critic steps, 3 an iteration: the stop at iteration 7 (critic step
     * 21) falls mid-interval, and the rows after it show r1 from before the stop. */
    { "8gaussians", 7, "run.checkpoint_every=0",
      { "loss.terms=[\"hinge\",\"gradient-penalty\",\"r1\"]", "loss.r1.interval=4",
        "loss.r1.gamma=0.5", NULL }, 0 },
    /* One critic step an iteration, stopped after the first: the checkpoint follows
     * the only step that has computed r1, and the resumed rows show its value. */
    { "8gaussians", 1, "run.checkpoint_every=0",
      { "loss.terms=[\"hinge\",\"gradient-penalty\",\"r1\"]", "loss.r1.interval=4",
        "critic.iterations=1" }, 0 },
    /* FP8 products: the checkpoint names its recipe, which the resumed run must find. */
    { "8gaussians", 5, "run.checkpoint_every=0",
      { "precision.mode=fp8", "fp8.recipe=current", NULL }, 0 },
};

START_TEST(resume_is_bit_identical)
{
    const struct resume_case *c = &resume_cases[_i];
    gan_loader *loader = test_loader();
    char data[64];
    snprintf(data, sizeof data, "data.name=%s", c->data);
    const char *extra[] = { data, c->checkpoint_every, "run.seed=3", "run.log_every=1",
                            c->scaling[0], c->scaling[1], c->scaling[2], c->scaling[3], NULL };

    gan_config *whole_cfg = new_config("whole", extra);
    struct gan_trainer_result r;
    gan_trainer *whole = train(whole_cfg, loader, NULL, 0, &r);
    ck_assert_int_eq(r.interrupted, 0);

    gan_config *part_cfg = new_config("parts", extra);
    gan_trainer *first = train(part_cfg, loader, NULL, c->stop_after, &r);
    ck_assert_int_eq(r.interrupted, 1);
    ck_assert_int_eq(r.iterations, c->stop_after);
    gan_trainer_free(first);

    gan_config *resumed_cfg = saved_config(dir_of("parts"), NULL);
    gan_trainer *second = train(resumed_cfg, loader, dir_of("parts"), 0, &r);
    ck_assert_int_eq(r.interrupted, 0);
    ck_assert_int_eq(r.iterations, 20);

    size_t n1, n2;
    float *p1 = parameters(whole, &n1), *p2 = parameters(second, &n2);
    ck_assert_uint_eq(n1, n2);
    ck_assert_msg(memcmp(p1, p2, n1 * sizeof *p1) == 0, "resumed parameters differ");
    assert_same_state(dir_of("whole"), dir_of("parts"));
    char *m1 = test_read_run_file(dir_of("whole"), GAN_RUN_METRICS);
    char *m2 = test_read_run_file(dir_of("parts"), GAN_RUN_METRICS);
    ck_assert_str_eq(m1, m2);
    if (c->moved_from > 0) {
        /* The scaler's state did change over the run, so its continuation was tested. */
        char path[800], msg[512];
        snprintf(path, sizeof path, "%s/%s", dir_of("parts"), GAN_RUN_CHECKPOINT);
        gan_st_file *f;
        ck_assert_msg(gan_st_open(path, &f, msg, sizeof msg) == GAN_OK, "%s", msg);
        const struct gan_st_tensor *scale = gan_st_find(f, "scaler.critic.scale");
        ck_assert_ptr_nonnull(scale);
        ck_assert_int_eq(scale->dtype, GAN_ST_F64);
        double v;
        memcpy(&v, scale->data, sizeof v);
        ck_assert_msg(v != c->moved_from, "the critic's scale stayed at %g", v);
        gan_st_close(f);
    }

    free(m1);
    free(m2);
    free(p1);
    free(p2);
    gan_trainer_free(whole);
    gan_trainer_free(second);
    gan_config_free(whole_cfg);
    gan_config_free(part_cfg);
    gan_config_free(resumed_cfg);
    gan_loader_free(loader);
}
END_TEST

/* A resumed run may be given more iterations than it first had. */
START_TEST(resume_extends_a_finished_run)
{
    gan_loader *loader = test_loader();
    const char *ten[] = { "run.iterations=10", NULL };
    gan_config *cfg = new_config("short", ten);
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, NULL, 0, &r);
    gan_trainer_free(t);
    const char *more[] = { "run.iterations=20", NULL };
    gan_config *again = saved_config(dir_of("short"), more);
    t = train(again, loader, dir_of("short"), 0, &r);
    ck_assert_int_eq(r.iterations, 20);
    char *csv = test_read_run_file(dir_of("short"), GAN_RUN_METRICS);
    ck_assert_ptr_nonnull(strstr(csv, "\n10,"));
    ck_assert_ptr_nonnull(strstr(csv, "\n20,"));
    free(csv);
    gan_trainer_free(t);
    gan_config_free(cfg);
    gan_config_free(again);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ refusals */

/* A copy of the run's checkpoint, changed by `edit`, written over it. */
enum edit {
    EDIT_TRUNCATE, EDIT_FLIP_HEADER, EDIT_DROP_TENSOR, EDIT_EXTRA_TENSOR, EDIT_BAD_METADATA,
    EDIT_NOT_GANCTL, EDIT_REMOVE, EDIT_BAD_REPORTED, EDIT_COUNT
};

struct refusal {
    enum edit edit;
    gan_status status;
    const char *message;
};

/* The damaged metadata value: a refusal names the entry, never quotes the file's text. */
#define BAD_METADATA_VALUE "12x_SECRET4242"

static const struct refusal refusals[] = {
    { EDIT_TRUNCATE, GAN_ERR_FORMAT, "not a usable checkpoint" },
    { EDIT_FLIP_HEADER, GAN_ERR_FORMAT, "not a usable checkpoint" },
    { EDIT_DROP_TENSOR, GAN_ERR_FORMAT, "the checkpoint lacks critic.fc1.bias" },
    { EDIT_EXTRA_TENSOR, GAN_ERR_FORMAT, "the checkpoint holds critic.fc9.weight, which these networks do not have" },
    { EDIT_BAD_METADATA, GAN_ERR_FORMAT, "metadata \"rng.z_offset\" is not a whole number from 0 to 18446744073709551615: the file is damaged; resume from a copy of the run folder or start a new run" },
    { EDIT_NOT_GANCTL, GAN_ERR_FORMAT, "not a ganctl checkpoint" },
    { EDIT_REMOVE, GAN_ERR_NOT_FOUND, "no checkpoint there" },
    { EDIT_BAD_REPORTED, GAN_ERR_FORMAT, "entry \"reported.*\" (the " },
};

static void rewrite(const char *path, enum edit edit)
{
    char msg[512];
    if (edit == EDIT_REMOVE) {
        ck_assert_int_eq(unlink(path), 0);
        return;
    }
    if (edit == EDIT_TRUNCATE || edit == EDIT_FLIP_HEADER) {
        FILE *f = fopen(path, "r+b");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
        long size = ftell(f);
        if (edit == EDIT_FLIP_HEADER) {
            ck_assert_int_eq(fseek(f, 9, SEEK_SET), 0);
            ck_assert_int_eq(fputc('#', f), '#');
            fclose(f);
        } else {
            fclose(f);
            ck_assert_int_eq(truncate(path, size - 100), 0);
        }
        return;
    }
    gan_st_file *in;
    ck_assert_int_eq(gan_st_open(path, &in, msg, sizeof msg), GAN_OK);
    gan_st_writer *w = gan_st_writer_new();
    for (size_t i = 0; i < gan_st_count(in); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(in, i);
        if (edit == EDIT_DROP_TENSOR && strcmp(t->name, "critic.fc1.bias") == 0)
            continue;
        ck_assert_int_eq(gan_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data,
                                           t->nbytes, msg, sizeof msg), GAN_OK);
    }
    static const float extra[4] = { 1, 2, 3, 4 };
    uint64_t shape[2] = { 2, 2 };
    if (edit == EDIT_EXTRA_TENSOR)
        ck_assert_int_eq(gan_st_writer_add(w, "critic.fc9.weight", GAN_ST_F32, 2, shape, extra,
                                           sizeof extra, msg, sizeof msg), GAN_OK);
    for (size_t i = 0; i < gan_st_metadata_count(in); i++) {
        const char *key, *value;
        gan_st_metadata_at(in, i, &key, &value);
        if (edit == EDIT_NOT_GANCTL && strcmp(key, "format") == 0)
            continue;
        if (edit == EDIT_BAD_METADATA && strcmp(key, "rng.z_offset") == 0)
            value = BAD_METADATA_VALUE;
        ck_assert_int_eq(gan_st_writer_set_metadata(w, key, value, msg, sizeof msg), GAN_OK);
    }
    /* A lazy term's last value that is no number; the message must not quote it. */
    if (edit == EDIT_BAD_REPORTED)
        ck_assert_int_eq(gan_st_writer_set_metadata(w, "reported.r1", "SECRET4242", msg,
                                                    sizeof msg), GAN_OK);
    /* The writer borrows the tensors' bytes from `in`: close it only after the write. */
    ck_assert_int_eq(gan_st_writer_write(w, path, msg, sizeof msg), GAN_OK);
    gan_st_writer_free(w);
    gan_st_close(in);
}

START_TEST(damaged_checkpoint_is_refused)
{
    const struct refusal *c = &refusals[_i];
    gan_loader *loader = test_loader();
    const char *short_run[] = { "run.iterations=3", NULL };
    gan_config *cfg = new_config("victim", short_run);
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, NULL, 0, &r);
    gan_trainer_free(t);
    /* The configuration is read first, as the program does, then the file is damaged. */
    gan_config *again = saved_config(dir_of("victim"), NULL);
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir_of("victim"), GAN_RUN_CHECKPOINT);
    rewrite(path, c->edit);
    struct gan_trainer_setup setup = { .config = again, .loader = loader,
                                       .resume_dir = dir_of("victim") };
    struct gan_error err;
    gan_error_clear(&err);
    t = NULL;
    ck_assert_int_eq(gan_trainer_new(&setup, &t, &err), c->status);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err.message, c->message), "\"%s\" lacks \"%s\"", err.message, c->message);
    ck_assert_msg(strstr(err.message, path), "\"%s\" does not name the file", err.message);
    ck_assert_msg(!strstr(err.message, "SECRET4242"), "\"%s\" quotes the file's value", err.message);
    gan_config_free(cfg);
    gan_config_free(again);
    gan_loader_free(loader);
}
END_TEST

/* A checkpoint of other networks (another width) does not load into these. */
START_TEST(other_networks_are_refused)
{
    gan_loader *loader = test_loader();
    const char *short_run[] = { "run.iterations=2", NULL };
    gan_config *cfg = new_config("wide", short_run);
    struct gan_trainer_result r;
    gan_trainer *t = train(cfg, loader, NULL, 0, &r);
    gan_trainer_free(t);
    const char *narrower[] = { "critic.model.width=8", NULL };
    gan_config *again = saved_config(dir_of("wide"), narrower);
    struct gan_trainer_setup setup = { .config = again, .loader = loader,
                                       .resume_dir = dir_of("wide") };
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_trainer_new(&setup, &t, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "tensor \"critic.fc0.weight\" is F32 [12, 2], expected F32 [8, 2]"),
                  "%s", err.message);
    ck_assert_ptr_nonnull(strstr(err.message, "other networks than this configuration builds"));
    gan_config_free(cfg);
    gan_config_free(again);
    gan_loader_free(loader);
}
END_TEST

static Suite *checkpoint_suite(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *trip = tcase_create("round trip");
    tcase_add_checked_fixture(trip, scratch_setup, test_scratch_remove);
    tcase_set_timeout(trip, 120);
    tcase_add_test(trip, round_trip_restores_everything);
    suite_add_tcase(s, trip);

    TCase *resume = tcase_create("resume");
    tcase_add_checked_fixture(resume, scratch_setup, test_scratch_remove);
    tcase_set_timeout(resume, 120);
    tcase_add_loop_test(resume, resume_is_bit_identical, 0,
                        (int)(sizeof resume_cases / sizeof resume_cases[0]));
    tcase_add_test(resume, resume_extends_a_finished_run);
    suite_add_tcase(s, resume);

    TCase *bad = tcase_create("refusals");
    tcase_add_checked_fixture(bad, scratch_setup, test_scratch_remove);
    tcase_set_timeout(bad, 120);
    tcase_add_loop_test(bad, damaged_checkpoint_is_refused, 0,
                        (int)(sizeof refusals / sizeof refusals[0]));
    tcase_add_test(bad, other_networks_are_refused);
    suite_add_tcase(s, bad);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(checkpoint_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
