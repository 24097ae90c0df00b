/* SPDX-License-Identifier: MIT */
/* elementwise_lanes.h — the element-wise kernels on runs where every operand is
 * contiguous (or one value broadcast along the run), on the lanes of one vector level
 * (the lane interface included before this file). Instantiated by elementwise_avx512.c
 * and elementwise_avx2.c.
 *
 * A 16-bit operand is widened in registers, the op is computed in FP32 lanes and the
 * result is rounded once as it is stored, so no run is staged through memory and
 * converted in a separate pass. Each op is the same IEEE operation, in the same operand
 * order, as elementwise.c's scalar loop, so the results are the same bits (check_
 * elementwise compares the levels on special values). TANH is the backend's own
 * (tanh.c, tanh_lanes.h), the same bits in a lane as in the scalar loop; the ops whose
 * scalar form is a libm call (SIGMOID, EXP, LOG, and MAX, MIN, whose fmaxf/fminf treat
 * a signalling NaN apart) are left to the scalar loops (vector_unary_has, elementwise.c). */

#ifdef LANES_N
#include "tanh_lanes.h"

/* An operand's lanes at element I: its run's, widened from type T, or its one value.
 * The loops read the operands from copies in locals: a store to y, which the compiler
 * must assume may alias whatever a pointer reaches, would otherwise make every block
 * read the operands' fields again. */
#define VEC_AT(P, T, I, LIVE)                                                          \
    ((P).base ? lanes_load((P).base, (T), (P).off + (I), (LIVE)) : lanes_set1((P).value))

/* Whether an operand is one value or a run of type T. */
#define VEC_FITS(P, T) (!(P).base || (P).dtype == (T))

/* The type the operands' runs are read as: XT, or with XT = VEC_OWN_TYPE each
 * operand's own, tested per block. */
#define VEC_OWN_TYPE GAN_DTYPE_COUNT
#define VEC_TYPE(P, XT) ((XT) == VEC_OWN_TYPE ? (P).dtype : (XT))

/* A run in whole vectors, every lane inside, then the part of a vector at its end.
 * BLOCK(XT, YT, I, LIVE, EXPR) is one block's loads, op and store. */
#define VEC_RUN(BLOCK, XT, YT, EXPR)                                                   \
    do {                                                                               \
        int64_t i_ = 0;                                                                \
        for (; n - i_ >= LANES_N; i_ += LANES_N)                                       \
            BLOCK(XT, YT, i_, lanes_inside(0, LANES_N), EXPR);                         \
        if (i_ < n)                                                                    \
            BLOCK(XT, YT, i_, lanes_inside(i_, n), EXPR);                              \
    } while (0)

/* One loop per op, so that the op is chosen once per run rather than once per block;
 * and where every run among the operands is of y's type (FITS), one loop per type,
 * fixed when it is compiled, so that no block tests the types. */
#define VEC_LOOP(FITS, BLOCK, EXPR)                                                    \
    if ((FITS) && yt == GAN_F32)                                                       \
        VEC_RUN(BLOCK, GAN_F32, GAN_F32, EXPR);                                        \
    else if ((FITS) && yt == GAN_BF16)                                                 \
        VEC_RUN(BLOCK, GAN_BF16, GAN_BF16, EXPR);                                      \
    else if ((FITS) && yt == GAN_F16)                                                  \
        VEC_RUN(BLOCK, GAN_F16, GAN_F16, EXPR);                                        \
    else                                                                               \
        VEC_RUN(BLOCK, VEC_OWN_TYPE, yt, EXPR);                                        \
    break

#define UNARY_BLOCK(XT, YT, I, LIVE, EXPR)                                             \
    do {                                                                               \
        const lanes_in live = (LIVE);                                                  \
        lanes_f32 v = VEC_AT(xs, VEC_TYPE(xs, XT), (I), live);                         \
        lanes_store(y, (YT), yoff + (I), live, (EXPR));                                \
    } while (0)
