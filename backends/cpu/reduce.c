/* SPDX-License-Identifier: MIT */
/* reduce.c — the CPU backend's reductions (sum, mean, max, min, sum of squares, abs-max)
 * along any set of axes, accumulated in FP32 with pairwise summation over blocks. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_backend.h"
#include "convert.h"
#include "../common/reduce_checks.h"
#include "../common/reduce_ops.h"

/* Accuracy. Every output accumulates in FP32 (the header's contract, and what a GPU
 * kernel does). Elements are first summed in blocks — a run of up to RED_RUN
 * contiguous elements split over 8 interleaved partial sums, or RED_VBLOCK reduced
 * elements per lane when many outputs are computed side by side — and the block
 * results are then combined pairwise (a binary-counter cascade, so the tree is
 * balanced whatever the count). The rounding error of a sum of n terms is thus about
 * (block length + log2(n / block)) · 2^-24 relative to Σ|x|, instead of n · 2^-24 for
 * a running sum: 10^7 copies of 0.1f sum to within a few ulps of 10^6.
 *
 * Semantics are backends/common/reduce_ops.h's, shared with the CUDA backend. axes = 0
 * reduces nothing: each output is its one input through the op (SUM, MEAN, MAX, MIN
 * copy; SUM_SQUARES squares; ABS_MAX takes |x|), a strided cast. */

#define RED_RUN 256     /* contiguous elements per block in the one-output-at-a-time walk */
#define RED_LANES 64    /* outputs computed side by side in the many-outputs walk */
#define RED_VBLOCK 32   /* reduced elements per block in that walk */
#define RED_LEVELS 64   /* cascade depth: enough for 2^64 blocks */

/* Whether op is a sum that the vector loops of `isa`'s level compute (reduce_lanes.h):
 * they widen 16-bit values in registers rather than through a staging copy. */
static int vector_sum(enum cpu_isa isa, enum gan_reduce_op op)
{
    return isa != CPU_ISA_PORTABLE &&
           (op == GAN_REDUCE_SUM || op == GAN_REDUCE_MEAN || op == GAN_REDUCE_SUM_SQUARES);
}

static const char *const reduce_names[GAN_REDUCE_OP_COUNT] = {
    "cpu_reduce(SUM)", "cpu_reduce(MEAN)", "cpu_reduce(MAX)", "cpu_reduce(MIN)",
    "cpu_reduce(SUM_SQUARES)", "cpu_reduce(ABS_MAX)"
};

/* The longest strided 16-bit run load_run gathers before converting it. */
#define RED_GATHER 256

/* A run of n elements of x as FP32: the memory itself when contiguous FP32,
 * otherwise converted into `stage` (stride 0 repeats one element). */
static const float *load_run(enum cpu_isa isa, const unsigned char *base, enum gan_dtype dtype,
                             int64_t off, int64_t stride, int64_t n, float *stage)
{
    if (dtype == GAN_F32 && stride == 1)
        return (const float *)base + off;
    if (stride == 1) {
        /* A contiguous 16-bit run: the block converter (F16C where the CPU has it). */
        cpu_convert(isa, base + (size_t)off * gan_dtype_size(dtype), dtype, stage, GAN_F32,
                    (size_t)n);
        return stage;
    }
    if (gan_dtype_size(dtype) == 2 && stride > 0 && n <= RED_GATHER) {
        /* A strided 16-bit run: gathered as bits, then converted as a block. */
        uint16_t raw[RED_GATHER];
        const uint16_t *src = (const uint16_t *)(const void *)base + off;
        for (int64_t i = 0; i < n; i++)
            raw[i] = src[i * stride];
        cpu_convert(isa, raw, dtype, stage, GAN_F32, (size_t)n);
        return stage;
    }
    for (int64_t i = 0; i < n; i++)
        stage[i] = cpu_load(base, dtype, off + i * stride);
    return stage;
}

