/* SPDX-License-Identifier: MIT */
/* check_dcgan.c — tests of the model plugin "dcgan" loaded from the build tree: parameter
 * names and shapes, initialisation, forward passes against a naive double-precision host
 * network, settings, and the WGAN-GP penalty's gradient (a double backward through conv,
 * leaky ReLU and layer norm) against finite differences of an independent reference. */
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
#error "GAN_TEST_MODEL_DIR must name the folder that holds model-dcgan.so"
#endif

#define CTX (fx.ctx)
#define K 5                           /* kernel side */

/* ------------------------------------------------------------------ fixture */

static void *module;
static const struct gan_plugin *plugin;
static const struct gan_model_ops *mops;

static void setup(void)
{
    backend_fixture_setup();
    const char *path = GAN_TEST_MODEL_DIR "/model-dcgan.so";
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
    const char *settings[10];
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

static void make(struct inst *in, enum gan_model_role role, const struct gan_model_io *io,
                 const char *const *settings)
{
    memset(in, 0, sizeof *in);
    for (int i = 0; settings && settings[i] && i < 9; i++)
        in->settings[i] = settings[i];
    test_host_init_declared(&in->th, in->settings, plugin->settings);
    ck_assert_int_eq(gan_net_new(CTX, role == GAN_MODEL_CRITIC ? "critic" : "generator",
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

/* ------------------------------------------------------------------ the architecture,
 * as the header comment of dcgan.c describes it, worked out here independently. */

struct arch {
    int critic;                   /* else generator */
    int depth, width, norm;       /* norm: layer norm on */
    int C, H, W, Z;
    int ch[8], hs[8], ws[8];      /* stage i: channels and size; stage 0 is the image */
};

static void arch_init(struct arch *a, int critic, int depth, int width, int norm, int C, int H,
                      int W, int Z)
{
    memset(a, 0, sizeof *a);
    a->critic = critic;
    a->depth = depth;
    a->width = width;
    a->norm = norm;
    a->C = C;
    a->H = H;
    a->W = W;
    a->Z = Z;
    a->ch[0] = C;
    a->hs[0] = H;
    a->ws[0] = W;
    for (int i = 1; i <= depth; i++) {
        a->ch[i] = width << (i - 1);
        /* out = floor((in + 2·2 − 5) / 2) + 1 */
        a->hs[i] = (a->hs[i - 1] + 4 - K) / 2 + 1;
        a->ws[i] = (a->ws[i - 1] + 4 - K) / 2 + 1;
    }
}

static int top_features(const struct arch *a)
{
    return a->ch[a->depth] * a->hs[a->depth] * a->ws[a->depth];
}

/* The expected parameter list, in declaration order. */
struct pspec {
    char name[32];
    int ndim;
    int64_t dims[4];
};

static int expected_params(const struct arch *a, struct pspec *p)
{
    int n = 0;
#define ADD(nd, d0, d1, d2, d3, ...)                                                   \
    do {                                                                               \
        snprintf(p[n].name, sizeof p[n].name, __VA_ARGS__);                            \
        p[n].ndim = nd;                                                                \
        p[n].dims[0] = d0;                                                             \
        p[n].dims[1] = d1;                                                             \
        p[n].dims[2] = d2;                                                             \
        p[n].dims[3] = d3;                                                             \
        n++;                                                                           \
    } while (0)
    if (a->critic) {
        for (int i = 0; i < a->depth; i++) {
            ADD(4, a->ch[i + 1], a->ch[i], K, K, "conv%d.weight", i);
            ADD(1, a->ch[i + 1], 0, 0, 0, "conv%d.bias", i);
            if (a->norm && i > 0) {
                ADD(1, a->ch[i + 1], 0, 0, 0, "norm%d.weight", i);
                ADD(1, a->ch[i + 1], 0, 0, 0, "norm%d.bias", i);
            }
        }
        ADD(2, 1, top_features(a), 0, 0, "fc0.weight");
        ADD(1, 1, 0, 0, 0, "fc0.bias");
    } else {
        ADD(2, top_features(a), a->Z, 0, 0, "fc0.weight");
        ADD(1, top_features(a), 0, 0, 0, "fc0.bias");
        for (int j = 0; j < a->depth; j++) {
            int cin = a->ch[a->depth - j], cout = j == a->depth - 1 ? a->C : a->ch[a->depth - j - 1];
            ADD(4, cin, cout, K, K, "deconv%d.weight", j);
            ADD(1, cout, 0, 0, 0, "deconv%d.bias", j);
            if (a->norm && j < a->depth - 1) {
                ADD(1, cout, 0, 0, 0, "norm%d.weight", j);
                ADD(1, cout, 0, 0, 0, "norm%d.bias", j);
            }
        }
    }
#undef ADD
    return n;
}

/* Makes the instance for arch a with extra settings. */
static void make_arch(struct inst *in, const struct arch *a, const char *const *extra)
{
    static char wbuf[32], dbuf[32];
    const char *settings[10];
    int n = 0;
    snprintf(wbuf, sizeof wbuf, "width=%d", a->width);
    snprintf(dbuf, sizeof dbuf, "depth=%d", a->depth);
    settings[n++] = wbuf;
    settings[n++] = dbuf;
    if (a->norm)
        settings[n++] = "norm=layer";
    for (int i = 0; extra && extra[i] && n < 9; i++)
        settings[n++] = extra[i];
    settings[n] = NULL;
    int64_t img[3] = { a->C, a->H, a->W }, z[1] = { a->Z }, one[1] = { 1 };
    struct gan_model_io io = a->critic ? io_of(3, img, 1, one) : io_of(1, z, 3, img);
    make(in, a->critic ? GAN_MODEL_CRITIC : GAN_MODEL_GENERATOR, &io, settings);
    ck_assert_msg(in->status == GAN_OK, "%s", in->th.last_error);
}

static void assert_layout(const struct inst *in, const struct arch *a)
{
    struct pspec p[64];
    int n = expected_params(a, p);
    ck_assert_uint_eq(gan_net_count(in->net), (size_t)n);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        ck_assert_str_eq(gan_net_name(in->net, (size_t)i), p[i].name);
        gan_tensor *t = gan_net_tensor(in->net, (size_t)i);
        ck_assert_msg(gan_tensor_ndim(t) == p[i].ndim, "%s: %d dims, want %d", p[i].name,
                      gan_tensor_ndim(t), p[i].ndim);
        int64_t numel = 1;
        for (int d = 0; d < p[i].ndim; d++) {
            ck_assert_msg(gan_tensor_dim(t, d) == p[i].dims[d], "%s dim %d: %lld, want %lld",
                          p[i].name, d, (long long)gan_tensor_dim(t, d),
                          (long long)p[i].dims[d]);
            numel *= p[i].dims[d];
        }
        total += numel;
    }
    ck_assert_int_eq(gan_net_total(in->net), total);
}

/* ------------------------------------------------------------------ descriptor */

START_TEST(test_descriptor)
{
    ck_assert_int_eq(plugin->abi_major, GAN_ABI_MAJOR);
    ck_assert_uint_le(plugin->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_eq(plugin->struct_size, sizeof(struct gan_plugin));
    ck_assert_int_eq(plugin->kind, GAN_PLUGIN_MODEL);
    ck_assert_str_eq(plugin->name, "dcgan");
    ck_assert_ptr_nonnull(plugin->summary);
    ck_assert_uint_eq(mops->struct_size, sizeof(struct gan_model_ops));
    ck_assert_ptr_nonnull(mops->create);
    ck_assert_ptr_nonnull(mops->forward);
    ck_assert_ptr_nonnull(mops->destroy);
    ck_assert_ptr_nonnull(mops->describe);
    static const char *const want[][2] = {
        { "width", "64" }, { "depth", "3" }, { "norm", "\"none\"" }, { "leaky_slope", "0.2" },
        { "output", "\"tanh\"" }, { "init", "\"he\"" },
    };
    const struct gan_setting_spec *s = plugin->settings;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        ck_assert_ptr_nonnull(s[i].name);
        ck_assert_str_eq(s[i].name, want[i][0]);
        ck_assert_str_eq(s[i].default_value, want[i][1]);
        ck_assert_ptr_nonnull(s[i].summary);
    }
    ck_assert_ptr_null(s[6].name);
}
END_TEST

START_TEST(test_loader_accepts)
{
    gan_loader *loader = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    const char *dirs[1] = { GAN_TEST_MODEL_DIR };
    ck_assert_int_eq(gan_loader_new(&loader, dirs, 1, NULL, "/nonexistent", &err), GAN_OK);
    struct gan_module *m = NULL;
    gan_status st = gan_loader_open(loader, GAN_PLUGIN_MODEL, "dcgan", &m, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    ck_assert_str_eq(m->plugin.name, "dcgan");
    gan_module_close(m);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ shapes and names */

/* The paper's nets with the defaults: DIM 64, z ∈ R^128, 28×28×1. The counts are the
 * sums of the PyTorch modules' sizes, worked out by hand:
 *   generator 128·4096 + 4096 + 256·128·25 + 128 + 128·64·25 + 64 + 64·25 + 1 = 1,554,177
 *   critic    25·64 + 64 + 64·128·25 + 128 + 128·256·25 + 256 + 4096 + 1 = 1,030,145
 * and layer norm adds 2·128 + 2·256 = 768 to the critic. */
START_TEST(test_paper_nets)
{
    int64_t z[1] = { 128 }, img[3] = { 1, 28, 28 }, one[1] = { 1 };
    struct gan_model_io gio = io_of(1, z, 3, img), cio = io_of(3, img, 1, one);
    struct inst g, c, cn;
    make(&g, GAN_MODEL_GENERATOR, &gio, NULL);
    ck_assert_msg(g.status == GAN_OK, "%s", g.th.last_error);
    make(&c, GAN_MODEL_CRITIC, &cio, NULL);
    ck_assert_msg(c.status == GAN_OK, "%s", c.th.last_error);
    const char *const layer[] = { "norm=layer", NULL };
    make(&cn, GAN_MODEL_CRITIC, &cio, layer);
    ck_assert_msg(cn.status == GAN_OK, "%s", cn.th.last_error);
    ck_assert_int_eq(gan_net_total(g.net), 1554177);
    ck_assert_int_eq(gan_net_total(c.net), 1030145);
    ck_assert_int_eq(gan_net_total(cn.net), 1030145 + 768);
    struct arch a;
    arch_init(&a, 0, 3, 64, 0, 1, 28, 28, 128);
    assert_layout(&g, &a);
    arch_init(&a, 1, 3, 64, 0, 1, 28, 28, 0);
    assert_layout(&c, &a);
    /* 28 → 14 → 7 → 4 */
    ck_assert_int_eq(a.hs[1], 14);
    ck_assert_int_eq(a.hs[2], 7);
    ck_assert_int_eq(a.hs[3], 4);
    arch_init(&a, 1, 3, 64, 1, 1, 28, 28, 0);
    assert_layout(&cn, &a);
    ck_assert_str_eq(gan_net_full_name(cn.net, 4), "critic.norm1.weight");
    ck_assert_str_eq(mops->describe(g.model), "128 → 256×4×4 → 128×7×7 → 64×14×14 → 1×28×28, "
                     "5×5 stride-2 transposed convolutions, relu, tanh");
    ck_assert_str_eq(mops->describe(c.model), "1×28×28 → 64×14×14 → 128×7×7 → 256×4×4 → 1, "
                     "5×5 stride-2 convolutions, leaky_relu(0.2)");
    ck_assert_str_eq(mops->describe(cn.model), "1×28×28 → 64×14×14 → 128×7×7 → 256×4×4 → 1, "
                     "5×5 stride-2 convolutions, leaky_relu(0.2), layer norm");

    /* The forward shapes: [B, 1, 28, 28] in [−1, 1] and [B, 1]. */
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(g.net, 7, &offset), GAN_OK);
    ck_assert_int_eq(gan_net_init(c.net, 7, &offset), GAN_OK);
    int64_t zd[2] = { 3, 128 };
    gan_tensor *zt = gan_tensor_normal(CTX, GAN_F32, 2, zd, 1, 0, 0.0f, 1.0f);
    gan_tensor *x = mops->forward(g.model, CTX, zt);
    ck_assert_msg(x, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_ndim(x), 4);
    ck_assert_int_eq(gan_tensor_dim(x, 0), 3);
    ck_assert_int_eq(gan_tensor_dim(x, 1), 1);
    ck_assert_int_eq(gan_tensor_dim(x, 2), 28);
    ck_assert_int_eq(gan_tensor_dim(x, 3), 28);
    static float xv[3 * 784];
    ck_assert_int_eq(gan_tensor_to_host(CTX, x, xv, 3 * 784), GAN_OK);
    double spread = 0;
    for (int k = 0; k < 3 * 784; k++) {
        ck_assert(xv[k] >= -1.0f && xv[k] <= 1.0f);
        spread += fabs(xv[k] - xv[0]);
    }
    ck_assert(spread > 1.0);
    gan_tensor *d = mops->forward(c.model, CTX, x);
    ck_assert_msg(d, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_ndim(d), 2);
    ck_assert_int_eq(gan_tensor_dim(d, 0), 3);
    ck_assert_int_eq(gan_tensor_dim(d, 1), 1);
    gan_ctx_step_end(CTX);
    unmake(&g);
    unmake(&c);
    unmake(&cn);
}
END_TEST

/* The image folder's sizes (data.size 32 and 64, grey and RGB): the generator makes
 * [B, C, S, S] in [−1, 1] and the critic takes it to [B, 1], through 32 → 16 → 8 → 4 and
 * 64 → 32 → 16 → 8 with the paper's depth 3, and the layouts are the rule's. */
static const struct { int64_t C, S, top; const char *g_describe; } sized_cases[] = {
    { 3, 32, 4, "16 → 32×4×4 → 16×8×8 → 8×16×16 → 3×32×32, "
                "5×5 stride-2 transposed convolutions, relu, tanh" },
    { 1, 32, 4, "16 → 32×4×4 → 16×8×8 → 8×16×16 → 1×32×32, "
                "5×5 stride-2 transposed convolutions, relu, tanh" },
    { 3, 64, 8, "16 → 32×8×8 → 16×16×16 → 8×32×32 → 3×64×64, "
                "5×5 stride-2 transposed convolutions, relu, tanh" },
};

START_TEST(test_sized_forward)
{
    const int64_t C = sized_cases[_i].C, S = sized_cases[_i].S, top = sized_cases[_i].top;
    struct arch ga, ca;
    arch_init(&ga, 0, 3, 8, 0, (int)C, (int)S, (int)S, 16);
    arch_init(&ca, 1, 3, 8, 0, (int)C, (int)S, (int)S, 0);
    struct inst g, c;
    make_arch(&g, &ga, NULL);
    make_arch(&c, &ca, NULL);
    assert_layout(&g, &ga);
    assert_layout(&c, &ca);
    ck_assert_int_eq(ca.hs[3], top);
    ck_assert_str_eq(mops->describe(g.model), sized_cases[_i].g_describe);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(g.net, 3, &offset), GAN_OK);
    ck_assert_int_eq(gan_net_init(c.net, 3, &offset), GAN_OK);
    int64_t zd[2] = { 2, 16 };
    gan_tensor *zt = gan_tensor_normal(CTX, GAN_F32, 2, zd, 1, 0, 0.0f, 1.0f);
    gan_tensor *x = mops->forward(g.model, CTX, zt);
    ck_assert_msg(x, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_ndim(x), 4);
    ck_assert_int_eq(gan_tensor_dim(x, 0), 2);
    ck_assert_int_eq(gan_tensor_dim(x, 1), C);
    ck_assert_int_eq(gan_tensor_dim(x, 2), S);
    ck_assert_int_eq(gan_tensor_dim(x, 3), S);
    size_t n = (size_t)(2 * C * S * S);
    float *xv = malloc(n * sizeof *xv);
    ck_assert_ptr_nonnull(xv);
    ck_assert_int_eq(gan_tensor_to_host(CTX, x, xv, n), GAN_OK);
    double spread = 0;
    for (size_t k = 0; k < n; k++) {
        ck_assert(xv[k] >= -1.0f && xv[k] <= 1.0f);
        spread += fabs(xv[k] - xv[0]);
    }
    ck_assert(spread > 0.1);
    free(xv);
    gan_tensor *d = mops->forward(c.model, CTX, x);
    ck_assert_msg(d, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_ndim(d), 2);
    ck_assert_int_eq(gan_tensor_dim(d, 0), 2);
    ck_assert_int_eq(gan_tensor_dim(d, 1), 1);
    float dv[2];
    ck_assert_int_eq(gan_tensor_to_host(CTX, d, dv, 2), GAN_OK);
    ck_assert(isfinite(dv[0]) && isfinite(dv[1]));
    gan_ctx_step_end(CTX);
    unmake(&g);
    unmake(&c);
}
END_TEST

struct layout_case {
    int critic, depth, width, norm, C, H, W, Z;
};

static const struct layout_case layout_cases[] = {
    { 0, 3, 8, 1, 1, 28, 28, 16 },
    { 1, 1, 5, 1, 1, 28, 28, 0 },       /* one convolution: no norm (the first is never) */
    { 1, 4, 3, 1, 3, 32, 32, 0 },       /* 32 → 16 → 8 → 4 → 2, RGB */
    { 0, 4, 3, 0, 3, 32, 32, 10 },
    { 0, 2, 4, 1, 1, 13, 10, 6 },       /* 13 → 7 → 4 and 10 → 5 → 3: mixed parity */
    { 1, 2, 4, 0, 1, 13, 10, 0 },
    { 0, 6, 1, 0, 2, 5, 64, 3 },        /* down to 1×1 rows */
};

/* Names and shapes against the rule, and a forward pass of the right output shape. */
START_TEST(test_layouts)
{
    const struct layout_case *lc = &layout_cases[_i];
    struct arch a;
    arch_init(&a, lc->critic, lc->depth, lc->width, lc->norm, lc->C, lc->H, lc->W, lc->Z);
    struct inst m;
    make_arch(&m, &a, NULL);
    assert_layout(&m, &a);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(m.net, 3, &offset), GAN_OK);
    int64_t in_dims[4] = { 2, lc->C, lc->H, lc->W }, z_dims[2] = { 2, lc->Z };
    gan_tensor *in = lc->critic ? gan_tensor_uniform(CTX, GAN_F32, 4, in_dims, 5, 0, -1, 1)
                                : gan_tensor_normal(CTX, GAN_F32, 2, z_dims, 5, 0, 0, 1);
    gan_tensor *y = mops->forward(m.model, CTX, in);
    ck_assert_msg(y, "%s", gan_ctx_error(CTX));
    if (lc->critic) {
        ck_assert_int_eq(gan_tensor_ndim(y), 2);
        ck_assert_int_eq(gan_tensor_dim(y, 1), 1);
    } else {
        ck_assert_int_eq(gan_tensor_ndim(y), 4);
        ck_assert_int_eq(gan_tensor_dim(y, 1), lc->C);
        ck_assert_int_eq(gan_tensor_dim(y, 2), lc->H);
        ck_assert_int_eq(gan_tensor_dim(y, 3), lc->W);
    }
    ck_assert_int_eq(gan_tensor_dim(y, 0), 2);
    gan_ctx_step_end(CTX);
    unmake(&m);
}
END_TEST

/* "he": weights N(0, 2/fan_in), fan_in = the product after the first dimension; biases
 * 0; norm weights 1 and biases 0. "torch": weights and biases inside ±1/sqrt(fan_in). */
START_TEST(test_init_kinds)
{
    struct arch a;
    arch_init(&a, _i == 0, 3, 16, 1, 1, 28, 28, 32);
    const char *const torch[] = { "init=torch", NULL };
    struct inst m;
    make_arch(&m, &a, _i == 2 ? torch : NULL);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(m.net, 2024, &offset), GAN_OK);
    for (size_t i = 0; i < gan_net_count(m.net); i++) {
        gan_tensor *t = gan_net_tensor(m.net, i);
        const char *name = gan_net_name(m.net, i);
        size_t n = (size_t)gan_tensor_numel(t);
        float *v = malloc(n * sizeof *v);
        ck_assert_int_eq(gan_tensor_to_host(CTX, t, v, n), GAN_OK);
        int64_t fan_in = 1;
        for (int d = 1; d < gan_tensor_ndim(t); d++)
            fan_in *= gan_tensor_dim(t, d);
        double s2 = 0, amax = 0;
        for (size_t k = 0; k < n; k++) {
            s2 += (double)v[k] * v[k];
            amax = fmax(amax, fabs(v[k]));
        }
        int is_norm = strncmp(name, "norm", 4) == 0, is_bias = strstr(name, ".bias") != NULL;
        if (is_norm) {
            for (size_t k = 0; k < n; k++)
                ck_assert_msg(v[k] == (is_bias ? 0.0f : 1.0f), "%s[%zu] = %g", name, k,
                              (double)v[k]);
        } else if (_i == 2) {
            /* A bias's bound comes from its weight's fan_in: the previous parameter. */
            int64_t fi = fan_in;
            if (is_bias) {
                gan_tensor *w = gan_net_tensor(m.net, i - 1);
                fi = 1;
                for (int d = 1; d < gan_tensor_ndim(w); d++)
                    fi *= gan_tensor_dim(w, d);
            }
            double b = 1.0 / sqrt((double)fi);
            ck_assert_msg(amax <= b && (n < 8 || amax > 0.5 * b), "%s: max |v| %g, bound %g",
                          name, amax, b);
        } else if (is_bias) {
            ck_assert_msg(amax == 0.0, "%s is not zero", name);
        } else if (n >= 2000) {
            double rms = sqrt(s2 / (double)n), want = sqrt(2.0 / (double)fan_in);
            ck_assert_msg(fabs(rms / want - 1.0) < 0.06, "%s: rms %g, want %g", name, rms, want);
        }
        free(v);
    }
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ the host reference */

struct ref {
    struct arch a;
    int output;                   /* generator: 0 tanh, 1 sigmoid, 2 none */
    double slope;
    double *cw[8], *cb[8], *nw[8], *nb[8], *fw, *fb;
    /* Every parameter in the net's order, for finite differences. */
    double *p[64];
    size_t n[64];
    int np;
};

/* Reads parameter `name` of the net into a new double array (and the FD list). */
static double *ref_take(struct ref *r, gan_net *net, const char *name)
{
    long i = gan_net_find(net, name);
    ck_assert_msg(i >= 0, "no parameter %s", name);
    size_t n = (size_t)gan_net_numel(net, (size_t)i);
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    ck_assert_int_eq(gan_tensor_to_host(CTX, gan_net_tensor(net, (size_t)i), f, n), GAN_OK);
    for (size_t k = 0; k < n; k++)
        d[k] = f[k];
    free(f);
    r->p[i] = d;
    r->n[i] = n;
    if (i + 1 > r->np)
        r->np = (int)i + 1;
    return d;
}

static void ref_load(struct ref *r, gan_net *net)
{
    char name[32];
    const struct arch *a = &r->a;
    const char *kind = a->critic ? "conv" : "deconv";
    for (int i = 0; i < a->depth; i++) {
        snprintf(name, sizeof name, "%s%d.weight", kind, i);
        r->cw[i] = ref_take(r, net, name);
        snprintf(name, sizeof name, "%s%d.bias", kind, i);
        r->cb[i] = ref_take(r, net, name);
        int normed = a->norm && (a->critic ? i > 0 : i < a->depth - 1);
        if (normed) {
            snprintf(name, sizeof name, "norm%d.weight", i);
            r->nw[i] = ref_take(r, net, name);
            snprintf(name, sizeof name, "norm%d.bias", i);
            r->nb[i] = ref_take(r, net, name);
        }
    }
    r->fw = ref_take(r, net, "fc0.weight");
    r->fb = ref_take(r, net, "fc0.bias");
    ck_assert_uint_eq((size_t)r->np, gan_net_count(net));
}

static void ref_free(struct ref *r)
{
    for (int i = 0; i < r->np; i++)
        free(r->p[i]);
    memset(r, 0, sizeof *r);
}

/* y[co][oy][ox] = b[co] + Σ w[co][ci][ky][kx]·x[ci][2oy − 2 + ky][2ox − 2 + kx]. */
static void conv_fwd(const double *x, int ci_n, int hi, int wi, const double *w, const double *b,
                     int co_n, int ho, int wo, double *y)
{
    for (int co = 0; co < co_n; co++)
        for (int oy = 0; oy < ho; oy++)
            for (int ox = 0; ox < wo; ox++) {
                double s = b[co];
                for (int ci = 0; ci < ci_n; ci++)
                    for (int ky = 0; ky < K; ky++) {
                        int iy = 2 * oy - 2 + ky;
                        if (iy < 0 || iy >= hi)
                            continue;
                        for (int kx = 0; kx < K; kx++) {
                            int ix = 2 * ox - 2 + kx;
                            if (ix >= 0 && ix < wi)
                                s += w[((co * ci_n + ci) * K + ky) * K + kx]
                                     * x[(ci * hi + iy) * wi + ix];
                        }
                    }
                y[(co * ho + oy) * wo + ox] = s;
            }
}

/* The gradient of Σ g·y with respect to x, for y = conv_fwd(x). */
static void conv_bwd(const double *g, int co_n, int ho, int wo, const double *w, int ci_n,
                     int hi, int wi, double *gx)
{
    memset(gx, 0, (size_t)ci_n * hi * wi * sizeof *gx);
    for (int co = 0; co < co_n; co++)
        for (int oy = 0; oy < ho; oy++)
            for (int ox = 0; ox < wo; ox++) {
                double v = g[(co * ho + oy) * wo + ox];
                for (int ci = 0; ci < ci_n; ci++)
                    for (int ky = 0; ky < K; ky++) {
                        int iy = 2 * oy - 2 + ky;
                        if (iy < 0 || iy >= hi)
                            continue;
                        for (int kx = 0; kx < K; kx++) {
                            int ix = 2 * ox - 2 + kx;
                            if (ix >= 0 && ix < wi)
                                gx[(ci * hi + iy) * wi + ix]
                                    += v * w[((co * ci_n + ci) * K + ky) * K + kx];
                        }
                    }
            }
}

/* ConvTranspose2d as a scatter: each input pixel adds w[ci][co]·x at output position
 * 2i − 2 + k, kept when inside the ho × wo output. */
static void deconv_fwd(const double *x, int ci_n, int hi, int wi, const double *w,
                       const double *b, int co_n, int ho, int wo, double *y)
{
    for (int co = 0; co < co_n; co++)
        for (int k = 0; k < ho * wo; k++)
            y[co * ho * wo + k] = b[co];
    for (int ci = 0; ci < ci_n; ci++)
        for (int iy = 0; iy < hi; iy++)
            for (int ix = 0; ix < wi; ix++) {
                double v = x[(ci * hi + iy) * wi + ix];
                for (int co = 0; co < co_n; co++)
                    for (int ky = 0; ky < K; ky++) {
                        int oy = 2 * iy - 2 + ky;
                        if (oy < 0 || oy >= ho)
                            continue;
                        for (int kx = 0; kx < K; kx++) {
                            int ox = 2 * ix - 2 + kx;
                            if (ox >= 0 && ox < wo)
                                y[(co * ho + oy) * wo + ox]
                                    += v * w[((ci * co_n + co) * K + ky) * K + kx];
                        }
                    }
            }
}

/* GroupNorm(1, C) over one sample: x̂ = (x − μ)/sqrt(σ² + 1e-5), y = γ_c·x̂ + β_c. */
static void ln_fwd(double *x, int c_n, int plane, const double *gamma, const double *beta,
                   double *xhat, double *rstd)
{
    int n = c_n * plane;
    double mu = 0, var = 0;
    for (int k = 0; k < n; k++)
        mu += x[k];
    mu /= n;
    for (int k = 0; k < n; k++)
        var += (x[k] - mu) * (x[k] - mu);
    var /= n;
    *rstd = 1.0 / sqrt(var + 1e-5);
    for (int k = 0; k < n; k++) {
        xhat[k] = (x[k] - mu) * *rstd;
        x[k] = gamma[k / plane] * xhat[k] + beta[k / plane];
    }
}

/* In place: g ← ∂/∂x of Σ g·y for y = ln_fwd(x). */
static void ln_bwd(double *g, int c_n, int plane, const double *gamma, const double *xhat,
                   double rstd)
{
    int n = c_n * plane;
    double m1 = 0, m2 = 0;
    for (int k = 0; k < n; k++) {
        g[k] *= gamma[k / plane];
        m1 += g[k];
        m2 += g[k] * xhat[k];
    }
    m1 /= n;
    m2 /= n;
    for (int k = 0; k < n; k++)
        g[k] = rstd * (g[k] - m1 - xhat[k] * m2);
}

#define REF_MAX 4096                  /* values of the largest activation in these tests */

/* D(x) for one image and, unless gx is NULL, ∇ₓD by hand-written backpropagation.
 * Returns the smallest |pre-activation| met (for keeping finite differences off kinks). */
static double ref_critic(const struct ref *r, const double *x, double *d_out, double *gx)
{
    const struct arch *a = &r->a;
    static double act[8][REF_MAX], pre[8][REF_MAX], xhat[8][REF_MAX], g[REF_MAX], g2[REF_MAX];
    double rstd[8], margin = INFINITY;
    memcpy(act[0], x, (size_t)a->C * a->H * a->W * sizeof *x);
    for (int i = 0; i < a->depth; i++) {
        int plane = a->hs[i + 1] * a->ws[i + 1], n = a->ch[i + 1] * plane;
        ck_assert_int_le(n, REF_MAX);
        conv_fwd(act[i], a->ch[i], a->hs[i], a->ws[i], r->cw[i], r->cb[i], a->ch[i + 1],
                 a->hs[i + 1], a->ws[i + 1], pre[i]);
        if (r->nw[i])
            ln_fwd(pre[i], a->ch[i + 1], plane, r->nw[i], r->nb[i], xhat[i], &rstd[i]);
        for (int k = 0; k < n; k++) {
            margin = fmin(margin, fabs(pre[i][k]));
            act[i + 1][k] = pre[i][k] > 0 ? pre[i][k] : r->slope * pre[i][k];
        }
    }
    int top = top_features(a);
    double d = r->fb[0];
    for (int k = 0; k < top; k++)
        d += r->fw[k] * act[a->depth][k];
    if (d_out)
        *d_out = d;
    if (!gx)
        return margin;
    memcpy(g, r->fw, (size_t)top * sizeof *g);
    for (int i = a->depth - 1; i >= 0; i--) {
        int plane = a->hs[i + 1] * a->ws[i + 1], n = a->ch[i + 1] * plane;
        for (int k = 0; k < n; k++)
            g[k] *= pre[i][k] > 0 ? 1.0 : r->slope;
        if (r->nw[i])
            ln_bwd(g, a->ch[i + 1], plane, r->nw[i], xhat[i], rstd[i]);
        conv_bwd(g, a->ch[i + 1], a->hs[i + 1], a->ws[i + 1], r->cw[i], a->ch[i], a->hs[i],
                 a->ws[i], g2);
        memcpy(g, g2, (size_t)a->ch[i] * a->hs[i] * a->ws[i] * sizeof *g);
    }
    memcpy(gx, g, (size_t)a->C * a->H * a->W * sizeof *gx);
    return margin;
}

/* The generator's image for one z. */
static void ref_generator(const struct ref *r, const double *z, double *img)
{
    const struct arch *a = &r->a;
    static double h[2][REF_MAX], xhat[REF_MAX];
    int top = top_features(a), cur = 0;
    ck_assert_int_le(top, REF_MAX);
    for (int o = 0; o < top; o++) {
        double s = r->fb[o];
        for (int k = 0; k < a->Z; k++)
            s += r->fw[o * a->Z + k] * z[k];
        h[0][o] = s > 0 ? s : 0;
    }
    for (int j = 0; j < a->depth; j++) {
        int from = a->depth - j, to = a->depth - j - 1;
        int co = to == 0 ? a->C : a->ch[to], plane = a->hs[to] * a->ws[to];
        ck_assert_int_le(co * plane, REF_MAX);
        deconv_fwd(h[cur], a->ch[from], a->hs[from], a->ws[from], r->cw[j], r->cb[j], co,
                   a->hs[to], a->ws[to], h[!cur]);
        cur = !cur;
        double rstd;
        if (r->nw[j])
            ln_fwd(h[cur], co, plane, r->nw[j], r->nb[j], xhat, &rstd);
        for (int k = 0; k < co * plane; k++) {
            double v = h[cur][k];
            if (j < a->depth - 1)
                v = v > 0 ? v : 0;
            else
                v = r->output == 0 ? tanh(v) : r->output == 1 ? 1 / (1 + exp(-v)) : v;
            h[cur][k] = v;
        }
    }
    memcpy(img, h[cur], (size_t)a->C * a->H * a->W * sizeof *img);
}

/* ------------------------------------------------------------------ random values */

static uint64_t rng_state;

static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1p-53;
}

static double normal01(void)
{
    return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
}

/* Every parameter from the host: He-scaled weights, biases 0.2·N (so that they matter),
 * norm weights 1 + 0.3·N and norm biases 0.2·N. */
static void randomise(gan_net *net)
{
    for (size_t i = 0; i < gan_net_count(net); i++) {
        gan_tensor *t = gan_net_tensor(net, i);
        const char *name = gan_net_name(net, i);
        size_t n = (size_t)gan_tensor_numel(t);
        int64_t fan_in = 1;
        for (int d = 1; d < gan_tensor_ndim(t); d++)
            fan_in *= gan_tensor_dim(t, d);
        float *v = malloc(n * sizeof *v);
        int norm_w = strncmp(name, "norm", 4) == 0 && strstr(name, "weight");
        for (size_t k = 0; k < n; k++)
            v[k] = (float)(gan_tensor_ndim(t) > 1 ? normal01() * sqrt(2.0 / (double)fan_in)
                           : norm_w ? 1.0 + 0.3 * normal01() : 0.2 * normal01());
        ck_assert_int_eq(gan_tensor_set_from_host(CTX, t, v, n), GAN_OK);
        free(v);
    }
}

/* ------------------------------------------------------------------ forward */

struct fwd_case {
    const char *name;
    int critic, depth, width, norm, C, H, W, Z;
    const char *extra[3];
    int output;                   /* 0 tanh, 1 sigmoid, 2 none */
    double slope;
    int batch;
};

static const struct fwd_case fwd_cases[] = {
    { "generator 28×28, width 2", 0, 3, 2, 0, 1, 28, 28, 8, { NULL }, 0, 0.2, 3 },
    { "generator, layer norm, sigmoid", 0, 3, 2, 1, 1, 28, 28, 5, { "output=sigmoid", NULL },
      1, 0.2, 2 },
    { "generator 3×13×10, no output activation", 0, 2, 3, 1, 3, 13, 10, 4,
      { "output=none", NULL }, 2, 0.2, 2 },
    { "critic 28×28, width 2", 1, 3, 2, 0, 1, 28, 28, 0, { NULL }, 0, 0.2, 3 },
    { "critic, layer norm, slope 0.1", 1, 3, 2, 1, 1, 28, 28, 0, { "leaky_slope=0.1", NULL },
      0, 0.1, 2 },
    { "critic 3×13×10, depth 2, layer norm", 1, 2, 3, 1, 3, 13, 10, 0, { NULL }, 0, 0.2, 2 },
};

START_TEST(test_forward_matches_host)
{
    const struct fwd_case *c = &fwd_cases[_i];
    struct ref r;
    memset(&r, 0, sizeof r);
    arch_init(&r.a, c->critic, c->depth, c->width, c->norm, c->C, c->H, c->W, c->Z);
    r.output = c->output;
    r.slope = c->slope;
    struct inst m;
    make_arch(&m, &r.a, c->extra);
    rng_state = 1000 + (uint64_t)_i;
    randomise(m.net);
    ref_load(&r, m.net);
    int in_n = c->critic ? c->C * c->H * c->W : c->Z, out_n = c->critic ? 1 : c->C * c->H * c->W;
    float *x = malloc((size_t)(c->batch * in_n) * sizeof *x);
    double *xd = malloc((size_t)in_n * sizeof *xd), *yd = malloc((size_t)out_n * sizeof *yd);
    for (int k = 0; k < c->batch * in_n; k++)
        x[k] = (float)(c->critic ? 2 * uniform01() - 1 : normal01());
    int64_t dims[4] = { c->batch, c->C, c->H, c->W }, zd[2] = { c->batch, c->Z };
    gan_tensor *xt = c->critic ? gan_tensor_from_host(CTX, GAN_F32, 4, dims, x)
                               : gan_tensor_from_host(CTX, GAN_F32, 2, zd, x);
    gan_tensor *y = mops->forward(m.model, CTX, xt);
    ck_assert_msg(y, "%s: %s", c->name, gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_numel(y), c->batch * out_n);
    float *yv = malloc((size_t)(c->batch * out_n) * sizeof *yv);
    ck_assert_int_eq(gan_tensor_to_host(CTX, y, yv, (size_t)(c->batch * out_n)), GAN_OK);
    double worst = 0;
    for (int b = 0; b < c->batch; b++) {
        for (int k = 0; k < in_n; k++)
            xd[k] = x[b * in_n + k];
        if (c->critic)
            ref_critic(&r, xd, &yd[0], NULL);
        else
            ref_generator(&r, xd, yd);
        for (int k = 0; k < out_n; k++) {
            double got = yv[b * out_n + k], err = fabs(got - yd[k]), tol = 1e-5 + 1e-4 * fabs(yd[k]);
            ck_assert_msg(err <= tol, "%s: sample %d output %d: %.8g, reference %.8g", c->name, b,
                          k, got, yd[k]);
            worst = fmax(worst, err / tol);
        }
    }
    if (getenv("GANCTL_FD_REPORT"))
        fprintf(stderr, "%-40s forward: worst error %.3f of its tolerance\n", c->name, worst);
    free(x);
    free(xd);
    free(yd);
    free(yv);
    ref_free(&r);
    gan_ctx_step_end(CTX);
    unmake(&m);
}
END_TEST

/* A critic given images of the wrong size says so instead of computing nonsense;
 * flattened images [B, C·H·W] are accepted. */
START_TEST(test_forward_shapes_checked)
{
    struct arch a;
    arch_init(&a, 1, 3, 2, 0, 1, 28, 28, 0);
    struct inst m;
    make_arch(&m, &a, NULL);
    int64_t bad[4] = { 2, 1, 27, 28 }, flat[2] = { 2, 784 };
    gan_tensor *x = gan_tensor_full(CTX, GAN_F32, 4, bad, 0.5f);
    ck_assert_ptr_null(mops->forward(m.model, CTX, x));
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "each image has 784"));
    gan_ctx_clear_error(CTX);
    gan_tensor *y = mops->forward(m.model, CTX, gan_tensor_full(CTX, GAN_F32, 2, flat, 0.5f));
    ck_assert_msg(y, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_dim(y, 0), 2);
    ck_assert_ptr_null(mops->forward(m.model, CTX, NULL));
    /* the same images as rows and as [B, C, H, W] (taken as they are): the same scores */
    static float v[2 * 784];
    for (int k = 0; k < 2 * 784; k++)
        v[k] = (float)((k * 37) % 101) / 50.0f - 1.0f;
    int64_t img[4] = { 2, 1, 28, 28 };
    float rows_out[2], images_out[2];
    gan_tensor *yr = mops->forward(m.model, CTX, gan_tensor_from_host(CTX, GAN_F32, 2, flat, v));
    gan_tensor *yi = mops->forward(m.model, CTX, gan_tensor_from_host(CTX, GAN_F32, 4, img, v));
    ck_assert_msg(yr && yi, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_to_host(CTX, yr, rows_out, 2), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, yi, images_out, 2), GAN_OK);
    ck_assert(memcmp(rows_out, images_out, sizeof rows_out) == 0);
    gan_ctx_step_end(CTX);
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ settings */

