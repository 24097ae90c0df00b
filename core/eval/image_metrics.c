/* SPDX-License-Identifier: MIT */
/* image_metrics.c — sliced Wasserstein-1 in pixel space and the Fréchet distance in the
 * classifier's features, of generated images against held-out test images, with real-vs-real floors. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/classifier.h"
#include "eval/image_metrics.h"
#include "eval/linalg.h"
#include "eval/sort_doubles.h"

#define F GAN_CLASSIFIER_FEATURES
#define K GAN_IMAGE_METRICS_DIRECTIONS

/* The epochs of gan_image_shuffle that order the two splits for the metrics: far from
 * the 0, 1, 2, … a training sampler under the same seed walks through. */
#define TEST_ORDER_EPOCH (UINT64_MAX - 1)
#define TRAIN_ORDER_EPOCH (UINT64_MAX - 2)

/* The statistics of one image set of n that the metrics compare against. */
struct stats {
    double *proj;                 /* K × n sorted projections */
    double mean[F];
    double *cov;                  /* F × F */
};

struct gan_image_metrics {
    const gan_image_set *train, *test;
    size_t dim;                   /* values per image: the sets' sample size */
    gan_classifier *classifier;   /* NULL: pixels only, no Fréchet distance */
    char classifier_path[4096];
    int trained;
    uint64_t seed;
    double *dirs;                 /* K × dim */
    uint32_t *test_order, *train_order;
    size_t n;                     /* the n of ref and floor */
    struct stats ref;
    double *ref_sqrt;             /* Σ_ref^½, F × F */
    struct gan_image_quality floor;
    /* Scratch of the current n. */
    float *images, *features;
    struct stats work;
};

/* ------------------------------------------------------------------ sliced W1 */

void gan_sliced_directions(uint64_t seed, size_t k, size_t dim, double *out)
{
    const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    for (size_t d = 0; d < k; d++) {
        double *v = out + d * dim;
        /* Four words per counter give two normals each. */
        for (size_t j = 0; j < dim; j += 4) {
            uint32_t ctr[4] = { (uint32_t)(j / 4), (uint32_t)d, 0u, GAN_IMAGE_METRICS_TAG };
            uint32_t w[4];
            double z[4];
            gan_philox4x32_10(ctr, key, w);
            gan_philox_word_normals(w[0], w[1], z);
            gan_philox_word_normals(w[2], w[3], z + 2);
            for (size_t i = 0; i < 4 && j + i < dim; i++)
                v[j + i] = z[i];
        }
        double norm = 0;
        for (size_t j = 0; j < dim; j++)
            norm += v[j] * v[j];
        norm = sqrt(norm);
        for (size_t j = 0; j < dim; j++)
            v[j] /= norm;
    }
}

/* proj[d · n + i] = ⟨rows[i], dirs[d]⟩, each direction's values then sorted (scratch:
 * 2·n words). Four directions at a time give four independent sums for the CPU to
 * overlap. */
static void project_sorted(const float *rows, size_t n, size_t dim, const double *dirs,
                           size_t k, double *proj, uint64_t *scratch)
{
    for (size_t i = 0; i < n; i++) {
        const float *x = rows + i * dim;
        size_t d = 0;
        for (; d + 4 <= k; d += 4) {
            const double *v0 = dirs + d * dim, *v1 = v0 + dim, *v2 = v1 + dim, *v3 = v2 + dim;
            double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (size_t j = 0; j < dim; j++) {
                double xj = x[j];
                s0 += xj * v0[j];
                s1 += xj * v1[j];
                s2 += xj * v2[j];
                s3 += xj * v3[j];
            }
            proj[d * n + i] = s0;
            proj[(d + 1) * n + i] = s1;
            proj[(d + 2) * n + i] = s2;
            proj[(d + 3) * n + i] = s3;
        }
        for (; d < k; d++) {
            double s = 0;
            for (size_t j = 0; j < dim; j++)
                s += x[j] * dirs[d * dim + j];
            proj[d * n + i] = s;
        }
    }
    for (size_t d = 0; d < k; d++)
        gan_sort_doubles(proj + d * n, n, scratch);
}

/* The mean over directions of the 1-D W1 between sorted projections. */
static double w1_sorted(const double *a, const double *b, size_t n, size_t k)
{
    double total = 0;
    for (size_t d = 0; d < k; d++) {
        double s = 0;
        for (size_t i = 0; i < n; i++)
            s += fabs(a[d * n + i] - b[d * n + i]);
        total += s / (double)n;
    }
    return total / (double)k;
}

