/* SPDX-License-Identifier: MIT */
/* check_checkpoint_values.c — a checkpoint's values are checked when it is loaded, not
 * taken on trust: counters out of range or out of step with the iteration, RNG offsets
 * outside their streams, NaN or inf weights and moments are each refused with one line
 * that names the entry and the file; a run resumed past run.iterations is told to set
 * it above the checkpoint's iteration, and one resumed at its end still finishes as before. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/configuration.h"
#include "io/safetensors/safetensors.h"
#include "plugin/plugin_loader.h"
#include "train/state/checkpoint.h"
#include "train/run/run_dir.h"
#include "train/loop/trainer.h"
#include "../lib/scratch.h"

/* ------------------------------------------------------------------ a run to damage */

static void scratch_setup(void)
{
    test_scratch_make("ganctl-checkpoint-values");
}

/* Three iterations of three critic steps: the file holds iteration 3, 2 generator
 * steps and 9 critic steps. */
static const char *const tiny[] = {
    "backend.threads=1",
    "generator.model.width=8", "generator.model.depth=2",
    "critic.model.width=8", "critic.model.depth=2",
    "data.batch_size=16", "critic.iterations=3",
    "run.iterations=3", "run.log_every=1", "run.eval_every=0", "run.image_every=0",
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

static char run_dir[700], checkpoint[800];

static gan_loader *test_loader(void)
{
    gan_loader *l = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_loader_new(&l, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err), GAN_OK);
    return l;
}

/* Trains the tiny run into run_dir, leaving its checkpoint at `checkpoint`. */
static void train_victim(gan_loader *loader)
{
    snprintf(run_dir, sizeof run_dir, "%s/victim", test_scratch);
    snprintf(checkpoint, sizeof checkpoint, "%s/%s", run_dir, GAN_RUN_CHECKPOINT);
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    set_all(cfg, tiny);
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", run_dir, "test", &err), GAN_OK);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader };
    gan_trainer *t = NULL;
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    struct gan_trainer_result r;
    ck_assert_msg(gan_trainer_run(t, &r, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(r.iterations, 3);
    gan_trainer_free(t);
    gan_config_free(cfg);
}

/* The configuration a resumed run starts from, the checkpoint's own, with `extra`. */
static gan_config *saved_config(const char *const *extra)
{
    char *text = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_checkpoint_read_config(checkpoint, &text, &err) == GAN_OK, "%s", err.message);
    gan_config *cfg = NULL;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    ck_assert_msg(gan_config_read_string(cfg, text, checkpoint, GAN_CONFIG_FILE, &err) == GAN_OK,
                  "%s", err.message);
    free(text);
    set_all(cfg, extra);
    return cfg;
}

/* Resumes the run; returns the status and leaves the message in *err. */
static gan_status resume(gan_loader *loader, const char *const *extra, struct gan_error *err)
{
    gan_config *cfg = saved_config(extra);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader, .resume_dir = run_dir };
    gan_trainer *t = NULL;
    gan_error_clear(err);
    gan_status st = gan_trainer_new(&setup, &t, err);
    if (st == GAN_OK) {
        struct gan_trainer_result r;
        st = gan_trainer_run(t, &r, err);
        ck_assert_int_eq(r.iterations, 3);
        ck_assert_int_eq(r.planned, 3);
    } else {
        ck_assert_ptr_null(t);
    }
    gan_trainer_free(t);
    gan_config_free(cfg);
    return st;
}

/* ------------------------------------------------------------------ the damage */

/* One change to the checkpoint: a metadata entry's value, or one element of a tensor. */
struct damage {
    const char *entry;            /* a metadata key or a tensor name */
    const char *value;            /* the metadata's new value; NULL for a tensor */
    size_t element;               /* the tensor's element ... */
    float number;                 /* ... and its new value */
    const char *expect;           /* what the refusal says */
};

#define META(key, value, expect) { key, value, 0, 0.0f, expect }
#define ELEMENT(name, at, number, expect) { name, NULL, at, number, expect }

