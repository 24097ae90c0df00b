/* SPDX-License-Identifier: MIT */
/* check_net.c — tests of gan_net, the parameter arena: declaration and its refusals,
 * initialisation statistics and reproducibility from the Philox stream, the gradient buffer. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "../lib/backend_fixture.h"
#include "nn/net.h"

/* ------------------------------------------------------------------ helpers */

static float *values_of(const gan_tensor *t)
{
    size_t n = (size_t)gan_tensor_numel(t);
    float *v = malloc((n ? n : 1) * sizeof *v);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(gan_tensor_to_host(fx.ctx, t, v, n), GAN_OK);
    return v;
}

static gan_net *new_net(const char *prefix)
{
    gan_net *net = NULL;
    ck_assert_int_eq(gan_net_new(fx.ctx, prefix, &net), GAN_OK);
    ck_assert_ptr_nonnull(net);
    return net;
}

static gan_tensor *declare(gan_net *net, const char *name, int ndim, const int64_t *dims,
                           enum gan_init_kind kind, float a)
{
    struct gan_init init = { kind, a };
    return gan_net_param(net, name, ndim, dims, init);
}

static void assert_error_mentions(const char *what)
{
    ck_assert_int_ne(gan_ctx_status(fx.ctx), GAN_OK);
    ck_assert_msg(strstr(gan_ctx_error(fx.ctx), what), "the message \"%s\" does not mention "
                  "\"%s\"", gan_ctx_error(fx.ctx), what);
    gan_ctx_clear_error(fx.ctx);
}

/* ------------------------------------------------------------------ declaration */

