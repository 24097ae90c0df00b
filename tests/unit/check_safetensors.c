/* SPDX-License-Identifier: MIT */
/* check_safetensors.c — tests of the safetensors writer and reader: round trips, byte-exact
 * agreement with Python's safetensors package, malformed files, and atomic writes. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safetensors/safetensors.h"

#define LABEL "run/ckpt.safetensors"

/* ----------------------------------------------------------------- helpers */

static char tmpdir[1024];
static char err[1024];

static void make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/check_safetensors.XXXXXX", base && *base ? base : "/tmp");
    ck_assert_msg(mkdtemp(tmpdir) != NULL, "mkdtemp %s: %s", tmpdir, strerror(errno));
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        char child[4096];
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void setup_tmp(void)
{
    make_tmpdir();
    err[0] = '\0';
}

static void teardown_tmp(void)
{
    remove_tree(tmpdir);
}

static const char *in_tmp(const char *name)
{
    static char path[2][4096];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", tmpdir, name);
    return path[which];
}

/* Entries in a folder, without . and ..; the names joined by spaces go to `names`. */
static int count_entries(const char *dir, char *names, size_t size)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (names)
        names[0] = '\0';
    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        if (names && strlen(names) + strlen(e->d_name) + 2 < size) {
            strcat(names, e->d_name);
            strcat(names, " ");
        }
    }
    closedir(d);
    return n;
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void spit(const char *path, const void *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, size, f), size);
    ck_assert_int_eq(fclose(f), 0);
}

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A file in memory: length field, `header` verbatim, `data_len` bytes of data. */
static unsigned char *build(const char *header, size_t data_len, size_t *size)
{
    size_t n = strlen(header);
    *size = 8 + n + data_len;
    unsigned char *buf = malloc(*size + 1);
    ck_assert_ptr_nonnull(buf);
    put_le64(buf, n);
    memcpy(buf + 8, header, n);
    for (size_t i = 0; i < data_len; i++)
        buf[8 + n + i] = (unsigned char)(i * 13 + 7);
    return buf;
}

/* ----------------------------------------------------------------- dtypes */

static const struct {
    enum gan_st_dtype dtype;
    const char *name;
    size_t size;
} dtype_table[] = {
    { GAN_ST_BOOL, "BOOL", 1 }, { GAN_ST_U8, "U8", 1 },     { GAN_ST_I8, "I8", 1 },
    { GAN_ST_F8_E5M2, "F8_E5M2", 1 }, { GAN_ST_F8_E4M3, "F8_E4M3", 1 },
    { GAN_ST_I16, "I16", 2 },   { GAN_ST_U16, "U16", 2 },   { GAN_ST_F16, "F16", 2 },
    { GAN_ST_BF16, "BF16", 2 }, { GAN_ST_I32, "I32", 4 },   { GAN_ST_U32, "U32", 4 },
    { GAN_ST_F32, "F32", 4 },   { GAN_ST_F64, "F64", 8 },   { GAN_ST_I64, "I64", 8 },
    { GAN_ST_U64, "U64", 8 },
};
#define N_DTYPES ((int)(sizeof dtype_table / sizeof dtype_table[0]))

START_TEST(test_dtype_names)
{
    enum gan_st_dtype parsed = GAN_ST_DTYPE_COUNT;
    ck_assert_int_eq(N_DTYPES, GAN_ST_DTYPE_COUNT);
    ck_assert_str_eq(gan_st_dtype_name(dtype_table[_i].dtype), dtype_table[_i].name);
    ck_assert_uint_eq(gan_st_dtype_size(dtype_table[_i].dtype), dtype_table[_i].size);
    ck_assert_int_eq(gan_st_dtype_parse(dtype_table[_i].name, &parsed), GAN_OK);
    ck_assert_int_eq(parsed, dtype_table[_i].dtype);
}
END_TEST

START_TEST(test_dtype_unknown)
{
    enum gan_st_dtype parsed = GAN_ST_F32;
    ck_assert_int_eq(gan_st_dtype_parse("f32", &parsed), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(gan_st_dtype_parse("F8_E8M0", &parsed), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(gan_st_dtype_parse("F8_E4M3FN", &parsed), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(gan_st_dtype_parse("", &parsed), GAN_ERR_NOT_FOUND);
    ck_assert_int_eq(parsed, GAN_ST_F32);
    ck_assert_ptr_null(gan_st_dtype_name(GAN_ST_DTYPE_COUNT));
    ck_assert_uint_eq(gan_st_dtype_size(GAN_ST_DTYPE_COUNT), 0);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_F32), GAN_ST_F32);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_F16), GAN_ST_F16);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_BF16), GAN_ST_BF16);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_I32), GAN_ST_I32);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_U32), GAN_ST_U32);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_F8E4M3), GAN_ST_F8_E4M3);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_F8E5M2), GAN_ST_F8_E5M2);
    ck_assert_int_eq(gan_st_dtype_from_gan(GAN_DTYPE_COUNT), GAN_ST_DTYPE_COUNT);
}
END_TEST

/* ----------------------------------------------------------------- round trips */

/* Values with edge cases for each type: signed zero, subnormals, infinities and NaN
 * payloads for floats, extremes for integers. Bytes are written little-endian by hand so
 * the expectation does not depend on the host's byte order. */
static void fill(enum gan_st_dtype dtype, uint64_t count, unsigned char *out)
{
    static const uint16_t f16[] = { 0x0000, 0x8000, 0x0001, 0x03ff, 0x3c00, 0x7bff,
                                    0x7c00, 0xfc00, 0x7e01, 0xc500, 0x3555 };
    static const uint16_t bf16[] = { 0x0000, 0x8000, 0x0001, 0x3f80, 0x7f7f, 0x7f80,
                                     0xff80, 0x7fc1, 0xc0a0, 0x3eab, 0x0080 };
    static const double f64[] = { 0.0, -0.0, 4.9406564584124654e-324, 1.0, -2.5e300,
                                  HUGE_VAL, -HUGE_VAL, 1.0 / 3.0, -7.25, 1e-310 };
    static const float f32[] = { 0.0f, -0.0f, 1.4e-45f, 1.0f, -3.4e38f, HUGE_VALF,
                                 -HUGE_VALF, 1.0f / 3.0f, 65504.0f, 5.96e-8f };
    for (uint64_t i = 0; i < count; i++) {
        uint64_t bits;
        size_t size = gan_st_dtype_size(dtype);
        switch (dtype) {
        case GAN_ST_BOOL: bits = i % 3 == 0; break;
        case GAN_ST_U8: bits = (uint8_t)(255 - i * 37); break;
        case GAN_ST_I8: bits = (uint8_t)(int8_t)(i % 2 ? -128 + (int)i : 127 - (int)i); break;
        /* zeros, subnormals, the largest finite, E5M2's infinities and the NaNs */
        case GAN_ST_F8_E5M2: bits = (uint8_t[]){ 0x00, 0x80, 0x01, 0x7b, 0x7c, 0xfc, 0x7e }[i % 7]; break;
        case GAN_ST_F8_E4M3: bits = (uint8_t[]){ 0x00, 0x80, 0x07, 0x7e, 0xfe, 0x7f, 0xff }[i % 7]; break;
        case GAN_ST_I16: bits = (uint16_t)(int16_t)(i % 2 ? -32768 + (int)i : 1000 * (int)i); break;
        case GAN_ST_U16: bits = (uint16_t)(65535 - i * 4099); break;
        case GAN_ST_F16: bits = f16[i % (sizeof f16 / sizeof f16[0])]; break;
        case GAN_ST_BF16: bits = bf16[i % (sizeof bf16 / sizeof bf16[0])]; break;
        case GAN_ST_I32: bits = (uint32_t)(int32_t)(i % 2 ? INT32_MIN + (int32_t)i : (int32_t)i * 1000003); break;
        case GAN_ST_U32: bits = (uint32_t)(0xdeadbeefu * (uint32_t)(i + 1)); break;
        case GAN_ST_F32: {
            float v = f32[i % (sizeof f32 / sizeof f32[0])];
            uint32_t u;
            if (i == 9)
                v = nanf("");
            memcpy(&u, &v, 4);
            bits = u;
            break;
        }
        case GAN_ST_F64: {
            double v = f64[i % (sizeof f64 / sizeof f64[0])];
            memcpy(&bits, &v, 8);
            break;
        }
        case GAN_ST_I64: bits = (uint64_t)(i % 2 ? INT64_MIN + (int64_t)i : -(int64_t)i * 1000000007LL); break;
        case GAN_ST_U64: bits = UINT64_MAX - i * 0x0123456789abcdefULL; break;
        default: ck_abort_msg("no fill for dtype %d", (int)dtype); return;
        }
        for (size_t b = 0; b < size; b++)
            out[i * size + b] = (unsigned char)(bits >> (8 * b));
    }
}

