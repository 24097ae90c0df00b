/* SPDX-License-Identifier: MIT */
/* streams.h — where each kind of randomness a run draws reads the run's Philox stream,
 * so that every consumer can be replayed alone. */
#ifndef GANCTL_TRAIN_STREAMS_H
#define GANCTL_TRAIN_STREAMS_H

#include <stdint.h>

/* Where each kind of randomness reads the run's Philox stream (block offsets; every
 * draw of n numbers takes ceil(n / 4) blocks). Ranges 2^56 blocks apart never meet, so
 * each consumer can be replayed alone: a change to the evaluation never moves a
 * training draw, and a checkpoint needs only the z and loss offsets and the sampler. */
#define GAN_STREAM_INIT_GENERATOR UINT64_C(0)            /* parameter initialisation */
#define GAN_STREAM_INIT_CRITIC (UINT64_C(1) << 55)
#define GAN_STREAM_Z (UINT64_C(1) << 56)                 /* the generator's noise z */
#define GAN_STREAM_LOSS (UINT64_C(2) << 56)              /* loss terms (the penalty's α) */
#define GAN_STREAM_DATA (UINT64_C(3) << 56)              /* real training batches */
#define GAN_STREAM_EVAL_Z (UINT64_C(4) << 56)            /* fixed z of the evaluations */
#define GAN_STREAM_EVAL_REAL (UINT64_C(5) << 56)         /* held-out real points */
#define GAN_STREAM_FLOOR (UINT64_C(6) << 56)             /* the real-vs-real floor */
#define GAN_STREAM_PROBE (UINT64_C(7) << 56)             /* the set-up's trial step */
#define GAN_STREAM_GRID_Z (UINT64_C(8) << 56)            /* fixed z of an image run's grids */

/* The blocks each stream above may use: a position read back from a file (a
 * checkpoint's z or loss offset) lies in [stream, stream + GAN_STREAM_BLOCKS). */
#define GAN_STREAM_BLOCKS (UINT64_C(1) << 56)

#endif
