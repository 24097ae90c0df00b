/* SPDX-License-Identifier: MIT */
/* check_kept_blocks.c — activations kept in oneDNN's channel blocks between convolutions
 * (backends/cpu/kept_blocks.c). Two layers of a critic, forward and backward, run on a
 * backend that keeps the blocks and on one that moves them after every convolution:
 * every result downloaded must be the same bits, while the intermediate tensors must
 * really have stayed in blocks on the first (or the test would prove nothing). Then the
 * ways out of the blocks: an op with an NCHW operand, a product, a partial upload and a
 * copy, a cast and im2col see NCHW values; a write over the whole tensor forgets the
 * blocks. Every reduction to one value per channel, over one image and several, of fewer
 * pixels than a run and more, and a filter gradient cut into parts of the batch, are the
 * bits of moved blocks. FP32 on any x86-64 CPU with oneDNN, BF16 where the CPU has a BF16
 * dot product (else those parts are skipped, saying so); skipped (77) without oneDNN. */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/cpu_fixture.h"
#ifdef GAN_HAVE_ONEDNN
#include "../../backends/cpu/onednn.h"
#endif

static uint64_t rng_state = 0x2545f4914f6cdd1du;
static float next_value(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    /* in (-1, 1); a BF16 tensor takes its upper half */
    return (float)((int32_t)(rng_state >> 40) - (1 << 23)) * 0x1p-23f;
}

/* A backend that keeps blocks or not, its convolutions on oneDNN or, `automatic`, as
 * backend.gemm = "auto" sends them (an input gradient of one channel to im2col). */
static gan_backend *backend_routed(int keep, int automatic)
{
    const char *const settings[] = { "threads=2", automatic ? "gemm=auto" : "gemm=onednn",
                                     NULL };
    gan_backend *be = cpu_fixture_new(settings);
    ck_assert_int_eq(cpu_gemm_path_setting(be->host, &be->gemm_path), GAN_OK);
    ck_assert_int_eq(cpu_onednn_open(be), GAN_OK);
    be->keep_blocks = keep;
    return be;
}

static gan_backend *backend_keeping(int keep)
{
    return backend_routed(keep, 0);
}

static void backend_free(gan_backend *be)
{
    cpu_onednn_close(be);
    cpu_fixture_free(be);
}

/* A buffer of n elements of dt holding values[0 … n-1] (BF16: their upper halves; FP16:
 * rounded to it). */
static gan_buffer *tensor(gan_backend *be, enum gan_dtype dt, size_t n, const float *values)
{
    gan_buffer *buf = cpu_fixture_buffer(be, n, NULL);
    if (!values)
        return buf;
    if (dt == GAN_F32) {
        ck_assert_int_eq(cpu_upload(be, buf, 0, values, n * sizeof(float)), GAN_OK);
        return buf;
    }
    uint16_t *bits = malloc(n * sizeof *bits);
    for (size_t i = 0; i < n && dt == GAN_BF16; i++) {
        uint32_t u;
        memcpy(&u, &values[i], sizeof u);
        bits[i] = (uint16_t)(u >> 16);
    }
    if (dt == GAN_F16)
        cpu_convert(CPU_ISA_PORTABLE, values, GAN_F32, bits, GAN_F16, n);
    ck_assert_int_eq(cpu_upload(be, buf, 0, bits, n * sizeof *bits), GAN_OK);
    free(bits);
    return buf;
}

static float *random_values(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = next_value();
    return v;
}

static struct gan_ref ref(gan_buffer *b, enum gan_dtype dt)
{
    return cpu_fixture_ref(b, dt);
}

/* The first `bytes` of b, downloaded into memory the caller frees. */
static void *downloaded(gan_backend *be, gan_buffer *b, size_t bytes)
{
    void *p = malloc(bytes);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(cpu_download(be, p, b, 0, bytes), GAN_OK);
    return p;
}

/* Frees n buffers of be. */
static void free_buffers(gan_backend *be, gan_buffer *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cpu_buffer_free(be, b[i]);
}

/* An operand over a 4-D walk of `dims`: contiguous, or one value per channel (dim 1). */
static struct gan_operand operand(gan_buffer *b, enum gan_dtype dt, const int64_t *dims,
                                  int per_channel)
{
    struct gan_operand o;
    memset(&o, 0, sizeof o);
    o.buf = b;
    o.dtype = dt;
    if (per_channel) {
        o.stride[1] = 1;
        return o;
    }
    o.stride[3] = 1;
    o.stride[2] = dims[3];
    o.stride[1] = dims[2] * dims[3];
    o.stride[0] = dims[1] * dims[2] * dims[3];
    return o;
}

static struct gan_shape shape4(const int64_t *dims)
{
    struct gan_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = 4;
    memcpy(s.dim, dims, 4 * sizeof dims[0]);
    return s;
}