gan_status gan_sliced_w1(const float *a, const float *b, size_t n, size_t dim,
                         const double *dirs, size_t k, double *out, struct gan_error *err)
{
    if (n == 0 || k == 0 || dim == 0)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "sliced W1 needs images, dimensions and directions (n %zu, dim %zu, k %zu)",
                             n, dim, k);
    double *pa = malloc(n * k * sizeof *pa), *pb = malloc(n * k * sizeof *pb);
    uint64_t *scratch = malloc(2 * n * sizeof *scratch);
    if (!pa || !pb || !scratch) {
        free(pa);
        free(pb);
        free(scratch);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for %zu × %zu projections", k, n);
    }
    project_sorted(a, n, dim, dirs, k, pa, scratch);
    project_sorted(b, n, dim, dirs, k, pb, scratch);
    *out = w1_sorted(pa, pb, n, k);
    free(pa);
    free(pb);
    free(scratch);
    return GAN_OK;
}

/* ------------------------------------------------------------------ the default classifier */

gan_status gan_image_metrics_default_classifier(char *buf, size_t size, struct gan_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    /* The XDG base directory specification: a relative $XDG_CACHE_HOME is invalid and
     * must be ignored. */
    if (xdg && xdg[0] == '/')
        len = snprintf(buf, size, "%s/ganctl/%s", xdg, GAN_IMAGE_METRICS_CACHE_NAME);
    else if (home && *home)
        len = snprintf(buf, size, "%s/.cache/ganctl/%s", home, GAN_IMAGE_METRICS_CACHE_NAME);
    else
        return gan_error_set(err, GAN_ERR_NOT_FOUND,
                             "no folder for the image metrics' classifier: neither $XDG_CACHE_HOME nor $HOME is set; set eval.classifier to a file from ganctl classifier");
    if (len < 0 || (size_t)len >= size)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "the classifier's cache path is longer than %zu bytes; set eval.classifier to a shorter path",
                             size);
    return GAN_OK;
}

gan_status gan_image_metrics_make_folders(const char *path, struct gan_error *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return GAN_OK;
    *slash = '\0';
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(dir, 0777) != 0 && errno != EEXIST)
                return gan_error_set(err, GAN_ERR_IO,
                                     "cannot make the folder %s for the image metrics' classifier: %s; set eval.classifier to a writable path",
                                     dir, strerror(errno));
            *p = c;
            if (c == '\0')
                break;
        }
    }
    return GAN_OK;
}

/* Whether two folder names are the same folder (realpath of both, else the strings). */
static int same_folder(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(a, ra) && realpath(b, rb))
        return strcmp(ra, rb) == 0;
    return strcmp(a, b) == 0;
}

/* Loads the cached default classifier, or trains and saves it. */
static gan_status default_classifier(gan_image_metrics *m, gan_ctx *ctx, struct gan_error *err)
{
    gan_status st = gan_image_metrics_default_classifier(m->classifier_path,
                                                         sizeof m->classifier_path, err);
    if (st != GAN_OK)
        return st;
    struct stat sb;
    if (stat(m->classifier_path, &sb) == 0) {
        st = gan_classifier_load(ctx, m->classifier_path, &m->classifier, err);
        if (st != GAN_OK)
            return st;
        const char *dir = gan_classifier_data_dir(m->classifier);
        if (*dir && !same_folder(dir, gan_image_set_dir(m->train)))
            return gan_error_set(err, GAN_ERR_CONFIG,
                                 "the cached classifier %s was trained on %s, but this run reads %s: set eval.classifier to a file from ganctl classifier --data %s --out FILE",
                                 m->classifier_path, dir, gan_image_set_dir(m->train),
                                 gan_image_set_dir(m->train));
        return GAN_OK;
    }
    st = gan_classifier_new(ctx, GAN_CLASSIFIER_DEFAULT_SEED, &m->classifier, err);
    struct gan_classifier_data train = { m->train, NULL, NULL, 0 };
    struct gan_classifier_data test = { m->test, NULL, NULL, 0 };
    double accuracy;
    if (st == GAN_OK)
        st = gan_classifier_train(m->classifier, &train, GAN_CLASSIFIER_DEFAULT_EPOCHS, NULL,
                                  NULL, err);
    if (st == GAN_OK)
        st = gan_classifier_evaluate(m->classifier, &test, &accuracy, err);
    if (st == GAN_OK)
        st = gan_image_metrics_make_folders(m->classifier_path, err);
    if (st == GAN_OK)
        st = gan_classifier_save(m->classifier, m->classifier_path, NULL, err);
    m->trained = st == GAN_OK;
    return st;
}

/* ------------------------------------------------------------------ the metrics */

