/* SPDX-License-Identifier: MIT */
/* autograd.c — the tape of recorded ops and gan_grad, reverse-mode differentiation
 * over it with torch.autograd.grad's semantics (accumulation, create_graph). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_private.h"

/* ------------------------------------------------------------------ the tape
 * Ops run eagerly and append their node as they run, so the tape's order is already a
 * topological order of the graph: every node comes after the nodes of its inputs.
 * gan_grad needs no sort; it walks the tape backwards. */

int ti_wants_grad(const gan_ctx *ctx, const gan_tensor *t)
{
    return t && ctx->no_grad == 0 && (t->requires_grad || t->grad_fn != NULL);
}

gan_status ti_record(gan_ctx *ctx, gan_tensor *out, const char *op, ti_backward_fn fn,
                     gan_tensor *in0, gan_tensor *in1, struct ti_node **node)
{
    return ti_record3(ctx, out, op, fn, in0, in1, NULL, node);
}

gan_status ti_record3(gan_ctx *ctx, gan_tensor *out, const char *op, ti_backward_fn fn,
                      gan_tensor *in0, gan_tensor *in1, gan_tensor *in2,
                      struct ti_node **node)
{
    *node = NULL;
    int w0 = ti_wants_grad(ctx, in0), w1 = ti_wants_grad(ctx, in1);
    int w2 = ti_wants_grad(ctx, in2);
    if (!w0 && !w1 && !w2)
        return GAN_OK;
    if (ctx->n_nodes == ctx->cap_nodes) {
        size_t cap = ctx->cap_nodes ? 2 * ctx->cap_nodes : 256;
        struct ti_node **nodes = realloc(ctx->nodes, cap * sizeof *nodes);
        if (!nodes)
            return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory for the tape", op);
        ctx->nodes = nodes;
        ctx->cap_nodes = cap;
    }
    struct ti_node *n = ctx->spare_nodes;
    if (n) {
        ctx->spare_nodes = n->next_spare;
        ctx->n_spare_nodes--;
    } else if (!(n = malloc(sizeof *n))) {
        return ti_fail(ctx, GAN_ERR_NOMEM, "%s: out of host memory for the tape", op);
    }
    memset(n, 0, sizeof *n);
    n->op = op;
    n->backward = fn;
    n->seq = ctx->n_nodes;
    n->n_in = in2 ? 3 : in1 ? 2 : 1;
    n->in[0] = in0;
    n->in[1] = in1;
    n->in[2] = in2;
    n->needs[0] = w0;
    n->needs[1] = w1;
    n->needs[2] = w2;
    n->out = out;
    n->scope = ctx->scope;
    n->policy_off = ctx->policy_off > 0;
    n->from_backward = ctx->in_backward != 0;
    ctx->nodes[ctx->n_nodes++] = n;
    out->grad_fn = n;
    *node = n;
    return GAN_OK;
}

void ti_tape_clear(gan_ctx *ctx)
{
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        struct ti_node *n = ctx->nodes[i];
        n->next_spare = ctx->spare_nodes;
        ctx->spare_nodes = n;
        ctx->n_spare_nodes++;
    }
    ctx->n_nodes = 0;
}

void ti_tape_destroy(gan_ctx *ctx)
{
    ti_tape_clear(ctx);
    while (ctx->spare_nodes) {
        struct ti_node *n = ctx->spare_nodes;
        ctx->spare_nodes = n->next_spare;
        free(n);
    }
    ctx->n_spare_nodes = 0;
    free(ctx->nodes);
    ctx->nodes = NULL;
    ctx->cap_nodes = 0;
}

/* ------------------------------------------------------------------ gan_grad */

static int same_dims(const gan_tensor *a, const gan_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->dim, b->dim, (size_t)a->ndim * sizeof a->dim[0]) == 0;
}

/* Whether a gradient arriving at t is wanted: t is an input of this call, or leads to
 * one through the graph. */
static int gradient_wanted(const gan_tensor *t, uint64_t epoch)
{
    return t->input_epoch == epoch || (t->grad_fn && t->grad_fn->needed_epoch == epoch);
}

