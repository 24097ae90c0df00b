/* SPDX-License-Identifier: MIT */
/* check_safetensors_fuzz.c — seeded, deterministic fuzzing of the safetensors reader:
 * random byte changes, header edits, truncations and length fields on valid files. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors/safetensors.h"

#define LABEL "fuzz.safetensors"

/* Mutations per loop iteration; each TCase loops over several iterations. */
#define PER_ROUND 1000

static char err[1024];

/* splitmix64: small, good enough, and the same sequence everywhere for a seed. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t rng_below(uint64_t *state, size_t n)
{
    return n ? (size_t)(rng_next(state) % n) : 0;
}

/* ----------------------------------------------------------------- seed files */

struct seed {
    unsigned char *bytes;
    size_t size;
    uint64_t header_len;
};

static struct seed seeds[2];

static void read_whole(const char *path, struct seed *s)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s->bytes = malloc((size_t)n);
    ck_assert_ptr_nonnull(s->bytes);
    ck_assert_uint_eq(fread(s->bytes, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    s->size = (size_t)n;
    s->header_len = 0;
    for (int i = 7; i >= 0; i--)
        s->header_len = (s->header_len << 8) | s->bytes[i];
}

/* Seed 0: the file Python's safetensors package wrote. Seed 1: one from this writer,
 * with many small tensors so that the offsets table is long. */
static void load_seeds(void)
{
    read_whole(GAN_TEST_DATA_DIR "/reference.safetensors", &seeds[0]);

    static uint8_t data[4096];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i * 29 + 3);
    gan_st_writer *w = gan_st_writer_new();
    ck_assert_ptr_nonnull(w);
    size_t used = 0;
    for (int i = 0; i < 24; i++) {
        enum gan_st_dtype dtype = (enum gan_st_dtype)(i % GAN_ST_DTYPE_COUNT);
        uint64_t shape[3] = { (uint64_t)(i % 3), 2, (uint64_t)(1 + i % 4) };
        int ndim = i % 4 == 3 ? 0 : 3;
        uint64_t count = ndim ? shape[0] * shape[1] * shape[2] : 1;
        size_t nbytes = (size_t)count * gan_st_dtype_size(dtype);
        char name[32];
        snprintf(name, sizeof name, "net.layer%d.param", i);
        ck_assert_int_eq(gan_st_writer_add(w, name, dtype, ndim, shape, data + used, nbytes, err,
                                           sizeof err), GAN_OK);
        used += nbytes;
    }
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "step", "1000", err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "scaler", "{\"scale\": 65536}", err,
                                                sizeof err), GAN_OK);
    const char *base = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/check_safetensors_fuzz.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/seed.safetensors", dir);
    ck_assert_msg(gan_st_writer_write(w, path, err, sizeof err) == GAN_OK, "%s", err);
    gan_st_writer_free(w);
    read_whole(path, &seeds[1]);
    unlink(path);
    rmdir(dir);

    for (int s = 0; s < 2; s++) {
        gan_st_file *f = NULL;
        ck_assert_msg(gan_st_parse(seeds[s].bytes, seeds[s].size, LABEL, &f, err, sizeof err)
                      == GAN_OK, "seed %d: %s", s, err);
        gan_st_close(f);
    }
}

static void free_seeds(void)
{
    for (int s = 0; s < 2; s++) {
        free(seeds[s].bytes);
        seeds[s].bytes = NULL;
    }
}

/* ----------------------------------------------------------------- the oracle */

/* Parses `size` bytes (a private allocation of exactly that size, so that a memory
 * checker sees any read past it). On success everything the reader promises must hold;
 * on failure there must be a one-line message naming the source. Returns the status. */
