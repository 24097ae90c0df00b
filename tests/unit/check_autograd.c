/* SPDX-License-Identifier: MIT */
/* check_autograd.c — every op's first and second derivatives against central finite
 * differences, swept over shapes, and gan_grad's semantics (accumulation, seeds, errors).
 *
 * For an op f with inputs x_j, weights w (shaped like the output) and r_j (shaped like
 * x_j), each case checks, in two variants (plain: φ(y) = y; composed: φ(y) = y², or y³
 * for sqrt, which makes the seed of f's backward depend on the inputs, so the backward
 * of f's own backward runs too):
 *   first order   ∂L/∂x_j, L = Σ w ⊙ φ(f(x)),      against (L(x + h e) − L(x − h e)) / 2h
 *   second order  ∂H/∂x_j, H = Σ_k Σ r_k ⊙ ∂L/∂x_k  (∂L/∂x_k from gan_grad with
 *                 create_graph), against central differences of H computed from
 *                 first-order gradients at x ± h e.
 * L and H are summed on the host in double from FP32 backend values, so the finite
 * differences carry only the ops' own FP32 rounding: about 1e-7·|y| per output, over
 * 2h = 2e-2, i.e. ~1e-5; the truncation error is h²/6 times the third derivative,
 * ~2e-5 times it. The default tolerance is |analytic − fd| ≤ atol + rtol·|fd| with
 * h = 1e-2, atol = 2e-3, rtol = 1e-2. Measured over all cases, the worst error is 0.24
 * of its tolerance (x⁴, the composed square, whose truncation term 4e-4·|x·w| is
 * exactly the error seen); most are below 0.02. The other way round, rules made wrong
 * on purpose (tanh's 1 − y² as 1.03 − y², sqrt's 0.5 as 0.52, leaky_relu's slope off
 * by 10 %, mean's 1/n as 1/(n+1), conv's double backward off by 2 %, a term of div's
 * derivative detached from the graph) each fail several cases. Each case also asserts
 * that its derivatives reach 5·atol somewhere, so a rule cannot hide under atol.
 * Casts to 16 bits round by up to 2^-11 (F16) or 2^-8 (BF16) relative, so their cases
 * use larger steps and tolerances, stated with them. Inputs of relu and leaky_relu stay
 * at least 0.3 from the kink (h = 1e-2); sqrt's stay in [0.5, 2]; div's denominators
 * in ±[0.6, 1.4] (with h = 5e-3: (a/b)² has large high derivatives there); clamp's in
 * three bands at least 0.1 from its bounds, below, between and above them. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"

#define CTX (fx.ctx)

enum op {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_ADD_LEAKY_RELU, OP_ADD_RELU,
    OP_SCALE, OP_ADD_SCALAR, OP_NEG, OP_RELU, OP_LEAKY_RELU, OP_TANH, OP_SIGMOID,
    OP_SQUARE, OP_SQRT,
    OP_SUM, OP_MEAN, OP_SUM_TO, OP_BROADCAST_TO,
    OP_MATMUL, OP_LINEAR, OP_RESHAPE, OP_CONCAT0, OP_SLICE0,
    OP_CONV2D, OP_CONV2D_T, OP_CONV2D_BF, OP_CAST, OP_CLAMP
};

/* Where an input's values are drawn from. */
enum domain {
    D_ANY = 0,   /* (−1, 1) */
    D_POS,       /* (0.5, 2): sqrt */
    D_AWAY,      /* ±(0.3, 1.2): relu, leaky_relu, keeping the kink out of reach */
    D_DENOM,     /* ±(0.6, 1.4): denominators */
    D_BIAS,      /* (−0.1, 0.1): a bias added to a D_AWAY input, so that their sum stays
                  * 0.2 or more from an activation's kink */
    D_CLAMP      /* (−1.2, −0.6), (−0.15, 0.4) or (0.85, 1.2): clamps to [−0.5, 0.5] and
                  * [−0.25, 0.75], 0.1 or more from each bound */
};

struct gcase {
    const char *name;
    enum op op;
    int n_in;
    int nd[3];
    int64_t d[3][6];
    enum domain dom[3];
    /* op arguments */
    float alpha;                 /* scale, add_scalar, leaky slope */
    int axis, keepdim;           /* sum, mean */
    int tn; int64_t t[6];        /* sum_to, broadcast_to, reshape target */
    int ta, tb;                  /* matmul */
    int64_t begin, end;          /* slice0 */
    int stride, pad, outpad, kh, kw;  /* conv */
    enum gan_dtype dtype;        /* cast target */
    float lo, hi;                /* clamp */
    int cube;                    /* composed variant uses y³, not y² */
    /* finite differences; 0 = the defaults above */
    float h, atol, rtol;
};

/* ------------------------------------------------------------------ cases */

