/* SPDX-License-Identifier: MIT */
/* elementwise.c — what an element-wise op costs on one thread of the CPU backend, per
 * vector level the CPU has: nanoseconds an element, and the same as a multiple of an add
 * at that level (the unit the element-wise split weighs ops in, unary_cost in
 * backends/cpu/elementwise.c).
 *
 *   bench/elementwise [-n ELEMENTS] [-r REPS] [--dtype F32|BF16|F16]
 *   bench/elementwise --tanh-bits
 *
 * Every op runs on contiguous operands of n elements (default 50,176, the dcgan
 * generator's 64 images of 28 × 28) of the dtype (default F32; inputs and output alike,
 * as in an O2 step), a median over r timed calls (default 200) after one untimed. The
 * inputs sweep [−3, 3) (the vector levels compute every case of tanh in every lane
 * whatever the input; the portable loop takes the cases of |x| < 3).
 *
 * --tanh-bits is not a timing: over all 2^32 FP32 inputs it counts where the backend's
 * tanh differs from the C library's tanhf (none where that is fdlibm's, as glibc 2.36's)
 * and where each vector level differs from the backend's scalar tanh (none), NaNs
 * compared by their bits. About two minutes. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/convert.h"
#include "../backends/cpu/cpu_backend.h"
#include "bench_clock.h"
#include "bench_host.h"

/* The ops timed: the add first, as the unit. */
static const struct {
    const char *name;
    int unary;
    int op;
} ops[] = {
    { "add", 0, GAN_BINARY_ADD },         { "relu", 1, GAN_UNARY_RELU },
    { "mask_positive", 0, GAN_BINARY_MASK_POSITIVE },
    { "tanh", 1, GAN_UNARY_TANH },        { "sigmoid", 1, GAN_UNARY_SIGMOID },
    { "exp", 1, GAN_UNARY_EXP },          { "log", 1, GAN_UNARY_LOG },
};
#define N_OPS (sizeof ops / sizeof ops[0])

/* --tanh-bits: blocks of 2^20 consecutive bit patterns through every comparison. */
static int tanh_bits(void)
{
    enum { BLOCK = 1 << 20 };
    float *x = malloc(BLOCK * sizeof *x), *y = malloc(BLOCK * sizeof *y);
    if (!x || !y)
        return 1;
    uint64_t libm = 0, level[2] = { 0, 0 };
    const int has[2] = { cpu_isa_best() >= CPU_ISA_F16C, cpu_isa_best() >= CPU_ISA_AVX512 };
    for (uint64_t base = 0; base <= UINT32_MAX; base += BLOCK) {
        for (uint32_t i = 0; i < BLOCK; i++) {
            uint32_t u = (uint32_t)(base + i);
            memcpy(&x[i], &u, sizeof u);
        }
        for (uint32_t i = 0; i < BLOCK; i++) {
            float s = cpu_tanhf(x[i]), c = tanhf(x[i]);
            libm += memcmp(&s, &c, sizeof s) != 0;
        }
        struct cpu_vec_in in = { x, GAN_F32, 0, 0.0f };
        for (int l = 0; l < 2; l++) {
            if (!has[l])
                continue;
            (l ? cpu_vec_unary_avx512 : cpu_vec_unary_avx2)(GAN_UNARY_TANH, 0.0f, &in, y,
                                                            GAN_F32, 0, BLOCK);
            for (uint32_t i = 0; i < BLOCK; i++) {
                float s = cpu_tanhf(x[i]);
                level[l] += memcmp(&s, &y[i], sizeof s) != 0;
            }
        }
    }
    printf("of 4294967296 FP32 inputs, the backend's tanh differs from the C library's tanhf "
           "in %llu\n", (unsigned long long)libm);
    for (int l = 0; l < 2; l++) {
        if (has[l])
            printf("%s lanes differ from the backend's scalar tanh in %llu\n",
                   l ? "AVX-512" : "AVX2", (unsigned long long)level[l]);
        else
            printf("%s: this CPU has none; not compared\n", l ? "AVX-512" : "AVX2 with F16C");
    }
    free(x);
    free(y);
    return libm || level[0] || level[1];
}

