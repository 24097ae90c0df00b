# SPDX-License-Identifier: MIT
# flat_config.awk — `ganctl --print-config`'s libconfig groups as one KEY=VALUE line per
# setting (data.batch_size=256, critic.model.width=256, ...), quotes and comments
# dropped, for the bench scripts that pass ganctl's settings on to other programs.
/^ *[A-Za-z0-9_-]+ = \{/ { sub(/^ */, ""); split($0, w, " "); path[++depth] = w[1]; next }
/^ *\};/ { depth--; next }
/ = / {
    line = $0; sub(/^ */, "", line)
    key = line; sub(/ = .*/, "", key)
    val = line; sub(/^[^=]*= /, "", val); sub(/; *#.*$/, "", val); sub(/;$/, "", val)
    gsub(/"/, "", val)
    full = ""; for (i = 1; i <= depth; i++) full = full path[i] "."
    print full key "=" val
}
