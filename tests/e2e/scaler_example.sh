#!/bin/sh
# SPDX-License-Identifier: MIT
# scaler_example.sh — builds examples/scaler-clamp and examples/scaler-skeleton, each with
# its own Makefile, against an installed ganctl, as a third party would, and loads each
# through its descriptor.
#
# The build turns this template into tests/e2e/scaler-example (scalers.am fills in the
# @...@ values). Under make check it first installs this build's headers, libganctl and
# ganctl.pc into a private prefix under the build tree; under make installcheck
# (GAN_EXAMPLE_INSTALLED=1) it uses the real installation, and also lists the module
# with the installed ganctl. check_scalers then holds the module to the checks every
# shipped scaler passes (tests/unit/check_scalers.c, test_conformance).

MAKE='@MAKE@'
PKG_CONFIG='@PKG_CONFIG@'
CC='@CC@'
builddir='@abs_top_builddir@'
srcdir='@abs_top_srcdir@'
work="$builddir/tests/e2e/scaler-example.d"

fail() {
    echo "FAIL: $*"
    exit 1
}

# shellcheck source=tests/lib/plugin_sdk.sh
. "$srcdir/tests/lib/plugin_sdk.sh"

rm -rf "$work" && mkdir -p "$work" || exit 99

if [ -n "${GAN_EXAMPLE_INSTALLED:-}" ]; then
    libdir='@libdir@'
    PKG_CONFIG_PATH="@pkgconfigdir@${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export PKG_CONFIG_PATH
    pkgconfig=$PKG_CONFIG
    includedir='@includedir@'
else
    private_install "$work/prefix"
fi
echo "ok: ganctl $($pkgconfig --modversion ganctl) found by pkg-config in $PKG_CONFIG_PATH"
test -f "$includedir/ganctl/scaler.h" || fail "no ganctl/scaler.h installed in $includedir"

# Each example in its own folder, as a third party would have it.
for name in clamp skeleton; do
    build="$work/build-$name"
    mkdir -p "$build" || exit 99
    cp "$srcdir/examples/scaler-$name/scaler_$name.c" "$srcdir/examples/scaler-$name/Makefile" \
        "$build/" || exit 99
    chmod u+w "$build/scaler_$name.c" "$build/Makefile"
    # --as-needed as in scaler_manpage.sh: clang, unlike Debian's gcc, does not pass it
    submake -C "$build" CC="$CC -Wl,--as-needed" PKG_CONFIG="$pkgconfig" >"$build/build.log" 2>&1 ||
        { cat "$build/build.log"; fail "examples/scaler-$name did not build with its Makefile"; }
    module="$build/scaler-$name.so"
    test -f "$module" || fail "the example's Makefile made no scaler-$name.so"
    # It was compiled against the installed headers, not the source tree's.
    grep -q -- "-I$includedir" "$build/build.log" ||
        { test "$includedir" = /usr/include || { cat "$build/build.log"; fail "not built with -I$includedir"; }; }
    echo "ok: examples/scaler-$name built with pkg-config against $includedir"

    if command -v nm >/dev/null 2>&1; then
        exported=$(nm -D --defined-only "$module" | awk '$2 == "T" || $2 == "D" || $2 == "B" { print $3 }')
        test "$exported" = ganctl_plugin_descriptor || fail "the module exports: $exported"
        echo "ok: it exports only ganctl_plugin_descriptor"
    fi

    LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$builddir/tests/unit/check_scalers" "$module" || fail "check_scalers $module"
    echo "ok: the module loads through its descriptor and passes the scaler checks"

    if [ -n "${GAN_EXAMPLE_INSTALLED:-}" ] && [ -x '@bindir@/ganctl' ]; then
        listing=$(GANCTL_CONFIG=/dev/null '@bindir@/ganctl' --plugin-dir "$build" --list-plugins 2>&1) ||
            { echo "$listing"; fail "the installed ganctl could not list the example's folder"; }
        echo "$listing" | grep -q "scaler $name" || { echo "$listing"; fail "ganctl --list-plugins omits $name"; }
        echo "ok: the installed ganctl lists scaler $name"
    fi
done
exit 0