static const struct gcase binary_cases[] = {
#define BINSET(opc, nm, dom1, hh) \
    { .name = nm " [3,4]·[3,4]", .op = opc, .n_in = 2, .nd = { 2, 2 }, \
      .d = { { 3, 4 }, { 3, 4 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " [3,4]·[4]", .op = opc, .n_in = 2, .nd = { 2, 1 }, \
      .d = { { 3, 4 }, { 4 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " [2,1,3]·[4,1]", .op = opc, .n_in = 2, .nd = { 3, 2 }, \
      .d = { { 2, 1, 3 }, { 4, 1 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " [1]·[5]", .op = opc, .n_in = 2, .nd = { 1, 1 }, \
      .d = { { 1 }, { 5 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " []·[2,3]", .op = opc, .n_in = 2, .nd = { 0, 2 }, \
      .d = { { 0 }, { 2, 3 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " [3,1]·[1,5]", .op = opc, .n_in = 2, .nd = { 2, 2 }, \
      .d = { { 3, 1 }, { 1, 5 } }, .dom = { D_ANY, dom1 }, .h = hh }, \
    { .name = nm " [2,3,1,2]·[3,5,1]", .op = opc, .n_in = 2, .nd = { 4, 3 }, \
      .d = { { 2, 3, 1, 2 }, { 3, 5, 1 } }, .dom = { D_ANY, dom1 }, .h = hh }
    BINSET(OP_ADD, "add", D_ANY, 0),
    BINSET(OP_SUB, "sub", D_ANY, 0),
    BINSET(OP_MUL, "mul", D_ANY, 0),
    /* (a/b)² has large high derivatives near |b| = 0.6: a smaller step. */
    BINSET(OP_DIV, "div", D_DENOM, 5e-3f),
#undef BINSET
#define BIASSET(opc, nm, al) \
    { .name = nm " [3,4]+[4]", .op = opc, .n_in = 2, .nd = { 2, 1 }, \
      .d = { { 3, 4 }, { 4 } }, .dom = { D_AWAY, D_BIAS }, .alpha = al }, \
    { .name = nm " [2,3,4,5]+[1,3,1,1]", .op = opc, .n_in = 2, .nd = { 4, 4 }, \
      .d = { { 2, 3, 4, 5 }, { 1, 3, 1, 1 } }, .dom = { D_AWAY, D_BIAS }, .alpha = al }, \
    { .name = nm " [3,4]+[3,4]", .op = opc, .n_in = 2, .nd = { 2, 2 }, \
      .d = { { 3, 4 }, { 3, 4 } }, .dom = { D_AWAY, D_BIAS }, .alpha = al }, \
    { .name = nm " []+[]", .op = opc, .n_in = 2, .nd = { 0, 0 }, \
      .dom = { D_AWAY, D_BIAS }, .alpha = al }
    BIASSET(OP_ADD_LEAKY_RELU, "add_leaky_relu", 0.2f),
    BIASSET(OP_ADD_RELU, "add_relu", 0.0f),
#undef BIASSET
};

static const struct gcase unary_cases[] = {
#define UNSET(opc, nm, dom0, al) \
    { .name = nm " [7]", .op = opc, .n_in = 1, .nd = { 1 }, .d = { { 7 } }, \
      .dom = { dom0 }, .alpha = al }, \
    { .name = nm " [2,3,5]", .op = opc, .n_in = 1, .nd = { 3 }, .d = { { 2, 3, 5 } }, \
      .dom = { dom0 }, .alpha = al }, \
    { .name = nm " [1,1]", .op = opc, .n_in = 1, .nd = { 2 }, .d = { { 1, 1 } }, \
      .dom = { dom0 }, .alpha = al }, \
    { .name = nm " []", .op = opc, .n_in = 1, .nd = { 0 }, .d = { { 0 } }, \
      .dom = { dom0 }, .alpha = al }
    UNSET(OP_SCALE, "scale", D_ANY, 0.7f),
    UNSET(OP_ADD_SCALAR, "add_scalar", D_ANY, 0.3f),
    UNSET(OP_NEG, "neg", D_ANY, 0),
    UNSET(OP_RELU, "relu", D_AWAY, 0),
    UNSET(OP_LEAKY_RELU, "leaky_relu", D_AWAY, 0.2f),
    UNSET(OP_TANH, "tanh", D_ANY, 0),
    UNSET(OP_SIGMOID, "sigmoid", D_ANY, 0),
    UNSET(OP_SQUARE, "square", D_ANY, 0),
    /* Clamped values have no derivative at all, the others pass unchanged: the squared
     * variant's second derivative is 2·w inside and 0 outside. */
    { .name = "clamp [7] to ±0.5", .op = OP_CLAMP, .n_in = 1, .nd = { 1 }, .d = { { 7 } },
      .dom = { D_CLAMP }, .lo = -0.5f, .hi = 0.5f },
    { .name = "clamp [2,3,5] to ±0.5", .op = OP_CLAMP, .n_in = 1, .nd = { 3 },
      .d = { { 2, 3, 5 } }, .dom = { D_CLAMP }, .lo = -0.5f, .hi = 0.5f },
    { .name = "clamp [] to ±0.5", .op = OP_CLAMP, .n_in = 1, .nd = { 0 }, .d = { { 0 } },
      .dom = { D_CLAMP }, .lo = -0.5f, .hi = 0.5f },
    { .name = "clamp [4,6] to [-0.25, 0.75]", .op = OP_CLAMP, .n_in = 1, .nd = { 2 },
      .d = { { 4, 6 } }, .dom = { D_CLAMP }, .lo = -0.25f, .hi = 0.75f },
    /* √x squared is x, linear: sqrt's composed variant cubes instead. */
    { .name = "sqrt [7]", .op = OP_SQRT, .n_in = 1, .nd = { 1 }, .d = { { 7 } },
      .dom = { D_POS }, .cube = 1 },
    { .name = "sqrt [2,3,5]", .op = OP_SQRT, .n_in = 1, .nd = { 3 }, .d = { { 2, 3, 5 } },
      .dom = { D_POS }, .cube = 1 },
    { .name = "sqrt [1,1]", .op = OP_SQRT, .n_in = 1, .nd = { 2 }, .d = { { 1, 1 } },
      .dom = { D_POS }, .cube = 1 },
    { .name = "sqrt []", .op = OP_SQRT, .n_in = 1, .nd = { 0 }, .d = { { 0 } },
      .dom = { D_POS }, .cube = 1 },
#undef UNSET
};

static const struct gcase reduce_cases[] = {
#define REDSET(opc, nm, at) \
    { .name = nm " [3,4,5] axis 1", .op = opc, .n_in = 1, .nd = { 3 }, \
      .d = { { 3, 4, 5 } }, .axis = 1, .atol = at, .dom = { D_POS } }, \
    { .name = nm " [3,4,5] axis -1 keepdim", .op = opc, .n_in = 1, .nd = { 3 }, \
      .d = { { 3, 4, 5 } }, .axis = -1, .keepdim = 1, .atol = at, .dom = { D_POS } }, \
    { .name = nm " [3,4,5] all", .op = opc, .n_in = 1, .nd = { 3 }, \
      .d = { { 3, 4, 5 } }, .axis = GAN_ALL_AXES, .atol = at, .dom = { D_POS } }, \
    { .name = nm " [4,3] all keepdim", .op = opc, .n_in = 1, .nd = { 2 }, \
      .d = { { 4, 3 } }, .axis = GAN_ALL_AXES, .keepdim = 1, .atol = at, .dom = { D_POS } }, \
    { .name = nm " [2,1,3] axis 1", .op = opc, .n_in = 1, .nd = { 3 }, \
      .d = { { 2, 1, 3 } }, .axis = 1, .atol = at, .dom = { D_POS } }, \
    { .name = nm " [7] axis 0", .op = opc, .n_in = 1, .nd = { 1 }, \
      .d = { { 7 } }, .axis = 0, .atol = at, .dom = { D_POS } }
    /* Inputs in (0.5, 2), so that a mean of many, squared, still has a clear slope. */
    REDSET(OP_SUM, "sum", 0),
    /* A mean over 60 elements has gradients of w/60 ≈ 0.02 and second derivatives
     * smaller still; its values carry no more rounding than a sum's (measured errors
     * below 5e-6), so its absolute tolerance is 2e-4. */
    REDSET(OP_MEAN, "mean", 2e-4f),
#undef REDSET
    { .name = "sum_to [3,4,5]→[4,1]", .op = OP_SUM_TO, .n_in = 1, .nd = { 3 },
      .d = { { 3, 4, 5 } }, .tn = 2, .t = { 4, 1 } },
    { .name = "sum_to [3,4,5]→[5]", .op = OP_SUM_TO, .n_in = 1, .nd = { 3 },
      .d = { { 3, 4, 5 } }, .tn = 1, .t = { 5 } },
    { .name = "sum_to [2,3]→[]", .op = OP_SUM_TO, .n_in = 1, .nd = { 2 },
      .d = { { 2, 3 } }, .tn = 0 },
    { .name = "sum_to [2,1,3]→[1,1,3]", .op = OP_SUM_TO, .n_in = 1, .nd = { 3 },
      .d = { { 2, 1, 3 } }, .tn = 3, .t = { 1, 1, 3 } },
    { .name = "sum_to [3,4]→[3,4]", .op = OP_SUM_TO, .n_in = 1, .nd = { 2 },
      .d = { { 3, 4 } }, .tn = 2, .t = { 3, 4 } },
    { .name = "broadcast_to [4,1]→[3,4,5]", .op = OP_BROADCAST_TO, .n_in = 1, .nd = { 2 },
      .d = { { 4, 1 } }, .tn = 3, .t = { 3, 4, 5 } },
    { .name = "broadcast_to [5]→[2,5]", .op = OP_BROADCAST_TO, .n_in = 1, .nd = { 1 },
      .d = { { 5 } }, .tn = 2, .t = { 2, 5 } },
    { .name = "broadcast_to []→[2,3]", .op = OP_BROADCAST_TO, .n_in = 1, .nd = { 0 },
      .tn = 2, .t = { 2, 3 } },
    { .name = "broadcast_to [1,3]→[1,2,3]", .op = OP_BROADCAST_TO, .n_in = 1, .nd = { 2 },
      .d = { { 1, 3 } }, .tn = 3, .t = { 1, 2, 3 } },
    { .name = "broadcast_to [3,4]→[3,4]", .op = OP_BROADCAST_TO, .n_in = 1, .nd = { 2 },
      .d = { { 3, 4 } }, .tn = 2, .t = { 3, 4 } },
};

/* op(a) is m×k and op(b) k×n; stored shapes follow the transposes. */
#define MM(m, k, n, ta_, tb_) \
    { .name = "matmul " #m "x" #k "x" #n " ta=" #ta_ " tb=" #tb_, .op = OP_MATMUL, .n_in = 2, \
      .nd = { 2, 2 }, .d = { { ta_ ? k : m, ta_ ? m : k }, { tb_ ? n : k, tb_ ? k : n } }, \
      .ta = ta_, .tb = tb_ }
#define MMSET(m, k, n) MM(m, k, n, 0, 0), MM(m, k, n, 1, 0), MM(m, k, n, 0, 1), MM(m, k, n, 1, 1)
static const struct gcase matmul_cases[] = {
    MMSET(3, 4, 5), MMSET(1, 3, 1), MMSET(5, 1, 2), MMSET(2, 7, 3),
};
#undef MMSET
#undef MM

/* x [m, k], w [n, k] and, with a bias, b [n]. Odd sizes, a single row, a single output
 * and k = 1; the composed variant (y²) makes the seed of gan_linear's backward depend
 * on all three inputs, so its own backward (the penalty's double backward) runs. */
#define LIN(m, k, n) \
    { .name = "linear " #m "x" #k "→" #n " with bias", .op = OP_LINEAR, .n_in = 3, \
      .nd = { 2, 2, 1 }, .d = { { m, k }, { n, k }, { n } } }, \
    { .name = "linear " #m "x" #k "→" #n " no bias", .op = OP_LINEAR, .n_in = 2, \
      .nd = { 2, 2 }, .d = { { m, k }, { n, k } } }
static const struct gcase linear_cases[] = {
    LIN(3, 4, 5), LIN(1, 3, 1), LIN(5, 1, 2), LIN(7, 5, 3), LIN(2, 9, 7),
};
#undef LIN

static const struct gcase shape_cases[] = {
    { .name = "reshape [2,3,4]→[6,4]", .op = OP_RESHAPE, .n_in = 1, .nd = { 3 },
      .d = { { 2, 3, 4 } }, .tn = 2, .t = { 6, 4 } },
    { .name = "reshape [5]→[1,5,1]", .op = OP_RESHAPE, .n_in = 1, .nd = { 1 },
      .d = { { 5 } }, .tn = 3, .t = { 1, 5, 1 } },
    { .name = "reshape [1,1]→[]", .op = OP_RESHAPE, .n_in = 1, .nd = { 2 },
      .d = { { 1, 1 } }, .tn = 0 },
    { .name = "concat0 [2,3]+[3,3]", .op = OP_CONCAT0, .n_in = 2, .nd = { 2, 2 },
      .d = { { 2, 3 }, { 3, 3 } } },
    { .name = "concat0 [1,2,2]+[2,2,2]", .op = OP_CONCAT0, .n_in = 2, .nd = { 3, 3 },
      .d = { { 1, 2, 2 }, { 2, 2, 2 } } },
    { .name = "concat0 [4]+[1]", .op = OP_CONCAT0, .n_in = 2, .nd = { 1, 1 },
      .d = { { 4 }, { 1 } } },
    { .name = "slice0 [5,3] 1:4", .op = OP_SLICE0, .n_in = 1, .nd = { 2 },
      .d = { { 5, 3 } }, .begin = 1, .end = 4 },
    { .name = "slice0 [4] 0:2", .op = OP_SLICE0, .n_in = 1, .nd = { 1 },
      .d = { { 4 } }, .begin = 0, .end = 2 },
    { .name = "slice0 [3,2,2] 2:3", .op = OP_SLICE0, .n_in = 1, .nd = { 3 },
      .d = { { 3, 2, 2 } }, .begin = 2, .end = 3 },
    { .name = "slice0 [5,3] 0:5", .op = OP_SLICE0, .n_in = 1, .nd = { 2 },
      .d = { { 5, 3 } }, .begin = 0, .end = 5 },
};

static const struct gcase conv_cases[] = {
    { .name = "conv2d x[2,2,5,6] w[3,2,3,3] s1 p0", .op = OP_CONV2D, .n_in = 2,
      .nd = { 4, 4 }, .d = { { 2, 2, 5, 6 }, { 3, 2, 3, 3 } }, .stride = 1, .pad = 0 },
    { .name = "conv2d x[2,2,5,6] w[3,2,3,3] s2 p1", .op = OP_CONV2D, .n_in = 2,
      .nd = { 4, 4 }, .d = { { 2, 2, 5, 6 }, { 3, 2, 3, 3 } }, .stride = 2, .pad = 1 },
    { .name = "conv2d x[1,1,4,4] w[2,1,2,2] s2 p0", .op = OP_CONV2D, .n_in = 2,
      .nd = { 4, 4 }, .d = { { 1, 1, 4, 4 }, { 2, 1, 2, 2 } }, .stride = 2, .pad = 0 },
    { .name = "conv2d x[2,3,5,5] w[2,3,1,1] s1 p0", .op = OP_CONV2D, .n_in = 2,
      .nd = { 4, 4 }, .d = { { 2, 3, 5, 5 }, { 2, 3, 1, 1 } }, .stride = 1, .pad = 0 },
    /* 7 rows and 5 columns with stride 3: the data gradient needs output padding 0
     * for rows and 2 for columns. */
    { .name = "conv2d x[1,2,7,5] w[2,2,3,2] s3 p1", .op = OP_CONV2D, .n_in = 2,
      .nd = { 4, 4 }, .d = { { 1, 2, 7, 5 }, { 2, 2, 3, 2 } }, .stride = 3, .pad = 1 },
    { .name = "conv2d_transpose x[2,3,3,3] w[3,2,3,3] s2 p1 op1", .op = OP_CONV2D_T,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 2, 3, 3, 3 }, { 3, 2, 3, 3 } }, .stride = 2,
      .pad = 1, .outpad = 1 },
    { .name = "conv2d_transpose x[1,2,4,3] w[2,1,2,2] s1 p0", .op = OP_CONV2D_T,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 1, 2, 4, 3 }, { 2, 1, 2, 2 } }, .stride = 1 },
    { .name = "conv2d_transpose x[2,2,3,4] w[2,3,3,3] s2 p0 op1", .op = OP_CONV2D_T,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 2, 2, 3, 4 }, { 2, 3, 3, 3 } }, .stride = 2,
      .outpad = 1 },
    { .name = "conv2d_backward_filter x[2,2,5,6] dy[2,3,3,4] k3x3 s1 p0", .op = OP_CONV2D_BF,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 2, 2, 5, 6 }, { 2, 3, 3, 4 } }, .stride = 1,
      .kh = 3, .kw = 3 },
    { .name = "conv2d_backward_filter x[1,2,7,5] dy[1,2,3,2] k3x2 s3 p1", .op = OP_CONV2D_BF,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 1, 2, 7, 5 }, { 1, 2, 3, 2 } }, .stride = 3,
      .pad = 1, .kh = 3, .kw = 2 },
    { .name = "conv2d_backward_filter x[2,1,4,4] dy[2,2,2,2] k2x2 s2 p0", .op = OP_CONV2D_BF,
      .n_in = 2, .nd = { 4, 4 }, .d = { { 2, 1, 4, 4 }, { 2, 2, 2, 2 } }, .stride = 2,
      .kh = 2, .kw = 2 },
};

