/* SPDX-License-Identifier: MIT */
/* test_host.h — a gan_host for tests: logs to stderr, keeps the last error message,
 * answers settings from a list of "key=value" strings. */
#ifndef GANCTL_TEST_HOST_H
#define GANCTL_TEST_HOST_H

#include <ganctl/ganctl.h>

struct test_host {
    struct gan_host host;
    const char *const *settings;   /* "key=value" strings, NULL-terminated; may be NULL */
    char last_error[512];
    gan_status last_status;
    int quiet;                     /* nonzero: do not echo log lines */
};

/* Fills `th` so that &th->host can be passed to a plugin. `settings` is borrowed. */
void test_host_init(struct test_host *th, const char *const *settings);


#endif
