/* SPDX-License-Identifier: MIT */
/* bench_clock.h — the bench programs' clock, and the order their timings are read in. */
#ifndef GANCTL_BENCH_CLOCK_H
#define GANCTL_BENCH_CLOCK_H

#include <stddef.h>

/* Seconds on the monotonic clock, from an arbitrary origin. */
double bench_seconds(void);

/* Sorts n timings ascending, for their median and extremes. */
void bench_sort_seconds(double *t, size_t n);

#endif
