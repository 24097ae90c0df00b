/* isa.c — which vector instructions the CPU backend's kernels use: chosen once from
 * the CPU's features when the module is loaded, and lowerable for tests and
 * benchmarks that compare the levels on the same inputs. */
#include "config.h"

#include "cpu_backend.h"

/* Asked once: the kernels dispatch on short runs many times per step, and asking the
 * CPU on every call cost more than converting. */
static enum cpu_isa isa_best = CPU_ISA_PORTABLE;
enum cpu_isa cpu_isa_now = CPU_ISA_PORTABLE;

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((constructor))
static void detect_features(void)
{
    __builtin_cpu_init();
    /* the 8-lane level needs both: F16C for FP16 and AVX2 for BF16 */
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c") &&
        __builtin_cpu_supports("avx2"))
        isa_best = CPU_ISA_F16C;
    if (isa_best == CPU_ISA_F16C && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        isa_best = CPU_ISA_AVX512;
    cpu_isa_now = isa_best;
}
#endif

enum cpu_isa cpu_isa_best(void)
{
    return isa_best;
}

enum cpu_isa cpu_isa_select(enum cpu_isa want)
{
    cpu_isa_now = want < isa_best ? want : isa_best;
    return cpu_isa_now;
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
