/* SPDX-License-Identifier: MIT */
/* fuzz_opens.h — what a harness's reader opens by name, watched: the program that links
 * fuzz_opens.c defines fopen, open and openat (and their 64-bit names) itself, so that
 * every call in the process, libconfig's included, comes through it before the C
 * library's. No LD_PRELOAD is needed, and nothing changes while no watch is on. */
#ifndef GANCTL_TEST_FUZZ_OPENS_H
#define GANCTL_TEST_FUZZ_OPENS_H

#include <stddef.h>

/* From now on, and until fuzz_opens_end, an open of any path other than `allowed` (and
 * /dev/urandom, where a configuration draws its seed) is
 * refused (EACCES, as for a file the user cannot read) and counted: the reader under
 * test can neither read nor wait on a file outside its input, whatever it is told. */
void fuzz_opens_begin(const char *allowed);

/* Ends the watch; returns how many opens were refused, and the first refused path in
 * `first` (cut to `cap` bytes; "" when none). */
size_t fuzz_opens_end(char *first, size_t cap);

#endif
