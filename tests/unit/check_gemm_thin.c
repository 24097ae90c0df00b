/* SPDX-License-Identifier: MIT */
/* check_gemm_thin.c — the CPU backend's own thin BF16 products (gemm_thin.c): few
 * columns, few rows, every transpose, BF16 and FP32 results, alpha and beta,
 * padding and batches, on every vector level it runs on this CPU. Each element must be
 * within FP32's bound of an FP64 reference, C's padding untouched; and the products it
 * takes are the thin BF16 ones only. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#include "../../backends/cpu/gemm_thin.h"

struct shape {
    int m, n, k;
    enum gan_dtype dc;
    float alpha, beta;
    int batch, share_b;
};

/* few columns (the toy's 2-D output, the critic's score), few rows (their weight
 * gradients), few of both and few k, odd sizes around the lanes, a batch with B shared */
static const struct shape shapes[] = {
    { 3, 2, 2, GAN_BF16, 1.0f, 0.0f, 1, 0 },
    { 4, 100, 3, GAN_F32, 1.0f, 1.0f, 1, 0 },
    { 2, 515, 37, GAN_BF16, 0.5f, -0.75f, 1, 0 },
    { 300, 2, 37, GAN_BF16, 1.0f, 0.0f, 1, 0 },
    { 33, 1, 513, GAN_F32, -2.0f, 0.5f, 1, 0 },
    { 40, 4, 20, GAN_F32, 1.0f, 0.0f, 1, 0 },
    { 1, 70, 300, GAN_BF16, 1.0f, 1.0f, 1, 0 },
    { 3, 129, 64, GAN_F32, 0.25f, 0.0f, 1, 0 },
    { 17, 3, 40, GAN_BF16, 1.0f, 0.0f, 3, 1 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* C of shape s with transposes ta, tb on a backend with `settings`; a copy of it */
static unsigned char *run(const char *const *settings, const struct shape *s, int ta, int tb,
                          unsigned char **a_out, unsigned char **b_out, unsigned char **c_out)
{
    gan_backend *be = cpu_fixture_new(settings);
    rng_seed((uint64_t)(s->m * 7919 + s->n * 104729 + s->k * 31 + ta * 2 + tb));
    const int ar = ta ? s->k : s->m, ac = ta ? s->m : s->k;
    const int br = tb ? s->n : s->k, bc = tb ? s->k : s->n;
    const int64_t sa = (int64_t)ar * (ac + 3) + 5,
                  sb = s->share_b ? 0 : (int64_t)br * (bc + 3) + 2,
                  sc = (int64_t)s->m * (s->n + 3) + 1;
    unsigned char *a = padded_operand(GAN_BF16, ar, ac, s->batch, sa, 1);
    unsigned char *b = padded_operand(GAN_BF16, br, bc, s->share_b ? 1 : s->batch, sb, 1);
    unsigned char *c = padded_operand(s->dc, s->m, s->n, s->batch, sc, s->beta != 0.0f);
    const size_t ea = (size_t)(sa * (s->batch - 1) + (int64_t)ar * (ac + 3)),
                 eb = (size_t)((s->share_b ? 0 : sb * (s->batch - 1)) + (int64_t)br * (bc + 3)),
                 ec = (size_t)(sc * (s->batch - 1) + (int64_t)s->m * (s->n + 3));
    gan_buffer *ba = host_upload(be, a, ea * 2), *bb = host_upload(be, b, eb * 2);
    gan_buffer *bcb = host_upload(be, c, ec * gan_dtype_size(s->dc));
    struct gan_gemm g = {
        .trans_a = ta, .trans_b = tb, .m = s->m, .n = s->n, .k = s->k,
        .alpha = s->alpha, .beta = s->beta,
        .a = cpu_fixture_ref(ba, GAN_BF16), .b = cpu_fixture_ref(bb, GAN_BF16),
        .c = cpu_fixture_ref(bcb, s->dc),
        .lda = ac + 3, .ldb = bc + 3, .ldc = s->n + 3,
        .batch = s->batch, .stride_a = sa, .stride_b = sb, .stride_c = sc,
    };
    ck_assert_msg(cpu_gemm_thin_takes(be, &g), "%s: %dx%dx%d not taken", settings[0], s->m,
                  s->n, s->k);
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
    unsigned char *out = malloc(ec * gan_dtype_size(s->dc));
    ck_assert_ptr_nonnull(out);
    memcpy(out, bcb->data, ec * gan_dtype_size(s->dc));
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, bcb);
    cpu_fixture_free(be);
    *a_out = a;
    *b_out = b;
    *c_out = c;
    return out;
}

static void check_against_fp64(const char *level, const struct shape *s, int ta, int tb,
                               const unsigned char *a, const unsigned char *b,
                               const unsigned char *c, const unsigned char *got)
{
    const int ac = ta ? s->m : s->k, bc = tb ? s->k : s->n;
    const int ar = ta ? s->k : s->m, br = tb ? s->n : s->k;
    const int64_t sa = (int64_t)ar * (ac + 3) + 5,
                  sb = s->share_b ? 0 : (int64_t)br * (bc + 3) + 2,
                  sc = (int64_t)s->m * (s->n + 3) + 1;
    const double out_ulp = s->dc == GAN_BF16 ? 0x1p-8 : 0x1p-24;
    for (int e = 0; e < s->batch; e++)
        for (int i = 0; i < s->m; i++)
            for (int j = 0; j < s->n + 3; j++) {
                const size_t at = (size_t)(e * sc + i * (s->n + 3) + j);
                const double v = host_get(got, s->dc, at);
                if (j >= s->n) { /* padding: as it was */
                    ck_assert_msg(isnan(v), "%s: the padding of C was written", level);
                    continue;
                }
                double dot = 0, mag = 0;
                for (int q = 0; q < s->k; q++) {
                    double x = host_get(a, GAN_BF16, (size_t)(e * sa + (ta ? q * (ac + 3) + i
                                                                   : i * (ac + 3) + q)));
                    double y = host_get(b, GAN_BF16, (size_t)(e * sb + (tb ? j * (bc + 3) + q
                                                                   : q * (bc + 3) + j)));
                    dot += x * y;
                    mag += fabs(x * y);
                }
                const double old = s->beta != 0.0f ? host_get(c, s->dc, at) : 0.0;
                const double want = s->alpha * dot + s->beta * old;
                const double bound = (double)(s->k + 2) * 0x1p-24 *
                                         (fabs(s->alpha) * mag + fabs(s->beta * old)) +
                                     out_ulp * fabs(want) + 1e-30;
                ck_assert_msg(fabs(v - want) <= bound,
                              "%s, %dx%dx%d ta %d tb %d: C[%d](%d, %d) = %.9g, FP64 %.9g, "
                              "bound %.3g", level, s->m, s->n, s->k, ta, tb, e, i, j, v, want,
                              bound);
            }
}

START_TEST(test_thin)
{
    const struct shape *s = &shapes[_i / 4];
    const int ta = _i % 4 / 2, tb = _i % 2;
    const char *names[2];
    const int n = fma_levels(names);
    if (n == 0) {
        fprintf(stderr, "check_gemm_thin: skipped: this CPU has no AVX2 with FMA, where "
                        "the thin products run\n");
        return;
    }
    for (int l = 0; l < n; l++) {
        unsigned char *out, *a, *b, *c;
        const char *settings[] = { names[l], "threads=2", NULL };
        out = run(settings, s, ta, tb, &a, &b, &c);
        check_against_fp64(names[l], s, ta, tb, a, b, c, out);
        free(a);
        free(b);
        free(c);
        free(out);
    }
}
END_TEST

/* Which products it takes: BF16 operands into BF16 or FP32, at most CPU_THIN_MAX columns
 * or rows (few k alone is not thin), on a vector level with FMA, and not under gemm =
 * "onednn". */
START_TEST(test_route)
{
    const char *names[2];
    const int n = fma_levels(names);
    struct gan_gemm g = { .m = 256, .n = 2, .k = 512, .alpha = 1.0f, .batch = 1 };
    g.a.dtype = g.b.dtype = g.c.dtype = GAN_BF16;
    const char *portable[] = { "vector=portable", NULL };
    gan_backend *be = cpu_fixture_new(portable);
    ck_assert(!cpu_gemm_thin_takes(be, &g));
    cpu_fixture_free(be);
    if (n == 0) {
        fprintf(stderr, "check_gemm_thin: route skipped: no AVX2 with FMA\n");
        return;
    }
    for (int l = 0; l < n; l++) {
        const char *settings[] = { names[l], NULL };
        be = cpu_fixture_new(settings);
        ck_assert(cpu_gemm_thin_takes(be, &g));
        g.c.dtype = GAN_F32;
        ck_assert(cpu_gemm_thin_takes(be, &g));
        g.n = CPU_THIN_MAX + 1;
        ck_assert(!cpu_gemm_thin_takes(be, &g));
        g.k = 2;
        ck_assert(!cpu_gemm_thin_takes(be, &g));
        g.k = 512, g.m = CPU_THIN_MAX;
        ck_assert(cpu_gemm_thin_takes(be, &g));
        g.a.dtype = GAN_F16;
        ck_assert(!cpu_gemm_thin_takes(be, &g));
        g.a.dtype = g.b.dtype = g.c.dtype = GAN_F32;
        ck_assert(!cpu_gemm_thin_takes(be, &g));
        g.a.dtype = g.b.dtype = GAN_BF16, g.c.dtype = GAN_F16;
        ck_assert(!cpu_gemm_thin_takes(be, &g));
        g.c.dtype = GAN_BF16, g.m = 256, g.n = 2;
        cpu_fixture_free(be);
    }
#ifdef GAN_HAVE_ONEDNN
    const char *onednn[] = { names[0], "gemm=onednn", NULL };
    be = cpu_fixture_new(onednn);
    ck_assert_int_eq(cpu_gemm_path_setting(be->host, &be->gemm_path), GAN_OK);
    ck_assert(!cpu_gemm_thin_takes(be, &g));
    cpu_fixture_free(be);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm_thin");
    TCase *tc = tcase_create("products");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_thin, 0, N_SHAPES * 4);
    tcase_add_test(tc, test_route);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
