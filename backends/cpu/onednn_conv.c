/* SPDX-License-Identifier: MIT */
/* onednn_conv.c — the CPU backend's convolutions as oneDNN primitives: forward,
 * backward-data and backward-filter on NCHW tensors. oneDNN chooses its own (blocked)
 * layouts; the backend moves activations to its channel blocks and back itself
 * (channel_blocks.c), and oneDNN's reorders bring the rest (filters, filter gradients,
 * activations whose channels are not whole blocks) to theirs. A result that is
 * added to the output (beta = 1), and the filter gradient, are FP32 inside oneDNN and
 * rounded once to the output's dtype, as on the OpenBLAS path. FP16 (and BF16 on a CPU
 * without a BF16 dot product) runs on the FP32 primitives: its inputs widened to FP32
 * (exactly), the result left in FP32 and rounded once to the 16-bit type, so it keeps
 * the promise of 16-bit storage, FP32 accumulation and one rounding at the end, as a
 * GPU's tensor cores do. */
#include "config.h"

#include <string.h>

#include "onednn.h"

/* Where the instance has oneDNN, it takes every convolution (every float type, which
 * conv2d.c's checks have let through). For FP32, oneDNN's direct convolutions ran the
 * fashion-mnist DCGAN 1.3–1.7 times as fast as im2col + sgemm on 1 thread and 3.6–4.1
 * times on 2 (bench/README.md), so "auto" takes them too. BF16 runs on oneDNN's BF16
 * primitives where the CPU has a BF16 dot product and they pay (onednn_probe.c); FP16,
 * which no CPU here multiplies with FP32 accumulation, and BF16 elsewhere go through
 * the same FP32 primitives (staged, below) rather than through im2col + sgemm, which
 * would stage them too and convolve slower. */

/* But not, under "auto", the input gradient of a convolution with fewer than 4 input
 * channels: a grey or colour image's (the critic's first layer, the penalty's gradient
 * with respect to the images) and the forward of a generator's last transposed
 * convolution. oneDNN 2.6's AVX-512 kernel for it works on blocks of 16 input channels and
 * takes as long for 1 as for 16. Measured on a Zen 4 core at batch 64, 5×5 filters,
 * stride 2: from 16 channels at 28×28, 1.38 ms for 1 input channel (7 GFLOP/s) where
 * im2col + sgemm took 0.33; for 3 channels 1.50 against 1.13 ms, for 4 even, for 8 oneDNN
 * ahead; at 64×64 the same crossing. Without AVX-512 (DNNL_MAX_CPU_ISA=AVX2) oneDNN takes
 * a GEMM-based kernel for so few channels, as fast as im2col + sgemm either way. */
int cpu_onednn_conv_auto_takes(enum cpu_conv_kind kind, const struct gan_conv2d *c)
{
    return kind != CPU_CONV_BACKWARD_DATA || c->c_in >= CPU_ONEDNN_AUTO_DATA_MIN_CHANNELS;
}

/* FP16, and BF16 where oneDNN's BF16 convolutions are not taken (o->bf16_convs), are
 * staged: their tensors are widened to FP32 around an FP32 primitive. */
static int staged(const struct cpu_onednn *o, enum gan_dtype dtype)
{
    return dtype == GAN_F16 || (dtype == GAN_BF16 && !o->bf16_convs);
}

/* The three tensors of a convolution, as the caller stores them (NCHW, OIHW) or
 * as "any" layout for oneDNN to choose. */
struct conv_mds {
    dnnl_memory_desc_t x, w, y;
};

static int conv_mds(const struct cpu_dnnl_api *api, struct conv_mds *m, const struct gan_conv2d *c, dnnl_data_type_t xt,
                    dnnl_data_type_t wt, dnnl_data_type_t yt, int any)
{
    const dnnl_dims_t dx = { c->n, c->c_in, c->h_in, c->w_in };
    const dnnl_dims_t dw = { c->c_out, c->c_in, c->kh, c->kw };
    const dnnl_dims_t dy = { c->n, c->c_out, c->h_out, c->w_out };
    return api->dnnl_memory_desc_init_by_tag(&m->x, 4, dx, xt, any ? dnnl_format_tag_any : dnnl_nchw)
               != dnnl_success ||
           api->dnnl_memory_desc_init_by_tag(&m->w, 4, dw, wt, any ? dnnl_format_tag_any : dnnl_oihw)
               != dnnl_success ||
           api->dnnl_memory_desc_init_by_tag(&m->y, 4, dy, yt, any ? dnnl_format_tag_any : dnnl_nchw)
               != dnnl_success;
}

