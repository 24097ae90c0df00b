/* SPDX-License-Identifier: MIT */
/* dcgan.c — the model plugin "dcgan": the convolutional generator and critic of the WGAN-GP
 * paper's MNIST experiment, for 28×28 grey images or any C×H×W. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ganctl/ganctl.h>

/* The architecture (DIM = width, depth = 3, the paper's):
 *
 *   critic     x [C, H, W]
 *              conv0 5×5 stride 2 pad 2, C → DIM          28×28 → 14×14
 *              LeakyReLU(leaky_slope)
 *              conv1 5×5 s2 p2, DIM → 2·DIM, [norm1]      14×14 → 7×7
 *              LeakyReLU
 *              conv2 5×5 s2 p2, 2·DIM → 4·DIM, [norm2]    7×7 → 4×4
 *              LeakyReLU
 *              fc0 Linear(4·DIM·4·4 → 1)
 *
 *   generator  z [Z]
 *              fc0 Linear(Z → 4·DIM·4·4), ReLU, reshape [4·DIM, 4, 4]
 *              deconv0 5×5 s2 p2 op0, 4·DIM → 2·DIM, [norm0], ReLU      4 → 7
 *              deconv1 5×5 s2 p2 op1, 2·DIM → DIM,   [norm1], ReLU      7 → 14
 *              deconv2 5×5 s2 p2 op1, DIM → C, tanh                    14 → 28
 *
 * Sizes. A 5×5 stride-2 convolution with padding 2 maps s to floor((s − 1)/2) + 1:
 * 28 → 14 → 7 → 4. The generator retraces the critic's sizes backwards: a transposed
 * convolution with the same kernel, stride and padding maps s to 2s − 1 + output_padding,
 * and output_padding = (target − 1) mod 2 reaches each target exactly: 4 → 7 (op 0),
 * 7 → 14 (op 1), 14 → 28 (op 1). So no crop is needed where the paper's MNIST code crops its
 * 8×8 to 7×7. With `depth` d the same rule runs over d stages, channels doubling per
 * stage from DIM; any H and W work, and each axis gets its own output padding. An image
 * folder's data.size (the core passes [data.channels, S, S]) at depth 3: 32 → 16 → 8 → 4
 * and back with output paddings 1, 1, 1; 64 → 32 → 16 → 8, the same.
 *
 * Parameter names and layouts are PyTorch's, so a checkpoint maps onto nn.Linear
 * (fc0.weight [out, in]), nn.Conv2d (convI.weight [out, in, 5, 5]) and
 * nn.ConvTranspose2d (deconvI.weight [in, out, 5, 5]) modules of the same names, each
 * with a .bias [out].
 *
 * Layer norm (norm = "layer"): each sample's C·H·W values are normalised together,
 * y = (x − mean) / sqrt(var + 1e-5) with the biased variance, then scaled and shifted
 * per channel: normI.weight [C] (starts at 1) and normI.bias [C] (starts at 0). That is
 * torch.nn.GroupNorm(1, C) exactly, and the layer norm of the WGAN-GP code (its
 * Normalize over axes [1, 2, 3] with per-channel offset and scale); LayerNorm([C, H, W])
 * would differ only in having per-element affine parameters. As in the WGAN-GP code's
 * DCGAN critic, the critic's first convolution is not normalised (normI follows convI,
 * I ≥ 1); in the generator normI follows every deconvI but the last. It is built from
 * differentiable ops, so the penalty's double backward runs through it unchanged.
 *
 * Initialisation ("he", the default): weights N(0, 2/fan_in) with fan_in the product of
 * a weight's dimensions after the first (PyTorch's convention, also for the transposed
 * convolutions' [in, out, k, k]), biases 0. "torch": nn.Linear / nn.Conv2d's default,
 * weights and biases U(±1/sqrt(fan_in)). */

#define DCGAN_KERNEL 5
#define DCGAN_STRIDE 2
#define DCGAN_PAD 2
#define DCGAN_NORM_EPS 1e-5f

