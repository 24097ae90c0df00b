/* SPDX-License-Identifier: MIT */
/* check_onednn.c — the CPU backend's oneDNN paths (onednn*.c): BF16 GEMMs against an
 * FP64 reference of the BF16-rounded inputs within the FP32-accumulation bound, for
 * every transpose combination, alpha and beta, odd shapes, padded rows and batches;
 * BF16, FP32 and FP16 convolutions forward, backward-data and backward-filter against
 * the OpenBLAS path of the same backend, FP16's as the FP32 primitive's result rounded
 * once; the filter gradient in parts of the batch with the same bits on 1, 2 and 3
 * threads; primitives made once per shape and dtype; BF16 kept off oneDNN under "auto"
 * on a CPU without a BF16 dot product; the setting "gemm".
 * Skips (77) when the build has no oneDNN or the CPU is not x86-64; on a CPU without a
 * BF16 dot product (or under GANCTL_TEST_NO_BF16_DOT) runs all but the BF16 parts. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#ifdef GAN_HAVE_ONEDNN
#include "../../backends/cpu/onednn.h"
#endif

/* A backend on `threads` threads whose GEMMs and convolutions go through oneDNN
 * ("onednn" or "auto"), or through OpenBLAS only. */
static gan_backend *backend_threads(const char *path, int threads)
{
    char t[24], g[24];
    snprintf(t, sizeof t, "threads=%d", threads);
    snprintf(g, sizeof g, "gemm=%s", path);
    const char *const settings[3] = { t, g, NULL };
    gan_backend *be = cpu_fixture_new(settings);
    ck_assert_int_eq(cpu_gemm_path_setting(be->host, &be->gemm_path), GAN_OK);
    ck_assert_int_eq(cpu_onednn_open(be), GAN_OK);
    return be;
}

static gan_backend *backend_with(const char *path)
{
    return backend_threads(path, 2);
}

static void backend_free(gan_backend *be)
{
    cpu_onednn_close(be);
    cpu_fixture_free(be);
}

static const char *last_error(gan_backend *be)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

/* ------------------------------------------------------------------ GEMM */

struct gemm_case {
    int m, n, k, batch;
    int pad;          /* extra elements at the end of every stored row */
    float alpha, beta;
    enum gan_dtype c_dtype;
};

/* Odd sizes, vectors, one-element products, a padded and a batched case, the paper
 * toy's layer shape; alpha 1, 0.5, −2; beta 0, 1, 0.75; BF16 and FP32 results. */
static const struct gemm_case gemm_cases[] = {
    { 37, 29, 53, 1, 0, 1.0f, 0.0f, GAN_BF16 },
    { 37, 29, 53, 1, 0, 1.0f, 0.0f, GAN_F32 },
    { 1, 1, 1, 1, 0, 1.0f, 0.0f, GAN_BF16 },
    { 1, 17, 9, 1, 0, 0.5f, 1.0f, GAN_F32 },
    { 23, 1, 64, 1, 0, -2.0f, 0.75f, GAN_BF16 },
    { 64, 17, 130, 1, 3, 1.0f, 1.0f, GAN_BF16 },
    { 5, 7, 3, 3, 1, 0.5f, 0.75f, GAN_F32 },
    { 31, 33, 35, 2, 0, 1.0f, 1.0f, GAN_BF16 },
    { 256, 512, 512, 1, 0, 1.0f, 0.0f, GAN_BF16 },
    { 256, 2, 512, 1, 0, 1.0f, 1.0f, GAN_F32 },
};
#define NGEMM (int)(sizeof gemm_cases / sizeof gemm_cases[0])

/* A stored rows × cols BF16 matrix per batch entry, row stride ld, batch stride
 * rows·ld, filled with BF16 values in [−1, 1]; `ref` gets the same values as doubles. */
static gan_buffer *bf16_matrix(gan_backend *be, int64_t batch, int64_t rows, int64_t cols,
                               int64_t ld, enum gan_dtype dt, double lo, double hi,
                               double **ref)
{
    size_t n = (size_t)(batch * rows * ld);
    gan_buffer *buf = cpu_fixture_buffer(be, n, NULL);
    *ref = calloc(n ? n : 1, sizeof **ref);
    ck_assert_ptr_nonnull(*ref);
    for (size_t i = 0; i < n; i++) {
        raw_set(buf, dt, i, rng_uniform(lo, hi));
        (*ref)[i] = raw_get(buf, dt, i);
    }
    return buf;
}

