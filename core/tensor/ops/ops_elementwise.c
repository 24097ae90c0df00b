/* SPDX-License-Identifier: MIT */
/* ops_elementwise.c — element-wise ops (broadcasting binary ones and unary ones), each
 * with its backward written in these same ops so that it can be differentiated again. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tensor/tensor_private.h"
/* The FP16 and BF16 rounding the backends store with, to model their stores exactly
 * (leaky_step_exact). */
#include "../../../backends/common/convert.h"
/* Which binary ops have a parameter, as the backends' checks say. */
#include "../../../backends/common/elementwise_ops.h"

/* ------------------------------------------------------------------ shared parts */

/* numpy's rule: align trailing dimensions; each pair must be equal or contain a 1. */
static int broadcast_dims(gan_ctx *ctx, const char *op, const gan_tensor *a,
                          const gan_tensor *b, int *ndim, int64_t *dims)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < n; d++) {
        int da = d - (n - a->ndim), db = d - (n - b->ndim);
        int64_t sa = da < 0 ? 1 : a->dim[da], sb = db < 0 ? 1 : b->dim[db];
        if (sa != sb && sa != 1 && sb != 1) {
            char as[160], bs[160];
            ti_fail(ctx, GAN_ERR_INVALID, "%s: shapes %s and %s do not broadcast (dimension "
                    "%d of the result: %lld against %lld; trailing dimensions must be equal "
                    "or 1)", op, ti_dims_str(as, sizeof as, a->ndim, a->dim),
                    ti_dims_str(bs, sizeof bs, b->ndim, b->dim), d, (long long)sa,
                    (long long)sb);
            return 0;
        }
        dims[d] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return 1;
}

static int same_dims(const gan_tensor *a, const gan_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->dim, b->dim, (size_t)a->ndim * sizeof a->dim[0]) == 0;
}

/* The gradient of a broadcast operand: g summed back down to t's shape. */
static gan_tensor *reduce_like(gan_ctx *ctx, gan_tensor *g, const gan_tensor *t)
{
    if (!g)
        return NULL;
    return same_dims(g, t) ? g : gan_sum_to(ctx, g, t->ndim, t->dim);
}

/* Both gradients a binary backward was asked for exist. */
static gan_status binary_done(gan_ctx *ctx, const struct ti_node *node, gan_tensor **gin)
{
    return ti_result(ctx, (!node->needs[0] || gin[0]) && (!node->needs[1] || gin[1]));
}

/* A new dtype-dt tensor of the broadcast shape holding a `bop` b, from one backend
 * call; NULL with the reason recorded. */
static gan_tensor *binary_result(gan_ctx *ctx, const char *op, enum gan_binary_op bop,
                                 float alpha, gan_tensor *a, gan_tensor *b, enum gan_dtype dt,
                                 int ndim, const int64_t *dims)
{
    gan_tensor *y = ti_new_step(ctx, op, dt, ndim, dims);
    if (!y)
        return NULL;
    struct gan_shape shape = ti_shape(ndim, dims);
    struct gan_operand ao = ti_operand(a, ndim, dims), bo = ti_operand(b, ndim, dims);
    struct gan_operand yo = ti_operand(y, ndim, dims);
    /* An op with a parameter goes to binary_alpha, the only slot that takes one; ADD_RELU
     * goes beside ADD_LEAKY, to the slot whose presence says the backend fuses */
    const int with_alpha = gan_ew_binary_has_alpha(bop) || gan_ew_binary_stores_sum(bop);
    gan_status st = with_alpha
                        ? ctx->ops.binary_alpha(ctx->be, bop, alpha, &shape, &ao, &bo, &yo)
                        : ctx->ops.binary(ctx->be, bop, &shape, &ao, &bo, &yo);
    if (st != GAN_OK) {
        ti_backend_fail(ctx, op, with_alpha ? "binary_alpha" : "binary", st);
        return NULL;
    }
    return y;
}

static gan_tensor *binary_forward(gan_ctx *ctx, const char *op, enum gan_binary_op bop,
                                  gan_tensor *a, gan_tensor *b, ti_backward_fn backward)
{
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !ti_check_input(ctx, op, "b", b))
        return NULL;
    int ndim;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    if (!broadcast_dims(ctx, op, a, b, &ndim, dims) || !TI_HAS(ctx, op, binary))
        return NULL;
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &a, &b);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *y = binary_result(ctx, op, bop, 0.0f, a, b, dt, ndim, dims);
    if (!y)
        return NULL;
    struct ti_node *node;
    if (ti_record(ctx, y, op, backward, a, b, &node) != GAN_OK)
        return NULL;
    return y;
}

