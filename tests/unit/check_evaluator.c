/* SPDX-License-Identifier: MIT */
/* check_evaluator.c — tests of the evaluator (eval/evaluator.h) with generators whose
 * answers are known: the real points themselves score the floor, a constant point
 * covers one mode, and neither the z nor the scores depend on how the samples are split
 * into forward passes. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/backend_fixture.h"
#include "eval/evaluator.h"

#define SEED 42u
#define Z_OFFSET 1000u
#define REAL_OFFSET 5000000u
#define FLOOR_OFFSET 9000000u

/* A generator computed on the host: each z row becomes one sample, either rows of a
 * fixed table taken in order (the z is ignored) or the first `sample_size` coordinates
 * of z times `scale`. It counts its calls. */
struct host_generator {
    const float *table;           /* NULL: from z */
    size_t sample_size, z_dim;
    size_t next;                  /* the table's next row */
    float scale;
    size_t calls;
};

static gan_tensor *host_forward(void *self, gan_tensor *z)
{
    struct host_generator *h = self;
    size_t m = (size_t)gan_tensor_dim(z, 0);
    ck_assert_uint_eq((size_t)gan_tensor_dim(z, 1), h->z_dim);
    float *zs = malloc(m * h->z_dim * sizeof *zs), *out = malloc(m * h->sample_size * sizeof *out);
    ck_assert_ptr_nonnull(zs);
    ck_assert_ptr_nonnull(out);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, z, zs, m * h->z_dim), GAN_OK);
    for (size_t i = 0; i < m; i++)
        for (size_t k = 0; k < h->sample_size; k++)
            out[i * h->sample_size + k] = h->table ? h->table[(h->next + i) * h->sample_size + k]
                                                   : h->scale * zs[i * h->z_dim + k];
    h->next += m;
    h->calls++;
    int64_t dims[2] = { (int64_t)m, (int64_t)h->sample_size };
    gan_tensor *t = gan_tensor_from_host(fx.ctx, GAN_F32, 2, dims, out);
    free(zs);
    free(out);
    return t;
}

static struct gan_evaluator_spec toy_spec(struct host_generator *h, size_t n, size_t chunk)
{
    struct gan_evaluator_spec spec = {
        .generator = { .ctx = fx.ctx, .z_dim = h->z_dim, .sample_size = h->sample_size,
                       .forward = host_forward, .self = h },
        .seed = SEED,
        .z_offset = Z_OFFSET,
        .n = n,
        .chunk = chunk,
        .kind = GAN_TOY_8GAUSSIANS,
        .real_offset = REAL_OFFSET,
        .floor_offset = FLOOR_OFFSET,
    };
    return spec;
}

static struct gan_eval_quality run_once(const struct gan_evaluator_spec *spec)
{
    gan_evaluator *e;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_msg(gan_evaluator_new(spec, &e, &err) == GAN_OK, "%s", err.message);
    struct gan_eval_quality q;
    ck_assert_msg(gan_evaluator_run(e, &q, &err) == GAN_OK, "%s", err.message);
    gan_evaluator_free(e);
    return q;
}

static void assert_toy_equal(const struct gan_toy_quality *a, const struct gan_toy_quality *b)
{
    ck_assert_int_eq(a->modes_covered, b->modes_covered);
    ck_assert_uint_eq(a->modes_total, b->modes_total);
    ck_assert(a->high_quality_pct == b->high_quality_pct);
    ck_assert(a->sliced_w1 == b->sliced_w1);
    ck_assert_mem_eq(a->hits, b->hits, sizeof a->hits);
}

/* The floor compares the first n points of the floor's stream with the next n: a
 * generator that returns the first n, held against the next n as the held-out set,
 * scores the floor exactly, and the floor is a real one (all 8 modes, a small W1). */
