/* SPDX-License-Identifier: MIT */
/* fuzz_safetensors.c — the safetensors reader (core/io/safetensors/safetensors_read.c) on arbitrary
 * bytes, through gan_st_parse, the in-memory entry point that gan_st_open calls once it
 * has read a file. A refusal must be one line naming the source with a format status;
 * an acceptance must be what safetensors.h describes: tensors that tile the data
 * section in order, each inside the input, with the size its dtype and shape give. */
#include "config.h"

#include <string.h>

#include "io/safetensors/safetensors.h"
#include "fuzz.h"

#define LABEL "input.safetensors"

static void check_refusal(gan_status status, const gan_st_file *f, const char *err)
{
    if (f)
        fuzz_fail("refused (%s) but a file was returned", gan_status_string(status));
    if (status != GAN_ERR_FORMAT && status != GAN_ERR_UNSUPPORTED)
        fuzz_fail("refused with status %s: %s", gan_status_string(status), err);
    if (strncmp(err, LABEL ": ", strlen(LABEL) + 2) != 0)
        fuzz_fail("the message does not name the source: %s", err);
    if (strchr(err, '\n'))
        fuzz_fail("the message spans lines: %s", err);
}

static void check_tensors(const gan_st_file *f, const uint8_t *data, size_t size)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | data[i];
    if (n > size - 8)
        fuzz_fail("accepted a header of %llu bytes in a %zu-byte input",
                  (unsigned long long)n, size);
    const uint8_t *section = data + 8 + n, *end = data + size;
    uint64_t cursor = 0;
    for (size_t i = 0; i < gan_st_count(f); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, i);
        if (!t || !t->name)
            fuzz_fail("tensor %zu has no name", i);
        if (gan_st_find(f, t->name) != t)
            fuzz_fail("%s: gan_st_find finds another tensor", t->name);
        if (!gan_st_dtype_name(t->dtype))
            fuzz_fail("%s: dtype %d outside the enum", t->name, (int)t->dtype);
        if (t->ndim < 0 || t->ndim > GAN_ST_MAX_DIMS)
            fuzz_fail("%s: %d dimensions", t->name, t->ndim);
        uint64_t count = 1;
        for (int d = 0; d < t->ndim; d++)
            count *= t->shape[d];
        if (count != t->count)
            fuzz_fail("%s: count %llu, but the shape gives %llu", t->name,
                      (unsigned long long)t->count, (unsigned long long)count);
        if (t->nbytes != count * gan_st_dtype_size(t->dtype))
            fuzz_fail("%s: %zu bytes for %llu elements of %s", t->name, t->nbytes,
                      (unsigned long long)count, gan_st_dtype_name(t->dtype));
        if (t->begin != cursor)
            fuzz_fail("%s: begins at %llu, not where the previous one ended (%llu)", t->name,
                      (unsigned long long)t->begin, (unsigned long long)cursor);
        const uint8_t *p = t->data;
        if (p != section + t->begin || t->nbytes > (size_t)(end - p))
            fuzz_fail("%s: its data lies outside the input", t->name);
        /* Every byte is read, so that a memory checker sees a range that is wrong. */
        volatile uint8_t sum = 0;
        for (size_t b = 0; b < t->nbytes; b++)
            sum = (uint8_t)(sum + p[b]);
        (void)sum;
        cursor += t->nbytes;
    }
    if (cursor != (uint64_t)(end - section))
        fuzz_fail("the tensors cover %llu bytes of a %llu-byte data section",
                  (unsigned long long)cursor, (unsigned long long)(end - section));
}

static void check_metadata(const gan_st_file *f)
{
    const char *prev = NULL;
    for (size_t i = 0; i < gan_st_metadata_count(f); i++) {
        const char *key = NULL, *value = NULL;
        gan_st_metadata_at(f, i, &key, &value);
        if (!key || !value)
            fuzz_fail("metadata entry %zu has no key or no value", i);
        if (prev && strcmp(prev, key) >= 0)
            fuzz_fail("metadata not sorted by key: \"%s\" before \"%s\"", prev, key);
        if (gan_st_metadata_get(f, key) != value)
            fuzz_fail("metadata \"%s\": the lookup finds another value", key);
        prev = key;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024] = "";
    gan_st_file *f = NULL;
    gan_status status = gan_st_parse(data, size, LABEL, &f, err, sizeof err);
    if (status != GAN_OK) {
        check_refusal(status, f, err);
        return 0;
    }
    if (!f || size < 8)
        fuzz_fail("accepted %zu bytes without a file to show", size);
    check_tensors(f, data, size);
    check_metadata(f);
    gan_st_close(f);
    return 0;
}
