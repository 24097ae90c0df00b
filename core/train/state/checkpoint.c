/* SPDX-License-Identifier: MIT */
/* checkpoint.c — saving and loading a run's state as safetensors: parameters, Adam moments
 * and step counts, iteration, Philox stream positions, the data sampler and the configuration. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ganctl/version.h>

#include "base/strings.h"
#include "train/state/checkpoint.h"
#include "train/state/checkpoint_reported.h"
#include "amp/fp8_checkpoint.h"
#include "io/safetensors/safetensors.h"
#include "tensor/tensor_core.h"
#include "train/state/streams.h"

/* The moments' names in the file, in the order of gan_optimizer's `which`. */
static const char *const moment_names[2] = { "exp_avg", "exp_avg_sq" };

static gan_status nomem(struct gan_error *err, const char *path)
{
    return gan_error_set(err, GAN_ERR_NOMEM, "%s: out of memory for the checkpoint", path);
}

/* A context's failure as this file's error. */
static gan_status ctx_error(struct gan_error *err, gan_ctx *ctx, const char *path,
                            const char *doing)
{
    gan_status st = gan_ctx_status(ctx);
    return gan_error_set(err, st != GAN_OK ? st : GAN_ERR_INTERNAL, "%s: %s: %s", path, doing,
                         gan_ctx_error(ctx));
}

/* ------------------------------------------------------------------ saving */

/* Host copies of one network's values, kept until the writer has written them. */
struct host_net {
    float *params;                /* total floats, in arena order */
    float *moments[2];
    uint64_t scaler[GAN_SCALER_STATE_MAX];  /* the scaler's values, as their bits */
};

static gan_status add_tensor(gan_st_writer *w, const char *name, const gan_tensor *t,
                             const float *data, const char *path, struct gan_error *err)
{
    uint64_t shape[GAN_ST_MAX_DIMS];
    int ndim = gan_tensor_ndim(t);
    for (int d = 0; d < ndim; d++)
        shape[d] = (uint64_t)gan_tensor_dim(t, d);
    char msg[512];
    gan_status st = gan_st_writer_add(w, name, GAN_ST_F32, ndim, shape, data,
                                      (size_t)gan_tensor_numel(t) * sizeof(float), msg,
                                      sizeof msg);
    return st == GAN_OK ? GAN_OK : gan_error_set(err, st, "%s: %s", path, msg);
}

static gan_status meta(gan_st_writer *w, const char *key, const char *value, const char *path,
                       struct gan_error *err)
{
    char msg[512];
    gan_status st = gan_st_writer_set_metadata(w, key, value, msg, sizeof msg);
    return st == GAN_OK ? GAN_OK : gan_error_set(err, st, "%s: %s", path, msg);
}

static gan_status meta_u64(gan_st_writer *w, const char *key, uint64_t value, const char *path,
                           struct gan_error *err)
{
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, value);
    return meta(w, key, text, path, err);
}

/* A network's scaler state as tensors scaler.NET.VALUE and metadata. The numbers are
 * kept in h->scaler, which lives as long as the writer needs them. */