/* t.grad += g, with gan_add so that the sum is recorded under create_graph. */
static gan_status accumulate(gan_ctx *ctx, gan_tensor *t, gan_tensor *g, const char *from)
{
    char a[160], b[160];
    if (!same_dims(t, g))
        return ti_fail(ctx, GAN_ERR_INTERNAL, "gan_grad: the backward of %s gave a gradient "
                       "of shape %s for a tensor of shape %s (a bug in that op's backward)",
                       from, ti_dims_str(a, sizeof a, g->ndim, g->dim),
                       ti_dims_str(b, sizeof b, t->ndim, t->dim));
    /* A gradient has its tensor's dtype, as in PyTorch: an F16 tensor used by an F32
     * op gets an F16 gradient. gan_cast records, so this stays differentiable. The sum
     * of two gradients keeps that dtype too: the precision policy, which would widen two
     * 16-bit terms under O1, is suspended for this bookkeeping (and for its backward,
     * which the nodes remember). */
    ctx->policy_off++;
    gan_status st = GAN_OK;
    if (g->dtype != t->dtype && !(g = gan_cast(ctx, g, t->dtype))) {
        st = ti_result(ctx, 0);
    } else if (t->grad_epoch == ctx->epoch && t->grad) {
        gan_tensor *sum = gan_add(ctx, t->grad, g);
        if (sum)
            t->grad = sum;
        else
            st = ti_result(ctx, 0);
    } else {
        t->grad = g;
        t->grad_epoch = ctx->epoch;
    }
    ctx->policy_off--;
    return st;
}

static gan_status check_args(gan_ctx *ctx, int n_outputs, gan_tensor *const *outputs,
                             gan_tensor *const *seeds, int n_inputs,
                             gan_tensor *const *inputs, gan_tensor **grads)
{
    const char *op = "gan_grad";
    char a[160], b[160];
    if (n_outputs < 1 || !outputs)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: no outputs given (n_outputs is %d); pass "
                       "the tensors to differentiate", op, n_outputs);
    if (n_inputs < 1 || !inputs || !grads)
        return ti_fail(ctx, GAN_ERR_INVALID, "%s: no inputs given (n_inputs is %d, or inputs "
                       "or grads is NULL); pass the tensors to differentiate with respect to",
                       op, n_inputs);
    for (int i = 0; i < n_outputs; i++) {
        const gan_tensor *o = outputs[i];
        if (!o)
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: output %d is NULL (did the forward "
                           "pass fail?)", op, i);
        if (o->ctx != ctx)
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: output %d belongs to another context",
                           op, i);
        if (!o->grad_fn && !o->requires_grad)
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: output %d does not depend on any tensor "
                           "that requires a gradient (it was computed from constants, or with "
                           "no-grad on): mark the inputs with gan_tensor_set_requires_grad "
                           "before the forward pass", op, i);
        const gan_tensor *s = seeds ? seeds[i] : NULL;
        if (s) {
            if (s->ctx != ctx)
                return ti_fail(ctx, GAN_ERR_INVALID, "%s: seed %d belongs to another context",
                               op, i);
            if (!same_dims(s, o))
                return ti_fail(ctx, GAN_ERR_INVALID, "%s: seed %d has shape %s but output %d "
                               "has shape %s; a seed must be shaped like its output", op, i,
                               ti_dims_str(a, sizeof a, s->ndim, s->dim), i,
                               ti_dims_str(b, sizeof b, o->ndim, o->dim));
            if (!ti_check_input(ctx, op, "a seed", s))
                return ctx->status;
        } else if (o->numel != 1) {
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: output %d has shape %s (%lld elements) "
                           "and no seed; without a seed an output must be a single element: "
                           "pass seeds, or reduce it with gan_sum", op, i,
                           ti_dims_str(a, sizeof a, o->ndim, o->dim), (long long)o->numel);
        }
    }
    for (int j = 0; j < n_inputs; j++) {
        if (!inputs[j])
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: input %d is NULL", op, j);
        if (inputs[j]->ctx != ctx)
            return ti_fail(ctx, GAN_ERR_INVALID, "%s: input %d belongs to another context",
                           op, j);
    }
    return GAN_OK;
}

/* Where the backward of `node` may add input i's gradient in place: the gradient that
 * input has so far, when it is a buffer of this pass's own (a sum made here, or a
 * tensor a backward made for it alone) and nothing is recorded, so that no node of the
 * tape holds it. A product's backward then computes C += A·B (GEMM's beta = 1) into it
 * (ops_matmul.c): no pass of its own to add it, and no zeroing of a new C. */