static gan_tensor *unary_forward(gan_ctx *ctx, const char *op, enum gan_unary_op uop,
                                 float alpha, gan_tensor *a, ti_backward_fn backward)
{
    if (!ctx || !ti_check_input(ctx, op, "a", a))
        return NULL;
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &a, NULL);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *y = ti_new_step(ctx, op, dt, a->ndim, a->dim);
    if (!y || ti_unary(ctx, op, uop, alpha, a, y) != GAN_OK)
        return NULL;
    if (!backward)
        return y;
    struct ti_node *node;
    if (ti_record(ctx, y, op, backward, a, NULL, &node) != GAN_OK)
        return NULL;
    if (node)
        node->fparam[0] = alpha;
    return y;
}

/* ------------------------------------------------------------------ binary ops */

/* d(a + b) = (g, g), each summed back over its broadcast dimensions. */
static gan_status add_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    if (node->needs[0])
        gin[0] = reduce_like(ctx, g, node->in[0]);
    if (node->needs[1])
        gin[1] = reduce_like(ctx, g, node->in[1]);
    return binary_done(ctx, node, gin);
}

gan_tensor *gan_add(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    return binary_forward(ctx, "gan_add", GAN_BINARY_ADD, a, b, add_backward);
}

/* d(a − b) = (g, −g). */
static gan_status sub_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    if (node->needs[0])
        gin[0] = reduce_like(ctx, g, node->in[0]);
    if (node->needs[1])
        gin[1] = reduce_like(ctx, gan_neg(ctx, g), node->in[1]);
    return binary_done(ctx, node, gin);
}

gan_tensor *gan_sub(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    return binary_forward(ctx, "gan_sub", GAN_BINARY_SUB, a, b, sub_backward);
}

/* d(a·b) = (g·b, g·a). */
static gan_status mul_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    if (node->needs[0])
        gin[0] = reduce_like(ctx, gan_mul(ctx, g, node->in[1]), node->in[0]);
    if (node->needs[1])
        gin[1] = reduce_like(ctx, gan_mul(ctx, g, node->in[0]), node->in[1]);
    return binary_done(ctx, node, gin);
}

gan_tensor *gan_mul(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    return binary_forward(ctx, "gan_mul", GAN_BINARY_MUL, a, b, mul_backward);
}

/* d(a/b) = (g/b, −g·a/b²), the second written −(g·y)/b with y = a/b: y is recorded, so
 * a second differentiation still reaches a and b through it. */
static gan_status div_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    gan_tensor *b = node->in[1];
    if (node->needs[0])
        gin[0] = reduce_like(ctx, gan_div(ctx, g, b), node->in[0]);
    if (node->needs[1])
        gin[1] = reduce_like(ctx, gan_neg(ctx, gan_div(ctx, gan_mul(ctx, g, node->out), b)), b);
    return binary_done(ctx, node, gin);
}

gan_tensor *gan_div(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    return binary_forward(ctx, "gan_div", GAN_BINARY_DIV, a, b, div_backward);
}

/* ------------------------------------------------------------------ ReLU's mask */

static gan_tensor *mask_positive(gan_ctx *ctx, gan_tensor *g, gan_tensor *x,
                                 enum gan_dtype mask_dtype);

/* d(g·[x > 0]) = (gg·[x > 0], nothing): the mask is a constant of the graph, as step(x)
 * was, so the next order is the same one-pass op again, with the same x, typed beside
 * the dtype this op's result had (which is what the mul's step operand had, cast). */
static gan_status mask_positive_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                         gan_tensor **gin)
{
    gin[0] = reduce_like(ctx, mask_positive(ctx, g, node->in[1],
                                            (enum gan_dtype)node->iparam[0]), node->in[0]);
    return ti_result(ctx, gin[0] != NULL);
}

/* y = g·mask(x) in one backend pass, `bop` (MASK_POSITIVE or MASK_LEAKY, with its
 * parameter alpha), for the masked products below: named `op` in messages, taped as
 * `taped` with `backward` when g wants a gradient (*node then is the node, else NULL).
 * The kernel multiplies, so NaN in g and −0 stay as the mul gave them. x is read as it
 * is, never cast: the caller has given it the cast the mask's own op would have given
 * it, and mask_dtype is the dtype that op's result would have had, which with g's
 * chooses y's dtype as it did for the mul. Only g is differentiated. */
