/* SPDX-License-Identifier: MIT */
/* toy_data.c — the WGAN-GP paper's 2-D toy data sets (its toy code's generators),
 * drawn from the Philox4x32-10 stream of include/ganctl/backend.h. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/toy_data.h"

#include <ganctl/philox.h>

/* ------------------------------------------------------------------ the data sets */

static const char *const kind_names[GAN_TOY_KIND_COUNT] = {
    [GAN_TOY_8GAUSSIANS] = "8gaussians",
    [GAN_TOY_25GAUSSIANS] = "25gaussians",
    [GAN_TOY_SWISSROLL] = "swissroll",
};

/* The paper's toy code divides each set by these ("stdev", it says; 1.414 and 2.828 are the
 * paper's rounded √2 and 2√2, kept as written so that the points match). */
#define DIV_8 1.414
#define DIV_25 2.828
#define DIV_SWISS 7.5
#define SCALE_8 2.0
#define NOISE_8 0.02
#define NOISE_25 0.05
#define NOISE_SWISS 0.25

const char *gan_toy_kind_name(enum gan_toy_kind kind)
{
    if ((unsigned)kind >= GAN_TOY_KIND_COUNT)
        return NULL;
    return kind_names[kind];
}

gan_status gan_toy_dataset_from_name(const char *name, enum gan_toy_kind *out,
                                     struct gan_error *err)
{
    for (unsigned k = 0; name && k < GAN_TOY_KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (enum gan_toy_kind)k;
            return GAN_OK;
        }
    }
    return gan_error_set(err, GAN_ERR_CONFIG,
                         "unknown toy data set \"%s\"; valid names are %s, %s and %s",
                         name ? name : "(null)", kind_names[0], kind_names[1], kind_names[2]);
}

/* The 8 centres before scaling, in the paper's toy code's order. */
static void centre_8(unsigned i, double c[2])
{
    const double h = 0.70710678118654752440; /* 1/√2 */
    static const signed char unit[8][2] = {
        { 1, 0 }, { -1, 0 }, { 0, 1 }, { 0, -1 }, { 1, 1 }, { 1, -1 }, { -1, 1 }, { -1, -1 },
    };
    double f = i < 4 ? 1.0 : h;
    c[0] = SCALE_8 * f * unit[i][0];
    c[1] = SCALE_8 * f * unit[i][1];
}

/* The 25 centres in the order of the paper's toy code's loops (x outer, y inner). */
static void centre_25(unsigned i, double c[2])
{
    c[0] = 2.0 * ((int)(i / 5u) - 2);
    c[1] = 2.0 * ((int)(i % 5u) - 2);
}

void gan_toy_modes(enum gan_toy_kind kind, struct gan_toy_modes *out)
{
    memset(out, 0, sizeof *out);
    switch (kind) {
    case GAN_TOY_8GAUSSIANS:
        out->count = 8;
        out->sigma = NOISE_8 / DIV_8;
        for (unsigned i = 0; i < 8; i++) {
            centre_8(i, out->xy[i]);
            out->xy[i][0] /= DIV_8;
            out->xy[i][1] /= DIV_8;
        }
        break;
    case GAN_TOY_25GAUSSIANS:
        out->count = 25;
        out->sigma = NOISE_25 / DIV_25;
        for (unsigned i = 0; i < 25; i++) {
            centre_25(i, out->xy[i]);
            out->xy[i][0] /= DIV_25;
            out->xy[i][1] /= DIV_25;
        }
        break;
    default:
        break; /* swissroll is a continuous curve: no modes */
    }
}

/* ------------------------------------------------------------------ one point per block */

/* 8gaussians: random.choice over the 8 centres is uniform, so the centre is
 * floor(8u), clamped because u < 1 is only 1 − 2^-25 away from it. */
static void point_8(uint64_t seed, uint64_t block, float xy[2])
{
    uint32_t w[4];
    double z[2], c[2];
    gan_philox_block(seed, block, w);
    gan_philox_word_normals(w[0], w[1], z);
    unsigned i = (unsigned)(gan_philox_word_uniform(w[2]) * 8.0);
    centre_8(i < 8 ? i : 7, c);
    xy[0] = (float)((c[0] + NOISE_8 * z[0]) / DIV_8);
    xy[1] = (float)((c[1] + NOISE_8 * z[1]) / DIV_8);
}

/* scikit-learn's make_swiss_roll: t = 1.5π(1 + 2u), (t cos t, 21u', t sin t) plus
 * N(0, noise²) on each coordinate. The paper's toy code keeps columns 0 and 2, so the height
 * 21u' and its noise are never drawn: they would not change a kept value. */
