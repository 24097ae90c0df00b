/* SPDX-License-Identifier: MIT */
/* check_conv2d.c — tests of the CPU backend's conv2d kernels (conv2d.c) against direct
 * nested-loop convolutions written here, over a sweep of shapes, dtypes and betas; with
 * oneDNN in the build, the same sweep again on its convolutions (onednn_conv.c). */
#include "config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#include "../../backends/cpu/convert.h"

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

#ifdef GAN_HAVE_ONEDNN
/* The same tests on oneDNN's convolutions (backend.gemm = "onednn"), where the build
 * has oneDNN and the CPU its BF16 dot products: the kernels under test are then
 * onednn_conv.c's, against the same double references. */
static void setup_onednn(void)
{
    static const char *const settings[] = { "gemm=onednn", NULL };
    be = cpu_fixture_new(settings);
    ck_assert_int_eq(cpu_gemm_path_setting(be->host, &be->gemm_path), GAN_OK);
    ck_assert_int_eq(cpu_onednn_open(be), GAN_OK);
}

static void teardown_onednn(void)
{
    cpu_onednn_close(be);
    teardown();
}
#endif

static const char *last_error(void)
{
    return ((struct test_host *)be->host->ctx)->last_error;
}

/* ------------------------------------------------------------------ shapes */

struct shape {
    int n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw, dh, dw;
    float beta;
};

/* Batch 1 and 3; channels 1, 3, 5; odd (and some even) sizes; kernels 1×1, 3×3,
 * 5×5, 4×4 and non-square; strides 1–3; padding 0–2; dilation 1 and 2; beta 0, 1. */
static const struct shape shapes[] = {
    { 1, 1, 5, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0.0f },    /* 1×1, the pointwise path */
    { 3, 3, 7, 9, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1.0f },
    { 3, 1, 7, 5, 1, 1, 1, 2, 3, 0, 0, 1, 1, 1.0f },    /* 1×1 with stride: im2col */
    { 1, 3, 9, 7, 5, 1, 1, 1, 1, 1, 1, 1, 1, 0.0f },    /* 1×1 with padding */
    { 1, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 0.0f },
    { 3, 5, 9, 11, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1.0f },
    { 3, 3, 11, 11, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1.0f },  /* dilation 2 */
    { 3, 1, 11, 9, 3, 5, 5, 1, 1, 2, 2, 1, 1, 0.0f },
    { 1, 5, 13, 13, 1, 5, 5, 3, 3, 2, 2, 1, 1, 1.0f },
    { 1, 3, 5, 5, 3, 5, 5, 1, 1, 0, 0, 1, 1, 0.0f },    /* the kernel covers the image */
    { 3, 3, 9, 9, 5, 4, 4, 2, 2, 1, 1, 1, 1, 0.0f },    /* DCGAN's 4×4, stride 2 */
    { 3, 5, 8, 8, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1.0f },
    { 1, 1, 3, 3, 1, 4, 4, 1, 1, 2, 2, 1, 1, 0.0f },    /* kernel larger than the image */
    { 1, 3, 15, 13, 3, 3, 5, 1, 2, 1, 2, 1, 1, 0.0f },  /* non-square kernel and stride */
    { 1, 5, 17, 15, 5, 3, 2, 3, 2, 0, 1, 2, 1, 0.0f },
    { 3, 3, 10, 7, 5, 2, 3, 3, 1, 2, 0, 1, 2, 1.0f },
    /* Larger maps, so that the kernels' grouping of images for the GEMM (about 1024
     * output pixels per group) gives one image per group, or a last group smaller
     * than the others. */
    { 3, 1, 25, 25, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1.0f },  /* 625 pixels: groups of 2, 1 */
    { 3, 2, 33, 33, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1.0f },  /* 1089 pixels, 1×1 */
    { 3, 1, 35, 35, 2, 3, 3, 1, 1, 0, 0, 1, 1, 0.0f },  /* 1089 pixels, 3×3 */
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static struct gan_conv2d desc_of(const struct shape *s, enum gan_dtype dtype)
{
    struct gan_conv2d c = {
        .n = s->n, .c_in = s->c_in, .h_in = s->h, .w_in = s->w, .c_out = s->c_out,
        .kh = s->kh, .kw = s->kw, .stride_h = s->sh, .stride_w = s->sw,
        .pad_h = s->ph, .pad_w = s->pw, .dilation_h = s->dh, .dilation_w = s->dw,
        .dtype = dtype,
    };
    c.h_out = (s->h + 2 * s->ph - s->dh * (s->kh - 1) - 1) / s->sh + 1;
    c.w_out = (s->w + 2 * s->pw - s->dw * (s->kw - 1) - 1) / s->sw + 1;
    return c;
}

static size_t x_count(const struct gan_conv2d *c) { return (size_t)(c->n * c->c_in * c->h_in * c->w_in); }
static size_t w_count(const struct gan_conv2d *c) { return (size_t)(c->c_out * c->c_in * c->kh * c->kw); }
static size_t y_count(const struct gan_conv2d *c) { return (size_t)(c->n * c->c_out * c->h_out * c->w_out); }

/* Deterministic values in [-1, 1). */
static void fill(float *v, size_t n, uint32_t seed)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(s >> 40) / (double)(1ull << 23) - 1.0);
    }
}

