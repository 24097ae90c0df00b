/* SPDX-License-Identifier: MIT */
/* check_r1.c — tests of the loss-term plugin "r1" from the build tree: its value and its
 * gradient with respect to the critic's parameters (a double backward) against an FP64
 * host computation for a tanh MLP critic, the same gradient through the dcgan critic
 * against central differences, the lazy schedule (exactly 1 step in k carries k·γ/2, the
 * others an exact zero), k = 1 bit for bit the plain term, R2, the inner seed, settings
 * and inputs refused. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "../lib/plugin_module.h"
#include "nn/net.h"

#ifndef GAN_TEST_LOSS_DIR
#error "GAN_TEST_LOSS_DIR must name the folder that holds the loss modules"
#endif
#ifndef GAN_TEST_MODEL_DIR
#error "GAN_TEST_MODEL_DIR must name the folder that holds model-dcgan.so"
#endif

/* ------------------------------------------------------------------ fixture */

static struct test_module r1_mod, dcgan_mod;

static void setup(void)
{
    backend_fixture_setup();
    test_module_open(&r1_mod, GAN_TEST_LOSS_DIR "/loss-r1.so", GAN_PLUGIN_LOSS, "r1");
    test_module_open(&dcgan_mod, GAN_TEST_MODEL_DIR "/model-dcgan.so", GAN_PLUGIN_MODEL,
                     "dcgan");
}

static void teardown(void)
{
    backend_fixture_teardown();
    test_module_close(&r1_mod);
    test_module_close(&dcgan_mod);
}

struct term {
    struct test_host th;
    const char *settings[6];
    const struct gan_loss_ops *ops;
    gan_loss *loss;
};

static gan_status term_make(struct term *t, const char *const *settings)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; settings && settings[i] && i < 5; i++)
        t->settings[i] = settings[i];
    test_host_init_declared(&t->th, t->settings, r1_mod.plugin->settings);
    t->ops = r1_mod.plugin->ops;
    return t->ops->create(&t->th.host, &t->loss);
}

static void term_free(struct term *t)
{
    if (t->loss)
        t->ops->destroy(t->loss);
    t->loss = NULL;
}

struct sink {
    int n;
    char name[16];
    double value;
};

static void sink_report(void *ctx, const char *name, gan_tensor *scalar)
{
    struct sink *s = ctx;
    float v;
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, scalar, &v, 1), GAN_OK);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->value = v;
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

static uint32_t lcg_state;
static float lcg_uniform(float lo, float hi)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(lcg_state >> 8) / 16777216.0f;
}

/* ------------------------------------------------------------------ an MLP critic and
 * its FP64 twin: D(x) = w2 · tanh(W1 x + b1) + b2, 3 → 6 → 1, so that
 * ∇ₓD = W1ᵀ (w2 ⊙ (1 − a²)). */

#define IN 3
#define HID 6

struct critic {
    gan_net *net;
    int calls;
};

static gan_tensor *critic_forward(void *cctx, gan_ctx *ctx, gan_tensor *x)
{
    struct critic *c = cctx;
    c->calls++;
    gan_tensor *const *p = gan_net_tensors(c->net);
    gan_tensor *h = gan_tanh(ctx, gan_add(ctx, gan_matmul(ctx, x, p[0], 0, 1), p[1]));
    return gan_add(ctx, gan_matmul(ctx, h, p[2], 0, 1), p[3]);
}

static void critic_make(struct critic *c, uint32_t seed)
{
    memset(c, 0, sizeof *c);
    ck_assert_int_eq(gan_net_new(fx.ctx, "critic", &c->net), GAN_OK);
    struct gan_init z = { GAN_INIT_ZEROS, 0 };
    int64_t shapes[4][2] = { { HID, IN }, { HID, 0 }, { 1, HID }, { 1, 0 } };
    static const char *const names[4] = { "fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias" };
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(gan_net_param(c->net, names[i], i % 2 ? 1 : 2, shapes[i], z));
    lcg_state = seed;
    for (size_t i = 0; i < 4; i++) {
        size_t n = (size_t)gan_net_numel(c->net, i);
        float v[HID * IN];
        for (size_t k = 0; k < n; k++)
            v[k] = lcg_uniform(-0.9f, 0.9f);
        ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(c->net, i), v, n),
                         GAN_OK);
    }
}

