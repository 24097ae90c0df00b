/* SPDX-License-Identifier: MIT */
/* sgemm.c — GEMM throughput of the CPU backend through its own cpu_gemm entry, per
 * OpenBLAS kernel and thread count, with the SSE3 "Prescott" kernel as reference. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../backends/cpu/cpu_backend.h"
#include "bench_clock.h"
#include "bench_host.h"
#include "../backends/cpu/convert.h"
#include "../backends/cpu/gemm16.h"

/* Every (kernel, threads) pair runs in its own child process: OpenBLAS fixes its
 * kernel when it is first loaded, so a fresh process is the only way to switch. */

#define MAX_LIST 8

struct options {
    const char *kernels[MAX_LIST];  /* "auto" = the backend's own choice */
    int n_kernels;
    int threads[MAX_LIST];
    int n_threads;
    int reps;
    /* set by name (named_options below) */
    int dtype;                      /* enum gan_dtype of A, B and C */
    int gemm;                       /* enum cpu_gemm_path, as the setting backend.gemm names it */
    int gemm16;                     /* enum cpu_gemm16_path, as backend.gemm16 names it */
    int vector;                     /* enum cpu_isa to hold the backend to, or -1: the best */
};

/* The shapes timed (m x n x k, then whether A and B are transposed): by default the
 * paper toy's layer and a large square. */
#define MAX_SHAPES 8
static int shapes[MAX_SHAPES][5] = { { 256, 512, 512, 0, 0 }, { 1024, 1024, 1024, 0, 0 } };
static int n_shapes = 2;
/* A timed run is at least this many multiply-adds: a small product is called over and
 * over within it, so that the clock's resolution and the call of the clock stay small
 * beside the run. */
#define RUN_MIN_MACS 4000000.0

struct result {
    char kernel[64];
    double gflops[MAX_SHAPES];      /* median */
    double lo[MAX_SHAPES], hi[MAX_SHAPES];
    int ok;
    char error[512];
};

/* ---------------------------------------------------------------- measuring */

static gan_buffer *filled(gan_backend *be, size_t n, enum gan_dtype dt)
{
    gan_buffer *b = NULL;
    if (cpu_buffer_alloc(be, n * gan_dtype_size(dt), &b) != GAN_OK)
        return NULL;
    for (size_t i = 0; i < n; i++)
        cpu_store(b->data, dt, (int64_t)i, (float)((i * 7919u) % 1000u) * 1e-3f - 0.5f);
    return b;
}

/* Shape s as --shapes takes it: MxNxK, then its transposes unless neither is. */
static void shape_name(char *buf, size_t size, int s)
{
    static const char *const t[2][2] = { { "", "NT" }, { "TN", "TT" } };
    snprintf(buf, size, "%dx%dx%d%s", shapes[s][0], shapes[s][1], shapes[s][2],
             t[shapes[s][3]][shapes[s][4]]);
}

