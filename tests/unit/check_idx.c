/* SPDX-License-Identifier: MIT */
/* check_idx.c — tests of the IDX reader: files written here (plain and gzip) read back
 * exactly; truncated, mis-headed, mis-shaped and padded files fail with their reason; a
 * fuzz of random mutations and truncations never crashes; the installed Fashion-MNIST reads. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <check.h>

#include "data/idx.h"
#include "data/image_data.h"

/* ------------------------------------------------------------------ fixture */

static char tmpdir[64];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ganctl-idx-XXXXXX");
    ck_assert_msg(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

/* Removes the files the tests made (flat folder) and the folder. */
static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *tmp_path(const char *name)
{
    static char path[2][160];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", tmpdir, name);
    return path[which];
}

/* ------------------------------------------------------------------ writing files */

struct bytes {
    unsigned char *p;
    size_t n, cap;
};

static void put(struct bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_u32be(struct bytes *b, uint32_t v)
{
    unsigned char q[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 8), (unsigned char)v };
    put(b, q, 4);
}

/* An IDX image of type `type` and shape dims whose element k has the value
 * value_of(type, k), written big-endian byte by byte (not with the reader's code). */
static double value_of(int type, size_t k)
{
    switch (type) {
    case GAN_IDX_U8: return (double)((k * 37 + 11) % 256);
    case GAN_IDX_I8: return (double)((int)((k * 53 + 7) % 256) - 128);
    case GAN_IDX_I16: return (double)((long)((k * 7919 + 13) % 65536) - 32768);
    case GAN_IDX_I32: return (double)((long long)((k * 2654435761u) % 4294967296u) - 2147483648LL);
    case GAN_IDX_F32: return (double)(float)(0.375 * (double)k - 3.25);
    default: return -1e300 + (double)k * 1e299;
    }
}

static void put_value(struct bytes *b, int type, double v)
{
    unsigned char q[8];
    size_t n = 0;
    uint64_t u = 0;
    switch (type) {
    case GAN_IDX_U8: u = (uint64_t)v; n = 1; break;
    case GAN_IDX_I8: u = (uint64_t)(uint8_t)(int8_t)v; n = 1; break;
    case GAN_IDX_I16: u = (uint64_t)(uint16_t)(int16_t)v; n = 2; break;
    case GAN_IDX_I32: u = (uint64_t)(uint32_t)(int32_t)(long long)v; n = 4; break;
    case GAN_IDX_F32: {
        float f = (float)v;
        uint32_t w;
        memcpy(&w, &f, 4);
        u = w;
        n = 4;
        break;
    }
    default: {
        memcpy(&u, &v, 8);
        n = 8;
    }
    }
    for (size_t i = 0; i < n; i++)
        q[i] = (unsigned char)(u >> (8 * (n - 1 - i)));
    put(b, q, n);
}

static struct bytes make_idx(int type, int ndim, const uint32_t *dims)
{
    struct bytes b = { NULL, 0, 0 };
    unsigned char magic[4] = { 0, 0, (unsigned char)type, (unsigned char)ndim };
    put(&b, magic, 4);
    size_t count = 1;
    for (int d = 0; d < ndim; d++) {
        put_u32be(&b, dims[d]);
        count *= dims[d];
    }
    for (size_t k = 0; k < count; k++)
        put_value(&b, type, value_of(type, k));
    return b;
}

static void write_plain(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f, "%s: %s", path, strerror(errno));
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

static void write_gz(const char *path, const void *data, size_t n)
{
    gzFile gz = gzopen(path, "wb6");
    ck_assert_ptr_nonnull(gz);
    if (n)
        ck_assert_int_eq(gzwrite(gz, data, (unsigned)n), (int)n);
    ck_assert_int_eq(gzclose(gz), Z_OK);
}

/* The gzip-compressed form of data, in memory (to mutate it). */
static struct bytes gzip_bytes(const void *data, size_t n)
{
    const char *path = tmp_path("compress.gz");
    write_gz(path, data, n);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    struct bytes b = { NULL, 0, 0 };
    unsigned char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        put(&b, buf, k);
    fclose(f);
    unlink(path);
    return b;
}

/* ------------------------------------------------------------------ valid files */

struct valid_case {
    int type;
    int ndim;
    uint32_t dims[4];
    int gz;
};

static const struct valid_case valid_cases[] = {
    { GAN_IDX_U8, 3, { 3, 28, 28 }, 0 },
    { GAN_IDX_U8, 3, { 3, 28, 28 }, 1 },
    { GAN_IDX_U8, 1, { 17 }, 0 },
    { GAN_IDX_U8, 1, { 17 }, 1 },
    { GAN_IDX_I8, 2, { 5, 7 }, 1 },
    { GAN_IDX_I16, 2, { 3, 11 }, 0 },
    { GAN_IDX_I32, 3, { 2, 3, 5 }, 1 },
    { GAN_IDX_F32, 1, { 40 }, 0 },
    { GAN_IDX_F64, 2, { 4, 4 }, 1 },
    /* A size of zero: a well-formed empty array. */
    { GAN_IDX_U8, 3, { 0, 28, 28 }, 0 },
    /* Bigger than the reader's first buffer (1 MiB), so it grows: 1500 images. */
    { GAN_IDX_U8, 3, { 1500, 28, 28 }, 1 },
};

static double read_back(const struct gan_idx *x, size_t k)
{
    switch (x->type) {
    case GAN_IDX_U8: return ((const uint8_t *)x->data)[k];
    case GAN_IDX_I8: return ((const int8_t *)x->data)[k];
    case GAN_IDX_I16: return ((const int16_t *)x->data)[k];
    case GAN_IDX_I32: return ((const int32_t *)x->data)[k];
    case GAN_IDX_F32: return ((const float *)x->data)[k];
    default: return ((const double *)x->data)[k];
    }
}

START_TEST(test_valid)
{
    const struct valid_case *c = &valid_cases[_i];
    struct bytes b = make_idx(c->type, c->ndim, c->dims);
    const char *path = tmp_path(c->gz ? "valid.gz" : "valid");
    if (c->gz)
        write_gz(path, b.p, b.n);
    else
        write_plain(path, b.p, b.n);
    /* Asked for exactly what it holds, with the first size left open. */
    struct gan_idx_expect e = { "the test array", c->type, c->ndim, { 0 } };
    for (int d = 0; d < c->ndim; d++)
        e.dims[d] = d == 0 ? GAN_IDX_ANY_SIZE : (int64_t)c->dims[d];
    struct gan_idx x;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_idx_read(path, &e, &x, &err);
    ck_assert_msg(st == GAN_OK, "%s", err.message);
    ck_assert_int_eq(x.type, c->type);
    ck_assert_int_eq(x.ndim, c->ndim);
    size_t count = 1;
    for (int d = 0; d < c->ndim; d++) {
        ck_assert_int_eq(x.dims[d], c->dims[d]);
        count *= c->dims[d];
    }
    ck_assert_uint_eq(x.count, count);
    ck_assert_uint_eq(x.elem_size, gan_idx_type_size(c->type));
    ck_assert_ptr_nonnull(x.data);
    for (size_t k = 0; k < count; k++)
        ck_assert_msg(read_back(&x, k) == value_of(c->type, k), "element %zu: %.17g, wrote %.17g",
                      k, read_back(&x, k), value_of(c->type, k));
    gan_idx_free(&x);
    ck_assert_ptr_null(x.data);
    /* And with no expectation at all. */
    ck_assert_int_eq(gan_idx_read(path, NULL, &x, &err), GAN_OK);
    ck_assert_uint_eq(x.count, count);
    gan_idx_free(&x);
    free(b.p);
}
END_TEST

START_TEST(test_type_table)
{
    ck_assert_uint_eq(gan_idx_type_size(0x08), 1);
    ck_assert_uint_eq(gan_idx_type_size(0x09), 1);
    ck_assert_uint_eq(gan_idx_type_size(0x0B), 2);
    ck_assert_uint_eq(gan_idx_type_size(0x0C), 4);
    ck_assert_uint_eq(gan_idx_type_size(0x0D), 4);
    ck_assert_uint_eq(gan_idx_type_size(0x0E), 8);
    ck_assert_uint_eq(gan_idx_type_size(0x0A), 0);
    ck_assert_uint_eq(gan_idx_type_size(0x00), 0);
    ck_assert_str_eq(gan_idx_type_name(0x08), "unsigned bytes");
    ck_assert_str_eq(gan_idx_type_name(0x42), "an unknown type");
    gan_idx_free(NULL);
}
END_TEST

/* ------------------------------------------------------------------ bad files */

/* Reads path expecting failure `want`; the message must name the file and contain
 * each of the NULL-terminated phrases. */
static void expect_failure(const char *path, const struct gan_idx_expect *e, gan_status want,
                           const char *const *phrases)
{
    struct gan_idx x;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_idx_read(path, e, &x, &err);
    ck_assert_msg(st == want, "%s: status %d (%s), wanted %d", path, (int)st, err.message,
                  (int)want);
    ck_assert_int_eq(err.status, want);
    ck_assert_ptr_null(x.data);
    ck_assert_uint_eq(x.count, 0);
    ck_assert_msg(strstr(err.message, path), "the message does not name the file: %s",
                  err.message);
    for (int i = 0; phrases && phrases[i]; i++)
        ck_assert_msg(strstr(err.message, phrases[i]), "no \"%s\" in: %s", phrases[i],
                      err.message);
}

static const struct gan_idx_expect images_28 = {
    "the images", GAN_IDX_U8, 3, { GAN_IDX_ANY_SIZE, 28, 28 }
};

/* Cut at every interesting place: inside the magic, inside the sizes, one byte into
 * the data, one byte short of the end; plain and gzip. */
START_TEST(test_truncated)
{
    uint32_t dims[3] = { 2, 28, 28 };
    struct bytes b = make_idx(GAN_IDX_U8, 3, dims);
    ck_assert_uint_eq(b.n, 16 + 2 * 784);
    const size_t cuts[] = { 2, 9, 17, 16 + 2 * 784 - 1 };
    for (int gz = 0; gz < 2; gz++) {
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            const char *path = tmp_path(gz ? "cut.gz" : "cut");
            (gz ? write_gz : write_plain)(path, b.p, cuts[i]);
            char at[96];
            if (cuts[i] < 4) {
                snprintf(at, sizeof at, "ends after %zu bytes, inside the 4-byte magic", cuts[i]);
            } else if (cuts[i] < 16) {
                snprintf(at, sizeof at, "ends at byte %zu, inside its 16-byte header", cuts[i]);
            } else {
                snprintf(at, sizeof at, "ends at byte %zu of the 1584 its header promises",
                         cuts[i]);
            }
            const char *const phrases[] = { at, "truncated", NULL };
            expect_failure(path, &images_28, GAN_ERR_FORMAT, phrases);
        }
    }
    /* An empty file. */
    write_plain(tmp_path("empty"), "", 0);
    const char *const empty[] = { "the file is empty", NULL };
    expect_failure(tmp_path("empty"), NULL, GAN_ERR_FORMAT, empty);
    free(b.p);
}
END_TEST