START_TEST(test_real_points_score_the_floor)
{
    const size_t n = 2000;
    float *first = malloc(2 * n * sizeof *first);
    ck_assert_ptr_nonnull(first);
    gan_toy_sampler *s;
    ck_assert_int_eq(gan_toy_sampler_new(GAN_TOY_8GAUSSIANS, SEED, FLOOR_OFFSET, &s, NULL), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, n, first, NULL), GAN_OK);
    gan_toy_sampler_free(s);

    struct host_generator h = { .table = first, .sample_size = 2, .z_dim = 2 };
    struct gan_evaluator_spec spec = toy_spec(&h, n, 0);
    /* 8gaussians reads one block a point: the floor's second set starts n blocks on. */
    spec.real_offset = FLOOR_OFFSET + n;
    struct gan_eval_quality q = run_once(&spec);
    ck_assert_int_eq(q.is_image, 0);
    ck_assert_uint_eq(q.samples, n);
    ck_assert_uint_eq(h.calls, 1);   /* the toys: one forward pass */
    assert_toy_equal(&q.toy, &q.toy_floor);
    ck_assert_int_eq(q.toy_floor.modes_covered, 8);
    ck_assert(q.toy_floor.high_quality_pct > 95.0);
    ck_assert(q.toy_floor.sliced_w1 > 0.0 && q.toy_floor.sliced_w1 < 0.1);
    free(first);
}
END_TEST

/* The held-out points are the real_offset stream's first n, as a sampler gives them;
 * returned as the samples they are at distance 0 and cover what they cover. */
START_TEST(test_held_out_points)
{
    const size_t n = 500;
    struct host_generator h = { .sample_size = 2, .z_dim = 2, .scale = 1.0f };
    struct gan_evaluator_spec spec = toy_spec(&h, n, 0);
    gan_evaluator *e;
    ck_assert_int_eq(gan_evaluator_new(&spec, &e, NULL), GAN_OK);
    float *expect = malloc(2 * n * sizeof *expect);
    ck_assert_ptr_nonnull(expect);
    gan_toy_sampler *s;
    ck_assert_int_eq(gan_toy_sampler_new(GAN_TOY_8GAUSSIANS, SEED, REAL_OFFSET, &s, NULL), GAN_OK);
    ck_assert_int_eq(gan_toy_sample(s, n, expect, NULL), GAN_OK);
    gan_toy_sampler_free(s);
    ck_assert_mem_eq(gan_evaluator_real(e), expect, 2 * n * sizeof *expect);
    ck_assert_uint_eq(gan_evaluator_samples(e), n);
    ck_assert_uint_eq(gan_evaluator_modes(e)->count, 8);
    gan_evaluator_free(e);

    h = (struct host_generator){ .table = expect, .sample_size = 2, .z_dim = 2 };
    struct gan_eval_quality q = run_once(&spec);
    ck_assert(q.toy.sliced_w1 == 0.0);
    ck_assert_int_eq(q.toy.modes_covered, 8);
    free(expect);
}
END_TEST

/* Every sample at the first centre: one mode covered, all of them high quality. */
START_TEST(test_constant_point_covers_one_mode)
{
    const size_t n = GAN_EVAL_SAMPLES;
    struct gan_toy_modes modes;
    gan_toy_modes(GAN_TOY_8GAUSSIANS, &modes);
    float *same = malloc(2 * n * sizeof *same);
    ck_assert_ptr_nonnull(same);
    for (size_t i = 0; i < n; i++) {
        same[2 * i] = (float)modes.xy[0][0];
        same[2 * i + 1] = (float)modes.xy[0][1];
    }
    struct host_generator h = { .table = same, .sample_size = 2, .z_dim = 2 };
    struct gan_evaluator_spec spec = toy_spec(&h, 0, 0);
    struct gan_eval_quality q = run_once(&spec);
    ck_assert_uint_eq(q.samples, GAN_EVAL_SAMPLES);   /* n = 0: the trainer's */
    ck_assert_int_eq(q.toy.modes_covered, 1);
    ck_assert_uint_eq(q.toy.modes_total, 8);
    ck_assert_uint_eq(q.toy.hits[0], n);
    ck_assert(q.toy.high_quality_pct == 100.0);
    ck_assert(q.toy.sliced_w1 > q.toy_floor.sliced_w1);
    free(same);
}
END_TEST

/* With z of 4 numbers (one Philox block a row) every split into forward passes draws
 * the same z, and so the same samples and scores; a second run of one evaluator
 * repeats the first. */