#define UNARY_LOOP(EXPR) VEC_LOOP(VEC_FITS(xs, yt), UNARY_BLOCK, EXPR)

LANES_TARGET
void LANES_FN(cpu_vec_unary)(enum gan_unary_op op, float alpha, const struct cpu_vec_in *x,
                             void *y, enum gan_dtype yt, int64_t yoff, int64_t n)
{
    const struct cpu_vec_in xs = *x;
    const lanes_f32 zero = lanes_zero(), one = lanes_set1(1.0f), va = lanes_set1(alpha);
    switch (op) {
    case GAN_UNARY_COPY: UNARY_LOOP(v);
    case GAN_UNARY_NEG: UNARY_LOOP(lanes_xor_bits(v, INT32_MIN));
    case GAN_UNARY_SCALE: UNARY_LOOP(lanes_mul(va, v));
    case GAN_UNARY_ADD_SCALAR: UNARY_LOOP(lanes_add(v, va));
    /* x <= 0 ? +0 : x; a NaN compares false and stays */
    case GAN_UNARY_RELU: UNARY_LOOP(lanes_blend(lanes_le(v, zero), v, zero));
    case GAN_UNARY_LEAKY_RELU: UNARY_LOOP(lanes_blend(lanes_gt(v, zero), lanes_mul(va, v), v));
    case GAN_UNARY_STEP: UNARY_LOOP(lanes_keep(lanes_gt(v, zero), one));
    /* x > 0 ? 1 : alpha; a NaN compares false and gives alpha */
    case GAN_UNARY_LEAKY_STEP: UNARY_LOOP(lanes_blend(lanes_gt(v, zero), va, one));
    case GAN_UNARY_TANH: UNARY_LOOP(lanes_tanh(v));
    case GAN_UNARY_SQUARE: UNARY_LOOP(lanes_mul(v, v));
    case GAN_UNARY_SQRT: UNARY_LOOP(lanes_sqrt(v));
    case GAN_UNARY_RSQRT: UNARY_LOOP(lanes_div(one, lanes_sqrt(v)));
    case GAN_UNARY_RECIPROCAL: UNARY_LOOP(lanes_div(one, v));
    case GAN_UNARY_ABS: UNARY_LOOP(lanes_and_bits(v, INT32_MAX));
    /* (x > 0) − (x < 0): +0 for ±0 and NaN */
    case GAN_UNARY_SIGN:
        UNARY_LOOP(lanes_blend(lanes_lt(v, zero), lanes_keep(lanes_gt(v, zero), one),
                               lanes_set1(-1.0f)));
    case GAN_UNARY_FILL:
        for (int64_t i = 0; i < n; i += LANES_N)
            lanes_store(y, yt, yoff + i, lanes_inside(i, n), va);
        break;
    default:
        break;
    }
}

#define BINARY_BLOCK(XT, YT, I, LIVE, EXPR)                                            \
    do {                                                                               \
        const lanes_in live = (LIVE);                                                  \
        lanes_f32 va = VEC_AT(as, VEC_TYPE(as, XT), (I), live),                        \
                  vb = VEC_AT(bs, VEC_TYPE(bs, XT), (I), live);                        \
        lanes_store(y, (YT), yoff + (I), live, (EXPR));                                \
    } while (0)
#define BINARY_LOOP(EXPR)                                                              \
    VEC_LOOP(VEC_FITS(as, yt) && VEC_FITS(bs, yt), BINARY_BLOCK, EXPR)

/* BINARY_BLOCK for an activation of the stored sum z = a + b */
#define STORED_SUM_BLOCK(XT, YT, I, LIVE, EXPR)                                        \
    do {                                                                               \
        const lanes_in live = (LIVE);                                                  \
        lanes_f32 sa = VEC_AT(as, VEC_TYPE(as, XT), (I), live),                        \
                  sb = VEC_AT(bs, VEC_TYPE(bs, XT), (I), live);                        \
        lanes_f32 z = lanes_stored((YT), lanes_add(sa, sb));                           \
        lanes_store(y, (YT), yoff + (I), live, (EXPR));                                \
    } while (0)
