/* SPDX-License-Identifier: MIT */
/* cpu_features.h — which x86 vector features the CPU and the OS give the tests, read from
 * CPUID and XCR0 here rather than taken from the backend's detection, which they check. */
#ifndef GANCTL_TEST_CPU_FEATURES_H
#define GANCTL_TEST_CPU_FEATURES_H

/* Nonzero when the CPU has `name` and the OS saves the registers it needs: "avx",
 * "f16c", "fma", "avx2", "avx512f", "avx512bw", "avx512vl" or "avx512dq". Zero for any
 * other name and on a CPU that is not x86. */
int test_cpu_has(const char *name);

#endif
