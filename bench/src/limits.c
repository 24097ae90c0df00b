/* SPDX-License-Identifier: MIT */
/* limits.c — this host's limits for bench/toy.sh and bench/images.sh: the CPU's model
 * and the units that matter (AVX2, F16C, AVX512F, AVX512-BF16, AMX-BF16), OpenBLAS's
 * sgemm rate at given shapes, oneDNN's BF16 matmul rate at the same shapes where the
 * CPU has a BF16 dot product, and oneDNN's FP32 (and there BF16) convolution rate at
 * given shapes in each direction. The libraries are the CPU backend's own, loaded as
 * the backend loads them (backends/cpu/blas.c, onednn.c): the same OpenBLAS kernel
 * choice, thread count and OpenMP wait policy as ganctl.
 *
 * What is timed is the library call alone, on operands in the layout it likes best:
 * cblas_sgemm on row-major operands; oneDNN's primitives on memory in the layouts
 * oneDNN chose ("any"), so no reorder is timed; nothing of the backend's own around
 * them; and the fastest of several samples. That makes each figure a limit: a program
 * that calls these libraries for these shapes computes them no faster on this host.
 *
 * Output, one fact a line, the first word naming it (bench/toy.sh and bench/images.sh
 * read it; a rate of "-" is followed by why it is missing):
 *   cpu MODEL NAME…
 *   units AVX2 F16C AVX512F AVX512-BF16 no-AMX-BF16
 *   bf16_dot yes|no
 *   blas KERNEL THREADS LIBRARY
 *   onednn VERSION | onednn - WHY
 *   gemm F32|BF16 MxNxK[NN|NT|TN|TT] GFLOP/S IMPL
 *   conv F32|BF16 fwd|bwd_data|bwd_weights N,C,H,W,O,K,S,P GFLOP/S IMPL THREADS
 *
 * A convolution that the backend's gemm = "auto" does not send to oneDNN (the input
 * gradient of fewer than 4 channels, onednn_conv.c) is also timed as the sgemm of its
 * im2col route, and the faster of the two counts (IMPL then "openblas:im2col-sgemm"):
 * the limit is the best of the paths ganctl may take. The sgemm alone, without its
 * gather and scatter, is still a bound on that route. */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/cpu/cpu_backend.h"
#include "bench_clock.h"
#include "bench_host.h"
#if GAN_HAVE_ONEDNN
#include "../backends/cpu/onednn.h"
#endif

#define MAX_SPECS 32
#define MAX_SAMPLES 31

struct gemm_spec {
    int m, n, k, ta, tb;
    char text[64];
};

struct conv_spec {
    int n, c, h, w, o, k, s, p;    /* square images, kernels, strides and paddings */
    int ho, wo;
    char text[96];
};

struct options {
    int threads;
    const char *kernel;            /* NULL: the backend's own choice */
    int samples;
    double min_s;                  /* each sample repeats the call for at least this long */
    int bf16;                      /* 0: not even where the CPU has a BF16 dot product */
    struct gemm_spec gemm[MAX_SPECS];
    int n_gemm;
    struct conv_spec conv[MAX_SPECS];
    int n_conv;
};

/* ---------------------------------------------------------------- the CPU */

/* The model name and the flags the kernel reports (it clears the flags of units the
 * operating system does not enable); with `as_avx2`, the units above AVX2 are reported
 * missing, as the run does not use them (--as-avx2). */
static void print_cpu(int as_avx2)
{
    char model[256] = "unknown", flags[8192] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[8192];
        int have_model = 0, have_flags = 0;
        while ((!have_model || !have_flags) && fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (!colon)
                continue;
            char *value = colon + 1;
            while (*value == ' ' || *value == '\t')
                value++;
            value[strcspn(value, "\n")] = '\0';
            if (!have_model && strncmp(line, "model name", 10) == 0) {
                snprintf(model, sizeof model, "%s", value);
                have_model = 1;
            } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
                snprintf(flags, sizeof flags, " %s ", value);
                have_flags = 1;
            }
        }
        fclose(f);
    }
    static const struct { const char *flag, *unit; } units[] = {
        { "avx2", "AVX2" }, { "f16c", "F16C" }, { "avx512f", "AVX512F" },
        { "avx512_bf16", "AVX512-BF16" }, { "amx_bf16", "AMX-BF16" },
    };
    printf("cpu %s%s\nunits", model, as_avx2 ? " (acting as an AVX2-only CPU)" : "");
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        char word[32];
        snprintf(word, sizeof word, " %s ", units[i].flag);
        int above_avx2 = i >= 2;
        printf(" %s%s", strstr(flags, word) && !(as_avx2 && above_avx2) ? "" : "no-",
               units[i].unit);
    }
    printf("\nbf16_dot %s\n", cpu_has_bf16_dot() ? "yes" : "no");
}

