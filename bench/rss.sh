#!/bin/sh
# SPDX-License-Identifier: MIT
# rss.sh — does a long training run grow in memory? Samples the resident set size of one
# ganctl run (VmRSS of /proc/PID/status, every second) against its iteration, and sums up.
#
# Usage: bench/rss.sh [OPTION=VALUE]... [-- GANCTL_OPTION...]
#   GANCTL=path        the program (default ./cli/ganctl, run from a build folder)
#   ITERATIONS=n       generator iterations (default 10000)
#   WIDTH=n            hidden units of both networks (default 64: minutes, not an hour)
#   WARMUP=n           iterations before the baseline (default 100)
#   INTERVAL=s         seconds between samples (default 1)
#   LIMIT_KIB=n        exit 1 when the RSS after the warm-up grows by more than n KiB
#                      (default 1024): its lowest value over the last quarter of the
#                      samples against that over the first quarter, or the last sample
#                      against the baseline. Not the largest: a picture or a checkpoint
#                      takes memory while it is written and gives it back (a transient a
#                      sample may catch); a leak raises the floor.
#   OUT=file           keep the samples there (default: a temporary file, removed)
# Options after -- go to ganctl (e.g. -- -s backend.threads=2) and win over these. The run
# is the demo's configuration but for the widths, with everything it does besides
# training made frequent: an evaluation every 50 iterations, a picture and a checkpoint
# every 100, so that each kind of work has run once within the warm-up (its first run
# makes buffers that stay, as the step's own first run does) and then a hundred times
# more. metrics.csv is logged every 10 iterations to read the run's progress.
#
# Prints one line per sample (seconds, iteration, VmRSS KiB, VmHWM KiB), then every change
# of RSS with the iteration it was first seen at, the RSS at the first sample at or after
# the warm-up (the baseline), at the last sample, the largest and smallest after the
# warm-up, the peak (VmHWM), the growth of the last sample and of the floor, and the
# least-squares slope per 1,000 iterations. Needs Linux's /proc.

GANCTL=./cli/ganctl
ITERATIONS=10000
WIDTH=64
WARMUP=100
INTERVAL=1
LIMIT_KIB=1024
OUT=
while [ $# -gt 0 ]; do
    case $1 in
    --) shift; break ;;
    GANCTL=*|ITERATIONS=*|WIDTH=*|WARMUP=*|INTERVAL=*|LIMIT_KIB=*|OUT=*) eval "${1%%=*}=\${1#*=}" ;;
    *) echo "rss.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
    esac
    shift
done
test -x "$GANCTL" || { echo "rss.sh: no ganctl at $GANCTL: run from a build folder or set GANCTL=" >&2; exit 2; }
test -r /proc/self/status || { echo "rss.sh: needs /proc (Linux)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-rss.XXXXXX") || exit 2
trap 'kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
samples=${OUT:-$work/samples}
: >"$samples"

"$GANCTL" -s run.iterations="$ITERATIONS" -s run.dir="$work/run" -s run.log_every=10 \
    -s run.eval_every=50 -s run.image_every=100 -s run.checkpoint_every=100 \
    -s generator.model.width="$WIDTH" -s critic.model.width="$WIDTH" "$@" \
    >"$work/stdout" 2>"$work/stderr" &
pid=$!
start=$(date +%s)
echo "# ganctl pid $pid: $ITERATIONS iterations, width $WIDTH, $*"
echo "# seconds iteration vmrss_kib vmhwm_kib"
while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    it=$(tail -n 1 "$work/run/metrics.csv" 2>/dev/null | cut -d, -f1)
    case $it in ''|*[!0-9]*) it=0 ;; esac
    if [ -n "$rss" ]; then
        line="$(($(date +%s) - start)) $it $rss $hwm"
        echo "$line" >>"$samples"
        echo "$line"
    fi
    sleep "$INTERVAL"
done
wait "$pid"
rc=$?
tail -n 2 "$work/stdout"
if [ "$rc" -ne 0 ]; then
    echo "rss.sh: ganctl exited with $rc:" >&2
    cat "$work/stderr" >&2
    exit 1
fi

awk -v warmup="$WARMUP" -v limit="$LIMIT_KIB" '
    { t[NR] = $1; it[NR] = $2; rss[NR] = $3; if ($4 > hwm) hwm = $4; if ($3 > hwm) hwm = $3 }
    END {
        for (i = 1; i <= NR && it[i] < warmup; i++) ;
        if (i > NR) { print "no sample after the warm-up: the run was too short"; exit 1 }
        base = rss[i]; hi = base; lo = base; n = 0; sx = sy = sxx = sxy = 0
        for (j = i; j <= NR; j++) {
            if (rss[j] > hi) hi = rss[j]
            if (rss[j] < lo) lo = rss[j]
            x = it[j] / 1000; n++; sx += x; sy += rss[j]; sxx += x * x; sxy += x * rss[j]
        }
        slope = (n > 1 && n * sxx - sx * sx > 0) ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0
        q = int(n / 4); if (q < 1) q = 1
        f1 = rss[i]; f2 = rss[NR]
        for (j = i; j < i + q; j++) if (rss[j] < f1) f1 = rss[j]
        for (j = NR - q + 1; j <= NR; j++) if (rss[j] < f2) f2 = rss[j]
        printf "RSS changes (iteration: KiB):"
        for (j = 1; j <= NR; j++)
            if (j == 1 || rss[j] != rss[j - 1]) printf " %d: %d", it[j], rss[j]
        printf "\n"
        printf "samples %d (%d after the warm-up of %d iterations), %d s\n", NR, n, warmup, t[NR]
        printf "RSS first (iteration %d) %d KiB, last (iteration %d) %d KiB, max %d KiB, min %d KiB after the warm-up; peak %d KiB (VmHWM)\n",
               it[i], base, it[NR], rss[NR], hi, lo, hwm
        printf "growth: last - first %+d KiB; floor of the last quarter - floor of the first %+d KiB (%d, %d); max - first %+d KiB; slope %+.1f KiB per 1000 iterations\n",
               rss[NR] - base, f2 - f1, f1, f2, hi - base, slope
        if (f2 - f1 > limit || rss[NR] - base > limit) {
            printf "GROWS: by more than %d KiB after the warm-up\n", limit
            exit 1
        }
        printf "flat: within %d KiB after the warm-up\n", limit
    }' "$samples"