START_TEST(test_declare_names_shapes_offsets)
{
    gan_net *net = new_net("critic");
    int64_t w0[2] = { 512, 2 }, b0[1] = { 512 }, w1[4] = { 8, 3, 5, 5 };
    gan_tensor *a = declare(net, "fc0.weight", 2, w0, GAN_INIT_HE_NORMAL, 0);
    gan_tensor *b = declare(net, "fc0.bias", 1, b0, GAN_INIT_ZEROS, 0);
    gan_tensor *c = declare(net, "conv.weight", 4, w1, GAN_INIT_TORCH_LINEAR, 0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(gan_ctx_status(fx.ctx), GAN_OK);

    ck_assert_uint_eq(gan_net_count(net), 3);
    ck_assert_str_eq(gan_net_prefix(net), "critic");
    ck_assert_str_eq(gan_net_name(net, 0), "fc0.weight");
    ck_assert_str_eq(gan_net_full_name(net, 0), "critic.fc0.weight");
    ck_assert_str_eq(gan_net_full_name(net, 2), "critic.conv.weight");
    ck_assert_ptr_eq(gan_net_tensor(net, 1), b);
    ck_assert_ptr_eq(gan_net_tensors(net)[2], c);
    ck_assert_int_eq(gan_net_numel(net, 0), 1024);
    ck_assert_int_eq(gan_net_numel(net, 1), 512);
    ck_assert_int_eq(gan_net_numel(net, 2), 600);
    ck_assert_int_eq(gan_net_offset(net, 0), 0);
    ck_assert_int_eq(gan_net_offset(net, 1), 1024);
    ck_assert_int_eq(gan_net_offset(net, 2), 1536);
    ck_assert_int_eq(gan_net_total(net), 2136);
    ck_assert_int_eq(gan_net_init_spec(net, 2).kind, GAN_INIT_TORCH_LINEAR);
    /* Out of range answers "none", not garbage. */
    ck_assert_ptr_null(gan_net_name(net, 3));
    ck_assert_ptr_null(gan_net_tensor(net, 3));
    ck_assert_int_eq(gan_net_numel(net, 3), -1);

    /* FP32 leaves that gan_grad can differentiate toward, zero until initialised. */
    ck_assert_int_eq(gan_tensor_dtype(a), GAN_F32);
    ck_assert_int_eq(gan_tensor_ndim(c), 4);
    ck_assert_int_eq(gan_tensor_dim(c, 1), 3);
    ck_assert(gan_tensor_requires_grad(a));
    float *v = values_of(a);
    for (int i = 0; i < 1024; i++)
        ck_assert_float_eq(v[i], 0.0f);
    free(v);

    ck_assert_int_eq(gan_net_find(net, "fc0.bias"), 1);
    ck_assert_int_eq(gan_net_find(net, "critic.conv.weight"), 2);
    ck_assert_int_eq(gan_net_find(net, "fc1.bias"), -1);
    gan_net_free(net);
}
END_TEST

START_TEST(test_no_prefix)
{
    gan_net *net = new_net(NULL);
    int64_t d[1] = { 3 };
    ck_assert_ptr_nonnull(declare(net, "w", 1, d, GAN_INIT_ZEROS, 0));
    ck_assert_str_eq(gan_net_prefix(net), "");
    ck_assert_str_eq(gan_net_full_name(net, 0), "w");
    gan_net_free(net);
}
END_TEST

START_TEST(test_duplicate_rejected)
{
    gan_net *net = new_net("generator");
    struct test_host th;
    test_host_init(&th, NULL);
    gan_net_set_host(net, &th.host);
    int64_t d[2] = { 4, 2 };
    ck_assert_ptr_nonnull(declare(net, "fc0.weight", 2, d, GAN_INIT_HE_NORMAL, 0));
    ck_assert_ptr_null(declare(net, "fc0.weight", 2, d, GAN_INIT_ZEROS, 0));
    ck_assert_uint_eq(gan_net_count(net), 1);
    ck_assert_int_eq(gan_net_total(net), 8);
    /* Explained both in the context and, for the plugin, through its host. */
    ck_assert_int_eq(th.last_status, GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(th.last_error, "fc0.weight"));
    ck_assert_ptr_nonnull(strstr(th.last_error, "twice"));
    assert_error_mentions("twice");
    gan_net_free(net);
}
END_TEST

static const char *const bad_names[] = {
    "", ".weight", "weight.", "fc0..weight", "fc0 weight", "fc0/weight", "fc-0.weight",
};
#define N_BAD_NAMES ((int)(sizeof bad_names / sizeof bad_names[0]))

START_TEST(test_bad_names_rejected)
{
    gan_net *net = new_net("critic");
    int64_t d[1] = { 2 };
    ck_assert_ptr_null(declare(net, bad_names[_i], 1, d, GAN_INIT_ZEROS, 0));
    assert_error_mentions("not a usable parameter name");
    ck_assert_uint_eq(gan_net_count(net), 0);
    gan_net_free(net);
}
END_TEST

START_TEST(test_bad_declarations_rejected)
{
    gan_net *net = new_net("critic");
    int64_t zero[2] = { 4, 0 }, neg[1] = { -1 }, ok2[2] = { 4, 2 }, ok1[1] = { 4 };
    int64_t seven[7] = { 1, 1, 1, 1, 1, 1, 1 };
    ck_assert_ptr_null(declare(net, "a", 2, zero, GAN_INIT_ZEROS, 0));
    assert_error_mentions("[4, 0]");
    ck_assert_ptr_null(declare(net, "a", 1, neg, GAN_INIT_ZEROS, 0));
    assert_error_mentions("[-1]");
    ck_assert_ptr_null(declare(net, "a", 7, seven, GAN_INIT_ZEROS, 0));
    assert_error_mentions("ndim is 7");
    ck_assert_ptr_null(declare(net, "a", 2, NULL, GAN_INIT_ZEROS, 0));
    assert_error_mentions("dims NULL");
    ck_assert_ptr_null(declare(net, NULL, 1, ok1, GAN_INIT_ZEROS, 0));
    assert_error_mentions("not a usable parameter name");
    /* A bias has no fan-in: He and nn.Linear's rule need two dimensions or more. */
    ck_assert_ptr_null(declare(net, "bias", 1, ok1, GAN_INIT_HE_NORMAL, 0));
    assert_error_mentions("no fan-in");
    ck_assert_ptr_null(declare(net, "bias", 1, ok1, GAN_INIT_TORCH_LINEAR, 0));
    assert_error_mentions("no fan-in");
    ck_assert_ptr_null(declare(net, "w", 2, ok2, GAN_INIT_UNIFORM, -1.0f));
    assert_error_mentions("GAN_INIT_UNIFORM");
    ck_assert_ptr_null(declare(net, "w", 2, ok2, GAN_INIT_NORMAL, NAN));
    assert_error_mentions("GAN_INIT_NORMAL");
    ck_assert_ptr_null(declare(net, "w", 2, ok2, GAN_INIT_CONSTANT, INFINITY));
    assert_error_mentions("GAN_INIT_CONSTANT");
    ck_assert_ptr_null(declare(net, "w", 2, ok2, (enum gan_init_kind)99, 0));
    assert_error_mentions("init kind 99");
    ck_assert_uint_eq(gan_net_count(net), 0);
    ck_assert_int_eq(gan_net_total(net), 0);

    /* Once the gradient buffer exists the layout is fixed. */
    ck_assert_ptr_nonnull(declare(net, "w", 2, ok2, GAN_INIT_ZEROS, 0));
    ck_assert_int_eq(gan_net_zero_grads(net), GAN_OK);
    ck_assert_ptr_null(declare(net, "late", 1, ok1, GAN_INIT_ZEROS, 0));
    assert_error_mentions("fixed");
    ck_assert_uint_eq(gan_net_count(net), 1);
    gan_net_free(net);
}
END_TEST

START_TEST(test_bad_prefix_rejected)
{
    gan_net *net = (gan_net *)&net;
    ck_assert_int_eq(gan_net_new(fx.ctx, "critic/x", &net), GAN_ERR_INVALID);
    ck_assert_ptr_null(net);
    assert_error_mentions("critic/x");
}
END_TEST

/* ------------------------------------------------------------------ initialisation */

struct moments {
    double mean, std, min, max;
    double within_1sd;   /* fraction with |x − mean| < std */
};

static struct moments moments_of(const float *v, size_t n)
{
    struct moments m = { 0, 0, INFINITY, -INFINITY, 0 };
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        s += v[i];
        if (v[i] < m.min)
            m.min = v[i];
        if (v[i] > m.max)
            m.max = v[i];
    }
    m.mean = s / (double)n;
    for (size_t i = 0; i < n; i++)
        s2 += (v[i] - m.mean) * (v[i] - m.mean);
    m.std = sqrt(s2 / (double)(n - 1));
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += fabs(v[i] - m.mean) < m.std;
    m.within_1sd = (double)in / (double)n;
    return m;
}

