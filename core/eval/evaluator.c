/* SPDX-License-Identifier: MIT */
/* evaluator.c — the evaluation of a generator against held-out data: its sets and floors,
 * made once, and each evaluation's generation in chunks and scores. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "eval/evaluator.h"

struct gan_evaluator {
    struct gan_evaluator_spec spec;   /* n and chunk resolved */
    float *real;                  /* the toys' held-out points, n × 2 */
    float *fake;                  /* the last evaluation's samples, n × sample_size */
    struct gan_toy_modes modes;
    struct gan_toy_quality toy_floor;
};

/* The context's failure as the call's error; the context is cleared for the next step. */
static gan_status ctx_fail(gan_ctx *ctx, struct gan_error *err, const char *doing)
{
    gan_status st = gan_ctx_status(ctx);
    if (st == GAN_OK)
        st = GAN_ERR_INTERNAL;
    gan_error_set(err, st, "%s: %s", doing, gan_ctx_error(ctx));
    gan_ctx_clear_error(ctx);
    return st;
}

gan_status gan_eval_generate(const struct gan_eval_generator *g, size_t n, uint64_t seed,
                             uint64_t offset, size_t chunk, float *samples, float *z_out,
                             struct gan_error *err)
{
    gan_ctx *ctx = g->ctx;
    const size_t d = g->sample_size, zd = g->z_dim;
    if (chunk == 0)
        chunk = n ? n : 1;
    for (size_t at = 0; at < n; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        int64_t dims[2] = { (int64_t)m, (int64_t)zd };
        gan_ctx_no_grad_push(ctx);
        gan_tensor *z = gan_tensor_normal(ctx, GAN_F32, 2, dims, seed, offset, 0.0f, 1.0f);
        gan_tensor *fake = z ? g->forward(g->self, z) : NULL;
        gan_ctx_no_grad_pop(ctx);
        /* The next chunk reads on from the next whole block, as one draw of the
         * training loop's z does (4 normals a block). */
        offset += (uint64_t)(m * zd + 3) / 4;
        if (!fake || gan_tensor_to_host(ctx, fake, samples + at * d, m * d) != GAN_OK ||
            (z_out && gan_tensor_to_host(ctx, z, z_out + at * zd, m * zd) != GAN_OK))
            return ctx_fail(ctx, err, "generating samples");
        gan_ctx_step_end(ctx);
    }
    return GAN_OK;
}

void gan_evaluator_free(gan_evaluator *e)
{
    if (!e)
        return;
    free(e->real);
    free(e->fake);
    free(e);
}

/* The toys' held-out points and floor, from the run's stream at their own offsets so
 * that they never meet a training draw. */
static gan_status make_toy_sets(gan_evaluator *e, struct gan_error *err)
{
    const struct gan_evaluator_spec *sp = &e->spec;
    gan_toy_modes(sp->kind, &e->modes);
    e->real = malloc(sp->n * 2 * sizeof *e->real);
    if (!e->real)
        return gan_error_nomem(err, "the evaluation's held-out points");
    gan_toy_sampler *held_out;
    gan_status st = gan_toy_sampler_new(sp->kind, sp->seed, sp->real_offset, &held_out, err);
    if (st != GAN_OK)
        return st;
    st = gan_toy_sample(held_out, sp->n, e->real, err);
    gan_toy_sampler_free(held_out);
    if (st == GAN_OK)
        st = gan_toy_quality_floor(sp->kind, sp->seed, sp->floor_offset, sp->n, &e->toy_floor,
                                   err);
    return st;
}

gan_status gan_evaluator_new(const struct gan_evaluator_spec *spec, gan_evaluator **out,
                             struct gan_error *err)
{
    *out = NULL;
    if (!spec->generator.forward || !spec->generator.ctx)
        return gan_error_set(err, GAN_ERR_INVALID, "an evaluation needs a generator to run");
    gan_evaluator *e = calloc(1, sizeof *e);
    if (!e)
        return gan_error_nomem(err, "the evaluation");
    e->spec = *spec;
    if (e->spec.n == 0)
        e->spec.n = spec->images ? gan_image_metrics_n(spec->images) : GAN_EVAL_SAMPLES;
    if (e->spec.chunk == 0)
        e->spec.chunk = spec->images ? GAN_EVAL_CHUNK : e->spec.n;
    gan_status st = GAN_OK;
    if (e->spec.n < 2)
        st = gan_error_set(err, GAN_ERR_INVALID,
                           "an evaluation compares 2 samples at least, not %zu", e->spec.n);
    else if (!spec->images)
        st = make_toy_sets(e, err);
    if (st == GAN_OK) {
        e->fake = malloc(e->spec.n * spec->generator.sample_size * sizeof *e->fake);
        if (!e->fake)
            st = gan_error_nomem(err, "the evaluation's samples");
    }
    if (st != GAN_OK) {
        gan_evaluator_free(e);
        return st;
    }
    *out = e;
    return GAN_OK;
}

void gan_evaluator_floors(const gan_evaluator *e, struct gan_eval_quality *out)
{
    memset(out, 0, sizeof *out);
    const gan_image_metrics *m = e->spec.images;
    out->is_image = m != NULL;
    out->has_frechet = m && gan_image_metrics_has_frechet(m);
    out->samples = e->spec.n;
    /* The image metrics measure their floors at the n of their last evaluation. */
    if (m)
        out->image_floor = gan_image_metrics_floor(m);
    else
        out->toy_floor = e->toy_floor;
}

gan_status gan_evaluator_run(gan_evaluator *e, struct gan_eval_quality *out,
                             struct gan_error *err)
{
    const struct gan_evaluator_spec *sp = &e->spec;
    struct gan_toy_quality toy;
    struct gan_image_quality image;
    gan_status st = gan_eval_generate(&sp->generator, sp->n, sp->seed, sp->z_offset, sp->chunk,
                                      e->fake, NULL, err);
    if (st == GAN_OK)
        st = sp->images ? gan_image_metrics_eval(sp->images, e->fake, sp->n, &image, err)
                        : gan_toy_quality(sp->kind, e->fake, sp->n, e->real, sp->n, &toy, err);
    if (st != GAN_OK)
        return st;
    gan_evaluator_floors(e, out);
    if (sp->images)
        out->image = image;
    else
        out->toy = toy;
    return GAN_OK;
}

size_t gan_evaluator_samples(const gan_evaluator *e)
{
    return e->spec.n;
}

const float *gan_evaluator_real(const gan_evaluator *e)
{
    return e->real;
}

const struct gan_toy_modes *gan_evaluator_modes(const gan_evaluator *e)
{
    return &e->modes;
}

const float *gan_evaluator_fake(const gan_evaluator *e)
{
    return e->fake;
}

const struct gan_eval_generator *gan_evaluator_generator(const gan_evaluator *e)
{
    return &e->spec.generator;
}
