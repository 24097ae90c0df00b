/* SPDX-License-Identifier: MIT */
/* check_games.c — tests of gan_softplus and of the loss-term plugins "non-saturating" and
 * "hinge" from the build tree: values against FP64 host formulas, first and second
 * derivatives against the analytic ones and central differences, 16-bit scores, the
 * adversarial bit, and refused inputs. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "../lib/plugin_module.h"

#ifndef GAN_TEST_LOSS_DIR
#error "GAN_TEST_LOSS_DIR must name the folder that holds the loss modules"
#endif

/* ------------------------------------------------------------------ fixture */

static struct test_module ns_mod, hinge_mod;

static void setup(void)
{
    backend_fixture_setup();
    test_module_open(&ns_mod, GAN_TEST_LOSS_DIR "/loss-non-saturating.so", GAN_PLUGIN_LOSS,
                     "non-saturating");
    ck_assert_int_eq(ns_mod.plugin->abi_minor, GAN_ABI_MINOR);
    test_module_open(&hinge_mod, GAN_TEST_LOSS_DIR "/loss-hinge.so", GAN_PLUGIN_LOSS, "hinge");
}

static void teardown(void)
{
    backend_fixture_teardown();
    test_module_close(&ns_mod);
    test_module_close(&hinge_mod);
}

struct term {
    struct test_host th;
    const struct gan_loss_ops *ops;
    gan_loss *loss;
};

static void term_make(struct term *t, const struct test_module *m)
{
    memset(t, 0, sizeof *t);
    test_host_init_declared(&t->th, NULL, m->plugin->settings);
    t->ops = m->plugin->ops;
    ck_assert_int_eq(t->ops->create(&t->th.host, &t->loss), GAN_OK);
}

static void term_free(struct term *t)
{
    t->ops->destroy(t->loss);
}

/* The metric sink: the last value reported under each of two names. */
struct sink {
    double d_real, d_fake;
    int n;
};

static void sink_report(void *ctx, const char *name, gan_tensor *scalar)
{
    struct sink *s = ctx;
    float v;
    ck_assert_int_eq(gan_tensor_numel(scalar), 1);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, scalar, &v, 1), GAN_OK);
    if (strcmp(name, "d_real") == 0)
        s->d_real = v;
    else if (strcmp(name, "d_fake") == 0)
        s->d_fake = v;
    else
        ck_abort_msg("unexpected report %s", name);
    s->n++;
}

static double scalar(const gan_tensor *t)
{
    float v;
    ck_assert_msg(t, "no tensor: %s", gan_ctx_error(fx.ctx));
    ck_assert_int_eq(gan_tensor_numel(t), 1);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, &v, 1), GAN_OK);
    return v;
}

/* A [n, 1] leaf of scores that requires a gradient. */
static gan_tensor *scores(const float *v, int64_t n, enum gan_dtype dtype)
{
    int64_t dims[2] = { n, 1 };
    gan_tensor *t = gan_tensor_from_host(fx.ctx, GAN_F32, 2, dims, v);
    ck_assert_ptr_nonnull(t);
    if (dtype != GAN_F32) {
        gan_tensor *c = gan_tensor_new(fx.ctx, dtype, 2, dims);
        ck_assert_int_eq(gan_tensor_copy(fx.ctx, c, t), GAN_OK);
        t = c;
    }
    gan_tensor_set_requires_grad(t, 1);
    return t;
}

static void to_host(gan_tensor *t, float *out, size_t n)
{
    ck_assert_msg(t, "no tensor: %s", gan_ctx_error(fx.ctx));
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, out, n), GAN_OK);
}

/* ------------------------------------------------------------------ softplus */

static double host_softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double host_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* Values over a sweep that reaches where a naive log(1 + eˣ) overflows (x > 88) and where
 * the exponential underflows, against FP64: within 2 ulp of FP32 plus 4e-8 absolute (the
 * documented rounding of 1 + e^−|x| to 1). */
START_TEST(test_softplus_values)
{
    static const float xs[] = { -1000.0f, -120.0f, -88.5f, -30.0f, -17.5f, -8.0f, -1.0f,
                                -1e-3f, 0.0f, 1e-3f, 0.5f, 1.0f, 3.0f, 10.0f, 17.5f, 30.0f,
                                88.5f, 120.0f, 1000.0f, 3e38f };
    const int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
    int64_t dims[1] = { n };
    gan_tensor *x = gan_tensor_from_host(fx.ctx, GAN_F32, 1, dims, xs);
    float y[sizeof xs / sizeof xs[0]];
    to_host(gan_softplus(fx.ctx, x), y, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double want = host_softplus(xs[i]);
        ck_assert_msg(isfinite(y[i]), "softplus(%g) = %g", xs[i], y[i]);
        ck_assert_msg(fabs(y[i] - want) <= 4e-8 + 2.4e-7 * fabs(want),
                      "softplus(%g) = %.9g, FP64 %.9g", xs[i], y[i], want);
    }
    /* softplus(0) is log 2 as FP32 rounds it; large x is x itself. */
    ck_assert_float_eq(y[8], logf(2.0f));
    ck_assert_float_eq(y[n - 1], 3e38f);
}
END_TEST