/* ------------------------------------------------------------------ references */

/* The references accumulate in double and also return Σ|terms| per element, which
 * bounds the FP32 kernel's rounding error. Indexing follows the layouts literally. */
#define X(b, ci, i, j) x[(((size_t)(b) * c->c_in + (ci)) * c->h_in + (i)) * c->w_in + (j)]
#define W(co, ci, i, j) w[(((size_t)(co) * c->c_in + (ci)) * c->kh + (i)) * c->kw + (j)]
#define Y(b, co, i, j) (((size_t)(b) * c->c_out + (co)) * c->h_out + (i)) * c->w_out + (j)

/* y[b, co, oh, ow] = Σ x[b, ci, oh·s − p + i·d, ow·s − p + j·d] · w[co, ci, i, j]. */
static void ref_forward(const struct gan_conv2d *c, const float *x, const float *w,
                        double *y, double *mag)
{
    for (int64_t b = 0; b < c->n; b++)
        for (int64_t co = 0; co < c->c_out; co++)
            for (int64_t oh = 0; oh < c->h_out; oh++)
                for (int64_t ow = 0; ow < c->w_out; ow++) {
                    double acc = 0, m = 0;
                    for (int64_t ci = 0; ci < c->c_in; ci++)
                        for (int64_t i = 0; i < c->kh; i++)
                            for (int64_t j = 0; j < c->kw; j++) {
                                int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
                                int64_t iw = ow * c->stride_w - c->pad_w + j * c->dilation_w;
                                if (ih < 0 || ih >= c->h_in || iw < 0 || iw >= c->w_in)
                                    continue;
                                double t = (double)X(b, ci, ih, iw) * W(co, ci, i, j);
                                acc += t;
                                m += fabs(t);
                            }
                    y[Y(b, co, oh, ow)] = acc;
                    mag[Y(b, co, oh, ow)] = m;
                }
}

/* dx: every output gradient scattered back through every tap that read an input. */
static void ref_backward_data(const struct gan_conv2d *c, const float *dy, const float *w,
                              double *dx, double *mag)
{
    memset(dx, 0, x_count(c) * sizeof *dx);
    memset(mag, 0, x_count(c) * sizeof *mag);
    for (int64_t b = 0; b < c->n; b++)
        for (int64_t co = 0; co < c->c_out; co++)
            for (int64_t oh = 0; oh < c->h_out; oh++)
                for (int64_t ow = 0; ow < c->w_out; ow++)
                    for (int64_t ci = 0; ci < c->c_in; ci++)
                        for (int64_t i = 0; i < c->kh; i++)
                            for (int64_t j = 0; j < c->kw; j++) {
                                int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
                                int64_t iw = ow * c->stride_w - c->pad_w + j * c->dilation_w;
                                if (ih < 0 || ih >= c->h_in || iw < 0 || iw >= c->w_in)
                                    continue;
                                size_t xi = (((size_t)b * c->c_in + ci) * c->h_in + ih)
                                            * c->w_in + iw;
                                double t = (double)dy[Y(b, co, oh, ow)] * W(co, ci, i, j);
                                dx[xi] += t;
                                mag[xi] += fabs(t);
                            }
}

/* dw[co, ci, i, j] = Σ over the batch and output pixels of dy · the input the tap saw. */
static void ref_backward_filter(const struct gan_conv2d *c, const float *x, const float *dy,
                                double *dw, double *mag)
{
    for (int64_t co = 0; co < c->c_out; co++)
        for (int64_t ci = 0; ci < c->c_in; ci++)
            for (int64_t i = 0; i < c->kh; i++)
                for (int64_t j = 0; j < c->kw; j++) {
                    double acc = 0, m = 0;
                    for (int64_t b = 0; b < c->n; b++)
                        for (int64_t oh = 0; oh < c->h_out; oh++)
                            for (int64_t ow = 0; ow < c->w_out; ow++) {
                                int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
                                int64_t iw = ow * c->stride_w - c->pad_w + j * c->dilation_w;
                                if (ih < 0 || ih >= c->h_in || iw < 0 || iw >= c->w_in)
                                    continue;
                                double t = (double)dy[Y(b, co, oh, ow)] * X(b, ci, ih, iw);
                                acc += t;
                                m += fabs(t);
                            }
                    size_t wi = (((size_t)co * c->c_in + ci) * c->kh + i) * c->kw + j;
                    dw[wi] = acc;
                    mag[wi] = m;
                }
}

