#!/bin/sh
# SPDX-License-Identifier: MIT
# plugin_c99.sh — the scaler ganctl-plugin(7) prints, taken from the man source, is the
# file examples/scaler-skeleton/scaler_skeleton.c; built as strict C99 by each compiler at
# hand against an installed copy of the headers, it loads and trains the demo. So does the
# fuller examples/scaler-clamp, which the page names by its path.
#
# The build turns this template into tests/e2e/plugin-c99 (tests/tests.am fills in the @...@
# values). Like tests/e2e/scaler_manpage.sh it installs this build's headers, libganctl and
# ganctl.pc into a private prefix under the build tree, so that `pkg-config --cflags
# --libs ganctl` runs as a third party's would. The compilers are cc and clang, each with
# -std=c99 -pedantic -Wall -Wextra -Werror; one that is not installed is skipped with a
# message. Each module then trains a few iterations of the demo in FP16: its scale is in
# metrics.csv, and its update() logs through the host its create() was given.

MAKE='@MAKE@'
PKG_CONFIG='@PKG_CONFIG@'
builddir='@abs_top_builddir@'
srcdir='@abs_top_srcdir@'
page="$srcdir/man/ganctl-plugin.7.in"
example="$srcdir/examples/scaler-skeleton/scaler_skeleton.c"
work="$builddir/tests/e2e/plugin-c99.d"
GANCTL=${GANCTL:-$builddir/cli/ganctl}
GANCTL_CONFIG=/dev/null
export GANCTL_CONFIG

failures=0
checks=0

fail() {
    echo "FAIL: $*"
    exit 1
}

check() {
    what=$1
    shift
    checks=$((checks + 1))
    if "$@"; then
        echo "ok: $what"
    else
        echo "FAIL: $what"
        failures=$((failures + 1))
    fi
}

# shellcheck source=tests/lib/plugin_sdk.sh
. "$srcdir/tests/lib/plugin_sdk.sh"

rm -rf "$work" && mkdir -p "$work" || exit 99
test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }

# ------------------------------------------------------------------ the page's text
man_extract "$page" scaler_skeleton.c "$work/scaler_skeleton.c" ||
    fail "no scaler_skeleton.c between its markers in $page"
check "ganctl-plugin(7) prints examples/scaler-skeleton/scaler_skeleton.c exactly" \
    cmp "$work/scaler_skeleton.c" "$example"
# The fuller example, which the page names by its path, is built from its file.
cp "$srcdir/examples/scaler-clamp/scaler_clamp.c" "$work/" && chmod u+w "$work/scaler_clamp.c" ||
    exit 99

# ------------------------------------------------------------------ a private install
private_install "$work/prefix"
flags=$($pkgconfig --cflags --libs ganctl) ||
    fail "pkg-config finds no ganctl in $PKG_CONFIG_PATH"
printf '%s\n' "$flags" | grep -qF -- "-I$includedir" || fail "pkg-config gives $flags"

# A network small enough that a short run takes a fraction of a second.
tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s run.log_every=5 -s run.eval_every=100 -s run.image_every=100"

# Every value of column $2 of CSV file $1 (found by its header), one a line.
column() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                          c { print $c }' "$1"
}

all_rows() {
    values=$(column "$1" "$2" | sort -u)
    test -n "$values" && test "$values" = "$3"
}

has() { grep -qF -- "$2" "$1"; }