START_TEST(test_chunks_change_nothing)
{
    const size_t n = 1000;
    static const size_t chunks[] = { 0, 1, 7, GAN_EVAL_CHUNK, 999, 5000 };
    struct host_generator h0 = { .sample_size = 2, .z_dim = 4, .scale = 0.5f };
    struct gan_evaluator_spec spec0 = toy_spec(&h0, n, 0);
    gan_evaluator *e0;
    ck_assert_int_eq(gan_evaluator_new(&spec0, &e0, NULL), GAN_OK);
    struct gan_eval_quality q0, again;
    ck_assert_int_eq(gan_evaluator_run(e0, &q0, NULL), GAN_OK);
    ck_assert_int_eq(gan_evaluator_run(e0, &again, NULL), GAN_OK);
    assert_toy_equal(&q0.toy, &again.toy);
    ck_assert(q0.toy.sliced_w1 > 0.0 && isfinite(q0.toy.sliced_w1));
    for (size_t c = 1; c < sizeof chunks / sizeof *chunks; c++) {
        struct host_generator h = h0;
        h.calls = 0;
        struct gan_evaluator_spec spec = toy_spec(&h, n, chunks[c]);
        gan_evaluator *e;
        ck_assert_int_eq(gan_evaluator_new(&spec, &e, NULL), GAN_OK);
        struct gan_eval_quality q;
        ck_assert_int_eq(gan_evaluator_run(e, &q, NULL), GAN_OK);
        ck_assert_uint_eq(h.calls, (n + chunks[c] - 1) / chunks[c]);
        ck_assert_mem_eq(gan_evaluator_fake(e), gan_evaluator_fake(e0), n * 2 * sizeof(float));
        assert_toy_equal(&q.toy, &q0.toy);
        assert_toy_equal(&q.toy_floor, &q0.toy_floor);
        gan_evaluator_free(e);
    }
    gan_evaluator_free(e0);
}
END_TEST

/* gan_eval_generate's z is one draw of the stream, whatever the chunk, when every
 * chunk's numbers fill whole blocks; z_out gives it back. */
START_TEST(test_generate_z)
{
    const size_t n = 300, zd = 4;
    float *whole = malloc(n * zd * sizeof *whole), *z = malloc(n * zd * sizeof *z);
    float *samples = malloc(n * 2 * sizeof *samples);
    ck_assert(whole && z && samples);
    int64_t dims[2] = { (int64_t)n, (int64_t)zd };
    gan_tensor *t = gan_tensor_normal(fx.ctx, GAN_F32, 2, dims, SEED, Z_OFFSET, 0.0f, 1.0f);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, whole, n * zd), GAN_OK);
    gan_ctx_step_end(fx.ctx);
    struct host_generator h = { .sample_size = 2, .z_dim = zd, .scale = 1.0f };
    struct gan_eval_generator g = { .ctx = fx.ctx, .z_dim = zd, .sample_size = 2,
                                    .forward = host_forward, .self = &h };
    ck_assert_int_eq(gan_eval_generate(&g, n, SEED, Z_OFFSET, 64, samples, z, NULL), GAN_OK);
    ck_assert_mem_eq(z, whole, n * zd * sizeof *z);
    ck_assert_uint_eq(h.calls, 5);
    for (size_t i = 0; i < n; i++) {
        ck_assert(samples[2 * i] == whole[i * zd]);
        ck_assert(samples[2 * i + 1] == whole[i * zd + 1]);
    }
    free(whole);
    free(z);
    free(samples);
}
END_TEST

/* ------------------------------------------------------------------ images */

static gan_image_set *random_images(enum gan_image_split split, size_t count, unsigned side,
                                    unsigned salt)
{
    unsigned char *px = malloc(count * side * side);
    ck_assert_ptr_nonnull(px);
    for (size_t i = 0; i < count * side * side; i++)
        px[i] = (unsigned char)((i * 2654435761u + salt * 40503u) >> 13);
    gan_image_set *set;
    ck_assert_int_eq(gan_image_set_wrap("synthetic", split, "synthetic", count, 1, side, px,
                                        &set, NULL), GAN_OK);
    return set;
}