/* The compressed stream itself cut: the data never arrive, or the gzip trailer is gone. */
START_TEST(test_truncated_gzip_stream)
{
    uint32_t dims[3] = { 4, 28, 28 };
    struct bytes b = make_idx(GAN_IDX_U8, 3, dims);
    struct bytes z = gzip_bytes(b.p, b.n);
    const char *path = tmp_path("stream.gz");
    write_plain(path, z.p, z.n / 2);
    const char *const mid[] = { "of the 3152 its header promises", "gzip stream itself is cut "
                                "short", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, mid);
    /* All of the deflate data, but not the 8-byte CRC and length. */
    write_plain(path, z.p, z.n - 8);
    const char *const trailer[] = { "ends without its trailer", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, trailer);
    free(b.p);
    free(z.p);
}
END_TEST

START_TEST(test_wrong_magic)
{
    uint32_t dims[3] = { 2, 28, 28 };
    struct bytes b = make_idx(GAN_IDX_U8, 3, dims);
    const char *path = tmp_path("magic");
    /* Not starting 00 00 (a PNG's first bytes). */
    b.p[0] = 0x89;
    b.p[1] = 0x50;
    write_plain(path, b.p, b.n);
    const char *const png[] = { "wrong magic bytes 89 50 08 03", "not an IDX file", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, png);
    /* An unknown type code. */
    b.p[0] = 0;
    b.p[1] = 0;
    b.p[2] = 0x0A;
    write_plain(path, b.p, b.n);
    const char *const type[] = { "wrong magic bytes 00 00 0a 03", "type code 0x0a", NULL };
    expect_failure(path, NULL, GAN_ERR_FORMAT, type);
    /* Zero dimensions, and more than the reader takes. */
    b.p[2] = 0x08;
    b.p[3] = 0;
    write_plain(path, b.p, b.n);
    const char *const none[] = { "give 0 dimensions", NULL };
    expect_failure(path, NULL, GAN_ERR_FORMAT, none);
    b.p[3] = 9;
    write_plain(path, b.p, b.n);
    const char *const many[] = { "give 9 dimensions", NULL };
    expect_failure(path, NULL, GAN_ERR_FORMAT, many);
    /* A gzip file is judged by what it decompresses to, whatever its name. */
    b.p[0] = 'I';
    b.p[3] = 3;
    write_gz(tmp_path("magic.gz"), b.p, b.n);
    const char *const gz[] = { "wrong magic bytes 49 00 08 03", NULL };
    expect_failure(tmp_path("magic.gz"), NULL, GAN_ERR_FORMAT, gz);
    free(b.p);
}
END_TEST

