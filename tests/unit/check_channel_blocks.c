/* SPDX-License-Identifier: MIT */
/* check_channel_blocks.c — the CPU backend's moves between the plain NCHW layout and
 * oneDNN's channel blocks (backends/cpu/channel_blocks.c, channel_blocks_lanes.h): on each
 * level this CPU has, for blocks of 8 and 16 channels, FP32, FP16 and BF16 plain tensors of
 * random bits (NaNs with payloads, signalling ones included), and pixel counts that leave a
 * partial tile or none, every element lands where the layouts' own index formulas put it,
 * widened exactly or rounded once as convert.h does, and nothing past the tensor or outside
 * the panels asked for is written. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/cpu/convert.h"
#include "../../backends/cpu/cpu_backend.h"

/* A small xorshift generator: the same bits on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint32_t next_bits(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Random bits of type dt: any pattern, so NaNs, infinities and subnormals come with the
 * rest (about one FP16 in 128 a signalling NaN). */
static void fill(void *p, enum gan_dtype dt, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b = next_bits();
        if (dt == GAN_F32)
            ((uint32_t *)p)[i] = b;
        else
            ((uint16_t *)p)[i] = (uint16_t)b;
    }
}

/* Element (image i, channel c, pixel p) of each layout, by its own definition. */
static size_t plain_index(int64_t channels, int64_t hw, int64_t i, int64_t c, int64_t p)
{
    return (size_t)((i * channels + c) * hw + p);
}

static size_t blocked_index(int64_t channels, int64_t hw, int64_t block, int64_t i, int64_t c,
                            int64_t p)
{
    return (size_t)(((i * (channels / block) + c / block) * hw + p) * block + c % block);
}

#define SENTINEL 0xa5u
enum { PAD = 64 }; /* bytes after each tensor that must keep SENTINEL */

static int level_present(enum cpu_isa level)
{
    if (cpu_isa_best() >= level)
        return 1;
    printf("check_channel_blocks: this CPU has no %s: that level is skipped\n",
           level == CPU_ISA_AVX512 ? "AVX-512" : "AVX2 with F16C");
    return 0;
}

static int untouched(const unsigned char *p, size_t bytes)
{
    for (size_t k = 0; k < bytes; k++)
        if (p[k] != SENTINEL)
            return 0;
    return 1;
}

struct shape {
    int64_t images, channels, hw;
};

/* One level, block, type and shape, both directions. The panels are done in two calls
 * (the first `split`, then the rest), as two threads would do them. */
static void check_one(enum cpu_isa level, int64_t block, enum gan_dtype pt, struct shape s)
{
    const size_t n = (size_t)(s.images * s.channels * s.hw), es = gan_dtype_size(pt);
    const struct cpu_channel_blocks b = { s.images * s.channels / block, s.hw, block };
    const int64_t split = b.panels / 2;
    unsigned char *plain = malloc(n * es + PAD), *back = malloc(n * es + PAD);
    float *blocked = malloc(n * sizeof(float) + PAD);
    ck_assert(plain && back && blocked);

    /* plain → blocks: each element is the plain one, widened by convert.h's rule */
    fill(plain, pt, n);
    memset(blocked, SENTINEL, n * sizeof(float) + PAD);
    cpu_to_channel_blocks(level, &b, plain, pt, blocked, 0, split);
    /* the panels not asked for are left as they were */
    ck_assert(untouched((unsigned char *)blocked + (size_t)split * block * s.hw * sizeof(float),
                        (n - (size_t)split * block * s.hw) * sizeof(float)));
    cpu_to_channel_blocks(level, &b, plain, pt, blocked, split, b.panels - split);
    ck_assert_msg(untouched((unsigned char *)(blocked + n), PAD), "written past the blocks");
    size_t differ = 0;
    for (int64_t i = 0; i < s.images; i++)
        for (int64_t c = 0; c < s.channels; c++)
            for (int64_t p = 0; p < s.hw; p++) {
                float want = cpu_load(plain, pt, (int64_t)plain_index(s.channels, s.hw, i, c, p));
                float got = blocked[blocked_index(s.channels, s.hw, block, i, c, p)];
                differ += cpu_f32_bits(got) != cpu_f32_bits(want);
            }
    ck_assert_msg(!differ, "%s, blocks of %d, %s plain, %lld×%lld×%lld: %zu of %zu elements "
                  "differ going to the blocks", cpu_isa_name(level), (int)block,
                  gan_dtype_name(pt), (long long)s.images, (long long)s.channels,
                  (long long)s.hw, differ, n);

    /* blocks → plain: random FP32 bits, each rounded once by convert.h's rule */
    fill(blocked, GAN_F32, n);
    memset(back, SENTINEL, n * es + PAD);
    cpu_from_channel_blocks(level, &b, blocked, back, pt, 0, split);
    ck_assert(untouched(back + (size_t)split * block * s.hw * es,
                        (n - (size_t)split * block * s.hw) * es));
    cpu_from_channel_blocks(level, &b, blocked, back, pt, split, b.panels - split);
    ck_assert_msg(untouched(back + n * es, PAD), "written past the plain tensor");
    for (int64_t i = 0; i < s.images; i++)
        for (int64_t c = 0; c < s.channels; c++)
            for (int64_t p = 0; p < s.hw; p++)
                cpu_store(plain, pt, (int64_t)plain_index(s.channels, s.hw, i, c, p),
                          blocked[blocked_index(s.channels, s.hw, block, i, c, p)]);
    ck_assert_msg(memcmp(plain, back, n * es) == 0,
                  "%s, blocks of %d, %s plain, %lld×%lld×%lld: the plain tensor differs from "
                  "convert.h's rounding", cpu_isa_name(level), (int)block, gan_dtype_name(pt),
                  (long long)s.images, (long long)s.channels, (long long)s.hw);
    free(plain);
    free(back);
    free(blocked);
}