static struct gan_conv2d conv(int64_t n, int64_t c_in, int64_t hw_in, int64_t c_out,
                              int stride, enum gan_dtype dt)
{
    struct gan_conv2d c;
    memset(&c, 0, sizeof c);
    c.n = n;
    c.c_in = c_in;
    c.h_in = c.w_in = hw_in;
    c.c_out = c_out;
    c.kh = c.kw = 3;
    c.stride_h = c.stride_w = stride;
    c.pad_h = c.pad_w = 1;
    c.dilation_h = c.dilation_w = 1;
    c.h_out = c.w_out = (hw_in + 2 - 3) / stride + 1;
    c.dtype = dt;
    return c;
}

/* The results of the two layers' forward and backward, each downloaded. */
enum { R_Y1, R_A1, R_Y2, R_DA1, R_DZ1, R_DB1, R_DW1, R_DW2, R_DX, R_SUM, R_PRODUCT, R_MASKED,
       R_ACTIVATED, R_COUNT };
struct results {
    void *data[R_COUNT];
    size_t bytes[R_COUNT];
    int kept_a1, kept_dz1, kept_dx, plain_after_sum, plain_after_product;
};

static void keep_result(gan_backend *be, struct results *r, int which, gan_buffer *b,
                        size_t bytes)
{
    r->data[which] = downloaded(be, b, bytes);
    r->bytes[which] = bytes;
}

/* x [4, 16, 9, 9] → conv 3×3 stride 2 → y1 [4, 32, 5, 5] + bias → leaky ReLU → a1 →
 * conv 3×3 → y2 [4, 16, 5, 5]; then, from a given gradient of y2, the gradients of a1,
 * of the pre-activation z1, of the bias, of both filters and of x, as a critic's
 * backward makes them; then x's gradient plus x (an NCHW operand) and a1 times a matrix. */
