/* SPDX-License-Identifier: MIT */
/* check_mlp.c — tests of the model plugin "mlp" loaded from the build tree with dlopen:
 * parameter names and shapes, initialisation, forward against a host MLP, settings. */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "nn/net.h"
#include "plugin/plugin_loader.h"

#ifndef GAN_TEST_MODEL_DIR
#error "GAN_TEST_MODEL_DIR must name the folder that holds model-mlp.so"
#endif

/* ------------------------------------------------------------------ fixture */

static void *module;
static const struct gan_plugin *plugin;
static const struct gan_model_ops *mops;

static void setup(void)
{
    backend_fixture_setup();
    const char *path = GAN_TEST_MODEL_DIR "/model-mlp.so";
    module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(module, "%s did not load: %s", path, dlerror());
    void *sym = dlsym(module, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym, "%s has no %s", path, GAN_PLUGIN_SYMBOL);
    gan_plugin_descriptor_fn get;
    memcpy(&get, &sym, sizeof get);
    plugin = get();
    ck_assert_ptr_nonnull(plugin);
    mops = plugin->ops;
}

static void teardown(void)
{
    backend_fixture_teardown();
    if (module)
        dlclose(module);
    module = NULL;
}

/* One model instance with its net and host, as the core would make it. */
struct inst {
    struct test_host th;
    const char *settings[8];
    gan_net *net;
    gan_model *model;
    gan_status status;
};

static struct gan_model_io io_of(int in_ndim, const int64_t *in, int out_ndim, const int64_t *out)
{
    struct gan_model_io io;
    memset(&io, 0, sizeof io);
    io.in_ndim = in_ndim;
    io.out_ndim = out_ndim;
    for (int d = 0; d < in_ndim; d++)
        io.in_dims[d] = in[d];
    for (int d = 0; d < out_ndim; d++)
        io.out_dims[d] = out[d];
    return io;
}

/* Creates into *in; `settings` is a NULL-terminated list of "key=value" (or NULL). */
static void make(struct inst *in, enum gan_model_role role, const struct gan_model_io *io,
                 const char *const *settings)
{
    memset(in, 0, sizeof *in);
    for (int i = 0; settings && settings[i] && i < 7; i++)
        in->settings[i] = settings[i];
    test_host_init_declared(&in->th, in->settings, plugin->settings);
    ck_assert_int_eq(gan_net_new(fx.ctx, role == GAN_MODEL_CRITIC ? "critic" : "generator",
                                 &in->net), GAN_OK);
    gan_net_set_host(in->net, &in->th.host);
    in->status = mops->create(&in->th.host, role, io, in->net, &in->model);
    gan_net_set_host(in->net, NULL);
}

static void unmake(struct inst *in)
{
    if (in->model)
        mops->destroy(in->model);
    gan_net_free(in->net);
    in->model = NULL;
    in->net = NULL;
}

/* ------------------------------------------------------------------ descriptor */

START_TEST(test_descriptor)
{
    ck_assert_int_eq(plugin->abi_major, GAN_ABI_MAJOR);
    ck_assert_uint_le(plugin->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_eq(plugin->struct_size, sizeof(struct gan_plugin));
    ck_assert_int_eq(plugin->kind, GAN_PLUGIN_MODEL);
    ck_assert_str_eq(plugin->name, "mlp");
    ck_assert_ptr_nonnull(plugin->summary);
    ck_assert_uint_eq(mops->struct_size, sizeof(struct gan_model_ops));
    ck_assert_ptr_nonnull(mops->create);
    ck_assert_ptr_nonnull(mops->forward);
    ck_assert_ptr_nonnull(mops->destroy);
    ck_assert_ptr_nonnull(mops->describe);
    ck_assert_ptr_nonnull(mops->samples_independent);
    /* The settings the configuration may set, with the toy defaults. */
    static const char *const want[][2] = {
        { "width", "512" }, { "depth", "3" }, { "activation", "\"relu\"" },
        { "leaky_slope", "0.2" }, { "init", "\"he\"" },
    };
    const struct gan_setting_spec *s = plugin->settings;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_ptr_nonnull(s[i].name);
        ck_assert_str_eq(s[i].name, want[i][0]);
        ck_assert_str_eq(s[i].default_value, want[i][1]);
        ck_assert_ptr_nonnull(s[i].summary);
    }
    ck_assert_ptr_null(s[5].name);
}
END_TEST

