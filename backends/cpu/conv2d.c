/* SPDX-License-Identifier: MIT */
/* conv2d.c — the CPU backend's 2-D convolution: forward, backward-data and
 * backward-filter, each as im2col (or col2im) around one BLAS sgemm per group of
 * images; the images' padding, widening from 16 bits, gathering and scattering are split
 * across the instance's threads (thread_pool.c), with the same bits at any count. Where
 * the instance has oneDNN, every dtype goes to oneDNN's convolutions instead
 * (onednn_conv.c; FP16 on its FP32 primitives); this path is backend.gemm = "openblas",
 * a build without oneDNN, and any shape oneDNN refuses. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include "../common/conv2d_checks.h"

/* CBLAS's enum values, passed as integers (see cpu_backend.h). */
enum { NO_TRANS = 111, TRANS = 112 };

/* The sizes every kernel derives from a descriptor. Per image: the input has
 * `in_elems` values (c_in × h_in × w_in), the output `out_elems` (c_out × P); the
 * column matrix is K × P with K = c_in·kh·kw rows (one per filter tap) and
 * P = h_out·w_out columns (one per output pixel). Columns are gathered from a copy
 * of the image with its zero padding written out, hp × wp per channel, so that no
 * inner loop tests bounds. */
struct conv_dims {
    size_t k, p;
    size_t in_elems, out_elems, w_elems;
    size_t x_all, y_all;  /* n·in_elems, n·out_elems */
    size_t hp, wp, padded_elems;  /* h_in + 2·pad_h, w_in + 2·pad_w, c_in·hp·wp */
    int pointwise;    /* 1×1, stride 1, no padding: the column matrix is the image itself */
};

/* Checks the descriptor and beta, and fills the sizes the kernels use. */
static gan_status check_desc(gan_backend *be, const char *op, const struct gan_conv2d *c,
                             float beta, struct conv_dims *d)
{
    gan_status st = gan_conv2d_check_desc(be->host, op, "this backend supports", c, beta);
    if (st != GAN_OK)
        return st;

    struct gan_conv2d_sizes z;
    size_t col_elems, hw_pad;
    d->hp = (size_t)(c->h_in + 2 * c->pad_h);
    d->wp = (size_t)(c->w_in + 2 * c->pad_w);
    int ok = gan_conv2d_sizes(c, &z)
          && gan_mul_fits(z.k, z.hw_out, &col_elems)
          && gan_mul_fits(d->hp, d->wp, &hw_pad)
          && gan_mul_fits((size_t)c->c_in, hw_pad, &d->padded_elems);
    d->in_elems = z.in_elems;
    d->out_elems = z.out_elems;
    d->k = z.k;
    d->w_elems = z.w_elems;
    d->x_all = z.x_all;
    d->y_all = z.y_all;
    size_t hw_out = z.hw_out;
    /* The column gather indexes a padded channel with 32-bit offsets. */
    if (!ok || d->k > INT_MAX || hw_out > INT_MAX || hw_pad > INT32_MAX)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "%s: the tensors of this convolution are too large to index "
                              "(c_in·kh·kw, h_out·w_out and the padded h_in·w_in must each "
                              "fit in an int)", op);
    d->p = hw_out;
    d->pointwise = c->kh == 1 && c->kw == 1 && c->stride_h == 1 && c->stride_w == 1
                && c->pad_h == 0 && c->pad_w == 0;
    if (!be->blas.sgemm)
        return be->host->fail(be->host->ctx, GAN_ERR_INTERNAL,
                              "%s: the backend has no sgemm; it was created without its BLAS",
                              op);
    return GAN_OK;
}

/* Carves arrays out of the backend's scratch, each 64-byte aligned. `bytes` and
 * `outs` have `parts` entries; an entry of 0 bytes gets NULL. */
