/* SPDX-License-Identifier: MIT */
/* backend.c — the CUDA backend module: its descriptor and table of kernels, the life of
 * an instance (device, stream, memory pool, cuBLAS and cuDNN handles), and error reporting. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "../common/backend_module.h"
#include "../common/settings.h"

/* Probes whether this build's kernels can run on the current device (elementwise.cu). */
cudaError_t cuda_kernels_probe(void);

/* ---------------------------------------------------------------- errors */

gan_status cuda_check_rt(gan_backend *be, const char *call, cudaError_t err)
{
    if (err == cudaSuccess)
        return GAN_OK;
    /* The runtime also keeps the error as the thread's last one; clear it (unless the
     * context is lost, which stays) so that the next launch check does not see it. */
    cudaGetLastError();
    if (err == cudaErrorMemoryAllocation)
        return be->host->fail(be->host->ctx, GAN_ERR_NOMEM,
                              "%s: %s (%s); the GPU is out of memory: use smaller batches "
                              "or models, or free device memory", call,
                              cudaGetErrorString(err), cudaGetErrorName(err));
    /* Errors that kill the context surface at the next call that waits, which is
     * rarely the kernel that caused them. */
    int lost = err == cudaErrorIllegalAddress || err == cudaErrorLaunchFailure ||
               err == cudaErrorIllegalInstruction || err == cudaErrorMisalignedAddress ||
               err == cudaErrorHardwareStackError || err == cudaErrorInvalidPc ||
               err == cudaErrorAssert || err == cudaErrorLaunchTimeout;
    return be->host->fail(be->host->ctx, GAN_ERR_DEVICE, "%s: %s (%s)%s", call,
                          cudaGetErrorString(err), cudaGetErrorName(err),
                          lost ? "; a kernel queued earlier failed and the GPU context is "
                                 "lost: restart the program" : "");
}

gan_status cuda_check_blas(gan_backend *be, const char *call, cublasStatus_t err)
{
    if (err == CUBLAS_STATUS_SUCCESS)
        return GAN_OK;
    gan_status st = GAN_ERR_DEVICE;
    if (err == CUBLAS_STATUS_ALLOC_FAILED)
        st = GAN_ERR_NOMEM;
    else if (err == CUBLAS_STATUS_NOT_SUPPORTED || err == CUBLAS_STATUS_ARCH_MISMATCH)
        st = GAN_ERR_UNSUPPORTED;
    else if (err == CUBLAS_STATUS_INVALID_VALUE)
        st = GAN_ERR_INVALID;
    return be->host->fail(be->host->ctx, st, "%s: cuBLAS: %s (status %d)", call,
                          cublasGetStatusString(err), (int)err);
}

gan_status cuda_check_dnn(gan_backend *be, const char *call, cudnnStatus_t err)
{
    if (err == CUDNN_STATUS_SUCCESS)
        return GAN_OK;
    gan_status st = GAN_ERR_DEVICE;
    int category = (int)CUDNN_STATUS_CATEGORY(err);
    if (category == CUDNN_STATUS_NOT_SUPPORTED)
        st = GAN_ERR_UNSUPPORTED;
    else if (category == CUDNN_STATUS_BAD_PARAM)
        st = GAN_ERR_INVALID;
    else if (err == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
             err == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        st = GAN_ERR_NOMEM;
    /* cuDNN 9 keeps a more specific explanation of the last failure. */
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    return be->host->fail(be->host->ctx, st, "%s: cuDNN: %s (status %d)%s%s", call,
                          cudnnGetErrorString(err), (int)err, detail[0] ? ": " : "", detail);
}

gan_status cuda_enter(gan_backend *be)
{
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == be->device)
        return GAN_OK;
    return cuda_check_rt(be, "cudaSetDevice", cudaSetDevice(be->device));
}

gan_status cuda_launched(gan_backend *be, const char *kernel)
{
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess)
        return GAN_OK;
    char call[96];
    snprintf(call, sizeof call, "launching %s", kernel);
    return cuda_check_rt(be, call, err);
}

unsigned cuda_blocks(int64_t n, unsigned cap)
{
    int64_t blocks = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    if (blocks < 1)
        return 1;
    return blocks > (int64_t)cap ? cap : (unsigned)blocks;
}

/* ---------------------------------------------------------------- settings */

/* Each setting with its one default: the host, the readers below and --list-plugins use it. */
static const struct gan_setting_spec cuda_settings[] = {
    { "device", GAN_SETTING_INT, "0", "CUDA device index (0 is the first GPU)" },
    { "workspace_mb", GAN_SETTING_INT, "512",
      "most MiB of GPU memory cuDNN may use as convolution workspace" },
    { "deterministic", GAN_SETTING_BOOL, "true",
      "prefer cuDNN algorithms that give the same bits on every run" },
    { NULL, 0, NULL, NULL },
};

