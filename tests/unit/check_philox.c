/* SPDX-License-Identifier: MIT */
/* check_philox.c — tests of Philox4x32-10 (philox.h) and the CPU backend's random
 * kernels (rng.c): known answers, the stream layout, statistics and rounding. */
#include "config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../../backends/cpu/convert.h"
#include <ganctl/philox.h>

static gan_backend *be;

static void setup(void)
{
    be = cpu_fixture_new(NULL);
}

static void teardown(void)
{
    cpu_fixture_free(be);
    be = NULL;
}

static const char *last_error(void)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

/* A buffer for n elements of `dtype`, contents undefined. */
static gan_buffer *buffer_for(size_t n, enum gan_dtype dtype)
{
    return cpu_fixture_buffer(be, (n * gan_dtype_size(dtype) + 3) / 4, NULL);
}

/* ------------------------------------------------------------------ known answers */

/* The philox4x32 lines of tests/kat_vectors in Random123 (D. E. Shaw Research,
 * github.com/DEShawResearch/random123), the known answers its authors publish for
 * the SC'11 paper's generators: rounds, counter[4], key[2], expected output[4]. The
 * 7-round lines check the key schedule between rounds as well as the round itself. */
static const struct kat {
    unsigned rounds;
    uint32_t ctr[4], key[2], out[4];
} kats[] = {
    { 7, { 0x00000000, 0x00000000, 0x00000000, 0x00000000 }, { 0x00000000, 0x00000000 },
      { 0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48 } },
    { 7, { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
      { 0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662 } },
    { 7, { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
      { 0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a } },
    { 10, { 0x00000000, 0x00000000, 0x00000000, 0x00000000 }, { 0x00000000, 0x00000000 },
      { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
    { 10, { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
      { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
    { 10, { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
      { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
};

START_TEST(test_kat)
{
    const struct kat *k = &kats[_i];
    uint32_t out[4];
    gan_philox4x32_r(k->rounds, k->ctr, k->key, out);
    for (int j = 0; j < 4; j++)
        ck_assert_msg(out[j] == k->out[j], "philox4x32-%u vector %d word %d: got %08x, want %08x",
                      k->rounds, _i, j, out[j], k->out[j]);
    if (k->rounds == 10) {
        uint32_t again[4];
        gan_philox4x32_10(k->ctr, k->key, again);
        ck_assert_mem_eq(again, k->out, sizeof again);
    }
}
END_TEST

/* The all-zero vector through the kernel: seed 0, offset 0 is key {0, 0}, counter 0. */
START_TEST(test_kat_through_kernel)
{
    gan_buffer *buf = buffer_for(4, GAN_U32);
    struct gan_ref y = cpu_fixture_ref(buf, GAN_U32);
    ck_assert_int_eq(cpu_rng_bits(be, 4, 0, 0, &y), GAN_OK);
    ck_assert_mem_eq(buf->data, kats[3].out, 16);

    /* Seed and block split into their 32-bit halves as backend.h says: the key is
     * (seed low, seed high), the counter (block low, block high, 0, 0). */
    const uint64_t seed = 0x299f31d0a4093822ull, block = 0x85a308d3243f6a88ull;
    const uint32_t ctr[4] = { 0x243f6a88, 0x85a308d3, 0, 0 }, key[2] = { 0xa4093822, 0x299f31d0 };
    uint32_t want[4];
    gan_philox4x32_10(ctr, key, want);
    ck_assert_int_eq(cpu_rng_bits(be, 4, seed, block, &y), GAN_OK);
    ck_assert_mem_eq(buf->data, want, 16);
    cpu_buffer_free(be, buf);
}
END_TEST

/* ------------------------------------------------------------------ stream layout */

/* Lengths that end inside a block (n % 4 != 0) as well as on one. */
static const size_t lengths[] = { 1, 2, 3, 4, 5, 7, 8, 13, 1001 };

/* Element i of a call from `offset` is word i % 4 of block offset + i / 4. */
START_TEST(test_bits_layout)
{
    const size_t n = lengths[_i];
    const uint64_t seed = 0x0123456789abcdefull, offset = 77;
    gan_buffer *buf = buffer_for(n + 8, GAN_U32);
    uint32_t *v = (uint32_t *)buf->data;
    for (size_t i = 0; i < n + 8; i++)
        v[i] = 0xdeadbeefu;
    /* Written at element 3 of the buffer, to see the ref's offset honoured. */
    struct gan_ref y = { .buf = buf, .offset = 3, .dtype = GAN_U32 };
    ck_assert_int_eq(cpu_rng_bits(be, n, seed, offset, &y), GAN_OK);
    for (size_t i = 0; i < n; i++) {
        uint32_t ctr[4] = { (uint32_t)(offset + i / 4), 0, 0, 0 };
        uint32_t key[2] = { 0x89abcdefu, 0x01234567u }, w[4];
        gan_philox4x32_10(ctr, key, w);
        ck_assert_msg(v[3 + i] == w[i % 4], "n %zu element %zu: got %08x, want %08x", n, i,
                      v[3 + i], w[i % 4]);
    }
    for (size_t i = 0; i < 3; i++)
        ck_assert_uint_eq(v[i], 0xdeadbeefu);
    for (size_t i = 3 + n; i < n + 8; i++)
        ck_assert_uint_eq(v[i], 0xdeadbeefu);
    cpu_buffer_free(be, buf);
}
END_TEST

/* A call at offset k (blocks) equals elements 4k… of a longer call from offset 0, for
 * every kernel; also across the carry from the counter's low word to its high word. */
START_TEST(test_offset_is_tail)
{
    static const uint64_t offsets[] = { 1, 5, 250, 0xfffffffcull };
    const size_t total = 1203;
    const uint64_t seed = 42;
    for (size_t t = 0; t < sizeof offsets / sizeof offsets[0]; t++) {
        const uint64_t base = offsets[t] == 0xfffffffcull ? 0xfffffff0ull : 0;
        const uint64_t k = offsets[t] - base; /* the tail starts at element 4k */
        gan_buffer *whole = buffer_for(total, GAN_F32), *tail = buffer_for(total, GAN_F32);
        for (int kind = 0; kind < 3; kind++) {
            enum gan_dtype dt = kind == 0 ? GAN_U32 : GAN_F32;
            struct gan_ref yw = cpu_fixture_ref(whole, dt), yt = cpu_fixture_ref(tail, dt);
            size_t m = total - 4 * (size_t)k;
            gan_status a, b;
            if (kind == 0) {
                a = cpu_rng_bits(be, total, seed, base, &yw);
                b = cpu_rng_bits(be, m, seed, base + k, &yt);
            } else if (kind == 1) {
                a = cpu_rng_uniform(be, total, seed, base, -2.0f, 3.0f, &yw);
                b = cpu_rng_uniform(be, m, seed, base + k, -2.0f, 3.0f, &yt);
            } else {
                a = cpu_rng_normal(be, total, seed, base, 1.0f, 2.0f, &yw);
                b = cpu_rng_normal(be, m, seed, base + k, 1.0f, 2.0f, &yt);
            }
            ck_assert_int_eq(a, GAN_OK);
            ck_assert_int_eq(b, GAN_OK);
            ck_assert_msg(memcmp(whole->data + 16 * k, tail->data, 4 * m) == 0,
                          "kind %d: the call at offset %llu is not the tail of the call at "
                          "offset %llu", kind, (unsigned long long)(base + k),
                          (unsigned long long)base);
        }
        cpu_buffer_free(be, whole);
        cpu_buffer_free(be, tail);
    }
}
END_TEST

/* The same seed and offset give the same numbers; any change of seed (either half)
 * or offset gives unrelated ones. */
START_TEST(test_reproducible_and_distinct)
{
    const size_t n = 4096;
    gan_buffer *a = buffer_for(n, GAN_U32), *b = buffer_for(n, GAN_U32);
    struct gan_ref ya = cpu_fixture_ref(a, GAN_U32), yb = cpu_fixture_ref(b, GAN_U32);
    ck_assert_int_eq(cpu_rng_bits(be, n, 1234, 9, &ya), GAN_OK);
    ck_assert_int_eq(cpu_rng_bits(be, n, 1234, 9, &yb), GAN_OK);
    ck_assert_mem_eq(a->data, b->data, 4 * n);

    static const struct { uint64_t seed, offset; } other[] = {
        { 1235, 9 }, { 1234 | (1ull << 32), 9 }, { 1234, 10 }, { 1234, 9 | (1ull << 32) },
    };
    for (size_t t = 0; t < sizeof other / sizeof other[0]; t++) {
        ck_assert_int_eq(cpu_rng_bits(be, n, other[t].seed, other[t].offset, &yb), GAN_OK);
        /* Independent 32-bit words agree by chance with probability 2^-32 each. */
        size_t same = 0;
        for (size_t i = 0; i < n; i++)
            same += ((uint32_t *)a->data)[i] == ((uint32_t *)b->data)[i];
        ck_assert_msg(same == 0, "case %zu: %zu of %zu words equal the reference stream", t,
                      same, n);
    }
    cpu_buffer_free(be, a);
    cpu_buffer_free(be, b);
}
END_TEST

/* ------------------------------------------------------------------ uniform */

/* The value the ABI defines for one word, exactly (double holds it). */
static double ref_uniform(uint32_t w)
{
    return ((double)(w >> 8) + 0.5) / 16777216.0;
}

/* 10^6 draws lie strictly in (0, 1); mean and variance within 5 standard errors
 * (mean: sqrt(1/12/N) = 2.9e-4; variance: sqrt((1/80 − 1/144)/N) = 7.5e-5, for
 * N = 10^6); 100 equal buckets pass a chi-square test at 170 for 99 degrees of
 * freedom (p ≈ 1e-5 for a true uniform). */
START_TEST(test_uniform_statistics)
{
    const size_t n = 1000000;
    const uint64_t seeds[] = { 7, 0x9e3779b97f4a7c15ull };
    gan_buffer *buf = buffer_for(n, GAN_F32);
    struct gan_ref y = cpu_fixture_ref(buf, GAN_F32);
    const float *v = (const float *)buf->data;
    for (size_t s = 0; s < 2; s++) {
        ck_assert_int_eq(cpu_rng_uniform(be, n, seeds[s], 0, 0.0f, 1.0f, &y), GAN_OK);
        double sum = 0, sq = 0;
        size_t bucket[100] = { 0 };
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(v[i] > 0.0f && v[i] < 1.0f, "element %zu is %.9g", i, (double)v[i]);
            sum += v[i];
            bucket[(int)(v[i] * 100.0f) < 100 ? (int)(v[i] * 100.0f) : 99]++;
        }
        double mean = sum / (double)n;
        for (size_t i = 0; i < n; i++)
            sq += (v[i] - mean) * (v[i] - mean);
        double var = sq / (double)(n - 1);
        ck_assert_msg(fabs(mean - 0.5) < 5 * sqrt(1.0 / 12.0 / n), "mean %.6f", mean);
        ck_assert_msg(fabs(var - 1.0 / 12.0) < 5 * sqrt((1.0 / 80 - 1.0 / 144) / n),
                      "variance %.6f, want %.6f", var, 1.0 / 12.0);
        double chi2 = 0, expect = n / 100.0;
        for (int b = 0; b < 100; b++)
            chi2 += (bucket[b] - expect) * (bucket[b] - expect) / expect;
        ck_assert_msg(chi2 < 170.0, "chi-square %.1f over 100 buckets", chi2);
    }
    cpu_buffer_free(be, buf);
}
END_TEST

/* Each value is low + (high − low)·u of its word, rounded once to FP32; checked
 * against the bits kernel for several intervals. */
static const float intervals[][2] = { { 0.0f, 1.0f }, { -3.0f, 5.0f }, { 1e-3f, 2e-3f },
                                      { -1.0f, -0.5f }, { 100.0f, 100.0f } };

START_TEST(test_uniform_mapping)
{
    const size_t n = 100003;
    const float low = intervals[_i][0], high = intervals[_i][1];
    gan_buffer *bits = buffer_for(n, GAN_U32), *buf = buffer_for(n, GAN_F32);
    struct gan_ref yb = cpu_fixture_ref(bits, GAN_U32), y = cpu_fixture_ref(buf, GAN_F32);
    ck_assert_int_eq(cpu_rng_bits(be, n, 99, 1000, &yb), GAN_OK);
    ck_assert_int_eq(cpu_rng_uniform(be, n, 99, 1000, low, high, &y), GAN_OK);
    const uint32_t *w = (const uint32_t *)bits->data;
    const float *v = (const float *)buf->data;
    for (size_t i = 0; i < n; i++) {
        float want = (float)((double)low + ((double)high - (double)low) * ref_uniform(w[i]));
        if (low < high && want >= high)
            want = nextafterf(high, low);
        ck_assert_msg(v[i] == want, "[%g, %g) element %zu: got %.9g, want %.9g",
                      (double)low, (double)high, i, (double)v[i], (double)want);
        if (low < high)
            ck_assert(v[i] > low && v[i] < high);
        else
            ck_assert(v[i] == low);
    }
    cpu_buffer_free(be, bits);
    cpu_buffer_free(be, buf);
}
END_TEST

/* The word whose top 24 bits are all ones gives 1 − 2^-25, which FP32 rounds to 1:
 * find one in the stream and see it come out as the largest float below 1. */
START_TEST(test_uniform_top_word)
{
    const uint64_t seed = 5;
    uint64_t block = 0;
    int word = -1;
    for (; block < (1ull << 28) && word < 0; block++) {
        uint32_t w[4];
        gan_philox_block(seed, block, w);
        for (int k = 0; k < 4; k++)
            if ((w[k] >> 8) == 0xffffffu) {
                word = k;
                break;
            }
    }
    ck_assert_msg(word >= 0, "no word with its top 24 bits set in 2^28 blocks");
    block--;
    gan_buffer *buf = buffer_for(4, GAN_F32);
    struct gan_ref y = cpu_fixture_ref(buf, GAN_F32);
    ck_assert_int_eq(cpu_rng_uniform(be, 4, seed, block, 0.0f, 1.0f, &y), GAN_OK);
    float v = ((const float *)buf->data)[word];
    ck_assert_msg(v == 1.0f - 0x1p-24f, "got %.9g, want 1 - 2^-24", (double)v);
    cpu_buffer_free(be, buf);
}
END_TEST

/* ------------------------------------------------------------------ normal */

/* The ABI's Box–Muller, written out for one element from the block's four words. */
static double ref_normal(const uint32_t block[4], int k)
{
    int pair = k / 2;
    double u1 = ref_uniform(block[2 * pair]), u2 = ref_uniform(block[2 * pair + 1]);
    double r = sqrt(-2.0 * log(u1)), angle = 2.0 * M_PI * u2;
    return (k % 2 == 0) ? r * cos(angle) : r * sin(angle);
}

/* 10^6 standard normals: mean within 5 standard errors (5/sqrt(N) = 0.005), variance
 * within 5·sqrt(2/N) = 0.0071, the fraction within one sigma (0.682689) within
 * 5·sqrt(p(1 − p)/N) = 0.0023, and nothing non-finite or beyond 6.5 sigma (the
 * largest r possible from a 24-bit u1 is sqrt(2·ln 2^25) = 5.9). */
START_TEST(test_normal_statistics)
{
    const size_t n = 1000000;
    gan_buffer *buf = buffer_for(n, GAN_F32);
    struct gan_ref y = cpu_fixture_ref(buf, GAN_F32);
    ck_assert_int_eq(cpu_rng_normal(be, n, 2024, 3, 0.0f, 1.0f, &y), GAN_OK);
    const float *v = (const float *)buf->data;
    double sum = 0, sq = 0;
    size_t within = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isfinite(v[i]) && fabsf(v[i]) < 6.5f, "element %zu is %g", i,
                      (double)v[i]);
        sum += v[i];
        within += fabsf(v[i]) < 1.0f;
    }
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (v[i] - mean) * (v[i] - mean);
    double var = sq / (double)(n - 1), frac = within / (double)n;
    const double p1 = 0.6826894921370859;
    ck_assert_msg(fabs(mean) < 5.0 / sqrt((double)n), "mean %.6f", mean);
    ck_assert_msg(fabs(var - 1.0) < 5.0 * sqrt(2.0 / n), "variance %.6f", var);
    ck_assert_msg(fabs(frac - p1) < 5.0 * sqrt(p1 * (1 - p1) / n), "within 1 sigma: %.6f", frac);
    cpu_buffer_free(be, buf);
}
END_TEST

/* Each value is mean + std·z of its block's Box–Muller pair, z from the test's own
 * formula. The tolerance (2 FP32 ulps) leaves room for libm differences only. */
static const float mean_std[][2] = { { 0.0f, 1.0f }, { 2.0f, 0.5f }, { -1e3f, 30.0f },
                                     { 0.25f, 0.0f } };

START_TEST(test_normal_mapping)
{
    const size_t n = 40001, n4 = (n + 3) / 4 * 4; /* the bits of every block touched */
    const float mean = mean_std[_i][0], std = mean_std[_i][1];
    gan_buffer *bits = buffer_for(n4, GAN_U32), *buf = buffer_for(n, GAN_F32);
    struct gan_ref yb = cpu_fixture_ref(bits, GAN_U32), y = cpu_fixture_ref(buf, GAN_F32);
    ck_assert_int_eq(cpu_rng_bits(be, n4, 31337, 12, &yb), GAN_OK);
    ck_assert_int_eq(cpu_rng_normal(be, n, 31337, 12, mean, std, &y), GAN_OK);
    const uint32_t *w = (const uint32_t *)bits->data;
    const float *v = (const float *)buf->data;
    for (size_t i = 0; i < n; i++) {
        const uint32_t *block = w + i / 4 * 4;
        double want = (double)mean + (double)std * ref_normal(block, (int)(i % 4));
        ck_assert_msg(fabs(v[i] - want) <= 2.0 * FLT_EPSILON * fabs(want) + 1e-30,
                      "mean %g std %g element %zu: got %.9g, want %.9g", (double)mean,
                      (double)std, i, (double)v[i], want);
    }
    cpu_buffer_free(be, bits);
    cpu_buffer_free(be, buf);
}
END_TEST

/* ------------------------------------------------------------------ 16-bit outputs */

/* d rounded to nearest (ties to even) in a 16-bit format, found without the backend's
 * method: among the neighbours of a first guess, the nearest in exact arithmetic. */
static uint16_t ref_round16(double d, enum gan_dtype dt)
{
    uint16_t guess = dt == GAN_F16 ? cpu_f32_to_f16((float)d) : cpu_f32_to_bf16((float)d);
    uint16_t best = guess;
    double best_err = INFINITY;
    for (int delta = -2; delta <= 2; delta++) {
        uint16_t h = (uint16_t)(guess + delta);
        if (((guess ^ h) & 0x8000u) || (h & 0x7fffu) > (dt == GAN_F16 ? 0x7c00u : 0x7f80u))
            continue; /* stay on one sign, and off NaNs */
        double v = dt == GAN_F16 ? cpu_f16_to_f32(h) : cpu_bf16_to_f32(h);
        double err = fabs(v - d);
        if (isinf(v))
            err = fabs(d) >= (dt == GAN_F16 ? 65520.0 : 0x1.ff8p127) ? 0.0 : INFINITY;
        if (err < best_err || (err == best_err && !(h & 1u))) {
            best = h;
            best_err = err;
        }
    }
    return best;
}

static float value16(uint16_t h, enum gan_dtype dt)
{
    return dt == GAN_F16 ? cpu_f16_to_f32(h) : cpu_bf16_to_f32(h);
}

/* True when f (an FP32 value) lies exactly halfway between two neighbours of dt. */
static int is_tie16(float f, enum gan_dtype dt)
{
    uint16_t r = ref_round16(f, dt);
    uint16_t other = (double)value16(r, dt) < f ? (uint16_t)(r + ((r & 0x8000u) ? -1 : 1))
                                                : (uint16_t)(r + ((r & 0x8000u) ? 1 : -1));
    return fabs((double)value16(r, dt) - f) == fabs((double)value16(other, dt) - f);
}

/* F16 and BF16 outputs are the exact value rounded once to the output type (uniform:
 * stepped back inside (low, high) when that lands on an end). They equal the FP32
 * output converted to the 16-bit type except where the FP32 value sits exactly on a
 * 16-bit tie (rounding twice would break it the wrong way); those are counted. */
START_TEST(test_16bit_rounded_once)
{
    const enum gan_dtype dt = _i % 2 ? GAN_BF16 : GAN_F16;
    const int normal = _i >= 2;
    const size_t n = 200001, n4 = (n + 3) / 4 * 4;
    const float a = normal ? 0.5f : 0.0f, b = normal ? 3.0f : 1.0f;
    gan_buffer *bits = buffer_for(n4, GAN_U32), *b32 = buffer_for(n, GAN_F32),
               *b16 = buffer_for(n, dt);
    struct gan_ref yb = cpu_fixture_ref(bits, GAN_U32), y32 = cpu_fixture_ref(b32, GAN_F32),
                   y16 = cpu_fixture_ref(b16, dt);
    const uint64_t seed = 77, offset = 5;
    ck_assert_int_eq(cpu_rng_bits(be, n4, seed, offset, &yb), GAN_OK);
    if (normal) {
        ck_assert_int_eq(cpu_rng_normal(be, n, seed, offset, a, b, &y32), GAN_OK);
        ck_assert_int_eq(cpu_rng_normal(be, n, seed, offset, a, b, &y16), GAN_OK);
    } else {
        ck_assert_int_eq(cpu_rng_uniform(be, n, seed, offset, a, b, &y32), GAN_OK);
        ck_assert_int_eq(cpu_rng_uniform(be, n, seed, offset, a, b, &y16), GAN_OK);
    }
    const uint32_t *w = (const uint32_t *)bits->data;
    const float *v32 = (const float *)b32->data;
    const uint16_t *v16 = (const uint16_t *)b16->data;
    size_t ties = 0;
    for (size_t i = 0; i < n; i++) {
        double exact;
        uint16_t want;
        if (normal) {
            exact = (double)a + (double)b * ref_normal(&w[i / 4 * 4], (int)(i % 4));
            want = ref_round16(exact, dt);
            /* libm may differ from the kernel's in the last double bit; only a value
             * within that of a 16-bit tie could round either way, and none of these
             * draws is that close. */
        } else {
            exact = (double)a + ((double)b - (double)a) * ref_uniform(w[i]);
            want = ref_round16(exact, dt);
            if (value16(want, dt) >= b)
                want = (uint16_t)(want - 1u); /* positive: one step down */
            else if (value16(want, dt) <= a)
                want = (uint16_t)(want + 1u);
        }
        ck_assert_msg(v16[i] == want, "%s %s element %zu: got %04x, want %04x (exact %.17g)",
                      gan_dtype_name(dt), normal ? "normal" : "uniform", i, v16[i], want,
                      exact);
        uint16_t from32 = dt == GAN_F16 ? cpu_f32_to_f16(v32[i]) : cpu_f32_to_bf16(v32[i]);
        if (!normal && value16(from32, dt) >= b)
            from32 = (uint16_t)(from32 - 1u);
        else if (!normal && value16(from32, dt) <= a)
            from32 = (uint16_t)(from32 + 1u);
        if (from32 != v16[i]) {
            ck_assert_msg(is_tie16(v32[i], dt),
                          "%s element %zu: FP32 %.9g converts to %04x but the kernel wrote "
                          "%04x, and the FP32 value is not a tie", gan_dtype_name(dt), i,
                          (double)v32[i], from32, v16[i]);
            ties++;
        }
    }
    /* Ties need the FP32 value to fall on a 16-bit midpoint: rare for both kinds. */
    ck_assert_msg(ties < n / 1000, "%zu double-rounding ties in %zu draws", ties, n);
    cpu_buffer_free(be, bits);
    cpu_buffer_free(be, b32);
    cpu_buffer_free(be, b16);
}
END_TEST

/* ------------------------------------------------------------------ arguments */

START_TEST(test_bad_arguments)
{
    gan_buffer *buf = buffer_for(16, GAN_F32);
    struct gan_ref f32 = cpu_fixture_ref(buf, GAN_F32), u32 = cpu_fixture_ref(buf, GAN_U32),
                   i32 = cpu_fixture_ref(buf, GAN_I32), none = { 0 };

    ck_assert_int_eq(cpu_rng_bits(be, 4, 1, 0, &f32), GAN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(last_error(), "U32"));
    ck_assert_int_eq(cpu_rng_uniform(be, 4, 1, 0, 0, 1, &u32), GAN_ERR_UNSUPPORTED);
    ck_assert_int_eq(cpu_rng_normal(be, 4, 1, 0, 0, 1, &i32), GAN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(last_error(), "I32"));
    ck_assert_int_eq(cpu_rng_bits(be, 4, 1, 0, &none), GAN_ERR_INVALID);

    /* 16 floats fit; 17 do not, nor 14 from element 3. */
    ck_assert_int_eq(cpu_rng_normal(be, 17, 1, 0, 0, 1, &f32), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "holds 16"));
    struct gan_ref at3 = { .buf = buf, .offset = 3, .dtype = GAN_F32 };
    ck_assert_int_eq(cpu_rng_uniform(be, 14, 1, 0, 0, 1, &at3), GAN_ERR_INVALID);
    ck_assert_int_eq(cpu_rng_uniform(be, 13, 1, 0, 0, 1, &at3), GAN_OK);
    struct gan_ref huge = { .buf = buf, .offset = SIZE_MAX - 2, .dtype = GAN_F32 };
    ck_assert_int_eq(cpu_rng_uniform(be, 8, 1, 0, 0, 1, &huge), GAN_ERR_INVALID);

    ck_assert_int_eq(cpu_rng_uniform(be, 4, 1, 0, 2.0f, 1.0f, &f32), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "[2, 1)"));
    ck_assert_int_eq(cpu_rng_uniform(be, 4, 1, 0, NAN, 1.0f, &f32), GAN_ERR_INVALID);
    ck_assert_int_eq(cpu_rng_uniform(be, 4, 1, 0, 0.0f, INFINITY, &f32), GAN_ERR_INVALID);
    ck_assert_int_eq(cpu_rng_normal(be, 4, 1, 0, 0.0f, -1.0f, &f32), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "std -1"));
    ck_assert_int_eq(cpu_rng_normal(be, 4, 1, 0, NAN, 1.0f, &f32), GAN_ERR_INVALID);

    /* n = 0 writes nothing. */
    memset(buf->data, 0x5a, 64);
    ck_assert_int_eq(cpu_rng_normal(be, 0, 1, 0, 0, 1, &f32), GAN_OK);
    ck_assert_int_eq(cpu_rng_bits(be, 0, 1, 0, &u32), GAN_OK);
    for (int i = 0; i < 64; i++)
        ck_assert_uint_eq(buf->data[i], 0x5a);
    cpu_buffer_free(be, buf);
}
END_TEST

static Suite *philox_suite(void)
{
    Suite *s = suite_create("philox");

    TCase *tc = tcase_create("known-answers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_kat, 0, (int)(sizeof kats / sizeof kats[0]));
    tcase_add_test(tc, test_kat_through_kernel);
    suite_add_tcase(s, tc);

    tc = tcase_create("stream");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_bits_layout, 0, (int)(sizeof lengths / sizeof lengths[0]));
    tcase_add_test(tc, test_offset_is_tail);
    tcase_add_test(tc, test_reproducible_and_distinct);
    suite_add_tcase(s, tc);

    tc = tcase_create("uniform");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_uniform_statistics);
    tcase_add_loop_test(tc, test_uniform_mapping, 0,
                        (int)(sizeof intervals / sizeof intervals[0]));
    tcase_add_test(tc, test_uniform_top_word);
    suite_add_tcase(s, tc);

    tc = tcase_create("normal");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_normal_statistics);
    tcase_add_loop_test(tc, test_normal_mapping, 0, (int)(sizeof mean_std / sizeof mean_std[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("16-bit");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_16bit_rounded_once, 0, 4);
    suite_add_tcase(s, tc);

    tc = tcase_create("arguments");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(philox_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
