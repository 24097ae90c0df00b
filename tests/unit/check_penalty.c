/* SPDX-License-Identifier: MIT */
/* check_penalty.c — the WGAN-GP gradient penalty end to end: the gradient of
 * P(θ) = mean_i (‖∇ₓD(x̂ᵢ)‖₂ − 1)² with respect to every critic parameter, against
 * central finite differences of an independent double-precision reference.
 *
 * The critic is the paper's toy MLP shrunk: 2 → 16 → 16 → 1 with ReLU, leaky ReLU or
 * tanh. ganctl computes ∇ₓD with gan_grad(create_graph), builds P from it, and
 * differentiates P with a second gan_grad. The reference evaluates D's input gradient
 * by hand-written backpropagation in double, and P's derivative by central differences
 * with h = 1e-5 (truncation ~h²·P''' ≈ 1e-10, rounding ~1e-16/h ≈ 1e-11: exact at the
 * scale of FP32). So the comparison measures ganctl's FP32 error alone: values of P's
 * gradient are O(1) and FP32 sums of a few hundred terms are good to ~1e-5 relative;
 * the tolerance is |analytic − fd| ≤ 1e-5 + 1e-4·|fd|. Measured, the worst error is
 * 4e-6 (0.02 of its tolerance); a backward rule off by 1 % (sqrt's 0.5 as 0.505) fails
 * every case.
 * For ReLU networks P is piecewise polynomial in θ; the inputs are redrawn until every
 * pre-activation is at least 0.02 from zero, so no ±h step crosses a kink. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"

#define CTX (fx.ctx)
#define IN 2
#define HID 16
#define MAXB 40
#define FD_STEP 1e-5
#define ATOL 1e-5
#define RTOL 1e-4

enum act { ACT_RELU, ACT_LEAKY, ACT_TANH };

struct pcase {
    const char *name;
    enum act act;
    int batch;
    uint64_t seed;
};

static const struct pcase cases[] = {
    { "relu, batch 8", ACT_RELU, 8, 11 },
    { "tanh, batch 8", ACT_TANH, 8, 12 },
    { "leaky_relu 0.2, batch 5", ACT_LEAKY, 5, 13 },
    { "tanh, batch 1", ACT_TANH, 1, 14 },
    { "relu, batch 33", ACT_RELU, 33, 15 },
};

#define LEAKY_SLOPE 0.2

/* The parameters, as host arrays in double and float. */
enum { P_W1, P_B1, P_W2, P_B2, P_W3, P_B3, N_PARAMS };
static const int pdims_n[N_PARAMS] = { 2, 1, 2, 1, 2, 1 };
static const int64_t pdims[N_PARAMS][2] = {
    { IN, HID }, { HID }, { HID, HID }, { HID }, { HID, 1 }, { 1 }
};
static const char *const pnames[N_PARAMS] = { "W1", "b1", "W2", "b2", "W3", "b3" };

struct net {
    enum act act;
    int batch;
    double p[N_PARAMS][HID * HID];
    double x[MAXB][IN];
};

static int64_t pcount(int k)
{
    return pdims_n[k] == 2 ? pdims[k][0] * pdims[k][1] : pdims[k][0];
}

/* ------------------------------------------------------------------ the reference */

static uint64_t rng_state;

static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1p-53;
}

static double normal01(void)
{
    return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
}

static double act_f(enum act a, double z)
{
    switch (a) {
    case ACT_RELU: return z > 0 ? z : 0;
    case ACT_LEAKY: return z > 0 ? z : LEAKY_SLOPE * z;
    case ACT_TANH:
    default: return tanh(z);
    }
}

static double act_d(enum act a, double z)
{
    switch (a) {
    case ACT_RELU: return z > 0 ? 1 : 0;
    case ACT_LEAKY: return z > 0 ? 1 : LEAKY_SLOPE;
    case ACT_TANH:
    default: {
        double t = tanh(z);
        return 1 - t * t;
    }
    }
}

/* D(x̂_b) and ∇ₓD(x̂_b) by forward and backward passes written out; returns the
 * smallest |pre-activation| met, for the kink check. */