/* ------------------------------------------------------------------ running a kernel */

enum which { FORWARD, BACKWARD_DATA, BACKWARD_FILTER };
static const char *const which_name[] = { "forward", "backward-data", "backward-filter" };

/* Where each tensor sits inside its buffer: a few elements in, with guard values
 * after it, so that offsets are honoured and nothing outside is written. */
#define LEAD 3
#define GUARD 5
#define GUARD_VALUE -4096.0f /* exact in every float type */

/* A buffer with `n` elements of `dtype` from `v` at element LEAD, guards around. */
static gan_buffer *place(size_t n, enum gan_dtype dtype, const float *v, struct gan_ref *ref)
{
    size_t total = LEAD + n + GUARD;
    gan_buffer *buf = cpu_fixture_buffer(be, total, NULL); /* room for FP32 either way */
    for (size_t i = 0; i < total; i++)
        cpu_store(buf->data, dtype, (int64_t)i,
                  i >= LEAD && i < LEAD + n ? (v ? v[i - LEAD] : NAN) : GUARD_VALUE);
    ref->buf = buf;
    ref->offset = LEAD;
    ref->dtype = dtype;
    return buf;
}

/* Reads the n elements back as FP32 and checks the guards. */
static void take(gan_buffer *buf, size_t n, enum gan_dtype dtype, float *out)
{
    for (size_t i = 0; i < LEAD + n + GUARD; i++) {
        float v = cpu_load(buf->data, dtype, (int64_t)i);
        if (i >= LEAD && i < LEAD + n)
            out[i - LEAD] = v;
        else
            ck_assert_msg(v == GUARD_VALUE, "element %zu outside the tensor was written", i);
    }
    cpu_buffer_free(be, buf);
}

/* Runs one kernel on FP32 copies of in1, in2 (converted to dtype) with output
 * initialised to out0 (NULL: NaN, which beta 0 must not propagate); returns the
 * output as FP32 in `out`. */
static gan_status run(enum which k, const struct gan_conv2d *c, const float *in1,
                      const float *in2, const float *out0, float beta, float *out)
{
    size_t n1, n2, no;
    switch (k) {
    case FORWARD: n1 = x_count(c); n2 = w_count(c); no = y_count(c); break;
    case BACKWARD_DATA: n1 = y_count(c); n2 = w_count(c); no = x_count(c); break;
    default: n1 = x_count(c); n2 = y_count(c); no = w_count(c); break;
    }
    struct gan_ref r1, r2, ro;
    gan_buffer *b1 = place(n1, c->dtype, in1, &r1), *b2 = place(n2, c->dtype, in2, &r2),
               *bo = place(no, c->dtype, out0, &ro);
    gan_status st;
    switch (k) {
    case FORWARD: st = cpu_conv2d_forward(be, c, &r1, &r2, beta, &ro); break;
    case BACKWARD_DATA: st = cpu_conv2d_backward_data(be, c, &r1, &r2, beta, &ro); break;
    default: st = cpu_conv2d_backward_filter(be, c, &r1, &r2, beta, &ro); break;
    }
    take(bo, no, c->dtype, out);
    cpu_buffer_free(be, b1);
    cpu_buffer_free(be, b2);
    return st;
}

/* The inputs and reference of one kernel on one shape: in1, in2 and out0 (the
 * output's prior contents) as FP32, and the double reference including beta·out0. */
struct problem {
    struct gan_conv2d c;
    float *in1, *in2, *out0;
    double *ref, *mag;
    size_t n1, n2, no;
};

/* Values rounded to dtype first, so that the 16-bit kernels and the reference see
 * the same inputs. */
static void round_to(float *v, size_t n, enum gan_dtype dtype)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        if (dtype == GAN_F16) {
            h = cpu_f32_to_f16(v[i]);
            v[i] = cpu_f16_to_f32(h);
        } else if (dtype == GAN_BF16) {
            h = cpu_f32_to_bf16(v[i]);
            v[i] = cpu_bf16_to_f32(h);
        }
    }
}