static const struct {
    int ndim;
    uint64_t shape[4];
    uint64_t count;
} shapes[] = {
    { 0, { 0 }, 1 },            /* a scalar */
    { 1, { 7 }, 7 },
    { 4, { 2, 3, 1, 2 }, 12 },
    { 3, { 3, 0, 2 }, 0 },      /* no elements */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

START_TEST(test_roundtrip_dtype_shape)
{
    enum gan_st_dtype dtype = dtype_table[_i / N_SHAPES].dtype;
    int s = _i % N_SHAPES;
    size_t nbytes = shapes[s].count * gan_st_dtype_size(dtype);
    unsigned char *data = malloc(nbytes + 1);
    ck_assert_ptr_nonnull(data);
    fill(dtype, shapes[s].count, data);

    gan_st_writer *w = gan_st_writer_new();
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(gan_st_writer_add(w, "t", dtype, shapes[s].ndim, shapes[s].shape, data,
                                       nbytes, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "dtype", gan_st_dtype_name(dtype), err,
                                                sizeof err), GAN_OK);
    const char *path = in_tmp("t.safetensors");
    ck_assert_msg(gan_st_writer_write(w, path, err, sizeof err) == GAN_OK, "%s", err);
    gan_st_writer_free(w);

    gan_st_file *f = NULL;
    ck_assert_msg(gan_st_open(path, &f, err, sizeof err) == GAN_OK, "%s", err);
    ck_assert_uint_eq(gan_st_count(f), 1);
    const struct gan_st_tensor *t = gan_st_find(f, "t");
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_eq(t, gan_st_tensor_at(f, 0));
    ck_assert_str_eq(t->name, "t");
    ck_assert_int_eq(t->dtype, dtype);
    ck_assert_int_eq(t->ndim, shapes[s].ndim);
    for (int d = 0; d < t->ndim; d++)
        ck_assert_uint_eq(t->shape[d], shapes[s].shape[d]);
    ck_assert_uint_eq(t->count, shapes[s].count);
    ck_assert_uint_eq(t->begin, 0);
    ck_assert_uint_eq(t->nbytes, nbytes);
    ck_assert_int_eq(memcmp(t->data, data, nbytes), 0);
    /* gan_st_open places the data section 8-byte aligned. */
    ck_assert_uint_eq((uintptr_t)t->data % 8, 0);
    ck_assert_str_eq(gan_st_metadata_get(f, "dtype"), gan_st_dtype_name(dtype));
    gan_st_close(f);

    /* The file itself: header length a multiple of 8, padded with spaces after '}'. */
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    uint64_t n = read_le64(bytes);
    ck_assert_uint_eq(n % 8, 0);
    ck_assert_uint_eq(size, 8 + n + nbytes);
    size_t close_brace = (size_t)n + 7;
    while (bytes[close_brace] == ' ')
        close_brace--;
    ck_assert_int_eq(bytes[close_brace], '}');
    ck_assert_uint_lt(8 + n - 1 - close_brace, 8);
    free(bytes);
    free(data);
}
END_TEST

/* Several tensors: the layout (descending dtype, then name), lookups, metadata. */
START_TEST(test_roundtrip_many)
{
    float a[6] = { 1, 2, 3, 4, 5, 6 };
    float b = -1.5f;
    double c[2] = { 0.1, 0.2 };
    uint16_t h[3] = { 0x3c00, 0x4000, 0x4200 };
    uint8_t u[3] = { 1, 2, 3 };
    int64_t step = 1234567890123LL;
    uint64_t sa[2] = { 2, 3 }, sc[1] = { 2 }, sh[1] = { 3 };

    gan_st_writer *w = gan_st_writer_new();
    ck_assert_int_eq(gan_st_writer_add(w, "b", GAN_ST_F32, 0, NULL, &b, 4, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "u", GAN_ST_U8, 1, sh, u, 3, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "a", GAN_ST_F32, 2, sa, a, 24, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "h", GAN_ST_F16, 1, sh, h, 6, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "c", GAN_ST_F64, 1, sc, c, 16, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "step", GAN_ST_I64, 0, NULL, &step, 8, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "zeta", "last", err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "alpha", "first", err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "config", "old", err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "config", "lr = 1e-4;\nbeta1 = 0.5;", err,
                                                sizeof err), GAN_OK);
    const char *path = in_tmp("many.safetensors");
    ck_assert_msg(gan_st_writer_write(w, path, err, sizeof err) == GAN_OK, "%s", err);
    /* Written twice (the writer stays usable): identical bytes. */
    const char *again = in_tmp("again.safetensors");
    ck_assert_msg(gan_st_writer_write(w, again, err, sizeof err) == GAN_OK, "%s", err);
    gan_st_writer_free(w);

    size_t s1, s2;
    unsigned char *f1 = slurp(path, &s1), *f2 = slurp(again, &s2);
    ck_assert_uint_eq(s1, s2);
    ck_assert_int_eq(memcmp(f1, f2, s1), 0);
    uint64_t n = read_le64(f1);
    const char *expected_header =
        "{\"__metadata__\":{\"alpha\":\"first\",\"config\":\"lr = 1e-4;\\nbeta1 = 0.5;\","
        "\"zeta\":\"last\"},"
        "\"step\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
        "\"c\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,48]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[48,52]},"
        "\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[52,58]},"
        "\"u\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[58,61]}}";
    size_t hl = strlen(expected_header);
    ck_assert_uint_eq(n, (hl + 7) / 8 * 8);
    ck_assert_int_eq(memcmp(f1 + 8, expected_header, hl), 0);
    for (size_t i = hl; i < n; i++)
        ck_assert_int_eq(f1[8 + i], ' ');
    ck_assert_uint_eq(s1, 8 + n + 61);
    free(f1);
    free(f2);

    gan_st_file *f = NULL;
    ck_assert_msg(gan_st_open(path, &f, err, sizeof err) == GAN_OK, "%s", err);
    const char *order[] = { "step", "c", "a", "b", "h", "u" };
    ck_assert_uint_eq(gan_st_count(f), 6);
    for (size_t i = 0; i < 6; i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, i);
        ck_assert_str_eq(t->name, order[i]);
        ck_assert_ptr_eq(gan_st_find(f, order[i]), t);
        ck_assert_uint_eq((uintptr_t)t->data % gan_st_dtype_size(t->dtype), 0);
    }
    ck_assert_ptr_null(gan_st_tensor_at(f, 6));
    ck_assert_ptr_null(gan_st_find(f, "missing"));
    ck_assert_ptr_null(gan_st_find(f, ""));
    ck_assert_int_eq(memcmp(gan_st_find(f, "a")->data, a, sizeof a), 0);
    ck_assert_int_eq(memcmp(gan_st_find(f, "c")->data, c, sizeof c), 0);
    int64_t step_back;
    memcpy(&step_back, gan_st_find(f, "step")->data, 8);
    ck_assert(step_back == step);

    ck_assert_uint_eq(gan_st_metadata_count(f), 3);
    const char *key, *value;
    gan_st_metadata_at(f, 0, &key, &value);
    ck_assert_str_eq(key, "alpha");
    ck_assert_str_eq(value, "first");
    gan_st_metadata_at(f, 2, &key, &value);
    ck_assert_str_eq(key, "zeta");
    gan_st_metadata_at(f, 3, &key, &value);
    ck_assert_ptr_null(key);
    ck_assert_str_eq(gan_st_metadata_get(f, "config"), "lr = 1e-4;\nbeta1 = 0.5;");
    ck_assert_ptr_null(gan_st_metadata_get(f, "missing"));

    const struct gan_st_tensor *t = NULL;
    ck_assert_int_eq(gan_st_expect(f, "a", GAN_ST_F32, 2, sa, &t, err, sizeof err), GAN_OK);
    ck_assert_str_eq(t->name, "a");
    uint64_t wrong[2] = { 3, 2 };
    ck_assert_int_eq(gan_st_expect(f, "a", GAN_ST_F32, 2, wrong, &t, err, sizeof err),
                     GAN_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_ptr_nonnull(strstr(err, ": tensor \"a\" is F32 [2, 3], expected F32 [3, 2]"));
    ck_assert_ptr_nonnull(strstr(err, path));
    gan_st_close(f);
}
END_TEST

/* The FP8 types, one byte each, sit between I16 and I8 in the reference's dtype order
 * (E5M2 before E4M3), so they are laid out after I16 and before I8 and U8, and their
 * bytes read back as written. */
START_TEST(test_roundtrip_fp8)
{
    const uint8_t e4m3[4] = { 0x00, 0x7e, 0xff, 0x01 }, e5m2[3] = { 0x7b, 0x7c, 0x83 };
    const uint8_t u[1] = { 9 }, i8[2] = { 0x80, 0x7f };
    const uint16_t i16[1] = { 0x1234 };
    uint64_t s1[1] = { 1 }, s2[1] = { 2 }, s3[1] = { 3 }, s4[2] = { 2, 2 };

    gan_st_writer *w = gan_st_writer_new();
    ck_assert_int_eq(gan_st_writer_add(w, "u", GAN_ST_U8, 1, s1, u, 1, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "e4", GAN_ST_F8_E4M3, 2, s4, e4m3, 4, err, sizeof err),
                     GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "i8", GAN_ST_I8, 1, s2, i8, 2, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "e5", GAN_ST_F8_E5M2, 1, s3, e5m2, 3, err, sizeof err),
                     GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "w", GAN_ST_I16, 1, s1, i16, 2, err, sizeof err), GAN_OK);
    /* the size is checked against one byte per element */
    ck_assert_int_eq(gan_st_writer_add(w, "bad", GAN_ST_F8_E4M3, 1, s3, e4m3, 4, err, sizeof err),
                     GAN_ERR_INVALID);
    const char *path = in_tmp("fp8.safetensors");
    ck_assert_msg(gan_st_writer_write(w, path, err, sizeof err) == GAN_OK, "%s", err);
    gan_st_writer_free(w);

    gan_st_file *f = NULL;
    ck_assert_msg(gan_st_open(path, &f, err, sizeof err) == GAN_OK, "%s", err);
    const char *order[] = { "w", "e4", "e5", "i8", "u" };
    const uint64_t begin[] = { 0, 2, 6, 9, 11 };
    ck_assert_uint_eq(gan_st_count(f), 5);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(gan_st_tensor_at(f, i)->name, order[i]);
        ck_assert_uint_eq(gan_st_tensor_at(f, i)->begin, begin[i]);
    }
    const struct gan_st_tensor *t = gan_st_find(f, "e4");
    ck_assert_int_eq(t->dtype, GAN_ST_F8_E4M3);
    ck_assert_uint_eq(t->count, 4);
    ck_assert_uint_eq(t->nbytes, 4);
    ck_assert_int_eq(memcmp(t->data, e4m3, 4), 0);
    t = gan_st_find(f, "e5");
    ck_assert_int_eq(t->dtype, GAN_ST_F8_E5M2);
    ck_assert_int_eq(memcmp(t->data, e5m2, 3), 0);
    gan_st_close(f);
}
END_TEST

