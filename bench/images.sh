#!/bin/bash
# SPDX-License-Identifier: MIT
# images.sh — times the image configuration (etc/fashion-mnist.conf, the dcgan pair) in
# ganctl FP32, ganctl BF16 O2 and the same networks and step in PyTorch
# (bench/reference/torch_dcgan.py), one after the other in one invocation, and prints the ratios.
#
#   bench/images.sh [options] GANCTL PLUGIN_PATH
# See bench/README.md for the measurements.

set -u

usage() {
    cat <<'EOF'
usage: bench/images.sh [options] GANCTL PLUGIN_PATH
  Times N iterations of the image configuration: ganctl in FP32 and in BF16 O2 (each
  with backend.gemm as given, "auto" by default), ganctl in FP32 on the OpenBLAS path
  (im2col + sgemm) for reference, and, when a Python with torch is found, PyTorch with
  the same networks, batch, n_critic and thread count. Rates are over the iterations
  after the warm-up in every program (ganctl's from its metrics.csv times, so the
  start-up and the final evaluation are left out).
  GANCTL       the ganctl program (build tree: BUILD/cli/ganctl)
  PLUGIN_PATH  colon-separated folders with backend-cpu.so, model-dcgan.so, the
               loss-*.so and scaler-*.so modules
options:
  -c FILE        the configuration (default: etc/fashion-mnist.conf beside this script)
  -s KEY=VALUE   a further ganctl setting; repeatable
  -n N           iterations (default 30)
  -w W           untimed warm-up iterations, part of N (default 3)
  -t T           threads, the same in every program (default 1)
  --gemm PATH    backend.gemm of the FP32 and BF16 runs (default auto)
  --python PY    the Python to run bench/reference/torch_dcgan.py with (default: the first of
                 $PYTHON, python3, /usr/bin/python3 that imports torch)
  --torch-bf16   also time PyTorch under BF16 autocast
  --no-torch     time ganctl alone
  -o DIR         keep the runs' files in DIR (default: a temporary folder, removed)
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/bench_lib.sh
. "$here/lib/bench_lib.sh"

config=$here/../etc/fashion-mnist.conf
sets=()
iterations=30
warmup=3
threads=1
gemm=auto
python=
torch_bf16=0
no_torch=0
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -w | -t | --gemm | --python | --no-torch | -o) bench_option "$@"; shift "$bench_used" ;;
    --torch-bf16) torch_bf16=1; shift ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
unset GANCTL_CONFIG
case $iterations in '' | *[!0-9]*) die "-n takes a whole number" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number" ;; esac
[ "$threads" -ge 1 ] || die "-t must be at least 1"
[ "$warmup" -lt "$((iterations - 1))" ] || die "-w must be below -n - 1, so that something is timed"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program"
[ -r "$config" ] || die "cannot read the configuration $config"

bench_work images-bench

run_args=(-c "$config" "${sets[@]}" -s backend.threads="$threads")
"$ganctl" "${run_args[@]}" --print-config >"$work/config.conf" 2>"$work/config.err" ||
    die "ganctl --print-config failed: $(cat "$work/config.err")"
awk -f "$here/lib/flat_config.awk" "$work/config.conf" >"$work/config.flat"
[ "$(get generator.model.name)" = dcgan ] && [ "$(get critic.model.name)" = dcgan ] ||
    die "both networks must be the dcgan model"
[ "$(get data.name)" = fashion-mnist ] || die "the image benchmark trains fashion-mnist"
batch=$(get data.batch_size)
n_critic=$(get critic.iterations)
width=$(get critic.model.width)
depth=$(get critic.model.depth)

load_before=$(bench_load)

# shellcheck source=bench/lib/ganctl_rate.sh
. "$here/lib/ganctl_rate.sh"

