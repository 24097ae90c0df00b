#!/bin/sh
# SPDX-License-Identifier: MIT
# games_train.sh — the games besides WGAN's and the r1 penalty, end to end on Fashion-MNIST at
# a tiny width: the issue's two combinations train, a resume with a lazy r1 continues bit
# for bit (the interval's phase and the last reported value both carry over), two games
# are refused, and a file's setting of a term that --set loss.terms dropped is left unused.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}

test_begin games
data=/usr/share/datasets/fashion-mnist
test -f "$data/train-images-idx3-ubyte.gz" || {
    echo "skip: $data is missing (Debian package dataset-fashion-mnist)"; exit 77; }
XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
export XDG_CACHE_HOME

# As image_train.sh: the shipped configuration at width 4, a constant learning rate so
# that a run stopped and resumed follows the schedule of one that never stopped.
tiny="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=1
      -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=16
      -s critic.iterations=2 -s generator.optimizer.lr_decay=none
      -s critic.optimizer.lr_decay=none -s run.log_every=1 -s run.eval_every=0
      -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=false"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

column() { # FILE NAME: the 1-based index of a metrics.csv column
    head -n 1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1
}

# --------------------------------------------------------------- the two combinations
run -s 'loss.terms=["non-saturating","r1"]' -s run.iterations=6 -s run.dir="$work/ns"
check "non-saturating + r1 trains (exit 0)" rc_is 0
check "the gradient penalty's file setting is left unused, with a note" \
    has "$work/err" "loss.gradient-penalty.lambda is not used: loss.terms, replaced since, no longer lists its term"
for c in d_real d_fake r1; do
    check "metrics.csv has the column $c" test -n "$(column "$work/ns/metrics.csv" "$c")"
done
check "no w_distance column without the Wasserstein game" \
    test -z "$(column "$work/ns/metrics.csv" w_distance)"
# r1 every 16 critic steps (the default), 2 a iteration: computed at iterations 0 and 8
# only, so every row shows the first value, finite and positive.
r1col=$(column "$work/ns/metrics.csv" r1)
check "every row of a 6-iteration run shows r1 from critic step 0" sh -c \
    'test "$(tail -n +2 "$1" | cut -d, -f"$2" | sort -u | wc -l)" -eq 1 &&
     tail -n 1 "$1" | cut -d, -f"$2" | awk "{ exit !(\$1 + 0 > 0) }"' _ "$work/ns/metrics.csv" "$r1col"

run -s 'loss.terms=["hinge","gradient-penalty"]' -s run.iterations=4 -s run.dir="$work/hinge"
check "hinge + gradient-penalty trains (exit 0)" rc_is 0
check "hinge + gradient-penalty reports the penalty" \
    test -n "$(column "$work/hinge/metrics.csv" penalty)"

# --------------------------------------------------------------- lazy r1 and resume
# r1 every 3 critic steps, 2 a iteration: the resume at iteration 4 (critic step 8) falls
# mid-interval, and its first rows show a value computed before the stop.
# The stop is an evaluation row in both runs (a run's last iteration is evaluated).
lazy="-s loss.terms=[\"non-saturating\",\"r1\"] -s loss.r1.interval=3 -s loss.r1.gamma=2
      -s run.eval_every=4 -s run.image_every=4"
# shellcheck disable=SC2086 # $lazy is a list of options
run $lazy -s run.iterations=8 -s run.dir="$work/whole"
check "a run with a lazy r1 exits 0" rc_is 0
# shellcheck disable=SC2086
run $lazy -s run.iterations=4 -s run.dir="$work/part"
check "its first half exits 0" rc_is 0
"$GANCTL" --resume "$work/part" -s run.iterations=8 >"$work/out" 2>"$work/err"
rc=$?
check "--resume of a run with a lazy r1 exits 0" rc_is 0
check "the resumed metrics.csv equals the uninterrupted run's" \
    cmp "$work/whole/metrics.csv" "$work/part/metrics.csv"
check "the resumed final.png equals the uninterrupted run's" \
    cmp "$work/whole/final.png" "$work/part/final.png"
# Resumed once more with the options that started it: the file's gradient-penalty
# setting, which the run never used, is no change.
# shellcheck disable=SC2086
"$GANCTL" --resume "$work/part" $tiny $lazy -s run.iterations=9 >"$work/out" 2>"$work/err"
rc=$?
check "--resume with the -c and --set that started the run exits 0" rc_is 0
r1col=$(column "$work/whole/metrics.csv" r1)
# Critic steps 0, 3, 6, 9, 12 and 15 compute it: iterations 0, 1, 3, 4, 6 and 7, whose
# rows are 1, 2, 4, 5, 7 and 8; the rows between repeat the last value.
check "r1 changes exactly at the rows whose iteration computed it (2, 4, 5, 7, 8)" sh -c \
    'tail -n +2 "$1" | cut -d, -f1,"$2" | awk -F, "NR > 1 && \$2 != prev { printf \"%s \", \$1 } { prev = \$2 }" |
     grep -qx "2 4 5 7 8 "' _ "$work/whole/metrics.csv" "$r1col"

# --------------------------------------------------------------- refusals
run -s 'loss.terms=["wasserstein","hinge"]' -s run.iterations=2 -s run.dir="$work/two"
check "two games are refused (exit 2)" rc_is 2
check "the refusal names both games" \
    has "$work/err" 'loss.terms holds two adversarial objectives, "wasserstein" and "hinge"'
check "a refused configuration makes no run folder" test ! -e "$work/two"
run -s 'loss.terms=["hinge"]' -s loss.hinge.margin=2 -s run.iterations=2 -s run.dir="$work/m"
check "a setting the hinge term does not declare is refused (exit 2)" rc_is 2

test_end
