/* SPDX-License-Identifier: MIT */
/* backend.c — the CPU backend module: its descriptor, its table of kernels, and the
 * life of an instance (BLAS loaded at create, released at destroy). */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "gemm16.h"
#include "gemm_thin.h"
#include "../common/backend_module.h"

/* "OpenBLAS 0.3.21" from OpenBLAS's configuration string (its first two words), or
 * "BLAS" when the library does not say what it is. */
static void library_name(const struct cpu_blas *blas, char *out, size_t size)
{
    const char *cfg = blas->config;
    const char *space = strchr(cfg, ' ');
    if (strncmp(cfg, "OpenBLAS ", 9) == 0 && space) {
        size_t len = strcspn(space + 1, " ");
        snprintf(out, size, "OpenBLAS %.*s", (int)len, space + 1);
    } else {
        snprintf(out, size, "BLAS");
    }
}

/* Where the 16-bit products that oneDNN does not take are widened, for the description. */
static void gemm16_note(const gan_backend *be, char *out, size_t size)
{
    const char *why = NULL;
    if (cpu_gemm16_level(be, &why))
        snprintf(out, size, "oneDNN does not take: widened while packed, by the backend's own "
                 "GEMM (one FMA chain per element), but fewer than 8 rows or 16 columns "
                 "widened first, then sgemm");
    else
        snprintf(out, size, "oneDNN does not take: widened first, then sgemm (%s)", why);
    const size_t used = strlen(out);
    if (cpu_gemm_thin_on(be) && used < size)
        snprintf(out + used, size - used, "; BF16 products of at most %d columns or rows: "
                 "the backend's own loops", CPU_THIN_MAX);
}

static gan_status cpu_create(const struct gan_host *host, gan_backend **out)
{
    *out = NULL;
    long long threads = 0;
    gan_status st = gan_setting_int(host, cpu_settings, "threads", &threads);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: the setting threads is not an integer; set it to "
                          "the number of BLAS threads, or 0 for one per core it may run on");
    if (threads < 0 || threads > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: threads = %lld; use 0 (one per core it may run on) or a "
                          "positive number of BLAS threads", threads);

    /* The products' share of the budget: the runs the backend cuts an OpenBLAS product
     * into, or OpenBLAS's own threads with a kernel whose bits depend on how a product
     * is cut (ganctl.conf(5), backend.blas_threads). */
    long long blas_threads = 0;
    st = gan_setting_int(host, cpu_settings, "blas_threads", &blas_threads);
    if (st != GAN_OK || blas_threads < 0 || blas_threads > INT_MAX)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cpu: blas_threads must be 0 (as many as threads) or a "
                          "positive number of threads for OpenBLAS's products, at most "
                          "threads");

    enum cpu_isa isa = CPU_ISA_PORTABLE;
    if ((st = cpu_isa_setting(host, &isa)) != GAN_OK)
        return st;
    enum cpu_gemm_path gemm_path = CPU_GEMM_AUTO;
    if ((st = cpu_gemm_path_setting(host, &gemm_path)) != GAN_OK)
        return st;
    enum cpu_bf16_path bf16_path = CPU_BF16_AUTO;
    if ((st = cpu_bf16_path_setting(host, gemm_path, &bf16_path)) != GAN_OK)
        return st;
    enum cpu_gemm16_path gemm16_path = CPU_GEMM16_AUTO;
    if ((st = cpu_gemm16_setting(host, &gemm16_path)) != GAN_OK)
        return st;
    int keep_blocks = 1;
    if ((st = cpu_kept_setting(host, &keep_blocks)) != GAN_OK)
        return st;

    gan_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: out of memory creating the instance");
    be->host = host;
    be->isa = isa;
    st = cpu_blas_open(be, (int)threads);
    if (st != GAN_OK) {
        free(be);
        return st;
    }
    if (blas_threads > 0 && blas_threads < be->threads && be->blas.set_num_threads) {
        be->blas_threads = (int)blas_threads;
        if (!be->blas.one_thread_calls)
            be->blas.set_num_threads(be->blas_threads);
    }
    be->gemm_path = gemm_path;
    be->bf16_path = bf16_path;
    be->gemm16_path = gemm16_path;
    be->keep_blocks = keep_blocks;
    if ((st = cpu_pool_open(be)) != GAN_OK) {
        cpu_blas_close(&be->blas);
        free(be);
        return st;
    }
    if ((st = cpu_onednn_open(be)) != GAN_OK) {
        cpu_pool_close(be);
        cpu_blas_close(&be->blas);
        free(be);
        return st;
    }

    char lib[48], blas_note[40] = "", gemm[896], gemm16[256];
    library_name(&be->blas, lib, sizeof lib);
    if (be->blas_threads != be->threads)
        snprintf(blas_note, sizeof blas_note, " (OpenBLAS %d)", be->blas_threads);
    cpu_onednn_describe(be, gemm, sizeof gemm);
    gemm16_note(be, gemm16, sizeof gemm16);
    snprintf(be->description, sizeof be->description,
             "cpu: %s kernel %s (%s), %d thread%s%s, %s%s%s%s; vector level %s%s; %s%s; "
             "16-bit products %s; FP8: emulated, exact widening into %s",
             lib, be->blas.kernel, be->blas.chosen_by, be->threads,
             be->threads == 1 ? "" : "s", blas_note, be->blas.path,
             *be->blas.waits ? ", " : "", be->blas.waits,
             be->blas.one_thread_calls && be->blas_threads > 1
                 ? ", products split across the threads by the backend, one OpenBLAS call "
                   "a part"
                 : "",
             cpu_isa_name(be->isa),
             be->isa < cpu_isa_best() ? " (set by backend.vector)" : "", gemm,
             !be->onednn      ? ""
             : be->keep_blocks ? "; convolution outputs kept in oneDNN's channel blocks"
                               : "; convolution outputs moved back to NCHW (set by "
                                 "backend.channel_blocks)",
             gemm16,
             cpu_onednn_bf16(be) ? "the BF16 GEMM (power-of-two scales) "
                                   "or the FP32 GEMM"
                                 : "the FP32 GEMM");
    host->log(host->ctx, GAN_LOG_DEBUG, "%s", be->description);
    *out = be;
    return GAN_OK;
}

static void cpu_destroy(gan_backend *be)
{
    if (!be)
        return;
    cpu_onednn_close(be);
    cpu_pool_close(be);
    cpu_blas_close(&be->blas);
    free(be->scratch);
    free(be->operand_scratch);
    free(be);
}

static const char *cpu_describe(gan_backend *be)
{
    return be->description;
}

/* The ops table, the descriptor and its export (backends/common/backend_module.h).
 * Every kernel has finished when it returns: synchronize stays NULL, which the ABI
 * reads as a synchronous backend. */
#define GAN_OPS_PREFIX cpu
#define cpu_synchronize NULL
GAN_BACKEND_MODULE("CPU: OpenBLAS GEMM, oneDNN for convolutions where built and for BF16 where "
                   "its BF16 kernels are measured to pay, FP16 stored in 16 bits and computed "
                   "in FP32")
