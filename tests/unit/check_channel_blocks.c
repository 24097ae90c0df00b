/* SPDX-License-Identifier: MIT */
/* check_channel_blocks.c — the CPU backend's moves between the plain NCHW layout and
 * oneDNN's channel blocks (backends/cpu/channel_blocks.c, channel_blocks_lanes.h): on each
 * level this CPU has, for blocks of 8 and 16 channels, FP32 blocks of FP32, FP16 and BF16
 * plain tensors and BF16 blocks of BF16 ones, all of random bits (NaNs with payloads,
 * signalling ones included), and pixel counts that leave a partial tile or none, every
 * element lands where the layouts' own index formulas put it, copied bit for bit between
 * equal types, else widened exactly or rounded once as convert.h does, and nothing past
 * the tensor or outside the panels asked for is written. */
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
 * rest (about one FP16 in 128 a signalling NaN); or, `finite`, FP16 patterns with an
 * exponent below 31, since an FP16 tile holding a NaN takes the element-by-element way
 * and one of random bits nearly always holds one. */
static void fill(void *p, enum gan_dtype dt, size_t n, int finite)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b = next_bits();
        if (dt == GAN_F16 && finite && (b & 0x7c00u) == 0x7c00u)
            b &= ~0x4000u;
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

/* Element (i, c, p) moved from `from` (type ft) into `to` (type tt) as the move must:
 * bits copied between equal types, else convert.h's widening or rounding. */
static void reference_move(const void *from, enum gan_dtype ft, size_t i, void *to,
                           enum gan_dtype tt, size_t j)
{
    if (ft == tt)
        gan_store_bits(to, tt, (int64_t)j, gan_load_bits(from, ft, (int64_t)i));
    else
        cpu_store(to, tt, (int64_t)j, cpu_load(from, ft, (int64_t)i));
}

/* One level, block, pair of types and shape, both directions, each compared byte for
 * byte with reference_move. The panels are done in two calls (the first `split`, then
 * the rest), as two threads would do them. */
static void check_one(enum cpu_isa level, int64_t block, enum gan_dtype pt, enum gan_dtype bt,
                      struct shape s, int finite)
{
    const size_t n = (size_t)(s.images * s.channels * s.hw);
    const size_t ps = gan_dtype_size(pt), bs = gan_dtype_size(bt);
    const struct cpu_channel_blocks b = { s.images * s.channels / block, s.hw, block, bt };
    const int64_t split = b.panels / 2;
    const size_t first = (size_t)split * (size_t)(block * s.hw); /* elements in the first call */
    unsigned char *plain = malloc(n * ps + PAD), *want_plain = malloc(n * ps + PAD);
    unsigned char *blocked = malloc(n * bs + PAD), *want_blocked = malloc(n * bs + PAD);
    ck_assert(plain && want_plain && blocked && want_blocked);
    char what[160];
    snprintf(what, sizeof what, "%s, blocks of %d %s, %s plain%s, %lld×%lld×%lld",
             cpu_isa_name(level), (int)block, gan_dtype_name(bt), gan_dtype_name(pt),
             finite ? " (no NaN)" : "", (long long)s.images, (long long)s.channels,
             (long long)s.hw);

    /* plain → blocks */
    fill(plain, pt, n, finite);
    memset(blocked, SENTINEL, n * bs + PAD);
    cpu_to_channel_blocks(level, &b, plain, pt, blocked, 0, split);
    /* the panels not asked for are left as they were */
    ck_assert_msg(untouched(blocked + first * bs, (n - first) * bs), "%s: wrote past its panels",
                  what);
    cpu_to_channel_blocks(level, &b, plain, pt, blocked, split, b.panels - split);
    ck_assert_msg(untouched(blocked + n * bs, PAD), "%s: wrote past the blocks", what);
    for (int64_t i = 0; i < s.images; i++)
        for (int64_t c = 0; c < s.channels; c++)
            for (int64_t p = 0; p < s.hw; p++)
                reference_move(plain, pt, plain_index(s.channels, s.hw, i, c, p), want_blocked,
                               bt, blocked_index(s.channels, s.hw, block, i, c, p));
    ck_assert_msg(memcmp(blocked, want_blocked, n * bs) == 0, "%s: the blocks differ", what);

    /* blocks → plain */
    fill(blocked, bt, n, finite);
    memset(plain, SENTINEL, n * ps + PAD);
    cpu_from_channel_blocks(level, &b, blocked, plain, pt, 0, split);
    ck_assert_msg(untouched(plain + first * ps, (n - first) * ps), "%s: wrote past its panels",
                  what);
    cpu_from_channel_blocks(level, &b, blocked, plain, pt, split, b.panels - split);
    ck_assert_msg(untouched(plain + n * ps, PAD), "%s: wrote past the plain tensor", what);
    for (int64_t i = 0; i < s.images; i++)
        for (int64_t c = 0; c < s.channels; c++)
            for (int64_t p = 0; p < s.hw; p++)
                reference_move(blocked, bt, blocked_index(s.channels, s.hw, block, i, c, p),
                               want_plain, pt, plain_index(s.channels, s.hw, i, c, p));
    ck_assert_msg(memcmp(plain, want_plain, n * ps) == 0, "%s: the plain tensor differs", what);
    free(plain);
    free(want_plain);
    free(blocked);
    free(want_blocked);
}

