/* SPDX-License-Identifier: MIT */
/* model.h — the model plugin interface: a network that declares its parameters to the
 * core and builds its forward pass from tensor.h's ops. */
#ifndef GANCTL_MODEL_H
#define GANCTL_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <ganctl/api.h>
#include <ganctl/status.h>
#include <ganctl/host.h>
#include <ganctl/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gan_model gan_model; /* one instance; defined by the plugin */
typedef struct gan_net gan_net;     /* the core's parameter arena for one network */

enum gan_model_role {
    GAN_MODEL_GENERATOR = 1, /* maps z [B, z...] to samples [B, sample...] */
    GAN_MODEL_CRITIC = 2     /* maps samples [B, sample...] to scores [B, 1] */
};

/* How the core fills a parameter when a run starts (drawn from the run's Philox
 * stream, so every backend starts from the same numbers). fan_in is the product of
 * all dimensions but the first (PyTorch's rule for Linear and Conv weights). */
enum gan_init_kind {
    GAN_INIT_ZEROS = 0,
    GAN_INIT_CONSTANT,        /* every element = a */
    GAN_INIT_UNIFORM,         /* U(−a, a) */
    GAN_INIT_NORMAL,          /* N(0, a²) */
    GAN_INIT_HE_NORMAL,       /* N(0, 2 / fan_in): He et al., the WGAN-GP toy code's choice */
    GAN_INIT_HE_UNIFORM,      /* U(−b, b), b = sqrt(6 / fan_in) */
    GAN_INIT_TORCH_LINEAR     /* U(−1/sqrt(fan_in), 1/sqrt(fan_in)): nn.Linear's default */
};

struct gan_init {
    enum gan_init_kind kind;
    float a;
};

/* The shapes the core asks a model to map between, without the batch dimension. */
struct gan_model_io {
    int in_ndim;
    int64_t in_dims[GAN_TENSOR_MAX_DIMS];
    int out_ndim;
    int64_t out_dims[GAN_TENSOR_MAX_DIMS];
};

/* Declares a parameter of the network being created (call from create only). `name`
 * follows PyTorch's state_dict names ("fc0.weight"); the core prefixes the network
 * ("critic.fc0.weight"). Returns the persistent FP32 master tensor, or NULL with the
 * reason recorded through the host. */
GAN_API gan_tensor *gan_net_param(gan_net *net, const char *name, int ndim, const int64_t *dims,
                                  struct gan_init init);

struct gan_model_ops {
    size_t struct_size;           /* sizeof(struct gan_model_ops) as the plugin was built */

    /* Reads its settings through `host` (which outlives the instance), checks that it
     * can map io's shapes, declares its parameters with gan_net_param. Required. */
    gan_status (*create)(const struct gan_host *host, enum gan_model_role role,
                         const struct gan_model_io *io, gan_net *net, gan_model **out);
    void (*destroy)(gan_model *model);

    /* The forward pass on a batch x; returns the output tensor, or NULL with the
     * reason in the context. Must record ops (not switch grad recording off), so the
     * core can differentiate through it, twice. Required. */
    gan_tensor *(*forward)(gan_model *model, gan_ctx *ctx, gan_tensor *x);

    /* Optional: one line describing the architecture for the log
     * ("2 → 512 → 512 → 512 → 1, relu"). */
    const char *(*describe)(gan_model *model);

    /* Optional (ABI 1.3): nonzero when each sample's output depends on that sample
     * alone (no statistics across the batch, such as batch norm's). The core may then
     * score the real and the fake batch as one batch of 2B rows, whose larger products
     * run nearer the GEMM's peak; the scores are the same up to the order of the sums.
     * Absent or zero: every batch gets its own forward. */
    int (*samples_independent)(gan_model *model);

    /* Optional (ABI 1.4): the optional backend slots (backend.h, GAN_BACKEND_SLOTS)
     * that this model's forward and its backward reach, by name ("conv2d_forward"),
     * ended by NULL; the required ones go without saying. The core refuses a run whose
     * backend lacks one of them when the run starts, before it creates anything, with
     * one line naming the slot, the backend and the model. Absent or NULL: the model
     * needs only the required slots, and an op that reaches a missing slot fails when
     * it is called. A list, not a function, so that it is read without an instance. */
    const char *const *backend_slots;
};

#ifdef __cplusplus
}
#endif
#endif
