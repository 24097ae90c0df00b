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

/* One batch entry's product C = alpha·op(A)·op(B) + beta·C: A and B BF16, C BF16 or
 * FP32, as struct gan_gemm stores them; `small` is the thin operand widened to FP32
 * (gemm_thin.c): op(B)'s n columns of k (few columns), or op(A)'s m rows of k (few
 * rows). */
struct cpu_thin {
    const uint16_t *a, *b;
    void *c;
    enum gan_dtype c_dtype;
    int trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    const float *small;
};

/* A vector level's loops, one per kind of thin product. */
struct cpu_thin_level {
    void (*few_cols)(const struct cpu_thin *t);
    void (*few_rows)(const struct cpu_thin *t);
};

extern const struct cpu_thin_level cpu_thin_level_avx512, cpu_thin_level_avx2;

/* Nonzero when be computes the product g itself as a thin one. */
int cpu_gemm_thin_takes(const gan_backend *be, const struct gan_gemm *g);
/* The product, batch entry by batch entry, on the calling thread. */
gan_status cpu_gemm_thin(gan_backend *be, const struct gan_gemm *g);

#endif
