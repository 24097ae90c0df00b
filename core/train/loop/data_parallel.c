/* SPDX-License-Identifier: MIT */
/* data_parallel.c — one run trained by N ranks, each a process with its own backend,
 * as if by one process: N ranks × B/N rows ≡ 1 process × B rows.
 *
 * - The batch: every rank reads the same Philox streams one process would, at the
 *   position of its rows: rank r takes rows [r·B/N, (r+1)·B/N) of the real batch (the
 *   sampler draws the whole batch, which costs little beside a step, so that its state
 *   stays the one process's), of z and of the loss terms' per-sample draws (the
 *   penalty's α), and each stream then moves on as far as one process's would. Every
 *   draw is positional (value i from block offset + i/4, backend.h), so the rank's rows
 *   start at a block when B/N·z_dim and B/N are multiples of 4: B must be a multiple of
 *   4·N (refused at start-up otherwise).
 * - Means: every term is a mean over the batch, so the objective of B rows is the mean
 *   of the ranks' objectives over B/N rows, and its gradient the mean of theirs: the
 *   unscaled FP32 gradients are all-reduced (SUM) and divided by N, for the critic and
 *   the generator, after the scaled backward and before the scaler's verdict. The
 *   values a metrics row shows are averaged the same way.
 * - One verdict: the statistics each scaler is shown are those of all ranks' 16-bit
 *   gradients together: counts summed, absmax the maximum, the smallest non-zero
 *   magnitude the minimum, sums of squares summed; an objective that is not finite on
 *   one rank is not finite for all (its average is not), so a forward overflow on one
 *   rank is every rank's. Every rank's scaler thus sees the same input and makes the same
 *   decision, and the weights stay bit-identical: checked (a hash of both networks'
 *   parameters compared over the ranks) at start-up and at every checkpoint.
 * - Outputs: only rank 0 (the leader) writes the run folder; the others read it to
 *   resume. Stopping (a signal) is agreed at each iteration, so all stop together.
 *
 * With one rank there is no layer: the trainer holds none (gan_dp_open gives NULL) and its
 * steps call the single-process batch (batch.c) alone. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strings.h"
#include "tensor/tensor_core.h"
#include "train/loop/data_parallel.h"

struct gan_data_parallel {
    gan_comm *comm;               /* borrowed */
    gan_comm *grad_comm;          /* the gradients' engine: comm, or a device engine owned here */
    const struct gan_log *log;
    int rank, size;
    int64_t first_row, rows;
    float *grads;                 /* a host copy of a gradient arena, for the all-reduce */
    size_t grads_count;
    int overflow_rank;            /* the test hook's (GANCTL_TEST_OVERFLOW); -1 none */
    int64_t overflow_iteration;
    double comm_s;                /* time in the collectives, this session */
    int64_t collectives;
    int trained;                  /* an iteration began: the collectives' time is worth a line */
};

static gan_status nomem(struct gan_error *err)
{
    return gan_error_nomem(err, "setting up data parallel training");
}

gan_status gan_dp_open(gan_comm *comm, const struct gan_log *log, gan_data_parallel **out,
                       struct gan_error *err)
{
    *out = NULL;
    if (!comm || comm->size == 1)
        return GAN_OK;
    gan_data_parallel *dp = calloc(1, sizeof *dp);
    if (!dp)
        return nomem(err);
    dp->comm = comm;
    dp->grad_comm = comm;
    dp->log = log;
    dp->rank = comm->rank;
    dp->size = comm->size;
    dp->overflow_rank = -1;
    /* The test hook of ganctl(1) DATA PARALLEL: "RANK:ITERATION" counts one non-finite
     * gradient element in the first critic step of ITERATION on RANK only. */
    const char *hook = getenv("GANCTL_TEST_OVERFLOW");
    int r;
    long long it;
    if (hook && sscanf(hook, "%d:%lld", &r, &it) == 2) {
        dp->overflow_rank = r;
        dp->overflow_iteration = it;
    }
    *out = dp;
    return GAN_OK;
}

int gan_dp_rank(const gan_data_parallel *dp)
{
    return dp ? dp->rank : 0;
}

