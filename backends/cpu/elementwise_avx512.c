/* SPDX-License-Identifier: MIT */
/* elementwise_avx512.c — the element-wise kernels on runs where every operand is
 * contiguous (or one value broadcast along the run), sixteen FP32 lanes at a time.
 *
 * A 16-bit operand is widened in registers, the op is computed in FP32 lanes and the
 * result is rounded once as it is stored, so no run is staged through memory and
 * converted in a separate pass. Each op is the same IEEE operation, in the same operand
 * order, as elementwise.c's scalar loop, so the results are the same bits (check_
 * elementwise compares the two levels on special values); the ops whose scalar form is a
 * libm call (TANH, SIGMOID, EXP, LOG, and MAX, MIN, whose fmaxf/fminf treat a signalling
 * NaN apart) are left to the scalar loops. */
#include "config.h"

#include <stdint.h>

#include "cpu_backend.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include "avx512_lanes.h"

int cpu_vec_unary_has(enum gan_unary_op op)
{
    switch (op) {
    case GAN_UNARY_COPY: case GAN_UNARY_NEG: case GAN_UNARY_SCALE:
    case GAN_UNARY_ADD_SCALAR: case GAN_UNARY_RELU: case GAN_UNARY_LEAKY_RELU:
    case GAN_UNARY_STEP: case GAN_UNARY_SQUARE: case GAN_UNARY_SQRT: case GAN_UNARY_RSQRT:
    case GAN_UNARY_RECIPROCAL: case GAN_UNARY_ABS: case GAN_UNARY_SIGN: case GAN_UNARY_FILL:
        return 1;
    default:
        return 0;
    }
}

int cpu_vec_binary_has(enum gan_binary_op op)
{
    return op == GAN_BINARY_ADD || op == GAN_BINARY_SUB || op == GAN_BINARY_MUL ||
           op == GAN_BINARY_DIV || op == GAN_BINARY_GREATER || op == GAN_BINARY_MASK_POSITIVE;
}

AVX512_LANES_TARGET
static inline __m512 vec_load(const struct cpu_vec_in *in, int64_t i, __mmask16 m)
{
    return in->base ? avx512_load(in->base, in->dtype, in->off + i, m)
                    : _mm512_set1_ps(in->value);
}

/* Bit operations on float lanes through the integer unit (AVX-512 F has no float
 * and/xor; DQ does, and is not required). */
AVX512_LANES_TARGET
static inline __m512 bits_xor(__m512 v, int32_t mask)
{
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), _mm512_set1_epi32(mask)));
}

AVX512_LANES_TARGET
static inline __m512 bits_and(__m512 v, int32_t mask)
{
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(mask)));
}

/* One loop per op, so that the op is chosen once per run rather than once per block. */
#define UNARY_LOOP(EXPR)                                                  \
    for (int64_t i = 0; i < n; i += 16) {                                 \
        __mmask16 m = avx512_lanes(i, n);                                        \
        __m512 v = vec_load(x, i, m);                                     \
        avx512_store(y, yt, yoff + i, m, (EXPR));                         \
    }                                                                     \
    break

