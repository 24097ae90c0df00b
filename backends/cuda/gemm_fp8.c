/* SPDX-License-Identifier: MIT */
/* gemm_fp8.c — the CUDA backend's FP8 product (backend.h: gemm_fp8): cuBLASLt's FP8
 * matmul where it takes the call, else the operands dequantized into BF16 and the
 * backend's BF16 GEMM. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/fp8_checks.h"
#include "../common/gemm_checks.h"

/* Which path runs:
 *
 *   cuBLASLt (FP8 tensor cores): both operands per tensor, C = A·Bᵀ (trans_a 0,
 *   trans_b 1), not both E5M2, k a multiple of 16, C's rows a multiple of 16 bytes,
 *   every matrix 16-byte aligned, and an algorithm cuBLASLt's heuristic offers.
 *   cuBLASLt is column-major: ganctl's row-major C (m×n) is its Cᵀ = op(B)ᵀ·op(A)ᵀ, so
 *   its A is our B and its B our A (gemm.c does the same swap). Its FP8 kernels on Ada
 *   and Hopper take only the "TN" form, its A transposed and its B not: our B stored
 *   n×k (trans_b 1) is its k×n column-major matrix read transposed, our A stored m×k
 *   (trans_a 0) its k×m read as it is. Both keep k contiguous, which is why this one of
 *   the four transpose pairs is the one FP8 tensor cores read. cuBLASLt's scale
 *   pointers are dequantization factors, so they get 1/scale (computed on the device,
 *   in FP32) and multiply alpha: ((alpha·inv_a)·inv_b) · Σ qa·qb, the sum rescaled once.
 *
 *   BF16 fallback: every other call (the other transposes, blocks of scales, E5M2 by
 *   E5M2, shapes or alignments cuBLASLt's FP8 kernels refuse). Each operand is widened
 *   into BF16 in the operand scratch, then cuda_gemm runs the BF16 product (FP32
 *   accumulation on tensor cores). Per tensor, q is widened as it is (exact: at most 4
 *   significant bits) and the inverses go into alpha, read back to the host; per block,
 *   q·inv of its block is rounded once into BF16, exact for power-of-two scales. The
 *   operand scratch is not cuda_scratch because cuda_gemm stages through that one. */

/* cuBLASLt's workspace: what its FP8 kernels' heuristics ask for on Hopper. */
#define LT_WORKSPACE ((size_t)32 << 20)

static cudaDataType fp8_type(enum gan_dtype t)
{
    return t == GAN_F8E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

static cudaDataType c_type(enum gan_dtype t)
{
    return t == GAN_F16 ? CUDA_R_16F : t == GAN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* Whether the call has the form cuBLASLt's FP8 matmul takes (its requirements for FP8:
 * the TN form, 16-byte aligned matrices and leading dimensions, and no E5M2 by E5M2). */
static int lt_form(const struct gan_gemm_fp8 *f)
{
    const struct gan_gemm *g = &f->g;
    return f->block_a == 0 && f->block_b == 0 && g->trans_a == 0 && g->trans_b == 1 &&
           !(g->a.dtype == GAN_F8E5M2 && g->b.dtype == GAN_F8E5M2) && g->k % 16 == 0 &&
           ((size_t)g->n * gan_dtype_size(g->c.dtype)) % 16 == 0 &&
           aligned16(cuda_ref_ptr(&g->a)) && aligned16(cuda_ref_ptr(&g->b)) &&
           aligned16(cuda_ref_ptr(&g->c));
}

/* The cuBLASLt product; *taken is 0 when cuBLASLt has no algorithm for it (nothing has
 * been queued then but the inverse scales, which the fallback does not read). */
static gan_status lt_product(gan_backend *be, const struct gan_gemm_fp8 *f, int *taken)
{
    const struct gan_gemm *g = &f->g;
    *taken = 0;
    void *area = NULL;
    gan_status st = cuda_scratch(be, "gemm_fp8", 256 + LT_WORKSPACE, &area);
    if (st != GAN_OK)
        return st;
    float *inv = (float *)area;
    void *workspace = (unsigned char *)area + 256;
    if ((st = cuda_fp8_inverses(be, (const float *)cuda_ref_ptr(&f->scale_a),
                                (const float *)cuda_ref_ptr(&f->scale_b), inv)) != GAN_OK)
        return st;

    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
    const float *inv_a = inv, *inv_b = inv + 1;
    /* full FP32 accumulation, not Hopper's faster one in lower precision */
    const int8_t fast_accum = 0;
    const size_t ws = LT_WORKSPACE;
    const char *call = "gemm_fp8: cuBLASLt set-up";
    cublasStatus_t s = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n);
    /* its A is our B, its B our A */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &inv_b,
                                           sizeof inv_b);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &inv_a,
                                           sizeof inv_a);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum,
                                           sizeof fast_accum);
    if (s == CUBLAS_STATUS_SUCCESS) /* our B, n×k row-major: k×n column-major, ld k */
        s = cublasLtMatrixLayoutCreate(&la, fp8_type(g->b.dtype), (uint64_t)g->k,
                                       (uint64_t)g->n, g->k);
    if (s == CUBLAS_STATUS_SUCCESS) /* our A, m×k row-major: k×m column-major, ld k */
        s = cublasLtMatrixLayoutCreate(&lb, fp8_type(g->a.dtype), (uint64_t)g->k,
                                       (uint64_t)g->m, g->k);
    if (s == CUBLAS_STATUS_SUCCESS) /* C, m×n row-major: n×m column-major, ld n */
        s = cublasLtMatrixLayoutCreate(&lc, c_type(g->c.dtype), (uint64_t)g->n,
                                       (uint64_t)g->m, g->n);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t found;
    int count = 0;
    memset(&found, 0, sizeof found);
    if (s == CUBLAS_STATUS_SUCCESS) {
        /* no algorithm (NOT_SUPPORTED, or none returned) sends the call to the fallback */
        cublasStatus_t h = cublasLtMatmulAlgoGetHeuristic(be->lt, desc, la, lb, lc, lc, pref, 1,
                                                          &found, &count);
        if (h != CUBLAS_STATUS_SUCCESS && h != CUBLAS_STATUS_NOT_SUPPORTED)
            s = h;
    }
    st = cuda_check_blas(be, call, s);
    if (st == GAN_OK && count > 0 && found.state == CUBLAS_STATUS_SUCCESS) {
        *taken = 1;
        /* beta = 0 promises that C is not read: zeros first, so NaN there cannot come
         * through whatever cuBLASLt does with it */
        if (g->beta == 0.0f)
            st = cuda_check_rt(be, "gemm_fp8: cudaMemsetAsync",
                               cudaMemsetAsync(cuda_ref_ptr(&g->c), 0,
                                               (size_t)(g->m * g->n) *
                                                   gan_dtype_size(g->c.dtype),
                                               be->stream));
        if (st == GAN_OK)
            st = cuda_check_blas(be, "gemm_fp8: cublasLtMatmul",
                                 cublasLtMatmul(be->lt, desc, &g->alpha, cuda_ref_ptr(&g->b), la,
                                                cuda_ref_ptr(&g->a), lb, &g->beta,
                                                cuda_ref_ptr(&g->c), lc, cuda_ref_ptr(&g->c),
                                                lc, &found.algo, workspace, ws, be->stream));
    }
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (lc)
        cublasLtMatrixLayoutDestroy(lc);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (desc)
        cublasLtMatmulDescDestroy(desc);
    return st;
}

