/* SPDX-License-Identifier: MIT */
/* gemm.c — C = alpha·op(A)·op(B) + beta·C through cuBLAS (cublasGemmEx, strided batched),
 * row-major, FP32/FP16/BF16 operands with FP32 accumulation; mixed types staged through FP32. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/gemm_checks.h"

/* Row-major through a column-major library: a row-major matrix is the column-major
 * matrix of its transpose, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ, that
 * is cuBLAS's gemm with the operands swapped, m and n swapped, and each operand's own
 * transpose flag: no data moves.
 *
 * Types. cublasGemmEx with CUBLAS_COMPUTE_32F accepts A and B of one type, FP32, FP16
 * or BF16, and C of that type or FP32; products are exact and accumulate in FP32 (on
 * tensor cores for 16-bit inputs; FP32 inputs never use TF32 under this compute type).
 * Any other mix (A and B of different types, FP32 inputs with a 16-bit C, FP16 inputs
 * with a BF16 C) is staged as the CPU backend does it: 16-bit operands widened exactly
 * to FP32 in scratch, a 16-bit C accumulated in an FP32 copy and rounded once.
 *
 * Edge cases follow the CPU backend: beta = 0 never reads C (cuBLAS promises it; NaN
 * there does not come through); k = 0 or alpha = 0 gives beta·C without reading A or
 * B (done with the element-wise kernel, so no library convention is relied on). */