static const struct damage damages[] = {
    /* Values no run writes, each alone. */
    META("iteration", "4611686018427387904",
         "metadata \"iteration\" is 4611686018427387904, outside the iterations a run counts [0, 9007199254740992]"),
    META("iteration", "9007199254740993", "metadata \"iteration\" is 9007199254740993, outside"),
    META("optimizer.generator.step", "18446744073709551615",
         "metadata \"optimizer.generator.step\" is 18446744073709551615, outside a step count's range [0, 9223372036854775807]"),
    META("optimizer.critic.step", "9223372036854775808",
         "metadata \"optimizer.critic.step\" is 9223372036854775808, outside"),
    META("trainer.critic.skipped", "9223372036854775808",
         "metadata \"trainer.critic.skipped\" is 9223372036854775808, outside"),
    META("trainer.generator.overflows", "4",
         "metadata \"trainer.generator.overflows\" is 4, outside the mask of the two overflow kinds [0, 3]"),
    /* An RNG or data position no run reaches is told in what the user sets, not in the
     * stream's blocks, and its value is not quoted. */
    META("rng.z_offset", "18446744073709551615",
         "metadata \"rng.z_offset\" is not a position the generator's noise draws reach after any number of iterations, whatever run.seed, data.batch_size and run.iterations are: the file is damaged"),
    /* The loss stream's first block: a position in another stream. */
    META("rng.z_offset", "144115188075855872", "metadata \"rng.z_offset\" is not a position the generator's noise draws reach"),
    META("rng.loss_offset", "0", "metadata \"rng.loss_offset\" is not a position the loss terms' random draws reach"),
    META("rng.loss_offset", "18446744073709551615", "metadata \"rng.loss_offset\" is not a position"),
    META("data.block", "18446744073709551615", "metadata \"data.block\" is not a position the toy data's samples reach"),
    /* In range, but not what 3 iterations of 3 critic steps make. */
    META("optimizer.critic.step", "100",
         "optimizer.critic.step = 100 and trainer.critic.skipped = 0 count 100 critic steps, but its 3 iterations make 9 (critic.iterations = 3 per iteration)"),
    META("optimizer.generator.step", "3",
         "optimizer.generator.step = 3 and trainer.generator.skipped = 0 count 3 generator steps, but its 3 iterations make 2 (one per iteration after the first)"),
    META("trainer.generator.skipped", "1",
         "optimizer.generator.step = 2 and trainer.generator.skipped = 1 count 3 generator steps"),
    META("iteration", "4", "count 2 generator steps, but its 4 iterations make 3"),
    META("iteration", "0", "count 2 generator steps, but its 0 iterations make 0"),
    /* Weights and moments no run saves. */
    ELEMENT("critic.fc0.weight", 5, NAN, "the checkpoint's critic.fc0.weight holds NaN at element 5"),
    ELEMENT("generator.fc1.bias", 0, INFINITY, "the checkpoint's generator.fc1.bias holds inf at element 0"),
    ELEMENT("critic.fc1.weight", 3, -INFINITY, "the checkpoint's critic.fc1.weight holds -inf at element 3"),
    ELEMENT("optimizer.critic.exp_avg.fc0.bias", 1, NAN,
            "the checkpoint's optimizer.critic.exp_avg.fc0.bias holds NaN at element 1"),
    ELEMENT("optimizer.generator.exp_avg_sq.fc0.weight", 2, INFINITY,
            "the checkpoint's optimizer.generator.exp_avg_sq.fc0.weight holds inf at element 2"),
    ELEMENT("optimizer.critic.exp_avg_sq.fc1.weight", 0, -1.0f,
            "the checkpoint's optimizer.critic.exp_avg_sq.fc1.weight holds a negative second moment at element 0"),
};