static void run_layers(gan_backend *be, enum gan_dtype dt, struct results *r)
{
    const size_t es = gan_dtype_size(dt);
    struct gan_conv2d c1 = conv(4, 16, 9, 32, 2, dt), c2 = conv(4, 32, 5, 16, 1, dt);
    const int64_t d1[4] = { 4, 32, 5, 5 }, dx[4] = { 4, 16, 9, 9 };
    const size_t nx = 4 * 16 * 81, n1 = 4 * 32 * 25, n2 = 4 * 16 * 25;
    const size_t nw1 = 32 * 16 * 9, nw2 = 16 * 32 * 9;
    rng_state = 0x2545f4914f6cdd1du;
    float *vx = random_values(nx), *vw1 = random_values(nw1), *vw2 = random_values(nw2);
    float *vb = random_values(32), *vg = random_values(n2), *vm = random_values(800 * 3);
    gan_buffer *x = tensor(be, dt, nx, vx), *w1 = tensor(be, dt, nw1, vw1);
    gan_buffer *w2 = tensor(be, dt, nw2, vw2), *b1 = tensor(be, dt, 32, vb);
    gan_buffer *gy2 = tensor(be, dt, n2, vg), *m = tensor(be, dt, 800 * 3, vm);
    gan_buffer *y1 = tensor(be, dt, n1, NULL), *z1 = tensor(be, dt, n1, NULL);
    gan_buffer *a1 = tensor(be, dt, n1, NULL), *y2 = tensor(be, dt, n2, NULL);
    gan_buffer *da1 = tensor(be, dt, n1, NULL), *mask = tensor(be, dt, n1, NULL);
    gan_buffer *dz1 = tensor(be, dt, n1, NULL), *db1 = tensor(be, dt, 32, NULL);
    gan_buffer *dw1 = tensor(be, dt, nw1, NULL), *dw2 = tensor(be, dt, nw2, NULL);
    gan_buffer *gx = tensor(be, dt, nx, NULL), *sum = tensor(be, dt, nx, NULL);
    gan_buffer *prod = tensor(be, dt, 4 * 3, NULL);
    struct gan_ref rx = ref(x, dt), rw1 = ref(w1, dt), rw2 = ref(w2, dt), ry1 = ref(y1, dt);
    struct gan_ref ra1 = ref(a1, dt), ry2 = ref(y2, dt), rgy2 = ref(gy2, dt);
    struct gan_ref rda1 = ref(da1, dt), rdz1 = ref(dz1, dt), rdw1 = ref(dw1, dt);
    struct gan_ref rdw2 = ref(dw2, dt), rgx = ref(gx, dt);
    const struct gan_shape s1 = shape4(d1), sx = shape4(dx);

    ck_assert_int_eq(cpu_conv2d_forward(be, &c1, &rx, &rw1, 0.0f, &ry1), GAN_OK);
    keep_result(be, r, R_Y1, y1, n1 * es);
    ck_assert_int_eq(cpu_conv2d_forward(be, &c1, &rx, &rw1, 0.0f, &ry1), GAN_OK);
    struct gan_operand oy1 = operand(y1, dt, d1, 0), ob = operand(b1, dt, d1, 1);
    struct gan_operand oz1 = operand(z1, dt, d1, 0), oa1 = operand(a1, dt, d1, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &s1, &oy1, &ob, &oz1), GAN_OK);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_LEAKY_RELU, 0.2f, &s1, &oz1, &oa1), GAN_OK);
    r->kept_a1 = a1->kept.block != 0;
    /* the bias and the activation in one pass (binary_alpha's ADD_LEAKY): a1's bits, kept
     * where a1 is */
    gan_buffer *act = tensor(be, dt, n1, NULL);
    struct gan_operand oact = operand(act, dt, d1, 0);
    ck_assert_int_eq(cpu_binary_alpha(be, GAN_BINARY_ADD_LEAKY, 0.2f, &s1, &oy1, &ob, &oact),
                     GAN_OK);
    ck_assert_int_eq(act->kept.block != 0, r->kept_a1);
    ck_assert_int_eq(cpu_conv2d_forward(be, &c2, &ra1, &rw2, 0.0f, &ry2), GAN_OK);

    ck_assert_int_eq(cpu_conv2d_backward_data(be, &c2, &rgy2, &rw2, 0.0f, &rda1), GAN_OK);
    ck_assert_int_eq(cpu_conv2d_backward_filter(be, &c2, &ra1, &rgy2, 0.0f, &rdw2), GAN_OK);
    struct gan_operand omask = operand(mask, dt, d1, 0), oda1 = operand(da1, dt, d1, 0);
    struct gan_operand odz1 = operand(dz1, dt, d1, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_LEAKY_STEP, 0.2f, &s1, &oz1, &omask), GAN_OK);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MUL, &s1, &oda1, &omask, &odz1), GAN_OK);
    r->kept_dz1 = dz1->kept.block != 0;
    /* the same product in one pass (binary_alpha's MASK_LEAKY, with the slope as
     * LEAKY_STEP stored it), into the factor's buffer: dz1's bits, kept where dz1 is */
    float slope = 0.2f;
    if (dt != GAN_F32) {
        uint16_t h;
        cpu_convert(CPU_ISA_PORTABLE, &slope, GAN_F32, &h, dt, 1);
        cpu_convert(CPU_ISA_PORTABLE, &h, dt, &slope, GAN_F32, 1);
    }
    ck_assert_int_eq(cpu_binary_alpha(be, GAN_BINARY_MASK_LEAKY, slope, &s1, &oda1, &oz1, &omask),
                     GAN_OK);
    ck_assert_int_eq(mask->kept.block != 0, r->kept_dz1);
    struct gan_operand odb = operand(db1, dt, d1, 1);
    odb.stride[1] = 1;
    ck_assert_int_eq(cpu_reduce(be, GAN_REDUCE_SUM, &s1, &odz1, 0xdu, &odb), GAN_OK);
    ck_assert_int_eq(cpu_conv2d_backward_filter(be, &c1, &rx, &rdz1, 0.0f, &rdw1), GAN_OK);
    ck_assert_int_eq(cpu_conv2d_backward_data(be, &c1, &rdz1, &rw1, 0.0f, &rgx), GAN_OK);
    r->kept_dx = gx->kept.block != 0;

    /* out of the blocks: an NCHW operand, then a product reading a1 as [4, 800] */
    struct gan_operand ogx = operand(gx, dt, dx, 0), ox = operand(x, dt, dx, 0);
    struct gan_operand osum = operand(sum, dt, dx, 0);
    ck_assert_int_eq(cpu_binary(be, GAN_BINARY_ADD, &sx, &ogx, &ox, &osum), GAN_OK);
    r->plain_after_sum = gx->kept.block == 0 && sum->kept.block == 0;
    struct gan_gemm g = {
        .m = 4, .n = 3, .k = 800, .alpha = 1.0f, .beta = 0.0f,
        .a = ref(a1, dt), .b = ref(m, dt), .c = ref(prod, dt),
        .lda = 800, .ldb = 3, .ldc = 3, .batch = 1,
    };
    ck_assert_int_eq(cpu_gemm(be, &g), GAN_OK);
    r->plain_after_product = a1->kept.block == 0;

    keep_result(be, r, R_A1, a1, n1 * es);
    keep_result(be, r, R_Y2, y2, n2 * es);
    keep_result(be, r, R_DA1, da1, n1 * es);
    keep_result(be, r, R_DZ1, dz1, n1 * es);
    keep_result(be, r, R_DB1, db1, 32 * es);
    keep_result(be, r, R_DW1, dw1, nw1 * es);
    keep_result(be, r, R_DW2, dw2, nw2 * es);
    keep_result(be, r, R_DX, gx, nx * es);
    keep_result(be, r, R_SUM, sum, nx * es);
    keep_result(be, r, R_PRODUCT, prod, 12 * es);
    keep_result(be, r, R_MASKED, mask, n1 * es);
    ck_assert_msg(memcmp(r->data[R_MASKED], r->data[R_DZ1], n1 * es) == 0,
                  "%s: MASK_LEAKY differs from LEAKY_STEP then MUL", gan_dtype_name(dt));
    keep_result(be, r, R_ACTIVATED, act, n1 * es);
    ck_assert_msg(memcmp(r->data[R_ACTIVATED], r->data[R_A1], n1 * es) == 0,
                  "%s: ADD_LEAKY differs from ADD then LEAKY_RELU", gan_dtype_name(dt));
    gan_buffer *const all[] = { x, w1, w2, b1, gy2, m, y1, z1, a1, y2, da1, mask, dz1, db1, dw1,
                          dw2, gx, sum, prod, act };
    free_buffers(be, all, sizeof all / sizeof all[0]);
    free(vx);
    free(vw1);
    free(vw2);
    free(vb);
    free(vg);
    free(vm);
}