START_TEST(test_he_normal_statistics)
{
    gan_net *net = new_net("critic");
    int64_t d[2] = { 512, 512 };
    gan_tensor *w = declare(net, "fc1.weight", 2, d, GAN_INIT_HE_NORMAL, 0);
    uint64_t offset = 1000;
    ck_assert_int_eq(gan_net_init(net, 1234, &offset), GAN_OK);
    ck_assert_uint_eq(offset, 1000 + 512 * 512 / 4);
    float *v = values_of(w);
    size_t n = 512 * 512;
    struct moments m = moments_of(v, n);
    double sigma = sqrt(2.0 / 512.0);
    /* The sample mean has standard error sigma/sqrt(n) = 1.2e-4; the sample standard
     * deviation's relative error is about 1/sqrt(2n) = 0.14%. Bounds are 5 of those. */
    ck_assert_msg(fabs(m.mean) < 5 * sigma / sqrt((double)n), "mean %g", m.mean);
    ck_assert_msg(fabs(m.std / sigma - 1.0) < 0.007, "std %g, want %g", m.std, sigma);
    /* Normal, not a uniform of the same spread: 68.3% lie within one standard deviation
     * (a uniform has 57.7%), and some lie beyond 4 sigma's reach of a uniform (√3 σ). */
    ck_assert_msg(fabs(m.within_1sd - 0.6827) < 0.005, "%.4f within 1 sd", m.within_1sd);
    ck_assert_msg(m.max > 3.5 * sigma && m.min < -3.5 * sigma, "range %g..%g", m.min, m.max);
    free(v);
    gan_net_free(net);
}
END_TEST

/* Uniform kinds: every value inside the bound, the bound nearly reached, variance b²/3. */
struct uniform_case {
    enum gan_init_kind kind;
    float a;
    int ndim;
    int64_t dims[4];
    double bound;
};