/* In the child: loads the BLAS with `kernel` and times every shape. */
static void measure(const char *kernel, int threads, const struct options *o, struct result *r)
{
    memset(r, 0, sizeof *r);
    if (strcmp(kernel, "auto") == 0)
        unsetenv("OPENBLAS_CORETYPE");
    else
        setenv("OPENBLAS_CORETYPE", kernel, 1);

    struct gan_backend be;
    memset(&be, 0, sizeof be);
    be.host = &bench_host;
    if (cpu_blas_open(&be, threads) != GAN_OK) {
        snprintf(r->error, sizeof r->error, "%s", bench_last_error());
        return;
    }
    snprintf(r->kernel, sizeof r->kernel, "%s", be.blas.kernel);
    be.gemm_path = (enum cpu_gemm_path)o->gemm;
    be.gemm16_path = o->gemm16;
    /* As ganctl runs it: the CPU's widest vector level for the widening and rounding,
     * and the instance's worker threads, which the backend's own GEMM runs on. */
    be.isa = cpu_isa_best();
    if (o->vector >= 0)
        cpu_isa_select(&be, (enum cpu_isa)o->vector);
    if (cpu_onednn_open(&be) != GAN_OK || cpu_pool_open(&be) != GAN_OK) {
        snprintf(r->error, sizeof r->error, "%s", bench_last_error());
        return;
    }

    for (int s = 0; s < n_shapes; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        const int ta = shapes[s][3], tb = shapes[s][4];
        const enum gan_dtype dt = (enum gan_dtype)o->dtype;
        gan_buffer *a = filled(&be, (size_t)m * k, dt);
        gan_buffer *b = filled(&be, (size_t)k * n, dt);
        gan_buffer *c = filled(&be, (size_t)m * n, dt);
        if (!a || !b || !c) {
            snprintf(r->error, sizeof r->error, "out of memory for %d×%d×%d", m, n, k);
            return;
        }
        struct gan_gemm g = {
            .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = 1.0f, .beta = 0.0f,
            .a = { a, 0, dt }, .b = { b, 0, dt }, .c = { c, 0, dt },
            .lda = ta ? m : k, .ldb = tb ? k : n, .ldc = n, .batch = 1,
        };
        double t[64];
        int reps = o->reps;
        const double macs = (double)m * n * k;
        const int calls = macs >= RUN_MIN_MACS ? 1 : (int)(RUN_MIN_MACS / macs) + 1;
        for (int i = -1; i < reps; i++) { /* one unmeasured run warms caches and threads */
            double t0 = bench_seconds();
            for (int call = 0; call < calls; call++)
                if (cpu_gemm(&be, &g) != GAN_OK) {
                    snprintf(r->error, sizeof r->error, "%s", bench_last_error());
                    return;
                }
            if (i >= 0)
                t[i] = bench_seconds() - t0;
        }
        bench_sort_seconds(t, (size_t)reps);
        double flop = 2.0 * macs * calls;
        r->gflops[s] = flop / t[reps / 2] * 1e-9;
        r->lo[s] = flop / t[reps - 1] * 1e-9;
        r->hi[s] = flop / t[0] * 1e-9;
        cpu_buffer_free(&be, a);
        cpu_buffer_free(&be, b);
        cpu_buffer_free(&be, c);
    }
    cpu_pool_close(&be);
    cpu_onednn_close(&be);
    cpu_blas_close(&be.blas);
    free(be.scratch);
    r->ok = 1;
}

/* Runs measure() in a child process and brings its result back through a pipe. */
static int run_child(const char *kernel, int threads, const struct options *o, struct result *r)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        struct result mine;
        measure(kernel, threads, o, &mine);
        ssize_t w = write(fd[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t n = read(fd[0], (char *)r + got, sizeof *r - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return got == sizeof *r ? 0 : -1;
}

/* ---------------------------------------------------------------- main */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sgemm [--kernels LIST] [--threads LIST] [--reps N] [--dtype F32|F16|BF16]\n"
            "             [--gemm auto|openblas|onednn] [--gemm16 auto|packed|staged]\n"
            "             [--vector portable|f16c|avx512] [--shapes MxNxK,...]\n"
            "  GFLOP/s of the CPU backend's GEMM for 256x512x512 and 1024x1024x1024\n"
            "  (m x n x k), median of N timed runs (default 9) after one warm-up; a run of\n"
            "  a product under 4 million multiply-adds calls it as often as makes 4 million.\n"
            "  --kernels  comma-separated OpenBLAS core names; \"auto\" is the backend's own\n"
            "             choice (default: auto,Prescott; ratios are against Prescott)\n"
            "  --threads  comma-separated thread counts (default: 1,2)\n"
            "  --gemm     the library, as backend.gemm names it (default: openblas)\n"
            "  --gemm16   where 16-bit products oneDNN does not take go, as backend.gemm16\n"
            "             names it (default: auto)\n"
            "  --vector   the backend's vector level, as backend.vector names it (default:\n"
            "             the widest this CPU has)\n"
            "  --shapes   up to 8 comma-separated shapes to time instead, each MxNxK with\n"
            "             NN (the default), NT, TN or TT after it: A and B transposed or not\n");
}

