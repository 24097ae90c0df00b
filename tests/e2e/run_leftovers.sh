#!/bin/sh
# SPDX-License-Identifier: MIT
# run_leftovers.sh — the temporary files a killed ganctl leaves in a run folder (a partial
# checkpoint, a half-written picture or table) are removed when a run starts or resumes
# there, and only those: a file of another name stays. The names themselves are checked
# by tests/unit/check_run_guard (hidden, and recognised as leftovers).

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin leftovers

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.log_every=5
      -s run.eval_every=10 -s run.image_every=10 -s run.checkpoint_every=10"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

resume() {
    "$GANCTL" --resume "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

absent() { for f in "$@"; do test ! -e "$dir/$f" || return 1; done; }
present() { for f in "$@"; do test -e "$dir/$f" || return 1; done; }

# What a killed process leaves, as ganctl names it: a partial checkpoint (the size of a
# small one), a picture's and each text file's temporary file, and the visible picture
# temporaries of earlier versions.
ours=".checkpoint.safetensors.tmp.4242.0 .checkpoint.safetensors.tmp.4242.17
      .final.png.Ab12Cd .samples-000010.png.x1Y2z3 .config.conf.QwErTy .metrics.csv.a1b2c3
      .summary.json.ZZZZZZ final.png.Ab12Cd samples-000020.png.q9W8e7"
# Files that only look alike: the user's, which ganctl never touches.
theirs="notes.txt final.png.orig .notes.txt.abcdef config.conf.backup
        .checkpoint.safetensors.tmp.x mine.safetensors"
plant() {
    for f in $ours; do head -c 61440 /dev/zero >"$dir/$f"; done
    for f in $theirs; do echo "keep me" >"$dir/$f"; done
}

# --------------------------------------------------------------- resumed
dir=$work/a
run -s run.iterations=20 -s run.dir="$dir"
check "a short run exits 0" rc_is 0
plant
resume "$dir" -s run.iterations=30
check "the run resumes with leftovers in its folder (exit 0)" rc_is 0
# shellcheck disable=SC2086
check "the resumed run removed every leftover" absent $ours
# shellcheck disable=SC2086
check "it kept every other file" present $theirs
check "it says what it removed" has "$work/err" "removed 9 temporary files that a killed ganctl process left in $dir"
check "it holds no lock after it ended" absent .lock

# --------------------------------------------------------------- killed, then resumed
# A run killed at any moment leaves at most such files; they are gone once it resumed.
dir=$work/k
# shellcheck disable=SC2086
"$GANCTL" $tiny -s run.iterations=1000000 -s run.checkpoint_every=1 -s run.dir="$dir" \
    >"$work/out" 2>"$work/err" &
pid=$!
tries=0
while [ "$(cat "$dir/metrics.csv" 2>/dev/null | wc -l)" -lt 4 ] && [ $tries -lt 600 ]; do
    sleep 0.1
    tries=$((tries + 1))
done
kill -KILL "$pid"
wait "$pid"
plant
# Past its checkpoint, which is at most a few iterations past its last row.
last=$(tail -n 1 "$dir/metrics.csv" | cut -d, -f1)
resume "$dir" -s run.iterations=$((last + 50))
check "a killed run resumes (exit 0)" rc_is 0
check "nothing hidden is left but what was planted" \
    test -z "$(ls -A "$dir" | grep '^\.' | grep -v -x -F -e .notes.txt.abcdef -e .checkpoint.safetensors.tmp.x)"
check "no picture's temporary file is left" test -z "$(ls -A "$dir" | grep -E '\.png\.[A-Za-z0-9]{6}$')"
# shellcheck disable=SC2086
check "the user's files are still there" present $theirs

# --------------------------------------------------------------- a new run
# A process killed before it wrote config.conf leaves its lock file and temporaries: the
# folder holds no run, and a new run into it sweeps them.
dir=$work/n
mkdir -p "$dir"
plant
echo 999999 >"$dir/.lock"
run -s run.iterations=10 -s run.dir="$dir"
check "a new run into a folder with leftovers only exits 0" rc_is 0
# shellcheck disable=SC2086
check "the new run removed every leftover" absent $ours .lock
# shellcheck disable=SC2086
check "and kept every other file" present $theirs

test_end
