/* SPDX-License-Identifier: MIT */
/* underflow_probe.h — debug level 2: a network's 16-bit backward compared with an FP32 shadow
 * of it on the same inputs, per parameter and per op: true underflow and overflow counts. */
#ifndef GANCTL_CORE_UNDERFLOW_PROBE_H
#define GANCTL_CORE_UNDERFLOW_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "nn/net.h"
#include "io/metrics_csv.h"

/* The run folder's file of the comparisons (run.debug_level = 2, 16-bit precision). */
#define GAN_RUN_GRAD_UNDERFLOW "grad_underflow.csv"

/* What a comparison counts, for each gradient tensor of the 16-bit backward that just
 * ran and its counterpart in the FP32 shadow (same inputs, same loss scale):
 *   true underflow  the FP32 value is finite and not zero, the 16-bit pass's is zero:
 *                   a value the 16-bit arithmetic lost, wherever on the way it was lost;
 *   overflow        the 16-bit pass's value is inf or NaN, the FP32 value is finite.
 * Zero in both passes (a dead ReLU) is neither: FP32 shows what *would* be non-zero.
 *
 * Rows. A parameter row compares the gradient the step used (the parameter's gradient
 * as gan_grad gave it, scaled, before the unscale: the 16-bit gradient widened exactly
 * to FP32 when the parameter was used through its cast, the sum of that and any FP32
 * use otherwise) with the FP32 shadow's. An op row compares the gradient that reached
 * one node's output in each backward (gan_tape_entry.grad). The two tapes differ only
 * by the casts the precision policy inserts at 16-bit boundaries and, with
 * precision.clamp, by its clamps of 16-bit results (gan_clamp and, in a recorded
 * backward, gan_clamp_mask), so nodes are matched by their order among the nodes that
 * are none of those ("non-cast" below); the match also checks each
 * pair's op and element count, and when it fails (a model whose graph depends on the
 * precision) there are no op rows and gan_probe_op_mismatch says why. */
enum gan_probe_kind { GAN_PROBE_PARAM, GAN_PROBE_OP };

struct gan_probe_row {
    enum gan_probe_kind kind;
    /* A parameter's full name ("critic.fc0.weight"); for an op, its index among the
     * tape's non-cast nodes, its scope and its op without "gan_", with "bw." before the op
     * when a backward pass recorded the node (the penalty's inner gradient, which the
     * outer backward differentiates again): "2 critic.fc1:linear",
     * "42 penalty.critic.fc0:bw.matmul", "60 add" at the top level. */
    char name[128];
    enum gan_dtype dtype;       /* the 16-bit pass's gradient's dtype */
    uint64_t elements, true_underflow, overflow;
};

typedef struct gan_probe gan_probe;

gan_status gan_probe_new(gan_probe **out);   /* GAN_ERR_NOMEM */
void gan_probe_free(gan_probe *p);
/* Forgets the last comparison (gan_probe_has_result then gives 0). */
void gan_probe_clear(gan_probe *p);

/* Rebuilds a network's objective, as the step that was just differentiated built it,
 * on the same inputs: the same batch, z and penalty α (so the same stream offsets, read
 * from copies so that nothing advances), with the network's forward recorded. Called
 * with the context's precision set to FP32; returns the single-element objective, or
 * NULL with the failure recorded in ctx. */
typedef gan_tensor *(*gan_probe_objective_fn)(void *arg, gan_ctx *ctx);

/* Runs the shadow and compares. Call it right after the 16-bit backward of `net`'s
 * objective (gan_grad with respect to every parameter of net, seeded with `scale`), in
 * the same step: `grads` are that call's results (count = gan_net_count(net)), and the
 * tape's gradients are still that call's. `tape_start` is the tape's length
 * (gan_ctx_tape_length) before that objective's forward began: its nodes are the ones
 * from there on, which the shadow's must pair with. It records their gradients, sets the
 * precision to FP32, builds the objective through `objective`, differentiates it seeded
 * with `scale` with respect to net's parameters, restores the precision (on every
 * path) and compares. It changes no parameter, gradient arena, cast, stream or
 * optimizer state, so training continues exactly as without it; it adds nodes and
 * step tensors to the step, which gan_ctx_step_end frees. Failures are recorded in the
 * net's context and returned (p then has no result). */
gan_status gan_probe_shadow(gan_probe *p, gan_net *net, double scale, gan_tensor *const *grads,
                            size_t tape_start, gan_probe_objective_fn objective, void *arg);

/* The last comparison. */
int gan_probe_has_result(const gan_probe *p);
double gan_probe_scale(const gan_probe *p);
size_t gan_probe_row_count(const gan_probe *p);
const struct gan_probe_row *gan_probe_row_at(const gan_probe *p, size_t i);   /* NULL past the end */
/* Sums over the parameter rows: every element of the network's parameter gradients. */
void gan_probe_param_totals(const gan_probe *p, uint64_t *elements, uint64_t *true_underflow,
                            uint64_t *overflow);
/* true_underflow / elements over the parameter rows; NaN without a result. */
double gan_probe_param_fraction(const gan_probe *p);
/* Why the tapes did not match ("" when they did, or without a result). */
const char *gan_probe_op_mismatch(const gan_probe *p);

/* The comparison as a table of text lines, for the log (the trainer) or stdout (ganctl
 * grads): a heading naming `network` and the scale, every parameter row, then the op
 * rows with the most true underflow (or overflow) first, at most max_ops of them
 * (SIZE_MAX: all, in tape order). Each line is passed to `line` without a newline. */
void gan_probe_report(const gan_probe *p, const char *network, size_t max_ops,
                      void (*line)(void *arg, const char *text), void *arg);

/* grad_underflow.csv: one row per row of a comparison, with the columns
 *   iteration, network, kind (param | op), name, dtype (the 16-bit pass's gradient's),
 *   scale (the loss scale both passes were seeded with), elements, true_underflow,
 *   overflow, fraction (true_underflow / elements)
 * (open it with gan_metrics_csv_open and these columns). Writes nothing without a
 * result. */
#define GAN_PROBE_CSV_COLUMNS 10
extern const char *const gan_probe_csv_columns[GAN_PROBE_CSV_COLUMNS];
gan_status gan_probe_write_csv(const gan_probe *p, gan_metrics_csv *csv, int64_t iteration,
                               const char *network, struct gan_error *err);

#endif