struct host_critic {
    double w1[HID][IN], b1[HID], w2[HID], b2;
};

static void host_from(struct host_critic *h, const struct critic *c)
{
    float v[HID * IN];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(c->net, 0), v, HID * IN), GAN_OK);
    for (int i = 0; i < HID * IN; i++)
        h->w1[i / IN][i % IN] = v[i];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(c->net, 1), v, HID), GAN_OK);
    for (int i = 0; i < HID; i++)
        h->b1[i] = v[i];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(c->net, 2), v, HID), GAN_OK);
    for (int i = 0; i < HID; i++)
        h->w2[i] = v[i];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(c->net, 3), v, 1), GAN_OK);
    h->b2 = v[0];
}

/* mean over the batch of ‖∇ₓD(xᵢ)‖², in FP64. */
static double host_r1(const struct host_critic *h, const float *x, int batch)
{
    double sum = 0;
    for (int i = 0; i < batch; i++) {
        double g[IN] = { 0 };
        for (int j = 0; j < HID; j++) {
            double z = h->b1[j];
            for (int k = 0; k < IN; k++)
                z += h->w1[j][k] * x[IN * i + k];
            double a = tanh(z), u = h->w2[j] * (1 - a * a);
            for (int k = 0; k < IN; k++)
                g[k] += u * h->w1[j][k];
        }
        for (int k = 0; k < IN; k++)
            sum += g[k] * g[k];
    }
    return sum / batch;
}

#define BATCH 5

static void batch_values(float *x, uint32_t seed)
{
    lcg_state = seed;
    for (int i = 0; i < BATCH * IN; i++)
        x[i] = lcg_uniform(-1.5f, 1.5f);
}

static struct gan_loss_inputs inputs(gan_tensor *real, gan_tensor *fake, struct critic *c,
                                     int64_t critic_step)
{
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.real = real;
    in.fake = fake;
    in.critic = critic_forward;
    in.critic_ctx = c;
    in.critic_step = critic_step;
    return in;
}

static gan_tensor *batch_tensor(const float *x)
{
    int64_t d[2] = { BATCH, IN };
    gan_tensor *t = gan_tensor_from_host(fx.ctx, GAN_F32, 2, d, x);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* ------------------------------------------------------------------ values and gradients */

/* γ/2 · mean ‖∇D‖² against FP64 with k = 1, the reported "r1" the plain mean, and with
 * samples = "fake" the same on the fake batch, reported as "r2". */
START_TEST(test_r1_value_against_host)
{
    const char *const s_r1[] = { "gamma=3", "interval=1", NULL };
    const char *const s_r2[] = { "gamma=3", "interval=1", "samples=fake", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, _i ? s_r2 : s_r1), GAN_OK);
    ck_assert_uint_eq(t.ops->targets(t.loss), GAN_LOSS_CRITIC);
    struct critic c;
    critic_make(&c, 31u);
    struct host_critic h;
    host_from(&h, &c);
    float xr[BATCH * IN], xf[BATCH * IN];
    batch_values(xr, 7u);
    batch_values(xf, 8u);
    struct gan_loss_inputs in = inputs(batch_tensor(xr), batch_tensor(xf), &c, 0);
    struct sink sk = { 0 };
    struct gan_metric_sink ms = { &sk, sink_report };
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
    double p = host_r1(&h, _i ? xf : xr, BATCH);
    ck_assert_msg(fabs(scalar(v) - 1.5 * p) <= 1e-6 * (1 + p), "term %.9g, FP64 %.9g",
                  scalar(v), 1.5 * p);
    ck_assert_int_eq(sk.n, 1);
    ck_assert_str_eq(sk.name, _i ? "r2" : "r1");
    ck_assert_msg(fabs(sk.value - p) <= 1e-6 * (1 + p), "reported %.9g, FP64 %.9g", sk.value, p);
    ck_assert_int_eq(c.calls, 1);
    gan_ctx_step_end(fx.ctx);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* The critic's parameter gradient of the term: autograd through the inner gradient (the
 * double backward) against FP64 central differences of the host formula, every entry. */