/* Bounds that keep a typo from asking for terabytes. */
#define DCGAN_MAX_WIDTH 4096
#define DCGAN_MAX_DEPTH 6
#define DCGAN_MAX_CHANNELS 64
#define DCGAN_MAX_SIDE 4096
#define DCGAN_MAX_PARAMS 1000000000.0

enum dcgan_norm { NORM_NONE, NORM_LAYER };
enum dcgan_output { OUT_TANH, OUT_SIGMOID, OUT_NONE };

struct conv_layer {
    gan_tensor *weight, *bias;         /* conv [out, in, 5, 5] or deconv [in, out, 5, 5]; [out] */
    gan_tensor *norm_weight, *norm_bias;   /* [out] each, or NULL */
    int64_t c_in, c_out;
    int64_t h_out, w_out;              /* spatial size of the layer's output */
    int pad_h, pad_w;                  /* output padding (deconvolutions) */
};

struct gan_model {
    enum gan_model_role role;
    enum dcgan_norm norm;
    enum dcgan_output output;
    float leaky_slope;
    int depth;
    int64_t width;
    int64_t z_features;                /* generator input, flattened */
    int64_t channels, height, img_width;   /* the image */
    int64_t top_c, top_h, top_w;       /* the smallest feature map: fc0's side of it */
    int io_ndim;                       /* the image's shape as the core gave it */
    int64_t io_dims[GAN_TENSOR_MAX_DIMS];
    int out_ndim;                      /* the critic's score shape */
    int64_t out_dims[GAN_TENSOR_MAX_DIMS];
    struct conv_layer *layers;
    gan_tensor *fc_weight, *fc_bias;
    char description[320];
};

/* ------------------------------------------------------------------ settings */

/* A declared setting's value. The settings table below holds each default, and the
 * host answers an unset key with it (host.h), so there is no second copy here: a host
 * that answers NOT_FOUND breaks that contract, and creation fails saying so. */
static gan_status read_result(const struct gan_host *host, const char *key, gan_status st,
                              const char *what)
{
    if (st == GAN_ERR_NOT_FOUND)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: the host gave no value "
                          "for the setting %s, whose default the model declares", key);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: the setting %s is not %s",
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

/* ------------------------------------------------------------------ shapes */

/* The spatial size after one 5×5 stride-2 convolution with padding 2. */
static int64_t down(int64_t s)
{
    return (s - 1) / DCGAN_STRIDE + 1;
}

/* The image shape from io's sample dimensions: [C, H, W], or [H, W] with C = 1.
 * Returns 0 when it is neither. */
static int image_shape(int ndim, const int64_t *dims, int64_t *c, int64_t *h, int64_t *w)
{
    if (ndim == 3) {
        *c = dims[0];
        *h = dims[1];
        *w = dims[2];
    } else if (ndim == 2) {
        *c = 1;
        *h = dims[0];
        *w = dims[1];
    } else {
        return 0;
    }
    return *c >= 1 && *c <= DCGAN_MAX_CHANNELS && *h >= 1 && *h <= DCGAN_MAX_SIDE && *w >= 1
           && *w <= DCGAN_MAX_SIDE;
}

static int64_t product(int ndim, const int64_t *dims)
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

static void dcgan_destroy(gan_model *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m);
}

static gan_tensor *param(gan_net *net, const char *layer, int index, const char *what, int ndim,
                         const int64_t *dims, struct gan_init init)
{
    char name[48];
    if (index >= 0)
        snprintf(name, sizeof name, "%s%d.%s", layer, index, what);
    else
        snprintf(name, sizeof name, "%s.%s", layer, what);
    return gan_net_param(net, name, ndim, dims, init);
}

struct inits {
    struct gan_init weight;
    int torch;                         /* biases U(±1/sqrt(fan_in)) instead of 0 */
};

static struct gan_init bias_init(const struct inits *in, int64_t fan_in)
{
    struct gan_init b = { GAN_INIT_ZEROS, 0.0f };
    if (in->torch) {
        b.kind = GAN_INIT_UNIFORM;
        b.a = (float)(1.0 / sqrt((double)fan_in));
    }
    return b;
}

