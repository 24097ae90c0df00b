#!/bin/bash
# SPDX-License-Identifier: MIT
# fp8.sh — ganctl's iterations per second in FP32, in FP8 products (precision.mode
# "fp8" under one scaling recipe) and in BF16 O2 for one configuration, the three runs
# interleaved round after round (FP32, FP8, BF16, FP32, FP8, BF16, ...) in one
# invocation, with each configuration's median rate, the ratios of FP8's time per
# iteration to FP32's and to BF16's taken round by round, and each run's peak resident
# memory.
#
#   bench/fp8.sh [options] GANCTL PLUGIN_PATH
# See bench/README.md for the measurements.

set -u

usage() {
    cat <<'EOF'
usage: bench/fp8.sh [options] GANCTL PLUGIN_PATH
  Times N iterations of a configuration in FP32, in FP8 products and in BF16 O2, the
  three in turn for R rounds, over the iterations after the warm-up (from
  metrics.csv), and prints each one's median rate [min-max], the median per-round
  ratios of FP8's time per iteration to FP32's and to BF16's, and the peak resident
  memory (VmHWM) of each configuration's runs.
options:
  -c FILE        a ganctl configuration (default: none, the demo)
  -s KEY=VALUE   a further ganctl setting, for every run; repeatable
  -n N           iterations per run (default 150)
  -w W           untimed warm-up iterations, part of N (default 10)
  -t T           threads, backend.threads (default 1)
  -r ROUNDS      rounds of the three runs (default 3)
  --recipe R     the FP8 runs' fp8.recipe (default current)
  -o DIR         keep the runs' files in DIR (default: a temporary folder, removed)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/bench_lib.sh
. "$here/lib/bench_lib.sh"

config=
sets=()
iterations=150
warmup=10
threads=1
rounds=3
recipe=current
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -w | -t | -o) bench_option "$@"; shift "$bench_used" ;;
    -r) [ $# -ge 2 ] || die "-r needs a number"; rounds=$2; shift 2 ;;
    --recipe) [ $# -ge 2 ] || die "--recipe needs a recipe's name"; recipe=$2; shift 2 ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
unset GANCTL_CONFIG
case $iterations in '' | *[!0-9]*) die "-n takes a whole number" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number" ;; esac
case $rounds in '' | *[!0-9]*) die "-r takes a whole number" ;; esac
[ "$rounds" -ge 1 ] || die "-r must be at least 1"
[ "$warmup" -lt "$((iterations - 1))" ] || die "-w must be below -n - 1"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program"
[ -z "$config" ] || [ -r "$config" ] || die "cannot read the configuration $config"
bench_work fp8-bench
run_args=("${sets[@]}" -s backend.threads="$threads")
[ -z "$config" ] || run_args=(-c "$config" "${run_args[@]}")

# Peak memory: GNU time's %M where it runs (the kernel's own maximum), else VmHWM read
# from /proc while the run lives (the high-water mark only grows, so the last reading
# misses at most what the run's final moments add).
if /usr/bin/time -f %M -o /dev/null true >/dev/null 2>&1; then
    peak_by="GNU time's %M"
else
    peak_by="VmHWM polled from /proc"
fi

