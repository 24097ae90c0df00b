/* SPDX-License-Identifier: MIT */
/* ranks.c — the program as one rank of a data-parallel run (ranks.h). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ranks.h"

static int sink_rank;

/* ------------------------------------------------------------------ the watchdog */

/* A rank that dies is mpirun's to notice; one that hangs (a wedged device, a stopped
 * process) would hold the others in their next collective for ever. So every
 * collective of a run of several ranks is timed by an alarm: past the timeout the rank
 * says so in one line and exits, and mpirun then ends the others. The timeout is
 * GANCTL_COLLECTIVE_TIMEOUT seconds (0: none), long by default because a collective
 * also waits for rank 0's evaluations and checkpoints. */
#define DEFAULT_TIMEOUT_S 900

static unsigned watchdog_s;
static char watchdog_line[256];

static void on_watchdog(int signo)
{
    (void)signo;
    ssize_t n = write(STDERR_FILENO, watchdog_line, strlen(watchdog_line));
    (void)n;
    /* mpirun ends the job as soon as a rank exits, and may not have forwarded the
     * line yet: give it a second. */
    sleep(1);
    _exit(1);
}

/* The engine the trainer is given: the real one's operations, each under the alarm. */
struct watched {
    gan_comm comm;               /* first: the table's functions get this */
    gan_comm *inner;
};

static gan_comm *inner_of(gan_comm *c)
{
    return ((struct watched *)c)->inner;
}

static gan_status watched_all_reduce(gan_comm *c, void *buf, size_t count,
                                     enum gan_comm_type type, enum gan_comm_op op,
                                     struct gan_error *err)
{
    alarm(watchdog_s);
    gan_status st = inner_of(c)->ops->all_reduce(inner_of(c), buf, count, type, op, err);
    alarm(0);
    return st;
}

static gan_status watched_broadcast(gan_comm *c, void *buf, size_t bytes, int root,
                                    struct gan_error *err)
{
    alarm(watchdog_s);
    gan_status st = inner_of(c)->ops->broadcast(inner_of(c), buf, bytes, root, err);
    alarm(0);
    return st;
}

static gan_status watched_barrier(gan_comm *c, struct gan_error *err)
{
    alarm(watchdog_s);
    gan_status st = inner_of(c)->ops->barrier(inner_of(c), err);
    alarm(0);
    return st;
}

static void watched_abort(gan_comm *c, int code)
{
    inner_of(c)->ops->abort(inner_of(c), code);
}

static void watched_close(gan_comm *c)
{
    gan_comm_close(inner_of(c));
    free(c);
}

/* Named after the engine it watches (watch sets the name). */
static struct gan_comm_ops watched_ops = {
    .name = NULL, .all_reduce = watched_all_reduce, .broadcast = watched_broadcast,
    .barrier = watched_barrier, .abort = watched_abort, .close = watched_close,
};

/* `inner` under the watchdog, or `inner` itself when it has one rank, the timeout is
 * 0 or memory is short. */
static gan_comm *watch(gan_comm *inner, long s)
{
    if (inner->size <= 1 || s <= 0)
        return inner;
    struct watched *w = calloc(1, sizeof *w);
    if (!w)
        return inner;
    watchdog_s = (unsigned)s;
    snprintf(watchdog_line, sizeof watchdog_line,
             "ganctl: rank %d: no answer from the other ranks for %u s in a collective (one of them hung or stopped): ending this rank; resume from the last checkpoint\n",
             inner->rank, watchdog_s);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_watchdog;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    watched_ops.name = inner->ops->name;
    w->comm = *inner;
    w->comm.ops = &watched_ops;
    w->inner = inner;
    return &w->comm;
}

/* ------------------------------------------------------------------ the log */

/* The log sink of a rank other than 0: "ganctl: rank 1: ..." on stderr. */
static void rank_sink(void *ctx, enum gan_log_level level, const char *line)
{
    (void)ctx, (void)level;
    fprintf(stderr, "ganctl: rank %d: %s\n", sink_rank, line);
}

/* GANCTL_COLLECTIVE_TIMEOUT in seconds, DEFAULT_TIMEOUT_S when unset; -1 for a value
 * that is not a whole number, which must not quietly turn the watchdog off. */
static long collective_timeout_s(const char **text)
{
    const char *v = getenv("GANCTL_COLLECTIVE_TIMEOUT");
    *text = v;
    if (!v || !*v)
        return DEFAULT_TIMEOUT_S;
    char *end;
    errno = 0;
    long s = strtol(v, &end, 10);
    return *end || errno || s < 0 || s > 100000000 ? -1 : s;
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
    const char *timeout_text;
    long timeout_s = collective_timeout_s(&timeout_text);
    if ((*comm)->size > 1) {
        /* Every rank learns whether any was given a bad value, so that one line says so
         * (rank 0's, unless only others have it) and all refuse together. */
        uint64_t bad = timeout_s < 0, any = bad;
        if (gan_comm_all_reduce(*comm, &any, 1, GAN_COMM_U64, GAN_COMM_MAX, &err) != GAN_OK) {
            fprintf(stderr, "ganctl: %s\n", err.message);
            return 1;
        }
        if (any) {
            uint64_t on_leader = (*comm)->rank == 0 ? bad : 0;
            if (gan_comm_broadcast(*comm, &on_leader, sizeof on_leader, 0, &err) == GAN_OK &&
                bad && ((*comm)->rank == 0 || !on_leader)) {
                char line[512], prefix[32] = "";
                if ((*comm)->rank > 0)
                    snprintf(prefix, sizeof prefix, "rank %d: ", (*comm)->rank);
                snprintf(line, sizeof line,
                         "ganctl: %sGANCTL_COLLECTIVE_TIMEOUT=\"%s\" is not a whole number of seconds: set it to one (%d by default; 0 waits for ever) or unset it\n",
                         prefix, timeout_text, DEFAULT_TIMEOUT_S);
                fputs(line, stderr);
            }
            (*comm)->refused = 1;
            return 2;
        }
    }
    *comm = watch(*comm, timeout_s);
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

/* Set when the run loop ended on every rank alike: a diverged run's exit status is
 * not 0, yet its ranks are all here, and an abort could kill rank 0 while it still
 * writes summary.json. */
static int ended_together;

void gan_cli_ranks_ended_together(gan_comm *comm)
{
    (void)comm;
    ended_together = 1;
}

int gan_cli_ranks_close(gan_comm *comm, int rc, int rc_signal_min)
{
    if (comm->size > 1) {
        fflush(stdout);
        fflush(stderr);
        /* A refusal every rank reached, a completed run and a stop all leave every rank
         * here together; any other failure was this rank's alone. */
        int together = rc == 0 || rc >= rc_signal_min || comm->refused || ended_together;
        struct gan_error err;
        if (!together || gan_comm_barrier(comm, &err) != GAN_OK)
            comm->ops->abort(comm, rc ? rc : 1);
    }
    gan_comm_close(comm);
    return rc;
}
