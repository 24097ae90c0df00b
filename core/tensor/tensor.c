/* SPDX-License-Identifier: MIT */
/* tensor.c — the tensors of a context: creation and freeing, host transfers and copies,
 * tensors filled with a value or random numbers, and their flags and queries. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

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
    /* A backend built before ABI 1.5 knows no FP8 type: its casts would refuse the
     * tensor's every use, so it is refused once, here. */
    if ((dtype == GAN_F8E4M3 || dtype == GAN_F8E5M2) && ctx->backend_abi_minor < 5) {
        ti_fail(ctx, GAN_ERR_UNSUPPORTED, "%s: dtype %s needs a backend of plugin ABI 1.5 "
                "or later, and this one was built for 1.%u: rebuild it against these "
                "headers", op, gan_dtype_name(dtype), ctx->backend_abi_minor);
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
    if (ti_pool_get(ctx, op, (size_t)numel * gan_dtype_size(dtype), &t->buf, &t->buf_bytes)
        != GAN_OK) {
        t->next = ctx->spare_tensors;
        ctx->spare_tensors = t;
        ctx->n_spare_tensors++;
        return NULL;
    }
    t->id = ctx->next_id++;
    t->persistent = persistent;
    t->from_backward = ctx->in_backward != 0;
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
void ti_tensor_release(gan_ctx *ctx, gan_tensor *t)
{
    ti_pool_put(ctx, t->buf, t->buf_bytes);
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
    ti_tensor_release(ctx, t);
}

/* ------------------------------------------------------------------ host transfers */

static int is_float_dtype(enum gan_dtype dt)
{
    return dt == GAN_F32 || dt == GAN_F16 || dt == GAN_BF16;
}

static int is_int_dtype(enum gan_dtype dt)
{
    return dt == GAN_I32 || dt == GAN_U32;
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
    if (is_int_dtype(t->dtype)) {
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
    /* 16- and 8-bit: stage FP32 on the device and let the backend round, so the
     * rounding is the backend's own (the same as every other cast it does). */
    gan_buffer *stage;
    size_t cls;
    if (ti_pool_get(ctx, op, n * sizeof(float), &stage, &cls) != GAN_OK)
        return ctx->status;
    st = ctx->ops.upload(ctx->be, stage, 0, values, n * sizeof(float));
    if (st != GAN_OK)
        ti_backend_fail(ctx, op, "upload", st);
    else
        st = ti_raw_cast(ctx, op, stage, GAN_F32, t->buf, t->dtype, n);
    ti_pool_put(ctx, stage, cls);
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
    if (t->dtype == GAN_F32 || is_int_dtype(t->dtype)) {
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
    if (ti_pool_get(ctx, op, n * sizeof(float), &stage, &cls) != GAN_OK)
        return ctx->status;
    st = ti_raw_cast(ctx, op, t->buf, t->dtype, stage, GAN_F32, n);
    if (st == GAN_OK) {
        st = ctx->ops.download(ctx->be, values, stage, 0, n * sizeof(float));
        if (st != GAN_OK)
            ti_backend_fail(ctx, op, "download", st);
    }
    ti_pool_put(ctx, stage, cls);
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
    return ti_raw_cast(ctx, op, src->buf, src->dtype, dst->buf, dst->dtype,
                       (size_t)src->numel);
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