/* First and second derivatives: gan_grad with the graph recorded, then again, against
 * sigmoid(x) and sigmoid(x)(1 − sigmoid(x)) in FP64 and against central differences of
 * the op itself. */
START_TEST(test_softplus_derivatives)
{
    static const float xs[] = { -20.0f, -6.0f, -2.5f, -0.75f, 0.0f, 0.3f, 1.7f, 4.0f, 15.0f };
    const int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
    int64_t dims[1] = { n };
    gan_tensor *x = gan_tensor_from_host(fx.ctx, GAN_F32, 1, dims, xs);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor *y = gan_sum(fx.ctx, gan_softplus(fx.ctx, x), GAN_ALL_AXES, 0);
    gan_tensor *g = NULL, *gg = NULL;
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &y, NULL, 1, &x, &g, 1), GAN_OK);
    gan_tensor *gs = gan_sum(fx.ctx, g, GAN_ALL_AXES, 0);
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &gs, NULL, 1, &x, &gg, 0), GAN_OK);
    float d1[9], d2[9];
    to_host(g, d1, (size_t)n);
    to_host(gg, d2, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double s = host_sigmoid(xs[i]);
        ck_assert_msg(fabs(d1[i] - s) <= 1e-7 + 4e-7 * s, "softplus'(%g) = %.9g, FP64 %.9g",
                      xs[i], d1[i], s);
        ck_assert_msg(fabs(d2[i] - s * (1 - s)) <= 1e-7 + 1e-6 * s * (1 - s),
                      "softplus''(%g) = %.9g, FP64 %.9g", xs[i], d2[i], s * (1 - s));
        /* Central differences of the FP64 formula, h = 1e-4: the analytic form above is
         * what they converge to. */
        const double h = 1e-4;
        double fd1 = (host_softplus(xs[i] + h) - host_softplus(xs[i] - h)) / (2 * h);
        double fd2 = (host_softplus(xs[i] + h) - 2 * host_softplus(xs[i]) +
                      host_softplus(xs[i] - h)) / (h * h);
        ck_assert_msg(fabs(d1[i] - fd1) <= 1e-6, "softplus'(%g): %.9g against %.9g", xs[i],
                      d1[i], fd1);
        ck_assert_msg(fabs(d2[i] - fd2) <= 1e-5, "softplus''(%g): %.9g against %.9g", xs[i],
                      d2[i], fd2);
    }
    gan_ctx_step_end(fx.ctx);
}
END_TEST

/* ------------------------------------------------------------------ the games */

enum game { NS, HINGE };

static const float real_v[6] = { 2.5f, -0.4f, 0.9f, 1.6f, -3.0f, 0.2f };
static const float fake_v[6] = { -1.2f, 0.7f, -2.2f, 0.45f, 3.5f, -0.05f };

/* The objective, its gradient with respect to one score and the second derivative of
 * that score's contribution, in FP64. */
static double host_term(enum game gm, enum gan_loss_target target, const float *r,
                        const float *f, int64_t n)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        if (target == GAN_LOSS_GENERATOR)
            sum += gm == NS ? host_softplus(-f[i]) : -f[i];
        else if (gm == NS)
            sum += host_softplus(-r[i]) + host_softplus(f[i]);
        else
            sum += fmax(0.0, 1.0 - r[i]) + fmax(0.0, 1.0 + f[i]);
    }
    return sum / (double)n;
}

/* d term / d score and d² term / d score² for a real (is_real) or fake score s. */
static void host_derivs(enum game gm, enum gan_loss_target target, int is_real, double s,
                        int64_t n, double *d1, double *d2)
{
    double sg;
    if (gm == NS) {
        /* critic: softplus(−r) and softplus(f); generator: softplus(−f). */
        double sign = target == GAN_LOSS_CRITIC && !is_real ? 1.0 : -1.0;
        sg = host_sigmoid(sign * s);
        *d1 = sign * sg / (double)n;
        *d2 = sg * (1 - sg) / (double)n;
        return;
    }
    *d2 = 0;
    if (target == GAN_LOSS_GENERATOR)
        *d1 = -1.0 / (double)n;
    else if (is_real)
        *d1 = s < 1.0 ? -1.0 / (double)n : 0.0;
    else
        *d1 = s > -1.0 ? 1.0 / (double)n : 0.0;
}

