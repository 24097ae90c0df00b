# SPDX-License-Identifier: MIT
# run_folder_lib.sh — what the run-folder tests (run_leftovers, run_restart, run_foreign,
# run_lock) share: the program, a scratch folder, and counted checks. Sourced, not run.
#
#   . "$(dirname "$0")/run_folder_lib.sh"; run_folder_begin NAME; ...; run_folder_end

GANCTL=${GANCTL:-./cli/ganctl}
failures=0
checks=0

# A scratch folder $work, removed on exit; the program must be built. Exit 99 (a hard
# error to automake) when either is missing.
run_folder_begin() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-$1.XXXXXX") || exit 99
    trap 'rm -rf "$work"' EXIT
    test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
    GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
    export GANCTL_CONFIG
}

# A failed check, with what the last command printed and, when $dir names the run
# folder under test, what that folder holds.
fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
    echo "  stdout: $(cat "$work/out" 2>/dev/null)"
    echo "  stderr: $(cat "$work/err" 2>/dev/null)"
    [ -n "${dir:-}" ] && echo "  folder: $(ls -A "$dir" 2>/dev/null | tr '\n' ' ')"
    return 0
}

check() {
    what=$1
    shift
    checks=$((checks + 1))
    if "$@"; then echo "ok: $what"; else fail "$what"; fi
}

rc_is() { test "$rc" -eq "$1"; }
has() { grep -qF -- "$2" "$1"; }

run_folder_end() {
    echo "$checks checks, $failures failed"
    test "$failures" -eq 0
}
