/* SPDX-License-Identifier: MIT */
/* kept_blocks.c — activations left in oneDNN's channel blocks from one convolution to
 * the next, instead of moved back to NCHW after each convolution and into blocks again
 * before the next.
 *
 * The backend interface keeps tensors NCHW; oneDNN's convolutions take and give them in
 * channel blocks (nChw16c, nChw8c), and the moves between the two took about a tenth of
 * an FP32 dcgan step on one thread (bench/README.md). So a buffer may hold its tensor in
 * blocks, and says so (gan_buffer.kept):
 *
 *  - a convolution through oneDNN leaves its output in blocks, and takes an input that
 *    is already in the blocks it wants as it is (onednn_conv.c);
 *  - the element-wise ops between convolutions (the bias, the activation, their
 *    backwards, sums of gradients) run on the blocks directly where every operand that is
 *    not a scalar or a per-channel value is such a tensor: an element's result does not
 *    depend on where it is stored (cpu_kept_elementwise);
 *  - a bias gradient sums each channel's elements in the order NCHW would (reduce.c);
 *  - every other use of the buffer makes it NCHW first (cpu_kept_plain), and a write
 *    over the whole of it forgets the blocks (cpu_kept_overwritten).
 *
 * What a download, a product or any other kernel sees is therefore what NCHW would
 * hold, and every value is computed from the same operands in the same order as with
 * the moves: the same bits. A tensor is kept in blocks of its own type: FP32, BF16, or
 * FP16. A staged 16-bit convolution, which runs on FP32 blocks, widens kept 16-bit
 * blocks into its own with a conversion instead of a move, and rounds its result into
 * 16-bit blocks the same way: the conversions the moves make, without the transposes. */
#include "config.h"

#include <string.h>

#include "cpu_backend.h"

gan_status cpu_kept_setting(const struct gan_host *host, int *keep)
{
    const char *want = NULL;
    if (gan_setting_string(host, cpu_settings, "channel_blocks", &want) != GAN_OK ||
        (want && strcmp(want, "kept") != 0 && strcmp(want, "moved") != 0))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: channel_blocks = \"%s\" is not a choice; use "
                          "\"kept\" (convolution outputs stay in oneDNN's channel blocks "
                          "until an op needs NCHW) or \"moved\" (moved back to NCHW after "
                          "every convolution)", want ? want : "(not a string)");
    *keep = !want || strcmp(want, "kept") == 0;
    return GAN_OK;
}

static int64_t kept_elements(const struct cpu_kept *k)
{
    return k->n * k->c * k->hw;
}

static size_t kept_bytes(const struct cpu_kept *k)
{
    return (size_t)kept_elements(k) * gan_dtype_size(k->dtype);
}

/* Moves k's tensor from its blocks to NCHW at `plain`. A 16-bit tensor's blocks are of
 * its own type, moved as bits: channel_blocks.c's BF16 moves copy any 16-bit pattern
 * (BF16 widens to FP32 by a shift and back by taking the upper half), FP16's too. */
static void move_out(gan_backend *be, const struct cpu_kept *k, const void *blocked,
                     void *plain)
{
    const enum gan_dtype t = gan_dtype_size(k->dtype) == 2 ? GAN_BF16 : k->dtype;
    const struct cpu_channel_blocks m = { k->n * k->c / k->block, k->hw, k->block, t };
    cpu_from_channel_blocks_threads(be, &m, blocked, plain, t);
}

static int same_blocks(const struct cpu_kept *a, const struct cpu_kept *b)
{
    return a->n == b->n && a->c == b->c && a->hw == b->hw && a->block == b->block;
}

gan_status cpu_kept_plain(gan_backend *be, gan_buffer *buf)
{
    if (!buf || !buf->kept.block)
        return GAN_OK;
    const struct cpu_kept *k = &buf->kept;
    const size_t bytes = kept_bytes(k);
    void *copy = NULL;
    gan_status st = cpu_scratch(be, bytes, &copy);
    if (st != GAN_OK)
        return st;
    memcpy(copy, buf->data, bytes);
    move_out(be, k, copy, buf->data);
    buf->kept.block = 0;
    return GAN_OK;
}