static void problem_init(struct problem *p, enum which k, const struct shape *s,
                         enum gan_dtype dtype, uint32_t seed)
{
    p->c = desc_of(s, dtype);
    const struct gan_conv2d *c = &p->c;
    switch (k) {
    case FORWARD: p->n1 = x_count(c); p->n2 = w_count(c); p->no = y_count(c); break;
    case BACKWARD_DATA: p->n1 = y_count(c); p->n2 = w_count(c); p->no = x_count(c); break;
    default: p->n1 = x_count(c); p->n2 = y_count(c); p->no = w_count(c); break;
    }
    p->in1 = malloc(p->n1 * sizeof(float));
    p->in2 = malloc(p->n2 * sizeof(float));
    p->out0 = malloc(p->no * sizeof(float));
    p->ref = malloc(p->no * sizeof(double));
    p->mag = malloc(p->no * sizeof(double));
    ck_assert(p->in1 && p->in2 && p->out0 && p->ref && p->mag);
    fill(p->in1, p->n1, seed);
    fill(p->in2, p->n2, seed + 1);
    fill(p->out0, p->no, seed + 2);
    round_to(p->in1, p->n1, dtype);
    round_to(p->in2, p->n2, dtype);
    round_to(p->out0, p->no, dtype);
    switch (k) {
    case FORWARD: ref_forward(c, p->in1, p->in2, p->ref, p->mag); break;
    case BACKWARD_DATA: ref_backward_data(c, p->in1, p->in2, p->ref, p->mag); break;
    default: ref_backward_filter(c, p->in1, p->in2, p->ref, p->mag); break;
    }
    if (s->beta != 0.0f)
        for (size_t i = 0; i < p->no; i++) {
            p->ref[i] += p->out0[i];
            p->mag[i] += fabs(p->out0[i]);
        }
}

static void problem_free(struct problem *p)
{
    free(p->in1);
    free(p->in2);
    free(p->out0);
    free(p->ref);
    free(p->mag);
}

/* ------------------------------------------------------------------ FP32 sweep */

/* Each kernel on each shape, FP32, against the double reference: the error must be
 * within 1e-5 of Σ|terms| (FP32 sums of up to ~1000 terms stay far inside that; a
 * wrong or missing term would not). beta 0 starts from NaN, which must vanish. */
START_TEST(test_f32_sweep)
{
    const struct shape *s = &shapes[_i / 3];
    enum which k = (enum which)(_i % 3);
    struct problem p;
    problem_init(&p, k, s, GAN_F32, (uint32_t)_i);
    float *out = malloc(p.no * sizeof(float));
    ck_assert_int_eq(run(k, &p.c, p.in1, p.in2, s->beta != 0.0f ? p.out0 : NULL, s->beta,
                         out), GAN_OK);
    for (size_t i = 0; i < p.no; i++)
        ck_assert_msg(fabs(out[i] - p.ref[i]) <= 1e-5 * p.mag[i] + 1e-30,
                      "shape %d %s beta %g element %zu: got %.9g, want %.9g (Σ|t| %.3g)",
                      _i / 3, which_name[k], (double)s->beta, i, (double)out[i], p.ref[i],
                      p.mag[i]);
    free(out);
    problem_free(&p);
}
END_TEST

/* ------------------------------------------------------------------ adjoint identity */

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static double abs_dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs((double)a[i] * b[i]);
    return s;
}

/* ⟨conv(x, w), dy⟩ = ⟨x, backward_data(dy, w)⟩ = ⟨w, backward_filter(x, dy)⟩: all
 * three are Σ x·w·dy over the same triples, so they agree to FP32 rounding. */
START_TEST(test_adjoint)
{
    struct gan_conv2d c = desc_of(&shapes[_i], GAN_F32);
    size_t nx = x_count(&c), nw = w_count(&c), ny = y_count(&c);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *dy = malloc(ny * sizeof *dy);
    float *y = malloc(ny * sizeof *y), *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw);
    fill(x, nx, 100 + (uint32_t)_i);
    fill(w, nw, 200 + (uint32_t)_i);
    fill(dy, ny, 300 + (uint32_t)_i);
    ck_assert_int_eq(run(FORWARD, &c, x, w, NULL, 0.0f, y), GAN_OK);
    ck_assert_int_eq(run(BACKWARD_DATA, &c, dy, w, NULL, 0.0f, dx), GAN_OK);
    ck_assert_int_eq(run(BACKWARD_FILTER, &c, x, dy, NULL, 0.0f, dw), GAN_OK);
    double a = dot(y, dy, ny), b = dot(x, dx, nx), d = dot(w, dw, nw);
    double scale = abs_dot(y, dy, ny) + abs_dot(x, dx, nx) + abs_dot(w, dw, nw);
    ck_assert_msg(fabs(a - b) <= 1e-5 * scale && fabs(a - d) <= 1e-5 * scale,
                  "shape %d: <conv(x,w),dy> %.9g, <x,bwd_data> %.9g, <w,bwd_filter> %.9g",
                  _i, a, b, d);
    ck_assert(scale > 0);
    free(x); free(w); free(dy); free(y); free(dx); free(dw);
}
END_TEST

/* ------------------------------------------------------------------ 16-bit */