/* The program's own loader finds it by kind and name and accepts its descriptor. */
START_TEST(test_loader_accepts)
{
    gan_loader *loader = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    const char *dirs[1] = { GAN_TEST_MODEL_DIR };
    ck_assert_int_eq(gan_loader_new(&loader, dirs, 1, NULL, "/nonexistent", &err), GAN_OK);
    struct gan_module *m = NULL;
    gan_status st = gan_loader_open(loader, GAN_PLUGIN_MODEL, "mlp", &m, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    ck_assert_str_eq(m->plugin.name, "mlp");
    ck_assert_int_eq(m->plugin.kind, GAN_PLUGIN_MODEL);
    gan_module_close(m);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ shapes and names */

static void assert_param(gan_net *net, size_t i, const char *name, int64_t d0, int64_t d1)
{
    ck_assert_str_eq(gan_net_name(net, i), name);
    gan_tensor *t = gan_net_tensor(net, i);
    ck_assert_int_eq(gan_tensor_ndim(t), d1 ? 2 : 1);
    ck_assert_int_eq(gan_tensor_dim(t, 0), d0);
    if (d1)
        ck_assert_int_eq(gan_tensor_dim(t, 1), d1);
}

START_TEST(test_toy_shapes_and_names)
{
    int64_t two[1] = { 2 }, one[1] = { 1 };
    struct gan_model_io gio = io_of(1, two, 1, two), cio = io_of(1, two, 1, one);
    struct inst g, c;
    make(&g, GAN_MODEL_GENERATOR, &gio, NULL);
    ck_assert_msg(g.status == GAN_OK, "generator: %s", g.th.last_error);
    make(&c, GAN_MODEL_CRITIC, &cio, NULL);
    ck_assert_msg(c.status == GAN_OK, "critic: %s", c.th.last_error);

    /* nn.Sequential(Linear(2, 512), ReLU, …, Linear(512, 1)) with the Linear layers
     * named fc0 … fc3: a checkpoint maps onto it name for name. */
    ck_assert_uint_eq(gan_net_count(c.net), 8);
    assert_param(c.net, 0, "fc0.weight", 512, 2);
    assert_param(c.net, 1, "fc0.bias", 512, 0);
    assert_param(c.net, 2, "fc1.weight", 512, 512);
    assert_param(c.net, 3, "fc1.bias", 512, 0);
    assert_param(c.net, 4, "fc2.weight", 512, 512);
    assert_param(c.net, 5, "fc2.bias", 512, 0);
    assert_param(c.net, 6, "fc3.weight", 1, 512);
    assert_param(c.net, 7, "fc3.bias", 1, 0);
    ck_assert_str_eq(gan_net_full_name(c.net, 6), "critic.fc3.weight");
    ck_assert_int_eq(gan_net_total(c.net), 2 * 512 + 512 + 2 * (512 * 512 + 512) + 512 + 1);

    ck_assert_uint_eq(gan_net_count(g.net), 8);
    assert_param(g.net, 0, "fc0.weight", 512, 2);
    assert_param(g.net, 6, "fc3.weight", 2, 512);
    assert_param(g.net, 7, "fc3.bias", 2, 0);
    ck_assert_str_eq(gan_net_full_name(g.net, 0), "generator.fc0.weight");

    ck_assert_str_eq(mops->describe(c.model), "2 → 512 → 512 → 512 → 1, relu");
    ck_assert_str_eq(mops->describe(g.model), "2 → 512 → 512 → 512 → 2, relu");
    unmake(&g);
    unmake(&c);
}
END_TEST

/* "he": weights N(0, 2/fan_in) with fan_in the layer's input size, biases zero. "torch":
 * weights and biases U(±1/sqrt(fan_in)). */
START_TEST(test_init_kinds)
{
    int64_t two[1] = { 2 }, one[1] = { 1 };
    struct gan_model_io cio = io_of(1, two, 1, one);
    const char *const he[] = { NULL }, *const torch[] = { "init=torch", NULL };
    struct inst c;
    make(&c, GAN_MODEL_CRITIC, &cio, _i ? torch : he);
    ck_assert_msg(c.status == GAN_OK, "%s", c.th.last_error);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(c.net, 2024, &offset), GAN_OK);
    /* Every parameter is drawn under "torch", each taking ceil(n / 4) blocks; only the
     * weights under "he". */
    ck_assert_uint_eq(offset, _i ? 256 + 128 + 65536 + 128 + 65536 + 128 + 128 + 1
                                 : 256 + 65536 + 65536 + 128);
    for (size_t i = 0; i < gan_net_count(c.net); i++) {
        gan_tensor *t = gan_net_tensor(c.net, i);
        size_t n = (size_t)gan_tensor_numel(t);
        int64_t fan_in = i < 2 ? 2 : 512;
        float *v = malloc(n * sizeof *v);
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, v, n), GAN_OK);
        double s2 = 0, amax = 0;
        for (size_t k = 0; k < n; k++) {
            s2 += (double)v[k] * v[k];
            amax = fmax(amax, fabs(v[k]));
        }
        int bias = i % 2 == 1;
        if (_i) {
            double b = 1.0 / sqrt((double)fan_in);
            ck_assert_msg(amax < b && (n < 8 || amax > 0.5 * b), "%s: max |v| %g, bound %g",
                          gan_net_name(c.net, i), amax, b);
        } else if (bias) {
            ck_assert_msg(amax == 0.0, "%s is not zero", gan_net_name(c.net, i));
        } else if (n >= 1024) {
            double rms = sqrt(s2 / (double)n), want = sqrt(2.0 / (double)fan_in);
            ck_assert_msg(fabs(rms / want - 1.0) < 0.06, "%s: rms %g, want %g",
                          gan_net_name(c.net, i), rms, want);
        }
        free(v);
    }
    unmake(&c);
}
END_TEST