static gan_status prepare(gan_image_metrics *m, size_t n, struct gan_error *err);

static void stats_free(struct stats *s)
{
    free(s->proj);
    free(s->cov);
    s->proj = NULL;
    s->cov = NULL;
}

void gan_image_metrics_free(gan_image_metrics *m)
{
    if (!m)
        return;
    gan_classifier_free(m->classifier);
    free(m->dirs);
    free(m->test_order);
    free(m->train_order);
    stats_free(&m->ref);
    stats_free(&m->work);
    free(m->ref_sqrt);
    free(m->images);
    free(m->features);
    free(m);
}

/* Both constructors: the sets, the directions and orders; with `use_classifier` the
 * classifier named (or the default), then the reference statistics and floors. */
static gan_status metrics_new(const gan_image_set *train, const gan_image_set *test,
                              int use_classifier, const char *classifier, uint64_t seed,
                              size_t n, gan_ctx *ctx, gan_image_metrics **out,
                              struct gan_error *err)
{
    *out = NULL;
    gan_image_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the image metrics");
    m->train = train;
    m->test = test;
    m->seed = seed;
    m->dim = gan_image_set_sample_size(test);
    m->floor.sliced_w1 = m->floor.frechet = NAN;
    size_t n_train = gan_image_set_count(train), n_test = gan_image_set_count(test);
    gan_status st = GAN_OK;
    if (m->dim == 0 || gan_image_set_sample_size(train) != m->dim) {
        st = gan_error_set(err, GAN_ERR_INVALID,
                           "image metrics: the train and test images differ in shape (%zu and %zu values)",
                           gan_image_set_sample_size(train), m->dim);
        goto fail;
    }
    if (use_classifier && m->dim != GAN_CLASSIFIER_INPUT) {
        st = gan_error_set(err, GAN_ERR_INVALID,
                           "image metrics: the classifier reads %d values per image, these images have %zu",
                           GAN_CLASSIFIER_INPUT, m->dim);
        goto fail;
    }
    m->dirs = malloc((size_t)K * m->dim * sizeof *m->dirs);
    m->test_order = malloc(n_test * sizeof *m->test_order);
    m->train_order = malloc(n_train * sizeof *m->train_order);
    m->ref_sqrt = malloc((size_t)F * F * sizeof *m->ref_sqrt);
    size_t most = n_train < n_test ? n_train : n_test;
    if (n < 2 || n > most) {
        st = gan_error_set(err, GAN_ERR_INVALID,
                           "image metrics of %zu images: n must be 2 … %zu (the smaller split's size)",
                           n, most);
        goto fail;
    }
    if (!m->dirs || !m->test_order || !m->train_order || !m->ref_sqrt) {
        st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory for the image metrics");
        goto fail;
    }
    gan_sliced_directions(seed, K, m->dim, m->dirs);
    gan_image_shuffle(seed, TEST_ORDER_EPOCH, m->test_order, n_test);
    gan_image_shuffle(seed, TRAIN_ORDER_EPOCH, m->train_order, n_train);
    if (use_classifier && classifier && *classifier) {
        snprintf(m->classifier_path, sizeof m->classifier_path, "%s", classifier);
        st = gan_classifier_load(ctx, classifier, &m->classifier, err);
    } else if (use_classifier) {
        st = default_classifier(m, ctx, err);
    }
    if (st == GAN_OK)
        st = prepare(m, n, err);
    if (st != GAN_OK)
        goto fail;
    *out = m;
    return GAN_OK;
fail:
    gan_image_metrics_free(m);
    return st;
}

gan_status gan_image_metrics_new(const gan_image_set *train, const gan_image_set *test,
                                 const char *classifier, uint64_t seed, size_t n,
                                 gan_ctx *ctx, gan_image_metrics **out, struct gan_error *err)
{
    return metrics_new(train, test, 1, classifier, seed, n, ctx, out, err);
}

gan_status gan_image_metrics_new_pixels(const gan_image_set *train, const gan_image_set *test,
                                        uint64_t seed, size_t n, gan_image_metrics **out,
                                        struct gan_error *err)
{
    return metrics_new(train, test, 0, NULL, seed, n, NULL, out, err);
}

/* Projections, feature mean and covariance of the n images in m->images. */
static gan_status measure(gan_image_metrics *m, size_t n, struct stats *s, struct gan_error *err)
{
    uint64_t *scratch = malloc(2 * n * sizeof *scratch);
    if (!scratch)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for sorting %zu projections", n);
    project_sorted(m->images, n, m->dim, m->dirs, K, s->proj, scratch);
    free(scratch);
    if (!m->classifier)
        return GAN_OK;
    gan_status st = gan_classifier_features(m->classifier, m->images, n, m->features, err);
    if (st == GAN_OK)
        st = gan_mean_cov(n, F, m->features, s->mean, s->cov, err);
    return st;
}

