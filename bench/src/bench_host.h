/* SPDX-License-Identifier: MIT */
/* bench_host.h — the host services the bench programs give the CPU backend's kernels
 * they call directly: warnings to standard error, failures kept for the caller to
 * print, plain malloc, and no settings. */
#ifndef GANCTL_BENCH_HOST_H
#define GANCTL_BENCH_HOST_H

#include <ganctl/host.h>

extern const struct gan_host bench_host;

/* The message of the last failure the kernels reported through bench_host. */
const char *bench_last_error(void);

#endif