/* An empty writer gives the reference's empty file: "{}" and six spaces. */
START_TEST(test_roundtrip_empty)
{
    gan_st_writer *w = gan_st_writer_new();
    const char *path = in_tmp("empty.safetensors");
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);
    size_t size;
    unsigned char *bytes = slurp(path, &size);
    static const unsigned char expected[] = { 8, 0, 0, 0, 0, 0, 0, 0, '{', '}',
                                              ' ', ' ', ' ', ' ', ' ', ' ' };
    ck_assert_uint_eq(size, sizeof expected);
    ck_assert_int_eq(memcmp(bytes, expected, size), 0);
    free(bytes);
    gan_st_file *f = NULL;
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_OK);
    ck_assert_uint_eq(gan_st_count(f), 0);
    ck_assert_uint_eq(gan_st_metadata_count(f), 0);
    gan_st_close(f);
}
END_TEST

START_TEST(test_expect_messages)
{
    float v[2] = { 1, 2 };
    uint64_t shape[1] = { 2 };
    unsigned char *bytes;
    size_t size;
    bytes = build("{\"critic.fc0.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                  8, &size);
    memcpy(bytes + size - 8, v, 8);
    gan_st_file *f = NULL;
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_OK);
    const struct gan_st_tensor *t = (const void *)1;
    uint64_t want[2] = { 512, 2 };
    ck_assert_int_eq(gan_st_expect(f, "critic.fc0.weight", GAN_ST_F16, 2, want, &t, err,
                                   sizeof err), GAN_ERR_FORMAT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(err, LABEL ": tensor \"critic.fc0.weight\" is F32 [2], expected F16 [512, 2]");
    ck_assert_int_eq(gan_st_expect(f, "critic.fc1.weight", GAN_ST_F32, 1, shape, &t, err,
                                   sizeof err), GAN_ERR_NOT_FOUND);
    ck_assert_str_eq(err, LABEL ": no tensor \"critic.fc1.weight\" (the file holds 1 tensors)");
    ck_assert_int_eq(gan_st_expect(f, "critic.fc0.weight", GAN_ST_F32, 1, shape, &t, err,
                                   sizeof err), GAN_OK);
    ck_assert_int_eq(memcmp(t->data, v, 8), 0);
    gan_st_close(f);
    free(bytes);
}
END_TEST

/* ----------------------------------------------------------------- the reference file */

/* tests/data/reference.safetensors was written once by Python's safetensors package
 * (0.8.0, `python3 tests/data/make_reference_safetensors.py tests/data/reference.safetensors`);
 * this test needs no Python. Its values are computed again here, independently. */
struct ref_tensor {
    const char *name;
    enum gan_st_dtype dtype;
    int ndim;
    uint64_t shape[4];
    unsigned char bytes[64];
    size_t nbytes;
};

static void le(unsigned char *out, uint64_t v, size_t size)
{
    for (size_t b = 0; b < size; b++)
        out[b] = (unsigned char)(v >> (8 * b));
}

static size_t ref_tensors(struct ref_tensor *r)
{
    size_t n = 0;
    memset(r, 0, 17 * sizeof *r);
#define REF(nm, dt, nd, ...) (r[n].name = (nm), r[n].dtype = (dt), r[n].ndim = (nd), \
                              memcpy(r[n].shape, (uint64_t[4]){ __VA_ARGS__ }, sizeof r[n].shape))
    REF("gen.w", GAN_ST_F32, 2, 2, 3);
    for (int i = 0; i < 6; i++) {
        float v = 0.25f * (float)i - 1.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        le(r[n].bytes + 4 * i, u, 4);
    }
    r[n++].nbytes = 24;
    REF("Zeta", GAN_ST_F32, 1, 2);
    {
        float v[2] = { -0.5f, (float)1e-30 };
        uint32_t u[2];
        memcpy(u, v, 8);
        le(r[n].bytes, u[0], 4);
        le(r[n].bytes + 4, u[1], 4);
    }
    r[n++].nbytes = 8;
    REF("gen.b", GAN_ST_F64, 1, 3);
    for (int i = 0; i < 3; i++) {
        double v = 1.5 * i + 1e-10;
        uint64_t u;
        memcpy(&u, &v, 8);
        le(r[n].bytes + 8 * i, u, 8);
    }
    r[n++].nbytes = 24;
    REF("scale", GAN_ST_F64, 0, 0);
    {
        double v = 65536.0;
        uint64_t u;
        memcpy(&u, &v, 8);
        le(r[n].bytes, u, 8);
    }
    r[n++].nbytes = 8;
    REF("opt.m", GAN_ST_F16, 4, 1, 2, 2, 1);
    for (int i = 0; i < 4; i++)
        le(r[n].bytes + 2 * i, 0x3c00u + (unsigned)i, 2);
    r[n++].nbytes = 8;
    REF("opt.v", GAN_ST_BF16, 2, 2, 2);
    for (int i = 0; i < 4; i++)
        le(r[n].bytes + 2 * i, 0x3f80u + 3u * (unsigned)i, 2);
    r[n++].nbytes = 8;
    REF("rng.key", GAN_ST_U64, 1, 2);
    for (int i = 0; i < 2; i++)
        le(r[n].bytes + 8 * i, 0xfedcba9876543210ULL + (uint64_t)i, 8);
    r[n++].nbytes = 16;
    REF("step", GAN_ST_I64, 0, 0);
    le(r[n].bytes, (uint64_t)(int64_t)-42, 8);
    r[n++].nbytes = 8;
    REF("idx", GAN_ST_I32, 1, 4);
    for (int i = 0; i < 4; i++)
        le(r[n].bytes + 4 * i, (uint32_t)(int32_t)(i - 2), 4);
    r[n++].nbytes = 16;
    REF("bits", GAN_ST_U32, 1, 3);
    for (int i = 0; i < 3; i++)
        le(r[n].bytes + 4 * i, 0x9e3779b9u * (uint32_t)(i + 1), 4);
    r[n++].nbytes = 12;
    REF("mask", GAN_ST_U8, 1, 5);
    for (int i = 0; i < 5; i++)
        r[n].bytes[i] = (unsigned char)(i * 51);
    r[n++].nbytes = 5;
    REF("empty", GAN_ST_F32, 2, 0, 4);
    r[n++].nbytes = 0;
    REF("flags", GAN_ST_BOOL, 1, 2);
    r[n].bytes[0] = 1;
    r[n++].nbytes = 2;
    REF("small", GAN_ST_I8, 1, 3);
    r[n].bytes[0] = 0xff;
    r[n].bytes[2] = 1;
    r[n++].nbytes = 3;
    REF("half", GAN_ST_I16, 1, 2);
    le(r[n].bytes, (uint16_t)(int16_t)-300, 2);
    le(r[n].bytes + 2, 300, 2);
    r[n++].nbytes = 4;
    REF("uhalf", GAN_ST_U16, 1, 2);
    le(r[n].bytes, 1, 2);
    le(r[n].bytes + 2, 65535, 2);
    r[n++].nbytes = 4;
    REF("weird \"name\"\n\xc3\x9f/\x01", GAN_ST_F32, 1, 1);
    le(r[n].bytes, 0x40400000u, 4); /* 3.0f */
    r[n++].nbytes = 4;
#undef REF
    return n;
}

