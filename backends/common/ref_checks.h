/* SPDX-License-Identifier: MIT */
/* ref_checks.h — the argument checks on plain runs of memory: a gan_ref of n elements,
 * and the byte ranges of upload, download and copy. Host code. */
#ifndef GANCTL_COMMON_REF_CHECKS_H
#define GANCTL_COMMON_REF_CHECKS_H

/* The including backend defines struct gan_buffer first, with a `size_t bytes` member. */
#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "hostdev.h"

/* What gan_check_ref accepts besides one named dtype. */
#define GAN_ANY_FLOAT (-1) /* F32, F16 or BF16 */
#define GAN_ANY_DTYPE (-2) /* any gan_dtype */

/* A ref of n contiguous elements inside its buffer. `want`: a dtype it must have,
 * GAN_ANY_FLOAT or GAN_ANY_DTYPE. */
static inline gan_status gan_check_ref(const struct gan_host *host, const char *fn,
                                       const char *name, const struct gan_ref *r, size_t n,
                                       int want)
{
    if (!r)
        return host->fail(host->ctx, GAN_ERR_INVALID, "%s: %s is NULL; pass a gan_ref",
                          fn, name);
    size_t esz = gan_dtype_size(r->dtype);
    const char *dn = gan_dtype_name(r->dtype);
    if (!esz)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s has dtype %d, which is not a gan_dtype", fn, name,
                          (int)r->dtype);
    if (want >= 0 && r->dtype != (enum gan_dtype)want)
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED, "%s: %s has dtype %s; it must be %s",
                          fn, name, dn, gan_dtype_name((enum gan_dtype)want));
    if (want == GAN_ANY_FLOAT && !gan_is_float(r->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "%s: %s has dtype %s; it must be F32, F16 or BF16", fn, name, dn);
    if (!r->buf)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s has no buffer for %zu elements; pass a buffer from "
                          "buffer_alloc", fn, name, n);
    size_t have = r->buf->bytes / esz;
    if (r->offset > have || n > have - r->offset)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %s needs %zu %s elements from element offset %zu, but its "
                          "buffer holds %zu; fix the count or offset, or allocate a larger "
                          "buffer", fn, name, n, dn, r->offset, have);
    return GAN_OK;
}

/* The two refs of a cast of n elements: each a gan_dtype, and with n > 0 inside its
 * buffer. */
static inline gan_status gan_check_cast_refs(const struct gan_host *host, size_t n,
                                             const struct gan_ref *x, const struct gan_ref *y)
{
    for (int k = 0; k < 2; k++) {
        const struct gan_ref *r = k ? y : x;
        const char *name = k ? "y" : "x";
        gan_status st;
        if (n)
            st = gan_check_ref(host, "cast", name, r, n, GAN_ANY_DTYPE);
        else if (!r)
            st = host->fail(host->ctx, GAN_ERR_INVALID, "cast: %s is NULL; pass a gan_ref",
                            name);
        else if (!gan_dtype_size(r->dtype))
            st = host->fail(host->ctx, GAN_ERR_INVALID,
                            "cast: %s has dtype %d, which is not a gan_dtype", name,
                            (int)r->dtype);
        else
            st = GAN_OK;
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* The types and flags of a cast whose refs are checked: flags of enum gan_cast_flag
 * only, GAN_CAST_SATURATE only into an FP8 type, and FP8 only with a float type on the
 * other side (an integer converts through F32 in two casts, each rounding once). */
static inline gan_status gan_check_cast_types(const struct gan_host *host,
                                              const struct gan_ref *x,
                                              const struct gan_ref *y, uint32_t flags)
{
    const char *xn = gan_dtype_name(x->dtype), *yn = gan_dtype_name(y->dtype);
    if (flags & ~(uint32_t)GAN_CAST_SATURATE)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "cast: flags 0x%x hold bits that are not enum gan_cast_flag's; "
                          "pass 0 or GAN_CAST_SATURATE", (unsigned)flags);
    if ((flags & GAN_CAST_SATURATE) && !gan_is_fp8(y->dtype))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "cast: GAN_CAST_SATURATE is for FP8 outputs (F8_E4M3, F8_E5M2), "
                          "and y is %s; cast to it without the flag", yn);
    if ((gan_is_fp8(x->dtype) || gan_is_fp8(y->dtype)) &&
        !(gan_is_cast_float(x->dtype) && gan_is_cast_float(y->dtype)))
        return host->fail(host->ctx, GAN_ERR_UNSUPPORTED,
                          "cast: %s to %s is not supported: FP8 converts to and from F32, "
                          "F16, BF16 and the other FP8 type; cast through F32", xn, yn);
    return GAN_OK;
}