START_TEST(test_gemm_reference)
{
    const struct gemm_case *gc = &gemm_cases[_i / 4];
    const int ta = (_i % 4) / 2, tb = _i % 2;
    gan_backend *be = backend_with("onednn");
    rng_seed(0x5eed0000u + (uint64_t)_i);
    const int64_t m = gc->m, n = gc->n, k = gc->k, B = gc->batch;
    const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    const int64_t lda = ca + gc->pad, ldb = cb + gc->pad, ldc = n + gc->pad;
    double *ra_v, *rb_v, *rc_v;
    gan_buffer *a = bf16_matrix(be, B, ra, ca, lda, GAN_BF16, -1, 1, &ra_v);
    gan_buffer *b = bf16_matrix(be, B, rb, cb, ldb, GAN_BF16, -1, 1, &rb_v);
    gan_buffer *c = bf16_matrix(be, B, m, n, ldc, gc->c_dtype, -1, 1, &rc_v);
    if (gc->beta == 0.0f) /* beta 0 does not read C: NaN there must not come through */
        for (size_t i = 0; i < (size_t)(B * m * ldc); i++)
            raw_set(c, gc->c_dtype, i, NAN);

    struct gan_gemm g = {
        .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k,
        .alpha = gc->alpha, .beta = gc->beta,
        .a = cpu_fixture_ref(a, GAN_BF16), .b = cpu_fixture_ref(b, GAN_BF16),
        .c = cpu_fixture_ref(c, gc->c_dtype),
        .lda = lda, .ldb = ldb, .ldc = ldc, .batch = B,
        .stride_a = ra * lda, .stride_b = rb * ldb, .stride_c = m * ldc,
    };
    ck_assert_msg(cpu_gemm(be, &g) == GAN_OK, "gemm: %s", last_error(be));
    int held;
    long created;
    cpu_onednn_cache_counts(be, &held, &created);
    ck_assert_msg(created == 1, "case %d: oneDNN made %ld primitives, not 1", _i, created);

    /* FP32 accumulation of k products: each partial sum is off by at most one FP32
     * rounding (2^-24 relative) of the sum of magnitudes; then the scales, and the
     * final rounding to C's dtype. */
    const double out_ulp = gc->c_dtype == GAN_BF16 ? 0x1p-8 : 0x1p-24;
    for (int64_t bi = 0; bi < B; bi++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double dot = 0, mag = 0;
                for (int64_t p = 0; p < k; p++) {
                    double av = ra_v[bi * ra * lda + (ta ? p * lda + i : i * lda + p)];
                    double bv = rb_v[bi * rb * ldb + (tb ? j * ldb + p : p * ldb + j)];
                    dot += av * bv;
                    mag += fabs(av * bv);
                }
                size_t ci = (size_t)(bi * m * ldc + i * ldc + j);
                double old = gc->beta != 0.0f ? rc_v[ci] : 0.0;
                double want = gc->alpha * dot + gc->beta * old;
                double bound = (double)(k + 2) * 0x1p-24 *
                                   (fabs(gc->alpha) * mag + fabs(gc->beta * old)) +
                               out_ulp * fabs(want) + 1e-30;
                double got = raw_get(c, gc->c_dtype, ci);
                ck_assert_msg(fabs(got - want) <= bound,
                              "case %d (trans %d%d) C[%lld][%lld][%lld] = %.9g, reference "
                              "%.9g, bound %.3g", _i, ta, tb, (long long)bi, (long long)i,
                              (long long)j, got, want, bound);
            }
    /* The padding after each row of C is not written. */
    if (gc->pad && gc->beta == 0.0f)
        ck_assert(isnan(raw_get(c, gc->c_dtype, (size_t)n)));
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    free(ra_v);
    free(rb_v);
    free(rc_v);
    backend_free(be);
}
END_TEST

/* Under "auto", BF16 goes to oneDNN through one of its fast kernels, not its
 * reference loops, for every transpose combination of the toy's shapes, where the CPU
 * has a BF16 dot product and oneDNN's BF16 matmul ran faster than its FP32 one by the
 * margin the probe asks, and to the backend's own GEMM (no primitive) elsewhere; FP32
 * and FP16 stay off oneDNN. The probe times the two only where the CPU has the unit. */
START_TEST(test_gemm_auto_routes)
{
    gan_backend *be = backend_with("auto");
    ck_assert_ptr_nonnull(be->onednn);
#ifdef GAN_HAVE_ONEDNN
    const int has_dot = cpu_has_bf16_dot();
    const double speed = be->onednn->bf16_speed;
    ck_assert_msg(has_dot ? speed > 0.0 : speed == 0.0, "BF16 speed %g with%s a BF16 dot "
                  "product", speed, has_dot ? "" : "out");
    ck_assert_int_eq(be->onednn->bf16, has_dot && speed >= CPU_ONEDNN_BF16_MIN_SPEED);
    ck_assert_int_eq(be->onednn->bf16_convs, be->onednn->bf16);
    const int dot = be->onednn->bf16;
#else
    const int dot = 0;
#endif
    const int64_t m = 256, n = 512, k = 512;
    gan_buffer *a = cpu_fixture_buffer(be, (size_t)(m * k), NULL);
    gan_buffer *b = cpu_fixture_buffer(be, (size_t)(k * n), NULL);
    gan_buffer *c = cpu_fixture_buffer(be, (size_t)(m * n), NULL);
    memset(a->data, 0, a->bytes);
    memset(b->data, 0, b->bytes);
    long before = 0;
    for (int t = 0; t < 4; t++) {
        int ta = t / 2, tb = t % 2;
        struct gan_gemm g = {
            .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = 1, .beta = 0,
            .a = cpu_fixture_ref(a, GAN_BF16), .b = cpu_fixture_ref(b, GAN_BF16),
            .c = cpu_fixture_ref(c, GAN_BF16), .lda = ta ? m : k, .ldb = tb ? k : n,
            .ldc = n, .batch = 1, .stride_a = m * k, .stride_b = k * n, .stride_c = m * n,
        };
        ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
        ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK); /* the same shape: no new primitive */
        int held;
        long created;
        cpu_onednn_cache_counts(be, &held, &created);
        ck_assert_msg(created == before + dot, "trans %d%d: %ld primitives after %ld", ta,
                      tb, created, before);
        before = created;
#ifdef GAN_HAVE_ONEDNN
        if (dot) {
            const struct cpu_onednn_entry *e = be->onednn->entries[held - 1];
            ck_assert_msg(!e->refused && strncmp(e->impl, "ref", 3) != 0,
                          "trans %d%d: implementation %s", ta, tb, e->impl);
        }
#endif
        /* FP32 and FP16 products of the same shape make no primitive */
        g.a.dtype = g.b.dtype = g.c.dtype = GAN_F32;
        ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
        g.a.dtype = g.b.dtype = g.c.dtype = GAN_F16;
        ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
        cpu_onednn_cache_counts(be, &held, &created);
        ck_assert_int_eq(created, before);
    }
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
    cpu_buffer_free(be, c);
    backend_free(be);
}
END_TEST

#ifdef GAN_HAVE_ONEDNN
/* A matmul of fewer than 16 MFLOP is made for one OpenMP thread, a larger one for the
 * instance's team: the paper toy's 2-wide input layer (0.5 MFLOP), 64×512×96 (6.3
 * MFLOP), 64×512×512 (34 MFLOP), its 512-wide layer (134 MFLOP) and that layer's weight
 * gradient (A transposed), in FP32 under gemm = "onednn" so that every CPU runs them.
 * FP32 products are never cut into runs of rows (test_gemm_rows_same_bits has BF16's). */
