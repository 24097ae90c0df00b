/* SPDX-License-Identifier: MIT */
/* onednn_setting.c — the CPU backend's setting "gemm" (which library computes GEMMs and
 * convolutions) and whether the CPU has the BF16 dot products oneDNN's fast BF16 paths
 * need.
 * Built with or without oneDNN; without it, the oneDNN entry points are the fallbacks
 * at the end, which send every call to OpenBLAS. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

#include "cpu_backend.h"

/* AVX512-BF16 is CPUID leaf 7 subleaf 1, EAX bit 5; AMX-BF16 leaf 7 subleaf 0, EDX bit
 * 22. Read directly: __builtin_cpu_supports knows neither in every compiler the backend
 * builds with. */
static int cpuid_bf16_dot(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    unsigned eax, ebx, ecx, edx;
    if (__get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const int amx_bf16 = (edx >> 22) & 1;
    const unsigned max_sub = eax;
    int avx512_bf16 = 0;
    if (max_sub >= 1) {
        __cpuid_count(7, 1, eax, ebx, ecx, edx);
        avx512_bf16 = (eax >> 5) & 1;
    }
    return amx_bf16 || avx512_bf16;
#else
    return 0;
#endif
}

/* The answer, found once per process: the CPU's, unless the test hook
 * GANCTL_TEST_NO_BF16_DOT (set and not "0") makes this CPU one without, so that the
 * paths of such a CPU are tested on any. */
static pthread_once_t bf16_dot_once = PTHREAD_ONCE_INIT;
static int bf16_dot;

static void find_bf16_dot(void)
{
    const char *hook = getenv("GANCTL_TEST_NO_BF16_DOT");
    bf16_dot = hook && *hook && strcmp(hook, "0") != 0 ? 0 : cpuid_bf16_dot();
}

int cpu_has_bf16_dot(void)
{
    pthread_once(&bf16_dot_once, find_bf16_dot);
    return bf16_dot;
}

const char *cpu_gemm_path_name(enum cpu_gemm_path path)
{
    switch (path) {
    case CPU_GEMM_OPENBLAS: return "openblas";
    case CPU_GEMM_ONEDNN: return "onednn";
    case CPU_GEMM_AUTO:
    default: return "auto";
    }
}

gan_status cpu_gemm_path_setting(const struct gan_host *host, enum cpu_gemm_path *path)
{
    const char *want = NULL;
    gan_status st = gan_setting_string(host, cpu_settings, "gemm", &want);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: the setting gemm is not a string; set it to "
                          "\"auto\", \"openblas\" or \"onednn\"");
    if (!want || strcmp(want, "auto") == 0) {
        *path = CPU_GEMM_AUTO;
        return GAN_OK;
    }
    if (strcmp(want, "openblas") == 0) {
        *path = CPU_GEMM_OPENBLAS;
        return GAN_OK;
    }
    if (strcmp(want, "onednn") != 0)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: gemm = \"%s\" is not a library; use \"auto\", "
                          "\"openblas\" or \"onednn\"", want);
#ifndef GAN_HAVE_ONEDNN
    return host->fail(host->ctx, GAN_ERR_CONFIG,
                      "backend cpu: gemm = \"onednn\", but this build has no oneDNN; "
                      "install libdnnl-dev and reconfigure --with-onednn, or use "
                      "\"auto\" or \"openblas\"");
#else
    /* Taken on any CPU: oneDNN runs every type, BF16 without a fast kernel where the
     * CPU has no BF16 dot product (the description says so). */
    *path = CPU_GEMM_ONEDNN;
    return GAN_OK;
#endif
}

/* "onednn" needs oneDNN in the build and on the gemm path; "auto" and "staged" run on
 * any. */
gan_status cpu_bf16_path_setting(const struct gan_host *host, enum cpu_gemm_path gemm,
                                 enum cpu_bf16_path *path)
{
    const char *want = NULL;
    if (gan_setting_string(host, cpu_settings, "bf16", &want) != GAN_OK ||
        (want && strcmp(want, "auto") != 0 && strcmp(want, "onednn") != 0 &&
         strcmp(want, "staged") != 0))
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: bf16 = \"%s\" is not a path; use \"auto\", "
                          "\"onednn\" or \"staged\"", want ? want : "(not a string)");
    *path = !want || strcmp(want, "auto") == 0 ? CPU_BF16_AUTO
            : strcmp(want, "staged") == 0      ? CPU_BF16_STAGED
                                               : CPU_BF16_ONEDNN;
#ifndef GAN_HAVE_ONEDNN
    (void)gemm;
    if (*path == CPU_BF16_ONEDNN)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: bf16 = \"onednn\", but this build has no oneDNN; "
                          "install libdnnl-dev and reconfigure --with-onednn, or use "
                          "\"auto\" or \"staged\"");
#else
    if (*path == CPU_BF16_ONEDNN && gemm == CPU_GEMM_OPENBLAS)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: bf16 = \"onednn\" needs oneDNN, but gemm = "
                          "\"openblas\" leaves it out; set gemm = \"auto\" or \"onednn\", or "
                          "bf16 = \"auto\" or \"staged\"");
#endif
    return GAN_OK;
}

#ifndef GAN_HAVE_ONEDNN
gan_status cpu_onednn_open(gan_backend *be)
{
    be->onednn = NULL;
    return GAN_OK;
}

void cpu_onednn_close(gan_backend *be)
{
    be->onednn = NULL;
}

void cpu_onednn_describe(gan_backend *be, char *out, size_t size)
{
    if (size)
        snprintf(out, size, "GEMM %s: OpenBLAS for FP32 GEMM, FP32 convolutions and BF16 "
                 "(built without oneDNN)", cpu_gemm_path_name(be->gemm_path));
}

int cpu_onednn_gemm(gan_backend *be, const struct gan_gemm *g, gan_status *st)
{
    (void)be, (void)g, (void)st;
    return 0;
}

int cpu_onednn_bf16(const gan_backend *be)
{
    (void)be;
    return 0;
}

int cpu_onednn_gemm_takes(gan_backend *be, const struct gan_gemm *g)
{
    (void)be, (void)g;
    return 0;
}

int cpu_onednn_conv(gan_backend *be, enum cpu_conv_kind kind, const struct gan_conv2d *c,
                    const struct gan_ref *a, const struct gan_ref *b, float beta,
                    const struct gan_ref *out, gan_status *st)
{
    (void)be, (void)kind, (void)c, (void)a, (void)b, (void)beta, (void)out, (void)st;
    return 0;
}

void cpu_onednn_cache_counts(gan_backend *be, int *held, long *created)
{
    (void)be;
    *held = 0;
    *created = 0;
}
#endif
