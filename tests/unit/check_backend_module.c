/* SPDX-License-Identifier: MIT */
/* check_backend_module.c — backend-cpu.so as the host sees it: loaded with dlopen, its
 * descriptor and settings, an instance created through the table, one call per slot. */
#include "config.h"

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ganctl/ganctl.h>
#include "../lib/cpu_features.h"
#include "../lib/test_host.h"

/* ---------------------------------------------------------------- loading */

static void *module;
static const struct gan_plugin *plugin;
static const struct gan_backend_ops *ops;

/* Opens backend-cpu.so from the first folder of $GANCTL_PLUGIN_PATH that has it (the
 * test environment points it at the build tree). */
static void load_module(void)
{
    const char *path = getenv("GANCTL_PLUGIN_PATH");
    ck_assert_msg(path && *path, "GANCTL_PLUGIN_PATH is not set; run through make check, "
                                 "or set it to the build tree's backends/cpu/.libs");
    char file[4096], tried[4096] = "";
    const char *dir = path;
    while (*dir) {
        size_t len = strcspn(dir, ":");
        snprintf(file, sizeof file, "%.*s/backend-cpu.so", (int)len, dir);
        module = dlopen(file, RTLD_NOW | RTLD_LOCAL);
        if (module)
            break;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), " [%s]", dlerror());
        dir += len;
        if (*dir == ':')
            dir++;
    }
    ck_assert_msg(module != NULL, "backend-cpu.so did not load from %s:%s", path, tried);
    void *sym = dlsym(module, GAN_PLUGIN_SYMBOL);
    ck_assert_msg(sym != NULL, "no %s in backend-cpu.so", GAN_PLUGIN_SYMBOL);
    gan_plugin_descriptor_fn fn;
    memcpy(&fn, &sym, sizeof sym);
    plugin = fn();
    ck_assert_ptr_nonnull(plugin);
    ops = plugin->ops;
}

static void unload_module(void)
{
    if (module)
        dlclose(module);
    module = NULL;
    plugin = NULL;
    ops = NULL;
}

/* ---------------------------------------------------------------- descriptor */

START_TEST(test_descriptor)
{
    ck_assert_uint_eq(plugin->abi_major, GAN_ABI_MAJOR);
    ck_assert_uint_le(plugin->abi_minor, GAN_ABI_MINOR);
    ck_assert_uint_eq(plugin->struct_size, sizeof(struct gan_plugin));
    ck_assert_int_eq(plugin->kind, GAN_PLUGIN_BACKEND);
    ck_assert_str_eq(plugin->name, "cpu");
    ck_assert_str_eq(plugin->version, PACKAGE_VERSION);
    ck_assert_ptr_nonnull(plugin->summary);
    ck_assert_uint_gt(strlen(plugin->summary), 10);
    ck_assert_ptr_null(strchr(plugin->summary, '\n'));
    for (size_t i = 0; i < sizeof plugin->reserved / sizeof plugin->reserved[0]; i++)
        ck_assert_ptr_null(plugin->reserved[i]);

    const struct gan_setting_spec *s = plugin->settings;
    ck_assert_ptr_nonnull(s);
    static const struct {
        const char *name;
        enum gan_setting_type type;
        const char *default_value;
    } want[] = {
        { "threads", GAN_SETTING_INT, "0" },        { "vector", GAN_SETTING_STRING, "auto" },
        { "blas_threads", GAN_SETTING_INT, "0" },   { "gemm", GAN_SETTING_STRING, "auto" },
        { "bf16", GAN_SETTING_STRING, "auto" },     { "gemm16", GAN_SETTING_STRING, "auto" },
        { "channel_blocks", GAN_SETTING_STRING, "kept" },
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(s[i].name != NULL, "setting %d of %d is missing", i, n);
        ck_assert_str_eq(s[i].name, want[i].name);
        ck_assert_int_eq(s[i].type, want[i].type);
        ck_assert_str_eq(s[i].default_value, want[i].default_value);
        ck_assert_ptr_nonnull(s[i].summary);
    }
    ck_assert_ptr_null(s[n].name);
}
END_TEST

/* The module exports its descriptor and nothing else: kernels stay private. */
START_TEST(test_exports_only_descriptor)
{
    static const char *const hidden[] = { "cpu_gemm", "cpu_cast", "cpu_blas_open",
                                          "cpu_buffer_alloc", "cpu_unary", "cpu_adam" };
    for (size_t i = 0; i < sizeof hidden / sizeof hidden[0]; i++)
        ck_assert_msg(dlsym(module, hidden[i]) == NULL, "%s is exported", hidden[i]);
}
END_TEST

