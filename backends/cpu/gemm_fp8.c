/* SPDX-License-Identifier: MIT */
/* gemm_fp8.c — the CPU backend's FP8 product (backend.h: gemm_fp8), emulated exactly:
 * each FP8 operand widened into BF16 for oneDNN's BF16 matmul where BF16 products go
 * to oneDNN (cpu_onednn_bf16: a BF16 dot product that pays, or backend.gemm = "onednn")
 * and the widened values are exact in BF16, else into FP32 for the backend's FP32
 * GEMM. */
#include "config.h"

#include <float.h>
#include <limits.h>
#include <math.h>
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
 * cpu_gemm stages a 16-bit C through cpu_scratch.
 *
 * The BF16 route. Every E4M3 and E5M2 value is exact in BF16 too (at most 4 significant
 * bits), and so is its product with a power of two while that stays a normal number.
 * A BF16 dot product multiplies two BF16 values exactly in FP32 and accumulates in
 * FP32, so where each widened value q·inv is exact, oneDNN's BF16 matmul sums the same
 * exact products in FP32 as the FP32 route, in another order: what the contract allows.
 * Per tensor too, q is widened as q·inv and alpha stays alpha: scaling by the powers of
 * two inv_a and inv_b before the sums rather than after changes no bit where nothing
 * overflows or becomes subnormal, and alpha stays a constant of the call site, so that
 * oneDNN makes one primitive per shape (a primitive is made for one alpha). Its one
 * difference from FP32 FMAs: it treats subnormal inputs and results as zero (AVX512-BF16's
 * VDPBF16PS). The route is therefore taken only where no value it meets can be
 * subnormal or overflow: with 2^ea, 2^eb the smallest non-zero |q·inv| of A and B (the
 * format's smallest subnormal times the smallest inverse), ea, eb and ea + eb all at
 * least −126, so that every product is a multiple of 2^(ea + eb) ≥ 2^-126 and so is
 * every sum FP32 keeps exactly (a sum it rounds is far above 2^-126); and with 2^fa,
 * 2^fb above the largest |q·inv|, fa + fb + ceil(log2 k) at most 127, so that no sum
 * overflows; per tensor, the FP32 route's factor alpha·inv_a·inv_b must be a normal FP32
 * number too, for the two to scale alike. Every inverse must be a power of two: per-tensor and E8M0 block scales
 * take the route, FP32 block scales (q·inv not exact in BF16) keep the FP32 route, and
 * so does a shape oneDNN has no primitive for. A 16-bit C other than BF16 (F16) gets an
 * FP32 accumulator rounded once at the end. Whether the BF16 matmul gives the same bits
 * at any thread count is oneDNN's: the products of the networks' shapes do at one and
 * two threads (tests/unit/check_fp8_products.c checks the demo's), as the BF16 O2
 * path's products do. */

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

/* A per-tensor operand's inverse scale, rounded to FP32 as the contract has it. */
static float inverse(const struct gan_ref *scale)
{
    return 1.0f / *(const float *)(const void *)cpu_ref_ptr(scale);
}

/* The exponents bounding an operand's widened values |q·inv|, inv each scale's FP32
 * inverse and q of type qt: 2^lo the smallest non-zero one, 2^hi above the largest.
 * Returns 0 where an inverse is not a power of two in FP32's normal range, so that q·inv
 * may not be exact in BF16. */
static int widened_range(const float *scale, int64_t count, enum gan_dtype qt, int *lo,
                         int *hi)
{
    int least = INT_MAX, most = INT_MIN;
    for (int64_t i = 0; i < count; i++) {
        uint32_t b = gan_f32_bits(1.0f / scale[i]) & 0x7fffffffu;
        int e = (int)(b >> 23) - 127;
        if ((b & 0x7fffffu) != 0 || e == -127 || e == 128)
            return 0;
        least = e < least ? e : least;
        most = e > most ? e : most;
    }
    /* the smallest subnormals 2^-9 and 2^-16; the largest values 448 < 2^9, 57344 < 2^16 */
    *lo = least + (qt == GAN_F8E5M2 ? -16 : -9);
    *hi = most + (qt == GAN_F8E5M2 ? 16 : 9);
    return 1;
}

/* Whether the product goes the BF16 route (above), C written as c_dtype (F32 or BF16). */
static int bf16_route(gan_backend *be, const struct gan_gemm_fp8 *f,
                      const struct gan_fp8_layout *la, const struct gan_fp8_layout *lb,
                      enum gan_dtype c_dtype)
{
    if (!cpu_onednn_bf16(be))
        return 0;
    const struct gan_gemm *g = &f->g;
    int lo_a, hi_a, lo_b, hi_b, log2_k = 0;
    if (!widened_range((const float *)(const void *)cpu_ref_ptr(&f->scale_a),
                       gan_fp8_scale_count(la), g->a.dtype, &lo_a, &hi_a) ||
        !widened_range((const float *)(const void *)cpu_ref_ptr(&f->scale_b),
                       gan_fp8_scale_count(lb), g->b.dtype, &lo_b, &hi_b))
        return 0;
    while (((int64_t)1 << log2_k) < g->k)
        log2_k++;
    if (lo_a < -126 || lo_b < -126 || lo_a + lo_b < -126 || hi_a + hi_b + log2_k > 127)
        return 0;
    if (f->block_a == 0 && f->block_b == 0) {
        /* the FP32 route's factor, exact where it is a normal FP32 number */
        const double factor = fabs((double)g->alpha * (double)inverse(&f->scale_a) *
                                   (double)inverse(&f->scale_b));
        if (!(factor >= (double)FLT_MIN && factor <= (double)FLT_MAX))
            return 0;
    }
    struct gan_gemm w = *g;
    w.a.dtype = w.b.dtype = GAN_BF16;
    w.c.dtype = c_dtype;
    return cpu_onednn_gemm_takes(be, &w);
}

/* The product through oneDNN's BF16 matmul on q·inv widened into BF16. */
static gan_status gemm_bf16(gan_backend *be, const struct gan_gemm_fp8 *f,
                            const struct gan_fp8_layout *la, const struct gan_fp8_layout *lb,
                            int stage_c)
{
    const struct gan_gemm *g = &f->g;
    const size_t na = (size_t)(la->rows * la->cols), nb = (size_t)(lb->rows * lb->cols);
    const size_t nc = (size_t)(g->m * g->n);
    const size_t bytes_a = gan_gemm_align(na * 2, FP8_STAGE_ALIGN);
    const size_t bytes_b = gan_gemm_align(nb * 2, FP8_STAGE_ALIGN);
    unsigned char *space;
    gan_status st = cpu_operand_scratch(be, bytes_a + bytes_b + (stage_c ? nc * 4 : 0),
                                        (void **)&space);
    if (st != GAN_OK)
        return st;
    struct gan_buffer wide_a = { .bytes = na * 2, .data = space },
                      wide_b = { .bytes = nb * 2, .data = space + bytes_a };
    struct gan_buffer wide_c = { .bytes = nc * 4, .data = space + bytes_a + bytes_b };
    cpu_fp8_widen_bf16(be, la, cpu_ref_ptr(&g->a), g->a.dtype,
                       (const float *)(const void *)cpu_ref_ptr(&f->scale_a),
                       (uint16_t *)(void *)wide_a.data);
    cpu_fp8_widen_bf16(be, lb, cpu_ref_ptr(&g->b), g->b.dtype,
                       (const float *)(const void *)cpu_ref_ptr(&f->scale_b),
                       (uint16_t *)(void *)wide_b.data);

    struct gan_gemm w = *g;
    w.a = (struct gan_ref){ &wide_a, 0, GAN_BF16 };
    w.b = (struct gan_ref){ &wide_b, 0, GAN_BF16 };
    void *c = cpu_ref_ptr(&g->c);
    if (stage_c) {
        w.c = (struct gan_ref){ &wide_c, 0, GAN_F32 };
        if (g->beta != 0.0f)
            cpu_convert_threads(be, c, g->c.dtype, wide_c.data, GAN_F32, nc);
    }
    if (!cpu_onednn_gemm(be, &w, &st))
        return be->host->fail(be->host->ctx, GAN_ERR_INTERNAL,
                              "gemm_fp8: oneDNN refused a BF16 product it took before");
    if (st != GAN_OK || !stage_c)
        return st;
    cpu_convert_threads(be, wide_c.data, GAN_F32, c, g->c.dtype, nc);
    return GAN_OK;
}

gan_status cpu_gemm_fp8(gan_backend *be, const struct gan_gemm_fp8 *f)
{
    gan_status st = gan_gemm_fp8_check(be->host, "BLAS", f);
    if (st == GAN_OK)
        st = cpu_kept_gemm(be, &f->g);
    /* the scales are read with A and B */
    const size_t reads = f->g.m == 0 || f->g.n == 0 ? 0 : (size_t)f->g.k;
    if (st == GAN_OK)
        st = cpu_kept_read(be, f->scale_a.buf, reads);
    if (st == GAN_OK)
        st = cpu_kept_read(be, f->scale_b.buf, reads);
    if (st != GAN_OK)
        return st;
    const struct gan_gemm *g = &f->g;
    if (g->m == 0 || g->n == 0)
        return GAN_OK;

    /* The FP32 product the call becomes: C and its dtype, beta and the shape as they
     * are; A and B replaced by their widened copies. */
    struct gan_gemm w = *g;
    struct gan_buffer wide_a = { .bytes = 0 }, wide_b = { .bytes = 0 };
    if (gan_gemm_fp8_unread(g, &w))
        return cpu_gemm(be, &w);

    struct gan_fp8_layout la, lb;
    gan_gemm_fp8_layouts(f, &la, &lb);
    /* oneDNN's BF16 matmul writes F32 and BF16; an F16 C is staged in FP32 */
    const int stage_c = g->c.dtype == GAN_F16;
    if (bf16_route(be, f, &la, &lb, stage_c ? GAN_F32 : g->c.dtype))
        return gemm_bf16(be, f, &la, &lb, stage_c);

    const int per_tensor = f->block_a == 0 && f->block_b == 0;
    if (per_tensor)
        w.alpha = (g->alpha * inverse(&f->scale_a)) * inverse(&f->scale_b);

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
    return cpu_gemm(be, &w);
}