/* Reduces a contiguous FP32 run of n ≤ RED_RUN elements. Eight interleaved partial
 * results let the compiler vectorise the sums and shorten each chain eightfold. */
static float run_reduce(enum gan_reduce_op op, const float *p, int64_t n)
{
    float acc[8];
    float id = gan_red_identity(op);
    int64_t i = 0;
    for (int j = 0; j < 8; j++)
        acc[j] = id;
    switch (op) {
    case GAN_REDUCE_SUM:
    case GAN_REDUCE_MEAN:
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += p[i + j];
        break;
    case GAN_REDUCE_SUM_SQUARES:
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] += p[i + j] * p[i + j];
        break;
    default:
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                acc[j] = gan_red_combine(op, acc[j], gan_red_transform(op, p[i + j]));
        break;
    }
    for (; i < n; i++)
        acc[i & 7] = gan_red_combine(op, acc[i & 7], gan_red_transform(op, p[i]));
    return gan_red_combine(op,
                           gan_red_combine(op, gan_red_combine(op, acc[0], acc[1]),
                                           gan_red_combine(op, acc[2], acc[3])),
                           gan_red_combine(op, gan_red_combine(op, acc[4], acc[5]),
                                           gan_red_combine(op, acc[6], acc[7])));
}

/* Pairwise combination of block results: level l holds the combination of 2^l
 * blocks, and pushing a block carries like incrementing a binary counter. */
struct cascade {
    uint64_t count;
    float level[RED_LEVELS];
};

static void cascade_push(enum gan_reduce_op op, struct cascade *c, float v)
{
    uint64_t k = c->count;
    int l = 0;
    for (; k & 1u; k >>= 1, l++)
        v = gan_red_combine(op, c->level[l], v);
    c->level[l] = v;
    c->count++;
}

static float cascade_result(enum gan_reduce_op op, const struct cascade *c)
{
    float r = gan_red_identity(op);
    uint64_t k = c->count;
    for (int l = 0; k; k >>= 1, l++)
        if (k & 1u)
            r = gan_red_combine(op, c->level[l], r);
    return r;
}

/* The same cascade for RED_LANES outputs at once. */
struct vcascade {
    uint64_t count;
    float level[RED_LEVELS][RED_LANES];
};

static void vcascade_push(enum gan_reduce_op op, struct vcascade *c, float *v, int w)
{
    uint64_t k = c->count;
    int l = 0;
    for (; k & 1u; k >>= 1, l++)
        for (int i = 0; i < w; i++)
            v[i] = gan_red_combine(op, c->level[l][i], v[i]);
    memcpy(c->level[l], v, (size_t)w * sizeof *v);
    c->count++;
}

static void vcascade_result(enum gan_reduce_op op, const struct vcascade *c, float *r, int w)
{
    float id = gan_red_identity(op);
    for (int i = 0; i < w; i++)
        r[i] = id;
    uint64_t k = c->count;
    for (int l = 0; k; k >>= 1, l++)
        if (k & 1u)
            for (int i = 0; i < w; i++)
                r[i] = gan_red_combine(op, c->level[l][i], r[i]);
}

/* acc[i] = combine(acc[i], t(p[i])) for w lanes, one loop per op. */
static void lanes_accumulate(enum gan_reduce_op op, float *acc, const float *p, int w)
{
    switch (op) {
    case GAN_REDUCE_SUM:
    case GAN_REDUCE_MEAN:
        for (int i = 0; i < w; i++) acc[i] += p[i];
        break;
    case GAN_REDUCE_SUM_SQUARES:
        for (int i = 0; i < w; i++) acc[i] += p[i] * p[i];
        break;
    default:
        for (int i = 0; i < w; i++)
            acc[i] = gan_red_combine(op, acc[i], gan_red_transform(op, p[i]));
        break;
    }
}

/* The reduction after validation: kept and reduced dimensions, each group with its
 * size-1 dimensions dropped and mergeable neighbours merged, in row-major order. */
