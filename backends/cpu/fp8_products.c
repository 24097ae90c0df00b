/* SPDX-License-Identifier: MIT */
/* fp8_products.c — the CPU backend's FP8 measurement, quantization and dequantization
 * (backend.h: fp8_stats, fp8_quantize, fp8_dequantize): one pass each over an operand,
 * a chunk of a row at a time, split across the instance's threads. */
#include "config.h"

#include <string.h>

#include "fp8_products.h"
#include "../common/fp8_ops.h"
#include "../common/fp8_checks.h"

/* Every pass walks the operand's elements in row-major order, a chunk (at most
 * FP8_CHUNK elements of one row) at a time: the input is widened into an FP32 stage
 * (exactly), each element's scale is put beside it, and fp8_passes.c's loops and
 * cast_fp8.c's converters run over the chunk at the instance's vector level. A part
 * of a threaded pass is a run of whole chunks or rows; what it measures is kept per
 * part (counts are integers, maxima exact), and parts are merged in their order, so
 * the results are the same bits at any thread count. */

/* ---------------------------------------------------------------- walking an operand */

/* The operand a pass walks, and how each element finds its scale. */
struct fp8_walk {
    struct gan_fp8_layout l;
    int64_t nb;               /* blocks along k (1 per tensor) */
    const float *scale;       /* F32 scales in the layout's order, or NULL */
};

static struct fp8_walk walk_of(const struct gan_fp8_layout *l, const float *scale)
{
    struct fp8_walk w = { *l, gan_fp8_blocks_along_k(l), scale };
    if (w.l.block <= 0)
        w.l.block = 0;
    return w;
}

/* The chunk that starts at element e, before element `end`: its row, first column and
 * length. Per tensor, a chunk may run across rows: no element's scale depends on it. */
static size_t chunk_at(const struct fp8_walk *w, int64_t e, int64_t end, int64_t *r,
                       int64_t *c0)
{
    int64_t len = end - e < FP8_CHUNK ? end - e : FP8_CHUNK;
    if (w->l.block == 0) {
        *r = 0;
        *c0 = e;
        return (size_t)len;
    }
    *r = e / w->l.cols;
    *c0 = e % w->l.cols;
    if (len > w->l.cols - *c0)
        len = w->l.cols - *c0;
    return (size_t)len;
}

/* The scales (invert 0) or their FP32 inverses (invert 1) of the n elements of row r
 * from column c0, in order: `own` filled by runs along a row, or the scales themselves
 * where a row reads them in order (ALONG_COLUMNS). Per tensor, `own` already holds the
 * one value FP8_CHUNK times. */
static const float *chunk_scales(enum cpu_isa isa, const struct fp8_walk *w, int invert,
                                 int64_t r, int64_t c0, size_t n, float *own)
{
    const struct gan_fp8_layout *l = &w->l;
    if (l->block == 0)
        return own;
    if (l->along == GAN_FP8_ALONG_COLUMNS) {
        const float *s = w->scale + (r / l->block) * l->cols + c0;
        if (!invert)
            return s;
        cpu_fp8_recip(isa, s, own, n);
        return own;
    }
    for (size_t i = 0; i < n;) {
        int64_t blk = (c0 + (int64_t)i) / l->block;
        size_t run_end = (size_t)((blk + 1) * l->block - c0), stop = run_end < n ? run_end : n;
        float s = w->scale[r * w->nb + blk];
        cpu_fp8_fill(isa, own + i, invert ? 1.0f / s : s, stop - i);
        i = stop;
    }
    return own;
}

/* The per-tensor scale (or its inverse) over a whole chunk. */
static void fill_tensor_scale(enum cpu_isa isa, const struct fp8_walk *w, int invert,
                              float *own)
{
    if (w->l.block == 0)
        cpu_fp8_fill(isa, own, invert ? 1.0f / w->scale[0] : w->scale[0], FP8_CHUNK);
}

/* n elements of float type xt at element e of x as FP32: x itself, or the stage. */
static const float *widen_chunk(enum cpu_isa isa, const unsigned char *x, enum gan_dtype xt,
                                int64_t e, size_t n, float *stage)
{
    if (xt == GAN_F32)
        return (const float *)(const void *)x + e;
    cpu_convert(isa, x + (size_t)e * gan_dtype_size(xt), xt, stage, GAN_F32, n);
    return stage;
}

