#!/bin/sh
# SPDX-License-Identifier: MIT
# onednn_train.sh — BF16 O2 training end to end with backend.gemm = onednn and = openblas
# (the toy MLP, and the dcgan pair on Fashion-MNIST when the data is installed), the
# describe line naming the path of FP32 GEMM, FP32 convolutions and BF16, FP32 products
# staying with OpenBLAS under "auto", the paths of a CPU without a BF16 dot product
# (acted with GANCTL_TEST_NO_BF16_DOT) or where oneDNN's BF16 kernels ran slower than
# its FP32 ones, and the setting's errors. Skips (77) when the build has no oneDNN or
# "auto" leaves it out (not an x86-64 CPU); on a CPU without a BF16 dot product, skips
# the BF16 parts only.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}
test_begin onednn
XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
export XDG_CACHE_HOME

if ! "$GANCTL" --backend cpu -s backend.gemm=onednn --version >"$work/version" 2>&1; then
    if grep -q 'has no oneDNN' "$work/version"; then
        echo "skip: $(tail -n 1 "$work/version")"
        exit 77
    fi
    echo "FAIL: ganctl --backend cpu -s backend.gemm=onednn --version: $(cat "$work/version")"
    exit 1
fi

"$GANCTL" --backend cpu --version >"$work/auto" 2>&1
if grep -q 'GEMM auto: OpenBLAS' "$work/auto"; then
    echo "skip: $(grep -o '(.*)$' "$work/auto")"
    exit 77
fi
bf16=1
if ! grep -q 'this CPU has a BF16 dot product' "$work/auto"; then
    bf16=0
    echo "note: the BF16 parts are skipped: this CPU has neither AVX512-BF16 nor AMX-BF16"
fi

rows() { test "$(($(wc -l <"$1") - 1))" -eq "$2"; }
# no value of a row after the header is NaN or infinite (columns a row has no value for
# are empty or "none"), and the losses are numbers
finite() {
    awk -F, 'NR > 1 { for (i = 1; i <= NF; i++) if (tolower($i) ~ /nan|inf/) bad = 1
                      if ($2 !~ /^-?[0-9]/) bad = 1 }
             END { exit bad }' "$1"
}

