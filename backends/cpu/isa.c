/* SPDX-License-Identifier: MIT */
/* isa.c — which vector instructions the CPU backend's kernels may use: the widest level
 * the CPU runs, and the level an instance takes from its setting "vector". */
#include "config.h"

#include <string.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

#include "cpu_backend.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
/* F16C from CPUID leaf 1 (ECX bit 29) rather than __builtin_cpu_supports("f16c"), which
 * clang accepts only from version 15 on: the backend must build with the clang of the
 * fuzzing and sanitizer builds too. */
static int cpu_has_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}
#endif

/* No level is cached here: each instance keeps its own (cpu_backend.h), so the module
 * holds no state that one instance's create could change under another's kernels. */
enum cpu_isa cpu_isa_best(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    /* The 8-lane level needs both: F16C for FP16 and AVX2 for BF16. */
    if (!__builtin_cpu_supports("avx") || !cpu_has_f16c() ||
        !__builtin_cpu_supports("avx2"))
        return CPU_ISA_PORTABLE;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        return CPU_ISA_AVX512;
    return CPU_ISA_F16C;
#else
    return CPU_ISA_PORTABLE;
#endif
}

enum cpu_isa cpu_isa_select(gan_backend *be, enum cpu_isa want)
{
    enum cpu_isa best = cpu_isa_best();
    be->isa = want < best ? want : best;
    return be->isa;
}

/* A level this CPU lacks is an error rather than a quiet fallback, so that a comparison
 * of levels never compares a level with itself. */
gan_status cpu_isa_setting(const struct gan_host *host, enum cpu_isa *isa)
{
    static const struct { const char *name; enum cpu_isa isa; } levels[] = {
        { "portable", CPU_ISA_PORTABLE }, { "f16c", CPU_ISA_F16C }, { "avx512", CPU_ISA_AVX512 },
    };
    const enum cpu_isa best = cpu_isa_best();
    const char *want = NULL;
    gan_status st = gan_setting_string(host, cpu_settings, "vector", &want);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: the setting vector is not a string; set it to "
                          "\"auto\", \"avx512\", \"f16c\" or \"portable\"");
    if (!want || strcmp(want, "auto") == 0) {
        *isa = best;
        return GAN_OK;
    }
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (strcmp(want, levels[i].name) != 0)
            continue;
        if (levels[i].isa > best)
            return host->fail(host->ctx, GAN_ERR_CONFIG,
                              "backend cpu: vector = \"%s\", but this CPU runs at most the "
                              "%s level; use \"auto\" or a lower level", want,
                              cpu_isa_name(best));
        *isa = levels[i].isa;
        return GAN_OK;
    }
    return host->fail(host->ctx, GAN_ERR_CONFIG,
                      "backend cpu: vector = \"%s\" is not a level; use \"auto\" (the widest "
                      "this CPU runs), \"avx512\", \"f16c\" or \"portable\"", want);
}

const char *cpu_isa_name(enum cpu_isa isa)
{
    switch (isa) {
    case CPU_ISA_AVX512: return "AVX-512";
    case CPU_ISA_F16C: return "F16C/AVX2";
    case CPU_ISA_PORTABLE:
    default: return "portable";
    }
}