/* ---------------------------------------------------------------- fp8_stats */

struct stats_part {
    uint64_t zeros, nonfinite;
    uint32_t amax_bits;
};

struct stats_job {
    enum cpu_isa isa;
    struct fp8_walk w;
    const unsigned char *x;
    enum gan_dtype xt;
    int by_rows;              /* parts are runs of rows (units are rows, not elements) */
    uint32_t *block_amax;     /* as FP32 bits, in the layout's scale order; or NULL */
    uint64_t *hist;           /* GAN_FP8_LOG2_BINS per part, or NULL */
    struct stats_part part[CPU_MAX_PARTS];
};

/* The amax of each block a chunk of row r touches, merged into the blocks' entries. */
static void chunk_block_amax(const struct stats_job *j, int64_t r, int64_t c0, size_t n,
                             const uint32_t *ab)
{
    const struct gan_fp8_layout *l = &j->w.l;
    if (l->along == GAN_FP8_ALONG_COLUMNS) {
        cpu_fp8_max_into(j->isa, j->block_amax + (r / l->block) * l->cols + c0, ab, n);
        return;
    }
    for (size_t i = 0; i < n;) {
        int64_t blk = (c0 + (int64_t)i) / l->block;
        size_t run_end = (size_t)((blk + 1) * l->block - c0), stop = run_end < n ? run_end : n;
        uint32_t *m = &j->block_amax[r * j->w.nb + blk];
        *m = cpu_fp8_max(j->isa, ab + i, stop - i, *m);
        i = stop;
    }
}

/* The counts and amax alone, of F32 and BF16 read where they lie, a run at a time. */
static struct stats_part stats_direct(const struct stats_job *j, int64_t begin, int64_t end)
{
    float stage[FP8_CHUNK];
    struct stats_part t = { 0, 0, 0 };
    const int staged = j->xt == GAN_F16;
    const int64_t most = staged ? FP8_CHUNK : FP8_RUN;
    for (int64_t e = begin; e < end;) {
        int64_t len = end - e < most ? end - e : most;
        const void *x = staged ? (const void *)widen_chunk(j->isa, j->x, j->xt, e, (size_t)len,
                                                          stage)
                               : (const void *)(j->x + (size_t)e * gan_dtype_size(j->xt));
        struct cpu_fp8_counts c = { .amax_bits = t.amax_bits };
        cpu_fp8_measure_direct(j->isa, x, staged ? GAN_F32 : j->xt, (size_t)len, &c);
        t.zeros += c.zeros;
        t.nonfinite += c.nonfinite;
        t.amax_bits = c.amax_bits;
        e += len;
    }
    return t;
}

static void stats_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct stats_job *j = arg;
    float stage[FP8_CHUNK];
    uint32_t ab[FP8_CHUNK];
    uint64_t *hist = j->hist ? j->hist + (size_t)part * GAN_FP8_LOG2_BINS : NULL;
    struct stats_part t = { 0, 0, 0 };
    /* without block maxima or a histogram, no element's magnitude need be kept */
    if (!hist && !(j->block_amax && j->w.l.block)) {
        j->part[part] = stats_direct(j, begin, end);
        return;
    }
    if (j->by_rows) {
        begin *= j->w.l.cols;
        end *= j->w.l.cols;
    }
    for (int64_t e = begin; e < end;) {
        int64_t r, c0;
        size_t n = chunk_at(&j->w, e, end, &r, &c0);
        const float *x = widen_chunk(j->isa, j->x, j->xt, e, n, stage);
        struct cpu_fp8_counts c = { .amax_bits = t.amax_bits };
        cpu_fp8_measure(j->isa, x, n, ab, &c);
        t.zeros += c.zeros;
        t.nonfinite += c.nonfinite;
        t.amax_bits = c.amax_bits;
        if (j->block_amax && j->w.l.block)
            chunk_block_amax(j, r, c0, n, ab);
        if (hist)
            for (size_t i = 0; i < n; i++)
                if (ab[i])
                    hist[gan_fp8_log2_bin(ab[i])]++;
        e += (int64_t)n;
    }
    j->part[part] = t;
}

