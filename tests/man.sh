#!/bin/sh
# man.sh — the manual pages render with groff's man macros without a single warning,
# and each documents what the program and the installed ganctl.conf actually have.

srcdir=${srcdir:-.}
command -v groff >/dev/null 2>&1 || { echo "skip: groff is not installed"; exit 77; }
failures=0

for page in man/ganctl.1 man/ganctl.conf.5 man/ganctl-plugin.7 man/ganctl-scaler.7; do
    warnings=$(groff -man -ww -z "$srcdir/$page" 2>&1)
    if [ -n "$warnings" ]; then
        echo "FAIL: $page: $warnings"
        failures=$((failures + 1))
    else
        echo "ok: $page renders without warnings"
    fi
done

# Every long option of --help is in ganctl(1).
if [ -n "${GANCTL:-}" ]; then
    for option in $("$GANCTL" --help | grep -oE -- '--[a-z][-a-z]*' | sort -u); do
        escaped=$(printf '%s' "$option" | sed 's/-/\\\\-/g')
        if grep -q -- "$escaped" "$srcdir/man/ganctl.1"; then
            echo "ok: ganctl(1) documents $option"
        else
            echo "FAIL: ganctl(1) does not document $option"
            failures=$((failures + 1))
        fi
    done
fi

# Every setting --print-config shows (the core's and the shipped plugins') is in
# ganctl.conf(5) and written out, perhaps commented, in the installed ganctl.conf.
# A setting both networks have may be documented once as "net .optimizer.lr".
keys="backend.name backend.threads log.level"
if [ -n "${GANCTL:-}" ]; then
    keys=$(GANCTL_CONFIG=/dev/null "$GANCTL" --print-config | awk '
        / = \{$/ { stack[++depth] = $1; next }
        /^ *\};$/ { depth--; next }
        / = / { key = ""; for (i = 1; i <= depth; i++) key = key stack[i] "."; print key $1 }')
    [ -n "$keys" ] || { echo "FAIL: ganctl --print-config printed no settings"; failures=$((failures + 1)); }
fi
for key in $keys; do
    escaped=$(printf '%s' "$key" | sed 's/-/\\\\-/g')
    net_form=$(printf '%s' "$escaped" | sed -n 's/^\(generator\|critic\)\./net ./p')
    if grep -q "^\.B $escaped\$" "$srcdir/man/ganctl.conf.5" ||
       { [ -n "$net_form" ] && grep -qF -- "$net_form" "$srcdir/man/ganctl.conf.5"; }; then
        echo "ok: ganctl.conf(5) documents $key"
    else
        echo "FAIL: ganctl.conf(5) does not document $key"
        failures=$((failures + 1))
    fi
    leaf=${key##*.}
    if grep -qE "^ *#? *$leaf = " "$srcdir/etc/ganctl.conf"; then
        echo "ok: etc/ganctl.conf writes out $key"
    else
        echo "FAIL: etc/ganctl.conf does not write out $key"
        failures=$((failures + 1))
    fi
done

test "$failures" -eq 0