struct settings_case {
    const char *settings[3];
    int critic;
    const char *phrase;
};

static const struct settings_case settings_cases[] = {
    { { "width=0", NULL }, 1, "width = 0" },
    { { "width=5000", NULL }, 0, "width = 5000" },
    { { "depth=0", NULL }, 1, "depth = 0" },
    { { "depth=7", NULL }, 0, "depth = 7" },
    { { "norm=batch", NULL }, 1, "norm = \"batch\" is not known" },
    { { "output=relu", NULL }, 0, "output = \"relu\" is not known" },
    { { "leaky_slope=nan", NULL }, 1, "leaky_slope = nan" },
    { { "init=xavier", NULL }, 0, "init = \"xavier\" is not known" },
    { { "width=abc", NULL }, 0, "width is not an integer" },
    { { "width=4096", "depth=6", NULL }, 1, "parameters; use a smaller width" },
};

START_TEST(test_settings_refused)
{
    const struct settings_case *c = &settings_cases[_i];
    int64_t z[1] = { 16 }, img[3] = { 1, 28, 28 }, one[1] = { 1 };
    struct gan_model_io io = c->critic ? io_of(3, img, 1, one) : io_of(1, z, 3, img);
    struct inst m;
    make(&m, c->critic ? GAN_MODEL_CRITIC : GAN_MODEL_GENERATOR, &io, c->settings);
    ck_assert_int_ne(m.status, GAN_OK);
    ck_assert_ptr_null(m.model);
    ck_assert_msg(strstr(m.th.last_error, c->phrase), "no \"%s\" in: %s", c->phrase,
                  m.th.last_error);
    ck_assert_uint_eq(gan_net_count(m.net), 0);
    unmake(&m);
}
END_TEST