static gan_status add_scaling(gan_st_writer *w, const struct gan_checkpoint_net *cn,
                              struct host_net *h, const char *path, struct gan_error *err)
{
    const struct gan_checkpoint_scaling *sc = cn->scaling;
    const struct gan_scaler_state *state = &sc->state;
    if (state->count > GAN_SCALER_STATE_MAX || !memchr(state->scaler, '\0', sizeof state->scaler))
        return gan_error_set(err, GAN_ERR_INTERNAL,
                             "%s: the %s's scaler gave a malformed state (%zu values)", path,
                             cn->name, state->count);
    char name[600], text[128];
    gan_status st;
    for (size_t i = 0; i < state->count; i++) {
        const struct gan_scaler_value *v = &state->values[i];
        if (!memchr(v->name, '\0', sizeof v->name) || !v->name[0] ||
            (v->type != GAN_SCALER_INT64 && v->type != GAN_SCALER_FLOAT64))
            return gan_error_set(err, GAN_ERR_INTERNAL,
                                 "%s: the %s's scaler \"%s\" gave a malformed state value %zu",
                                 path, cn->name, state->scaler, i);
        snprintf(name, sizeof name, "scaler.%s.%s", cn->name, v->name);
        memcpy(&h->scaler[i], v->type == GAN_SCALER_INT64 ? (const void *)&v->i : (const void *)&v->f,
               sizeof h->scaler[i]);
        uint64_t shape[1] = { 1 };
        char msg[512];
        st = gan_st_writer_add(w, name, v->type == GAN_SCALER_INT64 ? GAN_ST_I64 : GAN_ST_F64, 1,
                               shape, &h->scaler[i], sizeof h->scaler[i], msg, sizeof msg);
        if (st != GAN_OK)
            return gan_error_set(err, st, "%s: %s", path, msg);
    }
    snprintf(name, sizeof name, "scaler.%s", cn->name);
    snprintf(text, sizeof text, "%s/%" PRId64, state->scaler, state->version);
    if ((st = meta(w, name, text, path, err)) != GAN_OK)
        return st;
    snprintf(name, sizeof name, "trainer.%s.skipped", cn->name);
    if ((st = meta_u64(w, name, (uint64_t)sc->skipped, path, err)) != GAN_OK)
        return st;
    snprintf(name, sizeof name, "trainer.%s.overflows", cn->name);
    return meta_u64(w, name, (uint64_t)sc->overflows, path, err);
}

/* Copies a net's parameters and moments to host memory and adds them to the writer. */
static gan_status add_net(gan_st_writer *w, const struct gan_checkpoint_net *cn,
                          struct host_net *h, const char *path, struct gan_error *err)
{
    gan_net *net = cn->net;
    gan_ctx *ctx = gan_net_ctx(net);
    size_t total = (size_t)gan_net_total(net);
    size_t bytes = (total ? total : 1) * sizeof(float);
    h->params = malloc(bytes);
    h->moments[0] = malloc(bytes);
    h->moments[1] = malloc(bytes);
    if (!h->params || !h->moments[0] || !h->moments[1])
        return nomem(err, path);
    for (int k = 0; k < 2; k++)
        if (gan_optimizer_moment_to_host(cn->opt, k, h->moments[k], total) != GAN_OK)
            return ctx_error(err, ctx, path, "reading Adam's moments");
    gan_status st;
    char name[600];
    for (size_t i = 0; i < gan_net_count(net); i++) {
        const gan_tensor *t = gan_net_tensor(net, i);
        size_t at = (size_t)gan_net_offset(net, i), n = (size_t)gan_net_numel(net, i);
        if (gan_tensor_to_host(ctx, t, h->params + at, n) != GAN_OK)
            return ctx_error(err, ctx, path, "reading the parameters");
        if ((st = add_tensor(w, gan_net_full_name(net, i), t, h->params + at, path, err)) != GAN_OK)
            return st;
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "optimizer.%s.%s.%s", cn->name, moment_names[k],
                     gan_net_name(net, i));
            if ((st = add_tensor(w, name, t, h->moments[k] + at, path, err)) != GAN_OK)
                return st;
        }
    }
    snprintf(name, sizeof name, "optimizer.%s.step", cn->name);
    st = meta_u64(w, name, (uint64_t)gan_optimizer_steps(cn->opt), path, err);
    if (st == GAN_OK && cn->scaling)
        st = add_scaling(w, cn, h, path, err);
    return st;
}

