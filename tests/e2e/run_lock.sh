#!/bin/sh
# SPDX-License-Identifier: MIT
# run_lock.sh — while a ganctl process trains in a run folder it holds the folder's lock
# (.lock, with its pid): a second process, resuming the folder or starting a new run in
# it, is refused with one line naming that pid and leaves the folder to it; once the
# first has stopped, the folder is free again and holds no lock file. A run folder from
# elsewhere whose .lock or metrics.csv is a symbolic link to a file outside it, or a FIFO,
# is refused (exit 2, one line naming it) with the link's target unchanged.

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin lock
first=
# The first process, if still training, goes with the scratch folder.
trap 'test -n "$first" && kill -KILL "$first" 2>/dev/null; rm -rf "$work"' EXIT

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.log_every=5
      -s run.eval_every=50 -s run.image_every=0 -s run.checkpoint_every=20"

refused() { test "$rc" -eq 1 && test "$(wc -l <"$work/err")" -eq 1; }
# Any second process is stopped after a while, so that a missing lock fails this test
# rather than hanging it.
second() {
    if command -v timeout >/dev/null 2>&1; then timeout 60 "$GANCTL" "$@"; else "$GANCTL" "$@"; fi \
        >"$work/out" 2>"$work/err"
    rc=$?
}

# The first process: long enough to outlast the second's tries, stopped with SIGTERM.
dir=$work/a
# shellcheck disable=SC2086 # $tiny is a list of options
"$GANCTL" $tiny -s run.iterations=1000000 -s run.dir="$dir" >"$work/first.out" 2>"$work/first.err" &
first=$!
tries=0
until [ -s "$dir/checkpoint.safetensors" ] && [ "$(cat "$dir/.lock" 2>/dev/null)" = "$first" ] ||
      [ $tries -ge 600 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
check "the training process holds the lock with its pid in $dir/.lock" \
    test "$(cat "$dir/.lock" 2>/dev/null)" = "$first"

second --resume "$dir" -s run.iterations=2000000
check "a second process resuming the folder is refused (exit 1, one line)" refused
check "the refusal names the holder's pid" \
    has "$work/err" "the run folder $dir is in use: ganctl process $first trains in it"

# shellcheck disable=SC2086
second $tiny -s run.iterations=10 -s run.dir="$dir"
check "a new run into the folder is refused (exit 1, one line)" refused
check "that refusal names the holder's pid too" has "$work/err" "ganctl process $first trains in it"
check "the refusals left the lock to the first process" test "$(cat "$dir/.lock" 2>/dev/null)" = "$first"
check "the first process still trains" kill -0 "$first"

kill -TERM "$first"
wait "$first"
rc=$?
first=
check "the first process stops on SIGTERM (exit 143)" test "$rc" -eq 143
check "it removed its lock file" test ! -e "$dir/.lock"
check "its checkpoint says where it stopped" has "$work/first.err" "continue with ganctl --resume $dir"

stopped=$(sed -n 's/.*"iterations": \([0-9]*\),.*/\1/p' "$dir/summary.json" | head -n 1)
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 5))
check "the folder is free again: a resume exits 0" test "$rc" -eq 0
check "and leaves no lock file" test ! -e "$dir/.lock"


# --------------------------------------------------------------- links out of the folder
printf 'VICTIM LOCK\n' >"$work/victim"
ln -s "$work/victim" "$dir/.lock"
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 10))
check "a .lock that is a symbolic link is refused (exit 2, one line)" \
    sh -c 'test "$1" -eq 2 && test "$(wc -l <"$2")" -eq 1' _ "$rc" "$work/err"
check "the refusal names the link" has "$work/err" "$dir/.lock is a symbolic link"
check "the link's target is unchanged" test "$(cat "$work/victim")" = "VICTIM LOCK"
rm -f "$dir/.lock"
mkfifo "$dir/.lock"
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 10))
check "a .lock that is a FIFO is refused (exit 2)" test "$rc" -eq 2
check "... naming it" has "$work/err" "$dir/.lock is not a regular file"
rm -f "$dir/.lock"
cp "$dir/metrics.csv" "$work/victim.csv"
rm -f "$dir/metrics.csv"
ln -s "$work/victim.csv" "$dir/metrics.csv"
cksum <"$work/victim.csv" >"$work/victim.sum"
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 10))
check "a metrics.csv that is a symbolic link is refused (exit 2)" test "$rc" -eq 2
check "... naming it" has "$work/err" "$dir/metrics.csv is a symbolic link"
check "... with its target unchanged" sh -c 'cksum <"$1" | cmp -s - "$2"' _ "$work/victim.csv" "$work/victim.sum"
rm -f "$dir/metrics.csv"
mkfifo "$dir/metrics.csv"
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 10))
check "a metrics.csv that is a FIFO is refused (exit 2), not waited on" test "$rc" -eq 2
rm -f "$dir/metrics.csv"
mv "$work/victim.csv" "$dir/metrics.csv"
second --resume "$dir" -s run.iterations=$((${stopped:-0} + 10))
check "with the files back the folder resumes (exit 0)" test "$rc" -eq 0

test_end
