#!/bin/sh
# SPDX-License-Identifier: MIT
# train.sh — end-to-end training with the ganctl program on a tiny WGAN-GP: the run folder's
# files, the final quality line, --resume, ganctl grads, mixed precision with loss scalers, and
# SIGINT/SIGTERM writing a checkpoint.

GANCTL=${GANCTL:-./cli/ganctl}
failures=0
checks=0

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-train.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT

test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
export GANCTL_CONFIG

# A network small enough that a few hundred iterations take seconds.
tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.log_every=5
      -s run.eval_every=10 -s run.image_every=10 -s run.checkpoint_every=20"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
    echo "  stdout: $(cat "$work/out")"
    echo "  stderr: $(cat "$work/err")"
}

check() {
    what=$1
    shift
    checks=$((checks + 1))
    if "$@"; then echo "ok: $what"; else fail "$what"; fi
}

rc_is() { test "$rc" -eq "$1"; }
has() { grep -qF -- "$2" "$1"; }
lacks() { ! grep -qF -- "$2" "$1"; }
is_png() { test "$(head -c 8 "$1" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n'; }
last_iteration() { tail -n 1 "$1" | cut -d, -f1; }

# --------------------------------------------------------------- a short run
run -s run.iterations=30 -s run.dir="$work/a"
check "a short run exits 0" rc_is 0
check "it prints the final quality with its floors" \
    has "$work/out" "quality at iteration 30 (8gaussians, 2500 generated vs 2500 real samples): modes"
check "the floors are beside the values" sh -c 'grep -q "(floor 8/8), high-quality .* (floor .*%), sliced W1 .* (floor " "$1"' _ "$work/out"
check "it names the run folder" has "$work/out" "run folder $work/a"
for f in metrics.csv summary.json config.conf checkpoint.safetensors final.png \
         samples-000010.png samples-000020.png samples-000030.png; do
    check "the run folder has $f" test -s "$work/a/$f"
done
check "final.png is a PNG" is_png "$work/a/final.png"
check "metrics.csv starts with its header" \
    sh -c 'head -n 1 "$1" | grep -q "^iteration,time_s,critic_loss,generator_loss,.*,sliced_w1$"' _ "$work/a/metrics.csv"
check "metrics.csv has a row every 5 iterations" test "$(wc -l <"$work/a/metrics.csv")" -eq 7
check "metrics.csv ends at iteration 30" test "$(last_iteration "$work/a/metrics.csv")" = 30
check "summary.json says completed" has "$work/a/summary.json" '"status": "completed"'
check "summary.json has the floor" has "$work/a/summary.json" '"real_vs_real_floor"'
check "stderr is plain log lines when not a terminal" \
    sh -c 'grep -q "^ganctl: iter 10/30 " "$1" && ! grep -q "$(printf "\r")" "$1"' _ "$work/err"
check "the checkpoint names the networks' parameters" has "$work/a/checkpoint.safetensors" '"critic.fc0.weight"'
check "config.conf can be read back" sh -c '"$1" -c "$2" --print-config >/dev/null 2>&1' _ "$GANCTL" "$work/a/config.conf"

run -s run.iterations=30 -s run.dir="$work/a"
check "a folder holding a run is refused" sh -c 'test '"$rc"' -eq 2 && grep -q "already holds a run: continue it with ganctl --resume" "$1"' _ "$work/err"

# --------------------------------------------------------------- --resume
"$GANCTL" --resume "$work/a" -s run.iterations=40 >"$work/out" 2>"$work/err"
rc=$?
check "--resume with more iterations exits 0" rc_is 0
check "--resume continues metrics.csv" test "$(last_iteration "$work/a/metrics.csv")" = 40
check "--resume keeps the earlier rows" test "$(grep -c '^30,' "$work/a/metrics.csv")" -eq 1
check "--resume reports 40 iterations" has "$work/out" "trained: 40 of 40 iterations"
"$GANCTL" --resume "$work/a" -s critic.model.width=8 >"$work/out" 2>"$work/err"
rc=$?
check "--resume refuses a change to the networks (exit 2, one line)" \
    sh -c 'test '"$rc"' -eq 2 && test "$(wc -l <"$1")" -eq 1' _ "$work/err"
check "--resume names the setting it refuses" \
    has "$work/err" "critic.model.width = 8, but the run in $work/a was trained with 16"
"$GANCTL" --resume "$work/nowhere" >"$work/out" 2>"$work/err"
rc=$?
check "--resume of a folder without a run exits 2" rc_is 2
check "--resume of a folder that does not exist says so" \
    has "$work/err" "--resume $work/nowhere: the folder does not exist"
mkdir "$work/empty"
"$GANCTL" --resume "$work/empty" >"$work/out" 2>"$work/err"
rc=$?
check "--resume of an empty folder exits 2" rc_is 2
check "--resume of an empty folder says it holds no checkpoint" has "$work/err" "no checkpoint there"

# --------------------------------------------------------------- ganctl grads
# A batch file of two samples written byte by byte (safetensors: an 8-byte little-endian
# header length, the JSON header padded with spaces to a multiple of 8, then the F32 data):
# real [[1, -0.5], [-1, 0.5]], z [[0.5, 0.25], [-0.25, 1]], alpha [[0.25], [0.75]].
write_batch() {
    header='{"alpha":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},"real":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},"z":{"dtype":"F32","shape":[2,2],"data_offsets":[24,40]}}'
    while [ $(( (${#header} + 8) % 8 )) -ne 0 ]; do header="$header "; done
    {
        printf "\\$(printf '%03o' "${#header}")\\000\\000\\000\\000\\000\\000\\000"
        printf '%s' "$header"
        printf '\000\000\200\076\000\000\100\077'                                   # alpha
        printf '\000\000\200\077\000\000\000\277\000\000\200\277\000\000\000\077'   # real
        printf '\000\000\000\077\000\000\200\076\000\000\200\276\000\000\200\077'   # z
    } >"$1"
}
write_batch "$work/batch.safetensors"
"$GANCTL" grads --checkpoint "$work/a" --batch "$work/batch.safetensors" --out "$work/grads.safetensors" \
    >"$work/out" 2>"$work/err"
rc=$?
check "grads exits 0" rc_is 0
check "grads says what it wrote" \
    has "$work/out" "wrote $work/grads.safetensors: gradients of 6 critic and 6 generator tensors and 5 loss values, checkpoint iteration 40, batch of 2; loss.critic "
for name in critic.fc0.weight critic.fc2.bias generator.fc0.weight generator.fc2.bias \
            loss.critic loss.generator loss.penalty loss.w_distance loss.grad_norm; do
    check "the dump holds $name" has "$work/grads.safetensors" "\"$name\":{\"dtype\":\"F32\""
done
check "the dump names its format" has "$work/grads.safetensors" '"format":"ganctl-grads"'
"$GANCTL" grads --checkpoint "$work/a/checkpoint.safetensors" --batch "$work/a/checkpoint.safetensors" \
    --out "$work/bad.safetensors" >"$work/out" 2>"$work/err"
rc=$?
check "grads on a file without the batch tensors exits 1 with one line" \
    sh -c 'test '"$rc"' -eq 1 && test "$(wc -l <"$1")" -eq 1' _ "$work/err"
check "grads names the missing tensor and the shapes" \
    has "$work/err" 'the batch has no tensor "real"; a batch file holds real [B, 2], z [B, Z] and optionally alpha [B, 1]'
check "grads wrote nothing then" test ! -e "$work/bad.safetensors"
"$GANCTL" grads --checkpoint "$work/a" --batch "$work/batch.safetensors" >"$work/out" 2>"$work/err"
rc=$?
check "grads without --out is a usage error" \
    sh -c 'test '"$rc"' -eq 2 && grep -q -- "--out is missing" "$1"' _ "$work/err"
"$GANCTL" grads --help >"$work/out" 2>"$work/err"
rc=$?
check "grads --help exits 0 and shows the options" \
    sh -c 'test '"$rc"' -eq 0 && grep -q -- "--checkpoint FILE" "$1"' _ "$work/out"

# --------------------------------------------------------------- mixed precision
# --scaler alone implies fp16 O2 (the user's own command line, on the cpu backend).
run -s run.iterations=10 -s run.dir="$work/ua" --scaler underflow-aware
check "--scaler underflow-aware alone trains (exit 0)" rc_is 0
check "--scaler alone implies fp16, and config.conf says why" \
    has "$work/ua/config.conf" 'mode = "fp16";  # implied by scaler.name = "underflow-aware" (--scaler underflow-aware)'
check "metrics.csv has each network's scale, skips, overflow and underflow" \
    sh -c 'head -n 1 "$1" | grep -q ",critic_scale,critic_skipped,critic_overflow,critic_underflow_frac,generator_scale,generator_skipped,generator_overflow,generator_underflow_frac,"' _ "$work/ua/metrics.csv"
check "the checkpoint holds each scaler's state" \
    sh -c 'grep -q "\"scaler.critic.scale\":{\"dtype\":\"F64\"" "$1" && grep -q "\"scaler.generator\":\"underflow-aware/" "$1"' _ "$work/ua/checkpoint.safetensors"
check "summary.json has the final scales and skipped counts" \
    sh -c 'grep -q "\"critic_scale\": " "$1" && grep -q "\"generator_skipped\": " "$1"' _ "$work/ua/summary.json"
"$GANCTL" --resume "$work/ua" -s run.iterations=15 >"$work/out" 2>"$work/err"
rc=$?
check "an fp16 run resumes" rc_is 0
"$GANCTL" --resume "$work/ua" -s run.iterations=20 --scaler dynamic >"$work/out" 2>"$work/err"
rc=$?
check "--resume refuses another scaler" \
    sh -c 'test '"$rc"' -eq 2 && grep -q "scaler.name = \"dynamic\", but the run in" "$1"' _ "$work/err"

# A forced-low static scale flushes the FP16 gradients; FP32 has none to flush.
underflow() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                                 { print $k }' "$1" | tail -n 1; }
run -s run.iterations=10 -s run.dir="$work/low" --scaler static -s scaler.scale=1e-6
check "a static scale of 1e-6 trains (exit 0)" rc_is 0
positive() { awk -v x="$1" 'BEGIN { exit !(x + 0 > 0) }'; }
check "at scale 1e-6 metrics.csv shows the critic's gradients underflowing" \
    positive "$(underflow "$work/low/metrics.csv" critic_underflow_frac)"
check "at scale 1e-6 metrics.csv shows the generator's gradients underflowing" \
    positive "$(underflow "$work/low/metrics.csv" generator_underflow_frac)"
run -s run.iterations=10 -s run.dir="$work/fp32"
check "fp32 shows no underflow" test "$(underflow "$work/fp32/metrics.csv" critic_underflow_frac)" = 0

# --debug-level 1: the per-tensor table in the log and grad_stats.csv.
run -s run.iterations=5 -s run.dir="$work/dbg" --precision bf16 --scaler dynamic --debug-level 1
check "--debug-level 1 trains (exit 0)" rc_is 0
check "--debug-level 1 writes grad_stats.csv" \
    sh -c 'head -n 1 "$1" | grep -q "^iteration,network,tensor,role,dtype,scale,elements,zero_frac,subnormal_frac,nonfinite,absmax,min_nonzero,norm$" && grep -q "^5,critic,critic.fc0.weight,param,BF16," "$1"' _ "$work/dbg/grad_stats.csv"
check "--debug-level 1 logs the table" has "$work/err" "  critic.fc0.weight            BF16"

# Bad precision and scaler settings: one line each, exit 2 (1 for a missing module).
bad() {
    expect=$1
    rc_want=$2
    shift 2
    run -s run.iterations=1 -s run.dir="$work/bad" "$@"
    check "$* is refused with one line" sh -c 'test '"$rc"' -eq '"$rc_want"' && test "$(wc -l <"$1")" -eq 1' _ "$work/err"
    check "$* says why" has "$work/err" "$expect"
}
bad 'a loss scale does nothing in FP32; use --scaler none, or --precision fp16' 2 --precision fp32 --scaler dynamic
bad '"precision.mode" must be one of fp32, fp16, bf16, fp8, got "fp4"' 2 --precision fp4
bad '"precision.level" must be one of O1, O2, got "O3"' 2 -s precision.level=O3
bad '"penalty.inner_scale" must be "outer" or a number > 0 (at most 1e30), got 0' 2 -s penalty.inner_scale=0
bad '"run.debug_level" must be between 0 and 2, got 3' 2 --debug-level 3
bad 'scaler "gone" not found: looked for scaler-gone.so' 1 --scaler gone
bad 'backoff_factor' 2 --scaler dynamic -s scaler.backoff_factor=2
check "no bad run made a folder" test ! -e "$work/bad"

# --------------------------------------------------------------- vector levels
# The cpu backend's portable and vector kernels compute the same bits, so a run's metrics do
# not depend on backend.vector (the level is named on --version either way).
run --backend cpu --version
cp "$work/out" "$work/vector-version" 2>/dev/null
cat "$work/err" >>"$work/vector-version" 2>/dev/null
for prec in fp32 fp16 bf16; do
    run --precision "$prec" -s run.iterations=20 -s run.metrics_time=false -s backend.vector=portable \
        -s run.dir="$work/vp-$prec"
    check "a $prec run on the portable level exits 0" rc_is 0
    run --precision "$prec" -s run.iterations=20 -s run.metrics_time=false -s backend.vector=auto \
        -s run.dir="$work/va-$prec"
    check "a $prec run on the widest level exits 0" rc_is 0
    check "$prec metrics are identical on the portable and widest levels" \
        cmp -s "$work/vp-$prec/metrics.csv" "$work/va-$prec/metrics.csv"
    # On an AVX-512 CPU the widest level is that one; the AVX2 level (f16c) is checked too.
    if grep -q 'AVX-512' "$work/vector-version" 2>/dev/null; then
        run --precision "$prec" -s run.iterations=20 -s run.metrics_time=false \
            -s backend.vector=f16c -s run.dir="$work/vf-$prec"
        check "a $prec run on the f16c level exits 0" rc_is 0
        check "$prec metrics are identical on the portable and f16c levels" \
            cmp -s "$work/vp-$prec/metrics.csv" "$work/vf-$prec/metrics.csv"
    fi
done
run --backend cpu -s backend.vector=sse --version
check "an unknown vector level is a configuration error" rc_is 2
check "it lists the levels" has "$work/err" '"auto" (the widest this CPU runs), "avx512", "f16c" or "portable"'

# --------------------------------------------------------------- signals
# stop_with SIGNAL DIR: starts a long run, waits for its first rows, sends SIGNAL.
stop_with() {
    # shellcheck disable=SC2086
    "$GANCTL" $tiny -s run.iterations=1000000 -s run.checkpoint_every=0 -s run.dir="$2" \
        >"$work/out" 2>"$work/err" &
    pid=$!
    tries=0
    while [ "$(cat "$2/metrics.csv" 2>/dev/null | wc -l)" -lt 3 ] && [ $tries -lt 600 ]; do
        sleep 0.1
        tries=$((tries + 1))
    done
    kill "-$1" "$pid"
    wait "$pid"
    rc=$?
}

stop_with INT "$work/int"
check "SIGINT exits 130" rc_is 130
check "SIGINT writes a checkpoint" test -s "$work/int/checkpoint.safetensors"
check "SIGINT writes summary.json as interrupted" has "$work/int/summary.json" '"status": "interrupted"'
check "SIGINT draws curves.png from the rows so far" test -s "$work/int/curves.png"
check "SIGINT says how to continue" has "$work/err" "continue with ganctl --resume $work/int"
stopped=$(sed -n 's/.*"iterations": \([0-9]*\),.*/\1/p' "$work/int/summary.json" | head -n 1)
check "the stopped run counted its iterations" test "${stopped:-0}" -gt 0
"$GANCTL" --resume "$work/int" -s run.iterations=$((stopped + 7)) >"$work/out" 2>"$work/err"
rc=$?
check "a run stopped by SIGINT resumes" rc_is 0
check "the resumed run finishes where asked" has "$work/out" "trained: $((stopped + 7)) of $((stopped + 7)) iterations"

stop_with TERM "$work/term"
check "SIGTERM exits 143" rc_is 143
check "SIGTERM writes a checkpoint" test -s "$work/term/checkpoint.safetensors"

# ------------------------------------------------------- critic.join_batches
# The real and fake batches scored as one: the same numbers up to the order of the sums.
run -s run.iterations=5 -s run.log_every=1 -s run.metrics_time=false -s run.dir="$work/sep"
check "a run with separate critic batches exits 0" rc_is 0
run -s run.iterations=5 -s run.log_every=1 -s run.metrics_time=false \
    -s critic.join_batches=true -s run.dir="$work/joined"
check "a run with joined critic batches exits 0" rc_is 0
close_rows() {
    # columns 3-8: the losses, the W estimate, the penalty and the gradient norms
    awk -F, 'NR == FNR { for (i = 3; i <= 8; i++) a[FNR, i] = $i; next }
             FNR > 1 { for (i = 3; i <= 8; i++) { d = $i - a[FNR, i]; if (d < 0) d = -d
                       m = a[FNR, i] < 0 ? -a[FNR, i] : a[FNR, i]
                       if (d > 1e-4 * (1 + m)) { print "row " FNR " column " i ": " $i " vs " a[FNR, i]; bad = 1 } }
                       rows++ }
             END { exit bad || rows < 5 }' "$1" "$2"
}
check "joined critic batches give the separate batches' numbers within 1e-4" \
    close_rows "$work/sep/metrics.csv" "$work/joined/metrics.csv"
check "the joined run's configuration records critic.join_batches" \
    has "$work/joined/config.conf" "join_batches = true"
# The per-op report of debug level 2 lists the critic's forward ops: once on 2B rows
# (then split by slice0) when joined, once per batch of B rows when not.
run --precision fp16 --debug-level 2 -s run.iterations=2 -s run.dir="$work/sep16"
run --precision fp16 --debug-level 2 -s run.iterations=2 -s critic.join_batches=true \
    -s run.dir="$work/joined16"
first_layer() { # FOLDER: "count elements" of the critic's first-layer forward ops
    awk -F, '$1 == 2 && $2 == "critic" && $3 == "op" && $4 ~ / critic\.fc0:linear$/ {
                 n++; e = $7 } END { print n + 0, e + 0 }' "$1/grad_underflow.csv"
}
check "separate critic batches: two first-layer forwards of 32 rows" \
    test "$(first_layer "$work/sep16")" = "2 512"
check "joined critic batches: one first-layer forward of 64 rows" \
    test "$(first_layer "$work/joined16")" = "1 1024"
check "joined critic batches split the scores with slice0" \
    grep -q ',critic,op,[0-9]* slice0,' "$work/joined16/grad_underflow.csv"

echo "$checks checks, $failures failed"
test "$failures" -eq 0