# ganctl with these options; with $hook set, as on a CPU without a BF16 dot product
hook=
run() {
    env ${hook:+GANCTL_TEST_NO_BF16_DOT=$hook} "$GANCTL" "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# ------------------------------------------------------------------ the describe line
check "gemm = onednn names oneDNN for FP32 GEMM and FP32 convolutions" \
    grep -q 'GEMM onednn: oneDNN [0-9.]*; FP32 GEMM: oneDNN (set by backend.gemm); FP32 convolutions: oneDNN (set by backend.gemm), FP16 ones staged in FP32; BF16: ' "$work/version"
if test $bf16 = 1; then
    check "gemm = onednn names oneDNN's BF16 implementation" \
        grep -q 'BF16: oneDNN [a-z_0-9:]* (set by backend.gemm; this CPU has a BF16 dot product)' "$work/version"
fi
"$GANCTL" --backend cpu -s backend.gemm=openblas --version >"$work/version" 2>&1
check "gemm = openblas names OpenBLAS for everything" has "$work/version" \
    "GEMM openblas: OpenBLAS for FP32 GEMM, FP32 convolutions and BF16 (set by backend.gemm)"
check "gemm = auto: OpenBLAS for FP32 GEMM, oneDNN for FP32 convolutions, each with its reason" \
    has "$work/auto" "FP32 GEMM: OpenBLAS (its sgemm is as fast for the networks' shapes); FP32 convolutions: oneDNN (faster than im2col + sgemm), FP16 ones staged in FP32, but the input gradient of fewer than 4 channels on im2col + sgemm (oneDNN's AVX-512 kernel pads them to 16); BF16: "
# With a BF16 dot product, "auto" times oneDNN's BF16 matmul against its FP32 one and
# takes the BF16 kernels only where they ran 1.2 times as fast: the line gives the speed
# and the path, which must agree.
if test $bf16 = 1; then
    speed=$(sed -n "s/.*oneDNN's BF16 matmul ran \([0-9.]*\) times as fast as its FP32 one here.*/\1/p" \
        "$work/auto")
    check "gemm = auto: the line gives the speed of oneDNN's BF16 matmul over its FP32 one" \
        test -n "$speed"
    fast() { awk -v s="${speed:-0}" 'BEGIN { exit !(s >= 1.2) }'; }
    slow() { awk -v s="${speed:-0}" 'BEGIN { exit !(s > 0 && s < 1.2) }'; }
    if grep -q 'BF16: oneDNN' "$work/auto"; then
        check "gemm = auto: oneDNN for BF16 only where its BF16 kernels ran 1.2 times as fast" fast
        check "gemm = auto: oneDNN for BF16, saying why" grep -q "BF16: oneDNN [a-z_0-9:]* (this CPU has a BF16 dot product; oneDNN's BF16 matmul ran $speed times as fast as its FP32 one here); FP16 products: without oneDNN" "$work/auto"
    else
        check "gemm = auto: BF16 staged only where oneDNN's BF16 kernels ran slower than 1.2 times" \
            slow
        check "gemm = auto: BF16 staged, saying why" has "$work/auto" "BF16: products without oneDNN, convolutions staged through oneDNN's FP32 ones (this CPU has a BF16 dot product, but oneDNN's BF16 matmul ran $speed times as fast as its FP32 one here, under the 1.2 it must); FP16 products: without oneDNN"
    fi
else
    check "gemm = auto: OpenBLAS for BF16 on a CPU without a BF16 dot product" \
        has "$work/auto" "BF16: products without oneDNN, convolutions staged through oneDNN's FP32 ones (this CPU has no BF16 dot product); FP16 products: without oneDNN"
fi
check "the describe line says where convolution outputs stay" \
    has "$work/auto" "convolution outputs kept in oneDNN's channel blocks"
"$GANCTL" --backend cpu -s 'backend.channel_blocks="moved"' --version >"$work/moved" 2>&1
check "channel_blocks = moved says so" has "$work/moved" \
    "convolution outputs moved back to NCHW (set by backend.channel_blocks)"

# ------------------------------------------------------------------ without a BF16 dot product
# GANCTL_TEST_NO_BF16_DOT acts as a CPU without one: "auto" keeps oneDNN for the FP32
# convolutions, sends BF16 products to OpenBLAS and stages BF16 convolutions through
# oneDNN's FP32 ones, and "onednn" is taken.
GANCTL_TEST_NO_BF16_DOT=1 "$GANCTL" --backend cpu --version >"$work/nodot" 2>&1
check "no BF16 dot product: auto keeps oneDNN's FP32 convolutions" \
    has "$work/nodot" "FP32 convolutions: oneDNN (faster than im2col + sgemm)"
check "no BF16 dot product: auto sends BF16 products to OpenBLAS and stages BF16 convolutions through oneDNN's FP32 ones, saying why" \
    has "$work/nodot" "BF16: products without oneDNN, convolutions staged through oneDNN's FP32 ones (this CPU has no BF16 dot product)"
GANCTL_TEST_NO_BF16_DOT=1 "$GANCTL" --backend cpu -s backend.gemm=onednn --version >"$work/nodot" 2>&1
check "no BF16 dot product: gemm = onednn is taken" \
    has "$work/nodot" "GEMM onednn: oneDNN"
check "no BF16 dot product: gemm = onednn names the missing unit" \
    has "$work/nodot" "this CPU has no BF16 dot product"

# ------------------------------------------------------------------ the toy, BF16 O2
toy="-s backend.threads=1 -s generator.model.width=32 -s generator.model.depth=2
     -s critic.model.width=32 -s critic.model.depth=2 -s data.batch_size=64
     -s critic.iterations=2 -s run.iterations=20 -s run.log_every=1 -s run.eval_every=10
     -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=false"
for path in onednn openblas; do
    test $bf16 = 1 || test $path = openblas || continue
    # shellcheck disable=SC2086 # $toy is a list of options
    run $toy --precision bf16 -s precision.level=O2 -s backend.gemm=$path -s run.dir="$work/toy-$path"
    check "toy BF16 O2 with gemm = $path exits 0" test "$rc" -eq 0
    check "toy BF16 O2 with gemm = $path logs 20 rows" rows "$work/toy-$path/metrics.csv" 20
    check "toy BF16 O2 with gemm = $path has finite metrics" finite "$work/toy-$path/metrics.csv"
done
# The two paths round the same FP32 sums, summed in different orders: the losses agree
# to BF16's precision at the first row, before the runs drift apart.
test $bf16 = 0 || check "the first row's critic loss agrees between the paths" awk -F, '
    FNR == 2 { if (FILENAME ~ /toy-onednn/) a = $2; else b = $2 }
    END { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a); exit !(d <= 0.05 * m + 1e-3) }' \
    "$work/toy-onednn/metrics.csv" "$work/toy-openblas/metrics.csv"