START_TEST(test_gemm_teams)
{
    gan_backend *be = backend_threads("onednn", 2);
    ck_assert_ptr_nonnull(be->onednn);
    static const int64_t shapes[5][4] = {
        { 256, 512, 2, 0 }, { 64, 512, 96, 0 }, { 64, 512, 512, 0 }, { 256, 512, 512, 0 },
        { 512, 512, 256, 1 },
    };
    static const int team[5] = { 1, 1, 2, 2, 2 };
    for (int s = 0; s < 5; s++) {
        const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        const int ta = (int)shapes[s][3];
        gan_buffer *a = cpu_fixture_buffer(be, (size_t)(m * k), NULL);
        gan_buffer *b = cpu_fixture_buffer(be, (size_t)(k * n), NULL);
        gan_buffer *c = cpu_fixture_buffer(be, (size_t)(m * n), NULL);
        memset(a->data, 0, a->bytes);
        memset(b->data, 0, b->bytes);
        struct gan_gemm g = {
            .trans_a = ta, .m = m, .n = n, .k = k, .alpha = 1, .beta = 0,
            .a = cpu_fixture_ref(a, GAN_F32), .b = cpu_fixture_ref(b, GAN_F32),
            .c = cpu_fixture_ref(c, GAN_F32), .lda = ta ? m : k, .ldb = n, .ldc = n,
            .batch = 1, .stride_a = m * k, .stride_b = k * n, .stride_c = m * n,
        };
        ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
        int held;
        long created;
        cpu_onednn_cache_counts(be, &held, &created);
        ck_assert_int_eq(held, s + 1);
        const struct cpu_onednn_entry *e = be->onednn->entries[held - 1];
        ck_assert_msg(!e->refused, "%lldx%lldx%lld: no primitive", (long long)m,
                      (long long)n, (long long)k);
        ck_assert_msg(e->threads == team[s], "%lldx%lldx%lld: made for %d threads, not %d",
                      (long long)m, (long long)n, (long long)k, e->threads, team[s]);
        ck_assert_int_eq(cpu_onednn_rows_parts(be, &g), 1);
        ck_assert_ptr_null(e->rows);
        cpu_buffer_free(be, a);
        cpu_buffer_free(be, b);
        cpu_buffer_free(be, c);
    }
    backend_free(be);
}
END_TEST

/* A BF16 product cut into runs of rows has the bits of the whole product on one thread:
 * the toy's forward and input-gradient shapes, a ragged last block (200 rows: runs of
 * 64, 64 and 72), a short wide one with padded rows, and 130 rows with work enough for
 * three runs, whose last block of 2 rows goes with the one before (runs of 64 and 66), with B transposed or not (A
 * never is where products are cut), alpha 1 and beta 0 or alpha 0.75 and beta 0.5,
 * into BF16 and FP32 results, one thread against three. Run where the CPU has a BF16
 * dot product. A kernel that is not cut must leave the product whole: oneDNN takes the
 * padded one on its gemm:jit kernel, and AMX's is not cut either. */
struct rows_case {
    int m, n, k, pad;
};
static const struct rows_case rows_cases[] = {
    { 256, 512, 512, 0 }, { 512, 512, 256, 0 }, { 200, 384, 320, 0 }, { 130, 1024, 64, 32 },
    { 130, 2048, 2048, 0 },
};
#define NROWS (int)(sizeof rows_cases / sizeof rows_cases[0])

START_TEST(test_gemm_rows_same_bits)
{
    const struct rows_case *rc = &rows_cases[_i / 8];
    const int ta = 0, tb = (_i / 4) % 2, scaled = (_i / 2) % 2;
    const enum gan_dtype in = GAN_BF16;
    const enum gan_dtype out = _i % 2 ? GAN_F32 : in;
    const int64_t m = rc->m, n = rc->n, k = rc->k;
    const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    const int64_t lda = ca + rc->pad, ldb = cb + rc->pad, ldc = n + rc->pad;
    gan_backend *one = backend_threads("onednn", 1), *three = backend_threads("onednn", 3);
    rng_seed(0x0e050000u + (uint64_t)_i);
    double *va, *vb, *vc;
    gan_buffer *a = bf16_matrix(one, 1, ra, ca, lda, in, -1, 1, &va);
    gan_buffer *b = bf16_matrix(one, 1, rb, cb, ldb, in, -1, 1, &vb);
    gan_buffer *c[2];
    for (int t = 0; t < 2; t++) {
        rng_seed(0xc0000000u + (uint64_t)_i);
        c[t] = bf16_matrix(one, 1, m, n, ldc, out, -1, 1, &vc);
        free(vc);
    }
    struct gan_gemm g = {
        .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k,
        .alpha = scaled ? 0.75f : 1.0f, .beta = scaled ? 0.5f : 0.0f,
        .a = cpu_fixture_ref(a, in), .b = cpu_fixture_ref(b, in), .c = cpu_fixture_ref(c[0], out),
        .lda = lda, .ldb = ldb, .ldc = ldc, .batch = 1,
        .stride_a = ra * lda, .stride_b = rb * ldb, .stride_c = m * ldc,
    };
    ck_assert_msg(cpu_gemm(one, &g) == GAN_OK, "%s", last_error(one));
    g.c = cpu_fixture_ref(c[1], out);
    const int parts = cpu_onednn_rows_parts(three, &g);
    ck_assert_int_gt(parts, 1);
    for (int p = 0; p < parts; p++) /* no run of a partial block alone */
        ck_assert_int_ge(cpu_onednn_rows_of(&g, parts, p), 64);
    ck_assert_msg(cpu_gemm(three, &g) == GAN_OK, "%s", last_error(three));
    int held;
    long created;
    cpu_onednn_cache_counts(three, &held, &created);
    ck_assert_int_eq(held, 1);
    const struct cpu_onednn_entry *e = three->onednn->entries[0];
    const int cut = cpu_onednn_rows_kernel(e->impl);
    ck_assert_msg((e->rows != NULL) == cut, "case %d on %s: %s", _i, e->impl,
                  e->rows ? "cut" : "not cut");
    cpu_onednn_cache_counts(one, &held, &created);
    ck_assert_msg(held == 1 && one->onednn->entries[0]->rows == NULL &&
                  !one->onednn->entries[0]->refused, "case %d: one thread's entry", _i);
    if (!cut)
        printf("note: %s is not cut into runs of rows; case %d not compared\n", e->impl, _i);
    for (int64_t i = 0; cut && i < m; i++)
        ck_assert_msg(memcmp((char *)c[0]->data + (size_t)(i * ldc) * gan_dtype_size(out),
                             (char *)c[1]->data + (size_t)(i * ldc) * gan_dtype_size(out),
                             (size_t)n * gan_dtype_size(out)) == 0,
                      "%dx%dx%d trans %d%d alpha %g beta %g, %s into %s: row %lld differs "
                      "between one thread and runs on three", rc->m, rc->n, rc->k, ta, tb,
                      (double)g.alpha, (double)g.beta, gan_dtype_name(in),
                      gan_dtype_name(out), (long long)i);
    cpu_buffer_free(one, a);
    cpu_buffer_free(one, b);
    cpu_buffer_free(one, c[0]);
    cpu_buffer_free(one, c[1]);
    free(va);
    free(vb);
    backend_free(one);
    backend_free(three);
}
END_TEST
#endif