int main(int argc, char **argv)
{
    long n = 50176, reps = 200;
    enum gan_dtype dt = GAN_F32;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--tanh-bits") == 0 && argc == 2)
            return tanh_bits();
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            n = strtol(argv[++i], &end, 10);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            reps = strtol(argv[++i], &end, 10);
        } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            static const enum gan_dtype choices[] = { GAN_F32, GAN_BF16, GAN_F16 };
            ++i;
            for (size_t c = 0; c < sizeof choices / sizeof choices[0]; c++)
                if (strcmp(argv[i], gan_dtype_name(choices[c])) == 0) {
                    dt = choices[c];
                    end = argv[i] + strlen(argv[i]);
                }
        }
        if (!end || *end) {
            fprintf(stderr, "usage: %s [-n ELEMENTS] [-r REPS] [--dtype F32|BF16|F16] | %s "
                            "--tanh-bits\n", argv[0], argv[0]);
            return 2;
        }
    }
    if (n < 1 || reps < 1 || reps > 100000) {
        fprintf(stderr, "%s: -n takes at least 1 element, -r 1 to 100000 reps\n", argv[0]);
        return 2;
    }
    struct gan_backend be;
    memset(&be, 0, sizeof be);
    be.host = &bench_host;
    be.threads = 1;
    gan_buffer *a, *b, *y;
    const size_t bytes = (size_t)n * gan_dtype_size(dt);
    if (cpu_buffer_alloc(&be, bytes, &a) != GAN_OK || cpu_buffer_alloc(&be, bytes, &b) != GAN_OK ||
        cpu_buffer_alloc(&be, bytes, &y) != GAN_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], bench_last_error());
        return 1;
    }
    for (long i = 0; i < n; i++) {
        cpu_store(a->data, dt, i, (float)((i * 7919) % 6000) * 1e-3f - 3.0f);
        cpu_store(b->data, dt, i, (float)((i * 104729) % 6000) * 1e-3f + 0.5f); /* log's > 0 */
    }
    struct gan_shape s = { 1, { n } };
    struct gan_operand oa = { a, 0, dt, { 1 } }, ob = { b, 0, dt, { 1 } };
    struct gan_operand oy = { y, 0, dt, { 1 } };
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return 1;

    printf("# %ld %s elements, one thread, median of %ld calls: ns an element (adds)\n",
           n, gan_dtype_name(dt), reps);
    printf("%-14s", "level");
    for (size_t k = 0; k < N_OPS; k++)
        printf(" %16s", ops[k].name);
    printf("\n");
    for (int lv = CPU_ISA_PORTABLE; lv <= (int)cpu_isa_best(); lv++) {
        cpu_isa_select(&be, (enum cpu_isa)lv);
        double add_ns = 0.0;
        printf("%-14s", cpu_isa_name((enum cpu_isa)lv));
        for (size_t k = 0; k < N_OPS; k++) {
            const struct gan_operand *x = ops[k].op == GAN_UNARY_LOG && ops[k].unary ? &ob : &oa;
            for (long r = -1; r < reps; r++) {
                double t0 = bench_seconds();
                gan_status st = ops[k].unary
                                    ? cpu_unary(&be, (enum gan_unary_op)ops[k].op, 0.0f, &s, x, &oy)
                                    : cpu_binary(&be, (enum gan_binary_op)ops[k].op, &s, &oa, &ob,
                                                 &oy);
                if (st != GAN_OK) {
                    fprintf(stderr, "%s: %s\n", argv[0], bench_last_error());
                    return 1;
                }
                if (r >= 0)
                    t[r] = bench_seconds() - t0;
            }
            bench_sort_seconds(t, (size_t)reps);
            double ns = t[reps / 2] / (double)n * 1e9;
            if (k == 0)
                add_ns = ns;
            char cell[32];
            snprintf(cell, sizeof cell, "%.3f (%.0f)", ns, ns / add_ns);
            printf(" %16s", cell);
        }
        printf("\n");
    }
    free(t);
    cpu_buffer_free(&be, a);
    cpu_buffer_free(&be, b);
    cpu_buffer_free(&be, y);
    return 0;
}