START_TEST(test_r1_parameter_gradient)
{
    const char *const s[] = { "gamma=2", "interval=1", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    struct critic c;
    critic_make(&c, 41u + (uint32_t)_i);
    float xr[BATCH * IN];
    batch_values(xr, 9u + (uint32_t)_i);
    struct gan_loss_inputs in = inputs(batch_tensor(xr), NULL, &c, 0);
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_int_eq(gan_net_zero_grads(c.net), GAN_OK);
    ck_assert_int_eq(gan_net_backward(c.net, v, NULL), GAN_OK);
    gan_ctx_step_end(fx.ctx);
    struct host_critic h;
    host_from(&h, &c);
    int checked = 0, nonzero = 0;
    for (size_t p = 0; p < 4; p++) {
        size_t n = (size_t)gan_net_numel(c.net, p);
        float g[HID * IN];
        ck_assert_int_eq(gan_net_grad_to_host(c.net, p, g, n), GAN_OK);
        for (size_t k = 0; k < n; k++) {
            double *slot = p == 0 ? &h.w1[k / IN][k % IN] : p == 1 ? &h.b1[k]
                           : p == 2 ? &h.w2[k] : &h.b2;
            const double step = 1e-6, base = *slot;
            *slot = base + step;
            double fp = host_r1(&h, xr, BATCH);
            *slot = base - step;
            double fm = host_r1(&h, xr, BATCH);
            *slot = base;
            double fd = (fp - fm) / (2 * step);   /* γ/2 = 1 */
            ck_assert_msg(fabs(g[k] - fd) <= 1e-5 + 1e-4 * fabs(fd),
                          "%s[%zu]: autodiff %.9g, FP64 central difference %.9g",
                          gan_net_name(c.net, p), k, g[k], fd);
            checked++;
            nonzero += fabs(fd) > 1e-4;
        }
    }
    ck_assert_int_eq(checked, HID * IN + HID + HID + 1);
    /* b2 does not move ∇ₓD; nearly everything else does. */
    ck_assert_msg(nonzero >= checked - 2, "only %d of %d gradients are non-zero", nonzero,
                  checked);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* R2 trains the critic only: a fake batch that requires a gradient (the generator's
 * output) gets none through the penalty, which penalises a copy of it. */
START_TEST(test_r2_fake_detached)
{
    const char *const s[] = { "gamma=2", "interval=1", "samples=fake", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    struct critic c;
    critic_make(&c, 51u);
    float xf[BATCH * IN];
    batch_values(xf, 13u);
    gan_tensor *fake = batch_tensor(xf);
    gan_tensor_set_requires_grad(fake, 1);
    struct gan_loss_inputs in = inputs(NULL, fake, &c, 0);
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_msg(v, "%s", gan_ctx_error(fx.ctx));
    gan_tensor *g = NULL;
    gan_tensor *wrt[2] = { fake, gan_net_tensor(c.net, 0) }, *grads[2] = { NULL, NULL };
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &v, NULL, 2, wrt, grads, 0), GAN_OK);
    g = grads[0];
    float gv[BATCH * IN], gw[HID * IN];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g, gv, BATCH * IN), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, grads[1], gw, HID * IN), GAN_OK);
    int moved = 0;
    for (int i = 0; i < BATCH * IN; i++)
        ck_assert_msg(gv[i] == 0.0f, "fake[%d] got %g through the penalty", i, gv[i]);
    for (int i = 0; i < HID * IN; i++)
        moved += gw[i] != 0.0f;
    ck_assert_int_gt(moved, HID * IN / 2);
    gan_ctx_step_end(fx.ctx);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ the lazy schedule */

/* Over 3k critic steps from a phase, exactly the steps whose count is a multiple of k
 * carry the term, each equal to k·γ/2 times the reported mean exactly (the weight is one
 * FP32 multiply); the others are an exact 0 that requires no gradient, report nothing
 * and never call the critic. _i picks k. */
