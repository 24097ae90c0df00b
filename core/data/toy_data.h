/* SPDX-License-Identifier: MIT */
/* toy_data.h — the WGAN-GP paper's 2-D toy data sets (8gaussians, 25gaussians,
 * swissroll), drawn from the Philox4x32-10 stream so that a seed fixes every point. */
#ifndef GANCTL_CORE_TOY_DATA_H
#define GANCTL_CORE_TOY_DATA_H

#include <ganctl/philox.h> /* every random number of the toy code comes from it */
#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"

enum gan_toy_kind {
    GAN_TOY_8GAUSSIANS = 0,   /* 8 modes on a circle of radius 2, σ 0.02, all / 1.414 */
    GAN_TOY_25GAUSSIANS,      /* a 5×5 grid spaced 2, σ 0.05, a fixed set of 100,000, / 2.828 */
    GAN_TOY_SWISSROLL,        /* scikit-learn's make_swiss_roll(noise = 0.25), x and z, / 7.5 */
    GAN_TOY_KIND_COUNT
};

/* The number of points in 25gaussians' fixed set (the paper's 100,000). */
#define GAN_TOY_25_SET_SIZE 100000u

/* Philox blocks one Fisher–Yates shuffle of the fixed set takes: one 32-bit word per
 * swap, 99,999 swaps, four words a block. */
#define GAN_TOY_25_SHUFFLE_BLOCKS ((GAN_TOY_25_SET_SIZE - 1u + 3u) / 4u)

/* The most modes any toy data set has. */
#define GAN_TOY_MAX_MODES 25

/* The name a data set goes by in configurations ("8gaussians"); NULL outside the enum. */
const char *gan_toy_kind_name(enum gan_toy_kind kind);

/* Every fallible call below explains a failure in `err` (NULL: discard the message). */

/* The data set called `name`. An unknown name is GAN_ERR_CONFIG, with the list of
 * valid names in the message. */
gan_status gan_toy_dataset_from_name(const char *name, enum gan_toy_kind *out,
                                     struct gan_error *err);

/* The modes of a data set in the normalised space the samplers produce. */
struct gan_toy_modes {
    size_t count;                 /* 8 or 25; 0 for a data set without modes (swissroll) */
    double sigma;                 /* std of the noise around a centre, per coordinate, in
                                     normalised units; 0 when count is 0 */
    double xy[GAN_TOY_MAX_MODES][2];  /* the first `count` centres */
};

/* Fills `out` for `kind`. A kind outside the enum gives count 0. */
void gan_toy_modes(enum gan_toy_kind kind, struct gan_toy_modes *out);

/* A source of toy points. It reads the Philox stream of its seed from a block counter
 * that sampling advances:
 *   8gaussians, swissroll: point i of a call uses block (counter + i): words 0 and 1
 *     give the two noise normals (Box–Muller), word 2 the uniform that picks the
 *     centre (8gaussians) or the position t along the roll (swissroll); word 3 is
 *     unused. So a call for n points advances the counter by n.
 *   25gaussians: at creation the fixed set is built from blocks [first, first +
 *     100,000) (point i: centre i mod 25 in the paper's loop order, noise from words
 *     0 and 1 of its block, so each centre has exactly 4,000 points) and shuffled
 *     with the next GAN_TOY_25_SHUFFLE_BLOCKS blocks. Sampling takes points in that
 *     order; when the set runs out it is reshuffled (from the fixed set's original
 *     order) with the next GAN_TOY_25_SHUFFLE_BLOCKS blocks, and a call may span the
 *     boundary. Only reshuffles advance the counter.
 * Give the data a seed of their own, or a block range no other consumer of the same
 * seed reads. */
typedef struct gan_toy_sampler gan_toy_sampler;

/* Where a sampler is in its stream: all a checkpoint needs to continue the same
 * sequence (together with the kind, seed and first block it was created with). */
struct gan_toy_state {
    uint64_t block;               /* the next unused block of the stream */
    uint64_t shuffle_block;       /* 25gaussians: first block of the current shuffle; else 0 */
    uint64_t cursor;              /* 25gaussians: points of the current pass taken; else 0 */
};

/* A sampler for `kind` reading `seed`'s stream from block `first_block`. */
gan_status gan_toy_sampler_new(enum gan_toy_kind kind, uint64_t seed, uint64_t first_block,
                               gan_toy_sampler **out, struct gan_error *err);
void gan_toy_sampler_free(gan_toy_sampler *s);

enum gan_toy_kind gan_toy_sampler_kind(const gan_toy_sampler *s);

/* Writes n points to xy (n × 2 floats, x then y) and advances the stream. */
gan_status gan_toy_sample(gan_toy_sampler *s, size_t n, float *xy, struct gan_error *err);

void gan_toy_sampler_get_state(const gan_toy_sampler *s, struct gan_toy_state *out);

/* Moves the sampler to a saved state. The sampler must have been created with the
 * same kind, seed and first block as the one that saved it; a state that no such
 * sampler could have reached is GAN_ERR_INVALID and leaves the sampler unchanged. */
gan_status gan_toy_sampler_set_state(gan_toy_sampler *s, const struct gan_toy_state *state,
                                     struct gan_error *err);

#endif
