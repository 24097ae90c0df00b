/* SPDX-License-Identifier: MIT */
/* net.c — the parameter arena of one network: named FP32 parameters declared by a model
 * plugin, filled from the Philox stream, and one flat gradient buffer zeroed in one call. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strings.h"
#include "nn/net.h"
#include "tensor/tensor_core.h"

/* Longest short name accepted; full names add the prefix and a dot. */
#define NET_NAME_MAX 200

struct net_param {
    char *name;                 /* "fc0.weight" */
    char *full;                 /* "critic.fc0.weight" (= name without a prefix) */
    gan_tensor *t;              /* persistent F32 leaf, requires_grad */
    int64_t numel;
    int64_t offset;             /* first element in the arenas */
    struct gan_init init;
};

struct gan_net {
    gan_ctx *ctx;
    const struct gan_host *host;  /* while a model's create runs; may be NULL */
    char prefix[NET_NAME_MAX + 1];
    struct net_param *params;
    gan_tensor **tensors;         /* params[i].t, kept as an array for gan_grad */
    size_t count, cap;
    int64_t total;
    gan_tensor *grads;            /* [total] F32; made on first use, then the net is closed */
};

/* Records a failure in the context and, while a plugin's create runs, through its host:
 * the plugin sees the reason there and the core sees it in the context. */