/* The n real images at order[0 … n − 1] of `set` into m->images. */
static void load_real(gan_image_metrics *m, const gan_image_set *set, const uint32_t *order,
                      size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned char *raw = gan_image_set_raw(set, order[i]);
        float *dst = m->images + i * m->dim;
        for (size_t p = 0; p < m->dim; p++)
            dst[p] = gan_image_pixel_value(raw[p]);
    }
}

static gan_status alloc_stats(struct stats *s, size_t n)
{
    stats_free(s);
    s->proj = malloc(n * K * sizeof *s->proj);
    s->cov = malloc((size_t)F * F * sizeof *s->cov);
    return s->proj && s->cov ? GAN_OK : GAN_ERR_NOMEM;
}

/* The reference statistics and the floors at a new n. */
static gan_status prepare(gan_image_metrics *m, size_t n, struct gan_error *err)
{
    m->n = 0;
    m->floor.sliced_w1 = m->floor.frechet = NAN;
    free(m->images);
    free(m->features);
    m->images = malloc(n * m->dim * sizeof *m->images);
    m->features = malloc(n * F * sizeof *m->features);
    if (!m->images || !m->features || alloc_stats(&m->ref, n) != GAN_OK
        || alloc_stats(&m->work, n) != GAN_OK)
        return gan_error_set(err, GAN_ERR_NOMEM,
                             "out of memory for the image metrics of %zu images", n);
    load_real(m, m->test, m->test_order, n);
    gan_status st = measure(m, n, &m->ref, err);
    if (st == GAN_OK && m->classifier)
        st = gan_sym_sqrt(F, m->ref.cov, m->ref_sqrt, err);
    if (st != GAN_OK)
        return st;
    load_real(m, m->train, m->train_order, n);
    st = measure(m, n, &m->work, err);
    struct gan_image_quality floor = { NAN, NAN };
    if (st == GAN_OK) {
        floor.sliced_w1 = w1_sorted(m->ref.proj, m->work.proj, n, K);
        if (m->classifier)
            st = gan_frechet_distance(F, m->ref.mean, m->ref.cov, m->ref_sqrt, m->work.mean,
                                      m->work.cov, &floor.frechet, err);
    }
    if (st == GAN_OK) {
        m->floor = floor;
        m->n = n;
    }
    return st;
}

gan_status gan_image_metrics_eval(gan_image_metrics *m, const float *fake, size_t n,
                                  struct gan_image_quality *out, struct gan_error *err)
{
    out->sliced_w1 = out->frechet = NAN;
    size_t most = gan_image_set_count(m->test);
    if (gan_image_set_count(m->train) < most)
        most = gan_image_set_count(m->train);
    if (n < 2 || n > most)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "image metrics of %zu images: n must be 2 … %zu (the smaller split's size)",
                             n, most);
    gan_status st = GAN_OK;
    if (m->n != n && (st = prepare(m, n, err)) != GAN_OK)
        return st;
    for (size_t i = 0; i < n * m->dim; i++)
        if (!isfinite(fake[i]))
            return GAN_OK;
    memcpy(m->images, fake, n * m->dim * sizeof *fake);
    st = measure(m, n, &m->work, err);
    double frechet = NAN;
    if (st == GAN_OK && m->classifier)
        st = gan_frechet_distance(F, m->ref.mean, m->ref.cov, m->ref_sqrt, m->work.mean,
                                  m->work.cov, &frechet, err);
    if (st == GAN_OK) {
        out->sliced_w1 = w1_sorted(m->ref.proj, m->work.proj, n, K);
        out->frechet = frechet;
    }
    return st;
}

struct gan_image_quality gan_image_metrics_floor(const gan_image_metrics *m)
{
    return m->floor;
}

size_t gan_image_metrics_n(const gan_image_metrics *m)
{
    return m->n;
}

const char *gan_image_metrics_classifier_path(const gan_image_metrics *m)
{
    return m->classifier_path;
}

int gan_image_metrics_classifier_trained(const gan_image_metrics *m)
{
    return m->trained;
}

double gan_image_metrics_classifier_accuracy(const gan_image_metrics *m)
{
    return m->classifier ? gan_classifier_accuracy(m->classifier) : NAN;
}

int gan_image_metrics_has_frechet(const gan_image_metrics *m)
{
    return m->classifier != NULL;
}
