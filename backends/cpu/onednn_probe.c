/* SPDX-License-Identifier: MIT */
/* onednn_probe.c — whether oneDNN's BF16 kernels pay on this CPU, measured.
 *
 * A BF16 dot product (AVX512-BF16) does two multiply-adds a lane where an FMA does one,
 * but a CPU may issue it at half the FMA's rate, and then oneDNN's BF16 kernels, which
 * also convert, run slower than its FP32 ones. On a Zen 4 core oneDNN 2.6.3's BF16
 * matmul ran 2.2 times as fast as sgemm (229 against 104 GFLOP/s); on an Intel Xeon
 * with AVX512-BF16 and no AMX at 0.6 times (86 against 142), and its BF16 convolutions
 * at 0.3–1.1 times its FP32 ones (bench/README.md). CPUID does not say which kind a CPU
 * is, so "auto" times the two once per process, on one thread: a 256 × 512 × 512 matmul
 * (the paper toy's hidden layer) in BF16 and in FP32, alternately, the quickest of
 * several runs of each, so that a moment's load on a shared core is left out. BF16 goes
 * to oneDNN only where it ran CPU_ONEDNN_BF16_MIN_SPEED times as fast: the staged path
 * it would replace runs at FP32's speed on half the bytes, and a smaller lead would be
 * within the two timings' noise. The speeds seen are far from it either side, so that
 * the choice, which changes the bits a BF16 run computes, is the same run after run. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn.h"

enum { PROBE_M = 256, PROBE_K = 512, PROBE_N = 512, PROBE_ROUNDS = 5 };

/* One matmul of the probe's shape in one dtype, on zeroed memory: its speed does not
 * depend on the values, and zeros make no subnormals. */
struct probe_matmul {
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3];
    void *buf[3];
};

static void probe_free(const struct cpu_dnnl_api *api, struct probe_matmul *p)
{
    for (int i = 0; i < 3; i++) {
        if (p->mem[i])
            api->dnnl_memory_destroy(p->mem[i]);
        free(p->buf[i]);
    }
    if (p->prim)
        api->dnnl_primitive_destroy(p->prim);
}

/* The primitive descriptor of the probe's matmul in dtype t, its implementation's name
 * in impl (when not NULL); with p, the primitive too, on zeroed memory. Returns -1 when
 * oneDNN makes none. */
static int probe_make(struct cpu_onednn *o, dnnl_data_type_t t, struct probe_matmul *p,
                      char *impl, size_t impl_size)
{
    const struct cpu_dnnl_api *api = &o->api;
    const dnnl_dims_t dims[3] = { { PROBE_M, PROBE_K }, { PROBE_K, PROBE_N },
                                  { PROBE_M, PROBE_N } };
    dnnl_memory_desc_t md[3];
    for (int i = 0; i < 3; i++)
        if (api->dnnl_memory_desc_init_by_tag(&md[i], 2, dims[i], t, dnnl_ab) != dnnl_success)
            return -1;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd;
    if (api->dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2]) != dnnl_success ||
        api->dnnl_primitive_desc_create(&pd, &desc, NULL, o->engine, NULL) != dnnl_success)
        return -1;
    const char *name = NULL;
    if (impl && api->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) ==
                    dnnl_success && name)
        snprintf(impl, impl_size, "%s", name);
    dnnl_status_t s = p ? api->dnnl_primitive_create(&p->prim, pd) : dnnl_success;
    api->dnnl_primitive_desc_destroy(pd);
    if (!p)
        return 0;
    if (s != dnnl_success) {
        p->prim = NULL;
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        p->buf[i] = calloc(1, api->dnnl_memory_desc_get_size(&md[i]));
        if (!p->buf[i] ||
            api->dnnl_memory_create(&p->mem[i], &md[i], o->engine, p->buf[i]) != dnnl_success)
            return -1;
    }
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds one run of p took, or a negative number when it failed. */
static double probe_run(struct cpu_onednn *o, const struct probe_matmul *p)
{
    const struct cpu_dnnl_api *api = &o->api;
    dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, p->mem[0] }, { DNNL_ARG_WEIGHTS, p->mem[1] },
                                { DNNL_ARG_DST, p->mem[2] } };
    const double t0 = now();
    if (api->dnnl_primitive_execute(p->prim, o->stream, 3, args) != dnnl_success ||
        api->dnnl_stream_wait(o->stream) != dnnl_success)
        return -1.0;
    return now() - t0;
}

/* BF16's speed over FP32's, or 0 when either could not be made or run. */
static double time_both(struct cpu_onednn *o, struct probe_matmul *bf16,
                        struct probe_matmul *f32)
{
    double best[2] = { 0.0, 0.0 };
    struct probe_matmul *const p[2] = { bf16, f32 };
    /* the first round warms the caches and the kernels' pages, and is not counted */
    for (int r = 0; r <= PROBE_ROUNDS; r++)
        for (int i = 0; i < 2; i++) {
            const double s = probe_run(o, p[i]);
            if (s <= 0.0)
                return 0.0;
            if (r > 0 && (best[i] == 0.0 || s < best[i]))
                best[i] = s;
        }
    return best[0] > 0.0 ? best[1] / best[0] : 0.0;
}

/* The answer, found once per process by the first instance that asks. */
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static int probed;
static char probe_impl[sizeof ((struct cpu_onednn *)0)->bf16_impl];
static double probe_speed;

void cpu_onednn_probe_bf16(struct cpu_onednn *o, int timed)
{
    pthread_mutex_lock(&probe_lock);
    if (probed < 1 + timed) {
        snprintf(probe_impl, sizeof probe_impl, "unavailable");
        probe_speed = 0.0;
        if (!timed) {
            /* the name alone, for the description */
            probe_make(o, dnnl_bf16, NULL, probe_impl, sizeof probe_impl);
        } else {
            /* a primitive divides its work for the team size in force when it is made */
            o->api.omp_set_num_threads(1);
            struct probe_matmul bf16 = { 0 }, f32 = { 0 };
            char impl[sizeof probe_impl] = "unnamed";
            if (probe_make(o, dnnl_bf16, &bf16, impl, sizeof impl) == 0) {
                snprintf(probe_impl, sizeof probe_impl, "%s", impl);
                if (probe_make(o, dnnl_f32, &f32, NULL, 0) == 0)
                    /* in hundredths, as the description prints it, so that the line
                     * and the choice made from it agree */
                    probe_speed = (double)(long)(time_both(o, &bf16, &f32) * 100.0 + 0.5) /
                                  100.0;
            }
            probe_free(&o->api, &bf16);
            probe_free(&o->api, &f32);
        }
        probed = 1 + timed;
    }
    snprintf(o->bf16_impl, sizeof o->bf16_impl, "%s", probe_impl);
    o->bf16_speed = timed ? probe_speed : 0.0;
    pthread_mutex_unlock(&probe_lock);
}