struct io_case {
    int critic;
    int in_ndim;
    int64_t in[4];
    int out_ndim;
    int64_t out[4];
    const char *phrase;
};

static const struct io_case io_cases[] = {
    { 1, 1, { 784 }, 1, { 1 }, "critic would read images of shape [784]" },
    { 1, 3, { 1, 28, 28 }, 1, { 2 }, "asked for 2 outputs" },
    { 0, 1, { 16 }, 4, { 1, 1, 28, 28 }, "generator would make images of shape [1, 1, 28, 28]" },
    { 0, 1, { 16 }, 3, { 65, 28, 28 }, "1 to 64 channels" },
    { 0, 1, { 0 }, 3, { 1, 28, 28 }, "input z" },
    { 1, 3, { 1, 0, 28 }, 1, { 1 }, "sides of 1 to 4096" },
};

START_TEST(test_io_refused)
{
    const struct io_case *c = &io_cases[_i];
    struct gan_model_io io = io_of(c->in_ndim, c->in, c->out_ndim, c->out);
    struct inst m;
    make(&m, c->critic ? GAN_MODEL_CRITIC : GAN_MODEL_GENERATOR, &io, NULL);
    ck_assert_int_eq(m.status, GAN_ERR_INVALID);
    ck_assert_ptr_null(m.model);
    ck_assert_msg(strstr(m.th.last_error, c->phrase), "no \"%s\" in: %s", c->phrase,
                  m.th.last_error);
    unmake(&m);
}
END_TEST