START_TEST(test_wrong_dimensions)
{
    const char *path = tmp_path("dims.gz");
    /* 27 columns where 28 are wanted. */
    uint32_t d1[3] = { 3, 28, 27 };
    struct bytes b = make_idx(GAN_IDX_U8, 3, d1);
    write_gz(path, b.p, b.n);
    const char *const cols[] = { "holds [3, 28, 27] of unsigned bytes",
                                 "the images must be [N, 28, 28] of unsigned bytes", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, cols);
    free(b.p);
    /* A label file (one dimension) where images are wanted. */
    uint32_t d2[1] = { 10 };
    b = make_idx(GAN_IDX_U8, 1, d2);
    write_gz(path, b.p, b.n);
    const char *const labels[] = { "holds [10] of unsigned bytes", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, labels);
    free(b.p);
    /* The right shape in the wrong type. */
    uint32_t d3[3] = { 1, 28, 28 };
    b = make_idx(GAN_IDX_F32, 3, d3);
    write_gz(path, b.p, b.n);
    const char *const type[] = { "holds [1, 28, 28] of 32-bit floats", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, type);
    free(b.p);
    /* A fixed first size. */
    uint32_t d4[2] = { 4, 2 };
    b = make_idx(GAN_IDX_I16, 2, d4);
    write_plain(path, b.p, b.n);
    struct gan_idx_expect fixed = { "the pairs", 0, 2, { 5, 2 } };
    const char *const first[] = { "holds [4, 2] of 16-bit integers", "the pairs must be [5, 2]",
                                  NULL };
    expect_failure(path, &fixed, GAN_ERR_FORMAT, first);
    free(b.p);
}
END_TEST

