/* SPDX-License-Identifier: MIT */
/* reorders.c — what moving an activation between the plain NCHW layout and oneDNN's
 * channel blocks costs on one thread: oneDNN's reorder primitive against the CPU
 * backend's own move (backends/cpu/channel_blocks.c), in FP32, and for a staged 16-bit
 * convolution's tensors (FP16, BF16 without a BF16 dot product) the two passes the backend
 * made before (a conversion to plain FP32, then oneDNN's reorder) against its one.
 *
 *   bench/reorders [--shape N,C,H,W]... [--samples S] [--as-avx2]
 *
 * The shapes default to the fashion-mnist DCGAN's activations at batch 64 (16 × 14 × 14,
 * 32 × 7 × 7, 64 × 4 × 4). The blocks are the ones oneDNN's convolutions take on this
 * CPU: 16 channels with AVX-512, 8 with AVX2 only or under --as-avx2 (which holds oneDNN to
 * AVX2 and the backend to its AVX2 level). Each figure is the fastest of S samples
 * (default 15), each the mean of as many calls as fill 10 ms, after one untimed call;
 * one line a shape, direction and type:
 *   move N,C,H,W to_blocks|from_blocks F32|F16|BF16|BF16-blocks ONEDNN_US BACKEND_US RATIO
 * with RATIO = ONEDNN_US / BACKEND_US. F16 and BF16 are a staged convolution's tensors
 * (FP32 blocks; oneDNN's column is the two passes), BF16-blocks a BF16 convolution's on a
 * BF16 dot product (BF16 blocks, both columns one pass). */
#include "config.h"

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

#define MAX_SHAPES 16

static int samples = 15;

#if GAN_HAVE_ONEDNN
/* The fastest mean time of call(arg) in microseconds. */
static double best_us(void (*call)(void *), void *arg)
{
    call(arg);
    double best = 1e30;
    for (int s = 0; s < samples; s++) {
        long calls = 0;
        double t0 = bench_seconds(), t;
        do {
            call(arg);
            calls++;
            t = bench_seconds() - t0;
        } while (t < 0.01);
        if (t / (double)calls < best)
            best = t / (double)calls;
    }
    return best * 1e6;
}

/* One move of one tensor, both ways of doing it. */
struct move {
    const struct cpu_dnnl_api *api;
    dnnl_stream_t stream;
    dnnl_primitive_t reorder;      /* plain FP32 → blocks, or back */
    dnnl_memory_t from, to;
    enum cpu_isa isa;
    struct cpu_channel_blocks b;
    int to_blocks;
    enum gan_dtype type;           /* the plain tensor's */
    void *plain;                   /* of `type` */
    float *plain_f32, *blocked;
    size_t n;
};

/* The backend's move before: the 16-bit tensor converted whole, then oneDNN's reorder
 * (or, to plain, the reverse). In FP32, oneDNN's reorder alone. */
static void onednn_way(void *arg)
{
    struct move *m = arg;
    if (m->to_blocks && m->type != GAN_F32)
        cpu_convert(m->isa, m->plain, m->type, m->plain_f32, GAN_F32, m->n);
    dnnl_exec_arg_t r[2] = { { DNNL_ARG_FROM, m->from }, { DNNL_ARG_TO, m->to } };
    if (m->api->dnnl_primitive_execute(m->reorder, m->stream, 2, r) != dnnl_success ||
        m->api->dnnl_stream_wait(m->stream) != dnnl_success) {
        fprintf(stderr, "reorders: oneDNN's reorder failed\n");
        exit(1);
    }
    if (!m->to_blocks && m->type != GAN_F32)
        cpu_convert(m->isa, m->plain_f32, GAN_F32, m->plain, m->type, m->n);
}

static void backend_way(void *arg)
{
    struct move *m = arg;
    if (m->to_blocks)
        cpu_to_channel_blocks(m->isa, &m->b, m->plain, m->type, m->blocked, 0, m->b.panels);
    else
        cpu_from_channel_blocks(m->isa, &m->b, m->blocked, m->plain, m->type, 0, m->b.panels);
}