static gan_status net_fail(const gan_net *net, gan_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static gan_status net_fail(const gan_net *net, gan_status status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ti_fail(net->ctx, status, "%s", msg);
    if (net->host && net->host->fail)
        net->host->fail(net->host->ctx, status, "%s", msg);
    return status;
}

/* Letters, digits, '_' and '.', not starting or ending with '.', no empty part: the
 * names a torch state_dict uses, so that a checkpoint loads there unchanged. */
static int valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NET_NAME_MAX || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                 || c == '_' || c == '.';
        if (!ok || (c == '.' && s[i + 1] == '.'))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ lifecycle */

gan_status gan_net_new(gan_ctx *ctx, const char *prefix, gan_net **out)
{
    if (!out)
        return ctx ? ti_fail(ctx, GAN_ERR_INVALID, "gan_net_new: out is NULL") : GAN_ERR_INVALID;
    *out = NULL;
    if (!ctx)
        return GAN_ERR_INVALID;
    if (prefix && *prefix && !valid_name(prefix))
        return ti_fail(ctx, GAN_ERR_INVALID, "gan_net_new: \"%.*s\" is not a usable network "
                       "name: use letters, digits, '_' and '.' (not first or last), at most "
                       "%d characters, e.g. \"critic\"", NET_NAME_MAX, prefix, NET_NAME_MAX);
    gan_net *net = calloc(1, sizeof *net);
    if (!net)
        return ti_fail(ctx, GAN_ERR_NOMEM, "gan_net_new: out of host memory");
    net->ctx = ctx;
    if (prefix)
        snprintf(net->prefix, sizeof net->prefix, "%s", prefix);
    *out = net;
    return GAN_OK;
}

void gan_net_free(gan_net *net)
{
    if (!net)
        return;
    for (size_t i = 0; i < net->count; i++) {
        gan_tensor_free(net->params[i].t);
        free(net->params[i].name);
        free(net->params[i].full);
    }
    gan_tensor_free(net->grads);
    free(net->params);
    free(net->tensors);
    free(net);
}

void gan_net_set_host(gan_net *net, const struct gan_host *host)
{
    if (net)
        net->host = host;
}

gan_ctx *gan_net_ctx(const gan_net *net)
{
    return net ? net->ctx : NULL;
}

const char *gan_net_prefix(const gan_net *net)
{
    return net ? net->prefix : "";
}

/* ------------------------------------------------------------------ declaration */

/* t's shape into dims; returns its rank. */
static int shape_of(const gan_tensor *t, int64_t dims[GAN_TENSOR_MAX_DIMS])
{
    int n = gan_tensor_ndim(t);
    for (int d = 0; d < n; d++)
        dims[d] = gan_tensor_dim(t, d);
    return n;
}

static int64_t fan_in_of(int ndim, const int64_t *dims)
{
    int64_t f = 1;
    for (int d = 1; d < ndim; d++)
        f *= dims[d];
    return f;
}

static int uses_fan_in(enum gan_init_kind kind)
{
    return kind == GAN_INIT_HE_NORMAL || kind == GAN_INIT_HE_UNIFORM
           || kind == GAN_INIT_TORCH_LINEAR;
}

/* Whether `init` can fill a tensor of this shape; explains why not. */
static gan_status check_init(gan_net *net, const char *name, int ndim, struct gan_init init)
{
    const char *op = "gan_net_param";
    switch (init.kind) {
    case GAN_INIT_ZEROS:
    case GAN_INIT_HE_NORMAL:
    case GAN_INIT_HE_UNIFORM:
    case GAN_INIT_TORCH_LINEAR:
        break;
    case GAN_INIT_CONSTANT:
        if (!isfinite(init.a))
            return net_fail(net, GAN_ERR_INVALID, "%s: %s: GAN_INIT_CONSTANT with a = %g; "
                            "the constant must be finite", op, name, (double)init.a);
        break;
    case GAN_INIT_UNIFORM:
    case GAN_INIT_NORMAL:
        if (!isfinite(init.a) || init.a < 0.0f)
            return net_fail(net, GAN_ERR_INVALID, "%s: %s: %s with a = %g; a is the %s and "
                            "must be finite and 0 or more", op, name,
                            init.kind == GAN_INIT_UNIFORM ? "GAN_INIT_UNIFORM" : "GAN_INIT_NORMAL",
                            (double)init.a, init.kind == GAN_INIT_UNIFORM ? "bound"
                                                                          : "standard deviation");
        break;
    default:
        return net_fail(net, GAN_ERR_INVALID, "%s: %s: init kind %d is not an enum "
                        "gan_init_kind value (model.h)", op, name, (int)init.kind);
    }
    /* PyTorch refuses a fan-in for fewer than two dimensions too: a bias has none of its
     * own. nn.Linear draws its bias from U(±1/sqrt(fan_in of the weight)), which is
     * GAN_INIT_UNIFORM with that bound. */
    if (uses_fan_in(init.kind) && ndim < 2)
        return net_fail(net, GAN_ERR_INVALID, "%s: %s has %d dimension%s, so it has no fan-in "
                        "for He or nn.Linear initialisation: give a bias GAN_INIT_ZEROS, or "
                        "GAN_INIT_UNIFORM with a = 1/sqrt(fan_in of its weight) as nn.Linear "
                        "does", op, name, ndim, ndim == 1 ? "" : "s");
    return GAN_OK;
}

/* Whether a parameter of this name and shape may be declared now; *numel is its
 * element count. Everything is checked before anything is allocated, so a refused
 * declaration leaves the network as it was. */
static gan_status check_declaration(gan_net *net, const char *name, int ndim,
                                    const int64_t *dims, int64_t *numel)
{
    const char *op = "gan_net_param";
    char shape[160];
    if (net->grads)
        return net_fail(net, GAN_ERR_INVALID, "%s: %s: the network's parameters are fixed "
                        "once its gradient buffer exists; declare parameters only from the "
                        "model's create", op, name ? name : "(NULL)");
    if (!name || !valid_name(name))
        return net_fail(net, GAN_ERR_INVALID, "%s: \"%.*s\" is not a usable parameter name: "
                        "use letters, digits, '_' and '.' (not first or last, no empty part), "
                        "at most %d characters, as torch state_dict names (\"fc0.weight\")",
                        op, NET_NAME_MAX, name ? name : "(NULL)", NET_NAME_MAX);
    if (gan_net_find(net, name) >= 0)
        return net_fail(net, GAN_ERR_INVALID, "%s: %s is declared twice; parameter names "
                        "must be unique within a network", op, name);
    if (ndim < 0 || ndim > GAN_TENSOR_MAX_DIMS || (ndim > 0 && !dims))
        return net_fail(net, GAN_ERR_INVALID, "%s: %s: ndim is %d%s; a parameter has 0 to %d "
                        "dimensions", op, name, ndim, ndim > 0 && !dims ? " with dims NULL" : "",
                        GAN_TENSOR_MAX_DIMS);
    /* Bounded by an eighth of INT64_MAX, so that a count of 8-byte values fits in
     * bytes too. */
    *numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 1 || *numel > (INT64_MAX / 8) / dims[d])
            return net_fail(net, GAN_ERR_INVALID, "%s: %s: shape %s is not usable; every "
                            "dimension must be 1 or more and the total must fit in memory",
                            op, name, ti_dims_str(shape, sizeof shape, ndim, dims));
        *numel *= dims[d];
    }
    if (net->total > (INT64_MAX / 8) - *numel)
        return net_fail(net, GAN_ERR_INVALID, "%s: %s: the network's parameters would not fit "
                        "in memory", op, name);
    return GAN_OK;
}

