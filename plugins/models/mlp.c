/* SPDX-License-Identifier: MIT */
/* mlp.c — the model plugin "mlp": fully connected networks, by default the WGAN-GP toy
 * generator (2 → 512 → 512 → 512 → 2) and critic (2 → 512 → 512 → 512 → 1) with ReLU. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

/* Bounds that keep a typo ("width = 5120000") from asking for terabytes. */
#define MLP_MAX_WIDTH 65536
#define MLP_MAX_DEPTH 64

enum mlp_activation { MLP_RELU, MLP_LEAKY_RELU, MLP_TANH };

struct mlp_layer {
    gan_tensor *weight;    /* [out, in], nn.Linear's layout */
    gan_tensor *bias;      /* [out] */
};

struct gan_model {
    const struct gan_host *host;
    enum gan_model_role role;
    enum mlp_activation activation;
    float leaky_slope;
    int depth;                        /* hidden layers; depth + 1 linear layers */
    int64_t in_features, out_features;
    int out_ndim;
    int64_t out_dims[GAN_TENSOR_MAX_DIMS];
    struct mlp_layer *layers;
    char description[256];
};

static const char *const activation_names[] = { "relu", "leaky_relu", "tanh" };

/* ------------------------------------------------------------------ settings */

/* A declared setting's value; a host that fills in no defaults (NOT_FOUND) gets ours. */
/* A declared setting's value. The settings table below holds each default, and the
 * host answers an unset key with it (host.h), so there is no second copy here: a host
 * that answers NOT_FOUND breaks that contract, and creation fails saying so. */
static gan_status read_result(const struct gan_host *host, const char *key, gan_status st,
                              const char *what)
{
    if (st == GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: the host gave no value "
                          "for the setting %s, whose default the model declares", key);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: the setting %s is not %s",
                          key, what);
    return GAN_OK;
}

static gan_status read_int(const struct gan_host *host, const char *key, long long *value)
{
    return read_result(host, key, host->get_int(host->ctx, key, value),
                       "an integer; write a whole number");
}

static gan_status read_float(const struct gan_host *host, const char *key, double *value)
{
    return read_result(host, key, host->get_float(host->ctx, key, value), "a number");
}

static gan_status read_string(const struct gan_host *host, const char *key, const char **value)
{
    gan_status st = host->get_string(host->ctx, key, value);
    if (st == GAN_OK && !*value)
        st = GAN_ERR_INVALID;
    return read_result(host, key, st, "a string; write it in double quotes");
}

/* The product of dims, or -1 when a dimension is below 1 or the product is absurd. */
static int64_t features(int ndim, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 1 || n > INT64_MAX / 16 / dims[d])
            return -1;
        n *= dims[d];
    }
    return n;
}

/* ------------------------------------------------------------------ create */

static void mlp_destroy(gan_model *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m);
}

/* Declares fc{i}.weight and fc{i}.bias for a layer in → out. */
static gan_status declare_layer(gan_model *m, gan_net *net, int i, int64_t in, int64_t out,
                                int torch_init)
{
    char name[48];
    int64_t wdims[2] = { out, in }, bdims[1] = { out };
    /* "he": He-normal weights, zero biases. "torch": nn.Linear's reset_parameters,
     * weight and bias both U(±1/sqrt(in)). */
    struct gan_init winit = { torch_init ? GAN_INIT_TORCH_LINEAR : GAN_INIT_HE_NORMAL, 0.0f };
    struct gan_init binit = { GAN_INIT_ZEROS, 0.0f };
    if (torch_init) {
        binit.kind = GAN_INIT_UNIFORM;
        binit.a = (float)(1.0 / sqrt((double)in));
    }
    snprintf(name, sizeof name, "fc%d.weight", i);
    m->layers[i].weight = gan_net_param(net, name, 2, wdims, winit);
    if (!m->layers[i].weight)
        return GAN_ERR_INVALID;   /* gan_net_param has explained it through the host */
    snprintf(name, sizeof name, "fc%d.bias", i);
    m->layers[i].bias = gan_net_param(net, name, 1, bdims, binit);
    return m->layers[i].bias ? GAN_OK : GAN_ERR_INVALID;
}

