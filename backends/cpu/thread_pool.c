/* SPDX-License-Identifier: MIT */
/* thread_pool.c — the instance's own worker threads, which split the backend's
 * element-wise, reduction, cast, Adam and gradient-statistics kernels, its own GEMM,
 * OpenBLAS's products (sgemm_split.c) and oneDNN's BF16 products (onednn_rows.c) across
 * backend.threads. Owned by one instance: two instances share nothing. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu_backend.h"

/* One thread budget for the whole backend: a kernel of ours runs on the calling thread
 * and `workers` = threads − 1 pool threads, and so do OpenBLAS's and oneDNN's products
 * where the backend cuts them, one call on one thread a part (sgemm_split.c,
 * onednn_rows.c); oneDNN's other primitives, and OpenBLAS's products where it keeps its
 * own threads, run on threads of their own (at most as many). Every kernel returns
 * finished, so no more than `threads` threads compute at once.
 *
 * A worker that has finished its part stays awake for CPU_POOL_SPIN_NS, watching for
 * the next job, then sleeps on a condition variable. The step's kernels follow one
 * another within microseconds (a product, its bias, its activation, the next product),
 * and a sleeping worker takes tens of microseconds to wake, longer than a kernel of a
 * few hundred thousand elements lasts: awake, it takes its part at once. Before oneDNN
 * runs, or OpenBLAS on its own threads, the backend hushes the pool (cpu_pool_hush):
 * the watching workers sleep at once and leave the cores to those threads.
 *
 * A job's parts are claimed, not assigned: the caller and each woken worker take the
 * next unclaimed part until none is left, and the caller waits only for parts that a
 * worker has started. On a busy machine a worker that is not scheduled in time costs
 * nothing but its share, which the caller then computes itself. Which thread computes
 * a part never matters: a part is a fixed range, and kernels keep partial results per
 * part, never per thread. */

/* How long a worker watches for the next job, and the caller for the parts workers
 * took, before sleeping: longer than the gaps between a step's kernels, short enough
 * that a pause of the step (data, metrics) leaves the cores to other programs. With
 * more threads than the process may run on at once, nobody watches: a watching thread
 * would take the core a working one needs. */
#define CPU_POOL_SPIN_NS 100000

/* The claim word: the job's generation (bits 16 and up), its number of parts (bits 8 to
 * 15) and the next unclaimed part (bits 0 to 7). One compare-and-swap claims a part of
 * exactly the job a worker woke for. */
