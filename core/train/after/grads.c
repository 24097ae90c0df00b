/* SPDX-License-Identifier: MIT */
/* grads.c — the replay behind `ganctl grads`: both objectives of a training step at a
 * checkpoint's parameters on a given batch, their gradients and values, as safetensors. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strings.h"
#include "data/image_data.h"
#include "io/safetensors/safetensors.h"
#include "tensor/tensor_core.h"
#include "train/state/state.h"
#include "train/after/grads.h"
#include "train/run/run.h"

/* ------------------------------------------------------------------ the instance
 * A session (session.h) made from the checkpoint's configuration, as the trainer makes
 * its own, with the checkpoint loaded into it; the objectives, the scaled backward and
 * the unscale are the trainer's own code (session.c, amp/scaling.c), so the gradients
 * here are those a training step applies. check_grads compares them with the trainer's,
 * with finite differences and with a host computation. */

struct gan_grads {
    gan_config *cfg;
    char *checkpoint;
    gan_session *s;
    int64_t iteration;
    uint64_t loss_offset;

    /* Debug level 2: each network's FP32 shadow comparison, and the inputs of the
     * evaluation in progress, for the shadow to build its objectives again. */
    gan_probe *probe[GAN_NET_ROLES];
    struct {
        gan_tensor *real, *fake, *z, *alpha;
        enum gan_net_role net;
        size_t tape_start[GAN_NET_ROLES];     /* each objective's first node on the tape */
    } shadow;
    /* What each network's scaler concluded about the last evaluation's gradients. */
    int skip[GAN_NET_ROLES];
};

gan_ctx *gan_grads_ctx(const gan_grads *g)
{
    return g->s->ctx;
}

gan_net *gan_grads_net(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? g->s->net[GAN_NET_GENERATOR]
         : role == GAN_MODEL_CRITIC ? g->s->net[GAN_NET_CRITIC] : NULL;
}

const char *gan_grads_checkpoint(const gan_grads *g)
{
    return g->checkpoint;
}

int64_t gan_grads_iteration(const gan_grads *g)
{
    return g->iteration;
}

int64_t gan_grads_sample_size(const gan_grads *g)
{
    return g->s->set.sample_size;
}

int64_t gan_grads_z_size(const gan_grads *g)
{
    return g->s->set.z_dim;
}

const char *gan_grads_backend_description(const gan_grads *g)
{
    return gan_backend_instance_describe(g->s->backend);
}

double gan_grads_scale(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? gan_amp_scale(&g->s->amp[GAN_NET_GENERATOR])
         : role == GAN_MODEL_CRITIC ? gan_amp_scale(&g->s->amp[GAN_NET_CRITIC]) : NAN;
}

const char *gan_grads_precision(const gan_grads *g)
{
    return gan_session_precision_name(g->s);
}

gan_status gan_grads_set_debug_level(gan_grads *g, int level, struct gan_error *err)
{
    if (level < 2 || g->s->set.precision == GAN_F32)
        return GAN_OK;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        if (!g->probe[i] && gan_probe_new(&g->probe[i]) != GAN_OK)
            return gan_error_set(err, GAN_ERR_NOMEM, "out of memory for --debug-level 2");
    return GAN_OK;
}

const gan_probe *gan_grads_probe(const gan_grads *g, enum gan_model_role role)
{
    return role == GAN_MODEL_GENERATOR ? g->probe[GAN_NET_GENERATOR]
         : role == GAN_MODEL_CRITIC ? g->probe[GAN_NET_CRITIC] : NULL;
}

void gan_grads_report_free(struct gan_grads_report *report)
{
    for (int i = 0; i < GAN_NET_ROLES; i++) {
        gan_probe_free(report->probe[i]);
        report->probe[i] = NULL;
    }
}

void gan_grads_free(gan_grads *g)
{
    if (!g)
        return;
    for (int i = 0; i < GAN_NET_ROLES; i++)
        gan_probe_free(g->probe[i]);
    gan_session_free(g->s);
    gan_config_free(g->cfg);
    free(g->checkpoint);
    free(g);
}

