/* SPDX-License-Identifier: MIT */
/* check_optim_stats.c — the CPU backend's Adam step against a double-precision
 * torch.optim.Adam reference, and its gradient statistics on crafted and random inputs. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../lib/half_helpers.h"

static gan_backend *be;

static void setup(void)
{
    be = cpu_fixture_new(NULL);
}

static void teardown(void)
{
    cpu_fixture_free(be);
    be = NULL;
}

static const char *last_error(void)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

static gan_buffer *buffer_of(enum gan_dtype dt, size_t n)
{
    gan_buffer *buf;
    ck_assert_int_eq(cpu_buffer_alloc(be, n * dsize(dt), &buf), GAN_OK);
    return buf;
}

static struct gan_ref ref_at(gan_buffer *buf, enum gan_dtype dt, size_t offset)
{
    struct gan_ref r = { .buf = buf, .offset = offset, .dtype = dt };
    return r;
}

/* ---- Adam ---- */

/* torch.optim.Adam (L2 weight decay, bias correction, no amsgrad), in double. */
struct adam_ref {
    double *p, *m, *v;
    double *m_abs; /* m's recurrence over |g|'s terms: the scale of m's rounding error */
};

static void adam_ref_step(struct adam_ref *r, const double *grad, size_t n,
                          const struct gan_adam *h)
{
    double b1 = h->beta1, b2 = h->beta2;
    double bc1 = 1 - pow(b1, (double)h->step), bc2 = 1 - pow(b2, (double)h->step);
    for (size_t i = 0; i < n; i++) {
        double g = grad[i] * h->grad_scale + (double)h->weight_decay * r->p[i];
        r->m[i] = b1 * r->m[i] + (1 - b1) * g;
        r->m_abs[i] = b1 * r->m_abs[i] +
                      (1 - b1) * (fabs(grad[i] * h->grad_scale) + fabs(h->weight_decay * r->p[i]));
        r->v[i] = b2 * r->v[i] + (1 - b2) * g * g;
        double mhat = r->m[i] / bc1, vhat = r->v[i] / bc2;
        r->p[i] -= h->lr * mhat / (sqrt(vhat) + h->eps);
    }
}

/* The Adam configurations the sweep runs: gradient dtype, weight decay, gradient
 * scale (with gradients stored that much larger, as a loss scale leaves them), and
 * the working copy's dtype (F32 here means none). */
struct adam_case {
    enum gan_dtype grad;
    float weight_decay, grad_scale;
    int copy;
    enum gan_dtype copy_dtype;
};

static const struct adam_case adam_cases[] = {
    { GAN_F32, 0.0f, 1.0f, 0, GAN_F32 },
    { GAN_F32, 0.01f, 1.0f, 0, GAN_F32 },
    { GAN_F16, 0.0f, 1.0f / 1024.0f, 0, GAN_F32 },
    { GAN_BF16, 0.0f, 1.0f, 1, GAN_BF16 },
    { GAN_F32, 0.0f, 1.0f, 1, GAN_F16 },
    { GAN_F16, 0.05f, 0.125f, 1, GAN_F16 },
    { GAN_F32, 0.0f, 0.5f, 1, GAN_F32 },
};
#define ADAM_CASES ((int)(sizeof adam_cases / sizeof adam_cases[0]))