START_TEST(test_trailing_garbage)
{
    uint32_t dims[1] = { 6 };
    struct bytes b = make_idx(GAN_IDX_U8, 1, dims);
    put(&b, "junk!", 5);
    const char *const phrases[] = { "5 bytes follow the 14 its header accounts for",
                                    "trailing garbage", NULL };
    expect_failure((write_plain(tmp_path("tail"), b.p, b.n), tmp_path("tail")), NULL,
                   GAN_ERR_FORMAT, phrases);
    expect_failure((write_gz(tmp_path("tail.gz"), b.p, b.n), tmp_path("tail.gz")), NULL,
                   GAN_ERR_FORMAT, phrases);
    free(b.p);
}
END_TEST

/* A header whose sizes multiply past the limit is refused before any allocation. */
START_TEST(test_absurd_size)
{
    uint32_t dims[3] = { 1, 1, 1 };
    struct bytes b = make_idx(GAN_IDX_F64, 3, dims);
    unsigned char big[12] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 16 };
    memcpy(b.p + 4, big, 12);
    const char *path = tmp_path("huge");
    write_plain(path, b.p, b.n);
    const char *const phrases[] = { "[4294967295, 4294967295, 16] of 64-bit floats",
                                    "the header is corrupt", NULL };
    expect_failure(path, NULL, GAN_ERR_FORMAT, phrases);
    /* Under the limit (32 MiB), in a gzip file whose data end at once: truncated. */
    unsigned char claim[12] = { 0, 0, 0x80, 0, 0, 0, 0, 64, 0, 0, 0, 16 };
    memcpy(b.p + 4, claim, 12);
    b.p[2] = GAN_IDX_U8;
    write_gz(tmp_path("huge.gz"), b.p, b.n);
    const char *const cut[] = { "ends at byte 24 of the 33554448 its header promises", NULL };
    expect_failure(tmp_path("huge.gz"), NULL, GAN_ERR_FORMAT, cut);
    free(b.p);
}
END_TEST