gan_status cpu_fp8_stats(gan_backend *be, const struct gan_fp8_layout *l,
                         const struct gan_ref *x, int histogram, float *block_amax,
                         struct gan_fp8_stats *stats)
{
    int64_t n = 0;
    gan_status st = gan_fp8_check_stats(be->host, l, x, block_amax, stats, &n);
    if (st == GAN_OK)
        st = cpu_kept_read(be, x->buf, (size_t)n);
    if (st != GAN_OK || n == 0)
        return st;
    const int64_t count = gan_fp8_scale_count(l);

    struct stats_job j;
    memset(&j, 0, sizeof j);
    j.isa = be->isa;
    j.w = walk_of(l, NULL);
    j.x = cpu_ref_ptr(x);
    j.xt = x->dtype;
    /* Block maxima are written by the part that owns the block's rows: parts are then
     * runs of whole rows (of whole bands of `block` rows down columns). */
    j.by_rows = block_amax && j.w.l.block;
    int64_t units = j.by_rows ? l->rows : n;
    int64_t align = !j.by_rows ? FP8_CHUNK
                    : l->along == GAN_FP8_ALONG_COLUMNS ? j.w.l.block : 1;
    int parts = cpu_parallel_parts(be, units, align, j.by_rows ? l->cols : 1);

    size_t amax_bytes = j.by_rows ? (size_t)count * sizeof(uint32_t) : 0;
    size_t hist_bytes = histogram ? (size_t)parts * GAN_FP8_LOG2_BINS * sizeof(uint64_t) : 0;
    if (amax_bytes + hist_bytes) {
        unsigned char *space;
        if ((st = cpu_scratch(be, hist_bytes + amax_bytes, (void **)&space)) != GAN_OK)
            return st;
        memset(space, 0, hist_bytes + amax_bytes);
        j.hist = histogram ? (uint64_t *)(void *)space : NULL;
        j.block_amax = j.by_rows ? (uint32_t *)(void *)(space + hist_bytes) : NULL;
    }
    cpu_parallel_for(be, parts, units, align, stats_range, &j);

    uint32_t amax_bits = 0;
    for (int p = 0; p < parts; p++) {
        stats->zeros += j.part[p].zeros;
        stats->nonfinite += j.part[p].nonfinite;
        amax_bits = j.part[p].amax_bits > amax_bits ? j.part[p].amax_bits : amax_bits;
        for (int b = 0; histogram && b < GAN_FP8_LOG2_BINS; b++)
            stats->log2_hist[b] += j.hist[(size_t)p * GAN_FP8_LOG2_BINS + (size_t)b];
    }
    stats->amax = gan_bits_f32(amax_bits);
    if (block_amax && j.by_rows)
        for (int64_t i = 0; i < count; i++)
            block_amax[i] = gan_bits_f32(j.block_amax[i]);
    else if (block_amax)
        block_amax[0] = stats->amax;
    return GAN_OK;
}

/* ---------------------------------------------------------------- fp8_quantize */

struct quantize_job {
    enum cpu_isa isa;
    struct fp8_walk w;
    const unsigned char *x;
    enum gan_dtype xt;
    uint8_t *y;
    struct cpu_fp8_encoding k;
    struct gan_fp8_tally part[CPU_MAX_PARTS];
};

/* One pass (cpu_fp8_quantize_run) over each run: per tensor, runs of FP8_RUN elements
 * read where they lie with the one scale; per block, chunks of a row with their scales
 * beside them. F16 is staged in FP32 a chunk at a time, exactly. The counts are kept
 * whether or not the caller asked for them: they cost less than a second pass would. */