/* ------------------------------------------------------------------ forward */

struct fwd_case {
    const char *settings[5];
    int in_ndim;
    int64_t in[3];
    int out_ndim;
    int64_t out[3];
    enum gan_model_role role;
    int64_t batch;
    int width, depth;             /* as the settings say */
    int act;                      /* 0 relu, 1 leaky_relu, 2 tanh */
    double slope;
    const char *describe;
};

static const struct fwd_case fwd_cases[] = {
    /* The toy critic itself, as gan_net_init fills it (nn.Linear's init: biases too). */
    { { "init=torch", NULL }, 1, { 2 }, 1, { 1 }, GAN_MODEL_CRITIC, 8, 512, 3, 0, 0,
      "2 → 512 → 512 → 512 → 1, relu" },
    { { "width=16", "depth=2", "activation=leaky_relu", "leaky_slope=0.1", NULL },
      1, { 2 }, 1, { 2 }, GAN_MODEL_GENERATOR, 5, 16, 2, 1, 0.1,
      "2 → 16 → 16 → 2, leaky_relu(0.1)" },
    { { "width=7", "depth=4", "activation=tanh", NULL }, 1, { 3 }, 1, { 1 }, GAN_MODEL_CRITIC,
      3, 7, 4, 2, 0, "3 → 7 → 7 → 7 → 7 → 1, tanh" },
    /* No hidden layer: an affine map. */
    { { "depth=0", NULL }, 1, { 4 }, 1, { 3 }, GAN_MODEL_GENERATOR, 6, 512, 0, 0, 0,
      "4 → 3, relu" },
    /* Image-shaped samples are flattened in and shaped on the way out. */
    { { "width=9", "depth=1", NULL }, 3, { 1, 4, 4 }, 1, { 1 }, GAN_MODEL_CRITIC, 2, 9, 1, 0,
      0, "16 → 9 → 1, relu" },
    { { "width=6", "depth=2", "activation=tanh", NULL }, 1, { 2 }, 2, { 2, 3 },
      GAN_MODEL_GENERATOR, 4, 6, 2, 2, 0, "2 → 6 → 6 → 6, tanh" },
};
#define N_FWD ((int)(sizeof fwd_cases / sizeof fwd_cases[0]))

static uint32_t lcg_state;
static float lcg_uniform(float lo, float hi)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(lcg_state >> 8) / 16777216.0f;
}

static int64_t prod(int n, const int64_t *d)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