static gan_tensor *masked_product(gan_ctx *ctx, const char *op, const char *taped,
                                  enum gan_binary_op bop, float alpha, gan_tensor *g,
                                  gan_tensor *x, enum gan_dtype mask_dtype,
                                  ti_backward_fn backward, struct ti_node **node)
{
    *node = NULL;
    if (!ti_check_input(ctx, op, "g", g) || !ti_check_input(ctx, op, "x", x))
        return NULL;
    int ndim;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    if (!broadcast_dims(ctx, op, g, x, &ndim, dims))
        return NULL;
    if (bop == GAN_BINARY_MASK_LEAKY ? !TI_HAS(ctx, op, binary_alpha) : !TI_HAS(ctx, op, binary))
        return NULL;
    enum gan_dtype dt = ti_policy_apply_beside(ctx, TI_CLASS_POINTWISE, &g, mask_dtype);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *y = binary_result(ctx, op, bop, alpha, g, x, dt, ndim, dims);
    if (!y || !ti_wants_grad(ctx, g))
        return y;
    /* x rides along as the second input so that the backward finds it, but it never
     * asks for a gradient: a zero one would only cost a pass and could turn a −0 in x's
     * gradient into +0. */
    if (ti_record(ctx, y, taped, backward, g, x, node) != GAN_OK)
        return NULL;
    (*node)->needs[1] = 0;
    (*node)->iparam[0] = dt;
    return y;
}

/* y = g·(x > 0 ? 1 : 0): gan_mul(g, gan_step(x)) bit for bit without step's pass and
 * its temporary (masked_product). */
static gan_tensor *mask_positive(gan_ctx *ctx, gan_tensor *g, gan_tensor *x,
                                 enum gan_dtype mask_dtype)
{
    struct ti_node *node;
    return masked_product(ctx, "gan_mask_positive", "gan_mask_positive",
                          GAN_BINARY_MASK_POSITIVE, 0.0f, g, x, mask_dtype,
                          mask_positive_backward, &node);
}

/* ------------------------------------------------------------------ unary ops */

/* d(s·a) = s·g. */
static gan_status scale_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                 gan_tensor **gin)
{
    gin[0] = gan_scale(ctx, g, node->fparam[0]);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_scale(gan_ctx *ctx, gan_tensor *a, float s)
{
    return unary_forward(ctx, "gan_scale", GAN_UNARY_SCALE, s, a, scale_backward);
}

/* d(a + s) = g. */
static gan_status pass_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    (void)node;
    gin[0] = g;
    return ti_result(ctx, g != NULL);
}

gan_tensor *gan_add_scalar(gan_ctx *ctx, gan_tensor *a, float s)
{
    return unary_forward(ctx, "gan_add_scalar", GAN_UNARY_ADD_SCALAR, s, a, pass_backward);
}

/* d(−a) = −g. */
static gan_status neg_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                               gan_tensor **gin)
{
    (void)node;
    gin[0] = gan_neg(ctx, g);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_neg(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_neg", GAN_UNARY_NEG, 0.0f, a, neg_backward);
}

/* d relu(x) = g·step(x). step is a constant of the graph (its own derivative is 0
 * almost everywhere), so the second derivative through relu is 0, as it should be.
 * A backend of ABI 1.3 or later does it in one pass (MASK_POSITIVE); x gets the cast
 * the policy would give step's input, so the mask is step's bit for bit. */
static gan_tensor *relu_gradient(gan_ctx *ctx, gan_tensor *g, gan_tensor *x)
{
    if (ctx->backend_abi_minor < 3)
        return gan_mul(ctx, g, gan_step(ctx, x));
    enum gan_dtype mask_dtype = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &x, NULL);
    return mask_dtype == GAN_DTYPE_COUNT ? NULL : mask_positive(ctx, g, x, mask_dtype);
}

static gan_status relu_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    gin[0] = relu_gradient(ctx, g, node->in[0]);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_relu(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_relu", GAN_UNARY_RELU, 0.0f, a, relu_backward);
}

/* v stored in dt as the backends store it and read back: the FP32 sum first (through
 * a volatile, as x87 would keep it wider), then rounded to dt by the conversions both
 * backends use, so that the host's model of their stores cannot drift from them. */
static float stored(enum gan_dtype dt, float v)
{
    volatile float f32 = v;
    volatile float t = gan_bits_value(dt, gan_float_bits(dt, f32));
    return t;
}

