#!/bin/bash
# SPDX-License-Identifier: MIT
# toy.sh — times N iterations of ganctl's WGAN-GP toy training, the same model and step in
# PyTorch (bench/reference/torch_toy.py) and this host's GEMM limits (bench/limits), in
# turn for several rounds in one invocation, and reports each figure and ratio as the
# median over the rounds with its spread.
#
# Builds nothing: give it a built or installed ganctl and the folders of its plugins.
#   bench/toy.sh [options] GANCTL PLUGIN_PATH
# See bench/README.md for what each figure means and the measurements.

set -u

usage() {
    cat <<'EOF'
usage: bench/toy.sh [options] GANCTL PLUGIN_PATH
  Times N training iterations of a toy configuration in ganctl (whole run, from its
  summary.json) and, when a Python with torch is found, the same model and step in
  PyTorch with the same OpenBLAS kernel and thread count, after this host's limits
  (bench/limits: sgemm's rate at the shapes the run's products have, and oneDNN's BF16
  matmul's where the CPU has a BF16 dot product; a BF16 run is bound by the latter where
  the backend's line names oneDNN for BF16), in turn for ROUNDS rounds: limits,
  ganctl, PyTorch, limits, ganctl, PyTorch, ... Each ratio is taken within a round;
  the table gives each figure's median over the rounds and its spread (min-max), and
  a target counts as met when the median meets it.
  GANCTL       the ganctl program (build tree: BUILD/cli/ganctl; installed: ganctl)
  PLUGIN_PATH  colon-separated folders with backend-cpu.so, model-mlp.so, the
               loss-*.so and scaler-*.so modules (build tree: BUILD/backends/cpu/.libs:
               BUILD/plugins/models/.libs:BUILD/plugins/losses/.libs:
               BUILD/plugins/scalers/.libs)
options:
  -c FILE        a ganctl configuration (default: none, ganctl's defaults: the demo)
  -s KEY=VALUE   a further ganctl setting; repeatable
  -n N           iterations, the same in both (default 200)
  -t T           threads, the same in both (default 1)
  -w W           PyTorch's untimed warm-up iterations, part of its N (default 10)
  -r ROUNDS      rounds of limits, ganctl and PyTorch in turn (default 3, at least 3)
  --limits PATH  the bench/limits program (default: ../bench/limits beside GANCTL's
                 folder; make bench/limits builds it)
  --sgemm PATH   also run this bench/sgemm once, before the rounds, and print its
                 256x512x512 and 1024^3 rates with the kernel ganctl uses
  --python PY    the Python to run bench/reference/torch_toy.py with (default: the first of
                 $PYTHON, python3, /usr/bin/python3 that imports torch)
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

config=
sets=()
iterations=200
threads=1
warmup=10
rounds=3
limits=
sgemm=
python=
no_torch=0
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -t | -w | -r | --python | --no-torch | --as-avx2 | -o) bench_option "$@"; shift "$bench_used" ;;
    --limits) [ $# -ge 2 ] || die "--limits needs a path"; limits=$2; shift 2 ;;
    --sgemm) [ $# -ge 2 ] || die "--sgemm needs a path"; sgemm=$2; shift 2 ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
bench_as_avx2
# Only the installed ganctl.conf (which holds the defaults), -c and -s decide the run.
unset GANCTL_CONFIG

case $iterations in '' | *[!0-9]*) die "-n takes a whole number of iterations" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number of threads" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number of iterations" ;; esac
case $rounds in '' | *[!0-9]*) die "-r takes a whole number of rounds" ;; esac
[ "$rounds" -ge 3 ] || die "-r must be at least 3: a median of fewer rounds does not beat the noise"
[ "$threads" -ge 1 ] || die "-t must be at least 1"
[ "$warmup" -lt "$iterations" ] || die "-w must be below -n, so that PyTorch times something"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program; build ganctl first (make cli/ganctl in the build folder)"
[ -z "$config" ] || [ -r "$config" ] || die "cannot read the configuration $config"
if [ -z "$limits" ]; then
    limits=$(cd "$(dirname "$(command -v "$ganctl")")" && pwd)/../bench/limits
fi

bench_work toy-bench
# A kept folder may hold an earlier invocation's runs; none of its files may mix into this one.
[ -z "$out" ] || rm -rf "$work"/round-* "$work/figures" "$work/ganctl-run"
# shellcheck source=bench/lib/rounds.sh
. "$here/lib/rounds.sh"

cfg_args=()
[ -z "$config" ] || cfg_args=(-c "$config")
run_args=("${cfg_args[@]}" "${sets[@]}" -s backend.threads="$threads")