static gan_status check_parse(const unsigned char *src, size_t size)
{
    unsigned char *bytes = malloc(size ? size : 1);
    ck_assert_ptr_nonnull(bytes);
    if (size)
        memcpy(bytes, src, size);
    gan_st_file *f = NULL;
    err[0] = '\0';
    gan_status status = gan_st_parse(bytes, size, LABEL, &f, err, sizeof err);
    if (status != GAN_OK) {
        ck_assert_ptr_null(f);
        ck_assert_msg(strncmp(err, LABEL ": ", strlen(LABEL) + 2) == 0, "message: %s", err);
        ck_assert_msg(strchr(err, '\n') == NULL, "message spans lines: %s", err);
        ck_assert(status == GAN_ERR_FORMAT || status == GAN_ERR_UNSUPPORTED);
        free(bytes);
        return status;
    }

    ck_assert_uint_ge(size, 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | bytes[i];
    ck_assert_uint_le(n, size - 8);
    const unsigned char *data = bytes + 8 + n, *end = bytes + size;
    uint64_t cursor = 0;
    for (size_t i = 0; i < gan_st_count(f); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, i);
        ck_assert_ptr_nonnull(t->name);
        ck_assert_ptr_eq(gan_st_find(f, t->name), t);
        ck_assert_ptr_nonnull(gan_st_dtype_name(t->dtype));
        ck_assert_int_ge(t->ndim, 0);
        ck_assert_int_le(t->ndim, GAN_ST_MAX_DIMS);
        uint64_t count = 1;
        for (int d = 0; d < t->ndim; d++)
            count *= t->shape[d];
        ck_assert_uint_eq(count, t->count);
        ck_assert_uint_eq(t->nbytes, count * gan_st_dtype_size(t->dtype));
        ck_assert_uint_eq(t->begin, cursor);
        ck_assert((const unsigned char *)t->data == data + t->begin);
        ck_assert((const unsigned char *)t->data + t->nbytes <= end);
        /* Touch every byte, so that a memory checker would catch a bad range. */
        unsigned sum = 0;
        for (size_t b = 0; b < t->nbytes; b++)
            sum += ((const unsigned char *)t->data)[b];
        (void)sum;
        cursor += t->nbytes;
    }
    ck_assert_uint_eq(cursor, (uint64_t)(end - data));
    for (size_t i = 0; i < gan_st_metadata_count(f); i++) {
        const char *key, *value;
        gan_st_metadata_at(f, i, &key, &value);
        ck_assert_ptr_nonnull(key);
        ck_assert_ptr_eq(gan_st_metadata_get(f, key), value);
    }
    gan_st_close(f);
    free(bytes);
    return GAN_OK;
}

/* ----------------------------------------------------------------- mutations */

/* 1 to 8 random bytes anywhere get random values. A change confined to the data section
 * must not matter: the file still loads. */
START_TEST(test_random_bytes)
{
    uint64_t state = 0x5afe7e4501ULL + (uint64_t)_i;
    for (int s = 0; s < 2; s++) {
        const struct seed *sd = &seeds[s];
        unsigned char *buf = malloc(sd->size);
        for (int k = 0; k < PER_ROUND; k++) {
            memcpy(buf, sd->bytes, sd->size);
            int edits = 1 + (int)rng_below(&state, 8);
            int data_only = 1;
            for (int e = 0; e < edits; e++) {
                /* Half the edits land in the header, where they matter most. */
                size_t pos = rng_below(&state, 2) ? rng_below(&state, 8 + (size_t)sd->header_len)
                                                  : rng_below(&state, sd->size);
                buf[pos] = (unsigned char)rng_next(&state);
                if (pos < 8 + sd->header_len && buf[pos] != sd->bytes[pos])
                    data_only = 0;
            }
            gan_status status = check_parse(buf, sd->size);
            if (data_only)
                ck_assert_msg(status == GAN_OK, "seed %d round %d: data edit rejected: %s", s, k,
                              err);
        }
        free(buf);
    }
}
END_TEST

/* Edits that keep the header looking like JSON, to get past the parser into validation:
 * a digit changed, a character deleted or duplicated, a JSON token inserted. */
START_TEST(test_header_edits)
{
    static const char tokens[] = "0123456789-{}[]\",: e.";
    uint64_t state = 0xdecaf0000ULL + (uint64_t)_i;
    for (int s = 0; s < 2; s++) {
        const struct seed *sd = &seeds[s];
        size_t cap = sd->size + 64;
        unsigned char *buf = malloc(cap);
        for (int k = 0; k < PER_ROUND; k++) {
            memcpy(buf, sd->bytes, sd->size);
            size_t size = sd->size;
            uint64_t n = sd->header_len;
            int edits = 1 + (int)rng_below(&state, 3);
            for (int e = 0; e < edits; e++) {
                size_t pos = 8 + rng_below(&state, (size_t)n);
                switch (rng_below(&state, 4)) {
                case 0: /* a digit for a digit, keeping the length */
                    for (size_t tries = 0; tries < n; tries++, pos = 8 + (pos - 8 + 1) % n)
                        if (buf[pos] >= '0' && buf[pos] <= '9') {
                            buf[pos] = (unsigned char)('0' + rng_below(&state, 10));
                            break;
                        }
                    break;
                case 1: /* delete a byte of the header */
                    memmove(buf + pos, buf + pos + 1, size - pos - 1);
                    size--;
                    n--;
                    break;
                case 2: /* duplicate a byte */
                    if (size + 1 > cap)
                        break;
                    memmove(buf + pos + 1, buf + pos, size - pos);
                    size++;
                    n++;
                    break;
                default: /* overwrite with a JSON token character */
                    buf[pos] = (unsigned char)tokens[rng_below(&state, sizeof tokens - 1)];
                    break;
                }
                if (n == 0)
                    break;
            }
            for (int i = 0; i < 8; i++)
                buf[i] = (unsigned char)(n >> (8 * i));
            check_parse(buf, size);
        }
        free(buf);
    }
}
END_TEST