/* Declares a layer's weight and bias (and its norm's, with `normed`) as layer `index`
 * named `kind` ("conv" or "deconv"). */
static gan_status declare_conv(gan_model *m, gan_net *net, const char *kind, int index,
                               struct conv_layer *L, int normed, const struct inits *in)
{
    int transposed = kind[0] == 'd';
    int64_t wd[4] = { transposed ? L->c_in : L->c_out, transposed ? L->c_out : L->c_in,
                      DCGAN_KERNEL, DCGAN_KERNEL };
    int64_t bd[1] = { L->c_out };
    L->weight = param(net, kind, index, "weight", 4, wd, in->weight);
    if (!L->weight)
        return GAN_ERR_INVALID;        /* gan_net_param explained it through the host */
    L->bias = param(net, kind, index, "bias", 1, bd, bias_init(in, wd[1] * wd[2] * wd[3]));
    if (!L->bias)
        return GAN_ERR_INVALID;
    if (normed && m->norm == NORM_LAYER) {
        struct gan_init one = { GAN_INIT_CONSTANT, 1.0f }, zero = { GAN_INIT_ZEROS, 0.0f };
        L->norm_weight = param(net, "norm", index, "weight", 1, bd, one);
        L->norm_bias = L->norm_weight ? param(net, "norm", index, "bias", 1, bd, zero) : NULL;
        if (!L->norm_bias)
            return GAN_ERR_INVALID;
    }
    return GAN_OK;
}

static gan_status declare_fc(gan_model *m, gan_net *net, int64_t in_f, int64_t out_f,
                             const struct inits *in)
{
    int64_t wd[2] = { out_f, in_f }, bd[1] = { out_f };
    m->fc_weight = param(net, "fc", 0, "weight", 2, wd, in->weight);
    m->fc_bias = m->fc_weight ? param(net, "fc", 0, "bias", 1, bd, bias_init(in, in_f)) : NULL;
    return m->fc_bias ? GAN_OK : GAN_ERR_INVALID;
}

static const char *const norm_names[] = { "none", "layer" };
static const char *const output_names[] = { "tanh", "sigmoid", "none" };

static void describe_into(gan_model *m)
{
    size_t used = 0, size = sizeof m->description;
    char *d = m->description;
    if (m->role == GAN_MODEL_GENERATOR) {
        used += (size_t)snprintf(d, size, "%lld → %lld×%lld×%lld", (long long)m->z_features,
                                 (long long)m->top_c, (long long)m->top_h, (long long)m->top_w);
        for (int i = 0; i < m->depth && used < size; i++)
            used += (size_t)snprintf(d + used, size - used, " → %lld×%lld×%lld",
                                     (long long)m->layers[i].c_out, (long long)m->layers[i].h_out,
                                     (long long)m->layers[i].w_out);
        if (used < size)
            used += (size_t)snprintf(d + used, size - used, ", 5×5 stride-2 transposed "
                                     "convolutions, relu, %s", output_names[m->output]);
    } else {
        used += (size_t)snprintf(d, size, "%lld×%lld×%lld", (long long)m->channels,
                                 (long long)m->height, (long long)m->img_width);
        for (int i = 0; i < m->depth && used < size; i++)
            used += (size_t)snprintf(d + used, size - used, " → %lld×%lld×%lld",
                                     (long long)m->layers[i].c_out, (long long)m->layers[i].h_out,
                                     (long long)m->layers[i].w_out);
        if (used < size)
            used += (size_t)snprintf(d + used, size - used, " → 1, 5×5 stride-2 convolutions, "
                                     "leaky_relu(%g)", (double)m->leaky_slope);
    }
    if (used < size && m->norm == NORM_LAYER)
        snprintf(d + used, size - used, ", layer norm");
}

static int pick(const char *value, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return i;
    return -1;
}

