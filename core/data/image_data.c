/* SPDX-License-Identifier: MIT */
/* image_data.c — loads a split of Fashion-MNIST from its IDX files, checks that images and
 * labels belong together, holds image sets made elsewhere (an image folder's), and deals
 * out shuffled batches scaled to [−1, 1]. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ganctl/philox.h>

#include "base/strings.h"
#include "data/idx.h"
#include "data/image_data.h"

struct gan_image_set {
    enum gan_image_split split;
    char *dir;
    const char *label;              /* what messages call the set */
    size_t count;
    unsigned channels, side;
    size_t sample_size;             /* channels × side × side */
    unsigned char *pixels;          /* count × sample_size */
    unsigned char *labels;          /* count, or NULL: no labels */
};

struct gan_image_sampler {
    const gan_image_set *set;
    uint64_t seed;
    struct gan_image_position pos;
    uint32_t *order;                /* the order of pos.epoch */
};

static const char *const split_names[2] = { "train", "test" };
static const char *const file_stems[2][2] = {
    { "train-images-idx3-ubyte", "train-labels-idx1-ubyte" },
    { "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" },
};

/* ------------------------------------------------------------------ loading */

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode);
}

/* The file's path, NAME.gz when it exists, else NAME when that exists; NULL with a
 * message (missing, or out of memory) otherwise. */
static char *find_file(const char *dir, const char *stem, gan_status *st, struct gan_error *err)
{
    size_t len = strlen(dir) + strlen(stem) + 8;
    char *path = malloc(len);
    if (!path) {
        *st = gan_error_set(err, GAN_ERR_NOMEM, "fashion-mnist: out of memory");
        return NULL;
    }
    snprintf(path, len, "%s/%s.gz", dir, stem);
    if (is_file(path))
        return path;
    snprintf(path, len, "%s/%s", dir, stem);
    if (is_file(path))
        return path;
    free(path);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        *st = gan_error_set(err, GAN_ERR_NOT_FOUND, "fashion-mnist: the folder %s does not "
                            "exist; install the Debian package %s (apt install %s puts the "
                            "data set in %s), or set %s to the folder that holds the IDX "
                            "files", dir, GAN_IMAGE_DATA_PACKAGE, GAN_IMAGE_DATA_PACKAGE,
                            GAN_IMAGE_DATA_DEFAULT_DIR, GAN_IMAGE_DATA_SETTING);
    else
        *st = gan_error_set(err, GAN_ERR_NOT_FOUND, "fashion-mnist: %s/%s.gz (or %s without "
                            ".gz) is missing; the Debian package %s provides it in %s, or set "
                            "%s to a folder that holds the four IDX files", dir, stem, stem,
                            GAN_IMAGE_DATA_PACKAGE, GAN_IMAGE_DATA_DEFAULT_DIR,
                            GAN_IMAGE_DATA_SETTING);
    return NULL;
}

static gan_status read_part(const char *dir, const char *stem, const struct gan_idx_expect *e,
                            struct gan_idx *out, struct gan_error *err)
{
    gan_status st = GAN_OK;
    char *path = find_file(dir, stem, &st, err);
    if (!path)
        return st;
    st = gan_idx_read(path, e, out, err);
    free(path);
    return st;
}

void gan_image_set_free(gan_image_set *set)
{
    if (!set)
        return;
    free(set->dir);
    free(set->pixels);
    free(set->labels);
    free(set);
}

gan_status gan_image_set_load(const char *dir, enum gan_image_split split,
                              gan_image_set **out, struct gan_error *err)
{
    *out = NULL;
    if (split != GAN_IMAGE_TRAIN && split != GAN_IMAGE_TEST)
        return gan_error_set(err, GAN_ERR_INVALID, "fashion-mnist: split %d is neither train "
                             "(%d) nor test (%d)", (int)split, GAN_IMAGE_TRAIN, GAN_IMAGE_TEST);
    if (!dir || !*dir)
        dir = GAN_IMAGE_DATA_DEFAULT_DIR;
    const struct gan_idx_expect images_e = {
        .what = "Fashion-MNIST's images", .type = GAN_IDX_U8, .ndim = 3,
        .dims = { GAN_IDX_ANY_SIZE, GAN_IMAGE_SIDE, GAN_IMAGE_SIDE },
    };
    const struct gan_idx_expect labels_e = {
        .what = "Fashion-MNIST's labels", .type = GAN_IDX_U8, .ndim = 1,
        .dims = { GAN_IDX_ANY_SIZE },
    };
    struct gan_idx images, labels;
    memset(&images, 0, sizeof images);
    memset(&labels, 0, sizeof labels);
    gan_status st = read_part(dir, file_stems[split][0], &images_e, &images, err);
    if (st == GAN_OK)
        st = read_part(dir, file_stems[split][1], &labels_e, &labels, err);
    if (st != GAN_OK) {
        gan_idx_free(&images);
        gan_idx_free(&labels);
        return st;
    }
    const char *what = NULL;
    char detail[160] = "";
    if (images.dims[0] != labels.dims[0]) {
        what = "the image and label files disagree";
        snprintf(detail, sizeof detail, "%lld images but %lld labels",
                 (long long)images.dims[0], (long long)labels.dims[0]);
    } else if (images.dims[0] == 0) {
        what = "the files hold no images";
        snprintf(detail, sizeof detail, "N = 0");
    } else {
        const unsigned char *lab = labels.data;
        for (size_t i = 0; i < labels.count && !what; i++) {
            if (lab[i] >= GAN_IMAGE_CLASSES) {
                what = "a label is out of range";
                snprintf(detail, sizeof detail, "label %u at index %zu; the classes are 0 to %d",
                         lab[i], i, GAN_IMAGE_CLASSES - 1);
            }
        }
    }
    if (what) {
        gan_idx_free(&images);
        gan_idx_free(&labels);
        return gan_error_set(err, GAN_ERR_FORMAT, "fashion-mnist: %s split in %s: %s (%s); "
                             "use the files of one release together", split_names[split],
                             dir, what, detail);
    }
    gan_image_set *set = calloc(1, sizeof *set);
    char *dir_copy = gan_strdup(dir);
    if (!set || !dir_copy) {
        free(set);
        free(dir_copy);
        gan_idx_free(&images);
        gan_idx_free(&labels);
        return gan_error_set(err, GAN_ERR_NOMEM, "fashion-mnist: out of memory");
    }
    set->split = split;
    set->dir = dir_copy;
    set->label = "fashion-mnist";
    set->count = images.dims[0] >= 0 ? (size_t)images.dims[0] : 0;
    set->channels = 1;
    set->side = GAN_IMAGE_SIDE;
    set->sample_size = GAN_IMAGE_PIXELS;
    set->pixels = images.data;
    set->labels = labels.data;
    *out = set;
    return GAN_OK;
}