# Without a BF16 dot product, "auto" computes the toy's BF16 products (it has no
# convolutions) through OpenBLAS: bit for bit the openblas path's.
# shellcheck disable=SC2086
hook=1 && run $toy --precision bf16 -s precision.level=O2 -s run.dir="$work/toy-nodot"
hook=
check "no BF16 dot product: toy BF16 O2 with gemm = auto exits 0" test "$rc" -eq 0
check "no BF16 dot product: toy BF16 O2 with gemm = auto writes the openblas path's metrics.csv" \
    cmp -s "$work/toy-nodot/metrics.csv" "$work/toy-openblas/metrics.csv"
# Where the probe keeps BF16 off oneDNN on a CPU with the unit (the run's own log says
# which: each run probes anew), the same.
if test $bf16 = 1; then
    # shellcheck disable=SC2086
    run $toy --precision bf16 -s precision.level=O2 -s run.dir="$work/toy-auto"
    check "toy BF16 O2 with gemm = auto exits 0" test "$rc" -eq 0
    if grep -q 'BF16: products without oneDNN' "$work/err"; then
        check "BF16 off oneDNN by the probe: toy BF16 O2 with gemm = auto writes the openblas path's metrics.csv" \
            cmp -s "$work/toy-auto/metrics.csv" "$work/toy-openblas/metrics.csv"
    fi
fi

# backend.bf16 pins the path the probe would choose: "staged" keeps BF16 off oneDNN's
# BF16 kernels on any CPU, bit for bit the openblas path's on the toy; "onednn" takes
# them where the CPU has the unit.
"$GANCTL" --backend cpu -s backend.bf16=staged --version >"$work/pinned" 2>&1
check "bf16 = staged says so" has "$work/pinned" \
    "BF16: products without oneDNN, convolutions staged through oneDNN's FP32 ones (set by backend.bf16; "
# shellcheck disable=SC2086
run $toy --precision bf16 -s precision.level=O2 -s backend.bf16=staged -s run.dir="$work/toy-staged"
check "toy BF16 O2 with bf16 = staged exits 0" test "$rc" -eq 0
check "toy BF16 O2 with bf16 = staged writes the openblas path's metrics.csv" \
    cmp -s "$work/toy-staged/metrics.csv" "$work/toy-openblas/metrics.csv"
if test $bf16 = 1; then
    "$GANCTL" --backend cpu -s backend.bf16=onednn --version >"$work/pinned" 2>&1
    check "bf16 = onednn takes oneDNN's BF16 kernels, saying so" grep -q \
        'BF16: oneDNN [a-z_0-9:]* (set by backend.bf16; this CPU has a BF16 dot product); FP16 products' \
        "$work/pinned"
fi

# FP32 products stay with OpenBLAS under "auto": the toy (no convolutions) is bit for bit
# the openblas path's.
for path in auto openblas; do
    # shellcheck disable=SC2086
    run $toy -s backend.gemm=$path -s run.dir="$work/fp32-$path"
    check "toy FP32 with gemm = $path exits 0" test "$rc" -eq 0
done
check "toy FP32: gemm = auto and gemm = openblas write the same metrics.csv" \
    cmp -s "$work/fp32-auto/metrics.csv" "$work/fp32-openblas/metrics.csv"

