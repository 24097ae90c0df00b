/* SPDX-License-Identifier: MIT */
/* scaler.h — the loss-scaler plugin interface: after each backward of its network a
 * scaler reads the gradients' statistics and decides whether the step applies and the next scale. */
#ifndef GANCTL_SCALER_H
#define GANCTL_SCALER_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/status.h>
#include <ganctl/dtype.h>
#include <ganctl/host.h>
#include <ganctl/grad_stats.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a scaler is driven, per network (the generator and the critic each have their
 * own instance):
 *
 *   s = ops->scale(sc)                       the scale for the next backward
 *   loss = forward(...)                      unscaled; the core notes whether it is finite
 *   backward of s · loss                     16-bit gradients x, each about s times too big
 *   unscale x into the FP32 gradients with 1/s, measuring each tensor (struct gan_grad_stats)
 *   ops->update(sc, &input, &decision)       input: those statistics and the forward's flag
 *   decision.skip ? discard the gradients : optimizer step
 *   the next backward uses decision.scale (== ops->scale(sc))
 *
 * The skip contract. A step is non-finite when its objective (the unscaled loss, read
 * as a double) is inf or NaN, or when an entry of input.tensors (a parameter gradient or
 * an inner gradient) has stats.nonfinite > 0. A scaler must skip every non-finite step;
 * it may skip any other step as well, and the core obeys. After update() returns GAN_OK
 * the core checks the verdict: decision.skip == 0 for a non-finite step is not applied
 * (the parameters and the optimizer's moments stay as they were) and stops training
 * with GAN_ERR_INTERNAL and one line naming the scaler, its file and the step ("...
 * applied step N although its gradients are not finite: fix the scaler"); ganctl exits
 * with status 1 and the run folder keeps the checkpoint it last wrote, if any. The core
 * ends the run rather than skip in the scaler's place because the scaler's scale and
 * counters would then describe a step that did not happen.
 * With a non-finite objective the core runs no backward: input.tensors holds only the
 * INNER_GRAD entries, and input.forward_overflow is set unless one of them has a
 * non-finite element. The core checks nothing else about the verdict. In particular
 * not the scale: at scale 0 the gradients come out as zeros, which pass the check, and
 * unscaling them by 1/0 gives NaN, so skipping every step taken at scale 0 is the
 * scaler's own duty. decision.overflow only feeds the log and metrics.csv, and the next
 * backward uses what ops->scale() returns.
 *
 * The scale is an FP32 number for every scaler (the core multiplies an FP32 loss by it
 * and unscales with its FP32 reciprocal): finite, ≥ 0, exactly representable as a
 * float. 0 is reachable only under a rule with no floor (PyTorch's); the shipped
 * scalers skip every step taken at scale 0, as the skip contract asks.
 *
 * A scaler is not thread-safe; the core calls one instance from one thread. */

typedef struct gan_scaler gan_scaler; /* one instance; defined by the plugin */

/* What a statistics entry measures. */
enum gan_scaler_role {
    /* The gradient of one parameter tensor, as the optimizer will read it. */
    GAN_SCALER_PARAM_GRAD = 0,
    /* A gradient computed inside the loss under the same scale and unscaled before use:
     * the gradient penalty's ∇ₓD(x̂) when its inner seed is the outer scale. Its overflow
     * is caused by the scale, so it counts as a gradient overflow, not a forward one. */
    GAN_SCALER_INNER_GRAD = 1
};

/* One gradient tensor after the scaled backward. */
struct gan_scaler_tensor {
    const char *name;             /* "critic.fc1.weight", "penalty.inner"; borrowed for the call */
    enum gan_dtype dtype;         /* how the scaled gradient x was stored: GAN_F16, GAN_BF16
                                     or GAN_F32. Only FP16 can underflow or overflow at the
                                     scales in use; BF16 has FP32's exponent range. */
    enum gan_scaler_role role;
    /* grad_stats.h: counts over x as stored (scaled), magnitudes of u = x / scale. */
    struct gan_grad_stats stats;
};

/* What the core hands update(). The core sets struct_size to its own sizeof; a scaler
 * reads only the fields that lie inside it and treats the rest as zero. */
struct gan_scaler_input {
    size_t struct_size;
    /* This network's backward passes before this one (0 for the first), as the core
     * counts them, for messages. The shipped scalers count their own updates (kept in
     * their state), so their rules never depend on the core's numbering. */
    int64_t step;
    /* The scale this backward used: what scale() returned before it. A scaler may
     * refuse an input whose scale is not its own (the shipped ones do: GAN_ERR_INVALID). */
    double scale;
    /* Nonzero: the unscaled loss was inf or NaN, for a reason the scale had no part in
     * (an FP16 activation overflowed in the forward pass). The core sets it only after
     * checking every scaled quantity the loss used (the INNER_GRAD entries); when one
     * of those is non-finite it reports that entry and leaves this 0. With this set,
     * non-finite gradients are the forward's NaN carried backwards, and `tensors` may
     * be empty (the core may skip the backward). */
    int forward_overflow;
    const struct gan_scaler_tensor *tensors;  /* tensor_count entries; NULL when 0 */
    size_t tensor_count;
};

/* What the scaler concluded about this step's overflow. */
enum gan_scaler_overflow {
    GAN_SCALER_NO_OVERFLOW = 0,       /* every gradient finite, forward finite */
    GAN_SCALER_GRADIENT_OVERFLOW = 1, /* a gradient (or an inner gradient) inf or NaN, or scale 0 */
    GAN_SCALER_FORWARD_OVERFLOW = 2   /* input.forward_overflow was set */
};

/* What happened to the scale (decision.scale against input.scale). */
enum gan_scaler_change {
    GAN_SCALER_HELD = 0,         /* unchanged (also: a growth refused at max or at FP32's limit) */
    GAN_SCALER_GREW = 1,         /* growth after growth_interval clean updates */
    GAN_SCALER_BACKED_OFF = 2,   /* lowered after an overflow */
    GAN_SCALER_HYSTERESIS = 3,   /* an overflow absorbed by hysteresis: skipped, not lowered */
    GAN_SCALER_RAISED = 4        /* raised early because the gradients showed underflow */
};

/* What update() returns. The core zeroes it and sets struct_size to its own sizeof; the
 * scaler writes every field that lies inside struct_size. */
struct gan_scaler_decision {
    size_t struct_size;
    int skip;                          /* nonzero: discard this step's gradients */
    double scale;                      /* the scale for the next backward (== scale()) */
    enum gan_scaler_overflow overflow;
    enum gan_scaler_change change;
};

/* ------------------------------------------------------------------ state */

/* A scaler's complete state (every counter, hysteresis included) as a small flat list
 * of named numbers, which the trainer stores in the checkpoint and hands back on resume.
 * Settings are not state: they come from the configuration of the resumed run.
 *
 * Stored, for example, as one safetensors tensor per value, "scaler.<network>.<name>",
 * dtype F64 or I64, shape [1], with metadata "scaler.<network>" = "<scaler>/<version>".
 * F64 keeps every double bit for bit, so a resumed run continues identically.
 *
 * load_state validates what it is given and changes nothing unless all of it is good:
 *   GAN_ERR_INVALID      `scaler` names another scaler;
 *   GAN_ERR_UNSUPPORTED  `version` is newer than this build of the scaler reads;
 *   GAN_ERR_FORMAT       an older version it never wrote, a value missing, repeated,
 *                        unknown to that version or of the wrong type, a name that is not
 *                        NUL-terminated, or a value out of its range (a negative counter,
 *                        a scale that is not a finite FP32 number ≥ 0).
 * A state that is valid but disagrees with the current settings (a scale outside
 * [min, max], more hysteresis left than `hysteresis`) is brought inside them, with a
 * GAN_LOG_WARN line that says so: resuming with changed settings is allowed. A scaler
 * that reads older versions documents how it fills what they lack.
 *
 * A stateless scaler (one whose verdicts depend on its settings and the input alone)
 * may leave save_state and load_state both NULL (ABI 1.2; an older host refuses such a
 * module by its abi_minor). The core then stands in for them: saving gives the state
 * { scaler = the descriptor's name, version = 1, count = 0 } (in the checkpoint, the
 * metadata "scaler.<network>" = "<name>/1" and no values), which is what a save_state
 * of a scaler without state writes; loading holds the saved state to the checks above
 * as load_state would: another scaler's name is GAN_ERR_INVALID, a version above 1
 * GAN_ERR_UNSUPPORTED, and any value GAN_ERR_FORMAT. Values are refused rather than
 * ignored because they can only come from a build of that scaler that kept state, and
 * dropping them would resume a different run from the one that was saved. Setting one
 * of the two slots without the other is refused when the module is loaded. */

#define GAN_SCALER_STATE_MAX 32      /* values in one state */
#define GAN_SCALER_NAME_MAX 32       /* bytes of a name, the NUL included */

enum gan_scaler_value_type {
    GAN_SCALER_INT64 = 1,
    GAN_SCALER_FLOAT64 = 2
};

struct gan_scaler_value {
    char name[GAN_SCALER_NAME_MAX];   /* [a-z0-9_], NUL-terminated: "scale", "good_steps" */
    enum gan_scaler_value_type type;
    int64_t i;                        /* the value when type is GAN_SCALER_INT64 */
    double f;                         /* the value when type is GAN_SCALER_FLOAT64 */
};

struct gan_scaler_state {
    char scaler[GAN_SCALER_NAME_MAX]; /* the plugin's name, as in its descriptor */
    int64_t version;                  /* the plugin's state format, from 1 */
    size_t count;                     /* values used, ≤ GAN_SCALER_STATE_MAX */
    struct gan_scaler_value values[GAN_SCALER_STATE_MAX];  /* in any order */
};

/* ------------------------------------------------------------------ the table */

struct gan_scaler_ops {
    size_t struct_size;           /* sizeof(struct gan_scaler_ops) as the plugin was built */

    /* Reads and checks its settings through `host` (which outlives the instance). A
     * setting out of range is GAN_ERR_CONFIG with a message through host->fail that
     * names the setting, the value and what would be accepted. Required.
     * The instance keeps `host`: it is how every later call (update() above all) logs
     * and reports failures. The core gives an instance one host for its whole life, the
     * one passed here, so the host reaches update() without a slot of its own; that has
     * been so since ABI 1.0, and modules of every 1.x minor may rely on it. */
    gan_status (*create)(const struct gan_host *host, gan_scaler **out);
    /* Optional: NULL when the instance holds nothing to free. */
    void (*destroy)(gan_scaler *sc);

    /* The scale for the next backward. Required. */
    double (*scale)(gan_scaler *sc);

    /* One backward's verdict: fills `out` (see struct gan_scaler_decision) and advances
     * the state. On failure nothing changes, `out` is left as it was, and the message
     * goes through host->fail (GAN_ERR_INVALID for a malformed input; a rule that stops
     * training, such as DeepSpeed's at its minimum scale, GAN_ERR_NUMERIC). It may log
     * why it decided (at GAN_LOG_DEBUG for each step's reasons) through the host kept
     * from create(). Required. */
    gan_status (*update)(gan_scaler *sc, const struct gan_scaler_input *in,
                         struct gan_scaler_decision *out);

    /* The complete state, overwriting *out. Optional together with load_state: both
     * NULL for a stateless scaler, which the core saves as its name, version 1 and no
     * values (see above). */
    gan_status (*save_state)(gan_scaler *sc, struct gan_scaler_state *out);
    /* Replaces the state with *in after validating it (see above). NULL exactly when
     * save_state is. */
    gan_status (*load_state)(gan_scaler *sc, const struct gan_scaler_state *in);

    /* Optional: one line with the effective settings and the scale, for the log
     * ("dynamic (pytorch): scale 65536, ×2 after 2000 clean, ×0.5 on overflow, …").
     * Valid until the next call on the instance. */
    const char *(*describe)(gan_scaler *sc);
};

#ifdef __cplusplus
}
#endif
#endif