/* FP16 rounds values near 1 by up to 2^-11 ≈ 4.9e-4: with h = 0.05 a difference
 * quotient moves by up to 2·4.9e-4/0.1 ≈ 1e-2, and the analytic gradient is itself
 * rounded to FP16: atol = 3e-2, rtol = 1e-2 (measured worst error 1.3e-2). BF16 rounds
 * by up to 2^-8 ≈ 3.9e-3: h = 0.25 gives 1.6e-2 per rounding, and the composed case
 * rounds the square and its backward too: atol = 5e-2, rtol = 2e-2 (measured worst
 * 2.0e-2). The F32 → F32 cast is exact: default tolerances. */
static const struct gcase cast_cases[] = {
    { .name = "cast F32→F16 [3,4]", .op = OP_CAST, .n_in = 1, .nd = { 2 }, .d = { { 3, 4 } },
      .dtype = GAN_F16, .h = 0.05f, .atol = 3e-2f, .rtol = 1e-2f },
    { .name = "cast F32→BF16 [5]", .op = OP_CAST, .n_in = 1, .nd = { 1 }, .d = { { 5 } },
      .dtype = GAN_BF16, .h = 0.25f, .atol = 5e-2f, .rtol = 2e-2f },
    { .name = "cast F32→F32 [2,3]", .op = OP_CAST, .n_in = 1, .nd = { 2 }, .d = { { 2, 3 } },
      .dtype = GAN_F32 },
};