/* Pixel counts: one, a partial tile on both levels, exactly one or two 16-pixel tiles,
 * and the DCGAN's 7×7 and 14×14 maps. */
static void check_level(enum cpu_isa level)
{
    static const struct shape shapes[] = {
        { 2, 16, 1 }, { 1, 32, 5 }, { 3, 16, 16 }, { 1, 48, 32 }, { 2, 32, 49 }, { 1, 16, 196 },
    };
    /* plain, blocks */
    static const enum gan_dtype types[][2] = {
        { GAN_F32, GAN_F32 }, { GAN_F16, GAN_F32 }, { GAN_BF16, GAN_F32 }, { GAN_BF16, GAN_BF16 },
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (size_t t = 0; t < 4; t++)
            for (int finite = 0; finite < 2; finite++) {
                check_one(level, 16, types[t][0], types[t][1], shapes[k], finite);
                check_one(level, 8, types[t][0], types[t][1], shapes[k], finite);
            }
    /* 8 channels: blocks of 8 only */
    for (size_t t = 0; t < 4; t++)
        for (int finite = 0; finite < 2; finite++)
            check_one(level, 8, types[t][0], types[t][1], (struct shape){ 3, 8, 23 }, finite);
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

/* A signalling NaN keeps its bits where a lane conversion would quiet it: an FP16 one
 * widened to FP32 blocks, a BF16 one moved to BF16 blocks and back; one in a tile of
 * ordinary numbers, at every seventh element of a 16 × 20 panel (a full tile and a partial
 * one, at the 8-lane level two tiles across). */
START_TEST(test_signalling_nan)
{
    static const enum cpu_isa levels[] = { CPU_ISA_PORTABLE, CPU_ISA_F16C, CPU_ISA_AVX512 };
    const int64_t channels = 16, hw = 20;
    const struct cpu_channel_blocks to_f32 = { 1, hw, 16, GAN_F32 }, to_bf16 = { 1, hw, 16, GAN_BF16 };
    uint16_t plain[16 * 20], blocked16[16 * 20], back[16 * 20];
    float blocked[16 * 20], want[16 * 20];
    for (size_t l = 0; l < 3; l++) {
        if (cpu_isa_best() < levels[l])
            continue;
        const char *name = cpu_isa_name(levels[l]);
        for (int64_t at = 0; at < channels * hw; at += 7) {
            const size_t bi = blocked_index(channels, hw, 16, 0, at / hw, at % hw);
            for (int64_t k = 0; k < channels * hw; k++)
                plain[k] = cpu_f32_to_f16((float)k * 0.25f);
            plain[at] = 0x7d23; /* FP16, signalling, payload 0x123 */
            cpu_to_channel_blocks(levels[l], &to_f32, plain, GAN_F16, blocked, 0, 1);
            ck_assert_msg(cpu_f32_bits(blocked[bi]) == 0x7fa46000u,
                          "%s: the FP16 signalling NaN at %lld became 0x%08x", name,
                          (long long)at, cpu_f32_bits(blocked[bi]));
            /* and the rest of its tile and panel moved as ever */
            for (int64_t k = 0; k < channels * hw; k++)
                reference_move(plain, GAN_F16, (size_t)k, want, GAN_F32,
                               blocked_index(channels, hw, 16, 0, k / hw, k % hw));
            ck_assert_msg(memcmp(blocked, want, sizeof blocked) == 0,
                          "%s: an FP16 panel with a signalling NaN at %lld moved wrongly", name,
                          (long long)at);
            for (int64_t k = 0; k < channels * hw; k++)
                plain[k] = cpu_f32_to_bf16((float)k * 0.25f);
            plain[at] = 0x7f81; /* BF16, signalling, payload 1 */
            cpu_to_channel_blocks(levels[l], &to_bf16, plain, GAN_BF16, blocked16, 0, 1);
            ck_assert_msg(blocked16[bi] == 0x7f81, "%s: the BF16 signalling NaN at %lld became "
                          "0x%04x in the blocks", name, (long long)at, blocked16[bi]);
            for (int64_t k = 0; k < channels * hw; k++)
                ck_assert(blocked16[blocked_index(channels, hw, 16, 0, k / hw, k % hw)] ==
                          plain[k]);
            cpu_from_channel_blocks(levels[l], &to_bf16, blocked16, back, GAN_BF16, 0, 1);
            ck_assert_msg(memcmp(back, plain, sizeof plain) == 0,
                          "%s: the BF16 tensor with a signalling NaN at %lld came back changed",
                          name, (long long)at);
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
    tcase_add_test(tc, test_signalling_nan);
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
