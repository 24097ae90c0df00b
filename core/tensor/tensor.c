/* tensor.c — the compute context, its pooled device memory and the tensors on it:
 * creation, host transfers, errors, and the kernel views the ops are built from. */
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
static gan_status pool_get(gan_ctx *ctx, const char *op, size_t bytes, gan_buffer **out,
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

static void pool_put(gan_ctx *ctx, gan_buffer *buf, size_t cls)
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

/* ------------------------------------------------------------------ tensors */

static void list_push(gan_tensor **head, gan_tensor *t)
{
    t->prev = NULL;
    t->next = *head;
    if (*head)
        (*head)->prev = t;
    *head = t;
}

static void list_remove(gan_tensor **head, gan_tensor *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        *head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
}

static gan_tensor *tensor_alloc(gan_ctx *ctx, const char *op, enum gan_dtype dtype, int ndim,
                                const int64_t *dims, int persistent)
{
    char shape[160];
    if (gan_dtype_size(dtype) == 0) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: dtype %d is not a gan_dtype", op, (int)dtype);
        return NULL;
    }
    if (ndim < 0 || ndim > GAN_TENSOR_MAX_DIMS || (ndim > 0 && !dims)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: ndim is %d%s; a tensor has 0 to %d dimensions",
                op, ndim, ndim > 0 && !dims ? " with dims NULL" : "", GAN_TENSOR_MAX_DIMS);
        return NULL;
    }
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 0 || (dims[d] > 0 && numel > INT64_MAX / 8 / dims[d])) {
            ti_fail(ctx, GAN_ERR_INVALID, "%s: shape %s is not valid: sizes must be 0 or "
                    "more and the total must fit in memory", op,
                    ti_dims_str(shape, sizeof shape, ndim, dims));
            return NULL;
        }
        numel *= dims[d];
    }
    gan_tensor *t = ctx->spare_tensors;
    if (t) {
        ctx->spare_tensors = t->next;
        ctx->n_spare_tensors--;
    } else {
        t = malloc(sizeof *t);
        if (!t) {
            ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory for a tensor", op);
            return NULL;
        }
    }
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->dim[d] = dims[d];
    t->numel = numel;
    if (pool_get(ctx, op, (size_t)numel * gan_dtype_size(dtype), &t->buf, &t->buf_bytes)
        != GAN_OK) {
        t->next = ctx->spare_tensors;
        ctx->spare_tensors = t;
        ctx->n_spare_tensors++;
        return NULL;
    }
    t->id = ctx->next_id++;
    t->persistent = persistent;
    if (persistent) {
        list_push(&ctx->persist_head, t);
        ctx->n_persist++;
    } else {
        list_push(&ctx->step_head, t);
        ctx->n_step++;
    }
    return t;
}

/* Gives the buffer back to the pool and the struct to the spare list. */
static void tensor_release(gan_ctx *ctx, gan_tensor *t)
{
    pool_put(ctx, t->buf, t->buf_bytes);
    t->buf = NULL;
    t->ctx = NULL;
    t->next = ctx->spare_tensors;
    ctx->spare_tensors = t;
    ctx->n_spare_tensors++;
}

gan_tensor *ti_new_step(gan_ctx *ctx, const char *op, enum gan_dtype dtype, int ndim,
                        const int64_t *dims)
{
    return tensor_alloc(ctx, op, dtype, ndim, dims, 0);
}

gan_tensor *gan_tensor_new(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims)
{
    return ctx ? tensor_alloc(ctx, "gan_tensor_new", dtype, ndim, dims, 0) : NULL;
}

gan_tensor *gan_tensor_new_persistent(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                      const int64_t *dims)
{
    return ctx ? tensor_alloc(ctx, "gan_tensor_new_persistent", dtype, ndim, dims, 1) : NULL;
}

void gan_tensor_free(gan_tensor *t)
{
    if (!t || !t->ctx)
        return;
    gan_ctx *ctx = t->ctx;
    if (!t->persistent) {
        ti_fail(ctx, GAN_ERR_INVALID, "gan_tensor_free: the tensor is a step tensor; "
                "gan_ctx_step_end frees it (only persistent tensors are freed one by one)");
        return;
    }
    list_remove(&ctx->persist_head, t);
    ctx->n_persist--;
    tensor_release(ctx, t);
}