gan_status gan_image_set_wrap(const char *dir, enum gan_image_split split, const char *label,
                              size_t count, unsigned channels, unsigned side,
                              unsigned char *pixels, gan_image_set **out,
                              struct gan_error *err)
{
    *out = NULL;
    gan_image_set *set = calloc(1, sizeof *set);
    char *dir_copy = gan_strdup(dir ? dir : "");
    if (!set || !dir_copy) {
        free(set);
        free(dir_copy);
        free(pixels);
        return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory", label);
    }
    set->split = split;
    set->dir = dir_copy;
    set->label = label;
    set->count = count;
    set->channels = channels;
    set->side = side;
    set->sample_size = (size_t)channels * side * side;
    set->pixels = pixels;
    *out = set;
    return GAN_OK;
}

size_t gan_image_set_count(const gan_image_set *set)
{
    return set ? set->count : 0;
}

unsigned gan_image_set_channels(const gan_image_set *set)
{
    return set ? set->channels : 0;
}

unsigned gan_image_set_side(const gan_image_set *set)
{
    return set ? set->side : 0;
}

size_t gan_image_set_sample_size(const gan_image_set *set)
{
    return set ? set->sample_size : 0;
}

const char *gan_image_set_dir(const gan_image_set *set)
{
    return set ? set->dir : "";
}

enum gan_image_split gan_image_set_split(const gan_image_set *set)
{
    return set ? set->split : GAN_IMAGE_TRAIN;
}

const unsigned char *gan_image_set_raw(const gan_image_set *set, size_t i)
{
    return set && i < set->count ? set->pixels + i * set->sample_size : NULL;
}

int gan_image_set_label(const gan_image_set *set, size_t i)
{
    return set && set->labels && i < set->count ? set->labels[i] : -1;
}

float gan_image_pixel_value(unsigned char v)
{
    /* In double, then rounded once: 0 and 255 land on −1 and 1 exactly. */
    return (float)((double)v / 127.5 - 1.0);
}

/* The 256 scaled values, made once per call that copies images: exact, and the
 * copying loop has no division. */
static void fill_table(float table[256])
{
    for (int v = 0; v < 256; v++)
        table[v] = gan_image_pixel_value((unsigned char)v);
}

static void scale_image(const float table[256], const unsigned char *src, float *dst,
                        size_t n)
{
    for (size_t k = 0; k < n; k++)
        dst[k] = table[src[k]];
}

gan_status gan_image_set_copy(const gan_image_set *set, size_t first, size_t n, float *out,
                              int *labels, struct gan_error *err)
{
    if (!set || (n && !out))
        return gan_error_set(err, GAN_ERR_INVALID, "fashion-mnist: no data set or no output "
                             "buffer given");
    if (first > set->count || n > set->count - first)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: images %zu to %zu asked "
                             "for, but the %s split has %zu", set->label, first, first + n,
                             split_names[set->split], set->count);
    float table[256];
    fill_table(table);
    const size_t d = set->sample_size;
    for (size_t i = 0; i < n; i++) {
        scale_image(table, set->pixels + (first + i) * d, out + i * d, d);
        if (labels)
            labels[i] = set->labels ? set->labels[first + i] : -1;
    }
    return GAN_OK;
}

const char *gan_image_class_name(int label)
{
    static const char *const names[GAN_IMAGE_CLASSES] = {
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
    };
    return label >= 0 && label < GAN_IMAGE_CLASSES ? names[label] : "?";
}