#define CLAIM_WORD(gen, parts, next) (((gen) << 16) | ((uint64_t)(parts) << 8) | (uint64_t)(next))

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A hint to the core that this thread is waiting in a loop. */
static inline void spin_pause(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

int cpu_usable_cpus(void)
{
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
#endif
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

struct cpu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* workers wait here for the next job */
    pthread_cond_t finished; /* the caller waits here for the parts workers took */
    _Atomic uint64_t generation; /* counts jobs; changed under lock */
    _Atomic int hushed;      /* watching workers go to sleep (cpu_pool_hush) */
    int stop;
    _Atomic uint64_t claim;
    _Atomic int done;        /* parts of the current job finished */
    int waiting;             /* the caller sleeps on `finished`, under lock */
    /* The current job, written before its claim word is published. */
    cpu_range_fn fn;
    void *arg;
    int64_t n, align;
    int workers;
    int64_t watch_ns;        /* CPU_POOL_SPIN_NS, or 0 with more threads than CPUs */
    int started;             /* threads actually created, for the teardown */
    pthread_t thread[];
};

/* The first unit of part p: parts split whole blocks of `align` units as evenly as they
 * can, so a boundary never cuts a block a kernel reduces as one. */
int64_t cpu_part_begin(int64_t n, int64_t align, int parts, int p)
{
    int64_t blocks = (n + align - 1) / align;
    int64_t b = blocks * p / parts;
    int64_t u = b * align;
    return u < n ? u : n;
}

int cpu_runs(int most, int64_t units, int64_t align, int64_t work_per_unit, int64_t min_work)
{
    const int64_t blocks = (units + align - 1) / align;
    const int64_t by_work = units * work_per_unit / min_work;
    int64_t top = most < CPU_MAX_PARTS ? most : CPU_MAX_PARTS;
    top = top < blocks ? top : blocks;
    top = top < by_work ? top : by_work;
    for (int r = (int)top; r > 1; r--) {
        int64_t smallest = units;
        for (int p = 0; p < r; p++) {
            int64_t len = cpu_part_begin(units, align, r, p + 1) -
                          cpu_part_begin(units, align, r, p);
            smallest = len < smallest ? len : smallest;
        }
        /* no run of the last, partial block alone: a run that small would do little
         * work, and a library may take it on another kernel */
        if (smallest * work_per_unit >= min_work && (smallest >= align || smallest == units))
            return r;
    }
    return 1;
}

/* Claims and runs parts of job `gen` until none is left. */
static void run_parts(struct cpu_pool *pool, uint64_t gen)
{
    uint64_t w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    for (;;) {
        int parts = (int)((w >> 8) & 0xff), next = (int)(w & 0xff);
        if ((w >> 16) != (gen & (UINT64_MAX >> 16)) || next >= parts)
            return;
        if (!atomic_compare_exchange_weak_explicit(&pool->claim, &w, w + 1,
                                                   memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        int64_t lo = cpu_part_begin(pool->n, pool->align, parts, next);
        int64_t hi = cpu_part_begin(pool->n, pool->align, parts, next + 1);
        if (lo < hi)
            pool->fn(pool->arg, next, lo, hi);
        if (atomic_fetch_add_explicit(&pool->done, 1, memory_order_acq_rel) + 1 == parts) {
            pthread_mutex_lock(&pool->lock);
            if (pool->waiting)
                pthread_cond_signal(&pool->finished);
            pthread_mutex_unlock(&pool->lock);
        }
        w = atomic_load_explicit(&pool->claim, memory_order_acquire);
    }
}

struct worker_start {
    struct cpu_pool *pool;
};

/* Watches for a job after `seen` for CPU_POOL_SPIN_NS; returns its generation, or
 * `seen` when none came or the pool was hushed. */
static uint64_t watch(struct cpu_pool *pool, uint64_t seen)
{
    if (pool->watch_ns == 0)
        return seen;
    const int64_t until = now_ns() + pool->watch_ns;
    for (unsigned i = 0;; i++) {
        uint64_t gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (gen != seen)
            return gen;
        if (atomic_load_explicit(&pool->hushed, memory_order_relaxed))
            return seen;
        /* the clock every 64 pauses: a pause lasts tens of cycles */
        if (i % 64 == 63 && now_ns() >= until)
            return seen;
        spin_pause();
    }
}

static void *worker_main(void *arg)
{
    struct worker_start *ws = arg;
    struct cpu_pool *pool = ws->pool;
    free(ws);
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (atomic_load_explicit(&pool->generation, memory_order_relaxed) == seen &&
               !pool->stop)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop)
            break;
        seen = atomic_load_explicit(&pool->generation, memory_order_relaxed);
        pthread_mutex_unlock(&pool->lock);
        for (;;) {
            run_parts(pool, seen);
            uint64_t next = watch(pool, seen);
            if (next == seen)
                break;
            seen = next;
        }
        pthread_mutex_lock(&pool->lock);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void pool_stop(struct cpu_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
    atomic_store_explicit(&pool->hushed, 1, memory_order_relaxed); /* stop watching */
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->started; i++)
        pthread_join(pool->thread[i], NULL);
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

gan_status cpu_pool_open(gan_backend *be)
{
    const struct gan_host *host = be->host;
    be->pool = NULL;
    int workers = be->threads - 1;
    if (workers <= 0)
        return GAN_OK;
    struct cpu_pool *pool = calloc(1, sizeof *pool + (size_t)workers * sizeof(pthread_t));
    if (!pool)
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: out of memory for %d worker threads; lower "
                          "backend.threads", workers);
    pool->workers = workers;
    pool->watch_ns = be->threads <= cpu_usable_cpus() ? CPU_POOL_SPIN_NS : 0;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: cannot make the worker threads' lock");
    }
    if (pthread_cond_init(&pool->wake, NULL) != 0) {
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: cannot make the worker threads' condition variable");
    }
    if (pthread_cond_init(&pool->finished, NULL) != 0) {
        pthread_cond_destroy(&pool->wake);
        pthread_mutex_destroy(&pool->lock);
        free(pool);
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: cannot make the worker threads' condition variable");
    }
    /* Workers take no signals: the program's handlers (an interrupted run saving its
     * checkpoint) run on the threads the program made. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    for (int i = 0; i < workers; i++) {
        struct worker_start *ws = malloc(sizeof *ws);
        if (!ws) {
            rc = -1;
            break;
        }
        ws->pool = pool;
        if ((rc = pthread_create(&pool->thread[i], NULL, worker_main, ws)) != 0) {
            free(ws);
            break;
        }
        pool->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pool->started < workers) {
        int started = pool->started;
        pool_stop(pool);
        return host->fail(host->ctx, GAN_ERR_NOMEM,
                          "backend cpu: could start only %d of %d worker threads (%s); "
                          "lower backend.threads", started, workers,
                          rc > 0 ? "the system refused more" : "out of memory");
    }
    be->pool = pool;
    return GAN_OK;
}

void cpu_pool_close(gan_backend *be)
{
    if (be->pool)
        pool_stop(be->pool);
    be->pool = NULL;
}

uint64_t cpu_pool_jobs(const gan_backend *be)
{
    /* Only the calling thread starts jobs, so it reads its own count. */
    return be->pool ? atomic_load_explicit(&be->pool->generation, memory_order_relaxed) : 0;
}

int cpu_parallel_parts(const gan_backend *be, int64_t n, int64_t align, int64_t work_per_unit)
{
    if (!be->pool || n <= 0 || align <= 0)
        return 1;
    int64_t work = n > INT64_MAX / (work_per_unit > 0 ? work_per_unit : 1)
                       ? INT64_MAX
                       : n * (work_per_unit > 0 ? work_per_unit : 1);
    int64_t by_work = work / CPU_PARALLEL_MIN;
    int64_t by_blocks = (n + align - 1) / align;
    /* Two parts a thread, so that the parts a late worker leaves are shared out. */
    int64_t parts = 2 * (int64_t)be->threads;
    if (parts > CPU_MAX_PARTS)
        parts = CPU_MAX_PARTS;
    if (parts > by_work)
        parts = by_work;
    if (parts > by_blocks)
        parts = by_blocks;
    return parts < 1 ? 1 : (int)parts;
}

void cpu_parallel_for(gan_backend *be, int parts, int64_t n, int64_t align, cpu_range_fn fn,
                      void *arg)
{
    if (n <= 0)
        return;
    struct cpu_pool *pool = be->pool;
    if (parts <= 1 || !pool) {
        fn(arg, 0, 0, n);
        return;
    }
    if (parts > CPU_MAX_PARTS)
        parts = CPU_MAX_PARTS;
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->align = align;
    uint64_t gen = atomic_load_explicit(&pool->generation, memory_order_relaxed) + 1;
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->claim, CLAIM_WORD(gen & (UINT64_MAX >> 16), parts, 0),
                          memory_order_release);
    atomic_store_explicit(&pool->hushed, 0, memory_order_relaxed);
    /* published after the claim word: a watching worker that sees it finds the job */
    atomic_store_explicit(&pool->generation, gen, memory_order_release);
    /* Only as many workers as there are parts beyond the caller's first. */
    if (parts - 1 >= pool->workers)
        pthread_cond_broadcast(&pool->wake);
    else
        for (int i = 0; i < parts - 1; i++)
            pthread_cond_signal(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_parts(pool, gen);

    /* The parts workers took end soon: watch for them before sleeping. */
    const int64_t until = now_ns() + pool->watch_ns;
    for (unsigned i = 0; pool->watch_ns > 0 &&
                         atomic_load_explicit(&pool->done, memory_order_acquire) < parts;
         i++) {
        if (i % 64 == 63 && now_ns() >= until)
            break;
        spin_pause();
    }
    if (atomic_load_explicit(&pool->done, memory_order_acquire) < parts) {
        pthread_mutex_lock(&pool->lock);
        pool->waiting = 1;
        while (atomic_load_explicit(&pool->done, memory_order_acquire) < parts)
            pthread_cond_wait(&pool->finished, &pool->lock);
        pool->waiting = 0;
        pthread_mutex_unlock(&pool->lock);
    }
}

void cpu_pool_hush(gan_backend *be)
{
    if (be->pool)
        atomic_store_explicit(&be->pool->hushed, 1, memory_order_relaxed);
}