static void point_swiss(uint64_t seed, uint64_t block, float xy[2])
{
    const double pi = 3.14159265358979323846;
    uint32_t w[4];
    double z[2];
    gan_philox_block(seed, block, w);
    gan_philox_word_normals(w[0], w[1], z);
    double t = 1.5 * pi * (1.0 + 2.0 * gan_philox_word_uniform(w[2]));
    xy[0] = (float)((t * cos(t) + NOISE_SWISS * z[0]) / DIV_SWISS);
    xy[1] = (float)((t * sin(t) + NOISE_SWISS * z[1]) / DIV_SWISS);
}

/* ------------------------------------------------------------------ the sampler */

struct gan_toy_sampler {
    enum gan_toy_kind kind;
    uint64_t seed;
    uint64_t first_block;
    struct gan_toy_state state;
    float *set;                   /* 25gaussians: the fixed set in creation order, 2 floats a point */
    uint32_t *order;              /* 25gaussians: the current pass's permutation of `set` */
};

static gan_status sampler_fail(const gan_toy_sampler *s, struct gan_error *err, gan_status st,
                               const char *what)
{
    return gan_error_set(err, st, "toy data %s: %s", kind_names[s->kind], what);
}

/* Fisher–Yates over the fixed set, drawn from the blocks from `block` on, always
 * starting from the set's creation order, so that the permutation of a pass is a
 * function of its first block alone and a saved state can rebuild it. Swap t (for
 * position i = N − 1 − t) takes the whole word t and maps it to [0, i] by the
 * multiply-shift (w · (i + 1)) >> 32: 32 bits instead of the 24 a uniform keeps, so
 * that the bias is below (i + 1) / 2^32 ≈ 2.3e-5 rather than 0.6 %. */
