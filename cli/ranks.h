/* SPDX-License-Identifier: MIT */
/* ranks.h — what the program does differently as one rank of a data-parallel run
 * (mpirun -np N ganctl): start and end the communication engine, keep the other
 * ranks' log to warnings with their rank in each line, and end every rank when one
 * fails, so that none waits for it. */
#ifndef GANCTL_CLI_RANKS_H
#define GANCTL_CLI_RANKS_H

#include "base/log.h"
#include "comm/comm.h"

/* Opens the engine (comm.h) and fills *rank_log: `log` itself on rank 0, on the others
 * the same at warnings and errors only (unless log.level asks for debug), each line
 * naming the rank. Returns 0, or the exit status after printing why not. */
int gan_cli_ranks_open(gan_comm **comm, struct gan_log *rank_log, const struct gan_log *log);

/* Whether this process prints results (rank 0, or one process). */
int gan_cli_ranks_speaks(const gan_comm *comm);

/* Prints a failure the way fail_line does, unless every rank refused together and this
 * is not rank 0 (rank 0 has said it). Returns the exit status for it. */
int gan_cli_ranks_fail(const gan_comm *comm, const struct gan_error *err,
                       int (*fail_line)(const struct gan_error *err));

/* Says that this rank's run loop ended as every rank's does (completed, diverged or
 * stopped by a signal), with nothing left to wait for. */
void gan_cli_ranks_ended_together(gan_comm *comm);

/* Ends the engine with the program's exit status `rc`: after a barrier when the run
 * ended as planned (0, gan_cli_ranks_ended_together: a diverged run's 3 too) or by a
 * signal (rc_signal_min and above), so that rank 0 has written everything; otherwise
 * by aborting every rank, since the others may be waiting in a collective this one
 * will never join. Returns rc. */
int gan_cli_ranks_close(gan_comm *comm, int rc, int rc_signal_min);

#endif
