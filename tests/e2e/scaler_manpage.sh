#!/bin/sh
# SPDX-License-Identifier: MIT
# scaler_manpage.sh — the scaler printed in ganctl-scaler(7), taken from the man source, built
# with the page's own build line against an installed ganctl, loaded and trained with.
#
# The build turns this template into tests/e2e/scaler-manpage (scalers.am fills in the @...@
# values). Like tests/e2e/scaler_example.sh it installs this build's headers, libganctl and
# ganctl.pc into a private prefix under the build tree, so that the page's build line,
# `pkg-config --cflags --libs ganctl`, runs as a reader's would. It then checks what the
# page says: the module lists with its setting, a run's metrics.csv shows the scale it
# chose, a stateless scaler saves and resumes, a step that overflows is skipped, and a
# scaler that applies a non-finite step stops the run (the skip contract).

MAKE='@MAKE@'
PKG_CONFIG='@PKG_CONFIG@'
CC='@CC@'
builddir='@abs_top_builddir@'
srcdir='@abs_top_srcdir@'
page="$srcdir/man/ganctl-scaler.7"
work="$builddir/tests/e2e/scaler-manpage.d"
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

# The text between the markers WHAT in ganctl-scaler(7), into OUT.
extract() {
    man_extract "$page" "$1" "$2"
}

rm -rf "$work" && mkdir -p "$work/build" "$work/bad" || exit 99
test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }

# ------------------------------------------------------------------ the page's text
extract scaler_pow2.c "$work/build/scaler_pow2.c" ||
    fail "could not take scaler_pow2.c from between its markers in $page"
lines=$(wc -l <"$work/build/scaler_pow2.c")
check "ganctl-scaler(7) prints a whole scaler ($lines lines, ending in GAN_DEFINE_PLUGIN)" \
    sh -c 'test "$1" -ge 30 && test "$(tail -n 1 "$2")" = "GAN_DEFINE_PLUGIN(pow2_plugin)"' _ \
    "$lines" "$work/build/scaler_pow2.c"
check "its save_state and load_state are left NULL (a stateless scaler)" \
    sh -c '! grep -q "save_state *=" "$1" && ! grep -q "load_state *=" "$1"' _ "$work/build/scaler_pow2.c"

extract "build scaler_pow2.c" "$work/build.cmd" ||
    fail "could not take the build line from between its markers in $page"
