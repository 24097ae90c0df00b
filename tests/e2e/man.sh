#!/bin/sh
# SPDX-License-Identifier: MIT
# man.sh — the manual pages render with groff's man macros without a single warning,
# and each documents what the program and the installed ganctl.conf actually have.
#
# Run from the top of the build tree: ganctl(1), ganctl.conf(5) and ganctl-plugin(7) are
# made there from their templates (man/man.am); ganctl-scaler(7) and ganctl-recipe(7) are
# read from the source.

srcdir=${srcdir:-.}
command -v groff >/dev/null 2>&1 || { echo "skip: groff is not installed"; exit 77; }
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

for page in man/ganctl.1 man/ganctl.conf.5 man/ganctl-plugin.7 "$srcdir/man/ganctl-scaler.7" \
    "$srcdir/man/ganctl-recipe.7"; do
    [ -f "$page" ] || { fail "$page was not made (make all makes it)"; continue; }
    warnings=$(groff -man -ww -z "$page" 2>&1)
    if [ -n "$warnings" ]; then
        fail "$page: $warnings"
    else
        echo "ok: $page renders without warnings"
    fi
    # A template value that make did not fill in would reach the reader as @name@.
    unfilled=$(grep -n '@[a-z_]*@' "$page")
    if [ -n "$unfilled" ]; then
        fail "$page keeps template values: $unfilled"
    else
        echo "ok: $page has no unfilled template value"
    fi
done

# Every long option of --help is in ganctl(1).
if [ -n "${GANCTL:-}" ]; then
    for option in $("$GANCTL" --help | grep -oE -- '--[a-z][-a-z]*' | sort -u); do
        escaped=$(printf '%s' "$option" | sed 's/-/\\\\-/g')
        if grep -q -- "$escaped" man/ganctl.1; then
            echo "ok: ganctl(1) documents $option"
        else
            fail "ganctl(1) does not document $option"
        fi
    done
fi

# Every environment variable the program reads is in the ENVIRONMENT section of
# ganctl(1) and of ganctl.conf(5).
in_environment() {
    awk -v var="$2" '
        /^\.SH / { inside = ($0 ~ /^\.SH "?ENVIRONMENT"?$/) }
        inside && $0 == ".B " var { found = 1 }
        END { exit !found }' "$1"
}
for var in $(cat "$srcdir"/cli/*.c "$srcdir"/core/*/*.c "$srcdir"/backends/*/*.c \
             "$srcdir"/plugins/*/*.c | grep -oE 'getenv\("[A-Z_]+"\)' |
             sed 's/getenv("\(.*\)")/\1/' | sort -u); do
    for page in man/ganctl.1 man/ganctl.conf.5; do
        if in_environment "$page" "$var"; then
            echo "ok: $page documents \$$var under ENVIRONMENT"
        else
            fail "$page does not document \$$var under ENVIRONMENT"
        fi
    done
done

# The settings --print-config prints, as dotted keys.
print_keys() {
    GANCTL_CONFIG=/dev/null "$GANCTL" "$@" --print-config | awk '
        / = \{$/ { stack[++depth] = $1; next }
        /^ *\};$/ { depth--; next }
        / = / { key = ""; for (i = 1; i <= depth; i++) key = key stack[i] "."; print key $1 }'
}

# A setting is documented in ganctl.conf(5) as ".B key" (one both networks have may be
# documented once as "net .optimizer.lr"), or, for a loss scaler's own settings, by its
# name in ganctl-scaler(7).
documented() {
    escaped=$(printf '%s' "$1" | sed 's/-/\\\\-/g')
    net_form=$(printf '%s' "$escaped" | sed -n 's/^\(generator\|critic\)\./net ./p')
    grep -q "^\.B $escaped\$" man/ganctl.conf.5 && return 0
    [ -n "$net_form" ] && grep -qF -- "$net_form" man/ganctl.conf.5 && return 0
    case $1 in
    scaler.name | *.scaler.name) return 1 ;;
    scaler.* | *.scaler.*)
        leaf=$(printf '%s' "${1##*.}" | sed 's/-/\\\\-/g')
        grep -q "^\.B $leaf\$" "$srcdir/man/ganctl-scaler.7" ;;
    *) return 1 ;;
    esac
}

# The defaults: each documented and written out, perhaps commented, in the installed
# ganctl.conf.
keys="backend.name backend.threads log.level"
if [ -n "${GANCTL:-}" ]; then
    keys=$(print_keys)
    [ -n "$keys" ] || fail "ganctl --print-config printed no settings"
fi
for key in $keys; do
    if documented "$key"; then
        echo "ok: ganctl.conf(5) documents $key"
    else
        fail "ganctl.conf(5) does not document $key"
    fi
    leaf=${key##*.}
    if grep -qE "^ *#? *$leaf = " "$srcdir/etc/ganctl.conf"; then
        echo "ok: etc/ganctl.conf writes out $key"
    else
        fail "etc/ganctl.conf does not write out $key"
    fi
done

# What the shipped example configurations and the other shipped scalers add (the dcgan
# model's settings, each scaler's): documented too.
if [ -n "${GANCTL:-}" ]; then
    more=$(
        for conf in "$srcdir"/etc/*.conf; do print_keys -c "$conf"; done
        for scaler in static dynamic underflow-aware; do print_keys --scaler "$scaler"; done
        # the CUDA backend's, when this build has it (it loads only where CUDA does)
        if [ -f backends/cuda/.libs/backend-cuda.so ]; then
            print_keys --plugin-dir backends/cuda/.libs --backend cuda 2>/dev/null
        fi)
    [ -n "$more" ] || fail "ganctl --print-config printed nothing for the examples and scalers"
    for key in $(printf '%s\n' "$more" | sort -u); do
        case " $(echo $keys) " in *" $key "*) continue ;; esac
        if documented "$key"; then
            echo "ok: ganctl.conf(5) or ganctl-scaler(7) documents $key"
        else
            fail "neither ganctl.conf(5) nor ganctl-scaler(7) documents $key"
        fi
    done
fi

test "$failures" -eq 0