int gan_dp_size(const gan_data_parallel *dp)
{
    return dp ? dp->size : 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The collectives of the steps, timed: the communication share of a step (which
 * includes waiting for the slowest rank). */
static gan_status all_reduce_on(gan_data_parallel *dp, gan_comm *comm, void *buf, size_t count,
                                enum gan_comm_type type, enum gan_comm_op op,
                                struct gan_error *err)
{
    double t0 = now_s();
    gan_status st = gan_comm_all_reduce(comm, buf, count, type, op, err);
    dp->comm_s += now_s() - t0;
    dp->collectives++;
    return st;
}

static gan_status all_reduce(gan_data_parallel *dp, void *buf, size_t count, enum gan_comm_type type,
                             enum gan_comm_op op, struct gan_error *err)
{
    return all_reduce_on(dp, dp->comm, buf, count, type, op, err);
}

void gan_dp_free(gan_data_parallel *dp, double session_s)
{
    if (!dp)
        return;
    if (dp->trained)
        gan_log_write(dp->log, GAN_LOG_INFO, "data parallel: %.3f s of this session's %.3f s in %lld collectives (%.1f%%)",
                      dp->comm_s, session_s, (long long)dp->collectives,
                      session_s > 0 ? 100.0 * dp->comm_s / session_s : 0.0);
    if (dp->grad_comm != dp->comm)
        gan_comm_close(dp->grad_comm);
    free(dp->grads);
    free(dp);
}

/* ------------------------------------------------------------------ start-up */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static uint64_t hash_text(uint64_t h, const char *s)
{
    return fnv1a(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t hash_module(uint64_t h, const struct gan_module *m)
{
    if (!m)
        return hash_text(h, "-");
    h = hash_text(h, m->plugin.name);
    return hash_text(h, m->plugin.version);
}

/* Whether every rank holds the same value: the maximum of v and of its complement. */
static gan_status same_everywhere(gan_data_parallel *dp, uint64_t v, int *same, struct gan_error *err)
{
    uint64_t both[2] = { v, ~v };
    gan_status st = all_reduce(dp, both, 2, GAN_COMM_U64, GAN_COMM_MAX, err);
    *same = st == GAN_OK && both[0] == ~both[1];
    return st;
}

/* A refusal every rank reaches together: the leader prints it, the others stay quiet. */
static gan_status refuse_together(gan_data_parallel *dp, gan_status status, struct gan_error *err)
{
    (void)err;
    dp->comm->refused = 1;
    return status;
}

/* A device backend's gradients go through NCCL when the build has its engine (beside
 * the backend's module); without it they go through the host engine, as a CPU
 * backend's do. Every rank runs the same backend (the configuration check). */
static gan_status open_device_engine(gan_data_parallel *dp, const gan_session *s, const gan_config *cfg,
                                     struct gan_error *err)
{
    const struct gan_module *be = s->backend_module;
    if (!be || strcmp(be->plugin.name, "cuda") != 0)
        return GAN_OK;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", be->path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    long long device = 0;
    gan_config_get_int(cfg, "backend.device", &device);
    struct gan_error why;
    gan_error_clear(&why);
    gan_comm *c = NULL;
    if (gan_comm_open_device(dir, "nccl", dp->comm, (int)device, &c, &why) != GAN_OK) {
        /* Every rank sees the same reason (the same build and files), or NCCL's own
         * initialisation failed on all of them together. */
        gan_log_write(dp->log, GAN_LOG_WARN, "data parallel: the gradients go through %s with host copies: %s",
                      dp->comm->ops->name, why.message);
        return GAN_OK;
    }
    (void)err;
    dp->grad_comm = c;
    gan_log_write(dp->log, GAN_LOG_INFO, "data parallel: gradients over %s", c->description);
    return GAN_OK;
}

/* Each rank's backend, in the leader's log. */
static gan_status log_ranks(gan_data_parallel *dp, const gan_session *s, struct gan_error *err)
{
    char line[256];
    gan_log_write(dp->log, GAN_LOG_INFO, "data parallel: %d ranks over %s, %lld of the batch's %lld rows each",
                  dp->size, dp->comm->description, (long long)dp->rows,
                  (long long)s->set.batch);
    for (int r = 0; r < dp->size; r++) {
        memset(line, 0, sizeof line);
        if (r == dp->rank)
            snprintf(line, sizeof line, "%s", gan_backend_instance_describe(s->backend));
        gan_status st = gan_comm_broadcast(dp->comm, line, sizeof line, r, err);
        if (st != GAN_OK)
            return st;
        line[sizeof line - 1] = '\0';
        gan_log_write(dp->log, GAN_LOG_INFO, "rank %d: backend %s", r, line);
    }
    return GAN_OK;
}

/* The dotted key and value of line `index` of a configuration's text
 * ("run.seed = 2"): the groups that enclose it give the key its prefix. */
static void describe_config_line(const char *text, size_t index, char *out, size_t size)
{
    char key[256] = "";
    size_t line = 0;
    const char *p = text;
    snprintf(out, size, "(nothing)");
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n && *p == ' ') {
            p++;
            n--;
        }
        const char *eq = memchr(p, '=', n);
        if (line == index) {
            if (eq && eq > p) {
                const char *v = eq + 1;
                size_t vn = n - (size_t)(v - p);
                while (vn && *v == ' ') {
                    v++;
                    vn--;
                }
                if (vn && v[vn - 1] == ';')
                    vn--;
                size_t name = (size_t)(eq - p);
                while (name && p[name - 1] == ' ')
                    name--;
                snprintf(out, size, "%s%.*s = %.*s", key, (int)name, p, (int)vn, v);
            } else {
                snprintf(out, size, "%.*s", (int)n, p);
            }
            return;
        }
        if (eq && n >= 1 && p[n - 1] == '{') {
            size_t k = strlen(key), name = (size_t)(eq - p);
            while (name && p[name - 1] == ' ')
                name--;
            snprintf(key + k, sizeof key - k, "%.*s.", (int)name, p);
        } else if (n && *p == '}') {
            size_t k = strlen(key);
            if (k)
                key[--k] = '\0';
            char *dot = strrchr(key, '.');
            if (dot)
                dot[1] = '\0';
            else
                key[0] = '\0';
        }
        line++;
        p = end ? end + 1 : p + n;
    }
}

/* The first line where `mine` differs from `leader`, or (size_t)-1. */
static size_t first_different_line(const char *mine, const char *leader)
{
    size_t line = 0;
    for (size_t i = 0;; i++) {
        if (mine[i] != leader[i])
            return line;
        if (!mine[i])
            return (size_t)-1;
        if (mine[i] == '\n')
            line++;
    }
}

/* For the refusal of ranks started differently: the first setting in which a rank's
 * resolved configuration differs from rank 0's, named on rank 0 ("run.seed = 2 on rank
 * 1, run.seed = 1 on rank 0"); empty when the configurations are the same (then the
 * plugins differ). */
static gan_status config_difference(gan_data_parallel *dp, const char *text, char *out, size_t size,
                                    struct gan_error *err)
{
    uint64_t len = dp->rank == 0 ? strlen(text) : 0;
    gan_status st = gan_comm_broadcast(dp->comm, &len, sizeof len, 0, err);
    if (st != GAN_OK)
        return st;
    char *leader = dp->rank == 0 ? (char *)text : calloc(len + 1, 1);
    if (!leader)
        return nomem(err);
    st = gan_comm_broadcast(dp->comm, leader, len + 1, 0, err);
    char line[512] = "";
    if (st == GAN_OK && dp->rank != 0) {
        leader[len] = '\0';
        size_t at = first_different_line(text, leader);
        if (at != (size_t)-1) {
            char theirs[240], ours[240];
            describe_config_line(text, at, ours, sizeof ours);
            describe_config_line(leader, at, theirs, sizeof theirs);
            snprintf(line, sizeof line, "%s on rank %d, %s on rank 0", ours, dp->rank, theirs);
        }
    }
    if (leader != text)
        free(leader);
    out[0] = '\0';
    for (int r = 1; st == GAN_OK && r < dp->size; r++) {
        char got[sizeof line];
        memcpy(got, line, sizeof got);
        st = gan_comm_broadcast(dp->comm, got, sizeof got, r, err);
        got[sizeof got - 1] = '\0';
        if (st == GAN_OK && !out[0] && got[0])
            snprintf(out, size, "%s", got);
    }
    return st;
}

gan_status gan_dp_set_up(gan_data_parallel *dp, const gan_session *s, const gan_config *cfg,
                        struct gan_error *err)
{
    int64_t n = dp->size, batch = s->set.batch;
    dp->rows = batch / n;
    dp->first_row = dp->rank * dp->rows;
    /* Each rank would scale its FP8 casts from its own rows (a recipe measures the
     * operand it is given) and keep its own history: the ranks' runs would part. */
    if (s->set.fp8.on && n > 1)
        return refuse_together(dp, gan_error_set(err, GAN_ERR_CONFIG,
                             "precision.mode = \"fp8\" with %lld ranks: FP8 runs are single-process for now (each rank's recipe would scale from its own rows); run it without mpirun, or with precision.mode \"bf16\" or \"fp16\"",
                             (long long)n), err);
    if (batch % (4 * n) != 0)
        return refuse_together(dp, gan_error_set(err, GAN_ERR_CONFIG,
                             "data.batch_size = %lld cannot be split over %lld ranks: it must be a multiple of 4 × %lld = %lld (each rank's rows start at a block of the random streams); change it or the number of ranks",
                             (long long)batch, (long long)n, (long long)n, (long long)(4 * n)), err);
    /* The resolved configuration and the plugins' names and versions: ranks started with
     * different settings, files or plugin folders would each train another run. */
    char *text = gan_config_to_text(cfg, 0);
    if (!text)
        return nomem(err);
    uint64_t h = hash_text(UINT64_C(0xcbf29ce484222325), text);
    h = hash_module(h, s->backend_module);
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        h = hash_module(h, s->model_module[i]);
        h = hash_module(h, s->scaler_module[i]);
    }
    for (size_t i = 0; i < s->n_loss_modules; i++)
        h = hash_module(h, s->loss_module[i]);
    int same = 0;
    gan_status st = same_everywhere(dp, h, &same, err);
    char difference[512] = "";
    if (st == GAN_OK && !same)
        st = config_difference(dp, text, difference, sizeof difference, err);
    free(text);
    if (st != GAN_OK)
        return st;
    if (!same && difference[0]) {
        gan_error_set(err, GAN_ERR_CONFIG,
                      "the %d ranks were started with different settings (%s): start every rank with the same command line, configuration files and plugin folders",
                      dp->size, difference);
        return refuse_together(dp, GAN_ERR_CONFIG, err);
    }
    if (!same) {
        gan_error_set(err, GAN_ERR_CONFIG,
                      "the %d ranks were started with different plugins (a backend, model, loss or scaler module of another name or version): start every rank with the same plugin folders",
                      dp->size);
        return refuse_together(dp, GAN_ERR_CONFIG, err);
    }
    if ((st = open_device_engine(dp, s, cfg, err)) != GAN_OK)
        return st;
    return log_ranks(dp, s, err);
}