/* Images go through the metrics: the evaluator's numbers are the metrics' own for the
 * same samples, in chunks of GAN_EVAL_CHUNK or any other, beside the metrics' floors. */
START_TEST(test_images_through_the_metrics)
{
    const unsigned side = 4;
    const size_t n = 600, d = side * side;
    gan_image_set *train = random_images(GAN_IMAGE_TRAIN, 700, side, 1);
    gan_image_set *test = random_images(GAN_IMAGE_TEST, 700, side, 2);
    gan_image_metrics *m;
    ck_assert_int_eq(gan_image_metrics_new_pixels(train, test, 7, n, &m, NULL), GAN_OK);

    struct host_generator h = { .sample_size = d, .z_dim = d, .scale = 0.3f };
    struct gan_evaluator_spec spec = {
        .generator = { .ctx = fx.ctx, .z_dim = d, .sample_size = d,
                       .forward = host_forward, .self = &h },
        .seed = SEED, .z_offset = Z_OFFSET, .images = m,
    };
    struct gan_eval_quality q = run_once(&spec);
    ck_assert_int_eq(q.is_image, 1);
    ck_assert_int_eq(q.has_frechet, 0);
    ck_assert_uint_eq(q.samples, n);                 /* n = 0: the metrics' */
    ck_assert_uint_eq(h.calls, (n + GAN_EVAL_CHUNK - 1) / GAN_EVAL_CHUNK);
    ck_assert(isnan(q.image.frechet));

    float *fake = malloc(n * d * sizeof *fake);
    ck_assert_ptr_nonnull(fake);
    struct host_generator h2 = h;
    h2.calls = 0;
    struct gan_eval_generator g = spec.generator;
    g.self = &h2;
    ck_assert_int_eq(gan_eval_generate(&g, n, SEED, Z_OFFSET, 0, fake, NULL, NULL), GAN_OK);
    struct gan_image_quality direct;
    ck_assert_int_eq(gan_image_metrics_eval(m, fake, n, &direct, NULL), GAN_OK);
    ck_assert(q.image.sliced_w1 == direct.sliced_w1);
    ck_assert(q.image.sliced_w1 > 0.0);
    struct gan_image_quality floor = gan_image_metrics_floor(m);
    ck_assert(q.image_floor.sliced_w1 == floor.sliced_w1);
    ck_assert(floor.sliced_w1 < q.image.sliced_w1);

    h.calls = 0;
    spec.chunk = 7;
    struct gan_eval_quality q7 = run_once(&spec);
    ck_assert_uint_eq(h.calls, (n + 6) / 7);
    ck_assert(q7.image.sliced_w1 == q.image.sliced_w1);

    free(fake);
    gan_image_metrics_free(m);
    gan_image_set_free(train);
    gan_image_set_free(test);
}
END_TEST

/* Fewer than 2 samples, or no generator, is refused with a reason. */
START_TEST(test_refusals)
{
    struct host_generator h = { .sample_size = 2, .z_dim = 2 };
    struct gan_evaluator_spec spec = toy_spec(&h, 1, 0);
    gan_evaluator *e = (gan_evaluator *)&h;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_evaluator_new(&spec, &e, &err), GAN_ERR_INVALID);
    ck_assert_ptr_null(e);
    ck_assert_ptr_nonnull(strstr(err.message, "2 samples"));
    spec = toy_spec(&h, 10, 0);
    spec.generator.forward = NULL;
    ck_assert_int_eq(gan_evaluator_new(&spec, &e, &err), GAN_ERR_INVALID);
}
END_TEST

static Suite *evaluator_suite(void)
{
    Suite *s = suite_create("evaluator");
    TCase *tc = tcase_create("toys");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_real_points_score_the_floor);
    tcase_add_test(tc, test_held_out_points);
    tcase_add_test(tc, test_constant_point_covers_one_mode);
    tcase_add_test(tc, test_chunks_change_nothing);
    tcase_add_test(tc, test_generate_z);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    tc = tcase_create("images");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_images_through_the_metrics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(evaluator_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