/* ---------------------------------------------------------------- timing */

/* The rate in GFLOP/s of `call`: the fastest of o->samples samples, each repeating it
 * for at least o->min_s seconds, after one call that is not timed (it warms the caches
 * and wakes the threads). The fastest, not the median: on cores shared with other work
 * a sample that another process interrupted is slower than the library, never faster,
 * so the fastest is the closest to what the library does when it has the cores, and
 * it bounds what a program that calls it reaches over a longer run. Returns a negative
 * number when a call fails. */
static double rate(const struct options *o, double flop, int (*call)(void *), void *arg)
{
    if (call(arg) != 0)
        return -1.0;
    double best = 0.0;
    for (int s = 0; s < o->samples; s++) {
        long calls = 0;
        double t0 = bench_seconds(), t;
        do {
            if (call(arg) != 0)
                return -1.0;
            calls++;
            t = bench_seconds() - t0;
        } while (t < o->min_s);
        double r = flop * (double)calls / t * 1e-9;
        if (r > best)
            best = r;
    }
    return best;
}

/* Values in [−0.5, 0.5), none of them subnormal, for `bytes` of FP32 (or, bf16 set,
 * BF16: the upper halves of the same FP32 values). */
static void *filled(size_t bytes, int bf16)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    unsigned char *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
        return NULL;
    uint32_t x = 12345u;
    for (size_t i = 0; (bf16 ? i + 2 : i + 4) <= rounded; i += bf16 ? 2 : 4) {
        x = x * 1664525u + 1013904223u;
        float v = (float)(x >> 8) * (1.0f / 16777216.0f) - 0.5f;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        if (bf16) {
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy(p + i, &h, sizeof h);
        } else {
            memcpy(p + i, &bits, sizeof bits);
        }
    }
    return p;
}

/* ---------------------------------------------------------------- sgemm */

struct sgemm_call {
    const struct cpu_blas *blas;
    const struct gemm_spec *g;
    float *a, *b, *c;
};

static int sgemm_once(void *arg)
{
    const struct sgemm_call *s = arg;
    const struct gemm_spec *g = s->g;
    /* row-major; A is m×k (k×m when transposed), B is k×n (n×k when transposed) */
    s->blas->sgemm(101, g->ta ? 112 : 111, g->tb ? 112 : 111, g->m, g->n, g->k, 1.0f, s->a,
                   g->ta ? g->m : g->k, s->b, g->tb ? g->k : g->n, 0.0f, s->c, g->n);
    return 0;
}

/* sgemm's rate at g, or −1 when its operands do not fit in memory. */
static double sgemm_rate(const struct options *o, const struct cpu_blas *blas,
                         const struct gemm_spec *g)
{
    struct sgemm_call s = {
        .blas = blas, .g = g,
        .a = filled((size_t)g->m * g->k * sizeof(float), 0),
        .b = filled((size_t)g->k * g->n * sizeof(float), 0),
        .c = filled((size_t)g->m * g->n * sizeof(float), 0),
    };
    double r = s.a && s.b && s.c ? rate(o, 2.0 * g->m * g->n * g->k, sgemm_once, &s) : -1.0;
    free(s.a);
    free(s.b);
    free(s.c);
    return r;
}

static void measure_sgemm(const struct options *o, const struct cpu_blas *blas,
                          const struct gemm_spec *g)
{
    double r = sgemm_rate(o, blas, g);
    if (r < 0)
        printf("gemm F32 %s - out of memory\n", g->text);
    else
        printf("gemm F32 %s %.1f openblas:%s\n", g->text, r, blas->kernel);
}

/* ---------------------------------------------------------------- oneDNN */

/* The three directions of a convolution, as the output names them. */
enum direction { FWD, BWD_DATA, BWD_WEIGHTS };
static const char *const direction_names[] = { "fwd", "bwd_data", "bwd_weights" };

#if GAN_HAVE_ONEDNN