START_TEST(test_adam_steps)
{
    const struct adam_case *c = &adam_cases[_i];
    const size_t n = 2053, off = 3; /* crosses the kernel's staging block; not aligned */
    const int steps = 8;
    rng_seed(77u + (uint64_t)_i);
    gan_buffer *bp = buffer_of(GAN_F32, n + off), *bm = buffer_of(GAN_F32, n + off);
    gan_buffer *bv = buffer_of(GAN_F32, n + off), *bg = buffer_of(c->grad, n + off);
    gan_buffer *bc = buffer_of(c->copy_dtype, n + off);
    struct adam_ref r = { calloc(n, sizeof(double)), calloc(n, sizeof(double)),
                          calloc(n, sizeof(double)), calloc(n, sizeof(double)) };
    double *g = calloc(n, sizeof *g);
    ck_assert(r.p && r.m && r.v && r.m_abs && g);
    for (size_t i = 0; i < off; i++) /* before the view: must stay as they are */
        raw_set(bp, GAN_F32, i, 12345.0);
    for (size_t i = 0; i < n; i++) {
        raw_set(bp, GAN_F32, off + i, (float)rng_uniform(-1, 1));
        raw_set(bm, GAN_F32, off + i, 0.0);
        raw_set(bv, GAN_F32, off + i, 0.0);
        r.p[i] = raw_get(bp, GAN_F32, off + i);
    }
    struct gan_ref p = ref_at(bp, GAN_F32, off), m = ref_at(bm, GAN_F32, off);
    struct gan_ref v = ref_at(bv, GAN_F32, off), gr = ref_at(bg, c->grad, off);
    struct gan_ref cp = ref_at(c->copy ? bc : NULL, c->copy_dtype, off);
    struct gan_adam h = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .weight_decay = c->weight_decay, .grad_scale = c->grad_scale };
    for (int t = 1; t <= steps; t++) {
        /* Gradients spanning four decades, stored as a loss-scaled backward would. */
        for (size_t i = 0; i < n; i++) {
            double mag = pow(10.0, rng_uniform(-3, 1)) * (rng_int(2) ? 1 : -1);
            raw_set(bg, c->grad, off + i, mag / c->grad_scale);
            g[i] = raw_get(bg, c->grad, off + i);
        }
        h.step = t;
        ck_assert_msg(cpu_adam(be, &h, n, &p, &gr, &m, &v, &cp) == GAN_OK, "%s", last_error());
        adam_ref_step(&r, g, n, &h);
        for (size_t i = 0; i < n; i++) {
            double pk = raw_get(bp, GAN_F32, off + i), mk = raw_get(bm, GAN_F32, off + i);
            double vk = raw_get(bv, GAN_F32, off + i);
            /* FP32 state against the double reference: a few ulps per step, of |m|'s
             * scale for m (its terms can cancel), relative for v (they cannot). */
            ck_assert_msg(fabs(pk - r.p[i]) <= 2e-6 * (1 + fabs(r.p[i])),
                          "case %d step %d: param[%zu] = %.9g, want %.9g", _i, t, i, pk, r.p[i]);
            ck_assert_msg(fabs(mk - r.m[i]) <= 2e-6 * r.m_abs[i],
                          "case %d step %d: m[%zu] = %.9g, want %.9g", _i, t, i, mk, r.m[i]);
            ck_assert_msg(fabs(vk - r.v[i]) <= 1e-5 * r.v[i] + 1e-12,
                          "case %d step %d: v[%zu] = %.9g, want %.9g", _i, t, i, vk, r.v[i]);
            if (c->copy)
                ck_assert_msg(raw_bits(bc, c->copy_dtype, off + i) ==
                              (c->copy_dtype == GAN_F16 ? f16_encode(pk)
                               : c->copy_dtype == GAN_BF16 ? bf16_encode(pk)
                               : raw_bits(bp, GAN_F32, off + i)),
                              "case %d step %d: param_copy[%zu] is not param rounded once",
                              _i, t, i);
        }
    }
    for (size_t i = 0; i < off; i++)
        ck_assert_double_eq(raw_get(bp, GAN_F32, i), 12345.0);
    free(r.p);
    free(r.m_abs);
    free(r.m);
    free(r.v);
    free(g);
    cpu_buffer_free(be, bp);
    cpu_buffer_free(be, bm);
    cpu_buffer_free(be, bv);
    cpu_buffer_free(be, bg);
    cpu_buffer_free(be, bc);
}
END_TEST

