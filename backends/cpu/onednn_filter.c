/* SPDX-License-Identifier: MIT */
/* onednn_filter.c — a convolution's filter gradient through oneDNN on the instance's
 * threads. The batch is cut into equal parts; each part's images go through one
 * single-threaded backward-weights primitive into an FP32 partial gradient of their own,
 * the parts run at once on the backend's thread pool (thread_pool.c), and the partials
 * are summed in part order and rounded once to dw. How the batch is cut depends on the
 * convolution's shape alone, never on backend.threads, and a part's partial is the same
 * whichever thread computes it: the gradient has the same bits at any thread count.
 *
 * Why not oneDNN's own threads: its BF16 filter gradient (jit_bf16 without AMX) splits
 * the reduction over the batch between threads by their number, so its bits depend on
 * backend.threads, and it meets at barriers many times a call: on two busy cores, the
 * DCGAN's 14×14 and 7×7 layers took 16–43 ms a call on 2 threads against 0.5 ms on one
 * (bench/README.md). Here the parts never wait for each other, and a part that a busy
 * worker has not started is taken by another thread. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* At most this many parts: two for each thread of an 8-thread instance; each part keeps
 * a partial gradient, which the sum reads once. */
#define FILTER_MAX_PARTS 16
/* A part gets at least this many multiply-adds (2^24, about 0.3 ms of BF16 work on one
 * Zen 4 core), so that starting its primitive and summing its partial stay small beside
 * it. Measured on the DCGAN's 14×14 and 7×7 layers at batch 64 on a 2-core Zen 4 (the
 * fastest of 60 calls, BF16 and FP32 alike): in 2 parts, one thread took 0–5 % longer
 * than the single call and two threads 1.7–2.0 times less; in 4 parts, 1–9 % longer
 * and 1.4–1.8 times less; in 16, 15–40 % longer on one thread. */
#define FILTER_PART_WORK ((int64_t)1 << 24)
/* A part also sums at least this many products into each gradient element (images ×
 * output pixels), so that summing the partials adds a few per cent to the products at
 * most. */
#define FILTER_PART_TERMS ((int64_t)64)

int cpu_onednn_filter_parts(const struct gan_conv2d *c)
{
    const int64_t pixels = c->h_out * c->w_out;
    const int64_t per_image = c->c_out * c->c_in * c->kh * c->kw * pixels;
    int best = 1;
    /* The most parts that cut the batch evenly: every part then runs the same primitive. */
    for (int64_t p = 2; p <= FILTER_MAX_PARTS && p <= c->n; p++) {
        const int64_t images = c->n / p;
        if (c->n % p == 0 && images * per_image >= FILTER_PART_WORK &&
            images * pixels >= FILTER_PART_TERMS)
            best = (int)p;
    }
    return best;
}

/* One part: its images of x and dy (the caller's memory, moved to channel blocks or
 * reordered where the primitive wants another layout), its partial and scratchpad, and
 * a stream of its own, as parts
 * run on several threads at once. */
struct filter_part {
    struct cpu_onednn_arg x, dy;
    dnnl_memory_t partial;
    dnnl_memory_t scratch;      /* NULL when the primitive needs none */
    dnnl_stream_t stream;
};

struct cpu_onednn_filter {
    int parts;
    size_t x_count, dy_count;   /* elements of one part's images of x and of dy */
    size_t partial_floats;      /* one partial, in the primitive's (padded) layout */
    size_t partial_stride;      /* floats from one partial to the next, 64-byte aligned */
    float *partials;
    unsigned char *scratch;     /* parts × scratch_stride bytes */
    size_t scratch_stride;
    /* The sum (left in the first partial) into the caller's dw: `user` over dw, and a
     * reorder from the primitive's layout, or none when the two are the same. */
    dnnl_memory_t sum, user;
    dnnl_primitive_t reorder;
    dnnl_status_t failed[FILTER_MAX_PARTS];
    struct filter_part part[];
};