/* Pixel counts: one, a partial tile on both levels, exactly one or two 16-pixel tiles,
 * and the DCGAN's 7×7 and 14×14 maps. */
static void check_level(enum cpu_isa level)
{
    static const struct shape shapes[] = {
        { 2, 16, 1 }, { 1, 32, 5 }, { 3, 16, 16 }, { 1, 48, 32 }, { 2, 32, 49 }, { 1, 16, 196 },
    };
    static const enum gan_dtype types[] = { GAN_F32, GAN_F16, GAN_BF16 };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (size_t t = 0; t < 3; t++) {
            check_one(level, 16, types[t], shapes[k]);
            check_one(level, 8, types[t], shapes[k]);
        }
    /* 8 channels: blocks of 8 only */
    for (size_t t = 0; t < 3; t++)
        check_one(level, 8, types[t], (struct shape){ 3, 8, 23 });
}

START_TEST(test_portable)
{
    check_level(CPU_ISA_PORTABLE);
}
END_TEST

START_TEST(test_avx2)
{
    if (level_present(CPU_ISA_F16C))
        check_level(CPU_ISA_F16C);
}
END_TEST

START_TEST(test_avx512)
{
    if (level_present(CPU_ISA_AVX512))
        check_level(CPU_ISA_AVX512);
}
END_TEST

/* An FP16 tile holding a signalling NaN keeps its bits in FP32 (the lanes' conversion
 * would set the quiet bit): one in a tile of ordinary numbers, at each pixel of a tile. */
START_TEST(test_f16_signalling_nan)
{
    static const enum cpu_isa levels[] = { CPU_ISA_PORTABLE, CPU_ISA_F16C, CPU_ISA_AVX512 };
    const int64_t channels = 16, hw = 20;
    const struct cpu_channel_blocks b = { 1, hw, 16 };
    uint16_t plain[16 * 20];
    float blocked[16 * 20];
    for (size_t l = 0; l < 3; l++) {
        if (cpu_isa_best() < levels[l])
            continue;
        for (int64_t at = 0; at < channels * hw; at += 7) {
            for (int64_t k = 0; k < channels * hw; k++)
                plain[k] = cpu_f32_to_f16((float)k * 0.25f);
            plain[at] = 0x7d23; /* a signalling NaN, payload 0x123 */
            cpu_to_channel_blocks(levels[l], &b, plain, GAN_F16, blocked, 0, 1);
            float got = blocked[blocked_index(channels, hw, 16, 0, at / hw, at % hw)];
            ck_assert_msg(cpu_f32_bits(got) == 0x7fa46000u,
                          "%s: the signalling NaN at %lld became 0x%08x",
                          cpu_isa_name(levels[l]), (long long)at, cpu_f32_bits(got));
        }
    }
}
END_TEST

static Suite *channel_blocks_suite(void)
{
    Suite *s = suite_create("channel_blocks");
    TCase *tc = tcase_create("levels");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_portable);
    tcase_add_test(tc, test_avx2);
    tcase_add_test(tc, test_avx512);
    tcase_add_test(tc, test_f16_signalling_nan);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(channel_blocks_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