gan_status gan_checkpoint_save(const char *path, const struct gan_checkpoint_net *nets,
                               size_t count, const struct gan_checkpoint_state *state,
                               struct gan_error *err)
{
    gan_st_writer *w = gan_st_writer_new();
    struct host_net *hosts = calloc(count ? count : 1, sizeof *hosts);
    if (!w || !hosts) {
        gan_st_writer_free(w);
        free(hosts);
        return nomem(err, path);
    }
    gan_status st = GAN_OK;
    for (size_t i = 0; st == GAN_OK && i < count; i++)
        st = add_net(w, &nets[i], &hosts[i], path, err);
    char elapsed[64];
    snprintf(elapsed, sizeof elapsed, "%.17g", state->elapsed_s);
    if (st == GAN_OK)
        st = meta(w, "format", GAN_CHECKPOINT_FORMAT, path, err);
    if (st == GAN_OK)
        st = meta(w, "format_version", GAN_CHECKPOINT_VERSION, path, err);
    if (st == GAN_OK)
        st = meta(w, "ganctl_version", gan_version(), path, err);
    if (st == GAN_OK)
        st = meta_u64(w, "iteration", (uint64_t)state->iteration, path, err);
    if (st == GAN_OK)
        st = meta_u64(w, "rng.seed", state->seed, path, err);
    if (st == GAN_OK)
        st = meta_u64(w, "rng.z_offset", state->z_offset, path, err);
    if (st == GAN_OK)
        st = meta_u64(w, "rng.loss_offset", state->loss_offset, path, err);
    if (st == GAN_OK && state->has_image) {
        st = meta_u64(w, "data.epoch", state->image.epoch, path, err);
        if (st == GAN_OK)
            st = meta_u64(w, "data.index", state->image.index, path, err);
    } else {
        if (st == GAN_OK)
            st = meta_u64(w, "data.block", state->data.block, path, err);
        if (st == GAN_OK)
            st = meta_u64(w, "data.shuffle_block", state->data.shuffle_block, path, err);
        if (st == GAN_OK)
            st = meta_u64(w, "data.cursor", state->data.cursor, path, err);
    }
    if (st == GAN_OK)
        st = meta(w, "elapsed_s", elapsed, path, err);
    if (st == GAN_OK)
        st = meta(w, "config", state->config_text ? state->config_text : "", path, err);
    if (st == GAN_OK)
        st = gan_checkpoint_reported_save(w, state, path, err);
    if (st == GAN_OK)
        st = gan_fp8_checkpoint_save(w, state->fp8, &state->fp8_totals, path, err);
    if (st == GAN_OK) {
        char msg[768];
        st = gan_st_writer_write(w, path, msg, sizeof msg);
        if (st != GAN_OK)
            gan_error_set(err, st, "%s", msg);
    }
    for (size_t i = 0; i < count; i++) {
        free(hosts[i].params);
        free(hosts[i].moments[0]);
        free(hosts[i].moments[1]);
    }
    free(hosts);
    gan_st_writer_free(w);
    return st;
}

/* ------------------------------------------------------------------ loading */

/* The end of a refusal of a value no run writes: what to do about it. */
#define DAMAGED "the file is damaged; resume from a copy of the run folder or start a new run"

static gan_status open_file(const char *path, gan_st_file **f, struct gan_error *err)
{
    char msg[768];
    gan_status st = gan_st_open(path, f, msg, sizeof msg);
    if (st == GAN_ERR_NOT_FOUND || (st == GAN_ERR_IO && access(path, F_OK) != 0))
        return gan_error_set(err, GAN_ERR_NOT_FOUND,
                             "%s: no checkpoint there; a run folder holds one once its run has written it (every run.checkpoint_every iterations, on a stop, and at the end)",
                             path);
    if (st != GAN_OK)
        return gan_error_set(err, st, "%s: not a usable checkpoint: %s", path, msg);
    const char *format = gan_st_metadata_get(*f, "format");
    const char *version = gan_st_metadata_get(*f, "format_version");
    if (!format || strcmp(format, GAN_CHECKPOINT_FORMAT) != 0) {
        gan_st_close(*f);
        *f = NULL;
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: a safetensors file, but not a ganctl checkpoint (its metadata has no format = \"%s\")",
                             path, GAN_CHECKPOINT_FORMAT);
    }
    if (!version || strcmp(version, GAN_CHECKPOINT_VERSION) != 0) {
        /* The file's own string is not quoted: a refusal never echoes a value read from
         * a file the user may have been sent. */
        gan_st_close(*f);
        *f = NULL;
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: a ganctl checkpoint of %s format version; this ganctl reads format version %s: open it with the ganctl that wrote it",
                             path, version ? "an unknown" : "no", GAN_CHECKPOINT_VERSION);
    }
    return GAN_OK;
}

