/* SPDX-License-Identifier: MIT */
/* check_threads.c — the CPU backend's worker pool: a split covers every unit once, in
 * whole blocks; tiny work stays on the calling thread; and each threaded kernel
 * (element-wise, reductions, casts, conversions of strided rows, FP16 products' staging,
 * OpenBLAS's products split by rows or columns,
 * the convolutions' im2col and col2im, Adam, gradient statistics) gives the same bits on
 * three threads as on one, on tensors large enough to be split; and the AVX-512 Adam and
 * gradient statistics give the portable loops' bits. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/half_helpers.h"

static gan_backend *backend(int threads, const char *vector)
{
    static char t[32], v[32];
    snprintf(t, sizeof t, "threads=%d", threads);
    snprintf(v, sizeof v, "vector=%s", vector);
    const char *settings[] = { t, v, NULL };
    return cpu_fixture_new(settings);
}

/* ---------------------------------------------------------------- the pool */

struct cover {
    int hits[10007];
    int64_t align;
    int bad_boundary;
    int parts_seen[CPU_MAX_PARTS];
};

static void cover_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct cover *c = arg;
    if (begin % c->align != 0)
        c->bad_boundary = 1;
    c->parts_seen[part]++;
    for (int64_t i = begin; i < end; i++)
        c->hits[i]++;
}

START_TEST(test_split_covers_each_unit_once)
{
    gan_backend *be = backend(3, "auto");
    static struct cover c;
    memset(&c, 0, sizeof c);
    c.align = 64;
    int parts = cpu_parallel_parts(be, 10007, 64, CPU_PARALLEL_MIN);
    ck_assert_int_eq(parts, 6); /* two a thread */
    cpu_parallel_for(be, parts, 10007, 64, cover_range, &c);
    for (int i = 0; i < 10007; i++)
        ck_assert_int_eq(c.hits[i], 1);
    ck_assert_int_eq(c.bad_boundary, 0);
    for (int p = 0; p < 6; p++)
        ck_assert_int_eq(c.parts_seen[p], 1);
    /* Many jobs in a row: the workers wake for each and the caller waits for them. */
    for (int round = 0; round < 200; round++)
        cpu_parallel_for(be, parts, 10007, 64, cover_range, &c);
    for (int i = 0; i < 10007; i++)
        ck_assert_int_eq(c.hits[i], 201);
    cpu_fixture_free(be);
}
END_TEST

START_TEST(test_small_work_stays_on_one_thread)
{
    gan_backend *be = backend(3, "auto");
    ck_assert_int_eq(cpu_parallel_parts(be, CPU_PARALLEL_MIN, 1, 1), 1);
    ck_assert_int_eq(cpu_parallel_parts(be, 2 * CPU_PARALLEL_MIN, 1, 1), 2);
    ck_assert_int_eq(cpu_parallel_parts(be, 100 * CPU_PARALLEL_MIN, 1, 1), 6);
    /* never more parts than blocks */
    ck_assert_int_eq(cpu_parallel_parts(be, 100 * CPU_PARALLEL_MIN, 60 * CPU_PARALLEL_MIN, 1), 2);
    cpu_fixture_free(be);
    be = backend(1, "auto");
    ck_assert_int_eq(cpu_parallel_parts(be, 100 * CPU_PARALLEL_MIN, 1, 1), 1);
    cpu_fixture_free(be);
}
END_TEST

START_TEST(test_two_instances_have_their_own_workers)
{
    gan_backend *a = backend(2, "auto"), *b = backend(3, "auto");
    static struct cover ca, cb;
    memset(&ca, 0, sizeof ca);
    memset(&cb, 0, sizeof cb);
    ca.align = cb.align = 1;
    cpu_parallel_for(a, 2, 10007, 1, cover_range, &ca);
    cpu_parallel_for(b, 3, 10007, 1, cover_range, &cb);
    cpu_fixture_free(a); /* b's workers must outlive a's */
    cpu_parallel_for(b, 3, 10007, 1, cover_range, &cb);
    for (int i = 0; i < 10007; i++) {
        ck_assert_int_eq(ca.hits[i], 1);
        ck_assert_int_eq(cb.hits[i], 2);
    }
    ck_assert_int_eq(ca.parts_seen[1], 1);
    ck_assert_int_eq(cb.parts_seen[2], 2);
    cpu_fixture_free(b);
}
END_TEST

/* Parts that each last 200 µs, so that a worker has time to take one: which threads
 * ran them is recorded. */
struct who {
    struct cover cover;
    pthread_t caller;
    _Atomic int by_worker;
};

static void who_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct who *w = arg;
    cover_range(&w->cover, part, begin, end);
    if (!pthread_equal(pthread_self(), w->caller))
        atomic_fetch_add(&w->by_worker, 1);
    usleep(200);
}

/* Jobs after the workers were hushed, after they fell asleep (longer than they watch),
 * and back to back while they watch: every unit covered once each time, and workers
 * take parts after a hush and after a sleep (the caller would otherwise run them all,
 * and a pool whose workers never woke again would go unnoticed). */