/* The context's failure as `err`, naming what was being done. */
static gan_status ctx_fail(gan_grads *g, struct gan_error *err, const char *doing)
{
    return gan_session_ctx_fail(g->s, err, doing);
}

/* The checkpoint file: `path` itself, or the one in the run folder `path`. */
static char *checkpoint_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return gan_run_path(path, GAN_RUN_CHECKPOINT);
    return gan_strdup(path);
}

gan_status gan_grads_open(const char *checkpoint, const struct gan_saved_setting *settings,
                          size_t setting_count, const gan_loader *loader,
                          const struct gan_log *log, gan_grads **out, struct gan_error *err)
{
    *out = NULL;
    gan_grads *g = calloc(1, sizeof *g);
    if (!g || !(g->checkpoint = checkpoint_file(checkpoint))) {
        free(g);
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory while opening %s", checkpoint);
    }
    gan_status st = gan_saved_config_open(g->checkpoint, settings, setting_count,
                                          "ganctl grads computes with the checkpoint's configuration",
                                          &g->cfg, NULL, err);
    if (st == GAN_OK)
        st = gan_session_open(g->cfg, loader, log, &g->s, err);
    if (st == GAN_OK)
        st = gan_session_set_precision(g->s, err);
    struct gan_checkpoint_state state;
    if (st == GAN_OK)
        st = gan_session_load_checkpoint(g->s, g->checkpoint, &state, err);
    if (st != GAN_OK) {
        gan_grads_free(g);
        return st;
    }
    /* Every evaluation sees the checkpoint's FP8 recipe state, as the run's own step at
     * it did (gan_ctx_fp8_hold). */
    gan_ctx_fp8_hold(g->s->ctx, 1);
    g->iteration = state.iteration;
    g->loss_offset = state.loss_offset;
    *out = g;
    return GAN_OK;
}

/* ------------------------------------------------------------------ the batch */

void gan_grads_batch_free(struct gan_grads_batch *batch)
{
    free(batch->real);
    free(batch->z);
    free(batch->alpha);
    memset(batch, 0, sizeof *batch);
}

static void shape_text(char *buf, size_t size, const struct gan_st_tensor *t)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)t->shape[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* One tensor of the batch file: `rows` rows (or any number ≥ 1 when *rows is 0, which then
 * becomes it) of `cols` values each — [rows, cols], or a row's shape spelt out, such as
 * [B, 1, 28, 28] for images — F32 or F64, finite; copied out as floats. */
static gan_status batch_tensor(const gan_st_file *f, const char *path, const char *name,
                               const char *cols_meaning, int64_t cols, int64_t real_cols,
                               int64_t *rows, float **out, struct gan_error *err)
{
    const struct gan_st_tensor *t = gan_st_find(f, name);
    if (!t)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the batch has no tensor \"%s\"; a batch file holds real [B, %lld], z [B, Z] and optionally alpha [B, 1]",
                             path, name, (long long)real_cols);
    char found[160];
    shape_text(found, sizeof found, t);
    char want[64];
    if (*rows)
        snprintf(want, sizeof want, "[%lld, %lld]", (long long)*rows, (long long)cols);
    else
        snprintf(want, sizeof want, "[B, %lld]", (long long)cols);
    uint64_t row_values = 1;
    for (int d = 1; d < t->ndim; d++)
        row_values *= t->shape[d];
    if (t->ndim < 2 || row_values != (uint64_t)cols || t->shape[0] < 1 ||
        (*rows && t->shape[0] != (uint64_t)*rows))
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: %s is %s; it must be %s (%s%s)", path, name, found, want,
                             cols_meaning, *rows ? ", one row per sample of real" : ", B ≥ 1");
    if (t->dtype != GAN_ST_F32 && t->dtype != GAN_ST_F64)
        return gan_error_set(err, GAN_ERR_FORMAT, "%s: %s is %s; write it as F32 or F64", path,
                             name, gan_st_dtype_name(t->dtype));
    size_t n = (size_t)t->count;
    float *v = malloc(n * sizeof *v);
    if (!v)
        return gan_error_set(err, GAN_ERR_NOMEM, "out of memory reading %s from %s", name, path);
    for (size_t k = 0; k < n; k++) {
        /* The data is little-endian and 8-byte aligned in gan_st_open's copy. */
        double x;
        if (t->dtype == GAN_ST_F32) {
            float y;
            memcpy(&y, (const char *)t->data + 4 * k, 4);
            x = y;
        } else {
            memcpy(&x, (const char *)t->data + 8 * k, 8);
        }
        v[k] = (float)x;
        if (!isfinite(v[k])) {
            free(v);
            return gan_error_set(err, GAN_ERR_FORMAT, "%s: %s[%zu][%zu] is %g%s", path, name,
                                 k / (size_t)cols, k % (size_t)cols, x,
                                 isfinite(x) ? ", beyond FP32's range" : "; the batch must be finite");
        }
    }
    *rows = (int64_t)t->shape[0];
    *out = v;
    return GAN_OK;
}

