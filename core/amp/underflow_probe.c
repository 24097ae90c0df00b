/* SPDX-License-Identifier: MIT */
/* underflow_probe.c — debug level 2: the FP32 shadow of a 16-bit backward on the same inputs,
 * and the per-parameter and per-op counts of values the 16-bit pass lost (underflow) or blew up. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_core.h"
#include "amp/underflow_probe.h"

/* A node of the 16-bit tape as the comparison needs it, taken before the shadow's own
 * gan_grad calls move the tape's epoch (after which the 16-bit gradients can no longer
 * be asked for through gan_ctx_tape_entry). */
struct taped {
    const char *op;
    const char *scope;
    int from_backward;
    int64_t numel;
    gan_tensor *grad;           /* NULL: the backward did not reach the node */
};

struct gan_probe {
    int has_result;
    double scale;
    struct gan_probe_row *rows;
    size_t n_rows, cap_rows;
    char mismatch[256];
    /* Scratch kept between comparisons: tape records and host copies. */
    struct taped *taped;
    size_t cap_taped;
    gan_tensor **grads32;
    size_t cap_grads;
    float *lo, *hi;             /* the 16-bit pass's values and the shadow's, as FP32 */
    size_t cap_values;
};

gan_status gan_probe_new(gan_probe **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? GAN_OK : GAN_ERR_NOMEM;
}

void gan_probe_free(gan_probe *p)
{
    if (!p)
        return;
    free(p->rows);
    free(p->taped);
    free(p->grads32);
    free(p->lo);
    free(p->hi);
    free(p);
}

void gan_probe_clear(gan_probe *p)
{
    p->has_result = 0;
    p->n_rows = 0;
    p->mismatch[0] = '\0';
}

/* Grows *array (of `size`-byte items) to hold n; 0 when out of memory. */
static int reserve(void **array, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 1;
    size_t c = *cap ? *cap : 16;
    while (c < n)
        c *= 2;
    void *a = realloc(*array, c * size);
    if (!a)
        return 0;
    *array = a;
    *cap = c;
    return 1;
}

