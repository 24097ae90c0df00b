/* SPDX-License-Identifier: MIT */
/* grads.h — `ganctl grads`: one training step's objectives at a checkpoint's parameters on
 * a given batch (real, z, α), with every parameter's gradient, written as safetensors. */
#ifndef GANCTL_TRAIN_GRADS_H
#define GANCTL_TRAIN_GRADS_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/ganctl.h>

#include "base/error.h"
#include "base/log.h"
#include "plugin/plugin_loader.h"
#include "amp/underflow_probe.h"
#include "train/state/state.h"

/* What the dump is for: checking ganctl's numbers against another implementation, and
 * looking at one bad step. Everything is computed as a training step computes it —
 * the same plugins, settings and backend, the precision policy (precision.*, each
 * model's forward in its network's scope), the critic's objective on real and G(z)
 * with the generator not differentiated, the generator's objective through the
 * critic, each backward seeded with the network's loss scale (what its scaler gives
 * from the checkpoint's state; the penalty's inner seed as penalty.inner_scale says)
 * and unscaled into the FP32 gradient by the same kernel — but with z and the
 * penalty's α taken from the batch file instead of the run's stream. Loss terms that
 * draw other random numbers draw them where the run would have drawn next (the
 * checkpoint's rng.loss_offset), the same for every evaluation. The gradients are
 * those an optimizer step would receive (before clipping); a step the scaler would
 * skip shows its inf or NaN values.
 *
 * The batch file (safetensors) holds, as F32 or F64:
 *   real   [B, D]   real samples (D = 2 for the toy data sets; 784 for images, which
 *                   may also be written [B, 1, 28, 28])
 *   z      [B, Z]   the generator's input (Z = generator.z_dim)
 *   alpha  [B, 1]   optional: the interpolation weights x̂ = α·real + (1 − α)·G(z),
 *                   in [0, 1]; without it the penalty draws α from the loss stream
 * with the same B ≥ 1 in all (any B: it need not be data.batch_size). Other tensors
 * in it are ignored.
 *
 * The output file (safetensors, all F32, written atomically) holds:
 *   critic.NAME      ∂(critic objective)/∂ of every critic parameter, shaped like it
 *   generator.NAME   ∂(generator objective)/∂ of every generator parameter
 *   loss.critic      the critic's objective (the sum of its terms), shape [1]
 *   loss.generator   the generator's objective, shape [1]
 *   loss.VALUE       each value a term reports (loss.w_distance, loss.penalty, the
 *                    unweighted penalty, loss.grad_norm); a value reported by a
 *                    generator term under a name a critic term also reports is
 *                    loss.generator_VALUE, as in metrics.csv
 * and as metadata: format = "ganctl-grads", format_version = "1", ganctl_version,
 * checkpoint, batch (the paths given), iteration (the checkpoint's), batch_size,
 * precision ("fp32", "fp16 O2", …) and scale.critic, scale.generator (the loss scales). */

#define GAN_GRADS_FORMAT "ganctl-grads"
#define GAN_GRADS_VERSION "1"

/* Most named values one evaluation gives (loss.critic, loss.generator and the terms'). */
#define GAN_GRADS_MAX_VALUES 66

/* ------------------------------------------------------------------ the command line */

/* One --set KEY=VALUE or --backend NAME, in command-line order. */
struct gan_grads_args {
    int help;
    const char *checkpoint;       /* a checkpoint file, or a run folder holding one */
    const char *batch;
    const char *out;
    const char **plugin_dirs;     /* --plugin-dir, in order */
    size_t plugin_dir_count;
    struct gan_saved_setting *settings;
    size_t setting_count;
    /* --debug-level N (0 to 2): 2 compares each backward with an FP32 shadow of it
     * (underflow_probe.h) and returns the comparisons in the report; 0 and 1 add nothing
     * (the dump itself holds every gradient). */
    int debug_level;
};

/* ------------------------------------------------------------------ the library */

typedef struct gan_grads gan_grads;

/* Loads the run's configuration from the checkpoint's metadata, applies `settings`
 * (only backend.* and log.level may change: anything else would describe other
 * networks or another objective than the checkpoint's; GAN_ERR_CONFIG), opens the
 * plugins it names through `loader`, creates the backend with the run's precision
 * policy, builds both networks, the loss terms and the loss scalers, and loads the
 * checkpoint as a resumed run would (gan_checkpoint_load: every parameter, the
 * scalers' states). `checkpoint` may name the run's folder. `log` may be NULL; it
 * and `loader` must outlive the result. */