struct red_plan {
    int nk, nr;
    int64_t kdim[GAN_MAX_DIMS], kx[GAN_MAX_DIMS], ky[GAN_MAX_DIMS];
    int64_t rdim[GAN_MAX_DIMS], rx[GAN_MAX_DIMS];
    int64_t rcount;    /* elements per output; 0 for an empty reduction */
};

/* The offsets in x and y of the output whose index over the kept dimensions `first`
 * dimensions long (row-major) is o. */
static void kept_offsets(const struct red_plan *p, int dims, int64_t o,
                         const struct gan_operand *x, const struct gan_operand *y,
                         int64_t *xoff, int64_t *yoff)
{
    *xoff = (int64_t)x->offset;
    *yoff = (int64_t)y->offset;
    for (int d = dims - 1; d >= 0; d--) {
        int64_t i = o % p->kdim[d];
        o /= p->kdim[d];
        *xoff += i * p->kx[d];
        *yoff += i * p->ky[d];
    }
}

/* One call's reduction, split across the instance's threads by outputs (or groups of
 * RED_LANES neighbouring outputs): each output is reduced whole by one thread, in the
 * same blocks and the same cascade as on one thread, so the results are the same bits
 * at any thread count. */
struct red_job {
    enum cpu_isa isa;
    enum gan_reduce_op op;
    const struct red_plan *p;
    const struct gan_operand *x, *y;
    int64_t groups; /* lane groups per row of the innermost kept dimension */
};

/* Outputs [begin, end), one at a time, each walking its reduced elements in runs along
 * the innermost reduced dimension: used when that dimension is contiguous in x (a row
 * reduction) or when there is a single output. */
static void reduce_by_output(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct red_job *j = arg;
    const enum cpu_isa isa = j->isa;
    const enum gan_reduce_op op = j->op;
    const struct red_plan *p = j->p;
    const struct gan_operand *x = j->x, *y = j->y;
    float stage[RED_RUN];
    struct cascade c;
    const unsigned char *xb = x->buf->data;
    unsigned char *yb = y->buf->data;
    int64_t ridx[GAN_MAX_DIMS] = { 0 };
    /* No reduced dimension (axes = 0, or all of size 1): one run of one element. */
    int nr = p->nr;
    int64_t rlen = nr ? p->rdim[nr - 1] : 1, rs = nr ? p->rx[nr - 1] : 0;
    int64_t nrows = p->rcount ? p->rcount / rlen : 0;

    for (int64_t o = begin; o < end; o++) {
        int64_t xoff, yoff;
        kept_offsets(p, p->nk, o, x, y, &xoff, &yoff);
        c.count = 0;
        int64_t roff = 0;
        for (int64_t row = 0; row < nrows; row++) {
            for (int64_t start = 0; start < rlen; start += RED_RUN) {
                int64_t n = rlen - start < RED_RUN ? rlen - start : RED_RUN;
                const float *v = load_run(isa, xb, x->dtype, xoff + roff + start * rs, rs, n,
                                          stage);
                cascade_push(op, &c, run_reduce(op, v, n));
            }
            for (int d = nr - 2; d >= 0; d--) {
                roff += p->rx[d];
                if (++ridx[d] < p->rdim[d])
                    break;
                roff -= p->rx[d] * p->rdim[d];
                ridx[d] = 0;
            }
        }
        cpu_store(yb, y->dtype, yoff, gan_red_finish(op, cascade_result(op, &c), p->rcount));
    }
}

/* Lane groups [begin, end): RED_LANES neighbouring outputs (along the innermost kept
 * dimension) at a time, walking the reduced elements once for all of them: used when
 * that dimension is contiguous in x (a column reduction such as a bias gradient over
 * the batch). */