/* ------------------------------------------------------------------ weights */

static gan_status hash_net(gan_session *s, gan_net *net, uint64_t *h, struct gan_error *err)
{
    for (size_t i = 0; i < gan_net_count(net); i++) {
        size_t n = (size_t)gan_net_numel(net, i);
        float *v = malloc((n ? n : 1) * sizeof *v);
        if (!v)
            return nomem(err);
        gan_status st = gan_tensor_to_host(s->ctx, gan_net_tensor(net, i), v, n);
        if (st == GAN_OK)
            *h = fnv1a(*h, v, n * sizeof *v);
        free(v);
        if (st != GAN_OK)
            return gan_session_ctx_fail(s, err, "reading the parameters");
    }
    return GAN_OK;
}

gan_status gan_dp_check_weights(gan_data_parallel *dp, gan_session *s, int64_t iteration,
                               struct gan_error *err)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    gan_status st = GAN_OK;
    for (int i = 0; i < GAN_NET_ROLES && st == GAN_OK; i++)
        st = hash_net(s, s->net[i], &h, err);
    int same = 0;
    if (st == GAN_OK)
        st = same_everywhere(dp, h, &same, err);
    if (st != GAN_OK)
        return st;
    if (!same) {
        gan_error_set(err, GAN_ERR_INTERNAL,
                      "the parameters differ between the %d ranks at iteration %lld: the replicas diverged (a bug of ganctl's or of a plugin that is not deterministic); report it",
                      dp->size, (long long)iteration);
        return refuse_together(dp, GAN_ERR_INTERNAL, err);
    }
    gan_log_write(dp->log, GAN_LOG_DEBUG, "parameters bit-identical on all %d ranks at iteration %lld (hash %016llx)",
                  dp->size, (long long)iteration, (unsigned long long)h);
    return GAN_OK;
}