START_TEST(test_adam_bias_correction)
{
    /* At step 1 from zero moments, m̂ = g and v̂ = g², so every parameter moves by
     * lr · g / (|g| + eps): lr against the gradient's sign whatever its size. Without
     * bias correction the move would be lr · 0.1 / sqrt(0.001) ≈ 3.16 · lr. */
    const size_t n = 5;
    static const float grads[5] = { 1e-3f, -2.0f, 300.0f, -1e-5f, 0.5f };
    gan_buffer *bp = buffer_of(GAN_F32, n), *bm = buffer_of(GAN_F32, n);
    gan_buffer *bv = buffer_of(GAN_F32, n), *bg = buffer_of(GAN_F32, n);
    memset(bp->data, 0, n * 4);
    memset(bm->data, 0, n * 4);
    memset(bv->data, 0, n * 4);
    memcpy(bg->data, grads, sizeof grads);
    struct gan_ref p = ref_at(bp, GAN_F32, 0), m = ref_at(bm, GAN_F32, 0);
    struct gan_ref v = ref_at(bv, GAN_F32, 0), g = ref_at(bg, GAN_F32, 0);
    struct gan_adam h = { .lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .step = 1, .grad_scale = 1.0f };
    ck_assert_int_eq(cpu_adam(be, &h, n, &p, &g, &m, &v, NULL), GAN_OK);
    for (size_t i = 0; i < n; i++) {
        double gi = grads[i], want = -0.01 * gi / (fabs(gi) + 1e-8);
        ck_assert_msg(fabs(raw_get(bp, GAN_F32, i) - want) <= 1e-8,
                      "param[%zu] moved to %.9g, want %.9g", i, raw_get(bp, GAN_F32, i), want);
        ck_assert_double_eq_tol(raw_get(bm, GAN_F32, i), 0.1 * gi, 1e-6 * fabs(gi));
        ck_assert_double_eq_tol(raw_get(bv, GAN_F32, i), 0.001 * gi * gi, 1e-6 * gi * gi);
    }
    /* Late in training the corrections vanish: at step 10^6, from m = 0.1, v = 0.01
     * and a zero gradient, the move is lr · 0.09 / (sqrt(0.00999) + eps). */
    float m0 = 0.1f, v0 = 0.01f, zero = 0.0f;
    memcpy(bm->data, &m0, 4);
    memcpy(bv->data, &v0, 4);
    memcpy(bg->data, &zero, 4);
    memset(bp->data, 0, 4);
    h.step = 1000000;
    ck_assert_int_eq(cpu_adam(be, &h, 1, &p, &g, &m, &v, NULL), GAN_OK);
    double bc1 = 1 - pow(0.9f, 1e6), bc2 = 1 - pow((double)0.999f, 1e6);
    double want = -0.01 * (0.9 * 0.1 / bc1) / (sqrt(0.999 * 0.01 / bc2) + 1e-8);
    ck_assert_double_eq_tol(raw_get(bp, GAN_F32, 0), want, 1e-7);
    cpu_buffer_free(be, bp);
    cpu_buffer_free(be, bm);
    cpu_buffer_free(be, bv);
    cpu_buffer_free(be, bg);
}
END_TEST

START_TEST(test_adam_rejects_bad_arguments)
{
    const size_t n = 8;
    gan_buffer *b32 = buffer_of(GAN_F32, n), *b16 = buffer_of(GAN_F16, n);
    memset(b32->data, 0, n * 4);
    struct gan_ref f = ref_at(b32, GAN_F32, 0), h16 = ref_at(b16, GAN_F16, 0);
    struct gan_adam ok = { .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                           .step = 1, .grad_scale = 1.0f };
    struct gan_adam h;
#define REJECT(FIELD, VALUE, TEXT)                                                      \
    do {                                                                                \
        h = ok;                                                                         \
        h.FIELD = VALUE;                                                                \
        ck_assert_int_eq(cpu_adam(be, &h, n, &f, &f, &f, &f, NULL), GAN_ERR_INVALID);   \
        ck_assert_msg(strstr(last_error(), TEXT), "message: %s", last_error());         \
    } while (0)
    REJECT(step, 0, "step is 0");
    REJECT(lr, -1e-3f, "lr is");
    REJECT(lr, NAN, "lr is nan");
    REJECT(beta1, 1.0f, "beta1 is 1");
    REJECT(beta2, -0.5f, "beta2 is -0.5");
    REJECT(eps, 0.0f, "eps is 0");
    REJECT(weight_decay, -0.1f, "weight_decay");
    REJECT(grad_scale, INFINITY, "grad_scale is inf");
#undef REJECT
    /* The FP32 master state must be FP32; the gradient may be 16-bit but not an integer. */
    ck_assert_int_eq(cpu_adam(be, &ok, n, &h16, &f, &f, &f, NULL), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(last_error(), "param has dtype F16"), "message: %s", last_error());
    struct gan_ref gi = ref_at(b32, GAN_I32, 0);
    ck_assert_int_eq(cpu_adam(be, &ok, n, &f, &gi, &f, &f, NULL), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(last_error(), "grad has dtype I32"), "message: %s", last_error());
    /* Too many elements for m's buffer; a NULL parameter block. */
    struct gan_ref m_late = ref_at(b32, GAN_F32, 1);
    ck_assert_int_eq(cpu_adam(be, &ok, n, &f, &f, &m_late, &f, NULL), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "m needs") && strstr(last_error(), "holds 8"),
                  "message: %s", last_error());
    ck_assert_int_eq(cpu_adam(be, NULL, n, &f, &f, &f, &f, NULL), GAN_ERR_INVALID);
    /* A 16-bit working copy too short for n. */
    struct gan_ref c_late = ref_at(b16, GAN_F16, 4);
    ck_assert_int_eq(cpu_adam(be, &ok, n, &f, &f, &f, &f, &c_late), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "param_copy"), "message: %s", last_error());
    cpu_buffer_free(be, b32);
    cpu_buffer_free(be, b16);
}
END_TEST