/* Each game's objectives against FP64, and their first and second derivatives with respect
 * to every score (through gan_grad twice), in FP32 and with 16-bit scores (where the term
 * is still computed in FP32: the value and derivatives agree with the FP64 formula on the
 * 16-bit scores). _i: game × dtype. */
START_TEST(test_game_values_and_derivatives)
{
    enum game gm = _i % 2 ? HINGE : NS;
    enum gan_dtype dt = _i / 2 == 0 ? GAN_F32 : _i / 2 == 1 ? GAN_F16 : GAN_BF16;
    struct term t;
    term_make(&t, gm == NS ? &ns_mod : &hinge_mod);
    ck_assert_uint_eq(t.ops->targets(t.loss),
                      GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR | GAN_LOSS_ADVERSARIAL);
    const int64_t n = 6;
    for (int tg = 0; tg < 2; tg++) {
        enum gan_loss_target target = tg ? GAN_LOSS_GENERATOR : GAN_LOSS_CRITIC;
        gan_tensor *dr = scores(real_v, n, dt), *df = scores(fake_v, n, dt);
        /* The scores as the 16-bit type holds them. */
        gan_tensor *r32 = gan_cast(fx.ctx, dr, GAN_F32), *f32 = gan_cast(fx.ctx, df, GAN_F32);
        float r[6], f[6];
        to_host(r32, r, 6);
        to_host(f32, f, 6);
        struct gan_loss_inputs in = { 0 };
        in.d_fake = df;
        in.critic_step = tg ? -1 : 0;
        if (!tg)
            in.d_real = dr;
        struct sink sk = { 0 };
        struct gan_metric_sink ms = { &sk, sink_report };
        gan_tensor *v = t.ops->term(t.loss, fx.ctx, target, &in, &ms);
        ck_assert_msg(v, "%s", gan_ctx_error(fx.ctx));
        ck_assert_int_eq(gan_tensor_dtype(v), GAN_F32);
        double want = host_term(gm, target, r, f, n);
        ck_assert_msg(fabs(scalar(v) - want) <= 1e-6 + 1e-6 * fabs(want),
                      "game %d objective %d: %.9g, FP64 %.9g", gm, target, scalar(v), want);
        if (!tg) {
            double mr = 0, mf = 0;
            for (int i = 0; i < 6; i++) {
                mr += r[i] / 6.0;
                mf += f[i] / 6.0;
            }
            ck_assert_int_eq(sk.n, 2);
            ck_assert_msg(fabs(sk.d_real - mr) < 1e-6 && fabs(sk.d_fake - mf) < 1e-6,
                          "reported means %g %g, want %g %g", sk.d_real, sk.d_fake, mr, mf);
        } else {
            ck_assert_int_eq(sk.n, 0);
        }
        gan_tensor *wrt[2] = { df, dr }, *g[2] = { NULL, NULL }, *gg[2] = { NULL, NULL };
        int nw = tg ? 1 : 2;
        ck_assert_int_eq(gan_grad(fx.ctx, 1, &v, NULL, nw, wrt, g, 1), GAN_OK);
        gan_tensor *gsum = gan_sum(fx.ctx, gan_cast(fx.ctx, g[0], GAN_F32), GAN_ALL_AXES, 0);
        if (nw == 2)
            gsum = gan_add(fx.ctx, gsum,
                           gan_sum(fx.ctx, gan_cast(fx.ctx, g[1], GAN_F32), GAN_ALL_AXES, 0));
        /* The hinge's gradient is piecewise constant: its graph may end in no tensor that
         * requires a gradient, and the second derivative is then 0 by definition. */
        int second = gm == NS;
        if (second)
            ck_assert_int_eq(gan_grad(fx.ctx, 1, &gsum, NULL, nw, wrt, gg, 0), GAN_OK);
        for (int w = 0; w < nw; w++) {
            float d1[6], d2[6];
            to_host(gan_cast(fx.ctx, g[w], GAN_F32), d1, 6);
            if (second)
                to_host(gan_cast(fx.ctx, gg[w], GAN_F32), d2, 6);
            const float *sv = w ? r : f;
            /* A 16-bit gradient is rounded to its type: 2^-8 relative for BF16. */
            double tol = dt == GAN_F32 ? 1e-6 : dt == GAN_F16 ? 1e-3 : 8e-3;
            for (int i = 0; i < 6; i++) {
                double a1, a2;
                host_derivs(gm, target, w == 1, sv[i], n, &a1, &a2);
                ck_assert_msg(fabs(d1[i] - a1) <= 1e-7 + tol * fabs(a1),
                              "game %d target %d %s[%d]: d1 %.9g, FP64 %.9g", gm, target,
                              w ? "real" : "fake", i, d1[i], a1);
                if (second)
                    ck_assert_msg(fabs(d2[i] - a2) <= 1e-7 + tol * fabs(a2),
                                  "game %d target %d %s[%d]: d2 %.9g, FP64 %.9g", gm, target,
                                  w ? "real" : "fake", i, d2[i], a2);
            }
        }
        gan_ctx_step_end(fx.ctx);
    }
    term_free(&t);
}
END_TEST