/* Whether LEAKY_STEP(x, slope), stored in dt, has the bits of the composition
 * add_scalar(scale(step(x), 1 − slope), slope) in dt, each op computed in FP32 and
 * stored in dt as the backends do: where step is 1, ((1 − slope) + slope) must come to
 * 1, and where it is 0, (±0 + slope) to slope itself. It does for every slope in [0, 1]
 * but −0, in FP32, FP16 and BF16 (checked over all FP32 slopes); other dtypes keep the
 * composition. */
static int leaky_step_exact(enum gan_dtype dt, float slope)
{
    if (dt != GAN_F32 && dt != GAN_F16 && dt != GAN_BF16)
        return 0;
    const float c = stored(GAN_F32, 1.0f - slope); /* scale's alpha, a float argument */
    float high = stored(dt, stored(dt, c * 1.0f) + slope);
    float low = stored(dt, stored(dt, c * 0.0f) + slope);
    return gan_f32_bits(high) == gan_f32_bits(1.0f) &&
           gan_f32_bits(low) == gan_f32_bits(stored(dt, slope));
}

static gan_tensor *leaky_factor_times(gan_ctx *ctx, gan_tensor *g, gan_tensor *x,
                                      enum gan_dtype mask_dtype, float slope);

/* d(g·factor(x)) = (gg·factor(x), nothing): the factor is a constant of the graph, so
 * the next order is the same product again, as mask_positive_backward's. */
static gan_status mask_leaky_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                      gan_tensor **gin)
{
    gin[0] = reduce_like(ctx, leaky_factor_times(ctx, g, node->in[1],
                                                 (enum gan_dtype)node->iparam[0],
                                                 node->fparam[0]),
                         node->in[0]);
    return ti_result(ctx, gin[0] != NULL);
}

/* y = g·LEAKY_STEP(x, slope) (binary_alpha's MASK_LEAKY, masked_product): the bits of
 * gan_mul(g, the LEAKY_STEP tensor) without that tensor and its pass. mask_dtype is the
 * dtype the factor would have had, which is the product's (leaky_factor_times), and the
 * backend gets the slope as that factor stores it. Taped as the gan_mul it stands for,
 * so that a tape whose factor took its own pass (another dtype's, as the underflow
 * probe's FP32 shadow may be) lines up with this one op for op. */
static gan_tensor *mask_leaky(gan_ctx *ctx, gan_tensor *g, gan_tensor *x,
                              enum gan_dtype mask_dtype, float slope)
{
    struct ti_node *node;
    gan_tensor *y = masked_product(ctx, "gan_mask_leaky", "gan_mul", GAN_BINARY_MASK_LEAKY,
                                   stored(mask_dtype, slope), g, x, mask_dtype,
                                   mask_leaky_backward, &node);
    if (node)
        node->fparam[0] = slope; /* iparam[0], the product's dtype, is mask_dtype */
    return y;
}

/* g·LEAKY_STEP(x, slope), x cast as LEAKY_STEP's input would be and mask_dtype the dtype
 * of its result: in one pass (mask_leaky) where the backend has binary_alpha and the
 * product is in mask_dtype too, so that gan_mul would read the factor uncast, and its
 * next order would multiply by that same factor; otherwise the factor and gan_mul. */
static gan_tensor *leaky_factor_times(gan_ctx *ctx, gan_tensor *g, gan_tensor *x,
                                      enum gan_dtype mask_dtype, float slope)
{
    if (!g)
        return NULL;
    if (ctx->ops.binary_alpha &&
        ti_policy_dtype(ctx, TI_CLASS_POINTWISE, g->dtype, mask_dtype) == mask_dtype)
        return mask_leaky(ctx, g, x, mask_dtype, slope);
    return gan_mul(ctx, g, unary_forward(ctx, "gan_leaky_step", GAN_UNARY_LEAKY_STEP, slope, x,
                                         NULL));
}

/* d leaky_relu(x) = g·(slope + (1 − slope)·step(x)). The factor is a constant of the
 * graph, as step is. A backend of ABI 1.7 or later computes it in one pass
 * (LEAKY_STEP: x > 0 ? 1 : slope) where that gives the composition's bits
 * (leaky_step_exact), three passes fewer for each leaky ReLU of a backward, and as many
 * in the penalty's double backward. The one op is typed and casts x as step does, and
 * the policy maps a dtype it chose to itself, so scale and add_scalar stay in step's
 * dtype dt. A backend with binary_alpha (ABI 1.8) also multiplies in that pass
 * (MASK_LEAKY), with the slope as LEAKY_STEP would have stored it, and the factor is
 * never made: the same bits, one pass instead of two at each order. */
