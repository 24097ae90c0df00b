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
 * With one rank every function here is the single-process step itself. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strings.h"
#include "tensor/tensor_core.h"
#include "train/loop/trainer_internal.h"

void gan_trainer_dp_attach(gan_trainer *t, gan_comm *comm)
{
    t->dp.comm = comm ? comm : gan_comm_single();
    t->dp.grad_comm = t->dp.comm;
    t->dp.rank = t->dp.comm->rank;
    t->dp.size = t->dp.comm->size;
    t->dp.overflow_rank = -1;
    /* The test hook of ganctl(1) DATA PARALLEL: "RANK:ITERATION" counts one non-finite
     * gradient element in the first critic step of ITERATION on RANK only. */
    const char *hook = getenv("GANCTL_TEST_OVERFLOW");
    int r;
    long long it;
    if (hook && sscanf(hook, "%d:%lld", &r, &it) == 2) {
        t->dp.overflow_rank = r;
        t->dp.overflow_iteration = it;
    }
}

int gan_trainer_dp_leader(const gan_trainer *t)
{
    return t->dp.rank == 0;
}

int gan_trainer_ranks(const gan_trainer *t)
{
    return t->dp.size;
}

int gan_trainer_rank(const gan_trainer *t)
{
    return t->dp.rank;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The collectives of the steps, timed: the communication share of a step (which
 * includes waiting for the slowest rank). */
static gan_status all_reduce_on(gan_trainer *t, gan_comm *comm, void *buf, size_t count,
                                enum gan_comm_type type, enum gan_comm_op op,
                                struct gan_error *err)
{
    double t0 = now_s();
    gan_status st = gan_comm_all_reduce(comm, buf, count, type, op, err);
    t->dp.comm_s += now_s() - t0;
    t->dp.collectives++;
    return st;
}

static gan_status all_reduce(gan_trainer *t, void *buf, size_t count, enum gan_comm_type type,
                             enum gan_comm_op op, struct gan_error *err)
{
    return all_reduce_on(t, t->dp.comm, buf, count, type, op, err);
}

void gan_trainer_dp_free(gan_trainer *t)
{
    if (t->dp.size > 1 && t->s && t->dp.trained) {
        double session = gan_trainer_session_s(t);
        gan_log_write(t->log, GAN_LOG_INFO, "data parallel: %.3f s of this session's %.3f s in %lld collectives (%.1f%%)",
                      t->dp.comm_s, session, (long long)t->dp.collectives,
                      session > 0 ? 100.0 * t->dp.comm_s / session : 0.0);
    }
    if (t->dp.grad_comm != t->dp.comm)
        gan_comm_close(t->dp.grad_comm);
    t->dp.grad_comm = t->dp.comm;
    free(t->dp.grads);
    t->dp.grads = NULL;
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
static gan_status same_everywhere(gan_trainer *t, uint64_t v, int *same, struct gan_error *err)
{
    uint64_t both[2] = { v, ~v };
    gan_status st = all_reduce(t, both, 2, GAN_COMM_U64, GAN_COMM_MAX, err);
    *same = st == GAN_OK && both[0] == ~both[1];
    return st;
}

/* A refusal every rank reaches together: the leader prints it, the others stay quiet. */
static gan_status refuse_together(gan_trainer *t, gan_status status, struct gan_error *err)
{
    (void)err;
    t->dp.comm->refused = 1;
    return status;
}

/* A device backend's gradients go through NCCL when the build has its engine (beside
 * the backend's module); without it they go through the host engine, as a CPU
 * backend's do. Every rank runs the same backend (the configuration check). */
static gan_status open_device_engine(gan_trainer *t, struct gan_error *err)
{
    const struct gan_module *be = t->s->backend_module;
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
    gan_config_get_int(t->cfg, "backend.device", &device);
    struct gan_error why;
    gan_error_clear(&why);
    gan_comm *c = NULL;
    if (gan_comm_open_device(dir, "nccl", t->dp.comm, (int)device, &c, &why) != GAN_OK) {
        /* Every rank sees the same reason (the same build and files), or NCCL's own
         * initialisation failed on all of them together. */
        gan_log_write(t->log, GAN_LOG_WARN, "data parallel: the gradients go through %s with host copies: %s",
                      t->dp.comm->ops->name, why.message);
        return GAN_OK;
    }
    (void)err;
    t->dp.grad_comm = c;
    gan_log_write(t->log, GAN_LOG_INFO, "data parallel: gradients over %s", c->description);
    return GAN_OK;
}

/* Each rank's backend, in the leader's log. */
static gan_status log_ranks(gan_trainer *t, struct gan_error *err)
{
    char line[256];
    gan_log_write(t->log, GAN_LOG_INFO, "data parallel: %d ranks over %s, %lld of the batch's %lld rows each",
                  t->dp.size, t->dp.comm->description, (long long)t->dp.rows,
                  (long long)t->s->set.batch);
    for (int r = 0; r < t->dp.size; r++) {
        memset(line, 0, sizeof line);
        if (r == t->dp.rank)
            snprintf(line, sizeof line, "%s", gan_backend_instance_describe(t->s->backend));
        gan_status st = gan_comm_broadcast(t->dp.comm, line, sizeof line, r, err);
        if (st != GAN_OK)
            return st;
        line[sizeof line - 1] = '\0';
        gan_log_write(t->log, GAN_LOG_INFO, "rank %d: backend %s", r, line);
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
static gan_status config_difference(gan_trainer *t, const char *text, char *out, size_t size,
                                    struct gan_error *err)
{
    uint64_t len = t->dp.rank == 0 ? strlen(text) : 0;
    gan_status st = gan_comm_broadcast(t->dp.comm, &len, sizeof len, 0, err);
    if (st != GAN_OK)
        return st;
    char *leader = t->dp.rank == 0 ? (char *)text : calloc(len + 1, 1);
    if (!leader)
        return gan_trainer_nomem(err);
    st = gan_comm_broadcast(t->dp.comm, leader, len + 1, 0, err);
    char line[512] = "";
    if (st == GAN_OK && t->dp.rank != 0) {
        leader[len] = '\0';
        size_t at = first_different_line(text, leader);
        if (at != (size_t)-1) {
            char theirs[240], ours[240];
            describe_config_line(text, at, ours, sizeof ours);
            describe_config_line(leader, at, theirs, sizeof theirs);
            snprintf(line, sizeof line, "%s on rank %d, %s on rank 0", ours, t->dp.rank, theirs);
        }
    }
    if (leader != text)
        free(leader);
    out[0] = '\0';
    for (int r = 1; st == GAN_OK && r < t->dp.size; r++) {
        char got[sizeof line];
        memcpy(got, line, sizeof got);
        st = gan_comm_broadcast(t->dp.comm, got, sizeof got, r, err);
        got[sizeof got - 1] = '\0';
        if (st == GAN_OK && !out[0] && got[0])
            snprintf(out, size, "%s", got);
    }
    return st;
}

gan_status gan_trainer_dp_set_up(gan_trainer *t, struct gan_error *err)
{
    gan_session *s = t->s;
    int64_t n = t->dp.size, batch = s->set.batch;
    t->dp.rows = batch / n;
    t->dp.first_row = t->dp.rank * t->dp.rows;
    if (n == 1)
        return GAN_OK;
    if (batch % (4 * n) != 0)
        return refuse_together(t, gan_error_set(err, GAN_ERR_CONFIG,
                             "data.batch_size = %lld cannot be split over %lld ranks: it must be a multiple of 4 × %lld = %lld (each rank's rows start at a block of the random streams); change it or the number of ranks",
                             (long long)batch, (long long)n, (long long)n, (long long)(4 * n)), err);
    /* The resolved configuration and the plugins' names and versions: ranks started with
     * different settings, files or plugin folders would each train another run. */
    char *text = gan_config_to_text(t->cfg, 0);
    if (!text)
        return gan_trainer_nomem(err);
    uint64_t h = hash_text(UINT64_C(0xcbf29ce484222325), text);
    h = hash_module(h, s->backend_module);
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        h = hash_module(h, s->model_module[i]);
        h = hash_module(h, s->scaler_module[i]);
    }
    for (size_t i = 0; i < s->n_loss_modules; i++)
        h = hash_module(h, s->loss_module[i]);
    int same = 0;
    gan_status st = same_everywhere(t, h, &same, err);
    char difference[512] = "";
    if (st == GAN_OK && !same)
        st = config_difference(t, text, difference, sizeof difference, err);
    free(text);
    if (st != GAN_OK)
        return st;
    if (!same && difference[0]) {
        gan_error_set(err, GAN_ERR_CONFIG,
                      "the %d ranks were started with different settings (%s): start every rank with the same command line, configuration files and plugin folders",
                      t->dp.size, difference);
        return refuse_together(t, GAN_ERR_CONFIG, err);
    }
    if (!same) {
        gan_error_set(err, GAN_ERR_CONFIG,
                      "the %d ranks were started with different plugins (a backend, model, loss or scaler module of another name or version): start every rank with the same plugin folders",
                      t->dp.size);
        return refuse_together(t, GAN_ERR_CONFIG, err);
    }
    if ((st = open_device_engine(t, err)) != GAN_OK)
        return st;
    return log_ranks(t, err);
}

/* ------------------------------------------------------------------ weights */

static gan_status hash_net(gan_trainer *t, gan_net *net, uint64_t *h, struct gan_error *err)
{
    for (size_t i = 0; i < gan_net_count(net); i++) {
        size_t n = (size_t)gan_net_numel(net, i);
        float *v = malloc((n ? n : 1) * sizeof *v);
        if (!v)
            return gan_trainer_nomem(err);
        gan_status st = gan_tensor_to_host(t->s->ctx, gan_net_tensor(net, i), v, n);
        if (st == GAN_OK)
            *h = fnv1a(*h, v, n * sizeof *v);
        free(v);
        if (st != GAN_OK)
            return gan_session_ctx_fail(t->s, err, "reading the parameters");
    }
    return GAN_OK;
}

gan_status gan_trainer_dp_check_weights(gan_trainer *t, struct gan_error *err)
{
    if (t->dp.size == 1)
        return GAN_OK;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    gan_status st = GAN_OK;
    for (int i = 0; i < GAN_NET_ROLES && st == GAN_OK; i++)
        st = hash_net(t, t->s->net[i], &h, err);
    int same = 0;
    if (st == GAN_OK)
        st = same_everywhere(t, h, &same, err);
    if (st != GAN_OK)
        return st;
    if (!same) {
        gan_error_set(err, GAN_ERR_INTERNAL,
                      "the parameters differ between the %d ranks at iteration %lld: the replicas diverged (a bug of ganctl's or of a plugin that is not deterministic); report it",
                      t->dp.size, (long long)t->iteration);
        return refuse_together(t, GAN_ERR_INTERNAL, err);
    }
    gan_log_write(t->log, GAN_LOG_DEBUG, "parameters bit-identical on all %d ranks at iteration %lld (hash %016llx)",
                  t->dp.size, (long long)t->iteration, (unsigned long long)h);
    return GAN_OK;
}

/* ------------------------------------------------------------------ the batch */

gan_status gan_trainer_dp_real(gan_trainer *t, gan_tensor **real, struct gan_error *err)
{
    gan_session *s = t->s;
    gan_status st = t->batch.images ? gan_image_run_batch(t->batch.images, (size_t)s->set.batch, t->batch.real_batch, err)
                              : gan_toy_sample(t->batch.sampler, (size_t)s->set.batch, t->batch.real_batch, err);
    if (st != GAN_OK)
        return st;
    int64_t dims[4];
    int ndim = gan_session_batch_dims(s, t->dp.rows, dims);
    *real = gan_tensor_from_host(s->ctx, GAN_F32, ndim, dims,
                                 t->batch.real_batch + t->dp.first_row * s->set.sample_size);
    return GAN_OK;
}

gan_tensor *gan_trainer_dp_draw_z(gan_trainer *t)
{
    gan_session *s = t->s;
    uint64_t base = t->batch.z_offset;
    uint64_t mine = base + (uint64_t)(t->dp.first_row * s->set.z_dim) / 4;
    gan_tensor *z = gan_session_draw_z(s, t->dp.rows, &mine);
    t->batch.z_offset = base + (uint64_t)(s->set.batch * s->set.z_dim + 3) / 4;
    return z;
}

gan_tensor *gan_trainer_dp_objective(gan_trainer *t, enum gan_loss_target target, double scale,
                                     gan_tensor *real, gan_tensor *fake,
                                     struct gan_objective_sink *sink)
{
    uint64_t base = t->batch.loss_offset, skip = (uint64_t)t->dp.first_row / 4;
    uint64_t mine = base + skip;
    gan_tensor *loss = gan_session_objective(t->s, target, t->iteration, scale, real, fake, NULL,
                                             &mine, sink);
    /* The terms drew per sample: one process's draw for the whole batch is N times
     * one rank's. */
    t->batch.loss_offset = base + (mine - base - skip) * (uint64_t)t->dp.size;
    return loss;
}

/* ------------------------------------------------------------------ reductions */

gan_status gan_trainer_dp_reduce_values(gan_trainer *t, enum gan_net_role role,
                                        struct gan_error *err)
{
    if (t->dp.size == 1)
        return GAN_OK;
    double v[1 + GAN_TRAINER_MAX_METRICS];
    size_t n = 1 + t->metrics.n_metrics[role];
    v[0] = t->metrics.latest.loss[role];
    memcpy(v + 1, t->metrics.latest.metric[role], t->metrics.n_metrics[role] * sizeof *v);
    gan_status st = all_reduce(t, v, n, GAN_COMM_F64, GAN_COMM_SUM, err);
    if (st != GAN_OK)
        return st;
    t->metrics.latest.loss[role] = v[0] / t->dp.size;
    for (size_t k = 0; k < t->metrics.n_metrics[role]; k++)
        t->metrics.latest.metric[role][k] = v[1 + k] / t->dp.size;
    return GAN_OK;
}

/* The test hook: one non-finite element in this rank's gradient statistics. */
static void inject_overflow(gan_trainer *t, struct gan_amp_net *a, enum gan_net_role role,
                            int64_t critic_step)
{
    if (role != GAN_NET_CRITIC || critic_step != 0 || t->dp.overflow_rank != t->dp.rank ||
        t->dp.overflow_iteration != t->iteration || a->n_entries == 0)
        return;
    a->entries[0].stats.nonfinite++;
    gan_log_write(t->log, GAN_LOG_WARN, "test hook GANCTL_TEST_OVERFLOW: a non-finite critic gradient on rank %d at iteration %lld",
                  t->dp.rank, (long long)t->iteration);
}

/* The mean of the ranks' unscaled gradients in net's arena, and its squared norm. */
static gan_status average_gradients(gan_trainer *t, struct gan_amp_net *a, gan_net *net,
                                    struct gan_error *err)
{
    size_t n = (size_t)gan_net_total(net);
    if (n > t->dp.grads_count) {
        float *g = realloc(t->dp.grads, n * sizeof *g);
        if (!g)
            return gan_trainer_nomem(err);
        t->dp.grads = g;
        t->dp.grads_count = n;
    }
    gan_tensor *arena = gan_net_grads(net);
    if (!arena || gan_tensor_to_host(t->s->ctx, arena, t->dp.grads, n) != GAN_OK)
        return gan_session_ctx_fail(t->s, err, "reading the gradients for the all-reduce");
    gan_status st = all_reduce_on(t, t->dp.grad_comm, t->dp.grads, n, GAN_COMM_F32, GAN_COMM_SUM,
                                  err);
    if (st != GAN_OK)
        return st;
    float inv = 1.0f / (float)t->dp.size;
    double norm2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        float g = t->dp.grads[i] * inv;
        t->dp.grads[i] = g;
        if (isfinite(g))
            norm2 += (double)g * (double)g;
    }
    a->norm2 = norm2;
    if (gan_tensor_set_from_host(t->s->ctx, arena, t->dp.grads, n) != GAN_OK)
        return gan_session_ctx_fail(t->s, err, "writing the all-reduced gradients");
    return GAN_OK;
}

/* Per entry: elements, non-finite, zeros, subnormal, Σu² (summed); absmax and
 * −min_nonzero (the maximum); plus the FP16 counts and the forward-overflow flag. */
#define SUMS 5
#define MAXES 2

gan_status gan_trainer_dp_reduce_grads(gan_trainer *t, enum gan_net_role role,
                                       int64_t critic_step, struct gan_error *err)
{
    struct gan_amp_net *a = &t->s->amp[role];
    inject_overflow(t, a, role, critic_step);
    if (t->dp.size == 1)
        return GAN_OK;
    int same = 0;
    gan_status st = same_everywhere(t, a->n_entries, &same, err);
    if (st != GAN_OK)
        return st;
    if (!same)
        return gan_error_set(err, GAN_ERR_INTERNAL,
                             "the %s's step measured a different number of gradients on rank %d than on another rank: report it",
                             a->net_name, t->dp.rank);
    size_t ne = a->n_entries;
    size_t n_sum = ne * SUMS + 2, n_max = ne * MAXES + 1;
    double *sum = calloc(n_sum + n_max, sizeof *sum);
    if (!sum)
        return gan_trainer_nomem(err);
    double *max = sum + n_sum;
    for (size_t k = 0; k < ne; k++) {
        const struct gan_grad_stats *g = &a->entries[k].stats;
        double *s = sum + k * SUMS;
        s[0] = (double)g->elements;
        s[1] = (double)g->nonfinite;
        s[2] = (double)g->zeros;
        s[3] = (double)g->subnormal;
        s[4] = g->sum_squares;
        max[k * MAXES] = g->absmax;
        max[k * MAXES + 1] = g->min_nonzero > 0.0 ? -g->min_nonzero : -INFINITY;
    }
    sum[ne * SUMS] = (double)a->f16_elements;
    sum[ne * SUMS + 1] = (double)a->f16_low;
    /* The objective's overflow is the forward's only when no rank saw an inner
     * gradient the scale seeded overflow: the minimum. */
    max[ne * MAXES] = -(double)a->forward_overflow;
    st = all_reduce(t, sum, n_sum, GAN_COMM_F64, GAN_COMM_SUM, err);
    if (st == GAN_OK)
        st = all_reduce(t, max, n_max, GAN_COMM_F64, GAN_COMM_MAX, err);
    if (st == GAN_OK) {
        for (size_t k = 0; k < ne; k++) {
            struct gan_grad_stats *g = &a->entries[k].stats;
            const double *s = sum + k * SUMS;
            g->elements = (uint64_t)s[0];
            g->nonfinite = (uint64_t)s[1];
            g->zeros = (uint64_t)s[2];
            g->subnormal = (uint64_t)s[3];
            g->sum_squares = s[4];
            g->absmax = max[k * MAXES];
            g->min_nonzero = isfinite(max[k * MAXES + 1]) ? -max[k * MAXES + 1] : 0.0;
        }
        a->f16_elements = (uint64_t)sum[ne * SUMS];
        a->f16_low = (uint64_t)sum[ne * SUMS + 1];
        a->forward_overflow = -max[ne * MAXES] > 0.5;
    }
    free(sum);
    if (st == GAN_OK && a->backward)
        st = average_gradients(t, a, t->s->net[role], err);
    return st;
}

int gan_trainer_dp_stop(gan_trainer *t)
{
    double stop = t->stop && *t->stop ? 1.0 : 0.0;
    t->dp.trained = 1;
    if (t->dp.size > 1) {
        struct gan_error err;
        /* A failed collective means another rank is gone: stop here too. */
        if (all_reduce(t, &stop, 1, GAN_COMM_F64, GAN_COMM_MAX, &err) != GAN_OK)
            return 1;
    }
    return stop > 0.0;
}
