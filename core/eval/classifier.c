/* SPDX-License-Identifier: MIT */
/* classifier.c — the Fashion-MNIST MLP of the Fréchet distance: its parameters, forward pass,
 * training with host-side softmax cross-entropy and the core's autograd, features, file format. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eval/classifier.h"
#include "nn/net.h"
#include "nn/optimizer.h"
#include "io/safetensors/safetensors.h"
#include "tensor/tensor_core.h"

#define LAYERS 3

static const int64_t layer_in[LAYERS] = { GAN_CLASSIFIER_INPUT, GAN_CLASSIFIER_HIDDEN,
                                          GAN_CLASSIFIER_FEATURES };
static const int64_t layer_out[LAYERS] = { GAN_CLASSIFIER_HIDDEN, GAN_CLASSIFIER_FEATURES,
                                           GAN_CLASSIFIER_CLASSES };
#define LAYERS_TEXT "784,256,128,10"

/* Images per forward pass when only features or predictions are wanted: big enough for
 * GEMM to run near its peak, small enough to keep the step's buffers a few MB. */
#define INFER_BATCH 500

struct gan_classifier {
    gan_ctx *ctx;                 /* private: FP32, its own tape and pool */
    gan_net *net;
    gan_tensor *w[LAYERS], *b[LAYERS];
    uint64_t seed;
    int epochs;
    size_t train_images;
    double accuracy;
    double train_seconds;
    char data_dir[1024];
};

uint64_t gan_classifier_seed(const gan_classifier *c) { return c->seed; }
int gan_classifier_epochs(const gan_classifier *c) { return c->epochs; }
size_t gan_classifier_train_images(const gan_classifier *c) { return c->train_images; }
double gan_classifier_accuracy(const gan_classifier *c) { return c->accuracy; }
double gan_classifier_train_seconds(const gan_classifier *c) { return c->train_seconds; }
const char *gan_classifier_data_dir(const gan_classifier *c) { return c->data_dir; }