START_TEST(test_jobs_around_hush_and_sleep)
{
    gan_backend *be = backend(2, "auto");
    static struct who w;
    memset(&w, 0, sizeof w);
    w.cover.align = 1;
    w.caller = pthread_self();
    int after_hush = 0, after_sleep = 0;
    for (int round = 0; round < 30; round++) {
        const int parts = 2 + round % 5;
        const int hushed = round % 3 == 1, slept = round % 4 == 2;
        if (hushed)
            cpu_pool_hush(be);
        if (slept)
            usleep(300); /* past the 100 µs the workers watch for */
        const int before = atomic_load(&w.by_worker);
        cpu_parallel_for(be, parts, 1000, 1, who_range, &w);
        const int took = atomic_load(&w.by_worker) - before;
        after_hush += hushed && took > 0;
        after_sleep += slept && took > 0;
    }
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(w.cover.hits[i], 30);
    ck_assert_int_gt(after_hush, 0);
    ck_assert_int_gt(after_sleep, 0);
    /* a hush with nothing to follow, then the instance closed */
    cpu_pool_hush(be);
    cpu_fixture_free(be);
}
END_TEST

/* ---------------------------------------------------------------- the kernels */

/* The same kernel call on a one-thread and a three-thread instance of one vector level,
 * from identical inputs; the outputs are compared byte for byte. */
struct pair {
    gan_backend *one, *three;
};

static struct pair pair_new(const char *vector)
{
    struct pair p = { backend(1, vector), backend(3, vector) };
    return p;
}

static void pair_free(struct pair *p)
{
    cpu_fixture_free(p->one);
    cpu_fixture_free(p->three);
}

static gan_buffer *filled(gan_backend *be, enum gan_dtype dt, size_t n, uint64_t seed)
{
    gan_buffer *b = cpu_fixture_buffer(be, n * dsize(dt) / sizeof(float) + 1, NULL);
    rng_seed(seed);
    fill_special_values(b, dt, n);
    return b;
}

static void assert_same_bytes(const gan_buffer *a, const gan_buffer *b, size_t bytes)
{
    ck_assert_uint_ge(a->bytes, bytes);
    ck_assert_uint_ge(b->bytes, bytes);
    size_t differ = 0;
    for (size_t i = 0; i < bytes; i++)
        differ += a->data[i] != b->data[i];
    ck_assert_msg(differ == 0, "%zu of %zu bytes differ between 1 and 3 threads", differ, bytes);
}

static struct gan_operand contiguous(gan_buffer *b, enum gan_dtype dt, const struct gan_shape *s)
{
    struct gan_operand op = { b, 0, dt, { 0 } };
    int64_t stride = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        op.stride[d] = stride;
        stride *= s->dim[d];
    }
    return op;
}

static const char *const levels[] = { "portable", "auto" };

START_TEST(test_elementwise_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    /* y (F16) = a (F32, 600 × 1001) + b (BF16 row broadcast), then RELU in place. */
    struct gan_shape s = { 2, { 600, 1001 } };
    size_t n = 600 * 1001;
    gan_backend *bes[2] = { p.one, p.three };
    gan_buffer *y[2];
    for (int k = 0; k < 2; k++) {
        gan_buffer *a = filled(bes[k], GAN_F32, n, 1), *b = filled(bes[k], GAN_BF16, 1001, 2);
        y[k] = filled(bes[k], GAN_F16, n, 3);
        struct gan_operand oa = contiguous(a, GAN_F32, &s), ob = contiguous(b, GAN_BF16, &s);
        ob.stride[0] = 0;
        struct gan_operand oy = contiguous(y[k], GAN_F16, &s);
        ck_assert_int_eq(cpu_binary(bes[k], GAN_BINARY_ADD, &s, &oa, &ob, &oy), GAN_OK);
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_RELU, 0.0f, &s, &oy, &oy), GAN_OK);
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_TANH, 0.0f, &s, &oa, &oa), GAN_OK);
        ck_assert_int_eq(cpu_binary(bes[k], GAN_BINARY_MUL, &s, &oa, &oy, &oy), GAN_OK);
        cpu_buffer_free(bes[k], a);
        cpu_buffer_free(bes[k], b);
    }
    ck_assert_int_gt(cpu_parallel_parts(p.three, (int64_t)n, 256, 1), 1);
    assert_same_bytes(y[0], y[1], n * 2);
    cpu_buffer_free(p.one, y[0]);
    cpu_buffer_free(p.three, y[1]);
    pair_free(&p);
}
END_TEST

/* A tanh of a generator's 64 images of 28 × 28 is split, where an add or a ReLU of as
 * many elements stays on the calling thread, and gives the same bits either way. The
 * split is what the walk does: the jobs it hands to the pool are counted. */