/* One primitive with its memories, each in the layout its descriptor asked for. */
struct dnnl_call {
    const struct cpu_dnnl_api *api;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    int nargs;
    dnnl_exec_arg_t args[3];
    void *data[3];
};

static int dnnl_once(void *arg)
{
    const struct dnnl_call *d = arg;
    if (d->api->dnnl_primitive_execute(d->prim, d->stream, d->nargs, d->args) != dnnl_success)
        return -1;
    return d->api->dnnl_stream_wait(d->stream) == dnnl_success ? 0 : -1;
}

static void dnnl_call_free(struct dnnl_call *d)
{
    for (int i = 0; i < d->nargs; i++) {
        if (d->args[i].memory)
            d->api->dnnl_memory_destroy(d->args[i].memory);
        free(d->data[i]);
    }
    if (d->prim)
        d->api->dnnl_primitive_destroy(d->prim);
}

/* Makes d from pd (which it destroys): the primitive, and for each argument memory
 * in the layout pd reports for `queries[i]`. The implementation's name goes to impl. */
static int dnnl_call_make(struct cpu_onednn *on, struct dnnl_call *d, dnnl_primitive_desc_t pd,
                          int nargs, const int *which, const dnnl_query_t *queries,
                          char *impl, size_t impl_size)
{
    const struct cpu_dnnl_api *api = &on->api;
    memset(d, 0, sizeof *d);
    d->api = api;
    d->stream = on->stream;
    const char *name = NULL;
    snprintf(impl, impl_size, "%s",
             api->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) ==
                     dnnl_success && name ? name : "unknown");
    int bad = 0;
    for (int i = 0; i < nargs && !bad; i++) {
        const dnnl_memory_desc_t *md = api->dnnl_primitive_desc_query_md(pd, queries[i], 0);
        d->args[i].arg = which[i];
        d->nargs = i + 1;
        bad = !md || !(d->data[i] = filled(api->dnnl_memory_desc_get_size(md),
                                           md->data_type == dnnl_bf16)) ||
              api->dnnl_memory_create(&d->args[i].memory, md, on->engine, d->data[i]) !=
                  dnnl_success;
    }
    bad = bad || api->dnnl_primitive_create(&d->prim, pd) != dnnl_success;
    api->dnnl_primitive_desc_destroy(pd);
    if (bad) {
        dnnl_call_free(d);
        return -1;
    }
    return 0;
}

/* The rate of g's BF16 matmul made for (and run on) `threads` OpenMP threads, or -1
 * with *why set when oneDNN made none. */
static double bf16_matmul_rate(const struct options *o, struct cpu_onednn *on,
                               const struct gemm_spec *g, int threads, char *impl,
                               size_t impl_size, const char **why)
{
    const struct cpu_dnnl_api *api = &on->api;
    api->omp_set_num_threads(threads);
    const dnnl_dims_t da = { g->m, g->k }, db = { g->k, g->n }, dc = { g->m, g->n };
    dnnl_memory_desc_t a, b, c;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    /* a transposed operand is stored the other way round: "ba" of its logical dims */
    if (api->dnnl_memory_desc_init_by_tag(&a, 2, da, dnnl_bf16, g->ta ? dnnl_ba : dnnl_ab) !=
            dnnl_success ||
        api->dnnl_memory_desc_init_by_tag(&b, 2, db, dnnl_bf16, g->tb ? dnnl_ba : dnnl_ab) !=
            dnnl_success ||
        api->dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_bf16, dnnl_ab) != dnnl_success ||
        api->dnnl_matmul_desc_init(&md, &a, &b, NULL, &c) != dnnl_success ||
        api->dnnl_primitive_desc_create(&pd, &md, NULL, on->engine, NULL) != dnnl_success) {
        *why = "oneDNN made no BF16 matmul for it";
        return -1;
    }
    static const int which[] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST };
    static const dnnl_query_t queries[] = { dnnl_query_src_md, dnnl_query_weights_md,
                                            dnnl_query_dst_md };
    struct dnnl_call d;
    if (dnnl_call_make(on, &d, pd, 3, which, queries, impl, impl_size) != 0) {
        *why = "oneDNN could not make the matmul";
        return -1;
    }
    double r = rate(o, 2.0 * g->m * g->n * g->k, dnnl_once, &d);
    dnnl_call_free(&d);
    if (r < 0)
        *why = "the matmul failed";
    return r;
}