/* The context's first failure as the caller's error, naming what was being done. */
static gan_status ctx_fail(gan_classifier *c, struct gan_error *err, const char *doing)
{
    gan_status st = gan_ctx_status(c->ctx);
    if (st == GAN_OK)
        st = GAN_ERR_INTERNAL;
    gan_error_set(err, st, "classifier: %s: %s", doing, gan_ctx_error(c->ctx));
    gan_ctx_clear_error(c->ctx);
    gan_ctx_step_end(c->ctx);
    return st;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gan_classifier_free(gan_classifier *c)
{
    if (!c)
        return;
    gan_net_free(c->net);
    gan_ctx_free(c->ctx);
    free(c);
}

/* The context and the declared (not yet initialised) parameters. */
static gan_status make(gan_ctx *outer, gan_classifier **out, struct gan_error *err)
{
    *out = NULL;
    gan_classifier *c = calloc(1, sizeof *c);
    if (!c)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the classifier");
    c->accuracy = NAN;
    c->train_seconds = NAN;
    if (gan_ctx_new(gan_ctx_backend_ops(outer), gan_ctx_backend(outer), &c->ctx) != GAN_OK) {
        free(c);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the classifier's context");
    }
    gan_ctx_set_backend_abi_minor(c->ctx, gan_ctx_backend_abi_minor(outer));
    if (gan_net_new(c->ctx, "classifier", &c->net) != GAN_OK) {
        gan_status st = ctx_fail(c, err, "making its parameter arena");
        gan_classifier_free(c);
        return st;
    }
    for (int l = 0; l < LAYERS; l++) {
        char name[32];
        int64_t wd[2] = { layer_out[l], layer_in[l] }, bd[1] = { layer_out[l] };
        /* torch.nn.Linear's initialisation: both from U(±1/√fan_in), fan_in the layer's
         * inputs (the bias's own shape would give fan_in 1). */
        struct gan_init init = { GAN_INIT_UNIFORM, (float)(1.0 / sqrt((double)layer_in[l])) };
        snprintf(name, sizeof name, "fc%d.weight", l);
        c->w[l] = gan_net_param(c->net, name, 2, wd, init);
        snprintf(name, sizeof name, "fc%d.bias", l);
        c->b[l] = gan_net_param(c->net, name, 1, bd, init);
        if (!c->w[l] || !c->b[l]) {
            gan_status st = ctx_fail(c, err, "declaring its parameters");
            gan_classifier_free(c);
            return st;
        }
    }
    *out = c;
    return GAN_OK;
}

gan_status gan_classifier_new(gan_ctx *ctx, uint64_t seed, gan_classifier **out,
                              struct gan_error *err)
{
    gan_status st = make(ctx, out, err);
    if (st != GAN_OK)
        return st;
    gan_classifier *c = *out;
    c->seed = seed;
    uint64_t offset = 0;
    if (gan_net_init(c->net, seed, &offset) != GAN_OK) {
        st = ctx_fail(c, err, "initialising its parameters");
        gan_classifier_free(c);
        *out = NULL;
    }
    return st;
}

/* The logits of x [B, 784]; the features (second layer's ReLU) into *features unless NULL. */
static gan_tensor *forward(gan_classifier *c, gan_tensor *x, gan_tensor **features)
{
    gan_tensor *h = x;
    for (int l = 0; l < LAYERS; l++) {
        /* w [out, in] as nn.Linear (and the file) stores it; one op, the bias under the
         * GEMM's FP32 accumulator */
        h = gan_linear(c->ctx, h, c->w[l], c->b[l]);
        if (l < LAYERS - 1)
            h = gan_relu(c->ctx, h);
        if (l == 1 && features)
            *features = h;
    }
    return h;
}

/* The images (and labels) at positions idx[0 … n − 1] of `data`. */
static void gather(const struct gan_classifier_data *data, const uint32_t *idx, size_t n,
                   float *images, int *labels)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = idx ? idx[i] : i;
        float *dst = images + i * GAN_IMAGE_PIXELS;
        if (data->set) {
            const unsigned char *raw = gan_image_set_raw(data->set, k);
            for (size_t p = 0; p < GAN_IMAGE_PIXELS; p++)
                dst[p] = gan_image_pixel_value(raw[p]);
            if (labels)
                labels[i] = gan_image_set_label(data->set, k);
        } else {
            memcpy(dst, data->images + k * GAN_IMAGE_PIXELS, GAN_IMAGE_PIXELS * sizeof *dst);
            if (labels)
                labels[i] = data->labels[k];
        }
    }
}

static gan_status data_count(const struct gan_classifier_data *data, size_t *n,
                             struct gan_error *err)
{
    if (data->set) {
        size_t have = gan_image_set_count(data->set);
        *n = data->count && data->count < have ? data->count : have;
    } else {
        if (!data->images || !data->labels)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "classifier: the data has neither an image set nor arrays");
        *n = data->count;
    }
    if (*n == 0)
        return gan_error_set(err, GAN_ERR_INVALID, "classifier: the data holds no images");
    for (size_t i = 0; !data->set && i < *n; i++)
        if (data->labels[i] < 0 || data->labels[i] >= GAN_CLASSIFIER_CLASSES)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "classifier: label %zu is %d; labels must be 0 … %d", i,
                                 data->labels[i], GAN_CLASSIFIER_CLASSES - 1);
    return GAN_OK;
}

/* Softmax cross-entropy of one batch of logits: adds the summed loss and the correct
 * predictions, and writes ∂(mean loss)/∂logits into `seed`. */