/* A naive judge of a set of offset pairs, written without the reader's sort: every pair
 * keeps its tensor's size and stays in bounds, every data byte belongs to exactly one
 * tensor, and no empty tensor sits strictly inside another. */
static int tiles(unsigned long long nv[][2], unsigned long long v[][2], size_t pairs,
                 size_t data_len)
{
    unsigned char *cover = calloc(data_len + 1, 1);
    int ok = 1;
    for (size_t i = 0; ok && i < pairs; i++) {
        if (nv[i][1] < nv[i][0] || nv[i][1] - nv[i][0] != v[i][1] - v[i][0] || nv[i][1] > data_len)
            ok = 0;
        for (unsigned long long b = nv[i][0]; ok && b < nv[i][1]; b++)
            if (cover[b]++)
                ok = 0;
    }
    for (size_t i = 0; ok && i < data_len; i++)
        ok = cover[i] == 1;
    for (size_t i = 0; ok && i < pairs; i++)
        for (size_t j = 0; ok && j < pairs; j++)
            if (nv[i][0] == nv[i][1] && nv[j][0] < nv[i][0] && nv[i][0] < nv[j][1])
                ok = 0;
    free(cover);
    return ok;
}

/* Edits of whole offset pairs, which keep each entry self-consistent so that only the
 * layout checks (overlap, gap, coverage, bounds) can catch them: shift a pair, copy
 * another tensor's pair, or swap two pairs. The reader must agree with tiles(): most
 * results are invalid, but a swap of two same-sized tensors, or an empty tensor moved
 * to a boundary, is valid and must load. */
START_TEST(test_offset_edits)
{
    static const char key[] = "\"data_offsets\":[";
    uint64_t state = 0x0ff5e7ULL + (uint64_t)_i;
    for (int s = 0; s < 2; s++) {
        const struct seed *sd = &seeds[s];
        const char *h = (const char *)sd->bytes + 8;
        size_t hn = (size_t)sd->header_len;
        /* Where each pair's text starts and ends, and its values. */
        size_t at[64], stop[64], pairs = 0;
        unsigned long long v[64][2];
        for (size_t p = 0; p + sizeof key - 1 < hn && pairs < 64; p++) {
            if (memcmp(h + p, key, sizeof key - 1) != 0)
                continue;
            at[pairs] = p + sizeof key - 1;
            char *end;
            v[pairs][0] = strtoull(h + at[pairs], &end, 10);
            v[pairs][1] = strtoull(end + 1, &end, 10);
            stop[pairs] = (size_t)(end - h);
            pairs++;
        }
        ck_assert_uint_gt(pairs, 8);
        size_t cap = sd->size + 512;
        char *text = malloc(cap);
        unsigned char *buf = malloc(cap);
        for (int k = 0; k < PER_ROUND; k++) {
            unsigned long long nv[64][2];
            memcpy(nv, v, sizeof nv);
            size_t a = rng_below(&state, pairs), b = rng_below(&state, pairs);
            switch (rng_below(&state, 3)) {
            case 0: {
                long long d = (long long)rng_below(&state, 33) - 16;
                if ((long long)nv[a][0] + d < 0)
                    d = -d;
                nv[a][0] += (unsigned long long)d;
                nv[a][1] += (unsigned long long)d;
                break;
            }
            case 1:
                nv[a][0] = v[b][0];
                nv[a][1] = v[b][1];
                break;
            default:
                nv[a][0] = v[b][0];
                nv[a][1] = v[b][1];
                nv[b][0] = v[a][0];
                nv[b][1] = v[a][1];
                break;
            }
            /* Rebuild the header with the new pairs. */
            size_t len = 0, from = 0;
            for (size_t i = 0; i < pairs; i++) {
                memcpy(text + len, h + from, at[i] - from);
                len += at[i] - from;
                len += (size_t)sprintf(text + len, "%llu,%llu", nv[i][0], nv[i][1]);
                from = stop[i];
            }
            memcpy(text + len, h + from, hn - from);
            len += hn - from;
            size_t data_len = sd->size - 8 - hn;
            for (int i = 0; i < 8; i++)
                buf[i] = (unsigned char)((uint64_t)len >> (8 * i));
            memcpy(buf + 8, text, len);
            memcpy(buf + 8 + len, sd->bytes + 8 + hn, data_len);
            gan_status status = check_parse(buf, 8 + len + data_len);
            ck_assert_msg((status == GAN_OK) == tiles(nv, v, pairs, data_len),
                          "seed %d round %d: reader says %d: %s", s, k, status, err);
        }
        free(text);
        free(buf);
    }
}
END_TEST