static gan_status dcgan_create(const struct gan_host *host, enum gan_model_role role,
                               const struct gan_model_io *io, gan_net *net, gan_model **out)
{
    *out = NULL;
    long long width, depth;
    double slope;
    const char *norm, *output, *init;
    gan_status st;
    if ((st = read_int(host, "width", &width)) != GAN_OK
        || (st = read_int(host, "depth", &depth)) != GAN_OK
        || (st = read_string(host, "norm", &norm)) != GAN_OK
        || (st = read_float(host, "leaky_slope", &slope)) != GAN_OK
        || (st = read_string(host, "output", &output)) != GAN_OK
        || (st = read_string(host, "init", &init)) != GAN_OK)
        return st;

    if (role != GAN_MODEL_GENERATOR && role != GAN_MODEL_CRITIC)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model dcgan: role %d is neither the "
                          "generator nor the critic", (int)role);
    if (width < 1 || width > DCGAN_MAX_WIDTH)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: width = %lld; set it to the "
                          "channels of the first convolution (DIM), 1 to %d (the WGAN-GP "
                          "MNIST nets use 64)", width, DCGAN_MAX_WIDTH);
    if (depth < 1 || depth > DCGAN_MAX_DEPTH)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: depth = %lld; set it to the "
                          "number of stride-2 convolutions, 1 to %d (the WGAN-GP MNIST nets "
                          "use 3)", depth, DCGAN_MAX_DEPTH);
    int norm_kind = pick(norm, norm_names, 2);
    if (norm_kind < 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: norm = \"%s\" is not known; "
                          "use \"none\" or \"layer\" (per-sample layer norm, the WGAN-GP "
                          "paper's advice for a critic; batch norm would break the "
                          "per-sample gradient penalty)", norm);
    if (!isfinite(slope))
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: leaky_slope = %g; it must "
                          "be a finite number (0.2 is the paper's)", slope);
    int out_kind = pick(output, output_names, 3);
    if (out_kind < 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: output = \"%s\" is not "
                          "known; use \"tanh\" (data in [-1, 1]), \"sigmoid\" (data in "
                          "[0, 1]) or \"none\"", output);
    struct inits in;
    if (strcmp(init, "he") == 0) {
        in.weight.kind = GAN_INIT_HE_NORMAL;
        in.torch = 0;
    } else if (strcmp(init, "torch") == 0) {
        in.weight.kind = GAN_INIT_TORCH_LINEAR;
        in.torch = 1;
    } else {
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: init = \"%s\" is not known; "
                          "use \"he\" (He-normal weights, zero biases) or \"torch\" "
                          "(PyTorch's uniform default)", init);
    }
    in.weight.a = 0.0f;

    /* The image is the generator's output and the critic's input. */
    if (!io || io->in_ndim < 0 || io->in_ndim > GAN_TENSOR_MAX_DIMS - 1 || io->out_ndim < 0
        || io->out_ndim > GAN_TENSOR_MAX_DIMS - 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model dcgan: the core gave no usable "
                          "input/output shapes");
    int img_ndim = role == GAN_MODEL_GENERATOR ? io->out_ndim : io->in_ndim;
    const int64_t *img_dims = role == GAN_MODEL_GENERATOR ? io->out_dims : io->in_dims;
    int64_t c, h, w;
    if (!image_shape(img_ndim, img_dims, &c, &h, &w)) {
        char shape[96];
        size_t used = (size_t)snprintf(shape, sizeof shape, "[");
        for (int d = 0; d < img_ndim && used < sizeof shape; d++)
            used += (size_t)snprintf(shape + used, sizeof shape - used, "%s%lld", d ? ", " : "",
                                     (long long)img_dims[d]);
        if (used < sizeof shape)
            snprintf(shape + used, sizeof shape - used, "]");
        return host->fail(host->ctx, GAN_ERR_INVALID, "model dcgan: the %s images of shape "
                          "%s; it needs [C, H, W] or [H, W] with 1 to %d channels and sides "
                          "of 1 to %d (Fashion-MNIST: [1, 28, 28])",
                          role == GAN_MODEL_GENERATOR ? "generator would make" : "critic "
                          "would read", shape, DCGAN_MAX_CHANNELS, DCGAN_MAX_SIDE);
    }
    int64_t other = role == GAN_MODEL_GENERATOR ? product(io->in_ndim, io->in_dims)
                                                : product(io->out_ndim, io->out_dims);
    if (role == GAN_MODEL_GENERATOR && other < 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model dcgan: the generator's input z "
                          "needs at least one dimension of size 1 or more (the paper: 128)");
    if (role == GAN_MODEL_CRITIC && other != 1)
        return host->fail(host->ctx, GAN_ERR_INVALID, "model dcgan: a critic maps each image "
                          "to one score, but the core asked for %lld outputs", (long long)other);

    /* Channels per stage and the parameter count, checked before anything is made. */
    int64_t ch[DCGAN_MAX_DEPTH + 1], hs[DCGAN_MAX_DEPTH + 1], ws[DCGAN_MAX_DEPTH + 1];
    ch[0] = c;
    hs[0] = h;
    ws[0] = w;
    double params = 0;
    for (int i = 1; i <= depth; i++) {
        ch[i] = (int64_t)width << (i - 1);
        hs[i] = down(hs[i - 1]);
        ws[i] = down(ws[i - 1]);
        params += (double)ch[i - 1] * (double)ch[i] * DCGAN_KERNEL * DCGAN_KERNEL;
    }
    double top = (double)ch[depth] * (double)hs[depth] * (double)ws[depth];
    params += top * (role == GAN_MODEL_GENERATOR ? (double)other + 1.0 : 1.0);
    if (params > DCGAN_MAX_PARAMS)
        return host->fail(host->ctx, GAN_ERR_CONFIG, "model dcgan: width %lld, depth %lld on "
                          "%lld×%lld×%lld images would need %.3g parameters; use a smaller "
                          "width or image", width, depth, (long long)c, (long long)h,
                          (long long)w, params);

    gan_model *m = calloc(1, sizeof *m);
    if (m)
        m->layers = calloc((size_t)depth, sizeof *m->layers);
    if (!m || !m->layers) {
        dcgan_destroy(m);
        return host->fail(host->ctx, GAN_ERR_NOMEM, "model dcgan: out of memory");
    }
    m->role = role;
    m->norm = (enum dcgan_norm)norm_kind;
    m->output = (enum dcgan_output)out_kind;
    m->leaky_slope = (float)slope;
    m->depth = (int)depth;
    m->width = width;
    m->channels = c;
    m->height = h;
    m->img_width = w;
    m->top_c = ch[depth];
    m->top_h = hs[depth];
    m->top_w = ws[depth];
    m->io_ndim = img_ndim;
    memcpy(m->io_dims, img_dims, sizeof m->io_dims);
    m->out_ndim = io->out_ndim;
    memcpy(m->out_dims, io->out_dims, sizeof m->out_dims);
    int64_t top_features = m->top_c * m->top_h * m->top_w;

    if (role == GAN_MODEL_CRITIC) {
        for (int i = 0; i < m->depth; i++) {
            struct conv_layer *L = &m->layers[i];
            L->c_in = ch[i];
            L->c_out = ch[i + 1];
            L->h_out = hs[i + 1];
            L->w_out = ws[i + 1];
            if ((st = declare_conv(m, net, "conv", i, L, i > 0, &in)) != GAN_OK)
                break;
        }
        if (st == GAN_OK)
            st = declare_fc(m, net, top_features, 1, &in);
    } else {
        m->z_features = other;
        st = declare_fc(m, net, m->z_features, top_features, &in);
        for (int j = 0; j < m->depth && st == GAN_OK; j++) {
            struct conv_layer *L = &m->layers[j];
            int from = m->depth - j, to = m->depth - j - 1;
            L->c_in = ch[from];
            L->c_out = to == 0 ? c : ch[to];
            L->h_out = hs[to];
            L->w_out = ws[to];
            L->pad_h = (int)((hs[to] - 1) % DCGAN_STRIDE);
            L->pad_w = (int)((ws[to] - 1) % DCGAN_STRIDE);
            st = declare_conv(m, net, "deconv", j, L, j < m->depth - 1, &in);
        }
    }
    if (st != GAN_OK) {
        dcgan_destroy(m);
        return st;
    }
    describe_into(m);
    *out = m;
    return GAN_OK;
}