static const char *ref_config = "lr=0.0001\nbeta1=0.5\t\"q\"\x01/\xc3\xa9";

START_TEST(test_reference_read)
{
    struct ref_tensor r[17];
    size_t n = ref_tensors(r);
    gan_st_file *f = NULL;
    const char *path = GAN_TEST_DATA_DIR "/reference.safetensors";
    ck_assert_msg(gan_st_open(path, &f, err, sizeof err) == GAN_OK, "%s", err);
    ck_assert_uint_eq(gan_st_count(f), n);
    for (size_t i = 0; i < n; i++) {
        const struct gan_st_tensor *t = gan_st_find(f, r[i].name);
        ck_assert_msg(t != NULL, "tensor %s missing", r[i].name);
        ck_assert_int_eq(t->dtype, r[i].dtype);
        ck_assert_int_eq(t->ndim, r[i].ndim);
        for (int d = 0; d < t->ndim; d++)
            ck_assert_uint_eq(t->shape[d], r[i].shape[d]);
        ck_assert_uint_eq(t->nbytes, r[i].nbytes);
        ck_assert_msg(memcmp(t->data, r[i].bytes, r[i].nbytes) == 0, "data of %s", r[i].name);
    }
    /* File order is the reference's: U64, I64, F64, F32, U32, I32, BF16, F16, U16, I16,
     * I8, U8, BOOL, names ascending within a dtype. */
    const char *order[] = { "rng.key", "step", "gen.b", "scale", "Zeta", "empty", "gen.w",
                            "weird \"name\"\n\xc3\x9f/\x01", "bits", "idx", "opt.v", "opt.m",
                            "uhalf", "half", "small", "mask", "flags" };
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(gan_st_tensor_at(f, i)->name, order[i]);
    ck_assert_uint_eq(gan_st_metadata_count(f), 2);
    ck_assert_str_eq(gan_st_metadata_get(f, "config"), ref_config);
    ck_assert_str_eq(gan_st_metadata_get(f, "format"), "ganctl 0.1");
    gan_st_close(f);
}
END_TEST