void gan_ctx_step_end(gan_ctx *ctx)
{
    if (!ctx)
        return;
    /* The tape points at step tensors: it goes first. */
    ti_tape_clear(ctx);
    while (ctx->step_head) {
        gan_tensor *t = ctx->step_head;
        ctx->step_head = t->next;
        tensor_release(ctx, t);
    }
    ctx->n_step = 0;
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
        tensor_release(ctx, t);
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

/* ------------------------------------------------------------------ kernel views */

void ti_strides(int ndim, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
}

struct gan_shape ti_shape(int ndim, const int64_t *dims)
{
    struct gan_shape s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    for (int d = 0; d < ndim; d++)
        s.dim[d] = dims[d];
    return s;
}

struct gan_operand ti_operand(const gan_tensor *t, int ndim, const int64_t *dims)
{
    struct gan_operand o;
    int64_t own[GAN_TENSOR_MAX_DIMS];
    memset(&o, 0, sizeof o);
    o.buf = t->buf;
    o.offset = 0;
    o.dtype = t->dtype;
    ti_strides(t->ndim, t->dim, own);
    int lead = ndim - t->ndim;
    for (int d = 0; d < ndim; d++) {
        int td = d - lead;
        o.stride[d] = td < 0 || t->dim[td] == 1 ? 0 : own[td];
    }
    return o;
}

struct gan_ref ti_ref(const gan_tensor *t)
{
    struct gan_ref r;
    r.buf = t->buf;
    r.offset = 0;
    r.dtype = t->dtype;
    return r;
}

enum gan_dtype ti_result_dtype(const gan_tensor *a, const gan_tensor *b)
{
    if (!b || a->dtype == b->dtype)
        return a->dtype;
    /* F32 holds both 16-bit types; F16 and BF16 do not hold each other. */
    return GAN_F32;
}

gan_status ti_unary(gan_ctx *ctx, const char *op, enum gan_unary_op uop, float alpha,
                    const gan_tensor *x, gan_tensor *y)
{
    if (!TI_HAS(ctx, op, unary))
        return ctx->status;
    struct gan_shape shape = ti_shape(y->ndim, y->dim);
    struct gan_operand xo = ti_operand(x, y->ndim, y->dim);
    struct gan_operand yo = ti_operand(y, y->ndim, y->dim);
    gan_status st = ctx->ops.unary(ctx->be, uop, alpha, &shape, &xo, &yo);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "unary", st);
}

gan_status ti_fill(gan_ctx *ctx, const char *op, gan_tensor *t, float value)
{
    return ti_unary(ctx, op, GAN_UNARY_FILL, value, t, t);
}

gan_tensor *ti_ones_like(gan_ctx *ctx, const char *op, const gan_tensor *t)
{
    gan_tensor *o = ti_new_step(ctx, op, t->dtype, t->ndim, t->dim);
    if (o && ti_fill(ctx, op, o, 1.0f) != GAN_OK)
        return NULL;
    return o;
}

/* y ← x rounded to y's dtype, n elements, both at offset 0. */
static gan_status raw_cast(gan_ctx *ctx, const char *op, gan_buffer *x, enum gan_dtype xt,
                           gan_buffer *y, enum gan_dtype yt, size_t n)
{
    if (n == 0)
        return GAN_OK;
    if (!TI_HAS(ctx, op, cast))
        return ctx->status;
    struct gan_ref xr = { x, 0, xt }, yr = { y, 0, yt };
    ctx->backend_casts++;
    gan_status st = ctx->ops.cast(ctx->be, n, &xr, &yr, NULL);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "cast", st);
}

gan_status ti_cast_into(gan_ctx *ctx, const char *op, const gan_tensor *src, gan_tensor *dst)
{
    return raw_cast(ctx, op, src->buf, src->dtype, dst->buf, dst->dtype, (size_t)src->numel);
}

