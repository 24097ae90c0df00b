/* SPDX-License-Identifier: MIT */
/* channel_blocks_lanes.h — channel_blocks.c's reorders on the lanes of one vector level
 * (the lane interface included before this file), for blocks of a multiple of LANES_N
 * channels. Instantiated by channel_blocks_avx512.c and channel_blocks_avx2.c.
 *
 * A tile is LANES_N channels by LANES_N pixels: LANES_N rows loaded from one layout,
 * transposed in registers, stored to the other. The plain side is widened as it is loaded
 * or rounded once as it is stored (the lanes' conversions, convert.h's bits), so a 16-bit
 * tensor never goes through a conversion pass of its own. */

#ifdef LANES_N

/* lanes_le(v, v) holds in every lane but a NaN's. */
#define LANES_ALL ((1u << LANES_N) - 1u)

/* The loops over a tile's LANES_N vectors are unrolled, with the pixels past the run
 * (m of them are inside) left out by a condition on a constant index, so that the tile
 * stays in registers; and each panel loop is compiled once per plain type (the
 * functions are inlined into a switch on it), so no load or store tests the type. */
#define CHANNEL_BLOCKS_INLINE LANES_TARGET __attribute__((always_inline)) static inline

CHANNEL_BLOCKS_INLINE
void LANES_FN(panels_to_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                enum gan_dtype pt, float *blocked, int64_t first,
                                int64_t count)
{
    const int64_t hw = b->hw, block = b->block, panel = block * hw;
    const lanes_in all = lanes_inside(0, LANES_N);
    for (int64_t q = first; q < first + count; q++) {
        const int64_t base = q * panel;
        for (int64_t s = 0; s < block; s += LANES_N)
            for (int64_t p0 = 0; p0 < hw; p0 += LANES_N) {
                const lanes_in live = lanes_inside(p0, hw);
                const int64_t m = hw - p0;
                const void *row = (const unsigned char *)plain +
                                  (size_t)(base + s * hw + p0) * gan_dtype_size(pt);
                lanes_f32 r[LANES_N];
#pragma GCC unroll 16
                for (int k = 0; k < LANES_N; k++)
                    r[k] = lanes_load(row, pt, k * hw, live);
                /* The F16 lanes quiet a signalling NaN that convert.h keeps: a tile
                 * holding a NaN is widened one element at a time. */
                if (pt == GAN_F16) {
                    unsigned numbers = LANES_ALL;
#pragma GCC unroll 16
                    for (int k = 0; k < LANES_N; k++)
                        numbers &= lanes_bits(lanes_le(r[k], r[k]));
                    if (numbers != LANES_ALL) {
                        cpu_channel_tile_to_blocks(b, plain, pt, blocked, base, s, LANES_N, p0,
                                                   m < LANES_N ? m : LANES_N);
                        continue;
                    }
                }
                lanes_transpose(r);
                float *out = blocked + base + p0 * block + s;
#pragma GCC unroll 16
                for (int j = 0; j < LANES_N; j++)
                    if (j < m)
                        lanes_store_f32(out + j * block, all, r[j]);
            }
    }
}

CHANNEL_BLOCKS_INLINE
void LANES_FN(panels_from_blocks)(const struct cpu_channel_blocks *b, const float *blocked,
                                  void *plain, enum gan_dtype pt, int64_t first, int64_t count)
{
    const int64_t hw = b->hw, block = b->block, panel = block * hw;
    const lanes_in all = lanes_inside(0, LANES_N);
    for (int64_t q = first; q < first + count; q++) {
        const int64_t base = q * panel;
        for (int64_t s = 0; s < block; s += LANES_N)
            for (int64_t p0 = 0; p0 < hw; p0 += LANES_N) {
                const lanes_in live = lanes_inside(p0, hw);
                const int64_t m = hw - p0;
                const float *in = blocked + base + p0 * block + s;
                lanes_f32 r[LANES_N];
#pragma GCC unroll 16
                for (int j = 0; j < LANES_N; j++)
                    r[j] = j < m ? lanes_load_f32(in + j * block, all) : lanes_zero();
                lanes_transpose(r);
                void *row = (unsigned char *)plain + (size_t)(base + s * hw + p0) * gan_dtype_size(pt);
#pragma GCC unroll 16
                for (int k = 0; k < LANES_N; k++)
                    lanes_store(row, pt, k * hw, live, r[k]);
            }
    }
}

LANES_TARGET
void LANES_FN(cpu_vec_to_channel_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                         enum gan_dtype pt, float *blocked, int64_t first,
                                         int64_t count)
{
    switch (pt) {
    case GAN_F16: LANES_FN(panels_to_blocks)(b, plain, GAN_F16, blocked, first, count); break;
    case GAN_BF16: LANES_FN(panels_to_blocks)(b, plain, GAN_BF16, blocked, first, count); break;
    default: LANES_FN(panels_to_blocks)(b, plain, GAN_F32, blocked, first, count); break;
    }
}

LANES_TARGET
void LANES_FN(cpu_vec_from_channel_blocks)(const struct cpu_channel_blocks *b,
                                           const float *blocked, void *plain, enum gan_dtype pt,
                                           int64_t first, int64_t count)
{
    switch (pt) {
    case GAN_F16: LANES_FN(panels_from_blocks)(b, blocked, plain, GAN_F16, first, count); break;
    case GAN_BF16: LANES_FN(panels_from_blocks)(b, blocked, plain, GAN_BF16, first, count); break;
    default: LANES_FN(panels_from_blocks)(b, blocked, plain, GAN_F32, first, count); break;
    }
}

#undef CHANNEL_BLOCKS_INLINE
#undef LANES_ALL

#else /* not an x86 CPU: the level is never chosen */

void LANES_FN(cpu_vec_to_channel_blocks)(const struct cpu_channel_blocks *b, const void *plain,
                                         enum gan_dtype pt, float *blocked, int64_t first,
                                         int64_t count)
{
    (void)b, (void)plain, (void)pt, (void)blocked, (void)first, (void)count;
}

void LANES_FN(cpu_vec_from_channel_blocks)(const struct cpu_channel_blocks *b,
                                           const float *blocked, void *plain, enum gan_dtype pt,
                                           int64_t first, int64_t count)
{
    (void)b, (void)blocked, (void)plain, (void)pt, (void)first, (void)count;
}
#endif