/* F16 and BF16: inputs exactly representable, FP32 accumulation, one rounding at the
 * end. Two checks: (1) the result is the FP32 kernel's result on the same (widened)
 * inputs rounded once to the 16-bit type; (2) it is within half an ulp of the type
 * (2^-11 relative for F16, 2^-8 for BF16) plus the FP32 tolerance of the double
 * reference. Shapes are a subset of the sweep, all three kernels. */
static const int shapes16[] = { 0, 1, 2, 5, 6, 8, 10, 13, 16, 18 };
#define NSHAPES16 ((int)(sizeof shapes16 / sizeof shapes16[0]))

START_TEST(test_16bit)
{
    const enum gan_dtype dt = _i % 2 ? GAN_BF16 : GAN_F16;
    const enum which k = (enum which)((_i / 2) % 3);
    const struct shape *s = &shapes[shapes16[_i / 6]];
    const double half_ulp = dt == GAN_F16 ? 0x1p-11 : 0x1p-8;
    struct problem p;
    problem_init(&p, k, s, dt, 1000u + (uint32_t)_i);
    float *out16 = malloc(p.no * sizeof(float)), *out32 = malloc(p.no * sizeof(float));
    ck_assert_int_eq(run(k, &p.c, p.in1, p.in2, s->beta != 0.0f ? p.out0 : NULL, s->beta,
                         out16), GAN_OK);
    struct gan_conv2d c32 = p.c;
    c32.dtype = GAN_F32;
    ck_assert_int_eq(run(k, &c32, p.in1, p.in2, s->beta != 0.0f ? p.out0 : NULL, s->beta,
                         out32), GAN_OK);
    size_t near_ties = 0;
    for (size_t i = 0; i < p.no; i++) {
        float once = dt == GAN_F16 ? cpu_f16_to_f32(cpu_f32_to_f16(out32[i]))
                                   : cpu_bf16_to_f32(cpu_f32_to_bf16(out32[i]));
        /* The two runs may sum in another order (in place, or through a product
         * matrix), so their FP32 sums can differ in the last bits; only a sum that
         * close to a 16-bit midpoint may then round the other way. */
        if (out16[i] != once) {
            double mid = ((double)out16[i] + once) / 2;
            ck_assert_msg(fabs(out32[i] - mid) <= 8 * FLT_EPSILON * fabs(out32[i]),
                          "%s %s shape %d element %zu: got %.9g, the FP32 result %.9g "
                          "rounds to %.9g", gan_dtype_name(dt), which_name[k],
                          shapes16[_i / 6], i, (double)out16[i], (double)out32[i],
                          (double)once);
            near_ties++;
        }
        double tol = half_ulp * fabs(p.ref[i]) + 1e-5 * p.mag[i]
                   + (dt == GAN_F16 ? 0x1p-25 : 0.0); /* F16's subnormal spacing */
        ck_assert_msg(fabs(out16[i] - p.ref[i]) <= tol,
                      "%s %s shape %d element %zu: got %.9g, want %.9g", gan_dtype_name(dt),
                      which_name[k], shapes16[_i / 6], i, (double)out16[i], p.ref[i]);
    }
    ck_assert_msg(near_ties <= p.no / 100, "%zu of %zu elements round away from the FP32 "
                  "result", near_ties, p.no);
    free(out16);
    free(out32);
    problem_free(&p);
}
END_TEST

/* Backward-filter sums over the batch in FP32 and rounds once at the end, rather
 * than rounding a 16-bit dw after every image. */
START_TEST(test_16bit_filter_accumulates_in_f32)
{
    /* 1×1 conv, one channel, 1×1 images, batch 3: dw = Σ_b x_b · dy_b. With
     * x = {2048, 1, 1} and dy = {1, 1, 1}: the FP32 sum is 2050, exact in F16. Summed
     * in F16 image by image, 2048 + 1 = 2049 is a tie that rounds to 2048 (F16's ulp
     * at 2048 is 2), then 2048 + 1 again → 2048: the wrong answer. */
    struct shape s = { 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0.0f };
    struct gan_conv2d c = desc_of(&s, GAN_F16);
    const float x[3] = { 2048.0f, 1.0f, 1.0f }, dy[3] = { 1.0f, 1.0f, 1.0f };
    float dw;
    ck_assert_int_eq(run(BACKWARD_FILTER, &c, x, dy, NULL, 0.0f, &dw), GAN_OK);
    ck_assert_msg(dw == 2050.0f, "dw %.9g, want 2050", (double)dw);
}
END_TEST

/* ------------------------------------------------------------------ bad descriptors */

struct bad_case {
    const char *what;
    void (*apply)(struct gan_conv2d *c, float *beta);
    gan_status want;
    const char *message;   /* a substring the error must contain */
};

