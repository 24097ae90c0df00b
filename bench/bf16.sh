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

die() {
    echo "bf16.sh: $*" >&2
    exit 2
}

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
    -c) [ $# -ge 2 ] || die "-c needs a file"; config=$2; shift 2 ;;
    -s) [ $# -ge 2 ] || die "-s needs KEY=VALUE"; sets+=(-s "$2"); shift 2 ;;
    -n) [ $# -ge 2 ] || die "-n needs a number"; iterations=$2; shift 2 ;;
    -w) [ $# -ge 2 ] || die "-w needs a number"; warmup=$2; shift 2 ;;
    -t) [ $# -ge 2 ] || die "-t needs a number"; threads=$2; shift 2 ;;
    --gemm) [ $# -ge 2 ] || die "--gemm needs auto, openblas or onednn"; gemm=$2; shift 2 ;;
    -o) [ $# -ge 2 ] || die "-o needs a folder"; out=$2; shift 2 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || { usage >&2; die "give the ganctl program and its plugin path"; }
ganctl=$1
export GANCTL_PLUGIN_PATH=$2
unset GANCTL_CONFIG
case $iterations in '' | *[!0-9]*) die "-n takes a whole number" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number" ;; esac
[ "$warmup" -lt "$((iterations - 1))" ] || die "-w must be below -n - 1"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program"
[ -z "$config" ] || [ -r "$config" ] || die "cannot read the configuration $config"
if [ -n "$out" ]; then
    mkdir -p "$out" || die "cannot make $out"
    work=$(cd "$out" && pwd)
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/bf16-bench.XXXXXX") || die "cannot make a temporary folder"
    trap 'rm -rf "$work"' EXIT
fi
run_args=("${sets[@]}" -s backend.threads="$threads")
[ -z "$config" ] || run_args=(-c "$config" "${run_args[@]}")

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
# shellcheck source=bench/ganctl_rate.sh
. "$(cd "$(dirname "$0")" && pwd)/ganctl_rate.sh"
fp32=$(ganctl_rate fp32 -s backend.gemm="$gemm" --precision fp32)
bf16=$(ganctl_rate bf16 -s backend.gemm="$gemm" --precision bf16 -s precision.level=O2)
staged=$(ganctl_rate bf16-openblas -s backend.gemm=openblas --precision bf16 -s precision.level=O2)
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

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
