/* SPDX-License-Identifier: MIT */
/* tanh_consts.h — the constants of the backend's FP32 tanh (tanh.c, one element at a
 * time, and tanh_lanes.h, a vector of them): fdlibm's, each an exact FP32 value written
 * in hexadecimal, and the bounds its cases are chosen by, as the bits of |x|. */
#ifndef GANCTL_CPU_TANH_CONSTS_H
#define GANCTL_CPU_TANH_CONSTS_H

/* ln 2 in two parts: the high one with its last 7 bits clear, so that k · ln2_hi is
 * exact for every |k| < 128 (expm1 meets −3 to 63 here) */
#define TANH_LN2_HI 0x1.62e3p-1f
#define TANH_LN2_LO 0x1.2fefa2p-17f
#define TANH_INV_LN2 0x1.715476p+0f /* 1 / ln 2 */
/* The rational approximation of expm1 on [−ln 2 / 2, ln 2 / 2], in r²/2. */
#define TANH_Q1 -0x1.111112p-5f
#define TANH_Q2 0x1.a01a02p-10f
#define TANH_Q3 -0x1.4ce19ap-14f
#define TANH_Q4 0x1.0cfca8p-18f
#define TANH_Q5 -0x1.afdb76p-23f

/* Bounds on |x|'s bits. */
#define TANH_TINY 0x24000000u            /* 2⁻⁵⁵: below, tanh(x) rounds to x */
#define TANH_SATURATED 0x41b00000u       /* 22: from here, to ±1 */
#define TANH_EXPM1_TINY 0x33000000u      /* 2⁻²⁵: below, expm1(a) rounds to a */
#define TANH_EXPM1_HALF_LN2 0x3eb17218u  /* above ln 2 / 2, expm1 reduces its argument */
#define TANH_EXPM1_3HALF_LN2 0x3f851592u /* below 3 ln 2 / 2, by one ln 2 */

#endif