/* Every truncation of each seed is rejected (the data section must be covered exactly),
 * and so is every extension by a few bytes. */
START_TEST(test_truncations)
{
    const struct seed *sd = &seeds[_i];
    for (size_t size = 0; size < sd->size; size++)
        ck_assert_msg(check_parse(sd->bytes, size) != GAN_OK, "%zu of %zu bytes accepted", size,
                      sd->size);
    unsigned char *longer = calloc(1, sd->size + 16);
    memcpy(longer, sd->bytes, sd->size);
    for (size_t extra = 1; extra <= 16; extra++)
        ck_assert_int_ne(check_parse(longer, sd->size + extra), GAN_OK);
    ck_assert_int_eq(check_parse(longer, sd->size), GAN_OK);
    free(longer);
}
END_TEST

/* Any header length but the true one is rejected: nearby values, every single-bit flip,
 * and random 64-bit values. */
START_TEST(test_length_field)
{
    const struct seed *sd = &seeds[_i];
    unsigned char *buf = malloc(sd->size);
    uint64_t state = 0x1e46e4ULL + (uint64_t)_i;
    for (int k = 0; k < 3 * 64 + 2 * PER_ROUND; k++) {
        uint64_t n;
        if (k < 129)
            n = sd->header_len + (uint64_t)(k - 64);
        else if (k < 129 + 64)
            n = sd->header_len ^ ((uint64_t)1 << (k - 129));
        else
            n = k % 2 ? rng_next(&state) : rng_below(&state, sd->size + 64);
        if (n == sd->header_len)
            continue;
        memcpy(buf, sd->bytes, sd->size);
        for (int i = 0; i < 8; i++)
            buf[i] = (unsigned char)(n >> (8 * i));
        ck_assert_msg(check_parse(buf, sd->size) != GAN_OK, "header length %llu accepted",
                      (unsigned long long)n);
    }
    free(buf);
}
END_TEST

/* Reading from a file takes another path (alignment shift, read loop): mutated files
 * must get the same verdict and message from gan_st_open as from gan_st_parse. */
START_TEST(test_open_agrees)
{
    char dir[4096], path[4200], parse_err[1024];
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/check_safetensors_fuzz.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    uint64_t state = 0x0be2ULL;
    for (int k = 0; k < 300; k++) {
        const struct seed *sd = &seeds[k % 2];
        unsigned char *buf = malloc(sd->size);
        memcpy(buf, sd->bytes, sd->size);
        size_t size = k % 3 == 0 ? rng_below(&state, sd->size + 1) : sd->size;
        if (k % 3 == 1)
            buf[rng_below(&state, 8 + (size_t)sd->header_len)] ^= (unsigned char)(1u << (k % 8));
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(buf, 1, size, f), size);
        ck_assert_int_eq(fclose(f), 0);

        gan_st_file *parsed = NULL, *opened = NULL;
        gan_status ps = gan_st_parse(buf, size, path, &parsed, parse_err, sizeof parse_err);
        gan_status os = gan_st_open(path, &opened, err, sizeof err);
        ck_assert_int_eq(ps, os);
        if (ps != GAN_OK) {
            ck_assert_str_eq(err, parse_err);
        } else {
            ck_assert_uint_eq(gan_st_count(parsed), gan_st_count(opened));
            for (size_t i = 0; i < gan_st_count(parsed); i++) {
                const struct gan_st_tensor *a = gan_st_tensor_at(parsed, i);
                const struct gan_st_tensor *b = gan_st_tensor_at(opened, i);
                ck_assert_str_eq(a->name, b->name);
                ck_assert_uint_eq(a->nbytes, b->nbytes);
                ck_assert_int_eq(memcmp(a->data, b->data, a->nbytes), 0);
            }
        }
        gan_st_close(parsed);
        gan_st_close(opened);
        free(buf);
    }
    unlink(path);
    rmdir(dir);
}
END_TEST

static Suite *safetensors_fuzz_suite(void)
{
    Suite *s = suite_create("safetensors_fuzz");

    TCase *tc = tcase_create("random_bytes");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_loop_test(tc, test_random_bytes, 0, 10);
    suite_add_tcase(s, tc);

    tc = tcase_create("header_edits");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_loop_test(tc, test_header_edits, 0, 10);
    suite_add_tcase(s, tc);

    tc = tcase_create("offset_edits");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_loop_test(tc, test_offset_edits, 0, 5);
    suite_add_tcase(s, tc);

    tc = tcase_create("truncations");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_loop_test(tc, test_truncations, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("length_field");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_loop_test(tc, test_length_field, 0, 2);
    suite_add_tcase(s, tc);

    tc = tcase_create("open_agrees");
    tcase_add_unchecked_fixture(tc, load_seeds, free_seeds);
    tcase_add_test(tc, test_open_agrees);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(safetensors_fuzz_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
