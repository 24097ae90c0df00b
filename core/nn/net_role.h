/* SPDX-License-Identifier: MIT */
/* net_role.h — the two networks of a GAN as every array of the core indexes them, and
 * the names their scopes, settings groups and outputs use. */
#ifndef GANCTL_NN_NET_ROLE_H
#define GANCTL_NN_NET_ROLE_H

#include <ganctl/ganctl.h>

/* Indexes of the core's per-network arrays. The public enum gan_model_role (model.h)
 * numbers the roles from 1 for the plugin ABI; gan_net_role_model converts. */
enum gan_net_role {
    GAN_NET_GENERATOR = 0,
    GAN_NET_CRITIC = 1,
};
#define GAN_NET_ROLES 2

/* "generator", "critic": the scope each forward runs in (precision.fp32 patterns and
 * the tape's op names use it), the prefix of its settings (critic.model.name) and of
 * its output columns. */
extern const char *const gan_net_role_names[GAN_NET_ROLES];

static inline enum gan_model_role gan_net_role_model(enum gan_net_role r)
{
    return r == GAN_NET_GENERATOR ? GAN_MODEL_GENERATOR : GAN_MODEL_CRITIC;
}

#endif