static void cross_entropy(const float *logits, const int *labels, size_t n, float *seed,
                          double *loss, size_t *correct)
{
    for (size_t i = 0; i < n; i++) {
        const float *z = logits + i * GAN_CLASSIFIER_CLASSES;
        float *g = seed + i * GAN_CLASSIFIER_CLASSES;
        int best = 0;
        double zmax = z[0];
        for (int k = 1; k < GAN_CLASSIFIER_CLASSES; k++)
            if (z[k] > zmax) {
                zmax = z[k];
                best = k;
            }
        /* Shifted by the largest logit so that exp cannot overflow. */
        double sum = 0;
        for (int k = 0; k < GAN_CLASSIFIER_CLASSES; k++)
            sum += exp((double)z[k] - zmax);
        *loss += log(sum) + zmax - (double)z[labels[i]];
        *correct += best == labels[i];
        for (int k = 0; k < GAN_CLASSIFIER_CLASSES; k++) {
            double p = exp((double)z[k] - zmax) / sum;
            g[k] = (float)((p - (k == labels[i])) / (double)n);
        }
    }
}

/* The host buffers of one training batch, allocated once for the whole training. */
struct batch_buffers {
    float *images;   /* [B, GAN_IMAGE_PIXELS] */
    float *logits;   /* [B, classes] */
    float *seed;     /* [B, classes]: ∂(mean loss)/∂logits, the backward pass's seed */
    int *labels;     /* [B] */
};

/* One Adam step on the batch of training images at order[0 … B-1]: adds its summed
 * loss and correct predictions. A non-finite loss stops the training before the step
 * would spread it into the parameters. */
static gan_status train_batch(gan_classifier *c, const struct gan_classifier_data *train,
                              gan_optimizer *opt, const uint32_t *order,
                              struct batch_buffers *b, int e, double *loss, size_t *correct,
                              struct gan_error *err)
{
    const size_t B = GAN_CLASSIFIER_BATCH;
    const int64_t xd[2] = { (int64_t)B, GAN_IMAGE_PIXELS };
    const int64_t gd[2] = { (int64_t)B, GAN_CLASSIFIER_CLASSES };
    gather(train, order, B, b->images, b->labels);
    gan_tensor *x = gan_tensor_from_host(c->ctx, GAN_F32, 2, xd, b->images);
    gan_tensor *z = forward(c, x, NULL);
    if (!z || gan_tensor_to_host(c->ctx, z, b->logits, B * GAN_CLASSIFIER_CLASSES) != GAN_OK)
        return ctx_fail(c, err, "forward pass");
    cross_entropy(b->logits, b->labels, B, b->seed, loss, correct);
    if (!isfinite(*loss))
        return gan_error_set(err, GAN_ERR_NUMERIC,
                             "classifier: the loss became %g in epoch %d; the data holds non-finite or wildly scaled values",
                             *loss, e + 1);
    gan_tensor *s = gan_tensor_from_host(c->ctx, GAN_F32, 2, gd, b->seed);
    if (!s || gan_net_zero_grads(c->net) != GAN_OK
        || gan_net_backward(c->net, z, s) != GAN_OK
        || gan_optimizer_step(opt, NULL) != GAN_OK)
        return ctx_fail(c, err, "training step");
    gan_ctx_step_end(c->ctx);
    return GAN_OK;
}