/* Strides, dilations (oneDNN counts the skipped positions: ours − 1) and the padding
 * on each side; the right and bottom padding is what makes h_out, w_out come out, which
 * is pad − ((h_in + 2·pad − extent) mod stride). */
struct conv_geometry {
    dnnl_dims_t strides, dilates, pad_l, pad_r;
};

static void geometry(struct conv_geometry *g, const struct gan_conv2d *c)
{
    g->strides[0] = c->stride_h;
    g->strides[1] = c->stride_w;
    g->dilates[0] = c->dilation_h - 1;
    g->dilates[1] = c->dilation_w - 1;
    g->pad_l[0] = c->pad_h;
    g->pad_l[1] = c->pad_w;
    g->pad_r[0] = (c->h_out - 1) * c->stride_h + (c->kh - 1) * c->dilation_h + 1 - c->h_in
                - c->pad_h;
    g->pad_r[1] = (c->w_out - 1) * c->stride_w + (c->kw - 1) * c->dilation_w + 1 - c->w_in
                - c->pad_w;
}

/* The forward primitive descriptor, for the forward call itself (dst of type yt) or as
 * the hint a backward descriptor needs. */
static dnnl_primitive_desc_t forward_pd(struct cpu_onednn *o, const struct gan_conv2d *c,
                                        const struct conv_geometry *g, dnnl_data_type_t dt,
                                        dnnl_data_type_t yt)
{
    const struct cpu_dnnl_api *api = &o->api;
    struct conv_mds any;
    dnnl_convolution_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    if (conv_mds(api, &any, c, dt, dt, yt, 1) ||
        api->dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_training,
                                                   dnnl_convolution_direct, &any.x, &any.w,
                                                   NULL, &any.y, g->strides, g->dilates,
                                                   g->pad_l, g->pad_r) != dnnl_success ||
        api->dnnl_primitive_desc_create(&pd, &desc, NULL, o->engine, NULL) != dnnl_success)
        return NULL;
    return pd;
}

/* Elements of x, w and y. */
static size_t x_count(const struct gan_conv2d *c)
{
    return (size_t)(c->n * c->c_in * c->h_in * c->w_in);
}

static size_t w_count(const struct gan_conv2d *c)
{
    return (size_t)(c->c_out * c->c_in * c->kh * c->kw);
}

static size_t y_count(const struct gan_conv2d *c)
{
    return (size_t)(c->n * c->c_out * c->h_out * c->w_out);
}

/* Elements of the output of each kind. */
static size_t out_count(enum cpu_conv_kind kind, const struct gan_conv2d *c)
{
    switch (kind) {
    case CPU_CONV_FORWARD: return y_count(c);
    case CPU_CONV_BACKWARD_DATA: return x_count(c);
    case CPU_CONV_BACKWARD_FILTER:
    default: return w_count(c);
    }
}

/* Elements of the inputs a (x, dy, x) and b (w, w, dy) of each kind. */
static size_t a_count(enum cpu_conv_kind kind, const struct gan_conv2d *c)
{
    return kind == CPU_CONV_BACKWARD_DATA ? y_count(c) : x_count(c);
}

static size_t b_count(enum cpu_conv_kind kind, const struct gan_conv2d *c)
{
    return kind == CPU_CONV_BACKWARD_FILTER ? y_count(c) : w_count(c);
}

