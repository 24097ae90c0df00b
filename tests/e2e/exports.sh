#!/bin/sh
# SPDX-License-Identifier: MIT
# exports.sh — libganctl exports exactly the functions include/ganctl/*.h declare, ganctl
# exports the same set, and the modules ganctl loads bind to its copy of the core.
#
# Run from the top of the build tree by make check. installcheck runs it on the
# installed files instead, naming them in GAN_EXPORTS_HEADERS (the installed ganctl/
# folder), GAN_EXPORTS_LIB and GAN_EXPORTS_PROGRAM.

srcdir=${srcdir:-.}
cpp=${GAN_CPP:-cc -E}
nm=${NM:-nm}
lib=${GAN_EXPORTS_LIB:-core/.libs/libganctl.so}
program=${GAN_EXPORTS_PROGRAM:-${GANCTL:-cli/ganctl}}
failures=0

tmp=${TMPDIR:-/tmp}/gan-exports.$$
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$tmp" || exit 99

# The declarations: every header of the folder (not only those ganctl.h includes, nor
# only the installed list), version.h from the build tree.
if [ -n "${GAN_EXPORTS_HEADERS:-}" ]; then
    set -- "$GAN_EXPORTS_HEADERS"/*.h
else
    set -- "$srcdir"/include/ganctl/*.h include/ganctl/version.h
fi
sh "$srcdir/include/ganctl/api_functions.sh" "$cpp" "$@" >"$tmp/declared" || exit 99
count=$(wc -l <"$tmp/declared")
if [ "$count" -lt 10 ]; then
    echo "ERROR: only $count functions found in $*: the extraction is broken"
    exit 99
fi

# A libtool wrapper script stands for the real program in .libs/.
elf() {
    if [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; then
        echo "$1"
    else
        echo "$(dirname "$1")/.libs/$(basename "$1")"
    fi
}

# Defined dynamic symbols of a file: functions (T, W, i) to $2, anything else to $3.
# The ELF start and end markers are the link editor's, not the package's.
symbols() {
    $nm -D --defined-only "$1" >"$tmp/nm" || return 1
    awk '$2 ~ /^[TWi]$/ && $3 != "_init" && $3 != "_fini" { print $3 }' "$tmp/nm" |
        LC_ALL=C sort -u >"$2"
    awk '$2 !~ /^[TWi]$/ && $2 != "A" && $3 !~ /^_/ { print $2 " " $3 }' "$tmp/nm" |
        LC_ALL=C sort -u >"$3"
}

# Compares the exported functions of $1 with the declared ones; `only_gan`: the
# program also exports what the C runtime needs, so only gan_ names count there.
compare() {
    file=$1 what=$2 only_gan=$3
    symbols "$file" "$tmp/functions" "$tmp/objects" || {
        echo "FAIL: $nm -D could not read $file"
        failures=$((failures + 1))
        return
    }
    if [ "$only_gan" = yes ]; then
        grep '^gan_' "$tmp/functions" >"$tmp/f" || :
        mv "$tmp/f" "$tmp/functions"
        grep ' gan_' "$tmp/objects" >"$tmp/o" || :
        mv "$tmp/o" "$tmp/objects"
    fi
    extra=$(LC_ALL=C comm -13 "$tmp/declared" "$tmp/functions")
    missing=$(LC_ALL=C comm -23 "$tmp/declared" "$tmp/functions")
    if [ -n "$extra" ]; then
        echo "FAIL: $what exports functions no public header declares:"
        echo "$extra" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
    if [ -n "$missing" ]; then
        echo "FAIL: $what does not export functions the public headers declare:"
        echo "$missing" | sed 's/^/    /'
        failures=$((failures + 1))
    fi
    # No public header declares a variable: the core's state stays inside it.
    if [ -s "$tmp/objects" ]; then
        echo "FAIL: $what exports data (no public header declares any):"
        sed 's/^/    /' "$tmp/objects"
        failures=$((failures + 1))
    fi
    if [ -z "$extra" ] && [ -z "$missing" ] && [ ! -s "$tmp/objects" ]; then
        echo "ok: $what exports the $count declared functions and nothing else"
    fi
}

compare "$lib" "$lib" no

# The Debian package's symbols file lists the same functions, so that dpkg-gensymbols
# sees no function come or go (only in a source tree that has the packaging).
symbols_file=$srcdir/debian/libganctl0.symbols
if [ -z "${GAN_EXPORTS_HEADERS:-}" ] && [ -f "$symbols_file" ]; then
    sed -n 's/^ \(gan_[A-Za-z0-9_]*\)@Base .*/\1/p' "$symbols_file" | LC_ALL=C sort \
        >"$tmp/packaged"
    if LC_ALL=C cmp -s "$tmp/declared" "$tmp/packaged"; then
        echo "ok: $symbols_file lists the $count declared functions"
    else
        echo "FAIL: $symbols_file differs from the declared functions (< declared," \
            "> listed there); add or remove its lines:"
        LC_ALL=C diff "$tmp/declared" "$tmp/packaged" | grep '^[<>]' | sed 's/^/    /'
        failures=$((failures + 1))
    fi
fi
program_elf=$(elf "$program")
compare "$program_elf" "$program_elf" yes

# The modules ganctl loads resolve every gan_ function in the program itself, even
# though the shipped models and losses also pull in libganctl.so.0 (LD_DEBUG is glibc's
# report of each symbol binding; without it, or without modules to load, say so).
if [ "${GAN_EXPORTS_BINDINGS:-yes}" = yes ]; then
    LD_DEBUG=bindings GANCTL_CONFIG=/dev/null "$program" --list-plugins \
        >/dev/null 2>"$tmp/bindings"
    grep "binding file .*/model-[^/ ]*\.so .* to [^ ]*$(basename "$program_elf") .*symbol \`gan_" \
        "$tmp/bindings" >"$tmp/to-program" || :
    # (libganctl.so.0's bindings to itself follow from the same fault; not shown.)
    grep " to [^ ]*/libganctl\.so[.0-9]* .*symbol \`gan_" "$tmp/bindings" |
        grep -v "binding file [^ ]*/libganctl\.so" >"$tmp/to-lib" || :
    if [ -s "$tmp/to-lib" ]; then
        echo "FAIL: $(wc -l <"$tmp/to-lib") symbols bound to a second copy of the core" \
            "in libganctl.so, not to the program's:"
        sed 's/^[[:space:]]*[0-9]*:[[:space:]]*/    /' "$tmp/to-lib" | head -20
        failures=$((failures + 1))
    elif [ -s "$tmp/to-program" ]; then
        echo "ok: the model modules' $(wc -l <"$tmp/to-program") gan_ bindings go to" \
            "the program, no module's to libganctl.so"
    else
        echo "note: no module's gan_ binding to the program was seen (no LD_DEBUG," \
            "or no model module on the plugin path): the bindings went unchecked"
    fi
fi

[ "$failures" -eq 0 ]
