#!/bin/sh
# SPDX-License-Identifier: MIT
# structure.sh — the source tree keeps its shape: no include circle in core/, no folder
# of core/ with more than 8 .c files, no source of core/, backends/, plugins/ or cli/
# over 700 lines, no struct above the tensors with more than 25 members, and core/train's
# rooms entered through their one header.
#
# Reads the source tree only ($srcdir, the top of it; make check sets it), and names
# each violation on a line of its own:
#
#   - include circles in core/, between files and between folders. A file's quoted
#     includes ("x/y.h") are looked for in the includer's own folder, then in core/, as
#     the compiler does with the build's -I$(top_srcdir)/core; includes that resolve
#     outside core/ are not part of the graph. A folder is the folder a file lies in, so
#     core/train/ROOM is a folder of its own beside core/train.
#   - folders of core/, at any depth, holding more than 8 .c files;
#   - files (.c .h .cu .cuh) of core/, backends/, plugins/ and cli/ over 700 lines;
#   - structs defined at the top level of core's files (struct NAME { ... }; also in a
#     typedef) with more than 25 members: a declaration ending in ';' at the struct's
#     first level counts once per declarator (int a, b; is 2), a nested struct or union
#     body counts as the one member it declares, preprocessor lines are not read. The
#     layers at and below the tensors (core/tensor, plugin, config, comm, base) are not
#     held to it: their structs are counted, not judged (the context, gan_ctx, is the
#     tensors' own state);
#   - a file of core/ or cli/ outside one of core/train's rooms that includes a header
#     of that room other than the room's own (loop/trainer.h, after/after.h, run/run.h,
#     state/state.h).
#
# Ends with one line saying how much it read. Exit status 1 when it finds a violation,
# 99 when the tree is not there.

srcdir=${srcdir:-.}
max_c_files=8
max_lines=700
max_members=25

for top in core backends plugins cli; do
    [ -d "$srcdir/$top" ] || { echo "ERROR: $srcdir/$top is missing"; exit 99; }
done

files=$(find "$srcdir/core" "$srcdir/backends" "$srcdir/plugins" "$srcdir/cli" -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | LC_ALL=C sort)
[ -n "$files" ] || { echo "ERROR: no sources under $srcdir"; exit 99; }

# $files is split into one argument per file (source paths hold no blanks).
# shellcheck disable=SC2086
awk -v srcdir="$srcdir" -v max_c_files="$max_c_files" -v max_lines="$max_lines" \
    -v max_members="$max_members" '
