#!/bin/bash
# SPDX-License-Identifier: MIT
# device-check.sh — the one script to run on a machine with an NVIDIA GPU: configure with CUDA,
# build, make check with the CUDA suite required to run, the cpu-against-cuda parity and the GPU
# benchmark, every log under $OUT, a summary at the end, each step under a hard time limit.
#
#   OUT=/some/folder bench/device-check.sh [BUILD_DIR]     (from the source tree's root)
# BUILD_DIR defaults to build-device; an already configured one is reused as it is.
# Exit status: 0 every step passed, 1 a step failed, 3 no usable CUDA device.

set -u

src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-device}
out=${OUT:-$src/device-check-logs}
jobs=${JOBS:-16}
mkdir -p "$out" "$build" || { echo "device-check.sh: cannot make $out or $build"; exit 1; }
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
summary=$out/summary.txt
: >"$summary"
start=$(date +%s)
failed=0

note() { echo "$*" | tee -a "$summary"; }

# The whole script's budget: under 8 minutes however the steps go. A step gets its own
# limit or what is left of the budget, whichever is less.
budget=${BUDGET_S:-450}
deadline=$((start + budget))

# step NAME LIMIT_S COMMAND...: runs COMMAND in the build folder under `timeout`, its
# output in $out/NAME.log; records PASS, FAIL (exit N) or TIMEOUT with the seconds taken.
step() {
    name=$1 limit=$2
    shift 2
    left=$((deadline - $(date +%s)))
    if [ "$left" -lt 20 ]; then
        note "NOT RUN  $name: the ${budget}s budget is spent"
        failed=1
        return 124
    fi
    [ "$limit" -le "$left" ] || limit=$left
    t0=$(date +%s)
    (cd "$build" && timeout -k 10 "$limit" "$@") >"$out/$name.log" 2>&1
    rc=$?
    t=$(($(date +%s) - t0))
    case $rc in
    0) note "PASS     $name (${t}s)" ;;
    124 | 137) note "TIMEOUT  $name (limit ${limit}s)"; failed=1 ;;
    *) note "FAIL     $name (exit $rc, ${t}s): $(tail -n 1 "$out/$name.log")"; failed=1 ;;
    esac
    return $rc
}

finish() {
    note "total $(($(date +%s) - start))s (budget ${budget}s); logs in $out"
    exit "$1"
}

note "device-check: $(date -u +%Y-%m-%dT%H:%M:%SZ), source $src, build $build"
{ if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1; else echo "nvidia-smi: not found"; fi; } | tee "$out/nvidia-smi.txt" | sed 's/^/  /' | tee -a "$summary"

# ------------------------------------------------------------------ configure and build
if [ -f "$build/config.status" ] && [ -f "$build/Makefile" ]; then
    note "SKIPPED  configure (already configured: $(sed -n 's/^ *\$ \(.*configure.*\)/\1/p' "$build/config.log" | head -n 1))"
else
    step configure 90 "$src/configure" --enable-werror || finish 1
fi
if ! grep -q "^HAVE_CUDA_TRUE=''" "$build/config.log" 2>/dev/null; then
    note "FAIL     configure did not find CUDA (HAVE_CUDA is false in $build/config.log); install the toolkit in /usr/local/cuda"
    finish 1
fi
step build 150 make -j"$jobs" || finish 1

P=$build/backends/cpu/.libs:$build/backends/cuda/.libs:$build/plugins/models/.libs:$build/plugins/losses/.libs:$build/plugins/scalers/.libs
export GANCTL_CONFIG=/dev/null
# The one-line answer to "is there a device": stop here, clearly, when there is none.
if ! GANCTL_PLUGIN_PATH=$P "$build/cli/ganctl" --backend cuda --version >"$out/cuda-version.txt" 2>&1; then
    note "STOP     no CUDA device: $(grep -m1 'no CUDA device\|^ganctl: ' "$out/cuda-version.txt" | sed 's/^ganctl: //')"
    finish 3
fi
note "  $(grep '^backend cuda' "$out/cuda-version.txt")"

# ------------------------------------------------------------------ make check
# check_backend_cuda must run, not SKIP: on this machine a skip is a failure.
step check 150 make -j"$jobs" check
cuda_result=$(grep -h '^[A-Z]*: tests/unit/check_backend_cuda$' "$build/test-suite.log" "$out/check.log" 2>/dev/null | head -n 1)
case $cuda_result in
PASS:*) note "PASS     check_backend_cuda ran: $(tail -n 1 "$build/tests/unit/check_backend_cuda.log" 2>/dev/null)" ;;
*) note "FAIL     check_backend_cuda did not pass: ${cuda_result:-no result}; $(tail -n 1 "$build/tests/unit/check_backend_cuda.log" 2>/dev/null)"
   failed=1 ;;
esac
cp "$build/test-suite.log" "$out/test-suite.log" 2>/dev/null
mkdir -p "$out/check-logs"
cp "$build"/tests/*.log "$out/check-logs/" 2>/dev/null

# ------------------------------------------------------------------ parity and benchmark
step parity 120 "$src/tests/e2e/parity.sh" -o "$out/parity-runs" "$build/cli/ganctl" "$P" cpu cuda
[ -f "$out/parity.log" ] && grep -A3 '^--- summary' "$out/parity.log" | sed 's/^/  /' >>"$summary"
step gpu-bench 90 "$src/bench/gpu.sh" -n 300 -w 50 -o "$out/bench-runs" "$build/cli/ganctl" "$P"
[ -f "$out/gpu-bench.log" ] && sed -n '/^config /,$p' "$out/gpu-bench.log" | sed 's/^/  /' >>"$summary"

note "$([ $failed -eq 0 ] && echo "ALL PASSED" || echo "SOME STEPS FAILED")"
finish $failed