static gan_tensor *offer_into(const gan_ctx *ctx, const struct ti_node *node, int i,
                              uint64_t epoch)
{
    const gan_tensor *t = node->in[i];
    if (ctx->no_grad == 0 || !node->needs[i] || t->grad_epoch != epoch || !t->grad ||
        t->grad_own_epoch != epoch)
        return NULL;
    return t->grad;
}

/* Runs the backward of every needed node of the tape, newest first. */
static gan_status backward_pass(gan_ctx *ctx, size_t n_nodes, uint64_t epoch)
{
    for (size_t k = n_nodes; k-- > 0;) {
        /* Nodes recorded by this pass (create_graph) land past n_nodes and may move
         * the array: index it afresh each time. */
        struct ti_node *node = ctx->nodes[k];
        gan_tensor *out = node->out;
        if (node->needed_epoch != epoch || out->grad_epoch != epoch || !out->grad)
            continue;
        /* Ask the backward only for the gradients this call wants: the inner pass of
         * the penalty wants ∇ₓ, not the weights' gradients (which, recorded under
         * create_graph, would also grow the tape for nothing). */
        int needs[TI_NODE_MAX_IN];
        for (int i = 0; i < node->n_in; i++) {
            needs[i] = node->needs[i];
            node->needs[i] = needs[i] && gradient_wanted(node->in[i], epoch);
            node->into[i] = offer_into(ctx, node, i, epoch);
        }
        node->fresh = 0;
        gan_tensor *gin[TI_NODE_MAX_IN] = { NULL };
        /* The backward runs under the policy its forward ran under: in the node's scope
         * (an FP32 scope's gradient is FP32 too, wherever gan_grad was called from), and
         * suspended where the forward was. */
        struct ti_scope *scope = ctx->scope;
        int policy_off = ctx->policy_off;
        ctx->scope = node->scope;
        ctx->policy_off = node->policy_off;
        gan_status st = node->backward(ctx, node, out->grad, gin);
        ctx->scope = scope;
        ctx->policy_off = policy_off;
        int wanted[TI_NODE_MAX_IN];
        gan_tensor *into[TI_NODE_MAX_IN];
        for (int i = 0; i < node->n_in; i++) {
            wanted[i] = node->needs[i];
            node->needs[i] = needs[i];
            into[i] = node->into[i];
            node->into[i] = NULL;
        }
        if (st != GAN_OK)
            return st;
        for (int i = 0; i < node->n_in; i++) {
            if (!wanted[i] || !gin[i])
                continue;
            gan_tensor *t = node->in[i];
            if (gin[i] == into[i]) {
                /* added in place: its values changed */
                gin[i]->version++;
                continue;
            }
            const int first = t->grad_epoch != epoch || !t->grad;
            if ((st = accumulate(ctx, t, gin[i], node->op)) != GAN_OK)
                return st;
            /* Without a tape, a sum accumulate made, or a tensor the backward made for
             * this input alone, belongs to this pass: later gradients may go into it. */
            if (ctx->no_grad > 0 &&
                (!first || ((node->fresh >> i) & 1u && t->grad == gin[i])))
                t->grad_own_epoch = epoch;
        }
    }
    return GAN_OK;
}