gan_tensor *ti_as_dtype(gan_ctx *ctx, const char *op, gan_tensor *t, enum gan_dtype dtype)
{
    if (t->dtype == dtype)
        return t;
    gan_tensor *c = ti_new_step(ctx, op, dtype, t->ndim, t->dim);
    if (c && raw_cast(ctx, op, t->buf, t->dtype, c->buf, dtype, (size_t)t->numel) != GAN_OK)
        return NULL;
    return c;
}

/* ------------------------------------------------------------------ host transfers */

static int is_float_dtype(enum gan_dtype dt)
{
    return dt == GAN_F32 || dt == GAN_F16 || dt == GAN_BF16;
}

static gan_status check_count(gan_ctx *ctx, const char *op, const gan_tensor *t,
                              const void *values, size_t count)
{
    if (!t)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: the tensor is NULL", op);
    if (t->ctx != ctx)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: the tensor belongs to another context", op);
    if (!values && t->numel > 0)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: values is NULL", op);
    if (count != (size_t)t->numel)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: count is %zu but the tensor has %lld "
                       "elements; pass exactly its element count", op, count,
                       (long long)t->numel);
    return GAN_OK;
}

/* Writes FP32 host values into t, whatever its dtype. */
static gan_status upload_values(gan_ctx *ctx, const char *op, gan_tensor *t,
                                const float *values)
{
    size_t n = (size_t)t->numel;
    if (n == 0)
        return GAN_OK;
    if (!TI_HAS(ctx, op, upload))
        return ctx->status;
    gan_status st;
    if (t->dtype == GAN_F32) {
        st = ctx->ops.upload(ctx->be, t->buf, 0, values, n * sizeof(float));
        return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "upload", st);
    }
    if (!is_float_dtype(t->dtype)) {
        /* Integers are converted here: no kernel takes them. */
        void *tmp = malloc(n * 4);
        if (!tmp)
            return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory", op);
        for (size_t i = 0; i < n; i++) {
            if (t->dtype == GAN_I32) {
                int32_t v = (int32_t)values[i];
                memcpy((char *)tmp + 4 * i, &v, 4);
            } else {
                uint32_t v = (uint32_t)values[i];
                memcpy((char *)tmp + 4 * i, &v, 4);
            }
        }
        st = ctx->ops.upload(ctx->be, t->buf, 0, tmp, n * 4);
        free(tmp);
        return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "upload", st);
    }
    /* 16-bit: stage FP32 on the device and let the backend round, so the rounding
     * is the backend's own (the same as every other cast it does). */
    gan_buffer *stage;
    size_t cls;
    if (pool_get(ctx, op, n * sizeof(float), &stage, &cls) != GAN_OK)
        return ctx->status;
    st = ctx->ops.upload(ctx->be, stage, 0, values, n * sizeof(float));
    if (st != GAN_OK)
        ti_backend_fail(ctx, op, "upload", st);
    else
        st = raw_cast(ctx, op, stage, GAN_F32, t->buf, t->dtype, n);
    pool_put(ctx, stage, cls);
    return st;
}

gan_tensor *gan_tensor_from_host(gan_ctx *ctx, enum gan_dtype dtype, int ndim,
                                 const int64_t *dims, const float *values)
{
    if (!ctx)
        return NULL;
    const char *op = "gan_tensor_from_host";
    gan_tensor *t = tensor_alloc(ctx, op, dtype, ndim, dims, 0);
    if (!t)
        return NULL;
    if (!values && t->numel > 0) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: values is NULL", op);
        return NULL;
    }
    return upload_values(ctx, op, t, values) == GAN_OK ? t : NULL;
}

gan_status gan_tensor_set_from_host(gan_ctx *ctx, gan_tensor *t, const float *values,
                                    size_t count)
{
    const char *op = "gan_tensor_set_from_host";
    if (!ctx)
        return GAN_ERR_INVALID;
    gan_status st = check_count(ctx, op, t, values, count);
    if (st != GAN_OK)
        return st;
    if (t->grad_fn)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: the tensor is the result of a recorded "
                       "op (%s); overwriting it would make its gradients wrong: write into "
                       "a leaf or persistent tensor", op, t->grad_fn->op);
    t->version++;
    return upload_values(ctx, op, t, values);
}