gan_status cpu_kept_overwritten(gan_backend *be, gan_buffer *buf, size_t byte_offset,
                                size_t bytes)
{
    if (!buf || !buf->kept.block)
        return GAN_OK;
    const struct cpu_kept *k = &buf->kept;
    if (byte_offset == 0 && bytes >= kept_bytes(k) && bytes <= buf->bytes) {
        buf->kept.block = 0;
        return GAN_OK;
    }
    return cpu_kept_plain(be, buf);
}

void cpu_kept_mark(gan_buffer *buf, const struct cpu_kept *k)
{
    buf->kept = *k;
}

int cpu_kept_holds(const gan_buffer *buf, size_t offset, const struct cpu_kept *k)
{
    return buf && buf->kept.block && offset == 0 && same_blocks(&buf->kept, k) &&
           buf->kept.dtype == k->dtype;
}

/* Whether o walks elements [0, count) of its buffer over `shape`, each once, in row-major
 * order (dimensions of size 1 aside); *count receives the count. */
int cpu_kept_whole(const struct gan_shape *s, const struct gan_operand *o, int64_t *count)
{
    int64_t n = 1;
    for (int d = s->ndim - 1; d >= 0; d--) {
        if (s->dim[d] == 1)
            continue;
        if (s->dim[d] == 0 || o->stride[d] != n)
            return 0;
        n *= s->dim[d];
    }
    *count = n;
    return o->offset == 0;
}

/* Whether o is one value for the whole walk. */
static int scalar(const struct gan_shape *s, const struct gan_operand *o)
{
    for (int d = 0; d < s->ndim; d++)
        if (s->dim[d] != 1 && o->stride[d] != 0)
            return 0;
    return 1;
}

/* Whether o is one value per channel of an NCHW walk of k's sizes (a bias). */
static int per_channel(const struct cpu_kept *k, const struct gan_shape *s,
                       const struct gan_operand *o)
{
    return s->ndim == 4 && s->dim[0] == k->n && s->dim[1] == k->c &&
           s->dim[2] * s->dim[3] == k->hw && o->stride[1] != 0 &&
           (s->dim[0] == 1 || o->stride[0] == 0) && (s->dim[2] == 1 || o->stride[2] == 0) &&
           (s->dim[3] == 1 || o->stride[3] == 0);
}

/* What an operand of a walk on k's blocks is. */
enum role {
    ROLE_TENSOR,    /* the whole of a tensor of k's sizes, in k's blocks */
    ROLE_CHANNEL,   /* one value per channel */
    ROLE_SCALAR,    /* one value */
};

/* Whether the walk can run on k's blocks: the output the whole of a tensor of k's
 * sizes, every input a tensor kept in k's blocks, a per-channel value or a scalar, as
 * role[i] says; *channels whether a per-channel input is among them. */
static int fits(const struct cpu_kept *k, const struct gan_shape *s,
                const struct gan_operand *ops, int nops, enum role *role, int *channels)
{
    const struct gan_operand *y = &ops[nops - 1];
    int64_t count;
    if ((y->dtype != GAN_F32 && y->dtype != GAN_BF16 && y->dtype != GAN_F16) ||
        !cpu_kept_whole(s, y, &count) || count != kept_elements(k))
        return 0;
    role[nops - 1] = ROLE_TENSOR;
    *channels = 0;
    for (int i = 0; i < nops - 1; i++) {
        const struct gan_operand *o = &ops[i];
        if (o->buf->kept.block) {
            if (!same_blocks(&o->buf->kept, k) || o->dtype != o->buf->kept.dtype ||
                !cpu_kept_whole(s, o, &count) || count != kept_elements(k))
                return 0;
            role[i] = ROLE_TENSOR;
        } else if (per_channel(k, s, o)) {
            role[i] = ROLE_CHANNEL;
            *channels = 1;
        } else if (scalar(s, o)) {
            role[i] = ROLE_SCALAR;
        } else {
            return 0;
        }
    }
    return 1;
}

/* A per-channel input laid out as one image of k's blocks, [c / block, hw, block], each
 * pixel a row of its block's channel values, in `into` (the operand scratch): the walk
 * is then [n, c·hw], every operand contiguous in it and this one read again for each
 * image. (Walking the blocks themselves, [n, c / block, hw, block], the per-channel
 * value's stride changes every `block` elements: runs that short cost more than the
 * copy.) */
