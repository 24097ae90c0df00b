#!/bin/sh
# SPDX-License-Identifier: MIT
# fp8_ml_dtypes.sh — the CPU backend's FP8 casts against an independent implementation:
# tests/lib/fp8-sweep casts a sweep of FP32 values to E4M3 and E5M2 (saturating and not)
# and widens every pattern, at every vector level of this CPU, and fp8_ml_dtypes.py
# compares each result with the ml_dtypes package. Skipped (77) without a python3 that
# can import ml_dtypes (pip install ml_dtypes); GANCTL_TEST_PYTHON names one to try first.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}
SWEEP=${SWEEP:-./tests/lib/fp8-sweep}

need_python "ml_dtypes, numpy" "pip install ml_dtypes"
test -x "$SWEEP" || { echo "fp8-sweep not built at $SWEEP"; exit 99; }

test_begin fp8-ml-dtypes
check_output=yes
check_passed() { sed 's/^/  /' "$work/check.out"; }

check "fp8-sweep writes the casts at every vector level" "$SWEEP" "$work/sweep.bin"
check "every cast and every pattern agrees with ml_dtypes ($python)" \
    "$python" "$srcdir/tests/e2e/fp8_ml_dtypes.py" "$work/sweep.bin"
test_end
