/* SPDX-License-Identifier: MIT */
/* fuzz.h — what the harnesses of tests/fuzz/ share. Each harness is one file defining
 * libFuzzer's entry point; the same file is linked into two programs: the fuzzer
 * (clang -fsanitize=fuzzer, ./configure --enable-fuzzing), and a replay driver
 * (replay.c, built by every make check) that feeds it the committed seeds and the
 * inputs that once crashed it. A harness checks the promises its reader makes and
 * aborts when one is broken, so a wrong answer counts as a crash in both programs. */
#ifndef GANCTL_TEST_FUZZ_H
#define GANCTL_TEST_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point: one input, `size` bytes (not NUL-terminated). Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise: prints "fuzz: " and the message to stderr, then aborts. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* For readers that take a path: writes the input to this process's scratch file (in
 * memory where the system allows, else created on the first call in $TMPDIR, or /tmp,
 * and removed at exit) and returns its path, the same on every call. Aborts when the
 * file cannot be written. */
const char *fuzz_scratch_file(const uint8_t *data, size_t size);

#endif
