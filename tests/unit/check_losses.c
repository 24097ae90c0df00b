/* SPDX-License-Identifier: MIT */
/* check_losses.c — tests of the loss-term plugins "wasserstein" and "gradient-penalty" from the build
 * tree: values against hand and host computations, gradients against finite differences, α, edge cases. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "../lib/plugin_module.h"
#include "nn/net.h"
#include "plugin/plugin_loader.h"

#ifndef GAN_TEST_LOSS_DIR
#error "GAN_TEST_LOSS_DIR must name the folder that holds the loss modules"
#endif
#ifndef GAN_TEST_MODEL_DIR
#error "GAN_TEST_MODEL_DIR must name the folder that holds model-mlp.so"
#endif

/* ------------------------------------------------------------------ fixture */

static struct test_module ws_mod, gp_mod, mlp_mod;

static void setup(void)
{
    backend_fixture_setup();
    test_module_open(&ws_mod, GAN_TEST_LOSS_DIR "/loss-wasserstein.so", GAN_PLUGIN_LOSS,
                     "wasserstein");
    test_module_open(&gp_mod, GAN_TEST_LOSS_DIR "/loss-gradient-penalty.so", GAN_PLUGIN_LOSS,
                     "gradient-penalty");
    test_module_open(&mlp_mod, GAN_TEST_MODEL_DIR "/model-mlp.so", GAN_PLUGIN_MODEL, "mlp");
}

static void teardown(void)
{
    backend_fixture_teardown();
    test_module_close(&ws_mod);
    test_module_close(&gp_mod);
    test_module_close(&mlp_mod);
}

static const struct gan_loss_ops *lops(const struct test_module *m)
{
    return m->plugin->ops;
}

/* A loss instance with its own test host. */
struct term {
    struct test_host th;
    const char *settings[6];
    const struct gan_loss_ops *ops;
    gan_loss *loss;
};

static gan_status term_make(struct term *t, const struct test_module *m, const char *const *settings)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; settings && settings[i] && i < 5; i++)
        t->settings[i] = settings[i];
    test_host_init_declared(&t->th, t->settings, m->plugin->settings);
    t->ops = lops(m);
    return t->ops->create(&t->th.host, &t->loss);
}

static void term_free(struct term *t)
{
    if (t->loss)
        t->ops->destroy(t->loss);
    t->loss = NULL;
}

/* The metric sink: remembers what was reported. */
struct sink {
    int n;
    char names[8][32];
    gan_tensor *values[8];
};

static void sink_report(void *ctx, const char *name, gan_tensor *scalar)
{
    struct sink *s = ctx;
    ck_assert_int_lt(s->n, 8);
    snprintf(s->names[s->n], sizeof s->names[s->n], "%s", name);
    s->values[s->n++] = scalar;
}

static double sink_value(const struct sink *s, const char *name)
{
    for (int i = 0; i < s->n; i++) {
        if (strcmp(s->names[i], name) == 0) {
            float v;
            ck_assert_int_eq(gan_tensor_numel(s->values[i]), 1);
            ck_assert_int_eq(gan_tensor_to_host(fx.ctx, s->values[i], &v, 1), GAN_OK);
            return v;
        }
    }
    ck_abort_msg("nothing reported as %s", name);
    return NAN;
}

static double scalar(const gan_tensor *t)
{
    float v;
    ck_assert_msg(t, "no tensor: %s", gan_ctx_error(fx.ctx));
    ck_assert_int_eq(gan_tensor_numel(t), 1);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, &v, 1), GAN_OK);
    return v;
}

static gan_tensor *host_tensor(int ndim, const int64_t *dims, const float *v)
{
    gan_tensor *t = gan_tensor_from_host(fx.ctx, GAN_F32, ndim, dims, v);
    ck_assert_ptr_nonnull(t);
    return t;
}

static uint32_t lcg_state;
static float lcg_uniform(float lo, float hi)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(lcg_state >> 8) / 16777216.0f;
}

/* The program's own loader finds both terms by kind and name and accepts them. */
START_TEST(test_loader_accepts)
{
    static const char *const names[2] = { "wasserstein", "gradient-penalty" };
    gan_loader *loader = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    const char *dirs[1] = { GAN_TEST_LOSS_DIR };
    ck_assert_int_eq(gan_loader_new(&loader, dirs, 1, NULL, "/nonexistent", &err), GAN_OK);
    for (int i = 0; i < 2; i++) {
        struct gan_module *m = NULL;
        gan_status st = gan_loader_open(loader, GAN_PLUGIN_LOSS, names[i], &m, &err);
        ck_assert_msg(st == GAN_OK, "%s", err.message);
        ck_assert_str_eq(m->plugin.name, names[i]);
        gan_module_close(m);
    }
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ wasserstein */

START_TEST(test_ws_descriptor)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &ws_mod, NULL), GAN_OK);
    ck_assert_uint_eq(t.ops->struct_size, sizeof(struct gan_loss_ops));
    ck_assert_uint_eq(t.ops->targets(t.loss), GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR | GAN_LOSS_ADVERSARIAL);
    const struct gan_setting_spec *st = ws_mod.plugin->settings;
    ck_assert_str_eq(st[0].name, "reduction");
    ck_assert_int_eq(st[0].type, GAN_SETTING_STRING);
    ck_assert_str_eq(st[0].default_value, "mean");
    ck_assert_ptr_null(st[1].name);
    term_free(&t);
    static const char *const bad[] = { "reduction=total", NULL };
    ck_assert_int_eq(term_make(&t, &ws_mod, bad), GAN_ERR_CONFIG);
    ck_assert_msg(strstr(t.th.last_error, "reduction = \"total\"") != NULL, "%s",
                  t.th.last_error);
}
END_TEST

/* _i = 0: the default means; _i = 1: reduction = "sum", whose objectives and gradients
 * are B = 4 times the means' while the W-distance estimate stays the difference of means. */