gan_status gan_grads_read_batch(const gan_grads *g, const char *path, struct gan_grads_batch *batch,
                                struct gan_error *err)
{
    memset(batch, 0, sizeof *batch);
    gan_st_file *f = NULL;
    char msg[768];
    gan_status st = gan_st_open(path, &f, msg, sizeof msg);
    if (st != GAN_OK)
        return gan_error_set(err, st, "--batch %s: %s", path, msg);
    const struct gan_session_settings *set = &g->s->set;
    char z_meaning[96], real_meaning[160];
    snprintf(z_meaning, sizeof z_meaning, "generator.z_dim = %lld", (long long)set->z_dim);
    if (set->is_image)
        snprintf(real_meaning, sizeof real_meaning,
                 "the checkpoint's critic takes %s images of %lld x %lld x %lld values",
                 set->data_name, (long long)set->sample_dims[0], (long long)set->sample_dims[1],
                 (long long)set->sample_dims[2]);
    else
        snprintf(real_meaning, sizeof real_meaning, "the checkpoint's critic takes 2-D points");
    int64_t rows = 0;
    int64_t d = set->sample_size;
    st = batch_tensor(f, path, "real", real_meaning, d, d, &rows, &batch->real, err);
    if (st == GAN_OK)
        st = batch_tensor(f, path, "z", z_meaning, set->z_dim, d, &rows, &batch->z, err);
    /* Without alpha the penalty draws it from the loss stream, as training would. */
    if (st == GAN_OK && gan_st_find(f, "alpha"))
        st = batch_tensor(f, path, "alpha", "one interpolation weight per sample", 1, d, &rows,
                          &batch->alpha, err);
    for (int64_t i = 0; st == GAN_OK && batch->alpha && i < rows; i++)
        if (!(batch->alpha[i] >= 0.0f && batch->alpha[i] <= 1.0f))
            st = gan_error_set(err, GAN_ERR_FORMAT,
                               "%s: alpha[%lld][0] is %g; interpolation weights lie in [0, 1]", path,
                               (long long)i, batch->alpha[i]);
    gan_st_close(f);
    if (st != GAN_OK) {
        gan_grads_batch_free(batch);
        return st;
    }
    batch->size = rows;
    return GAN_OK;
}

/* ------------------------------------------------------------------ evaluation */

/* The objective of `target` as the trainer builds it (session.h), for the network's loss
 * scale, at the checkpoint's iteration. NULL with the failure in the context. */
static gan_tensor *objective(gan_grads *g, enum gan_loss_target target, gan_tensor *real,
                             gan_tensor *fake, gan_tensor *alpha, uint64_t *loss_offset,
                             struct gan_objective_sink *sink)
{
    enum gan_net_role role = target == GAN_LOSS_CRITIC ? GAN_NET_CRITIC : GAN_NET_GENERATOR;
    /* The first critic step of the checkpoint's iteration, the one the run took next. */
    g->s->objective.critic_step = g->iteration * g->s->set.n_critic;
    return gan_session_objective(g->s, target, g->iteration, gan_amp_scale(&g->s->amp[role]),
                                 real, fake, alpha, loss_offset, sink);
}

