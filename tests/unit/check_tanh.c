/* SPDX-License-Identifier: MIT */
/* check_tanh.c — the CPU backend's FP32 tanh (backends/cpu/tanh.c and tanh_lanes.h):
 * each vector level gives the scalar function's bits, lane by lane, over a sweep of
 * every magnitude and around every bound where the algorithm changes case; the scalar
 * function gives fdlibm's bits on a table of inputs across its cases, is within 3 ulps
 * of tanh computed in double, odd, and exact at its special values. The vector parts
 * run on the levels this CPU has and say which they skip. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/cpu/convert.h"
#include "../../backends/cpu/cpu_backend.h"
#include "../../backends/cpu/tanh_consts.h"

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
    /* and the values a stride misses: zeros, the smallest subnormal, the largest
     * finite value, infinities, quiet and signalling NaNs with payloads */
    static const uint32_t specials[] = {
        0x00000000u, 0x00000001u, 0x7f7fffffu, 0x7f800000u, 0x7fc00000u, 0x7fc12345u,
        0x7f812345u, 0x7fffffffu,
    };
    size_t nb = sizeof bounds / sizeof bounds[0], ns = sizeof specials / sizeof specials[0];
    size_t cap = (UINT32_MAX / 4099 + 1) + (nb + 64) * 2 * 129 + 2 * ns;
    float *x = malloc(cap * sizeof *x);
    ck_assert_ptr_nonnull(x);
    size_t n = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += 4099)
        x[n++] = cpu_bits_f32((uint32_t)u);
    for (size_t s = 0; s < ns; s++) {
        x[n++] = cpu_bits_f32(specials[s]);
        x[n++] = cpu_bits_f32(specials[s] | 0x80000000u);
    }
    for (size_t b = 0; b < nb + 64; b++) {
        /* (k − ½)·ln 2 / 2 is where 2|x| / ln 2 + ½ reaches k */
        uint32_t centre = b < nb ? bounds[b]
                                 : cpu_f32_bits((float)(((double)(b - nb) + 1.5) * M_LN2 / 2.0));
        for (int d = -64; d <= 64; d++)
            for (uint32_t negative = 0; negative < 2; negative++)
                x[n++] = cpu_bits_f32((centre + (uint32_t)d) | negative << 31);
    }
    ck_assert_uint_eq(n, cap);
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
    /* n − 1 elements, a partial last block on both levels (n − 1 ≡ 6 mod 8), and a
     * sentinel after them that the kernel must leave */
    ck_assert_uint_ne((n - 1) % 8, 0);
    y[n - 1] = 12345.0f;
    (level == CPU_ISA_AVX512 ? cpu_vec_unary_avx512 : cpu_vec_unary_avx2)(
        GAN_UNARY_TANH, 0.0f, &in, y, GAN_F32, 0, (int64_t)n - 1);
    ck_assert(y[n - 1] == 12345.0f);
    /* Asserted once at the end: each ck_assert is a write to Check's pipe. */
    size_t differ = 0, first = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (cpu_f32_bits(y[i]) != cpu_f32_bits(cpu_tanhf(x[i])) && !differ++)
            first = i;
    ck_assert_msg(!differ, "%s: %zu of %zu lanes differ from the scalar; the first, tanh(%a) "
                  "(0x%08x), is 0x%08x where the scalar gives 0x%08x", cpu_isa_name(level),
                  differ, n - 1, (double)x[first], cpu_f32_bits(x[first]), cpu_f32_bits(y[first]),
                  cpu_f32_bits(cpu_tanhf(x[first])));
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
        odd_fails += cpu_f32_bits(cpu_tanhf(-x[i])) != (cpu_f32_bits(t) ^ 0x80000000u);
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

/* fdlibm's bits (glibc 2.36's tanhf) for inputs in every case of the algorithm: both
 * sides of each bound on |x| and of expm1's steps of k, a spread over the exponents,
 * and inputs where a fused multiply-add anywhere would change the last bit. They tie
 * the scalar function to the algorithm, which the lane comparisons cannot. */
