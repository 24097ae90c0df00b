/* SPDX-License-Identifier: MIT */
/* check_grads.c — the gradient dump (ganctl grads) on checkpoints of tiny trained runs: gradients
 * against central finite differences, loss values against a host computation, the file, refusals. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/configuration.h"
#include "../../cli/grads_cmd.h"
#include "plugin/plugin_loader.h"
#include "io/safetensors/safetensors.h"
#include "train/loop/trainer.h"
#include "../lib/scratch.h"

/* ------------------------------------------------------------------ scratch folder */

static void scratch_setup(void)
{
    test_scratch_make("ganctl-grads");
}

static const char *scratch_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", test_scratch, name);
    return buf;
}

/* ------------------------------------------------------------------ runs */

/* The networks use tanh, so that both objectives are smooth in every parameter and
 * central differences converge (a ReLU's kinks would make them depend on the step). */
struct run_case {
    const char *sets[8];
    int64_t batch;               /* B of the dumped batch */
    int64_t z_dim;
    double lambda, target;
};

static const struct run_case cases[] = {
    /* The demo's penalty weight, a batch of 16. */
    { { "loss.gradient-penalty.lambda=0.1", NULL }, 16, 2, 0.1, 1.0 },
    /* The paper's λ, a 3-D z, nets of other shapes, PyTorch's initialisation, a
     * batch of 5 (not the training batch size). */
    { { "loss.gradient-penalty.lambda=10", "generator.z_dim=3", "generator.model.width=6",
        "generator.model.depth=1", "critic.model.width=10", "critic.model.depth=3",
        "generator.model.init=torch", NULL },
      5, 3, 10.0, 1.0 },
    /* Another target norm. */
    { { "loss.gradient-penalty.lambda=2", "loss.gradient-penalty.target=0.5", NULL }, 7, 2,
      2.0, 0.5 },
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static const char *const tiny[] = {
    "backend.threads=1",
    "generator.model.width=8", "generator.model.depth=2", "generator.model.activation=tanh",
    "critic.model.width=8", "critic.model.depth=2", "critic.model.activation=tanh",
    "data.batch_size=32", "critic.iterations=2",
    "run.iterations=20", "run.log_every=10", "run.eval_every=0", "run.image_every=0",
    "run.checkpoint_every=0", "run.metrics_time=false",
    NULL,
};

static gan_loader *test_loader(void)
{
    gan_loader *l = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_loader_new(&l, NULL, 0, getenv("GANCTL_PLUGIN_PATH"), NULL, &err) == GAN_OK,
                  "%s", err.message);
    return l;
}

/* Trains case c (with `extra` settings after its own) for a few iterations into
 * the scratch folder's run; returns the checkpoint's path. */
static const char *train_with(const struct run_case *c, const char *const *extra,
                              gan_loader *loader, char *path, size_t size)
{
    gan_config *cfg = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_config_new(&cfg, &err), GAN_OK);
    for (const char *const *s = tiny; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    for (const char *const *s = c->sets; *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    for (const char *const *s = extra; s && *s; s++)
        ck_assert_msg(gan_config_set(cfg, *s, &err) == GAN_OK, "%s: %s", *s, err.message);
    char dir[600];
    ck_assert_int_eq(gan_config_set_string(cfg, "run.dir", scratch_path(dir, sizeof dir, "run"),
                                           "test", &err), GAN_OK);
    struct gan_trainer_setup setup = { .config = cfg, .loader = loader };
    gan_trainer *t = NULL;
    struct gan_trainer_result r;
    ck_assert_msg(gan_trainer_new(&setup, &t, &err) == GAN_OK, "%s", err.message);
    ck_assert_msg(gan_trainer_run(t, &r, &err) == GAN_OK, "%s", err.message);
    ck_assert_int_eq(r.iterations, 20);
    gan_trainer_free(t);
    gan_config_free(cfg);
    snprintf(path, size, "%s/checkpoint.safetensors", dir);
    return path;
}

static const char *train_case(const struct run_case *c, gan_loader *loader, char *path, size_t size)
{
    return train_with(c, NULL, loader, path, size);
}

static gan_grads *open_grads(const char *checkpoint, gan_loader *loader)
{
    static const struct gan_saved_setting one_thread[1] = { { "backend.threads=1", NULL } };
    gan_grads *g = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_grads_open(checkpoint, one_thread, 1, loader, NULL, &g, &err) == GAN_OK,
                  "%s", err.message);
    return g;
}

/* ------------------------------------------------------------------ batches */

static uint32_t lcg_state;
static double lcg_uniform(double lo, double hi)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (double)(lcg_state >> 8) / 16777216.0;
}

/* real around the 8 Gaussians' scale, z roughly standard, α inside (0, 1). */
static void batch_make(struct gan_grads_batch *b, int64_t n, int64_t z_dim, uint32_t seed)
{
    lcg_state = seed;
    b->size = n;
    b->real = malloc((size_t)n * 2 * sizeof *b->real);
    b->z = malloc((size_t)(n * z_dim) * sizeof *b->z);
    b->alpha = malloc((size_t)n * sizeof *b->alpha);
    for (int64_t i = 0; i < 2 * n; i++)
        b->real[i] = (float)lcg_uniform(-1.6, 1.6);
    for (int64_t i = 0; i < n * z_dim; i++)
        b->z[i] = (float)lcg_uniform(-1.7, 1.7);
    for (int64_t i = 0; i < n; i++)
        b->alpha[i] = (float)lcg_uniform(0.05, 0.95);
}