static int build(gan_backend *be, struct cpu_onednn_entry *e, enum cpu_conv_kind kind,
                 const struct gan_conv2d *full, int accumulate, int parts)
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    /* A staged call's primitive is the FP32 one, on the FP32 copies of its
     * tensors: the caller's side below is then FP32 too. */
    const dnnl_data_type_t dt = staged(o, full->dtype) ? dnnl_f32
                                                       : cpu_onednn_dtype(full->dtype);
    /* The output oneDNN writes: FP32 when it is added to the caller's, and always for
     * the filter gradient, a sum over the whole batch rounded once. */
    const int f32_out = accumulate || kind == CPU_CONV_BACKWARD_FILTER;
    const dnnl_data_type_t ot = f32_out ? dnnl_f32 : dt;
    /* In parts (a filter gradient, onednn_filter.c), the primitive is made for one
     * part's images. */
    struct gan_conv2d part = *full;
    part.n = full->n / parts;
    const struct gan_conv2d *c = &part;
    struct conv_geometry g;
    geometry(&g, c);
    /* A filter gradient's primitive runs on one thread, each part's on its own (see
     * onednn_filter.c for why not on oneDNN's threads); the others on the instance's. A
     * primitive divides its work for the team size in force when it is made, so the
     * count is set before. */
    e->threads = kind == CPU_CONV_BACKWARD_FILTER ? 1 : be->threads;
    api->omp_set_num_threads(e->threads);
    /* Parts run at once, each with a scratchpad of its own: oneDNN's is kept per thread
     * that made the primitive. */
    dnnl_primitive_attr_t attr = NULL;
    if (parts > 1 &&
        (api->dnnl_primitive_attr_create(&attr) != dnnl_success ||
         api->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) !=
             dnnl_success)) {
        if (attr)
            api->dnnl_primitive_attr_destroy(attr);
        return -1;
    }

    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_convolution_desc_t desc;
    struct conv_mds any;
    int bad = 0;
    switch (kind) {
    case CPU_CONV_FORWARD:
        pd = forward_pd(o, c, &g, dt, ot);
        bad = !pd;
        break;
    case CPU_CONV_BACKWARD_DATA:
        hint = forward_pd(o, c, &g, dt, dt);
        bad = !hint || conv_mds(api, &any, c, ot, dt, dt, 1) ||
              api->dnnl_dilated_convolution_backward_data_desc_init(
                  &desc, dnnl_convolution_direct, &any.x, &any.w, &any.y, g.strides,
                  g.dilates, g.pad_l, g.pad_r) != dnnl_success ||
              api->dnnl_primitive_desc_create(&pd, &desc, NULL, o->engine, hint) != dnnl_success;
        break;
    case CPU_CONV_BACKWARD_FILTER:
        hint = forward_pd(o, c, &g, dt, dt);
        bad = !hint || conv_mds(api, &any, c, dt, ot, dt, 1) ||
              api->dnnl_dilated_convolution_backward_weights_desc_init(
                  &desc, dnnl_convolution_direct, &any.x, &any.w, NULL, &any.y, g.strides,
                  g.dilates, g.pad_l, g.pad_r) != dnnl_success ||
              api->dnnl_primitive_desc_create(&pd, &desc, attr, o->engine, hint) != dnnl_success;
        break;
    }
    if (hint)
        api->dnnl_primitive_desc_destroy(hint);
    if (attr)
        api->dnnl_primitive_attr_destroy(attr);
    if (bad) {
        if (pd)
            api->dnnl_primitive_desc_destroy(pd);
        return -1;
    }

    /* The layouts oneDNN chose, read before the descriptor goes into the primitive. */
    static const struct { int arg; dnnl_query_t query; } roles[3][3] = {
        [CPU_CONV_FORWARD] = { { DNNL_ARG_SRC, dnnl_query_src_md },
                               { DNNL_ARG_WEIGHTS, dnnl_query_weights_md },
                               { DNNL_ARG_DST, dnnl_query_dst_md } },
        [CPU_CONV_BACKWARD_DATA] = { { DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md },
                                     { DNNL_ARG_WEIGHTS, dnnl_query_weights_md },
                                     { DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md } },
        [CPU_CONV_BACKWARD_FILTER] = { { DNNL_ARG_SRC, dnnl_query_src_md },
                                       { DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md },
                                       { DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md } },
    };
    dnnl_memory_desc_t inner[3];
    for (int i = 0; i < 3; i++) {
        const dnnl_memory_desc_t *md = api->dnnl_primitive_desc_query_md(pd, roles[kind][i].query, 0);
        if (!md) {
            api->dnnl_primitive_desc_destroy(pd);
            return -1;
        }
        inner[i] = *md;
    }
    /* The caller's side: its dtype, except an accumulated output, which oneDNN hands
     * over as plain FP32 in the entry's extra space. (In parts, x and dy are one part's
     * images; the filter's shape does not depend on the batch.) */
    struct conv_mds user, user_f32;
    if (conv_mds(api, &user, c, dt, dt, dt, 0) || conv_mds(api, &user_f32, c, dnnl_f32, dnnl_f32,
                                                      dnnl_f32, 0)) {
        api->dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    const dnnl_memory_desc_t *users[3][3] = {
        [CPU_CONV_FORWARD] = { &user.x, &user.w, accumulate ? &user_f32.y : &user.y },
        [CPU_CONV_BACKWARD_DATA] = { &user.y, &user.w, accumulate ? &user_f32.x : &user.x },
        [CPU_CONV_BACKWARD_FILTER] = { &user.x, &user.y, accumulate ? &user_f32.w : &user.w },
    };
    if (parts > 1) {
        if (cpu_onednn_filter_build(be, e, pd, parts, users[kind], inner) != 0)
            return -1;
    } else {
        if (cpu_onednn_set_primitive(be, e, pd) != 0)
            return -1;
        for (int i = 0; i < 3; i++)
            if (cpu_onednn_add_arg(o, e, roles[kind][i].arg, i == 2, users[kind][i],
                                   &inner[i]) != 0)
                return -1;
    }
    /* A staged call's inputs, and its output when it is not added to, are read and
     * written in their 16-bit type where the backend moves their channel blocks. */
    if (staged(o, full->dtype))
        for (int i = 0; i < 3; i++)
            if (i < 2 || !accumulate)
                cpu_onednn_takes_plain(e, i, full->dtype);
    /* A staged call keeps its FP32 result in the backend's scratch instead. */
    if (accumulate && !staged(o, full->dtype) &&
        !cpu_onednn_extra(e, out_count(kind, full) * sizeof(float)))
        return -1;
    return 0;
}

