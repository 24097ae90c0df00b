/* SPDX-License-Identifier: MIT */
/* recipe.h — the FP8 scaling-recipe plugin interface (ABI 1.6): before an operand of an
 * FP8 product is cast, its recipe chooses the scale (one per tensor, or one per block)
 * from that tensor's statistics and its own history of it. */
#ifndef GANCTL_RECIPE_H
#define GANCTL_RECIPE_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/fp8.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a recipe is driven. Under precision.mode "fp8" every matrix product and
 * convolution casts both its operands to FP8; for each operand the core calls
 *
 *   ops->plan(rc, &operand, &plan)            which statistics, which blocks
 *   measure the operand as plan.want asks     (one pass, only when it asks)
 *   ops->scales(rc, &operand, &stats, block_amax, scales, reason)
 *   q = fp8(x · scale) in one pass            counting, and measuring amax again
 *   ops->observe(rc, &operand, &cast, scales) what the cast did: amax, overflows
 *
 * An operand is named by where it is used, stable from one step to the next: the
 * module scope, the op, the op's occurrence in that scope within the step, and the
 * operand ("critic.fc1/gan_linear#0/x", "critic.fc1/gan_matmul#1/a"). A recipe keeps
 * its history per name. The same name in a later step is the same use of the same
 * tensor (an activation, a weight, or a gradient of the backward).
 *
 * One instance serves the whole run, both networks. A recipe is not thread-safe; the
 * core calls an instance from one thread. */

typedef struct gan_recipe gan_recipe; /* one instance; defined by the plugin */

/* Statistics the core measures before the cast, when plan.want asks (bits). */
enum gan_recipe_want {
    GAN_RECIPE_WANT_AMAX = 1u << 0,       /* stats.amax, zeros, nonfinite, elements */
    GAN_RECIPE_WANT_HISTOGRAM = 1u << 1,  /* stats.log2_hist as well */
    GAN_RECIPE_WANT_BLOCK_AMAX = 1u << 2  /* the amax of every block (plan.block > 0) */
};

/* What kind of number a scale is: any positive FP32 number, or a power of two (the
 * OCP Microscaling format's E8M0 scales, 2^-127 … 2^127), with which widening back is
 * exact. The core checks that an E8M0 recipe's scales are powers of two. */
enum gan_recipe_scale_type {
    GAN_RECIPE_SCALE_F32 = 0,
    GAN_RECIPE_SCALE_E8M0 = 1
};

/* One operand about to be cast. The core sets struct_size to its own sizeof. */
struct gan_recipe_operand {
    size_t struct_size;
    const char *name;            /* see above; borrowed for the call */
    enum gan_dtype format;       /* GAN_F8E4M3 or GAN_F8E5M2 */
    int gradient;                /* nonzero: made by a backward pass (a gradient operand) */
    /* The operand as stored, with the block length the plan chose (0 in plan()). */
    struct gan_fp8_layout layout;
    int64_t step;                /* the core's step counter, for messages */
};

/* What plan() chooses for one operand. The core zeroes it and sets struct_size. */
struct gan_recipe_plan {
    size_t struct_size;
    uint32_t want;               /* enum gan_recipe_want bits */
    int64_t block;               /* 0: one scale per tensor; else the block length along k */
    enum gan_recipe_scale_type scale_type;
};

/* Bytes of a recipe's name, the NUL included. The core writes the name into every
 * checkpoint (its metadata "recipe"), stateless recipes' too, so the loader refuses a
 * module whose name is longer, as it does a stateless scaler's (scaler.h). */
#define GAN_RECIPE_NAME_MAX 32

/* One named array of a recipe's state. */
struct gan_recipe_array {
    const char *name;            /* [A-Za-z0-9_.#/-]+, at most 255 bytes */
    const double *values;
    size_t count;
};

/* Writes one array of the state; returns GAN_OK or the status to give up with. */
typedef gan_status gan_recipe_put_fn(void *arg, const char *name, const double *values,
                                     size_t count);

struct gan_recipe_ops {
    size_t struct_size;           /* sizeof(struct gan_recipe_ops) as the plugin was built */

    /* Reads and checks its settings through `host` (which outlives the instance and is
     * kept for logging and failures), as a scaler's create does. Required. */
    gan_status (*create)(const struct gan_host *host, gan_recipe **out);
    /* Optional. */
    void (*destroy)(gan_recipe *rc);

    /* Chooses the statistics and the blocks for this operand. Required. */
    gan_status (*plan)(gan_recipe *rc, const struct gan_recipe_operand *op,
                       struct gan_recipe_plan *plan);

    /* Changes no state (plan and scales only read it: the core asks for scales in forward
     * passes that are not training, and observes nothing there).
     * Writes gan_fp8_scale_count(&op->layout) positive finite FP32 scales (powers of two
     * under GAN_RECIPE_SCALE_E8M0). `stats` is NULL unless the plan wanted AMAX or
     * HISTOGRAM; `block_amax` is NULL unless it wanted BLOCK_AMAX (then in the scales'
     * order). It may write a short reason for the debug log into reason[0 … 95] ("amax
     * 3.2e-05, margin 0"; underflow-aware: which constraint bound). Required. */
    gan_status (*scales)(gan_recipe *rc, const struct gan_recipe_operand *op,
                         const struct gan_fp8_stats *stats, const float *block_amax,
                         float *scales, char reason[96]);

    /* After the cast: what it did, with the scales it used. Delayed scaling records the
     * amax here. Optional: NULL for a recipe with no history. */
    gan_status (*observe)(gan_recipe *rc, const struct gan_recipe_operand *op,
                          const struct gan_fp8_cast_stats *cast, const float *scales);

    /* The complete state, as named arrays of doubles written through put (an FP32 amax
     * or scale is held exactly by a double), which the core stores in the checkpoint
     * (safetensors F64 tensors "recipe.<name>", metadata "recipe" = the plugin's name)
     * and hands back on resume. Optional together with load_state: both NULL for a
     * recipe without state. */
    gan_status (*save_state)(gan_recipe *rc, gan_recipe_put_fn *put, void *arg);
    /* Replaces the state with the given arrays after validating all of them, changing
     * nothing on failure: GAN_ERR_FORMAT for an array it never writes, a wrong length
     * or a value out of range (with host->fail naming the array). */
    gan_status (*load_state)(gan_recipe *rc, const struct gan_recipe_array *arrays,
                             size_t count);

    /* Optional: one line with the effective settings, for the log and --version. */
    const char *(*describe)(gan_recipe *rc);
};

#ifdef __cplusplus
}
#endif
#endif