/* One tensor for a batch file, from floats, stored as `dtype` (F32, F64 or F16 bits). */
static void put(gan_st_writer *w, const char *name, enum gan_st_dtype dtype, int ndim,
                const uint64_t *shape, const float *v, void **keep)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++)
        n *= (size_t)shape[d];
    size_t es = gan_st_dtype_size(dtype);
    unsigned char *data = calloc(n ? n : 1, es);
    for (size_t k = 0; k < n; k++) {
        if (dtype == GAN_ST_F64) {
            double x = v[k];
            memcpy(data + 8 * k, &x, 8);
        } else if (dtype == GAN_ST_F32) {
            memcpy(data + 4 * k, &v[k], 4);
        }
    }
    char msg[256];
    ck_assert_msg(gan_st_writer_add(w, name, dtype, ndim, shape, data, n * es, msg, sizeof msg) == GAN_OK,
                  "%s", msg);
    *keep = data;
}

static void write_batch(const char *path, const struct gan_grads_batch *b, int64_t z_dim,
                        enum gan_st_dtype dtype)
{
    gan_st_writer *w = gan_st_writer_new();
    void *keep[3];
    uint64_t rs[2] = { (uint64_t)b->size, 2 }, zs[2] = { (uint64_t)b->size, (uint64_t)z_dim },
             as[2] = { (uint64_t)b->size, 1 };
    put(w, "real", dtype, 2, rs, b->real, &keep[0]);
    put(w, "z", dtype, 2, zs, b->z, &keep[1]);
    put(w, "alpha", dtype, 2, as, b->alpha, &keep[2]);
    char msg[512];
    ck_assert_msg(gan_st_writer_write(w, path, msg, sizeof msg) == GAN_OK, "%s", msg);
    gan_st_writer_free(w);
    for (int i = 0; i < 3; i++)
        free(keep[i]);
}

/* ------------------------------------------------------------------ host reference
 * The mlp model's forward in double, written from its documented architecture: layers
 * fc0 … fcN (weight [out, in], bias [out]), y = x·Wᵀ + b, tanh after every layer but the
 * last. And the critic's input gradient by the chain rule, layer by layer. */

#define HOST_MAX_LAYERS 8
#define HOST_MAX_WIDTH 16

struct host_net {
    int layers;
    int in[HOST_MAX_LAYERS], out[HOST_MAX_LAYERS];
    double w[HOST_MAX_LAYERS][HOST_MAX_WIDTH * HOST_MAX_WIDTH], b[HOST_MAX_LAYERS][HOST_MAX_WIDTH];
};

static void host_net_from(struct host_net *h, gan_net *net)
{
    gan_ctx *ctx = gan_net_ctx(net);
    memset(h, 0, sizeof *h);
    for (int l = 0;; l++) {
        char wn[32], bn[32];
        snprintf(wn, sizeof wn, "fc%d.weight", l);
        snprintf(bn, sizeof bn, "fc%d.bias", l);
        long wi = gan_net_find(net, wn), bi = gan_net_find(net, bn);
        if (wi < 0) {
            ck_assert_int_eq((long)gan_net_count(net), 2 * l);
            break;
        }
        ck_assert_int_ge(bi, 0);
        ck_assert_int_lt(l, HOST_MAX_LAYERS);
        gan_tensor *w = gan_net_tensor(net, (size_t)wi), *b = gan_net_tensor(net, (size_t)bi);
        h->out[l] = (int)gan_tensor_dim(w, 0);
        h->in[l] = (int)gan_tensor_dim(w, 1);
        ck_assert_int_le(h->out[l], HOST_MAX_WIDTH);
        ck_assert_int_le(h->in[l], HOST_MAX_WIDTH);
        float buf[HOST_MAX_WIDTH * HOST_MAX_WIDTH];
        size_t n = (size_t)(h->out[l] * h->in[l]);
        ck_assert_int_eq(gan_tensor_to_host(ctx, w, buf, n), GAN_OK);
        for (size_t k = 0; k < n; k++)
            h->w[l][k] = buf[k];
        ck_assert_int_eq(gan_tensor_to_host(ctx, b, buf, (size_t)h->out[l]), GAN_OK);
        for (int k = 0; k < h->out[l]; k++)
            h->b[l][k] = buf[k];
        h->layers = l + 1;
    }
}

/* y = net(x); with dx non-NULL (a net with one output) also ∂y/∂x. */
static void host_forward(const struct host_net *h, const double *x, double *y, double *dx)
{
    double act[HOST_MAX_LAYERS + 1][HOST_MAX_WIDTH];
    memcpy(act[0], x, (size_t)h->in[0] * sizeof(double));
    for (int l = 0; l < h->layers; l++)
        for (int j = 0; j < h->out[l]; j++) {
            double s = h->b[l][j];
            for (int k = 0; k < h->in[l]; k++)
                s += h->w[l][j * h->in[l] + k] * act[l][k];
            act[l + 1][j] = l + 1 < h->layers ? tanh(s) : s;
        }
    memcpy(y, act[h->layers], (size_t)h->out[h->layers - 1] * sizeof(double));
    if (!dx)
        return;
    /* Back from the single output: u = ∂y/∂(input of layer l). */
    double u[HOST_MAX_WIDTH] = { 1.0 }, v[HOST_MAX_WIDTH];
    for (int l = h->layers - 1; l >= 0; l--) {
        if (l + 1 < h->layers)
            for (int j = 0; j < h->out[l]; j++)
                u[j] *= 1.0 - act[l + 1][j] * act[l + 1][j];
        for (int k = 0; k < h->in[l]; k++) {
            v[k] = 0;
            for (int j = 0; j < h->out[l]; j++)
                v[k] += h->w[l][j * h->in[l] + k] * u[j];
        }
        memcpy(u, v, (size_t)h->in[l] * sizeof(double));
    }
    memcpy(dx, u, (size_t)h->in[0] * sizeof(double));
}