built=0
for compiler in cc clang; do
    if ! command -v "$compiler" >/dev/null 2>&1; then
        echo "SKIP: $compiler is not installed; the examples are not built with it"
        continue
    fi
    dir="$work/$compiler"
    mkdir -p "$dir" || exit 99
    ok=1
    for name in skeleton clamp; do
        # shellcheck disable=SC2086 # $flags is pkg-config's list of options
        if ! (cd "$work" && "$compiler" -std=c99 -pedantic -Wall -Wextra -Werror -shared \
                -fPIC -fvisibility=hidden -o "$dir/scaler-$name.so" "scaler_$name.c" $flags) \
                >"$dir/build-$name.log" 2>&1; then
            cat "$dir/build-$name.log"
            ok=0
        fi
        check "$compiler -std=c99 -pedantic -Wall -Wextra -Werror builds scaler_$name.c" \
            test -f "$dir/scaler-$name.so"
    done
    test "$ok" -eq 1 || continue
    built=$((built + 1))

    # The page's skeleton: its default scale, 1024, from its settings table; then the
    # scale set, in every row of metrics.csv, and update() logging each step through the
    # host its create() was given.
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" --plugin-dir "$dir" $tiny --precision fp16 --scaler skeleton \
        -s run.iterations=5 -s run.dir="$dir/skeleton-default" >"$dir/out" 2>"$dir/err"
    check "($compiler) a 5-iteration fp16 run with --scaler skeleton exits 0" test $? -eq 0
    check "($compiler) the skeleton's scale is its default, 1024" \
        all_rows "$dir/skeleton-default/metrics.csv" critic_scale 1024
    # shellcheck disable=SC2086
    "$GANCTL" --plugin-dir "$dir" $tiny --precision fp16 --scaler skeleton \
        -s scaler.scale=4096 -s log.level=debug -s run.iterations=10 \
        -s run.dir="$dir/skeleton" >"$dir/out" 2>"$dir/err"
    check "($compiler) a 10-iteration fp16 run with the skeleton at scale 4096 exits 0" \
        test $? -eq 0
    check "($compiler) the log names the skeleton" has "$dir/err" "critic loss scaler: skeleton"
    check "($compiler) critic_scale is 4096 in every row" \
        all_rows "$dir/skeleton/metrics.csv" critic_scale 4096
    check "($compiler) generator_scale is 4096 in every row" \
        all_rows "$dir/skeleton/metrics.csv" generator_scale 4096
    check "($compiler) the skeleton's update() logs through its host" \
        has "$dir/err" "scaler skeleton (critic): skeleton: scale 4096, skip 0"
    check "($compiler) the checkpoint names the stateless skeleton" \
        has "$dir/skeleton/checkpoint.safetensors" '"scaler.critic":"skeleton/1"'

    # The fuller example, clamp, which keeps state.
    # shellcheck disable=SC2086
    "$GANCTL" --plugin-dir "$dir" $tiny --precision fp16 --scaler clamp -s scaler.init=2048 \
        -s run.iterations=10 -s run.dir="$dir/run" >"$dir/out" 2>"$dir/err"
    check "($compiler) a 10-iteration fp16 run with --scaler clamp exits 0" test $? -eq 0
    check "($compiler) the log names the scaler" has "$dir/err" "critic loss scaler: clamp: scale 2048"
    check "($compiler) critic_scale is init = 2048 in every row" \
        all_rows "$dir/run/metrics.csv" critic_scale 2048
    check "($compiler) the checkpoint holds its state" \
        has "$dir/run/checkpoint.safetensors" '"scaler.critic":"clamp/1"'

    # interval = 2: the scale doubles after every second clean update, and update() says
    # so through the host at debug level.
    # shellcheck disable=SC2086
    "$GANCTL" --plugin-dir "$dir" $tiny --precision fp16 --scaler clamp -s scaler.init=2048 \
        -s scaler.interval=2 -s log.level=debug -s run.iterations=5 -s run.dir="$dir/grow" \
        >"$dir/out" 2>"$dir/err"
    check "($compiler) a run with interval = 2 exits 0" test $? -eq 0
    check "($compiler) update() logs the growth through its host" \
        has "$dir/err" "clamp: step 1, scale 2048 -> 4096"
done
test "$built" -gt 0 || fail "no C compiler built the examples"

echo "$checks checks, $failures failed"
test "$failures" -eq 0
