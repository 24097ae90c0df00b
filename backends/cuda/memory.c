/* SPDX-License-Identifier: MIT */
/* memory.c — the CUDA backend's device memory: buffers from the instance's stream-ordered
 * pool, copies in, out and between them on the stream, scratch, workspace and read-back. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/transfer.h"

/* Ordering. Every copy and kernel is queued on the instance's one stream, so work is
 * done in the order the host asked for it and nothing waits unless the host needs a
 * value: download (it returns data), the cast and gradient-statistics counts, and
 * synchronize. Buffers come from a pool in stream order (cudaMallocFromPoolAsync,
 * cudaFreeAsync), so freeing a buffer that queued work still reads is safe and costs
 * no synchronisation. Devices without memory pools fall back to cudaMalloc/cudaFree,
 * whose free waits for the device. */

gan_status cuda_device_alloc(gan_backend *be, size_t bytes, void **out)
{
    *out = NULL;
    size_t n = bytes ? bytes : 1; /* an empty buffer still has an address */
    if (be->pools)
        return cuda_check_rt(be, "cudaMallocFromPoolAsync",
                             cudaMallocFromPoolAsync(out, n, be->pool, be->stream));
    return cuda_check_rt(be, "cudaMalloc", cudaMalloc(out, n));
}

void cuda_device_free(gan_backend *be, void *ptr)
{
    if (!ptr)
        return;
    /* A failure here can only be a context already lost, which the next call that
     * returns a status reports. */
    if (be->pools)
        cudaFreeAsync(ptr, be->stream);
    else
        cudaFree(ptr);
}

gan_status cuda_buffer_alloc(gan_backend *be, size_t bytes, gan_buffer **out)
{
    const struct gan_host *host = be->host;
    *out = NULL;
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    gan_buffer *buf = host->alloc(host->ctx, sizeof *buf);
    if (!buf)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "out of host memory allocating a buffer descriptor");
    st = cuda_device_alloc(be, bytes, &buf->ptr);
    if (st != GAN_OK) {
        host->free(host->ctx, buf);
        if (st == GAN_ERR_NOMEM)
            return host->fail(host->ctx, GAN_ERR_NOMEM,
                              "out of GPU memory allocating a buffer of %zu bytes; use "
                              "smaller batches or models, or free device memory", bytes);
        return st;
    }
    buf->bytes = bytes;
    *out = buf;
    return GAN_OK;
}

void cuda_buffer_free(gan_backend *be, gan_buffer *buf)
{
    if (!buf)
        return;
    if (cuda_enter(be) == GAN_OK)
        cuda_device_free(be, buf->ptr);
    be->host->free(be->host->ctx, buf);
}

/* The memory slots on backends/common/transfer.h's checks; each transfer below gets
 * the resolved addresses of at least one byte. */
static gan_status upload_bytes(gan_backend *be, void *dst, const void *src, size_t bytes)
{
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    /* From ordinary (pageable) memory the driver stages the data before the call
     * returns, so the caller may reuse src at once. Page-locked or managed memory is
     * read by the copy engine later; then the call waits, because src is only
     * borrowed for the call. */
    struct cudaPointerAttributes attr;
    int later = 0;
    if (cudaPointerGetAttributes(&attr, src) == cudaSuccess)
        later = attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeManaged;
    else
        cudaGetLastError();
    st = cuda_check_rt(be, "upload: cudaMemcpyAsync",
                       cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, be->stream));
    if (st == GAN_OK && later)
        st = cuda_check_rt(be, "upload: cudaStreamSynchronize",
                           cudaStreamSynchronize(be->stream));
    return st;
}

gan_status cuda_upload(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                       const void *src, size_t bytes)
{
    return gan_upload_entry(upload_bytes, be->host, be, dst, dst_byte_offset, src, bytes);
}

static gan_status download_bytes(gan_backend *be, void *dst, const void *src, size_t bytes)
{
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    st = cuda_check_rt(be, "download: cudaMemcpyAsync",
                       cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, be->stream));
    /* The data is the point of the call: wait for it (and report any earlier queued
     * kernel that failed). */
    if (st == GAN_OK)
        st = cuda_check_rt(be, "download: waiting for the stream",
                           cudaStreamSynchronize(be->stream));
    return st;
}

