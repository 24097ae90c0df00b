#!/bin/sh
# SPDX-License-Identifier: MIT
# mpi.sh — data-parallel training, two ranks on this machine over loopback (mpirun):
# (a) the weights stay bit-identical across the ranks; (b) 2 ranks × 128 rows against
# 1 process × 256 rows, FP32 and FP16 O2 with underflow-aware scaling, within the
# reduction-order tolerance below; (c) an overflow on one rank only makes every rank skip
# that step and back off; (d) a killed rank ends the run at once, naming the rank, and a
# stopped one within the collective timeout; (e) a
# stop by SIGTERM writes rank 0's checkpoint, resuming continues it bit for bit, and a
# different number of ranks may continue it; and the refusals of a configuration that
# differs between ranks and of a batch that does not split. Skipped (77) without MPI.
#
# Tolerances: the ranks' gradients are summed in another order than one process's batch
# reductions, so FP32 values differ in the last bits (measured: under 1e-6 relative after
# 30 iterations; the test allows 1e-4). In FP16 O2 each rank rounds its own half-batch
# gradient to 16 bits, so the values wander further (measured: under 2e-2 relative after
# 30 iterations; allowed 5e-2), while the scaler's decisions (scale, skips, overflow
# kinds) must be the same.

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin mpi
if [ -z "$GAN_MPIRUN" ]; then
    echo "SKIP: ganctl was built without MPI (configure --with-mpi)"
    exit 77
fi
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 compares the runs"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
compare="python3 $here/mpi_compare.py"

# As CI runs it, as root; two ranks on however few cores.
OMPI_ALLOW_RUN_AS_ROOT=1
OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM \
    OMPI_MCA_rmaps_base_oversubscribe

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=256
      -s critic.iterations=2 -s run.log_every=5 -s run.eval_every=0 -s run.image_every=0
      -s run.metrics_time=false"