/* ------------------------------------------------------------------ shuffling */

/* The shuffle's word stream: four words per Philox block. */
struct words {
    uint32_t key[2];
    uint32_t ctr[4];
    uint32_t block[4];
    int used;                       /* words of block already handed out */
};

static uint32_t next_word(struct words *w)
{
    if (w->used == 4) {
        gan_philox4x32_10(w->ctr, w->key, w->block);
        w->used = 0;
        w->ctr[0]++;                /* n < 2^32 items need far fewer than 2^32 blocks */
    }
    return w->block[w->used++];
}

/* Uniform on [0, range), range ≥ 1: Lemire's multiply-shift, rejecting the low products
 * that would make some results more likely than others. */
static uint32_t bounded(struct words *w, uint32_t range)
{
    uint64_t m = (uint64_t)next_word(w) * range;
    uint32_t low = (uint32_t)m;
    if (low < range) {
        uint32_t threshold = (uint32_t)(-range) % range;
        while (low < threshold) {
            m = (uint64_t)next_word(w) * range;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

void gan_image_shuffle(uint64_t seed, uint64_t epoch, uint32_t *order, size_t n)
{
    /* Counters (k, epoch low, epoch high, tag), as the header documents. */
    struct words w = {
        .key = { (uint32_t)seed, (uint32_t)(seed >> 32) },
        .ctr = { 0u, (uint32_t)epoch, (uint32_t)(epoch >> 32), GAN_IMAGE_SHUFFLE_TAG },
        .used = 4,
    };
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        uint32_t j = bounded(&w, (uint32_t)i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

gan_status gan_image_sampler_new(const gan_image_set *set, uint64_t seed,
                                 gan_image_sampler **out, struct gan_error *err)
{
    *out = NULL;
    if (!set || set->count == 0 || set->count > UINT32_MAX)
        return gan_error_set(err, GAN_ERR_INVALID, "fashion-mnist sampler: %s", !set ? "no "
                             "data set given" : "the data set must hold 1 to 2^32 − 1 images");
    gan_image_sampler *s = calloc(1, sizeof *s);
    if (s)
        s->order = malloc(set->count * sizeof *s->order);
    if (!s || !s->order) {
        gan_image_sampler_free(s);
        return gan_error_set(err, GAN_ERR_NOMEM, "fashion-mnist sampler: out of memory for "
                             "the order of %zu images", set->count);
    }
    s->set = set;
    s->seed = seed;
    gan_image_shuffle(seed, 0, s->order, set->count);
    *out = s;
    return GAN_OK;
}

void gan_image_sampler_free(gan_image_sampler *s)
{
    if (!s)
        return;
    free(s->order);
    free(s);
}

gan_status gan_image_sampler_next(gan_image_sampler *s, size_t batch, float *images,
                                  int *labels, struct gan_error *err)
{
    if (!s || !images)
        return gan_error_set(err, GAN_ERR_INVALID, "fashion-mnist sampler: no sampler or no "
                             "output buffer given");
    const gan_image_set *set = s->set;
    if (batch == 0 || batch > set->count)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: a batch of %zu from the "
                             "%s split of %zu images; set data.batch_size to 1 … %zu",
                             set->label, batch, split_names[set->split], set->count,
                             set->count);
    if (s->pos.index + batch > set->count) {
        s->pos.epoch++;
        s->pos.index = 0;
        gan_image_shuffle(s->seed, s->pos.epoch, s->order, set->count);
    }
    float table[256];
    fill_table(table);
    const size_t d = set->sample_size;
    for (size_t i = 0; i < batch; i++) {
        size_t k = s->order[s->pos.index + i];
        scale_image(table, set->pixels + k * d, images + i * d, d);
        if (labels)
            labels[i] = set->labels ? set->labels[k] : -1;
    }
    s->pos.index += batch;
    return GAN_OK;
}

struct gan_image_position gan_image_sampler_tell(const gan_image_sampler *s)
{
    struct gan_image_position none = { 0, 0 };
    return s ? s->pos : none;
}

gan_status gan_image_sampler_seek(gan_image_sampler *s, struct gan_image_position pos,
                                  struct gan_error *err)
{
    if (!s)
        return gan_error_set(err, GAN_ERR_INVALID, "fashion-mnist sampler: none given");
    /* The position is the checkpoint's, which the user did not write: it is named by
     * its entries, never quoted. */
    if (pos.index > s->set->count)
        return gan_error_set(err, GAN_ERR_INVALID, "%s: the saved data position "
                             "(data.epoch, data.index) lies past the end of the %s "
                             "split's %zu images: the checkpoint was made with another "
                             "data set or is damaged; resume with the data.name and "
                             "data.path the run was trained with, or start a new run",
                             s->set->label, split_names[s->set->split], s->set->count);
    if (pos.epoch != s->pos.epoch)
        gan_image_shuffle(s->seed, pos.epoch, s->order, s->set->count);
    s->pos = pos;
    return GAN_OK;
}

const uint32_t *gan_image_sampler_order(const gan_image_sampler *s)
{
    return s ? s->order : NULL;
}