START_TEST(test_required_slots)
{
    ck_assert_ptr_nonnull(ops);
    ck_assert_uint_eq(ops->struct_size, sizeof(struct gan_backend_ops));
    /* every slot before synchronize is required */
    const void *slots[] = {
        (const void *)ops->create, (const void *)ops->destroy, (const void *)ops->describe,
        (const void *)ops->buffer_alloc, (const void *)ops->buffer_free,
        (const void *)ops->upload, (const void *)ops->download, (const void *)ops->copy,
        (const void *)ops->gemm, (const void *)ops->unary, (const void *)ops->binary,
        (const void *)ops->reduce, (const void *)ops->conv2d_forward,
        (const void *)ops->conv2d_backward_data, (const void *)ops->conv2d_backward_filter,
        (const void *)ops->cast, (const void *)ops->rng_bits, (const void *)ops->rng_uniform,
        (const void *)ops->rng_normal, (const void *)ops->adam, (const void *)ops->grad_stats,
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        ck_assert_msg(slots[i] != NULL, "slot %zu of the backend table is NULL", i);
    /* the CPU is synchronous: no synchronize */
    ck_assert_ptr_null((const void *)ops->synchronize);
}
END_TEST

/* ---------------------------------------------------------------- an instance */

static struct test_host th;
static gan_backend *be;

static const char *expected_core(void)
{
    if (test_cpu_has("avx512f") && test_cpu_has("avx512bw") &&
        test_cpu_has("avx512vl") && test_cpu_has("avx512dq"))
        return "SkylakeX";
    if (test_cpu_has("avx2") && test_cpu_has("fma"))
        return "Haswell";
    if (test_cpu_has("avx"))
        return "Sandybridge";
    return NULL;
}

static void instance_setup(void)
{
    static const char *const settings[] = { "threads=1", NULL };
    load_module();
    test_host_init(&th, settings);
    gan_status st = ops->create(&th.host, &be);
    ck_assert_msg(st == GAN_OK, "create: %s", th.last_error);
    ck_assert_ptr_nonnull(be);
}

static void instance_teardown(void)
{
    if (be)
        ops->destroy(be);
    be = NULL;
    unload_module();
}

START_TEST(test_describe)
{
    const char *d = ops->describe(be);
    ck_assert_ptr_nonnull(d);
    ck_assert_msg(strncmp(d, "cpu: OpenBLAS ", 14) == 0, "description: %s", d);
    ck_assert_msg(strstr(d, " kernel ") && strstr(d, "1 thread") && strstr(d, GAN_BLAS_LIBRARY),
                  "description: %s", d);
    const char *core = expected_core();
    if (core && strstr(d, "chosen from CPU features"))
        ck_assert_msg(strstr(d, core) != NULL, "description names no %s: %s", core, d);
    /* the BF16 GEMM first where oneDNN runs BF16 here, the FP32 GEMM always */
    const char *fp8 = strstr(d, "; FP8: emulated, exact widening into the ");
    ck_assert_msg(fp8 && strstr(fp8, "the FP32 GEMM"), "description: %s", d);
}
END_TEST

static gan_buffer *upload_floats(const float *v, size_t n)
{
    gan_buffer *b = NULL;
    ck_assert_int_eq(ops->buffer_alloc(be, n * sizeof(float), &b), GAN_OK);
    ck_assert_int_eq(ops->upload(be, b, 0, v, n * sizeof(float)), GAN_OK);
    return b;
}

static void download_floats(float *out, gan_buffer *b, size_t n)
{
    ck_assert_int_eq(ops->download(be, out, b, 0, n * sizeof(float)), GAN_OK);
}

static void assert_floats(const float *got, const float *want, size_t n, double tol,
                          const char *what)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= tol, "%s[%zu] = %.9g, expected %.9g",
                      what, i, got[i], want[i]);
}

START_TEST(test_memory_slots)
{
    const float v[4] = { 1, 2, 3, 4 };
    float out[4];
    gan_buffer *a = upload_floats(v, 4), *b = NULL;
    ck_assert_int_eq(ops->buffer_alloc(be, 16, &b), GAN_OK);
    ck_assert_int_eq(ops->copy(be, b, 4, a, 0, 12), GAN_OK);
    ck_assert_int_eq(ops->copy(be, b, 0, a, 12, 4), GAN_OK);
    download_floats(out, b, 4);
    const float want[4] = { 4, 1, 2, 3 };
    assert_floats(out, want, 4, 0, "copy");
    /* out of bounds is refused with a message */
    ck_assert_int_eq(ops->upload(be, a, 8, v, 12), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(th.last_error, "16 bytes"));
    ops->buffer_free(be, a);
    ops->buffer_free(be, b);
}
END_TEST

START_TEST(test_gemm_slot)
{
    const float av[4] = { 1, 2, 3, 4 }, bv[4] = { 5, 6, 7, 8 };
    float out[4];
    gan_buffer *a = upload_floats(av, 4), *b = upload_floats(bv, 4), *c = upload_floats(av, 4);
    struct gan_gemm g = {
        .m = 2, .n = 2, .k = 2, .alpha = 1.0f, .beta = 0.0f,
        .a = { a, 0, GAN_F32 }, .b = { b, 0, GAN_F32 }, .c = { c, 0, GAN_F32 },
        .lda = 2, .ldb = 2, .ldc = 2, .batch = 1,
    };
    ck_assert_int_eq(ops->gemm(be, &g), GAN_OK);
    download_floats(out, c, 4);
    const float want[4] = { 19, 22, 43, 50 };
    assert_floats(out, want, 4, 0, "gemm");
    ops->buffer_free(be, a);
    ops->buffer_free(be, b);
    ops->buffer_free(be, c);
}
END_TEST