static const uint32_t fdlibm_bits[][2] = {
        { 0x3e092f8bu, 0x3e085eefu },
        { 0x3b8d5e62u, 0x3b8d5e28u },
        { 0xbc1f334cu, 0xbc1f3203u },
        { 0x3d5ddf72u, 0x3d5da7f4u },
        { 0xbe6ee50cu, 0xbe6aa725u },
        { 0x24000000u, 0x24000000u },
        { 0xa3ffffffu, 0xa3ffffffu },
        { 0x41b00000u, 0x3f800000u },
        { 0xc1afffffu, 0xbf800000u },
        { 0x3f800000u, 0x3f42f7d6u },
        { 0xbf7fffffu, 0xbf42f7d5u },
        { 0x32ffffffu, 0x32ffffffu },
        { 0xb3000000u, 0xb3000000u },
        { 0x3e317218u, 0x3e2fb0cdu },
        { 0xbe317217u, 0xbe2fb0ccu },
        { 0x3e851592u, 0x3e822a78u },
        { 0xbe851591u, 0xbe822a76u },
        { 0x00000001u, 0x00000001u },
        { 0x807fffffu, 0x807fffffu },
        { 0x7f7fffffu, 0x3f800000u },
        { 0xbf000000u, 0xbeec9a9fu },
        { 0x40000000u, 0x3f76ca83u },
        { 0xc1000000u, 0xbf7ffffcu },
        { 0x41100000u, 0x3f7fffffu },
        { 0xc1a00000u, 0xbf800000u },
        { 0x3e317217u, 0x3e2fb0ccu },
        { 0xbe317219u, 0xbe2fb0cdu },
        { 0x3f9b43d4u, 0x3f566b9au },
        { 0xbf9b43d6u, 0xbf566b9bu },
        { 0x40102cb2u, 0x3f7a67abu },
        { 0xc0102cb4u, 0xbf7a67acu },
        { 0x4052b77bu, 0x3f7f4b3bu },
        { 0xc052b77du, 0xbf7f4b3bu },
        { 0x408aa122u, 0x3f7fe960u },
        { 0xc08aa124u, 0xbf7fe960u },
        { 0x40abe686u, 0x3f7ffd2cu },
        { 0xc0abe688u, 0xbf7ffd2cu },
        { 0x40cd2bebu, 0x3f7fffa5u },
        { 0xc0cd2bedu, 0xbf7fffa5u },
        { 0x40ee714fu, 0x3f7ffff5u },
        { 0xc0ee7151u, 0xbf7ffff5u },
        { 0x4107db59u, 0x3f7fffffu },
        { 0xc107db5bu, 0xbf7fffffu },
        { 0x41187e0cu, 0x3f800000u },
        { 0xc1187e0eu, 0xbf800000u },
        { 0x412920beu, 0x3f800000u },
        { 0xc12920c0u, 0xbf800000u },
        { 0x4139c370u, 0x3f800000u },
        { 0xc139c372u, 0xbf800000u },
        { 0x414a6622u, 0x3f800000u },
        { 0xc14a6624u, 0xbf800000u },
        { 0x415b08d5u, 0x3f800000u },
        { 0xc15b08d7u, 0xbf800000u },
        { 0x416bab87u, 0x3f800000u },
        { 0xc16bab89u, 0xbf800000u },
        { 0x417c4e39u, 0x3f800000u },
        { 0xc17c4e3bu, 0xbf800000u },
        { 0x41867875u, 0x3f800000u },
        { 0xc1867877u, 0xbf800000u },
        { 0x418ec9ceu, 0x3f800000u },
        { 0xc18ec9d0u, 0xbf800000u },
        { 0x41971b27u, 0x3f800000u },
        { 0xc1971b29u, 0xbf800000u },
        { 0x419f6c81u, 0x3f800000u },
        { 0xc19f6c83u, 0xbf800000u },
        { 0x41a7bddau, 0x3f800000u },
        { 0xc1a7bddcu, 0xbf800000u },
        { 0x41b00f33u, 0x3f800000u },
        { 0xc1b00f35u, 0xbf800000u },
        { 0x30123457u, 0x30123457u },
        { 0xb0d23457u, 0xb0d23457u },
        { 0x31923457u, 0x31923457u },
        { 0xb2523457u, 0xb2523457u },
        { 0x33123457u, 0x33123458u },
        { 0xb3d23457u, 0xb3d23458u },
        { 0x34923457u, 0x34923457u },
        { 0xb5523457u, 0xb5523457u },
        { 0x36123457u, 0x36123457u },
        { 0xb6d23457u, 0xb6d23457u },
        { 0x37923457u, 0x37923457u },
        { 0xb8523457u, 0xb8523458u },
        { 0x39123457u, 0x39123457u },
        { 0xb9d23457u, 0xb9d23456u },
        { 0x3a923457u, 0x3a923453u },
        { 0xbb523457u, 0xbb523427u },
        { 0x3c123457u, 0x3c123358u },
        { 0xbcd23457u, 0xbcd22889u },
        { 0x3d923457u, 0x3d91f4e3u },
        { 0xbe523457u, 0xbe4f4d00u },
        { 0x3f123457u, 0x3f042409u },
        { 0xbfd23457u, 0xbf6d8329u },
        { 0x40923457u, 0x3f7ff1e8u },
        { 0xc1523457u, 0xbf800000u }
};

START_TEST(test_fdlibm_bits)
{
    size_t differ = 0, first = 0;
    size_t n = sizeof fdlibm_bits / sizeof fdlibm_bits[0];
    for (size_t i = 0; i < n; i++)
        if (cpu_f32_bits(cpu_tanhf(cpu_bits_f32(fdlibm_bits[i][0]))) != fdlibm_bits[i][1] && !differ++)
            first = i;
    ck_assert_msg(!differ, "%zu of %zu differ from fdlibm's tanhf; the first, tanh(0x%08x), "
                  "is 0x%08x where fdlibm gives 0x%08x", differ, n, fdlibm_bits[first][0],
                  cpu_f32_bits(cpu_tanhf(cpu_bits_f32(fdlibm_bits[first][0]))), fdlibm_bits[first][1]);
}
END_TEST

START_TEST(test_special_values)
{
    ck_assert(cpu_f32_bits(cpu_tanhf(0.0f)) == 0u);
    ck_assert(cpu_f32_bits(cpu_tanhf(-0.0f)) == 0x80000000u);
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
    tcase_add_test(tc, test_fdlibm_bits);
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
