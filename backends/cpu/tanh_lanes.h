/* SPDX-License-Identifier: MIT */
/* tanh_lanes.h — the backend's FP32 tanh on a vector of lanes: tanh.c's algorithm with
 * each branch computed in every lane and the lane's own case selected, so that every
 * lane is the same bits as cpu_tanhf (check_tanh compares them). Included by
 * elementwise_lanes.h after a lane interface; the file including it turns off fused
 * multiply-add, as tanh.c does.
 *
 * Two simplifications of tanh.c's cases that give the same bits: the reduction with
 * k = 0 (x unchanged, c = 0) and with k = −1 (hi = a + ln2_hi, lo = −ln2_lo) are the
 * general one's arithmetic at those k, so one reduction serves them all; and where tanh.c
 * divides 2 or −t by t + 2, one division takes the numerator its lane needs. */

#ifndef GANCTL_CPU_TANH_LANES_H
#define GANCTL_CPU_TANH_LANES_H

#include "tanh_consts.h"

/* exp(a) − 1 for a = −2|x| (|x| < 1) or 2|x| (1 ≤ |x| < 22), `big` the lanes of the
 * second kind and `ha` the bits of |a|. */
LANES_TARGET
static inline lanes_f32 lanes_expm1_for_tanh(lanes_f32 a, lanes_i32 ha, lanes_if big)
{
    const lanes_f32 one = lanes_set1(1.0f), half = lanes_set1(0.5f);
    /* k: 0 up to ln 2 / 2, −1 below 3 ln 2 / 2 (a < 0 there), else a / ln 2 rounded
     * half away from zero by truncation */
    lanes_if reduce = lanes_i32_gt(ha, lanes_i32_set1((int32_t)TANH_EXPM1_HALF_LN2));
    lanes_if below = lanes_i32_gt(lanes_i32_set1((int32_t)TANH_EXPM1_3HALF_LN2), ha);
    lanes_if minus_one = lanes_andnot_if(lanes_and_if(reduce, below), big);
    lanes_f32 kf = lanes_add(lanes_mul(lanes_set1(TANH_INV_LN2), a),
                             lanes_blend(big, lanes_set1(-0.5f), half));
    lanes_i32 k = lanes_i32_blend(minus_one, lanes_trunc_i32(kf), lanes_i32_set1(-1));
    k = lanes_i32_blend(reduce, lanes_i32_set1(0), k);
    lanes_f32 t = lanes_i32_to_f32(k);
    lanes_f32 hi = lanes_sub(a, lanes_mul(t, lanes_set1(TANH_LN2_HI)));
    lanes_f32 lo = lanes_mul(t, lanes_set1(TANH_LN2_LO));
    lanes_f32 x = lanes_sub(hi, lo);
    lanes_f32 c = lanes_sub(lanes_sub(hi, x), lo);

    lanes_f32 hfx = lanes_mul(half, x), hxs = lanes_mul(x, hfx);
    lanes_f32 p = lanes_add(lanes_set1(TANH_Q4), lanes_mul(hxs, lanes_set1(TANH_Q5)));
    p = lanes_add(lanes_set1(TANH_Q3), lanes_mul(hxs, p));
    p = lanes_add(lanes_set1(TANH_Q2), lanes_mul(hxs, p));
    p = lanes_add(lanes_set1(TANH_Q1), lanes_mul(hxs, p));
    lanes_f32 r1 = lanes_add(one, lanes_mul(hxs, p));
    lanes_f32 tt = lanes_sub(lanes_set1(3.0f), lanes_mul(r1, hfx));
    lanes_f32 e = lanes_mul(hxs, lanes_div(lanes_sub(r1, tt),
                                           lanes_sub(lanes_set1(6.0f), lanes_mul(x, tt))));
    lanes_f32 at_zero = lanes_sub(x, lanes_sub(lanes_mul(x, e), hxs));

    e = lanes_sub(lanes_sub(lanes_mul(x, lanes_sub(e, c)), c), hxs);
    lanes_f32 e_x = lanes_sub(e, x);
    lanes_f32 at_minus_one = lanes_sub(lanes_mul(half, lanes_sub(x, e)), half);
    lanes_i32 exponent = lanes_i32_shl(k, 23);
    /* k ≤ −2 or k > 56: 1 − (e − x), scaled by 2ᵏ, less 1 */
    lanes_f32 far = lanes_sub(one, e_x);
    far = lanes_sub(lanes_as_f32(lanes_i32_add(lanes_as_i32(far), exponent)), one);
    /* 2 ≤ k ≤ 22 (3 at least here, as 2|x| ≥ 2): (1 − 2⁻ᵏ) − (e − x), scaled */
    lanes_i32 ulp_k = lanes_i32_shr_by(lanes_i32_set1(0x1000000), k);
    lanes_f32 mid = lanes_sub(lanes_as_f32(lanes_i32_sub(lanes_i32_set1(0x3f800000), ulp_k)), e_x);
    mid = lanes_as_f32(lanes_i32_add(lanes_as_i32(mid), exponent));
    /* 23 ≤ k ≤ 56: (x − (e + 2⁻ᵏ)) + 1, scaled */
    lanes_f32 two_minus_k = lanes_as_f32(lanes_i32_sub(lanes_i32_set1(0x3f800000), exponent));
    lanes_f32 near = lanes_add(lanes_sub(x, lanes_add(e, two_minus_k)), one);
    near = lanes_as_f32(lanes_i32_add(lanes_as_i32(near), exponent));

    lanes_if is_far = lanes_or_if(lanes_i32_gt(lanes_i32_set1(-1), k),
                                  lanes_i32_gt(k, lanes_i32_set1(56)));
    lanes_f32 r = lanes_blend(lanes_i32_gt(k, lanes_i32_set1(22)), mid, near);
    r = lanes_blend(is_far, r, far);
    r = lanes_blend(lanes_i32_eq(k, lanes_i32_set1(-1)), r, at_minus_one);
    r = lanes_blend(lanes_i32_eq(k, lanes_i32_set1(0)), r, at_zero);
    /* |a| < 2⁻²⁵: a itself */
    return lanes_blend(lanes_i32_gt(lanes_i32_set1((int32_t)TANH_EXPM1_TINY), ha), r, a);
}