START_TEST(test_forward_matches_host)
{
    const struct fwd_case *c = &fwd_cases[_i];
    struct gan_model_io io = io_of(c->in_ndim, c->in, c->out_ndim, c->out);
    struct inst m;
    make(&m, c->role, &io, c->settings);
    ck_assert_msg(m.status == GAN_OK, "%s", m.th.last_error);
    ck_assert_str_eq(mops->describe(m.model), c->describe);
    int64_t nin = prod(c->in_ndim, c->in), nout = prod(c->out_ndim, c->out);
    ck_assert_uint_eq(gan_net_count(m.net), 2 * (size_t)(c->depth + 1));

    /* The first case is initialised by the net; the others get every parameter from the
     * host (biases too: He's zero biases would hide them). The reference reads them back. */
    lcg_state = 12345u + (uint32_t)_i;
    size_t np = gan_net_count(m.net);
    float **pv = calloc(np, sizeof *pv);
    uint64_t offset = 0;
    if (_i == 0)
        ck_assert_int_eq(gan_net_init(m.net, 11, &offset), GAN_OK);
    for (size_t i = 0; i < np; i++) {
        size_t n = (size_t)gan_net_numel(m.net, i);
        pv[i] = malloc(n * sizeof *pv[i]);
        int64_t fan_in = i == 0 ? nin : c->width;
        float b = 1.5f / sqrtf((float)fan_in);
        for (size_t k = 0; k < n && _i != 0; k++)
            pv[i][k] = lcg_uniform(-b, b);
        if (_i != 0)
            ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, gan_net_tensor(m.net, i), pv[i],
                                                      n), GAN_OK);
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, gan_net_tensor(m.net, i), pv[i], n), GAN_OK);
    }
    int64_t xdims[4] = { c->batch, c->in[0], c->in[1], c->in[2] };
    size_t nx = (size_t)(c->batch * nin);
    float *x = malloc(nx * sizeof *x);
    for (size_t k = 0; k < nx; k++)
        x[k] = lcg_uniform(-2.0f, 2.0f);
    gan_tensor *xt = gan_tensor_from_host(fx.ctx, GAN_F32, c->in_ndim + 1, xdims, x);
    gan_tensor *y = mops->forward(m.model, fx.ctx, xt);
    ck_assert_msg(y, "forward failed: %s", gan_ctx_error(fx.ctx));
    ck_assert_int_eq(gan_tensor_ndim(y), c->out_ndim + 1);
    ck_assert_int_eq(gan_tensor_dim(y, 0), c->batch);
    for (int d = 0; d < c->out_ndim; d++)
        ck_assert_int_eq(gan_tensor_dim(y, d + 1), c->out[d]);
    size_t ny = (size_t)(c->batch * nout);
    float *yv = malloc(ny * sizeof *yv);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, y, yv, ny), GAN_OK);

    /* The naive reference, in double: h ← act(h·Wᵀ + b) per layer, no act at the end. */
    int64_t maxw = c->width > nin ? c->width : nin;
    double *h = malloc((size_t)maxw * sizeof *h), *hn = malloc((size_t)maxw * sizeof *hn);
    for (int64_t s = 0; s < c->batch; s++) {
        int64_t cur = nin;
        for (int64_t k = 0; k < nin; k++)
            h[k] = x[s * nin + k];
        for (int l = 0; l <= c->depth; l++) {
            int64_t next = l == c->depth ? nout : c->width;
            const float *W = pv[2 * l], *B = pv[2 * l + 1];
            for (int64_t o = 0; o < next; o++) {
                double acc = B[o];
                for (int64_t k = 0; k < cur; k++)
                    acc += (double)W[o * cur + k] * h[k];
                if (l < c->depth)
                    acc = c->act == 0 ? (acc > 0 ? acc : 0)
                          : c->act == 1 ? (acc > 0 ? acc : c->slope * acc) : tanh(acc);
                hn[o] = acc;
            }
            memcpy(h, hn, (size_t)next * sizeof *h);
            cur = next;
        }
        for (int64_t o = 0; o < nout; o++) {
            double got = yv[s * nout + o];
            ck_assert_msg(fabs(got - h[o]) <= 1e-5 + 1e-4 * fabs(h[o]),
                          "sample %lld output %lld: %.8g, reference %.8g", (long long)s,
                          (long long)o, got, h[o]);
        }
    }
    free(h);
    free(hn);
    free(x);
    free(yv);
    for (size_t i = 0; i < np; i++)
        free(pv[i]);
    free(pv);
    gan_ctx_step_end(fx.ctx);
    unmake(&m);
}
END_TEST