/* The BF16 matmul's rate on --threads threads and, with more than one, on one: the
 * backend makes a small product for one thread (cpu_onednn_team), where waking the
 * others costs more than they take over, so the limit is the faster. The line ends
 * with the threads that gave it. */
static void measure_bf16_matmul(const struct options *o, struct cpu_onednn *on,
                                const struct gemm_spec *g)
{
    char impl[64], impl1[64];
    const char *why = NULL;
    double r = bf16_matmul_rate(o, on, g, o->threads, impl, sizeof impl, &why);
    int used = o->threads;
    if (r >= 0 && o->threads > 1) {
        double r1 = bf16_matmul_rate(o, on, g, 1, impl1, sizeof impl1, &why);
        if (r1 > r) {
            r = r1;
            used = 1;
            memcpy(impl, impl1, sizeof impl);
        }
    }
    if (r < 0)
        printf("gemm BF16 %s - %s\n", g->text, why);
    else
        printf("gemm BF16 %s %.1f onednn:%s %d\n", g->text, r, impl, used);
}

/* The descriptor of one direction of c, every tensor in "any" layout; the backward
 * ones with the forward one as their hint, as oneDNN requires. The filter gradient is
 * FP32 also for BF16 (a sum over the whole batch; the backend asks for the same). */
static dnnl_primitive_desc_t conv_pd(struct cpu_onednn *on, const struct conv_spec *c,
                                     enum direction dir, dnnl_data_type_t dt)
{
    const struct cpu_dnnl_api *api = &on->api;
    const dnnl_dims_t dx = { c->n, c->c, c->h, c->w }, dw = { c->o, c->c, c->k, c->k },
                      dy = { c->n, c->o, c->ho, c->wo };
    const dnnl_dims_t strides = { c->s, c->s }, dilates = { 0, 0 }, pad_l = { c->p, c->p },
                      pad_r = { (c->ho - 1) * c->s + c->k - c->h - c->p,
                                (c->wo - 1) * c->s + c->k - c->w - c->p };
    const dnnl_data_type_t wt = dir == BWD_WEIGHTS ? dnnl_f32 : dt;
    dnnl_memory_desc_t x, w, y, wh;
    dnnl_convolution_desc_t desc;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    if (api->dnnl_memory_desc_init_by_tag(&x, 4, dx, dt, dnnl_format_tag_any) != dnnl_success ||
        api->dnnl_memory_desc_init_by_tag(&w, 4, dw, wt, dnnl_format_tag_any) != dnnl_success ||
        api->dnnl_memory_desc_init_by_tag(&wh, 4, dw, dt, dnnl_format_tag_any) != dnnl_success ||
        api->dnnl_memory_desc_init_by_tag(&y, 4, dy, dt, dnnl_format_tag_any) != dnnl_success ||
        api->dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_training,
                                                        dnnl_convolution_direct, &x, &wh, NULL,
                                                        &y, strides, dilates, pad_l, pad_r) !=
            dnnl_success ||
        api->dnnl_primitive_desc_create(&hint, &desc, NULL, on->engine, NULL) != dnnl_success)
        return NULL;
    if (dir == FWD)
        return hint;
    int bad = dir == BWD_DATA
        ? api->dnnl_dilated_convolution_backward_data_desc_init(
              &desc, dnnl_convolution_direct, &x, &w, &y, strides, dilates, pad_l, pad_r) !=
              dnnl_success
        : api->dnnl_dilated_convolution_backward_weights_desc_init(
              &desc, dnnl_convolution_direct, &x, &w, NULL, &y, strides, dilates, pad_l,
              pad_r) != dnnl_success;
    if (bad || api->dnnl_primitive_desc_create(&pd, &desc, NULL, on->engine, hint) !=
                   dnnl_success)
        pd = NULL;
    api->dnnl_primitive_desc_destroy(hint);
    return pd;
}

/* The rate of one direction of c on `threads` OpenMP threads (the team size in force
 * when a primitive is made is the one it divides its work for), or −1. */
