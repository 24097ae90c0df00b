/* SPDX-License-Identifier: MIT */
/* safetensors_private.h — what the safetensors writer and reader share: a metadata entry
 * and the helpers for messages, shapes and names. Nothing outside core/io/ includes it. */
#ifndef GANCTL_CORE_SAFETENSORS_PRIVATE_H
#define GANCTL_CORE_SAFETENSORS_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors/safetensors.h"

/* One metadata entry; both strings owned. */
struct st_meta {
    char *key;
    char *value;
};

/* Writes one line into err (when given) and returns `status`. */
gan_status gan_st_fail(char *err, size_t err_size, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Element count of a shape; 0 when it does not fit in 64 bits. */
int gan_st_element_count(int ndim, const uint64_t *shape, uint64_t *count);

/* "[512, 2]" into buf; returns buf. */
const char *gan_st_shape_text(char *buf, size_t size, int ndim, const uint64_t *shape);

/* A name as it can appear inside a one-line message; returns buf. */
const char *gan_st_printable(char *buf, size_t size, const char *text);

/* qsort order of metadata entries: by key, bytewise. */
int gan_st_cmp_meta(const void *pa, const void *pb);

#endif