/* ------------------------------------------------------------------ forward */

/* A per-channel vector [C] as [C, 1, 1], to broadcast over [B, C, H, W]. */
static gan_tensor *per_channel(gan_ctx *ctx, gan_tensor *v, int64_t c)
{
    int64_t dims[3] = { c, 1, 1 };
    return gan_reshape(ctx, v, 3, dims);
}

/* GroupNorm(1, C): each sample's C·H·W values to zero mean and unit (biased) variance,
 * then weight·x̂ + bias per channel. Every step is a recorded op with its own backward
 * in ops, so the penalty can differentiate this twice. */
static gan_tensor *layer_norm(gan_ctx *ctx, gan_tensor *h, const struct conv_layer *L)
{
    if (!h)
        return NULL;
    int64_t b = gan_tensor_dim(h, 0);
    int64_t flat[2] = { b, L->c_out * L->h_out * L->w_out };
    int64_t full[4] = { b, L->c_out, L->h_out, L->w_out };
    gan_tensor *x = gan_reshape(ctx, h, 2, flat);
    gan_tensor *centred = gan_sub(ctx, x, gan_mean(ctx, x, 1, 1));
    gan_tensor *var = gan_mean(ctx, gan_square(ctx, centred), 1, 1);
    gan_tensor *xhat = gan_div(ctx, centred, gan_sqrt(ctx, gan_add_scalar(ctx, var,
                                                                           DCGAN_NORM_EPS)));
    gan_tensor *y = gan_reshape(ctx, xhat, 4, full);
    return gan_add(ctx, gan_mul(ctx, y, per_channel(ctx, L->norm_weight, L->c_out)),
                   per_channel(ctx, L->norm_bias, L->c_out));
}