/* Room for one more parameter in params and tensors, which grow together (tensors is
 * params[i].t again, as gan_grad takes it). */
static gan_status reserve_param(gan_net *net, const char *name)
{
    const char *op = "gan_net_param";
    if (net->count != net->cap)
        return GAN_OK;
    size_t cap = net->cap ? 2 * net->cap : 16;
    struct net_param *p = realloc(net->params, cap * sizeof *p);
    if (p)
        net->params = p;
    gan_tensor **ts = p ? realloc(net->tensors, cap * sizeof *ts) : NULL;
    if (ts)
        net->tensors = ts;
    if (!p || !ts)
        return net_fail(net, GAN_ERR_NOMEM, "%s: %s: out of host memory", op, name);
    net->cap = cap;
    return GAN_OK;
}

/* The parameter's tensor, zeros until gan_net_init: a parameter never holds undefined
 * memory. NULL when it cannot be made, with the reason in the context. */
static gan_tensor *zeroed_param_tensor(gan_net *net, int ndim, const int64_t *dims,
                                       int64_t numel)
{
    gan_tensor *t = gan_tensor_new_persistent(net->ctx, GAN_F32, ndim, dims);
    if (!t || (numel > 0 && ti_fill(net->ctx, "gan_net_param", t, 0.0f) != GAN_OK)) {
        if (t)
            gan_tensor_free(t);
        return NULL;
    }
    return t;
}

gan_tensor *gan_net_param(gan_net *net, const char *name, int ndim, const int64_t *dims,
                          struct gan_init init)
{
    const char *op = "gan_net_param";
    if (!net)
        return NULL;
    int64_t numel = 1;
    if (check_declaration(net, name, ndim, dims, &numel) != GAN_OK)
        return NULL;
    if (check_init(net, name, ndim, init) != GAN_OK)
        return NULL;

    char full[2 * NET_NAME_MAX + 2];
    snprintf(full, sizeof full, "%s%s%s", net->prefix, net->prefix[0] ? "." : "", name);
    if (reserve_param(net, name) != GAN_OK)
        return NULL;
    struct net_param *p = &net->params[net->count];
    memset(p, 0, sizeof *p);
    p->name = gan_strdup(name);
    p->full = gan_strdup(full);
    if (!p->name || !p->full) {
        free(p->name);
        free(p->full);
        net_fail(net, GAN_ERR_NOMEM, "%s: %s: out of host memory", op, name);
        return NULL;
    }
    gan_tensor *t = zeroed_param_tensor(net, ndim, dims, numel);
    if (!t) {
        free(p->name);
        free(p->full);
        if (net->host && net->host->fail)
            net->host->fail(net->host->ctx, gan_ctx_status(net->ctx), "%s: %s: %s", op, name,
                            gan_ctx_error(net->ctx));
        return NULL;
    }
    gan_tensor_set_requires_grad(t, 1);
    p->t = t;
    p->numel = numel;
    p->offset = net->total;
    p->init = init;
    net->tensors[net->count] = t;
    net->count++;
    net->total += numel;
    return t;
}