struct host_values {
    double critic, generator, w_distance, penalty, grad_norm;
};

/* WGAN-GP's objectives from their definitions: critic mean D(G(z)) − mean D(real) +
 * λ·mean((‖∇D(x̂)‖ − target)²), x̂ = α·real + (1 − α)·G(z); generator −mean D(G(z)). The
 * norm carries the plugin's documented 1e-12 under the root. */
static void host_values(gan_grads *g, const struct gan_grads_batch *b, double lambda,
                        double target, struct host_values *hv)
{
    struct host_net *gen = malloc(sizeof *gen), *crit = malloc(sizeof *crit);
    host_net_from(gen, gan_grads_net(g, GAN_MODEL_GENERATOR));
    host_net_from(crit, gan_grads_net(g, GAN_MODEL_CRITIC));
    int64_t zd = gan_grads_z_size(g);
    double d_real = 0, d_fake = 0, pen = 0, norms = 0;
    for (int64_t i = 0; i < b->size; i++) {
        double z[HOST_MAX_WIDTH], fake[2], real[2] = { b->real[2 * i], b->real[2 * i + 1] };
        for (int64_t k = 0; k < zd; k++)
            z[k] = b->z[i * zd + k];
        host_forward(gen, z, fake, NULL);
        double y, dx[2];
        host_forward(crit, real, &y, NULL);
        d_real += y;
        host_forward(crit, fake, &y, NULL);
        d_fake += y;
        double a = b->alpha[i], xhat[2] = { a * real[0] + (1 - a) * fake[0],
                                            a * real[1] + (1 - a) * fake[1] };
        host_forward(crit, xhat, &y, dx);
        double norm = sqrt(dx[0] * dx[0] + dx[1] * dx[1] + 1e-12);
        pen += (norm - target) * (norm - target);
        norms += norm;
    }
    double n = (double)b->size;
    hv->w_distance = (d_real - d_fake) / n;
    hv->penalty = pen / n;
    hv->grad_norm = norms / n;
    hv->critic = d_fake / n - d_real / n + lambda * hv->penalty;
    hv->generator = -d_fake / n;
    free(gen);
    free(crit);
}

/* ------------------------------------------------------------------ finite differences */

static double value_of(gan_grads *g, const struct gan_grads_batch *b, const char *name)
{
    static struct gan_grads_values v;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_grads_evaluate(g, b, 0, &v, &err) == GAN_OK, "%s", err.message);
    const struct gan_grads_value *x = gan_grads_find_value(&v, name);
    ck_assert_msg(x, "no %s", name);
    return x->value;
}

/* Every parameter element's gradient as gan_grads_evaluate gives it, flat in the
 * arena's order. */
static float *analytic(gan_grads *g, const struct gan_grads_batch *b, enum gan_model_role role)
{
    static struct gan_grads_values v;
    struct gan_error err;
    gan_error_clear(&err);
    unsigned mask = role == GAN_MODEL_CRITIC ? GAN_LOSS_CRITIC : GAN_LOSS_GENERATOR;
    ck_assert_msg(gan_grads_evaluate(g, b, mask, &v, &err) == GAN_OK, "%s", err.message);
    gan_net *net = gan_grads_net(g, role);
    float *out = malloc((size_t)gan_net_total(net) * sizeof *out);
    for (size_t i = 0; i < gan_net_count(net); i++)
        ck_assert_int_eq(gan_net_grad_to_host(net, i, out + gan_net_offset(net, i),
                                              (size_t)gan_net_numel(net, i)), GAN_OK);
    return out;
}

/* Central differences of `objective` in every parameter element of `role`'s net, with
 * Richardson's extrapolation over steps h and h/2 (error O(h⁴), so that h can be large
 * enough for the FP32 objective's rounding not to matter). */
static double *numeric(gan_grads *g, const struct gan_grads_batch *b, enum gan_model_role role,
                       const char *objective)
{
    gan_net *net = gan_grads_net(g, role);
    gan_ctx *ctx = gan_grads_ctx(g);
    double *out = malloc((size_t)gan_net_total(net) * sizeof *out);
    const double h = 2e-2;
    for (size_t i = 0; i < gan_net_count(net); i++) {
        size_t n = (size_t)gan_net_numel(net, i);
        gan_tensor *p = gan_net_tensor(net, i);
        float *v = malloc(n * sizeof *v);
        ck_assert_int_eq(gan_tensor_to_host(ctx, p, v, n), GAN_OK);
        for (size_t k = 0; k < n; k++) {
            float orig = v[k];
            double d[2];
            for (int r = 0; r < 2; r++) {
                double step = r ? h / 2 : h, f[2], at[2];
                for (int s = 0; s < 2; s++) {
                    v[k] = (float)(orig + (s ? -step : step));
                    at[s] = v[k];
                    ck_assert_int_eq(gan_tensor_set_from_host(ctx, p, v, n), GAN_OK);
                    f[s] = value_of(g, b, objective);
                }
                d[r] = (f[0] - f[1]) / (at[0] - at[1]);
            }
            v[k] = orig;
            out[gan_net_offset(net, i) + (int64_t)k] = (4 * d[1] - d[0]) / 3;
        }
        ck_assert_int_eq(gan_tensor_set_from_host(ctx, p, v, n), GAN_OK);
        free(v);
    }
    return out;
}