/* Scopes. Each layer's ops run in a scope named like its parameters ("conv1",
 * "norm1", "fc0"; activations in the network's own), so that a precision pattern
 * such as "critic.norm*" or "critic.conv2" can keep those layers in FP32. */
static int enter(gan_ctx *ctx, const char *kind, int index)
{
    char name[24];
    snprintf(name, sizeof name, "%s%d", kind, index);
    return gan_ctx_scope_push(ctx, name) == GAN_OK;
}

/* x·Wᵀ + b for x [B, in], in scope fc0: one gan_linear, whose GEMM accumulates the
 * product onto the bias rows (one rounding in FP32 and BF16) instead of a product and
 * a separate pass for the bias. */
static gan_tensor *linear(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, gan_tensor *b)
{
    if (!enter(ctx, "fc", 0))
        return NULL;
    gan_tensor *y = gan_linear(ctx, x, w, b);
    gan_ctx_scope_pop(ctx);
    return y;
}

/* What follows a layer's bias directly: nothing (a norm or the output comes next), or
 * its activation. */
enum after_bias { AFTER_NOTHING, AFTER_RELU, AFTER_LEAKY_RELU };

/* Layer L's convolution (or its transpose) and bias, in scope convI (deconvI), and the
 * activation `after` when it follows the bias directly, with the bias in one pass
 * (gan_add_leaky_relu, gan_add_relu). The activation then runs in the layer's scope
 * rather than the network's, with the same dtypes: an FP32 pattern that matches the
 * network matches its layers too, and an FP32 sum stays FP32 in either scope, its
 * gradient too (check_dcgan compares the bits with an FP32 layer). */
static gan_tensor *conv_layer(gan_ctx *ctx, const struct conv_layer *L, int index,
                              int transposed, gan_tensor *h, enum after_bias after,
                              float slope)
{
    if (!enter(ctx, transposed ? "deconv" : "conv", index))
        return NULL;
    gan_tensor *c = transposed
        ? gan_conv2d_transpose_hw(ctx, h, L->weight, DCGAN_STRIDE, DCGAN_PAD, L->pad_h, L->pad_w)
        : gan_conv2d(ctx, h, L->weight, DCGAN_STRIDE, DCGAN_PAD);
    gan_tensor *b = per_channel(ctx, L->bias, L->c_out);
    gan_tensor *y = after == AFTER_NOTHING ? gan_add(ctx, c, b)
                    : after == AFTER_RELU  ? gan_add_relu(ctx, c, b)
                                           : gan_add_leaky_relu(ctx, c, b, slope);
    gan_ctx_scope_pop(ctx);
    return y;
}

