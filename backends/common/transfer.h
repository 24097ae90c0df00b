/* SPDX-License-Identifier: MIT */
/* transfer.h — the memory slots upload, download and copy as every backend enters them:
 * the byte ranges checked, nothing to do for 0 bytes, the buffers' addresses resolved;
 * then the backend's own transfer of plain bytes. Host code. */
#ifndef GANCTL_COMMON_TRANSFER_H
#define GANCTL_COMMON_TRANSFER_H

/* The including backend defines, before this header, struct gan_buffer (with its
 * `size_t bytes`, for the checks) and
 *   static inline unsigned char *gan_buffer_at(const gan_buffer *buf, size_t offset)
 * the address of byte `offset` of buf, as its transfers take it. */
#include <stddef.h>
#include <ganctl/status.h>
#include <ganctl/host.h>
#include <ganctl/backend.h>

#include "ref_checks.h"

/* The backend's part: `bytes` (at least one) from src to dst, each inside its buffer or
 * the caller's host memory, as the slot says. A copy's two ranges may overlap
 * (memmove's semantics); an upload's and a download's cannot. */
typedef gan_status gan_transfer_fn(gan_backend *be, void *dst, const void *src,
                                   size_t bytes);

static inline gan_status gan_upload_entry(gan_transfer_fn *transfer,
                                          const struct gan_host *host, gan_backend *be,
                                          gan_buffer *dst, size_t dst_byte_offset,
                                          const void *src, size_t bytes)
{
    gan_status st = gan_check_upload(host, dst, dst_byte_offset, src, bytes);
    if (st != GAN_OK || !bytes)
        return st;
    return transfer(be, gan_buffer_at(dst, dst_byte_offset), src, bytes);
}

static inline gan_status gan_download_entry(gan_transfer_fn *transfer,
                                            const struct gan_host *host, gan_backend *be,
                                            void *dst, gan_buffer *src,
                                            size_t src_byte_offset, size_t bytes)
{
    gan_status st = gan_check_download(host, dst, src, src_byte_offset, bytes);
    if (st != GAN_OK || !bytes)
        return st;
    return transfer(be, dst, gan_buffer_at(src, src_byte_offset), bytes);
}

static inline gan_status gan_copy_entry(gan_transfer_fn *transfer,
                                        const struct gan_host *host, gan_backend *be,
                                        gan_buffer *dst, size_t dst_byte_offset,
                                        gan_buffer *src, size_t src_byte_offset, size_t bytes)
{
    gan_status st = gan_check_copy(host, dst, dst_byte_offset, src, src_byte_offset, bytes);
    if (st != GAN_OK || !bytes)
        return st;
    return transfer(be, gan_buffer_at(dst, dst_byte_offset),
                    gan_buffer_at(src, src_byte_offset), bytes);
}

#endif