START_TEST(test_corrupt_gzip)
{
    uint32_t dims[3] = { 4, 28, 28 };
    struct bytes b = make_idx(GAN_IDX_U8, 3, dims);
    struct bytes z = gzip_bytes(b.p, b.n);
    /* Flip bits in the middle of the deflate data: either the stream stops decoding
     * (corrupt) or it decodes to other bytes and the CRC check fails. */
    for (size_t k = z.n / 3; k < z.n / 3 + 8; k++)
        z.p[k] ^= 0x5a;
    const char *path = tmp_path("corrupt.gz");
    write_plain(path, z.p, z.n);
    const char *const phrases[] = { "gzip stream is corrupt", NULL };
    expect_failure(path, &images_28, GAN_ERR_FORMAT, phrases);
    free(b.p);
    free(z.p);
}
END_TEST

START_TEST(test_missing_and_unreadable)
{
    const char *const none[] = { "no such file", NULL };
    expect_failure(tmp_path("nothing-here.gz"), NULL, GAN_ERR_NOT_FOUND, none);
    const char *const folder[] = { "is a folder", NULL };
    expect_failure(tmpdir, NULL, GAN_ERR_IO, folder);
    struct gan_idx x;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_idx_read(NULL, NULL, &x, &err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_idx_read("", NULL, &x, &err), GAN_ERR_INVALID);
    struct gan_idx_expect bad = { NULL, 0x0A, 1, { 1 } };
    ck_assert_int_eq(gan_idx_read(tmp_path("x"), &bad, &x, &err), GAN_ERR_INVALID);
    /* A NULL error context discards the message but keeps the status. */
    ck_assert_int_eq(gan_idx_read(tmp_path("nothing"), NULL, &x, NULL), GAN_ERR_NOT_FOUND);
}
END_TEST

/* ------------------------------------------------------------------ fuzz */

static uint64_t fuzz_state;

