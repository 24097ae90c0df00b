#!/bin/bash
# SPDX-License-Identifier: MIT
# toy.sh — times N iterations of ganctl's WGAN-GP toy training, the same model and step in
# PyTorch (bench/reference/torch_toy.py) and the GEMM limit (bench/sgemm), all in one invocation.
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
  PyTorch with the same OpenBLAS kernel and thread count; prints both rates, their
  ratio and the share of the sgemm rate (measured now by bench/sgemm) each reaches.
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
  --sgemm PATH   the bench/sgemm program (default: ../bench/sgemm beside GANCTL's
                 folder; make bench/sgemm builds it)
  --python PY    the Python to run bench/reference/torch_toy.py with (default: the first of
                 $PYTHON, python3, /usr/bin/python3 that imports torch)
  --no-torch     time ganctl alone
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
sgemm=
python=
no_torch=0
out=
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -c | -s | -n | -t | -w | --python | --no-torch | -o) bench_option "$@"; shift "$bench_used" ;;
    --sgemm) [ $# -ge 2 ] || die "--sgemm needs a path"; sgemm=$2; shift 2 ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
# Only the installed ganctl.conf (which holds the defaults), -c and -s decide the run.
unset GANCTL_CONFIG

case $iterations in '' | *[!0-9]*) die "-n takes a whole number of iterations" ;; esac
case $threads in '' | *[!0-9]*) die "-t takes a whole number of threads" ;; esac
case $warmup in '' | *[!0-9]*) die "-w takes a whole number of iterations" ;; esac
[ "$threads" -ge 1 ] || die "-t must be at least 1"
[ "$warmup" -lt "$iterations" ] || die "-w must be below -n, so that PyTorch times something"
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program; build ganctl first (make cli/ganctl in the build folder)"
[ -z "$config" ] || [ -r "$config" ] || die "cannot read the configuration $config"
if [ -z "$sgemm" ]; then
    sgemm=$(cd "$(dirname "$(command -v "$ganctl")")" && pwd)/../bench/sgemm
fi