/* ------------------------------------------------------------------ the batch */

gan_status gan_dp_real(gan_data_parallel *dp, struct gan_batch *b, gan_session *s,
                       gan_tensor **real, struct gan_error *err)
{
    gan_status st = gan_batch_draw_real(b, s, err);
    if (st != GAN_OK)
        return st;
    int64_t dims[4];
    int ndim = gan_session_batch_dims(s, dp->rows, dims);
    *real = gan_tensor_from_host(s->ctx, GAN_F32, ndim, dims,
                                 b->real_batch + dp->first_row * s->set.sample_size);
    return GAN_OK;
}

gan_tensor *gan_dp_z(gan_data_parallel *dp, struct gan_batch *b, gan_session *s)
{
    uint64_t mine = b->z_offset + (uint64_t)(dp->first_row * s->set.z_dim) / 4;
    gan_tensor *z = gan_session_draw_z(s, dp->rows, &mine);
    b->z_offset += gan_batch_z_blocks(s);
    return z;
}

gan_tensor *gan_dp_objective(gan_data_parallel *dp, struct gan_batch *b, gan_session *s,
                             enum gan_loss_target target, int64_t iteration, double scale,
                             gan_tensor *real, gan_tensor *fake, struct gan_objective_sink *sink)
{
    uint64_t base = b->loss_offset, skip = (uint64_t)dp->first_row / 4;
    uint64_t mine = base + skip;
    gan_tensor *loss = gan_session_objective(s, target, iteration, scale, real, fake, NULL,
                                             &mine, sink);
    /* The terms drew per sample: one process's draw for the whole batch is N times
     * one rank's. */
    b->loss_offset = base + (mine - base - skip) * (uint64_t)dp->size;
    return loss;
}

