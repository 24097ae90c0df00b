#!/bin/sh
# SPDX-License-Identifier: MIT
# recipe_manpage.sh — the recipe printed in ganctl-recipe(7), taken from the man source,
# built with the page's own build line against an installed ganctl, and loaded.
#
# The build turns this template into tests/e2e/recipe-manpage (recipes.am fills in the
# @...@ values, with scalers.am's GAN_SCALER_TEST_SED). Like scaler_manpage.sh it installs
# this build's headers, libganctl and ganctl.pc into a private prefix under the build
# tree, so that the page's build line, `pkg-config --cflags --libs ganctl`, runs as a
# reader's would. It then checks what the page says: the module exports one symbol,
# passes the checks every shipped recipe passes, and ganctl lists it with its setting
# in the group fp8.pow2.

MAKE='@MAKE@'
PKG_CONFIG='@PKG_CONFIG@'
CC='@CC@'
builddir='@abs_top_builddir@'
srcdir='@abs_top_srcdir@'
page="$srcdir/man/ganctl-recipe.7"
work="$builddir/tests/e2e/recipe-manpage.d"
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

rm -rf "$work" && mkdir -p "$work/build" || exit 99
test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }

# ------------------------------------------------------------------ the page's text
man_extract "$page" recipe_pow2.c "$work/build/recipe_pow2.c" ||
    fail "could not take recipe_pow2.c from between its markers in $page"
lines=$(wc -l <"$work/build/recipe_pow2.c")
check "ganctl-recipe(7) prints a whole recipe ($lines lines, ending in GAN_DEFINE_PLUGIN)" \
    sh -c 'test "$1" -ge 30 && test "$(tail -n 1 "$2")" = "GAN_DEFINE_PLUGIN(pow2_plugin)"' _ \
    "$lines" "$work/build/recipe_pow2.c"
check "its save_state and load_state are left NULL (a recipe without state)" \
    sh -c '! grep -q "save_state *=" "$1" && ! grep -q "load_state *=" "$1"' _ "$work/build/recipe_pow2.c"

man_extract "$page" "build recipe_pow2.c" "$work/build.cmd" ||
    fail "could not take the build line from between its markers in $page"
# One command: the page breaks it with a backslash at the end of the first line.
build=$(sed -e 's/\\$//' "$work/build.cmd" | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')
canonical='cc -std=c11 -shared -fPIC -fvisibility=hidden -o recipe-pow2.so recipe_pow2.c $(pkg-config --cflags --libs ganctl)'
check "the page's build line is the plugin build line" test "$build" = "$canonical"

# ------------------------------------------------------------------ a private install
private_install "$work/prefix"
test -f "$includedir/ganctl/recipe.h" || fail "no ganctl/recipe.h installed in $includedir"
GAN_PKG_CONFIG=$pkgconfig
# --as-needed, as in scaler_manpage.sh: the module uses nothing of libganctl.
GAN_CC="$CC -Wall -Wextra -Werror -Wl,--as-needed"
export GAN_PKG_CONFIG GAN_CC

# The page's command, as printed, with this build's compiler (warnings as errors) and the
# relocated pkg-config in place of `cc` and `pkg-config`.
command=$(printf '%s\n' "$build" | sed -e 's/^cc /$GAN_CC /' -e 's/\$(pkg-config /$($GAN_PKG_CONFIG /')
(cd "$work/build" && sh -c "$command") >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; fail "the page's recipe did not build with the page's command: $command"; }
module="$work/build/recipe-pow2.so"
test -f "$module" || fail "the page's command made no $module"
echo "ok: the page's recipe builds with its build line, -Wall -Wextra -Werror clean"

if command -v nm >/dev/null 2>&1; then
    exported=$(nm -D --defined-only "$module" | awk '$2 == "T" || $2 == "D" || $2 == "B" { print $3 }')
    check "it exports only ganctl_plugin_descriptor" test "$exported" = ganctl_plugin_descriptor
fi
if [ -x "$builddir/tests/unit/check_recipes" ]; then
    check "it passes the checks every recipe is held to" \
        env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$builddir/tests/unit/check_recipes" "$module"
fi

# ------------------------------------------------------------------ ganctl with it
listing=$("$GANCTL" --plugin-dir "$work/build" --list-plugins 2>&1)
check "ganctl --list-plugins loads it" \
    sh -c 'printf "%s\n" "$1" | grep -qF "recipe pow2 1.0.0" &&
           printf "%s\n" "$1" | grep -qF "file:     $2"' _ "$listing" "$module"
check "and lists its setting in the group fp8.pow2, with its default" \
    sh -c 'printf "%s\n" "$1" | grep -qF "setting:  fp8.pow2.exponent, an integer, default 0"' _ "$listing"

echo "$checks checks, $failures failed"
test "$failures" -eq 0
