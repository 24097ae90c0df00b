/* SPDX-License-Identifier: MIT */
/* channel_blocks_lanes.h — channel_blocks.c's reorders on the lanes of one vector level
 * (the lane interface included before this file), for blocks of a multiple of LANES_N
 * channels. Instantiated by channel_blocks_avx512.c and channel_blocks_avx2.c.
 *
 * A tile is LANES_N channels by LANES_N pixels: LANES_N rows loaded from one layout,
 * widened to FP32 lanes, transposed in registers and stored to the other, rounded where
 * it is narrower (the lanes' conversions, convert.h's bits), so a 16-bit tensor never goes
 * through a conversion pass of its own. */

#ifdef LANES_N

/* lanes_le(v, v) holds in every lane but a NaN's. */
#define LANES_ALL ((1u << LANES_N) - 1u)

/* The loops over a tile's LANES_N vectors are unrolled, with the pixels past the run
 * (m of them are inside) left out by a condition on a constant index, so that the tile
 * stays in registers; and each panel loop is compiled once per pair of types (the
 * functions are inlined into a switch on them), so no load or store tests a type. */
#define CHANNEL_BLOCKS_INLINE LANES_TARGET __attribute__((always_inline)) static inline

/* Whether a tile of LANES_N vectors holds a NaN. */
CHANNEL_BLOCKS_INLINE
int LANES_FN(tile_has_nan)(const lanes_f32 *r)
{
    unsigned numbers = LANES_ALL;
#pragma GCC unroll 16
    for (int k = 0; k < LANES_N; k++)
        numbers &= lanes_bits(lanes_le(r[k], r[k]));
    return numbers != LANES_ALL;
}

/* A row of the tile to element i of p, of type dt: rounded once from FP32, or, from BF16
 * to BF16, its bits as they were (the widening is exact, and so is taking the upper
 * halves back, where rounding would quiet a signalling NaN). */
#define STORE_ROW(p, dt, same, i, in, v)                                                     \
    do {                                                                                    \
        if (same)                                                                           \
            lanes_store_bf16_bits((p), (i), (in), (v));                                     \
        else                                                                                \
            lanes_store((p), (dt), (i), (in), (v));                                         \
    } while (0)

CHANNEL_BLOCKS_INLINE
void LANES_FN(panels_to_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                enum gan_dtype pt, void *blocked, enum gan_dtype bt,
                                int64_t first, int64_t count)
{
    const int64_t hw = b->hw, block = b->block, panel = block * hw;
    const size_t ps = gan_dtype_size(pt), bs = gan_dtype_size(bt);
    const lanes_in all = lanes_inside(0, LANES_N);
    for (int64_t q = first; q < first + count; q++) {
        const int64_t base = q * panel;
        for (int64_t s = 0; s < block; s += LANES_N)
            for (int64_t p0 = 0; p0 < hw; p0 += LANES_N) {
                const lanes_in live = lanes_inside(p0, hw);
                const int64_t m = hw - p0;
                const void *in = (const unsigned char *)plain + (size_t)(base + s * hw + p0) * ps;
                lanes_f32 r[LANES_N];
#pragma GCC unroll 16
                for (int k = 0; k < LANES_N; k++)
                    r[k] = lanes_load(in, pt, k * hw, live);
                /* The F16 lanes' widening (VCVTPH2PS) quiets a signalling NaN that
                 * convert.h keeps: a tile holding a NaN is moved one element at a time. */
                if (pt == GAN_F16 && LANES_FN(tile_has_nan)(r)) {
                    cpu_channel_tile_to_blocks(b, plain, pt, blocked, base, s, LANES_N, p0,
                                               m < LANES_N ? m : LANES_N);
                    continue;
                }
                lanes_transpose(r);
                void *out = (unsigned char *)blocked + (size_t)(base + p0 * block + s) * bs;
#pragma GCC unroll 16
                for (int j = 0; j < LANES_N; j++)
                    if (j < m)
                        STORE_ROW(out, bt, bt == GAN_BF16, j * block, all, r[j]);
            }
    }
}

