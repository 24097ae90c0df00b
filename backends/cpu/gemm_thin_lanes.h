/* SPDX-License-Identifier: MIT */
/* gemm_thin_lanes.h — the loops of gemm_thin.c on one vector level: included after a
 * lane interface (lanes_avx512.h, lanes_avx2.h) and with lanes_fma(a, b, c) = a·b + c
 * fused and lanes_hsum(v), the sum of v's lanes, defined. Every element of C is summed
 * over k in an order fixed by the shape: one FMA chain over k, or one chain a lane (k
 * in steps of LANES_N) and then the lanes' sum; then alpha·sum + beta·C, rounded step
 * by step (never fused), and rounded once to C's dtype. */
#include <string.h>

#include "convert.h"

static inline float LANES_FN(thin_widen)(const uint16_t *p, int64_t i)
{
    uint32_t u = (uint32_t)p[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* C[i][j] from the sum s */
static inline void LANES_FN(thin_store_one)(const struct cpu_thin *t, int64_t i, int64_t j,
                                            float s)
{
    const int64_t at = i * t->ldc + j;
    float v = t->alpha * s;
    if (t->beta != 0.0f) {
        const float w = t->beta * cpu_load(t->c, t->c_dtype, at);
        v = v + w;
    }
    cpu_store(t->c, t->c_dtype, at, v);
}

/* C[i][j0 ..] from the sums in v's lanes inside the run */
LANES_TARGET
static inline void LANES_FN(thin_store_row)(const struct cpu_thin *t, int64_t i, int64_t j0,
                                            lanes_in in, lanes_f32 v)
{
    const int64_t at = i * t->ldc + j0;
    v = lanes_mul(lanes_set1(t->alpha), v);
    if (t->beta != 0.0f)
        v = lanes_add(v, lanes_mul(lanes_set1(t->beta), lanes_load(t->c, t->c_dtype, at, in)));
    lanes_store(t->c, t->c_dtype, at, in, v);
}

/* The loops below take their small size (n or m: 1 to CPU_THIN_MAX) as a constant,
 * each instantiated once per size through a switch, so that the compiler keeps every
 * chain in a register. */
#define THIN_INLINE __attribute__((always_inline)) inline

/* n ≤ CPU_THIN_MAX: with A's rows along k, each element is a dot product of
 * a row of A and a column of op(B) (small: n × k), one chain a lane, two rows at a time;
 * with A stored k × m, 2·LANES_N rows of C at a time, one FMA chain over k each. */
LANES_TARGET
static THIN_INLINE void LANES_FN(thin_few_cols_of)(const struct cpu_thin *t, const int n)
{
    const int64_t m = t->m, k = t->k;
    if (!t->trans_a) {
        for (int64_t i = 0; i < m; i += 2) {
            const int two = i + 1 < m;
            lanes_f32 acc[2][CPU_THIN_MAX];
            for (int j = 0; j < n; j++)
                acc[0][j] = acc[1][j] = lanes_zero();
            for (int64_t p0 = 0; p0 < k; p0 += LANES_N) {
                const lanes_in in = lanes_inside(p0, k);
                const lanes_f32 a0 = lanes_load(t->a, GAN_BF16, i * t->lda + p0, in);
                const lanes_f32 a1 = two ? lanes_load(t->a, GAN_BF16, (i + 1) * t->lda + p0, in)
                                         : lanes_zero();
                for (int j = 0; j < n; j++) {
                    const lanes_f32 bv = lanes_load_f32(t->small + j * k + p0, in);
                    acc[0][j] = lanes_fma(a0, bv, acc[0][j]);
                    acc[1][j] = lanes_fma(a1, bv, acc[1][j]);
                }
            }
            for (int j = 0; j < n; j++) {
                LANES_FN(thin_store_one)(t, i, j, lanes_hsum(acc[0][j]));
                if (two)
                    LANES_FN(thin_store_one)(t, i + 1, j, lanes_hsum(acc[1][j]));
            }
        }
        return;
    }
    for (int64_t i0 = 0; i0 < m; i0 += 2 * LANES_N) {
        const lanes_in in0 = lanes_inside(i0, m);
        const lanes_in in1 = lanes_inside(i0 + LANES_N < m ? i0 + LANES_N : m, m);
        lanes_f32 acc[2][CPU_THIN_MAX];
        for (int j = 0; j < n; j++)
            acc[0][j] = acc[1][j] = lanes_zero();
        for (int64_t p = 0; p < k; p++) {
            const lanes_f32 a0 = lanes_load(t->a, GAN_BF16, p * t->lda + i0, in0);
            const lanes_f32 a1 = lanes_load(t->a, GAN_BF16, p * t->lda + i0 + LANES_N, in1);
            for (int j = 0; j < n; j++) {
                const lanes_f32 bv = lanes_set1(t->small[j * k + p]);
                acc[0][j] = lanes_fma(a0, bv, acc[0][j]);
                acc[1][j] = lanes_fma(a1, bv, acc[1][j]);
            }
        }
        float s[2 * LANES_N];
        for (int j = 0; j < n; j++) {
            lanes_store_f32(s, lanes_inside(0, LANES_N), acc[0][j]);
            lanes_store_f32(s + LANES_N, lanes_inside(0, LANES_N), acc[1][j]);
            for (int64_t i = i0; i < m && i < i0 + 2 * LANES_N; i++)
                LANES_FN(thin_store_one)(t, i, j, s[i - i0]);
        }
    }
}

/* m ≤ CPU_THIN_MAX (n larger): with B's rows along n, 2·LANES_N columns of C at a
 * time, one FMA chain over k each, from op(A)'s rows (small: m × k); with B stored n × k,
 * each element is a dot product, one chain a lane, two columns at a time. */
LANES_TARGET
static THIN_INLINE void LANES_FN(thin_few_rows_of)(const struct cpu_thin *t, const int m)
{
    const int64_t n = t->n, k = t->k;
    if (!t->trans_b) {
        for (int64_t j0 = 0; j0 < n; j0 += 2 * LANES_N) {
            const lanes_in in0 = lanes_inside(j0, n);
            const lanes_in in1 = lanes_inside(j0 + LANES_N < n ? j0 + LANES_N : n, n);
            lanes_f32 acc[CPU_THIN_MAX][2];
            for (int i = 0; i < m; i++)
                acc[i][0] = acc[i][1] = lanes_zero();
            for (int64_t p = 0; p < k; p++) {
                const lanes_f32 b0 = lanes_load(t->b, GAN_BF16, p * t->ldb + j0, in0);
                const lanes_f32 b1 = lanes_load(t->b, GAN_BF16, p * t->ldb + j0 + LANES_N, in1);
                for (int i = 0; i < m; i++) {
                    const lanes_f32 av = lanes_set1(t->small[i * k + p]);
                    acc[i][0] = lanes_fma(av, b0, acc[i][0]);
                    acc[i][1] = lanes_fma(av, b1, acc[i][1]);
                }
            }
            for (int i = 0; i < m; i++) {
                LANES_FN(thin_store_row)(t, i, j0, in0, acc[i][0]);
                if (j0 + LANES_N < n)
                    LANES_FN(thin_store_row)(t, i, j0 + LANES_N, in1, acc[i][1]);
            }
        }
        return;
    }
    for (int64_t j = 0; j < n; j += 2) {
        const int two = j + 1 < n;
        lanes_f32 acc[CPU_THIN_MAX][2];
        for (int i = 0; i < m; i++)
            acc[i][0] = acc[i][1] = lanes_zero();
        for (int64_t p0 = 0; p0 < k; p0 += LANES_N) {
            const lanes_in in = lanes_inside(p0, k);
            const lanes_f32 b0 = lanes_load(t->b, GAN_BF16, j * t->ldb + p0, in);
            const lanes_f32 b1 = two ? lanes_load(t->b, GAN_BF16, (j + 1) * t->ldb + p0, in)
                                     : lanes_zero();
            for (int i = 0; i < m; i++) {
                const lanes_f32 av = lanes_load_f32(t->small + i * k + p0, in);
                acc[i][0] = lanes_fma(av, b0, acc[i][0]);
                acc[i][1] = lanes_fma(av, b1, acc[i][1]);
            }
        }
        for (int i = 0; i < m; i++) {
            LANES_FN(thin_store_one)(t, i, j, lanes_hsum(acc[i][0]));
            if (two)
                LANES_FN(thin_store_one)(t, i, j + 1, lanes_hsum(acc[i][1]));
        }
    }
}

#define THIN_SIZES(kind, size)                                                              \
    LANES_TARGET static void LANES_FN(thin_##kind)(const struct cpu_thin *t)                \
    {                                                                                       \
        switch (size) {                                                                     \
        case 1: LANES_FN(thin_##kind##_of)(t, 1); break;                                    \
        case 2: LANES_FN(thin_##kind##_of)(t, 2); break;                                    \
        case 3: LANES_FN(thin_##kind##_of)(t, 3); break;                                    \
        default: LANES_FN(thin_##kind##_of)(t, 4); break;                                   \
        }                                                                                   \
    }
THIN_SIZES(few_cols, t->n)
THIN_SIZES(few_rows, t->m)

const struct cpu_thin_level LANES_FN(cpu_thin_level) = {
    LANES_FN(thin_few_cols),
    LANES_FN(thin_few_rows),
};
