/* SPDX-License-Identifier: MIT */
/* test_host.h — a gan_host for tests: logs to stderr, keeps the last error message,
 * answers settings from a list of "key=value" strings. */
#ifndef GANCTL_TEST_HOST_H
#define GANCTL_TEST_HOST_H

#include <ganctl/ganctl.h>

struct test_host {
    struct gan_host host;
    const char *const *settings;   /* "key=value" strings, NULL-terminated; may be NULL */
    /* The plugin's declared settings, or NULL: a key that `settings` does not set answers
     * with its declared default (unquoted for a string), as the core's host does. */
    const struct gan_setting_spec *specs;
    char unquoted[32][64];         /* string defaults answered, by the spec's position */
    char last_error[512];
    gan_status last_status;
    int quiet;                     /* nonzero: do not echo log lines */
};

/* Fills `th` so that &th->host can be passed to a plugin. `settings` is borrowed. */
void test_host_init(struct test_host *th, const char *const *settings);
/* The same, answering unset keys with the defaults `specs` declares (NULL: none). */
void test_host_init_declared(struct test_host *th, const char *const *settings,
                             const struct gan_setting_spec *specs);


#endif
