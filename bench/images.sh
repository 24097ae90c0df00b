#!/bin/bash
# SPDX-License-Identifier: MIT
# images.sh — times the image configuration (etc/fashion-mnist.conf, the dcgan pair) in
# ganctl FP32, ganctl BF16 O2 and the same networks and step in PyTorch
# (bench/reference/torch_dcgan.py), after this host's limits (bench/limits), in turn for
# several rounds in one invocation, and reports each ratio as the median over the rounds
# with its spread.
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
  start-up and the final evaluation are left out). Each round runs bench/limits (this
  host's oneDNN convolution rates at the networks' shapes, sgemm's and, with a BF16 dot
  product, oneDNN's BF16 rates) and then every configuration, one after the other; a
  ratio is taken within a round, and the table gives each figure's median over the
  rounds and its spread (min-max). A target counts as met when the median meets it.
  GANCTL       the ganctl program (build tree: BUILD/cli/ganctl)
  PLUGIN_PATH  colon-separated folders with backend-cpu.so, model-dcgan.so, the
               loss-*.so and scaler-*.so modules
options:
  -c FILE        the configuration (default: etc/fashion-mnist.conf beside this script)
  -s KEY=VALUE   a further ganctl setting; repeatable
  -n N           iterations (default 30)
  -w W           untimed warm-up iterations, part of N (default 3)
  -t T           threads, the same in every program (default 1)
  -r ROUNDS      rounds of every configuration in turn (default 3, at least 3)
  --gemm PATH    backend.gemm of the FP32 and BF16 runs (default auto)
  --limits PATH  the bench/limits program (default: ../bench/limits beside GANCTL's
                 folder; make bench/limits builds it)
  --python PY    the Python to run bench/reference/torch_dcgan.py with (default: the first of
                 $PYTHON, python3, /usr/bin/python3 that imports torch)
  --torch-bf16   also time PyTorch under BF16 autocast
  --no-torch     time ganctl alone
  --as-avx2      act as an AVX2-only CPU on a wider one (OpenBLAS Haswell, oneDNN held
                 to AVX2, backend.vector = f16c, no BF16 dot product): that kind's paths,
                 measured at this CPU's clock and caches (bench/README.md)
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
rounds=3
gemm=auto
limits=
python=
torch_bf16=0
no_torch=0
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -w | -t | -r | --gemm | --python | --no-torch | --as-avx2 | -o) bench_option "$@"; shift "$bench_used" ;;
    --limits) [ $# -ge 2 ] || die "--limits needs a path"; limits=$2; shift 2 ;;
    --torch-bf16) torch_bf16=1; shift ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
bench_as_avx2
unset GANCTL_CONFIG
case $iterations in '' | *[!0-9]*) die "-n takes a whole number" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number" ;; esac
case $rounds in '' | *[!0-9]*) die "-r takes a whole number" ;; esac
[ "$threads" -ge 1 ] || die "-t must be at least 1"
[ "$rounds" -ge 3 ] || die "-r must be at least 3: a median of fewer rounds does not beat the noise"
[ "$warmup" -lt "$((iterations - 1))" ] || die "-w must be below -n - 1, so that something is timed"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program"
[ -r "$config" ] || die "cannot read the configuration $config"
if [ -z "$limits" ]; then
    limits=$(cd "$(dirname "$(command -v "$ganctl")")" && pwd)/../bench/limits
fi

bench_work images-bench
# A kept folder may hold an earlier invocation's runs; none of its files may mix into this one.
[ -z "$out" ] || rm -rf "$work"/round-* "$work/figures"
# shellcheck source=bench/lib/rounds.sh
. "$here/lib/rounds.sh"

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

z_dim=$(get generator.z_dim)
g_width=$(get generator.model.width)
g_depth=$(get generator.model.depth)

