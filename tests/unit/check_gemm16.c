/* SPDX-License-Identifier: MIT */
/* check_gemm16.c — the CPU backend's own GEMM for 16-bit products (gemm16.c): on every
 * vector level it runs on this CPU, and at 1 and 2 threads, each element must be
 * exactly what a scalar loop of fmaf computes (one FP32 chain over k, alpha·chain +
 * beta·C, one rounding into C), for odd shapes, every transpose, mixed types, padding
 * and batches; the products it leaves to the staged path stay there. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"
#include "../../backends/cpu/gemm16.h"

struct shape {
    int m, n, k;
    enum gan_dtype da, db, dc;
    float alpha, beta;
    int batch, share_a, share_b;
    int dense; /* A and B stored with ld = their columns, else 3 more (C always 3 more) */
};

/* Odd sizes around the tiles (12 × 32 and 6 × 16), the 96 rows and 512 columns of a
 * block, k across a packed line, k of a few values; every type in every operand. */
static const struct shape shapes[] = {
    { 8, 16, 1, GAN_F16, GAN_F16, GAN_F16, 1.0f, 0.0f, 1, 0, 0, 0 },
    { 13, 37, 29, GAN_F16, GAN_F16, GAN_F32, 1.0f, 0.0f, 1, 0, 0, 0 },
    { 12, 32, 16, GAN_BF16, GAN_BF16, GAN_BF16, 1.0f, 1.0f, 1, 0, 0, 0 },
    { 25, 33, 17, GAN_F16, GAN_F32, GAN_F32, 0.3f, 0.1f, 1, 0, 0, 0 },
    { 21, 18, 40, GAN_BF16, GAN_F16, GAN_F16, 0.5f, 0.7f, 1, 0, 0, 0 },
    { 100, 70, 300, GAN_BF16, GAN_BF16, GAN_F32, 1.0f, 0.0f, 1, 0, 0, 0 },
    { 97, 19, 513, GAN_F32, GAN_BF16, GAN_BF16, 2.0f, -1.0f, 1, 0, 0, 0 },
    { 40, 530, 48, GAN_F16, GAN_F16, GAN_F16, 1.0f, 1.0f, 1, 0, 0, 0 },
    { 30, 40, 20, GAN_F16, GAN_F16, GAN_F16, 1.0f, 0.0f, 3, 1, 0, 0 },
    { 9, 17, 3, GAN_F32, GAN_F32, GAN_F16, 1.0f, 0.0f, 2, 0, 0, 0 },
    /* k ≤ CPU_GEMM16_SHALLOW (the shallow kernel) and just past it (the tiles) */
    { 37, 70, 2, GAN_BF16, GAN_BF16, GAN_BF16, 1.0f, 0.0f, 1, 0, 0, 0 },
    { 19, 33, 4, GAN_F16, GAN_BF16, GAN_F16, 0.5f, 0.7f, 2, 0, 0, 0 },
    { 64, 48, 1, GAN_F32, GAN_F16, GAN_BF16, 2.0f, -1.0f, 3, 1, 0, 0 },
    { 20, 40, 5, GAN_BF16, GAN_BF16, GAN_F32, 1.0f, 1.0f, 1, 0, 0, 0 },
    /* operands without padding (widened in one run), rows split across threads, B shared */
    { 256, 512, 2, GAN_BF16, GAN_BF16, GAN_BF16, 1.0f, 0.0f, 1, 0, 0, 1 },
    { 300, 450, 3, GAN_F16, GAN_F16, GAN_F16, 1.0f, 0.5f, 2, 0, 1, 1 },
    /* the last tile of rows with a third or two thirds of MR rows, k in several blocks:
     * 96 + 8 rows (8 of 12 on AVX-512, 2 of 6 on AVX2), 24 + 5 (8 of 12, 6 of 6) */
    { 104, 40, 300, GAN_BF16, GAN_F16, GAN_BF16, 1.0f, 0.5f, 1, 0, 0, 0 },
    { 29, 20, 520, GAN_F16, GAN_F16, GAN_F32, 1.0f, 0.0f, 1, 0, 0, 0 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* Runs shape `s` with transposes ta, tb on a backend made with `settings`, and compares
 * every element of C (and C's padding, which must be untouched) with the scalar loop. */
static void run_exact(const char *const *settings, const struct shape *s, int ta, int tb)
{
    gan_backend *be = cpu_fixture_new(settings);
    rng_seed((uint64_t)(s->m * 7919 + s->n * 104729 + s->k * 31 + ta * 2 + tb));
    const int ar = ta ? s->k : s->m, ac = ta ? s->m : s->k;
    const int br = tb ? s->n : s->k, bc = tb ? s->k : s->n;
    const int lda = ac + (s->dense ? 0 : 3), ldb = bc + (s->dense ? 0 : 3);
    const int64_t sa = s->share_a ? 0 : (int64_t)ar * lda + 5,
                  sb = s->share_b ? 0 : (int64_t)br * ldb + 2,
                  sc = (int64_t)s->m * (s->n + 3) + 1;
    unsigned char *a = strided_operand(s->da, ar, ac, lda, s->share_a ? 1 : s->batch, sa, 1);
    unsigned char *b = strided_operand(s->db, br, bc, ldb, s->share_b ? 1 : s->batch, sb, 1);
    /* beta = 0: C starts as NaN, which must not come through */
    unsigned char *c = padded_operand(s->dc, s->m, s->n, s->batch, sc, s->beta != 0.0f);
    const size_t ea = (size_t)(sa * (s->batch - 1) + (int64_t)ar * lda),
                 eb = (size_t)(sb * (s->batch - 1) + (int64_t)br * ldb),
                 ec = (size_t)(sc * (s->batch - 1) + (int64_t)s->m * (s->n + 3));
    gan_buffer *ba = host_upload(be, a, ea * gan_dtype_size(s->da));
    gan_buffer *bb = host_upload(be, b, eb * gan_dtype_size(s->db));
    gan_buffer *bcb = host_upload(be, c, ec * gan_dtype_size(s->dc));

    struct gan_gemm g = {
        .trans_a = ta, .trans_b = tb, .m = s->m, .n = s->n, .k = s->k,
        .alpha = s->alpha, .beta = s->beta,
        .a = cpu_fixture_ref(ba, s->da), .b = cpu_fixture_ref(bb, s->db),
        .c = cpu_fixture_ref(bcb, s->dc),
        .lda = lda, .ldb = ldb, .ldc = s->n + 3,
        .batch = s->batch, .stride_a = sa, .stride_b = sb, .stride_c = sc,
    };
    ck_assert_msg(cpu_gemm16_takes(be, &g), "gemm16 does not take %dx%dx%d", s->m, s->n, s->k);
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);

    for (int e = 0; e < s->batch; e++)
        for (int i = 0; i < s->m; i++)
            for (int j = 0; j < s->n + 3; j++) {
                const size_t at = (size_t)(e * sc + i * (s->n + 3) + j);
                float want = host_get(c, s->dc, at);
                if (j < s->n) {
                    float acc = 0.0f;
                    for (int q = 0; q < s->k; q++) {
                        const float x = host_get(a, s->da, (size_t)(e * sa + (ta ? q * lda + i
                                                                             : i * lda + q)));
                        const float y = host_get(b, s->db, (size_t)(e * sb + (tb ? j * ldb + q
                                                                             : q * ldb + j)));
                        acc = fmaf(x, y, acc);
                    }
                    /* each product and the sum rounded once, never fused */
                    volatile float scaled = s->alpha * acc;
                    want = scaled;
                    if (s->beta != 0.0f) {
                        volatile float old = s->beta * host_get(c, s->dc, at);
                        want = scaled + old;
                    }
                    unsigned char one[4];
                    host_set(one, s->dc, 0, want);
                    want = host_get(one, s->dc, 0);
                }
                const float got = host_get(bcb->data, s->dc, at);
                ck_assert_msg(memcmp(&got, &want, sizeof got) == 0 || (isnan(got) && isnan(want)),
                              "%s, %dx%dx%d ta %d tb %d: C[%d](%d, %d) = %a, the scalar loop "
                              "gives %a", settings[0], s->m, s->n, s->k, ta, tb, e, i, j,
                              (double)got, (double)want);
            }
    free(a);
    free(b);
    free(c);
    cpu_buffer_free(be, ba);
    cpu_buffer_free(be, bb);
    cpu_buffer_free(be, bcb);
    cpu_fixture_free(be);
}

START_TEST(test_exact)
{
    const struct shape *s = &shapes[_i / 4];
    const char *names[2];
    const int n = fma_levels(names);
    if (n == 0) {
        fprintf(stderr, "check_gemm16: skipped: this CPU has no AVX2 with FMA, where the "
                        "backend's own 16-bit GEMM runs\n");
        return;
    }
    for (int l = 0; l < n; l++)
        for (int t = 1; t <= 2; t++) {
            const char *settings[] = { names[l], t == 1 ? "threads=1" : "threads=2",
                                       "gemm16=packed", NULL };
            run_exact(settings, s, _i % 4 / 2, _i % 2);
        }
}
END_TEST

/* Which products it takes: a 16-bit operand, at least 8 rows and 16 columns, a vector
 * level with FMA (AVX2 only under "packed"), and not under gemm16 = "staged". */
START_TEST(test_route)
{
    const char *names[2];
    const int n = fma_levels(names);
    struct gan_gemm g = { .m = 64, .n = 64, .k = 64, .alpha = 1.0f, .batch = 1 };
    g.a.dtype = GAN_F16, g.b.dtype = GAN_F16, g.c.dtype = GAN_F16;
    const char *portable[] = { "vector=portable", "gemm16=packed", NULL },
               *staged[] = { "gemm16=staged", NULL }, *avx2[] = { "vector=f16c", NULL };
    gan_backend *be = cpu_fixture_new(portable);
    ck_assert(!cpu_gemm16_takes(be, &g));
    cpu_fixture_free(be);
    be = cpu_fixture_new(staged);
    ck_assert(!cpu_gemm16_takes(be, &g));
    cpu_fixture_free(be);
    if (n == 0) {
        fprintf(stderr, "check_gemm16: route on a vector level skipped: no AVX2 with FMA\n");
        return;
    }
    be = cpu_fixture_new(avx2); /* "auto" leaves AVX2 to the staged path */
    ck_assert(!cpu_gemm16_takes(be, &g));
    cpu_fixture_free(be);
    const char *settings[] = { names[n - 1], "gemm16=packed", NULL };
    be = cpu_fixture_new(settings);
    ck_assert(cpu_gemm16_takes(be, &g));
    g.m = CPU_GEMM16_MIN_ROWS - 1;
    ck_assert(!cpu_gemm16_takes(be, &g));
    g.m = 64, g.n = CPU_GEMM16_MIN_COLS - 1;
    ck_assert(!cpu_gemm16_takes(be, &g));
    g.n = 64, g.a.dtype = g.b.dtype = g.c.dtype = GAN_F32;
    ck_assert(!cpu_gemm16_takes(be, &g));
    g.c.dtype = GAN_BF16;
    ck_assert(cpu_gemm16_takes(be, &g));
    cpu_fixture_free(be);
    if (cpu_isa_best() >= CPU_ISA_AVX512) {
        const char *wide[] = { "vector=avx512", NULL };
        be = cpu_fixture_new(wide); /* "auto" takes AVX-512 */
        ck_assert(cpu_gemm16_takes(be, &g));
        cpu_fixture_free(be);
    } else
        fprintf(stderr, "check_gemm16: \"auto\" on AVX-512 not checked: this CPU has no "
                        "AVX-512\n");
}
END_TEST

START_TEST(test_bad_setting)
{
    const char *bad[] = { "gemm16=packed-twice", NULL };
    struct test_host th;
    test_host_init(&th, bad);
    enum cpu_gemm16_path path;
    ck_assert_int_eq(cpu_gemm16_setting(&th.host, &path), GAN_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(th.last_error, "gemm16 = \"packed-twice\""));
    ck_assert_ptr_nonnull(strstr(th.last_error, "\"staged\""));
    ck_assert_ptr_nonnull(strstr(th.last_error, "\"packed\""));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemm16");
    TCase *tc = tcase_create("gemm16");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_exact, 0, N_SHAPES * 4);
    tcase_add_test(tc, test_route);
    tcase_add_test(tc, test_bad_setting);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