START_TEST(test_ws_values)
{
    static const char *const sum[] = { "reduction=sum", NULL };
    const double k = _i ? 4.0 : 1.0;
    struct term t;
    ck_assert_int_eq(term_make(&t, &ws_mod, _i ? sum : NULL), GAN_OK);
    int64_t d[2] = { 4, 1 };
    float real[4] = { 1.5f, -0.5f, 2.0f, 3.0f }, fake[4] = { -1.0f, 0.25f, -2.0f, 0.75f };
    gan_tensor *dr = host_tensor(2, d, real), *df = host_tensor(2, d, fake);
    gan_tensor_set_requires_grad(dr, 1);
    gan_tensor_set_requires_grad(df, 1);
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.d_real = dr;
    in.d_fake = df;
    struct sink s = { 0 };
    struct gan_metric_sink ms = { &s, sink_report };

    /* mean D(fake) = −2/4 = −0.5, mean D(real) = 6/4 = 1.5. */
    gan_tensor *c = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
    ck_assert_double_eq_tol(scalar(c), -2.0 * k, 1e-6);
    ck_assert_int_eq(s.n, 1);
    ck_assert_double_eq_tol(sink_value(&s, "w_distance"), 2.0, 1e-6);
    /* ∂/∂D(fake) = 1/B, ∂/∂D(real) = −1/B (times B for the sums). */
    gan_tensor *inputs[2] = { dr, df }, *g[2];
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &c, NULL, 2, inputs, g, 0), GAN_OK);
    float gr[4], gf[4];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[0], gr, 4), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[1], gf, 4), GAN_OK);
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq_tol(gr[i], (float)(-0.25 * k), 1e-7f);
        ck_assert_float_eq_tol(gf[i], (float)(0.25 * k), 1e-7f);
    }

    /* The generator's objective needs no real batch and reports nothing. */
    in.d_real = NULL;
    s.n = 0;
    gan_tensor *gt = t.ops->term(t.loss, fx.ctx, GAN_LOSS_GENERATOR, &in, &ms);
    ck_assert_double_eq_tol(scalar(gt), 0.5 * k, 1e-6);
    ck_assert_int_eq(s.n, 0);
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &gt, NULL, 1, &df, g, 0), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[0], gf, 4), GAN_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq_tol(gf[i], (float)(-0.25 * k), 1e-7f);

    /* A sink is optional. */
    in.d_real = dr;
    ck_assert_double_eq_tol(scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL)),
                            -2.0 * k, 1e-6);

    /* Sums over batches of different sizes would estimate nothing; means may differ. */
    int64_t d3[2] = { 3, 1 };
    in.d_real = host_tensor(2, d3, real);
    gan_tensor *uneven = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    if (_i) {
        ck_assert_ptr_null(uneven);
        ck_assert_msg(strstr(t.th.last_error, "as many real scores as fake ones") != NULL, "%s",
                      t.th.last_error);
    } else {
        ck_assert_double_eq_tol(scalar(uneven), -0.5 - 1.0, 1e-6); /* mean of 1.5, −0.5, 2 */
    }
    gan_ctx_step_end(fx.ctx);
    term_free(&t);
}
END_TEST

START_TEST(test_ws_missing_inputs)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &ws_mod, NULL), GAN_OK);
    int64_t d[2] = { 2, 1 };
    float v[2] = { 1, 2 };
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.d_fake = host_tensor(2, d, v);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "d_real"));
    in.d_fake = NULL;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_GENERATOR, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "d_fake"));
    gan_ctx_step_end(fx.ctx);
    term_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ critics for the penalty */

/* A critic built in the test: D(x) = x·wᵀ + b ("linear", any sample shape, flattened), or
 * a tanh / relu MLP 2 → 8 → 8 → 1 ("mlp"). Its parameters live in a gan_net. */
enum critic_kind { CRITIC_LINEAR, CRITIC_TANH, CRITIC_RELU };

struct critic {
    enum critic_kind kind;
    gan_net *net;
    int64_t features;
    int calls;
    float *last_x;          /* the last batch it saw, copied out (when keep_x) */
    int keep_x;
    int64_t last_numel;
};

static gan_tensor *critic_forward(void *cctx, gan_ctx *ctx, gan_tensor *x)
{
    struct critic *c = cctx;
    c->calls++;
    if (c->keep_x) {
        c->last_numel = gan_tensor_numel(x);
        free(c->last_x);
        c->last_x = malloc((size_t)c->last_numel * sizeof *c->last_x);
        ck_assert_int_eq(gan_tensor_to_host(ctx, x, c->last_x, (size_t)c->last_numel), GAN_OK);
    }
    int64_t flat[2] = { gan_tensor_dim(x, 0), c->features };
    gan_tensor *h = gan_reshape(ctx, x, 2, flat);
    gan_tensor *const *p = gan_net_tensors(c->net);
    int layers = c->kind == CRITIC_LINEAR ? 1 : 3;
    for (int l = 0; l < layers; l++) {
        h = gan_add(ctx, gan_matmul(ctx, h, p[2 * l], 0, 1), p[2 * l + 1]);
        if (l < layers - 1)
            h = c->kind == CRITIC_TANH ? gan_tanh(ctx, h) : gan_relu(ctx, h);
    }
    return h;
}

static void critic_make(struct critic *c, enum critic_kind kind, int64_t features)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->features = features;
    ck_assert_int_eq(gan_net_new(fx.ctx, "critic", &c->net), GAN_OK);
    struct gan_init z = { GAN_INIT_ZEROS, 0 };
    int64_t shapes[6][2] = { { 8, features }, { 8, 0 }, { 8, 8 }, { 8, 0 }, { 1, 8 }, { 1, 0 } };
    if (kind == CRITIC_LINEAR) {
        shapes[0][0] = 1;
        shapes[1][0] = 1;
    }
    static const char *const names[6] = { "fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias",
                                           "fc2.weight", "fc2.bias" };
    for (int i = 0; i < (kind == CRITIC_LINEAR ? 2 : 6); i++)
        ck_assert_ptr_nonnull(gan_net_param(c->net, names[i], i % 2 ? 1 : 2, shapes[i], z));
}

static void critic_set(struct critic *c, size_t i, const float *v)
{
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(c->net, i), v,
                                              (size_t)gan_net_numel(c->net, i)), GAN_OK);
}

/* Every parameter from U(−s, s). */
static void critic_randomise(struct critic *c, uint32_t seed, float s)
{
    lcg_state = seed;
    for (size_t i = 0; i < gan_net_count(c->net); i++) {
        size_t n = (size_t)gan_net_numel(c->net, i);
        float *v = malloc(n * sizeof *v);
        for (size_t k = 0; k < n; k++)
            v[k] = lcg_uniform(-s, s);
        critic_set(c, i, v);
        free(v);
    }
}

static void critic_free(struct critic *c)
{
    gan_net_free(c->net);
    free(c->last_x);
}

/* ------------------------------------------------------------------ host reference
 * The penalty computed on the host in double for a tanh or relu MLP 2 → 8 → 8 → 1 with
 * weights as floats: ∇ₓD = W1ᵀ·diag(a1')·W2ᵀ·diag(a2')·W3ᵀ per sample. */

struct host_mlp {
    double w1[8][2], b1[8], w2[8][8], b2[8], w3[8], b3;
    int relu;
};

static void host_mlp_from(struct host_mlp *m, const struct critic *c)
{
    float buf[64];
    gan_ctx *ctx = fx.ctx;
    m->relu = c->kind == CRITIC_RELU;
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 0), buf, 16), GAN_OK);
    for (int i = 0; i < 16; i++)
        m->w1[i / 2][i % 2] = buf[i];
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 1), buf, 8), GAN_OK);
    for (int i = 0; i < 8; i++)
        m->b1[i] = buf[i];
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 2), buf, 64), GAN_OK);
    for (int i = 0; i < 64; i++)
        m->w2[i / 8][i % 8] = buf[i];
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 3), buf, 8), GAN_OK);
    for (int i = 0; i < 8; i++)
        m->b2[i] = buf[i];
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 4), buf, 8), GAN_OK);
    for (int i = 0; i < 8; i++)
        m->w3[i] = buf[i];
    ck_assert_int_eq(gan_tensor_to_host(ctx, gan_net_tensor(c->net, 5), buf, 1), GAN_OK);
    m->b3 = buf[0];
}