/* ------------------------------------------------------------------ convolutions */

struct conv_case {
    int n, c_in, h, w, c_out, k, stride, pad, dilation;
};

/* The fashion-mnist DCGAN's layers (5×5, stride 2, padding 2: 28 → 14 → 7 → 4), odd
 * channel counts and sizes, 1×1, 3×3 with dilation; the last two with batches large
 * enough for the filter gradient to run in parts (onednn_filter.c): 2 parts of the
 * DCGAN's 14×14 layer, 3 of an odd shape. */
static const struct conv_case conv_cases[] = {
    { 8, 1, 28, 28, 16, 5, 2, 2, 1 },
    { 8, 16, 14, 14, 32, 5, 2, 2, 1 },
    { 8, 32, 7, 7, 64, 5, 2, 2, 1 },
    { 3, 3, 9, 11, 5, 3, 1, 1, 1 },
    { 2, 5, 7, 7, 3, 1, 1, 0, 1 },
    { 2, 3, 11, 11, 7, 3, 1, 2, 2 },
    { 1, 7, 13, 5, 9, 3, 3, 1, 1 },
    { 64, 16, 14, 14, 32, 5, 2, 2, 1 },
    { 12, 17, 21, 19, 80, 3, 1, 1, 1 },
};
/* The cases whose filter gradient runs in parts. */
#define CONV_PARTED_FIRST 7
#define NCONV (int)(sizeof conv_cases / sizeof conv_cases[0])

static struct gan_conv2d conv_desc(const struct conv_case *cc, enum gan_dtype dtype)
{
    struct gan_conv2d c = {
        .n = cc->n, .c_in = cc->c_in, .h_in = cc->h, .w_in = cc->w, .c_out = cc->c_out,
        .kh = cc->k, .kw = cc->k, .stride_h = cc->stride, .stride_w = cc->stride,
        .pad_h = cc->pad, .pad_w = cc->pad, .dilation_h = cc->dilation,
        .dilation_w = cc->dilation, .dtype = dtype,
    };
    int64_t ext = (int64_t)cc->dilation * (cc->k - 1) + 1;
    c.h_out = (cc->h + 2 * cc->pad - ext) / cc->stride + 1;
    c.w_out = (cc->w + 2 * cc->pad - ext) / cc->stride + 1;
    return c;
}

static gan_status conv_run(gan_backend *be, int kind, const struct gan_conv2d *c,
                           gan_buffer *a, gan_buffer *b, float beta, gan_buffer *out)
{
    struct gan_ref ra = cpu_fixture_ref(a, c->dtype), rb = cpu_fixture_ref(b, c->dtype),
                   ro = cpu_fixture_ref(out, c->dtype);
    switch (kind) {
    case 0: return cpu_conv2d_forward(be, c, &ra, &rb, beta, &ro);
    case 1: return cpu_conv2d_backward_data(be, c, &ra, &rb, beta, &ro);
    default: return cpu_conv2d_backward_filter(be, c, &ra, &rb, beta, &ro);
    }
}

/* Each kind, beta 0 and 1, FP32, FP16 and BF16, on oneDNN and on OpenBLAS: both
 * accumulate the same inputs in FP32 and round once, so they differ only by the order
 * of the FP32 sums, bounded by the sum of magnitudes that the OpenBLAS path computes on
 * |inputs|. Numbered dtype by dtype, so that the BF16 ones are a range of their own:
 * the last CONV_PER_DTYPE. */
static const enum gan_dtype conv_dtypes[] = { GAN_F32, GAN_F16, GAN_BF16 };
#define CONV_PER_DTYPE (6 * NCONV) /* 3 kinds × beta 0, 1 for every case */

