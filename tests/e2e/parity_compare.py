#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# parity_compare.py — compares two ganctl run folders of the same training on two backends:
# metrics.csv column by column and the final checkpoints tensor by tensor, within stated tolerances.
"""Compare two ganctl runs of one training (tests/e2e/parity.sh runs them).

    parity_compare.py [--tolerances fp32|fp16|exact] [--lockstep N] [--window W] RUN_A RUN_B

RUN_A is the reference (the CPU backend by default). Python's standard library
only: the checkpoint is read as safetensors (an 8-byte little-endian header
length, a JSON header, the data).

What must be identical whatever the tolerances, because no arithmetic of the
backend can change it: the metrics' header, its iteration column, the rows
logged; the checkpoint's tensor names, dtypes and shapes; the RNG and data
positions in its metadata (rng.*, data.*: both backends drew the same Philox
numbers), the optimizers' step counts, and every integer tensor (the scalers'
counters). The scalers' decisions (skip columns, overflow kind, scale) are
held exactly too: a different decision is a real divergence, not rounding.

Everything else is a float, compared in three parts (lockstep rows, window
means, each network's parameters) explained with the tolerance tables at
TOLERANCES. With --tolerances exact every cell and every tensor must be
identical. Exit status: 0 the same, 1 different, 2 a file could not be read.
"""

import argparse
import json
import math
import struct
import sys

# Column classes of metrics.csv. Columns not named here are compared as "value".
EXACT_COLUMNS = {"iteration", "critic_skipped", "generator_skipped", "critic_overflow",
                 "generator_overflow", "critic_scale", "generator_scale"}
QUALITY_COLUMNS = {"modes_covered", "high_quality_pct", "sliced_w1"}

# Two backends cannot follow one trajectory for long. GEMMs that sum in another
# order (cuBLAS's split-K and tensor-core tiles against OpenBLAS's kernels) differ
# in the last bits, and a GAN's training amplifies such differences: Adam divides
# each gradient by its own running RMS, so components near zero change sign and
# move by the full learning rate. Measured on the CPU with two OpenBLAS kernels
# (SkylakeX against Haswell, the same ganctl otherwise; bench/README.md): at the
# demo's lr 1e-3 a 1e-5 relative difference at iteration 10 is O(1) by iteration
# 20; at the paper's lr 1e-4 (tests/e2e/parity.sh's default) the runs stay close in
# aggregate, losses within a few per cent, weights within about 1% (relative L2)
# after 150 iterations, while single rows of noisy columns (the generator's
# gradient norm) differ by up to 30%. So a comparison has three parts:
#
#   lockstep  the first LOCKSTEP iterations (default 1: five critic steps),
#             row by row, tightly: the same kernels on the same inputs (the same
#             Philox draws) must agree to rounding before chaos has had time to
#             act. Measured: iteration 1 agrees to about 1e-6 in FP32 and 4e-5 in
#             FP16 O2, iteration 2 only to 1e-3 and 3e-4, iteration 4 to 3e-3;
#   windows   the mean of each column over consecutive windows of WINDOW
#             iterations: the same training, statistically;
#   params    each network's parameters at the end, as the relative L2 norm of
#             the difference over all of the network's tensors.
#
# (rtol, atol) per class; |a - b| <= atol + rtol * max(|a|, |b|).
# exact: the same backend twice (the self-test); ganctl promises bit-identical
#   runs for the same settings, so any difference is a bug.
# fp32: lockstep at 1e-4: a GEMM's reassociation is about 1e-7 relative per
#   product, grown over five steps of Adam to 1e-6 (measured), with room for
#   cuBLAS's other blocking. Windows and parameters: about twice what two
#   OpenBLAS kernels gave over 300 iterations (window means within 4.6%, the
#   critic's parameters within 2.4%, the generator's within 0.23%).
# fp16: both backends round to FP16 at the same op boundaries and accumulate in
#   FP32, so an output differs by one FP16 ulp (2^-11 relative) where the FP32
#   sums straddle a rounding boundary, and those ulps feed the next ops: about
#   2^7 times FP32's unit in the last place. Lockstep at 2e-3 (measured 4e-5 at
#   iteration 1, two OpenBLAS kernels); the skips and scales of iteration 1 were
#   identical. Windows and parameters: twice FP32's, an estimate, not a measurement.
TOLERANCES = {
    "exact": {"lockstep": (0.0, 0.0), "value": (0.0, 0.0), "fraction": (0.0, 0.0),
              "quality": (0.0, 0.0), "params": 0.0},
    "fp32": {"lockstep": (1e-4, 1e-6), "value": (0.1, 0.02), "fraction": (0.0, 0.02),
             "quality": (0.25, 1.0), "params": 0.05},
    "fp16": {"lockstep": (2e-3, 1e-4), "value": (0.2, 0.04), "fraction": (0.0, 0.04),
             "quality": (0.5, 2.0), "params": 0.1},
}


