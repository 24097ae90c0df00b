/* SPDX-License-Identifier: MIT */
/* gemm16_lanes.h — gemm16.c's packing, tile and shallow kernel, written once for both
 * vector levels: included after lanes_avx512.h or lanes_avx2.h by gemm16_avx512.c and
 * gemm16_avx2.c, which define GEMM16_TARGET (the level's target plus FMA), the tile's
 * rows GEMM16_MR (at most LANES_N) and vectors of columns GEMM16_NV, and lanes_fma; the
 * lane interface gives lanes_transpose (LANES_N vectors, in place).
 *
 * A tile is GEMM16_MR rows (a third or two thirds of them for a block's last rows) by
 * GEMM16_NR = two vectors of columns of C. Each element is one FP32 fused multiply-add
 * chain over k in order, from zero, then alpha·chain + beta·C, each product and the
 * sum rounded once, and rounded once more into a 16-bit C: what a scalar loop of fmaf
 * computes, on either level and at any thread count. The operands are read in their own
 * types and widened (exactly) as they are packed, so no pass of its own converts a
 * whole tensor. */

#define GEMM16_NR (GEMM16_NV * LANES_N)
/* lanes_inside for a run that may end before element i (then no lane is inside) */
#define GEMM16_INSIDE(i, n) ((n) > (i) ? lanes_inside((i), (n)) : lanes_inside(0, 0))

/* A's rows i0 .. i0 + mr, over k = kb .. kb + k_len, as a panel, zeros from row mr on.
 * Stored k × m (trans), it is packed k-major, dst[k · MR + i], so that the tile's
 * broadcasts read one stream: each k's MR values are consecutive in memory and stored
 * as a whole vector (a masked store is slow on some CPUs: AMD's AVX2 VMASKMOVPS), the
 * LANES_N − MR past them overwritten by the next k's, and by the last spilling up to
 * LANES_N floats past the panel: the caller leaves room. Stored m × k, it is packed
 * row by row, dst[i · CPU_GEMM16_DEPTH + k]: each row widened as it is read, in order,
 * where a k-major panel would need the rows transposed. */
GEMM16_TARGET
static void LANES_FN(gemm16_pack_a)(const struct cpu_gemm16_operand *a, int64_t i0, int mr,
                                    int64_t kb, int64_t k_len, float *dst)
{
    const lanes_in all = lanes_inside(0, LANES_N);
    if (a->trans) {
        /* Whole vectors where the row holds them (a partial 16-bit load goes through
         * memory on AVX2); the lanes past MR are overwritten, or past the panel. */
        const lanes_in rows = mr == GEMM16_MR && i0 + LANES_N <= a->cols ? all
                                                                         : lanes_inside(0, mr);
        for (int64_t k = 0; k < k_len; k++)
            lanes_store_f32(dst + k * GEMM16_MR, all,
                            lanes_load(a->p, a->dtype, (kb + k) * a->ld + i0, rows));
        return;
    }
    /* k_len ≤ CPU_GEMM16_DEPTH, a multiple of LANES_N: whole stores stay in the row */
    for (int i = 0; i < GEMM16_MR; i++)
        for (int64_t k0 = 0; k0 < k_len; k0 += LANES_N)
            lanes_store_f32(dst + i * CPU_GEMM16_DEPTH + k0, all,
                            i < mr ? lanes_load(a->p, a->dtype, (i0 + i) * a->ld + kb + k0,
                                                lanes_inside(k0, k_len))
                                   : lanes_zero());
}

