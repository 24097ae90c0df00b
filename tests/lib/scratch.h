/* SPDX-License-Identifier: MIT */
/* scratch.h — a scratch folder per test, made in $TMPDIR (or /tmp) by a Check fixture's
 * setup and removed with everything in it by its teardown; and reading a run folder's
 * files back. */
#ifndef GANCTL_TESTS_SCRATCH_H
#define GANCTL_TESTS_SCRATCH_H

/* The folder of the running test: valid between test_scratch_make and
 * test_scratch_remove. */
extern char test_scratch[512];

/* Makes a fresh folder named PREFIX-XXXXXX (mkdtemp) into test_scratch; fails the test
 * when it cannot. */
void test_scratch_make(const char *prefix);

/* Removes test_scratch and its contents; a checked fixture's teardown. */
void test_scratch_remove(void);

/* The whole text of DIR/NAME (a run folder's metrics.csv, say), read with the core's
 * gan_file_read_text; fails the test when it cannot. The caller frees it. */
char *test_read_run_file(const char *dir, const char *name);

#endif