# ------------------------------------------------------------------ FLOPs per iteration
# The dcgan pair (plugins/models/dcgan.c) on Fashion-MNIST's 1×28×28 images: the critic
# is `depth` 5×5 stride-2 convolutions with padding 2, channels 1 → DIM → 2·DIM → ...,
# sides 28 → 14 → 7 → 4, then a fully connected layer to one score; the generator a
# fully connected layer from z to the critic's last stage, then the transposes of the
# same convolutions back to 1×28×28. Each layer's three products (forward, input
# gradient, weight gradient) cost c = 2·N·O·Ho·Wo·C·25 FLOPs for a convolution, 2·B·in·out
# for a fully connected layer; a critic step does P_G + 10·P_D − 2·F_D − O_D of them, a
# generator step 3·P_G − F_G + 2·P_D (P a network's Σ c, F its first layer's, O the
# critic's last layer's). bench/lib/step_flops.awk derives each term, and gives the FLOPs
# an iteration spends at each shape and direction, which bench/limits times:
# 2.145 GFLOP a critic step, 1.010 a generator step, 11.73 GFLOP an iteration for
# etc/fashion-mnist.conf (DIM 16, depth 3, z 128, B 64, n_critic 5).
dcgan_layers() { # NET WIDTH DEPTH
    awk -v net="$1" -v w="$2" -v d="$3" -v b="$batch" -v z="$z_dim" 'BEGIN {
        s[0] = 28; ch[0] = 1
        for (i = 1; i <= d; i++) { s[i] = int((s[i - 1] - 1) / 2) + 1; ch[i] = w * 2 ^ (i - 1) }
        top = ch[d] * s[d] * s[d]
        if (net == "D") {
            for (i = 0; i < d; i++) print "D conv", b, ch[i], s[i], s[i], ch[i + 1], 5, 2, 2
            print "D linear", b, top, 1
        } else {
            print "G linear", b, z, top
            for (i = d - 1; i >= 0; i--) print "G deconv", b, ch[i], s[i], s[i], ch[i + 1], 5, 2, 2
        }
    }'
}
{ dcgan_layers G "$g_width" "$g_depth"; dcgan_layers D "$width" "$depth"; } >"$work/layers.txt"
awk -v n_critic="$n_critic" -f "$here/lib/step_flops.awk" "$work/layers.txt" >"$work/needs.txt" ||
    die "cannot count the FLOPs of an iteration"
read -r _ flop_critic flop_generator flop_iter < <(grep '^flops ' "$work/needs.txt")
gemm_shapes=$(awk '$1 == "need" && $2 == "gemm" { printf "%s%s", sep, $3; sep = "," }' "$work/needs.txt")
conv_args=()
while read -r spec; do conv_args+=(--conv "$spec"); done < <(awk '$1 == "need" && $2 == "conv" && !seen[$4]++ { print $4 }' "$work/needs.txt")

load_before=$(bench_load)

# shellcheck source=bench/lib/ganctl_rate.sh
. "$here/lib/ganctl_rate.sh"

"$ganctl" --backend cpu "${backend_as[@]}" -s backend.threads="$threads" -s backend.gemm="$gemm" --version \
    >"$work/version.txt" 2>&1 || die "ganctl cannot create its cpu backend: $(cat "$work/version.txt")"
kernel=$(sed -n 's/^[^;]* kernel \([A-Za-z0-9_]*\).*/\1/p' "$work/version.txt" | head -n 1)
kargs=(--kernel auto)
[ -z "$kernel" ] || [ "$kernel" = unknown ] || kargs=(--kernel "$kernel")
limits_why=
[ -x "$limits" ] || limits_why="no bench/limits at $limits (make bench/limits in the build folder, or pass --limits)"

t_rate= t_bf16= t_version= torch_why=
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
        torch_args=(--data "$(get data.path)" --batch "$batch" --z-dim "$z_dim"
            --width "$width" --depth "$depth" --leaky-slope "$(get critic.model.leaky_slope)"
            --lambda "$(get loss.gradient-penalty.lambda)" --lr "$(get critic.optimizer.lr)"
            --beta1 "$(get critic.optimizer.beta1)" --beta2 "$(get critic.optimizer.beta2)"
            --lr-decay "$(get critic.optimizer.lr_decay)" --n-critic "$n_critic"
            --iterations "$iterations" --warmup "$warmup" --seed "$(get run.seed)"
            --threads "$threads")
        echo "$python $here/reference/torch_dcgan.py ${torch_args[*]}" >"$work/torch.cmd"
    fi
fi
# torch_rate DIR NAME [ARGS...]: one PyTorch run's it/s, empty when it failed (torch_failed
# then says why).
torch_failed=
torch_rate() {
    local dir=$1 name=$2
    shift 2
    if "$python" "$here/reference/torch_dcgan.py" "${torch_args[@]}" "$@" \
        --summary "$dir/$name.summary" >"$dir/$name.out" 2>&1; then
        t_version=$(sed -n 's/^torch_version=//p' "$dir/$name.summary")
        sed -n 's/^it_per_s=//p' "$dir/$name.summary"
    else
        echo "failed in ${dir##*/} ($name): $(tail -n 2 "$dir/$name.out")" >"$dir/$name.failed"
    fi
}