START_TEST(test_reference_bytes)
{
    struct ref_tensor r[17];
    size_t n = ref_tensors(r);
    gan_st_writer *w = gan_st_writer_new();
    /* Added in an order unlike the file's, so the writer's sort is what is tested. */
    for (size_t k = 0; k < n; k++) {
        size_t i = (k * 5 + 3) % n;
        ck_assert_msg(gan_st_writer_add(w, r[i].name, r[i].dtype, r[i].ndim, r[i].shape,
                                        r[i].bytes, r[i].nbytes, err, sizeof err) == GAN_OK,
                      "%s", err);
    }
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "format", "ganctl 0.1", err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "config", ref_config, err, sizeof err), GAN_OK);
    const char *path = in_tmp("mine.safetensors");
    ck_assert_msg(gan_st_writer_write(w, path, err, sizeof err) == GAN_OK, "%s", err);
    gan_st_writer_free(w);

    size_t ref_size, mine_size;
    unsigned char *ref = slurp(GAN_TEST_DATA_DIR "/reference.safetensors", &ref_size);
    unsigned char *mine = slurp(path, &mine_size);
    /* The reference pads its header with spaces too: 1132 bytes of JSON, 4 spaces. */
    ck_assert_uint_eq(read_le64(ref), 1136);
    ck_assert_int_eq(memcmp(ref + 8 + 1132, "    ", 4), 0);
    ck_assert_uint_eq(mine_size, ref_size);
    for (size_t i = 0; i < ref_size; i++)
        ck_assert_msg(mine[i] == ref[i], "byte %zu differs: 0x%02x, reference 0x%02x", i,
                      mine[i], ref[i]);
    free(ref);
    free(mine);
}
END_TEST

/* ----------------------------------------------------------------- writer errors */

START_TEST(test_writer_rejects)
{
    float v[4] = { 0 };
    uint64_t s1[1] = { 4 }, s9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 4 };
    uint64_t huge[2] = { UINT64_MAX / 2, 3 };
    gan_st_writer *w = gan_st_writer_new();

    ck_assert_int_eq(gan_st_writer_add(w, "", GAN_ST_F32, 1, s1, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "must not be empty"));
    ck_assert_int_eq(gan_st_writer_add(w, NULL, GAN_ST_F32, 1, s1, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_add(w, "__metadata__", GAN_ST_F32, 1, s1, v, 16, err,
                                       sizeof err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "\"__metadata__\" is reserved"));
    ck_assert_int_eq(gan_st_writer_add(w, "x", GAN_ST_F32, 1, s1, v, 16, err, sizeof err), GAN_OK);
    ck_assert_int_eq(gan_st_writer_add(w, "x", GAN_ST_F16, 1, s1, v, 8, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_str_eq(err, "safetensors: tensor \"x\" was already added; names must be unique");
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_F32, 1, s1, v, 12, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_str_eq(err, "safetensors: tensor \"y\": 12 bytes of data given, but shape [4] of "
                          "F32 needs 16");
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_F32, 9, s9, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "9 dimensions"));
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_F32, -1, s1, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_DTYPE_COUNT, 1, s1, v, 16, err,
                                       sizeof err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "not a safetensors dtype"));
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_F32, 2, huge, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "too large"));
    ck_assert_int_eq(gan_st_writer_add(w, "y", GAN_ST_F32, 1, s1, NULL, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_add(w, "bad\xff", GAN_ST_F32, 1, s1, v, 16, err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "not valid UTF-8"));
    ck_assert_int_eq(gan_st_writer_add(w, "surrogate\xed\xa0\x80", GAN_ST_F32, 1, s1, v, 16,
                                       err, sizeof err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_add(w, "overlong\xc0\xaf", GAN_ST_F32, 1, s1, v, 16,
                                       err, sizeof err), GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, "k", "v\xfe", err, sizeof err),
                     GAN_ERR_INVALID);
    ck_assert_int_eq(gan_st_writer_set_metadata(w, NULL, "v", err, sizeof err), GAN_ERR_INVALID);
    /* A NULL error buffer is allowed. */
    ck_assert_int_eq(gan_st_writer_add(w, "", GAN_ST_F32, 1, s1, v, 16, NULL, 0), GAN_ERR_INVALID);
    /* None of the rejected calls left anything behind: only "x" is written. */
    const char *path = in_tmp("x.safetensors");
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);
    gan_st_file *f = NULL;
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_OK);
    ck_assert_uint_eq(gan_st_count(f), 1);
    ck_assert_uint_eq(gan_st_metadata_count(f), 0);
    ck_assert_str_eq(gan_st_tensor_at(f, 0)->name, "x");
    gan_st_close(f);
}
END_TEST

/* Names that need escaping and a name as long as a real one can be. */
START_TEST(test_writer_escapes)
{
    char name[300];
    uint8_t v = 7;
    uint64_t one[1] = { 1 };
    static const char *names[] = { "quote\"backslash\\", "tab\tnl\nbs\bff\fcr\r",
                                   "ctl\x01\x1f\x7f", "slash/\xe2\x82\xac", NULL };
    gan_st_writer *w = gan_st_writer_new();
    for (int i = 0; names[i]; i++)
        ck_assert_int_eq(gan_st_writer_add(w, names[i], GAN_ST_U8, 1, one, &v, 1, err,
                                           sizeof err), GAN_OK);
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    ck_assert_int_eq(gan_st_writer_add(w, name, GAN_ST_U8, 1, one, &v, 1, err, sizeof err), GAN_OK);
    const char *path = in_tmp("esc.safetensors");
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);

    size_t size;
    unsigned char *bytes = slurp(path, &size);
    uint64_t n = read_le64(bytes);
    char *header = calloc(1, n + 1);
    memcpy(header, bytes + 8, n);
    /* serde_json's escapes: short forms, \u00xx lower-case, DEL and '/' verbatim. */
    ck_assert_ptr_nonnull(strstr(header, "\"quote\\\"backslash\\\\\""));
    ck_assert_ptr_nonnull(strstr(header, "\"tab\\tnl\\nbs\\bff\\fcr\\r\""));
    ck_assert_ptr_nonnull(strstr(header, "\"ctl\\u0001\\u001f\x7f\""));
    ck_assert_ptr_nonnull(strstr(header, "\"slash/\xe2\x82\xac\""));
    free(header);
    free(bytes);

    gan_st_file *f = NULL;
    ck_assert_msg(gan_st_open(path, &f, err, sizeof err) == GAN_OK, "%s", err);
    for (int i = 0; names[i]; i++)
        ck_assert_ptr_nonnull(gan_st_find(f, names[i]));
    ck_assert_ptr_nonnull(gan_st_find(f, name));
    gan_st_close(f);
}
END_TEST

/* ----------------------------------------------------------------- malformed files */

