#!/bin/sh
# SPDX-License-Identifier: MIT
# threads_same.sh — the CPU backend's own kernels give the same results at any
# backend.threads: the same toy run at one thread and at two (OpenBLAS held at one,
# backend.blas_threads = 1) writes a byte-identical metrics.csv (run.metrics_time = false,
# a row every iteration) and the same checkpoint tensors, in FP32 and in FP16 O2 with the
# underflow-aware scaler at debug level 1 (the gradient statistics in grad_stats.csv).
# The networks are wide enough that Adam and the gradient statistics are split across
# the threads.
#
# OpenBLAS's sgemm itself gives other bits at two threads than at one with its Haswell
# kernel (OPENBLAS_CORETYPE=Haswell); with the SkylakeX kernel the backend picks on an
# AVX-512 CPU the backend cuts the products across its threads itself, with the same
# bits, and there the whole run, the products on two threads too, is compared as well.

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin threads

# 512 wide: weights of 262,144 elements, whose gradient statistics are split, Adam
# over each network's 265,000 parameters, and the element-wise ops on the
# 131,072-element activations.
base="-s generator.model.width=512 -s generator.model.depth=2 -s critic.model.width=512
      -s critic.model.depth=2 -s data.batch_size=256 -s critic.iterations=2
      -s run.iterations=8 -s run.log_every=1 -s run.eval_every=4 -s run.image_every=0
      -s run.checkpoint_every=0 -s run.metrics_time=false"

train() {
    name=$1
    shift
    # shellcheck disable=SC2086 # $base is a list of options
    "$GANCTL" $base -s run.dir="$work/$name" "$@" >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: the $name run exited $rc: $(tail -n 3 "$work/$name.err")"
        failures=$((failures + 1))
    fi
}

# The checkpoint's tensors (not its metadata, which names the run folder and its id).
tensors() {
    python3 - "$1" <<'PY'
import hashlib, json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop("__metadata__", None)
data = raw[8 + n:]
for name in sorted(header):
    a, b = header[name]["data_offsets"]
    print(name, hashlib.sha256(data[a:b]).hexdigest())
PY
}

same() {
    what=$1 a=$2 b=$3
    checks=$((checks + 1))
    if cmp -s "$a" "$b"; then
        echo "ok: $what"
    else
        echo "FAIL: $what differ:"
        diff "$a" "$b" | head -n 6
        failures=$((failures + 1))
    fi
}

# compare NAME A B: metrics.csv (and grad_stats.csv when written) and the checkpoint's
# tensors of runs A and B are the same.
compare() {
    label=$1 run_a=$2 run_b=$3
    same "$label: metrics.csv" "$work/$run_a/metrics.csv" "$work/$run_b/metrics.csv"
    if [ -f "$work/$run_a/grad_stats.csv" ]; then
        same "$label: grad_stats.csv" "$work/$run_a/grad_stats.csv" \
            "$work/$run_b/grad_stats.csv"
    fi
    tensors "$work/$run_a/checkpoint.safetensors" >"$work/$run_a.tensors"
    tensors "$work/$run_b/checkpoint.safetensors" >"$work/$run_b.tensors"
    same "$label: final parameters and moments" "$work/$run_a.tensors" "$work/$run_b.tensors"
}

for precision in fp32 fp16; do
    case $precision in
    fp32) extra= ;;
    fp16) extra="--scaler underflow-aware --debug-level 1" ;;
    esac
    # shellcheck disable=SC2086 # $extra is a list of options
    train "$precision-t1" -s backend.threads=1 $extra
    # shellcheck disable=SC2086
    train "$precision-t2" -s backend.threads=2 -s backend.blas_threads=1 $extra
    compare "$precision, 1 and 2 threads (OpenBLAS on 1)" "$precision-t1" "$precision-t2"
done

# The whole budget on two threads, OpenBLAS included, with the kernel the backend
# chooses itself.
kernel=$(env -u OPENBLAS_CORETYPE "$GANCTL" --backend cpu -s backend.threads=2 --version 2>&1 |
    sed -n 's/^[^;]* kernel \([A-Za-z0-9_]*\) .*/\1/p' | head -n 1)
if [ "$kernel" = SkylakeX ]; then
    unset OPENBLAS_CORETYPE
    for precision in fp32 fp16; do
        case $precision in
        fp32) extra= ;;
        fp16) extra="--scaler underflow-aware --debug-level 1" ;;
        esac
        # shellcheck disable=SC2086
        train "$precision-s1" -s backend.threads=1 $extra
        # shellcheck disable=SC2086
        train "$precision-s2" -s backend.threads=2 $extra
        compare "$precision, 1 and 2 threads (OpenBLAS SkylakeX, products on 2)" "$precision-s1" \
            "$precision-s2"
    done
else
    echo "skipped: OpenBLAS on two threads (its kernel here is ${kernel:-unknown}, not SkylakeX)"
fi

# The comparison is only worth something when the rows are there.
checks=$((checks + 1))
rows=$(wc -l <"$work/fp32-t1/metrics.csv" 2>/dev/null || echo 0)
if [ "$rows" -ge 9 ]; then echo "ok: metrics.csv has a row per iteration"; else
    echo "FAIL: metrics.csv has $rows lines, expected 9"; failures=$((failures + 1)); fi

test_end