mpi() {
    np=$1
    shift
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GAN_MPIRUN" --oversubscribe -np "$np" -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
        -x GANCTL_TEST_OVERFLOW "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

one() {
    # shellcheck disable=SC2086
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# Two ranks' logs are long: a failure shows their ends.
fail_details() {
    echo "  stdout: $(tail -n 5 "$work/out")"
    echo "  stderr: $(tail -n 12 "$work/err")"
}
GANCTL_TEST_OVERFLOW=
export GANCTL_TEST_OVERFLOW

# --------------------------------------------------------------- (a) identical weights
mpi 2 -s run.iterations=30 -s run.dir="$work/a" -s log.level=debug
check "(a) 2 ranks train 30 iterations" rc_is 0
check "the start-up log says 2 ranks, with each rank's backend" \
    sh -c 'grep -q "^ganctl: data parallel: 2 ranks over mpi" "$1" &&
           grep -q "^ganctl: rank 0: backend cpu" "$1" && grep -q "^ganctl: rank 1: backend cpu" "$1"' _ "$work/err"
hash0=$(sed -n 's/^ganctl: debug: parameters bit-identical on all 2 ranks at iteration 30 (hash \(.*\))$/\1/p' "$work/err")
hash1=$(sed -n 's/^ganctl: rank 1: parameters bit-identical on all 2 ranks at iteration 30 (hash \(.*\))$/\1/p' "$work/err")
check "(a) after 30 iterations both ranks hash their weights to the same value" \
    sh -c 'test -n "$1" && test "$1" = "$2"' _ "$hash0" "$hash1"
check "summary.json records the ranks" has "$work/a/summary.json" '"ranks": 2'
check "only rank 0 writes: one metrics row per 5 iterations" test "$(wc -l <"$work/a/metrics.csv")" -eq 7

# --------------------------------------------------------------- (b) 2 × 128 ≡ 1 × 256
mpi 2 -s run.iterations=30 -s run.dir="$work/b2"
check "(b) FP32: 2 ranks × 128 rows train" rc_is 0
one -s run.iterations=30 -s run.dir="$work/b1"
check "(b) FP32: 1 process × 256 rows trains" rc_is 0
check "(b) FP32: metrics.csv rows equal within 1e-4" \
    $compare csv "$work/b2/metrics.csv" "$work/b1/metrics.csv" 1e-4 iteration
check "(b) FP32: final parameters equal within 1e-4" \
    $compare weights "$work/b2/checkpoint.safetensors" "$work/b1/checkpoint.safetensors" 1e-4

scaled="critic_scale critic_skipped critic_overflow generator_scale generator_skipped generator_overflow"
mpi 2 -s run.iterations=30 -s run.dir="$work/h2" --scaler underflow-aware
check "(b) FP16 O2 underflow-aware: 2 ranks × 128 rows train" rc_is 0
one -s run.iterations=30 -s run.dir="$work/h1" --scaler underflow-aware
check "(b) FP16 O2 underflow-aware: 1 process × 256 rows trains" rc_is 0
# shellcheck disable=SC2086 # $scaled is a list of columns
check "(b) FP16: the scaler decides the same, values within 5e-2" \
    $compare csv "$work/h2/metrics.csv" "$work/h1/metrics.csv" 5e-2 iteration $scaled
check "(b) FP16: final parameters equal within 5e-2" \
    $compare weights "$work/h2/checkpoint.safetensors" "$work/h1/checkpoint.safetensors" 5e-2

# --------------------------------------------------------------- (c) one rank overflows
mpi 2 -s run.iterations=10 -s run.dir="$work/c0" --scaler dynamic -s log.level=debug
check "(c) FP16 dynamic without the hook trains" rc_is 0
cp "$work/err" "$work/c0.err"
# (An assignment before a shell function's name would outlive the call: set and unset.)
GANCTL_TEST_OVERFLOW=1:7
mpi 2 -s run.iterations=10 -s run.dir="$work/c1" --scaler dynamic -s log.level=debug
GANCTL_TEST_OVERFLOW=
check "(c) with an overflow on rank 1 only the run completes, the weights still identical" rc_is 0
check "(c) the hook fired on rank 1" has "$work/err" "rank 1: test hook GANCTL_TEST_OVERFLOW: a non-finite critic gradient on rank 1 at iteration 7"
skipped() {
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "critic_skipped") c = i }
             END { print $c }' "$1"
}
check "(c) the critic skipped one step more than without the overflow" \
    test "$(skipped "$work/c1/metrics.csv")" -eq $(($(skipped "$work/c0/metrics.csv") + 1))
line0=$(grep '^ganctl: debug: critic step [0-9]* skipped' "$work/err" | grep -vxF -f "$work/c0.err" |
        head -n 1 | sed 's/^ganctl: debug: //')
check "(c) rank 0 skipped the step rank 1 overflowed in, and rank 1 skipped it with the same next scale" \
    sh -c 'test -n "$1" && grep -qF "ganctl: rank 1: $1" "$2"' _ "$line0" "$work/err"

# --------------------------------------------------------------- (d) a rank killed
"$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    "$GANCTL" $tiny -s run.iterations=100000000 -s run.dir="$work/d" >"$work/out" 2>"$work/err" &
launcher=$!
rank1=
for _ in $(seq 100); do
    for p in $(pgrep -f -- "run.dir=$work/d"); do
        if [ "$p" != "$launcher" ] && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
                grep -qx OMPI_COMM_WORLD_RANK=1; then
            rank1=$p
        fi
    done
    [ -n "$rank1" ] && [ -s "$work/d/metrics.csv" ] && break
    sleep 0.1
done
start=$(date +%s)
[ -n "$rank1" ] && kill -9 "$rank1"
# Bounded: ten seconds, then the test ends the run itself and fails.
for _ in $(seq 100); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then kill -9 "$launcher"; fi
wait "$launcher"
rc=$?
took=$(($(date +%s) - start))
check "(d) rank 1 was found and killed" test -n "$rank1"
check "(d) the run ends within 10 s of the kill (took ${took} s) with a non-zero status" \
    sh -c 'test "$1" -le 10 && test "$2" -ne 0' _ "$took" "$rc"