/* Appends name = the value of a single-element tensor. */
static gan_status add_value(gan_grads *g, struct gan_grads_values *out, const char *name,
                            gan_tensor *t, struct gan_error *err)
{
    if (gan_tensor_numel(t) != 1)
        return gan_error_set(err, GAN_ERR_INVALID,
                             "a loss term reports %s with %lld elements; a reported value is one",
                             name, (long long)gan_tensor_numel(t));
    for (size_t i = 0; i < out->count; i++)
        if (strcmp(out->items[i].name, name) == 0)
            return gan_error_set(err, GAN_ERR_INVALID,
                                 "a loss term reports a value that becomes %s, which the dump already has: rename it in the plugin",
                                 name);
    if (out->count == GAN_GRADS_MAX_VALUES || strlen(name) >= sizeof out->items[0].name)
        return gan_error_set(err, GAN_ERR_INVALID, "too many or too long reported values (at %s)", name);
    float v;
    if (gan_tensor_to_host(g->s->ctx, t, &v, 1) != GAN_OK)
        return ctx_fail(g, err, "reading the loss values");
    struct gan_grads_value *item = &out->items[out->count++];
    snprintf(item->name, sizeof item->name, "%s", name);
    item->value = v;
    return GAN_OK;
}

/* Debug level 2: network g->shadow.net's objective again in FP32 (gan_probe_shadow sets
 * the precision), on the evaluation's batch: the critic's on the same real and G(z)
 * batches (G(z) is not differentiated there; a 16-bit one is widened, exactly) and α,
 * the generator's through G of the same z; the loss stream read from the checkpoint's
 * position, as the evaluation's objectives read it. */
static gan_tensor *shadow_objective(void *arg, gan_ctx *ctx)
{
    gan_grads *g = arg;
    uint64_t offset = g->loss_offset;
    struct gan_objective_sink sink = { .count = 0 };
    gan_tensor *loss = NULL;
    g->s->inner.paused = 1;
    if (g->shadow.net == GAN_NET_CRITIC) {
        gan_tensor *fake = g->shadow.fake;
        if (fake && gan_tensor_dtype(fake) != GAN_F32) {
            gan_ctx_no_grad_push(ctx);
            fake = gan_cast(ctx, fake, GAN_F32);
            gan_ctx_no_grad_pop(ctx);
        }
        if (fake)
            loss = objective(g, GAN_LOSS_CRITIC, g->shadow.real, fake, g->shadow.alpha, &offset,
                             &sink);
    } else {
        gan_tensor *fake = gan_session_forward(g->s, GAN_NET_GENERATOR, g->shadow.z);
        if (fake)
            loss = objective(g, GAN_LOSS_GENERATOR, NULL, fake, NULL, &offset, &sink);
    }
    g->s->inner.paused = 0;
    return loss;
}

/* gan_amp_scaled_backward's hook at debug level 2: the FP32 shadow of the backward just
 * run, compared with it. */
static gan_status compare(void *arg, struct gan_amp_net *a, int backward, gan_tensor *const *grads)
{
    gan_grads *g = arg;
    enum gan_net_role i = g->shadow.net;
    gan_probe_clear(g->probe[i]);
    if (!backward)
        return GAN_OK;
    return gan_probe_shadow(g->probe[i], g->s->net[i], a->scale_used, grads,
                            g->shadow.tape_start[i], shadow_objective, g);
}

/* Network i's gradient of `loss` into its arena, as a training step forms it: the scaled
 * backward and fused unscale of amp/scaling.c, and the scaler's verdict, which decides
 * nothing here but is reported. An objective that is not finite has no backward, as in
 * training: its gradients are NaN. */