# ------------------------------------------------------------------ the settings in force
# --print-config writes every setting as libconfig groups; flatten them to KEY=VALUE.
"$ganctl" "${run_args[@]}" --print-config >"$work/config.conf" 2>"$work/config.err" ||
    die "ganctl --print-config failed: $(cat "$work/config.err")"
awk -f "$here/lib/flat_config.awk" "$work/config.conf" >"$work/config.flat"

data=$(get data.name)
batch=$(get data.batch_size)
z_dim=$(get generator.z_dim)
n_critic=$(get critic.iterations)
g_width=$(get generator.model.width)
g_depth=$(get generator.model.depth)
d_width=$(get critic.model.width)
d_depth=$(get critic.model.depth)
seed=$(get run.seed)
[ "$(get generator.model.name)" = mlp ] && [ "$(get critic.model.name)" = mlp ] ||
    die "both networks must be the mlp model for the toy benchmark"
[ "$(get backend.name)" = cpu ] || die "the toy benchmark compares CPU runs; use backend.name = cpu"

# ------------------------------------------------------------------ GEMM FLOPs per iteration
# A linear layer of `in` inputs and `out` outputs on a batch of B costs 2·B·in·out FLOPs
# in each of its products: the forward h·Wᵀ, the input gradient g·W and the weight
# gradient gᵀ·h. Let P be a network's Σ 2·B·in·out over its layers; F its first layer's
# term; O the critic's last layer's. Only the products the step needs are counted
# (bench/lib/step_flops.awk derives each term, product by product):
#   critic step     P_G + 10·P_D − 2·F_D − O_D
#   generator step  3·P_G − F_G + 2·P_D
#   iteration       n_critic critic steps and one generator step
# The paper's toy (widths 512, depth 3, z 2, B 256, n_critic 5): 2.960 GFLOP a critic
# step, 1.346 a generator step, 16.15 GFLOP an iteration. step_flops.awk also gives the
# FLOPs an iteration spends at each GEMM shape, which bench/limits times.
# The networks: depth hidden layers of `width` (the mlp model), toy data in 2-D.
mlp_layers() { # NET IN WIDTH DEPTH OUT
    awk -v net="$1" -v inp="$2" -v w="$3" -v d="$4" -v outp="$5" -v b="$batch" 'BEGIN {
        prev = inp
        for (i = 0; i < d; i++) { print net, "linear", b, prev, w; prev = w }
        print net, "linear", b, prev, outp
    }'
}
{ mlp_layers G "$z_dim" "$g_width" "$g_depth" 2; mlp_layers D 2 "$d_width" "$d_depth" 1; } \
    >"$work/layers.txt"
awk -v n_critic="$n_critic" -f "$here/lib/step_flops.awk" "$work/layers.txt" >"$work/needs.txt" ||
    die "cannot count the FLOPs of an iteration"
read -r _ flop_critic flop_generator flop_iter < <(grep '^flops ' "$work/needs.txt")
gemm_shapes=$(awk '$1 == "need" && $2 == "gemm" { printf "%s%s", sep, $3; sep = "," }' "$work/needs.txt")

# ------------------------------------------------------------------ the kernel and sgemm
"$ganctl" --backend cpu "${backend_as[@]}" -s backend.threads="$threads" --version >"$work/version.txt" 2>&1 ||
    die "ganctl cannot create its cpu backend: $(cat "$work/version.txt")"
backend_line=$(grep '^backend cpu' "$work/version.txt")
kernel=$(sed -n 's/^[^;]* kernel \([A-Za-z0-9_]*\).*/\1/p' "$work/version.txt" | head -n 1)
load_before=$(bench_load)
kargs=(--kernel auto)
[ -z "$kernel" ] || [ "$kernel" = unknown ] || kargs=(--kernel "$kernel")

limits_why=
[ -x "$limits" ] || limits_why="no bench/limits at $limits (make bench/limits in the build folder, or pass --limits)"

sgemm_line=
if [ -n "$sgemm" ]; then
    if [ -x "$sgemm" ]; then
        "$sgemm" --kernels "${kargs[1]}" --threads "$threads" >"$work/sgemm.txt" 2>&1
        sgemm_line=$(awk -v t="$threads" '$2 == t && ($1 == "256x512x512" || $1 == "1024x1024x1024") {
            printf "%s%s %s", sep, $1, $4; sep = ", " }' "$work/sgemm.txt")
        [ -n "$sgemm_line" ] || sgemm_line="failed: $(tail -n 1 "$work/sgemm.txt")"
    else
        sgemm_line="no program at $sgemm"
    fi
fi

