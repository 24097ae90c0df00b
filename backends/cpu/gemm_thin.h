/* SPDX-License-Identifier: MIT */
/* gemm_thin.h — the CPU backend's own BF16 products with at most CPU_THIN_MAX columns
 * or rows: the paper toy's 2-D output layer, the critic's one-column score, and their
 * gradients. gemm_thin.c drives it; gemm_thin_lanes.h is its loops, once per vector
 * level. */
#ifndef GANCTL_CPU_GEMM_THIN_H
#define GANCTL_CPU_GEMM_THIN_H

#include <stdint.h>

#include "cpu_backend.h"

/* A product is thin when n or m is at most this. */
#define CPU_THIN_MAX 4

/* One batch entry's product as the loops take it, whichever side is thin: C's element
 * (v, s), v along the large operand's `count` rows (or columns) and s along the thin
 * side's `thin` ≤ CPU_THIN_MAX, is alpha · Σ_p big(v, p)·small[s·k + p] + beta · C,
 * stored at c + v·cv + s·cs. big(v, p) is big[v·ld + p] where the large operand's rows
 * run along k (`along_k`), big[p·ld + v] where they run along v. `small` is the thin
 * operand widened to FP32, k values a row (gemm_thin.c): op(B)'s columns when C has few
 * columns (v = C's row, cv = ldc, cs = 1), op(A)'s rows when it has few rows (v = C's
 * column, cv = 1, cs = ldc). */
struct cpu_thin {
    const uint16_t *big;  /* BF16 */
    int64_t ld;
    int along_k;
    int64_t count, thin, k;
    const float *small;
    void *c;
    enum gan_dtype c_dtype;
    int64_t cv, cs;
    float alpha, beta;
};

/* A vector level's loops: `dots` where the large operand runs along k (a dot product an
 * element, two values of v at a time), `chains` where it runs along v (one FMA chain an
 * element, 2·lanes values of v at a time). */
struct cpu_thin_level {
    void (*dots)(const struct cpu_thin *t);
    void (*chains)(const struct cpu_thin *t);
};

extern const struct cpu_thin_level cpu_thin_level_avx512, cpu_thin_level_avx2;

/* Nonzero when be computes thin BF16 products itself (a vector level with FMA, and not
 * gemm = "onednn"). */
int cpu_gemm_thin_on(const gan_backend *be);
/* Nonzero when be computes the product g itself as a thin one. */
int cpu_gemm_thin_takes(const gan_backend *be, const struct gan_gemm *g);
/* The product, batch entry by batch entry, on the calling thread. */
gan_status cpu_gemm_thin(gan_backend *be, const struct gan_gemm *g);

#endif