/* Runs a built entry on the caller's memory (x, w or dy, out), `kept` as
 * cpu_onednn_execute's. */
static gan_status execute(gan_backend *be, struct cpu_onednn_entry *e, void *const *ptrs,
                          unsigned kept)
{
    return e->filter ? cpu_onednn_filter_execute(be, e, ptrs, kept)
                     : cpu_onednn_execute(be, e, ptrs, kept);
}

/* The channel blocks argument i (a, b, out) of e takes, or NULL. */
static const struct cpu_channel_blocks *arg_blocks(const struct cpu_onednn_entry *e, int i)
{
    const struct cpu_channel_blocks *b =
        e->filter ? (i < 2 ? cpu_onednn_filter_blocks(e, i) : NULL)
                  : (i < e->nargs ? &e->args[i].blocks : NULL);
    return b && b->block ? b : NULL;
}

/* The activations among a kind's arguments (a, b, out), as kept blocks of `block`
 * channels would describe them; block 0 for a filter or its gradient. */
static struct cpu_kept activation(enum cpu_conv_kind kind, int i, const struct gan_conv2d *c,
                                  int64_t block)
{
    static const int is_x[3][3] = {       /* 1: x's sizes, 2: y's, 0: a filter */
        [CPU_CONV_FORWARD] = { 1, 0, 2 },
        [CPU_CONV_BACKWARD_DATA] = { 2, 0, 1 },
        [CPU_CONV_BACKWARD_FILTER] = { 1, 2, 0 },
    };
    struct cpu_kept k = { c->n, c->c_in, c->h_in * c->w_in, block, c->dtype };
    if (is_x[kind][i] == 2) {
        k.c = c->c_out;
        k.hw = c->h_out * c->w_out;
    }
    if (!is_x[kind][i])
        k.block = 0;
    return k;
}

/* Which of the call's activations are, or are to be left, in their channel blocks
 * (kept_blocks.c): an input already kept in the blocks its argument takes, and the
 * output of a forward or backward-data call that is not added to. Every other buffer is
 * made NCHW, the output's forgotten where it is written whole. *out_kept receives what
 * the output will hold. */
