#!/bin/sh
# SPDX-License-Identifier: MIT
# image_train.sh — training on Fashion-MNIST with the dcgan pair, end to end on a tiny width:
# the run folder's grids and image columns, a resume that continues bit-identically, FP16.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}

test_begin images
data=/usr/share/datasets/fashion-mnist
test -f "$data/train-images-idx3-ubyte.gz" || {
    echo "skip: $data is missing (Debian package dataset-fashion-mnist)"; exit 77; }

# The Fréchet distance's classifier is trained on first use and cached: once per build
# tree, not in the user's cache.
XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
export XDG_CACHE_HOME

# The shipped configuration at a width that trains in a fraction of a second per
# iteration; a constant learning rate, so that a run stopped early and resumed follows
# the same schedule as one that never stopped.
tiny="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=1
      -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=16
      -s critic.iterations=2 -s generator.optimizer.lr_decay=none
      -s critic.optimizer.lr_decay=none -s run.log_every=1 -s run.eval_every=3
      -s run.image_every=3 -s run.checkpoint_every=0 -s run.metrics_time=false"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# --------------------------------------------------------------- one run
run -s run.iterations=6 -s run.dir="$work/a"
check "a fashion-mnist run exits 0" test "$rc" -eq 0
for f in real.png samples-000003.png samples-000006.png final.png metrics.csv summary.json \
         checkpoint.safetensors; do
    check "the run folder holds $f" test -s "$work/a/$f"
done
check "real.png, the grids and final.png are PNG files" sh -c \
    'for f in "$1"/real.png "$1"/samples-000003.png "$1"/final.png; do
         head -c 8 "$f" | od -An -c | grep -q "P   N   G" || exit 1; done' _ "$work/a"
header=$(head -n 1 "$work/a/metrics.csv")
check "metrics.csv has the image columns last" sh -c \
    'case "$1" in *,sliced_w1_pixel,frechet) exit 0;; *) exit 1;; esac' _ "$header"
check "metrics.csv has no toy quality columns" sh -c \
    'case "$1" in *modes_covered*|*,sliced_w1,*) exit 1;; *) exit 0;; esac' _ "$header"
row3=$(grep '^3,' "$work/a/metrics.csv")
check "an evaluation row has finite image metrics" sh -c \
    'echo "$1" | awk -F, "{ exit !(\$(NF-1) + 0 > 0 && \$NF + 0 > 0 && \$NF != \"nan\") }"' _ "$row3"
check "a row between evaluations leaves them empty" sh -c \
    'grep -q "^2,.*,,\$" "$1"' _ "$work/a/metrics.csv"
check "summary.json has both metrics and their floors" sh -c \
    'grep -q "\"sliced_w1_pixel\"" "$1" && grep -q "\"frechet\"" "$1" &&
     grep -q "real_vs_real_floor" "$1"' _ "$work/a/summary.json"
check "the final line names the image metrics" grep -q \
    "quality at iteration 6 (fashion-mnist, 2000 generated vs 2000 test images): sliced_w1_pixel" \
    "$work/out"

# --------------------------------------------------------------- resume
# Three iterations, then --resume to six: every row, grid and the final picture must
# equal the uninterrupted run's (the sampler's epoch and index are in the checkpoint).
run -s run.iterations=3 -s run.dir="$work/b"
check "a short run exits 0" test "$rc" -eq 0
"$GANCTL" --resume "$work/b" -s run.iterations=6 >"$work/out" 2>"$work/err"
rc=$?
check "--resume of a fashion-mnist run exits 0" test "$rc" -eq 0
check "the resumed metrics.csv equals the uninterrupted run's" \
    cmp "$work/a/metrics.csv" "$work/b/metrics.csv"
check "the resumed run's grid at 6 equals the uninterrupted run's" \
    cmp "$work/a/samples-000006.png" "$work/b/samples-000006.png"
check "the resumed run's final.png equals the uninterrupted run's" \
    cmp "$work/a/final.png" "$work/b/final.png"
check "the grid of iteration 3 is the same in both runs (fixed z)" \
    cmp "$work/a/samples-000003.png" "$work/b/samples-000003.png"

# --------------------------------------------------------------- refusals
run -s run.iterations=2 -s run.dir="$work/c" -s data.path="$work/nowhere"
check "a missing data set fails" test "$rc" -ne 0
check "a missing data set makes no run folder" test ! -e "$work/c"
check "a missing data set names the package and the setting" sh -c \
    'grep -q "dataset-fashion-mnist" "$1" && grep -q "data.path" "$1"' _ "$work/err"

# --------------------------------------------------------------- FP16
for scaler in dynamic underflow-aware; do
    run -s run.iterations=2 -s run.dir="$work/fp16-$scaler" --precision fp16 --scaler "$scaler"
    check "an fp16 run with the $scaler scaler exits 0" test "$rc" -eq 0
    check "an fp16 run with the $scaler scaler writes final.png" test -s "$work/fp16-$scaler/final.png"
done

test_end