static void bad_h_out(struct gan_conv2d *c, float *beta) { (void)beta; c->h_out = 6; }
static void bad_w_out(struct gan_conv2d *c, float *beta) { (void)beta; c->w_out = 2; }
static void bad_n(struct gan_conv2d *c, float *beta) { (void)beta; c->n = 0; }
static void bad_kh(struct gan_conv2d *c, float *beta) { (void)beta; c->kh = 0; }
static void bad_stride(struct gan_conv2d *c, float *beta) { (void)beta; c->stride_w = 0; }
static void bad_pad(struct gan_conv2d *c, float *beta) { (void)beta; c->pad_h = -1; }
static void bad_dilation(struct gan_conv2d *c, float *beta) { (void)beta; c->dilation_h = 0; }
static void bad_extent(struct gan_conv2d *c, float *beta)
{
    (void)beta;
    c->pad_h = 0;
    c->dilation_h = 4; /* spans 9 rows of a 7-row image */
}
static void bad_dtype(struct gan_conv2d *c, float *beta) { (void)beta; c->dtype = GAN_I32; }
static void bad_beta(struct gan_conv2d *c, float *beta) { (void)c; *beta = 0.5f; }
static void bad_huge(struct gan_conv2d *c, float *beta) { (void)beta; c->c_in = 1ll << 40; }

/* The valid descriptor these start from: 1×3×7×9 input, 4 filters of 3×3, stride 2,
 * padding 1: h_out = (7 + 2 − 2 − 1)/2 + 1 = 4, w_out = (9 + 2 − 2 − 1)/2 + 1 = 5. */
static const struct bad_case bad_cases[] = {
    { "h_out", bad_h_out, GAN_ERR_INVALID, "h_out is 6 but" },
    { "w_out", bad_w_out, GAN_ERR_INVALID, "set w_out to 5" },
    { "n", bad_n, GAN_ERR_INVALID, "n is 0; it must be at least 1" },
    { "kh", bad_kh, GAN_ERR_INVALID, "kh is 0" },
    { "stride", bad_stride, GAN_ERR_INVALID, "stride_w is 0" },
    { "pad", bad_pad, GAN_ERR_INVALID, "pad_h is -1; it must be at least 0" },
    { "dilation", bad_dilation, GAN_ERR_INVALID, "dilation_h is 0" },
    { "extent", bad_extent, GAN_ERR_INVALID, "spans 9 row-positions" },
    { "dtype", bad_dtype, GAN_ERR_UNSUPPORTED, "dtype I32 is not supported" },
    { "beta", bad_beta, GAN_ERR_INVALID, "beta is 0.5" },
    { "huge", bad_huge, GAN_ERR_INVALID, "c_in is 1099511627776" },
};
#define NBAD ((int)(sizeof bad_cases / sizeof bad_cases[0]))

static struct gan_conv2d valid_desc(void)
{
    struct shape s = { 1, 3, 7, 9, 4, 3, 3, 2, 2, 1, 1, 1, 1, 0.0f };
    return desc_of(&s, GAN_F32);
}

/* Each broken descriptor is refused by all three kernels, with a message that names
 * the given and the expected numbers; the output is left alone. */
START_TEST(test_bad_descriptor)
{
    const struct bad_case *bc = &bad_cases[_i];
    struct gan_conv2d good = valid_desc();
    size_t nx = x_count(&good), nw = w_count(&good), ny = y_count(&good);
    gan_buffer *bx = cpu_fixture_buffer(be, nx, NULL), *bw = cpu_fixture_buffer(be, nw, NULL),
               *by = cpu_fixture_buffer(be, ny, NULL);
    memset(by->data, 0x3c, by->bytes);
    struct gan_ref x = cpu_fixture_ref(bx, GAN_F32), w = cpu_fixture_ref(bw, GAN_F32),
                   y = cpu_fixture_ref(by, GAN_F32);
    for (int k = 0; k < 3; k++) {
        struct gan_conv2d c = good;
        float beta = 0.0f;
        bc->apply(&c, &beta);
        /* The refs follow the descriptor's dtype so that only the broken field is. */
        if (c.dtype != GAN_F32)
            x.dtype = w.dtype = y.dtype = c.dtype;
        gan_status st = k == 0 ? cpu_conv2d_forward(be, &c, &x, &w, beta, &y)
                      : k == 1 ? cpu_conv2d_backward_data(be, &c, &y, &w, beta, &x)
                               : cpu_conv2d_backward_filter(be, &c, &x, &y, beta, &w);
        ck_assert_msg(st == bc->want, "%s, %s: status %d, want %d (%s)", bc->what,
                      which_name[k], st, bc->want, last_error());
        ck_assert_msg(strstr(last_error(), bc->message) != NULL,
                      "%s, %s: message \"%s\" lacks \"%s\"", bc->what, which_name[k],
                      last_error(), bc->message);
    }
    for (size_t i = 0; i < by->bytes; i++)
        ck_assert_uint_eq(by->data[i], 0x3c);
    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bw);
    cpu_buffer_free(be, by);
}
END_TEST