/* One scale of a per-tensor operand, read back to the host for alpha. */
static gan_status read_scale(gan_backend *be, const struct gan_ref *scale, float *out)
{
    gan_status st = cuda_check_rt(be, "gemm_fp8: reading a scale",
                                  cudaMemcpyAsync(out, cuda_ref_ptr(scale), sizeof *out,
                                                  cudaMemcpyDeviceToHost, be->stream));
    if (st == GAN_OK)
        st = cuda_check_rt(be, "gemm_fp8: cudaStreamSynchronize",
                           cudaStreamSynchronize(be->stream));
    return st;
}

/* The BF16 fallback (see above). */
static gan_status bf16_product(gan_backend *be, const struct gan_gemm_fp8 *f)
{
    const struct gan_gemm *g = &f->g;
    struct gan_fp8_layout la, lb;
    gan_gemm_fp8_layouts(f, &la, &lb);
    const int per_tensor = f->block_a == 0 && f->block_b == 0;
    const size_t na = (size_t)(la.rows * la.cols), nb = (size_t)(lb.rows * lb.cols);
    const size_t bytes_a = gan_gemm_align(na * 2, 256);
    void *area = NULL;
    gan_status st = cuda_operand_scratch(be, "gemm_fp8", bytes_a + nb * 2, &area);
    if (st != GAN_OK)
        return st;
    struct gan_buffer wide_a = { na * 2, area };
    struct gan_buffer wide_b = { nb * 2, (unsigned char *)area + bytes_a };
    struct gan_gemm w = *g;
    if (per_tensor) {
        float sa = 1.0f, sb = 1.0f;
        if ((st = read_scale(be, &f->scale_a, &sa)) != GAN_OK ||
            (st = read_scale(be, &f->scale_b, &sb)) != GAN_OK)
            return st;
        w.alpha = (g->alpha * (1.0f / sa)) * (1.0f / sb);
    }
    const float *scale_a = per_tensor ? NULL : (const float *)cuda_ref_ptr(&f->scale_a);
    const float *scale_b = per_tensor ? NULL : (const float *)cuda_ref_ptr(&f->scale_b);
    if ((st = cuda_fp8_widen(be, &la, cuda_ref_ptr(&g->a), g->a.dtype, scale_a, wide_a.ptr,
                             GAN_BF16)) != GAN_OK ||
        (st = cuda_fp8_widen(be, &lb, cuda_ref_ptr(&g->b), g->b.dtype, scale_b, wide_b.ptr,
                             GAN_BF16)) != GAN_OK)
        return st;
    w.a = (struct gan_ref){ &wide_a, 0, GAN_BF16 };
    w.b = (struct gan_ref){ &wide_b, 0, GAN_BF16 };
    return cuda_gemm(be, &w);
}

gan_status cuda_gemm_fp8(gan_backend *be, const struct gan_gemm_fp8 *f)
{
    if (!be->fp8)
        return cuda_fp8_refused(be, "gemm_fp8");
    gan_status st = gan_gemm_fp8_check(be->host, "cuBLASLt", f);
    if (st != GAN_OK)
        return st;
    const struct gan_gemm *g = &f->g;
    if (g->m == 0 || g->n == 0)
        return GAN_OK;
    struct gan_gemm unread;
    if (gan_gemm_fp8_unread(g, &unread))
        return cuda_gemm(be, &unread);
    if ((st = cuda_enter(be)) != GAN_OK)
        return st;
    if (lt_form(f)) {
        int taken = 0;
        if ((st = lt_product(be, f, &taken)) != GAN_OK || taken)
            return st;
    }
    return bf16_product(be, f);
}