/* B's columns j0 .. j0 + nr, over k = kb .. kb + k_len, as a panel: dst[k · NR + j], zeros from column nr on. */
GEMM16_TARGET
static void LANES_FN(gemm16_pack_b)(const struct cpu_gemm16_operand *b, int64_t j0, int nr,
                                    int64_t kb, int64_t k_len, float *dst)
{
    const lanes_in all = lanes_inside(0, LANES_N);
    if (!b->trans) { /* stored k × n: a row of the panel is consecutive in memory */
        lanes_in in[GEMM16_NV];
        for (int h = 0; h < GEMM16_NV; h++)
            in[h] = GEMM16_INSIDE(h * LANES_N, nr);
        for (int64_t k = 0; k < k_len; k++)
            for (int h = 0; h < GEMM16_NV; h++)
                lanes_store_f32(dst + k * GEMM16_NR + h * LANES_N, all,
                                h * LANES_N < nr
                                    ? lanes_load(b->p, b->dtype, (kb + k) * b->ld + j0 + h * LANES_N, in[h])
                                    : lanes_zero());
        return;
    }
    /* stored n × k: each column of the panel is a row in memory; LANES_N of them,
     * LANES_N values of k at a time, transposed in registers */
    for (int64_t k0 = 0; k0 < k_len; k0 += LANES_N) {
        const lanes_in ks = lanes_inside(k0, k_len);
        const int kn = k_len - k0 < LANES_N ? (int)(k_len - k0) : LANES_N;
        for (int h = 0; h < GEMM16_NV; h++) {
            lanes_f32 r[LANES_N];
            for (int q = 0; q < LANES_N; q++) {
                const int j = h * LANES_N + q;
                r[q] = j < nr ? lanes_load(b->p, b->dtype, (j0 + j) * b->ld + kb + k0, ks)
                              : lanes_zero();
            }
            lanes_transpose(r);
            for (int q = 0; q < kn; q++)
                lanes_store_f32(dst + (k0 + q) * GEMM16_NR + h * LANES_N, all, r[q]);
        }
    }
}

/* The tile at C's row i0, column j0 (mr ≤ tile_rows ≤ MR rows and nr ≤ NR columns of it
 * are C's), over one block of k, computing tile_rows rows of chains. The chains start
 * from zero at the first block, else from the FP32 values `part` (MR × NR, its first
 * tile_rows rows) holds; after the last they are combined with C and stored, else kept
 * in `part`: an FP32 value stored and loaded again is the same value, so blocking k
 * changes nothing in the chain. Inlined into gemm16_tile with tile_rows a constant, so
 * that the loops over the rows unroll and the accumulators stay in registers. */
GEMM16_TARGET
static inline __attribute__((always_inline)) void
LANES_FN(tile_of_rows)(const struct cpu_gemm16_c *c, const float *ap, int a_by_rows,
                       const float *bp, int64_t k_len, int64_t i0, int64_t j0, int mr, int nr,
                       float *part, int first, int last, const int tile_rows)
{
    lanes_f32 acc[GEMM16_MR][GEMM16_NV];
    const lanes_in all = lanes_inside(0, LANES_N);
#pragma GCC unroll 16
    for (int i = 0; i < tile_rows; i++)
#pragma GCC unroll 4
        for (int h = 0; h < GEMM16_NV; h++)
            acc[i][h] = first ? lanes_zero()
                              : lanes_load_f32(part + i * GEMM16_NR + h * LANES_N, all);
    /* The chains, with A's element (i, k) at ap[A_AT]: one loop for each layout, so
     * that each reads A at offsets fixed when it is compiled. */
#define GEMM16_CHAINS(A_AT)                                                              \
    _Pragma("GCC unroll 4") for (int64_t k = 0; k < k_len; k++)                          \
    {                                                                                    \
        lanes_f32 y[GEMM16_NV];                                                          \
        _Pragma("GCC unroll 4") for (int h = 0; h < GEMM16_NV; h++)                      \
            y[h] = lanes_load_f32(bp + k * GEMM16_NR + h * LANES_N, all);                \
        _Pragma("GCC unroll 16") for (int i = 0; i < tile_rows; i++)                     \
        {                                                                                \
            const lanes_f32 x = lanes_set1(ap[A_AT]);                                    \
            _Pragma("GCC unroll 4") for (int h = 0; h < GEMM16_NV; h++)                  \
                acc[i][h] = lanes_fma(x, y[h], acc[i][h]);                               \
        }                                                                                \
    }
    if (a_by_rows)
        GEMM16_CHAINS(i * CPU_GEMM16_DEPTH + k)
    else
        GEMM16_CHAINS(k * GEMM16_MR + i)
#undef GEMM16_CHAINS
    /* Out through memory: indexing the accumulators by anything but constants would
     * keep them there through the loop above. */
    float out[GEMM16_MR * GEMM16_NR];
    float *to = last ? out : part;
#pragma GCC unroll 16
    for (int i = 0; i < tile_rows; i++)
#pragma GCC unroll 4
        for (int h = 0; h < GEMM16_NV; h++)
            lanes_store_f32(to + i * GEMM16_NR + h * LANES_N, all, acc[i][h]);
    if (!last)
        return;
    const lanes_f32 alpha = lanes_set1(c->alpha), beta = lanes_set1(c->beta);
    lanes_in in[GEMM16_NV];
    for (int h = 0; h < GEMM16_NV; h++)
        in[h] = GEMM16_INSIDE(h * LANES_N, nr);
    for (int i = 0; i < mr; i++) {
        const int64_t row = (i0 + i) * c->ld + j0;
        for (int h = 0; h < GEMM16_NV && h * LANES_N < nr; h++) {
            lanes_f32 v = lanes_mul(alpha, lanes_load_f32(out + i * GEMM16_NR + h * LANES_N, all));
            if (c->beta != 0.0f) /* beta = 0: C is not read, as in BLAS */
                v = lanes_add(v, lanes_mul(beta, lanes_load(c->p, c->dtype,
                                                            row + h * LANES_N, in[h])));
            lanes_store(c->p, c->dtype, row + h * LANES_N, in[h], v);
        }
    }
}