gan_status gan_classifier_train(gan_classifier *c, const struct gan_classifier_data *train,
                                int epochs, gan_classifier_progress_fn progress, void *arg,
                                struct gan_error *err)
{
    size_t n;
    gan_status st = data_count(train, &n, err);
    if (st != GAN_OK)
        return st;
    if (epochs < 1)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "classifier: %d epochs; train for at least 1", epochs);
    if (n < GAN_CLASSIFIER_BATCH)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "classifier: %zu training images are fewer than one batch of %d",
                             n, GAN_CLASSIFIER_BATCH);
    const size_t B = GAN_CLASSIFIER_BATCH;
    uint32_t *order = malloc(n * sizeof *order);
    struct batch_buffers b;
    b.images = malloc(B * GAN_IMAGE_PIXELS * sizeof *b.images);
    b.logits = malloc(B * GAN_CLASSIFIER_CLASSES * sizeof *b.logits);
    b.seed = malloc(B * GAN_CLASSIFIER_CLASSES * sizeof *b.seed);
    b.labels = malloc(B * sizeof *b.labels);
    gan_optimizer *opt = NULL;
    struct gan_adam_settings adam = { .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8 };
    if (!order || !b.images || !b.logits || !b.seed || !b.labels) {
        st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory while training the classifier");
        goto done;
    }
    if (gan_optimizer_new(c->net, &adam, &opt) != GAN_OK) {
        st = ctx_fail(c, err, "making its optimizer");
        goto done;
    }
    double start = now_seconds();
    for (int e = 0; e < epochs && st == GAN_OK; e++) {
        gan_image_shuffle(c->seed, (uint64_t)e, order, n);
        double loss = 0;
        size_t correct = 0, seen = 0;
        /* Whole batches only, as the GAN's sampler reads them. */
        for (size_t first = 0; first + B <= n; first += B) {
            st = train_batch(c, train, opt, order + first, &b, e, &loss, &correct, err);
            if (st != GAN_OK)
                break;
            seen += B;
        }
        if (st != GAN_OK)
            break;
        c->epochs = e + 1;
        c->train_images = n;
        c->train_seconds = now_seconds() - start;
        if (progress) {
            struct gan_classifier_epoch ep = { e + 1, epochs, loss / (double)seen,
                                               (double)correct / (double)seen, c->train_seconds };
            progress(arg, &ep);
        }
    }
    if (st == GAN_OK && train->set)
        snprintf(c->data_dir, sizeof c->data_dir, "%s", gan_image_set_dir(train->set));
done:
    gan_optimizer_free(opt);
    free(order);
    free(b.images);
    free(b.logits);
    free(b.seed);
    free(b.labels);
    return st;
}

/* Forward passes over `data` (or over n raw images), INFER_BATCH at a time, with no tape:
 * features into `features` and/or logits into `logits`, n rows each. */
static gan_status infer(gan_classifier *c, const struct gan_classifier_data *data,
                        const float *raw, size_t n, float *features, float *logits,
                        struct gan_error *err)
{
    float *images = NULL;
    if (data && !(images = malloc(INFER_BATCH * GAN_IMAGE_PIXELS * sizeof *images)))
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the classifier's inputs");
    uint32_t *idx = malloc(INFER_BATCH * sizeof *idx);
    if (!idx) {
        free(images);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the classifier's inputs");
    }
    gan_status st = GAN_OK;
    gan_ctx_no_grad_push(c->ctx);
    for (size_t first = 0; first < n; first += INFER_BATCH) {
        size_t b = n - first < INFER_BATCH ? n - first : INFER_BATCH;
        const float *src;
        if (data) {
            for (size_t i = 0; i < b; i++)
                idx[i] = (uint32_t)(first + i);
            gather(data, idx, b, images, NULL);
            src = images;
        } else {
            src = raw + first * GAN_IMAGE_PIXELS;
        }
        const int64_t xd[2] = { (int64_t)b, GAN_IMAGE_PIXELS };
        gan_tensor *feat = NULL;
        gan_tensor *x = gan_tensor_from_host(c->ctx, GAN_F32, 2, xd, src);
        gan_tensor *z = forward(c, x, &feat);
        if (!z || (features && gan_tensor_to_host(c->ctx, feat, features + first * GAN_CLASSIFIER_FEATURES,
                                                  b * GAN_CLASSIFIER_FEATURES) != GAN_OK)
            || (logits && gan_tensor_to_host(c->ctx, z, logits + first * GAN_CLASSIFIER_CLASSES,
                                             b * GAN_CLASSIFIER_CLASSES) != GAN_OK)) {
            st = ctx_fail(c, err, "forward pass");
            break;
        }
        gan_ctx_step_end(c->ctx);
    }
    gan_ctx_no_grad_pop(c->ctx);
    free(images);
    free(idx);
    return st;
}