/* How far `an` is from `fd`, as a multiple of the tolerance: at most 1 passes. The
 * tolerance is 1e-3 relative to the element plus 1e-4 of the gradient's largest element:
 * the worst element of every case measured 0.05 to 0.26 of it over several batches (the
 * FP32 objective's rounding at h = 2e-2 and h = 1e-2; at h = 4e-2 the truncation of the
 * deep λ = 10 critic already exceeds it), while a gradient 2% off measures over 10. */
static double worst_ratio(const float *an, const double *fd, int64_t n, double scale,
                          int64_t *where)
{
    double worst = 0;
    for (int64_t k = 0; k < n; k++) {
        double tol = 1e-3 * fabs(fd[k]) + 1e-4 * scale;
        double r = fabs(an[k] - fd[k]) / tol;
        if (r > worst) {
            worst = r;
            *where = k;
        }
    }
    return worst;
}

/* Trains case i, dumps its objectives' gradients for `role` and compares each element
 * with finite differences; then shows the comparison is tight enough to catch a 2%
 * error in the gradient, and (for the critic) the gradient at another α. */
static void gradient_case(int i, enum gan_model_role role)
{
    const struct run_case *c = &cases[i];
    gan_loader *loader = test_loader();
    char ckpt[700];
    gan_grads *g = open_grads(train_case(c, loader, ckpt, sizeof ckpt), loader);
    ck_assert_int_eq(gan_grads_z_size(g), c->z_dim);
    struct gan_grads_batch b;
    batch_make(&b, c->batch, c->z_dim, 1000u + (uint32_t)i);
    int critic = role == GAN_MODEL_CRITIC;
    const char *objective = critic ? "loss.critic" : "loss.generator";
    gan_net *net = gan_grads_net(g, role);
    int64_t n = gan_net_total(net);

    float *an = analytic(g, &b, role);
    double *fd = numeric(g, &b, role, objective);
    double scale = 0;
    int64_t nonzero = 0;
    for (int64_t k = 0; k < n; k++) {
        scale = fmax(scale, fabs(fd[k]));
        nonzero += fabs(fd[k]) > 1e-6 * scale;
    }
    /* A vanishing gradient would make any comparison pass. */
    ck_assert_msg(scale > 1e-3, "the %s gradient is degenerate (largest element %g)",
                  critic ? "critic" : "generator", scale);
    ck_assert_msg(nonzero > n / 2, "only %lld of %lld elements are non-zero", (long long)nonzero,
                  (long long)n);
    int64_t at = 0;
    double worst = worst_ratio(an, fd, n, scale, &at);
    ck_assert_msg(worst <= 1.0, "case %d %s: element %lld: dumped %.8g, finite differences %.8g "
                  "(%.2f× the tolerance; largest element %.4g)", i, objective, (long long)at,
                  an[at], fd[at], worst, scale);

    float *off = malloc((size_t)n * sizeof *off);
    for (int64_t k = 0; k < n; k++)
        off[k] = 1.02f * an[k];
    ck_assert_msg(worst_ratio(off, fd, n, scale, &at) > 1.0,
                  "a gradient 2%% off would pass: the tolerance is too loose");
    if (critic) {
        for (int64_t k = 0; k < b.size; k++)
            b.alpha[k] = 1.0f - b.alpha[k];
        float *moved = analytic(g, &b, role);
        ck_assert_msg(worst_ratio(moved, fd, n, scale, &at) > 1.0,
                      "the critic's gradient at another alpha passes too");
        free(moved);
    }
    free(off);
    free(an);
    free(fd);
    gan_grads_batch_free(&b);
    gan_grads_free(g);
    gan_loader_free(loader);
}

START_TEST(test_critic_gradients)
{
    gradient_case(_i, GAN_MODEL_CRITIC);
}
END_TEST

START_TEST(test_generator_gradients)
{
    gradient_case(_i, GAN_MODEL_GENERATOR);
}
END_TEST

/* ------------------------------------------------------------------ values */

static void expect_value(const struct gan_grads_values *v, const char *name, double want)
{
    const struct gan_grads_value *x = gan_grads_find_value(v, name);
    ck_assert_msg(x, "the dump has no %s", name);
    /* FP32 against double: 1e-7 to 2.5e-7 relative measured. */
    ck_assert_msg(fabs(x->value - want) <= 3e-6 * fabs(want) + 1e-7, "%s = %.9g, host %.9g",
                  name, x->value, want);
}

/* loss.* against the host's computation from the same parameters and batch. */
START_TEST(test_values_against_host)
{
    const struct run_case *c = &cases[_i];
    gan_loader *loader = test_loader();
    char ckpt[700];
    gan_grads *g = open_grads(train_case(c, loader, ckpt, sizeof ckpt), loader);
    ck_assert_int_eq(gan_grads_iteration(g), 20);
    struct gan_grads_batch b;
    batch_make(&b, c->batch, c->z_dim, 2000u + (uint32_t)_i);
    struct gan_grads_values v;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_grads_evaluate(g, &b, 0, &v, &err) == GAN_OK, "%s", err.message);
    struct host_values hv;
    host_values(g, &b, c->lambda, c->target, &hv);
    ck_assert_msg(hv.penalty > 1e-3, "the penalty is degenerate: %g", hv.penalty);
    expect_value(&v, "loss.critic", hv.critic);
    expect_value(&v, "loss.generator", hv.generator);
    expect_value(&v, "loss.w_distance", hv.w_distance);
    expect_value(&v, "loss.penalty", hv.penalty);
    expect_value(&v, "loss.grad_norm", hv.grad_norm);
    ck_assert_str_eq(v.items[0].name, "loss.critic");
    ck_assert_str_eq(v.items[1].name, "loss.generator");
    ck_assert_uint_eq(v.count, 5);
    gan_grads_batch_free(&b);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