/* [H, W] images (no channel axis) work too, and come out in that shape. */
START_TEST(test_two_dim_images)
{
    int64_t z[1] = { 4 }, img[2] = { 12, 12 };
    struct gan_model_io io = io_of(1, z, 2, img);
    const char *const s[] = { "width=2", "depth=2", NULL };
    struct inst m;
    make(&m, GAN_MODEL_GENERATOR, &io, s);
    ck_assert_msg(m.status == GAN_OK, "%s", m.th.last_error);
    uint64_t off = 0;
    ck_assert_int_eq(gan_net_init(m.net, 1, &off), GAN_OK);
    int64_t zd[2] = { 3, 4 };
    gan_tensor *y = mops->forward(m.model, CTX, gan_tensor_normal(CTX, GAN_F32, 2, zd, 2, 0, 0, 1));
    ck_assert_msg(y, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_ndim(y), 3);
    ck_assert_int_eq(gan_tensor_dim(y, 1), 12);
    ck_assert_int_eq(gan_tensor_dim(y, 2), 12);
    gan_ctx_step_end(CTX);
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ the penalty
 * P(θ) = mean_b (‖∇ₓD(x̂_b)‖₂ − 1)² for a tiny DCGAN critic (width 2–3, depth 2–3, on
 * 9×9 to 12×12 images). ganctl differentiates D with create_graph, builds P, and
 * differentiates P with respect to every parameter: the double backward of conv2d,
 * leaky ReLU and the layer-norm composition (reshape, mean, sub, square, sqrt, div,
 * mul, add). The reference is the double-precision network above with ∇ₓD written out
 * by hand, and dP/dθ by central differences of it with h = 1e-5 (truncation ~1e-10,
 * rounding ~1e-11). ganctl runs in FP32; measured, its worst error is a few percent of
 * the tolerance |analytic − fd| ≤ 2e-5 + 2e-4·|fd|. With leaky ReLU each input is
 * redrawn until every pre-activation is at least 0.02 from the kink. The case with
 * slope 1 makes the activations linear, so that the critic's only nonlinearity is the
 * layer norm: that case tests the norm's second derivatives alone. */

struct pen_case {
    const char *name;
    int depth, width, norm, H, W, batch;
    double slope;
    const char *slope_setting;
};

static const struct pen_case pen_cases[] = {
    { "leaky 0.2, no norm", 2, 3, 0, 9, 9, 4, 0.2, "leaky_slope=0.2" },
    { "leaky 0.2, layer norm", 2, 3, 1, 9, 9, 4, 0.2, "leaky_slope=0.2" },
    { "layer norm alone (slope 1)", 2, 3, 1, 9, 9, 3, 1.0, "leaky_slope=1" },
    { "depth 3, layer norm, 12x11", 3, 2, 1, 12, 11, 2, 0.2, "leaky_slope=0.2" },
};

#define PEN_FD 1e-5
#define PEN_ATOL 2e-5
#define PEN_RTOL 2e-4
#define PEN_MAXB 4
#define PEN_MAXN 144

static double ref_penalty(const struct ref *r, const double *x, int batch, int n)
{
    double sum = 0, g[PEN_MAXN];
    for (int b = 0; b < batch; b++) {
        ref_critic(r, x + b * n, NULL, g);
        double sq = 0;
        for (int k = 0; k < n; k++)
            sq += g[k] * g[k];
        sum += (sqrt(sq) - 1) * (sqrt(sq) - 1);
    }
    return sum / batch;
}

/* ganctl's side: ∇ₓD of D [batch, 1] at x (n values a sample) with create_graph into
 * *gx, the penalty P = mean_b (‖∇ₓD_b‖₂ − 1)², returned, and dP/dθ for every parameter
 * of net, in a new array of gan_net_count(net) gradients (*grads, freed by the caller). */
static gan_tensor *penalty_and_grads(gan_tensor *d, gan_tensor *xt, int batch, int n,
                                     gan_net *net, gan_tensor **gx, gan_tensor ***grads)
{
    int64_t od[2] = { batch, 1 }, fl[2] = { batch, n };
    ck_assert_msg(d, "%s", gan_ctx_error(CTX));
    gan_tensor *ones = gan_tensor_full(CTX, GAN_F32, 2, od, 1.0f);
    ck_assert_msg(gan_grad(CTX, 1, &d, &ones, 1, &xt, gx, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    gan_tensor *norm = gan_sqrt(CTX, gan_sum(CTX, gan_square(CTX, gan_reshape(CTX, *gx, 2, fl)),
                                             1, 0));
    gan_tensor *pen = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX, norm, -1.0f)),
                               GAN_ALL_AXES, 0);
    ck_assert_msg(pen, "%s", gan_ctx_error(CTX));
    size_t np = gan_net_count(net);
    *grads = calloc(np, sizeof **grads);
    ck_assert_msg(gan_grad(CTX, 1, &pen, NULL, (int)np, gan_net_tensors(net), *grads, 0)
                  == GAN_OK, "%s", gan_ctx_error(CTX));
    return pen;
}