BEGIN {
    room_header["loop"] = "trainer.h"
    room_header["after"] = "after.h"
    room_header["run"] = "run.h"
    room_header["state"] = "state.h"
}
function dirname(p) {
    if (p !~ /\//)
        return "."
    sub(/\/[^\/]*$/, "", p)
    return p
}
# A relative path with its "." and ".." segments resolved ("" when it climbs out).
function normal(p,   n, i, seg, out, k, r) {
    n = split(p, seg, "/")
    k = 0
    for (i = 1; i <= n; i++) {
        if (seg[i] == "" || seg[i] == ".")
            continue
        if (seg[i] == "..") {
            if (k == 0)
                return ""
            k--
        } else
            out[++k] = seg[i]
    }
    r = ""
    for (i = 1; i <= k; i++)
        r = r (i > 1 ? "/" : "") out[i]
    return r
}
function violation(text) {
    print "FAIL: " text
    bad++
}
# Whether the first struct/union/enum keyword opens a struct definition: the text
# since the last top-level ";", "{" or "}" ends in "struct NAME" or "struct".
function struct_head(text) {
    sub(/[ \t]+$/, "", text)
    if (text ~ /(^|[^A-Za-z0-9_])struct[ \t]+[A-Za-z_][A-Za-z0-9_]*$/) {
        match(text, /[A-Za-z_][A-Za-z0-9_]*$/)
        return substr(text, RSTART, RLENGTH)
    }
    if (text ~ /(^|[^A-Za-z0-9_])struct$/)
        return "-"
    return ""
}
function struct_done(   name) {
    name = sname
    if (name == "-") {
        name = typedef_name
        name = name == "" ? "(unnamed)" : name " (typedef)"
    }
    structs++
    if (members > max_members && !below_tensors)
        violation("struct " name " (" rel ":" sline ") has " members " members, over " \
                  max_members)
    in_struct = 0
}
FNR == 1 {
    rel = substr(FILENAME, length(srcdir) + 2)
    dir = dirname(rel)
    in_core = rel ~ /^core\//
    below_tensors = rel ~ /^core\/(tensor|plugin|config|comm|base)\//
    room = rel ~ /^core\/train\/[a-z]+\// ? substr(rel, 12) : ""
    sub(/\/.*/, "", room)
    in_program = in_core || rel ~ /^cli\//
    nfiles++
    if (in_core) {
        is_core[rel] = 1
        ncore++
        order[ncore] = rel
        if (!(dir in folder_seen)) {
            folder_seen[dir] = 1
            nfolders++
            folders[nfolders] = dir
        }
        if (rel ~ /\.c$/)
            c_files[dir]++
    }
    depth = 0; pending = ""; in_comment = 0; in_struct = 0; continued = 0
    awaiting_typedef = 0
}
{
    lines[rel] = FNR
}
# A room of core/train entered by another header than its own.
in_program && /^[ \t]*#[ \t]*include[ \t]*"train\/[a-z]+\/[a-z_]+\.h"/ {
    name = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*"train\//, "", name)
    sub(/".*/, "", name)
    to_room = name
    sub(/\/.*/, "", to_room)
    if (to_room != room && (to_room in room_header) && name != to_room "/" room_header[to_room])
        violation(rel ":" FNR " includes train/" name ", inside core/train/" to_room \
                  "/: include its room'\''s header, train/" to_room "/" room_header[to_room])
}
!in_core { next }
# Quoted includes, for the graph (resolved once every file of core/ is known).
/^[ \t]*#[ \t]*include[ \t]*"/ {
    name = $0
    sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", name)
    sub(/".*/, "", name)
    nincl++
    incl_from[nincl] = rel
    incl_name[nincl] = name
}
{
    line = $0
    # Preprocessor lines and their continuations are not C.
    if (continued || (!in_comment && line ~ /^[ \t]*#/)) {
        continued = line ~ /\\$/
        next
    }
    # Comments, strings and character constants out; a block comment may span lines.
    out = ""
    while (line != "") {
        if (in_comment) {
            e = index(line, "*/")
            if (!e) { line = ""; break }
            line = substr(line, e + 2)
            in_comment = 0
            out = out " "
            continue
        }
        if (!match(line, /\/\*|\/\/|"|\047/)) { out = out line; break }
        out = out substr(line, 1, RSTART - 1)
        tok = substr(line, RSTART, RLENGTH)
        line = substr(line, RSTART + RLENGTH)
        if (tok == "/*") in_comment = 1
        else if (tok == "//") line = ""
        else {
            # Skip to the closing quote, past escaped characters.
            while (line != "" && substr(line, 1, 1) != tok) {
                if (substr(line, 1, 1) == "\\") line = substr(line, 3)
                else line = substr(line, 2)
            }
            line = substr(line, 2)
            out = out " 0 "
        }
    }
    # Braces, semicolons, commas and parentheses drive the count.
    n = length(out)
    for (i = 1; i <= n; i++) {
        ch = substr(out, i, 1)
        if (ch == "{") {
            if (depth == 0) {
                head = struct_head(pending)
                if (head != "") {
                    in_struct = 1; sname = head; sline = FNR; members = 0
                    commas = 0; parens = 0; typedef_name = ""
                    tdef = pending ~ /(^|[^A-Za-z0-9_])typedef([^A-Za-z0-9_]|$)/
                }
                pending = ""
            }
            depth++
        } else if (ch == "}") {
            if (depth > 0)
                depth--
            if (depth == 0) {
                pending = ""
                if (in_struct) {
                    if (sname == "-" && tdef) awaiting_typedef = 1
                    else struct_done()
                }
            }
        } else if (depth == 0) {
            if (ch == ";") {
                if (awaiting_typedef) {
                    t = pending
                    sub(/[^A-Za-z0-9_]+$/, "", t)
                    if (match(t, /[A-Za-z_][A-Za-z0-9_]*$/))
                        typedef_name = substr(t, RSTART, RLENGTH)
                    awaiting_typedef = 0
                    struct_done()
                }
                pending = ""
            } else
                pending = pending ch
        } else if (in_struct && depth == 1) {
            if (ch == "(") parens++
            else if (ch == ")") parens--
            else if (ch == "," && parens == 0) commas++
            else if (ch == ";" && parens == 0) { members += 1 + commas; commas = 0 }
        }
    }
    if (depth == 0)
        pending = pending " "
}
# Tarjan: the strongly connected parts of graph G (nodes gnode[1..gn], edges in
# gedge[a SUBSEP b], successors of a listed in gsucc[a, 1..gnsucc[a]]).
function tarjan(v,   k, w) {
    tindex[v] = tlow[v] = ++tcount
    stack[++sp] = v; onstack[v] = 1
    for (k = 1; k <= gnsucc[v]; k++) {
        w = gsucc[v, k]
        if (!(w in tindex)) {
            tarjan(w)
            if (tlow[w] < tlow[v]) tlow[v] = tlow[w]
        } else if (onstack[w] && tindex[w] < tlow[v])
            tlow[v] = tindex[w]
    }
    if (tlow[v] == tindex[v]) {
        nscc++
        scc_size[nscc] = 0
        do {
            w = stack[sp--]; onstack[w] = 0
            scc_of[w] = nscc
            scc_member[nscc, ++scc_size[nscc]] = w
        } while (w != v)
    }
}
# One shortest circle through the first member of a strongly connected part, breadth
# first within the part.
function circle(c,   start, q, qh, qt, v, k, w, prev, seen, path, hops, i) {
    start = scc_member[c, 1]
    for (i = 2; i <= scc_size[c]; i++)
        if (scc_member[c, i] < start) start = scc_member[c, i]
    qh = 1; qt = 0
    q[++qt] = start; seen[start] = 1
    while (qh <= qt) {
        v = q[qh++]
        for (k = 1; k <= gnsucc[v]; k++) {
            w = gsucc[v, k]
            if (scc_of[w] != c) continue
            if (w == start) {
                path = start
                hops = v
                while (hops != start) { path = hops " -> " path; hops = prev[hops] }
                return start " -> " path
            }
            if (!(w in seen)) { seen[w] = 1; prev[w] = v; q[++qt] = w }
        }
    }
    return start
}
function add_edge(a, b) {
    if ((a, b) in gedge) return
    gedge[a, b] = 1
    gsucc[a, ++gnsucc[a]] = b
}
# Each strongly connected part is one violation: a shortest circle in it, and the
# other members of the part, which lie on further circles.
function find_circles(what,   i, c, k, n, on, v, lst, rest) {
    for (i = 1; i <= gn; i++)
        if (!(gnode[i] in tindex)) tarjan(gnode[i])
    for (c = 1; c <= nscc; c++) {
        v = scc_member[c, 1]
        if (scc_size[c] == 1 && !((v, v) in gedge)) continue
        lst = circle(c)
        split("", on)
        n = split(lst, k, " -> ")
        for (i = 1; i <= n; i++) on[k[i]] = 1
        rest = ""
        for (i = 1; i <= scc_size[c]; i++)
            if (!(scc_member[c, i] in on))
                rest = rest (rest == "" ? "" : ", ") scc_member[c, i]
        violation("include circle between " what ": " lst \
                  (rest != "" ? "; also on circles with it: " rest : ""))
    }
}
function reset_graph(   k) {
    split("", gnode); split("", gedge); split("", gsucc); split("", gnsucc)
    split("", tindex); split("", tlow); split("", onstack); split("", stack)
    split("", scc_of); split("", scc_member); split("", scc_size)
    gn = 0; nscc = 0; sp = 0; tcount = 0
}
END {
    # The include graph between core'\''s files.
    for (i = 1; i <= nincl; i++) {
        from = incl_from[i]
        to = normal(dirname(from) "/" incl_name[i])
        if (!(to in is_core))
            to = normal("core/" incl_name[i])
        if (!(to in is_core))
            continue
        nedges++
        file_edge[from, to] = 1
        edge_from[nedges] = from; edge_to[nedges] = to
    }
    reset_graph()
    for (i = 1; i <= ncore; i++) gnode[++gn] = order[i]
    for (i = 1; i <= nedges; i++) add_edge(edge_from[i], edge_to[i])
    find_circles("files")

    # The same graph between the folders the files lie in.
    reset_graph()
    for (i = 1; i <= nfolders; i++) gnode[++gn] = folders[i]
    for (i = 1; i <= nedges; i++) {
        a = dirname(edge_from[i]); b = dirname(edge_to[i])
        if (a != b) add_edge(a, b)
    }
    find_circles("folders")

    for (i = 1; i <= nfolders; i++)
        if (c_files[folders[i]] > max_c_files)
            violation(folders[i] "/ holds " c_files[folders[i]] " .c files, over " max_c_files)

    for (f in lines)
        if (lines[f] > max_lines)
            long[++nlong] = f
    # In path order, whatever order the awk keeps its arrays in.
    for (i = 2; i <= nlong; i++)
        for (k = i; k > 1 && long[k] < long[k - 1]; k--) {
            t = long[k]; long[k] = long[k - 1]; long[k - 1] = t
        }
    for (i = 1; i <= nlong; i++)
        violation(long[i] " has " lines[long[i]] " lines, over " max_lines)

    printf "structure: %d sources read, %d of core/ in %d folders with %d includes " \
           "between them, %d structs of core/; %d violations\n", nfiles, ncore, nfolders, \
           nedges, structs, bad
    exit bad ? 1 : 0
}' $files