static struct gan_operand contiguous(gan_buffer *b, int64_t stride)
{
    struct gan_operand o = { .buf = b, .offset = 0, .dtype = GAN_F32, .stride = { stride } };
    return o;
}

START_TEST(test_elementwise_slots)
{
    const float xv[4] = { 1, -2, 3, -4 }, yv[4] = { 10, 20, 30, 40 };
    float out[4];
    gan_buffer *x = upload_floats(xv, 4), *y = upload_floats(yv, 4), *z = upload_floats(yv, 4);
    struct gan_shape shape = { .ndim = 1, .dim = { 4 } };
    struct gan_operand ox = contiguous(x, 1), oy = contiguous(y, 1), oz = contiguous(z, 1);

    ck_assert_int_eq(ops->unary(be, GAN_UNARY_SCALE, 2.5f, &shape, &ox, &oz), GAN_OK);
    download_floats(out, z, 4);
    const float scaled[4] = { 2.5f, -5, 7.5f, -10 };
    assert_floats(out, scaled, 4, 0, "unary scale");

    ck_assert_int_eq(ops->binary(be, GAN_BINARY_ADD, &shape, &ox, &oy, &oz), GAN_OK);
    download_floats(out, z, 4);
    const float sum[4] = { 11, 18, 33, 36 };
    assert_floats(out, sum, 4, 0, "binary add");

    struct gan_operand r = contiguous(z, 0); /* reduced dimension: stride 0 */
    ck_assert_int_eq(ops->reduce(be, GAN_REDUCE_SUM, &shape, &ox, 1u, &r), GAN_OK);
    download_floats(out, z, 1);
    ck_assert_float_eq(out[0], -2.0f);
    ops->buffer_free(be, x);
    ops->buffer_free(be, y);
    ops->buffer_free(be, z);
}
END_TEST