/* Layer L's layer norm, in scope normI. */
static gan_tensor *norm_layer(gan_ctx *ctx, const struct conv_layer *L, int index, gan_tensor *h)
{
    if (!enter(ctx, "norm", index))
        return NULL;
    gan_tensor *y = layer_norm(ctx, h, L);
    gan_ctx_scope_pop(ctx);
    return y;
}

/* x as [B, n] (when it holds n values a sample), or NULL with the reason. */
static gan_tensor *as_rows(gan_model *m, gan_ctx *ctx, gan_tensor *x, int64_t n, const char *what)
{
    int64_t batch = gan_tensor_ndim(x) >= 1 ? gan_tensor_dim(x, 0) : 0;
    if (gan_tensor_ndim(x) < 1 || batch < 1 || gan_tensor_numel(x) != batch * n) {
        gan_ctx_fail(ctx, GAN_ERR_INVALID, "model dcgan %s: the input has %lld values for a "
                     "batch of %lld, but each %s has %lld", m->role == GAN_MODEL_CRITIC
                     ? "critic" : "generator", (long long)gan_tensor_numel(x),
                     (long long)batch, what, (long long)n);
        return NULL;
    }
    if (gan_tensor_ndim(x) == 2)
        return x;
    int64_t dims[2] = { batch, n };
    return gan_reshape(ctx, x, 2, dims);
}

/* x as [B, C, H, W] images: x itself when it has that shape already (the generator's
 * images, a batch of the data), else its rows reshaped. A reshape copies (tensors own
 * their buffers) and its backward copies the gradient back, so the images' own shape
 * saves two copies each way; the values are the same. */
static gan_tensor *as_images(gan_model *m, gan_ctx *ctx, gan_tensor *x)
{
    if (x && gan_tensor_ndim(x) == 4 && gan_tensor_dim(x, 0) >= 1 &&
        gan_tensor_dim(x, 1) == m->channels && gan_tensor_dim(x, 2) == m->height &&
        gan_tensor_dim(x, 3) == m->img_width)
        return x;
    gan_tensor *h = as_rows(m, ctx, x, m->channels * m->height * m->img_width, "image");
    if (!h)
        return NULL;
    int64_t img[4] = { gan_tensor_dim(h, 0), m->channels, m->height, m->img_width };
    return gan_reshape(ctx, h, 4, img);
}

static gan_tensor *critic_forward(gan_model *m, gan_ctx *ctx, gan_tensor *x)
{
    gan_tensor *h = as_images(m, ctx, x);
    if (!h)
        return NULL;
    int64_t batch = gan_tensor_dim(h, 0);
    for (int i = 0; i < m->depth; i++) {
        const struct conv_layer *L = &m->layers[i];
        h = conv_layer(ctx, L, i, 0, h, L->norm_weight ? AFTER_NOTHING : AFTER_LEAKY_RELU,
                       m->leaky_slope);
        if (L->norm_weight)
            h = gan_leaky_relu(ctx, norm_layer(ctx, L, i, h), m->leaky_slope);
    }
    int64_t flat[2] = { batch, m->top_c * m->top_h * m->top_w };
    h = linear(ctx, gan_reshape(ctx, h, 2, flat), m->fc_weight, m->fc_bias);
    if (h && !(m->out_ndim == 1 && m->out_dims[0] == 1)) {
        int64_t dims[GAN_TENSOR_MAX_DIMS];
        dims[0] = batch;
        for (int d = 0; d < m->out_ndim; d++)
            dims[d + 1] = m->out_dims[d];
        h = gan_reshape(ctx, h, m->out_ndim + 1, dims);
    }
    return h;
}