static gan_status spread_channels(gan_backend *be, const struct cpu_kept *k,
                                  const struct gan_operand *o, struct gan_buffer *into)
{
    const size_t es = gan_dtype_size(o->dtype), row = (size_t)k->block * es;
    const size_t bytes = (size_t)(k->c * k->hw) * es;
    void *space = NULL;
    gan_status st = cpu_operand_scratch(be, bytes, &space);
    if (st != GAN_OK)
        return st;
    const unsigned char *src = o->buf->data + o->offset * es;
    for (int64_t b = 0; b < k->c / k->block; b++) {
        unsigned char *panel = (unsigned char *)space + (size_t)(b * k->hw) * row;
        for (int64_t i = 0; i < k->block; i++)
            memcpy(panel + (size_t)i * es, src + (size_t)((b * k->block + i) * o->stride[1]) * es,
                   es);
        for (int64_t p = 1; p < k->hw; p++)
            memcpy(panel + (size_t)p * row, panel, row);
    }
    memset(into, 0, sizeof *into);
    into->bytes = bytes;
    into->data = space;
    return GAN_OK;
}

/* The walk as [n, c·hw] over the blocks, a per-channel input spread into `into`. */
static gan_status walk_images(gan_backend *be, const struct cpu_kept *k, struct gan_shape *s,
                              struct gan_operand *ops, int nops, const enum role *role,
                              struct gan_buffer *into)
{
    const int64_t image = k->c * k->hw;
    for (int i = 0; i < nops; i++) {
        struct gan_operand *o = &ops[i];
        if (role[i] == ROLE_CHANNEL) {
            gan_status st = spread_channels(be, k, o, into);
            if (st != GAN_OK)
                return st;
            o->buf = into;
            o->offset = 0;
        }
        memset(o->stride, 0, sizeof o->stride);
        if (role[i] == ROLE_TENSOR)
            o->stride[0] = image;
        if (role[i] != ROLE_SCALAR)
            o->stride[1] = 1;
    }
    memset(s, 0, sizeof *s);
    s->ndim = 2;
    s->dim[0] = k->n;
    s->dim[1] = image;
    return GAN_OK;
}

int cpu_kept_elementwise(gan_backend *be, int nops, struct gan_shape *shape,
                         struct gan_operand *ops, struct gan_buffer *channels_buffer,
                         struct cpu_kept *out, gan_status *st)
{
    *st = GAN_OK;
    out->block = 0;
    const struct cpu_kept *k = NULL;
    int any = 0;
    for (int i = 0; i < nops; i++) {
        if (ops[i].buf->kept.block) {
            any = 1;
            if (i < nops - 1 && !k)
                k = &ops[i].buf->kept;
        }
    }
    if (!any)
        return 0;
    enum role role[3];
    int channels = 0;
    if (k && fits(k, shape, ops, nops, role, &channels)) {
        const struct cpu_kept blocks = *k;
        /* an output buffer holding other blocks (it is no input) is written whole */
        gan_buffer *y = ops[nops - 1].buf;
        if (y->kept.block && !same_blocks(&y->kept, &blocks) &&
            (*st = cpu_kept_overwritten(be, y, 0,
                                        (size_t)kept_elements(&blocks) *
                                            gan_dtype_size(ops[nops - 1].dtype))) != GAN_OK)
            return 0;
        if (channels &&
            (*st = walk_images(be, &blocks, shape, ops, nops, role, channels_buffer)) != GAN_OK)
            return 0;
        *out = blocks;
        out->dtype = ops[nops - 1].dtype;
        return 1;
    }
    for (int i = 0; i < nops - 1; i++)
        if ((*st = cpu_kept_plain(be, ops[i].buf)) != GAN_OK)
            return 0;
    *st = cpu_kept_written(be, shape, &ops[nops - 1]);
    return 0;
}