static gan_status scaled_gradient(gan_grads *g, enum gan_net_role i, gan_tensor *loss,
                                  double value, struct gan_error *err)
{
    gan_session *s = g->s;
    struct gan_amp_net *a = &s->amp[i];
    a->scale_used = gan_amp_scale(a);
    g->shadow.net = i;
    if (g->probe[i])
        a->hook = (struct gan_amp_hook){ compare, g };
    gan_status st = gan_amp_scaled_backward(a, s->ctx, s->net[i], loss, value, &s->inner);
    memset(&a->hook, 0, sizeof a->hook);
    if (st != GAN_OK)
        return ctx_fail(g, err, i == GAN_NET_CRITIC ? "the critic's gradient" : "the generator's gradient");
    if (!a->backward) {
        if (gan_net_fill_grads(s->net[i], NAN) != GAN_OK)
            return ctx_fail(g, err, "marking the gradients of a non-finite objective");
    }
    struct gan_scaler_decision verdict;
    st = gan_amp_verdict(a, gan_optimizer_steps(s->opt[i]) + a->skipped, &verdict, err);
    g->skip[i] = verdict.skip;
    return st;
}

/* Both objectives with their values, and the gradients `grads` asks for; everything
 * made here is a step tensor, freed by the caller's gan_ctx_step_end. */
static gan_status evaluate_step(gan_grads *g, const struct gan_grads_batch *b, unsigned grads,
                                struct gan_grads_values *values, struct gan_error *err)
{
    gan_session *s = g->s;
    gan_ctx *ctx = s->ctx;
    int64_t rdims[4], zdims[2] = { b->size, s->set.z_dim }, adims[2] = { b->size, 1 };
    int rndim = gan_session_batch_dims(s, b->size, rdims);
    gan_tensor *real = gan_tensor_from_host(ctx, GAN_F32, rndim, rdims, b->real);
    gan_tensor *z = gan_tensor_from_host(ctx, GAN_F32, 2, zdims, b->z);
    gan_tensor *alpha = b->alpha ? gan_tensor_from_host(ctx, GAN_F32, 2, adims, b->alpha) : NULL;
    if (!real || !z || (b->alpha && !alpha))
        return ctx_fail(g, err, "copying the batch to the backend");
    g->shadow.real = real;
    g->shadow.z = z;
    g->shadow.alpha = alpha;

    /* The critic step: G(z) is not differentiated (the trainer computes it without
     * recording), so the critic's objective reaches the critic's parameters only. The
     * loss stream starts at the checkpoint's position for each objective, as the
     * critic's next step would find it. */
    uint64_t offset = g->loss_offset;
    struct gan_objective_sink cs = { .count = 0 };
    gan_ctx_fp8_set_tag(ctx, "critic-step");   /* FP8 names as the run's steps have them */
    gan_ctx_no_grad_push(ctx);
    gan_tensor *fake = gan_session_forward(s, GAN_NET_GENERATOR, z);
    gan_ctx_no_grad_pop(ctx);
    g->shadow.fake = fake;
    g->shadow.tape_start[GAN_NET_CRITIC] = gan_ctx_tape_length(ctx);
    gan_tensor *critic_loss = fake ? objective(g, GAN_LOSS_CRITIC, real, fake, alpha, &offset, &cs)
                                   : NULL;
    if (!critic_loss)
        return ctx_fail(g, err, "the critic's objective");
    values->count = 0;
    gan_status st = add_value(g, values, "loss.critic", critic_loss, err);
    if (st == GAN_OK && (grads & GAN_LOSS_CRITIC))
        st = scaled_gradient(g, GAN_NET_CRITIC, critic_loss, values->items[0].value, err);
    if (st != GAN_OK)
        return st;

    /* The generator step: G(z) recorded, through the critic. */
    offset = g->loss_offset;
    struct gan_objective_sink gs = { .count = 0 };
    g->shadow.tape_start[GAN_NET_GENERATOR] = gan_ctx_tape_length(ctx);
    gan_ctx_fp8_set_tag(ctx, "generator-step");
    gan_tensor *fake_g = gan_session_forward(s, GAN_NET_GENERATOR, z);
    gan_tensor *generator_loss = fake_g ? objective(g, GAN_LOSS_GENERATOR, NULL, fake_g, NULL,
                                                    &offset, &gs)
                                        : NULL;
    if (!generator_loss)
        return ctx_fail(g, err, "the generator's objective");
    st = add_value(g, values, "loss.generator", generator_loss, err);
    if (st == GAN_OK && (grads & GAN_LOSS_GENERATOR))
        st = scaled_gradient(g, GAN_NET_GENERATOR, generator_loss, values->items[1].value, err);

