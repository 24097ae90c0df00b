/* SPDX-License-Identifier: MIT */
/* ops_linear.c — the affine layer x·wᵀ + b as one op: the bias written into the result
 * and the product accumulated onto it by the backend's GEMM (beta = 1), with its
 * backward in matmuls and a sum over the rows. */
#include "config.h"

#include <string.h>

#include "tensor/tensor_private.h"

/* With y = x·wᵀ + b (b broadcast over the rows): dx = g·w, dw = gᵀ·x, db = Σ_rows g.
 * The product's two gradients take g in the product's dtype (iparam[0]): where the
 * result is wider (O1: a 16-bit product and an FP32 sum), the composition
 * gan_add(gan_matmul(…), b) casts the product up, and that cast's backward rounds g
 * back down before the matmuls; the explicit gan_cast here is that same rounding. */
static gan_status linear_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gan_tensor *x = node->in[0], *w = node->in[1];
    enum gan_dtype pdt = (enum gan_dtype)node->iparam[0];
    int want_b = node->n_in > 2 && node->needs[2];
    if (node->needs[0] || node->needs[1]) {
        gan_tensor *gp = g->dtype == pdt ? g : gan_cast(ctx, g, pdt);
        if (gp && node->needs[0])
            gin[0] = ti_backward_matmul(ctx, node, 0, gp, w, 0, 0);
        if (gp && node->needs[1])
            gin[1] = ti_backward_matmul(ctx, node, 1, gp, x, 1, 0);
    }
    if (want_b)
        gin[2] = gan_sum_to(ctx, g, 1, &node->in[2]->dim[0]);
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1])
                              && (!want_b || gin[2]));
}

/* c ← x·wᵀ + beta·c by the backend's GEMM, all three in c's dtype (a backend need not
 * take mixed operand types: x and w are rounded to it when they differ, as gan_matmul
 * does). */
static gan_status product(gan_ctx *ctx, const char *op, gan_tensor *x, gan_tensor *w,
                          float beta, gan_tensor *c)
{
    gan_tensor *x2 = ti_as_dtype(ctx, op, x, c->dtype), *w2 = ti_as_dtype(ctx, op, w, c->dtype);
    if (!x2 || !w2 || !TI_HAS(ctx, op, gemm))
        return ti_result(ctx, 0);
    return ti_gemm(ctx, op, x2, "x", w2, "w", 0, 1, beta, c);
}

static int check_shapes(gan_ctx *ctx, const char *op, const gan_tensor *x, const gan_tensor *w,
                        const gan_tensor *b)
{
    char xs[160], ws[160], bs[160];
    ti_dims_str(xs, sizeof xs, x->ndim, x->dim);
    ti_dims_str(ws, sizeof ws, w->ndim, w->dim);
    if (x->ndim != 2 || w->ndim != 2) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: x is %s and w is %s; both must be 2-D, x [batch, "
                "in] and w [out, in] (gan_reshape them first)", op, xs, ws);
        return 0;
    }
    if (x->dim[1] != w->dim[1]) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: x is %s and w is %s; x [batch, in] needs w [out, "
                "in] with the same in (w is used transposed, as nn.Linear stores it)", op,
                xs, ws);
        return 0;
    }
    if (b && (b->ndim != 1 || b->dim[0] != w->dim[0])) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: b is %s for w %s; the bias must be [%lld], one "
                "value per output", op, ti_dims_str(bs, sizeof bs, b->ndim, b->dim), ws,
                (long long)w->dim[0]);
        return 0;
    }
    return 1;
}

gan_tensor *gan_linear(gan_ctx *ctx, gan_tensor *x, gan_tensor *w, gan_tensor *b)
{
    const char *op = "gan_linear";
    if (!ctx || !ti_check_input(ctx, op, "x", x) || !ti_check_input(ctx, op, "w", w)
        || (b && !ti_check_input(ctx, op, "b", b)) || !check_shapes(ctx, op, x, w, b))
        return NULL;
    /* The policy as for gan_add(gan_matmul(x, w, 0, 1), b): the product's dtype pdt
     * from the GEMM class, then the sum's from the element-wise class on pdt and b,
     * with b cast (cached, recorded) where the sum needs it. */
    enum gan_dtype pdt = ti_policy_apply(ctx, TI_CLASS_GEMM, &x, &w);
    if (pdt == GAN_DTYPE_COUNT)
        return NULL;
    enum gan_dtype dt = pdt;
    if (b) {
        dt = ti_policy_dtype(ctx, TI_CLASS_POINTWISE, pdt, b->dtype);
        if (!(b = ti_policy_cast(ctx, b, dt)))
            return NULL;
    }
    int64_t m = x->dim[0], k = x->dim[1], n = w->dim[0];
    int64_t dims[2] = { m, n };
    gan_tensor *y = ti_new_step(ctx, op, dt, 2, dims);
    if (!y)
        return NULL;
    if (y->numel > 0) {
        gan_status st;
        if (k == 0) {
            /* An empty product: the bias alone, without asking GEMM about k = 0. */
            st = b ? ti_unary(ctx, op, GAN_UNARY_COPY, 0.0f, b, y) : ti_fill(ctx, op, y, 0.0f);
        } else if (!b) {
            st = product(ctx, op, x, w, 0.0f, y);
        } else if (dt == pdt && dt != GAN_F16) {
            /* The fused path: every row of y starts as b (converted where b's dtype is
             * not y's, exactly when it widens), and GEMM adds the product onto it in
             * its FP32 accumulator, rounding once into y's dtype. FP16 stays on the
             * two roundings below (the product, then the sum), bit for bit the
             * composition: the FP16 experiments ganctl documents (the scalers, the
             * underflow and how it is cured) were measured on it and reproduce. */
            st = ti_unary(ctx, op, GAN_UNARY_COPY, 0.0f, b, y);
            if (st == GAN_OK)
                st = product(ctx, op, x, w, 1.0f, y);
        } else {
            /* FP16, or a sum wider than the product (O1, or 16-bit x and w with an
             * FP32 b with the policy off): the product is rounded to its own dtype
             * first, as the composition rounds it, then added in the sum's dtype. */
            gan_tensor *p = ti_new_step(ctx, op, pdt, 2, dims);
            st = p ? product(ctx, op, x, w, 0.0f, p) : ti_result(ctx, 0);
            if (st == GAN_OK && !TI_HAS(ctx, op, binary))
                st = ti_result(ctx, 0);
            if (st == GAN_OK) {
                struct gan_shape shape = ti_shape(2, dims);
                struct gan_operand po = ti_operand(p, 2, dims), bo = ti_operand(b, 2, dims);
                struct gan_operand yo = ti_operand(y, 2, dims);
                st = ctx->ops.binary(ctx->be, GAN_BINARY_ADD, &shape, &po, &bo, &yo);
                if (st != GAN_OK)
                    st = ti_backend_fail(ctx, op, "binary", st);
            }
        }
        if (st != GAN_OK)
            return NULL;
    }
    struct ti_node *node;
    if (ti_record3(ctx, y, op, linear_backward, x, w, b, &node) != GAN_OK)
        return NULL;
    if (node)
        node->iparam[0] = pdt;
    return ti_policy_clamp(ctx, y, b != NULL);
}
