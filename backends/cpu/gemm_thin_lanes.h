/* SPDX-License-Identifier: MIT */
/* gemm_thin_lanes.h — the loops of gemm_thin.c on one vector level: included after a
 * lane interface (lanes_avx512.h, lanes_avx2.h) and with lanes_fma(a, b, c) = a·b + c
 * fused and lanes_hsum(v), the sum of v's lanes, defined. Every element of C is summed
 * over k in an order fixed by the shape: one FMA chain over k, or one chain a lane (k
 * in steps of LANES_N) and then the lanes' sum; then alpha·sum + beta·C, rounded step
 * by step (never fused), and rounded once to C's dtype. */
#include <string.h>

/* C(v, s) from the sum x, in the first lane: the same operations as a scalar loop
 * (alpha·x and beta·C rounded apart, then their sum, then the store's rounding). Compiled
 * for the lanes' target and always inlined, with no call to the baseline ISA's loads and
 * stores: each such call from the vector loops, with the upper halves of the vector
 * registers in use, cost an Intel Xeon (AVX512-BF16, no AMX) so much that the toy's
 * 256 × 2 × 512 ran at 3.9 GFLOP/s instead of 42 (`bench/sgemm --dtype BF16`); a Zen 4
 * had not shown it (lanes_leave). */
LANES_TARGET
static __attribute__((always_inline)) inline void
LANES_FN(thin_store_one)(const struct cpu_thin *t, int64_t v, int64_t s, float x)
{
    const int64_t at = v * t->cv + s * t->cs;
    const lanes_in first = lanes_inside(0, 1);
    lanes_f32 y = lanes_mul(lanes_set1(t->alpha), lanes_set1(x));
    if (t->beta != 0.0f)
        y = lanes_add(y, lanes_mul(lanes_set1(t->beta), lanes_load(t->c, t->c_dtype, at, first)));
    lanes_store(t->c, t->c_dtype, at, first, y);
}

/* C(v0 .., s) from the sums in x's lanes inside the run: a vector store where they lie
 * side by side in C (cv = 1), one element at a time where not */
LANES_TARGET
static inline void LANES_FN(thin_store_lanes)(const struct cpu_thin *t, int64_t v0, int64_t s,
                                              lanes_in in, lanes_f32 x)
{
    if (t->cv != 1) {
        float sums[LANES_N];
        lanes_store_f32(sums, lanes_inside(0, LANES_N), x);
        for (int64_t v = v0; v < t->count && v < v0 + LANES_N; v++)
            LANES_FN(thin_store_one)(t, v, s, sums[v - v0]);
        return;
    }
    const int64_t at = v0 + s * t->cs;
    x = lanes_mul(lanes_set1(t->alpha), x);
    if (t->beta != 0.0f)
        x = lanes_add(x, lanes_mul(lanes_set1(t->beta), lanes_load(t->c, t->c_dtype, at, in)));
    lanes_store(t->c, t->c_dtype, at, in, x);
}

/* The loops below take the thin side's size (1 to CPU_THIN_MAX) as a constant, each
 * instantiated once per size through a switch, so that the compiler keeps every chain
 * in a register. */
#define THIN_INLINE __attribute__((always_inline)) inline

/* The large operand along k: two of its rows at a time, each element a dot product of
 * one and a row of `small`, one chain a lane, then the lanes' sum. */
LANES_TARGET
static THIN_INLINE void LANES_FN(thin_dots_of)(const struct cpu_thin *t, const int thin)
{
    const int64_t count = t->count, k = t->k;
    for (int64_t v = 0; v < count; v += 2) {
        const int two = v + 1 < count;
        lanes_f32 acc[2][CPU_THIN_MAX];
        for (int s = 0; s < thin; s++)
            acc[0][s] = acc[1][s] = lanes_zero();
        for (int64_t p0 = 0; p0 < k; p0 += LANES_N) {
            const lanes_in in = lanes_inside(p0, k);
            const lanes_f32 b0 = lanes_load(t->big, GAN_BF16, v * t->ld + p0, in);
            const lanes_f32 b1 = two ? lanes_load(t->big, GAN_BF16, (v + 1) * t->ld + p0, in)
                                     : lanes_zero();
            for (int s = 0; s < thin; s++) {
                const lanes_f32 x = lanes_load_f32(t->small + s * k + p0, in);
                acc[0][s] = lanes_fma(b0, x, acc[0][s]);
                acc[1][s] = lanes_fma(b1, x, acc[1][s]);
            }
        }
        for (int s = 0; s < thin; s++) {
            LANES_FN(thin_store_one)(t, v, s, lanes_hsum(acc[0][s]));
            if (two)
                LANES_FN(thin_store_one)(t, v + 1, s, lanes_hsum(acc[1][s]));
        }
    }
}

/* The large operand along v: 2·LANES_N values of v at a time, each element one FMA
 * chain over k of the large operand's lanes and a broadcast value of `small`. */
LANES_TARGET
static THIN_INLINE void LANES_FN(thin_chains_of)(const struct cpu_thin *t, const int thin)
{
    const int64_t count = t->count, k = t->k;
    for (int64_t v0 = 0; v0 < count; v0 += 2 * LANES_N) {
        const int64_t v1 = v0 + LANES_N < count ? v0 + LANES_N : count;
        const lanes_in in0 = lanes_inside(v0, count), in1 = lanes_inside(v1, count);
        lanes_f32 acc[CPU_THIN_MAX][2];
        for (int s = 0; s < thin; s++)
            acc[s][0] = acc[s][1] = lanes_zero();
        for (int64_t p = 0; p < k; p++) {
            const lanes_f32 b0 = lanes_load(t->big, GAN_BF16, p * t->ld + v0, in0);
            const lanes_f32 b1 = lanes_load(t->big, GAN_BF16, p * t->ld + v0 + LANES_N, in1);
            for (int s = 0; s < thin; s++) {
                const lanes_f32 x = lanes_set1(t->small[s * k + p]);
                acc[s][0] = lanes_fma(b0, x, acc[s][0]);
                acc[s][1] = lanes_fma(b1, x, acc[s][1]);
            }
        }
        for (int s = 0; s < thin; s++) {
            LANES_FN(thin_store_lanes)(t, v0, s, in0, acc[s][0]);
            if (v1 < count)
                LANES_FN(thin_store_lanes)(t, v1, s, in1, acc[s][1]);
        }
    }
}

#define THIN_SIZES(kind)                                                                    \
    LANES_TARGET static void LANES_FN(thin_##kind)(const struct cpu_thin *t)                \
    {                                                                                       \
        switch (t->thin) {                                                                  \
        case 1: LANES_FN(thin_##kind##_of)(t, 1); break;                                    \
        case 2: LANES_FN(thin_##kind##_of)(t, 2); break;                                    \
        case 3: LANES_FN(thin_##kind##_of)(t, 3); break;                                    \
        default: LANES_FN(thin_##kind##_of)(t, 4); break;                                   \
        }                                                                                   \
        lanes_leave();                                                                      \
    }
THIN_SIZES(dots)
THIN_SIZES(chains)

const struct cpu_thin_level LANES_FN(cpu_thin_level) = {
    LANES_FN(thin_dots),
    LANES_FN(thin_chains),
};