# ------------------------------------------------------------------ images, BF16 and FP16 O2
data=/usr/share/datasets/fashion-mnist
if test -f "$data/train-images-idx3-ubyte.gz"; then
    images="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=1
            -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=16
            -s critic.iterations=2 -s run.iterations=4 -s run.log_every=1 -s run.eval_every=0
            -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=false"
    for path in onednn openblas; do
        test $bf16 = 1 || break
        # shellcheck disable=SC2086
        run $images --precision bf16 -s precision.level=O2 -s backend.gemm=$path -s run.dir="$work/img-$path"
        check "images BF16 O2 with gemm = $path exits 0" test "$rc" -eq 0
        check "images BF16 O2 with gemm = $path logs 4 rows" rows "$work/img-$path/metrics.csv" 4
        check "images BF16 O2 with gemm = $path has finite metrics" finite "$work/img-$path/metrics.csv"
    done
    # FP16 O2: its convolutions on oneDNN's FP32 primitives, or im2col + sgemm; both sum
    # in FP32 and round once, so the first row's critic loss agrees to FP16's precision.
    for path in onednn openblas; do
        # shellcheck disable=SC2086
        run $images --precision fp16 -s precision.level=O2 --scaler underflow-aware \
            -s backend.gemm=$path -s run.dir="$work/img16-$path"
        check "images FP16 O2 with gemm = $path exits 0" test "$rc" -eq 0
        check "images FP16 O2 with gemm = $path logs 4 rows" rows "$work/img16-$path/metrics.csv" 4
        check "images FP16 O2 with gemm = $path has finite metrics" finite "$work/img16-$path/metrics.csv"
    done
    check "images FP16 O2: the first row's critic loss agrees between the paths" awk -F, '
        FNR == 2 { if (FILENAME ~ /img16-onednn/) a = $2; else b = $2 }
        END { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a); exit !(d <= 0.002 * m + 1e-4) }' \
        "$work/img16-onednn/metrics.csv" "$work/img16-openblas/metrics.csv"
    # Without a BF16 dot product, "auto" keeps FP32 convolutions on oneDNN: the FP32
    # run is bit for bit the one on a CPU with one, where they go through oneDNN too.
    for hook in "" 1; do
        # shellcheck disable=SC2086
        run $images -s run.dir="$work/img32-$hook"
        check "images FP32 with gemm = auto${hook:+ and no BF16 dot product} exits 0" test "$rc" -eq 0
        check "images FP32 with gemm = auto${hook:+ and no BF16 dot product} logs 4 rows" rows "$work/img32-$hook/metrics.csv" 4
    done
    hook=
    check "images FP32: no BF16 dot product leaves the metrics.csv of gemm = auto as it is" \
        cmp -s "$work/img32-/metrics.csv" "$work/img32-1/metrics.csv"

    # Activations kept in oneDNN's channel blocks between convolutions, or moved back
    # after each: the same bits, metrics.csv and every checkpoint tensor (the checkpoint's
    # header names the setting), in FP32, FP16 O2 and BF16 O2 (staged in FP32 like FP16's
    # on a CPU without a BF16 dot product). The networks at their full width, so that
    # every layer's channels fill whole blocks.
    tensors() { n=$(od -An -tu8 -N8 "$1" | tr -d ' '); tail -c +$((n + 9)) "$1"; }
    same_tensors() {
        tensors "$1" >"$work/tensors-a" && tensors "$2" >"$work/tensors-b" &&
            test -s "$work/tensors-a" && cmp -s "$work/tensors-a" "$work/tensors-b"
    }
    blocks="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=2 -s data.batch_size=16
            -s critic.iterations=2 -s run.iterations=3 -s run.log_every=1 -s run.eval_every=0
            -s run.image_every=0 -s run.checkpoint_every=3 -s run.metrics_time=false"
    for precision in fp32 fp16 bf16; do
        scaler=
        test $precision != fp16 || scaler="--scaler underflow-aware"
        for where in kept moved; do
            # shellcheck disable=SC2086
            run $blocks --precision $precision $scaler -s backend.channel_blocks=$where \
                -s run.dir="$work/blocks-$precision-$where"
            check "images $precision with channel blocks $where exits 0" test "$rc" -eq 0
        done
        check "images $precision: kept channel blocks write the metrics.csv of moved ones" \
            cmp -s "$work/blocks-$precision-kept/metrics.csv" \
            "$work/blocks-$precision-moved/metrics.csv"
        check "images $precision: kept channel blocks write the checkpoint tensors of moved ones" \
            same_tensors "$work/blocks-$precision-kept/checkpoint.safetensors" \
            "$work/blocks-$precision-moved/checkpoint.safetensors"
    done
else
    echo "note: $data is missing; the image runs are left out"
fi

# ------------------------------------------------------------------ the setting's errors
run --backend cpu -s backend.gemm=mkl --version
check "gemm = mkl exits 2" test "$rc" -eq 2
check "gemm = mkl says what to use" has "$work/err" 'gemm = "mkl" is not a library; use "auto", "openblas" or "onednn"'
run --backend cpu -s backend.bf16=fast --version
check "bf16 = fast exits 2" test "$rc" -eq 2
check "bf16 = fast says what to use" has "$work/err" 'bf16 = "fast" is not a path; use "auto", "onednn" or "staged"'
run --backend cpu -s backend.gemm=openblas -s backend.bf16=onednn --version
check "bf16 = onednn under gemm = openblas exits 2" test "$rc" -eq 2
check "... saying why and what to set" has "$work/err" 'bf16 = "onednn" needs oneDNN, but gemm = "openblas" leaves it out; set gemm = "auto" or "onednn", or bf16 = "auto" or "staged"'

test_end