START_TEST(test_transcendental_split_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    struct gan_shape s = { 2, { 64, 784 } };
    size_t n = 64 * 784;
    ck_assert_int_eq(cpu_elementwise_parts(p.three, 2, GAN_UNARY_RELU, (int64_t)n), 1);
    ck_assert_int_eq(cpu_elementwise_parts(p.three, 3, GAN_BINARY_ADD, (int64_t)n), 1);
    ck_assert_int_gt(cpu_elementwise_parts(p.three, 2, GAN_UNARY_TANH, (int64_t)n), 1);
    gan_backend *bes[2] = { p.one, p.three };
    gan_buffer *y[2];
    for (int k = 0; k < 2; k++) {
        gan_buffer *a = filled(bes[k], GAN_F32, n, 4);
        y[k] = filled(bes[k], GAN_F32, n, 5);
        struct gan_operand oa = contiguous(a, GAN_F32, &s), oy = contiguous(y[k], GAN_F32, &s);
        const uint64_t jobs = cpu_pool_jobs(bes[k]);
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_RELU, 0.0f, &s, &oa, &oy), GAN_OK);
        ck_assert_int_eq(cpu_binary(bes[k], GAN_BINARY_ADD, &s, &oa, &oa, &oy), GAN_OK);
        ck_assert_uint_eq(cpu_pool_jobs(bes[k]), jobs);
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_TANH, 0.0f, &s, &oa, &oy), GAN_OK);
        ck_assert_uint_eq(cpu_pool_jobs(bes[k]), jobs + (bes[k] == p.three ? 1 : 0));
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_SIGMOID, 0.0f, &s, &oy, &oa), GAN_OK);
        ck_assert_int_eq(cpu_unary(bes[k], GAN_UNARY_EXP, 0.0f, &s, &oa, &oy), GAN_OK);
        cpu_buffer_free(bes[k], a);
    }
    assert_same_bytes(y[0], y[1], n * 4);
    cpu_buffer_free(p.one, y[0]);
    cpu_buffer_free(p.three, y[1]);
    pair_free(&p);
}
END_TEST

START_TEST(test_reduce_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    gan_backend *bes[2] = { p.one, p.three };
    /* A column sum (bias gradient: many outputs side by side), a row sum of squares
     * (one output at a time) and a mean over everything, of a BF16 3 × 700 × 257. */
    struct gan_shape s = { 3, { 3, 700, 257 } };
    size_t n = 3 * 700 * 257;
    gan_buffer *out[2];
    for (int k = 0; k < 2; k++) {
        gan_buffer *x = filled(bes[k], GAN_BF16, n, 5);
        out[k] = cpu_fixture_buffer(bes[k], 3 * 257 + 3 * 700 + 1, NULL);
        memset(out[k]->data, 0, out[k]->bytes);
        struct gan_operand ox = contiguous(x, GAN_BF16, &s);
        struct gan_operand cols = { out[k], 0, GAN_F32, { 257, 0, 1 } };
        struct gan_operand rows = { out[k], 3 * 257, GAN_F32, { 700, 1, 0 } };
        struct gan_operand all = { out[k], 3 * 257 + 3 * 700, GAN_F32, { 0, 0, 0 } };
        ck_assert_int_eq(cpu_reduce(bes[k], GAN_REDUCE_SUM, &s, &ox, 2u, &cols), GAN_OK);
        ck_assert_int_eq(cpu_reduce(bes[k], GAN_REDUCE_SUM_SQUARES, &s, &ox, 4u, &rows), GAN_OK);
        ck_assert_int_eq(cpu_reduce(bes[k], GAN_REDUCE_MAX, &s, &ox, 7u, &all), GAN_OK);
        cpu_buffer_free(bes[k], x);
    }
    /* both walks are split: 15 lane groups of 700 rows, 2,100 rows of 257 */
    ck_assert_int_gt(cpu_parallel_parts(p.three, 15, 1, 700 * 64), 1);
    ck_assert_int_gt(cpu_parallel_parts(p.three, 2100, 1, 257), 1);
    assert_same_bytes(out[0], out[1], (3 * 257 + 3 * 700 + 1) * sizeof(float));
    cpu_buffer_free(p.one, out[0]);
    cpu_buffer_free(p.three, out[1]);
    pair_free(&p);
}
END_TEST

START_TEST(test_cast_same_bits_and_counts)
{
    struct pair p = pair_new(levels[_i]);
    gan_backend *bes[2] = { p.one, p.three };
    size_t n = 600003;
    gan_buffer *y[2];
    struct gan_cast_counts c[2];
    for (int k = 0; k < 2; k++) {
        gan_buffer *x = filled(bes[k], GAN_F32, n, 7);
        y[k] = cpu_fixture_buffer(bes[k], n / 2 + 1, NULL);
        struct gan_ref rx = cpu_fixture_ref(x, GAN_F32), ry = cpu_fixture_ref(y[k], GAN_F16);
        ck_assert_int_eq(cpu_cast(bes[k], n, &rx, &ry, &c[k]), GAN_OK);
        cpu_buffer_free(bes[k], x);
    }
    ck_assert_int_gt(cpu_parallel_parts(p.three, (int64_t)n, 256, 2), 1);
    assert_same_bytes(y[0], y[1], n * 2);
    ck_assert_uint_eq(c[0].elements, c[1].elements);
    ck_assert_uint_eq(c[0].overflow, c[1].overflow);
    ck_assert_uint_eq(c[0].underflow, c[1].underflow);
    ck_assert_uint_eq(c[0].subnormal, c[1].subnormal);
    ck_assert_uint_eq(c[0].nonfinite, c[1].nonfinite);
    /* the special values are there, so the counts are worth comparing */
    ck_assert_uint_gt(c[0].overflow, 0);
    ck_assert_uint_gt(c[0].nonfinite, 0);
    cpu_buffer_free(p.one, y[0]);
    cpu_buffer_free(p.three, y[1]);
    pair_free(&p);
}
END_TEST

