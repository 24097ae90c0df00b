#!/bin/bash
# SPDX-License-Identifier: MIT
# paired.sh — two whole commands timed in turn (A B A B ...), the ratio A/B of their wall
# and CPU seconds taken pair by pair, so that a machine whose speed drifts (other work on
# the cores) moves both sides of each ratio alike. Prints every pair and the median,
# minimum and maximum ratio.
#
#   bench/paired.sh [-n PAIRS] [-w WARMUP] -- 'COMMAND A' 'COMMAND B'
#
# Each command is one string run by bash -c, its output thrown away; it must exit 0.
# CPU seconds are user + system of the command and everything it waited for.

set -u

usage() {
    cat <<'EOF'
usage: bench/paired.sh [-n PAIRS] [-w WARMUP] -- 'COMMAND A' 'COMMAND B'
  -n PAIRS   timed pairs (default 5)
  -w WARMUP  untimed pairs first (default 1)
Prints, per pair and as median [min, max]: A/B of wall seconds and of CPU seconds.
Exit status: 0 done, 1 a command failed, 2 usage.
EOF
}

pairs=5
warmup=1
while [ $# -gt 0 ]; do
    case $1 in
    -n) pairs=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; exit 2 ;;
    esac
done
[ $# -eq 2 ] || { usage >&2; exit 2; }
case $pairs$warmup in *[!0-9]*) usage >&2; exit 2 ;; esac
[ "$pairs" -ge 1 ] || { echo "paired.sh: -n must be at least 1" >&2; exit 2; }

times_file=$(mktemp "${TMPDIR:-/tmp}/paired.XXXXXX") || exit 1
trap 'rm -f "$times_file"' EXIT

# timed CMD: prints "wall cpu" in seconds for one run of CMD.
timed() {
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$times_file" bash -c "$1" >/dev/null 2>&1 ||
        { echo "paired.sh: failed: $1" >&2; exit 1; }
    end=$(date +%s.%N)
    awk -v s="$start" -v e="$end" '{ printf "%.3f %.3f\n", e - s, $1 + $2 }' "$times_file"
}

for ((i = 0; i < warmup; i++)); do
    timed "$1" >/dev/null
    timed "$2" >/dev/null
done

ratios=()
echo "pair  A wall  B wall  A cpu  B cpu  A/B wall  A/B cpu"
for ((i = 1; i <= pairs; i++)); do
    read -r aw ac < <(timed "$1")
    read -r bw bc < <(timed "$2")
    line=$(awk -v i="$i" -v aw="$aw" -v ac="$ac" -v bw="$bw" -v bc="$bc" 'BEGIN {
        printf "%4d %7.2f %7.2f %6.2f %6.2f %9.3f %8.3f", i, aw, bw, ac, bc, aw / bw, ac / bc }')
    echo "$line"
    ratios+=("$(echo "$line" | awk '{ print $6, $7 }')")
done

printf '%s\n' "${ratios[@]}" | awk '
    { w[NR] = $1; c[NR] = $2 }
    function median(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
            t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        n = NR
        wm = median(w, n); cm = median(c, n)
        printf "A/B wall: median %.3f [%.3f, %.3f]\n", wm, w[1], w[n]
        printf "A/B cpu:  median %.3f [%.3f, %.3f]\n", cm, c[1], c[n]
    }'