gan_status gan_classifier_features(gan_classifier *c, const float *images, size_t n,
                                   float *features, struct gan_error *err)
{
    return infer(c, NULL, images, n, features, NULL, err);
}

gan_status gan_classifier_evaluate(gan_classifier *c, const struct gan_classifier_data *data,
                                   double *accuracy, struct gan_error *err)
{
    size_t n;
    gan_status st = data_count(data, &n, err);
    if (st != GAN_OK)
        return st;
    float *logits = malloc(n * GAN_CLASSIFIER_CLASSES * sizeof *logits);
    if (!logits)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the classifier's outputs");
    st = infer(c, data, NULL, n, NULL, logits, err);
    if (st == GAN_OK) {
        size_t correct = 0;
        for (size_t i = 0; i < n; i++) {
            const float *z = logits + i * GAN_CLASSIFIER_CLASSES;
            int best = 0;
            for (int k = 1; k < GAN_CLASSIFIER_CLASSES; k++)
                if (z[k] > z[best])
                    best = k;
            int label = data->set ? gan_image_set_label(data->set, i) : data->labels[i];
            correct += best == label;
        }
        c->accuracy = (double)correct / (double)n;
        *accuracy = c->accuracy;
    }
    free(logits);
    return st;
}

/* ------------------------------------------------------------------ the file */