/* ------------------------------------------------------------------ initialisation */

/* Fills parameter p as its init says, drawing at block *offset. */
static gan_status init_one(gan_net *net, const struct net_param *p, uint64_t seed,
                           uint64_t *offset)
{
    const char *op = "gan_net_init";
    gan_ctx *ctx = net->ctx;
    const gan_tensor *t = p->t;
    int64_t dims[GAN_TENSOR_MAX_DIMS];
    double fan_in = (double)fan_in_of(shape_of(t, dims), dims);
    int normal = 0;
    double spread = 0.0;  /* the bound of a uniform, the standard deviation of a normal */
    switch (p->init.kind) {
    case GAN_INIT_ZEROS:
        return ti_fill(ctx, op, p->t, 0.0f);
    case GAN_INIT_CONSTANT:
        return ti_fill(ctx, op, p->t, p->init.a);
    case GAN_INIT_UNIFORM:
        spread = p->init.a;
        break;
    case GAN_INIT_NORMAL:
        spread = p->init.a;
        normal = 1;
        break;
    case GAN_INIT_HE_NORMAL:
        spread = sqrt(2.0 / fan_in);
        normal = 1;
        break;
    case GAN_INIT_HE_UNIFORM:
        spread = sqrt(6.0 / fan_in);
        break;
    case GAN_INIT_TORCH_LINEAR:
        spread = 1.0 / sqrt(fan_in);
        break;
    default:
        return ti_fail(ctx, GAN_ERR_INTERNAL, "%s: %s has init kind %d, which gan_net_param "
                       "should have refused", op, p->full, (int)p->init.kind);
    }
    size_t n = (size_t)p->numel;
    uint64_t blocks = (n + 3) / 4;
    uint64_t at = *offset;
    /* A spread of 0 is a valid degenerate draw (all zeros); the stream still advances by
     * the same count, so the positions of later draws do not depend on values. */
    *offset += blocks;
    if (spread == 0.0)
        return ti_fill(ctx, op, p->t, 0.0f);
    struct gan_ref r = { gan_tensor_buffer(t), 0, gan_tensor_dtype(t) };
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    gan_status st;
    if (normal) {
        if (!TI_HAS(ctx, op, rng_normal))
            return ti_result(ctx, 0);
        st = ops->rng_normal(gan_ctx_backend(ctx), n, seed, at, 0.0f, (float)spread, &r);
        return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "rng_normal", st);
    }
    if (!TI_HAS(ctx, op, rng_uniform))
        return ti_result(ctx, 0);
    st = ops->rng_uniform(gan_ctx_backend(ctx), n, seed, at, (float)-spread, (float)spread, &r);
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "rng_uniform", st);
}

