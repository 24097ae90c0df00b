/* SPDX-License-Identifier: MIT */
/* comm_nccl.c — the NCCL engine, a module of its own (comm_nccl.so, beside the backends):
 * all-reduce and broadcast through NCCL on the rank's GPU, bootstrapped over another
 * engine of the table (MPI's): rank 0 makes the unique id, the bootstrap engine
 * broadcasts it, every rank joins with ncclCommInitRank.
 *
 * A module rather than part of libganctl so that neither the library nor the program
 * links CUDA: a build with MPI and CUDA loads it only for a run on the cuda backend. It
 * links NCCL and the CUDA runtime, never MPI (the bootstrap comes through the table),
 * and calls nothing of the core's: its failures are written into the gan_error itself.
 *
 * Buffers are host buffers, as the table's are: each operation stages them through a
 * device buffer of the engine's. Taking the backend's device buffers directly (the
 * gradient arena, with no copy) needs the backend to show the core a buffer's device
 * address; docs/scale-out.md plans it. */
#include "config.h"

#include <cuda_runtime.h>
/* nccl.h declares ncclGroupStart() and its kin without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

/* What comm.c looks up in this module. */
gan_status gan_comm_nccl_open(gan_comm *bootstrap, int device, gan_comm **out,
                              struct gan_error *err);

struct nccl_engine {
    gan_comm *bootstrap;          /* borrowed: barrier and abort go through it */
    ncclComm_t comm;
    cudaStream_t stream;
    void *staging;
    size_t staging_bytes;
};

static gan_status fail(struct gan_error *err, gan_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

static gan_status nccl_fail(struct gan_error *err, const char *what, ncclResult_t r)
{
    return fail(err, GAN_ERR_DEVICE, "NCCL %s failed: %s (another rank may have stopped)", what,
                ncclGetErrorString(r));
}

static gan_status cuda_fail(struct gan_error *err, const char *what, cudaError_t e)
{
    return fail(err, GAN_ERR_DEVICE, "CUDA %s failed for the NCCL engine: %s", what,
                cudaGetErrorString(e));
}

static size_t type_size(enum gan_comm_type type)
{
    return type == GAN_COMM_F32 ? 4 : 8;
}

static gan_status stage(struct nccl_engine *e, size_t bytes, struct gan_error *err)
{
    if (bytes <= e->staging_bytes)
        return GAN_OK;
    cudaFree(e->staging);
    e->staging = NULL;
    e->staging_bytes = 0;
    cudaError_t c = cudaMalloc(&e->staging, bytes);
    if (c != cudaSuccess)
        return cuda_fail(err, "cudaMalloc", c);
    e->staging_bytes = bytes;
    return GAN_OK;
}

/* Host → device, the collective, device → host, and the wait. */
static gan_status round_trip(struct nccl_engine *e, void *buf, size_t bytes, int reduce,
                             size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                             struct gan_error *err)
{
    gan_status st = stage(e, bytes, err);
    if (st != GAN_OK)
        return st;
    cudaError_t c = cudaMemcpyAsync(e->staging, buf, bytes, cudaMemcpyHostToDevice, e->stream);
    if (c != cudaSuccess)
        return cuda_fail(err, "cudaMemcpyAsync", c);
    ncclResult_t r = reduce ? ncclAllReduce(e->staging, e->staging, count, type, op, e->comm, e->stream)
                            : ncclBroadcast(e->staging, e->staging, bytes, ncclUint8, root, e->comm, e->stream);
    if (r != ncclSuccess)
        return nccl_fail(err, reduce ? "all-reduce" : "broadcast", r);
    if ((c = cudaMemcpyAsync(buf, e->staging, bytes, cudaMemcpyDeviceToHost, e->stream)) != cudaSuccess)
        return cuda_fail(err, "cudaMemcpyAsync", c);
    if ((c = cudaStreamSynchronize(e->stream)) != cudaSuccess)
        return cuda_fail(err, "cudaStreamSynchronize", c);
    return GAN_OK;
}

static gan_status nccl_all_reduce(gan_comm *c, void *buf, size_t count, enum gan_comm_type type,
                                  enum gan_comm_op op, struct gan_error *err)
{
    ncclDataType_t t = type == GAN_COMM_F32 ? ncclFloat32 : type == GAN_COMM_F64 ? ncclFloat64 : ncclUint64;
    ncclRedOp_t o = op == GAN_COMM_SUM ? ncclSum : op == GAN_COMM_MAX ? ncclMax : ncclMin;
    return round_trip(c->engine, buf, count * type_size(type), 1, count, t, o, 0, err);
}

static gan_status nccl_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                                 struct gan_error *err)
{
    return round_trip(c->engine, buf, bytes, 0, 0, ncclUint8, ncclSum, root, err);
}

static gan_status nccl_barrier(gan_comm *c, struct gan_error *err)
{
    struct nccl_engine *e = c->engine;
    return e->bootstrap->ops->barrier(e->bootstrap, err);
}

static void nccl_abort(gan_comm *c, int code)
{
    struct nccl_engine *e = c->engine;
    ncclCommAbort(e->comm);
    e->bootstrap->ops->abort(e->bootstrap, code);
}

static void nccl_close(gan_comm *c)
{
    struct nccl_engine *e = c->engine;
    ncclCommDestroy(e->comm);
    cudaFree(e->staging);
    cudaStreamDestroy(e->stream);
    free(e);
    free(c);
}

static const struct gan_comm_ops nccl_ops = {
    .name = "nccl", .all_reduce = nccl_all_reduce, .broadcast = nccl_broadcast,
    .barrier = nccl_barrier, .abort = nccl_abort, .close = nccl_close,
};

__attribute__((visibility("default")))
gan_status gan_comm_nccl_open(gan_comm *bootstrap, int device, gan_comm **out,
                              struct gan_error *err)
{
    *out = NULL;
    cudaError_t ce = cudaSetDevice(device);
    if (ce != cudaSuccess)
        return cuda_fail(err, "cudaSetDevice", ce);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = bootstrap->rank == 0 ? ncclGetUniqueId(&id) : ncclSuccess;
    if (r != ncclSuccess)
        return nccl_fail(err, "ncclGetUniqueId", r);
    gan_status st = bootstrap->ops->broadcast(bootstrap, &id, sizeof id, 0, err);
    if (st != GAN_OK)
        return st;
    gan_comm *c = calloc(1, sizeof *c);
    struct nccl_engine *e = calloc(1, sizeof *e);
    if (!c || !e) {
        free(c);
        free(e);
        return fail(err, GAN_ERR_NOMEM, "out of memory starting the NCCL engine");
    }
    e->bootstrap = bootstrap;
    if ((ce = cudaStreamCreate(&e->stream)) != cudaSuccess) {
        free(c);
        free(e);
        return cuda_fail(err, "cudaStreamCreate", ce);
    }
    if ((r = ncclCommInitRank(&e->comm, bootstrap->size, id, bootstrap->rank)) != ncclSuccess) {
        cudaStreamDestroy(e->stream);
        free(c);
        free(e);
        return nccl_fail(err, "ncclCommInitRank", r);
    }
    int version = 0;
    ncclGetVersion(&version);
    c->ops = &nccl_ops;
    c->rank = bootstrap->rank;
    c->size = bootstrap->size;
    c->engine = e;
    snprintf(c->description, sizeof c->description, "nccl %d.%d.%d on GPU %d, bootstrapped over %s",
             version / 10000, version / 100 % 100, version % 100, device, bootstrap->ops->name);
    *out = c;
    return GAN_OK;
}