struct bad_header {
    const char *what;
    const char *header;
    size_t data_len;
    gan_status status;
    const char *expect; /* the whole message, or a part of it when `partial` */
    int partial;
};

#define T1(dtype, shape, b, e) "{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"

static const struct bad_header bad_headers[] = {
    { "offsets do not match the shape",
      "{\"critic.fc0.weight\":" T1("F32", "[512,2]", "0", "100") "}", 100, GAN_ERR_FORMAT,
      LABEL ": tensor \"critic.fc0.weight\": data_offsets [0, 100] do not match shape [512, 2] "
      "of F32 (4096 bytes)", 0 },
    { "bad JSON", "{\"a\":" T1("F32", "[1]", "0", "4"), 4, GAN_ERR_FORMAT,
      LABEL ": the header is not valid JSON: ", 1 },
    { "JSON garbage", "not json at all", 0, GAN_ERR_FORMAT,
      LABEL ": the header is not valid JSON: ", 1 },
    { "header is an array", "[1,2]", 0, GAN_ERR_FORMAT,
      LABEL ": the header is an array, not a JSON object", 0 },
    { "unknown dtype", "{\"w\":" T1("F8_E8M0", "[4]", "0", "4") "}", 4, GAN_ERR_UNSUPPORTED,
      LABEL ": tensor \"w\": unknown dtype \"F8_E8M0\" (this reader knows", 1 },
    { "lower-case dtype", "{\"w\":" T1("f32", "[1]", "0", "4") "}", 4, GAN_ERR_UNSUPPORTED,
      "unknown dtype \"f32\"", 1 },
    { "dtype not a string", "{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
      GAN_ERR_FORMAT, LABEL ": tensor \"w\": dtype is an integer, not a string", 0 },
    { "overlapping offsets",
      "{\"a\":" T1("F32", "[2]", "0", "8") ",\"b\":" T1("F32", "[2]", "4", "12") "}", 12,
      GAN_ERR_FORMAT,
      LABEL ": tensor \"b\": data_offsets [4, 12] overlap tensor \"a\" [0, 8]", 0 },
    { "same offsets twice",
      "{\"a\":" T1("F32", "[2]", "0", "8") ",\"b\":" T1("F32", "[2]", "0", "8") "}", 8,
      GAN_ERR_FORMAT, "overlap tensor \"a\" [0, 8]", 1 },
    { "empty tensor inside another",
      "{\"a\":" T1("F32", "[2]", "0", "8") ",\"z\":" T1("F32", "[0]", "4", "4") "}", 8,
      GAN_ERR_FORMAT, LABEL ": tensor \"z\": data_offsets [4, 4] overlap tensor \"a\" [0, 8]", 0 },
    { "gap between tensors",
      "{\"a\":" T1("F32", "[2]", "0", "8") ",\"b\":" T1("F32", "[2]", "16", "24") "}", 24,
      GAN_ERR_FORMAT,
      LABEL ": bytes [8, 16) of the data section belong to no tensor (between tensor \"a\" "
      "and tensor \"b\")", 0 },
    { "gap at the start", "{\"b\":" T1("U8", "[4]", "4", "8") "}", 8, GAN_ERR_FORMAT,
      LABEL ": bytes [0, 4) of the data section belong to no tensor (before tensor \"b\")", 0 },
    { "trailing bytes", "{\"a\":" T1("F32", "[2]", "0", "8") "}", 12, GAN_ERR_FORMAT,
      LABEL ": the data section is 12 bytes but the tensors end at byte 8; the 4 bytes after "
      "it belong to no tensor", 0 },
    { "data but no tensors", "{}", 3, GAN_ERR_FORMAT,
      "the data section is 3 bytes but the tensors end at byte 0", 1 },
    { "offsets past the end", "{\"a\":" T1("F32", "[4]", "0", "16") "}", 8, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": data_offsets [0, 16] run past the end of the data section "
      "(8 bytes)", 1 },
    { "end before begin", "{\"a\":" T1("F32", "[1]", "8", "4") "}", 8, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": data_offsets [8, 4] end before they begin", 0 },
    { "three offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4,
      GAN_ERR_FORMAT, "data_offsets must be an array [begin, end]", 1 },
    { "negative offset", "{\"a\":" T1("F32", "[1]", "-4", "0") "}", 4, GAN_ERR_FORMAT,
      "data_offsets begin is negative, not a non-negative integer", 1 },
    { "string offset", "{\"a\":" T1("F32", "[1]", "0", "\"4\"") "}", 4, GAN_ERR_FORMAT,
      "data_offsets end is a string, not a non-negative integer", 1 },
    { "negative dimension", "{\"a\":" T1("F32", "[-1]", "0", "4") "}", 4, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": shape entry 0 is negative, not a non-negative integer", 0 },
    { "fractional dimension", "{\"a\":" T1("F32", "[2,1.5]", "0", "12") "}", 12, GAN_ERR_FORMAT,
      "shape entry 1 is a non-integer number", 1 },
    { "shape not an array", "{\"a\":" T1("F32", "4", "0", "16") "}", 16, GAN_ERR_FORMAT,
      "shape is an integer, not an array", 1 },
    { "nine dimensions", "{\"a\":" T1("F32", "[1,1,1,1,1,1,1,1,1]", "0", "4") "}", 4,
      GAN_ERR_UNSUPPORTED, "shape has 9 dimensions; at most 8 are supported", 1 },
    { "shape overflows", "{\"a\":" T1("F32", "[4294967296,4294967296]", "0", "0") "}", 0,
      GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": shape [4294967296, 4294967296] of F32 holds more bytes than fit "
      "in 64 bits", 0 },
    { "bytes overflow", "{\"a\":" T1("F64", "[2305843009213693952]", "0", "0") "}", 0,
      GAN_ERR_FORMAT, "holds more bytes than fit in 64 bits", 1 },
    { "size wraps to a small number",
      "{\"a\":" T1("F32", "[4611686018427387905]", "0", "4") "}", 4, GAN_ERR_FORMAT,
      "holds more bytes than fit in 64 bits", 1 },
    { "missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": no dtype", 0 },
    { "missing shape", "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,4]}}", 4, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": no shape", 0 },
    { "missing offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}", 4, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": no data_offsets", 0 },
    { "unknown field",
      "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"offset\":0}}", 4,
      GAN_ERR_FORMAT, LABEL ": tensor \"a\": unknown field \"offset\"", 1 },
    { "entry not an object", "{\"a\":[1,2]}", 0, GAN_ERR_FORMAT,
      LABEL ": tensor \"a\": entry is an array, not an object", 1 },
    { "non-string metadata",
      "{\"__metadata__\":{\"epoch\":3},\"a\":" T1("U8", "[1]", "0", "1") "}", 1, GAN_ERR_FORMAT,
      LABEL ": metadata \"epoch\" is an integer, not a string", 0 },
    { "metadata not an object", "{\"__metadata__\":[\"x\"]}", 0, GAN_ERR_FORMAT,
      LABEL ": __metadata__ is an array, not an object of strings", 0 },
    { "duplicate names",
      "{\"a\":" T1("U8", "[1]", "0", "1") ",\"a\":" T1("U8", "[1]", "1", "2") "}", 2,
      GAN_ERR_FORMAT, "duplicate", 1 },
    { "duplicate metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, GAN_ERR_FORMAT,
      "duplicate", 1 },
    { "invalid UTF-8 in a name", "{\"a\xff\":" T1("U8", "[1]", "0", "1") "}", 1, GAN_ERR_FORMAT,
      LABEL ": the header is not valid JSON: ", 1 },
    { "escaped NUL in a name", "{\"a\\u0000b\":" T1("U8", "[1]", "0", "1") "}", 1,
      GAN_ERR_FORMAT, LABEL ": the header is not valid JSON: ", 1 },
    { "a control byte in a name is shown as ?", "{\"a\\nb\":" T1("U8", "[2]", "0", "1") "}", 1,
      GAN_ERR_FORMAT, LABEL ": tensor \"a?b\": data_offsets [0, 1] do not match", 1 },
    { "empty header", "", 0, GAN_ERR_FORMAT, LABEL ": the header is not valid JSON: ", 1 },
};
#define N_BAD ((int)(sizeof bad_headers / sizeof bad_headers[0]))

START_TEST(test_bad_header)
{
    const struct bad_header *c = &bad_headers[_i];
    size_t size;
    unsigned char *bytes = build(c->header, c->data_len, &size);
    gan_st_file *f = (gan_st_file *)1;
    gan_status status = gan_st_parse(bytes, size, LABEL, &f, err, sizeof err);
    ck_assert_msg(status == c->status, "%s: status %d (%s), expected %d", c->what, status, err,
                  c->status);
    ck_assert_ptr_null(f);
    if (c->partial)
        ck_assert_msg(strstr(err, c->expect) != NULL, "%s: message \"%s\" lacks \"%s\"", c->what,
                      err, c->expect);
    else
        ck_assert_msg(strcmp(err, c->expect) == 0, "%s: message \"%s\", expected \"%s\"", c->what,
                      err, c->expect);
    ck_assert_ptr_null(strchr(err, '\n'));
    free(bytes);
}
END_TEST

/* What the reference reader accepts, this one accepts too. */
static const struct {
    const char *what;
    const char *header;
    size_t data_len;
    size_t tensors;
} good_headers[] = {
    { "leading whitespace", " \t{\"a\":" T1("U8", "[1]", "0", "1") "}", 1, 1 },
    { "header length not a multiple of 8", "{\"a\":" T1("U8", "[3]", "0", "3") "}", 3, 1 },
    { "null metadata", "{\"__metadata__\":null,\"a\":" T1("U8", "[1]", "0", "1") "}", 1, 1 },
    { "empty metadata", "{\"__metadata__\":{}}", 0, 0 },
    { "tensors listed out of order",
      "{\"b\":" T1("U8", "[1]", "1", "2") ",\"a\":" T1("U8", "[1]", "0", "1") "}", 2, 2 },
    { "empty tensors at one offset",
      "{\"x\":" T1("F32", "[0]", "0", "0") ",\"y\":" T1("F64", "[2,0]", "0", "0") ",\"z\":"
      T1("U8", "[2]", "0", "2") "}", 2, 3 },
    { "a dimension of 0 beside a huge one",
      "{\"a\":" T1("F32", "[0,9223372036854775807]", "0", "0") "}", 0, 1 },
    { "an empty tensor at the end",
      "{\"a\":" T1("U8", "[2]", "0", "2") ",\"b\":" T1("U8", "[0]", "2", "2") "}", 2, 2 },
    { "an empty name", "{\"\":" T1("U8", "[1]", "0", "1") "}", 1, 1 },
};
#define N_GOOD ((int)(sizeof good_headers / sizeof good_headers[0]))

START_TEST(test_good_header)
{
    size_t size;
    unsigned char *bytes = build(good_headers[_i].header, good_headers[_i].data_len, &size);
    gan_st_file *f = NULL;
    ck_assert_msg(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err) == GAN_OK, "%s: %s",
                  good_headers[_i].what, err);
    ck_assert_uint_eq(gan_st_count(f), good_headers[_i].tensors);
    size_t covered = 0;
    for (size_t i = 0; i < gan_st_count(f); i++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, i);
        ck_assert_ptr_eq(gan_st_find(f, t->name), t);
        ck_assert_ptr_eq(t->data, bytes + size - good_headers[_i].data_len + t->begin);
        covered += t->nbytes;
    }
    ck_assert_uint_eq(covered, good_headers[_i].data_len);
    gan_st_close(f);
    free(bytes);
}
END_TEST

