# SPDX-License-Identifier: MIT
# fp8_ml_dtypes.py — checks the file tests/lib/fp8_sweep.c writes (ganctl's CPU backend
# casting a sweep of FP32 values to E4M3 and E5M2, and widening every pattern, at each
# vector level) against the ml_dtypes package's float8_e4m3fn and float8_e5m2, an
# implementation independent of ganctl's.
#
#   python3 fp8_ml_dtypes.py SWEEP
#
# ml_dtypes rounds to nearest even and does not saturate: a finite value beyond the range
# becomes NaN in E4M3 and inf in E5M2, as ganctl's cast without GAN_CAST_SATURATE does.
# The saturating cast is checked against the same results, with ±max (448, 57344) where
# ml_dtypes overflowed or was given an infinity. A NaN is compared by its sign alone:
# ml_dtypes writes the canonical NaN, ganctl keeps E5M2's payload bit as it keeps FP16's.
import struct
import sys

import ml_dtypes
import numpy as np

FORMATS = (("E4M3", ml_dtypes.float8_e4m3fn, 0x7E), ("E5M2", ml_dtypes.float8_e5m2, 0x7B))
LEVELS = {0: "portable", 1: "F16C/AVX2", 2: "AVX-512"}


def is_nan8(name, b):
    """Which FP8 bytes of an array are NaN."""
    if name == "E4M3":
        return (b & 0x7F) == 0x7F
    return ((b & 0x7C) == 0x7C) & ((b & 0x03) != 0)


def is_inf8(name, b):
    if name == "E4M3":
        return np.zeros(b.shape, dtype=bool)
    return (b & 0x7F) == 0x7C


def compare_bytes(what, x, got, want, name):
    """got and want, FP8 bytes, equal where neither is NaN; NaN where the other is, of the same sign."""
    nan_got, nan_want = is_nan8(name, got), is_nan8(name, want)
    bad = (nan_got != nan_want) | (~nan_want & (got != want)) | (nan_want & ((got ^ want) & 0x80 != 0))
    idx = np.flatnonzero(bad)
    for i in idx[:10]:
        print("FAIL: %s: F32 %08x (%.9g) -> %02x, ml_dtypes %02x"
              % (what, x.view(np.uint32)[i], x[i], got[i], want[i]))
    return len(idx)


def main(path):
    data = open(path, "rb").read()
    if data[:8] != b"GANFP8SW":
        sys.exit("%s: not a sweep file" % path)
    n, levels = struct.unpack_from("<II", data, 8)
    at = 16
    x = np.frombuffer(data, dtype="<f4", count=n, offset=at)
    at += 4 * n
    failures = 0
    checked = 0
    for _ in range(levels):
        (level,) = struct.unpack_from("<I", data, at)
        at += 4
        level_name = LEVELS.get(level, str(level))
        outs = []
        for k in range(4):
            outs.append(np.frombuffer(data, dtype=np.uint8, count=n, offset=at))
            at += n
        for k, (name, dtype, max_code) in enumerate(FORMATS):
            want = x.astype(dtype).view(np.uint8)
            failures += compare_bytes("%s %s" % (level_name, name), x, outs[2 * k], want, name)
            # Saturating: where ml_dtypes overflowed a finite input, or was given an
            # infinity, the largest finite value of the input's sign.
            sat = want.copy()
            sign = np.where(np.signbit(x), 0x80, 0).astype(np.uint8)
            beyond = ~np.isnan(x) & (is_nan8(name, want) | is_inf8(name, want))
            sat[beyond] = sign[beyond] | max_code
            failures += compare_bytes("%s %s saturating" % (level_name, name), x, outs[2 * k + 1],
                                      sat, name)
            checked += 2 * n
        for name, dtype, _ in FORMATS:
            got = np.frombuffer(data, dtype="<f4", count=256, offset=at)
            at += 4 * 256
            want = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
            nan = np.isnan(want)
            same = np.where(nan, np.isnan(got) & (np.signbit(got) == np.signbit(want)),
                            got.view(np.uint32) == want.view(np.uint32))
            for b in np.flatnonzero(~same)[:10]:
                print("FAIL: %s %s: pattern %02x -> F32 %08x, ml_dtypes %08x"
                      % (level_name, name, b, got.view(np.uint32)[b], want.view(np.uint32)[b]))
            failures += int(np.count_nonzero(~same))
            checked += 256
        print("ok: %s level: %d casts of %d FP32 values and 2 x 256 patterns agree with "
              "ml_dtypes %s" % (level_name, 4, n, ml_dtypes.__version__)
              if failures == 0 else "%s level: %d disagreements so far" % (level_name, failures))
    if at != len(data):
        sys.exit("%s: %d bytes left over after %d levels" % (path, len(data) - at, levels))
    print("%d results compared, %d differ" % (checked, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