/* ---- gradient statistics ---- */

/* The statistics by definition, from x as stored (decoded to double). */
static void stats_ref(const double *x, size_t n, double inv, struct gan_grad_stats *s)
{
    memset(s, 0, sizeof *s);
    s->elements = n;
    double minnz = INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            s->nonfinite++;
            continue;
        }
        double a = fabs(x[i]);
        if (a == 0) {
            s->zeros++;
            continue;
        }
        if (a < ldexp(1.0, -14))
            s->subnormal++;
        double u = a * fabs(inv);
        s->absmax = u > s->absmax ? u : s->absmax;
        minnz = u < minnz ? u : minnz;
        s->sum_squares += u * u;
    }
    s->min_nonzero = isinf(minnz) ? 0 : minnz;
}

static void check_stats(const struct gan_grad_stats *got, const struct gan_grad_stats *want,
                        const char *what)
{
    ck_assert_msg(got->elements == want->elements, "%s: elements", what);
    ck_assert_msg(got->nonfinite == want->nonfinite, "%s: nonfinite %llu, want %llu", what,
                  (unsigned long long)got->nonfinite, (unsigned long long)want->nonfinite);
    ck_assert_msg(got->zeros == want->zeros, "%s: zeros %llu, want %llu", what,
                  (unsigned long long)got->zeros, (unsigned long long)want->zeros);
    ck_assert_msg(got->subnormal == want->subnormal, "%s: subnormal %llu, want %llu", what,
                  (unsigned long long)got->subnormal, (unsigned long long)want->subnormal);
    /* Products of two FP32 numbers are exact in double: absmax and min are too. */
    ck_assert_msg(got->absmax == want->absmax, "%s: absmax %.17g, want %.17g", what,
                  got->absmax, want->absmax);
    ck_assert_msg(got->min_nonzero == want->min_nonzero, "%s: min_nonzero %.17g, want %.17g",
                  what, got->min_nonzero, want->min_nonzero);
    ck_assert_msg(fabs(got->sum_squares - want->sum_squares) <= 1e-12 * want->sum_squares ||
                  got->sum_squares == want->sum_squares,
                  "%s: sum_squares %.17g, want %.17g", what, got->sum_squares, want->sum_squares);
}