/* α matters to the critic's objective only, as the penalty is the critic's. */
START_TEST(test_alpha_reaches_the_penalty)
{
    gan_loader *loader = test_loader();
    char ckpt[700];
    gan_grads *g = open_grads(train_case(&cases[0], loader, ckpt, sizeof ckpt), loader);
    struct gan_grads_batch b;
    batch_make(&b, 8, 2, 3u);
    double c1 = value_of(g, &b, "loss.critic"), p1 = value_of(g, &b, "loss.penalty");
    double g1 = value_of(g, &b, "loss.generator"), w1 = value_of(g, &b, "loss.w_distance");
    b.alpha[3] = 0.0f;
    b.alpha[5] = 1.0f;
    double p2 = value_of(g, &b, "loss.penalty");
    ck_assert_msg(p1 != p2, "alpha did not change the penalty (%.9g)", p1);
    ck_assert(c1 != value_of(g, &b, "loss.critic"));
    ck_assert_double_eq(g1, value_of(g, &b, "loss.generator"));
    ck_assert_double_eq(w1, value_of(g, &b, "loss.w_distance"));
    /* The same inputs give the same numbers: nothing is drawn. */
    ck_assert_double_eq(p2, value_of(g, &b, "loss.penalty"));
    gan_grads_batch_free(&b);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ the file */

/* The whole command: the file holds every parameter's gradient under its name and
 * shape, equal to what evaluation gives, each loss value as [1], and its metadata;
 * an F64 batch gives the same file contents as the F32 one; the run folder may be
 * named instead of the checkpoint. */
START_TEST(test_dump_file)
{
    gan_loader *loader = test_loader();
    char ckpt[700], batch_path[700], batch64[700], out[700], out2[700], dir[700];
    train_case(&cases[1], loader, ckpt, sizeof ckpt);
    struct gan_grads_batch b;
    batch_make(&b, 5, 3, 4u);
    write_batch(scratch_path(batch_path, sizeof batch_path, "batch.safetensors"), &b, 3, GAN_ST_F32);
    write_batch(scratch_path(batch64, sizeof batch64, "batch64.safetensors"), &b, 3, GAN_ST_F64);
    scratch_path(out, sizeof out, "grads.safetensors");
    scratch_path(out2, sizeof out2, "grads64.safetensors");

    char *argv[] = { "grads", "--checkpoint", ckpt, "--batch", batch_path, "-o", out,
                     "-s", "backend.threads=1" };
    struct gan_grads_args args;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_grads_parse_args(9, argv, &args, &err) == GAN_OK, "%s", err.message);
    struct gan_grads_report r;
    ck_assert_msg(gan_grads_run(&args, loader, NULL, &r, &err) == GAN_OK, "%s", err.message);
    gan_grads_args_free(&args);
    ck_assert_int_eq(r.iteration, 20);
    ck_assert_int_eq(r.batch_size, 5);
    char batch_opt[800];
    snprintf(batch_opt, sizeof batch_opt, "--batch=%s", batch64);
    scratch_path(dir, sizeof dir, "run");
    char *argv2[] = { "grads", "--checkpoint", dir, batch_opt,
                      "--out", out2 };
    ck_assert_msg(gan_grads_parse_args(6, argv2, &args, &err) == GAN_OK, "%s", err.message);
    struct gan_grads_report r2;
    ck_assert_msg(gan_grads_run(&args, loader, NULL, &r2, &err) == GAN_OK, "%s", err.message);
    gan_grads_args_free(&args);

    /* What the library computes for the same batch. */
    gan_grads *g = open_grads(ckpt, loader);
    struct gan_grads_values v;
    ck_assert_msg(gan_grads_evaluate(g, &b, GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR, &v, &err) == GAN_OK,
                  "%s", err.message);
    char msg[512];
    gan_st_file *f = NULL, *f2 = NULL;
    ck_assert_msg(gan_st_open(out, &f, msg, sizeof msg) == GAN_OK, "%s", msg);
    ck_assert_msg(gan_st_open(out2, &f2, msg, sizeof msg) == GAN_OK, "%s", msg);
    size_t expected = v.count;
    for (int role = GAN_MODEL_GENERATOR; role <= GAN_MODEL_CRITIC; role++) {
        gan_net *net = gan_grads_net(g, (enum gan_model_role)role);
        expected += gan_net_count(net);
        for (size_t i = 0; i < gan_net_count(net); i++) {
            const char *name = gan_net_full_name(net, i);
            ck_assert_msg(strncmp(name, role == GAN_MODEL_CRITIC ? "critic." : "generator.",
                                  role == GAN_MODEL_CRITIC ? 7 : 10) == 0, "%s", name);
            gan_tensor *p = gan_net_tensor(net, i);
            uint64_t shape[GAN_ST_MAX_DIMS];
            for (int d = 0; d < gan_tensor_ndim(p); d++)
                shape[d] = (uint64_t)gan_tensor_dim(p, d);
            const struct gan_st_tensor *t, *t2;
            ck_assert_msg(gan_st_expect(f, name, GAN_ST_F32, gan_tensor_ndim(p), shape, &t, msg,
                                        sizeof msg) == GAN_OK, "%s", msg);
            ck_assert_msg(gan_st_expect(f2, name, GAN_ST_F32, gan_tensor_ndim(p), shape, &t2, msg,
                                        sizeof msg) == GAN_OK, "%s", msg);
            size_t n = (size_t)gan_net_numel(net, i);
            float *want = malloc(n * sizeof *want);
            ck_assert_int_eq(gan_net_grad_to_host(net, i, want, n), GAN_OK);
            ck_assert_msg(memcmp(t->data, want, n * sizeof *want) == 0, "%s differs", name);
            ck_assert_msg(memcmp(t2->data, want, n * sizeof *want) == 0, "%s differs (F64 batch)", name);
            free(want);
        }
    }
    for (size_t i = 0; i < v.count; i++) {
        uint64_t one = 1;
        const struct gan_st_tensor *t;
        ck_assert_msg(gan_st_expect(f, v.items[i].name, GAN_ST_F32, 1, &one, &t, msg, sizeof msg) == GAN_OK,
                      "%s", msg);
        float x;
        memcpy(&x, t->data, 4);
        ck_assert_msg(x == (float)v.items[i].value, "%s: %.9g in the file, %.9g evaluated",
                      v.items[i].name, x, v.items[i].value);
        ck_assert_double_eq(r.values.items[i].value, v.items[i].value);
        ck_assert_double_eq(r2.values.items[i].value, v.items[i].value);
    }
    ck_assert_uint_eq(gan_st_count(f), expected);
    ck_assert_uint_eq(r.critic_tensors + r.generator_tensors + r.values.count, expected);
    ck_assert_str_eq(gan_st_metadata_get(f, "format"), "ganctl-grads");
    ck_assert_str_eq(gan_st_metadata_get(f, "format_version"), "1");
    ck_assert_str_eq(gan_st_metadata_get(f, "iteration"), "20");
    ck_assert_str_eq(gan_st_metadata_get(f, "batch_size"), "5");
    ck_assert_str_eq(gan_st_metadata_get(f, "precision"), "fp32");
    ck_assert_str_eq(gan_st_metadata_get(f, "scale.critic"), "1");
    ck_assert_str_eq(gan_st_metadata_get(f, "scale.generator"), "1");
    ck_assert_str_eq(gan_st_metadata_get(f, "checkpoint"), ckpt);
    ck_assert_str_eq(gan_st_metadata_get(f, "batch"), batch_path);
    ck_assert_str_eq(gan_st_metadata_get(f2, "checkpoint"), ckpt);
    gan_st_close(f);
    gan_st_close(f2);
    gan_grads_free(g);
    gan_grads_batch_free(&b);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ mixed precision */

/* Both gradients, flat (generator's then critic's), and the values, as evaluated now. */
static float *both_gradients(gan_grads *g, const struct gan_grads_batch *b,
                             struct gan_grads_values *v, int64_t *count)
{
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_grads_evaluate(g, b, GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR, v, &err) == GAN_OK,
                  "%s", err.message);
    gan_net *gen = gan_grads_net(g, GAN_MODEL_GENERATOR), *crit = gan_grads_net(g, GAN_MODEL_CRITIC);
    int64_t ng = gan_net_total(gen), n = ng + gan_net_total(crit);
    float *out = malloc((size_t)n * sizeof *out);
    for (int k = 0; k < 2; k++) {
        gan_net *net = k ? crit : gen;
        for (size_t i = 0; i < gan_net_count(net); i++)
            ck_assert_int_eq(gan_net_grad_to_host(net, i, out + (k ? ng : 0) + gan_net_offset(net, i),
                                                  (size_t)gan_net_numel(net, i)), GAN_OK);
    }
    *count = n;
    return out;
}