static gan_tensor *leaky_relu_gradient(gan_ctx *ctx, gan_tensor *g, gan_tensor *x, float slope)
{
    enum gan_dtype dt = ti_policy_dtype(ctx, TI_CLASS_POINTWISE, x->dtype, GAN_DTYPE_COUNT);
    if (ctx->backend_abi_minor >= 7 && leaky_step_exact(dt, slope)) {
        /* x cast here as LEAKY_STEP would cast it itself (the cast is cached) */
        enum gan_dtype mask_dtype = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &x, NULL);
        return mask_dtype == GAN_DTYPE_COUNT ? NULL
                                             : leaky_factor_times(ctx, g, x, mask_dtype, slope);
    }
    return gan_mul(ctx, g, gan_add_scalar(ctx, gan_scale(ctx, gan_step(ctx, x), 1.0f - slope),
                                          slope));
}

static gan_status leaky_relu_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                      gan_tensor **gin)
{
    gin[0] = leaky_relu_gradient(ctx, g, node->in[0], node->fparam[0]);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_leaky_relu(gan_ctx *ctx, gan_tensor *a, float slope)
{
    return unary_forward(ctx, "gan_leaky_relu", GAN_UNARY_LEAKY_RELU, slope, a,
                         leaky_relu_backward);
}

/* ------------------------------------------------------------------ a bias and its activation */

/* d act(a + b) = (dz, dz), each summed back over its broadcast dimensions, with dz the
 * activation's gradient taken at the output y instead of the sum z: for a slope ≥ 0 (and
 * ReLU's 0), y > 0 exactly where z > 0, NaN included, in every dtype, and y has z's
 * dtype, so the masks, their casts and the ops that make dz are the activation's own. */
static gan_status add_activation_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                          gan_tensor **gin)
{
    gan_tensor *dz = node->iparam[0] == GAN_BINARY_ADD_RELU
                         ? relu_gradient(ctx, g, node->out)
                         : leaky_relu_gradient(ctx, g, node->out, node->fparam[0]);
    if (dz && node->needs[0])
        gin[0] = reduce_like(ctx, dz, node->in[0]);
    if (dz && node->needs[1])
        gin[1] = reduce_like(ctx, dz, node->in[1]);
    return binary_done(ctx, node, gin);
}

/* act(a + b) in one backend pass (ADD_LEAKY or ADD_RELU) and one node, where the
 * backend is of ABI 1.9 and has binary_alpha and the slope is ≥ 0; otherwise gan_add
 * and then the activation. The policy gives the sum's dtype once: the activation would
 * keep it (a dtype the policy chose maps to itself), so nothing is cast between. */
static gan_tensor *add_activation(gan_ctx *ctx, const char *op, enum gan_binary_op bop,
                                  float slope, gan_tensor *a, gan_tensor *b)
{
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !ti_check_input(ctx, op, "b", b))
        return NULL;
    if (ctx->backend_abi_minor < 9 || !ctx->ops.binary_alpha || !(slope >= 0.0f) ||
        !isfinite(slope))
        return bop == GAN_BINARY_ADD_RELU ? gan_relu(ctx, gan_add(ctx, a, b))
                                          : gan_leaky_relu(ctx, gan_add(ctx, a, b), slope);
    int ndim;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    if (!broadcast_dims(ctx, op, a, b, &ndim, dims))
        return NULL;
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &a, &b);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *y = binary_result(ctx, op, bop, slope, a, b, dt, ndim, dims);
    struct ti_node *node;
    if (!y || ti_record(ctx, y, op, add_activation_backward, a, b, &node) != GAN_OK)
        return NULL;
    if (node) {
        node->iparam[0] = bop;
        node->fparam[0] = slope;
    }
    return y;
}

gan_tensor *gan_add_leaky_relu(gan_ctx *ctx, gan_tensor *a, gan_tensor *b, float slope)
{
    return add_activation(ctx, "gan_add_leaky_relu", GAN_BINARY_ADD_LEAKY, slope, a, b);
}

gan_tensor *gan_add_relu(gan_ctx *ctx, gan_tensor *a, gan_tensor *b)
{
    return add_activation(ctx, "gan_add_relu", GAN_BINARY_ADD_RELU, 0.0f, a, b);
}

