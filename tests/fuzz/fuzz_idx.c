/* SPDX-License-Identifier: MIT */
/* fuzz_idx.c — the IDX reader (core/data/idx.c) on arbitrary bytes, plain or gzip: it
 * reads only from a path, so each input goes through a scratch file. A refusal must be
 * a format error naming the file; an acceptance must hold what its header says. An
 * accepted array is read again expecting exactly its own shape, which must give the same
 * elements, and expecting another size, which must be refused. */
#include "config.h"

#include <string.h>

#include "data/idx.h"
#include "fuzz.h"

static void check_refusal(gan_status st, const struct gan_idx *x, const struct gan_error *err,
                          const char *path)
{
    /* NOMEM is an honest answer for a gzip stream that inflates past memory. */
    if (st != GAN_ERR_FORMAT && st != GAN_ERR_NOMEM)
        fuzz_fail("refused with status %s: %s", gan_status_string(st), err->message);
    if (!strstr(err->message, path))
        fuzz_fail("the message does not name the file: %s", err->message);
    if (strchr(err->message, '\n'))
        fuzz_fail("the message spans lines: %s", err->message);
    if (x->data || x->count || x->ndim)
        fuzz_fail("refused, but the result is not empty");
}

static void check_array(const struct gan_idx *x)
{
    if (x->ndim < 1 || x->ndim > GAN_IDX_MAX_DIMS)
        fuzz_fail("accepted with %d dimensions", x->ndim);
    if (x->elem_size != gan_idx_type_size((int)x->type) || !x->elem_size)
        fuzz_fail("type 0x%02x with %zu-byte elements", (unsigned)x->type, x->elem_size);
    size_t count = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (x->dims[d] < 0 || x->dims[d] > 0xffffffffLL)
            fuzz_fail("dimension %d is %lld", d, (long long)x->dims[d]);
        count *= (size_t)x->dims[d];
    }
    if (count != x->count)
        fuzz_fail("count %zu, but the sizes give %zu", x->count, count);
    if (!x->data)
        fuzz_fail("accepted without data");
    if ((uint64_t)x->count * x->elem_size > GAN_IDX_MAX_BYTES)
        fuzz_fail("accepted %zu elements, beyond the reader's limit", x->count);
    /* Every byte is read, so that a memory checker sees a buffer that is too short. */
    volatile unsigned char sum = 0;
    const unsigned char *p = x->data;
    for (size_t b = 0; b < x->count * x->elem_size; b++)
        sum = (unsigned char)(sum + p[b]);
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_file(data, size);
    struct gan_idx x;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_idx_read(path, NULL, &x, &err);
    if (st != GAN_OK) {
        check_refusal(st, &x, &err, path);
        return 0;
    }
    check_array(&x);

    struct gan_idx_expect same = { "the array", (int)x.type, x.ndim, { 0 } };
    for (int d = 0; d < x.ndim; d++)
        same.dims[d] = x.dims[d];
    struct gan_idx again;
    gan_error_clear(&err);
    st = gan_idx_read(path, &same, &again, &err);
    if (st != GAN_OK)
        fuzz_fail("read again expecting its own shape, refused: %s", err.message);
    if (again.count != x.count || again.type != x.type
        || memcmp(again.data, x.data, x.count * x.elem_size) != 0)
        fuzz_fail("read again, the elements differ");
    gan_idx_free(&again);

    struct gan_idx_expect other = same;
    other.dims[x.ndim - 1] = x.dims[x.ndim - 1] + 1;
    gan_error_clear(&err);
    st = gan_idx_read(path, &other, &again, &err);
    if (st != GAN_ERR_FORMAT)
        fuzz_fail("expecting a size it does not have, status %s", gan_status_string(st));
    check_refusal(st, &again, &err, path);
    gan_idx_free(&x);
    return 0;
}