static int split(char *list, const char **out, int max)
{
    int n = 0;
    for (char *tok = strtok(list, ","); tok && n < max; tok = strtok(NULL, ","))
        out[n++] = tok;
    return n;
}

/* The options that name one of a few values, each value's name and what it sets. */
static const struct named_option {
    const char *option;
    size_t field; /* an int of struct options */
    struct {
        const char *name;
        int value;
    } values[4];
} named_options[] = {
    { "--dtype", offsetof(struct options, dtype),
      { { "F32", GAN_F32 }, { "F16", GAN_F16 }, { "BF16", GAN_BF16 } } },
    { "--gemm", offsetof(struct options, gemm),
      { { "openblas", CPU_GEMM_OPENBLAS }, { "onednn", CPU_GEMM_ONEDNN },
        { "auto", CPU_GEMM_AUTO } } },
    { "--gemm16", offsetof(struct options, gemm16),
      { { "auto", CPU_GEMM16_AUTO }, { "packed", CPU_GEMM16_PACKED },
        { "staged", CPU_GEMM16_STAGED } } },
    { "--vector", offsetof(struct options, vector),
      { { "portable", CPU_ISA_PORTABLE }, { "f16c", CPU_ISA_F16C },
        { "avx512", CPU_ISA_AVX512 } } },
};

/* The name `option` gives `value`, for the header. */
static const char *value_name(const char *option, int value)
{
    for (size_t i = 0; i < sizeof named_options / sizeof named_options[0]; i++)
        for (int j = 0; j < 4 && named_options[i].values[j].name; j++)
            if (strcmp(option, named_options[i].option) == 0 &&
                named_options[i].values[j].value == value)
                return named_options[i].values[j].name;
    return "?";
}

/* Sets what `option` = `value` names: 1 when it is a named option and was set, 0 when
 * it is not one of them, -1 (after saying which values it takes) for another value. */
