#!/bin/bash
# SPDX-License-Identifier: MIT
# bf16.sh — ganctl's iterations per second in FP32 and in BF16 O2 for one configuration,
# the runs back to back in one invocation (and, for reference, BF16 O2 on the OpenBLAS
# path that stages BF16 through sgemm), with the ratios.
#
#   bench/bf16.sh [options] GANCTL PLUGIN_PATH
# See bench/README.md for the measurements.

set -u

usage() {
    cat <<'EOF'
usage: bench/bf16.sh [options] GANCTL PLUGIN_PATH
  Times N iterations of a configuration in FP32, in BF16 O2 and in BF16 O2 with
  backend.gemm = "openblas", over the iterations after the warm-up (from metrics.csv),
  and prints the rates and their ratios.
options:
  -c FILE        a ganctl configuration (default: none, the demo)
  -s KEY=VALUE   a further ganctl setting; repeatable
  -n N           iterations (default 200)
  -w W           untimed warm-up iterations, part of N (default 10)
  -t T           threads (default 1)
  --gemm PATH    backend.gemm of the FP32 and BF16 runs (default auto)
  -o DIR         keep the runs' files in DIR (default: a temporary folder, removed)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/bench_lib.sh
. "$here/lib/bench_lib.sh"

config=
sets=()
iterations=200
warmup=10
threads=1
gemm=auto
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -w | -t | --gemm | -o) bench_option "$@"; shift "$bench_used" ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
unset GANCTL_CONFIG
case $iterations in '' | *[!0-9]*) die "-n takes a whole number" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number" ;; esac
[ "$warmup" -lt "$((iterations - 1))" ] || die "-w must be below -n - 1"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program"
[ -z "$config" ] || [ -r "$config" ] || die "cannot read the configuration $config"
bench_work bf16-bench
run_args=("${sets[@]}" -s backend.threads="$threads")
[ -z "$config" ] || run_args=(-c "$config" "${run_args[@]}")

load_before=$(bench_load)
# shellcheck source=bench/lib/ganctl_rate.sh
. "$here/lib/ganctl_rate.sh"
fp32=$(ganctl_rate fp32 -s backend.gemm="$gemm" --precision fp32)
bf16=$(ganctl_rate bf16 -s backend.gemm="$gemm" --precision bf16 -s precision.level=O2)
staged=$(ganctl_rate bf16-openblas -s backend.gemm=openblas --precision bf16 -s precision.level=O2)
load_after=$(bench_load)

what=$config
[ -n "$what" ] || what="ganctl's defaults (the demo)"
echo "bf16 benchmark: $what${sets[*]:+ with ${sets[*]}}"
echo "  $iterations iterations, $warmup untimed, $threads thread(s); load average before $load_before, after $load_after"
echo "ganctl:  $(grep -m1 'backend: cpu' "$work/bf16.err" | sed 's/^ganctl: backend: //')"
echo "  FP32, gemm $gemm:           ${fp32:-?} it/s"
echo "  BF16 O2, gemm $gemm:        ${bf16:-?} it/s"
echo "  BF16 O2, gemm openblas:  ${staged:-?} it/s (BF16 staged through sgemm)"
echo "ratios:  BF16 O2 / FP32 = $(ratio "$bf16" "$fp32"); BF16 O2 $gemm / openblas = $(ratio "$bf16" "$staged")"
[ -z "$out" ] || echo "files: $work"