/* 3×3 input, 2×2 filter [[1 0] [0 1]]: each output is x[i][j] + x[i+1][j+1]. */
START_TEST(test_conv2d_slots)
{
    const float xv[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, wv[4] = { 1, 0, 0, 1 };
    const float ones[4] = { 1, 1, 1, 1 };
    float out[9];
    struct gan_conv2d c = {
        .n = 1, .c_in = 1, .h_in = 3, .w_in = 3, .c_out = 1, .kh = 2, .kw = 2,
        .stride_h = 1, .stride_w = 1, .dilation_h = 1, .dilation_w = 1,
        .h_out = 2, .w_out = 2, .dtype = GAN_F32,
    };
    gan_buffer *x = upload_floats(xv, 9), *w = upload_floats(wv, 4), *y = upload_floats(ones, 4),
               *dx = upload_floats(xv, 9), *dw = upload_floats(ones, 4);
    struct gan_ref rx = { x, 0, GAN_F32 }, rw = { w, 0, GAN_F32 }, ry = { y, 0, GAN_F32 },
                   rdx = { dx, 0, GAN_F32 }, rdw = { dw, 0, GAN_F32 };

    ck_assert_int_eq(ops->conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
    download_floats(out, y, 4);
    const float fwd[4] = { 6, 8, 12, 14 };
    assert_floats(out, fwd, 4, 0, "conv2d_forward");

    ck_assert_int_eq(ops->upload(be, y, 0, ones, sizeof ones), GAN_OK); /* dy = 1 */
    ck_assert_int_eq(ops->conv2d_backward_data(be, &c, &ry, &rw, 0.0f, &rdx), GAN_OK);
    download_floats(out, dx, 9);
    const float bwd_data[9] = { 1, 1, 0, 1, 2, 1, 0, 1, 1 };
    assert_floats(out, bwd_data, 9, 0, "conv2d_backward_data");

    ck_assert_int_eq(ops->conv2d_backward_filter(be, &c, &rx, &ry, 0.0f, &rdw), GAN_OK);
    download_floats(out, dw, 4);
    const float bwd_filter[4] = { 12, 16, 24, 28 };
    assert_floats(out, bwd_filter, 4, 0, "conv2d_backward_filter");
    ops->buffer_free(be, x);
    ops->buffer_free(be, w);
    ops->buffer_free(be, y);
    ops->buffer_free(be, dx);
    ops->buffer_free(be, dw);
}
END_TEST

START_TEST(test_cast_slot)
{
    const float v[3] = { 1.0f, 1e5f, 1e-9f };
    gan_buffer *x = upload_floats(v, 3), *y = NULL;
    ck_assert_int_eq(ops->buffer_alloc(be, 6, &y), GAN_OK);
    struct gan_ref rx = { x, 0, GAN_F32 }, ry = { y, 0, GAN_F16 };
    struct gan_cast_counts counts;
    ck_assert_int_eq(ops->cast(be, 3, &rx, &ry, &counts), GAN_OK);
    uint16_t h[3];
    ck_assert_int_eq(ops->download(be, h, y, 0, sizeof h), GAN_OK);
    ck_assert_uint_eq(h[0], 0x3c00);
    ck_assert_uint_eq(h[1], 0x7c00);
    ck_assert_uint_eq(h[2], 0x0000);
    ck_assert_uint_eq(counts.elements, 3);
    ck_assert_uint_eq(counts.overflow, 1);
    ck_assert_uint_eq(counts.underflow, 1);

    /* ABI 1.5: FP8 through cast (1e5 overflows E5M2 to inf) and the saturating cast */
    struct gan_ref r8 = { y, 0, GAN_F8E5M2 };
    uint8_t b[3];
    ck_assert_int_eq(ops->cast(be, 3, &rx, &r8, &counts), GAN_OK);
    ck_assert_int_eq(ops->download(be, b, y, 0, sizeof b), GAN_OK);
    ck_assert_uint_eq(b[0], 0x3c);
    ck_assert_uint_eq(b[1], 0x7c);
    ck_assert_uint_eq(b[2], 0x00);
    ck_assert_uint_eq(counts.overflow, 1);
    ck_assert_uint_eq(counts.underflow, 1);
    ck_assert_ptr_nonnull(ops->cast_flags);
    ck_assert_int_eq(ops->cast_flags(be, 3, &rx, &r8, GAN_CAST_SATURATE, &counts), GAN_OK);
    ck_assert_int_eq(ops->download(be, b, y, 0, sizeof b), GAN_OK);
    ck_assert_uint_eq(b[1], 0x7b);
    ck_assert_uint_eq(counts.overflow, 1);
    ops->buffer_free(be, x);
    ops->buffer_free(be, y);
}
END_TEST

/* ABI 1.6: the FP8 products through the module's table. x = (1, −3, 0.5, 96) scaled by
 * 2 into E4M3 is (2, −6, 1, 192) exactly; its statistics, and the product of that 2×2
 * operand with itself, which the two inverse scales bring back to x·x. */
START_TEST(test_fp8_slots)
{
    ck_assert(ops->fp8_stats && ops->fp8_quantize && ops->fp8_dequantize && ops->gemm_fp8);
    const float x[4] = { 1.0f, -3.0f, 0.5f, 96.0f }, two = 2.0f;
    gan_buffer *bx = upload_floats(x, 4), *bs = upload_floats(&two, 1), *bq = NULL;
    gan_buffer *by = upload_floats(x, 4);
    ck_assert_int_eq(ops->buffer_alloc(be, 4, &bq), GAN_OK);
    struct gan_fp8_layout l = { 2, 2, 0, GAN_FP8_ALONG_ROWS };
    struct gan_ref rx = { bx, 0, GAN_F32 }, rs = { bs, 0, GAN_F32 }, rq = { bq, 0, GAN_F8E4M3 };
    struct gan_ref ry = { by, 0, GAN_F32 };
    struct gan_fp8_stats st;
    float block_amax = 0.0f;
    ck_assert_int_eq(ops->fp8_stats(be, &l, &rx, 1, &block_amax, &st), GAN_OK);
    ck_assert(st.elements == 4 && st.zeros == 0 && st.nonfinite == 0 && st.amax == 96.0f);
    ck_assert(block_amax == 96.0f);
    ck_assert_uint_eq(st.log2_hist[6 - GAN_FP8_LOG2_MIN], 1);  /* 96 = 1.5 · 2^6 */
    ck_assert_uint_eq(st.log2_hist[-1 - GAN_FP8_LOG2_MIN], 1); /* 0.5 */

    struct gan_fp8_cast_stats cs;
    ck_assert_int_eq(ops->fp8_quantize(be, &l, &rx, &rs, 0, &rq, &cs), GAN_OK);
    uint8_t q[4];
    ck_assert_int_eq(ops->download(be, q, bq, 0, 4), GAN_OK);
    /* E4M3: 2 = 0 1000 000, −6 = 1 1001 100, 1 = 0 0111 000, 192 = 0 1110 100 */
    ck_assert(q[0] == 0x40 && q[1] == 0xcc && q[2] == 0x38 && q[3] == 0x74);
    ck_assert(cs.elements == 4 && cs.overflow == 0 && cs.amax == 96.0f);

    float y[4];
    ck_assert_int_eq(ops->fp8_dequantize(be, &l, &rq, &rs, &ry), GAN_OK);
    download_floats(y, by, 4);
    assert_floats(y, x, 4, 0.0, "dequantized");

    struct gan_gemm_fp8 f = {
        .g = { .m = 2, .n = 2, .k = 2, .alpha = 1.0f, .a = rq, .b = rq, .c = ry, .lda = 2,
               .ldb = 2, .ldc = 2, .batch = 1 },
        .scale_a = rs, .scale_b = rs,
    };
    ck_assert_int_eq(ops->gemm_fp8(be, &f), GAN_OK);
    download_floats(y, by, 4);
    const float xx[4] = { 1 - 3 * 0.5f, -3 - 3 * 96.0f, 0.5f + 96 * 0.5f, -1.5f + 96.0f * 96.0f };
    assert_floats(y, xx, 4, 0.0, "x·x");
    ops->buffer_free(be, bx);
    ops->buffer_free(be, bs);
    ops->buffer_free(be, bq);
    ops->buffer_free(be, by);
}
END_TEST

/* Random123's known answer for Philox4x32-10 with key 0, counter 0, and what the
 * uniform and normal transforms of backend.h make of the same words. */
START_TEST(test_rng_slots)
{
    static const uint32_t kat[4] = { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 };
    gan_buffer *b = NULL;
    ck_assert_int_eq(ops->buffer_alloc(be, 16, &b), GAN_OK);
    struct gan_ref bits = { b, 0, GAN_U32 }, f = { b, 0, GAN_F32 };
    uint32_t words[4];
    ck_assert_int_eq(ops->rng_bits(be, 4, 0, 0, &bits), GAN_OK);
    ck_assert_int_eq(ops->download(be, words, b, 0, 16), GAN_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_uint_eq(words[i], kat[i]);

    double u[4];
    for (int i = 0; i < 4; i++)
        u[i] = ((double)(kat[i] >> 8) + 0.5) * 0x1p-24;
    float out[4], want[4];
    ck_assert_int_eq(ops->rng_uniform(be, 4, 0, 0, -1.0f, 3.0f, &f), GAN_OK);
    download_floats(out, b, 4);
    for (int i = 0; i < 4; i++)
        want[i] = (float)(-1.0 + 4.0 * u[i]);
    assert_floats(out, want, 4, 1e-6, "rng_uniform");

    ck_assert_int_eq(ops->rng_normal(be, 4, 0, 0, 0.5f, 2.0f, &f), GAN_OK);
    download_floats(out, b, 4);
    for (int p = 0; p < 2; p++) {
        double r = sqrt(-2.0 * log(u[2 * p])), t = 2.0 * M_PI * u[2 * p + 1];
        want[2 * p] = (float)(0.5 + 2.0 * r * cos(t));
        want[2 * p + 1] = (float)(0.5 + 2.0 * r * sin(t));
    }
    assert_floats(out, want, 4, 1e-5, "rng_normal");
    ops->buffer_free(be, b);
}
END_TEST

START_TEST(test_adam_slot)
{
    const float one = 1.0f, half = 0.5f, zero = 0.0f;
    gan_buffer *param = upload_floats(&one, 1), *grad = upload_floats(&half, 1),
               *m = upload_floats(&zero, 1), *v = upload_floats(&zero, 1);
    struct gan_ref rp = { param, 0, GAN_F32 }, rg = { grad, 0, GAN_F32 },
                   rm = { m, 0, GAN_F32 }, rv = { v, 0, GAN_F32 }, none = { NULL, 0, GAN_F16 };
    struct gan_adam p = { .lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .weight_decay = 0.0f, .step = 1, .grad_scale = 1.0f };
    ck_assert_int_eq(ops->adam(be, &p, 1, &rp, &rg, &rm, &rv, &none), GAN_OK);
    float out;
    /* m = 0.05, v = 0.00025; bias-corrected 0.5 and 0.25: a step of lr·0.5/0.5 */
    download_floats(&out, m, 1);
    ck_assert_float_eq_tol(out, 0.05f, 1e-7f);
    download_floats(&out, v, 1);
    ck_assert_float_eq_tol(out, 0.00025f, 1e-8f); /* 1 − 0.999f is not 0.001 */
    download_floats(&out, param, 1);
    ck_assert_float_eq_tol(out, 0.9f, 1e-6f);
    ops->buffer_free(be, param);
    ops->buffer_free(be, grad);
    ops->buffer_free(be, m);
    ops->buffer_free(be, v);
}
END_TEST

START_TEST(test_grad_stats_slot)
{
    const float xv[4] = { 0.0f, -2.0f, 4.0f, INFINITY };
    gan_buffer *x = upload_floats(xv, 4);
    struct gan_ref rx = { x, 0, GAN_F32 }, none = { NULL, 0, GAN_F32 };
    struct gan_grad_stats s;
    ck_assert_int_eq(ops->grad_stats(be, 4, &rx, 0.5f, &none, &s), GAN_OK);
    ck_assert_uint_eq(s.elements, 4);
    ck_assert_uint_eq(s.nonfinite, 1);
    ck_assert_uint_eq(s.zeros, 1);
    ck_assert_uint_eq(s.subnormal, 0);
    ck_assert_double_eq(s.absmax, 2.0);
    ck_assert_double_eq(s.sum_squares, 5.0);
    ck_assert_double_eq(s.min_nonzero, 1.0);
    ops->buffer_free(be, x);
}
END_TEST

/* ---------------------------------------------------------------- settings */

START_TEST(test_bad_threads_setting)
{
    static const char *const negative[] = { "threads=-1", NULL };
    static const char *const words[] = { "threads=many", NULL };
    struct test_host h;
    gan_backend *b = NULL;
    test_host_init(&h, _i ? words : negative);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_ERR_CONFIG);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(h.last_error, "threads"));
}
END_TEST

/* A host that does not fill in the default still gets one thread per core. */
START_TEST(test_default_threads)
{
    struct test_host h;
    gan_backend *b = NULL;
    test_host_init(&h, NULL);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_OK);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    char want[32];
    snprintf(want, sizeof want, ", %ld thread", online);
    ck_assert_msg(strstr(ops->describe(b), want) != NULL, "%s", ops->describe(b));
    ops->destroy(b);
}
END_TEST