static void quantize_range(void *arg, int part, int64_t begin, int64_t end)
{
    struct quantize_job *j = arg;
    float stage[FP8_CHUNK], own[FP8_CHUNK];
    struct gan_fp8_tally t = { 0, 0, 0, 0, 0 };
    const int per_tensor = j->w.l.block == 0, staged = j->xt == GAN_F16;
    const int64_t most = per_tensor && !staged ? FP8_RUN : FP8_CHUNK;
    for (int64_t e = begin; e < end;) {
        int64_t r = 0, c0 = e;
        size_t n = per_tensor ? (size_t)(end - e < most ? end - e : most)
                              : chunk_at(&j->w, e, end, &r, &c0);
        const void *x = staged ? (const void *)widen_chunk(j->isa, j->x, j->xt, e, n, stage)
                               : (const void *)(j->x + (size_t)e * gan_dtype_size(j->xt));
        const float *s_at = per_tensor ? NULL : chunk_scales(j->isa, &j->w, 0, r, c0, n, own);
        struct cpu_fp8_counts c = { .amax_bits = t.amax_bits };
        cpu_fp8_quantize_run(j->isa, x, staged ? GAN_F32 : j->xt, j->w.scale[0], s_at,
                             j->y + e, n, &j->k, &c);
        t.overflow += c.overflow;
        t.underflow += c.underflow;
        t.subnormal += c.subnormal;
        t.nonfinite += c.nonfinite;
        t.amax_bits = c.amax_bits;
        e += (int64_t)n;
    }
    j->part[part] = t;
}

gan_status cpu_fp8_quantize(gan_backend *be, const struct gan_fp8_layout *l,
                            const struct gan_ref *x, const struct gan_ref *scale,
                            uint32_t flags, const struct gan_ref *y,
                            struct gan_fp8_cast_stats *stats)
{
    int64_t n = 0;
    gan_status st = gan_fp8_check_quantize(be->host, l, x, scale, flags, y, stats, &n);
    if (st != GAN_OK || n == 0)
        return st;
    gan_buffer *const touched[] = { x->buf, scale->buf, y->buf };
    for (size_t i = 0; i < 3 && st == GAN_OK; i++)
        st = cpu_kept_plain(be, touched[i]);
    if (st != GAN_OK)
        return st;
    struct quantize_job j;
    memset(&j, 0, sizeof j);
    j.isa = be->isa;
    j.w = walk_of(l, (const float *)(const void *)cpu_ref_ptr(scale));
    j.x = cpu_ref_ptr(x);
    j.xt = x->dtype;
    j.y = cpu_ref_ptr(y);
    j.k = cpu_fp8_encoding_of(y->dtype, (flags & GAN_CAST_SATURATE) != 0);
    int parts = cpu_parallel_parts(be, n, FP8_CHUNK, 2);
    cpu_parallel_for(be, parts, n, FP8_CHUNK, quantize_range, &j);
    if (!stats)
        return GAN_OK;
    uint32_t amax_bits = 0;
    for (int p = 0; p < parts; p++) {
        stats->overflow += j.part[p].overflow;
        stats->underflow += j.part[p].underflow;
        stats->subnormal += j.part[p].subnormal;
        stats->nonfinite += j.part[p].nonfinite;
        amax_bits = j.part[p].amax_bits > amax_bits ? j.part[p].amax_bits : amax_bits;
    }
    stats->amax = gan_bits_f32(amax_bits);
    return GAN_OK;
}

/* ---------------------------------------------------------------- fp8_dequantize */

/* What a dequantizing pass writes: y in its dtype, q · inv rounded once (the slot
 * fp8_dequantize, and gemm_fp8's widening into FP32); or BF16 by truncation, where the
 * caller knows q · inv exact in BF16 (gemm_fp8's BF16 route). */
enum widen_kind { WIDEN_ROUNDED, WIDEN_BF16_EXACT };

struct dequantize_job {
    enum cpu_isa isa;
    struct fp8_walk w;
    const uint8_t *q;
    enum gan_dtype qt;
    unsigned char *y;
    enum gan_dtype yt;
    enum widen_kind kind;
};