static void host_grad_x(const struct host_mlp *m, const double x[2], double g[2])
{
    double z1[8], a1[8], d1[8], z2[8], d2[8];
    for (int j = 0; j < 8; j++) {
        z1[j] = m->b1[j] + m->w1[j][0] * x[0] + m->w1[j][1] * x[1];
        a1[j] = m->relu ? (z1[j] > 0 ? z1[j] : 0) : tanh(z1[j]);
        d1[j] = m->relu ? (z1[j] > 0) : 1 - a1[j] * a1[j];
    }
    for (int j = 0; j < 8; j++) {
        z2[j] = m->b2[j];
        for (int k = 0; k < 8; k++)
            z2[j] += m->w2[j][k] * a1[k];
        double a2 = m->relu ? (z2[j] > 0 ? z2[j] : 0) : tanh(z2[j]);
        d2[j] = m->relu ? (z2[j] > 0) : 1 - a2 * a2;
    }
    double u2[8], u1[8];
    for (int j = 0; j < 8; j++)
        u2[j] = m->w3[j] * d2[j];
    for (int k = 0; k < 8; k++) {
        u1[k] = 0;
        for (int j = 0; j < 8; j++)
            u1[k] += u2[j] * m->w2[j][k];
        u1[k] *= d1[k];
    }
    g[0] = g[1] = 0;
    for (int k = 0; k < 8; k++) {
        g[0] += u1[k] * m->w1[k][0];
        g[1] += u1[k] * m->w1[k][1];
    }
}

/* λ·mean((‖∇ₓD(x̂ᵢ)‖ − target)²) with the plugin's default eps, 1e-12. */
static double host_penalty(const struct host_mlp *m, const double *xhat, int batch,
                           double lambda, double target, int one_sided, double *mean_norm)
{
    double sum = 0, norms = 0;
    for (int i = 0; i < batch; i++) {
        double g[2];
        host_grad_x(m, &xhat[2 * i], g);
        double n = sqrt(g[0] * g[0] + g[1] * g[1] + 1e-12);
        double dev = n - target;
        if (one_sided && dev < 0)
            dev = 0;
        sum += dev * dev;
        norms += n;
    }
    if (mean_norm)
        *mean_norm = norms / batch;
    return lambda * sum / batch;
}

/* ------------------------------------------------------------------ penalty helpers */

struct batch {
    int64_t dims[4];
    int ndim;
    float *real, *fake;
    gan_tensor *treal, *tfake;
};

static void batch_make(struct batch *b, int ndim, const int64_t *dims, uint32_t seed)
{
    memset(b, 0, sizeof *b);
    b->ndim = ndim;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        b->dims[d] = dims[d];
        n *= (size_t)dims[d];
    }
    b->real = malloc(n * sizeof *b->real);
    b->fake = malloc(n * sizeof *b->fake);
    lcg_state = seed;
    for (size_t k = 0; k < n; k++) {
        b->real[k] = lcg_uniform(-1.5f, 1.5f);
        b->fake[k] = lcg_uniform(-1.5f, 1.5f);
    }
    /* Persistent: a test may end steps between evaluations on the same batch. */
    b->treal = gan_tensor_new_persistent(fx.ctx, GAN_F32, ndim, dims);
    b->tfake = gan_tensor_new_persistent(fx.ctx, GAN_F32, ndim, dims);
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, b->treal, b->real, n), GAN_OK);
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, b->tfake, b->fake, n), GAN_OK);
}

static void batch_free(struct batch *b)
{
    gan_tensor_free(b->treal);
    gan_tensor_free(b->tfake);
    free(b->real);
    free(b->fake);
}

static struct gan_loss_inputs gp_inputs(struct batch *b, struct critic *c, uint64_t seed,
                                        uint64_t *offset)
{
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.real = b->treal;
    in.fake = b->tfake;
    in.critic = critic_forward;
    in.critic_ctx = c;
    in.seed = seed;
    in.offset = offset;
    return in;
}

/* α as the plugin must draw it: U(0, 1) for B samples at (seed, offset). */
static double *host_alpha(int64_t batch, uint64_t seed, uint64_t offset)
{
    int64_t d[1] = { batch };
    gan_tensor *a = gan_tensor_uniform(fx.ctx, GAN_F32, 1, d, seed, offset, 0.0f, 1.0f);
    float *af = malloc((size_t)batch * sizeof *af);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, a, af, (size_t)batch), GAN_OK);
    double *ad = malloc((size_t)batch * sizeof *ad);
    for (int64_t i = 0; i < batch; i++)
        ad[i] = af[i];
    free(af);
    return ad;
}

/* x̂ for a [B, 2] batch, in double. */
static double *host_xhat(const struct batch *b, const double *alpha)
{
    int64_t n = b->dims[0] * 2;
    double *x = malloc((size_t)n * sizeof *x);
    for (int64_t k = 0; k < n; k++)
        x[k] = alpha[k / 2] * b->real[k] + (1 - alpha[k / 2]) * b->fake[k];
    return x;
}

/* ------------------------------------------------------------------ gradient penalty */

START_TEST(test_gp_descriptor)
{
    static const char *const want[][2] = {
        { "lambda", "10.0" }, { "target", "1.0" }, { "one_sided", "false" },
        { "inner_scale", "1.0" }, { "eps", "1e-12" }, { "reduction", "mean" },
    };
    const struct gan_setting_spec *s = gp_mod.plugin->settings;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_str_eq(s[i].name, want[i][0]);
        ck_assert_str_eq(s[i].default_value, want[i][1]);
    }
    ck_assert_ptr_null(s[6].name);
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    ck_assert_uint_eq(t.ops->targets(t.loss), GAN_LOSS_CRITIC);
    term_free(&t);
}
END_TEST

/* The penalty term (settings as given) of a linear critic D(x) = w·x + b on a random batch
 * of `batch` two-feature samples: its value, its reported metrics, the critic's calls and
 * the critic's parameter gradients after the term's backward. */
struct linear_penalty {
    double term, penalty, grad_norm;
    float gw[2], gb;
    int calls;
};

static struct linear_penalty linear_penalty_run(const char *const *settings, const float *w,
                                                float b, int64_t batch, uint32_t data_seed,
                                                uint64_t alpha_seed, uint64_t offset)
{
    struct linear_penalty r;
    struct term t;
    ck_assert_msg(term_make(&t, &gp_mod, settings) == GAN_OK, "%s", t.th.last_error);
    struct critic c;
    critic_make(&c, CRITIC_LINEAR, 2);
    critic_set(&c, 0, w);
    critic_set(&c, 1, &b);
    int64_t d[2] = { batch, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, data_seed);
    struct gan_loss_inputs in = gp_inputs(&bt, &c, alpha_seed, &offset);
    struct sink s = { 0 };
    struct gan_metric_sink ms = { &s, sink_report };
    gan_tensor *term = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
    r.term = scalar(term);
    r.penalty = sink_value(&s, "penalty");
    r.grad_norm = sink_value(&s, "grad_norm");
    r.calls = c.calls;
    ck_assert_int_eq(gan_net_backward(c.net, term, NULL), GAN_OK);
    ck_assert_int_eq(gan_net_grad_to_host(c.net, 0, r.gw, 2), GAN_OK);
    ck_assert_int_eq(gan_net_grad_to_host(c.net, 1, &r.gb, 1), GAN_OK);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
    return r;
}