gan_status gan_grads_open(const char *checkpoint, const struct gan_saved_setting *settings,
                          size_t setting_count, const gan_loader *loader,
                          const struct gan_log *log, gan_grads **out, struct gan_error *err);
void gan_grads_free(gan_grads *g);

gan_ctx *gan_grads_ctx(const gan_grads *g);
gan_net *gan_grads_net(const gan_grads *g, enum gan_model_role role);
const char *gan_grads_checkpoint(const gan_grads *g);     /* the file actually read */
int64_t gan_grads_iteration(const gan_grads *g);          /* the checkpoint's */
int64_t gan_grads_sample_size(const gan_grads *g);        /* D */
int64_t gan_grads_z_size(const gan_grads *g);             /* Z */
const char *gan_grads_backend_description(const gan_grads *g);
/* A network's loss scale (1 for a run without loss scaling), and the precision policy
 * as "fp32", "fp16 O1", "fp16 O2", "bf16 O1" or "bf16 O2". */
double gan_grads_scale(const gan_grads *g, enum gan_model_role role);
const char *gan_grads_precision(const gan_grads *g);

/* Debug level 2 in 16-bit precision: from now on each backward of an evaluation that
 * asks for gradients is followed by its FP32 shadow on the same batch, z and α, seeded
 * with the same loss scale, and compared with it (gan_grads_probe). A run in FP32 has
 * no 16-bit backward: then, and below level 2, nothing is compared. GAN_ERR_NOMEM. */
gan_status gan_grads_set_debug_level(gan_grads *g, int level, struct gan_error *err);
/* The last comparison of a network's backward; NULL when none is made. */
const gan_probe *gan_grads_probe(const gan_grads *g, enum gan_model_role role);

/* A batch on the host: `size` samples, real size × D, z size × Z, alpha size values or
 * NULL (the penalty draws α from the loss stream). */
struct gan_grads_batch {
    int64_t size;
    float *real, *z, *alpha;
};

/* Reads and checks a batch file against the networks' shapes. Messages name the
 * tensor, the shape expected and the one found. */
gan_status gan_grads_read_batch(const gan_grads *g, const char *path, struct gan_grads_batch *batch,
                                struct gan_error *err);
void gan_grads_batch_free(struct gan_grads_batch *batch);

struct gan_grads_value {
    char name[96];                /* "loss.critic", "loss.penalty", … */
    double value;
};

struct gan_grads_values {
    size_t count;
    struct gan_grads_value items[GAN_GRADS_MAX_VALUES];
};

/* Both objectives on the batch, as a training step computes them (see above), and their
 * reported values, in the order loss.critic, loss.generator, the critic's terms', the
 * generator's terms'. `grads` (a mask of GAN_LOSS_CRITIC and GAN_LOSS_GENERATOR) names
 * the networks whose gradient arenas receive their objective's gradient (read them
 * with gan_net_grad_to_host); the others' arenas are not touched. Parameters are read
 * as they are now, so a caller may change them between evaluations; the same
 * parameters and batch give the same numbers. */
gan_status gan_grads_evaluate(gan_grads *g, const struct gan_grads_batch *batch, unsigned grads,
                              struct gan_grads_values *values, struct gan_error *err);

/* The value called `name`, or NULL. */
const struct gan_grads_value *gan_grads_find_value(const struct gan_grads_values *values,
                                                   const char *name);

/* What a dump wrote. */
struct gan_grads_report {
    int64_t iteration;
    int64_t batch_size;
    size_t critic_tensors, generator_tensors;
    struct gan_grads_values values;
    /* gan_grads_run at --debug-level 2: each network's comparison ([0] the generator's,
     * [1] the critic's), owned by the report (gan_grads_report_free); NULL otherwise,
     * and when the run computes in FP32. */
    gan_probe *probe[2];
};
/* Frees what the report owns. */
void gan_grads_report_free(struct gan_grads_report *report);

/* Evaluates with both gradients and writes the output file (format above). `batch_path`
 * is recorded in the metadata only. Refuses to write over the checkpoint. */
gan_status gan_grads_dump(gan_grads *g, const struct gan_grads_batch *batch,
                          const char *batch_path, const char *out_path,
                          struct gan_grads_report *report, struct gan_error *err);

/* The whole command: open, read the batch, dump. */
gan_status gan_grads_run(const struct gan_grads_args *args, const gan_loader *loader,
                         const struct gan_log *log, struct gan_grads_report *report,
                         struct gan_error *err);

#endif