START_TEST(test_grad_stats_crafted)
{
    static const float xs[] = {
        0.0f, -0.0f,                       /* zeros */
        1e-6f, -0x1.fffffep-15f, 1e-30f,   /* |x| < 2^-14: FP16-subnormal range */
        0x1p-14f,                          /* the smallest FP16 normal: not counted */
        INFINITY, -INFINITY, NAN,          /* non-finite */
        3.0f, -5.0f, 0.5f,
    };
    const size_t n = sizeof xs / sizeof xs[0];
    gan_buffer *bx = buffer_of(GAN_F32, n), *bu = buffer_of(GAN_F32, n);
    memcpy(bx->data, xs, sizeof xs);
    struct gan_ref x = ref_at(bx, GAN_F32, 0), u = ref_at(bu, GAN_F32, 0);
    struct gan_grad_stats s;
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 0.25f, &u, &s), GAN_OK);
    ck_assert_uint_eq(s.elements, n);
    ck_assert_uint_eq(s.zeros, 2);
    ck_assert_uint_eq(s.subnormal, 3);
    ck_assert_uint_eq(s.nonfinite, 3);
    ck_assert_double_eq(s.absmax, 1.25);
    ck_assert_double_eq(s.min_nonzero, (double)1e-30f * 0.25);
    double sq = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(xs[i]))
            sq += ((double)xs[i] * 0.25) * ((double)xs[i] * 0.25);
    ck_assert_double_eq_tol(s.sum_squares, sq, 1e-15 * sq);
    ck_assert_double_eq_tol(s.sum_squares, (9 + 25 + 0.25) / 16.0, 1e-9);
    /* The fused unscale: x / 4, with inf and NaN written through. */
    for (size_t i = 0; i < n; i++) {
        double got = raw_get(bu, GAN_F32, i);
        if (isnan(xs[i]))
            ck_assert(isnan(got));
        else
            ck_assert_msg(got == (double)(xs[i] * 0.25f) && !signbit(got) == !signbit(xs[i]),
                          "unscaled[%zu] = %g", i, got);
    }
    /* Without an output buffer nothing is written and the statistics are the same. */
    struct gan_grad_stats s2;
    memset(bu->data, 0x7f, n * 4);
    struct gan_ref none = ref_at(NULL, GAN_F32, 0);
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 0.25f, &none, &s2), GAN_OK);
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 0.25f, NULL, &s2), GAN_OK);
    ck_assert(memcmp(&s, &s2, sizeof s) == 0);
    for (size_t i = 0; i < n * 4; i++)
        ck_assert_uint_eq(bu->data[i], 0x7f);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bu);
}
END_TEST

/* Random 16-bit gradients of a loss-scaled backward: magnitudes log-uniform over
 * the whole FP16 range and past both ends, so that some underflowed to zero or into
 * the subnormals, some overflowed to inf, a few NaN. Loop index: dtype and output. */
START_TEST(test_grad_stats_random)
{
    static const enum gan_dtype xt[] = { GAN_F16, GAN_F16, GAN_BF16, GAN_F32 };
    static const enum gan_dtype ut[] = { GAN_F32, GAN_F16, GAN_F32, GAN_BF16 };
    enum gan_dtype xdt = xt[_i % 4], udt = ut[_i % 4];
    const size_t n = 5000 + (size_t)_i, off = 1 + (size_t)_i % 3;
    rng_seed(4242u + (uint64_t)_i);
    gan_buffer *bx = buffer_of(xdt, n + off), *bu = buffer_of(udt, n + off);
    double *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++) {
        double v = ldexp(rng_uniform(1, 2), rng_int(48) - 28) * (rng_int(2) ? 1 : -1);
        if (rng_int(200) == 0)
            v = NAN;
        else if (rng_int(50) == 0)
            v = 0.0;
        raw_set(bx, xdt, off + i, v);
        x[i] = raw_get(bx, xdt, off + i);
    }
    /* A power of two (a plain loss scale) or not (one times a clipping factor, where
     * the FP32 product rounds and the statistics must not). */
    float inv = _i % 2 ? ldexpf(1.0f, -rng_int(20)) : ldexpf((float)rng_uniform(1, 2), -rng_int(20));
    struct gan_grad_stats got, want;
    struct gan_ref xr = ref_at(bx, xdt, off), ur = ref_at(bu, udt, off);
    ck_assert_int_eq(cpu_grad_stats(be, n, &xr, inv, &ur, &got), GAN_OK);
    stats_ref(x, n, inv, &want);
    char what[96];
    snprintf(what, sizeof what, "%s x, %s unscaled, inv_scale %a", gan_dtype_name(xdt),
             gan_dtype_name(udt), (double)inv);
    check_stats(&got, &want, what);
    if (xdt == GAN_F16) /* the generator reaches both ends of FP16's range */
        ck_assert(want.subnormal > 0 && want.nonfinite > 0 && want.zeros > 0);
    for (size_t i = 0; i < n; i++) {
        double g = raw_get(bu, udt, off + i);
        if (!isfinite(x[i])) {
            ck_assert_msg(isnan(x[i]) ? isnan(g) : g == x[i], "%s: unscaled[%zu] = %g, x = %g",
                          what, i, g, x[i]);
            continue;
        }
        double u32 = (float)(x[i] * inv); /* the FP32 product, then the output type */
        double w = udt == GAN_F32 ? u32
                 : udt == GAN_F16 ? f16_decode(f16_encode(u32)) : bf16_decode(bf16_encode(u32));
        ck_assert_msg(g == w, "%s: unscaled[%zu] = %.9g, want %.9g", what, i, g, w);
    }
    free(x);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bu);
}
END_TEST