/* Refs that do not fit the descriptor: a buffer too small, an offset past the end, a
 * dtype other than the descriptor's, no buffer, and an output overlapping an input. */
START_TEST(test_bad_refs)
{
    struct gan_conv2d c = valid_desc();
    size_t nx = x_count(&c), nw = w_count(&c), ny = y_count(&c);
    gan_buffer *bx = cpu_fixture_buffer(be, nx, NULL), *bw = cpu_fixture_buffer(be, nw, NULL),
               *by = cpu_fixture_buffer(be, ny, NULL), *small = cpu_fixture_buffer(be, ny - 1, NULL),
               *shared = cpu_fixture_buffer(be, nx + ny, NULL);
    struct gan_ref x = cpu_fixture_ref(bx, GAN_F32), w = cpu_fixture_ref(bw, GAN_F32),
                   y = cpu_fixture_ref(by, GAN_F32);

    struct gan_ref r = cpu_fixture_ref(small, GAN_F32);
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &x, &w, 0.0f, &r), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "y needs 80 elements"));

    r = y;
    r.offset = 1;
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &x, &w, 0.0f, &r), GAN_ERR_INVALID);

    r = w;
    r.dtype = GAN_F16;
    ck_assert_int_eq(cpu_conv2d_backward_data(be, &c, &y, &r, 0.0f, &x), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "w is F16 but the descriptor's dtype is F32"));

    r.buf = NULL;
    ck_assert_int_eq(cpu_conv2d_backward_filter(be, &c, &x, &y, 0.0f, &r), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "dw has no buffer"));

    ck_assert_int_eq(cpu_conv2d_forward(be, NULL, &x, &w, 0.0f, &y), GAN_ERR_INVALID);

    /* x at elements 0… and y overlapping it from element nx − 1; then disjoint. */
    struct gan_ref xs = cpu_fixture_ref(shared, GAN_F32), ys = xs;
    ys.offset = nx - 1;
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &xs, &w, 0.0f, &ys), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(last_error(), "overlaps x"));
    ys.offset = nx;
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &xs, &w, 0.0f, &ys), GAN_OK);

    cpu_buffer_free(be, bx);
    cpu_buffer_free(be, bw);
    cpu_buffer_free(be, by);
    cpu_buffer_free(be, small);
    cpu_buffer_free(be, shared);
}
END_TEST

#ifdef GAN_HAVE_ONEDNN
/* The oneDNN cases do reach oneDNN: each kind of call makes a primitive. */
START_TEST(test_onednn_serves)
{
    const struct shape *sh = &shapes[_i / 3 < NSHAPES ? _i / 3 : 0];
    enum which k = (enum which)(_i % 3);
    for (int t = 0; t < 3; t++) {
        const enum gan_dtype dt = t == 0 ? GAN_F32 : t == 1 ? GAN_BF16 : GAN_F16;
        struct problem p;
        problem_init(&p, k, sh, dt, 77u + (uint32_t)_i);
        float *out = malloc(p.no * sizeof(float));
        int held0;
        long made0, made1;
        cpu_onednn_cache_counts(be, &held0, &made0);
        ck_assert_int_eq(run(k, &p.c, p.in1, p.in2, NULL, 0.0f, out), GAN_OK);
        cpu_onednn_cache_counts(be, &held0, &made1);
        ck_assert_msg(made1 == made0 + 1, "%s %s: oneDNN made %ld primitives for it",
                      gan_dtype_name(dt), which_name[k], made1 - made0);
        free(out);
        problem_free(&p);
    }
}
END_TEST
#endif

/* ------------------------------------------------------------------ col2im's levels */

/* Stride-2 input gradients through im2col + sgemm, whose col2im adds two neighbouring
 * kernel columns at once on a vector level (col2im_lanes.h): odd and even kernel widths
 * (a column left without a neighbour), dilation 2 (every column alone), widths of one
 * vector block and more, beta 0 and 1, one and several input channels. */
