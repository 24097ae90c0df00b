/* SPDX-License-Identifier: MIT */
/* toy_metrics.h — how well generated 2-D toy points match the data: modes covered,
 * the share of high-quality samples, and the sliced Wasserstein-1 distance. */
#ifndef GANCTL_CORE_TOY_METRICS_H
#define GANCTL_CORE_TOY_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"
#include "data/toy_data.h"

/* The sliced distance projects onto this many unit directions. Direction k has the
 * angle 2π·u, u the uniform of word 0 of block k of the Philox stream for seed
 * GAN_TOY_SW_SEED: uniformly random, and the same in every run and on every machine. */
#define GAN_TOY_SW_DIRECTIONS 128u
#define GAN_TOY_SW_SEED UINT64_C(0x746f792d73773100) /* "toy-sw1\0" */

/* A mode is covered when at least GAN_TOY_MODE_MIN_HITS of GAN_TOY_MODE_PER_SAMPLES
 * samples lie within GAN_TOY_HQ_SIGMAS σ of its centre (the usual criterion of the
 * mode-collapse literature on these toys). For another sample count n the bar scales
 * in proportion: hits · 2500 ≥ 20 · n, i.e. ceil(n / 125) hits. */
#define GAN_TOY_MODE_MIN_HITS 20u
#define GAN_TOY_MODE_PER_SAMPLES 2500u
#define GAN_TOY_HQ_SIGMAS 3.0

struct gan_toy_quality {
    int has_modes;                /* 0 for swissroll: the mode fields below are not defined */
    size_t modes_total;           /* 8 or 25; 0 without modes */
    long modes_covered;           /* covered modes; -1 without modes */
    size_t mode_min_hits;         /* hits a mode needed at this sample count; 0 without modes */
    double high_quality_pct;      /* % of samples within 3σ of some centre; NaN without modes.
                                     A non-finite sample is never high quality. */
    double sliced_w1;             /* sliced W1 distance to the real points, in data units;
                                     NaN when any point is not finite */
    size_t nonfinite;             /* generated samples with a NaN or infinite coordinate */
    size_t hits[GAN_TOY_MAX_MODES];  /* samples within 3σ of each centre */
};

/* The sliced Wasserstein-1 distance between point sets a (na × 2 floats) and b
 * (nb × 2): the mean over the GAN_TOY_SW_DIRECTIONS directions θ of the 1-D W1
 * between the projections, ∫|F⁻¹(q) − G⁻¹(q)| dq over q in (0, 1); for equal sizes
 * that is the mean |sorted a − sorted b|. NaN when a point is not finite. Fails
 * (GAN_ERR_INVALID) on an empty set, GAN_ERR_NOMEM when scratch memory is short. */
gan_status gan_toy_sliced_w1(const float *a, size_t na, const float *b, size_t nb,
                             double *out, struct gan_error *err);

/* All metrics of generated points `fake` (n_fake × 2) against fresh real points
 * `real` (n_real × 2) from the data set `kind`. Failures are explained in `err`
 * (NULL: discard the message), as in every call here. */
gan_status gan_toy_quality(enum gan_toy_kind kind, const float *fake, size_t n_fake,
                           const float *real, size_t n_real, struct gan_toy_quality *out,
                           struct gan_error *err);

/* The same metrics for two independent real sets of n points each, drawn from a new
 * sampler for (kind, seed, first_block): the values a perfect generator would score
 * at this sample size. */
gan_status gan_toy_quality_floor(enum gan_toy_kind kind, uint64_t seed, uint64_t first_block,
                                 size_t n, struct gan_toy_quality *out,
                                 struct gan_error *err);

#endif