#define STORED_SUM_LOOP(EXPR)                                                          \
    VEC_LOOP(VEC_FITS(as, yt) && VEC_FITS(bs, yt), STORED_SUM_BLOCK, EXPR)

/* The 1 of GREATER, MASK_POSITIVE and MASK_LEAKY, read through a volatile once per call,
 * as the portable loop reads its own: with a constant 1 a compiler may fold the masks'
 * multiply into a select where the mask holds (clang does, assuming no signalling NaN),
 * and a signalling NaN in a would then pass unquieted. */
static volatile float vec_one = 1.0f;

LANES_TARGET
void LANES_FN(cpu_vec_binary)(enum gan_binary_op op, float alpha, const struct cpu_vec_in *a,
                              const struct cpu_vec_in *b, void *y, enum gan_dtype yt,
                              int64_t yoff, int64_t n)
{
    const struct cpu_vec_in as = *a, bs = *b;
    const lanes_f32 zero = lanes_zero(), one = lanes_set1(vec_one), slope = lanes_set1(alpha);
    switch (op) {
    case GAN_BINARY_ADD: BINARY_LOOP(lanes_add(va, vb));
    case GAN_BINARY_SUB: BINARY_LOOP(lanes_sub(va, vb));
    case GAN_BINARY_MUL: BINARY_LOOP(lanes_mul(va, vb));
    case GAN_BINARY_DIV: BINARY_LOOP(lanes_div(va, vb));
    case GAN_BINARY_GREATER: BINARY_LOOP(lanes_keep(lanes_gt(va, vb), one));
    /* STEP(b) then MUL, in one pass: the multiply stays so that NaN and −0 come out
     * as the two passes gave them */
    case GAN_BINARY_MASK_POSITIVE: BINARY_LOOP(lanes_mul(va, lanes_keep(lanes_gt(vb, zero), one)));
    /* LEAKY_STEP(b) then MUL, likewise */
    case GAN_BINARY_MASK_LEAKY:
        BINARY_LOOP(lanes_mul(va, lanes_blend(lanes_gt(vb, zero), slope, one)));
    /* ADD, then the activation of the sum as y's dtype holds it: rounded and widened
     * where that dtype is narrower, as ADD's result is stored and the activation reads it */
    case GAN_BINARY_ADD_LEAKY:
        STORED_SUM_LOOP(lanes_blend(lanes_gt(z, zero), lanes_mul(slope, z), z));
    case GAN_BINARY_ADD_RELU: STORED_SUM_LOOP(lanes_blend(lanes_le(z, zero), z, zero));
    default:
        break;
    }
}

#undef UNARY_LOOP
#undef UNARY_BLOCK
#undef BINARY_LOOP
#undef BINARY_BLOCK
#undef STORED_SUM_LOOP
#undef STORED_SUM_BLOCK
#undef VEC_LOOP
#undef VEC_RUN
#undef VEC_TYPE
#undef VEC_OWN_TYPE
#undef VEC_FITS
#undef VEC_AT

#else /* not an x86 CPU: the level is never chosen, and the scalar loops do everything */

void LANES_FN(cpu_vec_unary)(enum gan_unary_op op, float alpha, const struct cpu_vec_in *x,
                             void *y, enum gan_dtype yt, int64_t yoff, int64_t n)
{
    (void)op, (void)alpha, (void)x, (void)y, (void)yt, (void)yoff, (void)n;
}

void LANES_FN(cpu_vec_binary)(enum gan_binary_op op, float alpha, const struct cpu_vec_in *a,
                              const struct cpu_vec_in *b, void *y, enum gan_dtype yt,
                              int64_t yoff, int64_t n)
{
    (void)op, (void)alpha, (void)a, (void)b, (void)y, (void)yt, (void)yoff, (void)n;
}
#endif