START_TEST(test_r1_lazy_schedule)
{
    static const int ks[] = { 1, 2, 4, 16 };
    const int k = ks[_i];
    char interval[32];
    snprintf(interval, sizeof interval, "interval=%d", k);
    const char *const s[] = { "gamma=0.5", interval, NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    struct critic c;
    critic_make(&c, 61u);
    float xr[BATCH * IN];
    batch_values(xr, 21u);
    const float weight = (float)((double)k * 0.5 / 2.0);
    int carried = 0;
    const int64_t first = 37;     /* any phase: a resumed run starts anywhere */
    for (int64_t step = first; step < first + 3 * k; step++) {
        struct gan_loss_inputs in = inputs(batch_tensor(xr), NULL, &c, step);
        struct sink sk = { 0 };
        struct gan_metric_sink ms = { &sk, sink_report };
        int calls = c.calls;
        gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
        float value = (float)scalar(v);
        if (step % k == 0) {
            carried++;
            ck_assert_int_eq(sk.n, 1);
            ck_assert_int_eq(c.calls, calls + 1);
            ck_assert_msg(value == weight * (float)sk.value,
                          "step %lld: term %.9g, weight %g × r1 %.9g", (long long)step, value,
                          weight, sk.value);
            ck_assert(value > 0.0f);
        } else {
            ck_assert_msg(value == 0.0f && !signbit(value), "step %lld: %g between the "
                          "lazy steps", (long long)step, value);
            ck_assert(!gan_tensor_requires_grad(v));
            ck_assert_int_eq(sk.n, 0);
            ck_assert_int_eq(c.calls, calls);
        }
        gan_ctx_step_end(fx.ctx);
    }
    ck_assert_int_eq(carried, 3);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* With k = 1 the term is the plain R1 bit for bit: γ/2 times the mean of ‖∇D‖² that the
 * same ops give when written out here, at every critic step. */
START_TEST(test_r1_interval_one_is_plain)
{
    const char *const s[] = { "gamma=0.7", "interval=1", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    struct critic c;
    critic_make(&c, 71u);
    float xr[BATCH * IN];
    batch_values(xr, 22u);
    for (int64_t step = 0; step < 3; step++) {
        struct gan_loss_inputs in = inputs(batch_tensor(xr), NULL, &c, step);
        float lazy = (float)scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
        gan_tensor *x = batch_tensor(xr);
        gan_tensor_set_requires_grad(x, 1);
        gan_tensor *d = critic_forward(&c, fx.ctx, x), *g = NULL;
        int64_t dd[2] = { BATCH, 1 };
        gan_tensor *ones = gan_tensor_full(fx.ctx, GAN_F32, 2, dd, 1.0f);
        ck_assert_int_eq(gan_grad(fx.ctx, 1, &d, &ones, 1, &x, &g, 1), GAN_OK);
        gan_tensor *plain = gan_scale(fx.ctx, gan_mean(fx.ctx, gan_sum(fx.ctx, gan_square(fx.ctx, g),
                                                                      1, 0), GAN_ALL_AXES, 0),
                                      (float)(0.7 / 2.0));
        float want = (float)scalar(plain);
        ck_assert_msg(memcmp(&lazy, &want, sizeof lazy) == 0, "step %lld: %.9g against the "
                      "plain term %.9g", (long long)step, lazy, want);
        gan_ctx_step_end(fx.ctx);
    }
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* The inner gradient is seeded with the host's inner scale and the seed divided out: a
 * power of two changes no bit of the term, and the host sees the gradient as seeded. */
struct seen {
    int n;
    double seed;
    char name[16];
};

static void on_inner(void *ctx, const char *name, gan_tensor *wrt, gan_tensor *grad, double seed)
{
    struct seen *s = ctx;
    (void)wrt;
    ck_assert_ptr_nonnull(grad);
    s->n++;
    s->seed = seed;
    snprintf(s->name, sizeof s->name, "%s", name);
}

START_TEST(test_r1_inner_scale)
{
    const char *const s[] = { "gamma=1", "interval=1", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    struct critic c;
    critic_make(&c, 81u);
    float xr[BATCH * IN];
    batch_values(xr, 23u);
    struct gan_loss_inputs in = inputs(batch_tensor(xr), NULL, &c, 0);
    float plain = (float)scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    struct seen seen = { 0 };
    in.inner_scale = 65536.0;
    in.inner_grad = on_inner;
    in.inner_ctx = &seen;
    float seeded = (float)scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(memcmp(&plain, &seeded, sizeof plain) == 0, "%.9g seeded, %.9g plain",
                  seeded, plain);
    ck_assert_int_eq(seen.n, 1);
    ck_assert(seen.seed == 65536.0);
    ck_assert_str_eq(seen.name, "r1.inner");
    gan_ctx_step_end(fx.ctx);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ through dcgan */

static gan_tensor *dcgan_forward(void *cctx, gan_ctx *ctx, gan_tensor *x)
{
    gan_model *m = cctx;
    return ((const struct gan_model_ops *)dcgan_mod.plugin->ops)->forward(m, ctx, x);
}

/* R1's double backward through the convolutional critic: its strided convolutions and
 * their transposes (the inner gradient's), leaky ReLU and the linear head, checked
 * against central differences of the term itself on a sample of every parameter
 * tensor's entries. */
START_TEST(test_r1_dcgan_double_backward)
{
    const struct gan_model_ops *mo = dcgan_mod.plugin->ops;
    const char *const ms[] = { "width=3", "depth=2", "leaky_slope=0.2", "norm=none", NULL };
    struct test_host mh;
    test_host_init_declared(&mh, ms, dcgan_mod.plugin->settings);
    struct gan_model_io io;
    memset(&io, 0, sizeof io);
    io.in_ndim = 3;
    io.in_dims[0] = 1;
    io.in_dims[1] = io.in_dims[2] = 8;
    io.out_ndim = 1;
    io.out_dims[0] = 1;
    gan_net *net = NULL;
    ck_assert_int_eq(gan_net_new(fx.ctx, "critic", &net), GAN_OK);
    gan_net_set_host(net, &mh.host);
    gan_model *model = NULL;
    ck_assert_msg(mo->create(&mh.host, GAN_MODEL_CRITIC, &io, net, &model) == GAN_OK, "%s",
                  mh.last_error);
    gan_net_set_host(net, NULL);
    uint64_t off = 0;
    ck_assert_int_eq(gan_net_init(net, 5, &off), GAN_OK);
    /* Biases away from zero, so that they move the leaky ReLUs' inputs too. */
    for (size_t p = 0; p < gan_net_count(net); p++) {
        size_t n = (size_t)gan_net_numel(net, p);
        float *v = malloc(n * sizeof *v);
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(net, p), v, n), GAN_OK);
        lcg_state = 100u + (uint32_t)p;
        for (size_t k = 0; k < n; k++)
            v[k] += lcg_uniform(-0.2f, 0.2f);
        ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(net, p), v, n), GAN_OK);
        free(v);
    }
    const char *const s[] = { "gamma=2", "interval=1", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_OK);
    int64_t dims[4] = { 3, 1, 8, 8 };
    gan_tensor *real = gan_tensor_uniform(fx.ctx, GAN_F32, 4, dims, 9, 0, -1.0f, 1.0f);
    float xr[3 * 64];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, real, xr, 3 * 64), GAN_OK);
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.critic = dcgan_forward;
    in.critic_ctx = model;
    in.real = real;
    gan_tensor *v = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_msg(v, "%s", gan_ctx_error(fx.ctx));
    ck_assert_int_eq(gan_net_zero_grads(net), GAN_OK);
    ck_assert_int_eq(gan_net_backward(net, v, NULL), GAN_OK);
    gan_ctx_step_end(fx.ctx);
    int checked = 0, nonzero = 0, kinks = 0;
    for (size_t p = 0; p < gan_net_count(net); p++) {
        size_t n = (size_t)gan_net_numel(net, p);
        float *w = malloc(n * sizeof *w), *g = malloc(n * sizeof *g);
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(net, p), w, n), GAN_OK);
        ck_assert_int_eq(gan_net_grad_to_host(net, p, g, n), GAN_OK);
        /* Up to 6 entries of each tensor, spread over it. */
        size_t stride = n > 6 ? n / 6 : 1;
        for (size_t k = 0; k < n; k += stride) {
            float keep = w[k];
            /* Central differences at h and h/2. ∇ₓD of a leaky-ReLU network is piecewise
             * constant in x and jumps in θ where a unit's input changes sign, so a step
             * that moves a unit across its kink sees a jump, not a slope: the two step
             * sizes then disagree, and that entry is left out (counted below). */
            double fd[2];
            for (int hs = 0; hs < 2; hs++) {
                const float h = hs ? 1e-3f : 2e-3f;
                double f[2];
                for (int sgn = 0; sgn < 2; sgn++) {
                    w[k] = keep + (sgn ? -h : h);
                    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(net, p), w,
                                                              n), GAN_OK);
                    struct gan_loss_inputs in2 = in;
                    in2.real = gan_tensor_from_host(fx.ctx, GAN_F32, 4, dims, xr);
                    f[sgn] = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in2, NULL));
                    gan_ctx_step_end(fx.ctx);
                }
                fd[hs] = (f[0] - f[1]) / (2.0 * (double)h);
            }
            w[k] = keep;
            ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(net, p), w, n),
                             GAN_OK);
            if (fabs(fd[0] - fd[1]) > 5e-3 + 3e-2 * fabs(fd[1])) {
                kinks++;
                continue;
            }
            ck_assert_msg(fabs(g[k] - fd[1]) <= 5e-3 + 3e-2 * fabs(fd[1]),
                          "%s[%zu]: autodiff %.7g, central difference %.7g",
                          gan_net_name(net, p), k, g[k], fd[1]);
            checked++;
            nonzero += fabs(fd[1]) > 1e-3;
        }
        free(w);
        free(g);
    }
    ck_assert_int_ge(checked, 20);
    ck_assert_msg(kinks <= checked / 4, "%d entries crossed a kink, %d did not", kinks, checked);
    ck_assert_msg(nonzero > checked / 2, "only %d of %d gradients are non-zero", nonzero,
                  checked);
    mo->destroy(model);
    gan_net_free(net);
    term_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ refusals */

