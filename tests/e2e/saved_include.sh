#!/bin/sh
# SPDX-License-Identifier: MIT
# saved_include.sh — settings ganctl saved itself are data: a checkpoint or a run folder
# whose saved settings hold an @include of a marker file (a regular file and a FIFO) is
# refused by --resume, sample, eval, export and a bare .safetensors load with one line
# and exit 2, within a second, the marker never opened, its contents in no output and
# the folder unchanged; a FIFO is never waited on, as a run's checkpoint, as -c or as
# GANCTL_CONFIG, or as an include of the user's file.

srcdir=${srcdir:-.}
. "$(dirname "$0")/../lib/test_lib.sh"
test_begin saved-include
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 is not installed"; exit 77; }
command -v mkfifo >/dev/null 2>&1 || { echo "skip: mkfifo is not installed"; exit 77; }
command -v md5sum >/dev/null 2>&1 || { echo "skip: md5sum is not installed"; exit 77; }

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s run.log_every=5 -s run.eval_every=10 -s run.image_every=10"

# A checkpoint's settings with a line added, rewritten in its JSON header.
cat >"$work/add_line.py" <<'PY'
import json, struct, sys
src, dst, line = sys.argv[1:4]
d = open(src, "rb").read()
n = struct.unpack("<Q", d[:8])[0]
h = json.loads(d[8:8 + n])
h["__metadata__"]["config"] += line + "\n"
b = json.dumps(h).encode()
b += b" " * ((8 - len(b) % 8) % 8)
open(dst, "wb").write(struct.pack("<Q", len(b)) + b + d[8 + n:])
PY

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Runs ganctl with a five-second limit; $rc, $ms (how long it took), $work/out and err.
timed() {
    start=$(now_ms)
    timeout 5 "$GANCTL" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    ms=$(($(now_ms) - start))
}

