/* SPDX-License-Identifier: MIT */
/* thread_pool.c — the instance's own worker threads, which split the backend's
 * element-wise, reduction, cast, Adam and gradient-statistics kernels across
 * backend.threads. Owned by one instance: two instances share nothing. */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "cpu_backend.h"

/* One thread budget for the whole backend: a kernel of ours runs on the calling thread
 * and `workers` = threads − 1 pool threads, OpenBLAS's GEMMs on its own `threads`
 * threads, and the two never run at the same time (every kernel returns finished), so
 * no more than `threads` threads compute at once. Idle workers sleep on a condition
 * variable, never spin: a spinning worker would take the core from OpenBLAS's threads
 * (or from another program) between our kernels. A job is woken with one broadcast
 * and joined with one wait, a few microseconds each, which is why kernels below
 * CPU_PARALLEL_MIN elements of work stay on the calling thread. */
struct cpu_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;     /* workers wait here for the next job */
    pthread_cond_t finished; /* the caller waits here for the workers */
    uint64_t generation;     /* counts jobs; a worker runs each generation once */
    int stop;
    int pending;             /* workers that have not finished the current job */
    /* The current job: part p of `parts` covers [begin(p), begin(p + 1)). */
    cpu_range_fn fn;
    void *arg;
    int64_t n, align;
    int parts;
    int workers;
    int started;             /* threads actually created, for the teardown */
    pthread_t thread[];
};

struct worker_start {
    struct cpu_pool *pool;
    int index; /* 1 … workers; the caller is part 0 */
};

/* The first unit of part p: parts split whole blocks of `align` units as evenly as they
 * can, so a boundary never cuts a block a kernel reduces as one. */
static int64_t part_begin(int64_t n, int64_t align, int parts, int p)
{
    int64_t blocks = (n + align - 1) / align;
    int64_t b = blocks * p / parts;
    int64_t u = b * align;
    return u < n ? u : n;
}

static void run_part(struct cpu_pool *pool, int p)
{
    int64_t lo = part_begin(pool->n, pool->align, pool->parts, p);
    int64_t hi = part_begin(pool->n, pool->align, pool->parts, p + 1);
    if (lo < hi)
        pool->fn(pool->arg, p, lo, hi);
}

static void *worker_main(void *arg)
{
    struct worker_start *ws = arg;
    struct cpu_pool *pool = ws->pool;
    int index = ws->index;
    free(ws);
    uint64_t seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->generation == seen && !pool->stop)
            pthread_cond_wait(&pool->wake, &pool->lock);
        if (pool->stop)
            break;
        seen = pool->generation;
        int mine = index < pool->parts;
        pthread_mutex_unlock(&pool->lock);
        if (mine)
            run_part(pool, index);
        pthread_mutex_lock(&pool->lock);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->finished);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void pool_stop(struct cpu_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->stop = 1;
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
        ws->index = i + 1;
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

int cpu_parallel_parts(const gan_backend *be, int64_t n, int64_t align, int64_t work_per_unit)
{
    if (!be->pool || n <= 0 || align <= 0)
        return 1;
    int64_t work = n > INT64_MAX / (work_per_unit > 0 ? work_per_unit : 1)
                       ? INT64_MAX
                       : n * (work_per_unit > 0 ? work_per_unit : 1);
    int64_t by_work = work / CPU_PARALLEL_MIN;
    int64_t by_blocks = (n + align - 1) / align;
    int64_t parts = be->threads < CPU_MAX_PARTS ? be->threads : CPU_MAX_PARTS;
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
    if (parts > pool->workers + 1)
        parts = pool->workers + 1;
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->n = n;
    pool->align = align;
    pool->parts = parts;
    pool->pending = pool->workers;
    pool->generation++;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);

    run_part(pool, 0);

    pthread_mutex_lock(&pool->lock);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->finished, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}