/* ------------------------------------------------------------------ the harness */

static uint64_t rng_state;

static double uniform01(void)
{
    /* splitmix64: good enough for test inputs, and the same on every machine. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53;
}

static float draw(enum domain dom, int64_t i)
{
    double u = uniform01();
    /* Element 0 of a relu input is positive, so that even a 0-d case has a gradient. */
    double sign = uniform01() < 0.5 && !(dom == D_AWAY && i == 0) ? -1.0 : 1.0;
    switch (dom) {
    case D_CLAMP: {
        /* Element 0 between the bounds, so that even a 0-d case has a gradient. */
        int band = i == 0 ? 1 : (int)(3.0 * uniform01());
        return band == 0 ? (float)(-1.2 + 0.6 * u)
             : band == 1 ? (float)(-0.15 + 0.55 * u) : (float)(0.85 + 0.35 * u);
    }
    case D_POS: return (float)(0.5 + 1.5 * u);
    case D_AWAY: return (float)(sign * (0.3 + 0.9 * u));
    case D_DENOM: return (float)(sign * (0.6 + 0.8 * u));
    case D_BIAS: return (float)(0.2 * u - 0.1);
    case D_ANY:
    default: return (float)(2.0 * u - 1.0);
    }
}

/* A weight away from zero, so that every output matters. */
static float draw_weight(void)
{
    double sign = uniform01() < 0.5 ? -1.0 : 1.0;
    return (float)(sign * (0.5 + uniform01()));
}

static int64_t count_of(int nd, const int64_t *d)
{
    int64_t c = 1;
    for (int i = 0; i < nd; i++)
        c *= d[i];
    return c;
}

static gan_tensor *apply(const struct gcase *c, gan_tensor **in)
{
    switch (c->op) {
    case OP_ADD: return gan_add(CTX, in[0], in[1]);
    case OP_SUB: return gan_sub(CTX, in[0], in[1]);
    case OP_MUL: return gan_mul(CTX, in[0], in[1]);
    case OP_DIV: return gan_div(CTX, in[0], in[1]);
    case OP_ADD_LEAKY_RELU: return gan_add_leaky_relu(CTX, in[0], in[1], c->alpha);
    case OP_ADD_RELU: return gan_add_relu(CTX, in[0], in[1]);
    case OP_SCALE: return gan_scale(CTX, in[0], c->alpha);
    case OP_ADD_SCALAR: return gan_add_scalar(CTX, in[0], c->alpha);
    case OP_NEG: return gan_neg(CTX, in[0]);
    case OP_RELU: return gan_relu(CTX, in[0]);
    case OP_LEAKY_RELU: return gan_leaky_relu(CTX, in[0], c->alpha);
    case OP_TANH: return gan_tanh(CTX, in[0]);
    case OP_SIGMOID: return gan_sigmoid(CTX, in[0]);
    case OP_SQUARE: return gan_square(CTX, in[0]);
    case OP_SQRT: return gan_sqrt(CTX, in[0]);
    case OP_SUM: return gan_sum(CTX, in[0], c->axis, c->keepdim);
    case OP_MEAN: return gan_mean(CTX, in[0], c->axis, c->keepdim);
    case OP_SUM_TO: return gan_sum_to(CTX, in[0], c->tn, c->t);
    case OP_BROADCAST_TO: return gan_broadcast_to(CTX, in[0], c->tn, c->t);
    case OP_MATMUL: return gan_matmul(CTX, in[0], in[1], c->ta, c->tb);
    case OP_LINEAR: return gan_linear(CTX, in[0], in[1], c->n_in > 2 ? in[2] : NULL);
    case OP_RESHAPE: return gan_reshape(CTX, in[0], c->tn, c->t);
    case OP_CONCAT0: return gan_concat0(CTX, in[0], in[1]);
    case OP_SLICE0: return gan_slice0(CTX, in[0], c->begin, c->end);
    case OP_CONV2D: return gan_conv2d(CTX, in[0], in[1], c->stride, c->pad);
    case OP_CONV2D_T:
        return gan_conv2d_transpose(CTX, in[0], in[1], c->stride, c->pad, c->outpad);
    case OP_CONV2D_BF:
        return gan_conv2d_backward_filter(CTX, in[0], in[1], c->stride, c->pad, c->kh, c->kw);
    case OP_CAST: return gan_cast(CTX, in[0], c->dtype);
    case OP_CLAMP: return gan_clamp(CTX, in[0], c->lo, c->hi);
    }
    return NULL;
}

struct harness {
    const struct gcase *c;
    int composed;
    int n;                       /* inputs */
    int64_t numel[3];
    float *x[3];                 /* the point of evaluation */
    float *r[3];                 /* second-order weights */
    int ny;
    int64_t ydims[6];
    int64_t ycount;
    float *w;                    /* first-order weights */
    float h, atol, rtol;
};

static void make_inputs(struct harness *H, gan_tensor **in, int requires_grad)
{
    for (int j = 0; j < H->n; j++) {
        in[j] = gan_tensor_from_host(CTX, GAN_F32, H->c->nd[j], H->c->d[j], H->x[j]);
        ck_assert_msg(in[j], "%s", gan_ctx_error(CTX));
        gan_tensor_set_requires_grad(in[j], requires_grad);
    }
}