/* An integer setting, its default from the settings table (backends/common/settings.h),
 * within [lo, hi]. */
static gan_status setting_int(const struct gan_host *host, const char *key, long long lo,
                              long long hi, const char *meaning, long long *out)
{
    gan_status st = gan_setting_int(host, cuda_settings, key, out);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cuda: the setting %s is not an integer; set it to %s",
                          key, meaning);
    if (*out < lo || *out > hi)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cuda: %s = %lld is out of range; set it to %s (%lld to %lld)",
                          key, *out, meaning, lo, hi);
    return GAN_OK;
}

/* ---------------------------------------------------------------- life */

static void cuda_destroy(gan_backend *be)
{
    if (!be)
        return;
    int ok = cuda_enter(be) == GAN_OK;
    if (ok) {
        cuda_conv_plans_free(be);
        if (be->scratch)
            cuda_device_free(be, be->scratch);
        if (be->operand_scratch)
            cuda_device_free(be, be->operand_scratch);
        if (be->workspace)
            cuda_device_free(be, be->workspace);
        if (be->stream)
            cudaStreamSynchronize(be->stream);
        if (be->results)
            cudaFree(be->results);
        if (be->pinned)
            cudaFreeHost(be->pinned);
        if (be->dnn)
            cudnnDestroy(be->dnn);
        if (be->blas)
            cublasDestroy(be->blas);
        if (be->lt)
            cublasLtDestroy(be->lt);
        if (be->stream)
            cudaStreamDestroy(be->stream);
        if (be->pool)
            cudaMemPoolDestroy(be->pool);
    }
    free(be);
}