static double critic(const struct net *n, int b, double *d_out, double *grad)
{
    const double *W1 = n->p[P_W1], *b1 = n->p[P_B1], *W2 = n->p[P_W2];
    const double *b2 = n->p[P_B2], *W3 = n->p[P_W3], *b3 = n->p[P_B3];
    double z1[HID], a1[HID], z2[HID], a2[HID], dz2[HID], dz1[HID];
    double margin = INFINITY;
    for (int j = 0; j < HID; j++) {
        z1[j] = b1[j];
        for (int i = 0; i < IN; i++)
            z1[j] += n->x[b][i] * W1[i * HID + j];
        a1[j] = act_f(n->act, z1[j]);
        margin = fmin(margin, fabs(z1[j]));
    }
    double d = b3[0];
    for (int k = 0; k < HID; k++) {
        z2[k] = b2[k];
        for (int j = 0; j < HID; j++)
            z2[k] += a1[j] * W2[j * HID + k];
        a2[k] = act_f(n->act, z2[k]);
        margin = fmin(margin, fabs(z2[k]));
        d += a2[k] * W3[k];
    }
    for (int k = 0; k < HID; k++)
        dz2[k] = W3[k] * act_d(n->act, z2[k]);
    for (int j = 0; j < HID; j++) {
        double s = 0;
        for (int k = 0; k < HID; k++)
            s += W2[j * HID + k] * dz2[k];
        dz1[j] = s * act_d(n->act, z1[j]);
    }
    for (int i = 0; i < IN; i++) {
        grad[i] = 0;
        for (int j = 0; j < HID; j++)
            grad[i] += W1[i * HID + j] * dz1[j];
    }
    if (d_out)
        *d_out = d;
    return margin;
}

static double penalty_ref(const struct net *n)
{
    double sum = 0;
    for (int b = 0; b < n->batch; b++) {
        double g[IN], sq = 0;
        critic(n, b, NULL, g);
        for (int i = 0; i < IN; i++)
            sq += g[i] * g[i];
        double e = sqrt(sq) - 1;
        sum += e * e;
    }
    return sum / n->batch;
}

/* He-initialised weights, small random biases (so that they matter), and inputs in
 * (−1.5, 1.5), redrawn until no pre-activation is within 0.02 of a kink. */
static void init_net(struct net *n, const struct pcase *c)
{
    memset(n, 0, sizeof *n);
    n->act = c->act;
    n->batch = c->batch;
    rng_state = c->seed;
    for (int k = 0; k < N_PARAMS; k++) {
        int64_t fan_in = pdims_n[k] == 2 ? pdims[k][0] : HID;
        for (int64_t i = 0; i < pcount(k); i++)
            n->p[k][i] = pdims_n[k] == 2 ? normal01() * sqrt(2.0 / (double)fan_in)
                                         : 0.2 * normal01();
    }
    for (int b = 0; b < n->batch; b++) {
        int tries = 0;
        double g[IN];
        do {
            ck_assert_msg(tries++ < 1000, "no input away from the kinks for sample %d", b);
            for (int i = 0; i < IN; i++)
                n->x[b][i] = 3.0 * uniform01() - 1.5;
        } while (c->act != ACT_TANH && critic(n, b, NULL, g) < 0.02);
    }
}

/* ------------------------------------------------------------------ ganctl's side */

static gan_tensor *upload(const double *v, int nd, const int64_t *dims, int64_t count)
{
    float f[HID * HID > MAXB * IN ? HID * HID : MAXB * IN];
    for (int64_t i = 0; i < count; i++)
        f[i] = (float)v[i];
    gan_tensor *t = gan_tensor_from_host(CTX, GAN_F32, nd, dims, f);
    ck_assert_msg(t, "%s", gan_ctx_error(CTX));
    return t;
}

static gan_tensor *act_op(enum act a, gan_tensor *z)
{
    switch (a) {
    case ACT_RELU: return gan_relu(CTX, z);
    case ACT_LEAKY: return gan_leaky_relu(CTX, z, (float)LEAKY_SLOPE);
    case ACT_TANH:
    default: return gan_tanh(CTX, z);
    }
}

static void check_value(const char *what, int k, int64_t i, double analytic, double ref,
                        double atol, double rtol)
{
    double err = fabs(analytic - ref), tol = atol + rtol * fabs(ref);
    ck_assert_msg(err <= tol, "%s %d[%lld]: ganctl %.8g, reference %.8g (|diff| %.3g > %.3g)",
                  what, k, (long long)i, analytic, ref, err, tol);
}

