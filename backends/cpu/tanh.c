/* SPDX-License-Identifier: MIT */
/* tanh.c — the backend's FP32 tanh, one element at a time: the reference that the
 * vector levels (tanh_lanes.h) reproduce bit for bit.
 *
 * Why the backend has its own: the C library's tanhf is a call per element (11 ns on a
 * Zen 4, bench/README.md, where these lanes take 1.5 ns an element on AVX-512 and 2.6
 * on AVX2, bench/elementwise), and its bits belong to the library, so a vector tanh
 * must follow one written-down algorithm to agree with the scalar loops.
 * The algorithm is fdlibm's (Sun Microsystems, 1993), the one glibc's tanhf and expm1f
 * use for FP32: tanh from expm1, expm1 by reduction to r = x − k·ln 2 with |r| ≤ ln 2 / 2
 * and a rational approximation of degree five in r², and the result put back together
 * with k in the exponent. Every step is one IEEE FP32 operation in a fixed order, with
 * no fused multiply-add (the pragmas below), so each vector lane computes the same
 * bits; on a glibc whose tanhf is fdlibm's (Debian 12's 2.36) these are also that
 * tanhf's bits, so runs measured before the backend had its own reproduce there. */
#include "config.h"

/* No fused multiply-add where the CPU has one (-march, or a target that always has it):
 * clang contracts within an expression unless told, GCC across them. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include <stdint.h>

#include "convert.h"
#include "cpu_backend.h"
#include "tanh_consts.h"

/* exp(a) − 1 for the arguments tanh gives it: a = −2|x| in (−2, −2⁻⁵⁴] or a = 2|x| in
 * [2, 44). The reduction's cases by |a|'s bits, as fdlibm has them. */
static float expm1_for_tanh(float a)
{
    uint32_t ha = cpu_f32_bits(a) & 0x7fffffffu;
    if (ha < TANH_EXPM1_TINY)
        return a; /* |a| < 2⁻²⁵: exp(a) − 1 rounds to a */
    float hi, lo, x, c = 0.0f;
    int32_t k = 0;
    if (ha > TANH_EXPM1_HALF_LN2) {
        if (ha < TANH_EXPM1_3HALF_LN2 && a < 0.0f) {
            hi = a + TANH_LN2_HI; /* k = −1 (a > 0 here is at least 2) */
            lo = -TANH_LN2_LO;
            k = -1;
        } else {
            k = (int32_t)(TANH_INV_LN2 * a + (a < 0.0f ? -0.5f : 0.5f));
            float t = (float)k;
            hi = a - t * TANH_LN2_HI; /* exact: ln2_hi has its low bits clear */
            lo = t * TANH_LN2_LO;
        }
        x = hi - lo;
        c = (hi - x) - lo; /* what rounding x lost */
    } else {
        x = a;
    }
    float hfx = 0.5f * x, hxs = x * hfx;
    float r1 = 1.0f + hxs * (TANH_Q1 + hxs * (TANH_Q2 + hxs * (TANH_Q3 + hxs * (TANH_Q4
                                                                          + hxs * TANH_Q5))));
    float t = 3.0f - r1 * hfx;
    float e = hxs * ((r1 - t) / (6.0f - x * t));
    if (k == 0)
        return x - (x * e - hxs);
    e = x * (e - c) - c;
    e -= hxs;
    if (k == -1)
        return 0.5f * (x - e) - 0.5f;
    float y;
    if (k <= -2 || k > 56) {
        y = 1.0f - (e - x);
        return cpu_bits_f32(cpu_f32_bits(y) + ((uint32_t)k << 23)) - 1.0f;
    }
    if (k < 23) {
        y = cpu_bits_f32(0x3f800000u - (0x1000000u >> k)) - (e - x); /* 1 − 2⁻ᵏ − (e − x) */
    } else {
        y = x - (e + cpu_bits_f32((uint32_t)(0x7f - k) << 23)); /* x − (e + 2⁻ᵏ) + 1 */
        y += 1.0f;
    }
    return cpu_bits_f32(cpu_f32_bits(y) + ((uint32_t)k << 23));
}

float cpu_tanhf(float x)
{
    uint32_t ix = cpu_f32_bits(x) & 0x7fffffffu;
    if (ix >= 0x7f800000u) /* ±inf: ±1; NaN: NaN */
        return cpu_f32_bits(x) >> 31 ? 1.0f / x - 1.0f : 1.0f / x + 1.0f;
    if (ix < TANH_TINY)
        return x; /* |x| < 2⁻⁵⁵ (zeros included): tanh(x) rounds to x */
    float z;
    if (ix >= TANH_SATURATED) {
        z = 1.0f; /* |x| ≥ 22: 1 − 2·e⁻⁴⁴ rounds to 1 */
    } else if (ix >= 0x3f800000u) {
        float t = expm1_for_tanh(2.0f * (x < 0.0f ? -x : x)); /* |x| ≥ 1 */
        z = 1.0f - 2.0f / (t + 2.0f);
    } else {
        float t = expm1_for_tanh(-2.0f * (x < 0.0f ? -x : x));
        z = -t / (t + 2.0f);
    }
    return x < 0.0f ? -z : z;
}
