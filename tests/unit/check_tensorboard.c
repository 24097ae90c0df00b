/* SPDX-License-Identifier: MIT */
/* check_tensorboard.c — tests of the TensorBoard event files: CRC-32C against published
 * vectors, the masked CRC, each Event encoding and a framed record against the bytes
 * TensorBoard's own protobuf classes and record writer produce, the writer's file
 * names and first record, and the PNG size reader. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "io/tensorboard.h"

/* ------------------------------------------------------------------ helpers */

/* The bytes of a hex string; returns their count. */
static size_t from_hex(const char *hex, unsigned char *out, size_t size)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < size; hex += 2) {
        unsigned v;
        ck_assert_int_eq(sscanf(hex, "%2x", &v), 1);
        out[n++] = (unsigned char)v;
    }
    return n;
}

static void assert_bytes(const struct gan_tb_bytes *b, const char *hex)
{
    unsigned char want[512];
    size_t n = from_hex(hex, want, sizeof want);
    ck_assert(!b->failed);
    ck_assert_uint_eq(b->len, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(b->data[i] == want[i], "byte %zu: 0x%02x, expected 0x%02x", i, b->data[i],
                      want[i]);
}

/* ------------------------------------------------------------------ CRC-32C */

/* RFC 3720, appendix B.4, and the check value of the CRC catalogue. */
START_TEST(crc32c_vectors)
{
    unsigned char buf[32];
    ck_assert_uint_eq(gan_crc32c(0, "123456789", 9), 0xE3069283u);
    memset(buf, 0, sizeof buf);
    ck_assert_uint_eq(gan_crc32c(0, buf, sizeof buf), 0x8A9136AAu);
    memset(buf, 0xff, sizeof buf);
    ck_assert_uint_eq(gan_crc32c(0, buf, sizeof buf), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)i;
    ck_assert_uint_eq(gan_crc32c(0, buf, sizeof buf), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (unsigned char)(31 - i);
    ck_assert_uint_eq(gan_crc32c(0, buf, sizeof buf), 0x113FDB5Cu);
    ck_assert_uint_eq(gan_crc32c(0, "", 0), 0u);
}
END_TEST

/* A CRC continued over a second part equals the CRC of the whole. */
START_TEST(crc32c_continues)
{
    uint32_t first = gan_crc32c(0, "1234", 4);
    ck_assert_uint_eq(gan_crc32c(first, "56789", 5), 0xE3069283u);
}
END_TEST

/* TensorBoard's masked_crc32c(b"123456789"). */
START_TEST(crc32c_mask)
{
    ck_assert_uint_eq(gan_crc32c_mask(0xE3069283u), 0xC78AB0E5u);
    ck_assert_uint_eq(gan_crc32c_mask(0), 0xA282EAD8u);
}
END_TEST

/* ------------------------------------------------------------------ encodings */

/* Each expected string is Event(...).SerializeToString() of tensorboard.compat.proto. */
START_TEST(encode_file_version)
{
    struct gan_tb_bytes b = { 0 };
    gan_tb_encode_file_version(&b, 1.5);
    assert_bytes(&b, "09000000000000f83f1a0d627261696e2e4576656e743a32");
    gan_tb_bytes_free(&b);
}
END_TEST

START_TEST(encode_scalar)
{
    struct gan_tb_bytes b = { 0 };
    struct gan_tb_scalar v = { "a", 0.5f };
    gan_tb_encode_scalars(&b, 1.5, 3, &v, 1);
    assert_bytes(&b, "09000000000000f83f10032a0a0a080a0161150000003f");
    gan_tb_bytes_free(&b);
}
END_TEST

/* Two values in one summary, a step of two varint bytes (300) and a negative value. */
START_TEST(encode_two_scalars)
{
    struct gan_tb_bytes b = { 0 };
    struct gan_tb_scalar v[2] = { { "a", 0.5f }, { "bc", -2.0f } };
    gan_tb_encode_scalars(&b, 2.0, 300, v, 2);
    assert_bytes(&b, "090000000000000040" "10ac02" "2a15"
                     "0a080a0161150000003f" "0a090a026263150000" "00c0");
    gan_tb_bytes_free(&b);
}
END_TEST

START_TEST(encode_session_start)
{
    struct gan_tb_bytes b = { 0 };
    gan_tb_encode_session_start(&b, 2.0, 300);
    assert_bytes(&b, "09000000000000004010ac023a020801");
    gan_tb_bytes_free(&b);
}
END_TEST

START_TEST(encode_image)
{
    struct gan_tb_bytes b = { 0 };
    struct gan_tb_image im = { "img", (const unsigned char *)"PNG", 3, 3, 2, 1 };
    gan_tb_encode_image(&b, 2.0, 7, &im);
    assert_bytes(&b, "09000000000000004010072a140a120a03696d67220b0802100318012203504e47");
    gan_tb_bytes_free(&b);
}
END_TEST

/* A negative int64 is its two's complement in ten varint bytes. */
START_TEST(encode_negative_step)
{
    struct gan_tb_bytes b = { 0 };
    gan_tb_encode_session_start(&b, 2.0, -1);
    assert_bytes(&b, "090000000000000040" "10ffffffffffffffffff01" "3a020801");
    gan_tb_bytes_free(&b);
}
END_TEST

/* The record TensorBoard's own record writer makes of the file_version event. */
START_TEST(frame_record)
{
    struct gan_tb_bytes event = { 0 }, rec = { 0 };
    gan_tb_encode_file_version(&event, 1.5);
    gan_tb_frame_record(&rec, event.data, event.len);
    assert_bytes(&rec, "1800000000000000a37f4b22"
                       "09000000000000f83f1a0d627261696e2e4576656e743a32" "2a28646c");
    gan_tb_bytes_free(&event);
    gan_tb_bytes_free(&rec);
}
END_TEST

/* ------------------------------------------------------------------ the writer */

static char tmpdir[64];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ganctl-tb-XXXXXX");
    ck_assert_msg(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static size_t read_all(const char *path, unsigned char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n;
}

/* The file's name is TensorBoard's; it starts with the file_version record, and each
 * record is in the file as soon as the call returns. */
START_TEST(writer_file)
{
    struct gan_error err;
    gan_tb_writer *w = NULL;
    ck_assert_int_eq(gan_tb_writer_open(tmpdir, 1.5, &w, &err), GAN_OK);
    char host[256] = "";
    gethostname(host, sizeof host);
    char want[512];
    snprintf(want, sizeof want, "%s/events.out.tfevents.1.%s", tmpdir, host);
    ck_assert_str_eq(gan_tb_writer_path(w), want);
    struct gan_tb_scalar v = { "a", 0.5f };
    ck_assert_int_eq(gan_tb_write_scalars(w, 1.5, 3, &v, 1, &err), GAN_OK);

    unsigned char got[256];
    size_t n = read_all(want, got, sizeof got);
    struct gan_tb_bytes expected = { 0 }, event = { 0 };
    gan_tb_encode_file_version(&event, 1.5);
    gan_tb_frame_record(&expected, event.data, event.len);
    gan_tb_bytes_free(&event);
    gan_tb_encode_scalars(&event, 1.5, 3, &v, 1);
    gan_tb_frame_record(&expected, event.data, event.len);
    gan_tb_bytes_free(&event);
    ck_assert_uint_eq(n, expected.len);
    ck_assert(memcmp(got, expected.data, n) == 0);
    gan_tb_bytes_free(&expected);

    /* A second file in the same second gets a name of its own. */
    gan_tb_writer *w2 = NULL;
    ck_assert_int_eq(gan_tb_writer_open(tmpdir, 1.9, &w2, &err), GAN_OK);
    snprintf(want, sizeof want, "%s/events.out.tfevents.1.%s.2", tmpdir, host);
    ck_assert_str_eq(gan_tb_writer_path(w2), want);
    ck_assert_int_eq(gan_tb_writer_sync(w2, &err), GAN_OK);
    ck_assert_int_eq(gan_tb_writer_close(w2, &err), GAN_OK);
    ck_assert_int_eq(gan_tb_writer_close(w, &err), GAN_OK);
}
END_TEST

START_TEST(writer_refuses_missing_folder)
{
    struct gan_error err;
    gan_error_clear(&err);
    gan_tb_writer *w = NULL;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/absent", tmpdir);
    ck_assert_int_eq(gan_tb_writer_open(dir, 1.0, &w, &err), GAN_ERR_IO);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err.message, dir) != NULL, "%s", err.message);
}
END_TEST

/* ------------------------------------------------------------------ PNG size */

START_TEST(png_size)
{
    unsigned char png[33] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13,
                              'I', 'H', 'D', 'R', 0, 0, 0x02, 0x10, 0, 0, 0x02, 0x44, 8, 2 };
    unsigned w = 0, h = 0;
    int c = 0;
    ck_assert_int_eq(gan_tb_png_size(png, sizeof png, &w, &h, &c), GAN_OK);
    ck_assert_uint_eq(w, 528);
    ck_assert_uint_eq(h, 580);
    ck_assert_int_eq(c, 3);
    png[25] = 0;
    ck_assert_int_eq(gan_tb_png_size(png, sizeof png, &w, &h, &c), GAN_OK);
    ck_assert_int_eq(c, 1);
    png[1] = 'X';
    ck_assert_int_eq(gan_tb_png_size(png, sizeof png, &w, &h, &c), GAN_ERR_FORMAT);
    ck_assert_int_eq(gan_tb_png_size(png, 10, &w, &h, &c), GAN_ERR_FORMAT);
}
END_TEST

static Suite *tensorboard_suite(void)
{
    Suite *s = suite_create("tensorboard");
    TCase *tc = tcase_create("crc32c");
    tcase_add_test(tc, crc32c_vectors);
    tcase_add_test(tc, crc32c_continues);
    tcase_add_test(tc, crc32c_mask);
    suite_add_tcase(s, tc);
    tc = tcase_create("encoding");
    tcase_add_test(tc, encode_file_version);
    tcase_add_test(tc, encode_scalar);
    tcase_add_test(tc, encode_two_scalars);
    tcase_add_test(tc, encode_session_start);
    tcase_add_test(tc, encode_image);
    tcase_add_test(tc, encode_negative_step);
    tcase_add_test(tc, frame_record);
    suite_add_tcase(s, tc);
    tc = tcase_create("writer");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, writer_file);
    tcase_add_test(tc, writer_refuses_missing_folder);
    suite_add_tcase(s, tc);
    tc = tcase_create("png");
    tcase_add_test(tc, png_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tensorboard_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