CHANNEL_BLOCKS_INLINE
void LANES_FN(panels_from_blocks)(const struct cpu_channel_blocks *b, const void *blocked,
                                  enum gan_dtype bt, void *plain, enum gan_dtype pt,
                                  int64_t first, int64_t count)
{
    const int64_t hw = b->hw, block = b->block, panel = block * hw;
    const size_t ps = gan_dtype_size(pt), bs = gan_dtype_size(bt);
    const lanes_in all = lanes_inside(0, LANES_N);
    for (int64_t q = first; q < first + count; q++) {
        const int64_t base = q * panel;
        for (int64_t s = 0; s < block; s += LANES_N)
            for (int64_t p0 = 0; p0 < hw; p0 += LANES_N) {
                const lanes_in live = lanes_inside(p0, hw);
                const int64_t m = hw - p0;
                const void *in =
                    (const unsigned char *)blocked + (size_t)(base + p0 * block + s) * bs;
                lanes_f32 r[LANES_N];
#pragma GCC unroll 16
                for (int j = 0; j < LANES_N; j++)
                    r[j] = j < m ? lanes_load(in, bt, j * block, all) : lanes_zero();
                lanes_transpose(r);
                void *out = (unsigned char *)plain + (size_t)(base + s * hw + p0) * ps;
#pragma GCC unroll 16
                for (int k = 0; k < LANES_N; k++)
                    STORE_ROW(out, pt, bt == GAN_BF16, k * hw, live, r[k]);
            }
    }
}

/* The pairs of types the backend moves: FP32 blocks of an FP32, F16 or BF16 tensor, and
 * BF16 blocks of a BF16 one. */
LANES_TARGET
void LANES_FN(cpu_vec_to_channel_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                         enum gan_dtype pt, void *blocked, int64_t first,
                                         int64_t count)
{
    if (b->blocks == GAN_BF16)
        LANES_FN(panels_to_blocks)(b, plain, GAN_BF16, blocked, GAN_BF16, first, count);
    else if (pt == GAN_F16)
        LANES_FN(panels_to_blocks)(b, plain, GAN_F16, blocked, GAN_F32, first, count);
    else if (pt == GAN_BF16)
        LANES_FN(panels_to_blocks)(b, plain, GAN_BF16, blocked, GAN_F32, first, count);
    else
        LANES_FN(panels_to_blocks)(b, plain, GAN_F32, blocked, GAN_F32, first, count);
}

LANES_TARGET
void LANES_FN(cpu_vec_from_channel_blocks)(const struct cpu_channel_blocks *b,
                                           const void *blocked, void *plain, enum gan_dtype pt,
                                           int64_t first, int64_t count)
{
    if (b->blocks == GAN_BF16)
        LANES_FN(panels_from_blocks)(b, blocked, GAN_BF16, plain, GAN_BF16, first, count);
    else if (pt == GAN_F16)
        LANES_FN(panels_from_blocks)(b, blocked, GAN_F32, plain, GAN_F16, first, count);
    else if (pt == GAN_BF16)
        LANES_FN(panels_from_blocks)(b, blocked, GAN_F32, plain, GAN_BF16, first, count);
    else
        LANES_FN(panels_from_blocks)(b, blocked, GAN_F32, plain, GAN_F32, first, count);
}

#undef STORE_ROW
#undef CHANNEL_BLOCKS_INLINE
#undef LANES_ALL

#else /* not an x86 CPU: the level is never chosen */

void LANES_FN(cpu_vec_to_channel_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                         enum gan_dtype pt, void *blocked, int64_t first,
                                         int64_t count)
{
    (void)b, (void)plain, (void)pt, (void)blocked, (void)first, (void)count;
}

void LANES_FN(cpu_vec_from_channel_blocks)(const struct cpu_channel_blocks *b,
                                           const void *blocked, void *plain, enum gan_dtype pt,
                                           int64_t first, int64_t count)
{
    (void)b, (void)blocked, (void)plain, (void)pt, (void)first, (void)count;
}
#endif