gan_status cpu_kept_written(gan_backend *be, const struct gan_shape *shape,
                            const struct gan_operand *y)
{
    if (!y->buf || !y->buf->kept.block)
        return GAN_OK;
    /* The elements written, where they are a contiguous run from the start: a
     * broadcast output (stride 0) writes fewer distinct ones. */
    struct gan_shape written = *shape;
    for (int d = 0; d < written.ndim; d++)
        if (y->stride[d] == 0)
            written.dim[d] = 1;
    int64_t count;
    if (cpu_kept_whole(&written, y, &count))
        return cpu_kept_overwritten(be, y->buf, 0, (size_t)count * gan_dtype_size(y->dtype));
    return cpu_kept_plain(be, y->buf);
}

gan_status cpu_kept_gemm(gan_backend *be, const struct gan_gemm *g)
{
    /* an empty product touches nothing; with k = 0, A and B are not read (C is beta·C) */
    if (g->m == 0 || g->n == 0)
        return GAN_OK;
    gan_status st = cpu_kept_read(be, g->a.buf, (size_t)g->k);
    if (st == GAN_OK)
        st = cpu_kept_read(be, g->b.buf, (size_t)g->k);
    if (st != GAN_OK || !g->c.buf || !g->c.buf->kept.block)
        return st;
    /* C written whole, from its buffer's start, without being read */
    const int64_t batch = g->batch > 1 ? g->batch : 1;
    if (g->beta == 0.0f && g->c.offset == 0 && g->ldc == g->n &&
        (batch == 1 || g->stride_c == g->m * g->n))
        return cpu_kept_overwritten(be, g->c.buf, 0,
                                    (size_t)(batch * g->m * g->n) *
                                        gan_dtype_size(g->c.dtype));
    return cpu_kept_plain(be, g->c.buf);
}

gan_status cpu_kept_read(gan_backend *be, gan_buffer *buf, size_t n)
{
    return n > 0 ? cpu_kept_plain(be, buf) : GAN_OK;
}

gan_status cpu_kept_ref_written(gan_backend *be, const struct gan_ref *r, size_t n)
{
    if (n == 0 || !r || !r->buf)
        return GAN_OK;
    const size_t size = gan_dtype_size(r->dtype);
    return cpu_kept_overwritten(be, r->buf, r->offset * size, n * size);
}

gan_status cpu_kept_call(gan_backend *be, const struct gan_ref **a, const struct gan_ref **b,
                         struct cpu_kept_copies *copies, float beta, const struct gan_ref *out,
                         size_t out_elements)
{
    const struct gan_ref **in[2] = { a, b };
    size_t at[2], bytes = 0;
    for (int i = 0; i < 2; i++) {
        const gan_buffer *buf = in[i] ? (*in[i])->buf : NULL;
        at[i] = bytes;
        if (buf && buf->kept.block)
            bytes += (kept_bytes(&buf->kept) + 63) & ~(size_t)63;
    }
    void *space = NULL;
    gan_status st = bytes ? cpu_operand_scratch(be, bytes, &space) : GAN_OK;
    if (st != GAN_OK)
        return st;
    for (int i = 0; i < 2; i++) {
        const gan_buffer *buf = in[i] ? (*in[i])->buf : NULL;
        if (!buf || !buf->kept.block)
            continue;
        const struct cpu_kept *k = &buf->kept;
        memset(&copies->buf[i], 0, sizeof copies->buf[i]);
        copies->buf[i].data = (unsigned char *)space + at[i];
        copies->buf[i].bytes = kept_bytes(k);
        move_out(be, k, buf->data, copies->buf[i].data);
        copies->ref[i] = **in[i];
        copies->ref[i].buf = &copies->buf[i];
        *in[i] = &copies->ref[i];
    }
    return beta == 0.0f ? cpu_kept_ref_written(be, out, out_elements)
                        : cpu_kept_plain(be, out->buf);
}

int cpu_kept_copy(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset, gan_buffer *src,
                  size_t src_byte_offset, size_t bytes, gan_status *st)
{
    if (!dst || !src || dst == src || !src->kept.block || src_byte_offset != 0)
        return 0;
    const struct cpu_kept *k = &src->kept;
    if (bytes != kept_bytes(k) || dst_byte_offset > dst->bytes || bytes > dst->bytes - dst_byte_offset)
        return 0;
    if ((*st = cpu_kept_overwritten(be, dst, dst_byte_offset, bytes)) != GAN_OK)
        return 1;
    move_out(be, k, src->data, dst->data + dst_byte_offset);
    return 1;
}