static gan_status scratch_parts(gan_backend *be, const char *op, size_t parts,
                                const size_t *bytes, void **outs)
{
    size_t total = 0;
    for (size_t i = 0; i < parts; i++) {
        if (bytes[i] > SIZE_MAX - 64 - total)
            return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                                  "%s: the scratch space this convolution needs does not fit "
                                  "in memory; use a smaller batch or image", op);
        total += (bytes[i] + 63) & ~(size_t)63;
    }
    void *base = NULL;
    gan_status st = cpu_scratch(be, total ? total : 64, &base);
    if (st != GAN_OK)
        return st;
    unsigned char *p = base;
    for (size_t i = 0; i < parts; i++) {
        outs[i] = bytes[i] ? p : NULL;
        p += (bytes[i] + 63) & ~(size_t)63;
    }
    return GAN_OK;
}

/* 16-bit tensors are staged through FP32: these convert n elements each way, with the
 * converters of level `isa` (the calling instance's, as in every helper below). */
static void load_f32(enum cpu_isa isa, float *dst, const void *src, enum gan_dtype dtype,
                     size_t n)
{
    cpu_convert(isa, src, dtype, dst, GAN_F32, n);
}

static void store_from_f32(enum cpu_isa isa, void *dst, enum gan_dtype dtype, const float *src,
                           size_t n)
{
    cpu_convert(isa, src, GAN_F32, dst, dtype, n);
}

/* Elements at .. at + n − 1 of a 16-bit tensor t = src, or t + src when `add`, rounded
 * once; in blocks, so that both directions go through the block converters. */
static void store_run_16(enum cpu_isa isa, unsigned char *t, enum gan_dtype dtype, size_t at,
                         const float *src, size_t n, int add)
{
    enum { BLOCK = 256 };
    float sum[BLOCK];
    const size_t es = gan_dtype_size(dtype);
    for (size_t s = 0; s < n; s += BLOCK) {
        size_t m = n - s < BLOCK ? n - s : BLOCK;
        const float *v = src + s;
        if (add) {
            load_f32(isa, sum, t + (at + s) * es, dtype, m);
            for (size_t q = 0; q < m; q++)
                sum[q] = v[q] + sum[q];
            v = sum;
        }
        store_from_f32(isa, t + (at + s) * es, dtype, v, m);
    }
}

/* Images are processed in groups: the column matrices of g images side by side make
 * one GEMM with g·P columns. With P = 49 (a 7×7 map, as in a 28×28 DCGAN) a GEMM per
 * image runs at about 100 GFLOP/s on two Skylake-X cores and one over 16 images at
 * about 240: small P starves BLAS. A group aims at GROUP_COLUMNS columns, within
 * GROUP_SCRATCH bytes of column matrix, and the batch is split into equal groups. */
#define GROUP_COLUMNS ((size_t)1024)
#define GROUP_SCRATCH ((size_t)32 << 20)

static size_t group_size(const struct gan_conv2d *c, const struct conv_dims *d)
{
    size_t n = (size_t)c->n;
    size_t g = (GROUP_COLUMNS + d->p - 1) / d->p;
    size_t fit = GROUP_SCRATCH / sizeof(float) / d->k / d->p;
    if (g > fit)
        g = fit;
    if (g > n)
        g = n;
    if (g < 1)
        g = 1;
    size_t groups = (n + g - 1) / g;
    return (n + groups - 1) / groups;
}

/* base[p]: the offset, in a padded channel, of the input that output pixel p's
 * top-left filter tap reads. Tap (i, j) reads base[p] + i·dilation_h·wp +
 * j·dilation_w, so one table serves every tap, channel and image of a call. */
static void tap_base(const struct gan_conv2d *c, const struct conv_dims *d, int32_t *base)
{
    size_t p = 0;
    for (int64_t oh = 0; oh < c->h_out; oh++)
        for (int64_t ow = 0; ow < c->w_out; ow++)
            base[p++] = (int32_t)((size_t)(oh * c->stride_h) * d->wp
                                  + (size_t)(ow * c->stride_w));
}

/* One image x[c_in, h_in, w_in] of any float dtype as FP32 in xp[c_in, hp, wp], its
 * border of pad_h rows and pad_w columns zero. */
