/* SPDX-License-Identifier: MIT */
/* toy_metrics.c — quality of generated 2-D toy points: modes covered, high-quality
 * share and sliced Wasserstein-1 distance, plus the score of real data against itself. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/sort_doubles.h"
#include "eval/toy_metrics.h"

static gan_status metric_fail(struct gan_error *err, gan_status st, const char *what)
{
    return gan_error_set(err, st, "toy metrics: %s", what);
}

static int finite_points(const float *xy, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++)
        if (!isfinite(xy[i]))
            return 0;
    return 1;
}

/* W1 between the empirical distributions of sorted a (n values) and sorted b (m):
 * the quantile functions are steps at q = i/n and q = j/m, so the integral is a
 * sum over the merged steps. Positions are counted in units of 1/(n·m) so that the
 * step edges are exact integers. */
static double w1_sorted(const double *a, size_t n, const double *b, size_t m)
{
    uint64_t pos = 0;
    double sum = 0.0;
    size_t i = 0, j = 0;
    while (i < n && j < m) {
        uint64_t end_a = (uint64_t)(i + 1) * m, end_b = (uint64_t)(j + 1) * n;
        uint64_t next = end_a < end_b ? end_a : end_b;
        sum += (double)(next - pos) * fabs(a[i] - b[j]);
        pos = next;
        if (end_a == next)
            i++;
        if (end_b == next)
            j++;
    }
    return sum / ((double)n * (double)m);
}

gan_status gan_toy_sliced_w1(const float *a, size_t na, const float *b, size_t nb,
                             double *out, struct gan_error *err)
{
    *out = NAN;
    if (!a || !b || na == 0 || nb == 0)
        return metric_fail(err, GAN_ERR_INVALID,
                           "the sliced W1 distance needs two non-empty point sets");
    /* n·m must fit the integer step positions of w1_sorted. */
    if (na > UINT32_MAX || nb > UINT32_MAX)
        return metric_fail(err, GAN_ERR_INVALID,
                           "the sliced W1 distance takes at most 2^32 − 1 points a set; "
                           "pass a subsample");
    if (!finite_points(a, na) || !finite_points(b, nb))
        return GAN_OK; /* a NaN or inf point has no distance: report NaN */
    double *pa = malloc(na * sizeof *pa), *pb = malloc(nb * sizeof *pb);
    uint64_t *scratch = malloc(2 * (na > nb ? na : nb) * sizeof *scratch);
    if (!pa || !pb || !scratch) {
        free(pa);
        free(pb);
        free(scratch);
        return metric_fail(err, GAN_ERR_NOMEM, "out of memory for the projections");
    }
    const double two_pi = 6.283185307179586476925286766559;
    double total = 0.0;
    for (unsigned k = 0; k < GAN_TOY_SW_DIRECTIONS; k++) {
        uint32_t w[4];
        gan_philox_block(GAN_TOY_SW_SEED, k, w);
        double theta = two_pi * gan_philox_word_uniform(w[0]);
        double c = cos(theta), s = sin(theta);
        for (size_t i = 0; i < na; i++)
            pa[i] = c * a[2 * i] + s * a[2 * i + 1];
        for (size_t i = 0; i < nb; i++)
            pb[i] = c * b[2 * i] + s * b[2 * i + 1];
        gan_sort_doubles(pa, na, scratch);
        gan_sort_doubles(pb, nb, scratch);
        total += w1_sorted(pa, na, pb, nb);
    }
    free(pa);
    free(pb);
    free(scratch);
    *out = total / GAN_TOY_SW_DIRECTIONS;
    return GAN_OK;
}

gan_status gan_toy_quality(enum gan_toy_kind kind, const float *fake, size_t n_fake,
                           const float *real, size_t n_real, struct gan_toy_quality *out,
                           struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    out->modes_covered = -1;
    out->high_quality_pct = NAN;
    out->sliced_w1 = NAN;
    if ((unsigned)kind >= GAN_TOY_KIND_COUNT)
        return metric_fail(err, GAN_ERR_INVALID, "the data set kind is not a toy data set");
    if (!fake || !real || n_fake == 0 || n_real == 0)
        return metric_fail(err, GAN_ERR_INVALID,
                           "pass at least one generated and one real point");

    for (size_t i = 0; i < n_fake; i++)
        if (!isfinite(fake[2 * i]) || !isfinite(fake[2 * i + 1]))
            out->nonfinite++;

    struct gan_toy_modes modes;
    gan_toy_modes(kind, &modes);
    if (modes.count > 0) {
        double r2 = GAN_TOY_HQ_SIGMAS * modes.sigma * GAN_TOY_HQ_SIGMAS * modes.sigma;
        size_t good = 0;
        for (size_t i = 0; i < n_fake; i++) {
            double x = fake[2 * i], y = fake[2 * i + 1];
            if (!isfinite(x) || !isfinite(y))
                continue;
            /* The 3σ discs of different centres are far apart, so the nearest centre
             * is the only one a point can be close enough to. */
            size_t best = 0;
            double best_d2 = INFINITY;
            for (size_t c = 0; c < modes.count; c++) {
                double dx = x - modes.xy[c][0], dy = y - modes.xy[c][1];
                double d2 = dx * dx + dy * dy;
                if (d2 < best_d2) {
                    best_d2 = d2;
                    best = c;
                }
            }
            if (best_d2 <= r2) {
                out->hits[best]++;
                good++;
            }
        }
        out->has_modes = 1;
        out->modes_total = modes.count;
        /* hits / n ≥ 20 / 2500, kept in integers. */
        uint64_t per = GAN_TOY_MODE_PER_SAMPLES / GAN_TOY_MODE_MIN_HITS;
        out->mode_min_hits = (size_t)((n_fake + per - 1) / per);
        out->modes_covered = 0;
        for (size_t c = 0; c < modes.count; c++)
            if ((uint64_t)out->hits[c] * per >= n_fake)
                out->modes_covered++;
        out->high_quality_pct = 100.0 * (double)good / (double)n_fake;
    }
    return gan_toy_sliced_w1(fake, n_fake, real, n_real, &out->sliced_w1, err);
}

gan_status gan_toy_quality_floor(enum gan_toy_kind kind, uint64_t seed, uint64_t first_block,
                                 size_t n, struct gan_toy_quality *out,
                                 struct gan_error *err)
{
    memset(out, 0, sizeof *out);
    out->modes_covered = -1;
    out->high_quality_pct = NAN;
    out->sliced_w1 = NAN;
    if (n == 0 || n > SIZE_MAX / (4 * sizeof(float)))
        return metric_fail(err, GAN_ERR_INVALID,
                           "the real-vs-real floor needs a sample count of at least 1");
    gan_toy_sampler *s;
    gan_status st = gan_toy_sampler_new(kind, seed, first_block, &s, err);
    if (st != GAN_OK)
        return st;
    float *xy = malloc(4 * n * sizeof *xy);
    if (!xy) {
        gan_toy_sampler_free(s);
        return metric_fail(err, GAN_ERR_NOMEM, "out of memory for two sets of real points");
    }
    st = gan_toy_sample(s, 2 * n, xy, err);
    if (st == GAN_OK)
        st = gan_toy_quality(kind, xy, n, xy + 2 * n, n, out, err);
    free(xy);
    gan_toy_sampler_free(s);
    return st;
}
