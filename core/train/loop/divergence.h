/* SPDX-License-Identifier: MIT */
/* divergence.h — whether a finished run diverged: an objective that ended non-finite, or
 * a network whose scaler skipped more than run.diverged_skip_fraction of its steps since
 * the last evaluation before the end; and the one line that says what to try. */
#ifndef GANCTL_TRAIN_DIVERGENCE_H
#define GANCTL_TRAIN_DIVERGENCE_H

#include <stdint.h>

#include "nn/net_role.h"
#include "train/state/state.h"

/* Each network's steps in the interval being judged. A dynamic scaler that starts above
 * the range its gradients fit skips its first steps by design while it halves down (the
 * calibration PyTorch's GradScaler documents): skips before a network's first applied
 * step are its calibration and are forgiven once a step has been applied. */
struct gan_divergence_watch {
    int64_t since_iteration;      /* where the interval began */
    int64_t steps[GAN_NET_ROLES], skipped[GAN_NET_ROLES];
    int64_t calibration[GAN_NET_ROLES];  /* of the skipped, those before any applied step */
    int applied[GAN_NET_ROLES];   /* the network has applied a step in this run */
    /* The critic's latest steps, all skipped for non-finite values, and the iteration
     * the first of them was in: what run.diverged_window ends a run on. */
    int64_t nonfinite_run, nonfinite_since;
};

enum gan_divergence_reason {
    GAN_DIVERGED_NOT = 0,
    GAN_DIVERGED_NONFINITE_LOSS,  /* the network's last objective was inf or NaN */
    GAN_DIVERGED_SKIPPED,         /* too many of its steps were skipped */
    GAN_DIVERGED_STALLED,         /* its last run.diverged_window steps all non-finite */
};

struct gan_divergence {
    enum gan_divergence_reason reason;
    enum gan_net_role net;        /* the network that diverged (the critic first) */
    double loss;                  /* its last objective */
    int64_t skipped, steps;       /* its skipped and judged steps, calibration left out */
    int64_t calibration;          /* the calibration skips left out */
    int64_t since_iteration;      /* where the interval began */
    double scale;                 /* its loss scale at the end */
    /* One line, without "ganctl: ": which network, why, and what to try. */
    char message[768];
};

/* Starts watching at `iteration`, at the start of a session: a network whose optimizer
 * has stepped already (a resumed run) is past its calibration. */
void gan_divergence_begin(struct gan_divergence_watch *w, const gan_session *s,
                          int64_t iteration);
/* Counts one step of `net` in `iteration`, applied or skipped by its scaler, and
 * whether it was skipped for non-finite values (an overflow). */
void gan_divergence_count(struct gan_divergence_watch *w, enum gan_net_role net, int skipped,
                          int nonfinite, int64_t iteration);
/* Starts a new interval at `iteration`: after each evaluation that is not the last. */
void gan_divergence_mark(struct gan_divergence_watch *w, int64_t iteration);

/* The verdict on a run that completed at `iteration`: `loss` holds each network's last
 * objective, `max_skip_fraction` is run.diverged_skip_fraction, `cfg` names the scaler
 * settings in the advice. Only a network that took a step in the interval is judged.
 * d->reason is GAN_DIVERGED_NOT for a healthy run. */
void gan_divergence_judge(const struct gan_divergence_watch *w, const gan_session *s,
                          const gan_config *cfg, const double loss[GAN_NET_ROLES],
                          double max_skip_fraction, int64_t iteration, struct gan_divergence *d);

/* The verdict in the middle of a run at `iteration`: diverged (d filled, 1 returned)
 * when the critic's last `window` steps or more were all skipped for non-finite values,
 * so that no step can apply again; `checkpoint_iteration` (-1: none) is the checkpoint
 * kept. 0 and d->reason GAN_DIVERGED_NOT otherwise, and always when `window` is 0. */
int gan_divergence_stalled(const struct gan_divergence_watch *w, const gan_session *s,
                           const gan_config *cfg, const double loss[GAN_NET_ROLES],
                           int64_t window, int64_t iteration, int64_t checkpoint_iteration,
                           struct gan_divergence *d);

/* "non-finite loss", "skipped steps" or "non-finite steps", as summary.json words the reason. */
const char *gan_divergence_reason_name(enum gan_divergence_reason reason);

#endif
