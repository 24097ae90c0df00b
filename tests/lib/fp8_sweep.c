/* SPDX-License-Identifier: MIT */
/* fp8_sweep.c — writes what the CPU backend's casts make of a sweep of FP32 values, in E4M3
 * and E5M2, saturating and not, and of every FP8 pattern widened to FP32, at every vector
 * level this CPU runs, for tests/e2e/fp8_ml_dtypes.py to compare with ml_dtypes.
 *
 *   fp8-sweep OUT
 *
 * OUT, in the host's byte order (little-endian wherever the backend's vector levels run):
 *   "GANFP8SW"            8 bytes
 *   n, levels             two uint32
 *   n float32             the inputs
 *   per level: uint32 level (0 portable, 1 F16C/AVX2, 2 AVX-512), then n bytes each of
 *   E4M3, E4M3 saturating, E5M2, E5M2 saturating, then 256 float32 per format: the
 *   patterns 0..255 of E4M3, then of E5M2, as FP32.
 * The sweep: every value of both formats, the midpoints between neighbours and the FP32
 * numbers on either side of each, every FP32 binade at the mantissas around both formats'
 * rounding points, FP32's specials, and random bit patterns (a fixed seed). */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fixture.h"

static float float_of(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

struct sweep {
    float *v;
    size_t n, cap;
};

static void add(struct sweep *s, float f)
{
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) {
            perror("fp8-sweep");
            exit(1);
        }
    }
    s->v[s->n++] = f;
    s->v[s->n++] = -f;
}

/* A value, and the FP32 numbers just below and above it. */
static void add_around(struct sweep *s, float f)
{
    add(s, f);
    add(s, nextafterf(f, 0));
    add(s, nextafterf(f, INFINITY));
}

/* Every finite magnitude of a format of `mbits` mantissa bits, exponent bias `bias` and
 * largest value `max`, and each midpoint to the next (past the largest, to where the
 * next binade's first value would be). */
static void add_format(struct sweep *s, int mbits, int bias, double max)
{
    double prev = 0.0;
    for (int e = 0;; e++) {
        for (int m = 0; m < (1 << mbits); m++) {
            double v = e == 0 ? ldexp(m, 1 - bias - mbits)
                              : ldexp((1 << mbits) + m, e - bias - mbits);
            if (v > max) {
                add_around(s, (float)((prev + v) / 2));
                add_around(s, (float)v);
                return;
            }
            add_around(s, (float)v);
            if (v > 0)
                add_around(s, (float)((prev + v) / 2));
            prev = v;
        }
    }
}

static int write_all(FILE *f, const void *p, size_t bytes)
{
    return fwrite(p, 1, bytes, f) == bytes;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fp8-sweep OUT\n");
        return 2;
    }
    struct sweep s = { NULL, 0, 0 };
    add_format(&s, 3, 7, 448.0);
    add_format(&s, 2, 15, 57344.0);
    static const uint32_t mants[] = {
        0, 1, 0x7fffff, 0x80000, 0x7ffff, 0x80001, 0x100000, 0xfffff, 0x100001, 0x180000,
        0x17ffff, 0x180001, 0x200000, 0x1fffff, 0x200001, 0x300000, 0x2fffff, 0x300001,
        0x600000, 0x5fffff, 0x600001, 0x700000, 0x6fffff, 0x700001,
    };
    for (uint32_t e = 0; e < 256; e++)
        for (size_t j = 0; j < sizeof mants / sizeof mants[0]; j++)
            add(&s, float_of((e << 23) | mants[j]));
    static const uint32_t specials[] = { 0x7f800000u, 0x7fc00000u, 0x7f800001u, 0x7fa00000u,
                                         0x7fe00000u, 0x7fffffffu, 0x7f7fffffu, 0x00800000u };
    for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++)
        add(&s, float_of(specials[j]));
    uint64_t state = 0x5eedf8f8u;
    for (int j = 0; j < 50000; j++) {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        add(&s, float_of((uint32_t)(z ^ (z >> 31))));
    }

    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    const uint32_t n = (uint32_t)s.n, levels = (uint32_t)cpu_isa_best() + 1;
    int ok = write_all(f, "GANFP8SW", 8) && write_all(f, &n, 4) && write_all(f, &levels, 4) &&
             write_all(f, s.v, s.n * sizeof *s.v);

    static const char *const level_settings[3][2] = {
        { "vector=portable", NULL }, { "vector=f16c", NULL }, { "vector=avx512", NULL },
    };
    uint8_t *out = malloc(s.n);
    gan_buffer *bx = NULL, *by = NULL;
    ok = ok && out;
    for (uint32_t level = 0; ok && level < levels; level++) {
        gan_backend *be = cpu_fixture_new(level_settings[level]);
        if (cpu_buffer_alloc(be, s.n * 4, &bx) != GAN_OK ||
            cpu_buffer_alloc(be, s.n, &by) != GAN_OK ||
            cpu_upload(be, bx, 0, s.v, s.n * 4) != GAN_OK)
            ok = 0;
        ok = ok && write_all(f, &level, 4);
        static const enum gan_dtype types[2] = { GAN_F8E4M3, GAN_F8E5M2 };
        for (int k = 0; ok && k < 4; k++) {
            struct gan_ref x = { bx, 0, GAN_F32 }, y = { by, 0, types[k / 2] };
            ok = cpu_cast_flags(be, s.n, &x, &y, k % 2 ? GAN_CAST_SATURATE : 0, NULL) == GAN_OK &&
                 cpu_download(be, out, by, 0, s.n) == GAN_OK && write_all(f, out, s.n);
        }
        for (int k = 0; ok && k < 2; k++) {
            uint8_t patterns[256];
            float wide[256];
            for (int i = 0; i < 256; i++)
                patterns[i] = (uint8_t)i;
            struct gan_ref x = { by, 0, types[k] }, y = { bx, 0, GAN_F32 };
            ok = cpu_upload(be, by, 0, patterns, 256) == GAN_OK &&
                 cpu_cast(be, 256, &x, &y, NULL) == GAN_OK &&
                 cpu_download(be, wide, bx, 0, sizeof wide) == GAN_OK &&
                 write_all(f, wide, sizeof wide);
        }
        if (!ok)
            fprintf(stderr, "fp8-sweep: level %u: %s\n", (unsigned)level,
                    ((struct test_host *)be->host->ctx)->last_error);
        cpu_buffer_free(be, bx);
        cpu_buffer_free(be, by);
        bx = by = NULL;
        cpu_fixture_free(be);
    }
    free(out);
    free(s.v);
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "fp8-sweep: could not write %s\n", argv[1]);
        return 1;
    }
    printf("fp8-sweep: %u inputs at %u levels into %s\n", (unsigned)n, (unsigned)levels,
           argv[1]);
    return 0;
}