/* ------------------------------------------------------------------ reductions */

gan_status gan_dp_average_values(gan_data_parallel *dp, double *loss, double *metrics, size_t n,
                                struct gan_error *err)
{
    double v[1 + GAN_OBJECTIVE_MAX_REPORTED];
    v[0] = *loss;
    memcpy(v + 1, metrics, n * sizeof *v);
    gan_status st = all_reduce(dp, v, 1 + n, GAN_COMM_F64, GAN_COMM_SUM, err);
    if (st != GAN_OK)
        return st;
    *loss = v[0] / dp->size;
    for (size_t k = 0; k < n; k++)
        metrics[k] = v[1 + k] / dp->size;
    return GAN_OK;
}

/* The test hook: one non-finite element in this rank's gradient statistics. */
static void inject_overflow(gan_data_parallel *dp, struct gan_amp_net *a, enum gan_net_role role,
                            int64_t critic_step, int64_t iteration)
{
    if (role != GAN_NET_CRITIC || critic_step != 0 || dp->overflow_rank != dp->rank ||
        dp->overflow_iteration != iteration || a->n_entries == 0)
        return;
    a->entries[0].stats.nonfinite++;
    gan_log_write(dp->log, GAN_LOG_WARN, "test hook GANCTL_TEST_OVERFLOW: a non-finite critic gradient on rank %d at iteration %lld",
                  dp->rank, (long long)iteration);
}

/* The mean of the ranks' unscaled gradients in net's arena, and its squared norm. */
static gan_status average_gradients(gan_data_parallel *dp, gan_session *s, struct gan_amp_net *a,
                                    gan_net *net, struct gan_error *err)
{
    size_t n = (size_t)gan_net_total(net);
    if (n > dp->grads_count) {
        float *g = realloc(dp->grads, n * sizeof *g);
        if (!g)
            return nomem(err);
        dp->grads = g;
        dp->grads_count = n;
    }
    gan_tensor *arena = gan_net_grads(net);
    if (!arena || gan_tensor_to_host(s->ctx, arena, dp->grads, n) != GAN_OK)
        return gan_session_ctx_fail(s, err, "reading the gradients for the all-reduce");
    gan_status st = all_reduce_on(dp, dp->grad_comm, dp->grads, n, GAN_COMM_F32, GAN_COMM_SUM,
                                  err);
    if (st != GAN_OK)
        return st;
    float inv = 1.0f / (float)dp->size;
    double norm2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        float g = dp->grads[i] * inv;
        dp->grads[i] = g;
        if (isfinite(g))
            norm2 += (double)g * (double)g;
    }
    a->norm2 = norm2;
    if (gan_tensor_set_from_host(s->ctx, arena, dp->grads, n) != GAN_OK)
        return gan_session_ctx_fail(s, err, "writing the all-reduced gradients");
    return GAN_OK;
}

