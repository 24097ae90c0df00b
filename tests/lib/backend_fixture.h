/* SPDX-License-Identifier: MIT */
/* backend_fixture.h — a gan_ctx over the real CPU backend module, loaded with dlopen
 * from $GANCTL_PLUGIN_PATH as the program loads it, for the core's tests. */
#ifndef GANCTL_TEST_BACKEND_FIXTURE_H
#define GANCTL_TEST_BACKEND_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>
#include "test_host.h"
#include "tensor/tensor_core.h"

struct backend_fixture {
    struct test_host th;
    void *handle;                          /* from dlopen */
    const struct gan_plugin *plugin;
    const struct gan_backend_ops *ops;
    gan_backend *be;
    gan_ctx *ctx;
    char settings_text[16][128];           /* "key=value" for every declared setting */
    const char *settings[17];
};

/* The fixture of the running test (set up in the forked child). */
extern struct backend_fixture fx;

/* Check fixtures: load the module, create a backend (its declared defaults for every
 * setting, except threads=1: the tests' tensors are tiny) and a context; any failure
 * aborts the test with the reason. */
void backend_fixture_setup(void);
void backend_fixture_teardown(void);

/* Small graphs built by hand: a deterministic value in [-2, 2] for index i of stream
 * `salt`; an FP32 leaf on ctx that requires a gradient; t's values copied out as FP32.
 * The last two abort the test, with the context's reason, when anything fails. */
float fixture_value(uint32_t i, uint32_t salt);
gan_tensor *fixture_param(gan_ctx *ctx, int ndim, const int64_t *dims, const float *v);
void fixture_host(gan_ctx *ctx, gan_tensor *t, float *v, size_t n);

#endif