/* φ(f(x)): the op alone or, composed, squared (cubed where the case says). */
static gan_tensor *forward(struct harness *H, gan_tensor **in)
{
    gan_tensor *y = apply(H->c, in);
    ck_assert_msg(y, "%s: %s", H->c->name, gan_ctx_error(CTX));
    if (!H->composed)
        return y;
    return H->c->cube ? gan_mul(CTX, gan_square(CTX, y), y) : gan_square(CTX, y);
}

/* L = Σ w ⊙ φ(f(x)) as a graph (a 0-d tensor). */
static gan_tensor *loss(struct harness *H, gan_tensor **in)
{
    gan_tensor *y = forward(H, in);
    gan_tensor *w = gan_tensor_from_host(CTX, GAN_F32, H->ny, H->ydims, H->w);
    gan_tensor *L = gan_sum(CTX, gan_mul(CTX, w, y), GAN_ALL_AXES, 0);
    ck_assert_msg(L, "%s: %s", H->c->name, gan_ctx_error(CTX));
    return L;
}

/* L at the current x, summed on the host in double from φ(f(x)). */
static double eval_loss(struct harness *H)
{
    gan_tensor *in[3];
    make_inputs(H, in, 0);
    gan_tensor *y = forward(H, in);
    float *yv = malloc((size_t)H->ycount * sizeof *yv);
    ck_assert_int_eq(gan_tensor_to_host(CTX, y, yv, (size_t)H->ycount), GAN_OK);
    double L = 0;
    for (int64_t i = 0; i < H->ycount; i++)
        L += (double)H->w[i] * yv[i];
    free(yv);
    gan_ctx_step_end(CTX);
    return L;
}

/* First-order gradients at the current x into g[j] (host), without create_graph;
 * returns Σ_k Σ r_k ⊙ g_k in double. */
static double eval_grads(struct harness *H, float **g)
{
    gan_tensor *in[3], *grads[3];
    make_inputs(H, in, 1);
    gan_tensor *L = loss(H, in);
    ck_assert_msg(gan_grad(CTX, 1, &L, NULL, H->n, in, grads, 0) == GAN_OK, "%s: %s",
                  H->c->name, gan_ctx_error(CTX));
    double s = 0;
    for (int j = 0; j < H->n; j++) {
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[j], g[j], (size_t)H->numel[j]), GAN_OK);
        for (int64_t i = 0; i < H->numel[j]; i++)
            s += (double)H->r[j][i] * g[j][i];
    }
    gan_ctx_step_end(CTX);
    return s;
}

/* The worst |analytic - fd| of the running case, absolute and as a fraction of its
 * tolerance; printed when GANCTL_FD_REPORT is set, to re-derive the tolerances. */
static double worst_ratio, worst_abs;
static void compare(const struct harness *H, const char *what, int j, int64_t i,
                    double analytic, double fd)
{
    double err = fabs(analytic - fd), tol = H->atol + H->rtol * fabs(fd);
    worst_ratio = fmax(worst_ratio, err / tol);
    worst_abs = fmax(worst_abs, err);
    ck_assert_msg(err <= tol, "%s%s, %s, input %d element %lld: analytic %.7g, finite "
                  "difference %.7g (|diff| %.3g > tolerance %.3g)", H->c->name,
                  H->composed ? " squared" : "", what, j, (long long)i, analytic, fd, err, tol);
}

/* max_fd1, max_fd2: the largest |finite difference| seen, in units of atol. */
static void run_variant(const struct gcase *c, int composed, uint64_t seed, double *max_fd1,
                        double *max_fd2)
{
    struct harness H;
    memset(&H, 0, sizeof H);
    H.c = c;
    H.composed = composed;
    H.n = c->n_in;
    H.h = c->h > 0 ? c->h : 1e-2f;
    H.atol = c->atol > 0 ? c->atol : 2e-3f;
    H.rtol = c->rtol > 0 ? c->rtol : 1e-2f;
    rng_state = seed;
    for (int j = 0; j < H.n; j++) {
        H.numel[j] = count_of(c->nd[j], c->d[j]);
        H.x[j] = malloc((size_t)H.numel[j] * sizeof(float));
        H.r[j] = malloc((size_t)H.numel[j] * sizeof(float));
        for (int64_t i = 0; i < H.numel[j]; i++) {
            H.x[j][i] = draw(c->dom[j], i);
            H.r[j][i] = draw_weight();
        }
    }
    /* The output's shape, from one run of the op. */
    gan_tensor *in[3], *grads[3], *grads2[3];
    make_inputs(&H, in, 0);
    gan_tensor *y = apply(c, in);
    ck_assert_msg(y, "%s: %s", c->name, gan_ctx_error(CTX));
    H.ny = gan_tensor_ndim(y);
    for (int d = 0; d < H.ny; d++)
        H.ydims[d] = gan_tensor_dim(y, d);
    H.ycount = gan_tensor_numel(y);
    gan_ctx_step_end(CTX);
    H.w = malloc((size_t)H.ycount * sizeof(float));
    for (int64_t i = 0; i < H.ycount; i++)
        H.w[i] = draw_weight();

    /* Analytic: first order with create_graph, then the gradient of H. */
    float *g1[3], *g2[3], *gfd[3];
    for (int j = 0; j < H.n; j++) {
        g1[j] = malloc((size_t)H.numel[j] * sizeof(float));
        g2[j] = calloc((size_t)H.numel[j], sizeof(float));
        gfd[j] = malloc((size_t)H.numel[j] * sizeof(float));
    }
    make_inputs(&H, in, 1);
    gan_tensor *L = loss(&H, in);
    ck_assert_msg(gan_grad(CTX, 1, &L, NULL, H.n, in, grads, 1) == GAN_OK, "%s: %s", c->name,
                  gan_ctx_error(CTX));
    gan_tensor *hsum = NULL;
    for (int j = 0; j < H.n; j++) {
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[j], g1[j], (size_t)H.numel[j]), GAN_OK);
        gan_tensor *r = gan_tensor_from_host(CTX, GAN_F32, c->nd[j], c->d[j], H.r[j]);
        gan_tensor *t = gan_sum(CTX, gan_mul(CTX, r, grads[j]), GAN_ALL_AXES, 0);
        hsum = hsum ? gan_add(CTX, hsum, t) : t;
    }
    ck_assert_msg(hsum, "%s: %s", c->name, gan_ctx_error(CTX));
    /* When ∂L/∂x does not depend on x at all (a linear op, plain), H is a constant of
     * the graph: its gradient is zero, and gan_grad rightly refuses to differentiate
     * it. The finite differences below must then find zero. */
    int second = gan_tensor_requires_grad(hsum);
    if (second) {
        ck_assert_msg(gan_grad(CTX, 1, &hsum, NULL, H.n, in, grads2, 0) == GAN_OK, "%s: %s",
                      c->name, gan_ctx_error(CTX));
        for (int j = 0; j < H.n; j++)
            ck_assert_int_eq(gan_tensor_to_host(CTX, grads2[j], g2[j], (size_t)H.numel[j]),
                             GAN_OK);
    }
    gan_ctx_step_end(CTX);

    for (int j = 0; j < H.n; j++) {
        for (int64_t i = 0; i < H.numel[j]; i++) {
            float keep = H.x[j][i];
            float xp = keep + H.h, xm = keep - H.h;
            double step = (double)xp - (double)xm;
            H.x[j][i] = xp;
            double Lp = eval_loss(&H);
            double Hp = eval_grads(&H, gfd);
            H.x[j][i] = xm;
            double Lm = eval_loss(&H);
            double Hm = eval_grads(&H, gfd);
            H.x[j][i] = keep;
            double fd1 = (Lp - Lm) / step, fd2 = (Hp - Hm) / step;
            compare(&H, "first order", j, i, g1[j][i], fd1);
            compare(&H, "second order", j, i, g2[j][i], fd2);
            *max_fd1 = fmax(*max_fd1, fabs(fd1) / H.atol);
            *max_fd2 = fmax(*max_fd2, fabs(fd2) / H.atol);
        }
    }
    for (int j = 0; j < H.n; j++) {
        free(H.x[j]);
        free(H.r[j]);
        free(g1[j]);
        free(g2[j]);
        free(gfd[j]);
    }
    free(H.w);
}

