#!/bin/sh
# SPDX-License-Identifier: MIT
# diverged.sh — a run that diverged says so: FP16 with a static loss scale of 2^30 (every
# critic step overflows, its loss ends NaN) and a critic whose scaler skipped three of
# four finite steps end with exit status 3, status "diverged" in summary.json and a last
# line naming the network, the reason and what to try; the interval judged is the one
# since the last evaluation, and run.diverged_skip_fraction moves the threshold; a
# dynamic scaler's calibration skips are not held against it; healthy runs still exit 0.
# A run whose critic steps were all skipped for non-finite values through
# run.diverged_window steps ends then, exit 3, its checkpoint kept as it was.

. "$(dirname "$0")/../lib/test_lib.sh"
test_begin diverged

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s run.log_every=1 -s run.eval_every=0 -s run.image_every=0"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

last_line_has() { tail -n 1 "$1" | grep -qF -- "$2"; }
# The last row's value in column $2 of the table $1.
last_value() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
                          END { print $c }' "$1"
}

# --------------------------------------------------------------- 2^30, every step overflows
run -s run.iterations=10 --scaler static -s scaler.scale=1073741824 -s run.dir="$work/static"
check "a static scale of 2^30 in FP16 exits with the diverged status 3" rc_is 3
check "summary.json says diverged" has "$work/static/summary.json" '"status": "diverged"'
check "summary.json names the critic" has "$work/static/summary.json" '"network": "critic"'
check "summary.json gives the reason" has "$work/static/summary.json" '"reason": "non-finite loss"'
check "the last line says which network and why" \
    last_line_has "$work/err" "ganctl: diverged: the critic's loss is NaN at iteration 10"
check "it counts the skipped steps" last_line_has "$work/err" "50 of its 50 steps since iteration 0 skipped"
check "it names a smaller scale to try" last_line_has "$work/err" "-s scaler.scale=1024"
check "it points at the scalers' man page" last_line_has "$work/err" "see ganctl-scaler(7)"
check "the run still wrote its checkpoint and final picture" \
    test -s "$work/static/checkpoint.safetensors" -a -s "$work/static/final.png"

# A BF16 run is told of BF16's range, not FP16's.
run -s run.iterations=3 --precision bf16 --scaler static -s scaler.scale=1e38 -s run.dir="$work/bf16"
check "a static scale of 1e38 in BF16 exits 3" rc_is 3
check "the last line says it overflows BF16" last_line_has "$work/err" "(scaler static) overflows BF16: try a smaller one"

# --------------------------------------------------------------- most steps skipped
# The test scaler "skipper" applies the first step and then skips three of every four,
# all of them finite: 30 of the critic's 40 steps.
skipper="--precision fp16 -s critic.scaler.name=skipper --plugin-dir $GANCTL_TEST_PLUGINS/skipper/.libs
         -s run.iterations=10 -s critic.iterations=4"
# shellcheck disable=SC2086
run $skipper -s run.dir="$work/skipper"
check "a critic that skipped 30 of 40 finite steps exits 3" rc_is 3
check "summary.json gives the skipped steps as the reason" \
    has "$work/skipper/summary.json" '"reason": "skipped steps"'
check "summary.json counts them" \
    sh -c 'grep -q "\"skipped\": 30," "$1" && grep -q "\"steps\": 40," "$1"' _ "$work/skipper/summary.json"
check "the last line gives the fraction and the setting" \
    last_line_has "$work/err" "the critic skipped 30 of its 40 steps since iteration 0 (75%, more than run.diverged_skip_fraction = 0.5)"
# shellcheck disable=SC2086
run $skipper -s run.eval_every=5 -s run.dir="$work/interval"
check "only the interval since the last evaluation is judged" \
    last_line_has "$work/err" "the critic skipped 15 of its 20 steps since iteration 5"
# shellcheck disable=SC2086
run $skipper -s run.diverged_skip_fraction=0.8 -s run.dir="$work/threshold"
check "with run.diverged_skip_fraction = 0.8 the same run exits 0" rc_is 0
check "... and summary.json says completed" has "$work/threshold/summary.json" '"status": "completed"'