static double conv_rate(const struct options *o, struct cpu_onednn *on,
                        const struct conv_spec *c, enum direction dir, dnnl_data_type_t dt,
                        int threads, char *impl, size_t impl_size)
{
    static const int which[3][3] = {
        [FWD] = { DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST },
        [BWD_DATA] = { DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC },
        [BWD_WEIGHTS] = { DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS },
    };
    static const dnnl_query_t queries[3][3] = {
        [FWD] = { dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md },
        [BWD_DATA] = { dnnl_query_diff_dst_md, dnnl_query_weights_md, dnnl_query_diff_src_md },
        [BWD_WEIGHTS] = { dnnl_query_src_md, dnnl_query_diff_dst_md,
                          dnnl_query_diff_weights_md },
    };
    on->api.omp_set_num_threads(threads);
    dnnl_primitive_desc_t pd = conv_pd(on, c, dir, dt);
    struct dnnl_call d;
    if (!pd || dnnl_call_make(on, &d, pd, 3, which[dir], queries[dir], impl, impl_size) != 0)
        return -1.0;
    /* 2 FLOPs for each output position, kernel tap, input and output channel: the same
     * count in every direction */
    double flop = 2.0 * c->n * c->o * c->ho * c->wo * c->c * c->k * c->k;
    double r = rate(o, flop, dnnl_once, &d);
    dnnl_call_free(&d);
    return r;
}

/* The rate of the sgemm of the im2col route (conv2d.c) where gemm = "auto" sends this
 * direction of c there instead of to oneDNN, counted at the convolution's FLOPs; −1
 * where it does not. The columns [C·K·K, N·Ho·Wo] = wᵀ · dy of an input gradient. */
static double route_rate(const struct options *o, const struct cpu_blas *blas,
                         const struct conv_spec *c, enum direction dir)
{
    static const enum cpu_conv_kind kinds[3] = {
        [FWD] = CPU_CONV_FORWARD, [BWD_DATA] = CPU_CONV_BACKWARD_DATA,
        [BWD_WEIGHTS] = CPU_CONV_BACKWARD_FILTER,
    };
    const struct gan_conv2d desc = {
        .n = c->n, .c_in = c->c, .h_in = c->h, .w_in = c->w, .c_out = c->o, .kh = c->k,
        .kw = c->k, .stride_h = c->s, .stride_w = c->s, .pad_h = c->p, .pad_w = c->p,
        .dilation_h = 1, .dilation_w = 1, .h_out = c->ho, .w_out = c->wo,
    };
    if (cpu_onednn_conv_auto_takes(kinds[dir], &desc))
        return -1.0;
    const struct gemm_spec g = { .m = c->c * c->k * c->k, .n = c->n * c->ho * c->wo,
                                 .k = c->o, .ta = 1, .tb = 0 };
    return sgemm_rate(o, blas, &g);
}

/* A filter gradient sums over the batch; oneDNN 2.6 splits that sum between threads and
 * meets at barriers (bench/README.md), so on several threads it is also timed on one and
 * the faster counts: the limit is the best the library does. */
static void measure_conv(const struct options *o, struct cpu_onednn *on,
                         const struct cpu_blas *blas, double route, const struct conv_spec *c,
                         enum direction dir, dnnl_data_type_t dt)
{
    const char *type = dt == dnnl_bf16 ? "BF16" : "F32";
    char impl[64], impl1[64];
    double r = conv_rate(o, on, c, dir, dt, o->threads, impl, sizeof impl);
    int used = o->threads;
    if (dir == BWD_WEIGHTS && o->threads > 1) {
        double r1 = conv_rate(o, on, c, dir, dt, 1, impl1, sizeof impl1);
        if (r1 > r) {
            r = r1;
            used = 1;
            memcpy(impl, impl1, sizeof impl);
        }
    }
    const char *lib = "onednn";
    if (route > r) {
        r = route;
        used = o->threads;
        lib = "openblas";
        snprintf(impl, sizeof impl, "im2col-sgemm:%.48s", blas->kernel);
    }
    if (r < 0)
        printf("conv %s %s %s - oneDNN made no primitive for it\n", type,
               direction_names[dir], c->text);
    else
        printf("conv %s %s %s %.1f %s:%s %d\n", type, direction_names[dir], c->text, r, lib,
               impl, used);
}

#endif /* GAN_HAVE_ONEDNN */