START_TEST(test_bad_length_field)
{
    size_t size;
    gan_st_file *f = NULL;
    unsigned char *bytes = build("{\"a\":" T1("U8", "[4]", "0", "4") "}", 4, &size);
    uint64_t n = read_le64(bytes);

    ck_assert_int_eq(gan_st_parse(bytes, 5, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_str_eq(err, LABEL ": 5 bytes is too short for a safetensors file, which starts "
                          "with an 8-byte header length");
    ck_assert_int_eq(gan_st_parse(bytes, 0, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "0 bytes is too short"));

    put_le64(bytes, size - 8 + 1);
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    char expected[256];
    snprintf(expected, sizeof expected, LABEL ": header length %zu runs past the end of the "
             "file (%zu bytes follow the length field); the file is truncated", size - 7,
             size - 8);
    ck_assert_str_eq(err, expected);

    put_le64(bytes, GAN_ST_MAX_HEADER + 1);
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_str_eq(err, LABEL ": header length 100000001 is over the 100000000-byte limit; "
                          "not a safetensors file, or a corrupt one");
    put_le64(bytes, UINT64_MAX);
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "is over the 100000000-byte limit"));

    /* One byte short: the last tensor's data is cut. */
    put_le64(bytes, n - 1);
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    put_le64(bytes, n);
    ck_assert_int_eq(gan_st_parse(bytes, size - 1, LABEL, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_str_eq(err, LABEL ": tensor \"a\": data_offsets [0, 4] run past the end of the "
                          "data section (3 bytes); the file is truncated?");
    ck_assert_ptr_null(f);
    ck_assert_int_eq(gan_st_parse(bytes, size, LABEL, &f, err, sizeof err), GAN_OK);
    gan_st_close(f);
    free(bytes);
}
END_TEST

/* ----------------------------------------------------------------- files */

START_TEST(test_open_errors)
{
    gan_st_file *f = (gan_st_file *)1;
    const char *missing = in_tmp("no-such.safetensors");
    char expected[4200];
    ck_assert_int_eq(gan_st_open(missing, &f, err, sizeof err), GAN_ERR_NOT_FOUND);
    ck_assert_ptr_null(f);
    snprintf(expected, sizeof expected, "%s: cannot open: %s", missing, strerror(ENOENT));
    ck_assert_str_eq(err, expected);

    ck_assert_int_eq(gan_st_open(tmpdir, &f, err, sizeof err), GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));

    /* A truncated checkpoint on disk: the message names the file. */
    size_t size;
    unsigned char *bytes = build("{\"critic.fc0.weight\":" T1("F32", "[2]", "0", "8") "}", 8,
                                 &size);
    const char *path = in_tmp("cut.safetensors");
    spit(path, bytes, size - 3);
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_ERR_FORMAT);
    snprintf(expected, sizeof expected, "%s: tensor \"critic.fc0.weight\": data_offsets [0, 8] "
             "run past the end of the data section (5 bytes); the file is truncated?", path);
    ck_assert_str_eq(err, expected);
    spit(path, bytes, 6);
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "6 bytes is too short"));
    spit(path, bytes, 0);
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(err, "0 bytes is too short"));

    /* Intact, with an unaligned header: loads, and the data is aligned in memory anyway. */
    spit(path, bytes, size);
    ck_assert_uint_ne(read_le64(bytes) % 8, 0);
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_OK);
    ck_assert_uint_eq((uintptr_t)gan_st_find(f, "critic.fc0.weight")->data % 8, 0);
    ck_assert_int_eq(memcmp(gan_st_find(f, "critic.fc0.weight")->data, bytes + size - 8, 8), 0);
    gan_st_close(f);
    free(bytes);
}
END_TEST