static void describe_into(gan_model *m, long long width)
{
    size_t used = 0, size = sizeof m->description;
    used += (size_t)snprintf(m->description, size, "%lld", (long long)m->in_features);
    for (int i = 0; i < m->depth && used < size; i++)
        used += (size_t)snprintf(m->description + used, size - used, " → %lld", width);
    if (used < size)
        used += (size_t)snprintf(m->description + used, size - used, " → %lld, %s",
                                 (long long)m->out_features, activation_names[m->activation]);
    if (used < size && m->activation == MLP_LEAKY_RELU)
        snprintf(m->description + used, size - used, "(%g)", (double)m->leaky_slope);
}

static gan_status mlp_create(const struct gan_host *host, enum gan_model_role role,
                             const struct gan_model_io *io, gan_net *net, gan_model **out)
{
    *out = NULL;
    long long width, depth;
    double slope;
    const char *activation, *init;
    gan_status st;
    if ((st = read_int(host, "width", &width)) != GAN_OK
        || (st = read_int(host, "depth", &depth)) != GAN_OK
        || (st = read_string(host, "activation", &activation)) != GAN_OK
        || (st = read_float(host, "leaky_slope", &slope)) != GAN_OK
        || (st = read_string(host, "init", &init)) != GAN_OK)
        return st;

    if (role != GAN_MODEL_GENERATOR && role != GAN_MODEL_CRITIC)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model mlp: role %d is neither the "
                          "generator nor the critic", (int)role);
    if (width < 1 || width > MLP_MAX_WIDTH)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: width = %lld; set it to the "
                          "size of each hidden layer, 1 to %d (the WGAN-GP toys use 512)",
                          width, MLP_MAX_WIDTH);
    if (depth < 0 || depth > MLP_MAX_DEPTH)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: depth = %lld; set it to the "
                          "number of hidden layers, 0 to %d (the WGAN-GP toys use 3)", depth,
                          MLP_MAX_DEPTH);
    int act = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(activation, activation_names[i]) == 0)
            act = i;
    if (act < 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: activation = \"%s\" is not "
                          "known; use \"relu\", \"leaky_relu\" or \"tanh\"", activation);
    if (!isfinite(slope))
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: leaky_slope = %g; it must "
                          "be a finite number (0.2 is usual)", slope);
    int torch_init;
    if (strcmp(init, "he") == 0)
        torch_init = 0;
    else if (strcmp(init, "torch") == 0)
        torch_init = 1;
    else
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model mlp: init = \"%s\" is not known; "
                          "use \"he\" (He-normal weights, zero biases) or \"torch\" "
                          "(nn.Linear's uniform default)", init);
    /* A batch dimension goes in front of both. */
    if (!io || io->in_ndim < 0 || io->in_ndim > GAN_TENSOR_MAX_DIMS - 1 || io->out_ndim < 0
        || io->out_ndim > GAN_TENSOR_MAX_DIMS - 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model mlp: the core gave no usable "
                          "input/output shapes (each needs 0 to %d sample dimensions)",
                          GAN_TENSOR_MAX_DIMS - 1);
    int64_t in = features(io->in_ndim, io->in_dims), outf = features(io->out_ndim, io->out_dims);
    if (in < 1 || outf < 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model mlp: input or output shape has "
                          "a dimension below 1 (in: %d dims, out: %d dims); every sample "
                          "dimension must be 1 or more", io->in_ndim, io->out_ndim);
    if (role == GAN_MODEL_CRITIC && outf != 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model mlp: a critic maps each sample "
                          "to one score, but the core asked for %lld outputs", (long long)outf);

    gan_model *m = calloc(1, sizeof *m);
    if (!m)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "model mlp: out of memory");
    m->layers = calloc((size_t)depth + 1, sizeof *m->layers);
    if (!m->layers) {
        mlp_destroy(m);
        return host->fail(host->ctx, GAN_ERR_NOMEM, "model mlp: out of memory");
    }
    m->host = host;
    m->role = role;
    m->activation = (enum mlp_activation)act;
    m->leaky_slope = (float)slope;
    m->depth = (int)depth;
    m->in_features = in;
    m->out_features = outf;
    m->out_ndim = io->out_ndim;
    memcpy(m->out_dims, io->out_dims, sizeof m->out_dims);

    int64_t prev = in;
    for (int i = 0; i <= m->depth; i++) {
        int64_t next = i == m->depth ? outf : (int64_t)width;
        if ((st = declare_layer(m, net, i, prev, next, torch_init)) != GAN_OK) {
            mlp_destroy(m);
            return st;
        }
        prev = next;
    }
    describe_into(m, width);
    *out = m;
    return GAN_OK;
}