    char name[200];
    for (size_t i = 0; st == GAN_OK && i < cs.count; i++) {
        snprintf(name, sizeof name, "loss.%s", cs.names[i]);
        st = add_value(g, values, name, cs.values[i], err);
    }
    /* A name the critic's terms report already gets the network's prefix (metrics.csv's rule). */
    for (size_t i = 0; st == GAN_OK && i < gs.count; i++) {
        snprintf(name, sizeof name, "loss.%s%s", gan_objective_reported(&cs, gs.names[i]) ? "generator_" : "",
                 gs.names[i]);
        st = add_value(g, values, name, gs.values[i], err);
    }
    return st;
}

gan_status gan_grads_evaluate(gan_grads *g, const struct gan_grads_batch *batch, unsigned grads,
                              struct gan_grads_values *values, struct gan_error *err)
{
    if (!batch || batch->size < 1 || !batch->real || !batch->z)
        return gan_error_set(err, GAN_ERR_INVALID, "gan_grads_evaluate: an empty batch");
    gan_status st = evaluate_step(g, batch, grads, values, err);
    gan_ctx_step_end(g->s->ctx);
    return st;
}

const struct gan_grads_value *gan_grads_find_value(const struct gan_grads_values *values,
                                                   const char *name)
{
    for (size_t i = 0; i < values->count; i++)
        if (strcmp(values->items[i].name, name) == 0)
            return &values->items[i];
    return NULL;
}