/* D(x) = w·x + b has ∇ₓD = w for every sample, whatever α is: the penalty is exactly
 * λ(‖w‖ − target)², and its gradient 2λ(‖w‖ − target)·w/‖w‖ (none for b). */
struct linear_case {
    float w[2];
    const char *lambda, *target, *one_sided;
    double lam, tgt;
    int one;
    int sum; /* reduction = "sum": the term and its gradient are B times the mean's */
};

static const struct linear_case linear_cases[] = {
    { { 0.6f, -1.7f }, NULL, NULL, NULL, 10, 1, 0, 0 },
    { { 0.6f, -1.7f }, "lambda=0.1", NULL, NULL, 0.1, 1, 0, 0 },
    { { 0.3f, 0.4f }, "lambda=0.1", NULL, NULL, 0.1, 1, 0, 0 },
    { { 3.0f, 4.0f }, "lambda=2", "target=2.5", NULL, 2, 2.5, 0, 0 },
    /* One-sided: a norm below the target costs nothing, one above costs as before. */
    { { 0.3f, 0.4f }, "lambda=10", NULL, "one_sided=true", 10, 1, 1, 0 },
    { { 0.6f, -1.7f }, "lambda=10", NULL, "one_sided=true", 10, 1, 1, 0 },
    { { 1.2f, 0.5f }, NULL, NULL, "one_sided=false", 10, 1, 0, 0 },
    { { 0.6f, -1.7f }, "lambda=0.1", NULL, NULL, 0.1, 1, 0, 1 },
    { { 0.6f, -1.7f }, "lambda=10", NULL, "one_sided=true", 10, 1, 1, 1 },
};
#define N_LINEAR ((int)(sizeof linear_cases / sizeof linear_cases[0]))

START_TEST(test_gp_linear_exact)
{
    const struct linear_case *lc = &linear_cases[_i];
    const char *settings[5] = { NULL, NULL, NULL, NULL, NULL };
    int ns = 0;
    if (lc->lambda)
        settings[ns++] = lc->lambda;
    if (lc->target)
        settings[ns++] = lc->target;
    if (lc->one_sided)
        settings[ns++] = lc->one_sided;
    if (lc->sum)
        settings[ns++] = "reduction=sum";
    struct linear_penalty r = linear_penalty_run(settings, lc->w, 0.7f, 5, 11u + (uint32_t)_i,
                                                 9, 3);

    double w0 = lc->w[0], w1 = lc->w[1];
    double norm = sqrt(w0 * w0 + w1 * w1 + 1e-12), dev = norm - lc->tgt;
    if (lc->one && dev < 0)
        dev = 0;
    double batch = lc->sum ? 5.0 : 1.0; /* the sum over the batch of 5 equal penalties */
    ck_assert_double_eq_tol(r.term, batch * lc->lam * dev * dev,
                            1e-6 * (1 + batch * lc->lam * dev * dev));
    /* the metric is the batch mean either way */
    ck_assert_double_eq_tol(r.penalty, dev * dev, 1e-6 * (1 + dev * dev));
    ck_assert_double_eq_tol(r.grad_norm, norm, 1e-6 * norm);
    ck_assert_int_eq(r.calls, 1);
    double k = batch * 2 * lc->lam * dev / norm;
    ck_assert_double_eq_tol(r.gw[0], k * w0, 1e-5 * (1 + fabs(k * w0)));
    ck_assert_double_eq_tol(r.gw[1], k * w1, 1e-5 * (1 + fabs(k * w1)));
    ck_assert_float_eq(r.gb, 0.0f);
}
END_TEST

/* A tanh MLP critic, α drawn by the plugin: the value against the host's own α, x̂,
 * ∇ₓD and norm, in double. Loops over batch sizes (ceil(B/4) blocks of α) and settings. */
struct mlp_case {
    int64_t batch;
    const char *settings[3];
    double lambda, target;
    int one_sided;
    enum critic_kind kind;
};

static const struct mlp_case mlp_cases[] = {
    { 6, { NULL }, 10, 1, 0, CRITIC_TANH },
    { 9, { "lambda=0.1", NULL }, 0.1, 1, 0, CRITIC_TANH },
    { 1, { "target=0.5", NULL }, 10, 0.5, 0, CRITIC_TANH },
    { 13, { "one_sided=true", "target=0.2", NULL }, 10, 0.2, 1, CRITIC_TANH },
    { 8, { NULL }, 10, 1, 0, CRITIC_RELU },
};
#define N_MLP ((int)(sizeof mlp_cases / sizeof mlp_cases[0]))

START_TEST(test_gp_mlp_value_against_host)
{
    const struct mlp_case *mc = &mlp_cases[_i];
    struct term t;
    ck_assert_msg(term_make(&t, &gp_mod, mc->settings) == GAN_OK, "%s", t.th.last_error);
    struct critic c;
    critic_make(&c, mc->kind, 2);
    critic_randomise(&c, 100u + (uint32_t)_i, 0.9f);
    struct host_mlp hm;
    host_mlp_from(&hm, &c);
    int64_t d[2] = { mc->batch, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 200u + (uint32_t)_i);
    uint64_t seed = 0xfeedULL + (uint64_t)_i, start = 17, offset = start;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, seed, &offset);
    struct sink s = { 0 };
    struct gan_metric_sink ms = { &s, sink_report };
    gan_tensor *term = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
    ck_assert_uint_eq(offset, start + (uint64_t)(mc->batch + 3) / 4);

    double *alpha = host_alpha(mc->batch, seed, start);
    double *xhat = host_xhat(&bt, alpha);
    double mean_norm;
    double want = host_penalty(&hm, xhat, (int)mc->batch, mc->lambda, mc->target,
                               mc->one_sided, &mean_norm);
    ck_assert_msg(fabs(scalar(term) - want) <= 1e-5 * (1 + fabs(want)), "penalty %.9g, host %.9g",
                  scalar(term), want);
    ck_assert_double_eq_tol(sink_value(&s, "penalty"), want / mc->lambda,
                            1e-5 * (1 + want / mc->lambda));
    ck_assert_double_eq_tol(sink_value(&s, "grad_norm"), mean_norm, 1e-5 * (1 + mean_norm));
    /* A penalty that is zero by construction would prove nothing. */
    ck_assert_msg(want > 1e-4, "the case is degenerate: penalty %g", want);
    free(alpha);
    free(xhat);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* The interpolates themselves: x̂ = α·real + (1 − α)·fake with one α per sample, shared
 * by all of a sample's elements, for samples shaped [2, 3]; α at the run's stream. */
