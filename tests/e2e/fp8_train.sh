#!/bin/sh
# SPDX-License-Identifier: MIT
# fp8_train.sh — precision.mode "fp8" end to end: the demo trains under each shipped
# recipe and writes the FP8 columns; the backend says FP8 is emulated; --list-plugins
# shows the recipes; a run under the delayed recipe (whose amax histories are state)
# stopped and resumed equals one never stopped, bit for bit, and survives a kill -9 drill;
# its checkpoint holds the recipe's state, which another recipe or another precision
# refuses; Fashion-MNIST trains under current scaling (skipped without the data set).

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}

test_begin fp8

column() { # FILE NAME: the 1-based index of a metrics.csv column
    head -n 1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1
}

tiny="-s backend.threads=1 -s generator.model.width=16 -s critic.model.width=16
      -s data.batch_size=32 -s critic.iterations=2 -s run.log_every=2 -s run.eval_every=0
      -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=false
      -s generator.optimizer.lr_decay=none -s critic.optimizer.lr_decay=none"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# --------------------------------------------------------------- what the program says
"$GANCTL" --backend cpu --version >"$work/out" 2>"$work/err"
rc=$?
check "--backend cpu --version exits 0" rc_is 0
check "the CPU backend says its FP8 products are emulated" has "$work/out" "FP8: emulated"
"$GANCTL" --list-plugins >"$work/out" 2>"$work/err"
rc=$?
for r in none current delayed block underflow-aware; do
    check "--list-plugins lists the recipe $r" grep -q "recipe.*$r" "$work/out"
done

# --------------------------------------------------------------- each recipe trains
for r in none current delayed block underflow-aware; do
    run --precision fp8 -s fp8.recipe=$r -s run.iterations=6 -s run.dir="$work/$r"
    check "the demo trains in fp8 under $r (exit 0)" rc_is 0
    for c in fp8_scale_min fp8_scale_max fp8_flushed_frac fp8_saturated; do
        check "$r: metrics.csv has $c" test -n "$(column "$work/$r/metrics.csv" $c)"
    done
done
c=$(column "$work/current/metrics.csv" fp8_scale_max)
check "current scaling moves the scales above 1" sh -c \
    'tail -n 1 "$1" | cut -d, -f"$2" | awk "{ exit !(\$1 + 0 > 1) }"' _ "$work/current/metrics.csv" "$c"
c=$(column "$work/none/metrics.csv" fp8_scale_max)
check "the none recipe keeps every scale 1" sh -c \
    'tail -n +2 "$1" | cut -d, -f"$2" | sort -u | grep -qx 1' _ "$work/none/metrics.csv" "$c"
run -s run.iterations=2 -s run.dir="$work/fp32"
check "an fp32 run has no FP8 columns" test -z "$(column "$work/fp32/metrics.csv" fp8_scale_min)"
run --precision fp8 -s fp8.recipe=current -s fp8.rest=fp16 --scaler dynamic \
    -s run.iterations=4 -s run.dir="$work/fp16rest"
check "fp8 with fp16 between products and a dynamic loss scale trains (exit 0)" rc_is 0
run --precision fp8 -s fp8.recipe=current -s run.iterations=2 --debug-level 2 \
    -s log.level=debug -s run.dir="$work/debug"
check "debug level 2 logs each cast, naming operand and format" \
    grep -q "fp8 critic-step/critic\.fc[0-9]*/gan_linear#0/x E4M3" "$work/err"
check "... and the gradient operands in E5M2" grep -q "E5M2 (gradient)" "$work/err"

# --------------------------------------------------------------- resume and state
delayed="--precision fp8 -s fp8.recipe=delayed -s fp8.delayed.history=4"
# shellcheck disable=SC2086 # $delayed is a list of options
run $delayed -s run.iterations=8 -s run.eval_every=4 -s run.dir="$work/whole"
check "a delayed-scaling run exits 0" rc_is 0
# shellcheck disable=SC2086
run $delayed -s run.iterations=4 -s run.eval_every=4 -s run.dir="$work/part"
check "its first half exits 0" rc_is 0
"$GANCTL" --resume "$work/part" -s run.iterations=8 >"$work/out" 2>"$work/err"
rc=$?
check "--resume of an FP8 run exits 0" rc_is 0
check "the resumed metrics.csv equals the uninterrupted run's" \
    cmp "$work/whole/metrics.csv" "$work/part/metrics.csv"
check "the resumed final.png equals the uninterrupted run's" \
    cmp "$work/whole/final.png" "$work/part/final.png"
check "the checkpoint names its recipe and holds the amax histories" sh -c \
    'grep -a -q "\"recipe\":\"delayed\"" "$1" && grep -a -q "recipe.amax_history/" "$1"' \
    _ "$work/whole/checkpoint.safetensors"
cp -r "$work/part" "$work/other"
"$GANCTL" --resume "$work/other" -s fp8.recipe=current -s run.iterations=9 >"$work/out" 2>"$work/err"
rc=$?
check "a resume under another recipe is refused (exit 2)" rc_is 2
"$GANCTL" --resume "$work/other" -s precision.mode=bf16 -s run.iterations=9 >"$work/out" 2>"$work/err"
rc=$?
check "a resume in another precision is refused (exit 2)" rc_is 2

# --------------------------------------------------------------- kill -9
GANCTL_DRILL_TRIALS=${GANCTL_FP8_DRILL_TRIALS:-4} GANCTL_DRILL_ARGS="$delayed" \
    sh "$srcdir/tests/e2e/kill_drill.sh" >"$work/drill" 2>&1
rc=$?
[ "$rc" -eq 0 ] || tail -n 20 "$work/drill" | sed 's/^/  /'
check "a kill -9 drill of a delayed-scaling FP8 run resumes bit for bit" rc_is 0

# --------------------------------------------------------------- Fashion-MNIST
data=/usr/share/datasets/fashion-mnist
if test -f "$data/train-images-idx3-ubyte.gz"; then
    XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
    export XDG_CACHE_HOME
    "$GANCTL" -c "$srcdir/etc/fashion-mnist.conf" --precision fp8 -s fp8.recipe=current \
        -s backend.threads=1 -s generator.model.width=4 -s critic.model.width=4 \
        -s data.batch_size=16 -s critic.iterations=2 -s run.iterations=3 -s run.log_every=1 \
        -s run.eval_every=0 -s run.image_every=0 -s run.checkpoint_every=0 \
        -s run.dir="$work/fm" >"$work/out" 2>"$work/err"
    rc=$?
    check "Fashion-MNIST trains in fp8 under current scaling (exit 0)" rc_is 0
    check "... through the dcgan pair's convolutions" \
        test -n "$(column "$work/fm/metrics.csv" fp8_flushed_frac)"
else
    echo "skip (Fashion-MNIST part): $data is missing (Debian package dataset-fashion-mnist)"
fi

test_end
