/* SPDX-License-Identifier: MIT */
/* check_image_data.c — tests of the Fashion-MNIST data set: loading small sets written
 * here, the missing-data and mismatch messages, pixel scaling, the per-epoch shuffle
 * against an independent reference, batches, resuming, and the installed data set. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <check.h>

#include <ganctl/philox.h>

#include "data/image_data.h"

/* ------------------------------------------------------------------ fixture */

static char tmpdir[64];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ganctl-imgdata-XXXXXX");
    ck_assert_msg(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* ------------------------------------------------------------------ writing a data set */

/* Pixel k of image i, and label i, of the small sets. */
static unsigned char pixel_of(size_t i, size_t k)
{
    return (unsigned char)((i * 29 + k * 7 + (k / 28) * 3) % 256);
}

static unsigned char label_of(size_t i)
{
    return (unsigned char)((i * 7 + 3) % 10);
}

static void write_file(const char *name, const unsigned char *data, size_t n, int gz)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s%s", tmpdir, name, gz ? ".gz" : "");
    if (gz) {
        gzFile f = gzopen(path, "wb1");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(gzwrite(f, data, (unsigned)n), (int)n);
        ck_assert_int_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
    }
}

/* An image file of n images with `cols` columns (28 unless testing a wrong shape) and a
 * label file of n_labels labels (label bad_at set to 10 unless bad_at < 0). */
static void write_split(const char *stem_images, const char *stem_labels, size_t n,
                        size_t n_labels, uint32_t cols, long bad_at, int gz)
{
    size_t bytes = 16 + n * 28 * cols;
    unsigned char *im = malloc(bytes), *lb = malloc(8 + n_labels);
    const unsigned char head[16] = {
        0, 0, 8, 3, (unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
        (unsigned char)n, 0, 0, 0, 28, 0, 0, 0, (unsigned char)cols,
    };
    memcpy(im, head, 16);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < 28 * cols; k++)
            im[16 + i * 28 * cols + k] = pixel_of(i, k);
    const unsigned char lhead[8] = {
        0, 0, 8, 1, (unsigned char)(n_labels >> 24), (unsigned char)(n_labels >> 16),
        (unsigned char)(n_labels >> 8), (unsigned char)n_labels,
    };
    memcpy(lb, lhead, 8);
    for (size_t i = 0; i < n_labels; i++)
        lb[8 + i] = (long)i == bad_at ? 10 : label_of(i);
    write_file(stem_images, im, bytes, gz);
    write_file(stem_labels, lb, 8 + n_labels, gz);
    free(im);
    free(lb);
}

static void write_train(size_t n, int gz)
{
    write_split("train-images-idx3-ubyte", "train-labels-idx1-ubyte", n, n, 28, -1, gz);
}

static gan_image_set *load_ok(enum gan_image_split split)
{
    gan_image_set *set = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_image_set_load(tmpdir, split, &set, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    ck_assert_ptr_nonnull(set);
    return set;
}

/* ------------------------------------------------------------------ loading */

/* gzip and plain files, train and test names; every byte, label and scaled value. */
START_TEST(test_load_small)
{
    int gz = _i & 1;
    enum gan_image_split split = _i < 2 ? GAN_IMAGE_TRAIN : GAN_IMAGE_TEST;
    size_t n = 37;
    if (split == GAN_IMAGE_TRAIN)
        write_train(n, gz);
    else
        write_split("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", n, n, 28, -1, gz);
    gan_image_set *set = load_ok(split);
    ck_assert_uint_eq(gan_image_set_count(set), n);
    ck_assert_int_eq(gan_image_set_split(set), split);
    ck_assert_str_eq(gan_image_set_dir(set), tmpdir);
    float *scaled = malloc(n * GAN_IMAGE_PIXELS * sizeof *scaled);
    int labels[37];
    struct gan_error err;
    ck_assert_int_eq(gan_image_set_copy(set, 0, n, scaled, labels, &err), GAN_OK);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *raw = gan_image_set_raw(set, i);
        ck_assert_ptr_nonnull(raw);
        ck_assert_int_eq(gan_image_set_label(set, i), label_of(i));
        ck_assert_int_eq(labels[i], label_of(i));
        for (size_t k = 0; k < GAN_IMAGE_PIXELS; k++) {
            ck_assert_uint_eq(raw[k], pixel_of(i, k));
            /* (2v − 255) / 255 in double, rounded to float once. */
            float want = (float)((2.0 * pixel_of(i, k) - 255.0) / 255.0);
            ck_assert_msg(scaled[i * GAN_IMAGE_PIXELS + k] == want, "image %zu pixel %zu: %.9g, "
                          "want %.9g", i, k, (double)scaled[i * GAN_IMAGE_PIXELS + k],
                          (double)want);
        }
    }
    ck_assert_ptr_null(gan_image_set_raw(set, n));
    ck_assert_int_eq(gan_image_set_label(set, n), -1);
    /* A range inside, and one past the end. */
    ck_assert_int_eq(gan_image_set_copy(set, n - 2, 2, scaled, NULL, &err), GAN_OK);
    ck_assert_int_eq(gan_image_set_copy(set, n - 2, 3, scaled, NULL, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "images 35 to 38"));
    free(scaled);
    gan_image_set_free(set);
}
END_TEST