gan_status gan_checkpoint_read_config(const char *path, char **config_text,
                                      struct gan_error *err)
{
    *config_text = NULL;
    gan_st_file *f;
    gan_status st = open_file(path, &f, err);
    if (st != GAN_OK)
        return st;
    const char *text = gan_st_metadata_get(f, "config");
    if (!text || !*text)
        st = gan_error_set(err, GAN_ERR_FORMAT,
                           "%s: the checkpoint holds no configuration (metadata \"config\"): it cannot be resumed",
                           path);
    else if (!(*config_text = gan_strdup(text)))
        st = nomem(err, path);
    gan_st_close(f);
    return st;
}

/* A metadata integer: decimal digits only, within uint64. */
static gan_status meta_get_u64(const gan_st_file *f, const char *key, uint64_t *out,
                               const char *path, struct gan_error *err)
{
    const char *text = gan_st_metadata_get(f, key);
    if (!text)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's metadata lacks \"%s\": the file is damaged or was not written by ganctl",
                             path, key);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    /* The value is the file's, not the user's: named by its key, never quoted. */
    if (!*text || *text == '-' || *text == '+' || *end || errno)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's metadata \"%s\" is not a whole number from 0 to %" PRIu64 ": " DAMAGED,
                             path, key, UINT64_MAX);
    *out = v;
    return GAN_OK;
}

/* A metadata integer within [lo, hi]: a value a run never writes is refused here rather
 * than wrapping into a negative count or a position in another stream. `what` names
 * the range ("the generator's noise draws"). */
static gan_status meta_get_range(const gan_st_file *f, const char *key, uint64_t lo, uint64_t hi,
                                 const char *what, uint64_t *out, const char *path,
                                 struct gan_error *err)
{
    gan_status st = meta_get_u64(f, key, out, path, err);
    if (st == GAN_OK && (*out < lo || *out > hi))
        st = gan_error_set(err, GAN_ERR_FORMAT,
                           "%s: the checkpoint's metadata \"%s\" is %" PRIu64 ", outside %s [%" PRIu64 ", %" PRIu64 "]: " DAMAGED,
                           path, key, *out, what, lo, hi);
    return st;
}

/* A position in the Philox stream that starts at `stream` (streams.h). The refusal says
 * what the position counts (`what`: "the generator's noise draws"), not the stream's
 * internal blocks, which nobody sets. */
static gan_status meta_get_block(const gan_st_file *f, const char *key, uint64_t stream,
                                 const char *what, uint64_t *out, const char *path,
                                 struct gan_error *err)
{
    gan_status st = meta_get_u64(f, key, out, path, err);
    if (st == GAN_OK && (*out < stream || *out > stream + (GAN_STREAM_BLOCKS - 1)))
        st = gan_error_set(err, GAN_ERR_FORMAT,
                           "%s: the checkpoint's metadata \"%s\" is not a position %s reach after any number of iterations, whatever run.seed, data.batch_size and run.iterations are: " DAMAGED,
                           path, key, what);
    return st;
}

/* A tensor of the file into a parameter (or a slice of a moment arena). */
static gan_status load_tensor(const gan_st_file *f, const char *name, const gan_tensor *like,
                              float *dst, const char *path, struct gan_error *err)
{
    uint64_t shape[GAN_ST_MAX_DIMS];
    int ndim = gan_tensor_ndim(like);
    for (int d = 0; d < ndim; d++)
        shape[d] = (uint64_t)gan_tensor_dim(like, d);
    const struct gan_st_tensor *t;
    char msg[768];
    gan_status st = gan_st_expect(f, name, GAN_ST_F32, ndim, shape, &t, msg, sizeof msg);
    if (st == GAN_ERR_NOT_FOUND)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint lacks %s: it was written for other networks than this configuration builds",
                             path, name);
    if (st != GAN_OK)
        return gan_error_set(err, st,
                             "%s (the checkpoint was written for other networks than this configuration builds)",
                             msg);
    memcpy(dst, t->data, t->nbytes);
    return GAN_OK;
}

