/* SPDX-License-Identifier: MIT */
/* fp8_avx512.c — the table that widens a per-tensor FP8 operand into BF16 for
 * gemm_fp8's BF16 route, written for AVX-512: fp8_passes.c calls it at that level in
 * place of its own loop, which the compiler can only make a gather of. */
#include "config.h"

#include <stdint.h>

#include "fp8_products.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include "avx512_lanes.h"

/* y[i] = table[q[i] & 0x7f] with q[i]'s sign moved to bit 15, 32 elements at a time:
 * the table's 128 words are four registers, and two VPERMI2W lookups of 64 entries,
 * chosen by bit 6, do what a gather would. */
AVX512_LANES_TARGET
void cpu_fp8_table_bf16_avx512(const uint8_t *q, const uint16_t *table, uint16_t *y, size_t n)
{
    const __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 32);
    const __m512i t2 = _mm512_loadu_si512(table + 64), t3 = _mm512_loadu_si512(table + 96);
    const __m512i bit6 = _mm512_set1_epi16(0x40), sign = _mm512_set1_epi16(0x80);
    for (size_t i = 0; i < n; i += 32) {
        const __mmask32 lanes = n - i >= 32 ? (__mmask32)0xffffffffu
                                            : (__mmask32)((1u << (n - i)) - 1u);
        const __m512i w = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(lanes, q + i));
        const __m512i low = _mm512_permutex2var_epi16(t0, w, t1);
        const __m512i high = _mm512_permutex2var_epi16(t2, w, t3);
        __m512i v = _mm512_mask_blend_epi16(_mm512_test_epi16_mask(w, bit6), low, high);
        v = _mm512_or_si512(v, _mm512_slli_epi16(_mm512_and_si512(w, sign), 8));
        _mm512_mask_storeu_epi16(y + i, lanes, v);
    }
}

#else /* no AVX-512 on this architecture: the level is never chosen */

void cpu_fp8_table_bf16_avx512(const uint8_t *q, const uint16_t *table, uint16_t *y, size_t n)
{
    (void)q, (void)table, (void)y, (void)n;
}
#endif