/* Central differences of the plugin's own objective with respect to each score, in FP32
 * with h = 1e-2, agree with its gradient: the game differentiates what it computes. */
START_TEST(test_game_central_differences)
{
    enum game gm = _i ? HINGE : NS;
    struct term t;
    term_make(&t, gm == NS ? &ns_mod : &hinge_mod);
    float r[6], f[6];
    memcpy(r, real_v, sizeof r);
    memcpy(f, fake_v, sizeof f);
    gan_tensor *dr = scores(r, 6, GAN_F32), *df = scores(f, 6, GAN_F32);
    struct gan_loss_inputs in = { .d_real = dr, .d_fake = df };
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    gan_tensor *wrt[2] = { dr, df }, *g[2] = { NULL, NULL };
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &v, NULL, 2, wrt, g, 0), GAN_OK);
    float gr[6], gf[6];
    to_host(g[0], gr, 6);
    to_host(g[1], gf, 6);
    gan_ctx_step_end(fx.ctx);
    const float h = 1e-2f;
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 6; i++) {
            float *sv = w ? f : r;
            float keep = sv[i];
            double val[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                sv[i] = keep + (sgn ? -h : h);
                struct gan_loss_inputs in2 = { .d_real = scores(r, 6, GAN_F32),
                                               .d_fake = scores(f, 6, GAN_F32) };
                val[sgn] = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in2, NULL));
                gan_ctx_step_end(fx.ctx);
            }
            sv[i] = keep;
            double fd = (val[0] - val[1]) / (2.0 * h);
            double ad = w ? gf[i] : gr[i];
            ck_assert_msg(fabs(ad - fd) <= 2e-4, "game %d %s[%d]: autodiff %.7g, central "
                          "difference %.7g", gm, w ? "fake" : "real", i, ad, fd);
        }
    term_free(&t);
}
END_TEST

/* Scores far out, where a log of a sigmoid would give inf or NaN: the logistic game stays
 * finite and exact (softplus(100) = 100, softplus(−100) = 3.7e-44 → 0 in FP32 sums). */
START_TEST(test_ns_extreme_scores)
{
    struct term t;
    term_make(&t, &ns_mod);
    static const float r[2] = { -100.0f, 100.0f }, f[2] = { 100.0f, -100.0f };
    struct gan_loss_inputs in = { .d_real = scores(r, 2, GAN_F32), .d_fake = scores(f, 2, GAN_F32) };
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    /* (100 + 0)/2 + (100 + 0)/2 */
    ck_assert_float_eq(scalar(v), 100.0f);
    gan_tensor *g = NULL;
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &v, NULL, 1, &in.d_real, &g, 0), GAN_OK);
    float gr[2];
    to_host(g, gr, 2);
    ck_assert_float_eq(gr[0], -0.5f);
    ck_assert(gr[1] <= 0.0f && gr[1] > -1e-30f);
    gan_ctx_step_end(fx.ctx);
    term_free(&t);
}
END_TEST

/* Missing scores and another objective are refused through the host, naming the game. */
START_TEST(test_game_bad_inputs)
{
    struct term t;
    term_make(&t, _i ? &hinge_mod : &ns_mod);
    const char *who = _i ? "loss hinge" : "loss non-saturating";
    float v[2] = { 1, 2 };
    struct gan_loss_inputs in = { 0 };
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_GENERATOR, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, who) && strstr(t.th.last_error, "d_fake"),
                  "%s", t.th.last_error);
    in.d_fake = scores(v, 2, GAN_F32);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "d_real"), "%s", t.th.last_error);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, (enum gan_loss_target)4, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "other than"), "%s", t.th.last_error);
    gan_ctx_step_end(fx.ctx);
    term_free(&t);
}
END_TEST

static Suite *games_suite(void)
{
    Suite *s = suite_create("games");
    TCase *tc = tcase_create("softplus");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_softplus_values);
    tcase_add_test(tc, test_softplus_derivatives);
    suite_add_tcase(s, tc);
    tc = tcase_create("games");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_game_values_and_derivatives, 0, 6);
    tcase_add_loop_test(tc, test_game_central_differences, 0, 2);
    tcase_add_test(tc, test_ns_extreme_scores);
    tcase_add_loop_test(tc, test_game_bad_inputs, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(games_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
