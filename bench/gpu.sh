#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu.sh — training iterations per second of ganctl on one backend (default cuda) for the toy demo
# and, when etc/fashion-mnist.conf exists, the image configuration, in FP32, FP16 and BF16, with
# PyTorch's rate for the toy on the same device where PyTorch can use it, printed as ratios.
#
#   bench/gpu.sh [options] GANCTL PLUGIN_PATH
# See bench/README.md. Builds nothing; runs on the cpu backend too (-b cpu).

set -u

usage() {
    cat <<'EOF'
usage: bench/gpu.sh [options] GANCTL PLUGIN_PATH
  GANCTL       the ganctl program (build tree: BUILD/cli/ganctl)
  PLUGIN_PATH  colon-separated folders of its backend, model, loss and scaler modules
options:
  -b BACKEND     the backend to time (default cuda)
  -n N           iterations of each run (default 500; rounded up to a multiple of -w)
  -w W           leading iterations left out of the rate (default 50)
  -p LIST        precisions, comma-separated: fp32, fp16, bf16 (default all three)
  -t T           backend.threads when BACKEND is cpu (default 1)
  -s KEY=VALUE   a setting for every run, e.g. -s backend.vector=portable; repeatable
  --image-conf F the image configuration (default etc/fashion-mnist.conf beside this
                 script, timed only when it exists)
  --no-torch     do not run bench/reference/torch_toy.py
  --python PY    the Python with torch (default: the first of $PYTHON, python3 that imports it)
  -o DIR         keep the runs in DIR (default: a temporary folder, removed)
Exit status: 0 every run finished, 1 a run failed, 2 usage, 3 BACKEND has no usable device.
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib/bench_lib.sh
. "$here/lib/bench_lib.sh"

backend=cuda
iterations=500
warmup=50
precisions=fp32,fp16,bf16
threads=1
image_conf=$here/../etc/fashion-mnist.conf
no_torch=0
python=
out=
sets=()
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    -n | -w | -t | -s | --no-torch | --python | -o) bench_option "$@"; shift "$bench_used" ;;
    -b) [ $# -ge 2 ] || die "-b needs a backend"; backend=$2; shift 2 ;;
    -p) [ $# -ge 2 ] || die "-p needs a list"; precisions=$2; shift 2 ;;
    --image-conf) [ $# -ge 2 ] || die "--image-conf needs a file"; image_conf=$2; shift 2 ;;
    -*) bench_unknown "$1" ;;
    *) break ;;
    esac
done
bench_operands "$@"
GANCTL_CONFIG=/dev/null
export GANCTL_CONFIG
for n in "$iterations" "$warmup" "$threads"; do
    case $n in '' | *[!0-9]*) die "-n, -w and -t take whole numbers" ;; esac
done
[ "$warmup" -ge 1 ] || die "-w must be at least 1"
# metrics.csv logs every W iterations, so N is a multiple of W and both ends are rows.
iterations=$(( (iterations + warmup - 1) / warmup * warmup ))
[ "$iterations" -gt "$warmup" ] || iterations=$((2 * warmup))
command -v "$ganctl" >/dev/null 2>&1 || die "$ganctl is not a program; build ganctl first"

bench_work gpu-bench

bargs=(--backend "$backend")
[ "$backend" != cpu ] || bargs+=(-s backend.threads="$threads")
bargs+=("${sets[@]}")
if ! "$ganctl" "${bargs[@]}" --version >"$work/version.txt" 2>"$work/version.err"; then
    echo "gpu.sh: backend $backend cannot be used: $(sed 's/^ganctl: //' "$work/version.err" | head -n 1)"
    exit 3
fi
backend_line=$(grep "^backend $backend" "$work/version.txt" | head -n 1)

precision_args() {
    case $1 in
    fp32) echo "--precision fp32 --scaler none" ;;
    # The project's FP16 recipe: O2 with the underflow-aware scaler.
    fp16) echo "--precision fp16 -s precision.level=O2 --scaler underflow-aware" ;;
    # BF16 has FP32's exponent range: no loss scaling.
    bf16) echo "--precision bf16 -s precision.level=O2 --scaler none" ;;
    *) return 1 ;;
    esac
}

# rate RUN_DIR: iterations per second between the rows of iterations W and N of
# metrics.csv (its time_s column); the start-up and first W iterations are left out.
rate() {
    awk -F, -v w="$warmup" -v n="$iterations" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_s") c = i; next }
        c && $1 == w { a = $c } c && $1 == n { b = $c }
        END { if (c && b > a) printf "%.3f", (n - w) / (b - a) }' "$1/metrics.csv"
}