/* A run trained in FP16 (O2) with a static loss scale: the dump computes under that
 * policy and scale. At scale 1024 its gradients are the FP32 ones to FP16's precision,
 * unscaled, and not bit for bit the FP32 ones; at scale 2^100 the scaled backward
 * overflows FP16, as every step of that run did, while the same step in FP32 is finite. */
START_TEST(test_fp16_policy_and_scale)
{
    static const char *const fp16_1024[] = { "precision.mode=fp16", "scaler.name=static",
                                             "scaler.scale=1024", NULL };
    static const char *const fp16_huge[] = { "precision.mode=fp16", "scaler.name=static",
                                             "scaler.scale=1.2676506002282294e30", NULL };
    gan_loader *loader = test_loader();
    char ckpt[700];
    train_with(&cases[0], _i ? fp16_huge : fp16_1024, loader, ckpt, sizeof ckpt);
    gan_grads *g = open_grads(ckpt, loader);
    ck_assert_str_eq(gan_grads_precision(g), "fp16 O2");
    double scale = _i ? 0x1p100 : 1024.0;
    ck_assert_double_eq(gan_grads_scale(g, GAN_MODEL_CRITIC), scale);
    ck_assert_double_eq(gan_grads_scale(g, GAN_MODEL_GENERATOR), scale);
    struct gan_grads_batch b;
    batch_make(&b, 16, 2, 77u);
    static struct gan_grads_values v16, v32;
    int64_t n, n32;
    float *a16 = both_gradients(g, &b, &v16, &n);
    /* The same step with the policy off. */
    ck_assert_int_eq(gan_ctx_set_precision(gan_grads_ctx(g), GAN_F32, GAN_PRECISION_O2), GAN_OK);
    float *a32 = both_gradients(g, &b, &v32, &n32);
    ck_assert_int_eq(n, n32);
    int64_t nonfinite16 = 0, nonfinite32 = 0, differ = 0;
    double big = 0, worst = 0;
    for (int64_t k = 0; k < n; k++) {
        nonfinite16 += !isfinite(a16[k]);
        nonfinite32 += !isfinite(a32[k]);
        big = fmax(big, fabs(a32[k]));
    }
    ck_assert_int_eq(nonfinite32, 0);
    if (_i) {
        ck_assert_msg(nonfinite16 > 0, "at scale 2^100 no FP16 gradient overflowed");
    } else {
        ck_assert_int_eq(nonfinite16, 0);
        for (int64_t k = 0; k < n; k++) {
            differ += a16[k] != a32[k];
            worst = fmax(worst, fabs(a16[k] - a32[k]) / big);
        }
        /* FP16 keeps 11 bits: 5e-4 per rounding, a few roundings deep; 1.6e-3 measured.
         * Without the unscaling the gradients would be 1024 times too large. */
        ck_assert_msg(worst <= 1e-2, "FP16 gradients off the FP32 ones by %.3g of the largest", worst);
        ck_assert_msg(differ > n / 4, "only %lld of %lld elements differ from FP32: the policy is off",
                      (long long)differ, (long long)n);
        for (size_t i = 0; i < 2; i++) {
            double x16 = v16.items[i].value, x32 = v32.items[i].value;
            /* 2.4e-3 relative measured for loss.critic. */
            ck_assert_msg(x16 != x32 && fabs(x16 - x32) <= 2e-2 * fabs(x32) + 1e-3,
                          "%s: %.9g in FP16, %.9g in FP32", v16.items[i].name, x16, x32);
        }
    }
    free(a16);
    free(a32);
    gan_grads_batch_free(&b);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ refusals */

/* Bad batch files, each with the words its one-line message must hold. */
static const struct {
    const char *what;
    const char *mentions;
} bad_batches[] = {
    { "no real", "the batch has no tensor \"real\"; a batch file holds real [B, 2], z [B, Z] and optionally alpha [B, 1]" },
    { "real with 3 columns", "real is [4, 3]; it must be [B, 2]" },
    { "z with the wrong width", "z is [4, 5]; it must be [4, 2] (generator.z_dim = 2" },
    { "z with other rows", "z is [3, 2]; it must be [4, 2]" },
    { "alpha 1-D", "alpha is [4]; it must be [4, 1]" },
    { "alpha as F16", "alpha is F16; write it as F32 or F64" },
    { "alpha out of range", "alpha[2][0] is 1.5; interpolation weights lie in [0, 1]" },
    { "real not finite", "real[1][0] is nan" },
    { "no z", "the batch has no tensor \"z\"" },
    { "empty real", "real is [0, 2]; it must be [B, 2]" },
};
#define N_BAD_BATCHES ((int)(sizeof bad_batches / sizeof bad_batches[0]))

START_TEST(test_bad_batch)
{
    gan_loader *loader = test_loader();
    char ckpt[700], path[700];
    gan_grads *g = open_grads(train_case(&cases[0], loader, ckpt, sizeof ckpt), loader);
    float v[20];
    for (int k = 0; k < 20; k++)
        v[k] = 0.25f;
    uint64_t r42[2] = { 4, 2 }, r43[2] = { 4, 3 }, r45[2] = { 4, 5 }, r32[2] = { 3, 2 },
             r41[2] = { 4, 1 }, r4[1] = { 4 }, r02[2] = { 0, 2 };
    const uint64_t *real = r42, *z = r42, *alpha = r41;
    int alpha_ndim = 2;
    enum gan_st_dtype alpha_dtype = GAN_ST_F32;
    int skip = -1;
    switch (_i) {
    case 0: skip = 0; break;
    case 1: real = r43; break;
    case 2: z = r45; break;
    case 3: z = r32; break;
    case 4: alpha = r4; alpha_ndim = 1; break;
    case 5: alpha_dtype = GAN_ST_F16; break;
    case 6: break;
    case 7: break;
    case 8: skip = 1; break;
    default: real = r02; break;
    }
    float a[4] = { 0.1f, 0.2f, _i == 6 ? 1.5f : 0.3f, 0.4f };
    float rv[20];
    memcpy(rv, v, sizeof rv);
    if (_i == 7)
        rv[2] = NAN;
    gan_st_writer *w = gan_st_writer_new();
    void *keep[3] = { NULL, NULL, NULL };
    if (skip != 0)
        put(w, "real", GAN_ST_F32, 2, real, rv, &keep[0]);
    if (skip != 1)
        put(w, "z", GAN_ST_F32, 2, z, v, &keep[1]);
    put(w, "alpha", alpha_dtype, alpha_ndim, alpha, a, &keep[2]);
    char msg[512];
    ck_assert(gan_st_writer_write(w, scratch_path(path, sizeof path, "bad.safetensors"), msg,
                                  sizeof msg) == GAN_OK);
    gan_st_writer_free(w);
    for (int k = 0; k < 3; k++)
        free(keep[k]);
    struct gan_grads_batch b;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_grads_read_batch(g, path, &b, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, bad_batches[_i].mentions), "%s: \"%s\" lacks \"%s\"",
                  bad_batches[_i].what, err.message, bad_batches[_i].mentions);
    ck_assert_msg(strstr(err.message, path), "\"%s\" does not name the file", err.message);
    ck_assert_ptr_null(strchr(err.message, '\n'));
    ck_assert_ptr_null(b.real);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

/* Command lines that are mistakes, with what the message must say. */
static const struct {
    int argc;
    const char *argv[8];
    const char *mentions;
} bad_args[] = {
    { 5, { "grads", "--checkpoint", "c", "--batch", "b" }, "--out is missing" },
    { 1, { "grads" }, "--checkpoint is missing" },
    { 2, { "grads", "--checkpoint" }, "option --checkpoint needs a value" },
    { 2, { "grads", "--bogus" }, "unknown option --bogus" },
    { 2, { "grads", "extra" }, "unexpected argument \"extra\"" },
    { 3, { "grads", "-o" , "x" }, "--checkpoint is missing" },
};
#define N_BAD_ARGS ((int)(sizeof bad_args / sizeof bad_args[0]))

START_TEST(test_bad_args)
{
    struct gan_grads_args args;
    struct gan_error err;
    gan_error_clear(&err);
    char *argv[8];
    memcpy(argv, bad_args[_i].argv, sizeof argv);
    ck_assert_int_eq(gan_grads_parse_args(bad_args[_i].argc, argv, &args, &err), GAN_ERR_CONFIG);
    ck_assert_msg(strstr(err.message, bad_args[_i].mentions), "\"%s\" lacks \"%s\"", err.message,
                  bad_args[_i].mentions);
    gan_grads_args_free(&args);
    /* --help needs nothing else. */
    char *help[2] = { "grads", "--help" };
    ck_assert_int_eq(gan_grads_parse_args(2, help, &args, &err), GAN_OK);
    ck_assert_int_eq(args.help, 1);
    gan_grads_args_free(&args);
    ck_assert_ptr_nonnull(strstr(gan_grads_usage(), "--checkpoint FILE"));
}
END_TEST

/* What the checkpoint's configuration fixes cannot be changed; the output may not
 * replace the checkpoint; a file that is not a checkpoint is named. */
START_TEST(test_refused_inputs)
{
    gan_loader *loader = test_loader();
    char ckpt[700], path[700];
    train_case(&cases[0], loader, ckpt, sizeof ckpt);
    struct gan_saved_setting change[1] = { { "critic.model.width=4", NULL } };
    gan_grads *g = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_grads_open(ckpt, change, 1, loader, NULL, &g, &err), GAN_ERR_CONFIG);
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(err.message, "--set critic.model.width=4: ganctl grads computes with the checkpoint's configuration; only backend.* and log.level may be set"),
                  "%s", err.message);
    struct gan_saved_setting nowhere[1] = { { NULL, "nosuchbackend" } };
    ck_assert_int_ne(gan_grads_open(ckpt, nowhere, 1, loader, NULL, &g, &err), GAN_OK);
    ck_assert_msg(strstr(err.message, "nosuchbackend"), "%s", err.message);
    ck_assert_int_eq(gan_grads_open(scratch_path(path, sizeof path, "missing.safetensors"), NULL,
                                    0, loader, NULL, &g, &err), GAN_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.message, path), "%s", err.message);

    g = open_grads(ckpt, loader);
    struct gan_grads_batch b;
    batch_make(&b, 4, 2, 9u);
    struct gan_grads_report r;
    ck_assert_int_eq(gan_grads_dump(g, &b, NULL, ckpt, &r, &err), GAN_ERR_CONFIG);
    ck_assert_msg(strstr(err.message, "is the checkpoint file"), "%s", err.message);
    gan_grads_batch_free(&b);
    /* The checkpoint is intact: it still opens. */
    gan_grads_free(g);
    g = open_grads(ckpt, loader);
    ck_assert_int_eq(gan_grads_read_batch(g, ckpt, &b, &err), GAN_ERR_FORMAT);
    ck_assert_msg(strstr(err.message, "no tensor \"real\""), "%s", err.message);
    gan_grads_batch_free(&b);
    gan_grads_free(g);
    gan_loader_free(loader);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *grads_suite(void)
{
    Suite *s = suite_create("grads");
    TCase *tc = tcase_create("gradients");
    tcase_add_checked_fixture(tc, scratch_setup, test_scratch_remove);
    tcase_add_loop_test(tc, test_critic_gradients, 0, N_CASES);
    tcase_add_loop_test(tc, test_generator_gradients, 0, N_CASES);
    suite_add_tcase(s, tc);

    tc = tcase_create("values");
    tcase_add_checked_fixture(tc, scratch_setup, test_scratch_remove);
    tcase_add_loop_test(tc, test_values_against_host, 0, N_CASES);
    tcase_add_test(tc, test_alpha_reaches_the_penalty);
    tcase_add_test(tc, test_dump_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("precision");
    tcase_add_checked_fixture(tc, scratch_setup, test_scratch_remove);
    tcase_add_loop_test(tc, test_fp16_policy_and_scale, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("refusals");
    tcase_add_checked_fixture(tc, scratch_setup, test_scratch_remove);
    tcase_add_loop_test(tc, test_bad_batch, 0, N_BAD_BATCHES);
    tcase_add_loop_test(tc, test_bad_args, 0, N_BAD_ARGS);
    tcase_add_test(tc, test_refused_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(grads_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
