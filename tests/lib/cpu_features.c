/* SPDX-License-Identifier: MIT */
/* cpu_features.c — x86 vector features from CPUID and XCR0, written for the tests: they
 * restate the rule of the backend's detection instead of calling it. */
#include "config.h"

#include <string.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

#include "cpu_features.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* XCR0: which register states the OS saves on a context switch. A CPU feature whose
 * registers the OS does not save cannot be used, so it counts as absent. */
static unsigned long long xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

int test_cpu_has(const char *name)
{
    unsigned eax, ebx, ecx1 = 0, ebx7 = 0, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx1, &edx))
        return 0;
    if (__get_cpuid_max(0, NULL) >= 7)
        __get_cpuid_count(7, 0, &eax, &ebx7, &ecx, &edx);
    /* Leaf 1 ECX bit 27 (OSXSAVE) says xgetbv may be run; then XMM and YMM state
     * (XCR0 bits 1, 2) for AVX and everything above it, and opmask and the upper ZMM
     * state (bits 5, 6, 7) for AVX-512. */
    unsigned long long x = (ecx1 & (1u << 27)) ? xcr0() : 0;
    int ymm = (x & 0x6) == 0x6;
    int zmm = ymm && (x & 0xe0) == 0xe0;
    int avx = ymm && (ecx1 & (1u << 28));
    if (!strcmp(name, "avx"))
        return avx;
    if (!strcmp(name, "f16c"))
        return avx && (ecx1 & (1u << 29));
    if (!strcmp(name, "fma"))
        return avx && (ecx1 & (1u << 12));
    if (!strcmp(name, "avx2"))
        return avx && (ebx7 & (1u << 5));
    if (!strcmp(name, "avx512f"))
        return zmm && (ebx7 & (1u << 16));
    if (!strcmp(name, "avx512dq"))
        return zmm && (ebx7 & (1u << 17));
    if (!strcmp(name, "avx512bw"))
        return zmm && (ebx7 & (1u << 30));
    if (!strcmp(name, "avx512vl"))
        return zmm && (ebx7 & (1u << 31));
    return 0;
}
#else
int test_cpu_has(const char *name)
{
    (void)name;
    return 0;
}
#endif
