# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034 # the variables it sets are the sourcing script's
# bench/lib/bench_lib.sh — sourced by bench/toy.sh, bf16.sh, fp8.sh, images.sh and
# gpu.sh: the command line they share, so that the same option means the same thing in
# each.
#
# The sourcing script defines usage and, before parsing, the defaults of the variables
# its options set: config (-c), sets (-s, an array), iterations (-n), threads (-t),
# warmup (-w), rounds (-r), python (--python), no_torch (--no-torch), gemm (--gemm),
# out (-o) and as_avx2 (--as-avx2).

# The script's own name in its messages, e.g. "toy.sh".
bench_name=${0##*/}

die() {
    echo "$bench_name: $*" >&2
    exit 2
}

# bench_option "$@": takes the shared option at $1 (and its value) and sets bench_used
# to the number of words it took. Each script lists in its own case the options it
# accepts and hands only those here, so its command line stays its own.
bench_option() {
    bench_used=2
    case $1 in
    -c) [ $# -ge 2 ] || die "-c needs a file"; config=$2 ;;
    -s) [ $# -ge 2 ] || die "-s needs KEY=VALUE"; sets+=(-s "$2") ;;
    -n) [ $# -ge 2 ] || die "-n needs a number"; iterations=$2 ;;
    -t) [ $# -ge 2 ] || die "-t needs a number"; threads=$2 ;;
    -w) [ $# -ge 2 ] || die "-w needs a number"; warmup=$2 ;;
    -r) [ $# -ge 2 ] || die "-r needs a number of rounds"; rounds=$2 ;;
    --gemm) [ $# -ge 2 ] || die "--gemm needs auto, openblas or onednn"; gemm=$2 ;;
    --python) [ $# -ge 2 ] || die "--python needs a program"; python=$2 ;;
    -o) [ $# -ge 2 ] || die "-o needs a folder"; out=$2 ;;
    --no-torch) no_torch=1; bench_used=1 ;;
    --as-avx2) as_avx2=1; bench_used=1 ;;
    *) bench_unknown "$1" ;;
    esac
}

# bench_as_avx2: after the options, with --as-avx2, makes every library of the run act as
# on an AVX2-only CPU (AVX2 and F16C, no AVX-512, no BF16 dot product), so that the
# paths of such a CPU are measured on a wider one: OpenBLAS's Haswell kernel (ganctl,
# PyTorch and bench/limits take it from OPENBLAS_CORETYPE), oneDNN held to AVX2 (ganctl's
# and PyTorch's, through DNNL_MAX_CPU_ISA), the CPU backend's kernels at the "f16c" level
# and its test hook taking the CPU for one without a BF16 dot product. The figures are
# that CPU's paths at this CPU's clock, caches and memory: they stand for a real AVX2
# host only as far as those agree, and are reported as acted.
# It sets limits_as, bench/limits' option, and backend_as, the setting that the scripts'
# `ganctl --backend cpu --version` takes so that it describes the level the runs use.
bench_as_avx2() {
    limits_as=()
    backend_as=()
    [ "${as_avx2:-0}" = 1 ] || return 0
    export OPENBLAS_CORETYPE=Haswell DNNL_MAX_CPU_ISA=AVX2 GANCTL_TEST_NO_BF16_DOT=1
    backend_as=(-s backend.vector=f16c)
    sets+=("${backend_as[@]}")
    limits_as=(--as-avx2)
}

bench_unknown() {
    usage >&2
    die "unknown option $1"
}

# bench_operands "$@": the two words after the options, the ganctl program and the
# plugin path every run of it searches.
bench_operands() {
    [ $# -eq 2 ] || { usage >&2; die "give the ganctl program and its plugin path"; }
    ganctl=$1
    export GANCTL_PLUGIN_PATH=$2
}

# bench_work PREFIX: sets work to -o's folder, made if missing, or else to a new
# temporary folder named after PREFIX that is removed when the script exits.
bench_work() {
    if [ -n "$out" ]; then
        mkdir -p "$out" || die "cannot make $out"
        work=$(cd "$out" && pwd)
    else
        work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || die "cannot make a temporary folder"
        trap 'rm -rf "$work"' EXIT
    fi
}

# bench_load: the 1, 5 and 15 minute load averages, printed beside the figures because
# the rates vary with what else runs on the cores.
bench_load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null; }

# get KEY: KEY's value in $work/config.flat, the settings in force flattened by
# bench/lib/flat_config.awk.
get() { awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); exit }' "$work/config.flat"; }
