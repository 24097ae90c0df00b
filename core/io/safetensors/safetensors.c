/* SPDX-License-Identifier: MIT */
/* safetensors.c — the element types of safetensors files, and the helpers the writer and
 * the reader share: one-line messages, shapes, names safe to print, metadata order. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors/safetensors_private.h"

/* ----------------------------------------------------------------- common */

gan_status gan_st_fail(char *err, size_t err_size, gan_status status, const char *fmt, ...)
{
    if (err && err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return status;
}

static const struct {
    const char *name;
    size_t size;
} st_dtypes[GAN_ST_DTYPE_COUNT] = {
    [GAN_ST_BOOL] = { "BOOL", 1 },
    [GAN_ST_U8] = { "U8", 1 },
    [GAN_ST_I8] = { "I8", 1 },
    [GAN_ST_F8_E5M2] = { "F8_E5M2", 1 },
    [GAN_ST_F8_E4M3] = { "F8_E4M3", 1 },
    [GAN_ST_I16] = { "I16", 2 },
    [GAN_ST_U16] = { "U16", 2 },
    [GAN_ST_F16] = { "F16", 2 },
    [GAN_ST_BF16] = { "BF16", 2 },
    [GAN_ST_I32] = { "I32", 4 },
    [GAN_ST_U32] = { "U32", 4 },
    [GAN_ST_F32] = { "F32", 4 },
    [GAN_ST_F64] = { "F64", 8 },
    [GAN_ST_I64] = { "I64", 8 },
    [GAN_ST_U64] = { "U64", 8 },
};

size_t gan_st_dtype_size(enum gan_st_dtype dtype)
{
    return (unsigned)dtype < GAN_ST_DTYPE_COUNT ? st_dtypes[dtype].size : 0;
}

const char *gan_st_dtype_name(enum gan_st_dtype dtype)
{
    return (unsigned)dtype < GAN_ST_DTYPE_COUNT ? st_dtypes[dtype].name : NULL;
}

gan_status gan_st_dtype_parse(const char *name, enum gan_st_dtype *dtype)
{
    for (int i = 0; i < GAN_ST_DTYPE_COUNT; i++) {
        if (strcmp(name, st_dtypes[i].name) == 0) {
            *dtype = (enum gan_st_dtype)i;
            return GAN_OK;
        }
    }
    return GAN_ERR_NOT_FOUND;
}

enum gan_st_dtype gan_st_dtype_from_gan(enum gan_dtype dtype)
{
    switch (dtype) {
    case GAN_F32: return GAN_ST_F32;
    case GAN_F16: return GAN_ST_F16;
    case GAN_BF16: return GAN_ST_BF16;
    case GAN_I32: return GAN_ST_I32;
    case GAN_U32: return GAN_ST_U32;
    case GAN_F8E4M3: return GAN_ST_F8_E4M3;
    case GAN_F8E5M2: return GAN_ST_F8_E5M2;
    default: return GAN_ST_DTYPE_COUNT;
    }
}

/* Element count of a shape; 0 when it does not fit in 64 bits. A shape holding a 0
 * has no elements, and cannot overflow however large its other dimensions are. */
int gan_st_element_count(int ndim, const uint64_t *shape, uint64_t *count)
{
    uint64_t n = 1;
    int overflow = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            *count = 0;
            return 1;
        }
        if (n > UINT64_MAX / shape[d])
            overflow = 1;
        else
            n *= shape[d];
    }
    if (overflow)
        return 0;
    *count = n;
    return 1;
}

/* "[512, 2]" into buf. */
const char *gan_st_shape_text(char *buf, size_t size, int ndim, const uint64_t *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, d ? ", " : "", shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* A name as it can appear inside a one-line message: control bytes become '?' and a
 * very long name is shortened, since a corrupt file may hold anything there. */
const char *gan_st_printable(char *buf, size_t size, const char *text)
{
    size_t i = 0, limit = size - 1;
    const size_t shown = 120;
    if (limit > shown + 3)
        limit = shown + 3;
    for (; text[i] && i < limit; i++) {
        unsigned char c = (unsigned char)text[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (text[i] && i >= 3) {
        memcpy(buf + i - 3, "...", 3);
    }
    buf[i] = '\0';
    return buf;
}

int gan_st_cmp_meta(const void *pa, const void *pb)
{
    const struct st_meta *a = pa, *b = pb;
    return strcmp(a->key, b->key);
}
