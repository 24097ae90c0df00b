#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh — runs each libFuzzer harness for a bounded time, starting from a
# copy of its seeds and regressions, and fails when any of them finds a crash, a leak,
# undefined behaviour, a broken promise or a hang. Prints per target the inputs run.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS [TARGET...]]
#
# BUILD_DIR was configured with --enable-fuzzing and has run `make fuzzers`; SECONDS
# (default 60) is each target's time; TARGETs are among safetensors idx config
# checkpoint checkpoint-full image folder (default all). What a fuzzer finds is kept in
# BUILD_DIR/tests/fuzz/findings/TARGET/ (tests/fuzz/regressions/README says what to do
# with it); the inputs it generated are thrown away.
set -eu

usage() {
    echo "usage: $0 BUILD_DIR [SECONDS [TARGET...]]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
build=$(cd "$1" && pwd)
shift
seconds=${1:-60}
[ $# -gt 0 ] && shift
case $seconds in '' | *[!0-9]*) usage ;; esac
targets=${*:-safetensors idx config checkpoint checkpoint-full image folder}
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-fuzz-run.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# Every sanitizer report ends the run: ASan's and LeakSanitizer's do by themselves,
# UBSan's because the instrumentation does not recover and halt_on_error is set for
# code built otherwise (a plugin, say).
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Leaks inside other packages, each explained in the file.
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
# The checkpoint harnesses load this build's CPU backend.
GANCTL_PLUGIN_PATH=$build/backends/cpu/.libs
export GANCTL_PLUGIN_PATH

failed=
for t in $targets; do
    fuzzer=$build/tests/fuzz/fuzz-$t
    if [ ! -x "$fuzzer" ]; then
        echo "run.sh: $fuzzer is missing: configure $build with --enable-fuzzing and run make fuzzers there" >&2
        exit 2
    fi
    corpus=$work/$t
    mkdir -p "$corpus"
    cp "$here/corpus/$t"/* "$corpus"/
    if [ -d "$here/regressions/$t" ]; then
        for f in "$here/regressions/$t"/*; do
            [ -f "$f" ] && cp "$f" "$corpus/regression-$(basename "$f")"
        done
    fi
    findings=$build/tests/fuzz/findings/$t
    mkdir -p "$findings"
    case $t in
    checkpoint | checkpoint-full) dict=$here/dict/safetensors.dict ;;
    *) dict=$here/dict/$t.dict ;;
    esac
    set -- -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$findings/"
    [ -f "$dict" ] && set -- "$@" -dict="$dict"
    log=$work/$t.log
    start=$(date +%s)
    # stdin from /dev/null: nothing the harnesses read may wait on a terminal.
    status=0
    "$fuzzer" "$@" "$corpus" </dev/null >"$log" 2>&1 || status=$?
    took=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    if [ "$status" -eq 0 ]; then
        echo "fuzz-$t: ok, ${runs:-?} inputs in ${took}s (${rate:-?}/s), corpus $(ls "$corpus" | wc -l) files"
    else
        echo "fuzz-$t: FAILED (exit $status) after ${runs:-?} inputs in ${took}s:"
        # What was found first (a harness's verdict, a sanitizer's report), then the
        # end of the log, where libFuzzer names the input it saved.
        grep -m 5 -E '^fuzz: |ERROR: |runtime error: |^SUMMARY: ' "$log" | sed 's/^/    /' || :
        echo "    ..."
        tail -n 40 "$log" | sed 's/^/    /'
        echo "fuzz-$t: the input that failed is in $findings/; $fuzzer FILE runs it again, as does tests/fuzz/replay-$t FILE in any build folder"
        failed="$failed $t"
    fi
done
if [ -n "$failed" ]; then
    echo "run.sh: failed:$failed" >&2
    exit 1
fi
