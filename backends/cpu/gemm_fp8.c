/* SPDX-License-Identifier: MIT */
/* gemm_fp8.c — the CPU backend's FP8 product (backend.h: gemm_fp8), emulated exactly:
 * each FP8 operand widened into FP32, then the backend's FP32 GEMM. */
#include "config.h"

#include <string.h>

#include "fp8_products.h"
#include "../common/fp8_checks.h"
#include "../common/gemm_checks.h"

/* The CPU has no FP8 arithmetic, but every FP8 value is exact in FP32 and so is its
 * product with a power-of-two scale, and FP32 accumulation is what the contract asks
 * for: widening the operands and calling cpu_gemm computes what an FP8 tensor core
 * computes, up to the order of the FP32 sums.
 *   Both per tensor: q is widened as it is (cast_fp8.c's exact decoding), and the two
 *     inverses go into alpha, ((alpha·inv_a)·inv_b) in FP32, so the sum is rescaled
 *     once, as cuBLASLt's scale pointers do it.
 *   Otherwise: each q is widened as fl32(q·inv of its block) (fp8_dequantize into F32;
 *     exact for power-of-two scales) and alpha is alpha. A per-tensor operand beside a
 *     blocked one is the one-block case of the same.
 * cpu_gemm then picks the FP32 path (OpenBLAS, or oneDNN where the setting "gemm" asks
 * for it), applies beta (reading C only when beta is not 0) and rounds a 16-bit C once
 * from an FP32 accumulator. The widened operands live in cpu_operand_scratch, since
 * cpu_gemm stages a 16-bit C through cpu_scratch. */

/* FP8 operand q (layout l) into FP32 at `out`: scaled, as fl32(q·inv of its block);
 * or not, q as it is (exact). */
static void widen(gan_backend *be, const struct gan_fp8_layout *l, const struct gan_ref *q,
                  const struct gan_ref *scale, int scaled, float *out)
{
    const uint8_t *qp = cpu_ref_ptr(q);
    const size_t n = (size_t)(l->rows * l->cols);
    if (scaled)
        cpu_fp8_widen(be, l, qp, q->dtype, (const float *)(const void *)cpu_ref_ptr(scale),
                      out);
    else
        cpu_cast_fp8(be, qp, q->dtype, out, GAN_F32, n, 0, NULL);
}

/* The staged operands are 64-byte aligned pieces of one allocation, as gemm.c's. */
#define FP8_STAGE_ALIGN 64

gan_status cpu_gemm_fp8(gan_backend *be, const struct gan_gemm_fp8 *f)
{
    gan_status st = gan_gemm_fp8_check(be->host, "BLAS", f);
    if (st != GAN_OK)
        return st;
    const struct gan_gemm *g = &f->g;
    if (g->m == 0 || g->n == 0)
        return GAN_OK;

    /* The FP32 product the call becomes: C and its dtype, beta and the shape as they
     * are; A and B replaced by their widened copies. */
    struct gan_gemm w = *g;
    struct gan_buffer wide_a = { 0, NULL }, wide_b = { 0, NULL };
    if (g->k == 0 || g->alpha == 0.0f) {
        /* beta·C, A and B unread: an FP32 product with nothing to sum */
        w.k = 0;
        w.a = (struct gan_ref){ NULL, 0, GAN_F32 };
        w.b = (struct gan_ref){ NULL, 0, GAN_F32 };
        w.lda = w.trans_a ? w.m : 1;
        w.ldb = w.trans_b ? 1 : w.n;
        return cpu_gemm(be, &w);
    }

    struct gan_fp8_layout la, lb;
    gan_gemm_fp8_layouts(f, &la, &lb);
    const int per_tensor = f->block_a == 0 && f->block_b == 0;
    const size_t na = (size_t)(la.rows * la.cols), nb = (size_t)(lb.rows * lb.cols);
    const size_t bytes_a = gan_gemm_align(na * sizeof(float), FP8_STAGE_ALIGN);
    unsigned char *space;
    if ((st = cpu_operand_scratch(be, bytes_a + nb * sizeof(float), (void **)&space)) != GAN_OK)
        return st;
    wide_a.bytes = na * sizeof(float);
    wide_a.data = space;
    wide_b.bytes = nb * sizeof(float);
    wide_b.data = space + bytes_a;
    widen(be, &la, &g->a, &f->scale_a, !per_tensor, (float *)(void *)wide_a.data);
    widen(be, &lb, &g->b, &f->scale_b, !per_tensor, (float *)(void *)wide_b.data);

    w.a = (struct gan_ref){ &wide_a, 0, GAN_F32 };
    w.b = (struct gan_ref){ &wide_b, 0, GAN_F32 };
    if (per_tensor) {
        const float inv_a = 1.0f / *(const float *)(const void *)cpu_ref_ptr(&f->scale_a);
        const float inv_b = 1.0f / *(const float *)(const void *)cpu_ref_ptr(&f->scale_b);
        w.alpha = (g->alpha * inv_a) * inv_b;
    }
    return cpu_gemm(be, &w);
}
