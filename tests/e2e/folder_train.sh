#!/bin/sh
# SPDX-License-Identifier: MIT
# folder_train.sh — training on an image folder (data.name = "folder") end to end: a folder
# of generated PNG and JPEG files of mixed sizes, kinds and depths, with one broken file,
# trains the dcgan pair at 32 × 32 RGB for 20 iterations, reports the skipped file, writes
# sample grids of the configured shape and pixel-only metrics, and resumes bit-identically;
# 64 × 64 and 28 × 28 grey train too; an empty folder and a bad channel count are refused.

. "$(dirname "$0")/../lib/test_lib.sh"
MAKE_FOLDER=${MAKE_FOLDER:-./tests/lib/make-image-folder}
srcdir=${srcdir:-.}

test_begin folder
test -x "$MAKE_FOLDER" || { echo "make-image-folder not built at $MAKE_FOLDER"; exit 99; }

"$MAKE_FOLDER" synthetic "$work/images" || { echo "cannot make the image folder"; exit 99; }

# The shipped example at a width that trains in a fraction of a second per iteration.
tiny="-c $srcdir/etc/folder.conf -s data.path=$work/images -s backend.threads=1
      -s data.size=32 -s data.channels=3 -s data.holdout=0.2
      -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=8
      -s critic.iterations=2 -s generator.optimizer.lr_decay=none
      -s critic.optimizer.lr_decay=none -s run.log_every=1 -s run.eval_every=10
      -s run.image_every=10 -s run.checkpoint_every=0 -s run.metrics_time=false"

run() {
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# A PNG's width, height and colour type (IHDR: bytes 17-24 and 26) as "W H TYPE".
png_shape() {
    od -An -tu1 -j16 -N10 "$1" | awk '{ print $1*16777216 + $2*65536 + $3*256 + $4,
                                              $5*16777216 + $6*65536 + $7*256 + $8, $10 }'
}

# --------------------------------------------------------------- 20 iterations, 32 x 32 RGB
run -s run.iterations=20 -s run.dir="$work/a"
check "a folder run exits 0" test "$rc" -eq 0
check "the broken file is skipped, counted and named" grep -q \
    "skipped 1 of 25 image files that could not be read; the first: $work/images/broken.png" \
    "$work/err"
check "the hidden file and the text file are not counted" sh -c \
    '! grep -q "hidden\|notes.txt" "$1"' _ "$work/err"
check "the log says how many images were read and held out" grep -q \
    "image folder $work/images: 24 images of 3 x 32 x 32, 5 held out" "$work/err"
for f in real.png samples-000010.png samples-000020.png final.png metrics.csv summary.json \
         checkpoint.safetensors; do
    check "the run folder holds $f" test -s "$work/a/$f"
done
# 8 cells of 32 pixels magnified 3 times and 9 separators of 2: 786 square, RGB (type 2).
for f in real.png samples-000010.png final.png; do
    check "$f is an 8 x 8 RGB grid of 32 x 32 images" test "$(png_shape "$work/a/$f")" = "786 786 2"
done
header=$(head -n 1 "$work/a/metrics.csv")
check "metrics.csv ends with the pixel metric and has no frechet column" sh -c \
    'case "$1" in *,sliced_w1_pixel) exit 0;; *) exit 1;; esac' _ "$header"
row=$(grep '^20,' "$work/a/metrics.csv")
check "the row of iteration 20 has a finite sliced W1" sh -c \
    'echo "$1" | awk -F, "{ exit !(\$NF + 0 > 0 && \$NF != \"nan\") }"' _ "$row"
check "summary.json has the pixel metric and its floor, no frechet" sh -c \
    'grep -q "\"sliced_w1_pixel\"" "$1" && grep -q "real_vs_real_floor" "$1" &&
     ! grep -q "frechet" "$1"' _ "$work/a/summary.json"
check "neither the progress lines nor the final line show a frechet value" sh -c \
    '! grep -q "frechet" "$1" "$2"' _ "$work/out" "$work/err"
check "the final line names the pixel metric over the held-out images" grep -q \
    "quality at iteration 20 (folder, 5 generated vs 5 test images): sliced_w1_pixel" \
    "$work/out"
check "config.conf records the folder's settings" sh -c \
    'grep -q "channels = 3;" "$1" && grep -q "size = 32;" "$1" && grep -q "holdout = 0.2;" "$1"' \
    _ "$work/a/config.conf"