# One command: the page breaks it with a backslash at the end of the first line.
build=$(sed -e 's/\\$//' "$work/build.cmd" | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')
canonical='cc -std=c11 -shared -fPIC -fvisibility=hidden -o scaler-pow2.so scaler_pow2.c $(pkg-config --cflags --libs ganctl)'
check "the page's build line is the plugin build line" test "$build" = "$canonical"

# Every other build line in the manual pages is the same command for its own files, and
# the example's Makefile runs it too (with make's CFLAGS and LDFLAGS). Pages that name
# the installation's folders are templates, man/*.7.in (man/man.am).
others=$(grep -h '^\(\.B \)\{0,1\}cc \\-' "$srcdir"/man/*.7 "$srcdir"/man/*.7.in |
    sed -e 's/^\.B //' -e 's/\\-/-/g' -e 's/ -o [^ ]*\.so [^ ]*\.c / -o NAME.so NAME.c /' | sort -u)
check "every build line in man/*.7 and man/*.7.in is the same command" \
    test "$others" = 'cc -std=c11 -shared -fPIC -fvisibility=hidden -o NAME.so NAME.c \e'
pkg=$(grep -h 'pkg\\-config \\-\\-cflags' "$srcdir"/man/*.7 "$srcdir"/man/*.7.in |
    sed -e 's/^\.B //' -e 's/"//g' -e 's/\\-/-/g' -e 's/^ *//' | sort -u)
check "and every one ends in the same pkg-config call" test "$pkg" = '$(pkg-config --cflags --libs ganctl)'
check "examples/scaler-clamp/Makefile builds with the same command" \
    sh -c 'tr -d "\\\\\n\t" <"$1" | tr -s " " | grep -qF -- "\$(CC) -std=c11 \$(CFLAGS) \$(LDFLAGS) -shared -fPIC -fvisibility=hidden -o \$@ scaler_clamp.c \$(GANCTL_CFLAGS) \$(GANCTL_LIBS)"' \
    _ "$srcdir/examples/scaler-clamp/Makefile"

# ------------------------------------------------------------------ a private install
private_install "$work/prefix"
test -f "$includedir/ganctl/grad_stats.h" || fail "no ganctl/grad_stats.h installed in $includedir"
GAN_PKG_CONFIG=$pkgconfig
# --as-needed, as Debian's gcc passes by default and clang does not: the module uses
# nothing of libganctl, and without it names libganctl.so.0, which the loader cannot find
# in this private prefix, and re-exports the linker's _edata, _end and __bss_start.
GAN_CC="$CC -Wall -Wextra -Werror -Wl,--as-needed"
export GAN_PKG_CONFIG GAN_CC

# The page's command, as printed, with this build's compiler (warnings as errors) and the
# relocated pkg-config in place of `cc` and `pkg-config`.
command=$(printf '%s\n' "$build" | sed -e 's/^cc /$GAN_CC /' -e 's/\$(pkg-config /$($GAN_PKG_CONFIG /')
build_in() {
    (cd "$1" && sh -c "$command") >"$1/build.log" 2>&1 || { cat "$1/build.log"; return 1; }
    test -f "$1/scaler-pow2.so"
}
build_in "$work/build" || fail "the page's scaler did not build with the page's command: $command"
echo "ok: the page's scaler builds with its build line, -Wall -Wextra -Werror clean"

module="$work/build/scaler-pow2.so"
if command -v nm >/dev/null 2>&1; then
    exported=$(nm -D --defined-only "$module" | awk '$2 == "T" || $2 == "D" || $2 == "B" { print $3 }')
    check "it exports only ganctl_plugin_descriptor" test "$exported" = ganctl_plugin_descriptor
fi
if [ -x "$builddir/tests/unit/check_scalers" ]; then
    check "it passes the checks every scaler is held to" \
        env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$builddir/tests/unit/check_scalers" "$module"
fi

# ------------------------------------------------------------------ ganctl with it
listing=$("$GANCTL" --plugin-dir "$work/build" --list-plugins 2>&1)
check "ganctl --list-plugins loads it" \
    sh -c 'printf "%s\n" "$1" | grep -qF "scaler pow2 1.0.0" &&
           printf "%s\n" "$1" | grep -qF "file:     $2"' _ "$listing" "$module"
check "and lists its setting with its default" \
    sh -c 'printf "%s\n" "$1" | grep -qF "setting:  scaler.exponent, an integer, default 10"' _ "$listing"

# A network small enough that a short run takes a fraction of a second.
tiny="-s backend.threads=1 -s generator.model.width=16 -s generator.model.depth=2
      -s critic.model.width=16 -s critic.model.depth=2 -s data.batch_size=32
      -s critic.iterations=2 -s run.log_every=5 -s run.eval_every=100 -s run.image_every=100"

# train FOLDER OPTION...: ganctl with the module in FOLDER.
train() {
    dir=$1
    shift
    # shellcheck disable=SC2086 # $tiny is a list of options
    "$GANCTL" --plugin-dir "$dir" $tiny "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# Every value of column $2 of CSV file $1 (found by its header), one a line.
column() {
    awk -F, -v name="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i; next }
                          c { print $c }' "$1"
}

# Nonzero unless every row of column $2 of $1 is $3 (and there is at least one row).
all_rows() {
    values=$(column "$1" "$2" | sort -u)
    test -n "$values" && test "$values" = "$3"
}

has() { grep -qF -- "$2" "$1"; }

run="$work/run"
train "$work/build" --precision fp16 --scaler pow2 -s scaler.exponent=12 -s run.iterations=10 \
    -s run.dir="$run"
check "a 10-iteration fp16 run with --scaler pow2 exits 0" test "$rc" -eq 0
check "metrics.csv has its two rows" test "$(column "$run/metrics.csv" iteration | tr '\n' ' ')" = "5 10 "
check "critic_scale is 2^12 = 4096 in every row" all_rows "$run/metrics.csv" critic_scale 4096
check "generator_scale is 4096 in every row" all_rows "$run/metrics.csv" generator_scale 4096
check "no step was skipped" all_rows "$run/metrics.csv" critic_skipped 0
check "the log names the scaler" has "$work/err" "critic loss scaler: pow2"
check "the checkpoint saves the stateless scaler as pow2/1" \
    has "$run/checkpoint.safetensors" '"scaler.critic":"pow2/1"'
check "with no values of its own" sh -c '! grep -qF "\"scaler.critic." "$1"' _ "$run/checkpoint.safetensors"

"$GANCTL" --plugin-dir "$work/build" --resume "$run" -s run.iterations=15 >"$work/out" 2>"$work/err"
rc=$?
check "the run resumes with the stateless scaler (exit 0)" test "$rc" -eq 0
check "and continues metrics.csv at scale 4096" \
    sh -c 'test "$(tail -n 1 "$1" | cut -d, -f1)" = 15' _ "$run/metrics.csv"
check "every row of the resumed run has scale 4096" all_rows "$run/metrics.csv" critic_scale 4096

# At 2^127 the scaled backward overflows at once: every step is skipped, none applied,
# and the run ends diverged (ganctl(1)).
train "$work/build" --precision fp16 --scaler pow2 -s scaler.exponent=127 -s run.iterations=5 \
    -s run.dir="$work/over"
check "a run at scale 2^127 trains to its end and exits 3, diverged" test "$rc" -eq 3
check "summary.json says diverged" has "$work/over/summary.json" '"status": "diverged"'
check "critic_scale is 2^127" all_rows "$work/over/metrics.csv" critic_scale 1.70141183e+38
check "all 10 critic steps were skipped" all_rows "$work/over/metrics.csv" critic_skipped 10
check "as gradient overflows (the penalty's inner gradient overflows first)" \
    all_rows "$work/over/metrics.csv" critic_overflow gradient
check "and Adam never stepped" has "$work/over/checkpoint.safetensors" '"optimizer.critic.step":"0"'

train "$work/build" --precision fp16 --scaler pow2 -s scaler.exponent=200 -s run.dir="$work/e200"
check "exponent 200 is refused with exit 2" test "$rc" -eq 2
check "by a message naming the value and the range" has "$work/err" "exponent = 200 is not in [-126, 127]"

# The skip contract: the same scaler with its verdict changed to "apply" stops the run.
skip_line='    out->skip = bad;  /* the skip contract: applying it would stop the run */'
grep -qxF -- "$skip_line" "$work/build/scaler_pow2.c" || fail "the page's scaler no longer has the line: $skip_line"
awk -v line="$skip_line" '$0 == line { print "    out->skip = 0;"; next } { print }' \
    "$work/build/scaler_pow2.c" >"$work/bad/scaler_pow2.c"
build_in "$work/bad" || fail "the scaler that never skips did not build"
train "$work/bad" --precision fp16 --scaler pow2 -s scaler.exponent=127 -s run.iterations=5 \
    -s run.dir="$work/never"
check "a scaler that applies a non-finite step stops the run with exit 1" test "$rc" -eq 1
check "with one line naming the scaler, its file and the step" \
    sh -c 'grep -q "^ganctl: the critic.s loss scaler \"pow2\" ($1) applied step 0 although its [a-z]* [a-z]* not finite: fix the scaler" "$2"' \
    _ "$work/bad/scaler-pow2.so" "$work/err"

echo "$checks checks, $failures failed"
test "$failures" -eq 0