void cpu_onednn_filter_free(const struct cpu_dnnl_api *api, struct cpu_onednn_filter *f)
{
    for (int p = 0; p < f->parts; p++) {
        struct filter_part *q = &f->part[p];
        cpu_onednn_arg_clear(api, &q->x);
        cpu_onednn_arg_clear(api, &q->dy);
        if (q->partial)
            api->dnnl_memory_destroy(q->partial);
        if (q->scratch)
            api->dnnl_memory_destroy(q->scratch);
        if (q->stream)
            api->dnnl_stream_destroy(q->stream);
    }
    if (f->reorder)
        api->dnnl_primitive_destroy(f->reorder);
    if (f->sum)
        api->dnnl_memory_destroy(f->sum);
    if (f->user)
        api->dnnl_memory_destroy(f->user);
    free(f->partials);
    free(f->scratch);
    free(f);
}

static size_t align64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

/* The reorder of the summed partial into the caller's dw, unless the layouts match. */
static int build_output(struct cpu_onednn *o, struct cpu_onednn_filter *f,
                        const dnnl_memory_desc_t *user_md, const dnnl_memory_desc_t *sum_md)
{
    const struct cpu_dnnl_api *api = &o->api;
    if (api->dnnl_memory_create(&f->user, user_md, o->engine, DNNL_MEMORY_NONE) != dnnl_success) {
        f->user = NULL;
        return -1;
    }
    if (api->dnnl_memory_desc_equal(user_md, sum_md))
        return 0;
    if (api->dnnl_memory_create(&f->sum, sum_md, o->engine, f->partials) != dnnl_success) {
        f->sum = NULL;
        return -1;
    }
    dnnl_primitive_desc_t rpd;
    if (api->dnnl_reorder_primitive_desc_create(&rpd, sum_md, o->engine, user_md, o->engine,
                                                NULL) != dnnl_success)
        return -1;
    dnnl_status_t s = api->dnnl_primitive_create(&f->reorder, rpd);
    api->dnnl_primitive_desc_destroy(rpd);
    if (s != dnnl_success) {
        f->reorder = NULL;
        return -1;
    }
    return 0;
}

static size_t elements(const dnnl_memory_desc_t *md)
{
    size_t n = 1;
    for (int i = 0; i < md->ndims; i++)
        n *= (size_t)md->dims[i];
    return n;
}

int cpu_onednn_filter_build(gan_backend *be, struct cpu_onednn_entry *e,
                            dnnl_primitive_desc_t pd, int parts,
                            const dnnl_memory_desc_t *const users[3],
                            const dnnl_memory_desc_t inner[3])
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    if (parts < 2 || parts > FILTER_MAX_PARTS) {
        api->dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    /* The scratchpad is read before the descriptor goes into the primitive. */
    const dnnl_memory_desc_t *smd = api->dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    dnnl_memory_desc_t scratch_md;
    memset(&scratch_md, 0, sizeof scratch_md);
    size_t scratch_bytes = 0;
    if (smd) {
        scratch_md = *smd;
        scratch_bytes = api->dnnl_memory_desc_get_size(smd);
    }
    struct cpu_onednn_filter *f = calloc(1, sizeof *f + (size_t)parts * sizeof f->part[0]);
    if (!f) {
        api->dnnl_primitive_desc_destroy(pd);
        return -1;
    }
    e->filter = f;
    f->parts = parts;
    if (cpu_onednn_set_primitive(be, e, pd) != 0)
        return -1;
    f->x_count = elements(users[0]);
    f->dy_count = elements(users[1]);
    const size_t partial_bytes = api->dnnl_memory_desc_get_size(&inner[2]);
    f->partial_floats = partial_bytes / sizeof(float);
    f->partial_stride = align64(partial_bytes) / sizeof(float);
    f->partials = aligned_alloc(64, (size_t)parts * f->partial_stride * sizeof(float));
    f->scratch_stride = align64(scratch_bytes);
    if (scratch_bytes && !(f->scratch = aligned_alloc(64, (size_t)parts * f->scratch_stride)))
        return -1;
    if (!f->partials || build_output(o, f, users[2], &inner[2]) != 0)
        return -1;
    /* The padding of a blocked layout is summed with the rest: zeros, never garbage. */
    memset(f->partials, 0, (size_t)parts * f->partial_stride * sizeof(float));

    /* The inputs' reorders (where the backend does not move them itself) run on the
     * parts' threads: each with a scratchpad of the caller's (none), since oneDNN's own is
     * kept for the thread that made them. */
    dnnl_primitive_attr_t attr = NULL;
    if (api->dnnl_primitive_attr_create(&attr) != dnnl_success)
        return -1;
    int bad = api->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) !=
              dnnl_success;
    for (int p = 0; p < parts && !bad; p++) {
        struct filter_part *q = &f->part[p];
        bad = cpu_onednn_arg_init(o, &q->x, DNNL_ARG_SRC, 0, users[0], &inner[0], attr) != 0 ||
              cpu_onednn_arg_init(o, &q->dy, DNNL_ARG_DIFF_DST, 0, users[1], &inner[1], attr) != 0 ||
              api->dnnl_memory_create(&q->partial, &inner[2], o->engine,
                                      f->partials + (size_t)p * f->partial_stride) != dnnl_success ||
              api->dnnl_stream_create(&q->stream, o->engine, dnnl_stream_default_flags) !=
                  dnnl_success ||
              (scratch_bytes &&
               api->dnnl_memory_create(&q->scratch, &scratch_md, o->engine,
                                       f->scratch + (size_t)p * f->scratch_stride) != dnnl_success);
    }
    api->dnnl_primitive_attr_destroy(attr);
    return bad ? -1 : 0;
}

