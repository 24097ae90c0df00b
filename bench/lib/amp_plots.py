#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# amp_plots.py — draws bench/amp-matrix's figures: for each configuration, both networks'
# loss scale and gradient underflow fraction over iterations, one line per seed.
#
#   python3 bench/lib/amp_plots.py OUT_DIR [ROW ...]
# reads OUT_DIR/series.csv (written by bench/amp-matrix) and writes OUT_DIR/ROW.png.
# Needs matplotlib (Debian: python3-matplotlib); amp-matrix runs it only when it imports.

import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

# A scale of exactly 0 (a scaler with no floor that halved all the way down) has no
# logarithm; it is drawn on this line, below FP32's smallest subnormal (2^-149), with a
# marker.
ZERO_LOG2 = -160.0


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: amp_plots.py OUT_DIR [ROW ...]\n")
        return 2
    out = sys.argv[1]
    series = {}
    with open(os.path.join(out, "series.csv"), newline="") as f:
        for r in csv.DictReader(f):
            series.setdefault(r["row"], {}).setdefault(int(r["seed"]), []).append(r)
    rows = sys.argv[2:] or list(series)
    for row in rows:
        if row not in series:
            sys.stderr.write("amp_plots.py: no series for %s in series.csv\n" % row)
            return 2
        draw(out, row, series[row])
    return 0


def draw(out, row, by_seed):
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), sharex=True)
    has_true = any(r.get("critic_true_underflow", "") != "" for rs in by_seed.values()
                   for r in rs)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marks = []  # overflow markers, drawn along the top once every line has set the limits
    for k, (seed, rs) in enumerate(sorted(by_seed.items())):
        c = colours[k % len(colours)]
        it = [int(r["iteration"]) for r in rs]
        for j, net in enumerate(("critic", "generator")):
            ax = axes[0][j]
            ys, zero_x = [], []
            for x, r in zip(it, rs):
                s = num(r[net + "_scale"])
                if s is not None and s > 0 and math.isfinite(s):
                    ys.append(math.log2(s))
                else:
                    ys.append(ZERO_LOG2 if s == 0 else float("nan"))
                    if s == 0:
                        zero_x.append(x)
            ax.plot(it, ys, color=c, lw=1.2, label="seed %d" % seed)
            if zero_x:
                ax.plot(zero_x, [ZERO_LOG2] * len(zero_x), "v", color=c, ms=3)
            fwd = [x for x, r in zip(it, rs) if r[net + "_overflow"] in ("forward", "both")]
            grad = [x for x, r in zip(it, rs) if r[net + "_overflow"] in ("gradient", "both")]
            marks.append((ax, c, k, grad, fwd))
            ax2 = axes[1][j]
            uf = [num(r[net + "_underflow_frac"]) for r in rs]
            ax2.plot(it, [100 * u if u is not None else float("nan") for u in uf],
                     color=c, lw=1.2, label="seed %d stored zero/subnormal" % seed)
            if has_true:
                tu = [num(r.get(net + "_true_underflow", "")) for r in rs]
                ax2.plot(it, [100 * u if u is not None else float("nan") for u in tu],
                         color=c, lw=1.0, ls="--", label="seed %d true underflow" % seed)
    for ax, c, k, grad, fwd in marks:
        # one band per seed along the top, so that the seeds' markers do not overlap
        bottom, top = ax.get_ylim()
        top -= k * 0.04 * (top - bottom)
        if grad:
            ax.plot(grad, [top] * len(grad), "|", color=c, ms=6)
        if fwd:
            ax.plot(fwd, [top] * len(fwd), "x", color=c, ms=4)
    for j, net in enumerate(("critic", "generator")):
        axes[0][j].set_title("%s: loss scale" % net)
        axes[0][j].set_ylabel("log2(scale)  (%g: scale 0)" % ZERO_LOG2)
        axes[1][j].set_title("%s: gradient underflow" % net)
        axes[1][j].set_ylabel("% of FP16 parameter-gradient elements")
        axes[1][j].set_xlabel("iteration")
        axes[1][j].set_ylim(-2, 102)
        for ax in (axes[0][j], axes[1][j]):
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="best")
    axes[1][0].legend(fontsize=6, loc="best")
    fig.suptitle("%s  (| gradient overflow, x forward overflow, v scale 0; "
                 "solid: stored zero or subnormal, dashed: true underflow)" % row, fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out, row + ".png"), dpi=80)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
