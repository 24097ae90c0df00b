/* SPDX-License-Identifier: MIT */
/* check_progress.c — tests of the progress line: the whole line, the fields each width
 * keeps (40, 70 and 120 columns), a length under the width for every width, the loss
 * scales as powers of two, and the terminal width from $COLUMNS. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "progress.h"

/* A toy run at iteration 1200 of 2000 in FP16 with a scaler on both networks. */
static struct gan_progress sample(void)
{
    struct gan_progress p;
    memset(&p, 0, sizeof p);
    p.iteration = 1200;
    p.total = 2000;
    p.it_per_s = 8.1;
    p.critic_loss = -0.052;
    p.generator_loss = 0.31;
    p.w_distance = 0.06;
    p.has_quality = 1;
    p.quality.has_modes = 1;
    p.quality.modes_covered = 8;
    p.quality.modes_total = 8;
    p.quality.high_quality_pct = 95.2;
    p.quality.sliced_w1 = 0.0123;
    p.scaled = 1;
    p.critic_scale = 8192.0;
    p.generator_scale = 1024.0;
    p.critic_skipped = 5;
    p.generator_skipped = 6;
    return p;
}

#define FULL "iter 1200/2000  8.1 it/s  ETA 1m39s  critic -0.052  gen 0.31  W 0.06  " \
             "C 2^13 skip 5  G 2^10 skip 6  modes 8/8  hq 95.2%  sW1 0.0123"

START_TEST(whole_line)
{
    struct gan_progress p = sample();
    char line[512];
    gan_progress_line(line, sizeof line, &p, 0);
    ck_assert_str_eq(line, FULL);
    /* A width it fits in shows it whole. */
    gan_progress_line(line, sizeof line, &p, (unsigned)strlen(FULL) + 1);
    ck_assert_str_eq(line, FULL);
}
END_TEST

/* 120 columns: the rate and hq go. */
START_TEST(width_120)
{
    struct gan_progress p = sample();
    char line[512];
    gan_progress_line(line, sizeof line, &p, 120);
    ck_assert_str_eq(line, "iter 1200/2000  ETA 1m39s  critic -0.052  gen 0.31  W 0.06  "
                           "C 2^13 skip 5  G 2^10 skip 6  modes 8/8  sW1 0.0123");
    ck_assert_uint_le(strlen(line), 119);
}
END_TEST

/* 70 columns: the scales and the critic's loss stay; the ETA does not fit after them,
 * but W, shorter and of lower rank, does; the generator's loss, the quality and the rate
 * go. */
START_TEST(width_70)
{
    struct gan_progress p = sample();
    char line[512];
    gan_progress_line(line, sizeof line, &p, 70);
    ck_assert_str_eq(line, "iter 1200/2000  critic -0.052  W 0.06  C 2^13 skip 5  G 2^10 skip 6");
    ck_assert_uint_le(strlen(line), 69);
}
END_TEST

/* 40 columns: the iteration, the critic's scale and what still fits. */
START_TEST(width_40)
{
    struct gan_progress p = sample();
    char line[512];
    gan_progress_line(line, sizeof line, &p, 40);
    ck_assert_str_eq(line, "iter 1200/2000  W 0.06  C 2^13 skip 5");
    ck_assert_uint_le(strlen(line), 39);
}
END_TEST

/* Narrower than the iteration field: it is cut, never wrapped. */
START_TEST(width_tiny)
{
    struct gan_progress p = sample();
    char line[512];
    gan_progress_line(line, sizeof line, &p, 10);
    ck_assert_str_eq(line, "iter 1200");
    gan_progress_line(line, sizeof line, &p, 1);
    ck_assert_str_eq(line, "");
}
END_TEST

/* Whatever the width, the line is shorter and never ends in a separator. */
START_TEST(every_width_fits)
{
    struct gan_progress p = sample();
    char line[512];
    for (unsigned w = 1; w <= 200; w++) {
        gan_progress_line(line, sizeof line, &p, w);
        size_t n = strlen(line);
        ck_assert_msg(n <= w - 1, "width %u: %zu characters: \"%s\"", w, n, line);
        ck_assert_msg(n == 0 || line[n - 1] != ' ', "width %u: \"%s\"", w, line);
        if (w > 15)
            ck_assert_msg(strncmp(line, "iter 1200/2000", 14) == 0, "width %u: \"%s\"", w, line);
    }
}
END_TEST

/* Without a scaler the scales are not shown; a scale that is not a power of two, or 0,
 * is still readable. */
START_TEST(scales)
{
    struct gan_progress p = sample();
    char line[512];
    p.scaled = 0;
    gan_progress_line(line, sizeof line, &p, 0);
    ck_assert_ptr_null(strstr(line, "skip"));
    p.scaled = 1;
    p.critic_scale = 1000.0;
    p.generator_scale = 0.0;
    p.critic_skipped = 233;
    gan_progress_line(line, sizeof line, &p, 0);
    ck_assert_msg(strstr(line, "  C 2^9.97 skip 233  G 0 skip 6  ") != NULL, "%s", line);
    p.critic_scale = ldexp(1.0, -14);
    gan_progress_line(line, sizeof line, &p, 0);
    ck_assert_msg(strstr(line, "  C 2^-14 skip 233  ") != NULL, "%s", line);
}
END_TEST

/* A file is no terminal: $COLUMNS decides, else 80. */
START_TEST(terminal_width)
{
    int fd = fileno(tmpfile());
    setenv("COLUMNS", "57", 1);
    ck_assert_uint_eq(gan_terminal_width(fd), 57);
    setenv("COLUMNS", "wide", 1);
    ck_assert_uint_eq(gan_terminal_width(fd), 80);
    unsetenv("COLUMNS");
    ck_assert_uint_eq(gan_terminal_width(fd), GAN_PROGRESS_DEFAULT_WIDTH);
}
END_TEST

static Suite *progress_suite(void)
{
    Suite *s = suite_create("progress");
    TCase *tc = tcase_create("line");
    tcase_add_test(tc, whole_line);
    tcase_add_test(tc, width_120);
    tcase_add_test(tc, width_70);
    tcase_add_test(tc, width_40);
    tcase_add_test(tc, width_tiny);
    tcase_add_test(tc, every_width_fits);
    tcase_add_test(tc, scales);
    suite_add_tcase(s, tc);
    tc = tcase_create("terminal");
    tcase_add_test(tc, terminal_width);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(progress_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