/* Nonzero when `name` is scaler.NET.VALUE for the net called `net`. */
static int is_scaler_value(const char *name, const char *net)
{
    size_t n = strlen(net);
    return strncmp(name, "scaler.", 7) == 0 && strncmp(name + 7, net, n) == 0 &&
           name[7 + n] == '.' && name[8 + n];
}

/* A network's loss scaling from the file: the metadata and every scaler.NET.* tensor. */
static gan_status load_scaling(const gan_st_file *f, const struct gan_checkpoint_net *cn,
                               const char *path, struct gan_error *err)
{
    struct gan_checkpoint_scaling *sc = cn->scaling;
    memset(sc, 0, sizeof *sc);
    char key[300];
    snprintf(key, sizeof key, "scaler.%s", cn->name);
    const char *text = gan_st_metadata_get(f, key);
    const char *slash = text ? strrchr(text, '/') : NULL;
    char *end = NULL;
    long long version = slash ? strtoll(slash + 1, &end, 10) : 0;
    if (!text)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's metadata lacks \"%s\" (the %s's loss scaler): it was written by an older ganctl or is damaged; start a new run",
                             path, key, cn->name);
    if (!slash || slash == text || (size_t)(slash - text) >= sizeof sc->state.scaler ||
        !slash[1] || *end || version < 1)
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's metadata \"%s\" is not NAME/VERSION (the scaler's name, a slash and its state format from 1): " DAMAGED,
                             path, key);
    memcpy(sc->state.scaler, text, (size_t)(slash - text));
    sc->state.version = version;
    for (size_t k = 0; k < gan_st_count(f); k++) {
        const struct gan_st_tensor *t = gan_st_tensor_at(f, k);
        if (!is_scaler_value(t->name, cn->name))
            continue;
        const char *vname = t->name + strlen(cn->name) + 8;
        if (sc->state.count == GAN_SCALER_STATE_MAX || strlen(vname) >= GAN_SCALER_NAME_MAX)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: %s: a scaler state holds at most %d values with names under %d bytes: the file is damaged",
                                 path, t->name, GAN_SCALER_STATE_MAX, GAN_SCALER_NAME_MAX);
        if ((t->dtype != GAN_ST_F64 && t->dtype != GAN_ST_I64) || t->count != 1 || t->nbytes != 8)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: %s is not one F64 or I64 number: the file is damaged",
                                 path, t->name);
        struct gan_scaler_value *v = &sc->state.values[sc->state.count++];
        snprintf(v->name, sizeof v->name, "%s", vname);
        if (t->dtype == GAN_ST_I64) {
            v->type = GAN_SCALER_INT64;
            memcpy(&v->i, t->data, sizeof v->i);
        } else {
            v->type = GAN_SCALER_FLOAT64;
            memcpy(&v->f, t->data, sizeof v->f);
        }
    }
    uint64_t skipped = 0, overflows = 0;
    snprintf(key, sizeof key, "trainer.%s.skipped", cn->name);
    gan_status st = meta_get_range(f, key, 0, INT64_MAX, "a step count's range", &skipped,
                                   path, err);
    snprintf(key, sizeof key, "trainer.%s.overflows", cn->name);
    if (st == GAN_OK)
        st = meta_get_range(f, key, 0, 3, "the mask of the two overflow kinds", &overflows,
                            path, err);
    sc->skipped = (int64_t)skipped;
    sc->overflows = (int64_t)overflows;
    return st;
}