static int set_named(struct options *o, const char *option, const char *value)
{
    for (size_t i = 0; i < sizeof named_options / sizeof named_options[0]; i++) {
        const struct named_option *no = &named_options[i];
        if (strcmp(option, no->option) != 0)
            continue;
        for (int j = 0; j < 4 && no->values[j].name; j++)
            if (strcmp(value, no->values[j].name) == 0) {
                memcpy((char *)o + no->field, &no->values[j].value, sizeof(int));
                return 1;
            }
        fprintf(stderr, "sgemm: %s takes", option);
        for (int j = 0; j < 4 && no->values[j].name; j++)
            fprintf(stderr, "%s %s", j ? "," : "", no->values[j].name);
        fprintf(stderr, "; not \"%s\"\n", value);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct options o = { .reps = 9, .dtype = GAN_F32, .gemm = CPU_GEMM_OPENBLAS,
                         .gemm16 = CPU_GEMM16_AUTO, .vector = -1 };
    char kernels_arg[256] = "auto,Prescott", threads_arg[64] = "1,2";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int named = v ? set_named(&o, argv[i], v) : 0;
        if (named < 0)
            return 2;
        if (named > 0) {
            i++;
        } else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--kernels") == 0 && v) {
            snprintf(kernels_arg, sizeof kernels_arg, "%s", v);
            i++;
        } else if (strcmp(argv[i], "--threads") == 0 && v) {
            snprintf(threads_arg, sizeof threads_arg, "%s", v);
            i++;
        } else if (strcmp(argv[i], "--reps") == 0 && v) {
            o.reps = atoi(v);
            i++;
        } else if (strcmp(argv[i], "--shapes") == 0 && v) {
            char list[256];
            snprintf(list, sizeof list, "%s", v);
            n_shapes = 0;
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
                int m, n, k, used = 0;
                const char *t = "";
                if (n_shapes < MAX_SHAPES && sscanf(tok, "%dx%dx%d%n", &m, &n, &k, &used) == 3)
                    t = tok + used;
                if (n_shapes == MAX_SHAPES || !used || m < 1 || n < 1 || k < 1 ||
                    (*t && (strlen(t) != 2 || (t[0] != 'N' && t[0] != 'T') ||
                            (t[1] != 'N' && t[1] != 'T')))) {
                    fprintf(stderr, "sgemm: --shapes takes up to %d shapes MxNxK, each "
                            "positive, with NN, NT, TN or TT after it or nothing; \"%s\" "
                            "is not\n", MAX_SHAPES, tok);
                    return 2;
                }
                shapes[n_shapes][0] = m;
                shapes[n_shapes][1] = n;
                shapes[n_shapes][2] = k;
                shapes[n_shapes][3] = *t == 'T';
                shapes[n_shapes][4] = *t && t[1] == 'T';
                n_shapes++;
            }
            if (n_shapes == 0) {
                usage(stderr);
                return 2;
            }
            i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (o.reps < 1 || o.reps > 64) {
        fprintf(stderr, "sgemm: --reps must be 1 … 64\n");
        return 2;
    }
    o.n_kernels = split(kernels_arg, o.kernels, MAX_LIST);
    const char *tlist[MAX_LIST];
    o.n_threads = split(threads_arg, tlist, MAX_LIST);
    for (int i = 0; i < o.n_threads; i++)
        o.threads[i] = atoi(tlist[i]);

    static struct result res[MAX_LIST][MAX_LIST];
    printf("# GEMM through cpu_gemm, %s, beta = 0, median of %d runs; BLAS %s; gemm = %s; "
           "gemm16 = %s\n", gan_dtype_name((enum gan_dtype)o.dtype), o.reps, GAN_BLAS_LIBRARY,
           value_name("--gemm", o.gemm), value_name("--gemm16", o.gemm16));
    printf("%-16s %7s %-12s %10s %21s\n", "m x n x k", "threads", "kernel", "GFLOP/s",
           "(slowest .. fastest)");
    int failed = 0;
    for (int ki = 0; ki < o.n_kernels; ki++)
        for (int ti = 0; ti < o.n_threads; ti++) {
            struct result *r = &res[ki][ti];
            if (run_child(o.kernels[ki], o.threads[ti], &o, r) != 0 || !r->ok) {
                fprintf(stderr, "sgemm: kernel %s, %d threads: %s\n", o.kernels[ki],
                        o.threads[ti], r->error[0] ? r->error : "the measuring process failed");
                r->ok = 0;
                failed = 1;
                continue;
            }
            for (int s = 0; s < n_shapes; s++) {
                char shape[32], kname[64];
                shape_name(shape, sizeof shape, s);
                snprintf(kname, sizeof kname, "%.60s%s", r->kernel,
                         strcmp(o.kernels[ki], "auto") == 0 ? "*" : "");
                printf("%-16s %7d %-12s %10.1f %10.1f .. %6.1f\n", shape, o.threads[ti], kname,
                       r->gflops[s], r->lo[s], r->hi[s]);
            }
        }
    printf("# * = chosen by the backend from the CPU's features\n");

    /* Ratios against the reference kernel, when it was measured. */
    int ref = -1;
    for (int ki = 0; ki < o.n_kernels; ki++)
        if (strcmp(o.kernels[ki], "Prescott") == 0)
            ref = ki;
    if (ref >= 0) {
        printf("\n# speed-up over the Prescott (SSE3) kernel\n");
        for (int ki = 0; ki < o.n_kernels; ki++) {
            if (ki == ref)
                continue;
            for (int ti = 0; ti < o.n_threads; ti++)
                for (int s = 0; s < n_shapes; s++) {
                    const struct result *r = &res[ki][ti], *p = &res[ref][ti];
                    if (!r->ok || !p->ok || p->gflops[s] <= 0)
                        continue;
                    char shape[32];
                    shape_name(shape, sizeof shape, s);
                    printf("%s, %d thread%s: %s %.2fx\n", shape, o.threads[ti],
                           o.threads[ti] == 1 ? "" : "s", r->kernel, r->gflops[s] / p->gflops[s]);
                }
        }
    }
    return failed;
}