/* backend.blas_threads: OpenBLAS's share of the budget, named in the description; a
 * negative one is refused. */
START_TEST(test_blas_threads_setting)
{
    static const char *const split[] = { "threads=2", "blas_threads=1", NULL };
    static const char *const negative[] = { "threads=2", "blas_threads=-1", NULL };
    struct test_host h;
    gan_backend *b = NULL;
    test_host_init(&h, split);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_OK);
    ck_assert_msg(strstr(ops->describe(b), ", 2 threads (OpenBLAS 1),") != NULL, "%s",
                  ops->describe(b));
    ops->destroy(b);
    b = NULL;
    test_host_init(&h, negative);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_ERR_CONFIG);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(h.last_error, "blas_threads"));
}
END_TEST

/* backend.vector: the named level is the one described; an unknown one is refused
 * with the list of levels. */
START_TEST(test_vector_setting)
{
    static const char *const portable[] = { "threads=1", "vector=portable", NULL };
    static const char *const automatic[] = { "threads=1", "vector=auto", NULL };
    static const char *const unknown[] = { "threads=1", "vector=sse", NULL };
    struct test_host h;
    gan_backend *b = NULL;

    test_host_init(&h, portable);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_OK);
    ck_assert_msg(strstr(ops->describe(b), "; vector level portable") != NULL, "%s",
                  ops->describe(b));
    ops->destroy(b);

    test_host_init(&h, automatic);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_OK);
    ck_assert_msg(strstr(ops->describe(b), "; vector level ") != NULL &&
                      strstr(ops->describe(b), "(set by backend.vector)") == NULL,
                  "%s", ops->describe(b));
    ops->destroy(b);

    b = NULL;
    test_host_init(&h, unknown);
    ck_assert_int_eq(ops->create(&h.host, &b), GAN_ERR_CONFIG);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(h.last_error, "vector = \"sse\" is not a level") &&
                      strstr(h.last_error, "\"portable\""),
                  "%s", h.last_error);
}
END_TEST