/* Every tensor of the file must belong to one of the nets. */
static gan_status check_no_strangers(const gan_st_file *f, const struct gan_checkpoint_net *nets,
                                     size_t count, const char *path, struct gan_error *err)
{
    for (size_t k = 0; k < gan_st_count(f); k++) {
        const char *name = gan_st_tensor_at(f, k)->name;
        /* The FP8 recipe's state: load_recipe checks it. */
        int known = strncmp(name, "recipe.", 7) == 0;
        for (size_t i = 0; i < count && !known; i++) {
            gan_net *net = nets[i].net;
            if (gan_net_find(net, name) >= 0 && strncmp(name, nets[i].name, strlen(nets[i].name)) == 0)
                known = 1;
            /* A loss scaler's state is read only when asked for, but never a stranger. */
            if (is_scaler_value(name, nets[i].name))
                known = 1;
            char prefix[300];
            for (int m = 0; m < 2 && !known; m++) {
                snprintf(prefix, sizeof prefix, "optimizer.%s.%s.", nets[i].name, moment_names[m]);
                size_t n = strlen(prefix);
                known = strncmp(name, prefix, n) == 0 && gan_net_find(net, name + n) >= 0;
            }
        }
        if (!known)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: the checkpoint holds %s, which these networks do not have: it was written for other networks than this configuration builds",
                                 path, name);
    }
    return GAN_OK;
}

/* Refuses a tensor with a value no run saves: NaN or inf anywhere (the trainer never
 * applies a step whose gradients are not finite, so finite weights stay finite), or a
 * negative Adam second moment (an average of squares). Training on from such a file
 * would skip every step and still end "completed". */
static gan_status check_values(const float *v, size_t n, int second_moment, const char *name,
                               const char *path, struct gan_error *err)
{
    for (size_t k = 0; k < n; k++) {
        if (isfinite(v[k]) && !(second_moment && v[k] < 0.0f))
            continue;
        return gan_error_set(err, GAN_ERR_FORMAT,
                             "%s: the checkpoint's %s holds %s at element %zu: the run had diverged before it was written, or " DAMAGED,
                             path, name,
                             isnan(v[k]) ? "NaN" : isinf(v[k]) ? (v[k] > 0 ? "inf" : "-inf")
                                                              : "a negative second moment",
                             k);
    }
    return GAN_OK;
}

static gan_status load_net(const gan_st_file *f, const struct gan_checkpoint_net *cn,
                           const char *path, struct gan_error *err)
{
    gan_net *net = cn->net;
    gan_ctx *ctx = gan_net_ctx(net);
    size_t total = (size_t)gan_net_total(net);
    size_t bytes = (total ? total : 1) * sizeof(float);
    float *params = malloc(bytes), *moments[2] = { malloc(bytes), malloc(bytes) };
    gan_status st = GAN_OK;
    char name[600];
    if (!params || !moments[0] || !moments[1])
        st = nomem(err, path);
    for (size_t i = 0; st == GAN_OK && i < gan_net_count(net); i++) {
        const gan_tensor *t = gan_net_tensor(net, i);
        size_t at = (size_t)gan_net_offset(net, i), n = (size_t)gan_net_numel(net, i);
        st = load_tensor(f, gan_net_full_name(net, i), t, params + at, path, err);
        if (st == GAN_OK)
            st = check_values(params + at, n, 0, gan_net_full_name(net, i), path, err);
        for (int k = 0; st == GAN_OK && k < 2; k++) {
            snprintf(name, sizeof name, "optimizer.%s.%s.%s", cn->name, moment_names[k],
                     gan_net_name(net, i));
            st = load_tensor(f, name, t, moments[k] + at, path, err);
            if (st == GAN_OK)
                st = check_values(moments[k] + at, n, k == 1, name, path, err);
        }
    }
    /* Adam's step count must stay a signed count: beyond it the optimizer would restart
     * its bias correction at step 0. */
    uint64_t steps = 0;
    if (st == GAN_OK) {
        snprintf(name, sizeof name, "optimizer.%s.step", cn->name);
        st = meta_get_range(f, name, 0, INT64_MAX, "a step count's range", &steps, path, err);
    }
    for (size_t i = 0; st == GAN_OK && i < gan_net_count(net); i++) {
        size_t at = (size_t)gan_net_offset(net, i), n = (size_t)gan_net_numel(net, i);
        if (gan_tensor_set_from_host(ctx, gan_net_tensor(net, i), params + at, n) != GAN_OK)
            st = ctx_error(err, ctx, path, "setting the parameters");
    }
    for (int k = 0; st == GAN_OK && k < 2; k++)
        if (gan_optimizer_moment_from_host(cn->opt, k, moments[k], total) != GAN_OK)
            st = ctx_error(err, ctx, path, "setting Adam's moments");
    if (st == GAN_OK)
        gan_optimizer_set_steps(cn->opt, (int64_t)steps);
    free(params);
    free(moments[0]);
    free(moments[1]);
    return st;
}

