#!/bin/sh
# SPDX-License-Identifier: MIT
# kill_drill.sh — a small toy run killed with SIGKILL at random moments (before its first
# checkpoint, between checkpoints, in the middle of writing one), each time resumed (or,
# killed before it wrote config.conf, started again) until it completes: its metrics.csv,
# checkpoint tensors and final picture must then be bit for bit an uninterrupted run's,
# and the folder must hold nothing but a run's own files.
#
#   GANCTL_DRILL_SEED=N   replays the moments of an earlier drill (it prints its seed)
#   GANCTL_DRILL_TRIALS=N runs at least N trials (default 12), and more (up to 3N) until
#                         some kills came before the first checkpoint and some while a
#                         checkpoint was being written
#   GANCTL_DRILL_ARGS=... further ganctl options for every run (fp8_train.sh drills an
#                         FP8 run with them)

GANCTL=${GANCTL:-./cli/ganctl}
trials=${GANCTL_DRILL_TRIALS:-12}
failures=0

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-drill.XXXXXX") || exit 99
pid=
trap 'test -n "$pid" && kill -KILL "$pid" 2>/dev/null; rm -rf "$work"' EXIT

test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
export GANCTL_CONFIG

seed=${GANCTL_DRILL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' \n')}
echo "kill drill: seed $seed, $trials trials (GANCTL_DRILL_SEED=$seed replays the kill moments)"

# Tiny networks. Two kinds of trial: a checkpoint after every iteration, so that a good
# part of the run is spent writing checkpoints and random kills land inside some; and
# (every third trial) one every 50 iterations, so that an early kill often finds
# config.conf and metrics.csv written but no checkpoint yet.
common="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
        -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
        -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.iterations=200
        -s run.log_every=5 -s run.eval_every=50 -s run.image_every=100 -s run.metrics_time=false
        ${GANCTL_DRILL_ARGS:-}"
# Every trial trains in this one folder, so that the saved configurations (which name
# the folder) are alike but for run.id.
run=$work/run

fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
}

now_ms() {
    t=$(date +%s%N 2>/dev/null)
    case $t in *N) echo $(($(date +%s) * 1000)) ;; *) echo $((t / 1000000)) ;; esac
}

# Starts the run as it stands: resumed once config.conf exists, else new.
start() {
    if [ -e "$run/config.conf" ]; then
        "$GANCTL" --resume "$run" >"$work/out" 2>"$work/err" &
    else
        # shellcheck disable=SC2086 # $common is a list of options
        "$GANCTL" $common -s run.checkpoint_every="$every" -s run.dir="$run" \
            >"$work/out" 2>"$work/err" &
    fi
    pid=$!
}

# A safetensors file: the 8-byte little-endian length of its JSON header, the header,
# the tensors' bytes.
header_len() { od -An -t u1 -N 8 "$1" | awk '{ n = 0; for (i = NF; i >= 1; i--) n = n * 256 + $i; print n }'; }
tensor_bytes() { tail -c +$(($(header_len "$1") + 9)) "$1"; }
# The header less what differs between two processes: the training time and the run id.
masked_header() {
    n=$(header_len "$1")
    head -c $((n + 8)) "$1" | tail -c "$n" |
        sed -e 's/"elapsed_s":"[^"]*"/"elapsed_s":""/' \
            -e 's/\\n  id = \\"[0-9a-f]*\\"/\\n  id = \\"\\"/' -e 's/ *$//'
}

# --------------------------------------------------------------- the uninterrupted runs
for every in 1 50; do
    t0=$(now_ms)
    # shellcheck disable=SC2086
    "$GANCTL" $common -s run.checkpoint_every=$every -s run.dir="$run" >"$work/out" 2>"$work/err" ||
        { echo "FAIL: the uninterrupted run: $(cat "$work/err")"; exit 1; }
    span=$(($(now_ms) - t0))
    [ "$span" -gt 0 ] || span=1000
    ref=$work/ref-$every
    mv "$run" "$ref"
    tensor_bytes "$ref/checkpoint.safetensors" >"$ref.tensors"
    masked_header "$ref/checkpoint.safetensors" >"$ref.header"
    echo "the uninterrupted run with a checkpoint every $every iterations took $span ms"
done

