# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# tests/lib/plugin_sdk.sh — sourced by the tests that build a plugin as a third party
# would (tests/e2e/scaler_example.sh, scaler_manpage.sh, plugin_c99.sh): a make that
# stays out of the parent's job server, this build's headers, libganctl and ganctl.pc
# installed into a private prefix, and a program's text taken from a man page's source.
# The sourcing script sets MAKE, PKG_CONFIG and builddir, and defines fail.

# A make started by a test must not take part in the parent make's job server.
submake() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$MAKE" "$@"
}

# private_install PREFIX: installs into PREFIX and sets libdir, includedir,
# PKG_CONFIG_PATH (exported) and pkgconfig, the pkg-config command that finds it there:
# the installed ganctl.pc names configure's directories, so a relocated copy is read
# with its two variables pointed at PREFIX.
private_install() {
    prefix=$1
    libdir="$prefix/lib"
    includedir="$prefix/include"
    mkdir -p "$prefix" || exit 99
    submake -C "$builddir" install-libLTLIBRARIES install-ganctlincludeHEADERS \
        install-nodist_ganctlincludeHEADERS install-pkgconfigDATA \
        prefix="$prefix" exec_prefix="$prefix" libdir="$libdir" includedir="$includedir" \
        ganctlincludedir="$includedir/ganctl" pkgconfigdir="$libdir/pkgconfig" \
        >"$prefix.log" 2>&1 || { cat "$prefix.log"; fail "installing into $prefix"; }
    PKG_CONFIG_PATH="$libdir/pkgconfig"
    export PKG_CONFIG_PATH
    pkgconfig="$PKG_CONFIG --define-variable=includedir=$includedir --define-variable=libdir=$libdir"
}

# man_extract PAGE WHAT OUT: the text between PAGE's lines `.\" BEGIN WHAT` and
# `.\" END WHAT` into OUT, with the page's escapes turned back into what they print. \e
# (the backslash) is set aside first and restored last; an escape this list lacks is an
# error, since the text would then not be what the page shows.
man_extract() {
    awk -v what="$2" '
        index($0, ".\\\" END " what) == 1 { inside = 0 }
        inside { print }
        index($0, ".\\\" BEGIN " what) == 1 { inside = 1 }' "$1" |
        sed -e 's/\\e/\x01/g' -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g' \
            -e 's/\\(ha/^/g' -e 's/\\(em/\xe2\x80\x94/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' \
            >"$3.tmp" || return 1
    if grep -n '\\' "$3.tmp"; then
        echo "an escape the extraction does not know, in $1 ($2)"
        return 1
    fi
    tr '\001' '\134' <"$3.tmp" >"$3" && rm -f "$3.tmp" && test -s "$3"
}
