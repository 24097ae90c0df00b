/* SPDX-License-Identifier: MIT */
/* comm.h — the communication layer of data-parallel training: one table of collective
 * operations (all-reduce with SUM, MAX or MIN, broadcast, barrier, abort) behind which an
 * engine sits, and the choice of engine when a run starts.
 *
 * Engines: "single" (one process, every operation is the identity: ganctl as it always
 * was), "mpi" (MPI_COMM_WORLD, built with --with-mpi), which moves host buffers, and
 * "nccl" for a device backend's gradients (comm_nccl.c, a module of its own,
 * bootstrapped over the MPI engine's broadcast). They fill the same table; the trainer
 * calls only the table, so an engine is added here without touching it.
 *
 * Why in the core and not a plugin kind: an engine is not chosen per run like a model or
 * a scaler but by how the program was started (mpirun or not), before anything else is
 * made, and it must be the same in every rank. MPI must be initialised before any thread
 * (BLAS, the backend) starts and finalised last, which only the program's own start-up
 * and exit can promise; and Open MPI opened through dlopen needs RTLD_GLOBAL, which the
 * plugin loader deliberately does not use (a module's symbols would then resolve every
 * later module's). The price is that a libganctl built with MPI links libmpi; a build
 * without it (--without-mpi) has the "single" engine only and no such dependency. */
#ifndef GANCTL_COMM_COMM_H
#define GANCTL_COMM_COMM_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>

#include "base/error.h"

enum gan_comm_type { GAN_COMM_F32, GAN_COMM_F64, GAN_COMM_U64 };
enum gan_comm_op { GAN_COMM_SUM, GAN_COMM_MAX, GAN_COMM_MIN };

typedef struct gan_comm gan_comm;

/* What an engine provides. Every operation is collective: every rank calls it, in the
 * same order, with the same count. A failure fills err with one line. */
struct gan_comm_ops {
    const char *name;                                  /* "single", "mpi" */
    /* buf[0..count) of `type`, combined by `op` over the ranks, in place, on every rank. */
    gan_status (*all_reduce)(gan_comm *c, void *buf, size_t count, enum gan_comm_type type,
                             enum gan_comm_op op, struct gan_error *err);
    /* `bytes` of buf from rank `root` to every rank. */
    gan_status (*broadcast)(gan_comm *c, void *buf, size_t bytes, int root,
                            struct gan_error *err);
    gan_status (*barrier)(gan_comm *c, struct gan_error *err);
    /* Ends every rank of the run with `code`; does not return in a run of several. */
    void (*abort)(gan_comm *c, int code);
    void (*close)(gan_comm *c);
};

struct gan_comm {
    const struct gan_comm_ops *ops;
    int rank, size;
    char description[160];       /* "mpi (Open MPI v4.1.4)" */
    void *engine;                /* the engine's own state */
    /* Set when every rank refused the run together (a configuration mismatch): rank 0
     * says why, the others need not repeat it. */
    int refused;
};

/* Whether this program was started by a process manager (mpirun's or a batch system's
 * environment variables) for a run of more than one rank. */
int gan_comm_launched(void);

/* The engine for how the program was started: "mpi" under mpirun with a build that has
 * it (MPI is initialised here), else "single". Under mpirun with more than one rank and
 * a build without MPI, GAN_ERR_UNSUPPORTED: the ranks would each train the whole run. */
gan_status gan_comm_open(gan_comm **out, struct gan_error *err);
void gan_comm_close(gan_comm *c);

/* The single-process engine, also what a trainer without a communicator uses. */
gan_comm *gan_comm_single(void);

/* An engine for the gradients of a device backend, from the module `dir`/comm_NAME.so
 * (today "nccl": comm_nccl.c), on GPU `device`, bootstrapped over `bootstrap`; every
 * rank calls it together. GAN_ERR_NOT_FOUND when the build or the folder has no such
 * module. The engine is closed with gan_comm_close before `bootstrap` is. */
gan_status gan_comm_open_device(const char *dir, const char *name, gan_comm *bootstrap,
                                int device, gan_comm **out, struct gan_error *err);

/* Shorthands for the table. */
gan_status gan_comm_all_reduce(gan_comm *c, void *buf, size_t count, enum gan_comm_type type,
                               enum gan_comm_op op, struct gan_error *err);
gan_status gan_comm_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                              struct gan_error *err);
gan_status gan_comm_barrier(gan_comm *c, struct gan_error *err);

#ifdef HAVE_MPI
/* comm_mpi.c */
gan_status gan_comm_mpi_open(gan_comm **out, struct gan_error *err);
#endif

#endif