static cudaDataType cuda_type(enum gan_dtype t)
{
    switch (t) {
    case GAN_F16: return CUDA_R_16F;
    case GAN_BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

/* An operand as cuBLAS gets it: where, what type, its row stride and batch stride. */
struct operand {
    void *ptr;
    enum gan_dtype dtype;
    int64_t ld, stride;
};

/* The matrices of `s` (batch entries, or one when they all share it) as a strided
 * element-wise view, and a packed view of the same shape in an FP32 area. */
static void matrix_views(const struct gan_gemm_stored *s, int64_t count, struct gan_shape *shape,
                         struct gan_operand *view, struct gan_buffer *area, void *ptr,
                         struct gan_operand *packed)
{
    memset(shape, 0, sizeof *shape);
    shape->ndim = 3;
    shape->dim[0] = count;
    shape->dim[1] = s->rows;
    shape->dim[2] = s->cols;
    memset(view, 0, sizeof *view);
    view->buf = s->ref->buf;
    view->offset = s->ref->offset;
    view->dtype = s->ref->dtype;
    view->stride[0] = s->stride;
    view->stride[1] = s->ld;
    view->stride[2] = 1;
    area->bytes = (size_t)(count * s->rows * s->cols) * sizeof(float);
    area->ptr = ptr;
    memset(packed, 0, sizeof *packed);
    packed->buf = area;
    packed->dtype = GAN_F32;
    packed->stride[0] = s->rows * s->cols;
    packed->stride[1] = s->cols;
    packed->stride[2] = 1;
}

/* The staged operands are 256-byte aligned pieces of one scratch allocation, as
 * cudaMalloc aligns its own. */
#define GEMM_STAGE_ALIGN 256

/* A checked product with a non-empty C (backends/common/gemm_checks.h). */
static gan_status gemm_product(gan_backend *be, const struct gan_gemm *g,
                               const struct gan_gemm_stored *sa,
                               const struct gan_gemm_stored *sb,
                               const struct gan_gemm_stored *sc)
{
    const int64_t m = g->m, n = g->n, k = g->k, batch = g->batch;
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;

    if (k == 0 || g->alpha == 0.0f) {
        /* C = beta·C, in place, over (batch, m, n); beta = 0 writes zeros unread. */
        struct gan_shape shape = { 3, { batch, m, n } };
        struct gan_operand c;
        memset(&c, 0, sizeof c);
        c.buf = g->c.buf;
        c.offset = g->c.offset;
        c.dtype = g->c.dtype;
        c.stride[0] = g->stride_c;
        c.stride[1] = g->ldc;
        c.stride[2] = 1;
        return g->beta == 0.0f ? cuda_unary(be, GAN_UNARY_FILL, 0.0f, &shape, &c, &c)
                               : cuda_unary(be, GAN_UNARY_SCALE, g->beta, &shape, &c, &c);
    }

    struct operand oa = { cuda_ref_ptr(&g->a), g->a.dtype, g->lda, g->stride_a };
    struct operand ob = { cuda_ref_ptr(&g->b), g->b.dtype, g->ldb, g->stride_b };
    struct operand oc = { cuda_ref_ptr(&g->c), g->c.dtype, g->ldc, g->stride_c };
    const int native = oa.dtype == ob.dtype && (oc.dtype == GAN_F32 || oc.dtype == oa.dtype);
    const int stage_a = !native && oa.dtype != GAN_F32;
    const int stage_b = !native && ob.dtype != GAN_F32;
    const int stage_c = !native && oc.dtype != GAN_F32;
    /* A shared operand (stride 0) is widened once for the whole batch. */
    const int64_t count_a = g->stride_a ? batch : 1, count_b = g->stride_b ? batch : 1;
    size_t bytes_a =
        stage_a ? gan_gemm_align((size_t)(count_a * sa->rows * sa->cols) * sizeof(float),
                                 GEMM_STAGE_ALIGN) : 0;
    size_t bytes_b =
        stage_b ? gan_gemm_align((size_t)(count_b * sb->rows * sb->cols) * sizeof(float),
                                 GEMM_STAGE_ALIGN) : 0;
    size_t bytes_c =
        stage_c ? gan_gemm_align((size_t)(batch * m * n) * sizeof(float),
                                 GEMM_STAGE_ALIGN) : 0;
    unsigned char *scratch = NULL;
    if (bytes_a + bytes_b + bytes_c &&
        (st = cuda_scratch(be, "gemm", bytes_a + bytes_b + bytes_c, (void **)&scratch)) != GAN_OK)
        return st;

    struct gan_shape shape;
    struct gan_operand view, packed;
    struct gan_buffer area;
    if (stage_a) {
        matrix_views(sa, count_a, &shape, &view, &area, scratch, &packed);
        if ((st = cuda_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &view, &packed)) != GAN_OK)
            return st;
        oa = (struct operand){ scratch, GAN_F32, sa->cols > 1 ? sa->cols : 1,
                               g->stride_a ? sa->rows * sa->cols : 0 };
    }
    if (stage_b) {
        matrix_views(sb, count_b, &shape, &view, &area, scratch + bytes_a, &packed);
        if ((st = cuda_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &view, &packed)) != GAN_OK)
            return st;
        ob = (struct operand){ scratch + bytes_a, GAN_F32, sb->cols > 1 ? sb->cols : 1,
                               g->stride_b ? sb->rows * sb->cols : 0 };
    }
    unsigned char *cpack = scratch + bytes_a + bytes_b;
    if (stage_c) {
        matrix_views(sc, batch, &shape, &view, &area, cpack, &packed);
        if (g->beta != 0.0f &&
            (st = cuda_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &view, &packed)) != GAN_OK)
            return st;
        oc = (struct operand){ cpack, GAN_F32, n, m * n };
    }

    const float alpha = g->alpha, beta = g->beta;
    const cublasOperation_t op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (batch == 1)
        st = cuda_check_blas(be, "gemm: cublasGemmEx",
                             cublasGemmEx(be->blas, op_b, op_a, (int)n, (int)m, (int)k, &alpha,
                                          ob.ptr, cuda_type(ob.dtype), (int)ob.ld,
                                          oa.ptr, cuda_type(oa.dtype), (int)oa.ld, &beta,
                                          oc.ptr, cuda_type(oc.dtype), (int)oc.ld,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        st = cuda_check_blas(be, "gemm: cublasGemmStridedBatchedEx",
                             cublasGemmStridedBatchedEx(
                                 be->blas, op_b, op_a, (int)n, (int)m, (int)k, &alpha,
                                 ob.ptr, cuda_type(ob.dtype), (int)ob.ld, (long long)ob.stride,
                                 oa.ptr, cuda_type(oa.dtype), (int)oa.ld, (long long)oa.stride,
                                 &beta, oc.ptr, cuda_type(oc.dtype), (int)oc.ld,
                                 (long long)oc.stride, (int)batch, CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT));
    if (st != GAN_OK || !stage_c)
        return st;
    /* The FP32 result, rounded once into C. */
    matrix_views(sc, batch, &shape, &view, &area, cpack, &packed);
    return cuda_unary(be, GAN_UNARY_COPY, 0.0f, &shape, &packed, &view);
}

gan_status cuda_gemm(gan_backend *be, const struct gan_gemm *g)
{
    return gan_gemm_entry(be, be->host, "cuBLAS", INT_MAX, gemm_product, g);
}