/* ------------------------------------------------------------------ forward */

static gan_tensor *activate(gan_model *m, gan_ctx *ctx, gan_tensor *h)
{
    switch (m->activation) {
    case MLP_LEAKY_RELU:
        return gan_leaky_relu(ctx, h, m->leaky_slope);
    case MLP_TANH:
        return gan_tanh(ctx, h);
    case MLP_RELU:
    default:
        return gan_relu(ctx, h);
    }
}

/* Layer i, h·Wᵀ + b, in the scope named like its parameters ("fc2"), so that a
 * precision pattern such as "critic.fc3" can keep one layer in FP32. */
static gan_tensor *linear(gan_model *m, gan_ctx *ctx, int i, gan_tensor *h)
{
    char scope[24];
    snprintf(scope, sizeof scope, "fc%d", i);
    if (gan_ctx_scope_push(ctx, scope) != GAN_OK)
        return NULL;
    h = gan_linear(ctx, h, m->layers[i].weight, m->layers[i].bias);
    gan_ctx_scope_pop(ctx);
    return h;
}

/* x [B, sample...] flattened to [B, in]; each layer h·Wᵀ + b; the activation after every
 * hidden layer, none after the output layer; [B, out...] at the end. A wrong sample size
 * fails in the first reshape, whose message names both shapes. */
static gan_tensor *mlp_forward(gan_model *m, gan_ctx *ctx, gan_tensor *x)
{
    if (!x)
        return NULL;
    int64_t batch = gan_tensor_ndim(x) >= 1 ? gan_tensor_dim(x, 0) : 1;
    int64_t flat[2] = { batch, m->in_features };
    gan_tensor *h = x;
    if (gan_tensor_ndim(x) != 2 || gan_tensor_dim(x, 1) != m->in_features)
        h = gan_reshape(ctx, x, 2, flat);
    for (int i = 0; i <= m->depth && h; i++) {
        h = linear(m, ctx, i, h);
        if (i < m->depth)
            h = activate(m, ctx, h);
    }
    if (h && !(m->out_ndim == 1 && m->out_dims[0] == m->out_features)) {
        int64_t dims[GAN_TENSOR_MAX_DIMS];
        dims[0] = batch;
        for (int d = 0; d < m->out_ndim; d++)
            dims[d + 1] = m->out_dims[d];
        h = gan_reshape(ctx, h, m->out_ndim + 1, dims);
    }
    return h;
}

static const char *mlp_describe(gan_model *m)
{
    return m->description;
}

/* Rows never meet: each sample goes through its own products and activations. */
static int mlp_samples_independent(gan_model *m)
{
    (void)m;
    return 1;
}

/* ------------------------------------------------------------------ descriptor */

static const struct gan_model_ops mlp_ops = {
    .struct_size = sizeof(struct gan_model_ops),
    .create = mlp_create,
    .destroy = mlp_destroy,
    .forward = mlp_forward,
    .describe = mlp_describe,
    .samples_independent = mlp_samples_independent,
};

static const struct gan_setting_spec mlp_settings[] = {
    { "width", GAN_SETTING_INT, "512", "units in each hidden layer" },
    { "depth", GAN_SETTING_INT, "3", "number of hidden layers" },
    { "activation", GAN_SETTING_STRING, "\"relu\"",
      "after each hidden layer: \"relu\", \"leaky_relu\" or \"tanh\"" },
    { "leaky_slope", GAN_SETTING_FLOAT, "0.2", "negative slope when activation is leaky_relu" },
    { "init", GAN_SETTING_STRING, "\"he\"",
      "\"he\": He-normal weights, zero biases; \"torch\": nn.Linear's U(±1/sqrt(fan_in))" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin mlp_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_MODEL,
    .name = "mlp",
    .version = PACKAGE_VERSION,
    .summary = "fully connected nets: the WGAN-GP toy generator and critic (2-512-512-512)",
    .ops = &mlp_ops,
    .settings = mlp_settings,
};

GAN_DEFINE_PLUGIN(mlp_descriptor)