START_TEST(test_penalty_gradient)
{
    const struct pcase *c = &cases[_i];
    static struct net n;
    init_net(&n, c);

    /* Parameters are persistent leaves, as a model's are; x̂ is a step tensor that
     * requires a gradient. */
    gan_tensor *params[N_PARAMS], *grads[N_PARAMS];
    for (int k = 0; k < N_PARAMS; k++) {
        gan_tensor *t = upload(n.p[k], pdims_n[k], pdims[k], pcount(k));
        params[k] = gan_tensor_new_persistent(CTX, GAN_F32, pdims_n[k], pdims[k]);
        ck_assert_int_eq(gan_tensor_copy(CTX, params[k], t), GAN_OK);
        gan_tensor_set_requires_grad(params[k], 1);
    }
    int64_t xd[2] = { n.batch, IN }, od[2] = { n.batch, 1 };
    gan_tensor *x = upload(&n.x[0][0], 2, xd, n.batch * IN);
    gan_tensor_set_requires_grad(x, 1);

    gan_tensor *h1 = act_op(n.act, gan_add(CTX, gan_matmul(CTX, x, params[P_W1], 0, 0),
                                           params[P_B1]));
    gan_tensor *h2 = act_op(n.act, gan_add(CTX, gan_matmul(CTX, h1, params[P_W2], 0, 0),
                                           params[P_B2]));
    gan_tensor *d = gan_add(CTX, gan_matmul(CTX, h2, params[P_W3], 0, 0), params[P_B3]);
    ck_assert_msg(d, "%s", gan_ctx_error(CTX));
    gan_tensor *ones = gan_tensor_full(CTX, GAN_F32, 2, od, 1.0f), *gx;
    ck_assert_msg(gan_grad(CTX, 1, &d, &ones, 1, &x, &gx, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    gan_tensor *norm = gan_sqrt(CTX, gan_sum(CTX, gan_square(CTX, gx), 1, 0));
    gan_tensor *pen = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX, norm, -1.0f)),
                               GAN_ALL_AXES, 0);
    ck_assert_msg(pen, "%s", gan_ctx_error(CTX));
    ck_assert_msg(gan_grad(CTX, 1, &pen, NULL, N_PARAMS, params, grads, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));

    /* D, ∇ₓD and P themselves first: the same network on both sides. */
    float dv[MAXB], gv[MAXB * IN], pv;
    ck_assert_int_eq(gan_tensor_to_host(CTX, d, dv, (size_t)n.batch), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, gx, gv, (size_t)(n.batch * IN)), GAN_OK);
    ck_assert_int_eq(gan_tensor_to_host(CTX, pen, &pv, 1), GAN_OK);
    for (int b = 0; b < n.batch; b++) {
        double dref, gref[IN];
        critic(&n, b, &dref, gref);
        check_value("D", b, 0, dv[b], dref, 1e-5, 1e-5);
        for (int i = 0; i < IN; i++)
            check_value("grad_x D", b, i, gv[b * IN + i], gref[i], 1e-5, 1e-5);
    }
    double P = penalty_ref(&n);
    check_value("P", 0, 0, pv, P, 1e-6, 1e-5);

    /* dP/dθ, every element of every parameter. */
    double worst = 0, largest = 0;
    float gbuf[HID * HID];
    for (int k = 0; k < N_PARAMS; k++) {
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[k], gbuf, (size_t)pcount(k)), GAN_OK);
        for (int64_t i = 0; i < pcount(k); i++) {
            double keep = n.p[k][i];
            n.p[k][i] = keep + FD_STEP;
            double pp = penalty_ref(&n);
            n.p[k][i] = keep - FD_STEP;
            double pm = penalty_ref(&n);
            n.p[k][i] = keep;
            double fd = (pp - pm) / (2 * FD_STEP);
            double err = fabs(gbuf[i] - fd), tol = ATOL + RTOL * fabs(fd);
            ck_assert_msg(err <= tol, "%s: dP/d%s[%lld]: ganctl %.8g, finite difference %.8g "
                          "(|diff| %.3g > %.3g)", c->name, pnames[k], (long long)i,
                          (double)gbuf[i], fd, err, tol);
            worst = fmax(worst, err / tol);
            largest = fmax(largest, fabs(fd));
        }
    }
    /* The check has teeth: P's gradient is large next to the tolerance. */
    ck_assert_msg(largest > 100 * ATOL, "%s: the largest dP/dθ is only %g", c->name, largest);
    if (getenv("GANCTL_FD_REPORT"))
        fprintf(stderr, "%-28s P = %.6f, largest |dP/dθ| %.3g, worst error %.3f of its "
                "tolerance\n", c->name, P, largest, worst);
    gan_ctx_step_end(CTX);
    for (int k = 0; k < N_PARAMS; k++)
        gan_tensor_free(params[k]);
}
END_TEST

/* The output bias never reaches ∇ₓD: its penalty gradient is exactly zero, a tensor of
 * zeros from gan_grad rather than a missing one. With ReLU, the hidden biases only
 * move kinks, so theirs are zero too. */