START_TEST(test_pixel_scale)
{
    ck_assert(gan_image_pixel_value(0) == -1.0f);
    ck_assert(gan_image_pixel_value(255) == 1.0f);
    ck_assert_float_eq_tol(gan_image_pixel_value(127), -1.0f / 255.0f, 1e-7f);
    ck_assert_float_eq_tol(gan_image_pixel_value(128), 1.0f / 255.0f, 1e-7f);
    /* Monotone and symmetric: v and 255 − v are opposite. */
    for (int v = 0; v < 255; v++) {
        ck_assert(gan_image_pixel_value((unsigned char)v)
                  < gan_image_pixel_value((unsigned char)(v + 1)));
        ck_assert(gan_image_pixel_value((unsigned char)v)
                  == -gan_image_pixel_value((unsigned char)(255 - v)));
    }
    ck_assert_str_eq(gan_image_class_name(0), "T-shirt/top");
    ck_assert_str_eq(gan_image_class_name(9), "Ankle boot");
    ck_assert_str_eq(gan_image_class_name(10), "?");
    ck_assert_str_eq(gan_image_class_name(-1), "?");
}
END_TEST

/* ------------------------------------------------------------------ failures */

static void load_fails(enum gan_image_split split, const char *dir, gan_status want,
                       const char *const *phrases)
{
    gan_image_set *set = (gan_image_set *)&set;    /* must be reset to NULL */
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_image_set_load(dir, split, &set, &err);
    ck_assert_msg(st == want, "status %d (%s), wanted %d", (int)st, err.message, (int)want);
    ck_assert_ptr_null(set);
    for (int i = 0; phrases[i]; i++)
        ck_assert_msg(strstr(err.message, phrases[i]), "no \"%s\" in: %s", phrases[i],
                      err.message);
}

START_TEST(test_missing)
{
    /* A folder that does not exist: the package, its folder and the setting. */
    char nowhere[128];
    snprintf(nowhere, sizeof nowhere, "%s/not-here", tmpdir);
    const char *const folder[] = { "the folder", nowhere, "does not exist",
                                   "dataset-fashion-mnist", "/usr/share/datasets/fashion-mnist",
                                   "data.path", NULL };
    load_fails(GAN_IMAGE_TRAIN, nowhere, GAN_ERR_NOT_FOUND, folder);
    /* The folder exists but lacks the files. */
    const char *const file[] = { "train-images-idx3-ubyte.gz", "is missing",
                                 "dataset-fashion-mnist", "data.path", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_NOT_FOUND, file);
    /* Images present, labels missing. */
    write_train(5, 1);
    char labels[256];
    snprintf(labels, sizeof labels, "%s/train-labels-idx1-ubyte.gz", tmpdir);
    ck_assert_int_eq(unlink(labels), 0);
    const char *const lab[] = { "train-labels-idx1-ubyte.gz", "is missing", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_NOT_FOUND, lab);
    /* The test split is looked for under its own names. */
    const char *const test[] = { "t10k-images-idx3-ubyte.gz", NULL };
    load_fails(GAN_IMAGE_TEST, tmpdir, GAN_ERR_NOT_FOUND, test);
    const char *const split[] = { "split 7", NULL };
    load_fails((enum gan_image_split)7, tmpdir, GAN_ERR_INVALID, split);
}
END_TEST

