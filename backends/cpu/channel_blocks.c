/* SPDX-License-Identifier: MIT */
/* channel_blocks.c — a 4-d tensor between the plain layout of the backend interface
 * (NCHW: each channel a row of h·w pixels) and the channel blocks oneDNN's convolutions
 * choose on x86 (nChw8c under AVX2, nChw16c under AVX-512: for each image and block of
 * channels, each pixel a row of the block's channels), done by the backend rather than by
 * oneDNN's reorder primitives, for two reasons.
 *
 * - Speed. oneDNN 2.6's reorders of the DCGAN's activations were about 10 % of an FP32
 *   step on a Zen 4 core. A tile transposed in registers moves FP32 activations about as
 *   fast on AVX-512 (0.95 to 1.44 times) and 1.1 to 1.7 times as fast on AVX2
 *   (bench/reorders).
 * - 16-bit storage. A staged FP16 (or BF16, where oneDNN's BF16 kernels are not taken)
 *   convolution runs on FP32 blocks. oneDNN's reorders that widen and re-lay out at once were slower than
 *   two passes (a reference loop under AVX2), so the 16-bit tensor was widened to plain
 *   FP32 in a pass of its own and then reordered; here it is widened as it is read, and
 *   the result rounded once as it is written back: 0.95 to 2.8 times as fast, most
 *   of them above 1.4.
 * BF16 convolutions on oneDNN's BF16 kernels take BF16 blocks of a BF16 tensor,
 * which are moved too (bench/README.md has the figures).
 *
 * The bits are the same as oneDNN's reorders' (and, staged, the two passes'): values of
 * one type are copied, NaN payloads and all; a 16-bit value is widened exactly and an FP32
 * one rounded once to nearest even, by convert.h's rules. A panel, one image's `block`
 * channels, is block·hw elements in either layout and panel q starts at element q·block·hw
 * in both, so a range of panels is a range of both tensors, and the threads split the
 * panels. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"
#include "convert.h"

/* One element from the plain tensor to the blocks or back: its bits copied where both
 * sides have one type, else widened exactly or rounded once (convert.h). */
static void move_element(const void *from, enum gan_dtype ft, int64_t i, void *to,
                         enum gan_dtype tt, int64_t j)
{
    if (ft == tt)
        gan_store_bits(to, tt, j, gan_load_bits(from, ft, i));
    else
        cpu_store(to, tt, j, cpu_load(from, ft, i));
}

void cpu_channel_tile_to_blocks(const struct cpu_channel_blocks *b, const void *plain,
                                enum gan_dtype pt, void *blocked, int64_t base, int64_t s,
                                int64_t rows, int64_t p0, int64_t m)
{
    for (int64_t k = 0; k < rows; k++)
        for (int64_t j = 0; j < m; j++)
            move_element(plain, pt, base + (s + k) * b->hw + p0 + j, blocked, b->blocks,
                         base + (p0 + j) * b->block + s + k);
}

void cpu_channel_tile_from_blocks(const struct cpu_channel_blocks *b, const void *blocked,
                                  void *plain, enum gan_dtype pt, int64_t base, int64_t s,
                                  int64_t rows, int64_t p0, int64_t m)
{
    for (int64_t k = 0; k < rows; k++)
        for (int64_t j = 0; j < m; j++)
            move_element(blocked, b->blocks, base + (p0 + j) * b->block + s + k, plain, pt,
                         base + (s + k) * b->hw + p0 + j);
}

/* The lanes that take blocks of `block` channels at level isa: a multiple of them
 * (nChw16c at the AVX2 level is two tiles across, nChw8c at the AVX-512 level takes the
 * AVX2 lanes); 0, the portable loop, where none do. */
static int vector_level(enum cpu_isa isa, int64_t block)
{
    if (isa == CPU_ISA_AVX512 && block % 16 == 0)
        return 16;
    if (isa != CPU_ISA_PORTABLE && block % 8 == 0)
        return 8;
    return 0;
}

void cpu_to_channel_blocks(enum cpu_isa isa, const struct cpu_channel_blocks *b,
                           const void *plain, enum gan_dtype pt, void *blocked,
                           int64_t first, int64_t count)
{
    switch (vector_level(isa, b->block)) {
    case 16: cpu_vec_to_channel_blocks_avx512(b, plain, pt, blocked, first, count); break;
    case 8: cpu_vec_to_channel_blocks_avx2(b, plain, pt, blocked, first, count); break;
    default:
        /* each panel as one tile: channel by channel, each row of pixels in order */
        for (int64_t q = first; q < first + count; q++)
            cpu_channel_tile_to_blocks(b, plain, pt, blocked, q * b->block * b->hw, 0,
                                       b->block, 0, b->hw);
        break;
    }
}

void cpu_from_channel_blocks(enum cpu_isa isa, const struct cpu_channel_blocks *b,
                             const void *blocked, void *plain, enum gan_dtype pt,
                             int64_t first, int64_t count)
{
    switch (vector_level(isa, b->block)) {
    case 16: cpu_vec_from_channel_blocks_avx512(b, blocked, plain, pt, first, count); break;
    case 8: cpu_vec_from_channel_blocks_avx2(b, blocked, plain, pt, first, count); break;
    default:
        for (int64_t q = first; q < first + count; q++)
            cpu_channel_tile_from_blocks(b, blocked, plain, pt, q * b->block * b->hw, 0,
                                         b->block, 0, b->hw);
        break;
    }
}

/* Both directions split across the instance's threads by panels. */
struct blocks_job {
    enum cpu_isa isa;
    const struct cpu_channel_blocks *b;
    int to_blocks;
    const void *from;
    void *to;
    enum gan_dtype pt;
};

static void blocks_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct blocks_job *j = arg;
    if (j->to_blocks)
        cpu_to_channel_blocks(j->isa, j->b, j->from, j->pt, j->to, begin, end - begin);
    else
        cpu_from_channel_blocks(j->isa, j->b, j->from, j->to, j->pt, begin, end - begin);
}

static void run_threads(gan_backend *be, struct blocks_job *j)
{
    /* each element is read once and written once */
    const int parts = cpu_parallel_parts(be, j->b->panels, 1, j->b->block * j->b->hw);
    cpu_parallel_for(be, parts, j->b->panels, 1, blocks_range, j);
}

void cpu_to_channel_blocks_threads(gan_backend *be, const struct cpu_channel_blocks *b,
                                   const void *plain, enum gan_dtype pt, void *blocked)
{
    struct blocks_job j = { be->isa, b, 1, plain, blocked, pt };
    run_threads(be, &j);
}

void cpu_from_channel_blocks_threads(gan_backend *be, const struct cpu_channel_blocks *b,
                                     const void *blocked, void *plain, enum gan_dtype pt)
{
    /* the job's `from` is read only */
    struct blocks_job j = { be->isa, b, 0, blocked, plain, pt };
    run_threads(be, &j);
}
