/* SPDX-License-Identifier: MIT */
/* context.c — a compute context's lifetime (made over a backend, stepped, freed), its
 * error state and input checks, and the statistics of what it holds. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

/* ------------------------------------------------------------------ errors */

static gan_status ctx_vfail(gan_ctx *ctx, gan_status status, const char *fmt, va_list ap)
{
    /* The first failure explains the ones that follow from it (NULL inputs of the
     * next op in a chain), so it is the one kept. */
    if (ctx && ctx->status == GAN_OK && status != GAN_OK) {
        vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
        ctx->status = status;
    }
    return status;
}

gan_status ti_fail(gan_ctx *ctx, gan_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctx_vfail(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

gan_status ti_backend_fail(gan_ctx *ctx, const char *op, const char *kernel, gan_status st)
{
    const char *why = ctx->backend_message ? ctx->backend_message(ctx->backend_message_arg)
                                           : NULL;
    if (why && *why)
        return ti_fail(ctx, st, "%s: the backend's %s kernel failed: %s", op, kernel, why);
    return ti_fail(ctx, st, "%s: the backend's %s kernel failed (%s); the backend's log "
                   "has its reason", op, kernel, gan_status_string(st));
}

int ti_missing_kernel(gan_ctx *ctx, const char *op, const char *slot)
{
    ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: the backend has no %s kernel (its ops table "
            "leaves the slot empty or predates it): use a backend that provides it",
            op, slot);
    return 0;
}

gan_status gan_ctx_status(const gan_ctx *ctx)
{
    return ctx ? ctx->status : GAN_ERR_INVALID;
}

const char *gan_ctx_error(const gan_ctx *ctx)
{
    return ctx ? ctx->error : "the context is NULL";
}

gan_status gan_ctx_fail(gan_ctx *ctx, gan_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ctx_vfail(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

void gan_ctx_clear_error(gan_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->status = GAN_OK;
    ctx->error[0] = '\0';
}

const char *ti_dims_str(char *buf, size_t size, int ndim, const int64_t *dims)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld",
                                 (long long)dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

int ti_check_input(gan_ctx *ctx, const char *op, const char *name, const gan_tensor *t)
{
    if (!t) {
        /* After an earlier failure a NULL is its consequence; keep that message. */
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s is NULL; pass a tensor", op, name);
        return 0;
    }
    if (t->ctx != ctx) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: %s belongs to another context; tensors of "
                "different contexts cannot be mixed (copy it over with the host)", op, name);
        return 0;
    }
    if (t->dtype != GAN_F32 && t->dtype != GAN_F16 && t->dtype != GAN_BF16) {
        const char *dn = gan_dtype_name(t->dtype);
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: %s has dtype %s; ops take F32, F16 or BF16 "
                "tensors", op, name, dn ? dn : "(invalid)");
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ context */

gan_status gan_ctx_new(const struct gan_backend_ops *ops, gan_backend *be, gan_ctx **out)
{
    if (!out)
        return GAN_ERR_INVALID;
    *out = NULL;
    if (!ops || !be || ops->struct_size == 0)
        return GAN_ERR_INVALID;
    gan_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return GAN_ERR_NOMEM;
    /* A plugin built against an older, shorter table leaves the newer slots zero. */
    size_t n = ops->struct_size < sizeof ctx->ops ? ops->struct_size : sizeof ctx->ops;
    memcpy(&ctx->ops, ops, n);
    ctx->ops.struct_size = sizeof ctx->ops;
    ctx->be = be;
    ctx->backend_abi_minor = GAN_ABI_MINOR;
    ctx->next_id = 1;
    /* From 1, so that a tensor's zeroed cache and gradient records never look current. */
    ctx->step_no = 1;
    ctx->prec_mode = GAN_F32;
    ctx->prec_level = GAN_PRECISION_O2;
    *out = ctx;
    return GAN_OK;
}

void gan_ctx_set_backend_message(gan_ctx *ctx, const char *(*last_message)(void *arg),
                                 void *arg)
{
    if (!ctx)
        return;
    ctx->backend_message = last_message;
    ctx->backend_message_arg = arg;
}

void gan_ctx_set_backend_abi_minor(gan_ctx *ctx, unsigned minor)
{
    if (ctx)
        ctx->backend_abi_minor = minor;
}

unsigned gan_ctx_backend_abi_minor(const gan_ctx *ctx)
{
    return ctx ? ctx->backend_abi_minor : 0;
}

gan_backend *gan_ctx_backend(const gan_ctx *ctx)
{
    return ctx ? ctx->be : NULL;
}

const struct gan_backend_ops *gan_ctx_backend_ops(const gan_ctx *ctx)
{
    return ctx ? &ctx->ops : NULL;
}

gan_buffer *gan_tensor_buffer(const gan_tensor *t)
{
    return t ? t->buf : NULL;
}

void gan_ctx_no_grad_push(gan_ctx *ctx)
{
    if (ctx)
        ctx->no_grad++;
}

void gan_ctx_no_grad_pop(gan_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->no_grad == 0) {
        ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_no_grad_pop: no matching "
                "gan_ctx_no_grad_push; pushes and pops must pair");
        return;
    }
    ctx->no_grad--;
}

/* ------------------------------------------------------------------ steps and freeing */

void gan_ctx_step_end(gan_ctx *ctx)
{
    if (!ctx)
        return;
    /* The tape points at step tensors: it goes first. */
    ti_tape_clear(ctx);
    while (ctx->step_head) {
        gan_tensor *t = ctx->step_head;
        ctx->step_head = t->next;
        ti_tensor_release(ctx, t);
    }
    ctx->n_step = 0;
    ti_fp8_step_end(ctx);
    /* Casts cached on persistent tensors, and their 16-bit gradients, were step tensors:
     * a new step number makes every one of them stale at once. */
    ctx->step_no++;
}

void gan_ctx_free(gan_ctx *ctx)
{
    if (!ctx)
        return;
    gan_ctx_step_end(ctx);
    while (ctx->persist_head) {
        gan_tensor *t = ctx->persist_head;
        ctx->persist_head = t->next;
        ti_tensor_release(ctx, t);
    }
    ctx->n_persist = 0;
    gan_ctx_pool_trim(ctx);
    while (ctx->spare_tensors) {
        gan_tensor *t = ctx->spare_tensors;
        ctx->spare_tensors = t->next;
        free(t);
    }
    ti_tape_destroy(ctx);
    ti_precision_destroy(ctx);
    ti_fp8_destroy(ctx);
    free(ctx);
}

void gan_ctx_get_stats(const gan_ctx *ctx, struct gan_ctx_stats *stats)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof *stats);
    if (!ctx)
        return;
    stats->step_tensors = ctx->n_step;
    stats->persistent_tensors = ctx->n_persist;
    stats->nodes = ctx->n_nodes;
    stats->pool_buffers = ctx->pool_buffers;
    stats->pool_bytes = ctx->pool_bytes;
    stats->device_buffers = ctx->device_buffers;
    stats->device_bytes = ctx->device_bytes;
    stats->spare_tensors = ctx->n_spare_tensors;
    stats->spare_nodes = ctx->n_spare_nodes;
    stats->backend_allocs = ctx->backend_allocs;
    stats->backend_casts = ctx->backend_casts;
    stats->policy_casts = ctx->policy_casts;
    stats->cast_cache_hits = ctx->cast_cache_hits;
}