START_TEST(test_penalty_gradient)
{
    const struct pen_case *c = &pen_cases[_i];
    struct ref r;
    memset(&r, 0, sizeof r);
    arch_init(&r.a, 1, c->depth, c->width, c->norm, 1, c->H, c->W, 0);
    r.slope = c->slope;
    const char *const extra[] = { c->slope_setting, NULL };
    struct inst m;
    make_arch(&m, &r.a, extra);
    rng_state = 77 + (uint64_t)_i;
    randomise(m.net);
    ref_load(&r, m.net);
    int n = c->H * c->W;
    ck_assert_int_le(n, PEN_MAXN);
    static double x[PEN_MAXB * PEN_MAXN];
    float xf[PEN_MAXB * PEN_MAXN];
    for (int b = 0; b < c->batch; b++) {
        int tries = 0;
        double margin;
        do {
            ck_assert_msg(tries++ < 2000, "no input away from the kinks for sample %d", b);
            for (int k = 0; k < n; k++)
                xf[b * n + k] = (float)(2 * uniform01() - 1);
            for (int k = 0; k < n; k++)
                x[b * n + k] = xf[b * n + k];
            margin = ref_critic(&r, x + b * n, NULL, NULL);
        } while (c->slope != 1.0 && margin < 0.02);
    }

    /* ganctl: D, ∇ₓD with create_graph, P, dP/dθ. */
    int64_t xd[4] = { c->batch, 1, c->H, c->W };
    gan_tensor *xt = gan_tensor_from_host(CTX, GAN_F32, 4, xd, xf);
    gan_tensor_set_requires_grad(xt, 1);
    gan_tensor *d = mops->forward(m.model, CTX, xt), *gx, **grads;
    gan_tensor *pen = penalty_and_grads(d, xt, c->batch, n, m.net, &gx, &grads);
    size_t np = gan_net_count(m.net);

    /* D, ∇ₓD and P against the reference first. */
    float dv[PEN_MAXB], gv[PEN_MAXB * PEN_MAXN], pv;
    ck_assert_int_eq(gan_tensor_to_host(CTX, d, dv, (size_t)c->batch), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, gx, gv, (size_t)(c->batch * n)), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, pen, &pv, 1), GAN_OK);
    for (int b = 0; b < c->batch; b++) {
        double dref, gref[PEN_MAXN];
        ref_critic(&r, x + b * n, &dref, gref);
        ck_assert_msg(fabs(dv[b] - dref) <= 1e-5 + 1e-5 * fabs(dref), "%s: D[%d] %.8g, "
                      "reference %.8g", c->name, b, (double)dv[b], dref);
        for (int k = 0; k < n; k++)
            ck_assert_msg(fabs(gv[b * n + k] - gref[k]) <= 1e-5 + 1e-4 * fabs(gref[k]),
                          "%s: grad_x D[%d][%d] %.8g, reference %.8g", c->name, b, k,
                          (double)gv[b * n + k], gref[k]);
    }
    double P = ref_penalty(&r, x, c->batch, n);
    ck_assert_msg(fabs(pv - P) <= 1e-6 + 1e-5 * fabs(P), "%s: P %.8g, reference %.8g", c->name,
                  (double)pv, P);

    /* dP/dθ, every element of every parameter. */
    double worst = 0, largest = 0;
    for (size_t i = 0; i < np; i++) {
        size_t cnt = r.n[i];
        float *gbuf = malloc(cnt * sizeof *gbuf);
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[i], gbuf, cnt), GAN_OK);
        for (size_t k = 0; k < cnt; k++) {
            double keep = r.p[i][k];
            r.p[i][k] = keep + PEN_FD;
            double pp = ref_penalty(&r, x, c->batch, n);
            r.p[i][k] = keep - PEN_FD;
            double pm = ref_penalty(&r, x, c->batch, n);
            r.p[i][k] = keep;
            double fd = (pp - pm) / (2 * PEN_FD);
            double err = fabs(gbuf[k] - fd), tol = PEN_ATOL + PEN_RTOL * fabs(fd);
            ck_assert_msg(err <= tol, "%s: dP/d%s[%zu]: ganctl %.8g, finite difference %.8g "
                          "(|diff| %.3g > %.3g)", c->name, gan_net_name(m.net, i), k,
                          (double)gbuf[k], fd, err, tol);
            worst = fmax(worst, err / tol);
            largest = fmax(largest, fabs(fd));
        }
        free(gbuf);
    }
    /* The check has teeth: the gradients are large next to the tolerance. */
    ck_assert_msg(largest > 100 * PEN_ATOL, "%s: the largest dP/dθ is only %g", c->name, largest);
    if (getenv("GANCTL_FD_REPORT"))
        fprintf(stderr, "%-32s P = %.6f, largest |dP/dθ| %.3g, worst error %.3f of its "
                "tolerance\n", c->name, P, largest, worst);
    free(grads);
    ref_free(&r);
    gan_ctx_step_end(CTX);
    unmake(&m);
}
END_TEST

