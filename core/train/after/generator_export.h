/* SPDX-License-Identifier: MIT */
/* generator_export.h — `ganctl export`: a run's generator alone as safetensors, keyed as
 * torch.nn.Sequential names the same layers, with the layers themselves in the metadata. */
#ifndef GANCTL_TRAIN_GENERATOR_EXPORT_H
#define GANCTL_TRAIN_GENERATOR_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "train/after/generator_run.h"

/* The file holds every generator parameter as F32 under the key torch.nn.Sequential
 * gives it ("0.weight", "2.bias", ...) and, as metadata:
 *   format = "ganctl-generator", format_version = "1", ganctl_version
 *   torch_layers     a JSON list of [NAME, ARGS] pairs, one per module of the Sequential
 *                    in order: torch.nn.NAME(*ARGS) builds it ("Linear" [in, out],
 *                    "ReLU" [], "LeakyReLU" [slope], "Tanh" [], "Sigmoid" [],
 *                    "Unflatten" [1, [C, H, W]], "ConvTranspose2d" [in, out, 5, 2, 2,
 *                    [output_padding_h, output_padding_w]], "GroupNorm" [1, C, 1e-5])
 *   z_dim            the input's size: the module maps [B, z_dim] to [B, sample shape]
 *   sample_shape     a JSON list, e.g. [2] or [1, 28, 28]
 *   model            the generator's model plugin ("mlp", "dcgan")
 *   iteration        the checkpoint's
 *   precision        the run's ("fp32", "fp16 O2", ...): the module computes in FP32
 *   config           the run's configuration (libconfig text)
 * The layouts of the shipped models are known here (mlp.c, dcgan.c describe them); a
 * generator of another model plugin is refused with GAN_ERR_CONFIG. */

#define GAN_EXPORT_FORMAT "ganctl-generator"
#define GAN_EXPORT_VERSION "1"

/* What an export wrote. */
struct gan_export_report {
    size_t tensors;               /* parameters written */
    size_t modules;               /* modules of the Sequential */
    int64_t parameters;           /* values */
};

/* Writes `g`'s generator to `path` (atomically). Refuses to write over the checkpoint. */
gan_status gan_generator_export(gan_generator_run *g, const char *path,
                                struct gan_export_report *report, struct gan_error *err);

#endif