/* The forward pass is recorded: its parameters get gradients. For the 1-layer critic
 * D(x) = w·x + b, ∂ΣD/∂w = Σ x over the batch and ∂ΣD/∂b = B. */
START_TEST(test_forward_is_differentiable)
{
    int64_t three[1] = { 3 }, one[1] = { 1 };
    struct gan_model_io io = io_of(1, three, 1, one);
    const char *const settings[] = { "depth=0", NULL };
    struct inst m;
    make(&m, GAN_MODEL_CRITIC, &io, settings);
    ck_assert_msg(m.status == GAN_OK, "%s", m.th.last_error);
    float x[6] = { 1, 2, 3, -4, 0.5f, 2 };
    int64_t xd[2] = { 2, 3 };
    gan_tensor *y = mops->forward(m.model, fx.ctx, gan_tensor_from_host(fx.ctx, GAN_F32, 2, xd, x));
    ck_assert_ptr_nonnull(y);
    ck_assert_int_eq(gan_net_backward(m.net, gan_sum(fx.ctx, y, GAN_ALL_AXES, 0), NULL), GAN_OK);
    float gw[3], gb[1];
    ck_assert_int_eq(gan_net_grad_to_host(m.net, 0, gw, 3), GAN_OK);
    ck_assert_int_eq(gan_net_grad_to_host(m.net, 1, gb, 1), GAN_OK);
    ck_assert_float_eq_tol(gw[0], -3.0f, 1e-6f);
    ck_assert_float_eq_tol(gw[1], 2.5f, 1e-6f);
    ck_assert_float_eq_tol(gw[2], 5.0f, 1e-6f);
    ck_assert_float_eq_tol(gb[0], 2.0f, 1e-6f);
    gan_ctx_step_end(fx.ctx);
    unmake(&m);
}
END_TEST

/* The promise samples_independent makes, on which the trainer scores the real and the
 * fake batch as one: a batch of 2B rows gives each row the score it gets in its own
 * batch of B, up to the order of the sums (the toy critic's 512-wide layers). */
START_TEST(test_rows_scored_alone)
{
    int64_t two[1] = { 2 }, one[1] = { 1 };
    struct gan_model_io io = io_of(1, two, 1, one);
    const char *const settings[] = { "width=64", NULL };
    struct inst m;
    make(&m, GAN_MODEL_CRITIC, &io, settings);
    ck_assert_msg(m.status == GAN_OK, "%s", m.th.last_error);
    ck_assert_ptr_nonnull(mops->samples_independent);
    ck_assert_int_eq(mops->samples_independent(m.model), 1);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(m.net, 3, &offset), GAN_OK);
    enum { B = 37 };
    float x[2 * B * 2];
    lcg_state = 777u;
    for (size_t k = 0; k < sizeof x / sizeof x[0]; k++)
        x[k] = lcg_uniform(-3.0f, 3.0f);
    int64_t d2[2] = { 2 * B, 2 }, d1[2] = { B, 2 };
    float joined[2 * B], alone[2 * B];
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, mops->forward(m.model, fx.ctx,
                         gan_tensor_from_host(fx.ctx, GAN_F32, 2, d2, x)), joined, 2 * B), GAN_OK);
    for (int half = 0; half < 2; half++)
        ck_assert_int_eq(gan_tensor_to_host(fx.ctx, mops->forward(m.model, fx.ctx,
                             gan_tensor_from_host(fx.ctx, GAN_F32, 2, d1, x + half * B * 2)),
                             alone + half * B, B), GAN_OK);
    for (int r = 0; r < 2 * B; r++)
        ck_assert_msg(fabsf(joined[r] - alone[r]) <= 1e-6f * (1.0f + fabsf(alone[r])),
                      "row %d: %.9g in 2B rows, %.9g alone", r, joined[r], alone[r]);
    gan_ctx_step_end(fx.ctx);
    unmake(&m);
}
END_TEST