START_TEST(test_conv_matches_openblas)
{
    const struct conv_case *cc = &conv_cases[(_i % CONV_PER_DTYPE) / 6];
    const enum gan_dtype dt = conv_dtypes[_i / CONV_PER_DTYPE];
    const int kind = (_i % 6) / 2;
    const float beta = (float)(_i % 2);
    static const char *const kinds[] = { "forward", "backward-data", "backward-filter" };
    struct gan_conv2d c = conv_desc(cc, dt);
    const size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in),
                 nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw),
                 ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
    const size_t na = kind == 1 ? ny : nx, nb = kind == 2 ? ny : nw,
                 no = kind == 0 ? ny : kind == 1 ? nx : nw;
    gan_backend *dnn = backend_with("onednn"), *blas = backend_with("openblas");
    ck_assert_ptr_null(blas->onednn);
    rng_seed(0xc0de0000u + (uint64_t)_i);
    gan_buffer *a = cpu_fixture_buffer(dnn, na, NULL), *b = cpu_fixture_buffer(dnn, nb, NULL);
    gan_buffer *abs_a = cpu_fixture_buffer(dnn, na, NULL), *abs_b = cpu_fixture_buffer(dnn, nb, NULL);
    gan_buffer *o1 = cpu_fixture_buffer(dnn, no, NULL), *o2 = cpu_fixture_buffer(dnn, no, NULL);
    gan_buffer *mag = cpu_fixture_buffer(dnn, no, NULL);
    for (size_t i = 0; i < na; i++) {
        raw_set(a, dt, i, rng_uniform(-1, 1));
        raw_set(abs_a, dt, i, fabs(raw_get(a, dt, i)));
    }
    for (size_t i = 0; i < nb; i++) {
        raw_set(b, dt, i, rng_uniform(-1, 1));
        raw_set(abs_b, dt, i, fabs(raw_get(b, dt, i)));
    }
    for (size_t i = 0; i < no; i++) {
        double v = rng_uniform(-1, 1);
        raw_set(o1, dt, i, v);
        raw_set(o2, dt, i, v);
        raw_set(mag, dt, i, 0);
    }
    ck_assert_msg(conv_run(dnn, kind, &c, a, b, beta, o1) == GAN_OK, "%s", last_error(dnn));
    ck_assert_msg(conv_run(blas, kind, &c, a, b, beta, o2) == GAN_OK, "%s", last_error(blas));
    ck_assert_int_eq(conv_run(blas, kind, &c, abs_a, abs_b, 0.0f, mag), GAN_OK);
    int held;
    long created;
    cpu_onednn_cache_counts(dnn, &held, &created);
    ck_assert_msg(held == 1 && created == 1, "%s: %d primitives held, %ld made", kinds[kind],
                  held, created);
    /* the sums a filter gradient adds up run over the batch and the output pixels */
    const double terms = kind == 0 ? (double)(c.c_in * c.kh * c.kw)
                       : kind == 1 ? (double)(c.c_out * c.kh * c.kw)
                       : (double)(c.n * c.h_out * c.w_out);
    size_t differ = 0;
    for (size_t i = 0; i < no; i++) {
        double x1 = raw_get(o1, dt, i), x2 = raw_get(o2, dt, i);
        double m = raw_get(mag, dt, i) * (1 + 0x1p-7) + (beta ? fabs(x2) : 0);
        /* each result is within one rounding to its dtype of the exact sum (and, in
         * FP16, half its subnormal spacing 2^-24), plus the FP32 accumulation's
         * (terms + 2)·2^-24 of the magnitudes */
        const double out_ulp = dt == GAN_BF16 ? 0x1p-8 : dt == GAN_F16 ? 0x1p-11 : 0x1p-24;
        const double floor = dt == GAN_F16 ? 0x1p-25 : 1e-30;
        double bound = 2 * (out_ulp * (fabs(x2) + m) + (terms + 2) * 0x1p-24 * m + floor);
        differ += x1 != x2;
        ck_assert_msg(fabs(x1 - x2) <= bound,
                      "case %d %s %s beta %g: element %zu is %.9g on oneDNN, %.9g on OpenBLAS "
                      "(bound %.3g)", (_i % CONV_PER_DTYPE) / 6, gan_dtype_name(dt), kinds[kind], (double)beta, i, x1,
                      x2, bound);
    }
    /* Nearly every element comes out the same: a wrong layout or a lost term would
     * stay within the loose bound only by chance, never on most elements. */
    ck_assert_msg(dt == GAN_F32 || differ * 10 <= no, "case %d %s %s: %zu of %zu elements differ",
                  (_i % CONV_PER_DTYPE) / 6, gan_dtype_name(dt), kinds[kind], differ, no);
    ck_assert_int_eq(conv_run(dnn, kind, &c, a, b, beta, o1), GAN_OK);
    cpu_onednn_cache_counts(dnn, &held, &created);
    ck_assert_int_eq(created, 1);
    gan_buffer *bufs[] = { a, b, abs_a, abs_b, o1, o2, mag };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cpu_buffer_free(dnn, bufs[i]);
    backend_free(dnn);
    backend_free(blas);
}
END_TEST

#ifdef GAN_HAVE_ONEDNN
/* Every argument of e (not a filter gradient in parts) whose layout in the primitive is
 * the channel blocks (nChw16c, nChw8c, whole blocks) of its plain tensor, as read back
 * from oneDNN here, is moved by the backend and has no reorder of oneDNN's; in a staged
 * FP16 entry it reads or writes the caller's FP16 memory, unless it is an output added
 * to. Every other argument keeps oneDNN's reorder or none. */
static void check_moves(const struct cpu_dnnl_api *api, const struct cpu_onednn_entry *e,
                        enum gan_dtype dt, int accumulate, const char *what)
{
    static const struct { dnnl_format_tag_t tag; int64_t block; } kinds[] = {
        { dnnl_nChw16c, 16 },
        { dnnl_nChw8c, 8 },
    };
    if (e->filter)
        return;
    for (int i = 0; i < e->nargs; i++) {
        const struct cpu_onednn_arg *a = &e->args[i];
        int64_t block = 0;
        if (a->inner) {
            const dnnl_memory_desc_t *user, *inner;
            ck_assert(api->dnnl_memory_get_memory_desc(a->user, &user) == dnnl_success);
            ck_assert(api->dnnl_memory_get_memory_desc(a->inner, &inner) == dnnl_success);
            for (size_t k = 0; k < 2 && !block; k++) {
                dnnl_memory_desc_t want;
                if (user->ndims == 4 && user->dims[1] % kinds[k].block == 0 &&
                    api->dnnl_memory_desc_init_by_tag(&want, 4, user->dims, user->data_type,
                                                      kinds[k].tag) == dnnl_success &&
                    api->dnnl_memory_desc_equal(&want, inner))
                    block = kinds[k].block;
            }
        }
        ck_assert_msg(a->blocks.block == block, "%s, argument %d: moved in blocks of %lld, "
                      "oneDNN's layout has %lld", what, i, (long long)a->blocks.block,
                      (long long)block);
        const int takes = block && dt == GAN_F16 && !(a->output && accumulate);
        ck_assert_msg(!block || !a->reorder, "%s, argument %d: a reorder beside the move",
                      what, i);
        ck_assert_msg(e->takes_plain[i] == takes && a->plain == (takes ? GAN_F16 : GAN_F32),
                      "%s, argument %d: takes the caller's FP16 memory %d, not %d", what, i,
                      e->takes_plain[i], takes);
    }
}
#endif

/* FP16 through oneDNN is the FP32 primitive's result on the widened inputs (and, for
 * beta 1, the widened output added in FP32), rounded once to FP16: every FP16 element
 * equals the FP32 call's element rounded to nearest even, bit for bit. */
