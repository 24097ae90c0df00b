/* SPDX-License-Identifier: MIT */
/* shadow.h — debug level 2 in 16-bit precision: each network's last step before a metrics
 * row repeated in FP32 (amp/underflow_probe.h) and compared with its 16-bit backward, and
 * the values the activation clamp (precision.clamp) changed in that step. */
#ifndef GANCTL_TRAIN_LOOP_SHADOW_H
#define GANCTL_TRAIN_LOOP_SHADOW_H

#include <stdint.h>

#include "amp/underflow_probe.h"
#include "base/error.h"
#include "base/log.h"
#include "io/metrics_csv.h"
#include "train/state/state.h"

/* The probes, and what the step being compared built its objective from: the real and
 * fake batches (critic), z (generator), the loss stream's offset before the step. */
struct gan_shadow {
    gan_probe *probe[GAN_NET_ROLES];  /* NULL below debug level 2 or in FP32 */
    int due;                      /* this step is the last before a row: compare it */
    gan_session *s;               /* borrowed: the step's session */
    enum gan_net_role net;
    int64_t iteration;
    gan_tensor *real, *fake, *z;
    uint64_t loss_offset;
    gan_metrics_csv *csv;         /* grad_underflow.csv */
    /* The activation clamp in each network's own layers during its last compared step:
     * values it changed, values it saw; counted says the step was counted. */
    int counting;
    int counted[GAN_NET_ROLES];
    uint64_t clamp_changed[GAN_NET_ROLES], clamp_seen[GAN_NET_ROLES];
};

/* At debug level 2 in 16-bit precision: the probes and grad_underflow.csv in run_dir
 * (new, or continued after resume_after ≥ 0 by a resumed run that had it). */
gan_status gan_shadow_open(struct gan_shadow *sh, const gan_session *s, long long debug_level,
                           const char *run_dir, int64_t resume_after, const struct gan_log *log,
                           struct gan_error *err);
void gan_shadow_free(struct gan_shadow *sh);
/* Called first in each step of `role`, before its forward passes: when the step is due for
 * a comparison and the run clamps activations, counts the clamp in role's own layers
 * (its scope, the penalty's pass through the critic included) until the comparison. */
void gan_shadow_begin(struct gan_shadow *sh, gan_session *s, enum gan_net_role role);
/* Records what the step of `role` builds its objective from, and attaches the comparison
 * to that network's scaled backward when the step is due for one (detaches it otherwise).
 * real and fake are the critic's, z the generator's. */
void gan_shadow_step(struct gan_shadow *sh, gan_session *s, enum gan_net_role role,
                     int64_t iteration, uint64_t loss_offset, gan_tensor *real, gan_tensor *fake,
                     gan_tensor *z);
/* The comparisons of both networks' last steps: a report in the log and rows of
 * grad_underflow.csv, and the clamp's counts in the log. */
gan_status gan_shadow_write(struct gan_shadow *sh, int64_t iteration, const struct gan_log *log,
                            struct gan_error *err);

#endif
