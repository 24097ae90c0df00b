#!/bin/sh
# SPDX-License-Identifier: MIT
# run_restart.sh — a run killed before its first checkpoint leaves config.conf and
# metrics.csv: --resume of that folder starts the run again from iteration 0 (nothing had
# been saved, so nothing is lost), and the result is the run an uninterrupted process
# makes; a new run into the folder is still refused, and a folder without any run is
# still no run to resume.

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin restart

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.log_every=5
      -s run.eval_every=10 -s run.image_every=10 -s run.metrics_time=false"

# A run that checkpoints only at its end, killed once it has written a few rows.
dir=$work/k
# shellcheck disable=SC2086 # $tiny is a list of options
"$GANCTL" $tiny -s run.iterations=1000000 -s run.checkpoint_every=0 -s run.dir="$dir" \
    >"$work/out" 2>"$work/err" &
pid=$!
tries=0
while [ "$(cat "$dir/metrics.csv" 2>/dev/null | wc -l)" -lt 3 ] && [ $tries -lt 600 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
kill -KILL "$pid"
wait "$pid"
check "the killed run left config.conf and metrics.csv but no checkpoint" \
    sh -c 'test -s "$1/config.conf" && test -s "$1/metrics.csv" && test ! -e "$1/checkpoint.safetensors"' _ "$dir"

# shellcheck disable=SC2086
"$GANCTL" $tiny -s run.iterations=30 -s run.dir="$dir" >"$work/out" 2>"$work/err"
rc=$?
check "a new run into that folder is refused (exit 2, one line)" sh -c 'test '"$rc"' -eq 2 && test "$(wc -l <"$1")" -eq 1' _ "$work/err"
check "it says the folder holds a run and how to continue it" \
    has "$work/err" "already holds a run: continue it with ganctl --resume $dir"

"$GANCTL" --resume "$dir" -s run.iterations=30 >"$work/out" 2>"$work/err"
rc=$?
check "--resume of the folder exits 0" rc_is 0
check "it says the run starts again from iteration 0, and why" \
    has "$work/err" "$dir holds the configuration of a run that stopped before its first checkpoint: nothing was saved, so the run starts again from iteration 0"
check "it trains all 30 iterations" has "$work/out" "trained: 30 of 30 iterations"
check "metrics.csv has no row of the killed process's" test "$(grep -c '^5,' "$dir/metrics.csv")" -eq 1
check "the folder has its checkpoint now" test -s "$dir/checkpoint.safetensors"
check "summary.json says completed" has "$dir/summary.json" '"status": "completed"'

# The same run, never interrupted: the restarted run is it, row for row.
# shellcheck disable=SC2086
"$GANCTL" $tiny -s run.iterations=30 -s run.dir="$work/ref" >"$work/out" 2>"$work/err"
check "an uninterrupted run of 30 iterations exits 0" test $? -eq 0
check "metrics.csv is the uninterrupted run's, byte for byte" cmp -s "$dir/metrics.csv" "$work/ref/metrics.csv"

# A folder that holds no run at all is still no run to resume.
mkdir -p "$work/empty"
"$GANCTL" --resume "$work/empty" >"$work/out" 2>"$work/err"
rc=$?
check "--resume of a folder without a run exits 2 with one line" \
    sh -c 'test "$1" -eq 2 && test "$(wc -l <"$2")" -eq 1' _ "$rc" "$work/err"
check "it says there is no checkpoint" has "$work/err" "no checkpoint there"

test_end