static void run_case(const struct gcase *c, int index)
{
    double plain1 = 0, plain2 = 0, comp1 = 0, comp2 = 0;
    worst_ratio = worst_abs = 0;
    run_variant(c, 0, 1000 + (uint64_t)index, &plain1, &plain2);
    run_variant(c, 1, 5000 + (uint64_t)index, &comp1, &comp2);
    if (getenv("GANCTL_FD_REPORT"))
        fprintf(stderr, "%-60s worst |analytic - fd| %.2e = %.3f of its tolerance\n",
                c->name, worst_abs, worst_ratio);
    ck_assert_msg(gan_ctx_status(CTX) == GAN_OK, "%s", gan_ctx_error(CTX));
    /* The comparisons test something only where the derivatives stand clear of atol:
     * somewhere in each variant the first derivative, and in the composed variant
     * (where f's backward is itself differentiated) the second, must reach 5·atol. */
    ck_assert_msg(plain1 >= 5 && comp1 >= 5, "%s: the largest first derivative is only "
                  "%.2g·atol (plain) / %.2g·atol (composed): pick inputs that exercise it",
                  c->name, plain1, comp1);
    ck_assert_msg(comp2 >= 5, "%s: the largest second derivative of the composed variant is "
                  "only %.2g·atol: pick inputs that exercise it", c->name, comp2);
}

START_TEST(test_binary) { run_case(&binary_cases[_i], _i); }
END_TEST
START_TEST(test_unary) { run_case(&unary_cases[_i], _i); }
END_TEST
START_TEST(test_reduce) { run_case(&reduce_cases[_i], _i); }
END_TEST
START_TEST(test_matmul) { run_case(&matmul_cases[_i], _i); }
END_TEST
START_TEST(test_linear) { run_case(&linear_cases[_i], _i); }
END_TEST
START_TEST(test_shape) { run_case(&shape_cases[_i], _i); }
END_TEST
START_TEST(test_conv) { run_case(&conv_cases[_i], _i); }
END_TEST
START_TEST(test_cast) { run_case(&cast_cases[_i], _i); }
END_TEST

/* ------------------------------------------------------------------ gan_grad semantics */

static gan_tensor *vec(int64_t n, const float *v, int requires_grad)
{
    gan_tensor *t = gan_tensor_from_host(CTX, GAN_F32, 1, &n, v);
    ck_assert_msg(t, "%s", gan_ctx_error(CTX));
    gan_tensor_set_requires_grad(t, requires_grad);
    return t;
}

static void to_host(gan_tensor *t, float *v, size_t n)
{
    ck_assert_msg(t, "%s", gan_ctx_error(CTX));
    ck_assert_int_eq(gan_tensor_to_host(CTX, t, v, n), GAN_OK);
}

/* x used twice, and in two branches: y = Σ (x·x + x) + Σ tanh(x)·x. */
START_TEST(test_accumulation)
{
    float xv[4] = { -0.7f, 0.2f, 0.5f, 1.1f }, g[4], gg[4];
    gan_tensor *x = vec(4, xv, 1);
    gan_tensor *a = gan_add(CTX, gan_mul(CTX, x, x), x);
    gan_tensor *b = gan_mul(CTX, gan_tanh(CTX, x), x);
    gan_tensor *y = gan_add(CTX, gan_sum(CTX, a, 0, 0), gan_sum(CTX, b, 0, 0));
    gan_tensor *gx;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &gx, 1), GAN_OK);
    to_host(gx, g, 4);
    for (int i = 0; i < 4; i++) {
        double t = tanh(xv[i]);
        double want = 2.0 * xv[i] + 1.0 + (1.0 - t * t) * xv[i] + t;
        ck_assert_double_eq_tol(g[i], want, 1e-5);
    }
    /* The accumulated gradient is differentiable: d/dx Σ ∂y/∂x = 2 + d²(x tanh x). */
    gan_tensor *s = gan_sum(CTX, gx, 0, 0);
    gan_tensor *gs;
    ck_assert_int_eq(gan_grad(CTX, 1, &s, NULL, 1, &x, &gs, 0), GAN_OK);
    to_host(gs, gg, 4);
    for (int i = 0; i < 4; i++) {
        double t = tanh(xv[i]), d = 1.0 - t * t;
        double want = 2.0 + 2.0 * d - 2.0 * xv[i] * t * d;
        ck_assert_double_eq_tol(gg[i], want, 1e-5);
    }
}
END_TEST

/* A matrix w [3, 4] used five times: two linear layers, two products (one with w
 * transposed) and, last, w + z, whose backward hands one gradient tensor to both w and
 * z, so that w's first gradient is not w's alone. Without create_graph the products add
 * their gradients onto w's in place (GEMM with beta = 1, autograd.c), but not onto that
 * shared one; with it, each is a tensor of its own, summed. Both equal the gradients
 * worked out by hand, z's unharmed, and the first makes fewer tensors. */
static gan_tensor *mat(int64_t r, int64_t c, const float *v, int requires_grad)
{
    const int64_t d[2] = { r, c };
    gan_tensor *t = gan_tensor_from_host(CTX, GAN_F32, 2, d, v);
    ck_assert_msg(t, "%s", gan_ctx_error(CTX));
    gan_tensor_set_requires_grad(t, requires_grad);
    return t;
}

