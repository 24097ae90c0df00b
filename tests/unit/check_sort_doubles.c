/* SPDX-License-Identifier: MIT */
/* check_sort_doubles.c — the radix sort of doubles against qsort with `<`, on values of
 * every sign and magnitude, with ties, zeros of both signs, infinities, subnormals and
 * NaNs (their payloads kept), on values whose low bytes are shared so that only some
 * passes run (an odd and an even number of them), and on trivial inputs. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eval/sort_doubles.h"

static int less_first(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

static uint64_t next_word(uint64_t *s)
{
    /* splitmix64: a fixed stream, the same on every machine. */
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint64_t bits_of(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* Sorts v both ways and compares: the same bits everywhere, except that the radix sort
 * puts −0 before +0 where qsort may keep either order (they compare equal). */
static void check_against_qsort(const double *v, size_t n)
{
    double *mine = malloc((n ? n : 1) * sizeof *mine), *ref = malloc((n ? n : 1) * sizeof *ref);
    uint64_t *scratch = malloc((n ? 2 * n : 1) * sizeof *scratch);
    ck_assert(mine && ref && scratch);
    if (n) {
        memcpy(mine, v, n * sizeof *v);
        memcpy(ref, v, n * sizeof *v);
    }
    gan_sort_doubles(mine, n, scratch);
    qsort(ref, n, sizeof *ref, less_first);
    for (size_t i = 0; i < n; i++) {
        if (mine[i] == 0.0 && ref[i] == 0.0)
            continue;
        ck_assert_msg(bits_of(mine[i]) == bits_of(ref[i]),
                      "n %zu, position %zu: %a after the radix sort, %a after qsort", n, i,
                      mine[i], ref[i]);
    }
    /* The zeros: as many of each sign as went in, every −0 before every +0. */
    size_t neg_in = 0, neg_out = 0;
    for (size_t i = 0; i < n; i++) {
        neg_in += v[i] == 0.0 && signbit(v[i]);
        neg_out += mine[i] == 0.0 && signbit(mine[i]);
    }
    ck_assert_msg(neg_in == neg_out, "n %zu: %zu negative zeros went in, %zu came out", n,
                  neg_in, neg_out);
    for (size_t i = 1; i < n; i++)
        ck_assert_msg(!(signbit(mine[i - 1]) == 0 && mine[i - 1] == 0.0 && mine[i] == 0.0
                        && signbit(mine[i])),
                      "n %zu: +0 before -0 at %zu", n, i);
    free(mine);
    free(ref);
    free(scratch);
}

START_TEST(test_random_values_of_every_magnitude)
{
    /* Random bit patterns cover every exponent and both signs; NaN patterns are made
     * finite, as qsort cannot order them. */
    uint64_t s = 1;
    size_t sizes[] = { 2, 3, 17, 256, 257, 2500, 10000 };
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        double *v = malloc(n * sizeof *v);
        ck_assert_ptr_nonnull(v);
        for (size_t i = 0; i < n; i++) {
            double x = from_bits(next_word(&s));
            v[i] = isnan(x) ? (double)(int64_t)(i % 7) - 3.0 : x;
        }
        check_against_qsort(v, n);
        free(v);
    }
}
END_TEST

START_TEST(test_projections_with_ties_zeros_and_infinities)
{
    /* Values as a projection gives them (near zero, a few units wide), with repeats, both
     * zeros, subnormals and infinities mixed in. */
    uint64_t s = 7;
    const size_t n = 2500;
    double *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    const double special[] = { 0.0, -0.0, INFINITY, -INFINITY, 4.9e-324, -4.9e-324,
                               2.2250738585072009e-308, -1.0, 1.0 };
    for (size_t i = 0; i < n; i++) {
        uint64_t w = next_word(&s);
        if (w % 10 == 0)
            v[i] = special[(w >> 8) % (sizeof special / sizeof special[0])];
        else if (w % 10 == 1 && i > 0)
            v[i] = v[(w >> 8) % i];
        else
            v[i] = 6.0 * ((double)(w >> 11) * 0x1.0p-53) - 3.0;
    }
    check_against_qsort(v, n);
    free(v);
}
END_TEST

START_TEST(test_some_digits_shared)
{
    /* Small whole numbers share their five low bytes (zero) and differ in the top
     * three: three passes run and five are skipped, and after an odd number of passes
     * the keys end in the second half of scratch. */
    const size_t n = 1000;
    double *v = malloc(n * sizeof *v);
    ck_assert_ptr_nonnull(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (double)((i * 7919) % 97);
    check_against_qsort(v, n);
    /* 1 to 2.875 in eighths: the top two bytes differ (the exponent, and the top of
     * the mantissa), an even count of passes. */
    for (size_t i = 0; i < n; i++)
        v[i] = 1.0 + (double)((i * 31) % 16) / 8.0;
    check_against_qsort(v, n);
    free(v);
}
END_TEST

START_TEST(test_trivial_inputs)
{
    double one = -2.5;
    check_against_qsort(&one, 1);
    check_against_qsort(NULL, 0);
    /* Every digit shared: every pass skipped, the values unchanged. */
    double same[5] = { 0.75, 0.75, 0.75, 0.75, 0.75 };
    check_against_qsort(same, 5);
    /* Already sorted, and sorted backwards. */
    double up[64], down[64];
    for (int i = 0; i < 64; i++) {
        up[i] = ldexp(1.0, i - 32) - 1.0;
        down[i] = -up[i];
    }
    check_against_qsort(up, 64);
    check_against_qsort(down, 64);
}
END_TEST

START_TEST(test_nans_at_the_ends)
{
    /* NaNs keep their bits, payload and all: −NaN first, +NaN last. */
    const uint64_t neg_nan = UINT64_C(0xfff8000000000123), pos_nan = UINT64_C(0x7ff4000000000456);
    double v[6] = { 1.0, from_bits(neg_nan), -1.0, from_bits(pos_nan), 0.0, -INFINITY };
    uint64_t scratch[12];
    gan_sort_doubles(v, 6, scratch);
    ck_assert(bits_of(v[0]) == neg_nan);
    ck_assert(v[1] == -INFINITY && v[2] == -1.0 && v[3] == 0.0 && v[4] == 1.0);
    ck_assert(bits_of(v[5]) == pos_nan);
}
END_TEST

static Suite *sort_suite(void)
{
    Suite *s = suite_create("sort_doubles");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_random_values_of_every_magnitude);
    tcase_add_test(tc, test_projections_with_ties_zeros_and_infinities);
    tcase_add_test(tc, test_some_digits_shared);
    tcase_add_test(tc, test_trivial_inputs);
    tcase_add_test(tc, test_nans_at_the_ends);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sort_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
