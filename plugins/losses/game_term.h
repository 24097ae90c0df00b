/* SPDX-License-Identifier: MIT */
/* game_term.h — what the shipped adversarial games without settings (non-saturating,
 * hinge) share: their instance, its creation, their targets and the checks of their
 * inputs. Each game then writes only its two objectives and its descriptor. */
#ifndef GANCTL_PLUGINS_GAME_TERM_H
#define GANCTL_PLUGINS_GAME_TERM_H

#include <ganctl/ganctl.h>

struct gan_loss {
    const struct gan_host *host;
    const char *who;              /* "loss hinge": the start of its messages */
};

/* A new instance whose messages start with `who` (a literal). */
gan_status game_create(const struct gan_host *host, const char *who, gan_loss **out);
void game_destroy(gan_loss *l);
/* Both objectives, and GAN_LOSS_ADVERSARIAL: a game is the run's one objective. */
unsigned game_targets(gan_loss *l);

/* Nonzero when `in` holds what the objective of `target` reads: d_fake always, d_real
 * for the critic's. Otherwise zero, with the reason given to the host. */
int game_inputs_ok(const gan_loss *l, enum gan_loss_target target,
                   const struct gan_loss_inputs *in);

#endif