/* Three conversions in one job, as gemm.c stages a product's operands: a strided FP16
 * matrix widened into a packed FP32 one, a packed BF16 run widened, and a packed FP32
 * matrix narrowed into a strided FP16 one (the padding after each row left as it was).
 * Every element is the conversion of its own input, and three threads give one
 * thread's bytes. */
START_TEST(test_convert_rows_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    gan_backend *bes[2] = { p.one, p.three };
    enum { ROWS = 1100, COLS = 333, LD = 345, RUN = 250001 };
    const size_t strided = (size_t)ROWS * LD, packed = (size_t)ROWS * COLS;
    gan_buffer *out[2];
    gan_buffer *a = filled(p.one, GAN_F16, strided, 17), *b = filled(p.one, GAN_BF16, RUN, 19);
    gan_buffer *c = filled(p.one, GAN_F32, packed, 23);
    for (int k = 0; k < 2; k++) {
        /* FP32 packed ROWS × COLS, FP32 RUN, then FP16 strided ROWS × LD */
        size_t floats = packed + RUN + strided / 2 + 1;
        out[k] = cpu_fixture_buffer(bes[k], floats, NULL);
        memset(out[k]->data, 0x5a, out[k]->bytes);
        float *wa = (float *)(void *)out[k]->data, *wb = wa + packed;
        void *hc = wb + RUN;
        const struct cpu_convert_rows r[3] = {
            { a->data, GAN_F16, LD, wa, GAN_F32, COLS, ROWS, COLS },
            { b->data, GAN_BF16, RUN, wb, GAN_F32, RUN, 1, RUN },
            { c->data, GAN_F32, COLS, hc, GAN_F16, LD, ROWS, COLS },
        };
        cpu_convert_rows_threads(bes[k], r, 3);
    }
    /* split, and not at row boundaries only */
    ck_assert_int_gt(cpu_parallel_parts(p.three, (int64_t)(2 * packed + RUN), 256, 1), 2);
    assert_same_bytes(out[0], out[1], out[0]->bytes);
    const float *wa = (const float *)(const void *)out[0]->data, *wb = wa + packed;
    const uint16_t *hc = (const uint16_t *)(const void *)(wb + RUN);
    for (size_t i = 0; i < ROWS; i++)
        for (size_t j = 0; j < LD; j++) {
            if (j < COLS) {
                double want = raw_get(a, GAN_F16, i * LD + j);
                float got = wa[i * COLS + j];
                ck_assert_msg((isnan(want) && isnan(got)) || got == want,
                              "widened [%zu][%zu] is %g, not %g", i, j, (double)got, want);
                uint16_t h = f16_encode(raw_get(c, GAN_F32, i * COLS + j));
                ck_assert_msg(isnan(raw_get(c, GAN_F32, i * COLS + j)) ? (hc[i * LD + j] & 0x7c00) == 0x7c00
                                                                         : hc[i * LD + j] == h,
                              "narrowed [%zu][%zu] is 0x%04x, not 0x%04x", i, j,
                              (unsigned)hc[i * LD + j], (unsigned)h);
            } else {
                ck_assert_uint_eq(hc[i * LD + j], 0x5a5a);
            }
        }
    for (size_t i = 0; i < RUN; i++) {
        double want = raw_get(b, GAN_BF16, i);
        ck_assert((isnan(want) && isnan(wb[i])) || wb[i] == want);
    }
    cpu_buffer_free(p.one, a);
    cpu_buffer_free(p.one, b);
    cpu_buffer_free(p.one, c);
    cpu_buffer_free(p.one, out[0]);
    cpu_buffer_free(p.three, out[1]);
    pair_free(&p);
}
END_TEST

/* An FP16 product with padded rows, its operands staged in FP32 and its result rounded
 * back, on one thread and on three, OpenBLAS held at one thread in both so that only the
 * backend's own split differs: the same bytes. */
