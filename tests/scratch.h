/* scratch.h — a scratch folder per test, made in $TMPDIR (or /tmp) by a Check fixture's
 * setup and removed with everything in it by its teardown. */
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

#endif