/* ------------------------------------------------------------------ one-pass layers
 * The critic's layers without a norm add the bias and apply the leaky ReLU in one pass
 * (gan_add_leaky_relu, a backend of ABI 1.9), inside the layer's scope, where the
 * activation ran in the network's. In BF16 O2, with no pattern, with "critic" (both
 * scopes FP32) and with "critic.conv1" (the layer's scope alone, so that the activation
 * moves across the boundary of an FP32 scope), D, ∇ₓD with create_graph and the
 * penalty's dP/dθ must have the bits of the same run told the backend is of ABI 1.8
 * (the two ops, the activation in the network's scope). */

struct fused_run {
    float d[2], gx[2 * 81], grads[4096];
    size_t ngrads;
};

static void run_fused_critic(unsigned minor, const char *pattern, struct fused_run *out)
{
    struct arch a;
    arch_init(&a, 1, 2, 3, 0, 1, 9, 9, 0);
    const char *const extra[] = { "leaky_slope=0.2", NULL };
    struct inst m;
    make_arch(&m, &a, extra);
    rng_state = 4242;
    randomise(m.net);
    gan_ctx_set_backend_abi_minor(CTX, minor);
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_BF16, GAN_PRECISION_O2), GAN_OK);
    if (pattern)
        ck_assert_int_eq(gan_ctx_add_fp32_scope(CTX, pattern), GAN_OK);
    float xf[2 * 81];
    for (int k = 0; k < 2 * 81; k++)
        xf[k] = (float)(2 * uniform01() - 1);
    int64_t xd[4] = { 2, 1, 9, 9 };
    gan_tensor *xt = gan_tensor_from_host(CTX, GAN_F32, 4, xd, xf);
    gan_tensor_set_requires_grad(xt, 1);
    ck_assert_int_eq(gan_ctx_scope_push(CTX, "critic"), GAN_OK);
    gan_tensor *d = mops->forward(m.model, CTX, xt);
    gan_ctx_scope_pop(CTX);
    gan_tensor *gx, **grads;
    penalty_and_grads(d, xt, 2, 81, m.net, &gx, &grads);
    size_t np = gan_net_count(m.net);
    ck_assert_int_eq(gan_tensor_to_host(CTX, d, out->d, 2), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, gx, out->gx, 2 * 81), GAN_OK);
    out->ngrads = 0;
    for (size_t i = 0; i < np; i++) {
        size_t cnt = (size_t)gan_tensor_numel(grads[i]);
        ck_assert_uint_le(out->ngrads + cnt, sizeof out->grads / sizeof out->grads[0]);
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[i], out->grads + out->ngrads, cnt),
                         GAN_OK);
        out->ngrads += cnt;
    }
    free(grads);
    gan_ctx_step_end(CTX);
    gan_ctx_clear_fp32_scopes(CTX);
    ck_assert_int_eq(gan_ctx_set_precision(CTX, GAN_F32, GAN_PRECISION_O2), GAN_OK);
    gan_ctx_set_backend_abi_minor(CTX, GAN_ABI_MINOR);
    unmake(&m);
}