START_TEST(test_gemm_f16_same_bits)
{
    struct pair p = pair_new("auto");
    gan_backend *bes[2] = { p.one, p.three };
    enum { M = 400, N = 520, K = 410, PAD = 7 };
    const int64_t lda = K + PAD, ldb = N + PAD, ldc = N + PAD;
    gan_buffer *a = cpu_fixture_buffer(p.one, M * lda, NULL), *b = cpu_fixture_buffer(p.one, K * ldb, NULL);
    rng_seed(29);
    for (int64_t i = 0; i < M * lda; i++)
        raw_set(a, GAN_F16, (size_t)i, rng_uniform(-1, 1));
    for (int64_t i = 0; i < K * ldb; i++)
        raw_set(b, GAN_F16, (size_t)i, rng_uniform(-1, 1));
    gan_buffer *c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = cpu_fixture_buffer(bes[k], M * ldc, NULL);
        rng_seed(31);
        for (int64_t i = 0; i < M * ldc; i++)
            raw_set(c[k], GAN_F16, (size_t)i, rng_uniform(-1, 1));
        struct gan_gemm g = {
            .trans_a = 0, .trans_b = 0, .m = M, .n = N, .k = K, .alpha = 1, .beta = 1,
            .a = cpu_fixture_ref(a, GAN_F16), .b = cpu_fixture_ref(b, GAN_F16),
            .c = cpu_fixture_ref(c[k], GAN_F16), .lda = lda, .ldb = ldb, .ldc = ldc,
            .batch = 1, .stride_a = M * lda, .stride_b = K * ldb, .stride_c = M * ldc,
        };
        if (bes[k]->blas.set_num_threads)
            bes[k]->blas.set_num_threads(1);
        ck_assert_int_eq(cpu_gemm(bes[k], &g), GAN_OK);
    }
    ck_assert_int_gt(cpu_parallel_parts(p.three, M * K + K * N + M * N, 256, 1), 1);
    assert_same_bytes(c[0], c[1], (size_t)(M * ldc) * 2);
    cpu_buffer_free(p.one, a);
    cpu_buffer_free(p.one, b);
    cpu_buffer_free(p.one, c[0]);
    cpu_buffer_free(p.three, c[1]);
    pair_free(&p);
}
END_TEST

/* OpenBLAS's sgemm split across the instance's threads (sgemm_split.c), by rows, and
 * by columns where C has too few rows, for every transpose, with alpha and beta and
 * padded rows, against the whole product on a one-thread instance. On a kernel the
 * backend splits with (SkylakeX on AVX-512) the bytes are the same; on another (Haswell
 * on AVX2), split here only to check where each run reads and writes, within rounding. */
START_TEST(test_sgemm_split_same_bits)
{
    static const int shapes[][3] = { { 300, 520, 410 }, { 64, 1000, 400 }, { 130, 40, 3000 } };
    const int m = shapes[_i][0], n = shapes[_i][1], k = shapes[_i][2], pad = 3;
    struct pair p = pair_new("auto");
    const int exact = p.three->blas.one_thread_calls;
    if (!p.three->blas.set_num_threads) {
        printf("skipped: the BLAS is not OpenBLAS, and the backend does not cut its "
               "products\n");
        pair_free(&p);
        return;
    }
    if (!exact) {
        /* cut here anyway, but only where OpenBLAS may be called from several threads */
        int (*parallel)(void) = NULL;
        void *sym = dlsym(p.three->blas.handle, "openblas_get_parallel");
        memcpy(&parallel, &sym, sizeof sym);
        if (!parallel || parallel() != 1) {
            printf("skipped: this OpenBLAS is not a pthreads build\n");
            pair_free(&p);
            return;
        }
        p.three->blas.one_thread_calls = 1;
        p.three->blas.set_num_threads(1);
    }
    float *a = malloc(sizeof(float) * (size_t)(m + pad) * (size_t)(k + pad));
    float *b = malloc(sizeof(float) * (size_t)(k + pad) * (size_t)(n + pad));
    float *c[2];
    const size_t c_len = (size_t)m * (size_t)(n + pad);
    ck_assert(a && b);
    rng_seed(71 + (uint64_t)_i);
    for (size_t i = 0; i < (size_t)(m + pad) * (size_t)(k + pad); i++)
        a[i] = (float)rng_uniform(-1, 1);
    for (size_t i = 0; i < (size_t)(k + pad) * (size_t)(n + pad); i++)
        b[i] = (float)rng_uniform(-1, 1);
    /* every transpose with alpha 0.75 and beta 0.5; then alpha 1 and beta 0, for which
     * OpenBLAS has a kernel of its own for smaller products without transposes */
    for (int t = 0; t < 8; t++) {
        const int ta = t & 1, tb = (t >> 1) & 1;
        const float alpha = t < 4 ? 0.75f : 1.0f, beta = t < 4 ? 0.5f : 0.0f;
        const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
        gan_backend *bes[2] = { p.one, p.three };
        for (int w = 0; w < 2; w++) {
            c[w] = malloc(sizeof(float) * c_len);
            ck_assert(c[w]);
            rng_seed(73);
            for (size_t i = 0; i < c_len; i++)
                c[w][i] = (float)rng_uniform(-1, 1);
            const uint64_t jobs = cpu_pool_jobs(bes[w]);
            cpu_sgemm(bes[w], ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb,
                      beta, c[w], ldc);
            /* the three-thread instance split it; the one-thread one has no workers */
            if (w == 1)
                ck_assert_uint_eq(cpu_pool_jobs(bes[w]), jobs + 1);
        }
        size_t differ = 0;
        double worst = 0;
        for (size_t i = 0; i < c_len; i++) {
            differ += memcmp(&c[0][i], &c[1][i], sizeof(float)) != 0;
            double d = fabs((double)c[0][i] - (double)c[1][i]);
            worst = d > worst ? d : worst;
        }
        if (exact)
            ck_assert_msg(differ == 0, "%dx%dx%d, transposes %d %d, alpha %g: %zu of %zu "
                          "differ", m, n, k, ta, tb, (double)alpha, differ, c_len);
        else
            ck_assert_msg(worst < 1e-4 * sqrt((double)k), "%dx%dx%d, transposes %d %d, "
                          "alpha %g: %g", m, n, k, ta, tb, (double)alpha, worst);
        free(c[0]);
        free(c[1]);
    }
    /* 256×512×64, 8.4 million multiply-adds: cut with alpha 0.75, but not with alpha 1
     * and beta 0 and no transposes, whose runs would fall below OpenBLAS's bound for its
     * direct kernel (28 · 512 · 512) */
    if (_i == 0) {
        float *c0 = malloc(sizeof(float) * 256 * 512);
        ck_assert(c0);
        for (int v = 0; v < 2; v++) {
            const uint64_t jobs = cpu_pool_jobs(p.three);
            cpu_sgemm(p.three, 111, 111, 256, 512, 64, v ? 1.0f : 0.75f, a, 64, b, 512,
                      0.0f, c0, 512);
            ck_assert_uint_eq(cpu_pool_jobs(p.three), jobs + (v ? 0 : 1));
        }
        free(c0);
    }
    free(a);
    free(b);
    pair_free(&p);
}
END_TEST

