/* SPDX-License-Identifier: MIT */
/* philox.h — the Philox4x32 counter-based generator (Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC'11), as static inline functions. */
#ifndef GANCTL_PHILOX_H
#define GANCTL_PHILOX_H

/* Header-only, so that a backend, the core's host-side samplers and a test all draw
 * the very stream that include/ganctl/backend.h defines, without linking anything. */
#include <stdint.h>
#include <math.h>

/* Under nvcc the functions below are compiled for the host and the device alike, so
 * that a CUDA kernel draws the very words and values the host does; a C compiler
 * sees plain static inline functions. */
#ifdef __CUDACC__
#define GAN_PHILOX_HOSTDEV __host__ __device__
#else
#define GAN_PHILOX_HOSTDEV
#endif

/* The round multipliers and the Weyl sequence that schedules the key (the golden
 * ratio and sqrt(3) − 1 as 32-bit fractions), from the paper. */
#define GAN_PHILOX_M0 0xD2511F53u
#define GAN_PHILOX_M1 0xCD9E8D57u
#define GAN_PHILOX_W0 0x9E3779B9u
#define GAN_PHILOX_W1 0xBB67AE85u

/* One Philox round: two 32×32→64 multiplies whose high halves are mixed with the
 * other two words and the round key; the words also trade places (a fixed
 * permutation), so that every word feeds a multiply within two rounds. */
static inline GAN_PHILOX_HOSTDEV void gan_philox4x32_round(uint32_t ctr[4],
                                                        const uint32_t key[2])
{
    uint64_t p0 = (uint64_t)GAN_PHILOX_M0 * ctr[0];
    uint64_t p1 = (uint64_t)GAN_PHILOX_M1 * ctr[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t c1 = ctr[1], c3 = ctr[3];
    ctr[0] = hi1 ^ c1 ^ key[0];
    ctr[1] = lo1;
    ctr[2] = hi0 ^ c3 ^ key[1];
    ctr[3] = lo0;
}

/* Philox4x32 with `rounds` rounds: the counter `in` encrypted under `key` into `out`.
 * The key is bumped between rounds (rounds − 1 times), never before the first.
 * Only 10 rounds are used for numbers; other counts exist for the known-answer
 * vectors, which also cover 7 rounds and so pin the key schedule down. */
static inline GAN_PHILOX_HOSTDEV void gan_philox4x32_r(unsigned rounds, const uint32_t in[4],
                                                    const uint32_t key_in[2],
                                                    uint32_t out[4])
{
    uint32_t key[2] = { key_in[0], key_in[1] };
    out[0] = in[0];
    out[1] = in[1];
    out[2] = in[2];
    out[3] = in[3];
    for (unsigned r = 0; r < rounds; r++) {
        if (r > 0) {
            key[0] += GAN_PHILOX_W0;
            key[1] += GAN_PHILOX_W1;
        }
        gan_philox4x32_round(out, key);
    }
}

/* Philox4x32-10, the variant every ganctl backend uses. */
static inline GAN_PHILOX_HOSTDEV void gan_philox4x32_10(const uint32_t in[4],
                                                     const uint32_t key[2], uint32_t out[4])
{
    gan_philox4x32_r(10, in, key, out);
}

/* Block `block` of the stream for `seed`, as defined in include/ganctl/backend.h:
 * key (seed low, seed high), counter (block low, block high, 0, 0). */
static inline GAN_PHILOX_HOSTDEV void gan_philox_block(uint64_t seed, uint64_t block,
                                                    uint32_t out[4])
{
    const uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    const uint32_t ctr[4] = { (uint32_t)block, (uint32_t)(block >> 32), 0u, 0u };
    gan_philox4x32_10(ctr, key, out);
}

/* The uniform value of one 32-bit word, exactly: its top 24 bits centred in their
 * interval of width 2^-24, so it lies in [2^-25, 1 − 2^-25] and never at 0 or 1. */
static inline GAN_PHILOX_HOSTDEV double gan_philox_word_uniform(uint32_t w)
{
    return ((double)(w >> 8) + 0.5) * 0x1p-24;
}

/* Two standard normals from two words by Box–Muller in double precision:
 * r = sqrt(−2 ln u1), z0 = r cos(2π u2), z1 = r sin(2π u2). u1 > 0, so the log is
 * finite. */
static inline GAN_PHILOX_HOSTDEV void gan_philox_word_normals(uint32_t w0, uint32_t w1,
                                                           double z[2])
{
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = gan_philox_word_uniform(w0), u2 = gan_philox_word_uniform(w1);
    double r = sqrt(-2.0 * log(u1));
    z[0] = r * cos(two_pi * u2);
    z[1] = r * sin(two_pi * u2);
}

#endif