/* ---------------------------------------------------------------- main */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: limits [--threads T] [--kernel CORE] [--gemm SHAPES] [--conv SHAPE]...\n"
            "              [--samples S] [--min-ms MS] [--no-bf16] [--as-avx2]\n"
            "  This host's CPU and the rates of the libraries ganctl's CPU backend calls.\n"
            "  --threads  threads of OpenBLAS and oneDNN (default 1)\n"
            "  --kernel   OpenBLAS core name (default: the backend's own choice)\n"
            "  --gemm     comma-separated MxNxK with an optional NN, NT, TN or TT (A, B\n"
            "             transposed or not; default NN): sgemm's rate at each, and oneDNN's\n"
            "             BF16 matmul's where the CPU has a BF16 dot product\n"
            "  --conv     N,C,H,W,O,K,S,P: a batch of N C×H×W images, O filters of K×K,\n"
            "             stride S, padding P; oneDNN's rate in each direction (FP32, and\n"
            "             BF16 where the CPU has a BF16 dot product), for an input\n"
            "             gradient of C < 4 the faster of it and its im2col sgemm's;\n"
            "             repeatable\n"
            "  --samples  the fastest of this many samples counts (default 9, at most %d)\n"
            "  --min-ms   each sample repeats the call for at least this long (default 10)\n"
            "  --no-bf16  leave out the BF16 rates\n"
            "  --as-avx2  act as an AVX2-only CPU: oneDNN held to AVX2 (DNNL_MAX_CPU_ISA),\n"
            "             no BF16 dot product, the wider units reported missing\n",
            MAX_SAMPLES);
}

static int parse_gemm(char *list, struct options *o)
{
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (o->n_gemm == MAX_SPECS)
            return -1;
        struct gemm_spec *g = &o->gemm[o->n_gemm];
        char t[3] = "NN";
        int used = 0;
        if (sscanf(tok, "%dx%dx%d%n", &g->m, &g->n, &g->k, &used) != 3 || g->m < 1 ||
            g->n < 1 || g->k < 1)
            return -1;
        if (tok[used]) {
            if (strlen(tok + used) != 2 || strspn(tok + used, "NT") != 2)
                return -1;
            memcpy(t, tok + used, 2);
        }
        g->ta = t[0] == 'T';
        g->tb = t[1] == 'T';
        snprintf(g->text, sizeof g->text, "%dx%dx%d%s", g->m, g->n, g->k, t);
        o->n_gemm++;
    }
    return 0;
}

static int parse_conv(const char *spec, struct options *o)
{
    if (o->n_conv == MAX_SPECS)
        return -1;
    struct conv_spec *c = &o->conv[o->n_conv];
    int used = 0;
    if (sscanf(spec, "%d,%d,%d,%d,%d,%d,%d,%d%n", &c->n, &c->c, &c->h, &c->w, &c->o, &c->k,
               &c->s, &c->p, &used) != 8 || spec[used] || c->n < 1 || c->c < 1 || c->h < 1 ||
        c->w < 1 || c->o < 1 || c->k < 1 || c->s < 1 || c->p < 0)
        return -1;
    c->ho = (c->h + 2 * c->p - c->k) / c->s + 1;
    c->wo = (c->w + 2 * c->p - c->k) / c->s + 1;
    if (c->ho < 1 || c->wo < 1)
        return -1;
    snprintf(c->text, sizeof c->text, "%d,%d,%d,%d,%d,%d,%d,%d", c->n, c->c, c->h, c->w, c->o,
             c->k, c->s, c->p);
    o->n_conv++;
    return 0;
}

