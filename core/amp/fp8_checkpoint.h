/* SPDX-License-Identifier: MIT */
/* fp8_checkpoint.h — an FP8 run's part of a checkpoint: metadata "recipe" (the scaling
 * recipe's name) and "recipe.totals" (the casts' counts since the last metrics row), and
 * a tensor recipe.ARRAY (F64, one dimension) per array of the recipe's state. */
#ifndef GANCTL_AMP_FP8_CHECKPOINT_H
#define GANCTL_AMP_FP8_CHECKPOINT_H

#include <ganctl/status.h>

#include "amp/fp8_recipe.h"
#include "base/error.h"
#include "io/safetensors/safetensors.h"
#include "tensor/tensor_core.h"

/* The most arrays of recipe state a checkpoint may hold. */
#define GAN_CHECKPOINT_MAX_RECIPE_ARRAYS 16384

/* Adds them to the writer; nothing when fp8 is NULL or names no recipe (a run without
 * FP8). The arrays' values stay in *fp8 while the writer needs them. */
gan_status gan_fp8_checkpoint_save(gan_st_writer *w, const struct gan_fp8_state *fp8,
                                   const struct gan_fp8_totals *totals, const char *path,
                                   struct gan_error *err);
/* Reads them (fp8 cleared first; its recipe "" when the file has none), refusing as a
 * damaged file (GAN_ERR_FORMAT, naming the entry, never quoting the file's text) a name
 * that is not plain, counts that no run writes, an array that is not an F64 vector, or
 * more than GAN_CHECKPOINT_MAX_RECIPE_ARRAYS arrays. */
gan_status gan_fp8_checkpoint_load(const gan_st_file *f, struct gan_fp8_state *fp8,
                                   struct gan_fp8_totals *totals, const char *path,
                                   struct gan_error *err);

#endif