static void measure(struct cpu_onednn *on, enum cpu_isa isa, const int64_t d[4], int64_t block)
{
    const struct cpu_dnnl_api *api = &on->api;
    const dnnl_dims_t dims = { d[0], d[1], d[2], d[3] };
    const size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
    float *plain_f32 = aligned_alloc(64, (n * 4 + 63) / 64 * 64);
    float *blocked = aligned_alloc(64, (n * 4 + 63) / 64 * 64);
    uint16_t *plain16 = aligned_alloc(64, (n * 2 + 63) / 64 * 64);
    if (!plain_f32 || !blocked || !plain16)
        exit(1);
    for (size_t i = 0; i < n; i++)
        plain_f32[i] = blocked[i] = (float)(i % 1013) * 0.01f - 5.0f;
    /* FP16 bits, read as BF16 too (finite either way: the timing does not depend on
     * the values) */
    cpu_convert(isa, plain_f32, GAN_F32, plain16, GAN_F16, n);
    /* the plain tensor's type and the blocks': FP32 blocks for FP32 and the staged types,
     * BF16 blocks of BF16 for a BF16 convolution on a BF16 dot product */
    static const struct { enum gan_dtype plain, blocks; const char *name; } types[] = {
        { GAN_F32, GAN_F32, "F32" }, { GAN_F16, GAN_F32, "F16" },
        { GAN_BF16, GAN_F32, "BF16" }, { GAN_BF16, GAN_BF16, "BF16-blocks" },
    };
    for (int to_blocks = 1; to_blocks >= 0; to_blocks--)
        for (int t = 0; t < 4; t++) {
            const dnnl_data_type_t dt = types[t].blocks == GAN_BF16 ? dnnl_bf16 : dnnl_f32;
            dnnl_memory_desc_t plain_md, blocked_md;
            if (api->dnnl_memory_desc_init_by_tag(&plain_md, 4, dims, dt, dnnl_nchw) != dnnl_success ||
                api->dnnl_memory_desc_init_by_tag(&blocked_md, 4, dims, dt,
                                                  block == 16 ? dnnl_nChw16c : dnnl_nChw8c) !=
                    dnnl_success) {
                fprintf(stderr, "reorders: oneDNN refused the shape\n");
                exit(1);
            }
            struct move m = {
                .api = api, .stream = on->stream, .isa = isa,
                .b = { d[0] * d[1] / block, d[2] * d[3], block, types[t].blocks },
                .to_blocks = to_blocks, .type = types[t].plain,
                .plain = types[t].plain == GAN_F32 ? (void *)plain_f32 : plain16,
                .plain_f32 = plain_f32, .blocked = blocked, .n = n,
            };
            /* oneDNN's side: a 16-bit tensor of FP32 blocks goes through plain_f32 */
            void *user = dt == dnnl_bf16 ? (void *)plain16 : (void *)plain_f32;
            const dnnl_memory_desc_t *from = to_blocks ? &plain_md : &blocked_md;
            const dnnl_memory_desc_t *to = to_blocks ? &blocked_md : &plain_md;
            dnnl_primitive_desc_t rpd;
            if (api->dnnl_memory_create(&m.from, from, on->engine, to_blocks ? user : (void *)blocked) != dnnl_success ||
                api->dnnl_memory_create(&m.to, to, on->engine, to_blocks ? (void *)blocked : user) != dnnl_success ||
                api->dnnl_reorder_primitive_desc_create(&rpd, from, on->engine, to, on->engine, NULL) != dnnl_success ||
                api->dnnl_primitive_create(&m.reorder, rpd) != dnnl_success) {
                fprintf(stderr, "reorders: oneDNN made no reorder\n");
                exit(1);
            }
            api->dnnl_primitive_desc_destroy(rpd);
            if (dt == dnnl_bf16)
                m.type = GAN_F32; /* no conversion around oneDNN's BF16 reorder */
            const double one = best_us(onednn_way, &m);
            m.type = types[t].plain;
            const double own = best_us(backend_way, &m);
            printf("move %lld,%lld,%lld,%lld %s %s %.1f %.1f %.2f\n", (long long)d[0],
                   (long long)d[1], (long long)d[2], (long long)d[3],
                   to_blocks ? "to_blocks" : "from_blocks", types[t].name, one, own, one / own);
            fflush(stdout);
            api->dnnl_primitive_destroy(m.reorder);
            api->dnnl_memory_destroy(m.from);
            api->dnnl_memory_destroy(m.to);
        }
    free(plain_f32);
    free(blocked);
    free(plain16);
}
#endif

static void usage(FILE *out)
{
    fprintf(out, "usage: reorders [--shape N,C,H,W]... [--samples S] [--as-avx2]\n");
}

int main(int argc, char **argv)
{
    int64_t shapes[MAX_SHAPES][4] = { { 64, 16, 14, 14 }, { 64, 32, 7, 7 }, { 64, 64, 4, 4 } };
    int n_shapes = 3, given = 0, as_avx2 = 0;
    for (int i = 1; i < argc; i++) {
        long long v[4];
        if (strcmp(argv[i], "--as-avx2") == 0) {
            as_avx2 = 1;
        } else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc &&
                   (samples = atoi(argv[++i])) > 0) {
        } else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc && given < MAX_SHAPES &&
                   sscanf(argv[++i], "%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3]) == 4 &&
                   v[0] > 0 && v[1] > 0 && v[1] % 16 == 0 && v[2] > 0 && v[3] > 0) {
            for (int k = 0; k < 4; k++)
                shapes[given][k] = v[k];
            n_shapes = ++given;
        } else {
            usage(stderr);
            fprintf(stderr, "reorders: bad argument %s (a shape's channels are a multiple of "
                            "16)\n", argv[i]);
            return 2;
        }
    }
    if (as_avx2 && setenv("DNNL_MAX_CPU_ISA", "AVX2", 1) != 0)
        return 1;
#if GAN_HAVE_ONEDNN
    struct gan_backend be;
    memset(&be, 0, sizeof be);
    be.host = &bench_host;
    be.gemm_path = CPU_GEMM_AUTO;
    if (cpu_blas_open(&be, 1) != GAN_OK || cpu_onednn_open(&be) != GAN_OK || !be.onednn) {
        fprintf(stderr, "reorders: no oneDNN: %s\n", be.onednn_absent[0] ? be.onednn_absent
                                                                      : bench_last_error());
        return 1;
    }
    be.onednn->api.omp_set_num_threads(1);
    const enum cpu_isa isa = as_avx2 ? CPU_ISA_F16C : cpu_isa_best();
    const int64_t block = isa == CPU_ISA_AVX512 ? 16 : 8;
    printf("level %s blocks %lld onednn %s\n", cpu_isa_name(isa), (long long)block,
           be.onednn->version);
    for (int s = 0; s < n_shapes; s++)
        measure(be.onednn, isa, shapes[s], block);
    cpu_onednn_close(&be);
    cpu_blas_close(&be.blas);
    return 0;
#else
    (void)n_shapes, (void)shapes, (void)as_avx2;
    fprintf(stderr, "reorders: this build has no oneDNN\n");
    return 1;
#endif
}