static const struct uniform_case uniform_cases[] = {
    { GAN_INIT_TORCH_LINEAR, 0, 2, { 256, 300 }, 0.05773502691896258 },      /* 1/sqrt(300) */
    { GAN_INIT_TORCH_LINEAR, 0, 4, { 16, 3, 5, 5 }, 0.11547005383792516 },   /* 1/sqrt(75) */
    { GAN_INIT_HE_UNIFORM, 0, 2, { 128, 512 }, 0.10825317547305482 },       /* sqrt(6/512) */
    { GAN_INIT_UNIFORM, 0.25f, 2, { 100, 100 }, 0.25 },
};

START_TEST(test_uniform_bounds)
{
    const struct uniform_case *c = &uniform_cases[_i];
    gan_net *net = new_net("g");
    gan_tensor *w = declare(net, "w", c->ndim, c->dims, c->kind, c->a);
    ck_assert_ptr_nonnull(w);
    uint64_t offset = 7;
    ck_assert_int_eq(gan_net_init(net, 99, &offset), GAN_OK);
    size_t n = (size_t)gan_tensor_numel(w);
    ck_assert_uint_eq(offset, 7 + (n + 3) / 4);
    float *v = values_of(w);
    struct moments m = moments_of(v, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(v[i]) < c->bound, "value %zu = %g outside ±%g", i, v[i], c->bound);
    ck_assert_msg(m.max > 0.98 * c->bound && m.min < -0.98 * c->bound, "range %g..%g of ±%g",
                  m.min, m.max, c->bound);
    double sd = c->bound / sqrt(3.0);
    ck_assert_msg(fabs(m.std / sd - 1.0) < 0.05, "std %g, want %g", m.std, sd);
    ck_assert_msg(fabs(m.mean) < 5 * sd / sqrt((double)n), "mean %g", m.mean);
    free(v);
    gan_net_free(net);
}
END_TEST

START_TEST(test_zeros_constant_normal)
{
    gan_net *net = new_net("g");
    int64_t d[2] = { 200, 100 }, b[1] = { 33 };
    gan_tensor *z = declare(net, "z", 1, b, GAN_INIT_ZEROS, 0);
    gan_tensor *k = declare(net, "k", 1, b, GAN_INIT_CONSTANT, -0.75f);
    gan_tensor *nrm = declare(net, "n", 2, d, GAN_INIT_NORMAL, 0.3f);
    /* Fill z and k with something else first: init must overwrite. */
    float junk[33];
    for (int i = 0; i < 33; i++)
        junk[i] = 5.0f + (float)i;
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, z, junk, 33), GAN_OK);
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, k, junk, 33), GAN_OK);
    uint64_t offset = 0;
    ck_assert_int_eq(gan_net_init(net, 5, &offset), GAN_OK);
    /* Zeros and constants draw nothing. */
    ck_assert_uint_eq(offset, 20000 / 4);
    float *vz = values_of(z), *vk = values_of(k), *vn = values_of(nrm);
    for (int i = 0; i < 33; i++) {
        ck_assert_float_eq(vz[i], 0.0f);
        ck_assert_float_eq(vk[i], -0.75f);
    }
    struct moments m = moments_of(vn, 20000);
    ck_assert_msg(fabs(m.std / 0.3 - 1.0) < 0.03, "std %g", m.std);
    ck_assert_msg(fabs(m.mean) < 5 * 0.3 / sqrt(20000.0), "mean %g", m.mean);
    free(vz);
    free(vk);
    free(vn);
    gan_net_free(net);
}
END_TEST

/* Parameter i is drawn at the stream position after everything declared before it: the
 * same numbers gan_tensor_normal/uniform give at that seed and offset. */
