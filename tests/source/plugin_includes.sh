#!/bin/sh
# SPDX-License-Identifier: MIT
# plugin_includes.sh — no source under plugins/ or backends/ includes a header of the core:
# a module sees <ganctl/…>, the system's headers, config.h and the files of its own folder
# (a backend also backends/common/).
#
# A quoted include must name config.h, a file in the includer's own folder, or a
# header of include/ganctl/ ("ganctl/tensor.h"); a backend may also include what the
# backends share, "../common/NAME.h" (backends/common/). An angle-bracket include must not
# name a file of the source tree outside include/ganctl/ either: the build's include
# path reaches core/ (for the core's own sources), so <tensor/tensor_core.h> would
# compile as well as "tensor/tensor_core.h" does.

srcdir=${srcdir:-.}

for top in plugins backends; do
    [ -d "$srcdir/$top" ] || { echo "ERROR: $srcdir/$top is missing"; exit 99; }
done

files=$(find "$srcdir/plugins" "$srcdir/backends" -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \
       -o -name '*.cpp' \) | LC_ALL=C sort)
[ -n "$files" ] || { echo "ERROR: no sources under $srcdir/plugins and $srcdir/backends"; exit 99; }

# $files is split into one argument per file (source paths hold no blanks).
# shellcheck disable=SC2086
awk -v srcdir="$srcdir" '
# Whether a file can be read (a missing one makes getline return -1).
function exists(path,   r, x) {
    r = (getline x < path)
    if (r >= 0)
        close(path)
    return r >= 0
}
FNR == 1 {
    files++
    dir = FILENAME
    sub(/\/[^\/]*$/, "", dir)
    rel = substr(FILENAME, length(srcdir) + 2)
}
/^[ \t]*#[ \t]*include[ \t]*["<]/ {
    spec = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*/, "", spec)
    quoted = substr(spec, 1, 1) == "\""
    name = substr(spec, 2)
    end = index(name, quoted ? "\"" : ">")
    name = end ? substr(name, 1, end - 1) : ""
    if (name == "")
        ok = 0
    else if (quoted)
        ok = name == "config.h" || (name !~ /\// && exists(dir "/" name)) \
             || (name ~ /^ganctl\/[^\/]+$/ && exists(srcdir "/include/" name)) \
             || (rel ~ /^backends\// && name ~ /^\.\.\/common\/[^\/]+$/ \
                 && exists(dir "/" name))
    else
        ok = name == "config.h" || name ~ /^ganctl\// \
             || !(exists(srcdir "/core/" name) || exists(srcdir "/" name))
    if (!ok) {
        print "FAIL: " rel ":" FNR ": " $0
        bad++
    }
}
END {
    if (!bad)
        print "ok: the " files " sources under plugins/ and backends/ include only" \
              " <ganctl/...>, config.h, system headers and their own folder'"'"'s files"
    exit bad ? 1 : 0
}' $files