START_TEST(test_conv_f16_rounds_f32_once)
{
    const struct conv_case *cc = &conv_cases[_i / 6];
    const int kind = (_i % 6) / 2;
    const float beta = (float)(_i % 2);
    static const char *const kinds[] = { "forward", "backward-data", "backward-filter" };
    struct gan_conv2d c16 = conv_desc(cc, GAN_F16), c32 = conv_desc(cc, GAN_F32);
    const size_t nx = (size_t)(c16.n * c16.c_in * c16.h_in * c16.w_in),
                 nw = (size_t)(c16.c_out * c16.c_in * c16.kh * c16.kw),
                 ny = (size_t)(c16.n * c16.c_out * c16.h_out * c16.w_out);
    const size_t na = kind == 1 ? ny : nx, nb = kind == 2 ? ny : nw,
                 no = kind == 0 ? ny : kind == 1 ? nx : nw;
    gan_backend *dnn = backend_with("onednn");
    rng_seed(0xf1600000u + (uint64_t)_i);
    gan_buffer *a16 = cpu_fixture_buffer(dnn, na, NULL), *b16 = cpu_fixture_buffer(dnn, nb, NULL);
    gan_buffer *a32 = cpu_fixture_buffer(dnn, na, NULL), *b32 = cpu_fixture_buffer(dnn, nb, NULL);
    gan_buffer *o16 = cpu_fixture_buffer(dnn, no, NULL), *o32 = cpu_fixture_buffer(dnn, no, NULL);
    /* the FP32 call's inputs are the FP16 values, exactly */
    for (size_t i = 0; i < na; i++) {
        raw_set(a16, GAN_F16, i, rng_uniform(-1, 1));
        raw_set(a32, GAN_F32, i, raw_get(a16, GAN_F16, i));
    }
    for (size_t i = 0; i < nb; i++) {
        raw_set(b16, GAN_F16, i, rng_uniform(-1, 1));
        raw_set(b32, GAN_F32, i, raw_get(b16, GAN_F16, i));
    }
    for (size_t i = 0; i < no; i++) {
        raw_set(o16, GAN_F16, i, rng_uniform(-1, 1));
        raw_set(o32, GAN_F32, i, raw_get(o16, GAN_F16, i));
    }
    ck_assert_msg(conv_run(dnn, kind, &c16, a16, b16, beta, o16) == GAN_OK, "%s",
                  last_error(dnn));
    ck_assert_msg(conv_run(dnn, kind, &c32, a32, b32, beta, o32) == GAN_OK, "%s",
                  last_error(dnn));
    /* two primitives: the FP16 call's key is not the FP32 call's */
    int held;
    long created;
    cpu_onednn_cache_counts(dnn, &held, &created);
    ck_assert_msg(held == 2 && created == 2, "%s: %d primitives held, %ld made", kinds[kind],
                  held, created);
#ifdef GAN_HAVE_ONEDNN
    /* the FP16 call's entry was made first */
    check_moves(&dnn->onednn->api, dnn->onednn->entries[0], GAN_F16, beta != 0.0f, kinds[kind]);
    check_moves(&dnn->onednn->api, dnn->onednn->entries[1], GAN_F32, beta != 0.0f, kinds[kind]);
#endif
    for (size_t i = 0; i < no; i++) {
        uint32_t want = f16_encode(raw_get(o32, GAN_F32, i)), got = raw_bits(o16, GAN_F16, i);
        ck_assert_msg(got == want, "case %d %s beta %g: element %zu is 0x%04x, the FP32 "
                      "result %.9g rounds to 0x%04x", _i / 6, kinds[kind], (double)beta, i,
                      (unsigned)got, raw_get(o32, GAN_F32, i), (unsigned)want);
    }
    gan_buffer *bufs[] = { a16, b16, a32, b32, o16, o32 };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cpu_buffer_free(dnn, bufs[i]);
    backend_free(dnn);
}
END_TEST

/* A filter gradient in parts of the batch has the same bits on 1, 2 and 3 threads, for
 * every dtype, beta 0 and 1: the batch is cut by the shape alone, each part computed by
 * one thread, the partials summed in part order. */
START_TEST(test_conv_filter_threads)
{
    const struct conv_case *cc = &conv_cases[CONV_PARTED_FIRST + _i / 6];
    const enum gan_dtype dt = conv_dtypes[(_i % 6) / 2];
    const float beta = (float)(_i % 2);
    struct gan_conv2d c = conv_desc(cc, dt);
#ifdef GAN_HAVE_ONEDNN
    ck_assert_msg(cpu_onednn_filter_parts(&c) > 1, "case %d is not cut into parts", _i / 6);
#endif
    const size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in),
                 nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw),
                 ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
    rng_seed(0xf17e0000u + (uint64_t)_i);
    gan_backend *be[3];
    gan_buffer *dw[3];
    for (int t = 0; t < 3; t++)
        be[t] = backend_threads("onednn", t + 1);
    gan_buffer *x = cpu_fixture_buffer(be[0], nx, NULL), *dy = cpu_fixture_buffer(be[0], ny, NULL);
    for (size_t i = 0; i < nx; i++)
        raw_set(x, dt, i, rng_uniform(-1, 1));
    for (size_t i = 0; i < ny; i++)
        raw_set(dy, dt, i, rng_uniform(-1, 1));
    for (int t = 0; t < 3; t++) {
        rng_seed(0xd0000000u + (uint64_t)_i);
        dw[t] = cpu_fixture_buffer(be[0], nw, NULL);
        for (size_t i = 0; i < nw; i++)
            raw_set(dw[t], dt, i, rng_uniform(-1, 1));
        ck_assert_msg(conv_run(be[t], 2, &c, x, dy, beta, dw[t]) == GAN_OK, "%s",
                      last_error(be[t]));
#ifdef GAN_HAVE_ONEDNN
        /* in parts, not the single call a failed build falls back to */
        int held;
        long created;
        cpu_onednn_cache_counts(be[t], &held, &created);
        ck_assert_int_eq(held, 1);
        ck_assert_ptr_nonnull(be[t]->onednn->entries[0]->filter);
#endif
    }
    const size_t bytes = nw * gan_dtype_size(dt);
    for (int t = 1; t < 3; t++)
        ck_assert_msg(memcmp(dw[0]->data, dw[t]->data, bytes) == 0,
                      "case %d %s beta %g: the filter gradient on %d threads differs from the "
                      "one on 1", _i / 6, gan_dtype_name(dt), (double)beta, t + 1);
    cpu_buffer_free(be[0], x);
    cpu_buffer_free(be[0], dy);
    for (int t = 0; t < 3; t++) {
        cpu_buffer_free(be[0], dw[t]);
        backend_free(be[t]);
    }
}
END_TEST

