#!/bin/sh
# SPDX-License-Identifier: MIT
# user_include.sh — the @include directives of a file the user names, expanded by
# ganctl: each path is read against the folder of the file that holds it, nested ones
# too; a FIFO or a device named by a nested include is refused within a second (exit
# 2, one line), never waited on; a syntax error or an unknown setting in an included
# file names that file and its own line, and one after an include names the including
# file's line; a cycle, nesting deeper than ten levels and a directive that only the
# files put together make are refused, naming the files.

srcdir=${srcdir:-.}
. "$(dirname "$0")/../lib/test_lib.sh"
test_begin user-include
command -v mkfifo >/dev/null 2>&1 || { echo "skip: mkfifo is not installed"; exit 77; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Prints the settings with a five-second limit, from folder $1; $rc, $ms (how long it
# took), $work/out and $work/err.
printed() {
    from=$1
    shift
    start=$(now_ms)
    (cd "$from" && timeout 5 "$GANCTL" "$@" --print-config) >"$work/out" 2>"$work/err"
    rc=$?
    ms=$(($(now_ms) - start))
}

# refused WHAT MESSAGE FROM ARGS...: exit 2 within a second, one line, which is MESSAGE.
# (check sets $what, so the name is kept apart.)
refused() {
    case_name=$1
    message=$2
    shift 2
    printed "$@"
    check "$case_name: exit 2" rc_is 2
    check "$case_name: within a second (${ms} ms)" test "$ms" -lt 1000
    check "$case_name: one line" test "$(wc -l <"$work/err")" -eq 1
    check "$case_name: the message" test "$(cat "$work/err")" = "ganctl: $message"
}

# A nested include resolves against its own file's folder: sub/a.conf's "b.conf" is
# sub/b.conf, not the b.conf beside top.conf that libconfig 1.5 would have read.
mkdir -p "$work/sub/deeper"
printf '# the top\n@include "sub/a.conf"\nrun = { iterations = 7; };\n' >"$work/top.conf"
printf 'log = { level = "error"; };\nbackend = { threads = 9; };\n' >"$work/b.conf"
printf '\n@include "b.conf"\n@include "deeper/c.conf"\n' >"$work/sub/a.conf"
printf '# b\nlog = { level = "warn"; };\n' >"$work/sub/b.conf"
printf 'backend = { threads = 3; };\n' >"$work/sub/deeper/c.conf"
printed "$work" -c top.conf
check "a nested include: exit 0" rc_is 0
check "it reads sub/b.conf, beside the file that includes it" \
    has "$work/out" 'level = "warn";  # sub/b.conf:2'
check "and sub/deeper/c.conf, from sub/a.conf's folder" \
    has "$work/out" 'threads = 3;  # sub/deeper/c.conf:1'
check "the top file's line after the include keeps its number" \
    has "$work/out" 'iterations = 7;  # top.conf:3'
check "nothing from the b.conf beside top.conf" sh -c '! grep -q "# b.conf\|threads = 9\|\"error\"" "$1"' - "$work/out"
printed / -c "$work/top.conf"
check "from another folder, the same files" has "$work/out" "level = \"warn\";  # $work/sub/b.conf:2"
printed "$work" -c top.conf -s log.level=debug
check "the debug log names each included file and where" \
    has "$work/err" "read sub/deeper/c.conf (included at sub/a.conf:3)"

# A FIFO or a device named by a nested include: refused at once, never read.
mkfifo "$work/sub/pipe"
printf '# x\n@include "pipe"\n' >"$work/sub/a.conf"
refused "a nested include of a FIFO" \
    "sub/a.conf:2: the @include names sub/pipe, which is a FIFO, not a regular file: include only regular files (the path is read from the folder of sub/a.conf)" \
    "$work" -c top.conf
check "a FIFO include: no setting read" test ! -s "$work/out"
if [ -c /dev/zero ]; then
    printf '@include "/dev/zero"\n' >"$work/sub/a.conf"
    refused "a nested include of a device" \
        "sub/a.conf:1: the @include names /dev/zero, which is a device, not a regular file: include only regular files (the path is read from the folder of sub/a.conf)" \
        "$work" -c top.conf
fi
printf '@include "absent.conf"\n' >"$work/sub/a.conf"
refused "a nested include of a missing file" \
    "sub/a.conf:1: cannot read sub/absent.conf, which the @include names: No such file or directory: fix the path, which is read from the folder of sub/a.conf" \
    "$work" -c top.conf

# Errors in an included file name that file and its own line.
printf '# one\n@include "b.conf"\n' >"$work/sub/a.conf"
printf '# b\n\nlog = { level = ; };\n' >"$work/sub/b.conf"
refused "a syntax error in an included file" \
    "sub/b.conf:3: syntax error (libconfig: syntax error): fix the file; ganctl.conf(5) describes the syntax" \
    "$work" -c top.conf
printf '# b\nlog = {\n  level = "warn";\n  levle = "info";\n};\n' >"$work/sub/b.conf"
refused "an unknown setting in an included file" \
    'sub/b.conf:4: unknown setting "log.levle"; did you mean "log.level"?' \
    "$work" -c top.conf
printf 'critic = {\n  optimizer = {\n    lr = nan;\n  };\n};\n' >"$work/sub/b.conf"
refused "nan in an included file" \
    "sub/b.conf:3: critic.optimizer.lr = nan: a setting must be a finite number; write a number" \
    "$work" -c top.conf
# No newline at the included file's end, then an error on the including file's next
# line: that line's own number.
printf 'log = { level = "warn"; };' >"$work/sub/b.conf"
printf '@include "sub/b.conf"\n\nrun = { iterations = ; };\n' >"$work/after.conf"
refused "a syntax error after an include" \
    "after.conf:3: syntax error (libconfig: syntax error): fix the file; ganctl.conf(5) describes the syntax" \
    "$work" -c after.conf

# A cycle, through another file and of a file with itself.
printf '@include "deeper/c.conf"\n' >"$work/sub/a.conf"
printf 'x = 1;\n@include "../a.conf"\n' >"$work/sub/deeper/c.conf"
refused "a cycle" \
    "sub/deeper/c.conf:2: the includes make a cycle (sub/a.conf includes sub/deeper/c.conf, which includes sub/deeper/../a.conf): a file may not include itself, directly or through others; remove one of these includes" \
    "$work" -c sub/a.conf
printf '@include "self.conf"\n' >"$work/self.conf"
refused "a file including itself" \
    "self.conf:1: the includes make a cycle (self.conf includes self.conf): a file may not include itself, directly or through others; remove one of these includes" \
    "$work" -c self.conf
# The same file twice, side by side, is no cycle.
printf '@include "sub/b.conf"\n@include "sub/b.conf"\n' >"$work/twice.conf"
printf '# nothing\n' >"$work/sub/b.conf"
printed "$work" -c twice.conf
check "a file included twice, not in a cycle: exit 0" rc_is 0

# Ten levels below the named file are read; an eleventh is refused.
mkdir "$work/levels"
for i in 0 1 2 3 4 5 6 7 8 9 10; do
    printf '@include "l%d.conf"\n' $((i + 1)) >"$work/levels/l$i.conf"
done
printf 'run = { iterations = 11; };\n' >"$work/levels/l11.conf"
refused "eleven levels" \
    "levels/l10.conf:1: the @include of levels/l11.conf nests more than 10 levels below levels/l0.conf: include the files from fewer levels" \
    "$work" -c levels/l0.conf
printf 'run = { iterations = 10; };\n' >"$work/levels/l10.conf"
printed "$work" -c levels/l0.conf
check "ten levels are read" has "$work/out" "iterations = 10;  # levels/l10.conf:1"

# A string left open in an included file makes the including file's next lines a
# directive that neither file holds alone: refused, not read.
printf 'secret = "\n' >"$work/open.conf"
printf '@include "open.conf"\n"\n@include "sub/pipe"\n' >"$work/joined.conf"
refused "a directive the files make together" \
    "joined.conf:3: this line reads as an @include only with the included files put together (one of them leaves a string or a comment open): close the string or comment in the file where it begins" \
    "$work" -c joined.conf

test_end