static void reduce_by_lanes(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct red_job *j = arg;
    const enum cpu_isa isa = j->isa;
    const enum gan_reduce_op op = j->op;
    const struct red_plan *p = j->p;
    const struct gan_operand *x = j->x, *y = j->y;
    struct vcascade c; /* 16 KiB */
    float stage[RED_LANES], blk[RED_LANES], out[RED_LANES];
    const unsigned char *xb = x->buf->data;
    unsigned char *yb = y->buf->data;
    int64_t ridx[GAN_MAX_DIMS] = { 0 };
    int nk = p->nk - 1; /* outer kept dimensions */
    int64_t klen = p->kdim[nk], ks = p->kx[nk], kys = p->ky[nk];
    float id = gan_red_identity(op);
    /* Contiguous lanes of a sum go to the vector loop of the calling instance's level
     * (AVX-512 or AVX2): it widens 16-bit rows in registers rather than converting each
     * row through `stage`. */
    const int vector = ks == 1 && vector_sum(isa, op);

    for (int64_t g = begin; g < end; g++) {
        int64_t xoff, yoff;
        kept_offsets(p, nk, g / j->groups, x, y, &xoff, &yoff);
        int64_t start = (g % j->groups) * RED_LANES;
        int w = (int)(klen - start < RED_LANES ? klen - start : RED_LANES);
        int64_t base = xoff + start * ks;
        int inblk = 0;
        c.count = 0;
        for (int i = 0; i < w; i++)
            blk[i] = id;
        int64_t roff = 0;
        for (int64_t r = 0; r < p->rcount; r++) {
            if (vector)
                (isa == CPU_ISA_AVX512 ? cpu_vec_lanes_sum_avx512 : cpu_vec_lanes_sum_avx2)(
                    op == GAN_REDUCE_SUM_SQUARES, blk, xb, x->dtype, base + roff, w);
            else
                lanes_accumulate(op, blk,
                                 load_run(isa, xb, x->dtype, base + roff, ks, w, stage), w);
            if (++inblk == RED_VBLOCK) {
                vcascade_push(op, &c, blk, w);
                for (int i = 0; i < w; i++)
                    blk[i] = id;
                inblk = 0;
            }
            for (int d = p->nr - 1; d >= 0; d--) {
                roff += p->rx[d];
                if (++ridx[d] < p->rdim[d])
                    break;
                roff -= p->rx[d] * p->rdim[d];
                ridx[d] = 0;
            }
        }
        if (inblk)
            vcascade_push(op, &c, blk, w);
        vcascade_result(op, &c, out, w);
        for (int i = 0; i < w; i++)
            cpu_store(yb, y->dtype, yoff + (start + i) * kys,
                      gan_red_finish(op, out[i], p->rcount));
    }
}

/* A reduction of an NCHW tensor kept in channel blocks (kept_blocks.c) to one value per
 * channel, a bias gradient, which NCHW's plan computes one channel at a time
 * (reduce_by_output: a channel's pixels are contiguous, channels are not): each image's
 * pixels in runs of RED_RUN reduced by run_reduce, the runs' results combined by the
 * cascade. In blocks a pixel's `block` channels are contiguous instead, so the walk
 * computes a block's channels side by side, each lane doing for its channel what
 * run_reduce and the cascade do, in the same order: the same bits. */
struct kept_job {
    enum cpu_isa isa;
    enum gan_reduce_op op;
    const struct cpu_kept *k;
    const struct gan_operand *x, *y;
    int64_t rcount;
};

#define KEPT_MAX_BLOCK CPU_BLOCKS_RUN_MAX

/* Whether x, walked over shape, is a kept tensor whose channels the call reduces to one
 * value each. */
static int kept_by_channel(const struct gan_shape *shape, const struct gan_operand *x,
                           uint32_t axes)
{
    const struct cpu_kept *k = &x->buf->kept;
    int64_t count;
    return k->block && k->block <= KEPT_MAX_BLOCK && x->dtype == k->dtype &&
           shape->ndim == 4 && axes == 0xdu &&
           shape->dim[0] == k->n && shape->dim[1] == k->c &&
           shape->dim[2] * shape->dim[3] == k->hw && k->hw > 1 &&
           cpu_kept_whole(shape, x, &count);
}