static void dequantize_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct dequantize_job *j = arg;
    float stage[FP8_CHUNK], own[FP8_CHUNK], prod[FP8_CHUNK];
    (void)part;
    fill_tensor_scale(j->isa, &j->w, 1, own);
    for (int64_t e = begin; e < end;) {
        int64_t r, c0;
        size_t n = chunk_at(&j->w, e, end, &r, &c0);
        cpu_fp8_decode(j->isa, j->q + e, stage, n, j->qt);
        const float *inv = chunk_scales(j->isa, &j->w, 1, r, c0, n, own);
        if (j->kind == WIDEN_BF16_EXACT) {
            cpu_fp8_bf16_top(j->isa, stage, inv, (uint16_t *)(void *)j->y + e, n);
        } else if (j->yt == GAN_F32) {
            cpu_fp8_mul(j->isa, stage, inv, (float *)(void *)j->y + e, n);
        } else {
            /* rounded to odd in FP32, then once to nearest even in 16 bits */
            cpu_fp8_mul_odd(j->isa, stage, inv, prod, n);
            cpu_convert(j->isa, prod, GAN_F32, j->y + (size_t)e * gan_dtype_size(j->yt), j->yt,
                        n);
        }
        e += (int64_t)n;
    }
}

static void dequantize_run(gan_backend *be, const struct gan_fp8_layout *l, const uint8_t *q,
                           enum gan_dtype qt, const float *scale, void *y, enum gan_dtype yt,
                           enum widen_kind kind)
{
    struct dequantize_job j = { be->isa, walk_of(l, scale), q, qt, y, yt, kind };
    int64_t n = l->rows * l->cols;
    int parts = cpu_parallel_parts(be, n, FP8_CHUNK, 1);
    cpu_parallel_for(be, parts, n, FP8_CHUNK, dequantize_range, &j);
}

void cpu_fp8_widen(gan_backend *be, const struct gan_fp8_layout *l, const uint8_t *q,
                   enum gan_dtype qt, const float *scale, float *y)
{
    dequantize_run(be, l, q, qt, scale, y, GAN_F32, WIDEN_ROUNDED);
}

/* Per tensor every element of one sign and magnitude widens alike: a table of the 128
 * magnitudes' BF16 bits (q·inv by the same exact decoding and FP32 product as the
 * blocks' pass) replaces the decoding and the product. */
struct table_job {
    enum cpu_isa isa;
    const uint8_t *q;
    uint16_t *y;
    uint16_t table[128];
};

static void table_range(void *arg, int part, int64_t begin, int64_t end)
{
    const struct table_job *j = arg;
    (void)part;
    cpu_fp8_table_bf16(j->isa, j->q + begin, j->table, j->y + begin, (size_t)(end - begin));
}

void cpu_fp8_widen_bf16(gan_backend *be, const struct gan_fp8_layout *l, const uint8_t *q,
                        enum gan_dtype qt, const float *scale, uint16_t *y)
{
    if (l->block > 0) {
        dequantize_run(be, l, q, qt, scale, y, GAN_BF16, WIDEN_BF16_EXACT);
        return;
    }
    struct table_job j;
    j.isa = be->isa;
    j.q = q;
    j.y = y;
    const float inv = 1.0f / scale[0];
    for (uint32_t m = 0; m < 128; m++)
        j.table[m] = (uint16_t)(gan_f32_bits(gan_fp8_decode(qt, m) * inv) >> 16);
    const int64_t n = l->rows * l->cols;
    int parts = cpu_parallel_parts(be, n, FP8_CHUNK, 1);
    cpu_parallel_for(be, parts, n, FP8_CHUNK, table_range, &j);
}

gan_status cpu_fp8_dequantize(gan_backend *be, const struct gan_fp8_layout *l,
                              const struct gan_ref *q, const struct gan_ref *scale,
                              const struct gan_ref *y)
{
    int64_t n = 0;
    gan_status st = gan_fp8_check_dequantize(be->host, l, q, scale, y, &n);
    if (st != GAN_OK || n == 0)
        return st;
    gan_buffer *const touched[] = { q->buf, scale->buf, y->buf };
    for (size_t i = 0; i < 3 && st == GAN_OK; i++)
        st = cpu_kept_plain(be, touched[i]);
    if (st != GAN_OK)
        return st;
    dequantize_run(be, l, cpu_ref_ptr(q), q->dtype,
                   (const float *)(const void *)cpu_ref_ptr(scale), cpu_ref_ptr(y), y->dtype,
                   WIDEN_ROUNDED);
    return GAN_OK;
}
