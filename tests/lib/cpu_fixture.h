/* SPDX-License-Identifier: MIT */
/* cpu_fixture.h — a CPU backend instance for kernel tests, built from the backend's
 * objects (linked statically into the test), plus buffers filled from host arrays. */
#ifndef GANCTL_TEST_CPU_FIXTURE_H
#define GANCTL_TEST_CPU_FIXTURE_H

#include "test_host.h"
#include "../../backends/cpu/cpu_backend.h"

/* Creates a backend with its BLAS loaded and its vector level from the setting "vector"
 * (the widest the CPU runs when absent), as create would; aborts the test on failure.
 * `settings` ("threads=2", "vector=portable", …) may be NULL. */
gan_backend *cpu_fixture_new(const char *const *settings);
void cpu_fixture_free(gan_backend *be);

/* A buffer holding n floats copied from `src` (or undefined contents when src is NULL). */
gan_buffer *cpu_fixture_buffer(gan_backend *be, size_t n, const float *src);

/* A gan_ref to element 0 of buf as `dtype`. */
struct gan_ref cpu_fixture_ref(gan_buffer *buf, enum gan_dtype dtype);

/* Why a test of the oneDNN paths skips in this build or on this CPU: no oneDNN, or a
 * CPU other than x86-64; NULL when it runs. */
const char *cpu_fixture_onednn_skip(void);

#endif