gan_status cuda_download(gan_backend *be, void *dst, gan_buffer *src,
                         size_t src_byte_offset, size_t bytes)
{
    return gan_download_entry(download_bytes, be->host, be, dst, src, src_byte_offset, bytes);
}

static gan_status copy_bytes(gan_backend *be, void *dst, const void *src, size_t bytes)
{
    gan_status st = cuda_enter(be);
    if (st != GAN_OK)
        return st;
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (d == s)
        return GAN_OK;
    /* cudaMemcpy leaves overlapping ranges undefined; the ABI allows them (memmove's
     * semantics), so an overlapping copy goes through scratch. Ranges of two different
     * buffers never overlap, so the addresses alone tell. */
    if (d < s + bytes && s < d + bytes) {
        void *tmp = NULL;
        if ((st = cuda_scratch(be, "copy", bytes, &tmp)) != GAN_OK)
            return st;
        st = cuda_check_rt(be, "copy: cudaMemcpyAsync",
                           cudaMemcpyAsync(tmp, s, bytes, cudaMemcpyDeviceToDevice,
                                           be->stream));
        s = (const unsigned char *)tmp;
        if (st != GAN_OK)
            return st;
    }
    return cuda_check_rt(be, "copy: cudaMemcpyAsync",
                         cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, be->stream));
}

gan_status cuda_copy(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                     gan_buffer *src, size_t src_byte_offset, size_t bytes)
{
    return gan_copy_entry(copy_bytes, be->host, be, dst, dst_byte_offset, src,
                          src_byte_offset, bytes);
}

gan_status cuda_synchronize(gan_backend *be)
{
    gan_status st = cuda_enter(be);
    if (st == GAN_OK)
        st = cuda_check_rt(be, "synchronize: cudaStreamSynchronize",
                           cudaStreamSynchronize(be->stream));
    return st;
}

/* Grows one of the instance's on-demand areas to at least `bytes`, in steps of 1 MiB
 * so that slowly growing requests do not reallocate every time. The old contents need
 * not survive; the old block is freed in stream order, after the work that uses it. */
static gan_status grow(gan_backend *be, const char *what, void **area, size_t *have,
                       size_t bytes, void **out)
{
    if (*area && *have >= bytes) {
        *out = *area;
        return GAN_OK;
    }
    *out = NULL;
    const size_t step = (size_t)1 << 20;
    if (bytes > SIZE_MAX - step)
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "%s: %zu bytes of device scratch cannot be allocated", what,
                              bytes);
    size_t want = (bytes + step - 1) & ~(step - 1);
    if (want < step)
        want = step;
    if (*area)
        cuda_device_free(be, *area);
    *area = NULL;
    *have = 0;
    void *p = NULL;
    gan_status st = cuda_device_alloc(be, want, &p);
    if (st == GAN_ERR_NOMEM)
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "%s: out of GPU memory allocating %zu bytes of scratch; use "
                              "smaller batches or models", what, want);
    if (st != GAN_OK)
        return st;
    *area = p;
    *have = want;
    *out = p;
    return GAN_OK;
}

gan_status cuda_scratch(gan_backend *be, const char *what, size_t bytes, void **out)
{
    return grow(be, what, &be->scratch, &be->scratch_bytes, bytes, out);
}

gan_status cuda_operand_scratch(gan_backend *be, const char *what, size_t bytes, void **out)
{
    return grow(be, what, &be->operand_scratch, &be->operand_scratch_bytes, bytes, out);
}

gan_status cuda_workspace(gan_backend *be, const char *what, size_t bytes, void **out)
{
    if (!bytes) {
        *out = NULL;
        return GAN_OK;
    }
    return grow(be, what, &be->workspace, &be->workspace_bytes, bytes, out);
}

gan_status cuda_read_results(gan_backend *be, const char *what, void *host, size_t bytes)
{
    char call[96];
    snprintf(call, sizeof call, "%s: reading the results back", what);
    gan_status st = cuda_check_rt(be, call,
                                  cudaMemcpyAsync(be->pinned, be->results, bytes,
                                                  cudaMemcpyDeviceToHost, be->stream));
    if (st == GAN_OK)
        st = cuda_check_rt(be, call, cudaStreamSynchronize(be->stream));
    if (st == GAN_OK)
        memcpy(host, be->pinned, bytes);
    return st;
}
