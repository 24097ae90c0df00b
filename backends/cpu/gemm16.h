/* SPDX-License-Identifier: MIT */
/* gemm16.h — the CPU backend's own GEMM for products with 16-bit operands on CPUs
 * without a 16-bit dot product: it widens FP16 and BF16 to FP32 while it packs the
 * operands, where OpenBLAS's sgemm needs them widened first in a pass of their own.
 * gemm16.c drives it; gemm16_lanes.h is its packing, tile and shallow kernel, once per
 * vector level. */
#ifndef GANCTL_CPU_GEMM16_H
#define GANCTL_CPU_GEMM16_H

#include <stdint.h>

#include "cpu_backend.h"

/* One operand as the kernels read it: element (r, c) of the stored matrix is p[r·ld + c]
 * in `dtype`; `trans` as in struct gan_gemm. */
struct cpu_gemm16_operand {
    const void *p;
    enum gan_dtype dtype;
    int64_t ld;
    int trans;
    int64_t cols; /* of the stored matrix: what a row holds */
};

/* C and how the chain is combined with it: alpha·chain + beta·C. */
struct cpu_gemm16_c {
    void *p;
    enum gan_dtype dtype;
    int64_t ld;
    float alpha, beta;
};

/* Values of k a block holds; also the distance, in floats, between the rows of an A
 * panel (gemm16_lanes.h), which the tile then reads at offsets fixed when it is
 * compiled. A panel of either layout takes mr such rows. (Rows an odd number of cache
 * lines apart, 272 floats, ran no faster: bench/README.md.) */
#define CPU_GEMM16_DEPTH 256

/* A vector level's part: its tile's shape and its four kernels (gemm16_lanes.h). The
 * tile reads A's panel k-major (dst[k · mr + i]) when A is stored k × m, and row by row
 * (dst[i · CPU_GEMM16_DEPTH + k]) when it is stored m × k: each is then a plain
 * widening copy of what the stored rows hold, with no transposing. */
struct cpu_gemm16_level {
    int mr, nr, lanes;
    void (*pack_a)(const struct cpu_gemm16_operand *a, int64_t i0, int mr, int64_t kb,
                   int64_t k, float *dst);
    void (*pack_b)(const struct cpu_gemm16_operand *b, int64_t j0, int nr, int64_t kb,
                   int64_t k, float *dst);
    void (*tile)(const struct cpu_gemm16_c *c, const float *ap, int a_by_rows, const float *bp,
                 int64_t k, int64_t i0, int64_t j0, int mr, int nr, float *part, int first,
                 int last);
    /* C's rows i0 .. i1 of an m × n product with k ≤ CPU_GEMM16_SHALLOW, from A and B
     * widened whole: aw[p · m + i] is A's element (i, p); bw[p · ldw + j] is B's (p, j),
     * ldw a multiple of lanes, 0 past n. */
    void (*shallow)(const struct cpu_gemm16_c *c, const float *aw, int64_t m, const float *bw,
                    int64_t ldw, int64_t n, int64_t k, int64_t i0, int64_t i1);
};

/* Products over at most this many values of k take the level's shallow kernel instead of
 * its tiles: a 2-D point times a layer's weights (k = 2), a one-unit layer's input
 * gradient (k = 1). Their tiles were mostly packing and the trip through memory after
 * two FMAs an element. */
#define CPU_GEMM16_SHALLOW 4

extern const struct cpu_gemm16_level cpu_gemm16_level_avx512, cpu_gemm16_level_avx2;

/* The setting "gemm16": where 16-bit GEMM operands are widened. */
enum cpu_gemm16_path {
    CPU_GEMM16_AUTO,   /* packed on AVX-512, staged below it (where packed was slower) */
    CPU_GEMM16_PACKED, /* packed on AVX-512 or AVX2 with FMA, staged below */
    CPU_GEMM16_STAGED, /* in a pass of their own, then OpenBLAS's sgemm */
};
gan_status cpu_gemm16_setting(const struct gan_host *host, enum cpu_gemm16_path *path);

/* The level be's products use, or NULL when they are staged, and then in *why (when
 * not NULL) the reason, for --version: the setting, the vector level (AVX-512 under
 * "auto", F16C too under "packed"), or a CPU without FMA. */
const struct cpu_gemm16_level *cpu_gemm16_level(const gan_backend *be, const char **why);

/* Products smaller than this many rows or columns stay staged: a tile would spend most
 * of its lanes on padding (the critic's one-column output layer). The row limit was set
 * when every tile computed MR rows; the tiles of a third of MR pad less, and it has not
 * been measured again since. */
#define CPU_GEMM16_MIN_ROWS 8
#define CPU_GEMM16_MIN_COLS 16

/* Nonzero when be computes the product g (which has a 16-bit operand) itself. */
int cpu_gemm16_takes(const gan_backend *be, const struct gan_gemm *g);
/* The product, batch entry by batch entry, on be's threads. */
gan_status cpu_gemm16(gan_backend *be, const struct gan_gemm *g);

#endif