static void pad_image(enum cpu_isa isa, const struct gan_conv2d *c, const struct conv_dims *d,
                      const void *x, float *xp)
{
    const size_t ph = (size_t)c->pad_h, pw = (size_t)c->pad_w, w_in = (size_t)c->w_in;
    for (int64_t ci = 0; ci < c->c_in; ci++) {
        float *ch = xp + (size_t)ci * d->hp * d->wp;
        memset(ch, 0, ph * d->wp * sizeof *ch);
        memset(ch + (ph + (size_t)c->h_in) * d->wp, 0, ph * d->wp * sizeof *ch);
        for (int64_t ih = 0; ih < c->h_in; ih++) {
            float *row = ch + (ph + (size_t)ih) * d->wp;
            size_t at = ((size_t)ci * (size_t)c->h_in + (size_t)ih) * w_in;
            memset(row, 0, pw * sizeof *row);
            load_f32(isa, row + pw, (const unsigned char *)x + at * gan_dtype_size(c->dtype),
                     c->dtype, w_in);
            memset(row + pw + w_in, 0, pw * sizeof *row);
        }
    }
}

/* The P columns of one image's column matrix, gathered from its padded copy into a
 * matrix whose rows are `ld` apart: row (ci, i, j) holds, for every output pixel,
 * the input value that filter tap (i, j) of channel ci sees there. */
static void im2col(const struct gan_conv2d *c, const struct conv_dims *d, const float *xp,
                   const int32_t *base, float *col, size_t ld)
{
    float *row = col;
    for (int64_t ci = 0; ci < c->c_in; ci++)
        for (int64_t i = 0; i < c->kh; i++)
            for (int64_t j = 0; j < c->kw; j++, row += ld) {
                const float *src = xp + (size_t)ci * d->hp * d->wp
                                 + (size_t)(i * c->dilation_h) * d->wp
                                 + (size_t)(j * c->dilation_w);
                for (size_t p = 0; p < d->p; p++)
                    row[p] = src[base[p]];
            }
}

/* The adjoint of im2col: adds every entry of one image's columns (rows `ld` apart)
 * into the padded position it was gathered from. Within one row the positions are
 * distinct, so the adds of a row do not depend on each other, and each padded element
 * gets its adds in the order of the rows: walking a row's output pixels row by row, at
 * a fixed stride (the positions im2col's base[] holds), gives the same bits as walking
 * base[]. Strides 1 and 2 have loops of their own, with the stride a constant the
 * compiler can vectorise and unroll for. On a vector level stride 2 goes to its kernel
 * (col2im_lanes.h), two neighbouring kernel columns at a time where the dilation is 1:
 * their positions interleave and never meet, so taking them together keeps each
 * element's order. In `perf record` of an FP32 dcgan on one thread (the 1-channel input
 * gradient and the generator's last layer come this way) the scalar stride-2 loop took
 * 2.6 % of the samples. */
static void col2im_add(enum cpu_isa isa, const struct gan_conv2d *c, const struct conv_dims *d,
                       const float *col, size_t ld, float *xp)
{
    const size_t w_out = (size_t)c->w_out, h_out = (size_t)c->h_out;
    const size_t row_step = (size_t)c->stride_h * d->wp, sw = (size_t)c->stride_w;
    const int vector_pairs = sw == 2 && isa != CPU_ISA_PORTABLE;
    const float *row = col;
    for (int64_t ci = 0; ci < c->c_in; ci++)
        for (int64_t i = 0; i < c->kh; i++)
            for (int64_t j = 0; j < c->kw; row += ld) {
                float *dst = xp + (size_t)ci * d->hp * d->wp
                           + (size_t)(i * c->dilation_h) * d->wp
                           + (size_t)(j * c->dilation_w);
                if (vector_pairs) {
                    const int pair = j + 1 < c->kw && c->dilation_w == 1;
                    (isa == CPU_ISA_AVX512 ? cpu_vec_col2im_pair_avx512
                                           : cpu_vec_col2im_pair_avx2)(
                        dst, row_step, row, pair ? row + ld : NULL, w_out, h_out);
                    j += 1 + pair;
                    row += pair ? ld : 0;
                    continue;
                }
                const float *v = row;
                for (size_t oh = 0; oh < h_out; oh++, dst += row_step, v += w_out) {
                    if (sw == 1)
                        for (size_t ow = 0; ow < w_out; ow++)
                            dst[ow] += v[ow];
                    else if (sw == 2)
                        for (size_t ow = 0; ow < w_out; ow++)
                            dst[2 * ow] += v[ow];
                    else
                        for (size_t ow = 0; ow < w_out; ow++)
                            dst[ow * sw] += v[ow];
                }
                j++;
            }
}

