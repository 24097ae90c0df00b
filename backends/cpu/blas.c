/* SPDX-License-Identifier: MIT */
/* blas.c — loads the BLAS library at run time, after choosing OpenBLAS's kernel.
 * Resolves cblas_sgemm and OpenBLAS's optional introspection and thread controls. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cpu_backend.h"

/* OpenBLAS built with DYNAMIC_ARCH picks its kernel in a library constructor, from
 * OPENBLAS_CORETYPE when set and from its own CPU detection otherwise. 0.3.21's
 * detection does not know recent Intel models and falls back to "Prescott" (SSE3),
 * several times slower than the AVX2 or AVX-512 kernels the CPU can run. Choosing
 * from the instruction-set features themselves works on any model, known or not.
 * The name is OpenBLAS's; `features` is what the log says the choice was based on. */
struct core_choice {
    const char *name;
    const char *features;
};

static struct core_choice choose_core(void)
{
    struct core_choice none = { NULL, NULL };
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        struct core_choice c = { "SkylakeX", "avx512f avx512bw avx512vl avx512dq" };
        return c;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        struct core_choice c = { "Haswell", "avx2 fma" };
        return c;
    }
    if (__builtin_cpu_supports("avx")) {
        struct core_choice c = { "Sandybridge", "avx" };
        return c;
    }
#endif
    return none;
}

/* Copies src into a fixed-size field, truncating, always terminated. */
static void set_field(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* The file the library was loaded from: GAN_BLAS_LIBRARY is normally a soname, which
 * the dynamic loader resolves through its search path, and the log should say which
 * file that was. dladdr on one of its functions names the object that defines it. */
static void note_resolved_path(struct cpu_blas *blas, void *sym)
{
    Dl_info info;
    if (sym && dladdr(sym, &info) && info.dli_fname && *info.dli_fname)
        blas->path = info.dli_fname;
    else
        blas->path = blas->library;
}

/* OpenBLAS's threads, after each call they share, spin on sched_yield for 2^28 cycles
 * (0.3.21's default, a tenth of a second) before they sleep. oneDNN's OpenMP threads and
 * the backend's own workers run between OpenBLAS's calls on the same cores, and a
 * spinning thread takes the core they need: on the image configuration at 2 threads on
 * 2 cores, a third of the samples were OpenBLAS's sched_yield, and 16 cycles (the
 * shortest wait it takes) ran 1.16 times as fast in 1.58 times less CPU time, while the
 * toy, all OpenBLAS, ran as fast as before (bench/README.md). So the backend asks for
 * that unless the environment sets a wait. Returns whether it set the variable. */
static int ask_sleeping_threads(struct cpu_blas *blas)
{
    const char *env = getenv("OPENBLAS_THREAD_TIMEOUT");
    if (env && *env) {
        snprintf(blas->waits, sizeof blas->waits,
                 "OPENBLAS_THREAD_TIMEOUT=%.20s from the environment", env);
        return 0;
    }
    if (setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1) != 0) {
        set_field(blas->waits, sizeof blas->waits,
                  "OpenBLAS threads spin before they sleep (could not set "
                  "OPENBLAS_THREAD_TIMEOUT)");
        return 0;
    }
    set_field(blas->waits, sizeof blas->waits, "OpenBLAS threads sleep between calls");
    return 1;
}

/* OpenBLAS's kernels whose sgemm gives every element of C the same bits whichever rows
 * and columns a call covers: each element one dot product over k in one order, at the
 * edge of a call as inside it. check_threads compares split and whole products on the
 * kernel in use. Haswell's (Zen's is the same) sums the tiles at a call's edge in
 * another order, so a product cut in two differs in its last bits from the whole;
 * OpenBLAS's own threads cut it too, so there it keeps them. */
static int cuts_exactly(const char *kernel)
{
    static const char *const exact[] = { "SkylakeX", "Cooperlake", "SapphireRapids",
                                         "Sandybridge", "Prescott" };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcasecmp(kernel, exact[i]) == 0) /* a single-target build names it in capitals */
            return 1;
    return 0;
}