fp32=$(ganctl_rate fp32 -s backend.gemm="$gemm" --precision fp32)
bf16=$(ganctl_rate bf16 -s backend.gemm="$gemm" --precision bf16 -s precision.level=O2)
blas=$(ganctl_rate fp32-openblas -s backend.gemm=openblas --precision fp32)
backend_line=$(grep -m1 'backend: cpu' "$work/bf16.err" | sed 's/^ganctl: backend: //')

t_rate= t_bf16= torch_why=
if [ $no_torch -eq 1 ]; then
    torch_why="not run (--no-torch)"
else
    if [ -z "$python" ]; then
        for p in ${PYTHON:-} python3 /usr/bin/python3; do
            if "$p" -c 'import torch' >/dev/null 2>&1; then python=$p; break; fi
        done
    fi
    if [ -z "$python" ]; then
        torch_why="no Python here imports torch (Debian: apt-get install python3-torch)"
    else
        torch_args=(--data "$(get data.path)" --batch "$batch" --z-dim "$(get generator.z_dim)"
            --width "$width" --depth "$depth" --leaky-slope "$(get critic.model.leaky_slope)"
            --lambda "$(get loss.gradient-penalty.lambda)" --lr "$(get critic.optimizer.lr)"
            --beta1 "$(get critic.optimizer.beta1)" --beta2 "$(get critic.optimizer.beta2)"
            --lr-decay "$(get critic.optimizer.lr_decay)" --n-critic "$n_critic"
            --iterations "$iterations" --warmup "$warmup" --seed "$(get run.seed)"
            --threads "$threads")
        echo "$python $here/reference/torch_dcgan.py ${torch_args[*]}" >"$work/torch.cmd"
        if "$python" "$here/reference/torch_dcgan.py" "${torch_args[@]}" --summary "$work/torch.summary" \
            >"$work/torch.out" 2>&1; then
            t_rate=$(sed -n 's/^it_per_s=//p' "$work/torch.summary")
            t_version=$(sed -n 's/^torch_version=//p' "$work/torch.summary")
        else
            torch_why="failed: $(tail -n 2 "$work/torch.out")"
        fi
        if [ $torch_bf16 -eq 1 ] && [ -n "$t_rate" ] &&
            "$python" "$here/reference/torch_dcgan.py" "${torch_args[@]}" --autocast bf16 \
                --summary "$work/torch-bf16.summary" >"$work/torch-bf16.out" 2>&1; then
            t_bf16=$(sed -n 's/^it_per_s=//p' "$work/torch-bf16.summary")
        fi
    fi
fi
load_after=$(bench_load)

echo "image benchmark: $config${sets[*]:+ with ${sets[*]}}"
echo "  dcgan width $width depth $depth, batch $batch, n_critic $n_critic; $iterations iterations, $warmup untimed, $threads thread(s)"
echo "  load average before $load_before, after $load_after (figures vary with it; compare ratios)"
echo "ganctl:  $backend_line"
echo "  FP32, gemm $gemm:        ${fp32:-?} it/s"
echo "  BF16 O2, gemm $gemm:     ${bf16:-?} it/s"
echo "  FP32, gemm openblas:  ${blas:-?} it/s (im2col + sgemm)"
if [ -n "$t_rate" ]; then
    echo "PyTorch: torch $t_version, $threads thread(s) ($(cat "$work/torch.cmd"))"
    echo "  FP32:                 $t_rate it/s"
    [ -z "$t_bf16" ] || echo "  BF16 autocast:        $t_bf16 it/s"
else
    echo "PyTorch: $torch_why"
fi
echo "ratios:  BF16 O2 / FP32 = $(ratio "$bf16" "$fp32") (aim 2x)"
echo "         FP32 gemm $gemm / FP32 openblas = $(ratio "$fp32" "$blas")"
if [ -n "$t_rate" ]; then
    echo "         ganctl FP32 / PyTorch FP32 = $(ratio "$fp32" "$t_rate") (aim 1.2x)"
    echo "         ganctl BF16 O2 / PyTorch FP32 = $(ratio "$bf16" "$t_rate")"
fi
[ -z "$out" ] || echo "files: $work"