START_TEST(test_fused_layers_same_bits)
{
    static const char *const patterns[] = { NULL, "critic", "critic.conv1" };
    const char *pattern = patterns[_i];
    struct fused_run one, two;
    run_fused_critic(GAN_ABI_MINOR, pattern, &one);
    run_fused_critic(8, pattern, &two);
    const char *what = pattern ? pattern : "no pattern";
    ck_assert_msg(memcmp(one.d, two.d, sizeof one.d) == 0, "%s: D differs", what);
    ck_assert_msg(memcmp(one.gx, two.gx, sizeof one.gx) == 0, "%s: grad_x D differs", what);
    ck_assert_uint_eq(one.ngrads, two.ngrads);
    for (size_t k = 0; k < one.ngrads; k++)
        ck_assert_msg(memcmp(&one.grads[k], &two.grads[k], sizeof one.grads[k]) == 0,
                      "%s: dP/dθ element %zu is %a with the one pass, %a with the two ops",
                      what, k, (double)one.grads[k], (double)two.grads[k]);
}
END_TEST

static Suite *dcgan_suite(void)
{
    Suite *s = suite_create("dcgan");
    TCase *tc = tcase_create("descriptor");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_descriptor);
    tcase_add_test(tc, test_loader_accepts);
    suite_add_tcase(s, tc);

    tc = tcase_create("shapes and names");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_paper_nets);
    tcase_add_loop_test(tc, test_sized_forward, 0,
                        (int)(sizeof sized_cases / sizeof sized_cases[0]));
    tcase_add_loop_test(tc, test_layouts, 0, (int)(sizeof layout_cases / sizeof layout_cases[0]));
    tcase_add_loop_test(tc, test_init_kinds, 0, 3);
    tcase_add_test(tc, test_two_dim_images);
    suite_add_tcase(s, tc);

    tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_forward_matches_host, 0,
                        (int)(sizeof fwd_cases / sizeof fwd_cases[0]));
    tcase_add_test(tc, test_forward_shapes_checked);
    suite_add_tcase(s, tc);

    tc = tcase_create("settings");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_settings_refused, 0,
                        (int)(sizeof settings_cases / sizeof settings_cases[0]));
    tcase_add_loop_test(tc, test_io_refused, 0, (int)(sizeof io_cases / sizeof io_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("penalty double backward");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_penalty_gradient, 0,
                        (int)(sizeof pen_cases / sizeof pen_cases[0]));
    tcase_add_loop_test(tc, test_fused_layers_same_bits, 0, 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dcgan_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
