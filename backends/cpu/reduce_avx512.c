/* SPDX-License-Identifier: MIT */
/* reduce_avx512.c — the sums of reduce.c's many-outputs walk (a bias gradient summed over
 * the batch, say) on AVX-512: each reduced row of up to 64 neighbouring outputs is loaded
 * sixteen lanes at a time, widened in registers when 16-bit, and added to the block's
 * partial sums. Each lane adds the same terms in the same order as reduce.c's scalar
 * loop, so the results are the same bits (check_reduce compares the two levels). */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include "avx512_lanes.h"

AVX512_LANES_TARGET
void cpu_vec_lanes_sum(int squares, float *acc, const void *x, enum gan_dtype dtype,
                       int64_t off, int w)
{
    for (int i = 0; i < w; i += 16) {
        __mmask16 m = avx512_lanes(i, w);
        __m512 v = avx512_load(x, dtype, off + i, m);
        __m512 a = _mm512_maskz_loadu_ps(m, acc + i);
        /* acc += v or acc += v·v, as the scalar loop writes it; no FMA: it would round once
         * where the scalar loop rounds twice */
        a = _mm512_add_ps(a, squares ? _mm512_mul_ps(v, v) : v);
        _mm512_mask_storeu_ps(acc + i, m, a);
    }
}

#else

void cpu_vec_lanes_sum(int squares, float *acc, const void *x, enum gan_dtype dtype,
                       int64_t off, int w)
{
    (void)squares, (void)acc, (void)x, (void)dtype, (void)off, (void)w;
}
#endif