static void free_results(struct results *r)
{
    for (int i = 0; i < R_COUNT; i++)
        free(r->data[i]);
}

/* FP32 and BF16 (on oneDNN's BF16 kernels) keep blocks of their own type for oneDNN;
 * FP16 (and BF16 staged) keep 16-bit blocks that a staged convolution widens. */
static const enum gan_dtype dtypes[] = { GAN_F32, GAN_BF16, GAN_F16 };

START_TEST(test_layers_same_bits)
{
    const enum gan_dtype dt = dtypes[_i];
    static const char *const names[R_COUNT] = { "y1", "a1", "y2", "da1", "dz1", "db1",
                                                "dw1", "dw2", "dx", "dx + x", "a1 · m",
                                                "da1 · leaky'(z1)", "leaky(y1 + b1)" };
    gan_backend *keeping = backend_keeping(1), *moving = backend_keeping(0);
    struct results kept, moved;
    memset(&kept, 0, sizeof kept);
    memset(&moved, 0, sizeof moved);
    run_layers(keeping, dt, &kept);
    run_layers(moving, dt, &moved);
    ck_assert_msg(kept.kept_a1 && kept.kept_dz1 && kept.kept_dx,
                  "activations not kept in blocks: a1 %d, dz1 %d, dx %d", kept.kept_a1,
                  kept.kept_dz1, kept.kept_dx);
    ck_assert_msg(!moved.kept_a1 && !moved.kept_dz1 && !moved.kept_dx,
                  "blocks kept under channel_blocks = moved");
    ck_assert_msg(kept.plain_after_sum && kept.plain_after_product,
                  "an op with an NCHW operand or a product left blocks: %d %d",
                  kept.plain_after_sum, kept.plain_after_product);
    for (int i = 0; i < R_COUNT; i++)
        ck_assert_msg(memcmp(kept.data[i], moved.data[i], kept.bytes[i]) == 0,
                      "%s %s: kept blocks give other bits than moved ones", gan_dtype_name(dt),
                      names[i]);
    free_results(&kept);
    free_results(&moved);
    backend_free(keeping);
    backend_free(moving);
}
END_TEST

/* A tensor left in blocks by a convolution, its NCHW values read back first. */
static gan_buffer *kept_output(gan_backend *be, float *nchw)
{
    struct gan_conv2d c = conv(2, 16, 6, 16, 1, GAN_F32);
    const size_t nx = 2 * 16 * 36, nw = 16 * 16 * 9;
    float *vx = random_values(nx), *vw = random_values(nw);
    gan_buffer *x = tensor(be, GAN_F32, nx, vx), *w = tensor(be, GAN_F32, nw, vw);
    gan_buffer *y = tensor(be, GAN_F32, nx, NULL);
    struct gan_ref rx = ref(x, GAN_F32), rw = ref(w, GAN_F32), ry = ref(y, GAN_F32);
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
    ck_assert_int_eq(cpu_download(be, nchw, y, 0, nx * sizeof(float)), GAN_OK);
    ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
    ck_assert_msg(y->kept.block != 0, "a convolution's output was not kept");
    cpu_buffer_free(be, x);
    cpu_buffer_free(be, w);
    free(vx);
    free(vw);
    return y;
}