/* What run_reduce does to a run of m pixels, for each of w channels side by side: rows
 * holds pixel i's channels at rows[i·w … i·w + w − 1]. */
static void lanes_run(enum gan_reduce_op op, float acc[8][KEPT_MAX_BLOCK], const float *rows,
                      int64_t m, int w)
{
    int64_t i = 0;
    switch (op) {
    case GAN_REDUCE_SUM:
    case GAN_REDUCE_MEAN:
        for (; i + 8 <= m; i += 8)
            for (int a = 0; a < 8; a++)
                for (int l = 0; l < w; l++)
                    acc[a][l] += rows[(i + a) * w + l];
        break;
    case GAN_REDUCE_SUM_SQUARES:
        for (; i + 8 <= m; i += 8)
            for (int a = 0; a < 8; a++)
                for (int l = 0; l < w; l++)
                    acc[a][l] += rows[(i + a) * w + l] * rows[(i + a) * w + l];
        break;
    default:
        for (; i + 8 <= m; i += 8)
            for (int a = 0; a < 8; a++)
                for (int l = 0; l < w; l++)
                    acc[a][l] = gan_red_combine(op, acc[a][l],
                                                gan_red_transform(op, rows[(i + a) * w + l]));
        break;
    }
    for (; i < m; i++)
        for (int l = 0; l < w; l++)
            acc[i & 7][l] = gan_red_combine(op, acc[i & 7][l],
                                            gan_red_transform(op, rows[i * w + l]));
}

/* Blocks of channels [begin, end). */
static void reduce_kept(void *arg, int part, int64_t begin, int64_t end)
{
    (void)part;
    const struct kept_job *j = arg;
    const enum gan_reduce_op op = j->op;
    const struct cpu_kept *k = j->k;
    const int w = (int)k->block;
    const size_t es = gan_dtype_size(j->x->dtype);
    const unsigned char *xb = j->x->buf->data;
    unsigned char *yb = j->y->buf->data;
    const int64_t ys = j->y->stride[1];
    const float id = gan_red_identity(op);
    struct vcascade c; /* 16 KiB */
    float stage[RED_RUN * KEPT_MAX_BLOCK], acc[8][KEPT_MAX_BLOCK], v[RED_LANES];
    /* the sums on the instance's vector level, reading x in its own type */
    CPU_VEC_BLOCKS_RUN((*const blocks_run)) =
        !vector_sum(j->isa, op) ? NULL
        : j->isa == CPU_ISA_AVX512 ? cpu_vec_blocks_run_avx512 : cpu_vec_blocks_run_avx2;

    for (int64_t g = begin; g < end; g++) {
        c.count = 0;
        for (int64_t n = 0; n < k->n; n++) {
            for (int64_t start = 0; start < k->hw; start += RED_RUN) {
                const int64_t m = k->hw - start < RED_RUN ? k->hw - start : RED_RUN;
                const int64_t off = (int64_t)j->x->offset + n * k->c * k->hw +
                                    (g * k->hw + start) * w;
                for (int a = 0; a < 8; a++)
                    for (int l = 0; l < w; l++)
                        acc[a][l] = id;
                if (blocks_run) {
                    blocks_run(op == GAN_REDUCE_SUM_SQUARES, acc, xb, j->x->dtype, off, m, w);
                } else {
                    const float *rows = (const float *)(const void *)xb + off;
                    if (j->x->dtype != GAN_F32) {
                        cpu_convert(j->isa, xb + (size_t)off * es, j->x->dtype, stage,
                                    GAN_F32, (size_t)(m * w));
                        rows = stage;
                    }
                    lanes_run(op, acc, rows, m, w);
                }
                for (int l = 0; l < w; l++)
                    v[l] = gan_red_combine(
                        op,
                        gan_red_combine(op, gan_red_combine(op, acc[0][l], acc[1][l]),
                                        gan_red_combine(op, acc[2][l], acc[3][l])),
                        gan_red_combine(op, gan_red_combine(op, acc[4][l], acc[5][l]),
                                        gan_red_combine(op, acc[6][l], acc[7][l])));
                vcascade_push(op, &c, v, w);
            }
        }
        vcascade_result(op, &c, v, w);
        for (int l = 0; l < w; l++)
            cpu_store(yb, j->y->dtype, (int64_t)j->y->offset + (g * w + l) * ys,
                      gan_red_finish(op, v[l], j->rcount));
    }
}