START_TEST(test_gp_interpolates)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_LINEAR, 6);
    c.keep_x = 1;
    critic_randomise(&c, 5u, 1.0f);
    int64_t d[3] = { 7, 2, 3 };
    struct batch bt;
    batch_make(&bt, 3, d, 77u);
    uint64_t seed = 31337, offset = 1000;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, seed, &offset);
    ck_assert_ptr_nonnull(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_uint_eq(offset, 1002);
    ck_assert_int_eq(c.last_numel, 42);
    double *alpha = host_alpha(7, seed, 1000);
    for (int i = 0; i < 7; i++) {
        ck_assert(alpha[i] > 0 && alpha[i] < 1);
        for (int k = 0; k < 6; k++) {
            int e = i * 6 + k;
            double want = alpha[i] * bt.real[e] + (1 - alpha[i]) * bt.fake[e];
            ck_assert_msg(fabs(c.last_x[e] - want) <= 1e-6 * (1 + fabs(want)),
                          "x̂[%d][%d] = %.8g, want %.8g (α = %.8g)", i, k, c.last_x[e], want,
                          alpha[i]);
        }
    }
    free(alpha);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* A given α (ganctl grads): x̂ is built from it, not from the stream, which stays where it
 * was; given the very α the stream would draw, the value is the drawn one's bit for bit;
 * given another α, it differs; α shaped [B], [B, 1] or [B, 1, 1] all work (samples
 * shaped [2, 3]); a wrong count is refused before the critic runs. */
START_TEST(test_gp_given_alpha)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_TANH, 6);
    critic_randomise(&c, 12u, 1.0f);
    int64_t d[3] = { 5, 2, 3 };
    struct batch bt;
    batch_make(&bt, 3, d, 91u);
    uint64_t seed = 777, offset = 40;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, seed, &offset);
    double drawn = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_uint_eq(offset, 42);

    double *alpha = host_alpha(5, seed, 40);
    float af[5], other[5];
    for (int i = 0; i < 5; i++) {
        af[i] = (float)alpha[i];
        other[i] = (float)(0.05 + 0.2 * i);
    }
    static const int64_t shapes[3][3] = { { 5, 0, 0 }, { 5, 1, 0 }, { 5, 1, 1 } };
    for (int k = 0; k < 3; k++) {
        offset = 40;
        in.alpha = host_tensor(k + 1, shapes[k], af);
        c.keep_x = 1;
        double given = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
        c.keep_x = 0;
        ck_assert_msg(given == drawn, "α shaped with %d dims: %.9g, drawn %.9g", k + 1, given,
                      drawn);
        ck_assert_uint_eq(offset, 40);
        ck_assert_int_eq(c.last_numel, 30);
        for (int e = 0; e < 30; e++) {
            double a = af[e / 6];
            double want = a * bt.real[e] + (1 - a) * bt.fake[e];
            ck_assert_msg(fabs(c.last_x[e] - want) <= 1e-6 * (1 + fabs(want)),
                          "x̂[%d] = %.8g, want %.8g", e, c.last_x[e], want);
        }
    }
    int64_t d1[1] = { 5 };
    in.alpha = host_tensor(1, d1, other);
    double moved = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(moved != drawn, "another α gave the same penalty %.9g", moved);
    /* Without a stream at all: α given is enough. */
    in.offset = NULL;
    ck_assert_double_eq(scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL)), moved);

    int calls = c.calls;
    int64_t d4[2] = { 4, 1 };
    in.alpha = host_tensor(2, d4, other);
    in.offset = &offset;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(strstr(t.th.last_error, "alpha has 4 values for a batch of 5"), "%s",
                  t.th.last_error);
    ck_assert_int_eq(c.calls, calls);
    free(alpha);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* Same seed and offset, same α, same value; the next offset draws new α. */
START_TEST(test_gp_reproducible_stream)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_TANH, 2);
    critic_randomise(&c, 8u, 1.0f);
    int64_t d[2] = { 10, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 3u);
    uint64_t offset = 0;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, 4242, &offset);
    double v1 = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_uint_eq(offset, 3);
    double v2 = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_uint_eq(offset, 6);
    offset = 0;
    double v3 = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_uint_eq(offset, 3);
    in.seed = 4243;
    offset = 0;
    double v4 = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_msg(v1 == v3, "same stream position, different values: %.9g, %.9g", v1, v3);
    ck_assert_msg(v1 != v2, "the offset did not move the draws: %.9g both times", v1);
    ck_assert_msg(v1 != v4, "the seed did not change the draws: %.9g both times", v1);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* ∂(λ·penalty)/∂θ through the double backward, against central differences of the
 * plugin's own value (FP32, step 1e-2) and of the host's (double, step 1e-5). The
 * critic is tanh, 2 → 8 → 8 → 1, so the function is smooth. */
START_TEST(test_gp_gradient_finite_differences)
{
    const char *const settings[] = { _i ? "one_sided=true" : "lambda=3", _i ? "target=0.3" : NULL,
                                     NULL };
    double lambda = _i ? 10 : 3, target = _i ? 0.3 : 1;
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, settings), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_TANH, 2);
    critic_randomise(&c, 900u + (uint32_t)_i, 0.8f);
    int64_t d[2] = { 6, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 901u);
    const uint64_t seed = 77, start = 5;
    uint64_t offset = start;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, seed, &offset);
    gan_tensor *term = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_ptr_nonnull(term);
    ck_assert_int_eq(gan_net_zero_grads(c.net), GAN_OK);
    ck_assert_int_eq(gan_net_backward(c.net, term, NULL), GAN_OK);
    gan_ctx_step_end(fx.ctx);
    double *alpha = host_alpha(6, seed, start);
    double *xhat = host_xhat(&bt, alpha);

    int checked = 0, nonzero = 0;
    for (size_t p = 0; p < gan_net_count(c.net); p++) {
        size_t n = (size_t)gan_net_numel(c.net, p);
        float *v = malloc(n * sizeof *v), *g = malloc(n * sizeof *g);
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(c.net, p), v, n), GAN_OK);
        ck_assert_int_eq(gan_net_grad_to_host(c.net, p, g, n), GAN_OK);
        for (size_t k = 0; k < n; k++) {
            float keep = v[k];
            double fd32, fd64;
            /* Through the plugin, same α each time (same stream position). */
            const float h32 = 1e-2f;
            double f[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                v[k] = keep + (sgn ? -h32 : h32);
                critic_set(&c, p, v);
                offset = start;
                f[sgn] = scalar(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
                gan_ctx_step_end(fx.ctx);
            }
            fd32 = (f[0] - f[1]) / (2.0 * (double)h32);
            /* The host function in double. */
            struct host_mlp hm;
            const double h64 = 1e-5;
            v[k] = keep;
            critic_set(&c, p, v);
            host_mlp_from(&hm, &c);
            double *slot = p == 0 ? &hm.w1[k / 2][k % 2] : p == 1 ? &hm.b1[k]
                           : p == 2 ? &hm.w2[k / 8][k % 8] : p == 3 ? &hm.b2[k]
                           : p == 4 ? &hm.w3[k] : &hm.b3;
            double base = *slot;
            *slot = base + h64;
            double fp = host_penalty(&hm, xhat, 6, lambda, target, _i, NULL);
            *slot = base - h64;
            double fm = host_penalty(&hm, xhat, 6, lambda, target, _i, NULL);
            fd64 = (fp - fm) / (2 * h64);

            ck_assert_msg(fabs(g[k] - fd64) <= 2e-4 + 2e-3 * fabs(fd64),
                          "%s[%zu]: autodiff %.8g, host central difference %.8g",
                          gan_net_name(c.net, p), k, g[k], fd64);
            ck_assert_msg(fabs(g[k] - fd32) <= 2e-3 + 2e-2 * fabs(fd32),
                          "%s[%zu]: autodiff %.8g, plugin central difference %.8g",
                          gan_net_name(c.net, p), k, g[k], fd32);
            checked++;
            nonzero += fabs(fd64) > 1e-3;
        }
        free(v);
        free(g);
    }
    ck_assert_int_eq(checked, 16 + 8 + 64 + 8 + 8 + 1);
    /* The output bias has no effect on ∇ₓD; most other entries do. */
    ck_assert_msg(nonzero > checked / 2, "only %d of %d gradients are non-zero", nonzero,
                  checked);
    free(alpha);
    free(xhat);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* The penalty trains the critic only: a fake batch that the generator's parameter
 * produced with recording on gets no gradient through the penalty. */
