# SPDX-License-Identifier: MIT
# test_lib.sh — what the shell tests share: the program, a scratch folder, and counted
# checks. Sourced, not run.
#
#   . "$(dirname "$0")/../lib/test_lib.sh"; test_begin NAME; ...; test_end
#
# A test may redefine fail_details (what a failed check prints) or check_passed (what a
# passed one prints after its "ok" line) after sourcing; with check_output set, check
# keeps each command's output in $work/check.out and a failure shows it instead.

GANCTL=${GANCTL:-./cli/ganctl}
failures=0
checks=0

# need_python MODULES HINT: sets python to the first of $GANCTL_TEST_PYTHON, python3 on the
# PATH and /usr/bin/python3 that can import MODULES (a comma-separated list, as Python's
# import takes it), or skips the test (77), naming what is missing and HINT, how to get it.
need_python() {
    python=
    for candidate in "${GANCTL_TEST_PYTHON:-}" "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
        if [ -n "$candidate" ] && "$candidate" -c "import $1" 2>/dev/null; then
            python=$candidate
            return 0
        fi
    done
    echo "skip: no python3 here can import $1 ($2)"
    exit 77
}

# A scratch folder $work, removed on exit; the program must be built. Exit 99 (a hard
# error to automake) when either is missing.
test_begin() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-$1.XXXXXX") || exit 99
    trap 'rm -rf "$work"' EXIT
    test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
    GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
    export GANCTL_CONFIG
}

# What the last command left: its exit status when $rc holds one, what it printed and,
# when $dir names a run folder under test, what that folder holds.
fail_details() {
    if [ -n "${check_output:-}" ]; then
        sed 's/^/  /' "$work/check.out"
        return 0
    fi
    [ -n "${rc:-}" ] && echo "  exit status: $rc"
    echo "  stdout: $(cat "$work/out" 2>/dev/null)"
    echo "  stderr: $(cat "$work/err" 2>/dev/null)"
    [ -n "${dir:-}" ] && echo "  folder: $(ls -A "$dir" 2>/dev/null | tr '\n' ' ')"
    return 0
}

check_passed() { :; }

fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
    fail_details
}

check() {
    what=$1
    shift
    checks=$((checks + 1))
    if [ -n "${check_output:-}" ]; then
        "$@" >"$work/check.out" 2>&1
    else
        "$@"
    fi
    if [ $? -eq 0 ]; then echo "ok: $what"; check_passed; else fail "$what"; fi
}

rc_is() { test "$rc" -eq "$1"; }
has() { grep -qF -- "$2" "$1"; }

test_end() {
    echo "$checks checks, $failures failed"
    test "$failures" -eq 0
}