gan_status cpu_reduce(gan_backend *be, enum gan_reduce_op op, const struct gan_shape *shape,
                      const struct gan_operand *x, uint32_t axes,
                      const struct gan_operand *y)
{
    if ((unsigned)op >= GAN_REDUCE_OP_COUNT)
        return be->host->fail(be->host->ctx, GAN_ERR_INVALID,
                              "cpu_reduce: op %d is not a gan_reduce_op (0 to %d)",
                              (int)op, GAN_REDUCE_OP_COUNT - 1);
    const char *fn = reduce_names[op];
    int64_t rcount = 0, kcount = 0;
    gan_status st = gan_reduce_check(be->host, fn, shape, x, axes, y, &rcount, &kcount);
    if (st != GAN_OK)
        return st;
    if (kcount == 0)
        return GAN_OK; /* no outputs */
    if ((st = cpu_kept_written(be, shape, y)) != GAN_OK)
        return st;

    if (rcount > 0 && x->buf->kept.block && kept_by_channel(shape, x, axes)) {
        struct kept_job kj = { be->isa, op, &x->buf->kept, x, y, rcount };
        const int64_t blocks = kj.k->c / kj.k->block;
        int parts = cpu_parallel_parts(be, blocks, 1, rcount * kj.k->block);
        cpu_parallel_for(be, parts, blocks, 1, reduce_kept, &kj);
        return GAN_OK;
    }
    if ((st = cpu_kept_read(be, x->buf, (size_t)rcount)) != GAN_OK)
        return st;
    struct red_plan p;
    struct red_job j = { be->isa, op, &p, x, y, 1 };
    p.rcount = rcount;
    p.nk = gan_reduce_group(shape, axes, 0, x, y, p.kdim, p.kx, p.ky);
    p.nr = gan_reduce_group(shape, axes, 1, x, y, p.rdim, p.rx, NULL);
    if (rcount == 0)
        p.nr = 0; /* nothing to walk: every output is the op's identity */

    /* Side-by-side outputs pay off when they are neighbours in memory, or when the
     * reduced elements are not contiguous either; a contiguous innermost reduced
     * dimension (a row reduction) is read fastest one output at a time. */
    int lanes = 0;
    if (p.nk > 0) {
        int64_t ks = p.kx[p.nk - 1];
        int row_contig = p.nr > 0 && p.rx[p.nr - 1] == 1;
        lanes = ks == 1 || ks == -1 || !row_contig;
    }
    int64_t per_output = rcount > 0 ? rcount : 1;
    if (lanes) {
        int64_t klen = p.kdim[p.nk - 1];
        j.groups = (klen + RED_LANES - 1) / RED_LANES;
        int64_t units = kcount / klen * j.groups;
        int parts = cpu_parallel_parts(be, units, 1, per_output * RED_LANES);
        cpu_parallel_for(be, parts, units, 1, reduce_by_lanes, &j);
    } else {
        int parts = cpu_parallel_parts(be, kcount, 1, per_output);
        cpu_parallel_for(be, parts, kcount, 1, reduce_by_output, &j);
    }
    return GAN_OK;
}
