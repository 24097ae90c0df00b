/* SPDX-License-Identifier: MIT */
/* pool.c — the context's pool of device buffers: freed buffers kept by size class and
 * handed to the next request of their class, so that steady training never allocates. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

/* ------------------------------------------------------------------ buffer pool
 * Training repeats the same shapes every step, so a freed buffer is kept under its
 * size class and handed to the next request of that class: after the first steps
 * the backend sees no allocations at all. Classes are 256 bytes and up, four per
 * power of two, so a buffer wastes less than a quarter of itself. */

static size_t pool_class(size_t bytes)
{
    if (bytes <= 256)
        return 256;
    size_t p = 256;
    while (p < bytes)
        p <<= 1;
    size_t step = p / 8;     /* classes 5p/8, 6p/8, 7p/8, p above p/2 */
    return (bytes + step - 1) / step * step;
}

/* The bucket of class `bytes`, made when absent (NULL only when out of memory). */
static struct ti_pool_bucket *pool_bucket(gan_ctx *ctx, size_t bytes, int create)
{
    size_t lo = 0, hi = ctx->n_buckets;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ctx->buckets[mid].bytes < bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ctx->n_buckets && ctx->buckets[lo].bytes == bytes)
        return &ctx->buckets[lo];
    if (!create)
        return NULL;
    if (ctx->n_buckets == ctx->cap_buckets) {
        size_t cap = ctx->cap_buckets ? 2 * ctx->cap_buckets : 16;
        struct ti_pool_bucket *b = realloc(ctx->buckets, cap * sizeof *b);
        if (!b)
            return NULL;
        ctx->buckets = b;
        ctx->cap_buckets = cap;
    }
    memmove(&ctx->buckets[lo + 1], &ctx->buckets[lo],
            (ctx->n_buckets - lo) * sizeof ctx->buckets[0]);
    memset(&ctx->buckets[lo], 0, sizeof ctx->buckets[lo]);
    ctx->buckets[lo].bytes = bytes;
    ctx->n_buckets++;
    return &ctx->buckets[lo];
}

/* A buffer of at least `bytes`; *cls receives its class. */
gan_status ti_pool_get(gan_ctx *ctx, const char *op, size_t bytes, gan_buffer **out,
                       size_t *cls)
{
    if (bytes > SIZE_MAX / 4)
        return ti_fail(ctx, GAN_ERR_NOMEM, "%s: %zu bytes is more than any device holds",
                       op, bytes);
    size_t c = pool_class(bytes);
    struct ti_pool_bucket *b = pool_bucket(ctx, c, 0);
    *cls = c;
    if (b && b->n > 0) {
        *out = b->bufs[--b->n];
        ctx->pool_buffers--;
        ctx->pool_bytes -= c;
        return GAN_OK;
    }
    if (!TI_HAS(ctx, op, buffer_alloc))
        return ctx->status;
    gan_buffer *buf = NULL;
    gan_status st = ctx->ops.buffer_alloc(ctx->be, c, &buf);
    if (st == GAN_OK && !buf)
        st = GAN_ERR_INTERNAL;
    if (st != GAN_OK)
        return ti_backend_fail(ctx, op, "buffer_alloc", st);
    ctx->backend_allocs++;
    ctx->device_buffers++;
    ctx->device_bytes += c;
    *out = buf;
    return GAN_OK;
}

static void pool_release_to_backend(gan_ctx *ctx, gan_buffer *buf, size_t cls)
{
    if (ctx->ops.buffer_free)
        ctx->ops.buffer_free(ctx->be, buf);
    ctx->device_buffers--;
    ctx->device_bytes -= cls;
}

void ti_pool_put(gan_ctx *ctx, gan_buffer *buf, size_t cls)
{
    if (!buf)
        return;
    struct ti_pool_bucket *b = pool_bucket(ctx, cls, 1);
    if (b && b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        gan_buffer **bufs = realloc(b->bufs, cap * sizeof *bufs);
        if (bufs) {
            b->bufs = bufs;
            b->cap = cap;
        }
    }
    if (!b || b->n == b->cap) {
        /* No room to remember it: giving it back is always correct. */
        pool_release_to_backend(ctx, buf, cls);
        return;
    }
    b->bufs[b->n++] = buf;
    ctx->pool_buffers++;
    ctx->pool_bytes += cls;
}

void gan_ctx_pool_trim(gan_ctx *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_buckets; i++) {
        struct ti_pool_bucket *b = &ctx->buckets[i];
        while (b->n > 0)
            pool_release_to_backend(ctx, b->bufs[--b->n], b->bytes);
        free(b->bufs);
    }
    free(ctx->buckets);
    ctx->buckets = NULL;
    ctx->n_buckets = ctx->cap_buckets = 0;
    ctx->pool_buffers = 0;
    ctx->pool_bytes = 0;
}