gan_status gan_net_init(gan_net *net, uint64_t seed, uint64_t *offset)
{
    if (!net)
        return GAN_ERR_INVALID;
    if (!offset)
        return ti_fail(net->ctx, GAN_ERR_INVALID, "gan_net_init: offset is NULL; pass the "
                       "run's stream position");
    for (size_t i = 0; i < net->count; i++) {
        gan_status st = init_one(net, &net->params[i], seed, offset);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

/* ------------------------------------------------------------------ queries */

size_t gan_net_count(const gan_net *net)
{
    return net ? net->count : 0;
}

static const struct net_param *param_at(const gan_net *net, size_t i)
{
    return net && i < net->count ? &net->params[i] : NULL;
}

const char *gan_net_name(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    return p ? p->name : NULL;
}

const char *gan_net_full_name(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    return p ? p->full : NULL;
}

gan_tensor *gan_net_tensor(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    return p ? p->t : NULL;
}

int64_t gan_net_numel(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    return p ? p->numel : -1;
}

int64_t gan_net_offset(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    return p ? p->offset : -1;
}

struct gan_init gan_net_init_spec(const gan_net *net, size_t i)
{
    const struct net_param *p = param_at(net, i);
    struct gan_init none = { GAN_INIT_ZEROS, 0.0f };
    return p ? p->init : none;
}

gan_tensor *const *gan_net_tensors(const gan_net *net)
{
    return net ? net->tensors : NULL;
}

long gan_net_find(const gan_net *net, const char *name)
{
    if (!net || !name)
        return -1;
    for (size_t i = 0; i < net->count; i++)
        if (strcmp(net->params[i].name, name) == 0 || strcmp(net->params[i].full, name) == 0)
            return (long)i;
    return -1;
}

int64_t gan_net_total(const gan_net *net)
{
    return net ? net->total : 0;
}

/* ------------------------------------------------------------------ gradients */

/* The arena, made (zeroed) on first use. */
static gan_tensor *arena(gan_net *net, const char *op)
{
    if (net->grads)
        return net->grads;
    int64_t dims[1] = { net->total };
    gan_tensor *g = gan_tensor_new_persistent(net->ctx, GAN_F32, 1, dims);
    if (!g)
        return NULL;
    if (net->total > 0 && ti_fill(net->ctx, op, g, 0.0f) != GAN_OK) {
        gan_tensor_free(g);
        return NULL;
    }
    net->grads = g;
    return g;
}

gan_tensor *gan_net_grads(gan_net *net)
{
    return net ? arena(net, "gan_net_grads") : NULL;
}

struct gan_ref gan_net_grad_ref(gan_net *net, size_t i)
{
    struct gan_ref r = { NULL, 0, GAN_F32 };
    if (!net)
        return r;
    if (i >= net->count) {
        ti_fail(net->ctx, GAN_ERR_INVALID, "gan_net_grad_ref: parameter %zu of a network with "
                "%zu", i, net->count);
        return r;
    }
    gan_tensor *g = arena(net, "gan_net_grad_ref");
    if (g) {
        r.buf = gan_tensor_buffer(g);
        r.offset = (size_t)net->params[i].offset;
    }
    return r;
}

gan_status gan_net_zero_grads(gan_net *net)
{
    if (!net)
        return GAN_ERR_INVALID;
    const char *op = "gan_net_zero_grads";
    int fresh = net->grads == NULL;
    gan_tensor *g = arena(net, op);
    if (!g)
        return ti_result(net->ctx, 0);
    /* A new arena is zero already. */
    return fresh || net->total == 0 ? GAN_OK : ti_fill(net->ctx, op, g, 0.0f);
}

gan_status gan_net_fill_grads(gan_net *net, float value)
{
    if (!net)
        return GAN_ERR_INVALID;
    const char *op = "gan_net_fill_grads";
    gan_tensor *g = arena(net, op);
    if (!g)
        return ti_result(net->ctx, 0);
    return net->total == 0 ? GAN_OK : ti_fill(net->ctx, op, g, value);
}

static int same_shape(const gan_tensor *a, const gan_tensor *b)
{
    int64_t ad[GAN_TENSOR_MAX_DIMS], bd[GAN_TENSOR_MAX_DIMS];
    int n = shape_of(a, ad);
    return n == shape_of(b, bd) && memcmp(ad, bd, (size_t)n * sizeof ad[0]) == 0;
}

gan_status gan_net_add_grads(gan_net *net, gan_tensor *const *grads)
{
    if (!net)
        return GAN_ERR_INVALID;
    const char *op = "gan_net_add_grads";
    gan_ctx *ctx = net->ctx;
    char a[160], b[160];
    if (!grads && net->count > 0)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: grads is NULL; pass one tensor (or NULL) "
                       "per parameter", op);
    /* Check everything before adding anything: a failure leaves the arena as it was. */
    for (size_t i = 0; i < net->count; i++) {
        const gan_tensor *g = grads[i];
        if (!g)
            continue;
        if (!ti_check_input(ctx, op, net->params[i].full, g))
            return ti_result(ctx, 0);
        if (!same_shape(g, net->params[i].t)) {
            int64_t gd[GAN_TENSOR_MAX_DIMS], pd[GAN_TENSOR_MAX_DIMS];
            int gn = shape_of(g, gd), pn = shape_of(net->params[i].t, pd);
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: the gradient for %s has shape %s but "
                           "the parameter has shape %s", op, net->params[i].full,
                           ti_dims_str(a, sizeof a, gn, gd), ti_dims_str(b, sizeof b, pn, pd));
        }
    }
    gan_tensor *arena_t = arena(net, op);
    if (!arena_t)
        return ti_result(ctx, 0);
    if (!TI_HAS(ctx, op, binary))
        return ti_result(ctx, 0);
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    for (size_t i = 0; i < net->count; i++) {
        const gan_tensor *g = grads[i];
        const struct net_param *p = &net->params[i];
        if (!g || p->numel == 0)
            continue;
        /* One dimension over the parameter's run; the arena is both input and output
         * (the kernel allows an output to be the same view as an input). */
        struct gan_shape shape;
        memset(&shape, 0, sizeof shape);
        shape.ndim = 1;
        shape.dim[0] = p->numel;
        struct gan_operand acc, in;
        memset(&acc, 0, sizeof acc);
        memset(&in, 0, sizeof in);
        acc.buf = gan_tensor_buffer(arena_t);
        acc.offset = (size_t)p->offset;
        acc.dtype = GAN_F32;
        acc.stride[0] = 1;
        in.buf = gan_tensor_buffer(g);
        in.offset = 0;
        in.dtype = gan_tensor_dtype(g);
        in.stride[0] = 1;
        gan_status st = ops->binary(gan_ctx_backend(ctx), GAN_BINARY_ADD, &shape, &acc, &in, &acc);
        if (st != GAN_OK)
            return ti_backend_fail(ctx, op, "binary", st);
    }
    return GAN_OK;
}