# The moments: per trial, how many kills (1 to 3) and after how many ms each comes,
# within the time a whole run takes. The first kill of every third trial (a checkpoint
# every 50 iterations) counts from the moment metrics.csv appears ("m" before the ms),
# within a tenth of a run: mostly before the first checkpoint.
# Park and Miller's minimal generator, exact in awk's doubles and the same in every awk
# (awks' own rand() differ, and some repeat themselves for large seeds).
awk -v seed="$seed" -v n=$((3 * trials)) -v span="$span" '
function uniform() { x = (x * 16807) % 2147483647; return x / 2147483647 }
BEGIN {
    x = seed % 2147483646 + 1
    for (i = 0; i < n; i++) {
        kills = 1 + int(uniform() * 3)
        line = kills
        for (k = 0; k < kills; k++) {
            early = k == 0 && i % 3 == 0
            line = line " " (early ? "m" : "") int(uniform() * (early ? span * 0.1 : span))
        }
        print line
    }
}' >"$work/moments"

unborn=0
before=0
writing=0
between=0
trial=0
while read -r kills moments; do
    if [ "$trial" -ge "$trials" ] && [ $((unborn + before)) -gt 0 ] && [ "$writing" -gt 0 ]; then
        break
    fi
    trial=$((trial + 1))
    every=1
    [ $((trial % 3)) -eq 1 ] && every=50
    ref=$work/ref-$every
    rm -rf "$run"
    k=0
    for ms in $moments; do
        k=$((k + 1))
        start
        case $ms in
        m*)
            ms=${ms#m}
            while [ ! -e "$run/metrics.csv" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.002; done
            ;;
        esac
        sleep "$(awk -v ms="$ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
        kill -KILL "$pid" 2>/dev/null
        # (the shell's "Killed" notice is not the drill's news)
        wait "$pid" 2>/dev/null
        rc=$?
        pid=
        if [ "$rc" -eq 0 ]; then
            echo "trial $trial: the run completed before kill $k at $ms ms"
            break
        fi
        if [ "$rc" -ne 137 ]; then
            fail "trial $trial, kill $k: ganctl exited $rc, not by the kill: $(cat "$work/err")"
            break
        fi
        if [ ! -e "$run/config.conf" ]; then
            where="before it wrote config.conf"
            unborn=$((unborn + 1))
        elif [ ! -e "$run/checkpoint.safetensors" ]; then
            where="before the first checkpoint"
            before=$((before + 1))
        elif [ -n "$(ls -A "$run" | grep '^\.checkpoint\.safetensors\.tmp\.')" ]; then
            where="while it wrote a checkpoint"
            writing=$((writing + 1))
        else
            where="between checkpoints"
            between=$((between + 1))
        fi
        echo "trial $trial, kill $k of $kills at $ms ms: $where ($(ls -A "$run" 2>/dev/null | tr '\n' ' '))"
    done
    start
    wait "$pid"
    rc=$?
    pid=
    if [ "$rc" -ne 0 ]; then
        fail "trial $trial: the run did not complete (exit $rc): $(cat "$work/err")"
        continue
    fi
    cmp -s "$run/metrics.csv" "$ref/metrics.csv" ||
        fail "trial $trial: metrics.csv differs from the uninterrupted run's"
    tensor_bytes "$run/checkpoint.safetensors" | cmp -s - "$ref.tensors" ||
        fail "trial $trial: the checkpoint's tensors differ from the uninterrupted run's"
    masked_header "$run/checkpoint.safetensors" | cmp -s - "$ref.header" ||
        fail "trial $trial: the checkpoint's header differs from the uninterrupted run's (beyond elapsed_s and run.id)"
    cmp -s "$run/final.png" "$ref/final.png" ||
        fail "trial $trial: final.png differs from the uninterrupted run's"
    extra=$(ls -A "$run" | grep -v -x -E 'config\.conf|metrics\.csv|summary\.json|checkpoint\.safetensors|final\.png|curves\.png|samples-[0-9]{6}\.png')
    [ -z "$extra" ] || fail "trial $trial: the folder holds more than the run's files: $extra"
    grep -q '"status": "completed"' "$run/summary.json" ||
        fail "trial $trial: summary.json does not say completed"
done <"$work/moments"

echo "$trial trials, $((unborn + before + writing + between)) kills: $unborn before config.conf, $before after it but before the first checkpoint, $writing while writing a checkpoint, $between between checkpoints; $failures failed"
test "$failures" -eq 0