/* A tile of at most a third (or two thirds) of MR rows computes only that many: C's 256
 * rows are 21 tiles of 12 and one of 4 on AVX-512, where a whole 12-row tile would
 * compute 8 rows of padding. Every element is the same chain whichever tile computes
 * it. */
GEMM16_TARGET
static void LANES_FN(gemm16_tile)(const struct cpu_gemm16_c *c, const float *ap,
                                  int a_by_rows, const float *bp, int64_t k_len, int64_t i0,
                                  int64_t j0, int mr, int nr, float *part, int first,
                                  int last)
{
    if (mr > 2 * GEMM16_MR / 3)
        LANES_FN(tile_of_rows)(c, ap, a_by_rows, bp, k_len, i0, j0, mr, nr, part, first,
                               last, GEMM16_MR);
    else if (mr > GEMM16_MR / 3)
        LANES_FN(tile_of_rows)(c, ap, a_by_rows, bp, k_len, i0, j0, mr, nr, part, first,
                               last, 2 * GEMM16_MR / 3);
    else
        LANES_FN(tile_of_rows)(c, ap, a_by_rows, bp, k_len, i0, j0, mr, nr, part, first,
                               last, GEMM16_MR / 3);
}

/* Rows i0 .. i1 of C for k ≤ CPU_GEMM16_SHALLOW: each row's k values of A broadcast, B's
 * rows streamed past them, both widened before (A's k columns of m values and B's k rows
 * of n, once per batch entry; a few KiB for the toy's layers): no conversion of the
 * baseline ISA runs among these loops, where it would pay for the AVX-512 state it
 * finds. Each element is
 * the tile's chain: FMAs over k in order from zero, alpha·chain + beta·C, rounded once
 * into C, so that a product gives the same bits either way. The row's loop is compiled
 * once for each k and type of C (shallow_rows): with both fixed, the chain is unrolled
 * and the store's type chosen outside the loop, which is then a few instructions a
 * vector. */
