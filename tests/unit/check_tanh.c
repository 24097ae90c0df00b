/* SPDX-License-Identifier: MIT */
/* check_tanh.c — the CPU backend's FP32 tanh (backends/cpu/tanh.c and tanh_lanes.h):
 * each vector level gives the scalar function's bits, lane by lane, over a sweep of
 * every magnitude and around every bound where the algorithm changes case; the scalar
 * function is within 3 ulps of tanh computed in double, odd, and exact at its special
 * values. The vector parts run on the levels this CPU has and say which they skip. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/cpu/cpu_backend.h"
#include "../../backends/cpu/tanh_consts.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The inputs: every 4099th bit pattern (both signs, every exponent, NaNs and infinities
 * among them), then 64 patterns each side of every bound on |x| that tanh.c chooses a
 * case by, and of the arguments 2|x| where expm1's k = round(2|x| / ln 2) steps, for
 * k up to 64, with both signs. */
static float *inputs(size_t *count)
{
    static const uint32_t bounds[] = {
        TANH_TINY, TANH_SATURATED, 0x3f800000u, 0x7f800000u,
        /* |x| = bound / 2 puts 2|x| on expm1's own bounds */
        TANH_EXPM1_TINY - 0x00800000u, TANH_EXPM1_HALF_LN2 - 0x00800000u,
        TANH_EXPM1_3HALF_LN2 - 0x00800000u,
    };
    size_t nb = sizeof bounds / sizeof bounds[0];
    size_t cap = (1u << 20) + (nb + 64) * 2 * 129 + 16;
    float *x = malloc(cap * sizeof *x);
    ck_assert_ptr_nonnull(x);
    size_t n = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += 4099)
        x[n++] = from_bits((uint32_t)u);
    for (size_t b = 0; b < nb + 64; b++) {
        /* (k − ½)·ln 2 / 2 is where 2|x| / ln 2 + ½ reaches k */
        uint32_t centre = b < nb ? bounds[b]
                                 : to_bits((float)(((double)(b - nb) + 1.5) * M_LN2 / 2.0));
        for (int d = -64; d <= 64; d++)
            for (uint32_t negative = 0; negative < 2; negative++)
                x[n++] = from_bits((centre + (uint32_t)d) | negative << 31);
    }
    ck_assert_uint_le(n, cap);
    *count = n;
    return x;
}

/* Runs one vector level over the inputs and compares every lane with cpu_tanhf. */
static void check_level(enum cpu_isa level)
{
    if (cpu_isa_best() < level) {
        printf("check_tanh: this CPU has no %s: that level's comparison is skipped\n",
               level == CPU_ISA_AVX512 ? "AVX-512" : "AVX2 with F16C");
        return;
    }
    size_t n;
    float *x = inputs(&n);
    float *y = malloc(n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    struct cpu_vec_in in = { x, GAN_F32, 0, 0.0f };
    /* an odd length, so that the last block is a partial one */
    (level == CPU_ISA_AVX512 ? cpu_vec_unary_avx512 : cpu_vec_unary_avx2)(
        GAN_UNARY_TANH, 0.0f, &in, y, GAN_F32, 0, (int64_t)n - 1);
    /* Asserted once at the end: each ck_assert is a write to Check's pipe. */
    size_t differ = 0, first = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (to_bits(y[i]) != to_bits(cpu_tanhf(x[i])) && !differ++)
            first = i;
    ck_assert_msg(!differ, "%s: %zu of %zu lanes differ from the scalar; the first, tanh(%a) "
                  "(0x%08x), is 0x%08x where the scalar gives 0x%08x", cpu_isa_name(level),
                  differ, n - 1, (double)x[first], to_bits(x[first]), to_bits(y[first]),
                  to_bits(cpu_tanhf(x[first])));
    free(y);
    free(x);
}

START_TEST(test_avx512_same_bits)
{
    check_level(CPU_ISA_AVX512);
}
END_TEST

START_TEST(test_avx2_same_bits)
{
    check_level(CPU_ISA_F16C);
}
END_TEST

/* In ulps of the double result rounded to FP32. */
static double ulps_off(float got, double want)
{
    float w = (float)want;
    double ulp = (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
    return fabs((double)got - want) / ulp;
}

START_TEST(test_accuracy_and_symmetry)
{
    size_t n;
    float *x = inputs(&n);
    double worst = 0.0;
    size_t at = 0, odd_fails = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            continue;
        float t = cpu_tanhf(x[i]);
        double off = ulps_off(t, tanh((double)x[i]));
        if (off > worst) {
            worst = off;
            at = i;
        }
        odd_fails += to_bits(cpu_tanhf(-x[i])) != (to_bits(t) ^ 0x80000000u);
    }
    ck_assert_msg(worst <= 3.0, "tanh(%a) is %a, %.2f ulps from %a", (double)x[at],
                  (double)cpu_tanhf(x[at]), worst, tanh((double)x[at]));
    ck_assert_msg(!odd_fails, "tanh(-x) is not -tanh(x) for %zu inputs", odd_fails);
    /* Over all 2^32 inputs the worst is 2.19 ulps (at 0x3e6ee50c, |x| = 0.2333); a
     * function within an ulp everywhere on this sweep would be some other function. */
    ck_assert_msg(worst > 1.0, "the sweep's worst error is only %.2f ulps", worst);
    free(x);
}
END_TEST

START_TEST(test_special_values)
{
    ck_assert(to_bits(cpu_tanhf(0.0f)) == 0u);
    ck_assert(to_bits(cpu_tanhf(-0.0f)) == 0x80000000u);
    ck_assert(cpu_tanhf(INFINITY) == 1.0f && cpu_tanhf(-INFINITY) == -1.0f);
    ck_assert(isnan(cpu_tanhf(NAN)));
    /* from 22 on, ±1 exactly; just below, the last value short of 1 */
    ck_assert(cpu_tanhf(22.0f) == 1.0f && cpu_tanhf(-1e30f) == -1.0f);
    ck_assert(cpu_tanhf(9.0f) == nextafterf(1.0f, 0.0f));
    /* below 2⁻⁵⁵, and subnormals: x itself */
    ck_assert(cpu_tanhf(0x1p-56f) == 0x1p-56f);
    ck_assert(cpu_tanhf(-0x1p-149f) == -0x1p-149f);
    /* a value to the last bit (tanh(1/2) = 0.46211715726…) */
    ck_assert(cpu_tanhf(0.5f) == 0x1.d9353ep-2f);
}
END_TEST

static Suite *tanh_suite(void)
{
    Suite *s = suite_create("tanh");
    TCase *tc = tcase_create("levels");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_avx512_same_bits);
    tcase_add_test(tc, test_avx2_same_bits);
    suite_add_tcase(s, tc);
    tc = tcase_create("scalar");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_accuracy_and_symmetry);
    tcase_add_test(tc, test_special_values);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tanh_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