START_TEST(test_gp_fake_detached)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_TANH, 2);
    critic_randomise(&c, 44u, 1.0f);
    int64_t d[2] = { 4, 2 }, one[1] = { 1 };
    struct batch bt;
    batch_make(&bt, 2, d, 45u);
    float gv = 1.3f;
    gan_tensor *gen = gan_tensor_new_persistent(fx.ctx, GAN_F32, 1, one);
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gen, &gv, 1), GAN_OK);
    gan_tensor_set_requires_grad(gen, 1);
    uint64_t offset = 0;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, 1, &offset);
    gan_tensor *plain = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    double v_plain = scalar(plain);
    gan_tensor *inputs[2] = { gan_net_tensor(c.net, 0), gan_net_tensor(c.net, 4) }, *g0[2];
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &plain, NULL, 2, inputs, g0, 0), GAN_OK);
    float ref_w1[16], ref_w3[8];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g0[0], ref_w1, 16), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g0[1], ref_w3, 8), GAN_OK);

    /* fake' = gen · (fake / gen): the same values, now recorded from gen. */
    float inv = 1.0f / gv;
    gan_tensor *scaled = gan_scale(fx.ctx, bt.tfake, inv);
    in.fake = gan_mul(fx.ctx, gen, scaled);
    ck_assert(gan_tensor_requires_grad(in.fake));
    offset = 0;
    gan_tensor *term = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_double_eq_tol(scalar(term), v_plain, 1e-5 * (1 + v_plain));
    gan_tensor *all[3] = { gen, gan_net_tensor(c.net, 0), gan_net_tensor(c.net, 4) }, *g[3];
    ck_assert_int_eq(gan_grad(fx.ctx, 1, &term, NULL, 3, all, g, 0), GAN_OK);
    float ggen, gw1[16], gw3[8];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[0], &ggen, 1), GAN_OK);
    ck_assert_float_eq(ggen, 0.0f);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[1], gw1, 16), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, g[2], gw3, 8), GAN_OK);
    for (int k = 0; k < 16; k++)
        ck_assert_float_eq_tol(gw1[k], ref_w1[k], 1e-4f * (1 + fabsf(ref_w1[k])));
    for (int k = 0; k < 8; k++)
        ck_assert_float_eq_tol(gw3[k], ref_w3[k], 1e-4f * (1 + fabsf(ref_w3[k])));
    gan_ctx_step_end(fx.ctx);
    gan_tensor_free(gen);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* ∇ₓD = 0 exactly: a linear critic with w = 0 (even _i), and a ReLU critic whose hidden
 * units are all dead (odd _i). With the default eps the term is λ(1e-6 − 1)² and every
 * parameter gradient is finite: zero, the analytic 2λ(n − 1)·∇ₓD/n·∂(∇ₓD)/∂θ at
 * ∇ₓD = 0. With eps = 0 (_i ≥ 2), the paper's plain norm, the term is λ(0 − 1)², still
 * finite, but the norm's derivative is 0·∞ = NaN and reaches the parameters. */
START_TEST(test_gp_zero_gradient)
{
    int relu = _i % 2, plain = _i >= 2;
    const char *const plain_settings[] = { "eps=0", NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, plain ? plain_settings : NULL), GAN_OK);
    struct critic c;
    critic_make(&c, relu ? CRITIC_RELU : CRITIC_LINEAR, 2);
    if (relu) {
        critic_randomise(&c, 12u, 1.0f);
        float dead[8] = { -5, -5, -5, -5, -5, -5, -5, -5 };
        critic_set(&c, 1, dead);     /* every first-layer unit is negative on |x| ≤ 1.5 */
        float small[16];
        for (int k = 0; k < 16; k++)
            small[k] = 0.5f;
        critic_set(&c, 0, small);
    }
    int64_t d[2] = { 5, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 13u);
    uint64_t offset = 0;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, 2, &offset);
    struct sink s = { 0 };
    struct gan_metric_sink ms = { &s, sink_report };
    gan_tensor *term = t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, &ms);
    ck_assert_int_eq(gan_net_backward(c.net, term, NULL), GAN_OK);
    int nans = 0;
    for (size_t p = 0; p < gan_net_count(c.net); p++) {
        size_t n = (size_t)gan_net_numel(c.net, p);
        float g[64];
        ck_assert_int_eq(gan_net_grad_to_host(c.net, p, g, n), GAN_OK);
        for (size_t k = 0; k < n; k++) {
            if (plain) {
                nans += isnan(g[k]) != 0;
                continue;
            }
            ck_assert_msg(isfinite(g[k]), "%s[%zu] = %g", gan_net_name(c.net, p), k, g[k]);
            ck_assert_msg(g[k] == 0.0f, "%s[%zu] = %g; a zero gradient gives a zero update",
                          gan_net_name(c.net, p), k, g[k]);
        }
    }
    if (plain) {
        ck_assert_msg(nans > 0, "eps = 0 at a zero gradient left every parameter gradient "
                      "finite; the plain norm's derivative there is NaN");
        if (!relu) {
            /* D = w·x + b: the weight's gradient is the norm's derivative itself. */
            float gw[2];
            ck_assert_int_eq(gan_net_grad_to_host(c.net, 0, gw, 2), GAN_OK);
            ck_assert_msg(isnan(gw[0]) && isnan(gw[1]), "w's gradient is %g, %g", gw[0], gw[1]);
        }
        ck_assert_double_eq(scalar(term), 10.0);
        ck_assert_double_eq(sink_value(&s, "grad_norm"), 0.0);
    } else {
        double want = 10.0 * (1e-6 - 1) * (1e-6 - 1);
        ck_assert_double_eq_tol(scalar(term), want, 1e-6 * want);
        ck_assert_double_eq_tol(sink_value(&s, "grad_norm"), 1e-6, 1e-9);
    }
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* The eps setting in the formula: D(x) = w·x + b, ∇ₓD = w, so the penalty is exactly
 * λ(n − 1)² with n = sqrt(‖w‖² + eps), and w's gradient 2λ(n − 1)·w/n: 0 at w = 0 for any
 * eps > 0. A large eps shows that the setting, not a constant, is what is added. */
