/* SPDX-License-Identifier: MIT */
/* net.h — gan_net, the parameter arena of one network (generator or critic): its named
 * FP32 parameters, their initialisation from the run's Philox stream, and one flat gradient buffer. */
#ifndef GANCTL_CORE_NET_H
#define GANCTL_CORE_NET_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

/* Memory layout.
 *
 * Tensors own whole backend buffers (tensor.h has no views at an offset), so every
 * parameter is its own persistent F32 tensor, a leaf that requires a gradient.
 * Everything else a network keeps per parameter element lives in flat arenas laid out
 * in declaration order: parameter i occupies elements [offset(i), offset(i) + numel(i))
 * of each. The net owns one such arena, the gradients (F32, `total` elements), so
 * zeroing every gradient is one fill; an optimizer allocates its moments with the same
 * total and addresses them with the same offsets, so one backend kernel can walk a
 * parameter's value, gradient and state side by side (gan_net_grad_ref gives the
 * gradient's kernel view).
 *
 * Lifecycle: gan_net_new; the model plugin's create declares parameters with
 * gan_net_param (model.h); gan_net_init fills them; training reads and writes
 * gradients. The first call that needs the gradient arena (zero_grads, add_grads,
 * grads, grad_ref, grad_to_host, backward) allocates it and closes the net to new
 * parameters. gan_net_free before gan_ctx_free: the tensors belong to the context. */

/* A new, empty net on `ctx` (borrowed; it must outlive the net). `prefix` names the
 * network in full parameter names ("critic" gives "critic.fc0.weight"); NULL or ""
 * for none. It may hold letters, digits, '_' and '.', and neither start nor end with
 * '.'. Failures are recorded in ctx. */
gan_status gan_net_new(gan_ctx *ctx, const char *prefix, gan_net **out);
void gan_net_free(gan_net *net);

/* The plugin instance's host, while its create runs: gan_net_param then also explains
 * a refusal through host->fail, as model.h promises the plugin. Borrowed; NULL detaches. */
void gan_net_set_host(gan_net *net, const struct gan_host *host);

gan_ctx *gan_net_ctx(const gan_net *net);
const char *gan_net_prefix(const gan_net *net);   /* "" when none */

/* Fills every parameter by its gan_init, in declaration order, drawing from the Philox
 * stream `seed` at block *offset and advancing *offset by the blocks each draw used
 * (ceil(numel / 4); ZEROS and CONSTANT draw nothing). fan_in = the product of the
 * dimensions after the first. The same seed and offset give the same parameters on
 * every backend. Gradients are not touched. */
gan_status gan_net_init(gan_net *net, uint64_t seed, uint64_t *offset);

/* ------------------------------------------------------------------ parameters,
 * by index i in declaration order, 0 ≤ i < count. Out-of-range i gives NULL / -1. */
size_t gan_net_count(const gan_net *net);
const char *gan_net_name(const gan_net *net, size_t i);       /* "fc0.weight" */
const char *gan_net_full_name(const gan_net *net, size_t i);  /* "critic.fc0.weight" */
gan_tensor *gan_net_tensor(const gan_net *net, size_t i);
int64_t gan_net_numel(const gan_net *net, size_t i);
int64_t gan_net_offset(const gan_net *net, size_t i);         /* in the arenas, elements */
struct gan_init gan_net_init_spec(const gan_net *net, size_t i);
/* The parameters as an array of count tensors (for gan_grad's inputs). */
gan_tensor *const *gan_net_tensors(const gan_net *net);
/* Index of the parameter named `name` (short or full name), or -1. */
long gan_net_find(const gan_net *net, const char *name);
/* Σ numel over all parameters. */
int64_t gan_net_total(const gan_net *net);

/* ------------------------------------------------------------------ gradients */

/* The gradient arena: a persistent F32 tensor of shape [total]. NULL on failure
 * (recorded in ctx). */
gan_tensor *gan_net_grads(gan_net *net);
/* Parameter i's gradient as a kernel view into the arena (numel(i) elements, F32).
 * buf is NULL when i is out of range or the arena could not be made (recorded). */
struct gan_ref gan_net_grad_ref(gan_net *net, size_t i);
/* Sets every gradient to zero: one fill kernel over the arena. */
gan_status gan_net_zero_grads(gan_net *net);
/* Sets every gradient to `value` (NaN marks gradients that no backward produced). */
gan_status gan_net_fill_grads(gan_net *net, float value);
/* grad(i) += grads[i] for every parameter i (grads[i] shaped like parameter i, any
 * float dtype; NULL skips it). The sum is formed in FP32 by the backend. Not recorded. */
gan_status gan_net_add_grads(gan_net *net, gan_tensor *const *grads);
/* gan_grad of `output` (seeded with `seed`, or 1 when seed is NULL and output is a single
 * element) with respect to every parameter, added into the arena: one backward of a
 * network's objective. Makes step tensors; records nothing. */
gan_status gan_net_backward(gan_net *net, gan_tensor *output, gan_tensor *seed);
/* Copies parameter i's gradient out (count must be numel(i)). */
gan_status gan_net_grad_to_host(gan_net *net, size_t i, float *values, size_t count);

#endif