/* What the parts run on: the caller's x and dy, and the entry. */
struct parts_job {
    const struct cpu_dnnl_api *api;
    enum cpu_isa isa;
    struct cpu_onednn_entry *e;
    const unsigned char *x, *dy;
    unsigned kept;              /* bit i: input i is the caller's channel blocks */
};

/* One part on the calling thread: its inputs moved or reordered, then the primitive. */
static dnnl_status_t run_part(const struct parts_job *j, int p)
{
    const struct cpu_dnnl_api *api = j->api;
    struct cpu_onednn_filter *f = j->e->filter;
    struct filter_part *q = &f->part[p];
    struct cpu_onednn_arg *in[2] = { &q->x, &q->dy };
    const unsigned char *from[2] = {
        j->x + (size_t)p * f->x_count * gan_dtype_size(q->x.plain),
        j->dy + (size_t)p * f->dy_count * gan_dtype_size(q->dy.plain),
    };
    dnnl_exec_arg_t args[4];
    int n = 0;
    dnnl_status_t s;
    for (int i = 0; i < 2; i++) {
        struct cpu_onednn_arg *a = in[i];
        /* oneDNN reads the caller's inputs only; the handle is not const in its API */
        if ((s = api->dnnl_memory_set_data_handle(a->user, (void *)(uintptr_t)from[i])) !=
            dnnl_success)
            return s;
        if (a->blocks.block) {
            /* A part's images are a run of the whole in blocks as in NCHW: its blocks are
             * the caller's from the same element on, or moved (widened from the caller's
             * 16-bit blocks) into the part's own. */
            const int kept = (j->kept >> i) & 1u;
            if ((s = cpu_onednn_point_blocks(api, a, (void *)(uintptr_t)from[i], kept)) !=
                dnnl_success)
                return s;
            if (!kept)
                cpu_to_channel_blocks(j->isa, &a->blocks, from[i], a->plain, a->buffer, 0,
                                      a->blocks.panels);
            else if (a->plain != a->blocks.blocks)
                cpu_convert(j->isa, from[i], a->plain, a->buffer, a->blocks.blocks,
                            cpu_channel_blocks_count(&a->blocks));
        } else if (a->reorder) {
            dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, a->user }, { DNNL_ARG_TO, a->inner } };
            if ((s = api->dnnl_primitive_execute(a->reorder, q->stream, 2, r)) != dnnl_success)
                return s;
        }
        args[n++] = (dnnl_exec_arg_t){ a->which, a->inner ? a->inner : a->user };
    }
    args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_DIFF_WEIGHTS, q->partial };
    if (q->scratch)
        args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, q->scratch };
    if ((s = api->dnnl_primitive_execute(j->e->prim, q->stream, n, args)) != dnnl_success)
        return s;
    return api->dnnl_stream_wait(q->stream);
}