struct eps_case {
    const char *setting;          /* NULL: the default */
    double eps;
    float w[2];
};

static const struct eps_case eps_cases[] = {
    { NULL, 1e-12, { 0.6f, -1.7f } },
    { "eps=0", 0, { 0.6f, -1.7f } },
    { "eps=0.25", 0.25, { 0.6f, -1.7f } },
    { "eps=0.25", 0.25, { 0.0f, 0.0f } },
    { "eps=1e-12", 1e-12, { 0.0f, 0.0f } },
    { "eps=3", 3, { 0.3f, 0.4f } },
};
#define N_EPS ((int)(sizeof eps_cases / sizeof eps_cases[0]))

START_TEST(test_gp_eps_linear_exact)
{
    const struct eps_case *ec = &eps_cases[_i];
    const char *const settings[] = { ec->setting, NULL };
    struct linear_penalty r = linear_penalty_run(settings, ec->w, -0.4f, 4, 31u + (uint32_t)_i,
                                                 7, 0);
    double w0 = ec->w[0], w1 = ec->w[1];
    double n = sqrt(w0 * w0 + w1 * w1 + ec->eps), want = 10.0 * (n - 1) * (n - 1);
    ck_assert_double_eq_tol(r.term, want, 1e-6 * (1 + want));
    ck_assert_double_eq_tol(r.grad_norm, n, 1e-6 * (1 + n));
    double k = 20.0 * (n - 1) / n;
    ck_assert_double_eq_tol(r.gw[0], k * w0, 1e-5 * (1 + fabs(k * w0)));
    ck_assert_double_eq_tol(r.gw[1], k * w1, 1e-5 * (1 + fabs(k * w1)));
}
END_TEST

/* Two penalty terms, with settings `sa` and `sb`, on the same random critic, batch and α:
 * both finite and not degenerate, equal within rounding, and so are the critic's
 * first-layer gradients, of which at least one is non-zero (or the comparison would prove
 * nothing). */
static void assert_terms_agree(const char *const *sa, const char *const *sb,
                               enum critic_kind kind, uint32_t critic_seed, int64_t batch,
                               uint32_t data_seed, uint64_t alpha_seed)
{
    struct term t1, t2;
    ck_assert_int_eq(term_make(&t1, &gp_mod, sa), GAN_OK);
    ck_assert_int_eq(term_make(&t2, &gp_mod, sb), GAN_OK);
    struct critic c;
    critic_make(&c, kind, 2);
    critic_randomise(&c, critic_seed, 1.0f);
    int64_t d[2] = { batch, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, data_seed);
    uint64_t offset = 0;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, alpha_seed, &offset);
    float g1[16], g2[16];
    gan_tensor *a = t1.ops->term(t1.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    double va = scalar(a);
    ck_assert_msg(isfinite(va) && va > 1e-4, "the case is degenerate: penalty %g", va);
    ck_assert_int_eq(gan_net_zero_grads(c.net), GAN_OK);
    ck_assert_int_eq(gan_net_backward(c.net, a, NULL), GAN_OK);
    ck_assert_int_eq(gan_net_grad_to_host(c.net, 0, g1, 16), GAN_OK);
    offset = 0; /* the same α again */
    gan_tensor *b = t2.ops->term(t2.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL);
    ck_assert_double_eq_tol(scalar(b), va, 1e-6 * (1 + va));
    ck_assert_int_eq(gan_net_zero_grads(c.net), GAN_OK);
    ck_assert_int_eq(gan_net_backward(c.net, b, NULL), GAN_OK);
    ck_assert_int_eq(gan_net_grad_to_host(c.net, 0, g2, 16), GAN_OK);
    int moved = 0;
    for (int k = 0; k < 16; k++) {
        ck_assert_msg(isfinite(g1[k]) && isfinite(g2[k]), "g[%d]: %g, %g", k, g1[k], g2[k]);
        ck_assert_float_eq_tol(g2[k], g1[k], 1e-5f * (1 + fabsf(g1[k])));
        moved += g1[k] != 0.0f;
    }
    ck_assert_msg(moved > 0, "no first-layer gradient: the comparison would prove nothing");
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t1);
    term_free(&t2);
}

/* Away from a zero gradient the guard is below FP32's resolution: eps = 0 and the
 * default give the same term and the same parameter gradients to within rounding, for
 * a tanh and a ReLU critic (_i) with random weights. */
START_TEST(test_gp_eps_nonzero_gradient)
{
    const char *const plain[] = { "eps=0", NULL };
    assert_terms_agree(NULL, plain, _i ? CRITIC_RELU : CRITIC_TANH, 41u + (uint32_t)_i, 7,
                       42u + (uint32_t)_i, 6);
}
END_TEST

/* Seeding the inner gradient with s and dividing by s changes nothing in FP32. */
START_TEST(test_gp_inner_scale)
{
    const char *const scaled[] = { "inner_scale=1024", NULL };
    assert_terms_agree(NULL, scaled, CRITIC_TANH, 21u, 6, 22u, 5);
}
END_TEST

/* The mlp module's forward as the critic callback the core would pass. */
struct module_critic {
    const struct gan_model_ops *ops;
    gan_model *model;
};

static gan_tensor *module_critic_forward(void *cctx, gan_ctx *ctx, gan_tensor *x)
{
    struct module_critic *mc = cctx;
    return mc->ops->forward(mc->model, ctx, x);
}

/* WGAN-GP's critic objective with the toy critic from the mlp module (tanh, width 8):
 * wasserstein + gradient-penalty, each against the host. */