START_TEST(test_init_follows_stream_layout)
{
    gan_net *net = new_net("critic");
    int64_t w0[2] = { 7, 3 }, b0[1] = { 7 }, w1[2] = { 5, 7 };
    gan_tensor *a = declare(net, "fc0.weight", 2, w0, GAN_INIT_HE_NORMAL, 0);
    gan_tensor *b = declare(net, "fc0.bias", 1, b0, GAN_INIT_ZEROS, 0);
    gan_tensor *c = declare(net, "fc1.weight", 2, w1, GAN_INIT_TORCH_LINEAR, 0);
    uint64_t seed = 0x1234567890abcdefULL, offset = 42;
    ck_assert_int_eq(gan_net_init(net, seed, &offset), GAN_OK);
    /* 21 → 6 blocks, zeros → 0, 35 → 9 blocks. */
    ck_assert_uint_eq(offset, 42 + 6 + 9);

    gan_tensor *ra = gan_tensor_normal(fx.ctx, GAN_F32, 2, w0, seed, 42, 0.0f,
                                       (float)sqrt(2.0 / 3.0));
    gan_tensor *rc = gan_tensor_uniform(fx.ctx, GAN_F32, 2, w1, seed, 48,
                                        (float)(-1.0 / sqrt(7.0)), (float)(1.0 / sqrt(7.0)));
    float *va = values_of(a), *vra = values_of(ra), *vc = values_of(c), *vrc = values_of(rc);
    float *vb = values_of(b);
    for (int i = 0; i < 21; i++)
        ck_assert_float_eq(va[i], vra[i]);
    for (int i = 0; i < 35; i++)
        ck_assert_float_eq(vc[i], vrc[i]);
    for (int i = 0; i < 7; i++)
        ck_assert_float_eq(vb[i], 0.0f);
    free(va);
    free(vra);
    free(vb);
    free(vc);
    free(vrc);
    gan_net_free(net);
}
END_TEST

/* Builds the same small net twice: a run restarts from the same parameters. */
static gan_net *seeded_net(uint64_t seed, uint64_t offset)
{
    gan_net *net = new_net("generator");
    int64_t w0[2] = { 16, 2 }, b0[1] = { 16 }, w1[2] = { 2, 16 };
    struct gan_init he = { GAN_INIT_HE_NORMAL, 0 }, tl = { GAN_INIT_TORCH_LINEAR, 0 };
    struct gan_init bu = { GAN_INIT_UNIFORM, 0.5f };
    ck_assert_ptr_nonnull(gan_net_param(net, "fc0.weight", 2, w0, he));
    ck_assert_ptr_nonnull(gan_net_param(net, "fc0.bias", 1, b0, bu));
    ck_assert_ptr_nonnull(gan_net_param(net, "fc1.weight", 2, w1, tl));
    ck_assert_int_eq(gan_net_init(net, seed, &offset), GAN_OK);
    return net;
}

START_TEST(test_reproducible_from_seed)
{
    gan_net *n1 = seeded_net(77, 3), *n2 = seeded_net(77, 3);
    gan_net *n3 = seeded_net(78, 3), *n4 = seeded_net(77, 4);
    for (size_t i = 0; i < gan_net_count(n1); i++) {
        size_t n = (size_t)gan_net_numel(n1, i);
        float *v1 = values_of(gan_net_tensor(n1, i)), *v2 = values_of(gan_net_tensor(n2, i));
        float *v3 = values_of(gan_net_tensor(n3, i)), *v4 = values_of(gan_net_tensor(n4, i));
        ck_assert_mem_eq(v1, v2, n * sizeof *v1);
        size_t same3 = 0, same4 = 0;
        for (size_t k = 0; k < n; k++) {
            same3 += v1[k] == v3[k];
            same4 += v1[k] == v4[k];
        }
        ck_assert_msg(same3 == 0 && same4 == 0, "parameter %zu: %zu/%zu values unchanged by "
                      "another seed, %zu/%zu by another offset", i, same3, n, same4, n);
        free(v1);
        free(v2);
        free(v3);
        free(v4);
    }
    gan_net_free(n1);
    gan_net_free(n2);
    gan_net_free(n3);
    gan_net_free(n4);
}
END_TEST

/* ------------------------------------------------------------------ gradients */