static gan_status kept_args(gan_backend *be, const struct cpu_onednn_entry *e,
                            enum cpu_conv_kind kind, const struct gan_conv2d *c,
                            const struct gan_ref *const refs[3], int accumulate,
                            unsigned *kept, struct cpu_kept *out_kept)
{
    *kept = 0;
    out_kept->block = 0;
    for (int i = 0; i < 3; i++) {
        /* blocks of the tensor's own type, or the FP32 blocks a staged call widens a
         * 16-bit tensor's into */
        const struct cpu_channel_blocks *b = arg_blocks(e, i);
        const int takes = b && (b->blocks == c->dtype ||
                                 (staged(be->onednn, c->dtype) && e->takes_plain[i]));
        struct cpu_kept k = activation(kind, i, c, takes ? b->block : 0);
        gan_status st = GAN_OK;
        if (i < 2) {
            if (k.block && cpu_kept_holds(refs[i]->buf, refs[i]->offset, &k))
                *kept |= 1u << i;
            else
                st = cpu_kept_plain(be, refs[i]->buf);
        } else if (accumulate) {
            st = cpu_kept_plain(be, refs[i]->buf);
        } else {
            st = cpu_kept_ref_written(be, refs[i], out_count(kind, c));
            if (k.block && be->keep_blocks && refs[i]->offset == 0) {
                *kept |= 1u << i;
                *out_kept = k;
            }
        }
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* out = out + sum, n elements, rounded once to out's dtype. */
static void add_into_serial(enum cpu_isa isa, unsigned char *out, enum gan_dtype dtype,
                            const float *sum, size_t n)
{
    if (dtype == GAN_F32) {
        float *o = (float *)out;
        for (size_t i = 0; i < n; i++)
            o[i] = sum[i] + o[i];
        return;
    }
    enum { BLOCK = 256 };
    float t[BLOCK];
    const size_t es = gan_dtype_size(dtype);
    for (size_t s = 0; s < n; s += BLOCK) {
        size_t m = n - s < BLOCK ? n - s : BLOCK;
        cpu_convert(isa, out + s * es, dtype, t, GAN_F32, m);
        for (size_t q = 0; q < m; q++)
            t[q] = sum[s + q] + t[q];
        cpu_convert(isa, t, GAN_F32, out + s * es, dtype, m);
    }
}

/* add_into_serial over a range of elements, split across the instance's threads: each
 * element is its own sum, so any split gives the same bits. */
struct add_job {
    enum cpu_isa isa;
    unsigned char *out;
    enum gan_dtype dtype;
    const float *sum;
};

static void add_range(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct add_job *j = arg;
    add_into_serial(j->isa, j->out + (size_t)begin * gan_dtype_size(j->dtype), j->dtype,
                    j->sum + begin, (size_t)(end - begin));
}

/* Runs of a multiple of 256 elements, the block of add_into_serial. */
#define ADD_ALIGN 256

static void add_into(gan_backend *be, unsigned char *out, enum gan_dtype dtype,
                     const float *sum, size_t n)
{
    struct add_job j = { be->isa, out, dtype, sum };
    /* each element is read twice and written once */
    int parts = cpu_parallel_parts(be, (int64_t)n, ADD_ALIGN, 3);
    cpu_parallel_for(be, parts, (int64_t)n, ADD_ALIGN, add_range, &j);
}

static size_t align64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* A staged (16-bit) call: a and b widened (exactly), the FP32 primitive writing an FP32
 * result, and that result rounded once to the 16-bit type in out, added to out's values
 * first when `accumulate`, so that every product and sum is FP32 and only the stored
 * result is 16-bit. An argument that moves its own channel blocks widens or rounds on the
 * way (e->takes_plain); the others go through FP32 copies in the backend's scratch.
 * `kept` as cpu_onednn_execute's: such an argument kept in 16-bit blocks is widened or
 * rounded without a move. */
static gan_status run_staged(gan_backend *be, struct cpu_onednn_entry *e,
                             enum cpu_conv_kind kind, const struct gan_conv2d *c,
                             const struct gan_ref *a, const struct gan_ref *b, int accumulate,
                             const struct gan_ref *out, unsigned kept)
{
    const struct gan_ref *refs[3] = { a, b, out };
    const size_t counts[3] = { a_count(kind, c), b_count(kind, c), out_count(kind, c) };
    /* FP32 copies in the scratch for the arguments that do not take the 16-bit memory */
    size_t at[3], bytes = 0;
    for (int i = 0; i < 3; i++) {
        at[i] = bytes;
        bytes += e->takes_plain[i] ? 0 : align64(counts[i] * sizeof(float));
    }
    void *base = NULL;
    gan_status st = cpu_scratch(be, bytes ? bytes : 64, &base);
    if (st != GAN_OK)
        return st;
    void *ptrs[3];
    for (int i = 0; i < 3; i++)
        ptrs[i] = e->takes_plain[i] ? (void *)cpu_ref_ptr(refs[i]) : (unsigned char *)base + at[i];
    for (int i = 0; i < 2; i++)
        if (!e->takes_plain[i])
            cpu_convert_threads(be, cpu_ref_ptr(refs[i]), c->dtype, ptrs[i], GAN_F32, counts[i]);
    if ((st = execute(be, e, ptrs, kept)) != GAN_OK)
        return st;
    if (accumulate)
        add_into(be, cpu_ref_ptr(out), c->dtype, ptrs[2], counts[2]);
    else if (!e->takes_plain[2])
        cpu_convert_threads(be, ptrs[2], GAN_F32, cpu_ref_ptr(out), c->dtype, counts[2]);
    return GAN_OK;
}

int cpu_onednn_conv(gan_backend *be, enum cpu_conv_kind kind, const struct gan_conv2d *c,
                    const struct gan_ref *a, const struct gan_ref *b, float beta,
                    const struct gan_ref *out, gan_status *st)
{
    struct cpu_onednn *o = be->onednn;
    if (!o)
        return 0;
    if (be->gemm_path == CPU_GEMM_AUTO && !cpu_onednn_conv_auto_takes(kind, c))
        return 0;
    const int accumulate = beta != 0.0f;
    struct cpu_onednn_key key;
    memset(&key, 0, sizeof key);
    key.kind = CPU_ONEDNN_CONV_FORWARD + (int)kind;
    /* The dtype is part of the key: a staged 16-bit entry (FP32 primitive, FP32 tensors on
     * the caller's side, no extra space) is never taken for an FP32 one, nor the reverse. */
    const int64_t v[] = { c->n, c->c_in, c->h_in, c->w_in, c->c_out, c->kh, c->kw,
                          c->stride_h, c->stride_w, c->pad_h, c->pad_w, c->dilation_h,
                          c->dilation_w, c->h_out, c->w_out, c->dtype, accumulate };
    memcpy(key.v, v, sizeof v);
    int fresh;
    struct cpu_onednn_entry *e = cpu_onednn_lookup(o, &key, &fresh);
    if (!e) {
        *st = be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                             "conv2d: out of memory for oneDNN's primitive cache");
        return 1;
    }
    if (fresh) {
        /* A filter gradient in parts of the batch, on the instance's threads; where
         * oneDNN will not run those, as one call on one thread. */
        const int parts = kind == CPU_CONV_BACKWARD_FILTER ? cpu_onednn_filter_parts(c) : 1;
        int bad = build(be, e, kind, c, accumulate, parts) != 0;
        if (bad && parts > 1) {
            cpu_onednn_reset(o, e);
            bad = build(be, e, kind, c, accumulate, 1) != 0;
        }
        e->refused = bad;
    }
    if (e->refused)
        return 0;
    const struct gan_ref *const refs[3] = { a, b, out };
    unsigned kept;
    struct cpu_kept out_kept;
    if ((*st = kept_args(be, e, kind, c, refs, accumulate, &kept, &out_kept)) != GAN_OK)
        return 1;
    if (staged(o, c->dtype)) {
        *st = run_staged(be, e, kind, c, a, b, accumulate, out, kept);
        if (*st == GAN_OK && out_kept.block)
            cpu_kept_mark(out->buf, &out_kept);
        return 1;
    }
    void *ptrs[3] = { cpu_ref_ptr(a), cpu_ref_ptr(b), accumulate ? e->extra : cpu_ref_ptr(out) };
    *st = execute(be, e, ptrs, kept);
    if (*st == GAN_OK && accumulate)
        add_into(be, cpu_ref_ptr(out), c->dtype, e->extra, out_count(kind, c));
    if (*st == GAN_OK && out_kept.block)
        cpu_kept_mark(out->buf, &out_kept);
    return 1;
}
