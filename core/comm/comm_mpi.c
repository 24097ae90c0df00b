/* SPDX-License-Identifier: MIT */
/* comm_mpi.c — the MPI engine: MPI_COMM_WORLD, host buffers. Errors are returned, not
 * fatal (MPI_ERRORS_RETURN), so that a failed collective becomes one line of ganctl's;
 * a rank that dies is the process manager's to notice (mpirun then ends every rank
 * and names the one that died). */
#include "config.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

static gan_status mpi_fail(int code, const char *what, struct gan_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "error %d", code);
    return gan_error_set(err, GAN_ERR_IO, "MPI %s failed: %s (another rank may have stopped)",
                         what, text);
}

static MPI_Datatype datatype(enum gan_comm_type type)
{
    return type == GAN_COMM_F32 ? MPI_FLOAT : type == GAN_COMM_F64 ? MPI_DOUBLE : MPI_UINT64_T;
}

static MPI_Op operation(enum gan_comm_op op)
{
    return op == GAN_COMM_SUM ? MPI_SUM : op == GAN_COMM_MAX ? MPI_MAX : MPI_MIN;
}

/* MPI counts are int: a larger buffer goes in pieces. */
#define CHUNK ((size_t)1 << 30)

static size_t type_size(enum gan_comm_type type)
{
    return type == GAN_COMM_F32 ? 4 : 8;
}

static gan_status mpi_all_reduce(gan_comm *c, void *buf, size_t count, enum gan_comm_type type,
                                 enum gan_comm_op op, struct gan_error *err)
{
    (void)c;
    char *p = buf;
    while (count) {
        size_t n = count < CHUNK ? count : CHUNK;
        int rc = MPI_Allreduce(MPI_IN_PLACE, p, (int)n, datatype(type), operation(op),
                               MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "all-reduce", err);
        p += n * type_size(type);
        count -= n;
    }
    return GAN_OK;
}

static gan_status mpi_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                                struct gan_error *err)
{
    (void)c;
    char *p = buf;
    while (bytes) {
        size_t n = bytes < CHUNK ? bytes : CHUNK;
        int rc = MPI_Bcast(p, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "broadcast", err);
        p += n;
        bytes -= n;
    }
    return GAN_OK;
}

static gan_status mpi_barrier(gan_comm *c, struct gan_error *err)
{
    (void)c;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? GAN_OK : mpi_fail(rc, "barrier", err);
}

static void mpi_abort(gan_comm *c, int code)
{
    (void)c;
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static void mpi_close(gan_comm *c)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
        MPI_Finalize();
    free(c);
}

static const struct gan_comm_ops mpi_ops = {
    .name = "mpi", .all_reduce = mpi_all_reduce, .broadcast = mpi_broadcast,
    .barrier = mpi_barrier, .abort = mpi_abort, .close = mpi_close,
};

gan_status gan_comm_mpi_open(gan_comm **out, struct gan_error *err)
{
    gan_comm *c = calloc(1, sizeof *c);
    if (!c)
        return gan_error_nomem(err, "starting MPI");
    int initialized = 0;
    MPI_Initialized(&initialized);
    /* Only the main thread calls MPI; BLAS's threads never do. */
    int provided = 0;
    int rc = initialized ? MPI_SUCCESS : MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
        free(c);
        return gan_error_set(err, GAN_ERR_IO, "MPI could not start (MPI_Init_thread returned %d): check the mpirun command and its host list", rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(version, &len) != MPI_SUCCESS)
        snprintf(version, sizeof version, "unknown library");
    /* "Open MPI v4.1.4, package: ..." → "Open MPI v4.1.4". */
    version[strcspn(version, ",\n")] = '\0';
    snprintf(c->description, sizeof c->description, "mpi (%.100s)", version);
    c->ops = &mpi_ops;
    *out = c;
    return GAN_OK;
}