check "(d) one line names the rank and what happened" \
    sh -c 'grep -q "process rank 1 .* exited on signal 9 (Killed)" "$1"' _ "$work/err"

# --------------------------------------------------------------- (d) a rank that hangs
GANCTL_COLLECTIVE_TIMEOUT=3
export GANCTL_COLLECTIVE_TIMEOUT
"$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    -x GANCTL_COLLECTIVE_TIMEOUT \
    "$GANCTL" $tiny -s run.iterations=100000000 -s run.dir="$work/h" >"$work/out" 2>"$work/err" &
launcher=$!
rank1=
for _ in $(seq 100); do
    for p in $(pgrep -f -- "run.dir=$work/h"); do
        if [ "$p" != "$launcher" ] && tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
                grep -qx OMPI_COMM_WORLD_RANK=1; then
            rank1=$p
        fi
    done
    [ -n "$rank1" ] && [ -s "$work/h/metrics.csv" ] && break
    sleep 0.1
done
start=$(date +%s)
[ -n "$rank1" ] && kill -STOP "$rank1"
for _ in $(seq 200); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$launcher" 2>/dev/null; then kill -9 "$launcher"; fi
wait "$launcher"
rc=$?
took=$(($(date +%s) - start))
[ -n "$rank1" ] && kill -CONT "$rank1" 2>/dev/null
unset GANCTL_COLLECTIVE_TIMEOUT
check "(d) a stopped rank ends the run within the collective timeout (3 s; took ${took} s), non-zero" \
    sh -c 'test "$1" -le 15 && test "$2" -ne 0' _ "$took" "$rc"
check "(d) ... rank 0 says it had no answer" \
    has "$work/err" "ganctl: rank 0: no answer from the other ranks for 3 s in a collective"

# --------------------------------------------------------------- (e) stop and resume
# A constant learning rate: the default linear decay follows run.iterations, which a
# resumed run raises.
tiny="$tiny -s critic.optimizer.lr_decay=none -s generator.optimizer.lr_decay=none"
mpi 2 -s run.iterations=20 -s run.dir="$work/e20" -s run.checkpoint_every=10
check "(e) an uninterrupted 2-rank run of 20 iterations" rc_is 0
mpi 2 -s run.iterations=10 -s run.dir="$work/e"
"$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    "$GANCTL" --resume "$work/e" -s run.iterations=20 >"$work/out" 2>"$work/err"
rc=$?
check "(e) 2 ranks resume a 2-rank run" rc_is 0
# Rows after the resume (the first session's last row also holds its final evaluation).
after10() { awk -F, 'NR == 1 || $1 > 10' "$1" >"$2"; }
after10 "$work/e/metrics.csv" "$work/e.csv"
after10 "$work/e20/metrics.csv" "$work/e20.csv"
check "(e) the resumed run's metrics.csv rows are the uninterrupted one's" cmp -s "$work/e.csv" "$work/e20.csv"
check "(e) and its weights bit for bit" \
    $compare same "$work/e/checkpoint.safetensors" "$work/e20/checkpoint.safetensors"

# A different number of ranks continues the same run: the checkpoint holds the global
# batch's streams, not a rank's.
mpi 2 -s run.iterations=10 -s run.dir="$work/n"
"$GANCTL" --resume "$work/n" -s run.iterations=20 >"$work/out" 2>"$work/err"
rc=$?
check "(e) one process resumes a 2-rank run" rc_is 0
after10 "$work/n/metrics.csv" "$work/n.csv"
check "(e) ... and ends where 2 ranks do, within 1e-4" $compare csv "$work/n.csv" "$work/e20.csv" 1e-4 iteration