/* Under "auto", the DCGAN's FP16 and BF16 convolutions go to oneDNN through one of its
 * fast kernels, not its reference loops, each kind and dtype with a primitive of its own,
 * on every CPU: BF16 on oneDNN's BF16 kernels where they pay (a BF16 dot product, and
 * the probe's speed), and staged through its FP32 ones, as FP16 is, elsewhere. */
START_TEST(test_conv_auto_routes)
{
    gan_backend *be = backend_with("auto");
    ck_assert_ptr_nonnull(be->onednn);
    const struct gan_conv2d c = conv_desc(&conv_cases[1], GAN_F16);
    const size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in),
                 nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw),
                 ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
    gan_buffer *x = cpu_fixture_buffer(be, nx, NULL), *w = cpu_fixture_buffer(be, nw, NULL);
    gan_buffer *y = cpu_fixture_buffer(be, ny, NULL);
    memset(x->data, 0, x->bytes);
    memset(w->data, 0, w->bytes);
    memset(y->data, 0, y->bytes);
    gan_buffer *args[3][3] = { { x, w, y }, { y, w, x }, { x, y, w } };
    for (int kind = 0; kind < 3; kind++) {
        ck_assert_msg(conv_run(be, kind, &c, args[kind][0], args[kind][1], 0.0f,
                               args[kind][2]) == GAN_OK, "%s", last_error(be));
        int held;
        long created;
        cpu_onednn_cache_counts(be, &held, &created);
        ck_assert_int_eq(created, kind + 1);
#ifdef GAN_HAVE_ONEDNN
        const struct cpu_onednn_entry *e = be->onednn->entries[held - 1];
        ck_assert_msg(!e->refused && strncmp(e->impl, "ref", 3) != 0,
                      "kind %d: implementation %s", kind, e->impl);
#endif
    }
    const struct gan_conv2d cb = conv_desc(&conv_cases[1], GAN_BF16);
    for (int kind = 0; kind < 3; kind++) {
        ck_assert_msg(conv_run(be, kind, &cb, args[kind][0], args[kind][1], 0.0f,
                               args[kind][2]) == GAN_OK, "%s", last_error(be));
        int held;
        long created;
        cpu_onednn_cache_counts(be, &held, &created);
        ck_assert_msg(created == 3 + kind + 1, "BF16 kind %d: %ld primitives", kind, created);
#ifdef GAN_HAVE_ONEDNN
        const int dot = be->onednn->bf16_convs;
        const struct cpu_onednn_entry *e = be->onednn->entries[held - 1];
        ck_assert_msg(!e->refused && strncmp(e->impl, "ref", 3) != 0,
                      "BF16 kind %d (%s): implementation %s", kind,
                      dot ? "BF16 primitive" : "staged through FP32", e->impl);
        /* the BF16 kernels where they pay, the FP32 ones elsewhere */
        ck_assert_msg((strstr(e->impl, "bf16") != NULL) == (dot != 0),
                      "BF16 kind %d: implementation %s where BF16 convolutions are%s taken",
                      kind, e->impl, dot ? "" : " not");
#endif
    }
    cpu_buffer_free(be, x);
    cpu_buffer_free(be, w);
    cpu_buffer_free(be, y);
    backend_free(be);
}
END_TEST

/* Under "auto", the input gradient of a convolution with fewer than 4 input channels
 * (the DCGAN critic's first layer) goes to im2col + sgemm, whose result it then has bit
 * for bit, in every dtype; that layer's forward and filter gradient, and every direction
 * of a 16-channel layer, stay on oneDNN. backend.gemm = "onednn" sends it to oneDNN. */
START_TEST(test_conv_few_channels_data)
{
    const enum gan_dtype dt = conv_dtypes[_i];
    const struct gan_conv2d c = conv_desc(&conv_cases[0], dt);
    ck_assert_int_lt(c.c_in, CPU_ONEDNN_AUTO_DATA_MIN_CHANNELS);
    const size_t nx = (size_t)(c.n * c.c_in * c.h_in * c.w_in),
                 nw = (size_t)(c.c_out * c.c_in * c.kh * c.kw),
                 ny = (size_t)(c.n * c.c_out * c.h_out * c.w_out);
    gan_backend *be = backend_with("auto"), *blas = backend_with("openblas");
    rng_seed(0xfe3c0000u + (uint64_t)_i);
    gan_buffer *x = cpu_fixture_buffer(be, nx, NULL), *w = cpu_fixture_buffer(be, nw, NULL);
    gan_buffer *y = cpu_fixture_buffer(be, ny, NULL), *dx[2];
    for (size_t i = 0; i < nx; i++)
        raw_set(x, dt, i, rng_uniform(-1, 1));
    for (size_t i = 0; i < nw; i++)
        raw_set(w, dt, i, rng_uniform(-1, 1));
    for (size_t i = 0; i < ny; i++)
        raw_set(y, dt, i, rng_uniform(-1, 1));
    gan_backend *by[2] = { be, blas };
    for (int k = 0; k < 2; k++) {
        dx[k] = cpu_fixture_buffer(be, nx, NULL);
        ck_assert_msg(conv_run(by[k], 1, &c, y, w, 0.0f, dx[k]) == GAN_OK, "%s",
                      last_error(by[k]));
    }
    int held;
    long created;
    cpu_onednn_cache_counts(be, &held, &created);
    ck_assert_msg(created == 0, "%s: the input gradient of 1 channel made a oneDNN primitive",
                  gan_dtype_name(dt));
    ck_assert_msg(memcmp(dx[0]->data, dx[1]->data, nx * gan_dtype_size(dt)) == 0,
                  "%s: the input gradient under auto differs from im2col + sgemm's",
                  gan_dtype_name(dt));
    /* the layer's other directions stay on oneDNN, and so does a 16-channel input gradient */
    gan_buffer *dw = cpu_fixture_buffer(be, nw, NULL);
    ck_assert_msg(conv_run(be, 0, &c, x, w, 0.0f, y) == GAN_OK, "%s", last_error(be));
    ck_assert_msg(conv_run(be, 2, &c, x, y, 0.0f, dw) == GAN_OK, "%s", last_error(be));
    const struct gan_conv2d wide = conv_desc(&conv_cases[1], dt);
    const size_t wy = (size_t)(wide.n * wide.c_out * wide.h_out * wide.w_out),
                 ww = (size_t)(wide.c_out * wide.c_in * wide.kh * wide.kw),
                 wx = (size_t)(wide.n * wide.c_in * wide.h_in * wide.w_in);
    gan_buffer *wdy = cpu_fixture_buffer(be, wy, NULL), *wwt = cpu_fixture_buffer(be, ww, NULL),
               *wdx = cpu_fixture_buffer(be, wx, NULL);
    memset(wdy->data, 0, wdy->bytes);
    memset(wwt->data, 0, wwt->bytes);
    ck_assert_msg(conv_run(be, 1, &wide, wdy, wwt, 0.0f, wdx) == GAN_OK, "%s", last_error(be));
    cpu_onednn_cache_counts(be, &held, &created);
#ifdef GAN_HAVE_ONEDNN
    ck_assert_msg(created == 3, "%s: %ld primitives for the forward, the filter gradient and "
                  "the 16-channel input gradient", gan_dtype_name(dt), created);
    /* forced onto oneDNN, the 1-channel input gradient is oneDNN's */
    gan_backend *dnn = backend_with("onednn");
    gan_buffer *forced = cpu_fixture_buffer(be, nx, NULL);
    ck_assert_msg(conv_run(dnn, 1, &c, y, w, 0.0f, forced) == GAN_OK, "%s", last_error(dnn));
    cpu_onednn_cache_counts(dnn, &held, &created);
    ck_assert_int_eq(created, 1);
    cpu_buffer_free(be, forced);
    backend_free(dnn);
#endif
    gan_buffer *bufs[] = { x, w, y, dx[0], dx[1], dw, wdy, wwt, wdx };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cpu_buffer_free(be, bufs[i]);
    backend_free(be);
    backend_free(blas);
}
END_TEST