/* ----------------------------------------------------------------- atomic writes */

static gan_st_writer *small_writer(const float *v, size_t n)
{
    uint64_t shape[1] = { n };
    gan_st_writer *w = gan_st_writer_new();
    ck_assert_int_eq(gan_st_writer_add(w, "v", GAN_ST_F32, 1, shape, v, n * 4, err, sizeof err),
                     GAN_OK);
    return w;
}

START_TEST(test_write_missing_folder)
{
    float v[2] = { 1, 2 };
    gan_st_writer *w = small_writer(v, 2);
    const char *path = in_tmp("absent/ckpt.safetensors");
    char expected[4200];
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_ERR_NOT_FOUND);
    snprintf(expected, sizeof expected, "%s: cannot create a temporary file in %s/absent: %s",
             path, tmpdir, strerror(ENOENT));
    ck_assert_str_eq(err, expected);
    ck_assert_int_eq(count_entries(tmpdir, NULL, 0), 0);
    ck_assert_int_eq(gan_st_writer_write(w, in_tmp("dir/"), err, sizeof err), GAN_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "names a folder"));
    ck_assert_int_eq(gan_st_writer_write(w, "", err, sizeof err), GAN_ERR_INVALID);
    gan_st_writer_free(w);
}
END_TEST

/* A write that fails half way (the file size limit stops it) leaves the old checkpoint
 * as it was and no temporary file. */
START_TEST(test_write_failure_keeps_target)
{
    float old[2] = { 1, 2 };
    enum { N = 16384 };
    float *big = calloc(N, sizeof *big);
    char names[512];
    const char *path = in_tmp("ckpt.safetensors");
    gan_st_writer *w = small_writer(old, 2);
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);
    size_t before_size;
    unsigned char *before = slurp(path, &before_size);

    w = small_writer(big, N);
    struct rlimit saved, small;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    small = saved;
    small.rlim_cur = 4096;
    void (*saved_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    gan_status status = gan_st_writer_write(w, path, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, saved_handler);
    ck_assert_int_eq(status, GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_ptr_nonnull(strstr(err, ": writing "));
    ck_assert_ptr_nonnull(strstr(err, strerror(EFBIG)));
    gan_st_writer_free(w);

    ck_assert_msg(count_entries(tmpdir, names, sizeof names) == 1, "left behind: %s", names);
    size_t after_size;
    unsigned char *after = slurp(path, &after_size);
    ck_assert_uint_eq(after_size, before_size);
    ck_assert_int_eq(memcmp(before, after, before_size), 0);
    free(before);
    free(after);
    free(big);
}
END_TEST

/* rename fails (the target is a folder): the folder stays, the temporary file goes. */
START_TEST(test_write_rename_failure)
{
    float v[2] = { 1, 2 };
    char names[512];
    const char *path = in_tmp("taken");
    ck_assert_int_eq(mkdir(path, 0755), 0);
    gan_st_writer *w = small_writer(v, 2);
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "cannot rename"));
    ck_assert_ptr_nonnull(strstr(err, strerror(EISDIR)));
    gan_st_writer_free(w);
    ck_assert_msg(count_entries(tmpdir, names, sizeof names) == 1, "left behind: %s", names);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
}
END_TEST

/* A successful write replaces the old file whole, leaves nothing else, honours the umask. */
START_TEST(test_write_replaces)
{
    float a[2] = { 1, 2 }, b[3] = { 3, 4, 5 };
    char names[512];
    const char *path = in_tmp("ckpt.safetensors");
    mode_t saved = umask(027);
    gan_st_writer *w = small_writer(a, 2);
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);
    w = small_writer(b, 3);
    ck_assert_int_eq(gan_st_writer_write(w, path, err, sizeof err), GAN_OK);
    gan_st_writer_free(w);
    umask(saved);
    ck_assert_msg(count_entries(tmpdir, names, sizeof names) == 1, "left behind: %s", names);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    gan_st_file *f = NULL;
    ck_assert_int_eq(gan_st_open(path, &f, err, sizeof err), GAN_OK);
    ck_assert_uint_eq(gan_st_find(f, "v")->count, 3);
    ck_assert_int_eq(memcmp(gan_st_find(f, "v")->data, b, sizeof b), 0);
    gan_st_close(f);

    /* A relative path (no folder part) works as well. */
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(tmpdir), 0);
    w = small_writer(a, 2);
    gan_status status = gan_st_writer_write(w, "plain.safetensors", err, sizeof err);
    gan_st_writer_free(w);
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_msg(status == GAN_OK, "%s", err);
    ck_assert_int_eq(count_entries(tmpdir, NULL, 0), 2);
}
END_TEST

/* ----------------------------------------------------------------- suite */

static Suite *safetensors_suite(void)
{
    Suite *s = suite_create("safetensors");

    TCase *tc = tcase_create("dtypes");
    tcase_add_loop_test(tc, test_dtype_names, 0, N_DTYPES);
    tcase_add_test(tc, test_dtype_unknown);
    suite_add_tcase(s, tc);

    tc = tcase_create("roundtrip");
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_loop_test(tc, test_roundtrip_dtype_shape, 0, N_DTYPES * N_SHAPES);
    tcase_add_test(tc, test_roundtrip_many);
    tcase_add_test(tc, test_roundtrip_fp8);
    tcase_add_test(tc, test_roundtrip_empty);
    tcase_add_test(tc, test_expect_messages);
    suite_add_tcase(s, tc);

    tc = tcase_create("reference");
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_reference_read);
    tcase_add_test(tc, test_reference_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("writer_errors");
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_writer_rejects);
    tcase_add_test(tc, test_writer_escapes);
    suite_add_tcase(s, tc);

    tc = tcase_create("malformed");
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_loop_test(tc, test_bad_header, 0, N_BAD);
    tcase_add_loop_test(tc, test_good_header, 0, N_GOOD);
    tcase_add_test(tc, test_bad_length_field);
    tcase_add_test(tc, test_open_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("atomic");
    tcase_add_checked_fixture(tc, setup_tmp, teardown_tmp);
    tcase_add_test(tc, test_write_missing_folder);
    tcase_add_test(tc, test_write_failure_keeps_target);
    tcase_add_test(tc, test_write_rename_failure);
    tcase_add_test(tc, test_write_replaces);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(safetensors_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
