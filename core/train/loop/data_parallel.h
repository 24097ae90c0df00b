/* SPDX-License-Identifier: MIT */
/* data_parallel.h — the layer that makes N ranks train as one process: it wraps the batch
 * (batch.h) to take this rank's rows, and reduces values and gradients over the ranks. */
#ifndef GANCTL_TRAIN_LOOP_DATA_PARALLEL_H
#define GANCTL_TRAIN_LOOP_DATA_PARALLEL_H

#include <stdint.h>

#include "base/error.h"
#include "base/log.h"
#include "comm/comm.h"
#include "config/configuration.h"
#include "train/loop/batch.h"
#include "train/state/state.h"

typedef struct gan_data_parallel gan_data_parallel;

/* The layer over comm's ranks; *out stays NULL for no comm or a single rank, and every
 * function below is then never called: one process never enters this layer. */
gan_status gan_dp_open(gan_comm *comm, const struct gan_log *log, gan_data_parallel **out,
                       struct gan_error *err);
/* With the collectives' share of the session's time in the log. */
void gan_dp_free(gan_data_parallel *dp, double session_s);
/* This rank and the number of ranks; 0 and 1 for NULL. */
int gan_dp_rank(const gan_data_parallel *dp);
int gan_dp_size(const gan_data_parallel *dp);

/* After the session is open: this rank's rows, every rank's configuration and plugins
 * the same (refused together otherwise), the gradients' engine, the ranks' backends. */
gan_status gan_dp_set_up(gan_data_parallel *dp, const gan_session *s, const gan_config *cfg,
                         struct gan_error *err);
/* Both networks' parameters bit-identical on every rank (at start-up and checkpoints). */
gan_status gan_dp_check_weights(gan_data_parallel *dp, gan_session *s, int64_t iteration,
                                struct gan_error *err);

/* This rank's rows of the batch's real samples, of z and of the loss terms' draws; each
 * stream moves on as far as one process's would. */
gan_status gan_dp_real(gan_data_parallel *dp, struct gan_batch *b, gan_session *s,
                       gan_tensor **real, struct gan_error *err);
gan_tensor *gan_dp_z(gan_data_parallel *dp, struct gan_batch *b, gan_session *s);
gan_tensor *gan_dp_objective(gan_data_parallel *dp, struct gan_batch *b, gan_session *s,
                             enum gan_loss_target target, int64_t iteration, double scale,
                             gan_tensor *real, gan_tensor *fake, struct gan_objective_sink *sink);

/* The step's values (the objective and n reported terms) averaged over the ranks, before
 * the scaled backward, which then sees the global objective's value. */
gan_status gan_dp_average_values(gan_data_parallel *dp, double *loss, double *metrics, size_t n,
                                 struct gan_error *err);
/* Between the scaled backward and the verdict: the scaler's statistics reduced over the
 * ranks and the FP32 gradient averaged. critic_step is -1 for the generator. */
gan_status gan_dp_reduce_grads(gan_data_parallel *dp, gan_session *s, enum gan_net_role role,
                               int64_t iteration, int64_t critic_step, struct gan_error *err);
/* Whether to stop now: a stop asked on any rank. */
int gan_dp_stop(gan_data_parallel *dp, int stop_here);

#endif
