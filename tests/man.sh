#!/bin/sh
# man.sh — the manual pages render with groff's man macros without a single warning,
# and each documents what the program and the installed ganctl.conf actually have.

srcdir=${srcdir:-.}
command -v groff >/dev/null 2>&1 || { echo "skip: groff is not installed"; exit 77; }
failures=0

for page in man/ganctl.1 man/ganctl.conf.5 man/ganctl-plugin.7; do
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

# Every setting in the installed ganctl.conf is in ganctl.conf(5).
for key in backend.name backend.threads log.level; do
    if grep -q "^\.B $key\$" "$srcdir/man/ganctl.conf.5"; then
        echo "ok: ganctl.conf(5) documents $key"
    else
        echo "FAIL: ganctl.conf(5) does not document $key"
        failures=$((failures + 1))
    fi
    leaf=${key#*.}
    if grep -qE "^ *#? *$leaf = " "$srcdir/etc/ganctl.conf"; then
        echo "ok: etc/ganctl.conf writes out $key"
    else
        echo "FAIL: etc/ganctl.conf does not write out $key"
        failures=$((failures + 1))
    fi
done

test "$failures" -eq 0