/* Per entry: elements, non-finite, zeros, subnormal, Σu² (summed); absmax and
 * −min_nonzero (the maximum); plus the FP16 counts and the forward-overflow flag. */
#define SUMS 5
#define MAXES 2

gan_status gan_dp_reduce_grads(gan_data_parallel *dp, gan_session *s, enum gan_net_role role,
                              int64_t iteration, int64_t critic_step, struct gan_error *err)
{
    struct gan_amp_net *a = &s->amp[role];
    inject_overflow(dp, a, role, critic_step, iteration);
    int same = 0;
    gan_status st = same_everywhere(dp, a->n_entries, &same, err);
    if (st != GAN_OK)
        return st;
    if (!same)
        return gan_error_set(err, GAN_ERR_INTERNAL,
                             "the %s's step measured a different number of gradients on rank %d than on another rank: report it",
                             a->net_name, dp->rank);
    size_t ne = a->n_entries;
    size_t n_sum = ne * SUMS + 2, n_max = ne * MAXES + 1;
    double *sum = calloc(n_sum + n_max, sizeof *sum);
    if (!sum)
        return nomem(err);
    double *max = sum + n_sum;
    for (size_t k = 0; k < ne; k++) {
        const struct gan_grad_stats *g = &a->entries[k].stats;
        double *row = sum + k * SUMS;
        row[0] = (double)g->elements;
        row[1] = (double)g->nonfinite;
        row[2] = (double)g->zeros;
        row[3] = (double)g->subnormal;
        row[4] = g->sum_squares;
        max[k * MAXES] = g->absmax;
        max[k * MAXES + 1] = g->min_nonzero > 0.0 ? -g->min_nonzero : -INFINITY;
    }
    sum[ne * SUMS] = (double)a->f16_elements;
    sum[ne * SUMS + 1] = (double)a->f16_low;
    /* The objective's overflow is the forward's only when no rank saw an inner
     * gradient the scale seeded overflow: the minimum. */
    max[ne * MAXES] = -(double)a->forward_overflow;
    st = all_reduce(dp, sum, n_sum, GAN_COMM_F64, GAN_COMM_SUM, err);
    if (st == GAN_OK)
        st = all_reduce(dp, max, n_max, GAN_COMM_F64, GAN_COMM_MAX, err);
    if (st == GAN_OK) {
        for (size_t k = 0; k < ne; k++) {
            struct gan_grad_stats *g = &a->entries[k].stats;
            const double *row = sum + k * SUMS;
            g->elements = (uint64_t)row[0];
            g->nonfinite = (uint64_t)row[1];
            g->zeros = (uint64_t)row[2];
            g->subnormal = (uint64_t)row[3];
            g->sum_squares = row[4];
            g->absmax = max[k * MAXES];
            g->min_nonzero = isfinite(max[k * MAXES + 1]) ? -max[k * MAXES + 1] : 0.0;
        }
        a->f16_elements = (uint64_t)sum[ne * SUMS];
        a->f16_low = (uint64_t)sum[ne * SUMS + 1];
        a->forward_overflow = -max[ne * MAXES] > 0.5;
    }
    free(sum);
    if (st == GAN_OK && a->backward)
        st = average_gradients(dp, s, a, s->net[role], err);
    return st;
}

int gan_dp_stop(gan_data_parallel *dp, int stop_here)
{
    double stop = stop_here ? 1.0 : 0.0;
    struct gan_error err;
    dp->trained = 1;
    /* A failed collective means another rank is gone: stop here too. */
    if (all_reduce(dp, &stop, 1, GAN_COMM_F64, GAN_COMM_MAX, &err) != GAN_OK)
        return 1;
    return stop > 0.0;
}
