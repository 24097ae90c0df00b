/* SPDX-License-Identifier: MIT */
/* check_grads_replay.c — `ganctl grads` against the trainer: on the batch a resumed run's
 * next steps draw, the gradients it computes are bit for bit the ones the trainer applied. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/configuration.h"
#include "plugin/plugin_loader.h"
#include "train/state/checkpoint.h"
#include "train/after/grads.h"
#include "train/loop/trainer.h"
#include "../lib/scratch.h"

#define FASHION_MNIST "/usr/share/datasets/fashion-mnist"

/* A run of a few iterations; the replay is checked at the first steps after it. */
struct replay_case {
    const char *name;
    const char *sets[24];
    int image;
};

static const struct replay_case cases[] = {
    { "toy fp32",
      { "generator.model.width=8", "critic.model.width=8", "generator.model.depth=2",
        "critic.model.depth=2", "data.batch_size=32", NULL },
      0 },
    /* 16-bit gradients unscaled by the fused kernel, with the penalty's inner gradient
     * seeded with the scale. */
    { "toy fp16 O2 underflow-aware",
      { "generator.model.width=8", "critic.model.width=8", "generator.model.depth=2",
        "critic.model.depth=2", "data.batch_size=32", "scaler.name=underflow-aware",
        "precision.mode=fp16", NULL },
      0 },
    /* An FP32 scope: parameters used in both precisions, their gradients summed. */
    { "toy bf16 O2 with the penalty in FP32",
      { "generator.model.width=8", "critic.model.width=8", "data.batch_size=16",
        "precision.mode=bf16", "precision.fp32=[\"penalty\"]", NULL },
      0 },
    { "fashion-mnist fp32",
      { "data.name=fashion-mnist", "data.path=" FASHION_MNIST, "data.batch_size=8",
        "generator.z_dim=16", "generator.model.name=dcgan", "critic.model.name=dcgan",
        "generator.model.width=4", "critic.model.width=4", "run.eval_every=0", NULL },
      1 },
    { "fashion-mnist fp16 O2 dynamic",
      { "data.name=fashion-mnist", "data.path=" FASHION_MNIST, "data.batch_size=8",
        "generator.z_dim=16", "generator.model.name=dcgan", "critic.model.name=dcgan",
        "generator.model.width=4", "critic.model.width=4", "run.eval_every=0",
        "scaler.name=dynamic", "precision.mode=fp16", NULL },
      1 },
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static const char *const common[] = {
    "backend.threads=1", "critic.iterations=2", "run.iterations=3", "run.log_every=1",
    "run.eval_every=0", "run.image_every=0", "run.checkpoint_every=0",
    "run.metrics_time=false", "generator.optimizer.lr_decay=none",
    "critic.optimizer.lr_decay=none", NULL,
};

/* What the resumed run's first generator step and first critic step saw and applied. */
struct capture {
    int64_t iteration;            /* the checkpoint's: the steps of the next iteration */
    float *generator_z, *critic_z, *critic_real;
    size_t z_count, real_count;
    float *grad[2];               /* generator, critic: the arena, in parameter order */
    size_t grad_count[2];
    int seen[2];
};

static float *net_gradient(gan_net *net, size_t *count)
{
    size_t total = (size_t)gan_net_total(net);
    float *g = malloc((total + 1) * sizeof *g);
    ck_assert_ptr_nonnull(g);
    for (size_t i = 0; i < gan_net_count(net); i++)
        ck_assert_int_eq(gan_net_grad_to_host(net, i, g + gan_net_offset(net, i),
                                              (size_t)gan_net_numel(net, i)), GAN_OK);
    *count = total;
    return g;
}

static float *tensor_copy(gan_ctx *ctx, gan_tensor *t, size_t *count)
{
    size_t n = (size_t)gan_tensor_numel(t);
    float *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(gan_tensor_dtype(t), GAN_F32);
    ck_assert_int_eq(gan_tensor_to_host(ctx, t, v, n), GAN_OK);
    *count = n;
    return v;
}

static void on_step(void *arg, const struct gan_train_step *s)
{
    struct capture *c = arg;
    if (s->iteration != c->iteration)
        return;
    int critic = s->role == GAN_MODEL_CRITIC;
    if (c->seen[critic] || (critic && s->critic_step != 0))
        return;
    c->seen[critic] = 1;
    ck_assert_msg(s->applied, "the replayed step must be one the scaler applied");
    c->grad[critic] = net_gradient(s->net, &c->grad_count[critic]);
    if (critic) {
        c->critic_z = tensor_copy(s->ctx, s->z, &c->z_count);
        c->critic_real = tensor_copy(s->ctx, s->real, &c->real_count);
    } else {
        c->generator_z = tensor_copy(s->ctx, s->z, &c->z_count);
    }
}

static void configure(gan_config *cfg, const struct replay_case *rc, const char *dir)
{
    struct gan_error err;
    gan_error_clear(&err);
    for (const char *const *s = common; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    for (const char *const *s = rc->sets; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", dir, "test", &err), GAN_OK);
}

static void train(gan_config *cfg, gan_loader *loader, const char *resume_dir,
                  struct capture *capture)
{
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader, .resume_dir = resume_dir };
    if (capture)
        setup.events = (struct gan_train_events){ .ctx = capture, .step = on_step };
    gan_trainer *t = NULL;
    struct gan_trainer_result r;
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_trainer_run(t, &r, &err) == GAN_OK, "%s", err.message);
    gan_trainer_free(t);
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    ck_assert_int_eq(fclose(out), 0);
}

/* grads on (real, z) without alpha, so that the penalty draws α from the loss stream
 * where the checkpoint left it, as the resumed run's critic did; `which` names the
 * network whose arena is compared with the trainer's. */
static void compare(gan_grads *g, enum gan_model_role role, const float *real, const float *z,
                    int64_t rows, const float *want, size_t want_count)
{
    struct gan_grads_batch b = { rows, (float *)real, (float *)z, NULL };
    struct gan_grads_values values;
    struct gan_error err;
    gan_error_clear(&err);
    unsigned mask = role == GAN_MODEL_CRITIC ? GAN_LOSS_CRITIC : GAN_LOSS_GENERATOR;
    ck_assert_msg(gan_grads_evaluate(g, &b, mask, &values, &err) == GAN_OK, "%s", err.message);
    size_t count;
    float *got = net_gradient(gan_grads_net(g, role), &count);
    ck_assert_uint_eq(count, want_count);
    size_t first = count;
    for (size_t k = 0; k < count && first == count; k++)
        if (memcmp(&got[k], &want[k], sizeof got[k]) != 0)
            first = k;
    ck_assert_msg(first == count, "%s gradient element %zu of %zu: grads %.9g, trainer %.9g",
                  role == GAN_MODEL_CRITIC ? "critic" : "generator", first, count,
                  (double)got[first < count ? first : 0], (double)want[first < count ? first : 0]);
    /* Not a vacuous comparison: the step moved something. */
    double norm = 0.0;
    for (size_t k = 0; k < count; k++)
        norm += (double)got[k] * got[k];
    ck_assert_msg(norm > 0.0 && isfinite(norm), "the gradient is %g", norm);
    free(got);
}

START_TEST(test_grads_is_the_trainers_step)
{
    const struct replay_case *rc = &cases[_i];
    if (rc->image && access(FASHION_MNIST, R_OK) != 0) {
        fprintf(stderr, "%s: skipped, %s is missing (dataset-fashion-mnist)\n", rc->name,
                FASHION_MNIST);
        return;
    }
    /* The image metrics' classifier: trained once per build tree, as image_train.sh's. */
    setenv("XDG_CACHE_HOME", GAN_TEST_CACHE_DIR, 1);
    test_scratch_make("ganctl-replay");
    char dir[700], saved[760], ckpt[760];
    snprintf(dir, sizeof dir, "%s/run", test_scratch);
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", dir);
    snprintf(saved, sizeof saved, "%s/at-3.safetensors", test_scratch);
    struct gan_error err;
    gan_error_clear(&err);
    gan_loader *loader = NULL;
    ck_assert_msg(gan_loader_new(&loader, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err) == GAN_OK,
                  "%s", err.message);

    gan_config *cfg = NULL;
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    configure(cfg, rc, dir);
    train(cfg, loader, NULL, NULL);
    gan_config_free(cfg);
    copy_file(ckpt, saved);

    /* The resumed run, one iteration further. Its generator learns nothing (lr 0), so
     * that the critic's first step sees the checkpoint's generator, as grads does. */
    char *text = NULL;
    ck_assert_msg(gan_checkpoint_read_config(ckpt, &text, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    ck_assert_int_eq(gan_config_read_string(cfg, text, "saved", GAN_CONFIG_FILE, &err), GAN_OK);
    free(text);
    ck_assert_int_eq(gan_config_set(cfg, "run.iterations=4", &err), GAN_OK);
    ck_assert_int_eq(gan_config_set(cfg, "generator.optimizer.lr=0", &err), GAN_OK);
    struct capture cap;
    memset(&cap, 0, sizeof cap);
    cap.iteration = 3;
    train(cfg, loader, dir, &cap);
    gan_config_free(cfg);
    ck_assert_msg(cap.seen[0] && cap.seen[1], "the resumed run took no generator or critic step");

    static const struct gan_saved_setting one_thread[1] = { { "backend.threads=1", NULL } };
    gan_grads *g = NULL;
    ck_assert_msg(gan_grads_open(saved, one_thread, 1, loader, NULL, &g, &err) == GAN_OK, "%s",
                  err.message);
    ck_assert_int_eq(gan_grads_iteration(g), 3);
    int64_t rows = (int64_t)(cap.real_count / (size_t)gan_grads_sample_size(g));
    ck_assert_int_eq(rows * gan_grads_z_size(g), (int64_t)cap.z_count);
    compare(g, GAN_MODEL_CRITIC, cap.critic_real, cap.critic_z, rows, cap.grad[1],
            cap.grad_count[1]);
    compare(g, GAN_MODEL_GENERATOR, cap.critic_real, cap.generator_z, rows, cap.grad[0],
            cap.grad_count[0]);
    gan_grads_free(g);
    gan_loader_free(loader);
    free(cap.generator_z);
    free(cap.critic_z);
    free(cap.critic_real);
    free(cap.grad[0]);
    free(cap.grad[1]);
    test_scratch_remove();
}
END_TEST

static Suite *replay_suite(void)
{
    Suite *s = suite_create("grads replay");
    TCase *tc = tcase_create("the trainer's step");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_grads_is_the_trainers_step, 0, N_CASES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(replay_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
