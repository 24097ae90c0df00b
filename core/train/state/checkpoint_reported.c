/* SPDX-License-Identifier: MIT */
/* checkpoint_reported.c — the last values of a lazy term's metrics in a checkpoint. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/state/checkpoint_reported.h"

#define PREFIX "reported."

gan_status gan_checkpoint_reported_save(gan_st_writer *w, const struct gan_checkpoint_state *state,
                                        const char *path, struct gan_error *err)
{
    for (size_t i = 0; i < state->n_reported; i++) {
        char key[sizeof PREFIX + sizeof state->reported[i].name], value[40], msg[512];
        snprintf(key, sizeof key, PREFIX "%s", state->reported[i].name);
        snprintf(value, sizeof value, "%.17g", state->reported[i].value);
        gan_status st = gan_st_writer_set_metadata(w, key, value, msg, sizeof msg);
        if (st != GAN_OK)
            return gan_error_set(err, st, "%s: %s", path, msg);
    }
    return GAN_OK;
}

/* A column name as ganctl writes one: letters, digits, '_', '.' or '-', at most
 * GAN_CHECKPOINT_MAX_COLUMN of them. */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > GAN_CHECKPOINT_MAX_COLUMN)
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

gan_status gan_checkpoint_reported_load(const gan_st_file *f, struct gan_checkpoint_state *state,
                                        const char *path, struct gan_error *err)
{
    state->n_reported = 0;
    size_t n = gan_st_metadata_count(f), plen = strlen(PREFIX);
    for (size_t i = 0; i < n; i++) {
        const char *key, *text;
        gan_st_metadata_at(f, i, &key, &text);
        if (strncmp(key, PREFIX, plen) != 0)
            continue;
        char *end = NULL;
        double v = text && *text ? strtod(text, &end) : 0.0;
        if (!plain_name(key + plen) || !text || !*text || *end)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: a checkpoint's metadata entry \"reported.*\" (the %zu-th "
                                 "entry) is not a column name with a number: the file is "
                                 "damaged; resume from a copy of the run folder or start a new run",
                                 path, i + 1);
        if (state->n_reported == GAN_CHECKPOINT_MAX_REPORTED)
            return gan_error_set(err, GAN_ERR_FORMAT,
                                 "%s: the checkpoint holds more than %d \"reported.*\" values: "
                                 "the file is damaged or was not written by ganctl",
                                 path, GAN_CHECKPOINT_MAX_REPORTED);
        struct gan_checkpoint_reported *r = &state->reported[state->n_reported++];
        snprintf(r->name, sizeof r->name, "%s", key + plen);
        r->value = v;
    }
    return GAN_OK;
}
