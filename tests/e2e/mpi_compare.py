#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mpi_compare.py - what tests/e2e/mpi.sh compares between a data-parallel run and one
process: two metrics.csv files cell by cell, or two checkpoints tensor by tensor.

  mpi_compare.py csv A B TOL EXACT_COLUMNS...
      every numeric cell within TOL·(1 + |b|) of the other, the named columns (and every
      text cell) equal; prints the largest difference of the numeric cells.
  mpi_compare.py weights A B TOL
      every F32 tensor whose name starts with "generator." or "critic." within
      TOL·(1 + |b|) element by element; prints the largest difference.
  mpi_compare.py same A B
      the same tensors bit for bit.

Exit status 0 when they agree, 1 with a line saying where they do not."""
import json
import math
import struct
import sys


def read_csv(path):
    with open(path) as f:
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    return rows[0], rows[1:]


def close(a, b, tol):
    return abs(a - b) <= tol * (1.0 + abs(b))


def compare_csv(a_path, b_path, tol, exact):
    head_a, rows_a = read_csv(a_path)
    head_b, rows_b = read_csv(b_path)
    if head_a != head_b or len(rows_a) != len(rows_b):
        print(f"{a_path} and {b_path} differ in their columns or row count")
        return 1
    worst = 0.0
    for ra, rb in zip(rows_a, rows_b):
        for name, x, y in zip(head_a, ra, rb):
            if name == "time_s":
                continue
            try:
                fx, fy = float(x), float(y)
            except ValueError:
                fx = fy = None
            if fx is None or name in exact:
                if x != y:
                    print(f"iteration {ra[0]}, {name}: {x} against {y} (must be equal)")
                    return 1
                continue
            if math.isnan(fx) and math.isnan(fy):
                continue
            if not close(fx, fy, tol):
                print(f"iteration {ra[0]}, {name}: {x} against {y} (tolerance {tol})")
                return 1
            worst = max(worst, abs(fx - fy) / (1.0 + abs(fy)))
    print(f"largest relative difference {worst:.3g}")
    return 0


def read_tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not name.startswith(("generator.", "critic.")):
            continue
        lo, hi = info["data_offsets"]
        out[name] = (info["dtype"], data[lo:hi])
    return out


def compare_weights(a_path, b_path, tol):
    a, b = read_tensors(a_path), read_tensors(b_path)
    if sorted(a) != sorted(b) or not a:
        print(f"{a_path} and {b_path} hold different tensors")
        return 1
    worst = 0.0
    for name in sorted(a):
        (dta, ba), (dtb, bb) = a[name], b[name]
        if dta != "F32" or dtb != "F32":
            continue
        va = struct.unpack(f"<{len(ba) // 4}f", ba)
        vb = struct.unpack(f"<{len(bb) // 4}f", bb)
        for i, (x, y) in enumerate(zip(va, vb)):
            if not close(x, y, tol):
                print(f"{name}[{i}]: {x} against {y} (tolerance {tol})")
                return 1
            worst = max(worst, abs(x - y) / (1.0 + abs(y)))
    print(f"largest relative difference {worst:.3g}")
    return 0


def compare_same(a_path, b_path):
    a, b = read_tensors(a_path), read_tensors(b_path)
    if not a or a != b:
        print(f"{a_path} and {b_path} differ")
        return 1
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == "csv":
        return compare_csv(argv[2], argv[3], float(argv[4]), set(argv[5:]))
    if len(argv) == 5 and argv[1] == "weights":
        return compare_weights(argv[2], argv[3], float(argv[4]))
    if len(argv) == 4 and argv[1] == "same":
        return compare_same(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