START_TEST(test_penalty_unreached_bias)
{
    static struct net n;
    init_net(&n, &cases[0]);
    gan_tensor *params[N_PARAMS], *grads[N_PARAMS];
    for (int k = 0; k < N_PARAMS; k++) {
        params[k] = upload(n.p[k], pdims_n[k], pdims[k], pcount(k));
        gan_tensor_set_requires_grad(params[k], 1);
    }
    int64_t xd[2] = { n.batch, IN };
    gan_tensor *x = upload(&n.x[0][0], 2, xd, n.batch * IN);
    gan_tensor_set_requires_grad(x, 1);
    gan_tensor *h1 = gan_relu(CTX, gan_add(CTX, gan_matmul(CTX, x, params[P_W1], 0, 0),
                                           params[P_B1]));
    gan_tensor *h2 = gan_relu(CTX, gan_add(CTX, gan_matmul(CTX, h1, params[P_W2], 0, 0),
                                           params[P_B2]));
    gan_tensor *d = gan_sum(CTX, gan_add(CTX, gan_matmul(CTX, h2, params[P_W3], 0, 0),
                                         params[P_B3]), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    ck_assert_msg(gan_grad(CTX, 1, &d, NULL, 1, &x, &gx, 1) == GAN_OK, "%s", gan_ctx_error(CTX));
    gan_tensor *pen = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX,
                               gan_sqrt(CTX, gan_sum(CTX, gan_square(CTX, gx), 1, 0)), -1.0f)),
                               GAN_ALL_AXES, 0);
    ck_assert_msg(gan_grad(CTX, 1, &pen, NULL, N_PARAMS, params, grads, 0) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    float v[HID];
    const int zero_params[3] = { P_B1, P_B2, P_B3 };
    for (int z = 0; z < 3; z++) {
        int k = zero_params[z];
        ck_assert_int_eq(gan_tensor_numel(grads[k]), pcount(k));
        ck_assert_int_eq(gan_tensor_to_host(CTX, grads[k], v, (size_t)pcount(k)), GAN_OK);
        for (int64_t i = 0; i < pcount(k); i++)
            ck_assert_msg(v[i] == 0.0f, "dP/d%s[%lld] = %g", pnames[k], (long long)i, (double)v[i]);
    }
    float w[HID];
    ck_assert_int_eq(gan_tensor_to_host(CTX, grads[P_W3], w, HID), GAN_OK);
    double s = 0;
    for (int i = 0; i < HID; i++)
        s += fabs(w[i]);
    ck_assert_msg(s > 1e-3, "dP/dW3 is all but zero (%g)", s);
}
END_TEST

/* ------------------------------------------------------------------ conv critic
 * The MNIST critic's path in small: conv 3×3 stride 2 → tanh → conv 3×3 → linear. Its
 * penalty gradient runs the double backward of conv2d (through conv2d_transpose and
 * the filter-gradient op). No double reference here: the finite differences are of P
 * as ganctl computes it with a first-order gan_grad (no create_graph), in FP32, with
 * h = 1e-2. P ≈ 0.5 carries ~1e-6 relative rounding, so the quotient carries ~5e-5;
 * tanh keeps P smooth, and its truncation error measures below 1e-4. Tolerance:
 * |analytic − fd| ≤ 1e-3 + 1e-2·|fd|. */

enum { C_W1, C_B1, C_W2, C_W3, N_CPARAMS };
static const int64_t cdims[N_CPARAMS][4] = {
    { 4, 1, 3, 3 }, { 1, 4, 1, 1 }, { 3, 4, 3, 3 }, { 3, 1, 0, 0 }
};
static const int cdims_n[N_CPARAMS] = { 4, 4, 4, 2 };
static const char *const cnames[N_CPARAMS] = { "w1", "b1", "w2", "W3" };
#define CBATCH 2
#define CSIDE 6

static int64_t ccount(int k)
{
    int64_t c = 1;
    for (int d = 0; d < cdims_n[k]; d++)
        c *= cdims[k][d];
    return c;
}

