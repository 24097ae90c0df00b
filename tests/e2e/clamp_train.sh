#!/bin/sh
# SPDX-License-Identifier: MIT
# clamp_train.sh — precision.clamp end to end: an FP16 run of the toy's mlp pair with a
# limit small enough to bite reports, at debug level 2, a non-zero count of clamped
# values for each network, and its FP32 shadow still pairs every op; the dcgan pair on an
# image folder (convolutions and their transposes) does too; a limit of 0, and a limit in
# fp32 (ignored, and said so), train exactly as a run without the setting; at O1 the
# mlp's layers have FP32 sums and are left alone; the clamp changes what a run computes;
# a negative limit is refused with one line naming the setting.

. "$(dirname "$0")/../lib/test_lib.sh"
MAKE_FOLDER=${MAKE_FOLDER:-./tests/lib/make-image-folder}
test_begin clamp

tiny="-s backend.threads=1 -s generator.model.width=32 -s generator.model.depth=2
      -s critic.model.width=32 -s critic.model.depth=2 -s data.batch_size=32
      -s run.iterations=6 -s run.log_every=3 -s run.eval_every=0 -s run.image_every=0
      -s run.checkpoint_every=0 -s run.metrics_time=false"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# The clamp's count line of iteration $2 in log $1: "critic C of S, generator C of S".
counts() {
    grep "activation clamp at iteration $2 " "$1" | sed 's/.*during its last step): //'
}
# The number of values network $3 had clamped at iteration $2, from log $1.
changed() {
    counts "$1" "$2" | tr ',' '\n' | awk -v net="$3" '$1 == net { print $2 }'
}
positive() { test -n "$1" && test "$1" -gt 0; }

# The tensors of a checkpoint, without its header (whose metadata names the run folder
# and holds the settings): equal when every tensor is equal.
tensors() {
    n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
    tail -c +$((9 + n)) "$1"
}
same_run() {
    cmp -s "$1/metrics.csv" "$2/metrics.csv" &&
        tensors "$1/checkpoint.safetensors" >"$work/t1" &&
        tensors "$2/checkpoint.safetensors" >"$work/t2" && cmp -s "$work/t1" "$work/t2"
}

# --------------------------------------------------------------- fp16 O2, the mlp pair
run --precision fp16 -s precision.clamp=0.5 -s run.debug_level=2 -s run.dir="$work/c"
check "an fp16 run with precision.clamp = 0.5 exits 0" rc_is 0
check "the log says what is clamped" \
    has "$work/err" "precision: fp16 O2, FP32 master weights, 0 FP32 scope patterns, products and convolutions clamped to +-0.5"
check "debug level 2 reports the clamp at each row" \
    test "$(grep -c "activation clamp at iteration [36] " "$work/err")" -eq 2
check "the critic's layers had values clamped in its last step" \
    positive "$(changed "$work/err" 6 critic)"
check "the generator's layers had values clamped in its last step" \
    positive "$(changed "$work/err" 6 generator)"
check "the FP32 shadow still pairs the ops (it clamps where the 16-bit pass did)" \
    sh -c '! grep -q "besides casts" "$1" && grep -q "ops that lost most" "$1"' _ "$work/err"

run --precision fp16 -s run.dir="$work/none"
check "the same run without precision.clamp exits 0" rc_is 0
run --precision fp16 -s precision.clamp=0 -s run.dir="$work/zero"
check "the same run with precision.clamp = 0 exits 0" rc_is 0
check "precision.clamp = 0 trains bit for bit as without the setting" \
    same_run "$work/none" "$work/zero"
check "precision.clamp = 0 says nothing of a clamp" \
    sh -c '! grep -qE "clamped to|activation clamp|precision.clamp" "$1"' _ "$work/err"
run --precision fp16 -s precision.clamp=0.5 -s run.dir="$work/c0"
check "a clamp that bites changes what the run computes" \
    sh -c '! cmp -s "$1" "$2"' _ "$work/none/metrics.csv" "$work/c0/metrics.csv"
check "debug level 2 changes nothing the clamped run computes" \
    sh -c 'tensors() { n=$(od -An -tu8 -N8 "$1" | tr -d " "); tail -c +$((9 + n)) "$1"; }
           test "$(tensors "$1" | cksum)" = "$(tensors "$2" | cksum)"' _ \
    "$work/c/checkpoint.safetensors" "$work/c0/checkpoint.safetensors"

# --------------------------------------------------------------- O1 and fp32
run --precision fp16 -s precision.level='"O1"' -s run.debug_level=2 -s run.dir="$work/o1none"
run --precision fp16 -s precision.level='"O1"' -s precision.clamp=0.5 -s run.debug_level=2 \
    -s run.dir="$work/o1"
check "an O1 run with a clamp exits 0" rc_is 0
check "at O1 the mlp's layers (FP32 sums with their bias) are not clamped" \
    test "$(counts "$work/err" 6)" = "critic 0 of 0, generator 0 of 0"
check "so an O1 mlp run trains as without the clamp" same_run "$work/o1none" "$work/o1"

run -s run.dir="$work/f32none"
run -s precision.clamp=256 -s run.dir="$work/f32"
check "an fp32 run with precision.clamp exits 0" rc_is 0
check "it says the clamp is ignored in fp32" \
    has "$work/err" "precision.clamp = 256 is ignored: this run computes in FP32"
check "and trains as without it" same_run "$work/f32none" "$work/f32"

# --------------------------------------------------------------- refused
run -s precision.clamp=-1 -s run.dir="$work/neg"
check "a negative limit is a configuration error (exit 2)" rc_is 2
check "on one line naming precision.clamp" \
    test "$(wc -l <"$work/err")" -eq 1 -a -n "$(grep precision.clamp "$work/err")"
check "no run folder is made for it" test ! -e "$work/neg"

# --------------------------------------------------------------- convolutions
if test -x "$MAKE_FOLDER" && "$MAKE_FOLDER" synthetic "$work/images" >/dev/null 2>&1; then
    srcdir=${srcdir:-.}
    run -c "$srcdir/etc/folder.conf" -s data.path="$work/images" -s data.size=32 \
        -s data.channels=3 -s generator.model.width=4 -s critic.model.width=4 \
        -s generator.model.depth=3 -s critic.model.depth=3 -s data.batch_size=8 \
        -s critic.iterations=2 -s run.iterations=2 -s run.log_every=2 --precision fp16 \
        -s precision.clamp=0.25 -s run.debug_level=2 -s run.dir="$work/dcgan"
    check "a dcgan run on an image folder with a clamp exits 0" rc_is 0
    check "its critic's convolutions had values clamped" \
        positive "$(changed "$work/err" 2 critic)"
    check "its generator's transposed convolutions had values clamped" \
        positive "$(changed "$work/err" 2 generator)"
    check "its FP32 shadow still pairs the ops" \
        sh -c '! grep -q "besides casts" "$1" && grep -q "ops that lost most" "$1"' _ "$work/err"
else
    echo "skipped the dcgan run: $MAKE_FOLDER is not built"
fi

test_end