def column_class(name):
    if name in EXACT_COLUMNS:
        return "exact"
    if name.endswith("_frac"):
        return "fraction"
    if name in QUALITY_COLUMNS:
        return "quality"
    return "value"


# --------------------------------------------------------------------------- reading

def read_csv(path):
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    if not lines:
        raise ValueError("%s is empty" % path)
    header = lines[0].split(",")
    rows = [ln.split(",") for ln in lines[1:]]
    for i, r in enumerate(rows):
        if len(r) != len(header):
            raise ValueError("%s: row %d has %d fields, the header %d"
                             % (path, i + 2, len(r), len(header)))
    return header, rows


ST_FORMATS = {"F64": "d", "F32": "f", "I64": "q", "I32": "i", "U8": "B"}
ST_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1}


def read_safetensors(path):
    """(tensors, metadata): tensors maps a name to (dtype, shape, values); F16 and BF16
    values are widened to float, so that they compare as numbers."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s is not a safetensors file: shorter than 8 bytes" % path)
    n = struct.unpack("<Q", raw[:8])[0]
    if 8 + n > len(raw):
        raise ValueError("%s: the header length %d runs past the file's end" % (path, n))
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + n
    out = {}
    for name, info in header.items():
        dt, shape = info["dtype"], info["shape"]
        b, e = info["data_offsets"]
        data = raw[base + b:base + e]
        count = 1
        for d in shape:
            count *= d
        if dt not in ST_SIZES or len(data) != count * ST_SIZES[dt]:
            raise ValueError("%s: tensor %s has dtype %s and %d bytes for shape %s"
                             % (path, name, dt, len(data), shape))
        if dt in ST_FORMATS:
            vals = list(struct.unpack("<%d%s" % (count, ST_FORMATS[dt]), data))
        elif dt == "F16":
            vals = list(struct.unpack("<%de" % count, data))
        else:  # BF16: the top half of an F32
            halves = struct.unpack("<%dH" % count, data)
            vals = list(struct.unpack("<%df" % count,
                                      b"".join(struct.pack("<I", h << 16) for h in halves)))
        out[name] = (dt, shape, vals)
    return out, meta


# --------------------------------------------------------------------------- comparing

def as_float(s):
    try:
        return float(s)
    except ValueError:
        return None


def same_float(a, b, rtol, atol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


class Report:
    def __init__(self):
        self.failures = []

    def fail(self, what):
        self.failures.append(what)


def window_means(rows, c, window):
    """{window index: (mean of column c's numbers, count)} over iterations 1..W, W+1..2W, …;
    a window with any non-finite value has the mean nan."""
    acc = {}
    for r in rows:
        v = as_float(r[c])
        if v is None:
            continue
        w = (int(r[0]) - 1) // window
        tot, n = acc.get(w, (0.0, 0))
        acc[w] = (tot + v, n + 1)
    return {w: (tot / n, n) for w, (tot, n) in acc.items()}


def compare_metrics(path_a, path_b, tol, lockstep, window, rep):
    ha, ra = read_csv(path_a)
    hb, rb = read_csv(path_b)
    if ha != hb:
        rep.fail("metrics.csv headers differ: %s / %s" % (",".join(ha), ",".join(hb)))
        return
    if [r[0] for r in ra] != [r[0] for r in rb]:
        rep.fail("metrics.csv logs other iterations: %d rows in A, %d in B"
                 % (len(ra), len(rb)))
        return
    exact = tol is TOLERANCES["exact"]
    print("metrics.csv: %d rows, %d columns; %s" % (len(ra), len(ha),
          "every cell identical required" if exact else
          "lockstep rows: iterations 1..%d; window means over %d iterations" % (lockstep, window)))
    print("  %-26s %-8s %11s %11s %11s %11s  %s" % ("column", "class", "lockstep", "(limit)",
                                                   "window", "(limit)", "verdict"))
    for c, name in enumerate(ha):
        cls = column_class(name)
        bad = None
        # Row by row: every row for exact columns and the exact set, the lockstep
        # rows otherwise. The reported figure is the worst |diff| / limit.
        lrt, lat = (0.0, 0.0) if cls == "exact" or exact else tol["lockstep"]
        worst_l = 0.0
        for i in range(len(ra)):
            it = int(ra[i][0])
            if not (cls == "exact" or exact or it <= lockstep):
                continue
            sa, sb = ra[i][c], rb[i][c]
            if sa == sb:
                continue
            fa, fb = as_float(sa), as_float(sb)
            if fa is None or fb is None or not same_float(fa, fb, lrt, lat):
                bad = bad or "iteration %d: %s / %s" % (it, sa or "(empty)", sb or "(empty)")
            if fa is not None and fb is not None and math.isfinite(fa - fb):
                worst_l = max(worst_l, abs(fa - fb) / max(abs(fa), abs(fb), 1e-30))
        worst_w = 0.0
        wrt = wat = 0.0
        if cls != "exact" and not exact:
            wrt, wat = tol[cls]
            ma, mb = window_means(ra, c, window), window_means(rb, c, window)
            for w in sorted(set(ma) | set(mb)):
                if w not in ma or w not in mb or ma[w][1] != mb[w][1]:
                    bad = bad or "window %d..%d: values logged in one run only" % (
                        w * window + 1, (w + 1) * window)
                    continue
                fa, fb = ma[w][0], mb[w][0]
                if not same_float(fa, fb, wrt, wat):
                    bad = bad or "mean over iterations %d..%d: %.6g / %.6g" % (
                        w * window + 1, (w + 1) * window, fa, fb)
                if math.isfinite(fa - fb):
                    worst_w = max(worst_w, abs(fa - fb) / max(abs(fa), abs(fb), 1e-30))
        lim_l = "exact" if (lrt, lat) == (0.0, 0.0) else "%g+%g" % (lrt, lat)
        lim_w = "-" if cls == "exact" or exact else "%g+%g" % (wrt, wat)
        print("  %-26s %-8s %11.3g %11s %11s %11s  %s"
              % (name, cls, worst_l, lim_l, "-" if lim_w == "-" else "%.3g" % worst_w, lim_w,
                 "ok" if bad is None else "DIFFERS, " + bad))
        if bad is not None:
            rep.fail("metrics.csv column %s: %s" % (name, bad))


# Metadata that says where and how long, not what was computed.
META_IGNORED = {"config", "elapsed_s", "ganctl_version"}
NETWORKS = ("generator", "critic")


def compare_checkpoints(path_a, path_b, tol, rep):
    ta, ma = read_safetensors(path_a)
    tb, mb = read_safetensors(path_b)
    exact_all = tol is TOLERANCES["exact"]
    print("checkpoint: %d tensors" % len(ta))
    for key in sorted(set(ma) | set(mb)):
        if key in META_IGNORED:
            continue
        if ma.get(key) != mb.get(key):
            rep.fail("checkpoint metadata %s: %s / %s" % (key, ma.get(key), mb.get(key)))
            print("  metadata %-30s DIFFERS: %s / %s" % (key, ma.get(key), mb.get(key)))
    rng = [k for k in sorted(ma) if k.startswith(("rng.", "data."))]
    print("  RNG and data positions (%s): %s" % (", ".join(rng) or "none",
          "identical" if all(ma.get(k) == mb.get(k) for k in rng) else "DIFFERENT"))
    if not rng:
        rep.fail("the checkpoint holds no rng.* or data.* metadata to compare")
    if set(ta) != set(tb):
        rep.fail("checkpoint tensor names differ: only in A %s, only in B %s"
                 % (sorted(set(ta) - set(tb)), sorted(set(tb) - set(ta))))
        return
    print("  %-44s %12s %12s %10s  %s" % ("tensor", "max |A|", "max |diff|", "rel. L2",
                                          "verdict"))
    sums = {n: [0.0, 0.0] for n in NETWORKS}  # per network: sum of a^2, sum of (a-b)^2
    for name in sorted(ta):
        da, sa, va = ta[name]
        db, sb, vb = tb[name]
        if da != db or sa != sb:
            rep.fail("tensor %s: %s %s / %s %s" % (name, da, sa, db, sb))
            continue
        net = name.split(".", 1)[0]
        # Counters and the scalers' state are decisions, not roundings: exact.
        exact = exact_all or da.startswith(("I", "U")) or name.startswith("scaler.")
        if exact:
            same = all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(va, vb))
        scale = max((abs(x) for x in va), default=0.0)
        d2 = sum((x - y) ** 2 for x, y in zip(va, vb))
        a2 = sum(x * x for x in va)
        diff = max((abs(x - y) for x, y in zip(va, vb)), default=0.0)
        rel = math.sqrt(d2 / a2) if a2 > 0 else (0.0 if d2 == 0 else float("inf"))
        if net in sums:
            sums[net][0] += a2
            sums[net][1] += d2
        if exact:
            verdict = "ok (exact)" if same else "DIFFERS (exact required)"
            if not same:
                rep.fail("tensor %s differs; it must be identical" % name)
        else:
            verdict = "(in its network's figure)" if net in sums else "(not compared: %s)" % (
                "optimizer state follows the gradients' noise" if net == "optimizer" else "info")
        print("  %-44s %12.4g %12.3g %10.2e  %s" % (name, scale, diff, rel, verdict))
    if not exact_all:
        limit = tol["params"]
        for net in NETWORKS:
            a2, d2 = sums[net]
            rel = math.sqrt(d2 / a2) if a2 > 0 else float("inf")
            ok = rel <= limit
            print("  %s parameters: relative L2 difference %.3g (limit %g): %s"
                  % (net, rel, limit, "ok" if ok else "DIFFERS"))
            if not ok:
                rep.fail("%s parameters differ by %.3g (relative L2), over %g" % (net, rel, limit))


def main(argv):
    p = argparse.ArgumentParser(prog="parity_compare.py",
                                description="Compare two ganctl run folders of one training.")
    p.add_argument("--tolerances", choices=sorted(TOLERANCES), default="exact")
    p.add_argument("--lockstep", type=int, default=1,
                   help="iterations compared row by row at the lockstep tolerances (1)")
    p.add_argument("--window", type=int, default=50,
                   help="iterations per window whose column means are compared (50)")
    p.add_argument("run_a")
    p.add_argument("run_b")
    a = p.parse_args(argv)
    tol = TOLERANCES[a.tolerances]
    rep = Report()
    try:
        compare_metrics(a.run_a + "/metrics.csv", a.run_b + "/metrics.csv", tol,
                        a.lockstep, max(a.window, 1), rep)
        compare_checkpoints(a.run_a + "/checkpoint.safetensors",
                            a.run_b + "/checkpoint.safetensors", tol, rep)
    except (OSError, ValueError, KeyError) as e:
        print("parity_compare.py: %s" % e, file=sys.stderr)
        return 2
    if rep.failures:
        print("verdict: DIFFERENT (%s tolerances): %d finding(s); the first: %s"
              % (a.tolerances, len(rep.failures), rep.failures[0]))
        return 1
    print("verdict: SAME within the %s tolerances" % a.tolerances)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