gan_status gan_net_backward(gan_net *net, gan_tensor *output, gan_tensor *seed)
{
    if (!net)
        return GAN_ERR_INVALID;
    if (net->count == 0)
        return GAN_OK;
    gan_tensor **grads = calloc(net->count, sizeof *grads);
    if (!grads)
        return ti_fail(net->ctx, GAN_ERR_NOMEM, "gan_net_backward: out of host memory");
    gan_tensor *seeds[1] = { seed };
    gan_status st = gan_grad(net->ctx, 1, &output, seed ? seeds : NULL, (int)net->count,
                             net->tensors, grads, 0);
    if (st == GAN_OK)
        st = gan_net_add_grads(net, grads);
    free(grads);
    return st;
}

gan_status gan_net_grad_to_host(gan_net *net, size_t i, float *values, size_t count)
{
    if (!net)
        return GAN_ERR_INVALID;
    const char *op = "gan_net_grad_to_host";
    gan_ctx *ctx = net->ctx;
    if (i >= net->count)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: parameter %zu of a network with %zu", op, i,
                       net->count);
    const struct net_param *p = &net->params[i];
    if (count != (size_t)p->numel)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: count is %zu but %s has %lld elements", op,
                       count, p->full, (long long)p->numel);
    if (count == 0)
        return GAN_OK;
    if (!values)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: values is NULL", op);
    gan_tensor *g = arena(net, op);
    if (!g)
        return ti_result(ctx, 0);
    const struct gan_backend_ops *ops = gan_ctx_backend_ops(ctx);
    gan_backend *be = gan_ctx_backend(ctx);
    gan_status st;
    if (ops->synchronize && (st = ops->synchronize(be)) != GAN_OK)
        return ti_backend_fail(ctx, op, "synchronize", st);
    if (!TI_HAS(ctx, op, download))
        return ti_result(ctx, 0);
    st = ops->download(be, values, gan_tensor_buffer(g), (size_t)p->offset * sizeof(float),
                       count * sizeof(float));
    return st == GAN_OK ? GAN_OK : ti_backend_fail(ctx, op, "download", st);
}