START_TEST(test_ways_out)
{
    gan_backend *be = backend_keeping(1);
    const size_t n = 2 * 16 * 36;
    float *nchw = malloc(n * sizeof *nchw), *got = malloc(n * sizeof *got);
    float *fresh = random_values(n);

    /* a partial upload: the rest keeps its NCHW values */
    gan_buffer *y = kept_output(be, nchw);
    ck_assert_int_eq(cpu_upload(be, y, 8 * sizeof(float), fresh, 16 * sizeof(float)), GAN_OK);
    ck_assert_int_eq(y->kept.block, 0);
    ck_assert_int_eq(cpu_download(be, got, y, 0, n * sizeof(float)), GAN_OK);
    ck_assert_int_eq(memcmp(got, nchw, 8 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(got + 8, fresh, 16 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(got + 24, nchw + 24, (n - 24) * sizeof(float)), 0);
    cpu_buffer_free(be, y);

    /* a whole upload forgets the blocks: what is read back is what was written */
    y = kept_output(be, nchw);
    ck_assert_int_eq(cpu_upload(be, y, 0, fresh, n * sizeof(float)), GAN_OK);
    ck_assert_int_eq(y->kept.block, 0);
    ck_assert_int_eq(cpu_download(be, got, y, 0, n * sizeof(float)), GAN_OK);
    ck_assert_int_eq(memcmp(got, fresh, n * sizeof(float)), 0);
    cpu_buffer_free(be, y);

    /* a copy of the whole of a kept tensor is NCHW, and the tensor stays kept */
    y = kept_output(be, nchw);
    gan_buffer *other = tensor(be, GAN_F32, n + 8, NULL);
    ck_assert_int_eq(cpu_copy(be, other, 8 * sizeof(float), y, 0, n * sizeof(float)), GAN_OK);
    ck_assert_msg(y->kept.block != 0, "a whole copy made its source NCHW");
    ck_assert_int_eq(cpu_download(be, got, other, 8 * sizeof(float), n * sizeof(float)),
                     GAN_OK);
    ck_assert_int_eq(memcmp(got, nchw, n * sizeof(float)), 0);
    /* a copy of part of it copies its NCHW values */
    ck_assert_int_eq(cpu_copy(be, other, 0, y, 4 * sizeof(float), 100 * sizeof(float)), GAN_OK);
    ck_assert_int_eq(cpu_download(be, got, other, 0, 100 * sizeof(float)), GAN_OK);
    ck_assert_int_eq(memcmp(got, nchw + 4, 100 * sizeof(float)), 0);
    cpu_buffer_free(be, other);

    /* a cast reads its NCHW values */
    gan_buffer *cast = tensor(be, GAN_F32, n, NULL);
    struct gan_ref ry = ref(y, GAN_F32), rc = ref(cast, GAN_F32);
    ck_assert_int_eq(cpu_cast(be, n, &ry, &rc, NULL), GAN_OK);
    ck_assert_int_eq(cpu_download(be, got, cast, 0, n * sizeof(float)), GAN_OK);
    ck_assert_int_eq(memcmp(got, nchw, n * sizeof(float)), 0);
    cpu_buffer_free(be, cast);
    cpu_buffer_free(be, y);

    /* random numbers over the whole of it forget the blocks */
    y = kept_output(be, nchw);
    ry = ref(y, GAN_F32);
    ck_assert_int_eq(cpu_rng_uniform(be, n, 7, 0, -1.0f, 1.0f, &ry), GAN_OK);
    ck_assert_int_eq(y->kept.block, 0);
    cpu_buffer_free(be, y);

    /* a whole element-wise write of another shape forgets them too */
    y = kept_output(be, nchw);
    const int64_t flat[4] = { 1, 1, 1, (int64_t)n };
    struct gan_shape s = shape4(flat);
    gan_buffer *src = tensor(be, GAN_F32, n, fresh);
    struct gan_operand os = operand(src, GAN_F32, flat, 0), oy = operand(y, GAN_F32, flat, 0);
    ck_assert_int_eq(cpu_unary(be, GAN_UNARY_NEG, 0.0f, &s, &os, &oy), GAN_OK);
    ck_assert_int_eq(y->kept.block, 0);
    ck_assert_int_eq(cpu_download(be, got, y, 0, n * sizeof(float)), GAN_OK);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == -fresh[i], "element %zu: %g, not %g", i, (double)got[i],
                      (double)-fresh[i]);
    cpu_buffer_free(be, src);
    cpu_buffer_free(be, y);
    free(nchw);
    free(got);
    free(fresh);
    backend_free(be);
}
END_TEST

/* Under backend.gemm = "auto", the input gradient of a one-channel image goes to im2col,
 * which reads its kept input through an NCHW copy, or, where its channels are one whole
 * block (8 on AVX2, 16 on AVX-512), in place in FP32 and widened in one pass in 16 bits:
 * the input stays kept for the filter gradient after it, and both gradients are the bits
 * of moved blocks. 40 images of 36 pixels make two groups of im2col's images. Returns
 * how the kept run read its input: 2 in place (one block), 1 through the copy, 0 not
 * kept (8 channels on AVX-512, which oneDNN writes NCHW). */
static int im2col_reads(enum gan_dtype dt, int64_t c_out)
{
    const size_t es = gan_dtype_size(dt);
    struct gan_conv2d c = conv(40, 1, 12, c_out, 2, dt);
    const size_t nx = 40 * 144, nw = (size_t)c_out * 9, ny = 40 * (size_t)c_out * 36;
    void *got[2][2];
    int how = 0;
    for (int keep = 0; keep < 2; keep++) {
        gan_backend *be = backend_routed(keep, 1);
        rng_state = 0x9e3779b97f4a7c15u;
        float *vx = random_values(nx), *vw = random_values(nw);
        gan_buffer *x = tensor(be, dt, nx, vx), *w = tensor(be, dt, nw, vw);
        gan_buffer *y = tensor(be, dt, ny, NULL), *dx = tensor(be, dt, nx, NULL);
        gan_buffer *dw = tensor(be, dt, nw, NULL);
        struct gan_ref rx = ref(x, dt), rw = ref(w, dt), ry = ref(y, dt);
        struct gan_ref rdx = ref(dx, dt), rdw = ref(dw, dt);
        ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
        /* oneDNN leaves 16 and 32 channels in blocks on every CPU, 8 on AVX2 only */
        const int kept = y->kept.block != 0;
        ck_assert(keep || !kept);
        ck_assert(!keep || kept || c_out < 16);
        if (kept)
            how = y->kept.block == c_out ? 2 : 1;
        ck_assert_int_eq(cpu_conv2d_backward_data(be, &c, &ry, &rw, 0.0f, &rdx), GAN_OK);
        ck_assert_msg(y->kept.block != 0 || !kept, "im2col made its kept input NCHW");
        ck_assert_int_eq(cpu_conv2d_backward_filter(be, &c, &rx, &ry, 0.0f, &rdw), GAN_OK);
        got[keep][0] = downloaded(be, dx, nx * es);
        got[keep][1] = downloaded(be, dw, nw * es);
        gan_buffer *const all[] = { x, w, y, dx, dw };
        free_buffers(be, all, sizeof all / sizeof all[0]);
        free(vx);
        free(vw);
        backend_free(be);
    }
    ck_assert_msg(memcmp(got[0][0], got[1][0], nx * es) == 0,
                  "%s, %lld channels: the image gradient through im2col differs with kept "
                  "blocks", gan_dtype_name(dt), (long long)c_out);
    ck_assert_msg(memcmp(got[0][1], got[1][1], nw * es) == 0,
                  "%s, %lld channels: the filter gradient differs with kept blocks",
                  gan_dtype_name(dt), (long long)c_out);
    for (int i = 0; i < 2; i++) {
        free(got[i][0]);
        free(got[i][1]);
    }
    return how;
}

/* 8, 16 and 32 channels, in FP32, BF16 and FP16: on either CPU one of them is one block
 * and another more than one, so both ways are taken. */
START_TEST(test_im2col_reads_kept)
{
    const enum gan_dtype dt = dtypes[_i];
    int ways = 0;
    for (int64_t c_out = 8; c_out <= 32; c_out *= 2)
        ways |= 1 << im2col_reads(dt, c_out);
    ck_assert_msg((ways & 6) == 6, "%s: im2col read kept blocks %s", gan_dtype_name(dt),
                  ways & 4 ? "only in place" : "only through copies");
}
END_TEST

/* Every reduction op to one value per channel of a kept tensor: n = 1 with 400 pixels
 * (two runs of a channel's pixels), and n = 3 with 25, in FP32 and BF16. */
static const enum gan_reduce_op reduce_ops[] = {
    GAN_REDUCE_SUM, GAN_REDUCE_MEAN, GAN_REDUCE_MAX, GAN_REDUCE_MIN, GAN_REDUCE_SUM_SQUARES,
    GAN_REDUCE_ABS_MAX,
};

START_TEST(test_reduce_by_channel)
{
    const enum gan_dtype dt = dtypes[_i / 2];
    const int64_t n = _i % 2 ? 3 : 1, hw = _i % 2 ? 5 : 20;
    const size_t es = gan_dtype_size(dt), nx = (size_t)(n * 16 * hw * hw), nw = 16 * 16 * 9;
    struct gan_conv2d c = conv(n, 16, hw, 16, 1, dt);
    const int64_t dims[4] = { n, 16, hw, hw };
    const struct gan_shape s = shape4(dims);
    unsigned char *got[2][6];
    for (int keep = 0; keep < 2; keep++) {
        gan_backend *be = backend_keeping(keep);
        rng_state = 0x51ed270b27f2b8f1u;
        float *vx = random_values(nx), *vw = random_values(nw);
        gan_buffer *x = tensor(be, dt, nx, vx), *w = tensor(be, dt, nw, vw);
        gan_buffer *y = tensor(be, dt, nx, NULL), *out = tensor(be, dt, 16, NULL);
        struct gan_ref rx = ref(x, dt), rw = ref(w, dt), ry = ref(y, dt);
        ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
        ck_assert_int_eq(y->kept.block != 0, keep);
        struct gan_operand oy = operand(y, dt, dims, 0), oo = operand(out, dt, dims, 1);
        for (int k = 0; k < 6; k++) {
            ck_assert_int_eq(cpu_reduce(be, reduce_ops[k], &s, &oy, 0xdu, &oo), GAN_OK);
            ck_assert_int_eq(y->kept.block != 0, keep);
            got[keep][k] = downloaded(be, out, 16 * es);
        }
        gan_buffer *const all[] = { x, w, y, out };
        free_buffers(be, all, sizeof all / sizeof all[0]);
        free(vx);
        free(vw);
        backend_free(be);
    }
    for (int k = 0; k < 6; k++) {
        ck_assert_msg(memcmp(got[0][k], got[1][k], 16 * es) == 0,
                      "%s, %lld images of %lld pixels, reduction %d: other bits in blocks",
                      gan_dtype_name(dt), (long long)n, (long long)(hw * hw), (int)k);
        free(got[0][k]);
        free(got[1][k]);
    }
}
END_TEST

/* The dcgan critic's middle layer at batch 64, whose filter gradient is cut into parts of
 * the batch, every part reading its images of the kept input and gradient where they
 * lie; and an input gradient added (beta = 1) to one already there. */
START_TEST(test_parts_and_sums)
{
    const enum gan_dtype dt = dtypes[_i];
    struct gan_conv2d c0 = conv(64, 16, 14, 16, 1, dt), c = conv(64, 16, 14, 32, 2, dt);
    c.kh = c.kw = 5;
    c.pad_h = c.pad_w = 2;
    c.h_out = c.w_out = 7;
#ifdef GAN_HAVE_ONEDNN
    ck_assert_int_gt(cpu_onednn_filter_parts(&c), 1);
#endif
    const size_t es = gan_dtype_size(dt), nx = 64 * 16 * 196, ny = 64 * 32 * 49;
    const size_t nw0 = 16 * 16 * 9, nw = 32 * 16 * 25;
    unsigned char *got[2][2];
    for (int keep = 0; keep < 2; keep++) {
        gan_backend *be = backend_keeping(keep);
        rng_state = 0x6a09e667f3bcc908u;
        float *v0 = random_values(nx), *vw0 = random_values(nw0), *vw = random_values(nw);
        float *vdx = random_values(nx);
        gan_buffer *x0 = tensor(be, dt, nx, v0), *w0 = tensor(be, dt, nw0, vw0);
        gan_buffer *w = tensor(be, dt, nw, vw), *x = tensor(be, dt, nx, NULL);
        gan_buffer *y = tensor(be, dt, ny, NULL), *dw = tensor(be, dt, nw, NULL);
        gan_buffer *dx = tensor(be, dt, nx, vdx);
        struct gan_ref r0 = ref(x0, dt), rw0 = ref(w0, dt), rw = ref(w, dt), rx = ref(x, dt);
        struct gan_ref ry = ref(y, dt), rdw = ref(dw, dt), rdx = ref(dx, dt);
        ck_assert_int_eq(cpu_conv2d_forward(be, &c0, &r0, &rw0, 0.0f, &rx), GAN_OK);
        ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
        ck_assert_int_eq((x->kept.block != 0) + (y->kept.block != 0), 2 * keep);
        ck_assert_int_eq(cpu_conv2d_backward_filter(be, &c, &rx, &ry, 0.0f, &rdw), GAN_OK);
        ck_assert_int_eq(cpu_conv2d_backward_data(be, &c, &ry, &rw, 1.0f, &rdx), GAN_OK);
        got[keep][0] = downloaded(be, dw, nw * es);
        got[keep][1] = downloaded(be, dx, nx * es);
        gan_buffer *const all[] = { x0, w0, w, x, y, dw, dx };
        free_buffers(be, all, sizeof all / sizeof all[0]);
        free(v0);
        free(vw0);
        free(vw);
        free(vdx);
        backend_free(be);
    }
    ck_assert_msg(memcmp(got[0][0], got[1][0], nw * es) == 0,
                  "%s: the filter gradient in parts differs with kept blocks", gan_dtype_name(dt));
    ck_assert_msg(memcmp(got[0][1], got[1][1], nx * es) == 0,
                  "%s: the input gradient added to differs with kept blocks", gan_dtype_name(dt));
    for (int i = 0; i < 2; i++) {
        free(got[i][0]);
        free(got[i][1]);
    }
}
END_TEST

/* A kept FP16 tensor read by two convolutions, written in place on its blocks (y · 2,
 * then y · 2^-20 into subnormals, then y · inf into infinities and NaNs), read again:
 * every result is the bits of moved blocks. */
START_TEST(test_written_in_place)
{
    struct gan_conv2d c = conv(4, 16, 6, 16, 1, GAN_F16);
    const size_t n = 4 * 16 * 36, nw = 16 * 16 * 9;
    const int64_t dims[4] = { 4, 16, 6, 6 }, one[4] = { 1, 1, 1, 1 };
    const struct gan_shape s = shape4(dims);
    const float scales[3] = { 2.0f, 0x1p-20f, INFINITY };
    enum { READS = 5 }; /* z before and after each write, then y itself */
    unsigned char *got[2][READS];
    for (int keep = 0; keep < 2; keep++) {
        gan_backend *be = backend_keeping(keep);
        rng_state = 0xbb67ae8584caa73bu;
        float *vx = random_values(n), *vw = random_values(nw);
        gan_buffer *x = tensor(be, GAN_F16, n, vx), *w = tensor(be, GAN_F16, nw, vw);
        gan_buffer *y = tensor(be, GAN_F16, n, NULL), *z = tensor(be, GAN_F16, n, NULL);
        gan_buffer *k = tensor(be, GAN_F16, 1, NULL);
        struct gan_ref rx = ref(x, GAN_F16), rw = ref(w, GAN_F16), ry = ref(y, GAN_F16);
        struct gan_ref rz = ref(z, GAN_F16);
        struct gan_operand oy = operand(y, GAN_F16, dims, 0), ok = operand(k, GAN_F16, one, 1);
        ok.stride[1] = 0;
        ck_assert_int_eq(cpu_conv2d_forward(be, &c, &rx, &rw, 0.0f, &ry), GAN_OK);
        for (int r = 0; r < READS - 1; r++) {
            if (r > 0) {
                cpu_convert(CPU_ISA_PORTABLE, &scales[r - 1], GAN_F32, k->data, GAN_F16, 1);
                ck_assert_int_eq(cpu_binary(be, GAN_BINARY_MUL, &s, &oy, &ok, &oy), GAN_OK);
                ck_assert_int_eq(y->kept.block != 0, keep);
            }
            ck_assert_int_eq(cpu_conv2d_forward(be, &c, &ry, &rw, 0.0f, &rz), GAN_OK);
            got[keep][r] = downloaded(be, z, n * 2);
        }
        got[keep][READS - 1] = downloaded(be, y, n * 2);
        gan_buffer *const all[] = { x, w, y, z, k };
        free_buffers(be, all, sizeof all / sizeof all[0]);
        free(vx);
        free(vw);
        backend_free(be);
    }
    for (int r = 0; r < READS; r++)
        ck_assert_msg(memcmp(got[0][r], got[1][r], n * 2) == 0,
                      "read %d of a kept FP16 tensor written in place: other bits", r);
    ck_assert_msg(memcmp(got[1][0], got[1][1], n * 2) != 0, "the write in place changed nothing");
    /* the last write left infinities, NaNs and subnormals' products in y */
    int special = 0;
    for (size_t i = 0; i < n; i++)
        special |= (((const uint16_t *)(const void *)got[1][READS - 1])[i] & 0x7c00u) == 0x7c00u;
    ck_assert_msg(special, "no infinity or NaN reached the kept tensor");
    for (int r = 0; r < READS; r++) {
        free(got[0][r]);
        free(got[1][r]);
    }
}
END_TEST

START_TEST(test_setting)
{
    const char *const bad[] = { "channel_blocks=sideways", NULL };
    gan_backend *be = cpu_fixture_new(bad);
    int keep = -1;
    ck_assert_int_eq(cpu_kept_setting(be->host, &keep), GAN_ERR_CONFIG);
    cpu_fixture_free(be);
    const char *const moved[] = { "channel_blocks=moved", NULL };
    be = cpu_fixture_new(moved);
    ck_assert_int_eq(cpu_kept_setting(be->host, &keep), GAN_OK);
    ck_assert_int_eq(keep, 0);
    cpu_fixture_free(be);
    be = cpu_fixture_new(NULL);
    ck_assert_int_eq(cpu_kept_setting(be->host, &keep), GAN_OK);
    ck_assert_int_eq(keep, 1);
    cpu_fixture_free(be);
}
END_TEST

int main(void)
{
    const char *skip = cpu_fixture_onednn_skip();
    if (skip) {
        printf("SKIP: %s\n", skip);
        return 77;
    }
    if (!cpu_has_bf16_dot())
        printf("note: this CPU has no BF16 dot product (AVX512-BF16 or AMX-BF16): BF16 "
               "convolutions are staged in FP32 here, as FP16's are\n");
    Suite *s = suite_create("kept_blocks");
    TCase *tc = tcase_create("kept_blocks");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_layers_same_bits, 0, 3);
    tcase_add_test(tc, test_ways_out);
    tcase_add_loop_test(tc, test_im2col_reads_kept, 0, 3);
    tcase_add_loop_test(tc, test_reduce_by_channel, 0, 6);
    tcase_add_loop_test(tc, test_parts_and_sums, 0, 3);
    tcase_add_test(tc, test_written_in_place);
    tcase_add_test(tc, test_setting);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