START_TEST(test_accumulation_in_place)
{
    enum { R = 2, O = 3, I = 4 };
    float wv[O * I], x1[R * I], x2[R * I], x3[R * O], bv[O];
    for (int i = 0; i < O * I; i++)
        wv[i] = 0.1f * (float)(i % 7) - 0.3f;
    for (int i = 0; i < R * I; i++) {
        x1[i] = 0.25f * (float)(i % 5) - 0.5f;
        x2[i] = 0.5f - 0.125f * (float)(i % 6);
    }
    for (int i = 0; i < R * O; i++)
        x3[i] = 0.2f * (float)(i % 4) - 0.1f;
    for (int i = 0; i < O; i++)
        bv[i] = 0.05f * (float)i;
    /* y = Σ c1·lin(x1, w, b) + Σ c2·(x2·wᵀ) + Σ c3·(x3·w) + Σ c4·(w + z) + Σ c5·lin(x2, w)
     * with the c's the seeds of each term: dy/dw = c1ᵀx1 + c2ᵀx2 + x3ᵀc3 + c4 + c5ᵀx2,
     * dy/dz = c4. */
    size_t made[2];
    float got[2][O * I], gz[2][O * I];
    for (int mode = 0; mode < 2; mode++) {
        gan_tensor *w = mat(O, I, wv, 1), *b = vec(O, bv, 0), *z = mat(O, I, wv, 1);
        gan_tensor *t[5] = {
            gan_linear(CTX, mat(R, I, x1, 0), w, b),
            gan_matmul(CTX, mat(R, I, x2, 0), w, 0, 1),
            gan_matmul(CTX, mat(R, O, x3, 0), w, 0, 0),
            NULL,
            gan_linear(CTX, mat(R, I, x2, 0), w, NULL),
        };
        t[3] = gan_add(CTX, w, z); /* recorded last: its backward runs first */
        gan_tensor *seeds[5];
        for (int k = 0; k < 5; k++) {
            ck_assert_msg(t[k], "%s", gan_ctx_error(CTX));
            float sv[O * I];
            for (int i = 0; i < O * I; i++)
                sv[i] = (float)(k + 1) * 0.5f + 0.125f * (float)i;
            seeds[k] = mat(gan_tensor_dim(t[k], 0), gan_tensor_dim(t[k], 1), sv, 0);
        }
        struct gan_ctx_stats before, after;
        gan_ctx_get_stats(CTX, &before);
        gan_tensor *in[2] = { w, z }, *g[2];
        ck_assert_int_eq(gan_grad(CTX, 5, t, seeds, 2, in, g, mode), GAN_OK);
        gan_ctx_get_stats(CTX, &after);
        made[mode] = after.step_tensors - before.step_tensors;
        to_host(g[0], got[mode], O * I);
        to_host(g[1], gz[mode], O * I);
    }
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double want = 0;
            for (int r = 0; r < R; r++) {
                double c1 = 0.5 + 0.125 * (r * O + o), c2 = 1.0 + 0.125 * (r * O + o);
                double c3 = 1.5 + 0.125 * (r * I + i), c5 = 2.5 + 0.125 * (r * O + o);
                want += c1 * x1[r * I + i] + c2 * x2[r * I + i] + x3[r * O + o] * c3 +
                        c5 * x2[r * I + i];
            }
            const double c4 = 2.0 + 0.125 * (o * I + i);
            want += c4;
            for (int mode = 0; mode < 2; mode++) {
                ck_assert_msg(fabs(got[mode][o * I + i] - want) <= 1e-5 * (1 + fabs(want)),
                              "create_graph %d: dw[%d][%d] = %.9g, by hand %.9g", mode, o, i,
                              (double)got[mode][o * I + i], want);
                ck_assert_msg(gz[mode][o * I + i] == (float)c4, "create_graph %d: dz[%d][%d] "
                              "= %.9g, not its seed %.9g", mode, o, i,
                              (double)gz[mode][o * I + i], c4);
            }
        }
    /* In place, the four products' gradients are one tensor and no sum is made for them:
     * at least three products and three sums fewer than with create_graph. */
    ck_assert_msg(made[0] + 6 <= made[1], "tensors made by gan_grad: %zu in place, %zu with "
                  "create_graph", made[0], made[1]);
}
END_TEST

START_TEST(test_unreached_zeros)
{
    float av[3] = { 1, 2, 3 }, bv[2] = { 4, 5 }, cv[2] = { 6, 7 }, g[3];
    gan_tensor *a = vec(3, av, 1), *b = vec(2, bv, 1), *c = vec(2, cv, 0);
    gan_tensor *y = gan_sum(CTX, gan_square(CTX, a), GAN_ALL_AXES, 0);
    gan_tensor *in[3] = { a, b, c }, *grads[3];
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 3, in, grads, 0), GAN_OK);
    to_host(grads[0], g, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_float_eq(g[i], 2.0f * av[i]);
    for (int k = 1; k < 3; k++) {
        ck_assert_int_eq(gan_tensor_numel(grads[k]), 2);
        to_host(grads[k], g, 2);
        ck_assert_float_eq(g[0], 0.0f);
        ck_assert_float_eq(g[1], 0.0f);
    }
}
END_TEST

START_TEST(test_no_grad_records_nothing)
{
    float xv[3] = { 0.1f, -0.4f, 0.9f };
    gan_tensor *x = vec(3, xv, 1);
    struct gan_ctx_stats before, after;
    gan_ctx_get_stats(CTX, &before);
    gan_ctx_no_grad_push(CTX);
    gan_tensor *y = gan_sum(CTX, gan_tanh(CTX, gan_mul(CTX, x, x)), GAN_ALL_AXES, 0);
    gan_ctx_no_grad_pop(CTX);
    gan_ctx_get_stats(CTX, &after);
    ck_assert_ptr_nonnull(y);
    ck_assert_uint_eq(after.nodes, before.nodes);
    ck_assert_int_eq(gan_tensor_requires_grad(y), 0);
    gan_tensor *g;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &g, 0), GAN_ERR_INVALID);
    ck_assert_ptr_null(g);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "does not depend"));
    gan_ctx_clear_error(CTX);
    /* Recording is back on after the pop. */
    y = gan_tanh(CTX, x);
    gan_ctx_get_stats(CTX, &after);
    ck_assert_uint_eq(after.nodes, before.nodes + 1);
    /* Without create_graph, the backward records nothing either. */
    gan_tensor *s = gan_sum(CTX, y, 0, 0);
    gan_ctx_get_stats(CTX, &before);
    ck_assert_int_eq(gan_grad(CTX, 1, &s, NULL, 1, &x, &g, 0), GAN_OK);
    gan_ctx_get_stats(CTX, &after);
    ck_assert_uint_eq(after.nodes, before.nodes);
    ck_assert_int_eq(gan_tensor_requires_grad(g), 0);
}
END_TEST