gan_status gan_tensor_to_host(gan_ctx *ctx, const gan_tensor *t, float *values, size_t count)
{
    const char *op = "gan_tensor_to_host";
    if (!ctx)
        return GAN_ERR_INVALID;
    gan_status st = check_count(ctx, op, t, values, count);
    if (st != GAN_OK)
        return st;
    size_t n = count;
    if (n == 0)
        return GAN_OK;
    if (!TI_HAS(ctx, op, download))
        return ctx->status;
    if (ctx->ops.synchronize && (st = ctx->ops.synchronize(ctx->be)) != GAN_OK)
        return ti_backend_fail(ctx, op, "synchronize", st);
    if (t->dtype == GAN_F32 || !is_float_dtype(t->dtype)) {
        /* Integers have FP32's size: read them into `values` and convert in place. */
        st = ctx->ops.download(ctx->be, values, t->buf, 0, n * 4);
        if (st != GAN_OK)
            return ti_backend_fail(ctx, op, "download", st);
        for (size_t i = 0; i < n && t->dtype != GAN_F32; i++) {
            if (t->dtype == GAN_I32) {
                int32_t v;
                memcpy(&v, &values[i], 4);
                values[i] = (float)v;
            } else {
                uint32_t v;
                memcpy(&v, &values[i], 4);
                values[i] = (float)v;
            }
        }
        return GAN_OK;
    }
    gan_buffer *stage;
    size_t cls;
    if (pool_get(ctx, op, n * sizeof(float), &stage, &cls) != GAN_OK)
        return ctx->status;
    st = raw_cast(ctx, op, t->buf, t->dtype, stage, GAN_F32, n);
    if (st == GAN_OK) {
        st = ctx->ops.download(ctx->be, values, stage, 0, n * sizeof(float));
        if (st != GAN_OK)
            ti_backend_fail(ctx, op, "download", st);
    }
    pool_put(ctx, stage, cls);
    return st;
}

gan_status gan_tensor_copy(gan_ctx *ctx, gan_tensor *dst, const gan_tensor *src)
{
    const char *op = "gan_tensor_copy";
    char a[160], b[160];
    if (!ctx)
        return GAN_ERR_INVALID;
    if (!dst || !src)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: %s is NULL", op, dst ? "src" : "dst");
    if (dst->ctx != ctx || src->ctx != ctx)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: a tensor belongs to another context", op);
    if (dst->ndim != src->ndim || memcmp(dst->dim, src->dim, (size_t)dst->ndim * sizeof dst->dim[0]))
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: dst has shape %s and src %s; they must match "
                       "(gan_reshape src first)", op, ti_dims_str(a, sizeof a, dst->ndim, dst->dim),
                       ti_dims_str(b, sizeof b, src->ndim, src->dim));
    if (dst->grad_fn)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: dst is the result of a recorded op (%s); "
                       "overwriting it would make its gradients wrong", op, dst->grad_fn->op);
    if (dst == src || dst->numel == 0)
        return GAN_OK;
    dst->version++;
    if (dst->dtype == src->dtype) {
        if (!TI_HAS(ctx, op, copy))
            return ctx->status;
        gan_status st = ctx->ops.copy(ctx->be, dst->buf, 0, src->buf, 0,
                                      (size_t)src->numel * gan_dtype_size(src->dtype));
        return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "copy", st);
    }
    return raw_cast(ctx, op, src->buf, src->dtype, dst->buf, dst->dtype, (size_t)src->numel);
}

/* ------------------------------------------------------------------ filled tensors */

gan_tensor *gan_tensor_full(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims,
                            float value)
{
    if (!ctx)
        return NULL;
    const char *op = "gan_tensor_full";
    gan_tensor *t = tensor_alloc(ctx, op, dtype, ndim, dims, 0);
    if (!t)
        return NULL;
    if (!is_float_dtype(dtype)) {
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: dtype %s cannot be filled on the device; "
                "use gan_tensor_from_host for integer tensors", op, gan_dtype_name(dtype));
        return NULL;
    }
    return t->numel == 0 || ti_fill(ctx, op, t, value) == GAN_OK ? t : NULL;
}

