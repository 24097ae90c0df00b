#!/bin/sh
# SPDX-License-Identifier: MIT
# after_train.sh — the commands that read a finished run, end to end on tiny runs: ganctl
# sample (shapes, determinism for a seed, each output form), ganctl eval (the trainer's own
# final metrics, and nothing in the folder written), ganctl plot and the run's curves.png,
# and the refusals; for a toy run and, with the Debian data set, a Fashion-MNIST run.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}

test_begin after
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 reads the JSON and safetensors files"; exit 77; }
XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
export XDG_CACHE_HOME
# The checks run whole commands of their own: a failure shows what each printed.
check_output=yes

# The checks' Python: a PNG's size from its IHDR chunk, a safetensors file's tensors as
# NAME=SHAPE words, and eval's JSON against summary.json's quality (equal values;
# summary.json keeps ten significant digits).
cat >"$work/look.py" <<'PY'
import json, struct, sys
what, path = sys.argv[1], sys.argv[2]
if what == "png":
    d = open(path, "rb").read(24)
    assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    print("%dx%d" % struct.unpack(">II", d[16:24]))
elif what == "shapes":
    f = open(path, "rb")
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    h.pop("__metadata__", None)
    print(" ".join("%s=%s" % (k, h[k]["shape"]) for k in sorted(h)))
else:
    e = json.load(open(path)); s = json.load(open(sys.argv[3]))["quality"]
    assert e["iteration"] == s["iteration"] and e["samples"] == s["samples"], (e, s)
    for part in ("generated", "real_vs_real_floor"):
        assert sorted(e[part]) == sorted(s[part]), (e[part], s[part])
        for k, v in s[part].items():
            w = e[part][k]
            assert (v is None) == (w is None), (k, v, w)
            if v is not None:
                assert abs(w - v) <= 1e-9 * max(1.0, abs(v)), (part, k, v, w)
        print(part, e[part])
PY
LOOK="python3 $work/look.py"
export LOOK

