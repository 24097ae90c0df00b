/* SPDX-License-Identifier: MIT */
/* progress.h — the progress line: its fields in order of importance, fitted to the width
 * of the terminal it is drawn on, and that width. */
#ifndef GANCTL_CLI_PROGRESS_H
#define GANCTL_CLI_PROGRESS_H

#include <stddef.h>

#include "train/run/run.h"

/* The terminal's width when none can be learnt. */
#define GAN_PROGRESS_DEFAULT_WIDTH 80u

/* The line for `p`, without a newline, in order:
 *   iter 1200/2000  8.1 it/s  ETA 1m39s  critic -0.052  gen 0.31  W 0.060
 *   C 2^13 skip 5  G 2^10 skip 6  modes 8/8  hq 95.2%  sW1 0.0123
 * where C and G are the critic's and the generator's loss scale and skipped steps,
 * shown when p->scaled. With width > 0 the line holds at most width − 1 characters, so
 * that it never wraps: the fields are taken by rank, each where it still fits — the
 * iteration, the critic's and the generator's scale, the critic's loss, the ETA, W, the
 * generator's loss, sW1 (an image run's Fréchet distance), the modes, hq, the rate — and
 * an iteration field that alone does not fit is cut. width 0: the whole line. buf holds
 * at least 1 byte. */
void gan_progress_line(char *buf, size_t size, const struct gan_progress *p, unsigned width);

/* The width of the terminal on `fd` (TIOCGWINSZ), else $COLUMNS, else
 * GAN_PROGRESS_DEFAULT_WIDTH. */
unsigned gan_terminal_width(int fd);

#endif