/* dx = xp's interior (+ dx when beta is 1), rounded once to dx's dtype. */
static void unpad_into(enum cpu_isa isa, const struct gan_conv2d *c, const struct conv_dims *d,
                       const float *xp, float beta, void *dx)
{
    const size_t w_in = (size_t)c->w_in;
    for (int64_t ci = 0; ci < c->c_in; ci++)
        for (int64_t ih = 0; ih < c->h_in; ih++) {
            const float *src = xp + ((size_t)ci * d->hp + (size_t)(ih + c->pad_h)) * d->wp
                             + (size_t)c->pad_w;
            size_t at = ((size_t)ci * (size_t)c->h_in + (size_t)ih) * w_in;
            if (c->dtype == GAN_F32) {
                float *dst = (float *)dx + at;
                for (size_t iw = 0; iw < w_in; iw++)
                    dst[iw] = beta != 0.0f ? dst[iw] + src[iw] : src[iw];
            } else {
                store_run_16(isa, dx, c->dtype, at, src, w_in, beta != 0.0f);
            }
        }
}

/* The group's images are split across the instance's threads (thread_pool.c): an
 * image's columns, its padded copy, its rows of an output-shaped tensor and its col2im
 * are its own, computed the same way on any thread, so every split gives the same
 * bits. A part that pads images has a padded copy of its own: `xp` holds one per part,
 * image_parts(…) of them. */
static int image_parts(const gan_backend *be, const struct conv_dims *d, size_t g)
{
    /* an image's work: its K × P columns */
    return cpu_parallel_parts(be, (int64_t)g, 1, (int64_t)(d->k * d->p));
}

/* What the image loops below share: the call, the group (images b0 … b0 + g − 1),
 * and the buffers of the one running. */
struct group_job {
    enum cpu_isa isa;
    const struct gan_conv2d *c;
    const struct conv_dims *d;
    size_t b0, g;
    const int32_t *base;
    const unsigned char *in;   /* x, dy or y as stored */
    unsigned char *out;        /* y or dx as stored */
    float *xp, *col, *mat;
    float beta;
};

/* xp of part `part` (NULL when the images are read in place). */
static float *part_pad(const struct group_job *j, int part)
{
    return j->xp ? j->xp + (size_t)part * j->d->padded_elems : NULL;
}

static void im2col_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct group_job *j = arg;
    const size_t es = gan_dtype_size(j->c->dtype);
    float *xp = part_pad(j, part);
    for (size_t i = (size_t)begin; i < (size_t)end; i++) {
        const void *xi = j->in + (j->b0 + i) * j->d->in_elems * es;
        const float *src = xi;
        if (xp) {
            pad_image(j->isa, j->c, j->d, xi, xp);
            src = xp;
        }
        im2col(j->c, j->d, src, j->base, j->col + i * j->d->p, j->g * j->d->p);
    }
}

/* The column matrix [K, g·P] of images b0 … b0 + g − 1 of x. An FP32 image without
 * padding is read in place; any other goes through a padded FP32 copy in `xp`. */
static void im2col_group(gan_backend *be, const struct gan_conv2d *c,
                         const struct conv_dims *d, const unsigned char *x, size_t b0,
                         size_t g, const int32_t *base, float *xp, float *col)
{
    struct group_job j = { .isa = be->isa, .c = c, .d = d, .b0 = b0, .g = g, .base = base,
                           .in = x, .xp = xp, .col = col };
    cpu_parallel_for(be, image_parts(be, d, g), (int64_t)g, 1, im2col_range, &j);
}