static gan_tensor *host_tensor(int ndim, const int64_t *dims, const float *v)
{
    gan_tensor *t = gan_tensor_from_host(fx.ctx, GAN_F32, ndim, dims, v);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void assert_grad(gan_net *net, size_t i, const float *want, double tol)
{
    size_t n = (size_t)gan_net_numel(net, i);
    float *got = malloc(n * sizeof *got);
    ck_assert_int_eq(gan_net_grad_to_host(net, i, got, n), GAN_OK);
    for (size_t k = 0; k < n; k++)
        ck_assert_msg(fabs(got[k] - want[k]) <= tol, "%s[%zu] = %.9g, want %.9g",
                      gan_net_full_name(net, i), k, got[k], want[k]);
    free(got);
}

START_TEST(test_grad_arena_zero_add)
{
    gan_net *net = new_net("critic");
    int64_t wd[2] = { 2, 3 }, bd[1] = { 2 };
    declare(net, "w", 2, wd, GAN_INIT_ZEROS, 0);
    declare(net, "b", 1, bd, GAN_INIT_ZEROS, 0);

    /* The arena is one F32 tensor of all the elements, zero when made. */
    gan_tensor *arena = gan_net_grads(net);
    ck_assert_ptr_nonnull(arena);
    ck_assert_int_eq(gan_tensor_ndim(arena), 1);
    ck_assert_int_eq(gan_tensor_numel(arena), 8);
    ck_assert_int_eq(gan_tensor_dtype(arena), GAN_F32);
    float *v = values_of(arena);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(v[i], 0.0f);
    free(v);
    struct gan_ref r0 = gan_net_grad_ref(net, 0), r1 = gan_net_grad_ref(net, 1);
    ck_assert_ptr_eq(r0.buf, gan_tensor_buffer(arena));
    ck_assert_ptr_eq(r1.buf, gan_tensor_buffer(arena));
    ck_assert_uint_eq(r0.offset, 0);
    ck_assert_uint_eq(r1.offset, 6);
    ck_assert_int_eq(r1.dtype, GAN_F32);
    ck_assert_ptr_null(gan_net_grad_ref(net, 2).buf);
    gan_ctx_clear_error(fx.ctx);

    float gw[6] = { 1, 2, 3, 4, 5, 6 }, gb[2] = { -1, 0.5f };
    gan_tensor *g[2] = { host_tensor(2, wd, gw), host_tensor(1, bd, gb) };
    ck_assert_int_eq(gan_net_add_grads(net, g), GAN_OK);
    ck_assert_int_eq(gan_net_add_grads(net, g), GAN_OK);
    float w2[6] = { 2, 4, 6, 8, 10, 12 }, b2[2] = { -2, 1 };
    assert_grad(net, 0, w2, 0);
    assert_grad(net, 1, b2, 0);
    /* The flat view has the same numbers in declaration order. */
    v = values_of(arena);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(v[i], w2[i]);
    ck_assert_float_eq(v[6], -2.0f);
    ck_assert_float_eq(v[7], 1.0f);
    free(v);

    /* NULL skips a parameter; an F16 gradient is widened into the FP32 sum. */
    gan_tensor *h = gan_tensor_from_host(fx.ctx, GAN_F16, 1, bd, gb);
    gan_tensor *only_b[2] = { NULL, h };
    ck_assert_int_eq(gan_net_add_grads(net, only_b), GAN_OK);
    float b3[2] = { -3, 1.5f };
    assert_grad(net, 0, w2, 0);
    assert_grad(net, 1, b3, 0);

    /* One call zeroes everything. */
    ck_assert_int_eq(gan_net_zero_grads(net), GAN_OK);
    float zw[6] = { 0 }, zb[2] = { 0 };
    assert_grad(net, 0, zw, 0);
    assert_grad(net, 1, zb, 0);
    gan_ctx_step_end(fx.ctx);
    gan_net_free(net);
}
END_TEST

START_TEST(test_add_grads_checks_shapes)
{
    gan_net *net = new_net("critic");
    int64_t wd[2] = { 2, 3 }, bd[1] = { 2 }, wrong[2] = { 3, 2 };
    declare(net, "w", 2, wd, GAN_INIT_ZEROS, 0);
    declare(net, "b", 1, bd, GAN_INIT_ZEROS, 0);
    float ones[6] = { 1, 1, 1, 1, 1, 1 };
    gan_tensor *g[2] = { host_tensor(1, bd, ones), host_tensor(2, wrong, ones) };
    /* The bias gradient would fit the first slot's count in no way; neither is added. */
    ck_assert_int_eq(gan_net_add_grads(net, g), GAN_ERR_INVALID);
    assert_error_mentions("critic.w");
    float zw[6] = { 0 }, zb[2] = { 0 };
    assert_grad(net, 0, zw, 0);
    assert_grad(net, 1, zb, 0);
    gan_tensor *g2[2] = { host_tensor(2, wd, ones), host_tensor(2, wrong, ones) };
    ck_assert_int_eq(gan_net_add_grads(net, g2), GAN_ERR_INVALID);
    assert_error_mentions("[3, 2]");
    assert_grad(net, 0, zw, 0);
    float small[1];
    ck_assert_int_eq(gan_net_grad_to_host(net, 0, small, 1), GAN_ERR_INVALID);
    assert_error_mentions("6 elements");
    gan_ctx_step_end(fx.ctx);
    gan_net_free(net);
}
END_TEST

/* L = Σ c ⊙ w + Σ b²: ∂L/∂w = c, ∂L/∂b = 2b, accumulated over two backward passes. */
START_TEST(test_backward_accumulates)
{
    gan_net *net = new_net("critic");
    int64_t wd[2] = { 2, 2 }, bd[1] = { 3 };
    gan_tensor *w = declare(net, "w", 2, wd, GAN_INIT_ZEROS, 0);
    gan_tensor *b = declare(net, "b", 1, bd, GAN_INIT_ZEROS, 0);
    float wv[4] = { 0.5f, -1, 2, 3 }, bv[3] = { 1, -2, 0.25f }, cv[4] = { 3, 1, -4, 0.5f };
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, w, wv, 4), GAN_OK);
    ck_assert_int_eq(gan_tensor_set_from_host(fx.ctx, b, bv, 3), GAN_OK);
    ck_assert_int_eq(gan_net_zero_grads(net), GAN_OK);
    for (int pass = 0; pass < 2; pass++) {
        gan_tensor *c = host_tensor(2, wd, cv);
        gan_tensor *loss = gan_add(fx.ctx, gan_sum(fx.ctx, gan_mul(fx.ctx, c, w), GAN_ALL_AXES, 0),
                                   gan_sum(fx.ctx, gan_square(fx.ctx, b), GAN_ALL_AXES, 0));
        ck_assert_ptr_nonnull(loss);
        ck_assert_int_eq(gan_net_backward(net, loss, NULL), GAN_OK);
        gan_ctx_step_end(fx.ctx);
    }
    float want_w[4] = { 6, 2, -8, 1 }, want_b[3] = { 4, -8, 1 };
    assert_grad(net, 0, want_w, 1e-6);
    assert_grad(net, 1, want_b, 1e-6);
    /* With a seed: the gradient of 3·L. */
    ck_assert_int_eq(gan_net_zero_grads(net), GAN_OK);
    gan_tensor *loss = gan_sum(fx.ctx, gan_square(fx.ctx, b), GAN_ALL_AXES, 0);
    gan_tensor *seed = gan_tensor_full(fx.ctx, GAN_F32, 0, NULL, 3.0f);
    ck_assert_int_eq(gan_net_backward(net, loss, seed), GAN_OK);
    float zero_w[4] = { 0 }, want_b3[3] = { 6, -12, 1.5f };
    assert_grad(net, 0, zero_w, 0);
    assert_grad(net, 1, want_b3, 1e-6);
    gan_ctx_step_end(fx.ctx);
    gan_net_free(net);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static Suite *net_suite(void)
{
    Suite *s = suite_create("net");

    TCase *tc = tcase_create("declare");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_declare_names_shapes_offsets);
    tcase_add_test(tc, test_no_prefix);
    tcase_add_test(tc, test_duplicate_rejected);
    tcase_add_loop_test(tc, test_bad_names_rejected, 0, N_BAD_NAMES);
    tcase_add_test(tc, test_bad_declarations_rejected);
    tcase_add_test(tc, test_bad_prefix_rejected);
    suite_add_tcase(s, tc);

    tc = tcase_create("init");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_he_normal_statistics);
    tcase_add_loop_test(tc, test_uniform_bounds, 0,
                        (int)(sizeof uniform_cases / sizeof uniform_cases[0]));
    tcase_add_test(tc, test_zeros_constant_normal);
    tcase_add_test(tc, test_init_follows_stream_layout);
    tcase_add_test(tc, test_reproducible_from_seed);
    suite_add_tcase(s, tc);

    tc = tcase_create("grads");
    tcase_add_checked_fixture(tc, backend_fixture_setup, backend_fixture_teardown);
    tcase_add_test(tc, test_grad_arena_zero_add);
    tcase_add_test(tc, test_add_grads_checks_shapes);
    tcase_add_test(tc, test_backward_accumulates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(net_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