/* ---------------------------------------------------------------- two levels */

/* The level vector=auto gives, as the description names it: the widest this CPU runs
 * (the rule of backends/cpu/isa.c, restated so that the test does not trust it). */
static const char *widest_level(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (!test_cpu_has("avx") || !test_cpu_has("f16c") || !test_cpu_has("avx2"))
        return "portable";
    if (test_cpu_has("avx512f") && test_cpu_has("avx512bw") && test_cpu_has("avx512vl"))
        return "AVX-512";
    return "F16C/AVX2";
#else
    return "portable";
#endif
}

static void expect_level(gan_backend *b, const char *level)
{
    char want[64];
    snprintf(want, sizeof want, "; vector level %s", level);
    ck_assert_msg(strstr(ops->describe(b), want) != NULL, "expected \"%s\" in: %s", want,
                  ops->describe(b));
}

/* A finite F16 with a random sign and mantissa and a biased exponent in emin … emax
 * (0 gives zeros and subnormals). */
static uint16_t random_f16(uint64_t *state, unsigned emin, unsigned emax)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(*state >> 32);
    unsigned e = emin + (r >> 16) % (emax - emin + 1);
    return (uint16_t)((r & 0x8000u) | (e << 10) | (r & 0x3ffu));
}

/* The inputs every instance gets, in host memory. */
enum { TL_HALVES = 65536, TL_ROWS = 33, TL_COLS = 130, TL_RUN = 1031 };
enum { TL_CONV_OUT = 2 * 4 * 8 * 8 }; /* elements of the convolution's output */
/* The bytes of every output two_level_outputs writes. */
enum { TL_OUT = 4 * TL_HALVES + 2 * 2 * TL_HALVES + 2 * 2 * TL_RUN + 4 * TL_COLS +
                2 * TL_CONV_OUT };