/* The convolutions' OpenBLAS path (im2col + sgemm, no oneDNN here) in FP32, FP16 and
 * BF16, each direction with beta 1, on one thread and on three, OpenBLAS held at one:
 * the images of a group padded, widened and gathered into columns (and back, col2im) on
 * every thread give the same bytes. */
START_TEST(test_conv2d_same_bits)
{
    static const enum gan_dtype dts[] = { GAN_F32, GAN_F16, GAN_BF16 };
    const enum gan_dtype dt = dts[_i];
    struct pair p = pair_new("auto");
    gan_backend *bes[2] = { p.one, p.three };
    /* 14×14, 5×5 taps, padding 2: K = 800 rows of 196 columns an image, 6 images a group */
    struct gan_conv2d c = { .n = 12, .c_in = 32, .h_in = 14, .w_in = 14, .c_out = 24,
                            .kh = 5, .kw = 5, .stride_h = 1, .stride_w = 1, .pad_h = 2,
                            .pad_w = 2, .dilation_h = 1, .dilation_w = 1, .h_out = 14,
                            .w_out = 14, .dtype = dt };
    const size_t nx = 12 * 32 * 196, nw = 24 * 32 * 25, ny = 12 * 24 * 196;
    ck_assert_int_gt(cpu_parallel_parts(p.three, 6, 1, 800 * 196), 1);
    gan_buffer *x = filled(p.one, dt, nx, 37), *w = filled(p.one, dt, nw, 41);
    gan_buffer *dy = filled(p.one, dt, ny, 43);
    /* finite inputs: a NaN would make every sum it reaches NaN, hiding the rest */
    gan_buffer *ins[3] = { x, w, dy };
    const size_t counts[3] = { nx, nw, ny };
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < counts[t]; i++)
            if (!isfinite(raw_get(ins[t], dt, i)) || fabs(raw_get(ins[t], dt, i)) > 4)
                raw_set(ins[t], dt, i, 0.25);
    gan_buffer *out[2][3];
    for (int k = 0; k < 2; k++) {
        for (int o = 0; o < 3; o++) {
            out[k][o] = filled(bes[k], dt, counts[o == 0 ? 2 : o == 1 ? 0 : 1], 47 + (uint64_t)o);
            for (size_t i = 0; i < counts[o == 0 ? 2 : o == 1 ? 0 : 1]; i++)
                if (!isfinite(raw_get(out[k][o], dt, i)))
                    raw_set(out[k][o], dt, i, 0.5);
        }
        if (bes[k]->blas.set_num_threads)
            bes[k]->blas.set_num_threads(1);
        struct gan_ref rx = cpu_fixture_ref(x, dt), rw = cpu_fixture_ref(w, dt),
                       rdy = cpu_fixture_ref(dy, dt), ry = cpu_fixture_ref(out[k][0], dt),
                       rdx = cpu_fixture_ref(out[k][1], dt), rdw = cpu_fixture_ref(out[k][2], dt);
        ck_assert_int_eq(cpu_conv2d_forward(bes[k], &c, &rx, &rw, 1.0f, &ry), GAN_OK);
        ck_assert_int_eq(cpu_conv2d_backward_data(bes[k], &c, &rdy, &rw, 1.0f, &rdx), GAN_OK);
        ck_assert_int_eq(cpu_conv2d_backward_filter(bes[k], &c, &rx, &rdy, 1.0f, &rdw), GAN_OK);
    }
    for (int o = 0; o < 3; o++) {
        assert_same_bytes(out[0][o], out[1][o], counts[o == 0 ? 2 : o == 1 ? 0 : 1] * dsize(dt));
        cpu_buffer_free(p.one, out[0][o]);
        cpu_buffer_free(p.three, out[1][o]);
    }
    for (int t = 0; t < 3; t++)
        cpu_buffer_free(p.one, ins[t]);
    pair_free(&p);
}
END_TEST