/* P for parameters `p` and inputs `x`; with create_graph, also dP/dθ into grads. */
static float conv_penalty(float *const *p, const float *x, float **grads)
{
    gan_tensor *params[N_CPARAMS], *g[N_CPARAMS];
    for (int k = 0; k < N_CPARAMS; k++) {
        params[k] = gan_tensor_from_host(CTX, GAN_F32, cdims_n[k], cdims[k], p[k]);
        gan_tensor_set_requires_grad(params[k], 1);
    }
    int64_t xd[4] = { CBATCH, 1, CSIDE, CSIDE }, fd[2] = { CBATCH, 3 };
    gan_tensor *xt = gan_tensor_from_host(CTX, GAN_F32, 4, xd, x);
    gan_tensor_set_requires_grad(xt, 1);
    gan_tensor *h = gan_tanh(CTX, gan_add(CTX, gan_conv2d(CTX, xt, params[C_W1], 2, 1),
                                          params[C_B1]));
    gan_tensor *h2 = gan_reshape(CTX, gan_conv2d(CTX, h, params[C_W2], 1, 0), 2, fd);
    gan_tensor *d = gan_sum(CTX, gan_matmul(CTX, h2, params[C_W3], 0, 0), GAN_ALL_AXES, 0);
    gan_tensor *gx;
    ck_assert_msg(gan_grad(CTX, 1, &d, NULL, 1, &xt, &gx, grads != NULL) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    int64_t flat[2] = { CBATCH, CSIDE * CSIDE };
    gan_tensor *norm = gan_sqrt(CTX, gan_sum(CTX, gan_square(CTX, gan_reshape(CTX, gx, 2, flat)),
                                             1, 0));
    gan_tensor *pen = gan_mean(CTX, gan_square(CTX, gan_add_scalar(CTX, norm, -1.0f)),
                               GAN_ALL_AXES, 0);
    float pv;
    ck_assert_msg(pen && gan_tensor_to_host(CTX, pen, &pv, 1) == GAN_OK, "%s",
                  gan_ctx_error(CTX));
    if (grads) {
        ck_assert_msg(gan_grad(CTX, 1, &pen, NULL, N_CPARAMS, params, g, 0) == GAN_OK, "%s",
                      gan_ctx_error(CTX));
        for (int k = 0; k < N_CPARAMS; k++)
            ck_assert_int_eq(gan_tensor_to_host(CTX, g[k], grads[k], (size_t)ccount(k)), GAN_OK);
    }
    gan_ctx_step_end(CTX);
    return pv;
}

START_TEST(test_conv_penalty_gradient)
{
    static float store[N_CPARAMS][4 * 4 * 9], gstore[N_CPARAMS][4 * 4 * 9];
    static float x[CBATCH * CSIDE * CSIDE];
    float *p[N_CPARAMS], *g[N_CPARAMS];
    rng_state = 21;
    for (int k = 0; k < N_CPARAMS; k++) {
        p[k] = store[k];
        g[k] = gstore[k];
        double fan = k == C_W1 ? 9 : k == C_W2 ? 36 : 3;
        for (int64_t i = 0; i < ccount(k); i++)
            p[k][i] = (float)(k == C_B1 ? 0.2 * normal01() : normal01() * sqrt(2.0 / fan));
    }
    for (int i = 0; i < CBATCH * CSIDE * CSIDE; i++)
        x[i] = (float)(2.0 * uniform01() - 1.0);

    conv_penalty(p, x, g);
    double worst = 0, largest = 0;
    const float h = 1e-2f;
    for (int k = 0; k < N_CPARAMS; k++) {
        for (int64_t i = 0; i < ccount(k); i++) {
            float keep = p[k][i], up = keep + h, down = keep - h;
            p[k][i] = up;
            double pp = conv_penalty(p, x, NULL);
            p[k][i] = down;
            double pm = conv_penalty(p, x, NULL);
            p[k][i] = keep;
            double fd = (pp - pm) / ((double)up - (double)down);
            double err = fabs(g[k][i] - fd), tol = 1e-3 + 1e-2 * fabs(fd);
            ck_assert_msg(err <= tol, "dP/d%s[%lld]: ganctl %.7g, finite difference %.7g "
                          "(|diff| %.3g > %.3g)", cnames[k], (long long)i, (double)g[k][i],
                          fd, err, tol);
            worst = fmax(worst, err / tol);
            largest = fmax(largest, fabs(fd));
        }
    }
    ck_assert_msg(largest > 0.1, "the largest dP/dθ is only %g", largest);
    if (getenv("GANCTL_FD_REPORT"))
        fprintf(stderr, "%-28s largest |dP/dθ| %.3g, worst error %.3f of its tolerance\n",
                "conv critic, tanh", largest, worst);
}
END_TEST

static Suite *penalty_suite(void)
{
    Suite *s = suite_create("penalty");
    TCase *tc = tcase_create("mlp critic");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_loop_test(tc, test_penalty_gradient, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_penalty_unreached_bias);
    suite_add_tcase(s, tc);

    tc = tcase_create("conv critic");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_conv_penalty_gradient);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(penalty_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