START_TEST(test_seeds_and_outputs)
{
    /* Two outputs with seeds: grad = Σ seed₁·∂y₁ + seed₂·∂y₂. */
    float xv[3] = { 0.5f, -1.0f, 2.0f }, s1v[3] = { 1, 2, 3 }, g[3];
    gan_tensor *x = vec(3, xv, 1);
    gan_tensor *y1 = gan_square(CTX, x);                 /* ∂ = 2x */
    gan_tensor *y2 = gan_sum(CTX, gan_scale(CTX, x, 3.0f), GAN_ALL_AXES, 0);
    gan_tensor *s1 = vec(3, s1v, 0);
    float two = 2.0f;
    gan_tensor *s2 = gan_tensor_from_host(CTX, GAN_F32, 0, NULL, &two);
    gan_tensor *outs[2] = { y1, y2 }, *seeds[2] = { s1, s2 }, *gx;
    ck_assert_int_eq(gan_grad(CTX, 2, outs, seeds, 1, &x, &gx, 0), GAN_OK);
    to_host(gx, g, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_float_eq_tol(g[i], s1v[i] * 2.0f * xv[i] + 2.0f * 3.0f, 1e-6f);

    /* A gradient that is the seed passed through is still a tensor of its own. */
    gan_tensor *z = gan_add_scalar(CTX, x, 1.0f), *gz;
    ck_assert_int_eq(gan_grad(CTX, 1, &z, &s1, 1, &x, &gz, 0), GAN_OK);
    ck_assert_ptr_ne(gz, s1);
    to_host(gz, g, 3);
    ck_assert_mem_eq(g, s1v, sizeof s1v);

    /* The same input twice: two tensors, equal values. */
    gan_tensor *ins[2] = { x, x }, *gs[2];
    ck_assert_int_eq(gan_grad(CTX, 1, &y2, NULL, 2, ins, gs, 0), GAN_OK);
    ck_assert_ptr_ne(gs[0], gs[1]);

    /* A gradient with respect to an intermediate tensor. */
    gan_tensor *h = gan_tanh(CTX, x);
    gan_tensor *q = gan_sum(CTX, gan_square(CTX, h), GAN_ALL_AXES, 0), *gh;
    ck_assert_int_eq(gan_grad(CTX, 1, &q, NULL, 1, &h, &gh, 0), GAN_OK);
    to_host(gh, g, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_float_eq_tol(g[i], 2.0f * tanhf(xv[i]), 1e-6f);
}
END_TEST

START_TEST(test_grad_errors)
{
    float xv[3] = { 1, 2, 3 };
    gan_tensor *x = vec(3, xv, 1);
    gan_tensor *y = gan_square(CTX, x), *g;
    /* A non-scalar output without a seed. */
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &g, 0), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "without a seed"));
    gan_ctx_clear_error(CTX);
    /* A seed of the wrong shape. */
    float sv[2] = { 1, 1 };
    gan_tensor *s = vec(2, sv, 0);
    ck_assert_int_eq(gan_grad(CTX, 1, &y, &s, 1, &x, &g, 0), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "seed 0 has shape [2]"));
    gan_ctx_clear_error(CTX);
    /* An output that depends on nothing. */
    gan_tensor *c = vec(3, xv, 0);
    gan_tensor *k = gan_sum(CTX, c, 0, 0);
    ck_assert_int_eq(gan_grad(CTX, 1, &k, NULL, 1, &x, &g, 0), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "does not depend"));
    gan_ctx_clear_error(CTX);
    /* A failed forward pass: the NULL output is reported. */
    gan_tensor *bad = NULL;
    ck_assert_int_eq(gan_grad(CTX, 1, &bad, NULL, 1, &x, &g, 0), GAN_ERR_INVALID);
    gan_ctx_clear_error(CTX);
    /* Not a leaf. */
    gan_tensor_set_requires_grad(y, 1);
    ck_assert_int_eq(gan_ctx_status(CTX), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(gan_ctx_error(CTX), "not a leaf"));
}
END_TEST

/* step passes no gradient: d/dx Σ (step(x)·w + x) = 1. */
START_TEST(test_step_has_no_gradient)
{
    float xv[4] = { -0.5f, 0.3f, 0.8f, -1.2f }, g[4], sv[4];
    gan_tensor *x = vec(4, xv, 1);
    gan_tensor *st = gan_step(CTX, x);
    ck_assert_int_eq(gan_tensor_requires_grad(st), 0);
    to_host(st, sv, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(sv[i], xv[i] > 0 ? 1.0f : 0.0f);
    gan_tensor *y = gan_sum(CTX, gan_add(CTX, gan_scale(CTX, st, 3.0f), x), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &gx, 0), GAN_OK);
    to_host(gx, g, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(g[i], 1.0f);
}
END_TEST

/* A gradient has its tensor's dtype: an F16 leaf used in an F32 op gets an F16 one. */
START_TEST(test_gradient_dtype)
{
    float xv[2] = { 0.5f, -0.25f }, wv[2] = { 1.0f / 3.0f, 3.0f }, g[2];
    int64_t n = 2;
    gan_tensor *x = gan_tensor_from_host(CTX, GAN_F16, 1, &n, xv);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor *w = vec(2, wv, 0);
    gan_tensor *y = gan_sum(CTX, gan_mul(CTX, x, w), GAN_ALL_AXES, 0), *gx;
    ck_assert_int_eq(gan_tensor_dtype(y), GAN_F32);
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &gx, 0), GAN_OK);
    ck_assert_int_eq(gan_tensor_dtype(gx), GAN_F16);
    to_host(gx, g, 2);
    ck_assert_float_eq(g[0], 0.333251953125f);   /* 1/3 rounded to FP16 */
    ck_assert_float_eq(g[1], 3.0f);
}
END_TEST

/* gan_grad computes only what its inputs need: the penalty's inner pass asks for ∇ₓ,
 * and must not also build (and, under create_graph, record) the weights' gradients. */
START_TEST(test_only_wanted_gradients)
{
    float xv[6] = { 0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f }, wv[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t xd[2] = { 2, 3 }, wd[2] = { 3, 2 };
    gan_tensor *x = gan_tensor_from_host(CTX, GAN_F32, 2, xd, xv);
    gan_tensor *w = gan_tensor_from_host(CTX, GAN_F32, 2, wd, wv);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor_set_requires_grad(w, 1);
    gan_tensor *y = gan_sum(CTX, gan_matmul(CTX, x, w, 0, 0), GAN_ALL_AXES, 0), *gx;
    struct gan_ctx_stats before, after;
    gan_ctx_get_stats(CTX, &before);
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 1, &x, &gx, 1), GAN_OK);
    gan_ctx_get_stats(CTX, &after);
    /* The seed is a constant, so sum's backward records nothing; matmul's backward
     * records one product (g·wᵀ, which depends on w), not a second one for w. */
    ck_assert_uint_eq(after.nodes, before.nodes + 1);
    float g[6];
    ck_assert_int_eq(gan_tensor_to_host(CTX, gx, g, 6), GAN_OK);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            ck_assert_float_eq(g[i * 3 + k], wv[k * 2] + wv[k * 2 + 1]);
    /* Asked for both, both come. */
    gan_tensor *in[2] = { x, w }, *gs[2];
    ck_assert_int_eq(gan_grad(CTX, 1, &y, NULL, 2, in, gs, 1), GAN_OK);
    gan_ctx_get_stats(CTX, &before);
    ck_assert_uint_eq(before.nodes, after.nodes + 2);
}
END_TEST

static Suite *autograd_suite(void)
{
    Suite *s = suite_create("autograd");
#define SWEEP(name, test, cases) do { \
        TCase *sweep = tcase_create(name); \
        tcase_add_checked_fixture(sweep, backend_fixture_setup, backend_fixture_teardown); \
        tcase_add_loop_test(sweep, test, 0, (int)(sizeof cases / sizeof cases[0])); \
        suite_add_tcase(s, sweep); \
    } while (0)
    SWEEP("binary", test_binary, binary_cases);
    SWEEP("unary", test_unary, unary_cases);
    SWEEP("reduce", test_reduce, reduce_cases);
    SWEEP("matmul", test_matmul, matmul_cases);
    SWEEP("linear", test_linear, linear_cases);
    SWEEP("shape", test_shape, shape_cases);
    SWEEP("conv", test_conv, conv_cases);
    SWEEP("cast", test_cast, cast_cases);
#undef SWEEP
    TCase *tc = tcase_create("semantics");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_accumulation);
    tcase_add_test(tc, test_accumulation_in_place);
    tcase_add_test(tc, test_unreached_zeros);
    tcase_add_test(tc, test_no_grad_records_nothing);
    tcase_add_test(tc, test_seeds_and_outputs);
    tcase_add_test(tc, test_grad_errors);
    tcase_add_test(tc, test_step_has_no_gradient);
    tcase_add_test(tc, test_gradient_dtype);
    tcase_add_test(tc, test_only_wanted_gradients);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(autograd_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
