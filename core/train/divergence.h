/* SPDX-License-Identifier: MIT */
/* divergence.h — whether a finished run diverged: an objective that ended non-finite, or
 * a network whose scaler skipped more than run.diverged_skip_fraction of its steps since
 * the last evaluation before the end; and the one line that says what to try. */
#ifndef GANCTL_TRAIN_DIVERGENCE_H
#define GANCTL_TRAIN_DIVERGENCE_H

#include <stdint.h>

#include "nn/net_role.h"
#include "train/session.h"

/* Each network's step and skip counts where the interval being judged began. */
struct gan_divergence_mark {
    int64_t iteration;
    int64_t steps[GAN_NET_ROLES], skipped[GAN_NET_ROLES];
};

enum gan_divergence_reason {
    GAN_DIVERGED_NOT = 0,
    GAN_DIVERGED_NONFINITE_LOSS,  /* the network's last objective was inf or NaN */
    GAN_DIVERGED_SKIPPED,         /* too many of its steps were skipped */
};

struct gan_divergence {
    enum gan_divergence_reason reason;
    enum gan_net_role net;        /* the network that diverged (the critic first) */
    double loss;                  /* its last objective */
    int64_t skipped, steps;       /* its skipped and taken steps in the interval */
    int64_t since_iteration;      /* where the interval began */
    double scale;                 /* its loss scale at the end */
    /* One line, without "ganctl: ": which network, why, and what to try. */
    char message[768];
};

/* Starts an interval at `iteration`: at the start of a session and after each
 * evaluation that is not the last. */
void gan_divergence_mark(struct gan_divergence_mark *m, const gan_session *s, int64_t iteration);

/* The verdict on a run that completed at `iteration`: `loss` holds each network's last
 * objective, `max_skip_fraction` is run.diverged_skip_fraction, `cfg` names the scaler
 * settings in the advice. Only a network that took a step since the mark is judged.
 * d->reason is GAN_DIVERGED_NOT for a healthy run. */
void gan_divergence_judge(const struct gan_divergence_mark *m, const gan_session *s,
                          const gan_config *cfg, const double loss[GAN_NET_ROLES],
                          double max_skip_fraction, int64_t iteration, struct gan_divergence *d);

/* "non-finite loss" or "skipped steps", as summary.json words the reason. */
const char *gan_divergence_reason_name(enum gan_divergence_reason reason);

#endif
