#!/bin/sh
# SPDX-License-Identifier: MIT
# run_foreign.sh — --resume refuses a checkpoint that belongs to another run than the
# folder's config.conf (another data set, other network shapes, or another run of the
# same settings, told apart by run.id) with one line naming the file and what differs,
# and leaves every file in the folder as it was; a new run may not set run.id, and a
# resumed one may not change it.

srcdir=${srcdir:-.}
. "$(dirname "$0")/../lib/test_lib.sh"
test_begin foreign
command -v cksum >/dev/null 2>&1 || { echo "skip: cksum is not installed"; exit 77; }

tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s loss.gradient-penalty.lambda=0.1 -s run.log_every=5
      -s run.eval_every=10 -s run.image_every=10"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

one_line_exit() { test "$rc" -eq "$1" && test "$(wc -l <"$work/err")" -eq 1; }

# Every file of a folder, hidden ones too, with its checksum and size.
hashes() { (cd "$1" && for f in $(ls -A | sort); do cksum "$f"; done); }

# The runs whose checkpoints are copied: the folder's own (8gaussians), another data set,
# other network shapes, and a second run of exactly the same settings.
run -s run.iterations=20 -s run.dir="$work/a"
check "the folder's run exits 0" test "$rc" -eq 0
run -s run.iterations=20 -s run.dir="$work/b" -s data.name=25gaussians
check "a 25gaussians run exits 0" test "$rc" -eq 0
run -s run.iterations=20 -s run.dir="$work/w" -s critic.model.width=8
check "a run with a narrower critic exits 0" test "$rc" -eq 0
run -s run.iterations=20 -s run.dir="$work/c"
check "a second run of the same settings exits 0" test "$rc" -eq 0
check "the two runs of the same settings have different ids" \
    test "$(grep '^  id = ' "$work/a/config.conf")" != "$(grep '^  id = ' "$work/c/config.conf")"
check "summary.json names the run's id" \
    has "$work/a/summary.json" "\"run_id\": \"$(sed -n 's/^  id = "\([0-9a-f]*\)";.*/\1/p' "$work/a/config.conf")\""
cp "$work/a/checkpoint.safetensors" "$work/own.safetensors"

# foreign FROM MESSAGE: FROM's checkpoint in the folder is refused and changes nothing.
foreign() {
    cp "$work/$1/checkpoint.safetensors" "$work/a/checkpoint.safetensors"
    hashes "$work/a" >"$work/before"
    "$GANCTL" --resume "$work/a" -s run.iterations=30 >"$work/out" 2>"$work/err"
    rc=$?
    hashes "$work/a" >"$work/after"
    check "$1's checkpoint is refused (exit 1, one line)" one_line_exit 1
    check "the refusal names the file and what differs" \
        has "$work/err" "$work/a/checkpoint.safetensors belongs to another run ($2"
    check "the refusal of $1's checkpoint changed no file in the folder" cmp -s "$work/before" "$work/after"
}
foreign b 'another data set): data.name = "25gaussians" in it, "8gaussians" in '"$work/a/config.conf"
foreign w 'other network shapes): critic.model.width = 8 in it, 16 in '"$work/a/config.conf"
foreign c 'another identity): run.id = "'

# The folder's own checkpoint still resumes.
cp "$work/own.safetensors" "$work/a/checkpoint.safetensors"
"$GANCTL" --resume "$work/a" -s run.iterations=30 >"$work/out" 2>"$work/err"
rc=$?
check "the folder's own checkpoint resumes (exit 0)" test "$rc" -eq 0
check "metrics.csv goes on to iteration 30" test "$(tail -n 1 "$work/a/metrics.csv" | cut -d, -f1)" = 30

# run.id is ganctl's: not for a new run's settings, not to change on resume.
run -s run.iterations=5 -s run.dir="$work/n" -s run.id=0123456789abcdef0123456789abcdef
check "a new run with run.id set is refused (exit 2, one line)" one_line_exit 2
check "it says that ganctl sets run.id" has "$work/err" "run.id is set by ganctl when it creates a run, never by hand"
check "the refused run made no folder" test ! -e "$work/n"
"$GANCTL" -c "$work/a/config.conf" -s run.dir="$work/n" >"$work/out" 2>"$work/err"
rc=$?
check "a new run from a copied config.conf with its id is refused (exit 2)" one_line_exit 2
check "it names the line of config.conf" has "$work/err" "$work/a/config.conf:"
hashes "$work/a" >"$work/before"
"$GANCTL" --resume "$work/a" -s run.id=0123456789abcdef0123456789abcdef >"$work/out" 2>"$work/err"
rc=$?
hashes "$work/a" >"$work/after"
check "a resumed run may not change run.id (exit 2, one line)" one_line_exit 2
check "it names run.id" has "$work/err" "run.id = \"0123456789abcdef0123456789abcdef\", but the run in $work/a was trained with"
check "that refusal changed no file either" cmp -s "$work/before" "$work/after"

# A Fashion-MNIST checkpoint in a toy folder (with the Debian data set only). Its image
# metrics' classifier is trained once per build tree and kept there, as image_train.sh
# keeps it.
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache} \
        "$GANCTL" -c "$srcdir/etc/fashion-mnist.conf" -s backend.threads=1 \
        -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=8 \
        -s critic.iterations=1 -s run.iterations=1 -s run.eval_every=0 -s run.image_every=0 \
        -s run.dir="$work/f" >"$work/out" 2>"$work/err"
    check "a one-iteration Fashion-MNIST run exits 0" test $? -eq 0
    foreign f 'another data set): data.name = "fashion-mnist" in it, "8gaussians" in '"$work/a/config.conf"
else
    echo "skip: a Fashion-MNIST checkpoint (the data set is not in /usr/share/datasets/fashion-mnist)"
fi

test_end