/* "13.0" from CUDA's 1000·major + 10·minor encoding. */
static void cuda_version_text(int v, char *out, size_t size)
{
    snprintf(out, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void describe_instance(gan_backend *be, const struct cudaDeviceProp *prop)
{
    int driver = 0, runtime = 0, bmaj = 0, bmin = 0, bpatch = 0, dmaj = 0, dmin = 0, dpatch = 0;
    char dv[16], rv[16];
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cuda_version_text(driver, dv, sizeof dv);
    cuda_version_text(runtime, rv, sizeof rv);
    cublasGetProperty(MAJOR_VERSION, &bmaj);
    cublasGetProperty(MINOR_VERSION, &bmin);
    cublasGetProperty(PATCH_LEVEL, &bpatch);
    cudnnGetProperty(MAJOR_VERSION, &dmaj);
    cudnnGetProperty(MINOR_VERSION, &dmin);
    cudnnGetProperty(PATCH_LEVEL, &dpatch);
    snprintf(be->description, sizeof be->description,
             "cuda: device %d, %s (sm_%d%d, %d SMs, %.1f GiB), driver %s, runtime %s, "
             "cuBLAS %d.%d.%d, cuDNN %d.%d.%d%s; %s",
             be->device, prop->name, prop->major, prop->minor, prop->multiProcessorCount,
             (double)prop->totalGlobalMem / (1024.0 * 1024.0 * 1024.0), dv, rv,
             bmaj, bmin, bpatch, dmaj, dmin, dpatch,
             be->pools ? "" : "; no memory pools (cudaMalloc per buffer)",
             be->fp8 ? "FP8 products: cuBLASLt's FP8 GEMM where it takes a product, else BF16"
                     : "no FP8 products (they need compute capability 8.9)");
}

/* The memory pool the instance allocates buffers from, in stream order. Its release
 * threshold keeps freed memory for reuse instead of returning it to the driver at
 * every synchronisation: tensors come and go at every step of training. */
static gan_status create_pool(gan_backend *be)
{
    int supported = 0;
    cudaError_t err = cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported,
                                             be->device);
    if (err != cudaSuccess || !supported) {
        cudaGetLastError();
        be->pools = 0;
        return GAN_OK;
    }
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = be->device;
    gan_status st = cuda_check_rt(be, "cudaMemPoolCreate", cudaMemPoolCreate(&be->pool, &props));
    if (st != GAN_OK)
        return st;
    uint64_t keep = UINT64_MAX;
    st = cuda_check_rt(be, "cudaMemPoolSetAttribute(release threshold)",
                       cudaMemPoolSetAttribute(be->pool, cudaMemPoolAttrReleaseThreshold,
                                               &keep));
    if (st == GAN_OK)
        be->pools = 1;
    return st;
}

static gan_status cuda_create(const struct gan_host *host, gan_backend **out)
{
    *out = NULL;
    long long device, workspace_mb;
    gan_status st = setting_int(host, "device", 0, INT_MAX,
                                "the index of a CUDA device (0 is the first)", &device);
    if (st == GAN_OK)
        st = setting_int(host, "workspace_mb", 0, 1 << 20,
                         "the most MiB of GPU memory cuDNN may use as workspace",
                         &workspace_mb);
    if (st != GAN_OK)
        return st;
    int deterministic = 1;
    st = gan_setting_bool(host, cuda_settings, "deterministic", &deterministic);
    if (st != GAN_OK)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cuda: the setting deterministic is not a boolean; set it "
                          "to true or false");

    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        return host->fail(host->ctx, GAN_ERR_DEVICE, "no CUDA device: %s",
                          cudaGetErrorString(err));
    if (count < 1)
        return host->fail(host->ctx, GAN_ERR_DEVICE,
                          "no CUDA device: the driver reports no GPU");
    if (device >= count)
        return host->fail(host->ctx, GAN_ERR_CONFIG,
                          "backend cuda: device = %lld, but this machine has %d CUDA "
                          "device%s (0 to %d); set device to one of them",
                          device, count, count == 1 ? "" : "s", count - 1);
    err = cudaSetDevice((int)device);
    if (err != cudaSuccess)
        return host->fail(host->ctx, GAN_ERR_DEVICE, "no CUDA device: device %lld: %s",
                          device, cudaGetErrorString(err));
    struct cudaDeviceProp prop;
    err = cudaGetDeviceProperties(&prop, (int)device);
    if (err != cudaSuccess)
        return host->fail(host->ctx, GAN_ERR_DEVICE, "no CUDA device: device %lld: %s",
                          device, cudaGetErrorString(err));
    err = cuda_kernels_probe();
    if (err != cudaSuccess)
        return host->fail(host->ctx, GAN_ERR_DEVICE,
                          "no CUDA device: %s (sm_%d%d) cannot run this build's kernels "
                          "(%s); rebuild with CUDA_GENCODE naming this architecture",
                          prop.name, prop.major, prop.minor, cudaGetErrorString(err));

    gan_backend *be = calloc(1, sizeof *be);
    if (!be)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cuda: out of memory creating the instance");
    be->host = host;
    be->device = (int)device;
    be->sm_count = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    be->deterministic = deterministic != 0;
    be->workspace_limit = (size_t)workspace_mb << 20;
    be->cc_major = prop.major;
    be->cc_minor = prop.minor;
    be->fp8 = prop.major > 8 || (prop.major == 8 && prop.minor >= 9);
    snprintf(be->device_name, sizeof be->device_name, "%s", prop.name);

    st = cuda_check_rt(be, "cudaStreamCreateWithFlags",
                       cudaStreamCreateWithFlags(&be->stream, cudaStreamNonBlocking));
    if (st == GAN_OK)
        st = create_pool(be);
    if (st == GAN_OK)
        st = cuda_check_blas(be, "cublasCreate", cublasCreate(&be->blas));
    if (st == GAN_OK)
        st = cuda_check_blas(be, "cublasSetStream", cublasSetStream(be->blas, be->stream));
    if (st == GAN_OK)
        st = cuda_check_blas(be, "cublasLtCreate", cublasLtCreate(&be->lt));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, "cudnnCreate", cudnnCreate(&be->dnn));
    if (st == GAN_OK)
        st = cuda_check_dnn(be, "cudnnSetStream", cudnnSetStream(be->dnn, be->stream));
    if (st == GAN_OK)
        st = cuda_check_rt(be, "cudaMalloc(results)",
                           cudaMalloc(&be->results, CUDA_RESULT_BYTES));
    if (st == GAN_OK)
        st = cuda_check_rt(be, "cudaMallocHost(results)",
                           cudaMallocHost(&be->pinned, CUDA_RESULT_BYTES));
    if (st != GAN_OK) {
        /* The library's message is already recorded; a failure this early means the
         * device is not usable, which the user reads as no device. */
        if (st != GAN_ERR_NOMEM)
            st = GAN_ERR_DEVICE;
        cuda_destroy(be);
        return st;
    }
    describe_instance(be, &prop);
    host->log(host->ctx, GAN_LOG_DEBUG, "%s", be->description);
    *out = be;
    return GAN_OK;
}

static const char *cuda_describe(gan_backend *be)
{
    return be->description;
}

/* The ops table, the descriptor and its export (backends/common/backend_module.h). */
#define GAN_OPS_PREFIX cuda
GAN_BACKEND_MODULE("NVIDIA GPU: cuBLAS GEMM, cuDNN convolutions, own kernels for the rest")