/* True when the kernels need the padded FP32 copy of an input image. */
static int needs_padded(const struct gan_conv2d *c)
{
    return c->dtype != GAN_F32 || c->pad_h != 0 || c->pad_w != 0;
}

/* Rows (image i, channel co) of an output-shaped tensor ([n, c_out, P] in NCHW) as the
 * FP32 matrix [c_out, g·P], unit u = i·c_out + co. */
static void gather_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct group_job *j = arg;
    const struct conv_dims *d = j->d;
    const size_t es = gan_dtype_size(j->c->dtype), c_out = (size_t)j->c->c_out;
    for (size_t u = (size_t)begin; u < (size_t)end; u++) {
        const size_t i = u / c_out, co = u % c_out;
        load_f32(j->isa, j->mat + co * j->g * d->p + i * d->p,
                 j->in + ((j->b0 + i) * d->out_elems + co * d->p) * es, j->c->dtype, d->p);
    }
}

/* The [c_out, g·P] matrix of images b0 … b0 + g − 1 of an output-shaped tensor, as
 * FP32. */
static void gather_group(gan_backend *be, const struct gan_conv2d *c,
                         const struct conv_dims *d, const unsigned char *t, size_t b0,
                         size_t g, float *m)
{
    struct group_job j = { .isa = be->isa, .c = c, .d = d, .b0 = b0, .g = g, .in = t, .mat = m };
    const int64_t rows = (int64_t)(g * (size_t)c->c_out);
    cpu_parallel_for(be, cpu_parallel_parts(be, rows, 1, (int64_t)d->p), rows, 1, gather_range,
                     &j);
}

/* The product matrix [c_out, g·P] written (or added, beta 1) into y's rows (image i,
 * channel co), unit u = i·c_out + co, rounded once to y's dtype. */
static void scatter_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct group_job *j = arg;
    const struct conv_dims *d = j->d;
    const size_t c_out = (size_t)j->c->c_out, cols = j->g * d->p;
    for (size_t u = (size_t)begin; u < (size_t)end; u++) {
        const size_t i = u / c_out, co = u % c_out;
        const float *src = j->mat + co * cols + i * d->p;
        const size_t at = (j->b0 + i) * d->out_elems + co * d->p;
        if (j->c->dtype == GAN_F32) {
            float *dst = (float *)(void *)j->out + at;
            for (size_t q = 0; q < d->p; q++)
                dst[q] = j->beta != 0.0f ? dst[q] + src[q] : src[q];
        } else {
            store_run_16(j->isa, j->out, j->c->dtype, at, src, d->p, j->beta != 0.0f);
        }
    }
}

/* Each image's columns (rows `ld` = g·P apart) added into its own zeroed padded copy,
 * whose interior is then written (or added) to dx and rounded once. */
static void col2im_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct group_job *j = arg;
    const struct conv_dims *d = j->d;
    const size_t es = gan_dtype_size(j->c->dtype), ld = j->g * d->p;
    float *xp = part_pad(j, part);
    for (size_t i = (size_t)begin; i < (size_t)end; i++) {
        memset(xp, 0, d->padded_elems * sizeof *xp);
        col2im_add(j->isa, j->c, d, j->col + i * d->p, ld, xp);
        unpad_into(j->isa, j->c, d, xp, j->beta, j->out + (j->b0 + i) * d->in_elems * es);
    }
}

/* Scratch of one call, as byte counts for scratch_parts. */
enum { PART_COL, PART_MAT, PART_W, PART_PAD, PART_BASE, PARTS };

