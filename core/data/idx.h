/* SPDX-License-Identifier: MIT */
/* idx.h — a reader for IDX files, the array format of MNIST and Fashion-MNIST, plain or
 * gzip-compressed, that checks the header, the dimensions and the length before trusting them. */
#ifndef GANCTL_CORE_IDX_H
#define GANCTL_CORE_IDX_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"

/* The format (LeCun and Cortes, the MNIST page): a 4-byte magic number 0x00 0x00 TYPE
 * NDIM, then NDIM sizes as 32-bit big-endian unsigned integers, then the elements in
 * row-major order, multi-byte types big-endian. Nothing may follow the data. A .gz file
 * is the same stream gzip-compressed; zlib tells the two apart by content, not name. */
enum gan_idx_type {
    GAN_IDX_U8 = 0x08,   /* unsigned byte: MNIST's images and labels */
    GAN_IDX_I8 = 0x09,
    GAN_IDX_I16 = 0x0B,
    GAN_IDX_I32 = 0x0C,
    GAN_IDX_F32 = 0x0D,
    GAN_IDX_F64 = 0x0E
};

/* More dimensions than any IDX file in use has (MNIST's have 1 and 3). */
#define GAN_IDX_MAX_DIMS 8
/* In gan_idx_expect.dims: any size. */
#define GAN_IDX_ANY_SIZE (-1)
/* The largest array the reader will allocate (8 GiB): a corrupt header that claims
 * more is refused before any allocation. */
#define GAN_IDX_MAX_BYTES ((uint64_t)8 << 30)

/* What the caller needs, checked against the header so that a wrong file fails with a
 * message saying both what it holds and what was wanted. */
struct gan_idx_expect {
    const char *what;                 /* names the array in messages: "images"; NULL: "the array" */
    int type;                         /* a gan_idx_type, or 0 for any */
    int ndim;                         /* 1 … GAN_IDX_MAX_DIMS, or 0 for any */
    int64_t dims[GAN_IDX_MAX_DIMS];   /* with ndim: each size, or GAN_IDX_ANY_SIZE */
};

struct gan_idx {
    enum gan_idx_type type;
    int ndim;
    int64_t dims[GAN_IDX_MAX_DIMS];
    size_t count;                     /* elements: the product of dims */
    size_t elem_size;                 /* bytes per element */
    void *data;                       /* count elements in host byte order (malloc'd) */
};

/* Reads the IDX file at `path` (plain or gzip) into `out`, which the caller frees with
 * gan_idx_free. `expect` may be NULL (anything well formed). Failures leave `out`
 * empty and explain themselves in `err` (NULL: discard), always naming the file:
 *   GAN_ERR_NOT_FOUND  no such file;
 *   GAN_ERR_IO         it cannot be opened or read (permissions, a folder, an I/O error);
 *   GAN_ERR_FORMAT     wrong magic bytes, an unknown type, a bad dimension count, sizes
 *                      or type other than `expect` asks, an absurd size, a truncated file
 *                      ("ends at byte N of the M the header promises"), bytes after the
 *                      data, or a corrupt gzip stream.
 * Byte positions in messages count the uncompressed stream. */
gan_status gan_idx_read(const char *path, const struct gan_idx_expect *expect,
                        struct gan_idx *out, struct gan_error *err);

/* Frees the data and empties `idx`; NULL and an empty one are fine. */
void gan_idx_free(struct gan_idx *idx);

/* Bytes per element of an IDX type code; 0 when the code is not one of the six. */
size_t gan_idx_type_size(int type);

/* A short name for a type code ("unsigned bytes"); "an unknown type" otherwise. */
const char *gan_idx_type_name(int type);

#endif