configs=(toy)
[ ! -r "$image_conf" ] || configs+=(image)
declare -A rates shown
failed=0
for cfg in "${configs[@]}"; do
    cargs=()
    [ "$cfg" = toy ] || cargs=(-c "$image_conf")
    IFS=, read -r -a plist <<<"$precisions"
    for prec in "${plist[@]}"; do
        precision_args "$prec" >/dev/null || die "unknown precision $prec (fp32, fp16 or bf16)"
        dir=$work/$cfg-$prec
        rm -rf "$dir"
        # shellcheck disable=SC2046 # precision_args is a list of options
        "$ganctl" "${cargs[@]}" "${bargs[@]}" $(precision_args "$prec") \
            -s run.iterations="$iterations" -s run.log_every="$warmup" -s run.eval_every=0 \
            -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=true \
            -s run.dir="$dir" >"$dir.out" 2>"$dir.err"
        rc=$?
        if [ $rc -ne 0 ]; then
            rates[$cfg-$prec]="failed (exit $rc: $(tail -n 1 "$dir.err" | cut -c1-100))"
            failed=1
            continue
        fi
        r=$(rate "$dir")
        rates[$cfg-$prec]=${r:-"no rate (metrics.csv lacks time_s)"}
    done
    # Real samples each iteration shows the critic: data.batch_size × critic.iterations
    # (the "images shown to the discriminator" count that image GAN papers report).
    shown[$cfg]=$("$ganctl" "${cargs[@]}" "${bargs[@]}" --print-config 2>/dev/null |
        awk -f "$here/lib/flat_config.awk" | awk -F= '
            $1 == "data.batch_size" { b = $2 } $1 == "critic.iterations" { c = $2 }
            END { if (b && c) print b * c }')
done

# ------------------------------------------------------------------ PyTorch, the toy only
torch_rate=
torch_why=
if [ $no_torch -eq 1 ]; then
    torch_why="not run (--no-torch)"
else
    device=cpu
    [ "$backend" = cpu ] || device=cuda
    check="import torch; assert '$device' == 'cpu' or torch.cuda.is_available()"
    if [ -z "$python" ]; then
        for p in ${PYTHON:-} python3; do
            if "$p" -c "$check" >/dev/null 2>&1; then python=$p; break; fi
        done
    fi
    if [ -z "$python" ] || ! "$python" -c "$check" >/dev/null 2>&1; then
        torch_why="not measured: no Python here imports torch$([ $device = cuda ] && echo ' with CUDA available')"
    else
        # The toy's settings in force (ganctl's defaults, the demo), flattened to KEY=VALUE.
        "$ganctl" "${bargs[@]}" --print-config 2>/dev/null |
            awk -f "$here/lib/flat_config.awk" >"$work/config.flat"
        targs=(--device "$device" --data "$(get data.name)" --batch "$(get data.batch_size)"
            --z-dim "$(get generator.z_dim)"
            --g-width "$(get generator.model.width)" --g-depth "$(get generator.model.depth)"
            --d-width "$(get critic.model.width)" --d-depth "$(get critic.model.depth)"
            --lambda "$(get loss.gradient-penalty.lambda)"
            --g-lr "$(get generator.optimizer.lr)" --d-lr "$(get critic.optimizer.lr)"
            --lr-decay "$(get generator.optimizer.lr_decay)"
            --n-critic "$(get critic.iterations)" --iterations "$iterations" --warmup "$warmup"
            --threads "$threads" --no-eval --summary "$work/torch.summary")
        echo "$python $here/reference/torch_toy.py ${targs[*]}" >"$work/torch.cmd"
        if "$python" "$here/reference/torch_toy.py" "${targs[@]}" >"$work/torch.out" 2>&1; then
            torch_rate=$(sed -n 's/^it_per_s=//p' "$work/torch.summary")
            torch_dev=$(sed -n 's/^device=//p' "$work/torch.summary")
            torch_ver=$(sed -n 's/^torch_version=//p' "$work/torch.summary")
        else
            torch_why="failed: $(tail -n 1 "$work/torch.out")"
        fi
    fi
fi

# ------------------------------------------------------------------ report
isnum() { case $1 in '' | *[!0-9.]*) return 1 ;; esac; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
echo "gpu benchmark: $backend_line"
echo "  $iterations iterations a run; rates over iterations $((warmup + 1))..$iterations (metrics.csv time_s)"
echo "  fp16 = O2 with the underflow-aware scaler; bf16 = O2 without scaling"
if [ -n "$torch_rate" ]; then
    echo "  PyTorch: torch $torch_ver on $torch_dev, FP32, the toy ($(cat "$work/torch.cmd"))"
else
    echo "  PyTorch: $torch_why"
fi
echo "  samples/s = it/s x data.batch_size x critic.iterations: real samples shown to the critic"
printf '%-6s %-5s %12s %12s %10s %12s\n' config prec "it/s" "samples/s" "vs fp32" "vs PyTorch"
for cfg in "${configs[@]}"; do
    for prec in "${plist[@]}"; do
        r=${rates[$cfg-$prec]}
        if ! isnum "$r"; then
            printf '%-6s %-5s %s\n' "$cfg" "$prec" "$r"
            continue
        fi
        base=${rates[$cfg-fp32]:-}
        vs32=-
        ! isnum "$base" || vs32=$(ratio "$r" "$base")
        vst=-
        [ "$cfg" != toy ] || ! isnum "$torch_rate" || vst=$(ratio "$r" "$torch_rate")
        sps=-
        [ -z "${shown[$cfg]:-}" ] || sps=$(awk -v r="$r" -v k="${shown[$cfg]}" 'BEGIN { printf "%.0f", r * k }')
        printf '%-6s %-5s %12s %12s %10s %12s\n' "$cfg" "$prec" "$r" "$sps" "$vs32" "$vst"
    done
done
[ "${configs[*]}" != toy ] || echo "image: not timed, $image_conf does not exist"
[ -z "$torch_rate" ] || printf '%-6s %-5s %12s\n' toy torch "$torch_rate"
[ -z "$out" ] || echo "files: $work"
exit $failed