/* Adam on `be` from the same starting state; returns the buffer holding param, m, v and
 * the 16-bit copy one after the other. */
static gan_buffer *adam_run(gan_backend *be, size_t n, enum gan_dtype gdt)
{
    gan_buffer *state = cpu_fixture_buffer(be, 3 * n + n / 2 + 1, NULL);
    rng_seed(11);
    for (size_t i = 0; i < 3 * n; i++)
        raw_set(state, GAN_F32, i, i >= 2 * n ? rng_uniform(0.0, 1e-3) : rng_uniform(-1, 1));
    gan_buffer *grad = filled(be, gdt, n, 13);
    /* non-finite gradients are the verdict's business, not Adam's: finite ones here */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(raw_get(grad, gdt, i)))
            raw_set(grad, gdt, i, 0.5);
    struct gan_adam h = { 1e-3f, 0.5f, 0.9f, 1e-8f, 1e-4f, 3, 1.0f / 64.0f };
    struct gan_ref param = { state, 0, GAN_F32 }, m = { state, n, GAN_F32 },
                   v = { state, 2 * n, GAN_F32 }, g = { grad, 0, gdt };
    /* the copy sits after v: element 3n of F32 is element 6n of F16 */
    struct gan_ref copy = { state, 6 * n, GAN_F16 };
    ck_assert_int_eq(cpu_adam(be, &h, n, &param, &g, &m, &v, &copy), GAN_OK);
    ck_assert_int_eq(cpu_adam(be, &h, n, &param, &g, &m, &v, &copy), GAN_OK);
    cpu_buffer_free(be, grad);
    return state;
}

START_TEST(test_adam_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    size_t n = 100003;
    ck_assert_int_gt(cpu_parallel_parts(p.three, (int64_t)n, 1024, 8), 1);
    for (int gdt = GAN_F32; gdt <= GAN_BF16; gdt++) {
        gan_buffer *a = adam_run(p.one, n, (enum gan_dtype)gdt);
        gan_buffer *b = adam_run(p.three, n, (enum gan_dtype)gdt);
        assert_same_bytes(a, b, 3 * n * sizeof(float) + n * 2);
        cpu_buffer_free(p.one, a);
        cpu_buffer_free(p.three, b);
    }
    pair_free(&p);
}
END_TEST

/* Adam on each vector level the CPU has (F16C/AVX2, AVX-512) against the portable loop:
 * the same bits. */
START_TEST(test_adam_vector_level_same_bits)
{
    static const char *const vector[] = { "f16c", "avx512" };
    gan_backend *portable = backend(1, "portable");
    size_t n = 5003;
    for (int lv = 0; lv < 2 && CPU_ISA_F16C + lv <= (int)cpu_isa_best(); lv++) {
        gan_backend *vec = backend(1, vector[lv]);
        ck_assert_int_eq(vec->isa, CPU_ISA_F16C + lv);
        for (int gdt = GAN_F32; gdt <= GAN_BF16; gdt++) {
            gan_buffer *a = adam_run(portable, n, (enum gan_dtype)gdt);
            gan_buffer *b = adam_run(vec, n, (enum gan_dtype)gdt);
            assert_same_bytes(a, b, 3 * n * sizeof(float) + n * 2);
            cpu_buffer_free(portable, a);
            cpu_buffer_free(vec, b);
        }
        cpu_fixture_free(vec);
    }
    cpu_fixture_free(portable);
}
END_TEST