GEMM16_TARGET
static inline __attribute__((always_inline)) lanes_f32
LANES_FN(shallow_one)(void *cp, enum gan_dtype dt, int64_t at, lanes_in in, const lanes_f32 *x,
                      int k, const float *bw, int64_t ldw, int64_t j, lanes_f32 alpha,
                      lanes_f32 beta, int add)
{
    const lanes_in all = lanes_inside(0, LANES_N);
    lanes_f32 acc = lanes_zero();
    for (int p = 0; p < k; p++)
        acc = lanes_fma(x[p], lanes_load_f32(bw + p * ldw + j, all), acc);
    lanes_f32 v = lanes_mul(alpha, acc);
    if (add) /* beta = 0: C is not read, as in BLAS */
        v = lanes_add(v, lanes_mul(beta, lanes_load(cp, dt, at, in)));
    return v;
}

GEMM16_TARGET
static inline __attribute__((always_inline)) void
LANES_FN(shallow_rows)(const struct cpu_gemm16_c *c, const float *aw, int64_t m,
                       const float *bw, int64_t ldw, int64_t n, const int k,
                       const enum gan_dtype dt, int64_t i0, int64_t i1)
{
    void *const cp = c->p;
    const int64_t ldc = c->ld;
    const int add = c->beta != 0.0f;
    const lanes_f32 alpha = lanes_set1(c->alpha), beta = lanes_set1(c->beta);
    const lanes_in all = lanes_inside(0, LANES_N), tail = lanes_inside(n / LANES_N * LANES_N, n);
    for (int64_t i = i0; i < i1; i++) {
        lanes_f32 x[CPU_GEMM16_SHALLOW];
        for (int p = 0; p < k; p++)
            x[p] = lanes_set1(aw[p * m + i]);
        const int64_t row = i * ldc;
        int64_t j = 0;
        for (; j + LANES_N <= n; j += LANES_N)
            lanes_store(cp, dt, row + j, all,
                        LANES_FN(shallow_one)(cp, dt, row + j, all, x, k, bw, ldw, j, alpha,
                                              beta, add));
        if (j < n)
            lanes_store(cp, dt, row + j, tail,
                        LANES_FN(shallow_one)(cp, dt, row + j, tail, x, k, bw, ldw, j, alpha,
                                              beta, add));
    }
}

/* shallow_rows for one k, each type of C its own loop */
GEMM16_TARGET
static inline __attribute__((always_inline)) void
LANES_FN(shallow_of_k)(const struct cpu_gemm16_c *c, const float *aw, int64_t m,
                       const float *bw, int64_t ldw, int64_t n, const int k, int64_t i0,
                       int64_t i1)
{
    if (c->dtype == GAN_BF16)
        LANES_FN(shallow_rows)(c, aw, m, bw, ldw, n, k, GAN_BF16, i0, i1);
    else if (c->dtype == GAN_F16)
        LANES_FN(shallow_rows)(c, aw, m, bw, ldw, n, k, GAN_F16, i0, i1);
    else
        LANES_FN(shallow_rows)(c, aw, m, bw, ldw, n, k, GAN_F32, i0, i1);
}

/* k is 1 to CPU_GEMM16_SHALLOW (4), each a loop of its own */
GEMM16_TARGET
static void LANES_FN(gemm16_shallow)(const struct cpu_gemm16_c *c, const float *aw,
                                     int64_t m, const float *bw, int64_t ldw, int64_t n,
                                     int64_t k, int64_t i0, int64_t i1)
{
    switch (k) {
    case 1: LANES_FN(shallow_of_k)(c, aw, m, bw, ldw, n, 1, i0, i1); break;
    case 2: LANES_FN(shallow_of_k)(c, aw, m, bw, ldw, n, 2, i0, i1); break;
    case 3: LANES_FN(shallow_of_k)(c, aw, m, bw, ldw, n, 3, i0, i1); break;
    default: LANES_FN(shallow_of_k)(c, aw, m, bw, ldw, n, 4, i0, i1); break;
    }
}

const struct cpu_gemm16_level LANES_FN(cpu_gemm16_level) = {
    GEMM16_MR, GEMM16_NR, LANES_N,
    LANES_FN(gemm16_pack_a), LANES_FN(gemm16_pack_b), LANES_FN(gemm16_tile),
    LANES_FN(gemm16_shallow),
};
