/* SPDX-License-Identifier: MIT */
/* curves.h — curves.png: a run's metrics.csv drawn as six panels against iteration (losses,
 * penalty, loss scales with overflows and skips, skipped steps, underflow, quality). */
#ifndef GANCTL_CORE_CURVES_H
#define GANCTL_CORE_CURVES_H

#include <ganctl/status.h>

#include "base/error.h"

/* The picture's size in pixels. */
#define GAN_CURVES_WIDTH 1400u
#define GAN_CURVES_HEIGHT 1080u

/* The panels, two a row, each with labelled axes, tick labels and a legend:
 *   losses         critic_loss, generator_loss, w_distance; on a signed log axis
 *                  (sign · log10(1 + |v|)) when the values span more than 10^3
 *   penalty        penalty (and grad_norm), log10 when they span more than 10^2
 *   loss scale     log2 of critic_scale and generator_scale; a scale of 0 is drawn on
 *                  the panel's floor, labelled "0"; each row whose overflow column is
 *                  gradient, forward or both gets a marker of that kind; the iterations
 *                  where a network skipped steps are shaded in its colour; a scale
 *                  that stays 0 to the end is labelled with the iteration it began
 *   skipped steps  critic_skipped and generator_skipped (cumulative), each labelled
 *                  with its last value
 *   underflow      critic_/generator_underflow_frac (gradient values zero or FP16
 *                  subnormal) and, at debug level 2, *_true_underflow (dashed)
 *   quality        sliced_w1 (toys) or sliced_w1_pixel and frechet (images) on a log
 *                  axis, and high_quality_pct / modes_covered beside them
 * A non-finite value (inf, NaN) is a red cross on the panel's top edge at its
 * iteration, so a run that diverged shows where. Columns a file lacks are left out; a
 * panel without any shows "no data". */

/* Reads the metrics table at `csv_path` (metrics.csv as a run writes it: a header row,
 * then one row per logged iteration; empty cells are "not measured") and writes the
 * picture to `png_path` atomically, `title` (may be NULL) above the panels. A table
 * without rows still gives a picture (every panel "no data"). Errors name the file. */
gan_status gan_curves_draw(const char *csv_path, const char *png_path, const char *title,
                           struct gan_error *err);

#endif