/* Rewrites the checkpoint with one change. */
static void apply(const struct damage *d)
{
    char msg[512];
    gan_st_file *in;
    ck_assert_msg(gan_st_open(checkpoint, &in, msg, sizeof msg) == GAN_OK, "%s", msg);
    gan_st_writer *w = gan_st_writer_new();
    ck_assert_ptr_nonnull(w);
    float *copy = NULL;
    int found = 0;
    for (size_t i = 0; i < gan_st_count(in); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(in, i);
        const void *data = t->data;
        if (!d->value && strcmp(t->name, d->entry) == 0) {
            ck_assert_int_eq(t->dtype, GAN_ST_F32);
            ck_assert_uint_lt(d->element, t->count);
            copy = malloc(t->nbytes);
            ck_assert_ptr_nonnull(copy);
            memcpy(copy, t->data, t->nbytes);
            copy[d->element] = d->number;
            data = copy;
            found = 1;
        }
        ck_assert_int_eq(gan_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, data,
                                           t->nbytes, msg, sizeof msg), GAN_OK);
    }
    for (size_t i = 0; i < gan_st_metadata_count(in); i++) {
        const char *key, *value;
        gan_st_metadata_at(in, i, &key, &value);
        if (d->value && strcmp(key, d->entry) == 0) {
            value = d->value;
            found = 1;
        }
        ck_assert_int_eq(gan_st_writer_set_metadata(w, key, value, msg, sizeof msg), GAN_OK);
    }
    ck_assert_msg(found, "the checkpoint has no %s", d->entry);
    /* The writer borrows the bytes: free them only after the write. */
    ck_assert_msg(gan_st_writer_write(w, checkpoint, msg, sizeof msg) == GAN_OK, "%s", msg);
    gan_st_writer_free(w);
    free(copy);
    gan_st_close(in);
}

START_TEST(damaged_value_is_refused)
{
    const struct damage *d = &damages[_i];
    gan_loader *loader = test_loader();
    train_victim(loader);
    apply(d);
    struct gan_error err;
    ck_assert_int_eq(resume(loader, NULL, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, d->expect), "\"%s\" lacks \"%s\"", err.message, d->expect);
    ck_assert_msg(strstr(err.message, checkpoint), "\"%s\" does not name the file", err.message);
    ck_assert_msg(strstr(err.message, d->entry), "\"%s\" does not name %s", err.message, d->entry);
    ck_assert_msg(!strchr(err.message, '\n'), "\"%s\" is not one line", err.message);
    gan_loader_free(loader);
}
END_TEST

/* The file as written loads: the checks refuse only what no run writes. */
START_TEST(undamaged_checkpoint_resumes)
{
    gan_loader *loader = test_loader();
    train_victim(loader);
    struct gan_error err;
    ck_assert_msg(resume(loader, NULL, &err) == GAN_OK, "%s", err.message);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ the plan */

/* Resumed at its end, a run finishes again (its summary rewritten), as it always has;
 * resumed with fewer iterations than it has, it is refused with the fix. */
START_TEST(resume_past_the_plan_is_refused)
{
    gan_loader *loader = test_loader();
    train_victim(loader);
    struct gan_error err;
    const char *const same[] = { "run.iterations=3", NULL };
    ck_assert_msg(resume(loader, same, &err) == GAN_OK, "%s", err.message);
    const char *const fewer[] = { "run.iterations=2", NULL };
    ck_assert_int_eq(resume(loader, fewer, &err), GAN_ERR_CONFIG);
    static const char *const parts[] = {
        "the checkpoint is at iteration 3, past run.iterations = 2 (--set run.iterations=2)",
        "set run.iterations above 3 to continue the run",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        ck_assert_msg(strstr(err.message, parts[i]), "\"%s\" lacks \"%s\"", err.message, parts[i]);
    ck_assert_msg(strstr(err.message, checkpoint), "\"%s\" does not name the file", err.message);
    gan_loader_free(loader);
}
END_TEST

static Suite *values_suite(void)
{
    Suite *s = suite_create("checkpoint values");
    TCase *bad = tcase_create("refusals");
    tcase_add_checked_fixture(bad, scratch_setup, test_scratch_remove);
    tcase_set_timeout(bad, 120);
    tcase_add_loop_test(bad, damaged_value_is_refused, 0,
                        (int)(sizeof damages / sizeof damages[0]));
    tcase_add_test(bad, undamaged_checkpoint_resumes);
    suite_add_tcase(s, bad);

    TCase *plan = tcase_create("plan");
    tcase_add_checked_fixture(plan, scratch_setup, test_scratch_remove);
    tcase_set_timeout(plan, 120);
    tcase_add_test(plan, resume_past_the_plan_is_refused);
    suite_add_tcase(s, plan);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(values_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