gan_status cpu_conv2d_forward(gan_backend *be, const struct gan_conv2d *c,
                              const struct gan_ref *x, const struct gan_ref *w,
                              float beta, const struct gan_ref *y)
{
    static const char op[] = "conv2d_forward";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = gan_conv2d_check_refs(be->host, op, c->dtype, "x", x, d.x_all, "w", w, d.w_elems,
                                   "y", y, d.y_all);
    if (st != GAN_OK)
        return st;
    if (cpu_onednn_conv(be, CPU_CONV_FORWARD, c, x, w, beta, y, &st))
        return st;
    struct cpu_kept_copies copies;
    if ((st = cpu_kept_call(be, &x, &w, &copies, beta, y, d.y_all)) != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    const size_t g = group_size(c, &d);
    /* With one FP32 image per group, the GEMM writes y in place (and reads x itself
     * when pointwise); otherwise it writes a product matrix [c_out, g·P]. */
    const int direct = g == 1 && f32;
    const int cols_in_place = direct && d.pointwise;
    size_t bytes[PARTS] = {
        [PART_COL] = cols_in_place ? 0 : d.k * g * d.p * sizeof(float),
        [PART_MAT] = direct ? 0 : (size_t)c->c_out * g * d.p * sizeof(float),
        [PART_W] = f32 ? 0 : d.w_elems * sizeof(float),
        [PART_PAD] = needs_padded(c) ? (size_t)image_parts(be, &d, g) * d.padded_elems *
                                           sizeof(float) : 0,
        [PART_BASE] = d.p * sizeof(int32_t),
    };
    void *part[PARTS];
    if ((st = scratch_parts(be, op, PARTS, bytes, part)) != GAN_OK)
        return st;
    float *col = part[PART_COL], *prod = part[PART_MAT];
    tap_base(c, &d, part[PART_BASE]);

    const float *wf = f32 ? (const float *)cpu_ref_ptr(w) : part[PART_W];
    if (!f32)
        cpu_convert_threads(be, cpu_ref_ptr(w), c->dtype, part[PART_W], GAN_F32, d.w_elems);
    const unsigned char *xb = cpu_ref_ptr(x);
    unsigned char *yb = cpu_ref_ptr(y);
    const size_t es = gan_dtype_size(c->dtype);
    for (size_t b0 = 0; b0 < (size_t)c->n; b0 += g) {
        /* gn images (fewer in a last group), their matrices gn·P columns wide */
        size_t gn = (size_t)c->n - b0 < g ? (size_t)c->n - b0 : g, cols = gn * d.p;
        const float *colm = cols_in_place ? (const float *)(xb + b0 * d.in_elems * es) : col;
        if (!cols_in_place)
            im2col_group(be, c, &d, xb, b0, gn, part[PART_BASE], part[PART_PAD], col);
        if (direct) {
            /* y[c_out, P] = w[c_out, K] · col[K, P] + beta · y */
            cpu_sgemm(be, NO_TRANS, NO_TRANS, (int)c->c_out, (int)d.p, (int)d.k, 1.0f, wf,
                      (int)d.k, colm, (int)d.p, beta, (float *)(yb + b0 * d.out_elems * es),
                      (int)d.p);
            continue;
        }
        /* prod[c_out, gn·P] = w[c_out, K] · col[K, gn·P], then added into y's images */
        cpu_sgemm(be, NO_TRANS, NO_TRANS, (int)c->c_out, (int)cols, (int)d.k, 1.0f, wf,
                  (int)d.k, colm, (int)cols, 0.0f, prod, (int)cols);
        struct group_job j = { .isa = be->isa, .c = c, .d = &d, .b0 = b0, .g = gn, .out = yb,
                               .mat = prod, .beta = beta };
        const int64_t rows = (int64_t)(gn * (size_t)c->c_out);
        cpu_parallel_for(be, cpu_parallel_parts(be, rows, 1, (int64_t)d.p), rows, 1,
                         scatter_range, &j);
    }
    return GAN_OK;
}

gan_status cpu_conv2d_backward_data(gan_backend *be, const struct gan_conv2d *c,
                                    const struct gan_ref *dy, const struct gan_ref *w,
                                    float beta, const struct gan_ref *dx)
{
    static const char op[] = "conv2d_backward_data";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = gan_conv2d_check_refs(be->host, op, c->dtype, "dy", dy, d.y_all, "w", w, d.w_elems,
                                   "dx", dx, d.x_all);
    if (st != GAN_OK)
        return st;
    if (cpu_onednn_conv(be, CPU_CONV_BACKWARD_DATA, c, dy, w, beta, dx, &st))
        return st;
    /* A dy kept in one block of all its channels (c_out is the block: the critic's first
     * layer and the generator's last at width 16 on AVX-512) holds each image as its
     * [P, c_out] matrix, dy's transposed: the product reads it transposed, in place in
     * FP32, widened exactly in one contiguous pass in 16 bits, with no NCHW copy and no
     * gather. Every element is still one dot product over c_out in order, the same bits
     * as from the NCHW matrix (check_kept_blocks). */
    const struct cpu_kept one_block = { c->n, c->c_out, c->h_out * c->w_out, c->c_out, c->dtype };
    /* (dx in dy's buffer would be made NCHW, and dy with it, by cpu_kept_call below) */
    const int in_block = dx->buf != dy->buf && cpu_kept_holds(dy->buf, dy->offset, &one_block);
    struct cpu_kept_copies copies;
    if ((st = cpu_kept_call(be, in_block ? NULL : &dy, &w, &copies, beta, dx, d.x_all)) != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    const size_t g = group_size(c, &d);
    /* FP32 dy read where it lies: one image per group, already the [c_out, P] matrix, or
     * a group of images in one block, the [g·P, c_out] one. */
    const int direct = (g == 1 || in_block) && f32;
    size_t bytes[PARTS] = {
        [PART_COL] = d.k * g * d.p * sizeof(float),
        [PART_MAT] = direct ? 0 : (size_t)c->c_out * g * d.p * sizeof(float),
        [PART_W] = f32 ? 0 : d.w_elems * sizeof(float),
        [PART_PAD] = (size_t)image_parts(be, &d, g) * d.padded_elems * sizeof(float),
        [PART_BASE] = 0, /* col2im walks the pixels at their stride */
    };
    void *part[PARTS];
    if ((st = scratch_parts(be, op, PARTS, bytes, part)) != GAN_OK)
        return st;
    float *col = part[PART_COL];

    const float *wf = f32 ? (const float *)cpu_ref_ptr(w) : part[PART_W];
    if (!f32)
        cpu_convert_threads(be, cpu_ref_ptr(w), c->dtype, part[PART_W], GAN_F32, d.w_elems);
    const unsigned char *dyb = cpu_ref_ptr(dy);
    unsigned char *dxb = cpu_ref_ptr(dx);
    const size_t es = gan_dtype_size(c->dtype);
    for (size_t b0 = 0; b0 < (size_t)c->n; b0 += g) {
        size_t gn = (size_t)c->n - b0 < g ? (size_t)c->n - b0 : g, cols = gn * d.p;
        const float *dym = (const float *)(dyb + b0 * d.out_elems * es);
        if (in_block && !f32) {
            cpu_convert_threads(be, dyb + b0 * d.out_elems * es, c->dtype, part[PART_MAT],
                                GAN_F32, gn * d.out_elems);
            dym = part[PART_MAT];
        } else if (!direct) {
            gather_group(be, c, &d, dyb, b0, gn, part[PART_MAT]);
            dym = part[PART_MAT];
        }
        /* col[K, gn·P] = wᵀ[K, c_out] · dy[c_out, gn·P], then scattered onto dx: into
         * a zeroed padded image, whose interior is then written (or added) to dx and
         * rounded once. */
        if (in_block)
            cpu_sgemm(be, TRANS, TRANS, (int)d.k, (int)cols, (int)c->c_out, 1.0f, wf,
                      (int)d.k, dym, (int)c->c_out, 0.0f, col, (int)cols);
        else
            cpu_sgemm(be, TRANS, NO_TRANS, (int)d.k, (int)cols, (int)c->c_out, 1.0f, wf,
                      (int)d.k, dym, (int)cols, 0.0f, col, (int)cols);
        struct group_job j = { .isa = be->isa, .c = c, .d = &d, .b0 = b0, .g = gn,
                               .out = dxb, .xp = part[PART_PAD],
                               .col = col, .beta = beta };
        cpu_parallel_for(be, image_parts(be, &d, gn), (int64_t)gn, 1, col2im_range, &j);
    }
    return GAN_OK;
}

gan_status cpu_conv2d_backward_filter(gan_backend *be, const struct gan_conv2d *c,
                                      const struct gan_ref *x, const struct gan_ref *dy,
                                      float beta, const struct gan_ref *dw)
{
    static const char op[] = "conv2d_backward_filter";
    struct conv_dims d;
    gan_status st = check_desc(be, op, c, beta, &d);
    if (st == GAN_OK)
        st = gan_conv2d_check_refs(be->host, op, c->dtype, "x", x, d.x_all, "dy", dy, d.y_all,
                                   "dw", dw, d.w_elems);
    if (st != GAN_OK)
        return st;
    if (cpu_onednn_conv(be, CPU_CONV_BACKWARD_FILTER, c, x, dy, beta, dw, &st))
        return st;
    struct cpu_kept_copies copies;
    if ((st = cpu_kept_call(be, &x, &dy, &copies, beta, dw, d.w_elems)) != GAN_OK)
        return st;

    const int f32 = c->dtype == GAN_F32;
    const size_t g = group_size(c, &d);
    const int direct = g == 1 && f32;
    const int cols_in_place = direct && d.pointwise;
    size_t bytes[PARTS] = {
        [PART_COL] = cols_in_place ? 0 : d.k * g * d.p * sizeof(float),
        [PART_MAT] = direct ? 0 : (size_t)c->c_out * g * d.p * sizeof(float),
        [PART_W] = f32 ? 0 : d.w_elems * sizeof(float),
        [PART_PAD] = needs_padded(c) ? (size_t)image_parts(be, &d, g) * d.padded_elems *
                                           sizeof(float) : 0,
        [PART_BASE] = d.p * sizeof(int32_t),
    };
    void *part[PARTS];
    if ((st = scratch_parts(be, op, PARTS, bytes, part)) != GAN_OK)
        return st;
    float *col = part[PART_COL];
    tap_base(c, &d, part[PART_BASE]);

    /* dw accumulates in FP32 across the batch, one GEMM per group with beta 1 after
     * the first, and for 16-bit dtypes is rounded once at the end. */
    float *dwf = f32 ? (float *)cpu_ref_ptr(dw) : part[PART_W];
    if (!f32 && beta != 0.0f)
        cpu_convert_threads(be, cpu_ref_ptr(dw), c->dtype, dwf, GAN_F32, d.w_elems);
    const unsigned char *xb = cpu_ref_ptr(x), *dyb = cpu_ref_ptr(dy);
    const size_t es = gan_dtype_size(c->dtype);
    for (size_t b0 = 0; b0 < (size_t)c->n; b0 += g) {
        size_t gn = (size_t)c->n - b0 < g ? (size_t)c->n - b0 : g, cols = gn * d.p;
        const float *dym = (const float *)(dyb + b0 * d.out_elems * es);
        const float *colm = cols_in_place ? (const float *)(xb + b0 * d.in_elems * es) : col;
        if (!direct) {
            gather_group(be, c, &d, dyb, b0, gn, part[PART_MAT]);
            dym = part[PART_MAT];
        }
        if (!cols_in_place)
            im2col_group(be, c, &d, xb, b0, gn, part[PART_BASE], part[PART_PAD], col);
        /* dw[c_out, K] = dy[c_out, gn·P] · colᵀ[gn·P, K] + beta_b · dw */
        float beta_b = b0 == 0 ? beta : 1.0f;
        cpu_sgemm(be, NO_TRANS, TRANS, (int)c->c_out, (int)d.k, (int)cols, 1.0f, dym,
                  (int)cols, colm, (int)cols, beta_b, dwf, (int)d.k);
    }
    if (!f32)
        cpu_convert_threads(be, dwf, GAN_F32, cpu_ref_ptr(dw), c->dtype, d.w_elems);
    return GAN_OK;
}