gan_tensor *gan_tensor_uniform(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims,
                               uint64_t seed, uint64_t offset, float low, float high)
{
    if (!ctx)
        return NULL;
    const char *op = "gan_tensor_uniform";
    if (!is_float_dtype(dtype)) {
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: dtype %d is not F32, F16 or BF16", op,
                (int)dtype);
        return NULL;
    }
    if (!(low <= high)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: low (%g) is above high (%g)", op, (double)low,
                (double)high);
        return NULL;
    }
    gan_tensor *t = tensor_alloc(ctx, op, dtype, ndim, dims, 0);
    if (!t || t->numel == 0)
        return t;
    if (!TI_HAS(ctx, op, rng_uniform))
        return NULL;
    struct gan_ref r = ti_ref(t);
    gan_status st = ctx->ops.rng_uniform(ctx->be, (size_t)t->numel, seed, offset, low, high, &r);
    if (st != GAN_OK) {
        ti_backend_fail(ctx, op, "rng_uniform", st);
        return NULL;
    }
    return t;
}

gan_tensor *gan_tensor_normal(gan_ctx *ctx, enum gan_dtype dtype, int ndim, const int64_t *dims,
                              uint64_t seed, uint64_t offset, float mean, float std)
{
    if (!ctx)
        return NULL;
    const char *op = "gan_tensor_normal";
    if (!is_float_dtype(dtype)) {
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: dtype %d is not F32, F16 or BF16", op,
                (int)dtype);
        return NULL;
    }
    if (!(std >= 0.0f)) {
        ti_fail(ctx, GAN_ERR_INVALID, "%s: std is %g; it must be 0 or more", op, (double)std);
        return NULL;
    }
    gan_tensor *t = tensor_alloc(ctx, op, dtype, ndim, dims, 0);
    if (!t || t->numel == 0)
        return t;
    if (!TI_HAS(ctx, op, rng_normal))
        return NULL;
    struct gan_ref r = ti_ref(t);
    gan_status st = ctx->ops.rng_normal(ctx->be, (size_t)t->numel, seed, offset, mean, std, &r);
    if (st != GAN_OK) {
        ti_backend_fail(ctx, op, "rng_normal", st);
        return NULL;
    }
    return t;
}

/* ------------------------------------------------------------------ flags and queries */

void gan_tensor_set_requires_grad(gan_tensor *t, int requires_grad)
{
    if (!t || !t->ctx)
        return;
    if (t->grad_fn) {
        ti_fail(t->ctx, GAN_ERR_INVALID, "gan_tensor_set_requires_grad: the tensor is the "
                "result of a recorded op (%s), not a leaf; its gradient flows already",
                t->grad_fn->op);
        return;
    }
    if (requires_grad && !is_float_dtype(t->dtype)) {
        ti_fail(t->ctx, GAN_ERR_INVALID, "gan_tensor_set_requires_grad: a %s tensor has no "
                "gradient; only F32, F16 and BF16 tensors do", gan_dtype_name(t->dtype));
        return;
    }
    /* A cast cached while t did not require a gradient has no node to pass one back. */
    if (t->requires_grad != (requires_grad != 0))
        t->version++;
    t->requires_grad = requires_grad != 0;
}

void gan_tensor_touch(gan_tensor *t)
{
    if (t)
        t->version++;
}

int gan_tensor_requires_grad(const gan_tensor *t)
{
    return t && (t->requires_grad || t->grad_fn);
}

int gan_tensor_ndim(const gan_tensor *t)
{
    return t ? t->ndim : -1;
}

int64_t gan_tensor_dim(const gan_tensor *t, int axis)
{
    if (!t)
        return -1;
    int a = axis < 0 ? axis + t->ndim : axis;
    if (a < 0 || a >= t->ndim) {
        ti_fail(t->ctx, GAN_ERR_INVALID, "gan_tensor_dim: axis %d is outside a tensor of %d "
                "dimensions", axis, t->ndim);
        return -1;
    }
    return t->dim[a];
}

int64_t gan_tensor_numel(const gan_tensor *t)
{
    return t ? t->numel : -1;
}

enum gan_dtype gan_tensor_dtype(const gan_tensor *t)
{
    return t ? t->dtype : GAN_DTYPE_COUNT;
}
