/* SPDX-License-Identifier: MIT */
/* check_comm.c — tests of the communication layer (comm/comm.h) that need no mpirun: the
 * single-process engine leaves every buffer as it is, a program not started by a process
 * manager gets it, a build without MPI refuses to be one of several ranks, and a device
 * engine that is not there is named as missing. tests/e2e/mpi.sh runs the MPI engine. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

static const char *const launcher_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE",
                                             "PMIX_RANK" };

static void no_launcher(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        unsetenv(launcher_vars[i]);
}

START_TEST(single_engine_is_the_identity)
{
    gan_comm *c = gan_comm_single();
    ck_assert_int_eq(c->rank, 0);
    ck_assert_int_eq(c->size, 1);
    ck_assert_str_eq(c->ops->name, "single");
    struct gan_error err;
    gan_error_clear(&err);
    float f[3] = { 1.5f, -2.0f, 0.25f };
    double d[2] = { 3.0, -0.0 };
    uint64_t u[2] = { 7, UINT64_MAX };
    ck_assert_int_eq(gan_comm_all_reduce(c, f, 3, GAN_COMM_F32, GAN_COMM_SUM, &err), GAN_OK);
    ck_assert_int_eq(gan_comm_all_reduce(c, d, 2, GAN_COMM_F64, GAN_COMM_MAX, &err), GAN_OK);
    ck_assert_int_eq(gan_comm_all_reduce(c, u, 2, GAN_COMM_U64, GAN_COMM_MIN, &err), GAN_OK);
    ck_assert(f[0] == 1.5f && f[1] == -2.0f && f[2] == 0.25f);
    ck_assert(d[0] == 3.0 && d[1] == 0.0);
    ck_assert(u[0] == 7 && u[1] == UINT64_MAX);
    char text[8] = "abc";
    ck_assert_int_eq(gan_comm_broadcast(c, text, sizeof text, 0, &err), GAN_OK);
    ck_assert_str_eq(text, "abc");
    ck_assert_int_eq(gan_comm_barrier(c, &err), GAN_OK);
    gan_comm_close(c);   /* the static engine: closing it is nothing */
    ck_assert_int_eq(gan_comm_single()->size, 1);
}
END_TEST

START_TEST(without_a_launcher_one_process)
{
    no_launcher();
    ck_assert(!gan_comm_launched());
    gan_comm *c = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_comm_open(&c, &err), GAN_OK);
    ck_assert_ptr_eq(c, gan_comm_single());
    gan_comm_close(c);
}
END_TEST

#ifndef HAVE_MPI
START_TEST(several_ranks_need_mpi)
{
    no_launcher();
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    ck_assert(gan_comm_launched());
    gan_comm *c = NULL;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_comm_open(&c, &err), GAN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err.message, "one of 2 ranks"));
    ck_assert_ptr_nonnull(strstr(err.message, "--with-mpi"));
    /* One rank under mpirun is one process. */
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    ck_assert_int_eq(gan_comm_open(&c, &err), GAN_OK);
    ck_assert_int_eq(c->size, 1);
    no_launcher();
}
END_TEST
#endif

START_TEST(missing_device_engine)
{
    gan_comm *c = (gan_comm *)1;
    struct gan_error err;
    gan_error_clear(&err);
    ck_assert_int_eq(gan_comm_open_device("/nonexistent-folder", "nccl", gan_comm_single(), 0,
                                          &c, &err), GAN_ERR_NOT_FOUND);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(err.message, "the nccl engine could not be loaded"));
    ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent-folder/comm_nccl.so"));
}
END_TEST

static Suite *comm_suite(void)
{
    Suite *s = suite_create("comm");
    TCase *tc = tcase_create("engines");
    tcase_add_test(tc, single_engine_is_the_identity);
    tcase_add_test(tc, without_a_launcher_one_process);
#ifndef HAVE_MPI
    tcase_add_test(tc, several_ranks_need_mpi);
#endif
    tcase_add_test(tc, missing_device_engine);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(comm_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
