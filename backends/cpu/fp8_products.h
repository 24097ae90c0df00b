/* SPDX-License-Identifier: MIT */
/* fp8_products.h — what the CPU backend's FP8 product files share: the vectorised
 * loops over one chunk of a row (fp8_passes.c), the walk over an operand's rows in
 * chunks with each element's scale at hand (fp8_products.c), and the widening of an
 * FP8 operand that gemm_fp8.c feeds to the FP32 GEMM. */
#ifndef GANCTL_CPU_FP8_PRODUCTS_H
#define GANCTL_CPU_FP8_PRODUCTS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/fp8.h>

#include "cpu_backend.h"
#include "../common/fp8.h"

/* Elements one loop handles at a time: a run of one row, staged in FP32 on the stack,
 * where the few loops over it stay in the first-level cache. */
#define FP8_CHUNK 256

/* ---------------------------------------------------------------- fp8_passes.c */

/* What the loops below count over a chunk, each in its own 32-bit counter (a chunk
 * has at most FP8_CHUNK elements), and the largest finite |x| as FP32 bits. */
struct cpu_fp8_counts {
    uint32_t zeros, nonfinite, overflow, underflow, subnormal;
    uint32_t amax_bits;
};

/* Each runs n ≤ FP8_CHUNK elements at vector level `isa`: the portable one in plain C,
 * the others the same loops compiled for AVX2 or AVX-512. Integer steps and single
 * FP32 or FP64 operations only, so every level gives the same bits. */

/* fp8_stats: ab[i] = |x[i]|'s FP32 bits where finite, 0 where not; counts zeros and
 * non-finite values; c->amax_bits grows to the largest ab. */
void cpu_fp8_measure(enum cpu_isa isa, const float *x, size_t n, uint32_t *ab,
                     struct cpu_fp8_counts *c);
/* dst[i] = max(dst[i], src[i]): a block's amax down a column. */
void cpu_fp8_max_into(enum cpu_isa isa, uint32_t *dst, const uint32_t *src, size_t n);
/* p[i] = fl32(x[i] · s[i]). */
void cpu_fp8_mul(enum cpu_isa isa, const float *x, const float *s, float *p, size_t n);
/* p[i] = x[i] · s[i] exactly in FP64, rounded to odd in FP32 (gan_f64_to_f32_odd). */
void cpu_fp8_mul_odd(enum cpu_isa isa, const float *x, const float *s, float *p, size_t n);
/* dst[i] = v: the scale of a run of one block along a row, repeated. */
void cpu_fp8_fill(enum cpu_isa isa, float *dst, float v, size_t n);
/* max(m, src[0], …, src[n − 1]): a block's amax along a row. */
uint32_t cpu_fp8_max(enum cpu_isa isa, const uint32_t *src, size_t n, uint32_t m);
/* r[i] = fl32(1 / s[i]). */
void cpu_fp8_recip(enum cpu_isa isa, const float *s, float *r, size_t n);
/* The fused passes: each reads its input once, straight from the operand where it is
 * F32 or BF16 (xt; F16 is staged in FP32 by the caller), over n ≤ FP8_RUN elements, so
 * that the 32-bit counters cannot wrap. A per-tensor pass takes a run at a time, longer
 * than a chunk: it needs no scale beside each element. */
#define FP8_RUN ((int64_t)1 << 20)

/* gan_fp8_encode's constants for one format and saturation, as the fused loop takes
 * them. */
struct cpu_fp8_encoding {
    uint32_t shift;           /* 23 − mant_bits */
    uint32_t rebias, half;    /* the normal rounding: (ap − rebias + half + lsb) >> shift */
    uint32_t min_normal, overflow_above;
    uint32_t overflow_code;   /* max_code when saturating, else the format's overflow */
    uint32_t nan_code, nan_payload;
    uint32_t sub_below;       /* magnitude codes below it are subnormal: 1 << mant_bits */
    float magic;              /* 2^23 times the smallest subnormal */
};
struct cpu_fp8_encoding cpu_fp8_encoding_of(enum gan_dtype dt, int saturate);
/* cpu_fp8_measure's counts and amax of x (type xt), without the magnitudes. */
void cpu_fp8_measure_direct(enum cpu_isa isa, const void *x, enum gan_dtype xt, size_t n,
                            struct cpu_fp8_counts *c);
/* q[i] = fp8(fl32(x[i] · s)), or · s_at[i] when s_at is not NULL, in encoding k, and
 * fp8_quantize's counts and amax into c (backends/common/fp8_ops.h,
 * gan_fp8_tally_element of x, p and q), all in one pass. */
void cpu_fp8_quantize_run(enum cpu_isa isa, const void *x, enum gan_dtype xt, float s,
                          const float *s_at, uint8_t *q, size_t n,
                          const struct cpu_fp8_encoding *k, struct cpu_fp8_counts *c);
/* y[i] = the BF16 bits of fl32(x[i] · s[i]) by truncation: exact where the product has
 * at most 8 significant bits and is normal, as an FP8 value times a power of two in
 * range is (gemm_fp8's BF16 route). */
void cpu_fp8_bf16_top(enum cpu_isa isa, const float *x, const float *s, uint16_t *y, size_t n);

/* y[i] = table[q[i] & 0x7f] | (q[i] & 0x80) << 8: FP8 values widened into BF16 through a
 * table of the 128 magnitudes' BF16 bits (a per-tensor operand's, all with one scale). */
void cpu_fp8_table_bf16(enum cpu_isa isa, const uint8_t *q, const uint16_t *table,
                        uint16_t *y, size_t n);

/* ---------------------------------------------------------------- fp8_avx512.c */

/* cpu_fp8_table_bf16 at the AVX-512 level. */
void cpu_fp8_table_bf16_avx512(const uint8_t *q, const uint16_t *table, uint16_t *y,
                               size_t n);

/* ---------------------------------------------------------------- fp8_products.c */

/* y = q · (1/scale of its block, rounded to FP32) as FP32, for every element of an
 * operand of layout l (checked): fp8_dequantize into F32, which is how gemm_fp8 widens
 * a scaled operand. Split across the instance's threads. */
void cpu_fp8_widen(gan_backend *be, const struct gan_fp8_layout *l, const uint8_t *q,
                   enum gan_dtype qt, const float *scale, float *y);
/* y = q · (1/scale of its block, rounded to FP32) as BF16 by truncation: gemm_fp8's
 * BF16 route, which takes it only where every such value is exact in BF16 (q times a
 * power of two in BF16's normal range). */
void cpu_fp8_widen_bf16(gan_backend *be, const struct gan_fp8_layout *l, const uint8_t *q,
                        enum gan_dtype qt, const float *scale, uint16_t *y);

#endif
