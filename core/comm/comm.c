/* SPDX-License-Identifier: MIT */
/* comm.c — the choice of communication engine, the single-process engine, and the
 * table's shorthands. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

/* ------------------------------------------------------------------ one process */

static gan_status single_all_reduce(gan_comm *c, void *buf, size_t count,
                                    enum gan_comm_type type, enum gan_comm_op op,
                                    struct gan_error *err)
{
    (void)c, (void)buf, (void)count, (void)type, (void)op, (void)err;
    return GAN_OK;
}

static gan_status single_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                                   struct gan_error *err)
{
    (void)c, (void)buf, (void)bytes, (void)root, (void)err;
    return GAN_OK;
}

static gan_status single_barrier(gan_comm *c, struct gan_error *err)
{
    (void)c, (void)err;
    return GAN_OK;
}

static void single_abort(gan_comm *c, int code)
{
    (void)c;
    exit(code);
}

static void single_close(gan_comm *c)
{
    (void)c;
}

static const struct gan_comm_ops single_ops = {
    .name = "single", .all_reduce = single_all_reduce, .broadcast = single_broadcast,
    .barrier = single_barrier, .abort = single_abort, .close = single_close,
};

static gan_comm single = { &single_ops, 0, 1, "single process", NULL, 0 };

gan_comm *gan_comm_single(void)
{
    return &single;
}

/* ------------------------------------------------------------------ the choice */

/* The world size a process manager announces: Open MPI's mpirun, then PMIx and PMI
 * (Slurm's srun, MPICH's hydra). 0 when none does. */
static long launched_size(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return getenv("PMIX_RANK") ? 1 : 0;
}

int gan_comm_launched(void)
{
    return launched_size() > 0;
}

gan_status gan_comm_open(gan_comm **out, struct gan_error *err)
{
    *out = &single;
    long size = launched_size();
    if (size <= 0)
        return GAN_OK;
#ifdef HAVE_MPI
    return gan_comm_mpi_open(out, err);
#else
    if (size == 1)
        return GAN_OK;
    return gan_error_set(err, GAN_ERR_UNSUPPORTED,
                         "started by mpirun as one of %ld ranks, but this ganctl was built without MPI: every rank would train the whole run; rebuild with ./configure --with-mpi (libopenmpi-dev), or run one process",
                         size);
#endif
}

/* The module's entry point (comm_nccl.c's gan_comm_nccl_open). */
typedef gan_status (*device_open_fn)(gan_comm *bootstrap, int device, gan_comm **out,
                                     struct gan_error *err);

gan_status gan_comm_open_device(const char *dir, const char *name, gan_comm *bootstrap,
                                int device, gan_comm **out, struct gan_error *err)
{
    *out = NULL;
    char path[4096], symbol[64];
    snprintf(path, sizeof path, "%s/comm_%s.so", dir, name);
    snprintf(symbol, sizeof symbol, "gan_comm_%s_open", name);
    /* RTLD_LOCAL: the engine's libraries (NCCL, the CUDA runtime) stay its own. The
     * handle is kept for the life of the process: the engine's code runs until the
     * end, and NCCL's threads with it. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return gan_error_set(err, GAN_ERR_NOT_FOUND, "the %s engine could not be loaded: %s", name,
                             dlerror());
    device_open_fn open_fn;
    *(void **)&open_fn = dlsym(handle, symbol);
    if (!open_fn) {
        dlclose(handle);
        return gan_error_set(err, GAN_ERR_ABI, "%s has no %s: it is not ganctl's %s engine", path,
                             symbol, name);
    }
    err->message[0] = '\0';
    gan_status st = open_fn(bootstrap, device, out, err);
    if (st != GAN_OK && !err->message[0])
        gan_error_set(err, st, "the %s engine did not start", name);
    return st;
}

void gan_comm_close(gan_comm *c)
{
    if (c && c != &single)
        c->ops->close(c);
}

/* ------------------------------------------------------------------ shorthands */

gan_status gan_comm_all_reduce(gan_comm *c, void *buf, size_t count, enum gan_comm_type type,
                               enum gan_comm_op op, struct gan_error *err)
{
    return c->size > 1 ? c->ops->all_reduce(c, buf, count, type, op, err) : GAN_OK;
}

gan_status gan_comm_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                              struct gan_error *err)
{
    return c->size > 1 ? c->ops->broadcast(c, buf, bytes, root, err) : GAN_OK;
}

gan_status gan_comm_barrier(gan_comm *c, struct gan_error *err)
{
    return c->size > 1 ? c->ops->barrier(c, err) : GAN_OK;
}