static gan_tensor *generator_forward(gan_model *m, gan_ctx *ctx, gan_tensor *z)
{
    gan_tensor *h = as_rows(m, ctx, z, m->z_features, "z");
    if (!h)
        return NULL;
    int64_t batch = gan_tensor_dim(h, 0);
    int64_t top[4] = { batch, m->top_c, m->top_h, m->top_w };
    h = gan_reshape(ctx, gan_relu(ctx, linear(ctx, h, m->fc_weight, m->fc_bias)), 4, top);
    for (int j = 0; j < m->depth; j++) {
        const struct conv_layer *L = &m->layers[j];
        const int last = j == m->depth - 1;
        h = conv_layer(ctx, L, j, 1, h, last || L->norm_weight ? AFTER_NOTHING : AFTER_RELU,
                       0.0f);
        if (!last && L->norm_weight)
            h = gan_relu(ctx, norm_layer(ctx, L, j, h));
    }
    if (m->output == OUT_TANH)
        h = gan_tanh(ctx, h);
    else if (m->output == OUT_SIGMOID)
        h = gan_sigmoid(ctx, h);
    if (h && m->io_ndim != 3) {
        int64_t dims[GAN_TENSOR_MAX_DIMS];
        dims[0] = batch;
        for (int d = 0; d < m->io_ndim; d++)
            dims[d + 1] = m->io_dims[d];
        h = gan_reshape(ctx, h, m->io_ndim + 1, dims);
    }
    return h;
}

static gan_tensor *dcgan_forward(gan_model *m, gan_ctx *ctx, gan_tensor *x)
{
    if (!x)
        return NULL;
    return m->role == GAN_MODEL_CRITIC ? critic_forward(m, ctx, x) : generator_forward(m, ctx, x);
}

static const char *dcgan_describe(gan_model *m)
{
    return m->description;
}

/* Each sample is convolved and normalised on its own: the layer norm's statistics are
 * one sample's C·H·W values, never the batch's. */
static int dcgan_samples_independent(gan_model *m)
{
    (void)m;
    return 1;
}

/* ------------------------------------------------------------------ descriptor */

/* Convolutions forward and back; a transposed convolution's forward is the
 * convolution's backward over the data, its backward the other two. */
static const char *const dcgan_backend_slots[] = {
    "conv2d_forward", "conv2d_backward_data", "conv2d_backward_filter", NULL
};

static const struct gan_model_ops dcgan_ops = {
    .struct_size = sizeof(struct gan_model_ops),
    .create = dcgan_create,
    .destroy = dcgan_destroy,
    .forward = dcgan_forward,
    .describe = dcgan_describe,
    .samples_independent = dcgan_samples_independent,
    .backend_slots = dcgan_backend_slots,
};

static const struct gan_setting_spec dcgan_settings[] = {
    { "width", GAN_SETTING_INT, "64", "channels of the first convolution (DIM); doubling per "
      "stage" },
    { "depth", GAN_SETTING_INT, "3", "stride-2 5×5 convolutions (28 → 14 → 7 → 4 at 3)" },
    { "norm", GAN_SETTING_STRING, "\"none\"",
      "\"none\" or \"layer\": per-sample layer norm (GroupNorm(1, C)) after each hidden "
      "convolution but the critic's first" },
    { "leaky_slope", GAN_SETTING_FLOAT, "0.2", "negative slope of the critic's leaky ReLU" },
    { "output", GAN_SETTING_STRING, "\"tanh\"",
      "the generator's last activation: \"tanh\" ([-1, 1]), \"sigmoid\" ([0, 1]) or \"none\"" },
    { "init", GAN_SETTING_STRING, "\"he\"",
      "\"he\": He-normal weights, zero biases; \"torch\": PyTorch's U(±1/sqrt(fan_in))" },
    { NULL, 0, NULL, NULL },
};

static const struct gan_plugin dcgan_descriptor = {
    GAN_PLUGIN_HEADER,
    .kind = GAN_PLUGIN_MODEL,
    .name = "dcgan",
    .version = PACKAGE_VERSION,
    .summary = "convolutional nets for 28×28 images: the WGAN-GP paper's MNIST generator "
               "and critic",
    .ops = &dcgan_ops,
    .settings = dcgan_settings,
};

GAN_DEFINE_PLUGIN(dcgan_descriptor)
