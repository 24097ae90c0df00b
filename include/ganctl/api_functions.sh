#!/bin/sh
# SPDX-License-Identifier: MIT
# api_functions.sh — the names of the functions that public headers declare, sorted, one
# a line: what libganctl, ganctl and the core's tests export, and what tests/e2e/exports.sh checks.
#
#   include/ganctl/api_functions.sh 'CPP' HEADER...
#
# HEADER is a path to a header of <ganctl/> (include/ganctl/tensor.h). The headers are
# run through the C preprocessor as a plugin would include them, so macros and
# conditionals count as they do for a compiler, and only the text that comes from
# ganctl/ headers (the line markers say which) is read, not the system headers they
# include. A name is taken from each top-level declaration that is not a typedef and
# not static (the static inline helpers are no part of the library): the first
# identifier followed by a '(' that does not open a pointer declarator, skipping
# attribute-like groups (__attribute__((…)), _Static_assert(…)). So pointers to
# functions, whether variables, typedefs or struct members, are not functions.
set -eu

[ $# -ge 2 ] || { echo "usage: $0 'CPP' HEADER..." >&2; exit 2; }
cpp=$1
shift

tmp=${TMPDIR:-/tmp}/gan-api-functions.$$
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
mkdir "$tmp"

# One translation unit that includes every header by its full path, with the folder
# above each header's ganctl/ on the include path for the <ganctl/…> includes between
# them (version.h is generated, so it may sit in another tree than the rest).
incs=
for h in "$@"; do
    [ -f "$h" ] || { echo "$0: $h: no such header" >&2; exit 1; }
    d=$(cd "$(dirname "$h")/.." && pwd)
    echo "#include \"$d/ganctl/$(basename "$h")\"" >>"$tmp/all.c"
    case " $incs " in
    *" -I$d "*) ;;
    *) incs="$incs -I$d" ;;
    esac
done

# $cpp and $incs are word-split on purpose: CPP is a command with its options.
# shellcheck disable=SC2086
$cpp $incs "$tmp/all.c" >"$tmp/all.i"

awk '
# Line markers: "# 12 \"/x/include/ganctl/tensor.h\" 2" (or "#line 12 \"…\"").
/^#/ {
    if (match($0, /"[^"]*"/)) {
        file = substr($0, RSTART + 1, RLENGTH - 2)
        keep = file ~ /(^|\/)ganctl\/[^\/]*\.h$/
    }
    next
}
!keep { next }
{
    line = $0
    # Literals cannot hold a brace or a semicolon that counts.
    gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
    gsub(/\047([^\047\\]|\\.)*\047/, "0", line)
    gsub(/[(){};,*=]/, " & ", line)
    gsub(/\[/, " [ ", line)
    gsub(/\]/, " ] ", line)
    n = split(line, w, " ")
    for (i = 1; i <= n; i++)
        token(w[i])
}

function token(t) {
    if (t == "{") {
        # A body right after a parameter list is a function definition: it ends the
        # declaration at its closing brace. Other braces (struct, enum) do not.
        if (depth == 0)
            fnbody = nt > 0 && tok[nt] == ")"
        depth++
        return
    }
    if (t == "}") {
        depth--
        if (depth == 0 && fnbody) {
            flush()
            fnbody = 0
        }
        return
    }
    if (depth > 0)
        return
    if (t == ";") {
        flush()
        return
    }
    tok[++nt] = t
}

function flush(   i, j, p, t, t1, t2, found, skipped) {
    for (i = 1; i <= nt; i++)
        if (tok[i] == "typedef" || tok[i] == "static") {
            nt = 0
            return
        }
    p = 0
    found = 0
    for (i = 1; i <= nt; i++) {
        # The two tokens after t, within this declaration (tok keeps older ones past nt).
        t = tok[i]
        t1 = i + 1 <= nt ? tok[i + 1] : ""
        t2 = i + 2 <= nt ? tok[i + 2] : ""
        if (t ~ /^_/ && t1 == "(") {
            # __attribute__((…)), __asm__(…), _Alignas(…): skip the whole group.
            skipped = 0
            for (j = i + 1; j <= nt; j++) {
                if (tok[j] == "(")
                    skipped++
                else if (tok[j] == ")" && --skipped == 0)
                    break
            }
            i = j
            continue
        }
        if (t == "(")
            p++
        else if (t == ")")
            p--
        else if (t == "," && p == 0)
            found = 0        # the next declarator of the same declaration
        else if (!found && t ~ /^[A-Za-z][A-Za-z0-9_]*$/ && t1 == "(" && t2 != "*" \
                 && t !~ /^(sizeof|typeof|alignof|alignas|static_assert)$/) {
            print t
            found = 1
        }
    }
    nt = 0
}
' "$tmp/all.i" | LC_ALL=C sort -u