static struct gan_probe_row *new_row(gan_probe *p, gan_ctx *ctx)
{
    if (!reserve((void **)&p->rows, &p->cap_rows, p->n_rows + 1, sizeof *p->rows)) {
        ti_fail(ctx, GAN_ERR_NOMEM, "debug level 2: out of host memory for the underflow report");
        return NULL;
    }
    struct gan_probe_row *r = &p->rows[p->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Counts, over two gradients of one tensor (lo from the 16-bit pass, hi from the FP32
 * shadow; any float dtypes, read as FP32, which holds both 16-bit types exactly), the
 * values lo lost: zero where hi is finite and not zero (true underflow), inf or NaN
 * where hi is finite (overflow). */
static gan_status compare(gan_probe *p, gan_ctx *ctx, const gan_tensor *lo, const gan_tensor *hi,
                          struct gan_probe_row *r)
{
    size_t n = (size_t)gan_tensor_numel(lo);
    r->dtype = gan_tensor_dtype(lo);
    r->elements = n;
    if (n == 0)
        return GAN_OK;
    if (n > p->cap_values) {
        float *a = realloc(p->lo, n * sizeof *a);
        if (a)
            p->lo = a;
        float *b = a ? realloc(p->hi, n * sizeof *b) : NULL;
        if (!a || !b)
            return ti_fail(ctx, GAN_ERR_NOMEM, "debug level 2: out of host memory for %zu gradient values", n);
        p->hi = b;
        p->cap_values = n;
    }
    gan_status st = gan_tensor_to_host(ctx, lo, p->lo, n);
    if (st == GAN_OK)
        st = gan_tensor_to_host(ctx, hi, p->hi, n);
    if (st != GAN_OK)
        return st;
    uint64_t under = 0, over = 0;
    for (size_t k = 0; k < n; k++) {
        float a = p->lo[k], b = p->hi[k];
        if (!isfinite(b))
            continue;
        if (a == 0.0f && b != 0.0f)
            under++;
        else if (!isfinite(a))
            over++;
    }
    r->true_underflow = under;
    r->overflow = over;
    return GAN_OK;
}

/* The nodes the precision policy inserts that an FP32 tape lacks: its casts, and its
 * activation clamp with the clamp's backward (a model's own gan_clamp is in both tapes and
 * left out of both). */
static int is_policy_node(const char *op)
{
    return strcmp(op, "gan_cast") == 0 || strcmp(op, "gan_clamp") == 0
           || strcmp(op, "gan_clamp_mask") == 0;
}

/* The nodes [from, to) of the tape that are not the policy's, with their gradients as they
 * are now. */
static gan_status take_tape(gan_probe *p, gan_ctx *ctx, size_t from, size_t to, size_t offset,
                            size_t *count)
{
    size_t n = offset;
    for (size_t k = from; k < to; k++) {
        struct gan_tape_entry e;
        gan_status st = gan_ctx_tape_entry(ctx, k, &e, sizeof e);
        if (st != GAN_OK)
            return st;
        if (is_policy_node(e.op))
            continue;
        if (!reserve((void **)&p->taped, &p->cap_taped, n + 1, sizeof *p->taped))
            return ti_fail(ctx, GAN_ERR_NOMEM, "debug level 2: out of host memory for the tape");
        p->taped[n++] = (struct taped){ e.op, e.scope, e.from_backward,
                                        gan_tensor_numel(e.output), e.grad };
    }
    *count = n - offset;
    return GAN_OK;
}

static void op_name(char *buf, size_t size, size_t index, const struct taped *t)
{
    const char *op = strncmp(t->op, "gan_", 4) == 0 ? t->op + 4 : t->op;
    snprintf(buf, size, "%zu %s%s%s%s", index, t->scope, *t->scope ? ":" : "",
             t->from_backward ? "bw." : "", op);
}

/* Pairs the 16-bit nodes (taped[0, n_lo)) with the shadow's (taped[n_lo, n_lo + n_hi))
 * and adds a row for each pair that both backward passes reached. */
static gan_status compare_ops(gan_probe *p, gan_ctx *ctx, size_t n_lo, size_t n_hi)
{
    const struct taped *lo = p->taped, *hi = p->taped + n_lo;
    if (n_lo != n_hi) {
        snprintf(p->mismatch, sizeof p->mismatch,
                 "the 16-bit tape has %zu nodes besides casts and the FP32 one %zu", n_lo, n_hi);
        return GAN_OK;
    }
    for (size_t k = 0; k < n_lo; k++)
        if (strcmp(lo[k].op, hi[k].op) != 0 || lo[k].numel != hi[k].numel) {
            snprintf(p->mismatch, sizeof p->mismatch,
                     "node %zu is %s of %lld elements in the 16-bit tape and %s of %lld in the FP32 one",
                     k, lo[k].op, (long long)lo[k].numel, hi[k].op, (long long)hi[k].numel);
            return GAN_OK;
        }
    for (size_t k = 0; k < n_lo; k++) {
        if (!lo[k].grad || !hi[k].grad || gan_tensor_numel(lo[k].grad) != gan_tensor_numel(hi[k].grad))
            continue;
        struct gan_probe_row *r = new_row(p, ctx);
        if (!r)
            return gan_ctx_status(ctx);
        r->kind = GAN_PROBE_OP;
        op_name(r->name, sizeof r->name, k, &lo[k]);
        gan_status st = compare(p, ctx, lo[k].grad, hi[k].grad, r);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}

gan_status gan_probe_shadow(gan_probe *p, gan_net *net, double scale, gan_tensor *const *grads,
                            size_t tape_start, gan_probe_objective_fn objective, void *arg)
{
    gan_ctx *ctx = gan_net_ctx(net);
    gan_probe_clear(p);
    size_t count = gan_net_count(net);
    for (size_t i = 0; i < count; i++)
        if (!grads || !grads[i])
            return ti_fail(ctx, GAN_ERR_INVALID, "debug level 2: the 16-bit gradient of %s is missing; "
                           "run the shadow after the backward of every parameter", gan_net_full_name(net, i));
    if (!reserve((void **)&p->grads32, &p->cap_grads, count + 1, sizeof *p->grads32))
        return ti_fail(ctx, GAN_ERR_NOMEM, "debug level 2: out of host memory");

    size_t n_lo = 0, n_hi = 0;
    size_t tape16 = gan_ctx_tape_length(ctx);
    if (tape_start > tape16)
        return ti_fail(ctx, GAN_ERR_INVALID, "debug level 2: the objective's nodes start at %zu on a tape of %zu",
                       tape_start, tape16);
    gan_status st = take_tape(p, ctx, tape_start, tape16, 0, &n_lo);
    if (st != GAN_OK)
        return st;

    /* The shadow. FP32 mode turns the policy off everywhere: no casts, FP32 scopes moot,
     * every op in FP32 (a 16-bit input the objective passes in is its own business:
     * the trainer's objectives widen theirs). Nodes keep their scope, not the mode, so
     * the backward below is FP32 too. An activation clamp (precision.clamp) stays where
     * the 16-bit pass had it: it is part of the function, not of its rounding, and a
     * gradient it masks is not lost to underflow. */
    enum gan_dtype mode;
    enum gan_precision_level level;
    gan_ctx_get_precision(ctx, &mode, &level);
    if ((st = gan_ctx_set_precision(ctx, GAN_F32, level)) != GAN_OK)
        return st;
    gan_ctx_clamp_as(ctx, mode, level);
    gan_tensor *loss = objective(arg, ctx);
    size_t tape32 = gan_ctx_tape_length(ctx);
    if (!loss) {
        st = gan_ctx_status(ctx) != GAN_OK ? gan_ctx_status(ctx)
           : ti_fail(ctx, GAN_ERR_INTERNAL, "debug level 2: the FP32 objective failed without a reason");
    } else {
        int64_t dims[GAN_TENSOR_MAX_DIMS];
        int ndim = gan_tensor_ndim(loss);
        for (int d = 0; d < ndim; d++)
            dims[d] = gan_tensor_dim(loss, d);
        gan_tensor *seed = gan_tensor_full(ctx, GAN_F32, ndim, dims, (float)scale);
        st = seed ? gan_grad(ctx, 1, &loss, &seed, (int)count, gan_net_tensors(net), p->grads32, 0)
                  : gan_ctx_status(ctx);
    }
    gan_ctx_clamp_as(ctx, GAN_F32, level);
    gan_status restored = gan_ctx_set_precision(ctx, mode, level);
    if (st == GAN_OK)
        st = restored;
    if (st == GAN_OK)
        st = take_tape(p, ctx, tape16, tape32, n_lo, &n_hi);

    for (size_t i = 0; st == GAN_OK && i < count; i++) {
        struct gan_probe_row *r = new_row(p, ctx);
        if (!r) {
            st = gan_ctx_status(ctx);
            break;
        }
        r->kind = GAN_PROBE_PARAM;
        snprintf(r->name, sizeof r->name, "%s", gan_net_full_name(net, i));
        st = compare(p, ctx, grads[i], p->grads32[i], r);
        /* The step's gradient is FP32 after the cast's widening; what it was in the pass
         * is what the cast passed back. */
        gan_tensor *g16 = gan_tensor_grad16(gan_net_tensor(net, i));
        if (g16 && gan_tensor_numel(g16) == gan_net_numel(net, i))
            r->dtype = gan_tensor_dtype(g16);
    }
    if (st == GAN_OK)
        st = compare_ops(p, ctx, n_lo, n_hi);
    if (st != GAN_OK) {
        gan_probe_clear(p);
        return st;
    }
    p->scale = scale;
    p->has_result = 1;
    return GAN_OK;
}

int gan_probe_has_result(const gan_probe *p)
{
    return p && p->has_result;
}

double gan_probe_scale(const gan_probe *p)
{
    return gan_probe_has_result(p) ? p->scale : NAN;
}

size_t gan_probe_row_count(const gan_probe *p)
{
    return gan_probe_has_result(p) ? p->n_rows : 0;
}

const struct gan_probe_row *gan_probe_row_at(const gan_probe *p, size_t i)
{
    return i < gan_probe_row_count(p) ? &p->rows[i] : NULL;
}

void gan_probe_param_totals(const gan_probe *p, uint64_t *elements, uint64_t *true_underflow,
                            uint64_t *overflow)
{
    uint64_t e = 0, u = 0, o = 0;
    for (size_t i = 0; i < gan_probe_row_count(p); i++)
        if (p->rows[i].kind == GAN_PROBE_PARAM) {
            e += p->rows[i].elements;
            u += p->rows[i].true_underflow;
            o += p->rows[i].overflow;
        }
    if (elements)
        *elements = e;
    if (true_underflow)
        *true_underflow = u;
    if (overflow)
        *overflow = o;
}

double gan_probe_param_fraction(const gan_probe *p)
{
    if (!gan_probe_has_result(p))
        return NAN;
    uint64_t e, u;
    gan_probe_param_totals(p, &e, &u, NULL);
    return e ? (double)u / (double)e : 0.0;
}

const char *gan_probe_op_mismatch(const gan_probe *p)
{
    return gan_probe_has_result(p) ? p->mismatch : "";
}

/* ------------------------------------------------------------------ the table */

static void row_line(const struct gan_probe_row *r, void (*line)(void *, const char *), void *arg)
{
    char text[256];
    const char *dtype = gan_dtype_name(r->dtype);
    snprintf(text, sizeof text, "  %-5s %-36s %-4s %9llu %9llu %8llu %8.3f",
             r->kind == GAN_PROBE_PARAM ? "param" : "op", r->name, dtype ? dtype : "?",
             (unsigned long long)r->elements, (unsigned long long)r->true_underflow,
             (unsigned long long)r->overflow,
             r->elements ? 100.0 * (double)r->true_underflow / (double)r->elements : 0.0);
    line(arg, text);
}

/* Whether op row a loses more than b: more true underflow, then more overflow, then the
 * earlier node. */
static int worse(const struct gan_probe_row *a, const struct gan_probe_row *b)
{
    if (a->true_underflow != b->true_underflow)
        return a->true_underflow > b->true_underflow;
    if (a->overflow != b->overflow)
        return a->overflow > b->overflow;
    return a < b;
}

void gan_probe_report(const gan_probe *p, const char *network, size_t max_ops,
                      void (*line)(void *arg, const char *text), void *arg)
{
    char text[320];
    if (!gan_probe_has_result(p)) {
        snprintf(text, sizeof text, "  %s: no 16-bit backward compared (none yet, FP32 precision, or its objective was not finite)",
                 network);
        line(arg, text);
        return;
    }
    uint64_t e, u, o;
    gan_probe_param_totals(p, &e, &u, &o);
    snprintf(text, sizeof text,
             "  %s at scale %.9g: %llu of %llu parameter-gradient values lost to underflow (%.4f%%), %llu overflowed (16-bit pass against its FP32 shadow)",
             network, p->scale, (unsigned long long)u, (unsigned long long)e,
             e ? 100.0 * (double)u / (double)e : 0.0, (unsigned long long)o);
    line(arg, text);
    snprintf(text, sizeof text, "  %-5s %-36s %-4s %9s %9s %8s %8s", "kind", "name", "type",
             "elements", "underflow", "overflow", "under%");
    line(arg, text);
    size_t n_ops = 0;
    for (size_t i = 0; i < p->n_rows; i++) {
        if (p->rows[i].kind == GAN_PROBE_PARAM)
            row_line(&p->rows[i], line, arg);
        else
            n_ops++;
    }
    if (p->mismatch[0]) {
        snprintf(text, sizeof text, "  (no op rows: %s)", p->mismatch);
        line(arg, text);
        return;
    }
    if (max_ops == 0)
        return;
    if (max_ops >= n_ops) {
        for (size_t i = 0; i < p->n_rows; i++)
            if (p->rows[i].kind == GAN_PROBE_OP)
                row_line(&p->rows[i], line, arg);
        return;
    }
    /* The worst max_ops, worst first: a selection over a few hundred rows. */
    const struct gan_probe_row *shown[64];
    size_t n_shown = 0;
    if (max_ops > sizeof shown / sizeof shown[0])
        max_ops = sizeof shown / sizeof shown[0];
    for (size_t i = 0; i < p->n_rows; i++) {
        const struct gan_probe_row *r = &p->rows[i];
        if (r->kind != GAN_PROBE_OP || (r->true_underflow == 0 && r->overflow == 0))
            continue;
        size_t at = n_shown < max_ops ? n_shown++ : max_ops;
        if (at == max_ops) {
            if (!worse(r, shown[max_ops - 1]))
                continue;
            at = max_ops - 1;
        }
        while (at > 0 && worse(r, shown[at - 1])) {
            shown[at] = shown[at - 1];
            at--;
        }
        shown[at] = r;
    }
    snprintf(text, sizeof text, "  the %zu of %zu ops that lost most:", n_shown, n_ops);
    line(arg, n_shown ? text : "  no op lost a value");
    for (size_t k = 0; k < n_shown; k++)
        row_line(shown[k], line, arg);
}

/* ------------------------------------------------------------------ grad_underflow.csv */

const char *const gan_probe_csv_columns[GAN_PROBE_CSV_COLUMNS] = {
    "iteration", "network", "kind", "name", "dtype", "scale", "elements", "true_underflow",
    "overflow", "fraction",
};

gan_status gan_probe_write_csv(const gan_probe *p, gan_metrics_csv *csv, int64_t iteration,
                               const char *network, struct gan_error *err)
{
    for (size_t i = 0; i < gan_probe_row_count(p); i++) {
        const struct gan_probe_row *r = &p->rows[i];
        const char *dtype = gan_dtype_name(r->dtype);
        struct gan_cell c[GAN_PROBE_CSV_COLUMNS] = {
            { GAN_CELL_INT, iteration, 0.0, NULL },
            { GAN_CELL_TEXT, 0, 0.0, network },
            { GAN_CELL_TEXT, 0, 0.0, r->kind == GAN_PROBE_PARAM ? "param" : "op" },
            { GAN_CELL_TEXT, 0, 0.0, r->name },
            { GAN_CELL_TEXT, 0, 0.0, dtype ? dtype : "" },
            { GAN_CELL_FLOAT, 0, p->scale, NULL },
            { GAN_CELL_INT, (long long)r->elements, 0.0, NULL },
            { GAN_CELL_INT, (long long)r->true_underflow, 0.0, NULL },
            { GAN_CELL_INT, (long long)r->overflow, 0.0, NULL },
            { GAN_CELL_FLOAT, 0, r->elements ? (double)r->true_underflow / (double)r->elements : 0.0, NULL },
        };
        gan_status st = gan_metrics_csv_row(csv, c, GAN_PROBE_CSV_COLUMNS, err);
        if (st != GAN_OK)
            return st;
    }
    return GAN_OK;
}
