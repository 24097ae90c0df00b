/* SPDX-License-Identifier: MIT */
/* ops_matmul.c — the 2-D matrix product op(a)·op(b) on the backend's GEMM, and its
 * backward as two more products with transposes. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

gan_status ti_gemm(gan_ctx *ctx, const char *op, gan_tensor *a, const char *a_name,
                   gan_tensor *b, const char *b_name, int trans_a, int trans_b, float beta,
                   gan_tensor *y)
{
    struct gan_gemm gm;
    memset(&gm, 0, sizeof gm);
    gm.trans_a = trans_a;
    gm.trans_b = trans_b;
    gm.m = y->dim[0];
    gm.n = y->dim[1];
    gm.k = a->dim[!trans_a];
    gm.alpha = 1.0f;
    gm.beta = beta;
    gm.a = ti_ref(a);
    gm.b = ti_ref(b);
    gm.c = ti_ref(y);
    gm.lda = a->dim[1];
    gm.ldb = b->dim[1];
    gm.ldc = gm.n;
    gm.batch = 1;
    gm.stride_a = a->numel;
    gm.stride_b = b->numel;
    gm.stride_c = y->numel;
    if (ti_fp8_active(ctx, y->dtype))
        return ti_fp8_gemm(ctx, op, ti_fp8_occurrence(ctx, op), &gm, a, a_name, b, b_name);
    gan_status st = ctx->ops.gemm(ctx->be, &gm);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "gemm", st);
}

/* With Â = op(a), B̂ = op(b) and C = Â·B̂: dÂ = g·B̂ᵀ and dB̂ = Âᵀ·g. Undoing op():
 *   da = g·B̂ᵀ = matmul(g, b, 0, !tb)         when a is not transposed,
 *   da = (g·B̂ᵀ)ᵀ = B̂·gᵀ = matmul(b, g, tb, 1) when it is;
 *   db = Âᵀ·g = matmul(a, g, !ta, 0)          when b is not transposed,
 *   db = (Âᵀ·g)ᵀ = gᵀ·Â = matmul(g, a, 1, ta) when it is. */
static gan_status matmul_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gan_tensor *a = node->in[0], *b = node->in[1];
    int ta = (int)node->iparam[0], tb = (int)node->iparam[1];
    if (node->needs[0])
        gin[0] = ta ? ti_backward_matmul(ctx, node, 0, b, g, tb, 1)
                    : ti_backward_matmul(ctx, node, 0, g, b, 0, !tb);
    if (node->needs[1])
        gin[1] = tb ? ti_backward_matmul(ctx, node, 1, g, a, 1, ta)
                    : ti_backward_matmul(ctx, node, 1, a, g, !ta, 0);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

gan_tensor *gan_matmul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b, int trans_a, int trans_b)
{
    const char *op = "gan_matmul";
    char as[160], bs[160];
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !ti_check_input(ctx, op, "b", b))
        return NULL;
    trans_a = trans_a != 0;
    trans_b = trans_b != 0;
    if (a->ndim != 2 || b->ndim != 2) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: a is %s and b is %s; both must be 2-D matrices "
                "(gan_reshape them first)", op, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                ti_dims_str(bs, sizeof bs, b->ndim, b->dim));
        return NULL;
    }
    int64_t m = a->dim[trans_a], k = a->dim[!trans_a];
    int64_t kb = b->dim[trans_b], n = b->dim[!trans_b];
    if (k != kb) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: op(a) is %lld×%lld and op(b) is %lld×%lld (a %s%s, "
                "b %s%s): the inner sizes must agree", op, (long long)m, (long long)k,
                (long long)kb, (long long)n, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                trans_a ? " transposed" : "", ti_dims_str(bs, sizeof bs, b->ndim, b->dim),
                trans_b ? " transposed" : "");
        return NULL;
    }
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_GEMM, &a, &b);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    int64_t dims[2] = { m, n };
    gan_tensor *y = ti_new_step(ctx, op, dt, 2, dims);
    if (!y)
        return NULL;
    if (k == 0) {
        /* An empty sum: zeros, without asking GEMM about a zero inner size. */
        if (y->numel && ti_fill(ctx, op, y, 0.0f) != GAN_OK)
            return NULL;
    } else if (m > 0 && n > 0) {
        /* GEMM's operands may differ in type, but a backend need not support every
         * mix: give it one type, the result's. */
        gan_tensor *a2 = ti_as_dtype(ctx, op, a, dt), *b2 = ti_as_dtype(ctx, op, b, dt);
        if (!a2 || !b2 || !TI_HAS(ctx, op, gemm))
            return NULL;
        if (ti_gemm(ctx, op, a2, "a", b2, "b", trans_a, trans_b, 0.0f, y) != GAN_OK)
            return NULL;
    }
    struct ti_node *node;
    if (ti_record(ctx, y, op, matmul_backward, a, b, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = trans_a;
        node->iparam[1] = trans_b;
    }
    return ti_policy_clamp(ctx, y, 0);
}

gan_tensor *ti_backward_matmul(gan_ctx *ctx, struct ti_node *node, int i, gan_tensor *a,
                               gan_tensor *b, int trans_a, int trans_b)
{
    const char *op = "gan_matmul";
    gan_tensor *into = node->into[i];
    /* In place only in FP32 as it stands: a 16-bit gradient keeps its rounding of each
     * term (the FP16 experiments reproduce bit for bit), and FP8's products scale
     * their operands per call. */
    if (into && a->dtype == GAN_F32 && b->dtype == GAN_F32 && into->dtype == GAN_F32 &&
        a->ndim == 2 && b->ndim == 2 && into->ndim == 2 && !ti_fp8_active(ctx, GAN_F32) &&
        ti_policy_dtype(ctx, TI_CLASS_GEMM, GAN_F32, GAN_F32) == GAN_F32 &&
        a->dim[!trans_a] == b->dim[trans_b] && a->dim[!trans_a] > 0 &&
        into->dim[0] == a->dim[trans_a] && into->dim[1] == b->dim[!trans_b] &&
        into->numel > 0 && TI_HAS(ctx, op, gemm))
        return ti_gemm(ctx, op, a, "a", b, "b", trans_a, trans_b, 1.0f, into) == GAN_OK ? into
                                                                                   : NULL;
    gan_tensor *y = gan_matmul(ctx, a, b, trans_a, trans_b);
    if (y)
        node->fresh |= 1u << i;
    return y;
}