LANES_TARGET
static inline lanes_f32 lanes_tanh(lanes_f32 x)
{
    const lanes_f32 one = lanes_set1(1.0f), two = lanes_set1(2.0f);
    lanes_i32 bits = lanes_as_i32(x);
    lanes_i32 ix = lanes_i32_and(bits, lanes_i32_set1(INT32_MAX));
    lanes_i32 sign = lanes_i32_and(bits, lanes_i32_set1(INT32_MIN));
    lanes_if big = lanes_i32_gt(ix, lanes_i32_set1(0x3f7fffff)); /* |x| ≥ 1 */
    lanes_f32 a = lanes_mul(two, lanes_as_f32(ix));               /* 2|x|, exact */
    lanes_i32 ha = lanes_as_i32(a);
    a = lanes_blend(big, lanes_xor_bits(a, INT32_MIN), a);        /* −2|x| below 1 */
    lanes_f32 t = lanes_expm1_for_tanh(a, ha, big);
    /* |x| ≥ 1: 1 − 2 / (t + 2); below: −t / (t + 2); both positive */
    lanes_f32 q = lanes_div(lanes_blend(big, lanes_xor_bits(t, INT32_MIN), two),
                            lanes_add(t, two));
    lanes_f32 z = lanes_blend(big, q, lanes_sub(one, q));
    z = lanes_blend(lanes_i32_gt(ix, lanes_i32_set1((int32_t)TANH_SATURATED - 1)), z, one);
    z = lanes_as_f32(lanes_i32_or(lanes_as_i32(z), sign)); /* −z for x < 0 */
    z = lanes_blend(lanes_i32_gt(lanes_i32_set1((int32_t)TANH_TINY), ix), z, x);
    lanes_if special = lanes_i32_gt(ix, lanes_i32_set1(0x7f7fffff)); /* ±inf, NaN */
    if (lanes_bits(special)) {
        lanes_f32 inv = lanes_div(one, x);
        lanes_f32 s = lanes_blend(lanes_i32_eq(sign, lanes_i32_set1(0)), lanes_sub(inv, one),
                                  lanes_add(inv, one));
        z = lanes_blend(special, z, s);
    }
    return z;
}

#endif