/* ------------------------------------------------------------------ the setting */

START_TEST(test_setting)
{
    static const char *const bad[] = { "gemm=mkl", NULL };
    struct test_host th;
    test_host_init(&th, bad);
    th.quiet = 1;
    enum cpu_gemm_path path = CPU_GEMM_AUTO;
    ck_assert_int_eq(cpu_gemm_path_setting(&th.host, &path), GAN_ERR_CONFIG);
    ck_assert_msg(strstr(th.last_error, "gemm = \"mkl\" is not a library") != NULL, "%s",
                  th.last_error);
    static const char *const none[] = { NULL };
    test_host_init(&th, none);
    ck_assert_int_eq(cpu_gemm_path_setting(&th.host, &path), GAN_OK);
    ck_assert_int_eq(path, CPU_GEMM_AUTO);
    static const char *const forced[] = { "gemm=onednn", NULL };
    test_host_init(&th, forced);
    ck_assert_int_eq(cpu_gemm_path_setting(&th.host, &path), GAN_OK);
    ck_assert_int_eq(path, CPU_GEMM_ONEDNN);
}
END_TEST

#ifdef GAN_HAVE_ONEDNN
/* OpenMP waits passively, set before libgomp loads and the environment put back (case
 * 0); a spin count from the environment is kept and named (case 1). The runner forks. */
START_TEST(test_openmp_waits)
{
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    ck_assert_msg(!gomp, "libgomp is already loaded in the test process");
    unsetenv("OMP_WAIT_POLICY");
    (void)(_i == 0 ? unsetenv("GOMP_SPINCOUNT") : setenv("GOMP_SPINCOUNT", "7", 1));
    gan_backend *be = backend_with("auto");
    ck_assert_ptr_nonnull(be->onednn);
    if (_i == 0) {
        ck_assert_str_eq(be->onednn->waits, "OpenMP threads wait passively");
        ck_assert_ptr_null(getenv("OMP_WAIT_POLICY"));
        ck_assert_ptr_null(getenv("GOMP_SPINCOUNT"));
    } else {
        ck_assert_str_eq(be->onednn->waits, "GOMP_SPINCOUNT=7 from the environment");
        ck_assert_str_eq(getenv("GOMP_SPINCOUNT"), "7");
        ck_assert_ptr_null(getenv("OMP_WAIT_POLICY"));
    }
    backend_free(be);
}
END_TEST
#endif

/* The BF16 GEMMs against the reference only where the CPU has a BF16 dot product; the
 * BF16 convolutions on every CPU (staged through FP32 where it has none). */
static Suite *onednn_suite(int bf16)
{
    Suite *s = suite_create("onednn");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 60);
    if (bf16)
        tcase_add_loop_test(tc, test_gemm_reference, 0, 4 * NGEMM);
    tcase_add_test(tc, test_gemm_auto_routes);
#ifdef GAN_HAVE_ONEDNN
    tcase_add_test(tc, test_gemm_teams);
    if (bf16)
        tcase_add_loop_test(tc, test_gemm_rows_same_bits, 0, 8 * NROWS);
#endif
    suite_add_tcase(s, tc);
    tc = tcase_create("conv2d");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_conv_matches_openblas, 0, 3 * CONV_PER_DTYPE);
    tcase_add_loop_test(tc, test_conv_f16_rounds_f32_once, 0, 6 * NCONV);
    tcase_add_loop_test(tc, test_conv_filter_threads, 0, 6 * (NCONV - CONV_PARTED_FIRST));
    tcase_add_test(tc, test_conv_auto_routes);
    tcase_add_loop_test(tc, test_conv_few_channels_data, 0, 3);
    suite_add_tcase(s, tc);
    tc = tcase_create("setting");
    tcase_add_test(tc, test_setting);
#ifdef GAN_HAVE_ONEDNN
    tcase_add_loop_test(tc, test_openmp_waits, 0, 2);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *skip = cpu_fixture_onednn_skip();
    if (skip) {
        printf("SKIP: %s\n", skip);
        return 77;
    }
    const int bf16 = cpu_has_bf16_dot();
    if (!bf16)
        printf("note: the BF16 GEMMs are skipped: this CPU has neither AVX512-BF16 nor "
               "AMX-BF16, or GANCTL_TEST_NO_BF16_DOT makes it act as one without\n");
    SRunner *sr = srunner_create(onednn_suite(bf16));
    /* test_openmp_waits needs a process in which libgomp has not been loaded */
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