gan_status gan_grad(gan_ctx *ctx, int n_outputs, gan_tensor *const *outputs,
                    gan_tensor *const *seeds, int n_inputs, gan_tensor *const *inputs,
                    gan_tensor **grads, int create_graph)
{
    if (!ctx)
        return GAN_ERR_INVALID;
    for (int j = 0; grads && j < n_inputs; j++)
        grads[j] = NULL;
    gan_status st = check_args(ctx, n_outputs, outputs, seeds, n_inputs, inputs, grads);
    if (st != GAN_OK)
        return st;

    uint64_t epoch = ++ctx->epoch;
    uint64_t first_new = ctx->next_id;
    size_t n_nodes = ctx->n_nodes;
    for (int j = 0; j < n_inputs; j++)
        inputs[j]->input_epoch = epoch;
    /* Forward over the tape: a node is needed when one of its inputs is a requested
     * input or comes from a needed node. Others (the critic's weights when only ∇ₓ is
     * asked for) are skipped, as PyTorch skips them. */
    for (size_t k = 0; k < n_nodes; k++) {
        struct ti_node *node = ctx->nodes[k];
        for (int i = 0; i < node->n_in; i++)
            if (node->needs[i] && gradient_wanted(node->in[i], epoch))
                node->needed_epoch = epoch;
    }

    /* Without create_graph the backward is plain arithmetic: nothing is recorded, so
     * the gradients are constants. With it, what is recorded is marked as made by a
     * backward pass (the tape's readers tell the two apart). */
    if (!create_graph)
        gan_ctx_no_grad_push(ctx);
    int in_backward = ctx->in_backward;
    ctx->in_backward = 1;
    for (int i = 0; i < n_outputs && st == GAN_OK; i++) {
        gan_tensor *s = seeds ? seeds[i] : NULL;
        if (!s)
            s = ti_ones_like(ctx, "gan_grad", outputs[i]);
        else if (!s->from_backward && gan_ctx_fp8_on(ctx))
            /* A seed is a gradient wherever it was made, and an FP8 product casts an
             * operand made outside a backward pass in the forward format: a given seed
             * that would reach a product as it is (a 16-bit seed of a 16-bit output)
             * goes in as a copy made here, a recorded identity like the grads' below. */
            s = gan_reshape(ctx, s, s->ndim, s->dim);
        st = s ? accumulate(ctx, outputs[i], s, "the seed") : ti_result(ctx, 0);
    }
    if (st == GAN_OK)
        st = backward_pass(ctx, n_nodes, epoch);
    for (int j = 0; j < n_inputs && st == GAN_OK; j++) {
        gan_tensor *t = inputs[j];
        gan_tensor *g = t->grad_epoch == epoch ? t->grad : NULL;
        if (!g) {
            g = gan_tensor_full(ctx, t->dtype, t->ndim, t->dim, 0.0f);
        } else {
            /* grads[j] must be a tensor of its own: not a seed passed through unchanged,
             * not the same tensor as another grads[k]. The copy is a recorded identity,
             * so a grad stays differentiable. */
            int shared = g->id < first_new;
            for (int k = 0; k < j && !shared; k++)
                shared = grads[k] == g;
            if (shared)
                g = gan_reshape(ctx, g, g->ndim, g->dim);
        }
        if (!g)
            st = ti_result(ctx, 0);
        grads[j] = g;
    }
    ctx->in_backward = in_backward;
    if (!create_graph)
        gan_ctx_no_grad_pop(ctx);
    if (st != GAN_OK)
        for (int j = 0; j < n_inputs; j++)
            grads[j] = NULL;
    return st;
}

/* ------------------------------------------------------------------ the tape, read */

size_t gan_ctx_tape_length(const gan_ctx *ctx)
{
    return ctx ? ctx->n_nodes : 0;
}

gan_status gan_ctx_tape_entry(gan_ctx *ctx, size_t index, struct gan_tape_entry *entry,
                              size_t entry_size)
{
    if (!ctx)
        return GAN_ERR_INVALID;
    if (!entry)
        return ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_tape_entry: entry is NULL; pass the "
                       "struct to fill");
    if (index >= ctx->n_nodes)
        return ti_fail(ctx, GAN_ERR_INVALID, "gan_ctx_tape_entry: node %zu of a tape of %zu; "
                       "ask gan_ctx_tape_length first", index, ctx->n_nodes);
    const struct ti_node *n = ctx->nodes[index];
    struct gan_tape_entry e;
    memset(&e, 0, sizeof e);
    e.op = n->op;
    e.scope = n->scope ? n->scope->path : "";
    e.fp32_scope = n->scope && n->scope->fp32;
    e.policy_off = n->policy_off;
    e.from_backward = n->from_backward;
    /* inputs[] holds two: a third (gan_linear's bias) goes to input3, past the end of
     * the older struct, so that a reader of n_inputs never indexes beyond inputs[]. */
    e.n_inputs = n->n_in < 2 ? n->n_in : 2;
    e.inputs[0] = n->in[0];
    e.inputs[1] = n->n_in > 1 ? n->in[1] : NULL;
    e.input3 = n->n_in > 2 ? n->in[2] : NULL;
    e.output = n->out;
    e.grad = n->out->grad_epoch == ctx->epoch && ctx->epoch ? n->out->grad : NULL;
    memcpy(entry, &e, entry_size < sizeof e ? entry_size : sizeof e);
    return GAN_OK;
}
