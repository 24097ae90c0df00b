/* SPDX-License-Identifier: MIT */
/* game_term.c — the instance and checks the settings-free games share (game_term.h). */
#include "config.h"

#include <stdlib.h>

#include "game_term.h"

gan_status game_create(const struct gan_host *host, const char *who, gan_loss **out)
{
    *out = NULL;
    gan_loss *l = calloc(1, sizeof *l);
    if (!l)
        return host->fail(host->ctx, GAN_ERR_NOMEM, "%s: out of memory", who);
    l->host = host;
    l->who = who;
    *out = l;
    return GAN_OK;
}

void game_destroy(gan_loss *l)
{
    free(l);
}

unsigned game_targets(gan_loss *l)
{
    (void)l;
    return GAN_LOSS_CRITIC | GAN_LOSS_GENERATOR | GAN_LOSS_ADVERSARIAL;
}

int game_inputs_ok(const gan_loss *l, enum gan_loss_target target,
                   const struct gan_loss_inputs *in)
{
    const struct gan_host *host = l->host;
    const char *why = NULL;
    if (target != GAN_LOSS_CRITIC && target != GAN_LOSS_GENERATOR)
        why = "asked for an objective other than the critic's (1) or the generator's (2)";
    else if (!in || !in->d_fake)
        why = "no critic scores of the fake batch (d_fake) were given";
    else if (target == GAN_LOSS_CRITIC && !in->d_real)
        why = "the critic objective needs the critic scores of the real batch (d_real), and "
              "none were given";
    if (why)
        host->fail(host->ctx, GAN_ERR_INVALID, "%s: %s", l->who, why);
    return why == NULL;
}
