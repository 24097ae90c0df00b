/* SPDX-License-Identifier: MIT */
/* scratch.c — a scratch folder per test (scratch.h), for the tests that write run
 * folders, checkpoints and dumps. */
#include "config.h"
#include "scratch.h"
#include "train/run/run_dir.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

char test_scratch[512];

void test_scratch_make(const char *prefix)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(test_scratch, sizeof test_scratch, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
             prefix);
    ck_assert_ptr_nonnull(mkdtemp(test_scratch));
}

void test_scratch_remove(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_scratch);
    ck_assert_int_eq(system(cmd), 0);
}

char *test_read_run_file(const char *dir, const char *name)
{
    char path[900];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    struct gan_error err;
    ck_assert_msg(gan_file_read_text(path, &text, &err) == GAN_OK, "%s", err.message);
    return text;
}