/* The checked refs of a cast of n > 0 elements, at `xp` and `yp` in memory: disjoint,
 * or the same view of one dtype (a cast in place). */
static inline gan_status gan_check_cast_overlap(const struct gan_host *host, size_t n,
                                                const struct gan_ref *x, const void *xp,
                                                const struct gan_ref *y, const void *yp)
{
    const unsigned char *a = (const unsigned char *)xp, *b = (const unsigned char *)yp;
    size_t xbytes = n * gan_dtype_size(x->dtype), ybytes = n * gan_dtype_size(y->dtype);
    int same_view = a == b && x->dtype == y->dtype;
    if (!same_view && a < b + ybytes && b < a + xbytes)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "cast: x (%s at element %zu) and y (%s at element %zu) overlap "
                          "in one buffer; cast into a separate buffer, or in place with "
                          "the same view and dtype",
                          gan_dtype_name(x->dtype), x->offset,
                          gan_dtype_name(y->dtype), y->offset);
    return GAN_OK;
}

/* GAN_OK when [offset, offset + bytes) lies inside buf; otherwise a failure that names
 * the operation, the range and the buffer's size. */
static inline gan_status gan_check_range(const struct gan_host *host, const char *op,
                                         const char *which, const gan_buffer *buf,
                                         size_t offset, size_t bytes)
{
    if (!buf)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: the %s buffer is NULL; pass a buffer from buffer_alloc",
                          op, which);
    if (offset > buf->bytes || bytes > buf->bytes - offset)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "%s: %zu bytes at byte offset %zu of the %s buffer run past its "
                          "end (the buffer holds %zu bytes); fix the offset or size, or "
                          "allocate a larger buffer", op, bytes, offset, which, buf->bytes);
    return GAN_OK;
}

/* upload: `bytes` from host memory `src` into dst at dst_offset. */
static inline gan_status gan_check_upload(const struct gan_host *host, const gan_buffer *dst,
                                          size_t dst_offset, const void *src, size_t bytes)
{
    gan_status st = gan_check_range(host, "upload", "destination", dst, dst_offset, bytes);
    if (st == GAN_OK && bytes && !src)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "upload: the source pointer is NULL for %zu bytes; pass "
                          "the host array to copy from", bytes);
    return st;
}

/* download: `bytes` of src from src_offset into host memory `dst`. */
static inline gan_status gan_check_download(const struct gan_host *host, const void *dst,
                                            const gan_buffer *src, size_t src_offset,
                                            size_t bytes)
{
    gan_status st = gan_check_range(host, "download", "source", src, src_offset, bytes);
    if (st == GAN_OK && bytes && !dst)
        return host->fail(host->ctx, GAN_ERR_INVALID,
                          "download: the destination pointer is NULL for %zu bytes; "
                          "pass the host array to copy into", bytes);
    return st;
}

/* copy: `bytes` between two buffers (or two ranges of one, overlapping or not). */
static inline gan_status gan_check_copy(const struct gan_host *host, const gan_buffer *dst,
                                        size_t dst_offset, const gan_buffer *src,
                                        size_t src_offset, size_t bytes)
{
    gan_status st = gan_check_range(host, "copy", "destination", dst, dst_offset, bytes);
    if (st == GAN_OK)
        st = gan_check_range(host, "copy", "source", src, src_offset, bytes);
    return st;
}

#endif
