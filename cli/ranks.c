/* SPDX-License-Identifier: MIT */
/* ranks.c — the program as one rank of a data-parallel run (ranks.h). */
#include "config.h"

#include <stdio.h>

#include "ranks.h"

static int sink_rank;

/* The log sink of a rank other than 0: "ganctl: rank 1: ..." on stderr. */
static void rank_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx, (void)level;
    fprintf(stderr, "ganctl: rank %d: %s\n", sink_rank, line);
}

int gan_cli_ranks_open(gan_comm **comm, struct gan_log *rank_log, const struct gan_log *log)
{
    struct gan_error err;
    gan_error_clear(&err);
    *rank_log = *log;
    if (gan_comm_open(comm, &err) != GAN_OK) {
        *comm = gan_comm_single();
        fprintf(stderr, "ganctl: %s\n", err.message);
        return 1;
    }
    if ((*comm)->rank > 0) {
        sink_rank = (*comm)->rank;
        rank_log->sink = rank_sink;
        rank_log->sink_ctx = NULL;
        if (rank_log->level < GAN_LOG_DEBUG)
            rank_log->level = GAN_LOG_WARN;
    }
    return 0;
}

int gan_cli_ranks_speaks(const gan_comm *comm)
{
    return comm->rank == 0;
}

int gan_cli_ranks_fail(const gan_comm *comm, const struct gan_error *err,
                       int (*fail_line)(const struct gan_error *err))
{
    if (comm->rank > 0 && comm->refused)
        return err->status == GAN_ERR_CONFIG ? 2 : 1;
    if (comm->rank > 0)
        fprintf(stderr, "ganctl: rank %d: ", comm->rank);
    return fail_line(err);
}

int gan_cli_ranks_close(gan_comm *comm, int rc, int rc_signal_min)
{
    if (comm->size > 1) {
        fflush(stdout);
        fflush(stderr);
        /* A refusal every rank reached, a completed run and a stop all leave every rank
         * here together; any other failure was this rank's alone. */
        int together = rc == 0 || rc >= rc_signal_min || comm->refused;
        struct gan_error err;
        if (!together || gan_comm_barrier(comm, &err) != GAN_OK)
            comm->ops->abort(comm, rc ? rc : 1);
    }
    gan_comm_close(comm);
    return rc;
}