START_TEST(test_mismatched_files)
{
    write_split("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 6, 5, 28, -1, 1);
    const char *const count[] = { "disagree", "6 images but 5 labels", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_FORMAT, count);
    write_split("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 6, 6, 28, 4, 1);
    const char *const range[] = { "label 10 at index 4", "0 to 9", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_FORMAT, range);
    /* 27 columns: the IDX reader's message, naming the file and the wanted shape. */
    write_split("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 6, 6, 27, -1, 1);
    const char *const shape[] = { "train-images-idx3-ubyte.gz", "holds [6, 28, 27]",
                                  "must be [N, 28, 28] of unsigned bytes", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_FORMAT, shape);
    write_split("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 0, 0, 28, -1, 1);
    const char *const empty[] = { "no images", NULL };
    load_fails(GAN_IMAGE_TRAIN, tmpdir, GAN_ERR_FORMAT, empty);
}
END_TEST

/* ------------------------------------------------------------------ the shuffle */

/* The documented order, written out from the header's description: Philox4x32-10,
 * key (seed lo, seed hi), counter (k, epoch lo, epoch hi, "SHUF"), words in order;
 * for i = n … 2 a draw j from [0, i) by multiply-shift, rejecting low halves below
 * 2^32 mod i; swap positions i − 1 and j. */
static void reference_order(uint64_t seed, uint64_t epoch, uint32_t *order, size_t n)
{
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    uint32_t words[4];
    uint32_t k = 0;
    int avail = 0;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n; i >= 2; i--) {
        uint64_t range = i, threshold = (((uint64_t)1 << 32) % range), prod;
        do {
            if (avail == 0) {
                uint32_t ctr[4] = { k++, (uint32_t)epoch, (uint32_t)(epoch >> 32), 0x53485546u };
                gan_philox4x32_10(ctr, key, words);
                avail = 4;
            }
            prod = (uint64_t)words[4 - avail--] * range;
        } while ((prod & 0xffffffffu) < threshold);
        size_t j = (size_t)(prod >> 32);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

struct shuffle_case {
    uint64_t seed, epoch;
    size_t n;
};

static const struct shuffle_case shuffle_cases[] = {
    { 0, 0, 1 }, { 1, 0, 2 }, { 42, 0, 10 }, { 42, 1, 10 }, { 42, 7, 1000 },
    { 0xffffffffffffffffull, 3, 333 }, { 123456789, 0x100000000ull, 60000 }, { 5, 2, 3 },
};

START_TEST(test_shuffle_matches_reference)
{
    const struct shuffle_case *c = &shuffle_cases[_i];
    uint32_t *got = malloc(c->n * sizeof *got), *want = malloc(c->n * sizeof *want);
    char *seen = calloc(c->n, 1);
    gan_image_shuffle(c->seed, c->epoch, got, c->n);
    reference_order(c->seed, c->epoch, want, c->n);
    for (size_t i = 0; i < c->n; i++) {
        ck_assert_msg(got[i] == want[i], "seed %llu epoch %llu n %zu: position %zu is %u, the "
                      "reference has %u", (unsigned long long)c->seed,
                      (unsigned long long)c->epoch, c->n, i, got[i], want[i]);
        ck_assert_uint_lt(got[i], c->n);
        ck_assert(!seen[got[i]]);
        seen[got[i]] = 1;
    }
    /* Far from the identity when there is room to be. */
    size_t fixed = 0;
    for (size_t i = 0; i < c->n; i++)
        fixed += got[i] == i;
    if (c->n >= 100)
        ck_assert_uint_lt(fixed, 10);
    free(got);
    free(want);
    free(seen);
}
END_TEST

/* Seeds and epochs give different orders; the same ones give the same order. */
START_TEST(test_shuffle_streams_differ)
{
    enum { N = 200 };
    uint32_t a[N], b[N];
    gan_image_shuffle(9, 0, a, N);
    gan_image_shuffle(9, 0, b, N);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    gan_image_shuffle(9, 1, b, N);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    gan_image_shuffle(10, 0, b, N);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    /* Epoch 2^32 is not epoch 0. */
    gan_image_shuffle(9, (uint64_t)1 << 32, b, N);
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

/* All 24 orders of 4 items come up equally often over 24,000 epochs: each count is
 * binomial(24000, 1/24), mean 1000, sd 31; the bound 1000 ± 150 is ~5 sd. A draw by
 * plain modulo of a small word would still pass; a shuffle that swaps with j in
 * [0, i − 1) only (the classic off-by-one) never yields some orders and fails. */
START_TEST(test_shuffle_uniform)
{
    long counts[256] = { 0 };
    for (uint64_t e = 0; e < 24000; e++) {
        uint32_t o[4];
        gan_image_shuffle(77, e, o, 4);
        counts[o[0] * 64 + o[1] * 16 + o[2] * 4 + o[3]]++;
    }
    int distinct = 0;
    for (int k = 0; k < 256; k++) {
        if (!counts[k])
            continue;
        distinct++;
        ck_assert_msg(counts[k] > 850 && counts[k] < 1150, "order %d came %ld times", k,
                      counts[k]);
    }
    ck_assert_int_eq(distinct, 24);
}
END_TEST

/* ------------------------------------------------------------------ batches */

/* The image a batch slot holds, identified by its first pixels (pixel_of is unique in
 * i for the first two bytes over the small sets). */
static long identify(const gan_image_set *set, const float *img)
{
    for (size_t i = 0; i < gan_image_set_count(set); i++) {
        const unsigned char *raw = gan_image_set_raw(set, i);
        if (gan_image_pixel_value(raw[0]) == img[0] && gan_image_pixel_value(raw[1]) == img[1]
            && gan_image_pixel_value(raw[100]) == img[100])
            return (long)i;
    }
    return -1;
}

/* batch 10 of 30: three batches an epoch, each epoch every image once, in the order
 * gan_image_shuffle gives; batch 7: four batches and two images skipped. */
START_TEST(test_batches_cover_epochs)
{
    size_t n = 30, batch = _i == 0 ? 10 : 7, per_epoch = n / batch;
    write_train(n, 1);
    gan_image_set *set = load_ok(GAN_IMAGE_TRAIN);
    gan_image_sampler *s = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_image_sampler_new(set, 31337, &s, &err), GAN_OK);
    float *imgs = malloc(batch * GAN_IMAGE_PIXELS * sizeof *imgs);
    int labels[10];
    uint32_t order[30];
    for (uint64_t epoch = 0; epoch < 4; epoch++) {
        gan_image_shuffle(31337, epoch, order, n);
        char seen[30] = { 0 };
        for (size_t b = 0; b < per_epoch; b++) {
            ck_assert_int_eq(gan_image_sampler_next(s, batch, imgs, labels, &err), GAN_OK);
            struct gan_image_position pos = gan_image_sampler_tell(s);
            ck_assert_uint_eq(pos.epoch, epoch);
            ck_assert_uint_eq(pos.index, (b + 1) * batch);
            for (size_t i = 0; i < batch; i++) {
                long id = identify(set, imgs + i * GAN_IMAGE_PIXELS);
                ck_assert_int_ge(id, 0);
                ck_assert_int_eq(id, order[b * batch + i]);
                ck_assert_int_eq(labels[i], label_of((size_t)id));
                ck_assert(!seen[id]);
                seen[id] = 1;
            }
        }
        ck_assert(memcmp(gan_image_sampler_order(s), order, sizeof order) == 0);
    }
    free(imgs);
    gan_image_sampler_free(s);
    gan_image_set_free(set);
}
END_TEST

/* A sampler restored from a saved position deals exactly what the first one deals
 * next, across epoch boundaries, and labels may be left out. */
START_TEST(test_resume)
{
    write_train(30, 0);
    gan_image_set *set = load_ok(GAN_IMAGE_TRAIN);
    gan_image_sampler *a = NULL, *b = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_image_sampler_new(set, 5, &a, &err), GAN_OK);
    float x[4 * GAN_IMAGE_PIXELS], y[4 * GAN_IMAGE_PIXELS];
    for (int i = 0; i < 11; i++)      /* 11 batches of 4: epoch 1, index 16 (7 an epoch) */
        ck_assert_int_eq(gan_image_sampler_next(a, 4, x, NULL, &err), GAN_OK);
    struct gan_image_position pos = gan_image_sampler_tell(a);
    ck_assert_uint_eq(pos.epoch, 1);
    ck_assert_uint_eq(pos.index, 16);
    ck_assert_int_eq(gan_image_sampler_new(set, 5, &b, &err), GAN_OK);
    ck_assert_int_eq(gan_image_sampler_seek(b, pos, &err), GAN_OK);
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(gan_image_sampler_next(a, 4, x, NULL, &err), GAN_OK);
        ck_assert_int_eq(gan_image_sampler_next(b, 4, y, NULL, &err), GAN_OK);
        ck_assert_msg(memcmp(x, y, sizeof x) == 0, "batch %d after resuming differs", i);
    }
    /* The end of an epoch is a valid position: the next batch starts the next epoch. */
    struct gan_image_position end = { 3, 30 };
    ck_assert_int_eq(gan_image_sampler_seek(b, end, &err), GAN_OK);
    ck_assert_int_eq(gan_image_sampler_next(b, 4, y, NULL, &err), GAN_OK);
    ck_assert_uint_eq(gan_image_sampler_tell(b).epoch, 4);
    ck_assert_uint_eq(gan_image_sampler_tell(b).index, 4);
    uint32_t order[30];
    gan_image_shuffle(5, 4, order, 30);
    ck_assert_int_eq(identify(set, y), order[0]);
    /* Past the end: a checkpoint from another data set. */
    struct gan_image_position bad = { 7777, 31 };
    ck_assert_int_eq(gan_image_sampler_seek(b, bad, &err), GAN_ERR_INVALID);
    ck_assert_str_eq(err.message,
                     "fashion-mnist: the saved data position (data.epoch, data.index) lies past "
                     "the end of the train split's 30 images: the checkpoint was made with "
                     "another data set or is damaged; resume with the data.name and data.path "
                     "the run was trained with, or start a new run");
    /* The position is the checkpoint's: its numbers are not quoted. */
    ck_assert_ptr_null(strstr(err.message, "31"));
    ck_assert_ptr_null(strstr(err.message, "7777"));
    gan_image_sampler_free(a);
    gan_image_sampler_free(b);
    gan_image_set_free(set);
}
END_TEST

START_TEST(test_batch_errors)
{
    write_train(8, 1);
    gan_image_set *set = load_ok(GAN_IMAGE_TRAIN);
    gan_image_sampler *s = NULL;
    struct gan_error err;
    ck_assert_int_eq(gan_image_sampler_new(set, 1, &s, &err), GAN_OK);
    float x[9 * GAN_IMAGE_PIXELS];
    ck_assert_int_eq(gan_image_sampler_next(s, 0, x, NULL, &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_image_sampler_next(s, 9, x, NULL, &err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err.message, "a batch of 9"));
    ck_assert_ptr_nonnull(strstr(err.message, "data.batch_size"));
    /* The whole set as one batch, twice: two epochs. */
    ck_assert_int_eq(gan_image_sampler_next(s, 8, x, NULL, &err), GAN_OK);
    ck_assert_int_eq(gan_image_sampler_next(s, 8, x, NULL, &err), GAN_OK);
    ck_assert_uint_eq(gan_image_sampler_tell(s).epoch, 1);
    gan_image_sampler_free(s);
    ck_assert_int_eq(gan_image_sampler_new(NULL, 1, &s, &err), GAN_ERR_INVALID);
    ck_assert_ptr_null(s);
    gan_image_set_free(set);
}
END_TEST

/* ------------------------------------------------------------------ the real data set */

static const char *fashion_dir(void)
{
    const char *d = getenv("GANCTL_FASHION_MNIST_DIR");
    return d && *d ? d : GAN_IMAGE_DATA_DEFAULT_DIR;
}

static int fashion_present(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", fashion_dir());
    if (access(path, R_OK) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", fashion_dir());
    return access(path, R_OK) == 0;
}

/* 60,000 and 10,000 images, 6,000 and 1,000 a class; the mean scaled pixel equals the
 * measured byte mean (train 72.94035…, test 73.14657…) mapped by v/127.5 − 1, to 1e-7
 * (each float carries up to 6e-8 of rounding; a wrong scale is off by 1e-3 or more);
 * and a full epoch of batches of 50 reaches both ends of the range. */
START_TEST(test_fashion_mnist)
{
    struct gan_error err;
    gan_error_clear(&err);
    static const struct {
        enum gan_image_split split;
        size_t n;
        double byte_mean;
    } splits[2] = {
        { GAN_IMAGE_TRAIN, 60000, 3431114169.0 / (60000.0 * 784.0) },
        { GAN_IMAGE_TEST, 10000, 573469082.0 / (10000.0 * 784.0) },
    };
    float *x = malloc(50 * GAN_IMAGE_PIXELS * sizeof *x);
    for (int sp = 0; sp < 2; sp++) {
        gan_image_set *set = NULL;
        ck_assert_msg(gan_image_set_load(fashion_dir(), splits[sp].split, &set, &err) == GAN_OK,
                      "%s", err.message);
        ck_assert_uint_eq(gan_image_set_count(set), splits[sp].n);
        long per_class[GAN_IMAGE_CLASSES] = { 0 };
        for (size_t i = 0; i < splits[sp].n; i++)
            per_class[gan_image_set_label(set, i)]++;
        for (int c = 0; c < GAN_IMAGE_CLASSES; c++)
            ck_assert_int_eq(per_class[c], (long)splits[sp].n / 10);
        gan_image_sampler *s = NULL;
        ck_assert_int_eq(gan_image_sampler_new(set, 2024, &s, &err), GAN_OK);
        double sum = 0;
        float lo = 1, hi = -1;
        size_t batches = splits[sp].n / 50;
        for (size_t b = 0; b < batches; b++) {
            ck_assert_int_eq(gan_image_sampler_next(s, 50, x, NULL, &err), GAN_OK);
            for (size_t k = 0; k < 50 * GAN_IMAGE_PIXELS; k++) {
                sum += x[k];
                lo = fminf(lo, x[k]);
                hi = fmaxf(hi, x[k]);
            }
        }
        ck_assert_uint_eq(gan_image_sampler_tell(s).epoch, 0);
        ck_assert_uint_eq(gan_image_sampler_tell(s).index, splits[sp].n);
        double mean = sum / ((double)splits[sp].n * GAN_IMAGE_PIXELS);
        double want = splits[sp].byte_mean / 127.5 - 1.0;
        ck_assert_msg(fabs(mean - want) < 1e-7, "mean scaled pixel %.12f, want %.12f", mean,
                      want);
        ck_assert(lo == -1.0f && hi == 1.0f);
        gan_image_sampler_free(s);
        gan_image_set_free(set);
    }
    free(x);
    /* The default folder is the package's. */
    if (strcmp(fashion_dir(), GAN_IMAGE_DATA_DEFAULT_DIR) == 0) {
        gan_image_set *set = NULL;
        ck_assert_int_eq(gan_image_set_load(NULL, GAN_IMAGE_TEST, &set, &err), GAN_OK);
        ck_assert_str_eq(gan_image_set_dir(set), GAN_IMAGE_DATA_DEFAULT_DIR);
        gan_image_set_free(set);
    }
}
END_TEST

static Suite *image_data_suite(void)
{
    Suite *s = suite_create("image_data");
    TCase *tc = tcase_create("loading");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_load_small, 0, 4);
    tcase_add_test(tc, test_pixel_scale);
    tcase_add_test(tc, test_missing);
    tcase_add_test(tc, test_mismatched_files);
    suite_add_tcase(s, tc);

    tc = tcase_create("shuffle");
    tcase_add_loop_test(tc, test_shuffle_matches_reference, 0,
                        (int)(sizeof shuffle_cases / sizeof shuffle_cases[0]));
    tcase_add_test(tc, test_shuffle_streams_differ);
    tcase_add_test(tc, test_shuffle_uniform);
    suite_add_tcase(s, tc);

    tc = tcase_create("batches");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_batches_cover_epochs, 0, 2);
    tcase_add_test(tc, test_resume);
    tcase_add_test(tc, test_batch_errors);
    suite_add_tcase(s, tc);

    if (fashion_present()) {
        tc = tcase_create("fashion-mnist");
        tcase_add_test(tc, test_fashion_mnist);
        suite_add_tcase(s, tc);
    } else {
        fprintf(stderr, "SKIP fashion-mnist: not in %s (install %s)\n", fashion_dir(),
                GAN_IMAGE_DATA_PACKAGE);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(image_data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