/* d tanh(x) = g·(1 − y²), y the recorded output. */
static gan_status tanh_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    gan_tensor *d = gan_add_scalar(ctx, gan_neg(ctx, gan_square(ctx, node->out)), 1.0f);
    gin[0] = gan_mul(ctx, g, d);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_tanh(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_tanh", GAN_UNARY_TANH, 0.0f, a, tanh_backward);
}

/* d sigmoid(x) = g·y·(1 − y). */
static gan_status sigmoid_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                   gan_tensor **gin)
{
    gan_tensor *y = node->out;
    gan_tensor *d = gan_mul(ctx, y, gan_add_scalar(ctx, gan_neg(ctx, y), 1.0f));
    gin[0] = gan_mul(ctx, g, d);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_sigmoid(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_sigmoid", GAN_UNARY_SIGMOID, 0.0f, a, sigmoid_backward);
}

/* d softplus(x) = g·sigmoid(x): sigmoid is itself a recorded op, so the gradient can be
 * differentiated again. */
static gan_status softplus_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                    gan_tensor **gin)
{
    gin[0] = gan_mul(ctx, g, gan_sigmoid(ctx, node->in[0]));
    return ti_result(ctx, gin[0] != NULL);
}

/* softplus(x) = log(1 + eˣ), computed as max(x, 0) + log(1 + e^−|x|): the exponential
 * is at most 1, so nothing overflows for any x, and no log of a sigmoid can meet log(0).
 * Five kernels of the backend's own ops (no new backend slot), one recorded node. The
 * sum rounds 1 + e^−|x| to 1 once |x| > 17 (FP32), where softplus(x) differs from
 * max(x, 0) by less than 4e-8: an absolute error a loss cannot see. */
gan_tensor *gan_softplus(gan_ctx *ctx, gan_tensor *a)
{
    static const char op[] = "gan_softplus";
    if (!ctx || !ti_check_input(ctx, op, "a", a) || !TI_HAS(ctx, op, binary))
        return NULL;
    enum gan_dtype dt = ti_policy_apply(ctx, TI_CLASS_POINTWISE, &a, NULL);
    if (dt == GAN_DTYPE_COUNT)
        return NULL;
    gan_tensor *t = ti_new_step(ctx, op, dt, a->ndim, a->dim);
    gan_tensor *r = ti_new_step(ctx, op, dt, a->ndim, a->dim);
    if (!t || !r || ti_unary(ctx, op, GAN_UNARY_ABS, 0.0f, a, t) != GAN_OK ||
        ti_unary(ctx, op, GAN_UNARY_SCALE, -1.0f, t, t) != GAN_OK ||
        ti_unary(ctx, op, GAN_UNARY_EXP, 0.0f, t, t) != GAN_OK ||
        ti_unary(ctx, op, GAN_UNARY_ADD_SCALAR, 1.0f, t, t) != GAN_OK ||
        ti_unary(ctx, op, GAN_UNARY_LOG, 0.0f, t, t) != GAN_OK ||
        ti_unary(ctx, op, GAN_UNARY_RELU, 0.0f, a, r) != GAN_OK)
        return NULL;
    gan_tensor *y = binary_result(ctx, op, GAN_BINARY_ADD, 0.0f, r, t, dt, a->ndim, a->dim);
    struct ti_node *node;
    if (!y || ti_record(ctx, y, op, softplus_backward, a, NULL, &node) != GAN_OK)
        return NULL;
    return y;
}

/* d x² = g·2x. */
static gan_status square_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                  gan_tensor **gin)
{
    gin[0] = gan_mul(ctx, g, gan_scale(ctx, node->in[0], 2.0f));
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_square(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_square", GAN_UNARY_SQUARE, 0.0f, a, square_backward);
}

/* d √x = g·0.5/y. At x = 0 this is inf (or NaN with g = 0): the norm of a zero
 * gradient in the penalty meets exactly this, and it is left visible. */
static gan_status sqrt_backward(gan_ctx *ctx, struct ti_node *node, gan_tensor *g,
                                gan_tensor **gin)
{
    gin[0] = gan_div(ctx, gan_scale(ctx, g, 0.5f), node->out);
    return ti_result(ctx, gin[0] != NULL);
}

gan_tensor *gan_sqrt(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_sqrt", GAN_UNARY_SQRT, 0.0f, a, sqrt_backward);
}

/* Piecewise constant: never recorded, so no gradient flows through it. */
gan_tensor *gan_step(gan_ctx *ctx, gan_tensor *a)
{
    return unary_forward(ctx, "gan_step", GAN_UNARY_STEP, 0.0f, a, NULL);
}