# share NAME RATE LIMIT: RATE it/s as a share of LIMIT GFLOP/s, this round's NAME.
share() {
    round_ratio "$1" "$(awk -v f="$flop_iter" -v r="${2:-}" 'BEGIN { if (r > 0) printf "%.6f", f * r * 1e-9 }')" "$3"
}

# ------------------------------------------------------------------ the rounds
for r in $(seq 1 "$rounds"); do
    dir=$work/round-$r
    mkdir -p "$dir"
    lim32= lim16=
    if [ -z "$limits_why" ]; then
        "$limits" "${kargs[@]}" "${limits_as[@]}" --threads "$threads" --gemm "$gemm_shapes" "${conv_args[@]}" \
            >"$dir/limits.txt" 2>"$dir/limits.err" ||
            limits_why="bench/limits failed: $(tail -n 1 "$dir/limits.err")"
        if [ -z "$limits_why" ]; then
            lim32=$(limit_rate "$work/needs.txt" "$dir/limits.txt" F32)
            lim16=$(limit_rate "$work/needs.txt" "$dir/limits.txt" BF16)
        fi
    fi
    round_put limit_f32 "$lim32"
    round_put limit_bf16 "$lim16"
    fp32=$(ganctl_rate "round-$r/fp32" -s backend.gemm="$gemm" --precision fp32)
    bf16=$(ganctl_rate "round-$r/bf16" -s backend.gemm="$gemm" --precision bf16 -s precision.level=O2)
    blas=$(ganctl_rate "round-$r/fp32-openblas" -s backend.gemm=openblas --precision fp32)
    round_put fp32 "$fp32"
    round_put bf16 "$bf16"
    round_put blas "$blas"
    round_ratio bf16_fp32 "$bf16" "$fp32"
    round_ratio fp32_blas "$fp32" "$blas"
    share fp32_share "$fp32" "$lim32"
    # BF16 O2 is bound by oneDNN's BF16 kernels where the backend takes them, else by
    # the FP32 ones it is staged through: both shares are kept, the report gives the one
    # of the path the run's line names
    share bf16_share "$bf16" "$lim16"
    share bf16_share32 "$bf16" "$lim32"
    round_ratio limit_bf16_f32 "$lim16" "$lim32"
    if [ -z "$torch_why" ]; then
        t_rate=$(torch_rate "$dir" torch)
        round_put torch "$t_rate"
        round_ratio fp32_torch "$fp32" "$t_rate"
        round_ratio bf16_torch "$bf16" "$t_rate"
        share torch_share "$t_rate" "$lim32"
        if [ $torch_bf16 -eq 1 ]; then
            t_bf16=$(torch_rate "$dir" torch-bf16 --autocast bf16)
            round_put torch_bf16 "$t_bf16"
            round_ratio torch_bf16_fp32 "$t_bf16" "$t_rate"
        fi
        if [ -z "$t_version" ] && [ -r "$dir/torch.summary" ]; then
            t_version=$(sed -n 's/^torch_version=//p' "$dir/torch.summary")
        fi
    fi