static uint32_t fuzz_next(void)
{
    uint64_t z = (fuzz_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* One read of a mutated file: it must either succeed with a self-consistent result or
 * fail with a message that names the file; nothing else (no crash, no silent junk). */
static int fuzz_one(const char *path, const struct gan_idx_expect *e)
{
    struct gan_idx x;
    struct gan_error err;
    gan_error_clear(&err);
    gan_status st = gan_idx_read(path, e, &x, &err);
    if (st == GAN_OK) {
        size_t count = 1;
        for (int d = 0; d < x.ndim; d++)
            count *= (size_t)x.dims[d];
        ck_assert_uint_eq(count, x.count);
        ck_assert_ptr_nonnull(x.data);
        ck_assert_int_ge(x.ndim, 1);
        ck_assert_uint_ne(x.elem_size, 0);
        gan_idx_free(&x);
        return 1;
    }
    ck_assert_msg(st == GAN_ERR_FORMAT || st == GAN_ERR_NOMEM, "status %d: %s", (int)st,
                  err.message);
    ck_assert_msg(strstr(err.message, path), "message without the file: %s", err.message);
    ck_assert_ptr_null(x.data);
    return 0;
}

/* 3000 rounds, each a plain and a gzip file: 1–4 random byte changes weighted towards
 * the 16-byte header (byte values 0, 0xff, small numbers or anything), or a random
 * truncation, or random bytes appended; plus mutations of the compressed bytes. */
START_TEST(test_fuzz)
{
    uint32_t dims[3] = { 2, 4, 4 };
    struct bytes base = make_idx(GAN_IDX_U8, 3, dims);
    struct bytes zbase = gzip_bytes(base.p, base.n);
    struct gan_idx_expect any_e = { NULL, 0, 0, { 0 } };
    const struct gan_idx_expect *expects[2] = { NULL, &any_e };
    unsigned char *buf = malloc(base.n + 64), *zbuf = malloc(zbase.n + 64);
    int accepted = 0, rounds = 3000;
    fuzz_state = 0x1d2c3b4a5968ull;
    const char *plain = tmp_path("fuzz"), *gz = tmp_path("fuzz.gz");
    for (int round = 0; round < rounds; round++) {
        size_t n = base.n;
        memcpy(buf, base.p, n);
        uint32_t kind = fuzz_next() % 8;
        if (kind < 5) {
            int changes = 1 + (int)(fuzz_next() % 4);
            for (int c = 0; c < changes; c++) {
                size_t at = fuzz_next() % 3 ? fuzz_next() % 16 : fuzz_next() % n;
                uint32_t how = fuzz_next() % 4;
                buf[at] = how == 0 ? 0 : how == 1 ? 0xff : how == 2
                          ? (unsigned char)(fuzz_next() % 12) : (unsigned char)fuzz_next();
            }
        } else if (kind < 7) {
            n = fuzz_next() % n;
        } else {
            size_t extra = 1 + fuzz_next() % 64;
            for (size_t k = 0; k < extra; k++)
                buf[n + k] = (unsigned char)fuzz_next();
            n += extra;
        }
        write_plain(plain, buf, n);
        accepted += fuzz_one(plain, expects[round % 2]);
        write_gz(gz, buf, n);
        accepted += fuzz_one(gz, expects[round % 2]);

        /* The compressed form mutated, or cut. */
        size_t zn = zbase.n;
        memcpy(zbuf, zbase.p, zn);
        if (fuzz_next() % 4) {
            int changes = 1 + (int)(fuzz_next() % 3);
            for (int c = 0; c < changes; c++)
                zbuf[fuzz_next() % zn] ^= (unsigned char)(1u << (fuzz_next() % 8));
        } else {
            zn = fuzz_next() % zn;
        }
        write_plain(gz, zbuf, zn);
        accepted += fuzz_one(gz, NULL);
    }
    /* Some mutations leave a valid file (a changed data byte); most must not. */
    ck_assert_msg(accepted > 0 && accepted < 3 * rounds / 2, "%d of %d reads accepted",
                  accepted, 3 * rounds);
    if (getenv("GANCTL_FUZZ_REPORT"))
        fprintf(stderr, "idx fuzz: %d of %d reads accepted\n", accepted, 3 * rounds);
    free(buf);
    free(zbuf);
    free(base.p);
    free(zbase.p);
}
END_TEST

/* ------------------------------------------------------------------ the real files */

static const char *fashion_dir(void)
{
    const char *d = getenv("GANCTL_FASHION_MNIST_DIR");
    return d && *d ? d : GAN_IMAGE_DATA_DEFAULT_DIR;
}

static int fashion_present(void)
{
    char path[512];
    const char *names[4] = { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" };
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", fashion_dir(), names[i]);
        if (access(path, R_OK) != 0)
            return 0;
    }
    return 1;
}

/* Counts, shapes and label range of both splits; the sum of all pixel bytes (measured
 * once with Python's gzip module: train 3431114169, mean 72.94; test 573469082) and the
 * first labels pin the contents down. */
START_TEST(test_fashion_mnist_files)
{
    static const struct {
        const char *images, *labels;
        int64_t n;
        unsigned long long pixel_sum;
        unsigned char first_labels[10];
    } splits[2] = {
        { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 60000, 3431114169ull,
          { 9, 0, 0, 3, 0, 2, 7, 2, 5, 5 } },
        { "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 10000, 573469082ull,
          { 9, 2, 1, 1, 6, 1, 4, 6, 5, 7 } },
    };
    char path[512];
    struct gan_error err;
    gan_error_clear(&err);
    struct gan_idx_expect labels_e = { "the labels", GAN_IDX_U8, 1, { GAN_IDX_ANY_SIZE } };
    for (int s = 0; s < 2; s++) {
        struct gan_idx im, lb;
        snprintf(path, sizeof path, "%s/%s", fashion_dir(), splits[s].images);
        ck_assert_msg(gan_idx_read(path, &images_28, &im, &err) == GAN_OK, "%s", err.message);
        snprintf(path, sizeof path, "%s/%s", fashion_dir(), splits[s].labels);
        ck_assert_msg(gan_idx_read(path, &labels_e, &lb, &err) == GAN_OK, "%s", err.message);
        ck_assert_int_eq(im.dims[0], splits[s].n);
        ck_assert_int_eq(im.dims[1], 28);
        ck_assert_int_eq(im.dims[2], 28);
        ck_assert_int_eq(lb.dims[0], splits[s].n);
        const unsigned char *px = im.data, *lab = lb.data;
        unsigned long long sum = 0;
        for (size_t k = 0; k < im.count; k++)
            sum += px[k];
        ck_assert_msg(sum == splits[s].pixel_sum, "%s: pixel sum %llu, measured %llu",
                      splits[s].images, sum, splits[s].pixel_sum);
        long per_class[10] = { 0 };
        for (size_t k = 0; k < lb.count; k++) {
            ck_assert_uint_lt(lab[k], 10);
            per_class[lab[k]]++;
        }
        for (int c = 0; c < 10; c++) {
            ck_assert_int_eq(per_class[c], splits[s].n / 10);
            ck_assert_uint_eq(lab[c], splits[s].first_labels[c]);
        }
        gan_idx_free(&im);
        gan_idx_free(&lb);
    }
}
END_TEST

static Suite *idx_suite(void)
{
    Suite *s = suite_create("idx");
    TCase *tc = tcase_create("valid files");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_loop_test(tc, test_valid, 0, (int)(sizeof valid_cases / sizeof valid_cases[0]));
    tcase_add_test(tc, test_type_table);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad files");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_truncated_gzip_stream);
    tcase_add_test(tc, test_wrong_magic);
    tcase_add_test(tc, test_wrong_dimensions);
    tcase_add_test(tc, test_trailing_garbage);
    tcase_add_test(tc, test_absurd_size);
    tcase_add_test(tc, test_corrupt_gzip);
    tcase_add_test(tc, test_missing_and_unreadable);
    suite_add_tcase(s, tc);

    tc = tcase_create("fuzz");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_fuzz);
    suite_add_tcase(s, tc);

    /* Only where the Debian package is installed; the rest runs anywhere. */
    if (fashion_present()) {
        tc = tcase_create("fashion-mnist files");
        tcase_add_test(tc, test_fashion_mnist_files);
        suite_add_tcase(s, tc);
    } else {
        fprintf(stderr, "SKIP fashion-mnist files: not in %s (install %s)\n", fashion_dir(),
                GAN_IMAGE_DATA_PACKAGE);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(idx_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