static void parts_range(void *arg, int unused, int64_t begin, int64_t end)
{
    (void)unused;
    const struct parts_job *j = arg;
    /* A worker thread has OpenMP's default team size: the primitive and the reorders
     * run on this thread alone, as the primitive was made for. */
    j->api->omp_set_num_threads(1);
    for (int64_t p = begin; p < end; p++)
        j->e->filter->failed[p] = run_part(j, (int)p);
}

/* The partials summed in part order into `out`, over a range of elements: each element
 * is its own sum, so any split across threads gives the same bits. */
struct sum_job {
    const struct cpu_onednn_filter *f;
    float *out;
};

static void sum_range(void *arg, int unused, int64_t begin, int64_t end)
{
    (void)unused;
    const struct sum_job *j = arg;
    const struct cpu_onednn_filter *f = j->f;
    enum { BLOCK = 256 };
    float t[BLOCK];
    for (int64_t s = begin; s < end; s += BLOCK) {
        const size_t m = (size_t)(end - s < BLOCK ? end - s : BLOCK);
        memcpy(t, f->partials + s, m * sizeof(float));
        for (int p = 1; p < f->parts; p++) {
            const float *src = f->partials + (size_t)p * f->partial_stride + s;
            for (size_t i = 0; i < m; i++)
                t[i] += src[i];
        }
        memcpy(j->out + s, t, m * sizeof(float));
    }
}

static gan_status failed(gan_backend *be, const struct cpu_onednn_entry *e, const char *what,
                         dnnl_status_t s)
{
    return be->host->fail(be->host->ctx, GAN_ERR_DEVICE,
                          "oneDNN %s (%s, filter gradient in parts) failed with status %d; set "
                          "backend.gemm = \"openblas\" to compute without oneDNN", what, e->impl,
                          (int)s);
}

gan_status cpu_onednn_filter_execute(gan_backend *be, struct cpu_onednn_entry *e,
                                     void *const *ptrs, unsigned kept)
{
    struct cpu_onednn *o = be->onednn;
    const struct cpu_dnnl_api *api = &o->api;
    struct cpu_onednn_filter *f = e->filter;
    struct parts_job j = { api, be->isa, e, ptrs[0], ptrs[1], kept };
    cpu_parallel_for(be, f->parts, f->parts, 1, parts_range, &j);
    for (int p = 0; p < f->parts; p++)
        if (f->failed[p] != dnnl_success)
            return failed(be, e, "primitive", f->failed[p]);

    /* Summed into the first partial, reordered from there into dw; or straight into dw
     * when it has the primitive's layout. */
    struct sum_job sj = { f, f->reorder ? f->partials : ptrs[2] };
    const int64_t n = (int64_t)f->partial_floats;
    int parts = cpu_parallel_parts(be, n, 256, f->parts + 1);
    cpu_parallel_for(be, parts, n, 256, sum_range, &sj);
    if (!f->reorder)
        return GAN_OK;
    api->omp_set_num_threads(be->threads);
    cpu_pool_hush(be);
    dnnl_status_t s = api->dnnl_memory_set_data_handle(f->user, ptrs[2]);
    dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, f->sum }, { DNNL_ARG_TO, f->user } };
    if (s == dnnl_success)
        s = api->dnnl_primitive_execute(f->reorder, o->stream, 2, r);
    if (s == dnnl_success)
        s = api->dnnl_stream_wait(o->stream);
    return s == dnnl_success ? GAN_OK : failed(be, e, "reorder", s);
}

int cpu_onednn_filter_takes_plain(struct cpu_onednn_entry *e, int i, enum gan_dtype dtype)
{
    struct cpu_onednn_filter *f = e->filter;
    if (i > 1)
        return 0;
    /* every part has the same descriptors, so the first speaks for all */
    const struct cpu_onednn_arg *a = i == 0 ? &f->part[0].x : &f->part[0].dy;
    if (!a->blocks.block || a->blocks.blocks != GAN_F32)
        return 0;
    for (int p = 0; p < f->parts; p++)
        (i == 0 ? &f->part[p].x : &f->part[p].dy)->plain = dtype;
    return 1;
}

const struct cpu_channel_blocks *cpu_onednn_filter_blocks(const struct cpu_onednn_entry *e,
                                                          int i)
{
    return i == 0 ? &e->filter->part[0].x.blocks : &e->filter->part[0].dy.blocks;
}