folder_state() {
    (cd "$1" && ls -l --time-style=+%s && md5sum ./*) 2>/dev/null
}

# --------------------------------------------------------------- a toy run
toy="-s backend.threads=1 -s run.iterations=20 -s generator.model.width=16
     -s critic.model.width=16 -s data.batch_size=64 -s run.log_every=5 -s run.eval_every=10
     -s run.image_every=0 -s run.metrics_time=false"
# shellcheck disable=SC2086 # $toy is a list of options
"$GANCTL" $toy -s run.dir="$work/toy" >"$work/train.out" 2>&1
check "a toy run trains" test -s "$work/toy/checkpoint.safetensors"
check "the run folder holds curves.png of 1400x1080" sh -c \
    '[ "$($LOOK png "$1")" = 1400x1080 ]' _ "$work/toy/curves.png"

folder_state "$work/toy" >"$work/before"
check "sample writes N points as CSV" sh -c \
    '"$1" sample "$2" -n 300 --out "$3/a.csv" &&
     [ "$(head -n 1 "$3/a.csv")" = x,y ] && [ "$(wc -l <"$3/a.csv")" -eq 301 ] &&
     [ "$(awk -F, "NR > 1 && NF != 2" "$3/a.csv" | wc -l)" -eq 0 ]' _ "$GANCTL" "$work/toy" "$work"
check "the same seed gives the same points" sh -c \
    '"$1" sample "$2" -n 300 --out "$3/b.csv" && cmp "$3/a.csv" "$3/b.csv"' _ \
    "$GANCTL" "$work/toy" "$work"
check "a checkpoint file samples as its folder does" sh -c \
    '"$1" sample "$2/checkpoint.safetensors" -n 300 --out "$3/c.csv" && cmp "$3/a.csv" "$3/c.csv"' _ \
    "$GANCTL" "$work/toy" "$work"
check "another thread count gives the same points" sh -c \
    '"$1" sample "$2" -n 300 -s backend.threads=2 --out "$3/t.csv" && cmp "$3/a.csv" "$3/t.csv"' _ \
    "$GANCTL" "$work/toy" "$work"
check "another seed gives other points" sh -c \
    '"$1" sample "$2" -n 300 --seed 12 --out "$3/d.csv" && ! cmp -s "$3/a.csv" "$3/d.csv"' _ \
    "$GANCTL" "$work/toy" "$work"
check "the first points do not depend on N" sh -c \
    '"$1" sample "$2" -n 100 --out "$3/e.csv" && head -n 101 "$3/a.csv" | cmp - "$3/e.csv"' _ \
    "$GANCTL" "$work/toy" "$work"
check "sample --out .safetensors holds samples [N, 2] and z [N, 2]" sh -c \
    '"$1" sample "$2" -n 7 --out "$3/s.safetensors" &&
     [ "$($LOOK shapes "$3/s.safetensors" )" = "samples=[7, 2] z=[7, 2]" ]' _ \
    "$GANCTL" "$work/toy" "$work"
check "sample --out .png draws the points" sh -c \
    '"$1" sample "$2" --out "$3/p.png" && $LOOK png "$3/p.png" | grep -qE "^[0-9]+x[0-9]+$"' _ \
    "$GANCTL" "$work/toy" "$work"
check "eval prints the quality beside its floors" sh -c \
    '"$1" eval "$2" --json "$3/eval.json" >"$3/eval.out" &&
     grep -q "quality at iteration 20 (8gaussians, 2500 generated vs 2500 real samples): modes .* (floor" "$3/eval.out"' _ \
    "$GANCTL" "$work/toy" "$work"
check "eval equals the trainer's final evaluation" $LOOK same "$work/eval.json" "$work/toy/summary.json"
check "eval --samples measures at that n" sh -c \
    '"$1" eval "$2" --samples 500 --json "$3/eval500.json" >/dev/null &&
     grep -q "\"samples\": 500" "$3/eval500.json"' _ "$GANCTL" "$work/toy" "$work"
folder_state "$work/toy" >"$work/after"
check "sample and eval leave the run folder as it was" cmp "$work/before" "$work/after"

# In FP16 the generator computes under the run's precision policy, as in training.
# shellcheck disable=SC2086
"$GANCTL" $toy --scaler dynamic -s run.dir="$work/fp16" >/dev/null 2>&1
check "eval of an FP16 run equals its final evaluation" sh -c \
    '"$1" eval "$2" --json "$3/eval16.json" >/dev/null && $LOOK same "$3/eval16.json" "$2/summary.json"' _ \
    "$GANCTL" "$work/fp16" "$work"

check "plot redraws curves.png from metrics.csv" sh -c \
    '"$1" plot "$2" >/dev/null && [ "$($LOOK png "$2/curves.png")" = 1400x1080 ]' _ "$GANCTL" "$work/toy"

# A table by hand: empty cells, inf and NaN, overflow kinds, a scale that reaches 0.
cat >"$work/metrics.csv" <<'CSV'
iteration,critic_loss,generator_loss,w_distance,penalty,critic_scale,critic_skipped,critic_overflow,critic_underflow_frac,generator_scale,generator_skipped,generator_overflow,generator_underflow_frac,critic_true_underflow,generator_true_underflow,modes_covered,high_quality_pct,sliced_w1
10,-2.5,,3.5,10.2,6.1e-05,0,none,0.98,6.1e-05,0,none,0.7,0.3,0.01,,,
20,-1.0,0.5,2.0,5.0,3.05e-05,1,gradient,0.99,6.1e-05,0,none,0.6,0.35,0.02,3,40.5,0.5
30,inf,-20000,-inf,2000,0,6,forward,nan,1e-20,4,both,1,,,,,
40,nan,nan,nan,1,0,11,forward,nan,0,9,forward,nan,,,0,0,nan
CSV
check "plot draws a metrics.csv file at 1400x1080" sh -c \
    '"$1" plot "$2/metrics.csv" --out "$2/hand.png" >/dev/null && [ "$($LOOK png "$2/hand.png")" = 1400x1080 ]' _ \
    "$GANCTL" "$work"
printf 'iteration,critic_loss\n' >"$work/empty.csv"
check "plot draws a table without rows" "$GANCTL" plot "$work/empty.csv" --out "$work/empty.png"
check "plot refuses a file that is not a metrics table" sh -c \
    '! "$1" plot "$2/a.csv" --out "$2/x.png" 2>"$2/err" && grep -q "not a metrics table" "$2/err"' _ \
    "$GANCTL" "$work"

# --------------------------------------------------------------- refusals
check "a folder that is not a run folder is refused with exit 2" sh -c \
    'mkdir -p "$2/empty"; "$1" sample "$2/empty" --out "$2/x.csv" 2>"$2/err"; [ $? -eq 2 ] &&
     grep -q "not a run folder" "$2/err"' _ "$GANCTL" "$work"
check "a run folder without a checkpoint is refused with exit 2" sh -c \
    'mkdir -p "$2/nockpt"; cp "$2/toy/config.conf" "$2/nockpt/"; "$1" eval "$2/nockpt" 2>"$2/err";
     [ $? -eq 2 ] && grep -q "without a checkpoint yet" "$2/err"' _ "$GANCTL" "$work"
check "a file that is not a checkpoint is refused" sh -c \
    '! "$1" export "$2/a.csv" --out "$2/g.safetensors" 2>"$2/err" && grep -q "a.csv" "$2/err"' _ \
    "$GANCTL" "$work"
# The same checkpoint with another format version in its metadata (same length).
python3 -c 'import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d.replace(b"\"format_version\":\"1\"", b"\"format_version\":\"9\"", 1))' \
    "$work/toy/checkpoint.safetensors" "$work/v9.safetensors"
check "a checkpoint of another format version is refused, naming the version read, not quoting the file's" sh -c \
    '"$1" eval "$2/v9.safetensors" 2>"$2/err"; [ $? -eq 1 ] &&
     grep -q "v9.safetensors: a ganctl checkpoint of an unknown format version; this ganctl reads format version 1: open it with the ganctl that wrote it" "$2/err" &&
     ! grep -q "version 9" "$2/err"' _ \
    "$GANCTL" "$work"
check "an output name of no known form is refused" sh -c \
    '"$1" sample "$2/toy" --out "$2/x.txt" 2>"$2/err"; [ $? -eq 2 ] && grep -q "name a .png" "$2/err"' _ \
    "$GANCTL" "$work"
check "export refuses a name that is not .safetensors" sh -c \
    '"$1" export "$2/toy" --out "$2/g.png" 2>"$2/err"; [ $? -eq 2 ] && [ ! -e "$2/g.png" ] &&
     grep -q "ends in .safetensors" "$2/err"' _ "$GANCTL" "$work"
check "plot refuses a name that is not .png" sh -c \
    '"$1" plot "$2/toy" --out "$2/c.jpg" 2>"$2/err"; [ $? -eq 2 ] && [ ! -e "$2/c.jpg" ] &&
     grep -q "ends in .png" "$2/err"' _ "$GANCTL" "$work"
check "an --out in a missing folder is refused with the fix" sh -c \
    '"$1" sample "$2/toy" -n 3 --out "$2/no/such/x.csv" 2>"$2/err"; [ $? -eq 1 ] &&
     grep -q "no/such/x.csv: .*create the folder" "$2/err"' _ "$GANCTL" "$work"
check "a toy run has no folder of PNG files" sh -c \
    '"$1" sample "$2/toy" --out "$2/pngs/" 2>"$2/err"; [ $? -eq 2 ]' _ "$GANCTL" "$work"
check "sample refuses to write over the checkpoint" sh -c \
    '! "$1" sample "$2/toy" -n 3 --out "$2/toy/checkpoint.safetensors" 2>"$2/err" &&
     grep -q "checkpoint" "$2/err" && "$1" eval "$2/toy" >/dev/null' _ "$GANCTL" "$work"
check "a setting other than backend.* is refused" sh -c \
    '"$1" sample "$2/toy" -s run.seed=3 --out "$2/x.csv" 2>"$2/err"; [ $? -eq 2 ]' _ "$GANCTL" "$work"
check "sample without --out is a usage error" sh -c \
    '"$1" sample "$2/toy" 2>/dev/null; [ $? -eq 2 ]' _ "$GANCTL" "$work"

# --------------------------------------------------------------- an image run
data=/usr/share/datasets/fashion-mnist
if test -f "$data/train-images-idx3-ubyte.gz"; then
    tiny="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=1
          -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=16
          -s critic.iterations=2 -s run.log_every=1 -s run.eval_every=3
          -s run.image_every=0 -s run.checkpoint_every=0 -s run.metrics_time=false"
    # shellcheck disable=SC2086
    "$GANCTL" $tiny -s run.iterations=4 -s run.dir="$work/img" >"$work/train.out" 2>&1
    check "an image run trains" test -s "$work/img/checkpoint.safetensors"
    folder_state "$work/img" >"$work/before"
    check "sample --out .png writes an 8x8 grid of 28x28 images" sh -c \
        '"$1" sample "$2" --out "$3/grid.png" && [ "$($LOOK png "$3/grid.png")" = 690x690 ]' _ \
        "$GANCTL" "$work/img" "$work"
    check "sample --out DIR/ writes one 28x28 PNG per image" sh -c \
        '"$1" sample "$2" -n 5 --out "$3/imgs/" && [ "$(ls "$3/imgs" | tr "\n" " ")" = "000000.png 000001.png 000002.png 000003.png 000004.png " ] &&
         [ "$($LOOK png "$3/imgs/000004.png")" = 28x28 ]' _ "$GANCTL" "$work/img" "$work"
    check "sample --out .safetensors holds samples [N, 1, 28, 28] and z [N, 128]" sh -c \
        '"$1" sample "$2" -n 3 --out "$3/i.safetensors" &&
         [ "$($LOOK shapes "$3/i.safetensors" )" = "samples=[3, 1, 28, 28] z=[3, 128]" ]' _ \
        "$GANCTL" "$work/img" "$work"
    check "the same seed gives the same images" sh -c \
        '"$1" sample "$2" -n 3 --out "$3/j.safetensors" && cmp "$3/i.safetensors" "$3/j.safetensors"' _ \
        "$GANCTL" "$work/img" "$work"
    check "an image run's samples are no CSV" sh -c \
        '"$1" sample "$2" --out "$3/x.csv" 2>/dev/null; [ $? -eq 2 ]' _ "$GANCTL" "$work/img" "$work"
    check "image eval equals the trainer's final evaluation" sh -c \
        '"$1" eval "$2" --json "$3/ieval.json" >/dev/null && $LOOK same "$3/ieval.json" "$2/summary.json"' _ \
        "$GANCTL" "$work/img" "$work"
    folder_state "$work/img" >"$work/after"
    check "sample and eval leave the image run folder as it was" cmp "$work/before" "$work/after"
else
    echo "skip: the image part ($data is missing: Debian package dataset-fashion-mnist)"
fi

test_end