AVX512_LANES_TARGET
void cpu_vec_unary(enum gan_unary_op op, float alpha, const struct cpu_vec_in *x, void *y,
                   enum gan_dtype yt, int64_t yoff, int64_t n)
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    const __m512 va = _mm512_set1_ps(alpha);
    switch (op) {
    case GAN_UNARY_COPY: UNARY_LOOP(v);
    case GAN_UNARY_NEG: UNARY_LOOP(bits_xor(v, INT32_MIN));
    case GAN_UNARY_SCALE: UNARY_LOOP(_mm512_mul_ps(va, v));
    case GAN_UNARY_ADD_SCALAR: UNARY_LOOP(_mm512_add_ps(v, va));
    /* x <= 0 ? +0 : x; a NaN compares false and stays */
    case GAN_UNARY_RELU:
        UNARY_LOOP(_mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_LE_OQ), v, zero));
    case GAN_UNARY_LEAKY_RELU:
        UNARY_LOOP(_mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ),
                                        _mm512_mul_ps(va, v), v));
    case GAN_UNARY_STEP:
        UNARY_LOOP(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), one));
    case GAN_UNARY_SQUARE: UNARY_LOOP(_mm512_mul_ps(v, v));
    case GAN_UNARY_SQRT: UNARY_LOOP(_mm512_sqrt_ps(v));
    case GAN_UNARY_RSQRT: UNARY_LOOP(_mm512_div_ps(one, _mm512_sqrt_ps(v)));
    case GAN_UNARY_RECIPROCAL: UNARY_LOOP(_mm512_div_ps(one, v));
    case GAN_UNARY_ABS: UNARY_LOOP(bits_and(v, INT32_MAX));
    /* (x > 0) − (x < 0): +0 for ±0 and NaN */
    case GAN_UNARY_SIGN:
        UNARY_LOOP(_mm512_mask_mov_ps(
            _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), one),
            _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), _mm512_set1_ps(-1.0f)));
    case GAN_UNARY_FILL:
        for (int64_t i = 0; i < n; i += 16)
            avx512_store(y, yt, yoff + i, avx512_lanes(i, n), va);
        break;
    default:
        break;
    }
}

#define BINARY_LOOP(EXPR)                                                 \
    for (int64_t i = 0; i < n; i += 16) {                                 \
        __mmask16 m = avx512_lanes(i, n);                                        \
        __m512 va = vec_load(a, i, m), vb = vec_load(b, i, m);            \
        avx512_store(y, yt, yoff + i, m, (EXPR));                         \
    }                                                                     \
    break

/* The 1 of GREATER and MASK_POSITIVE, read through a volatile once per call, as the
 * portable loop reads its own: with a constant 1 a compiler may fold MASK_POSITIVE's
 * multiply into a select where the mask holds (clang does, assuming no signalling NaN),
 * and a signalling NaN in a would then pass unquieted. */
static volatile float vec_one = 1.0f;

AVX512_LANES_TARGET
void cpu_vec_binary(enum gan_binary_op op, const struct cpu_vec_in *a,
                    const struct cpu_vec_in *b, void *y, enum gan_dtype yt, int64_t yoff,
                    int64_t n)
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(vec_one);
    switch (op) {
    case GAN_BINARY_ADD: BINARY_LOOP(_mm512_add_ps(va, vb));
    case GAN_BINARY_SUB: BINARY_LOOP(_mm512_sub_ps(va, vb));
    case GAN_BINARY_MUL: BINARY_LOOP(_mm512_mul_ps(va, vb));
    case GAN_BINARY_DIV: BINARY_LOOP(_mm512_div_ps(va, vb));
    case GAN_BINARY_GREATER:
        BINARY_LOOP(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(va, vb, _CMP_GT_OQ), one));
    /* STEP(b) then MUL, in one pass: the multiply stays so that NaN and −0 come out
     * as the two passes gave them */
    case GAN_BINARY_MASK_POSITIVE:
        BINARY_LOOP(_mm512_mul_ps(va, _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(vb, zero,
                                                                             _CMP_GT_OQ), one)));
    default:
        break;
    }
}

#else /* no AVX-512 on this architecture: the scalar loops do everything */

int cpu_vec_unary_has(enum gan_unary_op op)
{
    (void)op;
    return 0;
}

int cpu_vec_binary_has(enum gan_binary_op op)
{
    (void)op;
    return 0;
}

void cpu_vec_unary(enum gan_unary_op op, float alpha, const struct cpu_vec_in *x, void *y,
                   enum gan_dtype yt, int64_t yoff, int64_t n)
{
    (void)op, (void)alpha, (void)x, (void)y, (void)yt, (void)yoff, (void)n;
}

void cpu_vec_binary(enum gan_binary_op op, const struct cpu_vec_in *a,
                    const struct cpu_vec_in *b, void *y, enum gan_dtype yt, int64_t yoff,
                    int64_t n)
{
    (void)op, (void)a, (void)b, (void)y, (void)yt, (void)yoff, (void)n;
}
#endif