int main(int argc, char **argv)
{
    static struct options o = { .threads = 1, .samples = 9, .min_s = 0.010, .bf16 = 1 };
    int as_avx2 = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--no-bf16") == 0) {
            o.bf16 = 0;
            continue;
        } else if (strcmp(argv[i], "--as-avx2") == 0) {
            as_avx2 = 1;
            continue;
        } else if (!v) {
            bad = 1;
        } else if (strcmp(argv[i], "--threads") == 0) {
            o.threads = atoi(v);
            bad = o.threads < 1 || o.threads > 4096;
        } else if (strcmp(argv[i], "--kernel") == 0) {
            o.kernel = strcmp(v, "auto") == 0 ? NULL : v;
        } else if (strcmp(argv[i], "--gemm") == 0) {
            char list[1024];
            snprintf(list, sizeof list, "%s", v);
            bad = parse_gemm(list, &o) != 0;
        } else if (strcmp(argv[i], "--conv") == 0) {
            bad = parse_conv(v, &o) != 0;
        } else if (strcmp(argv[i], "--samples") == 0) {
            o.samples = atoi(v);
            bad = o.samples < 1 || o.samples > MAX_SAMPLES;
        } else if (strcmp(argv[i], "--min-ms") == 0) {
            o.min_s = atof(v) * 1e-3;
            bad = !(o.min_s > 0 && o.min_s < 10);
        } else {
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "limits: bad argument %s%s%s\n", argv[i], v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }

    /* An AVX2-only CPU, acted on a wider one: oneDNN held to its AVX2 kernels, and the
     * backend's test hook taking the CPU for one without a BF16 dot product, as the
     * benchmark scripts' --as-avx2 sets them for ganctl (before either is read). */
    if (as_avx2 && (setenv("DNNL_MAX_CPU_ISA", "AVX2", 1) != 0 ||
                    setenv("GANCTL_TEST_NO_BF16_DOT", "1", 1) != 0)) {
        fprintf(stderr, "limits: cannot set the environment for --as-avx2\n");
        return 1;
    }
    if (as_avx2 && !o.kernel)
        o.kernel = "Haswell"; /* OpenBLAS's AVX2 kernel, as the backend's choice there */
    print_cpu(as_avx2);
    if (o.kernel)
        setenv("OPENBLAS_CORETYPE", o.kernel, 1);
    struct gan_backend be;
    memset(&be, 0, sizeof be);
    be.host = &bench_host;
    if (cpu_blas_open(&be, o.threads) != GAN_OK) {
        fprintf(stderr, "limits: %s\n", bench_last_error());
        return 1;
    }
    /* The limit is the library's own: OpenBLAS's sgemm on its own threads, whether or
     * not the backend cuts products across its threads instead (sgemm_split.c). */
    if (be.blas.set_num_threads)
        be.blas.set_num_threads(be.threads);
    printf("blas %s %d %s\n", be.blas.kernel, be.threads, be.blas.path);
    fflush(stdout);

    /* oneDNN as the backend opens it ("auto"), for its engine, stream and functions. */
    struct cpu_onednn *on = NULL;
#if GAN_HAVE_ONEDNN
    be.gemm_path = CPU_GEMM_AUTO;
    if (cpu_onednn_open(&be) != GAN_OK) {
        fprintf(stderr, "limits: %s\n", bench_last_error());
        return 1;
    }
    on = be.onednn;
    if (on)
        printf("onednn %s %s\n", on->version, on->waits);
    else
        printf("onednn - %s\n", be.onednn_absent[0] ? be.onednn_absent : "not loaded");
#else
    printf("onednn - this build has no oneDNN\n");
#endif
    const char *no_bf16 = !o.bf16 ? "left out (--no-bf16)"
                        : !cpu_has_bf16_dot() ? "this CPU has no BF16 dot product"
                        : !on ? "no oneDNN" : NULL;

    for (int i = 0; i < o.n_gemm; i++) {
        measure_sgemm(&o, &be.blas, &o.gemm[i]);
        if (no_bf16)
            printf("gemm BF16 %s - %s\n", o.gemm[i].text, no_bf16);
#if GAN_HAVE_ONEDNN
        else
            measure_bf16_matmul(&o, on, &o.gemm[i]);
#endif
        fflush(stdout);
    }
    for (int i = 0; i < o.n_conv; i++)
        for (int dir = 0; dir < 3; dir++) {
#if GAN_HAVE_ONEDNN
            /* the same sgemm serves both types' route (BF16 is staged through it) */
            const double route = on ? route_rate(&o, &be.blas, &o.conv[i], (enum direction)dir)
                                    : -1.0;
#endif
            if (!on) {
                printf("conv F32 %s %s - no oneDNN\n", direction_names[dir], o.conv[i].text);
            } else {
#if GAN_HAVE_ONEDNN
                measure_conv(&o, on, &be.blas, route, &o.conv[i], (enum direction)dir, dnnl_f32);
#endif
            }
            if (no_bf16)
                printf("conv BF16 %s %s - %s\n", direction_names[dir], o.conv[i].text, no_bf16);
#if GAN_HAVE_ONEDNN
            else
                measure_conv(&o, on, &be.blas, route, &o.conv[i], (enum direction)dir, dnnl_bf16);
#endif
            fflush(stdout);
        }
#if GAN_HAVE_ONEDNN
    cpu_onednn_close(&be);
#endif
    cpu_blas_close(&be.blas);
    return 0;
}