START_TEST(test_grad_stats_same_bits)
{
    struct pair p = pair_new(levels[_i]);
    gan_backend *bes[2] = { p.one, p.three };
    size_t n = 300007;
    struct gan_grad_stats st[2];
    gan_buffer *u[2];
    for (int k = 0; k < 2; k++) {
        gan_buffer *x = filled(bes[k], GAN_F16, n, 17);
        u[k] = cpu_fixture_buffer(bes[k], n, NULL);
        struct gan_ref rx = cpu_fixture_ref(x, GAN_F16), ru = cpu_fixture_ref(u[k], GAN_F32);
        ck_assert_int_eq(cpu_grad_stats(bes[k], n, &rx, 1.0f / 1024.0f, &ru, &st[k]), GAN_OK);
        cpu_buffer_free(bes[k], x);
    }
    ck_assert_int_gt(cpu_parallel_parts(p.three, (int64_t)n, 1024, 4), 1);
    assert_same_bytes(u[0], u[1], n * sizeof(float));
    ck_assert_uint_eq(st[0].elements, n);
    ck_assert_uint_eq(st[0].nonfinite, st[1].nonfinite);
    ck_assert_uint_eq(st[0].zeros, st[1].zeros);
    ck_assert_uint_eq(st[0].subnormal, st[1].subnormal);
    ck_assert_uint_gt(st[0].nonfinite, 0);
    ck_assert_uint_gt(st[0].subnormal, 0);
    ck_assert_mem_eq(&st[0].absmax, &st[1].absmax, sizeof(double));
    ck_assert_mem_eq(&st[0].sum_squares, &st[1].sum_squares, sizeof(double));
    ck_assert_mem_eq(&st[0].min_nonzero, &st[1].min_nonzero, sizeof(double));
    ck_assert(st[0].sum_squares > 0.0);
    cpu_buffer_free(p.one, u[0]);
    cpu_buffer_free(p.three, u[1]);
    pair_free(&p);
}
END_TEST

/* The gradient statistics of each vector level the CPU has (F16C/AVX2, AVX-512) against
 * the portable loop, on special values (NaNs, infinities, zeros, subnormals) of each
 * input type: the same counts, the same doubles, the same unscaled values. */
START_TEST(test_grad_stats_vector_level_same_bits)
{
    static const char *const vector[] = { "f16c", "avx512" };
    gan_backend *portable = backend(1, "portable");
    for (int lv = 0; lv < 2 && CPU_ISA_F16C + lv <= (int)cpu_isa_best(); lv++) {
        gan_backend *vec = backend(1, vector[lv]);
        ck_assert_int_eq(vec->isa, CPU_ISA_F16C + lv);
        const float scales[] = { 1.0f / 1024.0f, 1.0f, 0.0f, INFINITY, -0.5f };
        size_t n = 5011;
        for (int xdt = GAN_F32; xdt <= GAN_BF16; xdt++)
            for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
                gan_backend *bes[2] = { portable, vec };
                struct gan_grad_stats st[2];
                gan_buffer *u[2];
                for (int b = 0; b < 2; b++) {
                    gan_buffer *x = filled(bes[b], (enum gan_dtype)xdt, n, 19 + k);
                    u[b] = cpu_fixture_buffer(bes[b], n, NULL);
                    struct gan_ref rx = cpu_fixture_ref(x, (enum gan_dtype)xdt);
                    struct gan_ref ru = cpu_fixture_ref(u[b], GAN_F32);
                    ck_assert_int_eq(cpu_grad_stats(bes[b], n, &rx, scales[k], &ru, &st[b]),
                                     GAN_OK);
                    cpu_buffer_free(bes[b], x);
                }
                assert_same_bytes(u[0], u[1], n * sizeof(float));
                ck_assert_uint_eq(st[0].nonfinite, st[1].nonfinite);
                ck_assert_uint_eq(st[0].zeros, st[1].zeros);
                ck_assert_uint_eq(st[0].subnormal, st[1].subnormal);
                ck_assert_mem_eq(&st[0].absmax, &st[1].absmax, sizeof(double));
                ck_assert_mem_eq(&st[0].sum_squares, &st[1].sum_squares, sizeof(double));
                ck_assert_mem_eq(&st[0].min_nonzero, &st[1].min_nonzero, sizeof(double));
                cpu_buffer_free(portable, u[0]);
                cpu_buffer_free(vec, u[1]);
            }
        cpu_fixture_free(vec);
    }
    cpu_fixture_free(portable);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("cpu threads");
    TCase *pool = tcase_create("pool");
    tcase_add_test(pool, test_split_covers_each_unit_once);
    tcase_add_test(pool, test_small_work_stays_on_one_thread);
    tcase_add_test(pool, test_two_instances_have_their_own_workers);
    tcase_add_test(pool, test_jobs_around_hush_and_sleep);
    suite_add_tcase(s, pool);
    TCase *kernels = tcase_create("kernels");
    tcase_add_loop_test(kernels, test_elementwise_same_bits, 0, 2);
    tcase_add_loop_test(kernels, test_transcendental_split_same_bits, 0, 2);
    tcase_add_loop_test(kernels, test_reduce_same_bits, 0, 2);
    tcase_add_loop_test(kernels, test_cast_same_bits_and_counts, 0, 2);
    tcase_add_loop_test(kernels, test_convert_rows_same_bits, 0, 2);
    tcase_add_test(kernels, test_gemm_f16_same_bits);
    tcase_add_loop_test(kernels, test_sgemm_split_same_bits, 0, 3);
    tcase_add_loop_test(kernels, test_conv2d_same_bits, 0, 3);
    tcase_add_loop_test(kernels, test_adam_same_bits, 0, 2);
    tcase_add_test(kernels, test_adam_vector_level_same_bits);
    tcase_add_loop_test(kernels, test_grad_stats_same_bits, 0, 2);
    tcase_add_test(kernels, test_grad_stats_vector_level_same_bits);
    suite_add_tcase(s, kernels);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(threads_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