static void shuffle_25(const gan_toy_sampler *s, uint64_t block, uint32_t *order)
{
    const uint32_t n = GAN_TOY_25_SET_SIZE;
    uint32_t w[4];
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    for (uint32_t t = 0; t + 1 < n; t++) {
        if (t % 4 == 0)
            gan_philox_block(s->seed, block + t / 4, w);
        uint32_t i = n - 1 - t;
        uint32_t j = (uint32_t)(((uint64_t)w[t % 4] * (uint64_t)(i + 1)) >> 32);
        uint32_t tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

/* The fixed set as the paper's toy code builds it: 4,000 rounds of the 25 centres, each point
 * its centre plus N(0, 0.05²) noise, then divided by 2.828. */
static void build_25(gan_toy_sampler *s)
{
    for (uint32_t i = 0; i < GAN_TOY_25_SET_SIZE; i++) {
        uint32_t w[4];
        double z[2], c[2];
        gan_philox_block(s->seed, s->first_block + i, w);
        gan_philox_word_normals(w[0], w[1], z);
        centre_25(i % 25u, c);
        s->set[2 * i] = (float)((c[0] + NOISE_25 * z[0]) / DIV_25);
        s->set[2 * i + 1] = (float)((c[1] + NOISE_25 * z[1]) / DIV_25);
    }
}

/* Whether `count` more blocks from `start` stay inside the 2^64-block stream. */
static int blocks_fit(uint64_t start, uint64_t count)
{
    return count <= UINT64_MAX - start;
}

gan_status gan_toy_sampler_new(enum gan_toy_kind kind, uint64_t seed, uint64_t first_block,
                               gan_toy_sampler **out, struct gan_error *err)
{
    *out = NULL;
    if ((unsigned)kind >= GAN_TOY_KIND_COUNT)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "toy data: kind %d is not a toy data set; use "
                             "gan_toy_dataset_from_name to get one", (int)kind);
    gan_toy_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return gan_error_set(err, GAN_ERR_NOMEM, "toy data: out of memory for a sampler");
    s->kind = kind;
    s->seed = seed;
    s->first_block = first_block;
    s->state.block = first_block;
    if (kind == GAN_TOY_25GAUSSIANS) {
        if (!blocks_fit(first_block, (uint64_t)GAN_TOY_25_SET_SIZE + GAN_TOY_25_SHUFFLE_BLOCKS)) {
            gan_status st = sampler_fail(s, err, GAN_ERR_INVALID,
                                         "the first block leaves no room in the stream for "
                                         "the fixed set and its shuffle; start lower");
            free(s);
            return st;
        }
        s->set = malloc((size_t)GAN_TOY_25_SET_SIZE * 2 * sizeof *s->set);
        s->order = malloc((size_t)GAN_TOY_25_SET_SIZE * sizeof *s->order);
        if (!s->set || !s->order) {
            gan_status st = sampler_fail(s, err, GAN_ERR_NOMEM,
                                         "out of memory for the fixed set of 100,000 points");
            gan_toy_sampler_free(s);
            return st;
        }
        build_25(s);
        s->state.shuffle_block = first_block + GAN_TOY_25_SET_SIZE;
        s->state.block = s->state.shuffle_block + GAN_TOY_25_SHUFFLE_BLOCKS;
        shuffle_25(s, s->state.shuffle_block, s->order);
    }
    *out = s;
    return GAN_OK;
}

void gan_toy_sampler_free(gan_toy_sampler *s)
{
    if (!s)
        return;
    free(s->set);
    free(s->order);
    free(s);
}

enum gan_toy_kind gan_toy_sampler_kind(const gan_toy_sampler *s)
{
    return s->kind;
}

/* 25gaussians. The paper's toy code shuffles its set once and then repeats it forever in the
 * same order, batch after batch, dropping the last 100,000 mod BATCH_SIZE points of
 * every pass (160 for its batch of 256). Here each pass uses every point once and
 * the next pass is a fresh shuffle, so no point is favoured and batches do not
 * repeat with the period of the set. */
static gan_status sample_25(gan_toy_sampler *s, size_t n, float *xy, struct gan_error *err)
{
    for (size_t k = 0; k < n; k++) {
        if (s->state.cursor == GAN_TOY_25_SET_SIZE) {
            if (!blocks_fit(s->state.block, GAN_TOY_25_SHUFFLE_BLOCKS))
                return sampler_fail(s, err, GAN_ERR_INVALID,
                                    "the block counter has reached the end of the stream");
            s->state.shuffle_block = s->state.block;
            s->state.block += GAN_TOY_25_SHUFFLE_BLOCKS;
            s->state.cursor = 0;
            shuffle_25(s, s->state.shuffle_block, s->order);
        }
        uint32_t p = s->order[s->state.cursor++];
        xy[2 * k] = s->set[2 * p];
        xy[2 * k + 1] = s->set[2 * p + 1];
    }
    return GAN_OK;
}

gan_status gan_toy_sample(gan_toy_sampler *s, size_t n, float *xy, struct gan_error *err)
{
    if (n == 0)
        return GAN_OK;
    if (!xy)
        return sampler_fail(s, err, GAN_ERR_INVALID, "no output array for the points; pass n × 2 floats");
    if (s->kind == GAN_TOY_25GAUSSIANS)
        return sample_25(s, n, xy, err);
    if (!blocks_fit(s->state.block, n))
        return sampler_fail(s, err, GAN_ERR_INVALID,
                            "the block counter would run past the end of the stream; "
                            "start from a lower block");
    void (*point)(uint64_t, uint64_t, float *) =
        s->kind == GAN_TOY_8GAUSSIANS ? point_8 : point_swiss;
    for (size_t i = 0; i < n; i++)
        point(s->seed, s->state.block + i, xy + 2 * i);
    s->state.block += n;
    return GAN_OK;
}

void gan_toy_sampler_get_state(const gan_toy_sampler *s, struct gan_toy_state *out)
{
    *out = s->state;
}

gan_status gan_toy_sampler_set_state(gan_toy_sampler *s, const struct gan_toy_state *state,
                                     struct gan_error *err)
{
    if (s->kind != GAN_TOY_25GAUSSIANS) {
        if (state->shuffle_block != 0 || state->cursor != 0 || state->block < s->first_block)
            return sampler_fail(s, err, GAN_ERR_INVALID,
                                "the saved data position (data.block, data.shuffle_block, "
                                "data.cursor) is not one this data set reaches with this "
                                "run.seed after any number of iterations: resume with the "
                                "data.name and run.seed the run was trained with");
        s->state = *state;
        return GAN_OK;
    }
    /* Passes start at first + N, first + N + S, …; a state sits inside one of them. */
    uint64_t base = s->first_block + GAN_TOY_25_SET_SIZE;
    int ok = state->shuffle_block >= base
             && (state->shuffle_block - base) % GAN_TOY_25_SHUFFLE_BLOCKS == 0
             && blocks_fit(state->shuffle_block, GAN_TOY_25_SHUFFLE_BLOCKS)
             && state->block == state->shuffle_block + GAN_TOY_25_SHUFFLE_BLOCKS
             && state->cursor <= GAN_TOY_25_SET_SIZE;
    if (!ok)
        return sampler_fail(s, err, GAN_ERR_INVALID,
                            "the saved data position (data.block, data.shuffle_block, "
                            "data.cursor) is not one this data set reaches with this "
                            "run.seed after any number of iterations (its cursor must lie "
                            "within a pass over the set's samples): resume with the "
                            "data.name and run.seed the run was trained with");
    if (state->shuffle_block != s->state.shuffle_block)
        shuffle_25(s, state->shuffle_block, s->order);
    s->state = *state;
    return GAN_OK;
}