# ------------------------------------------------------------------ ganctl
# A metrics.csv row after every iteration gives ganctl's rate over the iterations
# PyTorch times, beside the whole run's: from the end of PyTorch's warm-up to the end of
# the last iteration but one, since the last holds the final evaluation, which ganctl
# times and PyTorch does not (torch_toy.py stops its clock before its own).
log_every=1
json_num() { sed -n "s/^ *\"$1\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" "$summary" | sed -n "${2:-1}p"; }
# run_ganctl DIR: one run; sets g_rate, g_steady, g_tail and the quality figures.
run_ganctl() {
    local rc
    "$ganctl" "${run_args[@]}" -s run.iterations="$iterations" -s run.eval_every=0 \
        -s run.image_every=0 -s run.checkpoint_every=0 -s run.log_every="$log_every" \
        -s run.metrics_time=true -s run.dir="$1/ganctl-run" >"$1/ganctl.out" 2>"$1/ganctl.err"
    rc=$?
    [ $rc -eq 0 ] || die "ganctl failed (exit $rc): $(tail -n 3 "$1/ganctl.err")"
    summary=$1/ganctl-run/summary.json
    g_rate=$(json_num iterations_per_s)
    g_modes=$(json_num modes_covered 1)
    g_hq=$(json_num high_quality_pct 1)
    g_sw1=$(json_num sliced_w1 1)
    g_total=$(json_num modes_total 1)
    # The run's end after its last row: the pictures (curves.png; final.png, the critic
    # on its lattice) and the checkpoint, which the whole-run rate counts and the span
    # does not. The last evaluation comes before the last row, in both.
    g_tail=$(awk -F, -v wall="$(json_num wall_time_s)" '
        NR == 1 { if ($2 != "time_s") exit; next } { t = $2 }
        END { if (t != "" && wall ~ /^[0-9.eE+-]+$/) printf "%.6f", wall - t }' "$1/ganctl-run/metrics.csv")
    g_steady=$(awk -F, -v w="$warmup" -v n="$((iterations - 1))" '
        NR == 1 { if ($2 != "time_s") exit; next }
        $1 == w { a = $2 } $1 == n { b = $2 }
        END { if (w > 0 && n > w && b > a) printf "%.6f", (n - w) / (b - a) }' "$1/ganctl-run/metrics.csv")
}

# ------------------------------------------------------------------ PyTorch
t_rate=
t_modes= t_total= t_hq= t_sw1=
torch_why=
if [ $no_torch -eq 1 ]; then
    torch_why="not run (--no-torch)"
else
    if [ -z "$python" ]; then
        for p in ${PYTHON:-} python3 /usr/bin/python3; do
            if "$p" -c 'import torch' >/dev/null 2>&1; then python=$p; break; fi
        done
    fi
    if [ -z "$python" ]; then
        torch_why="not measured: no Python here imports torch (tried ${PYTHON:+$PYTHON, }python3 and /usr/bin/python3; Debian: apt-get install python3-torch)"
    elif ! "$python" -c 'import torch' >/dev/null 2>&1; then
        torch_why="not measured: $python cannot import torch"
    else
        same() { [ "$(get "generator.$1")" = "$(get "critic.$1")" ]; }
        for k in model.activation model.leaky_slope model.init optimizer.beta1 optimizer.beta2 \
                 optimizer.eps optimizer.weight_decay optimizer.clip_norm optimizer.lr_decay; do
            same "$k" || torch_why="not measured: generator.$k differs from critic.$k, which torch_toy.py does not model"
        done
        [ "$(get loss.terms)" = "[wasserstein, gradient-penalty]" ] ||
            torch_why="not measured: loss.terms is $(get loss.terms); torch_toy.py trains wasserstein + gradient-penalty"
        [ "$(get loss.gradient-penalty.one_sided)" = false ] ||
            torch_why="not measured: torch_toy.py has no one-sided penalty"
        mode=$(get precision.mode)
        [ -z "$mode" ] || [ "$mode" = fp32 ] ||
            torch_why="not measured: precision.mode is $mode; torch_toy.py trains in FP32"
    fi
    if [ -z "$torch_why" ]; then
        torch_args=(--data "$data" --batch "$batch" --z-dim "$z_dim"
            --g-width "$g_width" --g-depth "$g_depth" --d-width "$d_width" --d-depth "$d_depth"
            --activation "$(get generator.model.activation)"
            --leaky-slope "$(get generator.model.leaky_slope)"
            --init "$(get generator.model.init)"
            --lambda "$(get loss.gradient-penalty.lambda)"
            --gp-target "$(get loss.gradient-penalty.target)"
            --g-lr "$(get generator.optimizer.lr)" --d-lr "$(get critic.optimizer.lr)"
            --beta1 "$(get generator.optimizer.beta1)" --beta2 "$(get generator.optimizer.beta2)"
            --eps "$(get generator.optimizer.eps)"
            --weight-decay "$(get generator.optimizer.weight_decay)"
            --clip-norm "$(get generator.optimizer.clip_norm)"
            --lr-decay "$(get generator.optimizer.lr_decay)"
            --n-critic "$n_critic" --iterations "$iterations" --warmup "$warmup"
            --seed "$seed" --threads "$threads")
        [ -z "$kernel" ] || [ "$kernel" = unknown ] || torch_args+=(--coretype "$kernel")
        echo "$python $here/reference/torch_toy.py ${torch_args[*]}" >"$work/torch.cmd"
    fi
fi

# run_torch DIR: one PyTorch run; sets t_rate (empty when it failed, torch_failed then
# says why) and its other figures.
torch_failed=
run_torch() {
    t_rate=
    if "$python" "$here/reference/torch_toy.py" "${torch_args[@]}" --summary "$1/torch.summary" \
        >"$1/torch.out" 2>&1; then
        tget() { sed -n "s/^$1=//p" "$2/torch.summary"; }
        t_rate=$(tget it_per_s "$1")
        t_kernels=$(tget openblas_kernels "$1")
        t_version=$(tget torch_version "$1")
        t_modes=$(tget "quality_${iterations}_modes" "$1")
        t_hq=$(tget "quality_${iterations}_high_quality_pct" "$1")
        t_sw1=$(tget "quality_${iterations}_sliced_w1" "$1")
        t_total=$(tget "quality_${iterations}_modes_total" "$1")
    else
        torch_failed="failed in ${1##*/}: $(tail -n 2 "$1/torch.out")"
    fi
}

# ------------------------------------------------------------------ the rounds
# The limit an iteration's GEMMs are bound by: sgemm at their shapes, or in BF16 O2 (where
# the backend sends BF16 products to oneDNN: a BF16 dot product that pays here, or
# gemm = "onednn"; the backend's line says which) oneDNN's BF16 matmul.
limit_type=F32
mode=$(get precision.mode)
if [ "$mode" = bf16 ] && { [ "$(get backend.gemm)" = onednn ] ||
    grep -q 'BF16: oneDNN' "$work/version.txt"; }; then
    limit_type=BF16
fi

for r in $(seq 1 "$rounds"); do
    dir=$work/round-$r
    mkdir -p "$dir"
    # limits
    lim=
    if [ -z "$limits_why" ]; then
        "$limits" "${kargs[@]}" "${limits_as[@]}" --threads "$threads" --gemm "$gemm_shapes" \
            >"$dir/limits.txt" 2>"$dir/limits.err" ||
            limits_why="bench/limits failed: $(tail -n 1 "$dir/limits.err")"
        [ -n "$limits_why" ] || lim=$(limit_rate "$work/needs.txt" "$dir/limits.txt" "$limit_type")
        [ -n "$limits_why" ] || [ -n "$lim" ] ||
            limits_why="bench/limits gave no $limit_type rate for a shape ($dir/limits.txt)"
    fi
    round_put limit "$lim"
    # ganctl
    run_ganctl "$dir"
    round_put ganctl "$g_rate"
    round_put ganctl_span "$g_steady"
    round_put ganctl_tail "$g_tail"
    gf=$(awk -v f="$flop_iter" -v r="$g_rate" 'BEGIN { printf "%.6f", f * r * 1e-9 }')
    round_put ganctl_gflops "$gf"
    round_ratio ganctl_share "$gf" "$lim"
    [ "$r" -gt 1 ] || { q_modes=$g_modes q_total=$g_total q_hq=$g_hq q_sw1=$g_sw1; }
    # PyTorch
    if [ -z "$torch_why" ]; then
        run_torch "$dir"
        round_put torch "$t_rate"
        round_ratio ratio "$g_rate" "$t_rate"
        round_ratio ratio_span "$g_steady" "$t_rate"
        tf=$(awk -v f="$flop_iter" -v r="$t_rate" 'BEGIN { if (r > 0) printf "%.6f", f * r * 1e-9 }')
        round_ratio torch_share "$tf" "$lim"
        [ "$r" -gt 1 ] || { u_modes=$t_modes u_total=$t_total u_hq=$t_hq u_sw1=$t_sw1; }
    fi
done
load_after=$(bench_load)

# ------------------------------------------------------------------ report
# modes, total, high-quality %, sliced W1; the first three are empty for the swiss roll
quality() {
    if [ -n "$1" ] && [ "$1" != null ] && [ -n "$2" ]; then
        printf 'modes %s/%s, high-quality %s%%, ' "$1" "$2" "$(awk -v x="$3" 'BEGIN { printf "%.2f", x }')"
    fi
    printf 'sliced W1 %s' "$(awk -v x="${4:-nan}" 'BEGIN { printf "%.4f", x }')"
}
# The CPU's kind, from bench/limits: the aims of issue 26 differ by kind.
lim1=$work/round-1/limits.txt
host_kind "$lim1"
aim_ratio=1.3
[ "$kind" != "AVX2, no BF16 dot product" ] || aim_ratio=1.2
# the share of sgemm's limit is an aim of FP32's
aim_share=90
[ "$threads" -eq 1 ] || aim_share=85
[ "$limit_type" = F32 ] || aim_share=

what=$config
[ -n "$what" ] || what="ganctl's defaults (the demo)"
echo "toy benchmark: $what${sets[*]:+ with ${sets[*]}}"
echo "  $data, batch $batch, G $g_depth x $g_width, D $d_depth x $d_width, n_critic $n_critic, seed $seed; $iterations iterations, $threads thread(s)"
each=ganctl
[ -n "$limits_why" ] || each="bench/limits, $each"
[ -n "$torch_why" ] || each="$each, PyTorch"
echo "  $rounds rounds, each: $each; load average before $load_before, after $load_after"
if [ -r "$lim1" ]; then
    echo "host:    $(sed -n 's/^cpu //p' "$lim1"); $units (kind: $kind)"
else
    echo "host:    $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1) (bench/limits not run)"
fi
echo "ganctl:  $backend_line"
if [ -z "$torch_why" ]; then
    echo "PyTorch: torch ${t_version:-?}, OpenBLAS kernel ${t_kernels:-?}, $threads thread(s) ($(cat "$work/torch.cmd"))"
    [ -z "$torch_failed" ] || echo "  $torch_failed"
else
    echo "PyTorch: $torch_why; ganctl's figures alone"
fi
flops_line GEMM:
if [ -z "$limits_why" ]; then
    files=$(for r in $(seq 1 "$rounds"); do echo "$work/round-$r/limits.txt"; done)
    limits_libraries "$lim1"
    echo "  sgemm GFLOP/s at the run's shapes (m x n x k, A and B transposed or not; median of the rounds):"
    # shellcheck disable=SC2086 # the folder names are the script's own
    limit_shapes F32 "$work/needs.txt" $files | limit_lines
    if grep -q '^gemm BF16 [^ ]* [0-9]' "$lim1"; then
        echo "  oneDNN BF16 matmul GFLOP/s at the same shapes:"
        # shellcheck disable=SC2086
        limit_shapes BF16 "$work/needs.txt" $files | limit_lines
    else
        echo "  oneDNN BF16 matmul: $(sed -n 's/^gemm BF16 [^ ]* - //p' "$lim1" | head -n 1)"
    fi
else
    echo "limits:  not measured: $limits_why"
fi
[ -z "$sgemm_line" ] || echo "  bench/sgemm, kernel ${kernel:-auto}, $threads thread(s): $sgemm_line GFLOP/s"
echo
round_header
round_row "ganctl it/s (summary.json, whole run)" ganctl rate
round_row "ganctl it/s over iterations $((warmup + 1))-$((iterations - 1))" ganctl_span rate
round_row "ganctl s from the last row to the end" ganctl_tail seconds
round_row "PyTorch it/s (after $warmup of warm-up)" torch rate
round_row "ganctl / PyTorch" ratio ratio "$aim_ratio"
round_row "  per timed iteration (ganctl's span)" ratio_span ratio
round_row "limit: $limit_type GEMMs at their shapes, GFLOP/s" limit gflops
round_row "ganctl GEMM GFLOP/s" ganctl_gflops gflops
round_row "ganctl share of the limit" ganctl_share share "$aim_share"
round_row "PyTorch share of the limit" torch_share share
echo
echo "quality at the end (round 1): ganctl $(quality "$q_modes" "$q_total" "$q_hq" "$q_sw1")"
[ -n "$torch_why" ] || echo "                              PyTorch $(quality "${u_modes:-}" "${u_total:-}" "${u_hq:-}" "${u_sw1:-}")"
echo "aims (issue 26, $kind): ganctl / PyTorch >= ${aim_ratio}x${aim_share:+; >= $aim_share% of the limit at $threads thread(s)}; met when the median meets them"
[ -z "$out" ] || echo "files: $work"