bench_work toy-bench
# A kept folder may hold an earlier run; none of its files may mix into this one.
[ -z "$out" ] || rm -rf "$work/ganctl-run"

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
# gradient gᵀ·h. Let P be a network's Σ in·out over its layers; F its first layer's
# in·out; O the critic's last layer's (width·1). Only the products the step needs are
# counted, so this is the work any implementation must do:
#
# critic step (B real, B fake, B interpolates x̂):
#   generator forward for the fake batch, no gradient                   P_G
#   critic forwards on real, fake and x̂                                3·P_D
#   inner gradient ∇ₓD(x̂): input gradients through every layer          P_D
#   outer backward of mean D(real) and mean D(fake): weight gradients
#     of every layer, input gradients of all but the first (the data
#     need none)                                                     2·(2·P_D − F_D)
#   double backward of the penalty through the inner gradient's
#     products u_i·W_i: the weight gradient of each, and the gradient
#     of u_i for all but the last layer's (its u is the constant seed).
#     ReLU's derivative is a step, constant in the graph, so no
#     gradient flows back into D(x̂)'s forward pass                     2·P_D − O_D
#   total: 2·B·(P_G + 10·P_D − 2·F_D − O_D)
# generator step (B fake):
#   generator forward, critic forward                                 P_G + P_D
#   critic input gradients through every layer (its weights need none)  P_D
#   generator weight gradients, and input gradients but the first's  2·P_G − F_G
#   total: 2·B·(3·P_G − F_G + 2·P_D)
# iteration: n_critic critic steps and one generator step (iteration 0 has no generator
#   step; the per-iteration figure is the steady state's).
# The paper's toy (widths 512, depth 3, z 2, B 256, n_critic 5): 2.960 GFLOP a critic
# step, 1.346 a generator step, 16.15 GFLOP an iteration.
read -r flop_critic flop_generator flop_iter < <(awk -v b="$batch" -v z="$z_dim" \
    -v gw="$g_width" -v gd="$g_depth" -v dw="$d_width" -v dd="$d_depth" -v nc="$n_critic" '
    function sum(inf, w, d, outf,   s, i, prev) {
        s = 0; prev = inf
        for (i = 0; i < d; i++) { s += prev * w; prev = w }
        return s + prev * outf
    }
    BEGIN {
        pg = sum(z, gw, gd, 2); pd = sum(2, dw, dd, 1)
        fg = z * (gd > 0 ? gw : 2); fd = 2 * (dd > 0 ? dw : 1); od = (dd > 0 ? dw : 2)
        c = 2 * b * (pg + 10 * pd - 2 * fd - od)
        g = 2 * b * (3 * pg - fg + 2 * pd)
        printf "%.0f %.0f %.0f\n", c, g, nc * c + g
    }')

# ------------------------------------------------------------------ the kernel and sgemm
"$ganctl" --backend cpu -s backend.threads="$threads" --version >"$work/version.txt" 2>&1 ||
    die "ganctl cannot create its cpu backend: $(cat "$work/version.txt")"
backend_line=$(grep '^backend cpu' "$work/version.txt")
kernel=$(sed -n 's/.* kernel \([A-Za-z0-9_]*\).*/\1/p' "$work/version.txt" | head -n 1)
load_before=$(bench_load)

sgemm_rate=
if [ -x "$sgemm" ]; then
    if [ -n "$kernel" ] && [ "$kernel" != unknown ]; then
        kargs=(--kernels "$kernel")
    else
        kargs=(--kernels auto)
    fi
    "$sgemm" "${kargs[@]}" --threads "$threads" >"$work/sgemm.txt" 2>&1
    sgemm_rate=$(awk -v t="$threads" '$1 == "256x512x512" && $2 == t { print $4; exit }' "$work/sgemm.txt")
    sgemm_big=$(awk -v t="$threads" '$1 == "1024x1024x1024" && $2 == t { print $4; exit }' "$work/sgemm.txt")
    [ -n "$sgemm_rate" ] || sgemm_why="bench/sgemm failed: $(tail -n 1 "$work/sgemm.txt")"
else
    sgemm_why="no bench/sgemm at $sgemm (make bench/sgemm in the build folder, or pass --sgemm)"
fi

# ------------------------------------------------------------------ ganctl
now() { date +%s.%N; }
# A metrics.csv row at the end of PyTorch's warm-up gives ganctl's rate over the same
# iterations PyTorch times, beside the whole run's.
log_every=$iterations
[ "$warmup" -eq 0 ] || log_every=$warmup
t0=$(now)
"$ganctl" "${run_args[@]}" -s run.iterations="$iterations" -s run.eval_every=0 \
    -s run.image_every=0 -s run.checkpoint_every=0 -s run.log_every="$log_every" \
    -s run.metrics_time=true -s run.dir="$work/ganctl-run" >"$work/ganctl.out" 2>"$work/ganctl.err"
rc=$?
t1=$(now)
[ $rc -eq 0 ] || die "ganctl failed (exit $rc): $(tail -n 3 "$work/ganctl.err")"
summary=$work/ganctl-run/summary.json
json_num() { sed -n "s/^ *\"$1\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" "$summary" | sed -n "${2:-1}p"; }
g_rate=$(json_num iterations_per_s)
g_train=$(json_num wall_time_s)
g_modes=$(json_num modes_covered 1)
g_hq=$(json_num high_quality_pct 1)
g_sw1=$(json_num sliced_w1 1)
g_total=$(json_num modes_total 1)
g_wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
g_steady=$(awk -F, -v w="$warmup" -v n="$iterations" '
    NR == 1 { if ($2 != "time_s") exit; next }
    $1 == w { a = $2 } $1 == n { b = $2 }
    END { if (w > 0 && b > a) printf "%.6f", (n - w) / (b - a) }' "$work/ganctl-run/metrics.csv")

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
            --seed "$seed" --threads "$threads" --summary "$work/torch.summary")
        [ -z "$kernel" ] || [ "$kernel" = unknown ] || torch_args+=(--coretype "$kernel")
        echo "$python $here/reference/torch_toy.py ${torch_args[*]}" >"$work/torch.cmd"
        if "$python" "$here/reference/torch_toy.py" "${torch_args[@]}" >"$work/torch.out" 2>&1; then
            tget() { sed -n "s/^$1=//p" "$work/torch.summary"; }
            t_rate=$(tget it_per_s)
            t_timed=$(tget timed_iterations)
            t_kernels=$(tget openblas_kernels)
            t_version=$(tget torch_version)
            t_modes=$(tget "quality_${iterations}_modes")
            t_hq=$(tget "quality_${iterations}_high_quality_pct")
            t_sw1=$(tget "quality_${iterations}_sliced_w1")
            t_total=$(tget "quality_${iterations}_modes_total")
        else
            torch_why="failed: $(tail -n 2 "$work/torch.out")"
        fi
    fi
fi
load_after=$(bench_load)

# ------------------------------------------------------------------ report
f3() { awk -v x="$1" 'BEGIN { printf "%.3f", x }'; }
# modes, total, high-quality %, sliced W1; the first three are empty for the swiss roll
quality() {
    if [ -n "$1" ] && [ "$1" != null ] && [ -n "$2" ]; then
        printf 'modes %s/%s, high-quality %s%%, ' "$1" "$2" "$(awk -v x="$3" 'BEGIN { printf "%.2f", x }')"
    fi
    printf 'sliced W1 %s' "$(awk -v x="${4:-nan}" 'BEGIN { printf "%.4f", x }')"
}
gflops() { awk -v f="$flop_iter" -v r="$1" 'BEGIN { printf "%.1f", f * r * 1e-9 }'; }
share() { awk -v f="$flop_iter" -v r="$1" -v s="$sgemm_rate" 'BEGIN { printf "%.0f%%", 100 * f * r * 1e-9 / s }'; }

what=$config
[ -n "$what" ] || what="ganctl's defaults (the demo)"
echo "toy benchmark: $what${sets[*]:+ with ${sets[*]}}"
echo "  $data, batch $batch, G $g_depth x $g_width, D $d_depth x $d_width, n_critic $n_critic, seed $seed; $iterations iterations, $threads thread(s)"
echo "  load average before $load_before, after $load_after (2 cores shared: figures vary with it)"
echo "ganctl:  $backend_line"
printf '  %s it/s (summary.json: %d iterations in %s s of training); whole process %s s\n' \
    "$(f3 "$g_rate")" "$iterations" "$(f3 "$g_train")" "$g_wall"
[ -z "$g_steady" ] ||
    printf '  %s it/s over iterations %d to %d (metrics.csv), the span PyTorch times\n' \
        "$(f3 "$g_steady")" "$((warmup + 1))" "$iterations"
echo "  quality at the end: $(quality "$g_modes" "$g_total" "$g_hq" "$g_sw1")"
if [ -n "$t_rate" ]; then
    echo "PyTorch: torch $t_version, OpenBLAS kernel $t_kernels, $threads thread(s) ($(cat "$work/torch.cmd"))"
    printf '  %s it/s (%d iterations timed after %d of warm-up)\n' "$(f3 "$t_rate")" "$t_timed" "$warmup"
    echo "  quality at the end: $(quality "$t_modes" "$t_total" "$t_hq" "$t_sw1")"
    ratio=$(awk -v a="$g_rate" -v b="$t_rate" 'BEGIN { printf "%.2f", a / b }')
    verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 1.5 ? "meets" : "misses") }')
    echo "ratio:   ganctl / PyTorch = ${ratio}x ($verdict the aim of 1.5x)"
    [ -z "$g_steady" ] ||
        echo "         over the same timed span: $(awk -v a="$g_steady" -v b="$t_rate" 'BEGIN { printf "%.2f", a / b }')x"
else
    echo "PyTorch: $torch_why; ganctl's figures alone"
fi
printf 'GEMM:    %s GFLOP an iteration (%d critic steps x %s + 1 generator step x %s)\n' \
    "$(awk -v f="$flop_iter" 'BEGIN { printf "%.3f", f * 1e-9 }')" "$n_critic" \
    "$(awk -v f="$flop_critic" 'BEGIN { printf "%.3f", f * 1e-9 }')" \
    "$(awk -v f="$flop_generator" 'BEGIN { printf "%.3f", f * 1e-9 }')"
if [ -n "$sgemm_rate" ]; then
    echo "  sgemm 256x512x512, kernel ${kernel:-auto}, $threads thread(s): $sgemm_rate GFLOP/s (1024^3: ${sgemm_big:-?})"
    echo "  ganctl: $(gflops "$g_rate") GFLOP/s in GEMMs = $(share "$g_rate") of sgemm's rate"
    [ -z "$t_rate" ] ||
        echo "  PyTorch: $(gflops "$t_rate") GFLOP/s in GEMMs = $(share "$t_rate") of sgemm's rate"
else
    echo "  the GEMM limit was not measured: $sgemm_why"
fi
[ -z "$out" ] || echo "files: $work"
