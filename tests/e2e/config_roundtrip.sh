#!/bin/sh
# SPDX-License-Identifier: MIT
# config_roundtrip.sh — what `ganctl --print-config` writes reads back as the same
# settings: for every shipped configuration (etc/*.conf) and for the declared settings
# of every plugin in the search path, the printed values, fed back with -c and printed
# again, are the same values in the same order; and a float setting that is not a
# finite number (1e410, nan, inf) is a configuration error (exit 2, one line naming
# the setting) rather than a value that prints as inf. Run by make check against the
# build tree (GANCTL, GANCTL_PLUGIN_PATH).

GANCTL=${GANCTL:-./cli/ganctl}
srcdir=${srcdir:-.}
failures=0
checks=0

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-roundtrip.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM

test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
GANCTL_PLUGIN_PATH=${GANCTL_PLUGIN_PATH:-$(pwd)/backends/cpu/.libs:$(pwd)/plugins/models/.libs:$(pwd)/plugins/losses/.libs:$(pwd)/plugins/scalers/.libs}
GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
export GANCTL_PLUGIN_PATH GANCTL_CONFIG

fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
}

# values FILE: the printed settings without their "# origin" comments, which name
# where each value came from and so differ between the two passes.
values() {
    sed 's/;  # .*$/;/' "$1"
}

# round_trip NAME ARGS...: --print-config with ARGS, then with -c of its values.
round_trip() {
    label=$1
    shift
    checks=$((checks + 1))
    if ! "$GANCTL" "$@" --print-config >"$work/first" 2>"$work/err"; then
        fail "$label: ganctl $* --print-config: $(cat "$work/err")"
        return
    fi
    values "$work/first" >"$work/first.conf"
    if ! "$GANCTL" -c "$work/first.conf" --print-config >"$work/second" 2>"$work/err"; then
        fail "$label: its printed configuration does not read back: $(cat "$work/err")"
        return
    fi
    values "$work/second" >"$work/second.conf"
    if cmp -s "$work/first.conf" "$work/second.conf"; then
        echo "ok: $label reads back the same ($(grep -c ' = .*;$' "$work/first.conf") settings)"
    else
        fail "$label: printed again, the settings differ:"
        diff "$work/first.conf" "$work/second.conf" | sed 's/^/  /'
    fi
}

# Every shipped configuration.
found=0
for conf in "$srcdir"/etc/*.conf; do
    test -f "$conf" || continue
    found=1
    round_trip "etc/${conf##*/}" -c "$conf"
done
test "$found" = 1 || fail "no configuration in $srcdir/etc"

# Every plugin's declared settings, with their defaults: each plugin selected in turn.
"$GANCTL" --list-plugins >"$work/plugins" 2>"$work/err" ||
    fail "ganctl --list-plugins: $(cat "$work/err")"
plugins=$(sed -nE 's/^(backend|model|loss|scaler) ([^ ]+) .*/\1:\2/p' "$work/plugins")
for kind in backend model loss scaler; do
    echo "$plugins" | grep -q "^$kind:" || fail "--list-plugins lists no $kind plugin"
done
for p in $plugins; do
    kind=${p%%:*}
    name=${p#*:}
    case $kind in
    backend)
        # A backend without its device cannot be selected here; that is not a
        # configuration question.
        if ! "$GANCTL" --backend "$name" --print-config >/dev/null 2>&1; then
            echo "skip: backend $name cannot be opened here"
            continue
        fi
        round_trip "backend $name" --backend "$name" ;;
    model)
        round_trip "model $name" --set "generator.model.name=$name" \
            --set "critic.model.name=$name" ;;
    loss)
        round_trip "loss $name" --set "loss.terms=[\"$name\"]" ;;
    scaler)
        round_trip "scaler $name" --scaler "$name"
        round_trip "critic scaler $name" --precision fp16 --set "critic.scaler.name=$name" ;;
    esac
done

# Floats at the edges of their range print so that they read back to the same bits.
round_trip "extreme floats" --set critic.optimizer.lr=3.4028234e38 \
    --set generator.optimizer.lr=4.9e-324 --set critic.optimizer.clip_norm=1.7976931348623157e308 \
    --set loss.gradient-penalty.lambda=0.1 --set loss.gradient-penalty.eps=2.2250738585072014e-308

# A float that is no finite number is refused when it is read, naming the setting.
for value in 1e410 -1e410 nan inf -inf; do
    checks=$((checks + 1))
    "$GANCTL" --set "critic.optimizer.lr=$value" --print-config >"$work/out" 2>"$work/err"
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
        grep -q '^ganctl: --set critic.optimizer.lr=.*"critic.optimizer.lr" must be a finite number' "$work/err" &&
        ! grep -q 'inf;' "$work/out"; then
        echo "ok: critic.optimizer.lr=$value is a configuration error"
    else
        fail "critic.optimizer.lr=$value: exit $rc, stderr: $(cat "$work/err"), stdout: $(grep 'lr =' "$work/out")"
    fi
done
checks=$((checks + 1))
printf 'scaler = {\n  name = "static";\n  scale = 1e999;\n};\n' >"$work/huge.conf"
"$GANCTL" -c "$work/huge.conf" --print-config >"$work/out" 2>"$work/err"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] &&
    grep -qF "huge.conf:3: \"scaler.scale\" must be a finite number" "$work/err"; then
    echo "ok: a plugin's float beyond a double's range in a file is a configuration error"
else
    fail "scale = 1e999 in a file: exit $rc, stderr: $(cat "$work/err")"
fi

echo "$checks checks, $failures failures"
test "$failures" -eq 0