# --------------------------------------------------------------- after training
# ganctl eval scores the finished run on the same held-out images, so its line is the
# trainer's final one; ganctl sample writes the run's shape.
quality=$(grep '^quality at iteration 20' "$work/out")
"$GANCTL" eval "$work/a" >"$work/eval" 2>"$work/err"
check "ganctl eval of a folder run prints the trainer's final quality line" \
    test "$(cat "$work/eval")" = "$quality"
"$GANCTL" sample "$work/a" -n 3 --out "$work/samples/" >/dev/null 2>"$work/err"
check "ganctl sample of a folder run writes 3 PNG files" test -s "$work/samples/000002.png"
check "each sampled PNG is 32 x 32 RGB" test "$(png_shape "$work/samples/000000.png")" = "32 32 2"

# --------------------------------------------------------------- resume
run -s run.iterations=10 -s run.dir="$work/b"
check "a 10-iteration folder run exits 0" test "$rc" -eq 0
"$GANCTL" --resume "$work/b" -s run.iterations=20 >"$work/out" 2>"$work/err"
rc=$?
check "--resume of a folder run exits 0" test "$rc" -eq 0
check "the resumed metrics.csv equals the uninterrupted run's" \
    cmp "$work/a/metrics.csv" "$work/b/metrics.csv"
check "the resumed run's final.png equals the uninterrupted run's" \
    cmp "$work/a/final.png" "$work/b/final.png"

# --------------------------------------------------------------- other shapes
run -s run.iterations=2 -s run.dir="$work/s64" -s data.size=64
check "a 64 x 64 RGB run exits 0" test "$rc" -eq 0
# 8 cells of 64 pixels magnified twice and 9 separators of 2: 1042 square.
check "its final.png is a grid of 64 x 64 RGB images" \
    test "$(png_shape "$work/s64/final.png")" = "1042 1042 2"
run -s run.iterations=2 -s run.dir="$work/s28" -s data.size=28 -s data.channels=1
check "a 28 x 28 grey run exits 0" test "$rc" -eq 0
# Fashion-MNIST's grid shape, grey (type 0).
check "its final.png is a grid of 28 x 28 grey images" \
    test "$(png_shape "$work/s28/final.png")" = "690 690 0"

# --------------------------------------------------------------- refusals
mkdir "$work/empty"
run -s run.iterations=2 -s run.dir="$work/c" -s data.path="$work/empty"
check "an empty folder fails" test "$rc" -ne 0
check "an empty folder makes no run folder" test ! -e "$work/c"
check "an empty folder's error names it and the fix" sh -c \
    'grep -q "image folder $2 holds no image files" "$1" && grep -q "put PNG or JPEG" "$1"' \
    _ "$work/err" "$work/empty"
run -s run.iterations=2 -s run.dir="$work/e" -s data.batch_size=20
check "a batch larger than the training images fails before the run folder" sh -c \
    'test "$1" -eq 2 && test ! -e "$2" &&
     grep -q "19 training images (24 of 25 read, 5 held out), fewer than data.batch_size = 20" "$3"' \
    _ "$rc" "$work/e" "$work/err"
"$GANCTL" -s data.name='"folder"' -s run.iterations=1 -s run.dir="$work/f" \
    >"$work/out" 2>"$work/err"
rc=$?
check "a folder run without data.path is a configuration error that says to set it" sh -c \
    'test "$1" -eq 2 && test ! -e "$2" && grep -q "set data.path to your image folder" "$3"' \
    _ "$rc" "$work/f" "$work/err"
run -s run.iterations=2 -s run.dir="$work/d" -s data.channels=2
check "data.channels = 2 is a configuration error (exit 2)" test "$rc" -eq 2
check "data.channels = 2 says what to write" grep -q "set data.channels to 1 or 3" "$work/err"

# A PNG whose header claims 100000 x 100000 pixels (a valid IHDR, CRC and all) is skipped
# with the limit named, before anything that size is allocated.
cp -R "$work/images" "$work/huge" && rm -f "$work/huge/broken.png"
python3 -c 'import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
sys.stdout.buffer.write(b"\x89PNG\r\n\x1a\n"
                        + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0))
                        + chunk(b"IDAT", zlib.compress(bytes(16))) + chunk(b"IEND", b""))' \
    >"$work/huge/huge.png"
run -s run.iterations=1 -s run.dir="$work/h" -s data.path="$work/huge"
check "a folder with an over-large PNG still trains" test "$rc" -eq 0
check "the over-large PNG is skipped with the pixel limit named" grep -qF \
    "the first: $work/huge/huge.png: a PNG of 100000 × 100000 pixels, over the limit of 33554432 pixels that ganctl decodes" \
    "$work/err"

test_end