gan_status cpu_blas_open(gan_backend *be, int threads)
{
    const struct gan_host *host = be->host;
    struct cpu_blas *blas = &be->blas;
    const char *path = GAN_BLAS_LIBRARY;

    memset(blas, 0, sizeof *blas);
    blas->library = path;

    /* A library that is already in the process (another backend instance, or a
     * program that links OpenBLAS) chose its kernel when it was first loaded; the
     * environment cannot change it any more. RTLD_NOLOAD takes a reference to it. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (handle) {
        set_field(blas->chosen_by, sizeof blas->chosen_by,
                  "chosen when the library was first loaded in this process");
        set_field(blas->waits, sizeof blas->waits,
                  "OpenBLAS threads wait as set when it was first loaded");
    } else {
        const char *env = getenv("OPENBLAS_CORETYPE");
        int we_set_it = 0;
        if (env && *env) {
            set_field(blas->chosen_by, sizeof blas->chosen_by,
                      "OPENBLAS_CORETYPE from the environment");
        } else {
            struct core_choice c = choose_core();
            if (c.name) {
                if (setenv("OPENBLAS_CORETYPE", c.name, 1) != 0)
                    return host->fail(host->ctx, GAN_ERR_NOMEM,
                                      "cannot set OPENBLAS_CORETYPE=%s in the environment "
                                      "(out of memory); set it before starting the program",
                                      c.name);
                we_set_it = 1;
                snprintf(blas->chosen_by, sizeof blas->chosen_by,
                         "chosen from CPU features: %s", c.features);
            } else {
                set_field(blas->chosen_by, sizeof blas->chosen_by, "detected by OpenBLAS");
            }
        }
        int we_set_timeout = ask_sleeping_threads(blas);
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        /* The constructor has read the variables; leave the environment as we found it
         * so that a plugin changes no process-wide state it does not need to. */
        if (we_set_it)
            unsetenv("OPENBLAS_CORETYPE");
        if (we_set_timeout)
            unsetenv("OPENBLAS_THREAD_TIMEOUT");
        if (!handle) {
            const char *why = dlerror();
            return host->fail(host->ctx, GAN_ERR_NOT_FOUND,
                              "cannot load the BLAS library %s: %s; install OpenBLAS "
                              "(Debian: libopenblas0), add its folder to the dynamic "
                              "loader's search path (ld.so.conf), or reconfigure with "
                              "BLAS_LIBRARY=/path/to/libopenblas.so.0",
                              path, why ? why : "unknown error");
        }
    }
    blas->handle = handle;

    /* POSIX allows converting dlsym's object pointer to a function pointer; the
     * detour through memcpy keeps ISO C's pedantic mode quiet about it. */
    void *sym = dlsym(handle, "cblas_sgemm");
    if (!sym) {
        dlclose(handle);
        blas->handle = NULL;
        return host->fail(host->ctx, GAN_ERR_NOT_FOUND,
                          "the BLAS library %s has no cblas_sgemm: it is not a CBLAS; "
                          "reconfigure with BLAS_LIBRARY pointing at OpenBLAS "
                          "(e.g. /lib/x86_64-linux-gnu/libopenblas.so.0)", path);
    }
    memcpy(&blas->sgemm, &sym, sizeof sym);
    note_resolved_path(blas, sym);

    /* OpenBLAS's own entry points; another BLAS lacks them and still works. */
    const char *(*corename)(void) = NULL;
    const char *(*config)(void) = NULL;
    if ((sym = dlsym(handle, "openblas_get_corename")))
        memcpy(&corename, &sym, sizeof sym);
    if ((sym = dlsym(handle, "openblas_get_config")))
        memcpy(&config, &sym, sizeof sym);
    if ((sym = dlsym(handle, "openblas_set_num_threads")))
        memcpy(&blas->set_num_threads, &sym, sizeof sym);

    set_field(blas->kernel, sizeof blas->kernel, corename ? corename() : "unknown");
    /* OpenBLAS stores zeros into C for beta = 0 before it adds the product (its small
     * kernels have beta-0 variants that never load C); check_gemm's NaN-in-C cases
     * hold it to that at shapes that reach both. Another CBLAS need not. */
    blas->beta_zero_unread = corename != NULL;
    set_field(blas->config, sizeof blas->config, config ? config() : "");
    if (!corename) {
        set_field(blas->chosen_by, sizeof blas->chosen_by, "not OpenBLAS: its own choice");
        set_field(blas->waits, sizeof blas->waits, "");
    }
    else if (config && !strstr(blas->config, "DYNAMIC_ARCH"))
        /* a single-target build ignores OPENBLAS_CORETYPE */
        set_field(blas->chosen_by, sizeof blas->chosen_by, "fixed when OpenBLAS was built");

    if (threads <= 0) {
        int usable = cpu_usable_cpus();
        threads = usable > 4096 ? 4096 : usable;
    }
    /* With a kernel whose product does not depend on how C is cut, OpenBLAS runs every
     * call on the calling thread alone and the backend splits the products across its
     * own threads (sgemm_split.c); with another, OpenBLAS splits them on its threads.
     * Its thread count is process-wide: the last instance created sets it. */
    if (blas->set_num_threads) {
        /* Only a pthreads build (openblas_get_parallel() = 1) is safe to call from
         * several threads at once and stays on one thread when told; a sequential one
         * may not be, an OpenMP one takes the calling thread's OpenMP count. */
        int (*parallel)(void) = NULL;
        if ((sym = dlsym(handle, "openblas_get_parallel")))
            memcpy(&parallel, &sym, sizeof sym);
        blas->one_thread_calls = parallel && parallel() == 1 && cuts_exactly(blas->kernel);
        blas->set_num_threads(blas->one_thread_calls ? 1 : threads);
    }
    be->blas_threads = threads; /* all of them, until backend.blas_threads says fewer */
    be->threads = threads;
    return GAN_OK;
}

void cpu_blas_close(struct cpu_blas *blas)
{
    if (blas->handle)
        dlclose(blas->handle);
    blas->handle = NULL;
    blas->sgemm = NULL;
    blas->set_num_threads = NULL;
    blas->one_thread_calls = 0;
    blas->path = NULL;
}