gan_status gan_checkpoint_load(const char *path, const struct gan_checkpoint_net *nets,
                               size_t count, struct gan_checkpoint_state *state,
                               struct gan_error *err)
{
    struct gan_fp8_state *fp8 = state->fp8;   /* where the recipe's state goes, if asked */
    memset(state, 0, sizeof *state);
    state->fp8 = fp8;
    gan_st_file *f;
    gan_status st = open_file(path, &f, err);
    if (st != GAN_OK)
        return st;
    uint64_t iteration = 0;
    st = check_no_strangers(f, nets, count, path, err);
    for (size_t i = 0; st == GAN_OK && i < count; i++) {
        st = load_net(f, &nets[i], path, err);
        if (st == GAN_OK && nets[i].scaling)
            st = load_scaling(f, &nets[i], path, err);
    }
    if (st == GAN_OK)
        st = meta_get_range(f, "iteration", 0, GAN_CHECKPOINT_MAX_ITERATION,
                            "the iterations a run counts", &iteration, path, err);
    if (st == GAN_OK)
        st = meta_get_u64(f, "rng.seed", &state->seed, path, err);
    /* Each offset is the next unused block of its own stream: one outside it would
     * replay another consumer's numbers (streams.h). */
    if (st == GAN_OK)
        st = meta_get_block(f, "rng.z_offset", GAN_STREAM_Z, "the generator's noise draws",
                            &state->z_offset, path, err);
    if (st == GAN_OK)
        st = meta_get_block(f, "rng.loss_offset", GAN_STREAM_LOSS,
                            "the loss terms' random draws", &state->loss_offset, path, err);
    /* An image run's file holds the image sampler's position, a toy run's the toy
     * sampler's; which one is for the trainer to check against its data. */
    state->has_image = gan_st_metadata_get(f, "data.epoch") != NULL;
    if (st == GAN_OK && state->has_image) {
        st = meta_get_u64(f, "data.epoch", &state->image.epoch, path, err);
        if (st == GAN_OK)
            st = meta_get_u64(f, "data.index", &state->image.index, path, err);
    } else {
        /* The toy sampler reads the data stream; a shuffle position, when it has one
         * (25gaussians), too. The sampler checks how they fit together. */
        if (st == GAN_OK)
            st = meta_get_block(f, "data.block", GAN_STREAM_DATA, "the toy data's samples",
                                &state->data.block, path, err);
        if (st == GAN_OK)
            st = meta_get_u64(f, "data.shuffle_block", &state->data.shuffle_block, path, err);
        if (st == GAN_OK && state->data.shuffle_block != 0)
            st = meta_get_block(f, "data.shuffle_block", GAN_STREAM_DATA,
                                "the toy data's shuffles", &state->data.shuffle_block,
                                path, err);
        if (st == GAN_OK)
            st = meta_get_u64(f, "data.cursor", &state->data.cursor, path, err);
    }
    if (st == GAN_OK) {
        const char *text = gan_st_metadata_get(f, "elapsed_s");
        char *end = NULL;
        double e = text ? strtod(text, &end) : NAN;
        if (!text || !*text || *end || !isfinite(e) || e < 0)
            st = gan_error_set(err, GAN_ERR_FORMAT,
                               "%s: the checkpoint's metadata \"elapsed_s\" is missing or not a number: the file is damaged",
                               path);
        else
            state->elapsed_s = e;
    }
    if (st == GAN_OK)
        st = gan_checkpoint_reported_load(f, state, path, err);
    if (st == GAN_OK && state->fp8)
        st = gan_fp8_checkpoint_load(f, state->fp8, &state->fp8_totals, path, err);
    state->iteration = (int64_t)iteration;
    state->config_text = NULL;
    gan_st_close(f);
    return st;
}