# run NAME [settings...]: one timed run in $work/NAME; prints "RATE PEAK_KIB".
run() {
    local name=$1 pid peak=
    shift
    rm -rf "${work:?}/$name"
    local cmd=("$ganctl" "${run_args[@]}" "$@" -s run.iterations="$iterations"
        -s run.eval_every=0 -s run.image_every=0 -s run.checkpoint_every=0
        -s run.log_every=1 -s run.metrics_time=true -s run.dir="$work/$name")
    if [ "$peak_by" = "GNU time's %M" ]; then
        /usr/bin/time -f %M -o "$work/$name.peak" "${cmd[@]}" >"$work/$name.out" \
            2>"$work/$name.err" || die "ganctl ($name) failed: $(tail -n 3 "$work/$name.err")"
        peak=$(tail -n 1 "$work/$name.peak")
    else
        "${cmd[@]}" >"$work/$name.out" 2>"$work/$name.err" &
        pid=$!
        while kill -0 "$pid" 2>/dev/null; do
            peak=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status" 2>/dev/null || echo "$peak")
            sleep 0.05
        done
        wait "$pid" || die "ganctl ($name) failed: $(tail -n 3 "$work/$name.err")"
    fi
    local rate
    rate=$(awk -F, -v w="$warmup" -v n="$((iterations - 1))" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_s") c = i; next }
        $1 == w { a = $c } $1 == n { b = $c }
        END { if (c && b > a) printf "%.4f", (n - w) / (b - a) }' "$work/$name/metrics.csv")
    [ -n "$rate" ] || die "no rate in $work/$name/metrics.csv"
    echo "$rate ${peak:-0}"
}

# median_range: the median of the numbers on stdin (the mean of the middle two for an
# even count), then their minimum and maximum: "MEDIAN MIN MAX".
median_range() {
    sort -g | awk '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.4f %.4f %.4f\n", m, v[1], v[NR] }'
}

configs=(fp32 fp8 bf16)
declare -A args=(
    [fp32]="--precision fp32"
    [fp8]="--precision fp8 -s fp8.recipe=$recipe"
    [bf16]="--precision bf16 -s precision.level=O2"
)
declare -A rates peaks
load_before=$(bench_load)
for ((r = 1; r <= rounds; r++)); do
    for c in "${configs[@]}"; do
        # shellcheck disable=SC2086 # args holds a list of options
        read -r rate peak <<<"$(run "$c-$r" ${args[$c]})" || exit 2
        [ -n "$rate" ] || exit 2
        rates[$c-$r]=$rate
        peaks[$c-$r]=$peak
        printf '  round %d %-5s %8.3f it/s  peak %7d KiB\n' "$r" "$c" "$rate" "$peak"
    done
done
load_after=$(bench_load)

cpu=$(awk -F': ' '$1 ~ /^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
flags=$(awk -F': ' '$1 ~ /^flags/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
features=
for f in avx512f avx512_bf16 amx_bf16 amx_tile; do
    case " $flags " in *" $f "*) features="$features $f" ;; esac
done
what=$config
[ -n "$what" ] || what="ganctl's defaults (the demo)"
echo "fp8 benchmark: $what${sets[*]:+ with ${sets[*]}}; FP8 recipe $recipe"
echo "  $iterations iterations, $warmup untimed, $threads thread(s), $rounds rounds (FP32, FP8, BF16 in turn)"
echo "  load average before $load_before, after $load_after"
echo "host:    ${cpu:-unknown CPU}, $(nproc 2>/dev/null || echo '?') cores;${features:- no AVX-512}"
echo "ganctl:  $(grep -m1 'backend: cpu' "$work/fp8-1.err" | sed 's/^ganctl: backend: //')"
echo "rates, median [min-max] over the rounds; peak resident memory ($peak_by), max over the rounds:"
for c in "${configs[@]}"; do
    read -r med lo hi <<<"$(for ((r = 1; r <= rounds; r++)); do echo "${rates[$c-$r]}"; done |
        median_range)"
    peak=$(for ((r = 1; r <= rounds; r++)); do echo "${peaks[$c-$r]}"; done | sort -g | tail -n 1)
    printf '  %-5s %8.3f it/s [%.3f-%.3f]  peak %7d KiB (%.1f MiB)\n' "$c" "$med" "$lo" "$hi" \
        "$peak" "$(awk -v k="$peak" 'BEGIN { print k / 1024 }')"
done
# Time per iteration of FP8 over the other, round by round: rate_other / rate_fp8.
for other in fp32 bf16; do
    read -r med lo hi <<<"$(for ((r = 1; r <= rounds; r++)); do
        awk -v a="${rates[$other-$r]}" -v b="${rates[fp8-$r]}" 'BEGIN { printf "%.4f\n", a / b }'
    done | median_range)"
    printf 'ratio:   FP8 / %s time per iteration = %.2fx median [%.2f-%.2f] over %d rounds\n' \
        "${other^^}" "$med" "$lo" "$hi" "$rounds"
done
[ -z "$out" ] || echo "files: $work"