struct two_level_inputs {
    uint16_t every_f16[TL_HALVES];        /* every bit pattern, NaNs included */
    uint32_t f32_bits[TL_HALVES];         /* random words: every class of F32 */
    uint16_t a[TL_ROWS * TL_COLS], b[TL_ROWS * TL_COLS]; /* finite F16 */
    uint16_t conv_x[2 * 3 * 8 * 8], conv_w[4 * 3 * 3 * 3]; /* small finite F16 */
};

static gan_buffer *put(gan_backend *b, const void *src, size_t bytes)
{
    gan_buffer *buf = NULL;
    ck_assert_int_eq(ops->buffer_alloc(b, bytes, &buf), GAN_OK);
    ck_assert_int_eq(ops->upload(b, buf, 0, src, bytes), GAN_OK);
    return buf;
}

static gan_buffer *room(gan_backend *b, size_t bytes)
{
    gan_buffer *buf = NULL;
    ck_assert_int_eq(ops->buffer_alloc(b, bytes, &buf), GAN_OK);
    return buf;
}

/* Appends buf's first `bytes` to out[*at …] and frees buf. */
static void take(gan_backend *b, gan_buffer *buf, unsigned char *out, size_t *at, size_t bytes)
{
    ck_assert_uint_le(*at + bytes, TL_OUT);
    ck_assert_int_eq(ops->download(b, out + *at, buf, 0, bytes), GAN_OK);
    *at += bytes;
    ops->buffer_free(b, buf);
}

/* Runs the kernels that have vector forms (casts each way, element-wise on 16-bit runs,
 * a column sum, a 16-bit convolution) on instance b and writes every output's bytes to
 * out, TL_OUT in all. */
static void two_level_outputs(gan_backend *b, const struct two_level_inputs *in,
                              unsigned char *out)
{
    size_t at = 0;
    struct gan_cast_counts counts;

    gan_buffer *x = put(b, in->every_f16, sizeof in->every_f16);
    gan_buffer *y = room(b, TL_HALVES * 4);
    struct gan_ref rx = { x, 0, GAN_F16 }, ry = { y, 0, GAN_F32 };
    ck_assert_int_eq(ops->cast(b, TL_HALVES, &rx, &ry, &counts), GAN_OK);
    ops->buffer_free(b, x);
    take(b, y, out, &at, TL_HALVES * 4);

    static const enum gan_dtype narrow[2] = { GAN_F16, GAN_BF16 };
    for (int k = 0; k < 2; k++) {
        x = put(b, in->f32_bits, sizeof in->f32_bits);
        y = room(b, TL_HALVES * 2);
        struct gan_ref fx = { x, 0, GAN_F32 }, hy = { y, 0, narrow[k] };
        ck_assert_int_eq(ops->cast(b, TL_HALVES, &fx, &hy, &counts), GAN_OK);
        ops->buffer_free(b, x);
        take(b, y, out, &at, TL_HALVES * 2);
    }

    /* a·0.37 into BF16, and a + b into F16 with b broadcast along the run */
    struct gan_shape run = { .ndim = 1, .dim = { TL_RUN } };
    gan_buffer *ba = put(b, in->a, TL_RUN * 2), *bb = put(b, in->b, TL_RUN * 2);
    struct gan_operand oa = { .buf = ba, .dtype = GAN_F16, .stride = { 1 } };
    struct gan_operand ob = { .buf = bb, .dtype = GAN_F16, .stride = { 0 } };
    y = room(b, TL_RUN * 2);
    struct gan_operand oy = { .buf = y, .dtype = GAN_BF16, .stride = { 1 } };
    ck_assert_int_eq(ops->unary(b, GAN_UNARY_SCALE, 0.37f, &run, &oa, &oy), GAN_OK);
    take(b, y, out, &at, TL_RUN * 2);
    y = room(b, TL_RUN * 2);
    oy.buf = y;
    oy.dtype = GAN_F16;
    ck_assert_int_eq(ops->binary(b, GAN_BINARY_ADD, &run, &oa, &ob, &oy), GAN_OK);
    take(b, y, out, &at, TL_RUN * 2);
    ops->buffer_free(b, ba);
    ops->buffer_free(b, bb);

    /* the column sums of a [ROWS, COLS] F16 matrix, into F32 */
    struct gan_shape m = { .ndim = 2, .dim = { TL_ROWS, TL_COLS } };
    x = put(b, in->a, sizeof in->a);
    y = room(b, TL_COLS * 4);
    struct gan_operand mx = { .buf = x, .dtype = GAN_F16, .stride = { TL_COLS, 1 } };
    struct gan_operand my = { .buf = y, .dtype = GAN_F32, .stride = { 0, 1 } };
    ck_assert_int_eq(ops->reduce(b, GAN_REDUCE_SUM, &m, &mx, 1u, &my), GAN_OK);
    ops->buffer_free(b, x);
    take(b, y, out, &at, TL_COLS * 4);

    /* a padded 3×3 convolution of two 3-channel 8×8 F16 images into 4 channels */
    struct gan_conv2d c = {
        .n = 2, .c_in = 3, .h_in = 8, .w_in = 8, .c_out = 4, .kh = 3, .kw = 3,
        .stride_h = 1, .stride_w = 1, .pad_h = 1, .pad_w = 1, .dilation_h = 1,
        .dilation_w = 1, .h_out = 8, .w_out = 8, .dtype = GAN_F16,
    };
    x = put(b, in->conv_x, sizeof in->conv_x);
    gan_buffer *w = put(b, in->conv_w, sizeof in->conv_w);
    y = room(b, 2 * TL_CONV_OUT);
    struct gan_ref cx = { x, 0, GAN_F16 }, cw = { w, 0, GAN_F16 }, cy = { y, 0, GAN_F16 };
    ck_assert_int_eq(ops->conv2d_forward(b, &c, &cx, &cw, 0.0f, &cy), GAN_OK);
    ops->buffer_free(b, x);
    ops->buffer_free(b, w);
    take(b, y, out, &at, 2 * TL_CONV_OUT);
    ck_assert_uint_eq(at, TL_OUT);
}