static const struct shape col2im_shapes[] = {
    { 3, 1, 28, 28, 4, 5, 5, 2, 2, 2, 2, 1, 1, 0.0f },   /* the dcgan's 1-channel layer */
    { 2, 3, 37, 35, 2, 4, 4, 2, 2, 1, 1, 1, 1, 1.0f },   /* 17 outputs a row: a tail */
    { 2, 2, 13, 19, 3, 3, 5, 2, 2, 1, 2, 2, 2, 0.0f },   /* dilation 2 */
    { 1, 1, 9, 70, 2, 1, 3, 1, 2, 0, 1, 1, 1, 1.0f },    /* 35 outputs a row */
    { 2, 1, 6, 6, 2, 2, 2, 2, 2, 0, 0, 1, 1, 1.0f },     /* 3 outputs a row */
};
#define NCOL2IM ((int)(sizeof col2im_shapes / sizeof col2im_shapes[0]))

/* The output of one backward-data call at vector level `isa`, from an instance told it. */
static void col2im_at(enum cpu_isa isa, const struct problem *p, float beta, float *out)
{
    static const char *const settings[3][2] = {
        { "vector=portable", NULL }, { "vector=f16c", NULL }, { "vector=avx512", NULL },
    };
    gan_backend *keep = be;
    be = cpu_fixture_new(settings[isa]);
    ck_assert_int_eq(be->isa, isa);
    ck_assert_int_eq(run(BACKWARD_DATA, &p->c, p->in1, p->in2, p->out0, beta, out), GAN_OK);
    cpu_fixture_free(be);
    be = keep;
}

/* Every vector level the CPU has gives the portable loop's bits, in FP32 and FP16, with
 * infinities among the gradients (whose sums make NaN where they meet). */
START_TEST(test_col2im_levels)
{
    const struct shape *s = &col2im_shapes[_i / 2];
    const enum gan_dtype dt = _i % 2 ? GAN_F16 : GAN_F32;
    struct problem p;
    problem_init(&p, BACKWARD_DATA, s, dt, 301u + (uint32_t)_i);
    for (size_t i = 0; i < p.n1; i += 97)
        p.in1[i] = i % 2 ? INFINITY : -INFINITY;
    float *want = malloc(p.no * sizeof(float)), *got = malloc(p.no * sizeof(float));
    ck_assert(want && got);
    col2im_at(CPU_ISA_PORTABLE, &p, s->beta, want);
    size_t finite = 0;
    for (size_t i = 0; i < p.no; i++)
        finite += isfinite(want[i]) != 0;
    ck_assert_msg(finite > p.no / 2 && finite < p.no, "%zu of %zu finite", finite, p.no);
    for (enum cpu_isa isa = CPU_ISA_F16C; isa <= cpu_isa_best(); isa++) {
        col2im_at(isa, &p, s->beta, got);
        for (size_t i = 0; i < p.no; i++)
            ck_assert_msg(memcmp(&want[i], &got[i], sizeof(float)) == 0,
                          "shape %d %s level %d: dx[%zu] %a, the portable loop gave %a",
                          _i / 2, gan_dtype_name(dt), (int)isa, i, got[i], want[i]);
    }
    free(want);
    free(got);
    problem_free(&p);
}
END_TEST

/* The kernel tests on one kind of instance, as cases named `names` (the FP32 sweep,
 * the adjoint identity, the 16-bit tests); returns the last, the 16-bit one. */
static TCase *add_kernel_cases(Suite *s, const char *const names[3], void (*up)(void),
                               void (*down)(void))
{
    TCase *tc = NULL;
    for (int i = 0; i < 3; i++) {
        tc = tcase_create(names[i]);
        tcase_add_checked_fixture(tc, up, down);
        if (i == 0)
            tcase_add_loop_test(tc, test_f32_sweep, 0, 3 * NSHAPES);
        else if (i == 1)
            tcase_add_loop_test(tc, test_adjoint, 0, NSHAPES);
        else {
            tcase_add_loop_test(tc, test_16bit, 0, 6 * NSHAPES16);
            tcase_add_test(tc, test_16bit_filter_accumulates_in_f32);
        }
        suite_add_tcase(s, tc);
    }
    return tc;
}

static Suite *conv2d_suite(void)
{
    Suite *s = suite_create("conv2d");

    static const char *const openblas[3] = { "f32-sweep", "adjoint", "16-bit" };
    add_kernel_cases(s, openblas, setup, teardown);
#ifdef GAN_HAVE_ONEDNN
    if (cpu_has_bf16_dot()) {
        static const char *const onednn[3] = { "f32-sweep-onednn", "adjoint-onednn",
                                               "16-bit-onednn" };
        TCase *served = add_kernel_cases(s, onednn, setup_onednn, teardown_onednn);
        tcase_add_loop_test(served, test_onednn_serves, 0, 3);
    }
#endif

    TCase *tc = tcase_create("col2im-levels");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_col2im_levels, 0, 2 * NCOL2IM);
    suite_add_tcase(s, tc);

    tc = tcase_create("validation");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_bad_descriptor, 0, NBAD);
    tcase_add_test(tc, test_bad_refs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(conv2d_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
