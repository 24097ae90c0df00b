/* SPDX-License-Identifier: MIT */
/* bench_clock.c — the bench programs' clock (bench_clock.h). */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

double bench_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int compare_seconds(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_sort_seconds(double *t, size_t n)
{
    qsort(t, n, sizeof *t, compare_seconds);
}