gan_status gan_classifier_save(const gan_classifier *c, const char *path, const char *data_dir,
                               struct gan_error *err)
{
    gan_classifier *m = (gan_classifier *)c;   /* reading values out changes nothing */
    size_t count = gan_net_count(m->net);
    float *values[2 * LAYERS] = { NULL };
    char msg[512] = "";
    gan_status st = GAN_OK;
    gan_st_writer *w = gan_st_writer_new();
    if (!w)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while saving the classifier");
    for (size_t i = 0; i < count && st == GAN_OK; i++) {
        gan_tensor *t = gan_net_tensor(m->net, i);
        size_t numel = (size_t)gan_tensor_numel(t);
        uint64_t shape[2];
        int ndim = gan_tensor_ndim(t);
        for (int k = 0; k < ndim; k++)
            shape[k] = (uint64_t)gan_tensor_dim(t, k);
        if (!(values[i] = malloc(numel * sizeof *values[i])))
            st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory while saving the classifier");
        else if (gan_tensor_to_host(m->ctx, t, values[i], numel) != GAN_OK)
            st = ctx_fail(m, err, "reading its parameters");
        else if ((st = gan_st_writer_add(w, gan_net_name(m->net, i), GAN_ST_F32, ndim, shape,
                                         values[i], numel * sizeof(float), msg, sizeof msg)) != GAN_OK)
            gan_error_set(err, st, "saving the classifier: %s", msg);
    }
    char seed[32], epochs[32], images[32], acc[32], secs[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    snprintf(epochs, sizeof epochs, "%d", c->epochs);
    snprintf(images, sizeof images, "%zu", c->train_images);
    snprintf(acc, sizeof acc, "%.6f", c->accuracy);
    snprintf(secs, sizeof secs, "%.3f", c->train_seconds);
    const char *dir = data_dir && *data_dir ? data_dir : c->data_dir;
    const char *meta[][2] = {
        { "format", GAN_CLASSIFIER_FORMAT }, { "format_version", GAN_CLASSIFIER_VERSION },
        { "layers", LAYERS_TEXT }, { "seed", seed }, { "epochs", epochs },
        { "train_images", images }, { "test_accuracy", acc }, { "train_seconds", secs },
        { "data", dir }, { "ganctl_version", PACKAGE_VERSION },
    };
    for (size_t k = 0; k < sizeof meta / sizeof meta[0] && st == GAN_OK; k++)
        if ((st = gan_st_writer_set_metadata(w, meta[k][0], meta[k][1], msg, sizeof msg)) != GAN_OK)
            gan_error_set(err, st, "saving the classifier: %s", msg);
    if (st == GAN_OK && (st = gan_st_writer_write(w, path, msg, sizeof msg)) != GAN_OK)
        gan_error_set(err, st, "saving the classifier: %s; choose a writable path", msg);
    gan_st_writer_free(w);
    for (size_t i = 0; i < 2 * LAYERS; i++)
        free(values[i]);
    return st;
}

/* A metadata number, or `fallback` when it is absent or not a number. */
static double meta_number(const gan_st_file *f, const char *key, double fallback)
{
    const char *v = gan_st_metadata_get(f, key);
    char *end;
    if (!v || !*v)
        return fallback;
    double x = strtod(v, &end);
    return *end ? fallback : x;
}

gan_status gan_classifier_load(gan_ctx *ctx, const char *path, gan_classifier **out,
                               struct gan_error *err)
{
    *out = NULL;
    char msg[512] = "";
    gan_st_file *f = NULL;
    gan_status st = gan_st_open(path, &f, msg, sizeof msg);
    if (st != GAN_OK)
        return gan_error_set(err, st, "loading the classifier: %s; make one with ganctl classifier --out %s",
                             msg, path);
    const char *format = gan_st_metadata_get(f, "format");
    const char *layers = gan_st_metadata_get(f, "layers");
    if (!format || strcmp(format, GAN_CLASSIFIER_FORMAT) != 0 || !layers
        || strcmp(layers, LAYERS_TEXT) != 0) {
        /* format and layers point into f: the message is made before f is closed. */
        st = gan_error_set(err, GAN_ERR_FORMAT,
                           "%s is not a ganctl classifier of layers %s (format \"%s\", layers \"%s\"); make one with ganctl classifier --out FILE",
                           path, LAYERS_TEXT, format ? format : "", layers ? layers : "");
        gan_st_close(f);
        return st;
    }
    gan_classifier *c = NULL;
    st = make(ctx, &c, err);
    for (size_t i = 0; st == GAN_OK && i < gan_net_count(c->net); i++) {
        gan_tensor *t = gan_net_tensor(c->net, i);
        uint64_t shape[2];
        int ndim = gan_tensor_ndim(t);
        for (int k = 0; k < ndim; k++)
            shape[k] = (uint64_t)gan_tensor_dim(t, k);
        const struct gan_st_tensor *s = NULL;
        st = gan_st_expect(f, gan_net_name(c->net, i), GAN_ST_F32, ndim, shape, &s, msg, sizeof msg);
        if (st != GAN_OK) {
            gan_error_set(err, st, "loading the classifier: %s", msg);
            break;
        }
        float *v = malloc(s->nbytes ? s->nbytes : 1);
        if (!v) {
            st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory while loading the classifier");
            break;
        }
        /* Copied, so that alignment of the data in the file does not matter. */
        memcpy(v, s->data, s->nbytes);
        if (gan_tensor_set_from_host(c->ctx, t, v, (size_t)s->count) != GAN_OK)
            st = ctx_fail(c, err, "setting its parameters");
        free(v);
    }
    if (st == GAN_OK) {
        const char *seed = gan_st_metadata_get(f, "seed");
        c->seed = seed ? strtoull(seed, NULL, 10) : 0;
        c->epochs = (int)meta_number(f, "epochs", 0);
        c->train_images = (size_t)meta_number(f, "train_images", 0);
        c->accuracy = meta_number(f, "test_accuracy", NAN);
        c->train_seconds = meta_number(f, "train_seconds", NAN);
        const char *dir = gan_st_metadata_get(f, "data");
        snprintf(c->data_dir, sizeof c->data_dir, "%s", dir ? dir : "");
        *out = c;
    } else {
        gan_classifier_free(c);
    }
    gan_st_close(f);
    return st;
}