"$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    "$GANCTL" $tiny -s run.iterations=100000000 -s run.dir="$work/s" >"$work/out" 2>"$work/err" &
launcher=$!
for _ in $(seq 100); do [ -s "$work/s/metrics.csv" ] && break; sleep 0.1; done
kill -TERM "$launcher"
wait "$launcher"
check "(e) SIGTERM to mpirun: rank 0 writes the checkpoint" test -s "$work/s/checkpoint.safetensors"
check "(e) ... the summary says interrupted" has "$work/s/summary.json" '"status": "interrupted"'
check "(e) ... and says how to continue" has "$work/err" "continue with ganctl --resume $work/s"
stopped=$(sed -n 's/.*"iterations": \([0-9]*\),.*/\1/p' "$work/s/summary.json" | head -n 1)
"$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    "$GANCTL" --resume "$work/s" -s run.iterations=$((stopped + 5)) >"$work/out" 2>"$work/err"
rc=$?
check "(e) ... from which 2 ranks resume" rc_is 0

# A diverged run ends on every rank alike: exit 3 through mpirun, rank 0's summary
# written, and no rank aborting the others while rank 0 still writes.
mpi 2 -s run.iterations=10 -s run.dir="$work/dv" --scaler static -s scaler.scale=1073741824
check "a 2-rank run that diverges exits 3" test "$rc" -eq 3
check "... with summary.json saying diverged" grep -q '"status": "diverged"' "$work/dv/summary.json"
check "... and the diverged line" grep -q '^ganctl: diverged: the critic' "$work/err"
check "... without an MPI abort" sh -c '! grep -q MPI_ABORT "$1"' _ "$work/err"

# --------------------------------------------------------------- refusals
"$GAN_MPIRUN" --oversubscribe -x GANCTL_PLUGIN_PATH -x GANCTL_CONFIG \
    -np 1 "$GANCTL" $tiny -s run.iterations=5 -s run.dir="$work/m" -s run.seed=1 : \
    -np 1 "$GANCTL" $tiny -s run.iterations=5 -s run.dir="$work/m" -s run.seed=2 \
    >"$work/out" 2>"$work/err"
rc=$?
check "ranks with different seeds are refused (non-zero)" test "$rc" -ne 0
check "... with one line naming the setting and both values" \
    test "$(grep -c '^ganctl: the 2 ranks were started with different settings (run.seed = 2 on rank 1, run.seed = 1 on rank 0)' "$work/err")" -eq 1
check "... and nothing else from ganctl" test "$(grep -c '^ganctl:' "$work/err")" -eq 1
check "... before any iteration" sh -c '! test -s "$1/metrics.csv" || test "$(wc -l <"$1/metrics.csv")" -le 1' _ "$work/m"

GANCTL_COLLECTIVE_TIMEOUT=15m "$GAN_MPIRUN" --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH \
    -x GANCTL_CONFIG -x GANCTL_COLLECTIVE_TIMEOUT "$GANCTL" $tiny -s run.iterations=5 \
    -s run.dir="$work/timeout" >"$work/out" 2>"$work/err"
rc=$?
check "a GANCTL_COLLECTIVE_TIMEOUT that is not a number is refused, not taken as 0" test "$rc" -eq 2
check "... naming the variable and its value, in one line" \
    test "$(grep -c 'GANCTL_COLLECTIVE_TIMEOUT="15m" is not a whole number' "$work/err")" -eq 1
check "... from rank 0" grep -q '^ganctl: GANCTL_COLLECTIVE_TIMEOUT="15m"' "$work/err"
check "... with every rank refusing together, without an MPI abort" sh -c '! grep -q MPI_ABORT "$1"' _ "$work/err"
check "... before the run folder is made" test ! -e "$work/timeout"

mpi 2 -s run.iterations=5 -s run.dir="$work/odd" -s data.batch_size=100
check "a batch that 4 × 2 ranks do not divide is refused" test "$rc" -ne 0
check "... with one line naming the setting" \
    test "$(grep -c '^ganctl: data.batch_size = 100 cannot be split over 2 ranks' "$work/err")" -eq 1

test_end