state() { (cd "$1" && ls -lA --time-style=+%s && md5sum ./*) 2>/dev/null; }

# shellcheck disable=SC2086 # $tiny is a list of options
"$GANCTL" $tiny -s run.iterations=10 -s run.dir="$work/a" >"$work/out" 2>"$work/err"
rc=$?
check "a short run exits 0" rc_is 0

printf 'api_token_SECRET4242 = 1;\nlog = { level = "debug"; };\n' >"$work/marker.conf"
mkfifo "$work/marker.fifo"

# refused WHAT ARGS...: one line, exit 2, within a second, nothing of the marker shown.
refused() {
    what=$1
    shift
    timed "$@"
    check "$what: exit 2" rc_is 2
    check "$what: one line" test "$(wc -l <"$work/err")" -eq 1
    check "$what: within a second (${ms} ms)" test "$ms" -lt 1000
    check "$what: the marker's contents appear nowhere" \
        sh -c '! grep -q "SECRET4242\|debug" "$1" "$2"' - "$work/out" "$work/err"
}

for marker in conf fifo; do
    # A run folder whose checkpoint includes the marker; and one whose config.conf does.
    dir="$work/ck-$marker"
    cp -r "$work/a" "$dir"
    python3 "$work/add_line.py" "$work/a/checkpoint.safetensors" "$dir/checkpoint.safetensors" \
        "  @include \"$work/marker.$marker\""
    state "$dir" >"$work/before"
    refused "--resume, checkpoint including a $marker" --resume "$dir" -s run.iterations=20
    check "the refusal names the file and the line" \
        grep -q "^ganctl: $dir/checkpoint.safetensors (saved configuration): line [0-9]* of the checkpoint's saved settings holds an @include directive" "$work/err"
    refused "sample, checkpoint including a $marker" sample "$dir" -o "$work/s.png"
    refused "eval, checkpoint including a $marker" eval "$dir"
    refused "export, checkpoint including a $marker" export "$dir" -o "$work/e.safetensors"
    check "export wrote nothing" test ! -e "$work/e.safetensors"
    refused "a bare checkpoint including a $marker" sample "$dir/checkpoint.safetensors" -o "$work/s.png"
    check "sample wrote nothing" test ! -e "$work/s.png"
    state "$dir" >"$work/after"
    check "the folder is unchanged" cmp -s "$work/before" "$work/after"

    dir="$work/conf-$marker"
    cp -r "$work/a" "$dir"
    echo "@include \"$work/marker.$marker\"" >>"$dir/config.conf"
    state "$dir" >"$work/before"
    refused "--resume, config.conf including a $marker" --resume "$dir" -s run.iterations=20
    check "the refusal names config.conf" has "$work/err" "$dir/config.conf: line "
    state "$dir" >"$work/after"
    check "the folder is unchanged" cmp -s "$work/before" "$work/after"
    rm "$dir/checkpoint.safetensors"
    state "$dir" >"$work/before"
    refused "--resume, config.conf alone including a $marker" --resume "$dir" -s run.iterations=20
    state "$dir" >"$work/after"
    check "the folder is unchanged" cmp -s "$work/before" "$work/after"
done

# An include in a string or a comment is not a directive, as libconfig reads it: the
# saved text is read, and the run refused only for what the line really is.
dir="$work/comment"
cp -r "$work/a" "$dir"
python3 "$work/add_line.py" "$work/a/checkpoint.safetensors" "$dir/checkpoint.safetensors" \
    "# @include \"$work/marker.fifo\""
timed sample "$dir" -o "$work/c.png"
check "an @include in a comment is no directive: sample exits 0" rc_is 0

# A settings value from elsewhere is never echoed: an unknown setting is named by line.
dir="$work/unknown"
cp -r "$work/a" "$dir"
python3 "$work/add_line.py" "$work/a/checkpoint.safetensors" "$dir/checkpoint.safetensors" \
    "api_token_SECRET4242 = 1;"
refused "an unknown setting in a checkpoint" sample "$dir" -o "$work/s.png"
check "it is named by its line" grep -q "an unknown setting at line [0-9]* of the checkpoint's saved settings" "$work/err"

# A FIFO where the run's checkpoint belongs.
dir="$work/fifo-ck"
cp -r "$work/a" "$dir"
rm "$dir/checkpoint.safetensors"
mkfifo "$dir/checkpoint.safetensors"
refused "--resume, the checkpoint a FIFO" --resume "$dir" -s run.iterations=20
check "it says the checkpoint is a FIFO" has "$work/err" "$dir/checkpoint.safetensors is a FIFO, not a regular file"
refused "sample, the checkpoint a FIFO" sample "$dir" -o "$work/s.png"

# A FIFO given as the configuration, and included by the user's file.
refused "-c FIFO" -c "$work/marker.fifo" -s run.dir="$work/n"
check "it names the file" has "$work/err" "$work/marker.fifo (given with --config): it is a FIFO"
GANCTL_CONFIG="$work/marker.fifo" timed -s run.dir="$work/n"
check "GANCTL_CONFIG naming a FIFO: exit 2 within a second" test "$rc" -eq 2 -a "$ms" -lt 1000
printf '@include "marker.fifo"\n' >"$work/user.conf"
refused "-c a file including a FIFO" -c "$work/user.conf" -s run.dir="$work/n"
check "it names the file and line" has "$work/err" "$work/user.conf:1: the @include names $work/marker.fifo, which is a FIFO"
check "no run was made" test ! -e "$work/n"

# A user's include resolves against the including file's folder, from anywhere.
mkdir "$work/sub"
printf '@include "inner.conf"\n' >"$work/sub/top.conf"
printf 'log = { level = "warn"; };\n' >"$work/sub/inner.conf"
(cd / && "$GANCTL" -c "$work/sub/top.conf" --print-config) >"$work/out" 2>"$work/err"
rc=$?
check "an include is read next to its file (exit 0)" rc_is 0
check "its setting takes effect" has "$work/out" "level = \"warn\";  # $work/sub/inner.conf:1"

test_end
