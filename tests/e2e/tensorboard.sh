#!/bin/sh
# SPDX-License-Identifier: MIT
# tensorboard.sh — run.tensorboard end to end: a run's event file read back with the
# tensorboard Python package's own reader, every scalar against metrics.csv and the
# final picture; a run killed with SIGKILL and resumed, whose second file's restart mark
# makes the reader drop what the first holds past the checkpoint; and no event file
# without the setting. Skipped (77) without a python3 that can import tensorboard.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}
pid=

need_python tensorboard "pip install tensorboard"

test_begin tensorboard
# The run killed and resumed below may still be training when the test ends.
trap 'test -n "$pid" && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s run.log_every=5 -s run.eval_every=10 -s run.image_every=0"

events_match() {
    "$python" "$srcdir/tests/e2e/tensorboard_check.py" "$@" >"$work/out" 2>"$work/err"
}

# --------------------------------------------------------------- a run, FP16 with a scaler
# shellcheck disable=SC2086 # $tiny is a list of options
"$GANCTL" $tiny -s run.iterations=30 -s run.tensorboard=true --scaler dynamic \
    -s run.dir="$work/a" >"$work/out" 2>"$work/err"
check "a run with run.tensorboard exits 0" test $? -eq 0
check "its folder holds one event file named as TensorBoard expects" \
    test "$(find "$work/a" -name 'events.out.tfevents.[0-9]*.?*' | wc -l)" -eq 1
check "summary.json names the event file" grep -q '"tensorboard": "events.out.tfevents\.' "$work/a/summary.json"
check "every scalar reads back as metrics.csv holds it, and final.png as an image" \
    events_match "$work/a" 1
cat "$work/out"

# --------------------------------------------------------------- killed and resumed
# shellcheck disable=SC2086
"$GANCTL" $tiny -s run.iterations=100000 -s run.log_every=1 -s run.checkpoint_every=10 \
    -s run.tensorboard=true -s run.dir="$work/b" >"$work/out" 2>"$work/err" &
pid=$!
tries=0
rows() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# Killed some rows after its checkpoint at iteration 20, which the resumed run writes again.
while [ "$(rows "$work/b/metrics.csv")" -lt 26 ] && [ $tries -lt 600 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
"$GANCTL" --resume "$work/b" -s run.iterations=40 >"$work/out" 2>"$work/err"
check "the killed run resumes to its end" test $? -eq 0
check "the resumed run opened a second event file" \
    test "$(find "$work/b" -name 'events.out.tfevents.*' | wc -l)" -eq 2
check "the reader's view of both files is metrics.csv's, with nothing after the checkpoint twice" \
    events_match "$work/b" 2
cat "$work/out"

# --------------------------------------------------------------- without the setting
# shellcheck disable=SC2086
"$GANCTL" $tiny -s run.iterations=10 -s run.dir="$work/c" >"$work/out" 2>"$work/err"
check "without run.tensorboard no event file is written" \
    test "$(find "$work/c" -name 'events.out.tfevents.*' | wc -l)" -eq 0

test_end