# --------------------------------------------------------------- a scaler's calibration
# A dynamic critic scale started at 2^24 halves down through its first 10 steps, then
# applies the next 5: skips before the first applied step are not held against it.
run --precision fp16 -s critic.scaler.name=dynamic -s critic.scaler.init=16777216 \
    -s run.iterations=3 -s critic.iterations=5 -s run.dir="$work/calibration"
check "a dynamic scale that calibrates through 10 of its 15 steps exits 0" rc_is 0
check "... having skipped those 10" test "$(last_value "$work/calibration/metrics.csv" critic_skipped)" = 10

# --------------------------------------------------------------- a run that cannot train
# A checkpoint whose first critic weights are all FLT_MAX (finite, so it loads): every
# step from it overflows, so the resumed run stops after run.diverged_window critic steps
# (20 iterations of 5), not after 1500 skipped iterations.
run -s run.iterations=10 -s run.log_every=10 -s run.dir="$work/stalled"
ck=$work/stalled/checkpoint.safetensors
n=$(od -An -t u8 -N8 "$ck" | tr -d ' ')
# shellcheck disable=SC2046 # two numbers
set -- $(dd if="$ck" bs=1 skip=8 count="$n" 2>/dev/null |
         sed -n 's/.*"critic\.fc0\.weight":{[^}]*"data_offsets":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/p')
i=$1
while [ "$i" -lt "$2" ]; do printf '\377\377\177\177'; i=$((i + 4)); done |
    dd of="$ck" bs=1 seek=$((8 + n + $1)) conv=notrunc 2>/dev/null
cp "$ck" "$work/stalled.safetensors"
"$GANCTL" --resume "$work/stalled" -s run.iterations=1510 >"$work/out" 2>"$work/err"
rc=$?
check "a checkpoint that cannot train, resumed for 1500 iterations, exits 3" rc_is 3
check "... at iteration 30, after the window of 100 critic steps" \
    has "$work/stalled/summary.json" '"iterations": 30,'
check "... its last metrics row at iteration 30" test "$(last_value "$work/stalled/metrics.csv" iteration)" = 30
check "summary.json says diverged, with the reason" \
    sh -c 'grep -q "\"status\": \"diverged\"" "$1" && grep -q "\"reason\": \"non-finite steps\"" "$1"' _ "$work/stalled/summary.json"
check "the last line names the window and the checkpoint kept" \
    last_line_has "$work/err" "the critic's last 100 steps (since iteration 10) were all skipped for non-finite values, at least run.diverged_window = 100, so the run stopped at iteration 30 and its checkpoint at iteration 10 is kept"
check "the checkpoint is unchanged" cmp -s "$ck" "$work/stalled.safetensors"
"$GANCTL" --resume "$work/stalled" -s run.iterations=40 -s run.diverged_window=0 >"$work/out" 2>"$work/err"
rc=$?
check "with run.diverged_window = 0 it runs to its end (exit 3 there)" rc_is 3
check "... at iteration 40" has "$work/stalled/summary.json" '"iterations": 40,'

# --------------------------------------------------------------- healthy runs
run -s run.iterations=20 -s run.dir="$work/fp32"
check "a healthy FP32 run exits 0" rc_is 0
check "its summary.json says completed" has "$work/fp32/summary.json" '"status": "completed"'
check "... without a divergence" sh -c '! grep -q "\"divergence\"" "$1"' _ "$work/fp32/summary.json"
"$GANCTL" --resume "$work/fp32" >"$work/out" 2>"$work/err"
rc=$?
check "resuming it with nothing left to train still exits 0" rc_is 0
check "... and leaves it completed" has "$work/fp32/summary.json" '"status": "completed"'
run -s run.iterations=20 --scaler dynamic -s run.eval_every=10 -s run.dir="$work/fp16"
check "a healthy FP16 run with the dynamic scaler exits 0" rc_is 0
check "its log line shows each network's scale and skips" \
    sh -c 'grep -q "^ganctl: iter 10/20 .*  C 2^[0-9]* skip [0-9]*  G 2^[0-9]* skip [0-9]*" "$1"' _ "$work/err"

test_end
