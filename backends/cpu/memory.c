/* SPDX-License-Identifier: MIT */
/* memory.c — the CPU backend's device memory: 64-byte aligned host buffers, copies
 * in, out and between them with bounds checks, and the instance's scratch space. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "../common/transfer.h"

/* A cache line, and the widest vector (AVX-512) loads a kernel might align to. */
#define CPU_ALIGN ((size_t)64)

/* bytes rounded up to a multiple of CPU_ALIGN (at least one line, so that even an
 * empty buffer has a valid address); 0 when that overflows size_t. */
static size_t round_up(size_t bytes)
{
    if (bytes > SIZE_MAX - (CPU_ALIGN - 1))
        return 0;
    size_t r = (bytes + CPU_ALIGN - 1) & ~(CPU_ALIGN - 1);
    return r ? r : CPU_ALIGN;
}

gan_status cpu_buffer_alloc(gan_backend *be, size_t bytes, gan_buffer **out)
{
    const struct gan_host *host = be->host;
    *out = NULL;
    size_t rounded = round_up(bytes);
    if (!rounded)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "cannot allocate a buffer of %zu bytes: the size is too large "
                          "to align; check the tensor's shape", bytes);
    gan_buffer *buf = malloc(sizeof *buf);
    /* aligned_alloc wants a size that is a multiple of the alignment: rounded is. */
    unsigned char *data = buf ? aligned_alloc(CPU_ALIGN, rounded) : NULL;
    if (!data) {
        free(buf);
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "out of memory allocating a buffer of %zu bytes; use smaller "
                          "batches or models, or free memory", bytes);
    }
    buf->bytes = bytes;
    buf->data = data;
    memset(&buf->kept, 0, sizeof buf->kept);
    *out = buf;
    return GAN_OK;
}

void cpu_buffer_free(gan_backend *be, gan_buffer *buf)
{
    (void)be;
    if (!buf)
        return;
    free(buf->data);
    free(buf);
}

/* The memory slots: backends/common/transfer.h's checks, then the channel blocks'
 * guards, then the bytes. Device memory is host memory, so each transfer is a memcpy,
 * and a copy, whose ranges may overlap (two of one buffer), a memmove. */
gan_status cpu_upload(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                      const void *src, size_t bytes)
{
    gan_status st = gan_check_upload(be->host, dst, dst_byte_offset, src, bytes);
    if (st != GAN_OK || bytes == 0)
        return st;
    if ((st = cpu_kept_overwritten(be, dst, dst_byte_offset, bytes)) != GAN_OK)
        return st;
    memcpy(gan_buffer_at(dst, dst_byte_offset), src, bytes);
    return GAN_OK;
}

gan_status cpu_download(gan_backend *be, void *dst, gan_buffer *src,
                        size_t src_byte_offset, size_t bytes)
{
    gan_status st = gan_check_download(be->host, dst, src, src_byte_offset, bytes);
    if (st != GAN_OK || bytes == 0)
        return st;
    if ((st = cpu_kept_plain(be, src)) != GAN_OK)
        return st;
    memcpy(dst, gan_buffer_at(src, src_byte_offset), bytes);
    return GAN_OK;
}

gan_status cpu_copy(gan_backend *be, gan_buffer *dst, size_t dst_byte_offset,
                    gan_buffer *src, size_t src_byte_offset, size_t bytes)
{
    gan_status st = gan_check_copy(be->host, dst, dst_byte_offset, src, src_byte_offset, bytes);
    if (st != GAN_OK || bytes == 0 ||
        cpu_kept_copy(be, dst, dst_byte_offset, src, src_byte_offset, bytes, &st))
        return st;
    st = cpu_kept_plain(be, src);
    if (st == GAN_OK)
        st = cpu_kept_overwritten(be, dst, dst_byte_offset, bytes);
    if (st != GAN_OK)
        return st;
    memmove(gan_buffer_at(dst, dst_byte_offset), gan_buffer_at(src, src_byte_offset), bytes);
    return GAN_OK;
}

/* One of the instance's scratch spaces (*space, *space_bytes) grown to `bytes`. */
static gan_status grow_scratch(gan_backend *be, unsigned char **space, size_t *space_bytes,
                               size_t bytes, void **out)
{
    if (*space && *space_bytes >= bytes) {
        *out = *space;
        return GAN_OK;
    }
    *out = NULL;
    size_t rounded = round_up(bytes);
    /* The old contents need not survive, so free before allocating: the peak is the
     * new size, not old plus new. */
    free(*space);
    *space = NULL;
    *space_bytes = 0;
    unsigned char *p = rounded ? aligned_alloc(CPU_ALIGN, rounded) : NULL;
    if (!p)
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "out of memory allocating %zu bytes of scratch space for "
                              "a kernel; use smaller batches or models", bytes);
    *space = p;
    *space_bytes = rounded;
    *out = p;
    return GAN_OK;
}

gan_status cpu_scratch(gan_backend *be, size_t bytes, void **out)
{
    return grow_scratch(be, &be->scratch, &be->scratch_bytes, bytes, out);
}

gan_status cpu_operand_scratch(gan_backend *be, size_t bytes, void **out)
{
    return grow_scratch(be, &be->operand_scratch, &be->operand_scratch_bytes, bytes, out);
}