/* Two instances in one process, one told vector=portable and one left at the widest
 * level: each keeps the level it was given (the second's create changes nothing of the
 * first's), and both give the same bits on the same inputs, called in turn. */
START_TEST(test_two_levels_one_process)
{
    static const char *const portable[] = { "threads=1", "vector=portable", NULL };
    static const char *const widest[] = { "threads=1", "vector=auto", NULL };
    struct test_host hp, hw;
    gan_backend *bp = NULL, *bw = NULL;
    test_host_init(&hp, portable);
    ck_assert_msg(ops->create(&hp.host, &bp) == GAN_OK, "create: %s", hp.last_error);
    test_host_init(&hw, widest);
    ck_assert_msg(ops->create(&hw.host, &bw) == GAN_OK, "create: %s", hw.last_error);
    expect_level(bp, "portable");
    expect_level(bw, widest_level());

    struct two_level_inputs *in = malloc(sizeof *in);
    ck_assert_ptr_nonnull(in);
    uint64_t state = 0x2b7e151628aed2a6ull;
    for (uint32_t i = 0; i < TL_HALVES; i++) {
        in->every_f16[i] = (uint16_t)i;
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        in->f32_bits[i] = (uint32_t)(state >> 32);
    }
    /* exponents up to 28 keep a + b below F16's largest finite value */
    for (size_t i = 0; i < TL_ROWS * TL_COLS; i++) {
        in->a[i] = random_f16(&state, 0, 28);
        in->b[i] = random_f16(&state, 0, 28);
    }
    for (size_t i = 0; i < sizeof in->conv_x / 2; i++)
        in->conv_x[i] = random_f16(&state, 12, 16);
    for (size_t i = 0; i < sizeof in->conv_w / 2; i++)
        in->conv_w[i] = random_f16(&state, 10, 15);

    unsigned char *out_p = malloc(TL_OUT), *out_w = malloc(TL_OUT);
    ck_assert(out_p && out_w);
    two_level_outputs(bp, in, out_p);
    two_level_outputs(bw, in, out_w);
    for (size_t i = 0; i < TL_OUT; i++)
        if (out_p[i] != out_w[i])
            ck_abort_msg("output byte %zu: %02x on the portable instance, %02x on the %s one",
                         i, out_p[i], out_w[i], widest_level());
    /* the levels are still each instance's own after both have computed */
    expect_level(bp, "portable");
    expect_level(bw, widest_level());

    free(out_p);
    free(out_w);
    free(in);
    ops->destroy(bp);
    ops->destroy(bw);
}
END_TEST

static Suite *module_suite(void)
{
    Suite *s = suite_create("backend_module");

    TCase *tc = tcase_create("descriptor");
    tcase_add_checked_fixture(tc, load_module, unload_module);
    tcase_add_test(tc, test_descriptor);
    tcase_add_test(tc, test_exports_only_descriptor);
    tcase_add_test(tc, test_required_slots);
    tcase_add_loop_test(tc, test_bad_threads_setting, 0, 2);
    tcase_add_test(tc, test_default_threads);
    tcase_add_test(tc, test_vector_setting);
    tcase_add_test(tc, test_two_levels_one_process);
    suite_add_tcase(s, tc);

    tc = tcase_create("slots");
    tcase_add_checked_fixture(tc, instance_setup, instance_teardown);
    tcase_add_test(tc, test_describe);
    tcase_add_test(tc, test_memory_slots);
    tcase_add_test(tc, test_gemm_slot);
    tcase_add_test(tc, test_elementwise_slots);
    tcase_add_test(tc, test_conv2d_slots);
    tcase_add_test(tc, test_cast_slot);
    tcase_add_test(tc, test_rng_slots);
    tcase_add_test(tc, test_adam_slot);
    tcase_add_test(tc, test_grad_stats_slot);
    tcase_add_test(tc, test_fp8_slots);
    tcase_add_test(tc, test_blas_threads_setting);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(module_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