START_TEST(test_wgan_gp_with_mlp_module)
{
    const struct gan_model_ops *mo = mlp_mod.plugin->ops;
    const char *const ms_settings[] = { "width=8", "depth=2", "activation=tanh", NULL };
    struct test_host mh;
    test_host_init_declared(&mh, ms_settings, mlp_mod.plugin->settings);
    struct gan_model_io io;
    memset(&io, 0, sizeof io);
    io.in_ndim = io.out_ndim = 1;
    io.in_dims[0] = 2;
    io.out_dims[0] = 1;
    struct critic c;
    memset(&c, 0, sizeof c);
    c.kind = CRITIC_TANH;
    c.features = 2;
    ck_assert_int_eq(gan_net_new(fx.ctx, "critic", &c.net), GAN_OK);
    gan_model *model = NULL;
    ck_assert_msg(mo->create(&mh.host, GAN_MODEL_CRITIC, &io, c.net, &model) == GAN_OK, "%s",
                  mh.last_error);
    uint64_t init_offset = 0;
    ck_assert_int_eq(gan_net_init(c.net, 3, &init_offset), GAN_OK);
    critic_randomise(&c, 61u, 0.9f);   /* He's zero biases would make a special case */
    struct host_mlp hm;
    host_mlp_from(&hm, &c);

    struct term ws, gp;
    const char *const gp_settings[] = { "lambda=0.1", NULL };
    ck_assert_int_eq(term_make(&ws, &ws_mod, NULL), GAN_OK);
    ck_assert_int_eq(term_make(&gp, &gp_mod, gp_settings), GAN_OK);
    int64_t d[2] = { 8, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 62u);
    uint64_t offset = 40;
    struct gan_loss_inputs in;
    memset(&in, 0, sizeof in);
    in.real = bt.treal;
    in.fake = bt.tfake;
    in.d_real = mo->forward(model, fx.ctx, bt.treal);
    in.d_fake = mo->forward(model, fx.ctx, bt.tfake);
    struct module_critic mcrit = { mo, model };
    in.critic = module_critic_forward;
    in.critic_ctx = &mcrit;
    in.seed = 8;
    in.offset = &offset;
    gan_tensor *total = gan_add(fx.ctx,
                                ws.ops->term(ws.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL),
                                gp.ops->term(gp.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    double *alpha = host_alpha(8, 8, 40);
    double *xhat = host_xhat(&bt, alpha);
    double dsum = 0;
    for (int i = 0; i < 8; i++) {
        for (int which = 0; which < 2; which++) {
            const float *x = which ? &bt.fake[2 * i] : &bt.real[2 * i];
            double a1[8], a2, out = hm.b3;
            for (int j = 0; j < 8; j++)
                a1[j] = tanh(hm.b1[j] + hm.w1[j][0] * x[0] + hm.w1[j][1] * x[1]);
            for (int j = 0; j < 8; j++) {
                double z = hm.b2[j];
                for (int k = 0; k < 8; k++)
                    z += hm.w2[j][k] * a1[k];
                a2 = tanh(z);
                out += hm.w3[j] * a2;
            }
            dsum += which ? out : -out;
        }
    }
    double want = dsum / 8 + host_penalty(&hm, xhat, 8, 0.1, 1.0, 0, NULL);
    ck_assert_msg(fabs(scalar(total) - want) <= 1e-5 * (1 + fabs(want)), "%.9g, host %.9g",
                  scalar(total), want);
    free(alpha);
    free(xhat);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    mo->destroy(model);
    critic_free(&c);
    term_free(&ws);
    term_free(&gp);
}
END_TEST

/* ------------------------------------------------------------------ refusals */

struct bad_setting {
    const char *setting;
    const char *mentions;
};

static const struct bad_setting bad_settings[] = {
    { "lambda=-1", "lambda = -1" },
    { "lambda=inf", "lambda = inf" },
    { "lambda=heavy", "lambda is not a number" },
    { "target=nan", "target = nan" },
    { "target=-0.5", "target = -0.5" },
    { "inner_scale=0", "inner_scale = 0" },
    { "inner_scale=-8", "inner_scale = -8" },
    { "one_sided=maybe", "one_sided is not a boolean" },
    { "eps=-1e-12", "eps = -1e-12" },
    { "eps=inf", "eps = inf" },
    { "eps=nan", "eps = nan" },
    { "eps=tiny", "eps is not a number" },
    { "reduction=avg", "reduction = \"avg\"" },
};
#define N_BAD ((int)(sizeof bad_settings / sizeof bad_settings[0]))

START_TEST(test_gp_bad_settings)
{
    const char *const settings[] = { bad_settings[_i].setting, NULL };
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, settings), GAN_ERR_CONFIG);
    ck_assert_ptr_null(t.loss);
    ck_assert_msg(strstr(t.th.last_error, bad_settings[_i].mentions), "\"%s\" lacks \"%s\"",
                  t.th.last_error, bad_settings[_i].mentions);
}
END_TEST

START_TEST(test_gp_bad_inputs)
{
    struct term t;
    ck_assert_int_eq(term_make(&t, &gp_mod, NULL), GAN_OK);
    struct critic c;
    critic_make(&c, CRITIC_LINEAR, 2);
    int64_t d[2] = { 4, 2 }, d3[2] = { 3, 2 };
    struct batch bt;
    batch_make(&bt, 2, d, 1u);
    uint64_t offset = 0;
    struct gan_loss_inputs in = gp_inputs(&bt, &c, 1, &offset);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_GENERATOR, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "critic's objective"));
    in.real = NULL;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "real is missing"));
    float v[6] = { 0 };
    in.real = host_tensor(2, d3, v);
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "same shape"));
    in.real = bt.treal;
    in.offset = NULL;
    ck_assert_ptr_null(t.ops->term(t.loss, fx.ctx, GAN_LOSS_CRITIC, &in, NULL));
    ck_assert_ptr_nonnull(strstr(t.th.last_error, "offset is missing"));
    /* Nothing was drawn by the refused calls. */
    ck_assert_uint_eq(offset, 0);
    ck_assert_int_eq(c.calls, 0);
    gan_ctx_step_end(fx.ctx);
    batch_free(&bt);
    critic_free(&c);
    term_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *losses_suite(void)
{
    Suite *s = suite_create("losses");
    TCase *tc = tcase_create("wasserstein");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_loader_accepts);
    tcase_add_test(tc, test_ws_descriptor);
    tcase_add_loop_test(tc, test_ws_values, 0, 2);
    tcase_add_test(tc, test_ws_missing_inputs);
    suite_add_tcase(s, tc);

    tc = tcase_create("penalty_value");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_gp_descriptor);
    tcase_add_loop_test(tc, test_gp_linear_exact, 0, N_LINEAR);
    tcase_add_loop_test(tc, test_gp_mlp_value_against_host, 0, N_MLP);
    tcase_add_test(tc, test_gp_interpolates);
    tcase_add_test(tc, test_gp_reproducible_stream);
    tcase_add_test(tc, test_gp_given_alpha);
    tcase_add_test(tc, test_wgan_gp_with_mlp_module);
    suite_add_tcase(s, tc);

    tc = tcase_create("penalty_gradient");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_gp_gradient_finite_differences, 0, 2);
    tcase_add_test(tc, test_gp_fake_detached);
    tcase_add_loop_test(tc, test_gp_zero_gradient, 0, 4);
    tcase_add_loop_test(tc, test_gp_eps_linear_exact, 0, N_EPS);
    tcase_add_loop_test(tc, test_gp_eps_nonzero_gradient, 0, 2);
    tcase_add_test(tc, test_gp_inner_scale);
    suite_add_tcase(s, tc);

    tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_gp_bad_settings, 0, N_BAD);
    tcase_add_test(tc, test_gp_bad_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(losses_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