START_TEST(test_forward_wrong_sample_size)
{
    int64_t two[1] = { 2 }, one[1] = { 1 };
    struct gan_model_io io = io_of(1, two, 1, one);
    const char *const settings[] = { "width=4", NULL };
    struct inst m;
    make(&m, GAN_MODEL_CRITIC, &io, settings);
    ck_assert_int_eq(m.status, GAN_OK);
    int64_t xd[2] = { 4, 3 };
    gan_tensor *x = gan_tensor_full(fx.ctx, GAN_F32, 2, xd, 1.0f);
    ck_assert_ptr_null(mops->forward(m.model, fx.ctx, x));
    ck_assert_int_ne(gan_ctx_status(fx.ctx), GAN_OK);
    ck_assert_msg(strstr(gan_ctx_error(fx.ctx), "[4, 3]") && strstr(gan_ctx_error(fx.ctx), "[4, 2]"),
                  "%s", gan_ctx_error(fx.ctx));
    gan_ctx_step_end(fx.ctx);
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ bad settings */

struct bad_case {
    const char *setting;
    enum gan_model_role role;
    int64_t out;            /* output features asked for */
    const char *mentions;   /* in the message */
};

static const struct bad_case bad_cases[] = {
    { "width=0", GAN_MODEL_CRITIC, 1, "width = 0" },
    { "width=-3", GAN_MODEL_CRITIC, 1, "width = -3" },
    { "width=1000000", GAN_MODEL_CRITIC, 1, "width = 1000000" },
    { "width=wide", GAN_MODEL_CRITIC, 1, "width is not an integer" },
    { "depth=-1", GAN_MODEL_CRITIC, 1, "depth = -1" },
    { "depth=65", GAN_MODEL_GENERATOR, 2, "depth = 65" },
    { "activation=sigmoid", GAN_MODEL_CRITIC, 1, "\"sigmoid\"" },
    { "activation=ReLU", GAN_MODEL_CRITIC, 1, "\"ReLU\"" },
    { "leaky_slope=nan", GAN_MODEL_CRITIC, 1, "leaky_slope" },
    { "leaky_slope=steep", GAN_MODEL_CRITIC, 1, "leaky_slope is not a number" },
    { "init=xavier", GAN_MODEL_GENERATOR, 2, "\"xavier\"" },
    /* Not a setting, but the same kind of refusal: a critic has one output. */
    { "width=8", GAN_MODEL_CRITIC, 2, "one score" },
};
#define N_BAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

START_TEST(test_bad_settings_rejected)
{
    const struct bad_case *c = &bad_cases[_i];
    int64_t two[1] = { 2 }, out[1] = { c->out };
    struct gan_model_io io = io_of(1, two, 1, out);
    const char *const settings[] = { c->setting, NULL };
    struct inst m;
    make(&m, c->role, &io, settings);
    ck_assert_int_ne(m.status, GAN_OK);
    ck_assert_ptr_null(m.model);
    ck_assert_msg(strstr(m.th.last_error, c->mentions), "message \"%s\" lacks \"%s\"",
                  m.th.last_error, c->mentions);
    ck_assert_msg(strncmp(m.th.last_error, "model mlp: ", 11) == 0, "%s", m.th.last_error);
    /* Refused before declaring anything. */
    ck_assert_uint_eq(gan_net_count(m.net), 0);
    unmake(&m);
}
END_TEST

START_TEST(test_bad_io_rejected)
{
    int64_t two[1] = { 2 }, zero[2] = { 3, 0 };
    struct gan_model_io io = io_of(2, zero, 1, two);
    struct inst m;
    make(&m, GAN_MODEL_GENERATOR, &io, NULL);
    ck_assert_int_eq(m.status, GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(m.th.last_error, "below 1"));
    unmake(&m);
    io = io_of(1, two, 1, two);
    io.out_ndim = GAN_TENSOR_MAX_DIMS;
    make(&m, GAN_MODEL_GENERATOR, &io, NULL);
    ck_assert_int_eq(m.status, GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(m.th.last_error, "sample dimensions"));
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *mlp_suite(void)
{
    Suite *s = suite_create("mlp");
    TCase *tc = tcase_create("module");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_descriptor);
    tcase_add_test(tc, test_loader_accepts);
    tcase_add_test(tc, test_toy_shapes_and_names);
    tcase_add_loop_test(tc, test_init_kinds, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_forward_matches_host, 0, N_FWD);
    tcase_add_test(tc, test_forward_is_differentiable);
    tcase_add_test(tc, test_forward_wrong_sample_size);
    tcase_add_test(tc, test_rows_scored_alone);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_bad_settings_rejected, 0, N_BAD);
    tcase_add_test(tc, test_bad_io_rejected);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(mlp_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