/* ------------------------------------------------------------------ the dump */

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Adds every gradient of `net` to the writer from `host` (the arena's layout). */
static gan_status add_gradients(gan_grads *g, gan_st_writer *w, gan_net *net, float *host,
                                struct gan_error *err)
{
    for (size_t i = 0; i < gan_net_count(net); i++) {
        size_t n = (size_t)gan_net_numel(net, i);
        float *at = host + gan_net_offset(net, i);
        if (gan_net_grad_to_host(net, i, at, n) != GAN_OK)
            return ctx_fail(g, err, "reading the gradients");
        const gan_tensor *p = gan_net_tensor(net, i);
        uint64_t shape[GAN_ST_MAX_DIMS];
        int ndim = gan_tensor_ndim(p);
        for (int d = 0; d < ndim; d++)
            shape[d] = (uint64_t)gan_tensor_dim(p, d);
        char msg[512];
        if (gan_st_writer_add(w, gan_net_full_name(net, i), GAN_ST_F32, ndim, shape, at,
                              n * sizeof *at, msg, sizeof msg) != GAN_OK)
            return gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    }
    return GAN_OK;
}

gan_status gan_grads_dump(gan_grads *g, const struct gan_grads_batch *batch,
                          const char *batch_path, const char *out_path,
                          struct gan_grads_report *report, struct gan_error *err)
{
    memset(report, 0, sizeof *report);
    if (same_file(out_path, g->checkpoint) || (batch_path && same_file(out_path, batch_path)))
        return gan_error_set(err, GAN_ERR_CONFIG,
                             "--out %s is the %s file: name a new file for the gradients", out_path,
                             same_file(out_path, g->checkpoint) ? "checkpoint" : "batch");
    gan_status st = gan_grads_evaluate(g, batch, GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR,
                                       &report->values, err);
    if (st != GAN_OK)
        return st;
    gan_st_writer *w = gan_st_writer_new();
    float *host[2] = { NULL, NULL };
    for (int i = 0; i < GAN_NET_ROLES; i++)
        host[i] = malloc(((size_t)gan_net_total(g->s->net[i]) + 1) * sizeof *host[i]);
    float *scalars = malloc((report->values.count + 1) * sizeof *scalars);
    if (!w || !host[0] || !host[1] || !scalars)
        st = gan_error_set(err, GAN_ERR_NOMEM, "out of memory while writing %s", out_path);
    for (int i = 0; st == GAN_OK && i < GAN_NET_ROLES; i++)
        st = add_gradients(g, w, g->s->net[i], host[i], err);
    char msg[768];
    for (size_t i = 0; st == GAN_OK && i < report->values.count; i++) {
        uint64_t one = 1;
        scalars[i] = (float)report->values.items[i].value;
        if (gan_st_writer_add(w, report->values.items[i].name, GAN_ST_F32, 1, &one, &scalars[i],
                              sizeof *scalars, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    }
    char numbers[4][40];
    snprintf(numbers[0], sizeof numbers[0], "%lld", (long long)g->iteration);
    snprintf(numbers[1], sizeof numbers[1], "%lld", (long long)batch->size);
    /* Scales are FP32 numbers: nine digits give them back exactly. */
    snprintf(numbers[2], sizeof numbers[2], "%.9g", gan_amp_scale(&g->s->amp[GAN_NET_CRITIC]));
    snprintf(numbers[3], sizeof numbers[3], "%.9g", gan_amp_scale(&g->s->amp[GAN_NET_GENERATOR]));
    const struct { const char *key, *value; } meta[] = {
        { "format", GAN_GRADS_FORMAT }, { "format_version", GAN_GRADS_VERSION },
        { "ganctl_version", gan_version() }, { "checkpoint", g->checkpoint },
        { "batch", batch_path ? batch_path : "" }, { "iteration", numbers[0] },
        { "batch_size", numbers[1] }, { "precision", gan_grads_precision(g) },
        { "scale.critic", numbers[2] }, { "scale.generator", numbers[3] },
    };
    for (size_t i = 0; st == GAN_OK && i < sizeof meta / sizeof meta[0]; i++)
        if (gan_st_writer_set_metadata(w, meta[i].key, meta[i].value, msg, sizeof msg) != GAN_OK)
            st = gan_error_set(err, GAN_ERR_INVALID, "%s", msg);
    if (st == GAN_OK && (st = gan_st_writer_write(w, out_path, msg, sizeof msg)) != GAN_OK)
        gan_error_set(err, st, "%s", msg);
    gan_st_writer_free(w);
    free(host[0]);
    free(host[1]);
    free(scalars);
    if (st != GAN_OK)
        return st;
    report->iteration = g->iteration;
    report->batch_size = batch->size;
    report->generator_tensors = gan_net_count(g->s->net[GAN_NET_GENERATOR]);
    report->critic_tensors = gan_net_count(g->s->net[GAN_NET_CRITIC]);
    return GAN_OK;
}

gan_status gan_grads_run(const struct gan_grads_args *args, const gan_loader *loader,
                         const struct gan_log *log, struct gan_grads_report *report,
                         struct gan_error *err)
{
    memset(report, 0, sizeof *report);
    gan_grads *g = NULL;
    gan_status st = gan_grads_open(args->checkpoint, args->settings, args->setting_count, loader,
                                   log, &g, err);
    if (st != GAN_OK)
        return st;
    gan_log_write(log, GAN_LOG_DEBUG, "grads: %s at iteration %lld on %s", g->checkpoint,
                  (long long)g->iteration, gan_grads_backend_description(g));
    struct gan_grads_batch batch;
    memset(&batch, 0, sizeof batch);
    st = gan_grads_set_debug_level(g, args->debug_level, err);
    if (st == GAN_OK)
        st = gan_grads_read_batch(g, args->batch, &batch, err);
    if (st == GAN_OK)
        st = gan_grads_dump(g, &batch, args->batch, args->out, report, err);
    gan_grads_batch_free(&batch);
    /* The comparisons outlive the instance: the report takes them. */
    for (int i = 0; st == GAN_OK && i < GAN_NET_ROLES; i++) {
        report->probe[i] = g->probe[i];
        g->probe[i] = NULL;
    }
    gan_grads_free(g);
    return st;
}
