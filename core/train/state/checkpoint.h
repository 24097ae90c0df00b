/* SPDX-License-Identifier: MIT */
/* checkpoint.h — a training run's full state in one safetensors file: both networks'
 * parameters under their PyTorch names, Adam's moments, and the counters and RNG positions. */
#ifndef GANCTL_CORE_CHECKPOINT_H
#define GANCTL_CORE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/scaler.h>
#include <ganctl/status.h>

#include "amp/fp8_recipe.h"
#include "tensor/tensor_core.h"
#include "base/error.h"
#include "nn/net.h"
#include "data/image_data.h"
#include "nn/optimizer.h"
#include "data/toy_data.h"

/* The file holds, all F32 and shaped as the parameters:
 *   NET.NAME                             the parameter ("critic.fc0.weight")
 *   optimizer.NET.exp_avg.NAME           Adam's first moment (torch.optim.Adam's name)
 *   optimizer.NET.exp_avg_sq.NAME        Adam's second moment
 * and, as metadata (strings; integers in decimal):
 *   format = "ganctl-checkpoint", format_version = "1", ganctl_version
 *   iteration                            completed generator iterations
 *   optimizer.NET.step                   Adam steps taken by NET
 *   rng.seed, rng.z_offset, rng.loss_offset   the Philox seed and the next unused
 *                                        block of the z and loss-term streams
 *   data.block, data.shuffle_block, data.cursor   the toy sampler's position, or
 *   data.epoch, data.index               an image sampler's (image_data.h): one pair or
 *                                        the other, as the run's data is toy or images
 *   elapsed_s                            training time so far, over every session
 *   config                               the run's configuration as a libconfig file
 * and, for each network saved with its loss scaling (scaler.h's suggested layout):
 *   scaler.NET.VALUE                     one value of the scaler's state: shape [1],
 *                                        F64 (float64 values) or I64 (int64 values)
 *   scaler.NET (metadata)                "NAME/VERSION": the scaler and its state format
 *   trainer.NET.skipped (metadata)       optimizer steps the trainer skipped so far
 *   trainer.NET.overflows (metadata)     overflow kinds seen since the last metrics row
 * and, for a run with FP8 products (precision.mode "fp8"):
 *   recipe (metadata)                    the scaling recipe's name
 *   recipe.ARRAY                         one array of its state (recipe.h): F64, [n]
 *   recipe.totals (metadata)             the casts' counts since the last metrics row
 * so `torch.load`-free tools (safetensors.torch.load_file) see every tensor, and
 * load_state_dict of a torch.nn.Sequential takes the NET.* tensors with the prefix cut. */

#define GAN_CHECKPOINT_FORMAT "ganctl-checkpoint"

#define GAN_CHECKPOINT_VERSION "1"

/* The largest iteration a checkpoint may hold, 2^53: a double counts every iteration
 * up to it exactly (the learning-rate decay divides by it), and the critic's steps,
 * at most 1000 per iteration, still fit in a signed 64-bit count. */
#define GAN_CHECKPOINT_MAX_ITERATION (UINT64_C(1) << 53)

/* A network's loss scaling, as far as a resumed run needs it. */
struct gan_checkpoint_scaling {
    struct gan_scaler_state state;  /* the scaler's own, every counter (scaler.h) */
    int64_t skipped;                /* steps skipped since the run began */
    int64_t overflows;              /* a mask of overflow kinds (1 gradient, 2 forward) seen
                                       since the last metrics row */
};

/* One network in a checkpoint. */
struct gan_checkpoint_net {
    const char *name;             /* "generator", "critic": the net's prefix */
    gan_net *net;
    gan_optimizer *opt;
    /* NULL: none saved, none loaded. Save: stored; load: filled from the file, which must
     * hold it. load_state's checks of the values are the scaler's (the file's are only
     * that each is one F64 or I64 number with a name that fits). */
    struct gan_checkpoint_scaling *scaling;
};

/* The last value of each value the loss terms report, as the metrics last showed it, so
 * that where a term reports on some steps only (a lazy one), a resumed run's rows before
 * it reports again show what the rows of a run never stopped show. Metadata
 * "reported.COLUMN"; a file without them (an older ganctl's) resumes with none. */
#define GAN_CHECKPOINT_MAX_REPORTED 64     /* both networks' GAN_OBJECTIVE_MAX_REPORTED */
#define GAN_CHECKPOINT_MAX_COLUMN 74       /* "generator_" and a 64-byte name */
struct gan_checkpoint_reported {
    char name[GAN_CHECKPOINT_MAX_COLUMN + 1];   /* the metrics.csv column */
    double value;
};

/* Everything besides tensors. */
struct gan_checkpoint_state {
    int64_t iteration;
    uint64_t seed;
    uint64_t z_offset, loss_offset;
    struct gan_toy_state data;    /* a toy run's sampler (has_image 0) */
    /* An image run's sampler: written instead of `data` when has_image is set; a load
     * sets has_image when the file holds data.epoch, and fills `data` otherwise. */
    int has_image;
    struct gan_image_position image;
    double elapsed_s;
    const char *config_text;      /* save: borrowed; from load: see gan_checkpoint_load */
    struct gan_checkpoint_reported reported[GAN_CHECKPOINT_MAX_REPORTED];
    size_t n_reported;
    /* The FP8 scaling recipe's state. Save: NULL, or recipe "" (no FP8), writes none.
     * Load: the one member read before the load (every other is overwritten): filled
     * when not NULL and cleared first; recipe "" when the file has none. */
    struct gan_fp8_state *fp8;
    /* With it, what the FP8 casts counted since the last metrics row (metadata
     * recipe.totals), for the resumed run's next row. */
    struct gan_fp8_totals fp8_totals;
};

/* Writes the checkpoint atomically (temporary file, fsync, rename, folder fsync): a
 * crash at any moment leaves either the old file or the new one. */
gan_status gan_checkpoint_save(const char *path, const struct gan_checkpoint_net *nets,
                               size_t count, const struct gan_checkpoint_state *state,
                               struct gan_error *err);

/* The configuration saved in a checkpoint (malloc'd), for a resumed run to start from. */
gan_status gan_checkpoint_read_config(const char *path, char **config_text,
                                      struct gan_error *err);

/* Loads a checkpoint into networks and optimizers built from its configuration: every
 * tensor must be there with the parameter's shape and dtype F32, and the file must hold
 * no tensor the networks lack; metadata must be complete and well-formed. Values no run
 * writes are refused, each naming its entry: a parameter or Adam moment that is NaN or
 * inf, a negative second moment, an iteration beyond GAN_CHECKPOINT_MAX_ITERATION, a
 * step or skip count beyond int64, an overflow mask beyond 3, a z, loss or toy-data
 * offset outside its own stream (streams.h). How the counts fit the configuration
 * (n_critic, run.iterations) is the session's check. On failure
 * (GAN_ERR_FORMAT, GAN_ERR_NOT_FOUND, GAN_ERR_IO with a message naming the file, the
 * entry and the fix) the networks may hold part of the file's values. state->config_text
 * is set to NULL (read it with gan_checkpoint_read_config). */
gan_status gan_checkpoint_load(const char *path, const struct gan_checkpoint_net *nets,
                               size_t count, struct gan_checkpoint_state *state,
                               struct gan_error *err);

#endif