START_TEST(test_grad_stats_in_place_and_edges)
{
    /* Unscaling in place (unscaled is x). */
    const size_t n = 3000;
    gan_buffer *bx = buffer_of(GAN_F32, n);
    for (size_t i = 0; i < n; i++)
        raw_set(bx, GAN_F32, i, ((double)i - 1500.0) * 64.0);
    struct gan_ref x = ref_at(bx, GAN_F32, 0);
    struct gan_grad_stats s;
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 1.0f / 64.0f, &x, &s), GAN_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_double_eq(raw_get(bx, GAN_F32, i), (double)i - 1500.0);
    ck_assert_double_eq(s.absmax, 1500.0);
    ck_assert_double_eq(s.min_nonzero, 1.0);
    ck_assert_uint_eq(s.zeros, 1);
    /* An infinite inv_scale (a loss scale that collapsed to 0) is reported in the
     * statistics, not refused; a NaN one is refused. */
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, INFINITY, NULL, &s), GAN_OK);
    ck_assert(isinf(s.absmax) && isinf(s.sum_squares) && s.zeros == 1);
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, NAN, NULL, &s), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "inv_scale is NaN"), "message: %s", last_error());
    /* No elements: zero counts, and min_nonzero 0 for "none". */
    ck_assert_int_eq(cpu_grad_stats(be, 0, &x, 1.0f, NULL, &s), GAN_OK);
    ck_assert(s.elements == 0 && s.absmax == 0 && s.min_nonzero == 0 && s.sum_squares == 0);
    /* All zeros: no non-zero minimum either. */
    memset(bx->data, 0, 64);
    ck_assert_int_eq(cpu_grad_stats(be, 16, &x, 1.0f, NULL, &s), GAN_OK);
    ck_assert(s.zeros == 16 && s.min_nonzero == 0 && s.absmax == 0);
    /* Bad arguments. */
    struct gan_ref xi = ref_at(bx, GAN_I32, 0);
    ck_assert_int_eq(cpu_grad_stats(be, n, &xi, 1.0f, NULL, &s), GAN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(last_error(), "x has dtype I32"), "message: %s", last_error());
    ck_assert_int_eq(cpu_grad_stats(be, n + 1, &x, 1.0f, NULL, &s), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "holds 3000"), "message: %s", last_error());
    gan_buffer *small = buffer_of(GAN_F16, 10);
    struct gan_ref us = ref_at(small, GAN_F16, 0);
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 1.0f, &us, &s), GAN_ERR_INVALID);
    ck_assert_msg(strstr(last_error(), "unscaled"), "message: %s", last_error());
    ck_assert_int_eq(cpu_grad_stats(be, n, &x, 1.0f, NULL, NULL), GAN_ERR_INVALID);
    cpu_buffer_free(be, small);
    cpu_buffer_free(be, bx);
}
END_TEST

static Suite *optim_stats_suite(void)
{
    Suite *s = suite_create("optim_stats");

    TCase *tc = tcase_create("adam");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_adam_steps, 0, ADAM_CASES);
    tcase_add_test(tc, test_adam_bias_correction);
    tcase_add_test(tc, test_adam_rejects_bad_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("grad stats");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_grad_stats_crafted);
    tcase_add_loop_test(tc, test_grad_stats_random, 0, 12);
    tcase_add_test(tc, test_grad_stats_in_place_and_edges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(optim_stats_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