struct bad_setting {
    const char *setting;
    const char *mentions;
};

static const struct bad_setting bad_settings[] = {
    { "gamma=-1", "gamma = -1" },
    { "interval=0", "interval = 0" },
    { "interval=2000000", "interval = 2000000" },
    { "samples=both", "samples = \"both\"" },
    { "gamma=ten", "gamma is not a number" },
};
#define N_BAD (int)(sizeof bad_settings / sizeof bad_settings[0])

START_TEST(test_r1_bad_settings)
{
    const char *const s[] = { bad_settings[_i].setting, NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, s), GAN_ERR_CONFIG);
    ck_assert_msg(strstr(t.th.last_error, "loss r1") &&
                  strstr(t.th.last_error, bad_settings[_i].mentions),
                  "%s: %s", bad_settings[_i].setting, t.th.last_error);
    term_free(&t);
}
END_TEST

START_TEST(test_r1_bad_inputs)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, 91u);
    float xr[BATCH * IN];
    batch_values(xr, 24u);
    struct gan_loss_inputs in = inputs(batch_tensor(xr), NULL, &c, 0);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_GENERATOR, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "critic's (1)"), "%s", t.th.last_error);
    in.critic_step = -1;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "ABI 1.5"), "%s", t.th.last_error);
    in.critic_step = 0;
    in.real = NULL;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "batch it penalises"), "%s", t.th.last_error);
    gan_ctx_step_end(fx.ctx);
    gan_net_free(c.net);
    term_free(&t);
}
END_TEST

static Suite *r1_suite(void)
{
    Suite *s = suite_create("r1");
    TCase *tc = tcase_create("values");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_r1_value_against_host, 0, 2);
    tcase_add_loop_test(tc, test_r1_parameter_gradient, 0, 2);
    tcase_add_test(tc, test_r2_fake_detached);
    tcase_add_test(tc, test_r1_inner_scale);
    suite_add_tcase(s, tc);
    tc = tcase_create("lazy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_r1_lazy_schedule, 0, 4);
    tcase_add_test(tc, test_r1_interval_one_is_plain);
    suite_add_tcase(s, tc);
    tc = tcase_create("dcgan");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_r1_dcgan_double_backward);
    suite_add_tcase(s, tc);
    tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_r1_bad_settings, 0, N_BAD);
    tcase_add_test(tc, test_r1_bad_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(r1_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