done
load_after=$(bench_load)
backend_line=$(grep -m1 'backend: cpu' "$work/round-1/bf16.err" | sed 's/^ganctl: backend: //')
torch_failed=$(cat "$work"/round-*/*.failed 2>/dev/null | head -n 1)

# ------------------------------------------------------------------ report
lim1=$work/round-1/limits.txt
host_kind "$lim1"
case $kind in
AMX-BF16) aim_torch=1.8; aim_bf16=2.0 ;;
"AVX512-BF16, no AMX") aim_torch=1.8; aim_bf16=1.6 ;;
*) aim_torch=1.2; aim_bf16=1.0 ;;
esac
# Where the backend keeps BF16 convolutions off oneDNN's BF16 kernels (none, or slower
# here than its FP32 ones: onednn_probe.c), BF16 O2 runs on the FP32 kernels with 16-bit
# storage, and its aim is FP32's speed: 16-bit never slower.
bf16_note=
case $backend_line in
*"convolutions staged"* | *"BF16: products without oneDNN"*)
    bf16_limit=bf16_share32
    bf16_bound="the FP32 limit"
    ratio16=$(round_median limit_bf16_f32)
    if [ "$aim_bf16" != 1.0 ]; then
        why=
        [ -z "$ratio16" ] || why=": oneDNN's BF16 kernels run at $(awk -v r="$ratio16" \
            'BEGIN { printf "%.2f", r }') of its FP32 ones at the shapes"
        bf16_note="; the kind's ${aim_bf16}x is out of reach here$why, so BF16 is staged through FP32 and aims at 1.0x"
        aim_bf16=1.0
    fi
    ;;
*"BF16: oneDNN"*) bf16_limit=bf16_share; bf16_bound="the BF16 limit" ;;
*) bf16_limit=bf16_share; bf16_bound="the BF16 limit (the backend's line names no BF16 path)" ;;
esac

echo "image benchmark: $config${sets[*]:+ with ${sets[*]}}"
echo "  dcgan width $width depth $depth, batch $batch, n_critic $n_critic; $iterations iterations, $warmup untimed, $threads thread(s)"
echo "  $rounds rounds, each: bench/limits, ganctl FP32, BF16 O2, FP32 openblas${t_rate:+, PyTorch FP32}$([ $torch_bf16 -eq 0 ] || [ -z "$t_rate" ] || echo ', PyTorch BF16'); load average before $load_before, after $load_after"
if [ -r "$lim1" ]; then
    echo "host:    $(sed -n 's/^cpu //p' "$lim1"); $units (kind: $kind)"
else
    echo "host:    $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1) (bench/limits not run)"
fi
echo "ganctl:  $backend_line"
if [ -z "$torch_why" ]; then
    echo "PyTorch: torch ${t_version:-?}, $threads thread(s) ($(cat "$work/torch.cmd"))"
    [ -z "$torch_failed" ] || echo "  $torch_failed"
else
    echo "PyTorch: $torch_why"
fi
flops_line FLOPs:
if [ -z "$limits_why" ]; then
    files=$(for r in $(seq 1 "$rounds"); do echo "$work/round-$r/limits.txt"; done)
    limits_libraries "$lim1"
    echo "  FP32 GFLOP/s, median of the rounds: oneDNN's convolutions in the layouts it chose (N,C,H,W,O,K,S,P),"
    echo "  sgemm for the fully connected layers (m x n x k, A and B transposed or not):"
    # shellcheck disable=SC2086 # the folder names are the script's own
    limit_shapes F32 "$work/needs.txt" $files | limit_lines
    if grep -q '^conv BF16 [^ ]* [^ ]* [0-9]' "$lim1"; then
        echo "  BF16 GFLOP/s (oneDNN's convolutions and matmul):"
        # shellcheck disable=SC2086
        limit_shapes BF16 "$work/needs.txt" $files | limit_lines
    else
        echo "  BF16: $(sed -n 's/^conv BF16 [^ ]* [^ ]* - //p' "$lim1" | head -n 1)"
    fi
else
    echo "limits:  not measured: $limits_why"
fi
echo
round_header
round_row "ganctl FP32, gemm $gemm, it/s" fp32 rate
round_row "ganctl BF16 O2, gemm $gemm, it/s" bf16 rate
round_row "ganctl FP32, gemm openblas (im2col), it/s" blas rate
round_row "PyTorch FP32 it/s" torch rate
round_row "PyTorch BF16 autocast it/s" torch_bf16 rate
round_row "BF16 O2 / FP32" bf16_fp32 ratio "$aim_bf16"
round_row "FP32 gemm $gemm / FP32 gemm openblas" fp32_blas ratio
round_row "ganctl FP32 / PyTorch FP32" fp32_torch ratio "$aim_torch"
round_row "ganctl BF16 O2 / PyTorch FP32" bf16_torch ratio
round_row "PyTorch BF16 autocast / PyTorch FP32" torch_bf16_fp32 ratio
round_row "limit: FP32 at the shapes, GFLOP/s" limit_f32 gflops
round_row "limit: BF16 at the shapes, GFLOP/s" limit_bf16 gflops
round_row "ganctl FP32 share of the FP32 limit" fp32_share share
round_row "limit: BF16 / FP32" limit_bf16_f32 ratio
round_row "ganctl BF16 O2 share of $bf16_bound" "$bf16_limit" share
round_row "PyTorch FP32 share of the FP32 limit" torch_share share
echo
echo "aims (issue 26, $kind): BF16 O2 / FP32 >= ${aim_bf16}x, ganctl FP32 / PyTorch >= ${aim_torch}x; met when the median meets them$bf16_note"
[ -z "$out" ] || echo "files: $work"
