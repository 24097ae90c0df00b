/* SPDX-License-Identifier: MIT */
/* loss.h — the loss-term plugin interface. The critic's and the generator's
 * objectives are sums of the configured terms (wasserstein + gradient-penalty is
 * WGAN-GP); a term may contribute to either or both and report named scalars. */
#ifndef GANCTL_LOSS_H
#define GANCTL_LOSS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/host.h>
#include <ganctl/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gan_loss gan_loss; /* one instance; defined by the plugin */

enum gan_loss_target {
    GAN_LOSS_CRITIC = 1u << 0,
    GAN_LOSS_GENERATOR = 1u << 1
};

/* A bit of the targets mask, not an objective (plugin ABI 1.5): the term is an adversarial
 * objective (wasserstein, hinge, non-saturating), the game itself rather than a
 * regulariser of it. A run takes at most one: two would sum two different games, which
 * no paper trains, and the host refuses it naming both. A term of an older minor never
 * sets it and is never refused for it. */
#define GAN_LOSS_ADVERSARIAL (1u << 2)

/* What the core hands a term for one objective evaluation. Tensors are step tensors. */
struct gan_loss_inputs {
    gan_tensor *real;     /* [B, sample...] a real batch (critic objective only; else NULL) */
    gan_tensor *fake;     /* [B, sample...] the generator's output */
    gan_tensor *d_real;   /* [B, 1] critic scores of real (critic objective only; else NULL) */
    gan_tensor *d_fake;   /* [B, 1] critic scores of fake */

    /* Evaluates the critic on any batch, recording ops so the result can be
     * differentiated twice (the gradient penalty's interpolates). */
    gan_tensor *(*critic)(void *critic_ctx, gan_ctx *ctx, gan_tensor *x);
    void *critic_ctx;

    /* The run's random stream (Philox, backend.h): draw with gan_tensor_uniform /
     * gan_tensor_normal at (seed, *offset) and advance *offset by the blocks used,
     * ceil(n / 4), so that runs are reproducible and resumable. */
    uint64_t seed;
    uint64_t *offset;

    int64_t iteration;    /* the generator iteration this evaluation belongs to */

    /* Optional (NULL in training): the interpolation weights α, one per sample (B
     * elements, e.g. [B, 1]), that the gradient penalty uses instead of drawing them
     * from the stream, which it then leaves untouched. `ganctl grads` sets it to replay
     * a step with another implementation's α. Added at the end of the struct, so terms
     * built before it existed still read the fields above; such a term ignores it. */
    gan_tensor *alpha;

    /* Loss scaling (plugin ABI 1.1: a term built for 1.1 is loaded only by hosts that
     * fill these; tests and hosts that know nothing of them leave them zero).
     *
     * The core multiplies the objective by its network's loss scale s (scaler.h) before
     * the backward pass. A term that takes a gradient inside the objective (the penalty's
     * ∇ₓD(x̂)) seeds it with `inner_scale` and multiplies the result by 1 / inner_scale
     * before using it, PyTorch's AMP recipe for a gradient penalty: seeded with s, the
     * inner gradient is as far from FP16's underflow as the outer one. ganctl sets it from
     * penalty.inner_scale (s for "outer", else that number). 0: the host asks nothing;
     * the term uses its own setting. */
    double inner_scale;
    /* Shows the host such an inner gradient as computed, before the seed is divided out:
     * `grad` is the gradient with respect to `wrt` seeded with `seed`, the seed used. The
     * host measures it: a loss scaler must see an overflow the seed caused as a gradient
     * overflow, not a forward one (scaler.h). NULL: nobody asks. */
    void (*inner_grad)(void *inner_ctx, const char *name, gan_tensor *wrt, gan_tensor *grad,
                       double seed);
    void *inner_ctx;

    /* Which critic step of the run this objective belongs to, counted from 0 over the
     * whole run (iteration · critic.iterations + the step within the iteration), so that
     * a lazy term (R1 every k steps) applies at the same steps whether or not the run
     * was stopped and resumed; -1 for the generator's objective (plugin ABI 1.5: a
     * host of an older minor leaves it 0, which is why a 1.5 term is loaded only by a
     * 1.5 host). */
    int64_t critic_step;
};

/* Where a term reports named scalars ("penalty", "w_distance"). The tensor must be a
 * single element; the core reads it after the step, when it reads the losses. */
struct gan_metric_sink {
    void *ctx;
    void (*report)(void *ctx, const char *name, gan_tensor *scalar);
};

struct gan_loss_ops {
    size_t struct_size;           /* sizeof(struct gan_loss_ops) as the plugin was built */

    /* Reads its settings through `host` (which outlives the instance). Required. */
    gan_status (*create)(const struct gan_host *host, gan_loss **out);
    void (*destroy)(gan_loss *loss);

    /* Which objectives it contributes to: a mask of enum gan_loss_target, with
     * GAN_LOSS_ADVERSARIAL where the term is the game's objective. Required. */
    unsigned (*targets)(gan_loss *loss);

    /* The term's value for `target` as a single-element tensor (already weighted,
     * e.g. λ·penalty), or NULL with the reason in the context. Required. A term that
     * does not apply at this step (a lazy regulariser between its steps) gives a zero
     * that requires no gradient and reports nothing. */
    gan_tensor *(*term)(gan_loss *loss, gan_ctx *ctx, enum gan_loss_target target,
                        const struct gan_loss_inputs *in, const struct gan_metric_sink *metrics);
};

#ifdef __cplusplus
}
#endif
#endif
