#!/bin/sh
# SPDX-License-Identifier: MIT
# cli.sh — end-to-end tests of the ganctl program: options, exit codes, one-line errors,
# plugin listing and the cpu backend, run against the build tree (make check sets GANCTL).

GANCTL=${GANCTL:-./cli/ganctl}
TEST_PLUGINS=${GANCTL_TEST_PLUGINS:-./tests/plugins}
failures=0
checks=0

work=$(mktemp -d "${TMPDIR:-/tmp}/ganctl-cli.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM

# run ARGS...: runs ganctl, leaving stdout, stderr and the exit status in $work.
run() {
    "$GANCTL" "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

# run_with NAME=VALUE ARGS...: the same with one more environment variable.
run_with() {
    assignment=$1
    shift
    env "$assignment" "$GANCTL" "$@" >"$work/out" 2>"$work/err"
    rc=$?
}

fail() {
    failures=$((failures + 1))
    echo "FAIL: $*"
    echo "  stdout: $(cat "$work/out")"
    echo "  stderr: $(cat "$work/err")"
}

check() {
    # check DESCRIPTION CONDITION...
    what=$1
    shift
    checks=$((checks + 1))
    if "$@"; then echo "ok: $what"; else fail "$what"; fi
}

rc_is() { test "$rc" -eq "$1"; }
stderr_lines() { test "$(wc -l <"$work/err")" -eq "$1"; }
stderr_has() { grep -qF -- "$1" "$work/err"; }
stdout_has() { grep -qF -- "$1" "$work/out"; }
stdout_lacks() { ! grep -qiE -- "$1" "$work/out"; }
one_error() { rc_is "$1" && stderr_lines 1 && grep -q '^ganctl: ' "$work/err"; }

test -x "$GANCTL" || { echo "ganctl not built at $GANCTL"; exit 99; }
GANCTL_PLUGIN_PATH=${GANCTL_PLUGIN_PATH:-$(pwd)/backends/cpu/.libs:$(pwd)/plugins/models/.libs:$(pwd)/plugins/losses/.libs}
GANCTL_CONFIG=${GANCTL_CONFIG:-/dev/null}
export GANCTL_PLUGIN_PATH GANCTL_CONFIG
cpu_dir=${GANCTL_PLUGIN_PATH%%:*}

# --help and --version
run --help
check "--help exits 0 and lists every option" \
    sh -c 'test '"$rc"' -eq 0 && for o in --help --version --list-plugins --print-config --resume --backend --plugin-dir --config --set -h -V -r -c -s; do grep -qe " $o" "$1" || exit 1; done' _ "$work/out"
check "--help fits one screen" test "$(wc -l <"$work/out")" -le 40
run -h
check "-h is --help" rc_is 0
run --version
check "--version exits 0" rc_is 0
check "--version names the version and ABI" stdout_has "ganctl 0.1.0 (plugin ABI 1.9)"
check "--version alone prints one line" test "$(wc -l <"$work/out")" -eq 1

# usage errors: exit 2, one line
run --no-such-option
check "an unknown option exits 2 with one line" one_error 2
check "an unknown option is named" stderr_has "unknown option --no-such-option"
run --backend
check "a missing option value exits 2" one_error 2
run stray
check "a stray argument exits 2" one_error 2

# --list-plugins
run --list-plugins
check "--list-plugins exits 0" rc_is 0
check "--list-plugins lists the cpu backend with its file" stdout_has "file:     $cpu_dir/backend-cpu.so"
check "--list-plugins shows the cpu backend's setting" stdout_has "setting:  backend.threads, an integer, default 0"
check "--list-plugins says the cpu backend is available" stdout_has "status:   available (cpu:"
check "--list-plugins shows where a model's settings go" stdout_has "setting:  {generator,critic}.model.width, an integer"
check "--list-plugins shows where a loss term's settings go" stdout_has "setting:  loss.gradient-penalty.lambda, a number"
check "--list-plugins lists the FP8 recipes" stdout_has "recipe underflow-aware 0.1.0"
check "--list-plugins shows where a recipe's settings go" stdout_has "setting:  fp8.delayed.history, an integer, default 1024"

# a missing backend: one line naming the folders, exit 1
run --backend nope
check "--backend nope exits 1 with one line" one_error 1
check "--backend nope names the file and folders" \
    stderr_has "backend \"nope\" not found: looked for backend-nope.so in $cpu_dir"
check "--backend nope says how to see what exists" stderr_has "run ganctl --list-plugins"

# a plugin folder with a module built for another ABI
mkdir "$work/plugins"
cp "$TEST_PLUGINS/.libs/backend-abimajor.so" "$work/plugins/" || exit 99
run --plugin-dir "$work/plugins" --backend abimajor
check "a wrong-ABI module exits 1 with one line" one_error 1
check "a wrong-ABI module names file, reason and fix" \
    stderr_has "ganctl: $work/plugins/backend-abimajor.so: built for plugin ABI 2.0, this ganctl has ABI 1.9: rebuild the plugin against these headers"
run --plugin-dir "$work/plugins" --list-plugins
check "--list-plugins still works with a broken module" rc_is 0
check "--list-plugins shows the broken module's error" stdout_has "error:    $work/plugins/backend-abimajor.so: built for plugin ABI 2.0"

# a backend without the optional convolutions: it loads, and a run whose model
# convolves is refused at its start with one line naming the slot, backend and model
run --plugin-dir "$TEST_PLUGINS/noconv/.libs" --backend noconv --version
check "a backend without convolutions loads" rc_is 0
run --plugin-dir "$TEST_PLUGINS/noconv/.libs" --backend noconv -s generator.model.name=dcgan \
    -s run.dir="$work/noconv-run"
check "a dcgan run on a backend without convolutions exits 1 with one line" one_error 1
check "the line names the slot, the backend and the model" \
    stderr_has "ganctl: backend \"noconv\" ($TEST_PLUGINS/noconv/.libs/backend-noconv.so) has no conv2d_forward, which the generator's model \"dcgan\" needs"
check "and nothing was started" test ! -e "$work/noconv-run"

# --plugin-dir comes before GANCTL_PLUGIN_PATH
cp "$TEST_PLUGINS/order1/.libs/backend-order.so" "$work/plugins/" || exit 99
run_with GANCTL_PLUGIN_PATH="$TEST_PLUGINS/order2/.libs" --plugin-dir "$work/plugins" --backend order --version
check "--plugin-dir wins over GANCTL_PLUGIN_PATH" stdout_has "backend order first:"
run_with GANCTL_PLUGIN_PATH="$TEST_PLUGINS/order2/.libs" --backend order --version
check "GANCTL_PLUGIN_PATH is searched" stdout_has "backend order second:"

# a backend without a device: exit 1, its reason on one line
run --plugin-dir "$TEST_PLUGINS/.libs" --backend nodevice
check "a backend without a device exits 1 with one line" one_error 1
check "a backend without a device gives its reason" \
    stderr_has "reports no usable device: no widget attached to /dev/widget0"

# configuration errors: exit 2, naming the key
run --set backend.thread=2
check "a misspelt setting exits 2 with one line" one_error 2
check "a misspelt setting is named, with a suggestion" \
    stderr_has 'ganctl: --set backend.thread=2: unknown setting "backend.thread"; did you mean "backend.threads"?'
run --set backend.threads=many
check "a wrong type exits 2" one_error 2
check "a wrong type is explained" stderr_has '"backend.threads" must be an integer, got a string'
run --set log.level=loud
check "a bad log level exits 2" one_error 2
run --config "$work/absent.conf"
check "a missing --config file exits 2" one_error 2
check "a missing --config file is named" stderr_has "cannot read configuration file $work/absent.conf (given with --config)"
# a name without a slash is also looked for among the installed examples; found nowhere,
# it is named as given
run --config absent-example.conf
check "a --config name found nowhere exits 2" one_error 2
check "a --config name found nowhere is named as given" \
    stderr_has "cannot read configuration file absent-example.conf (given with --config)"
run_with GANCTL_CONFIG="$work/absent.conf"
check "a missing GANCTL_CONFIG file exits 2" one_error 2
printf 'backend = {\n  threads = 2;\n  thraeds = 3;\n};\n' >"$work/typo.conf"
run -c "$work/typo.conf"
check "a typo in a file names file and line" \
    stderr_has "$work/typo.conf:3: unknown setting \"backend.thraeds\"; did you mean \"backend.threads\"?"
printf 'log = { level = "debug" \n' >"$work/broken.conf"
run --config "$work/broken.conf"
check "a syntax error exits 2 naming the line" sh -c 'test '"$rc"' -eq 2 && grep -qF "$1:2: syntax error" "$2"' _ "$work/broken.conf" "$work/err"

# --print-config: every setting, with its origin, plugins' defaults included
run --print-config
check "--print-config exits 0" rc_is 0
check "--print-config shows the core's settings" stdout_has "iterations = "
check "--print-config shows the models' settings" stdout_has "width = "
check "--print-config shows the loss terms' settings" stdout_has "lambda = "
check "--print-config gives each value's origin" stdout_has "name = \"cpu\";  # default"
printf 'log = { level = "error"; };\nbackend = { threads = 1; };\n' >"$work/quiet.conf"
run -c "$work/quiet.conf" --print-config
check "log.level from --config silences info" sh -c 'test '"$rc"' -eq 0 && test ! -s "$1"' _ "$work/err"
run -c "$work/quiet.conf" -s log.level=debug --print-config
check "--set beats --config" stdout_has "level = \"debug\";  # --set log.level=debug"
check "each value's origin is its file and line" stdout_has "threads = 1;  # $work/quiet.conf:2"
check "debug output names the files read" stderr_has "ganctl: debug: read $work/quiet.conf (given with --config)"
run --print-config -s run.iterations=0
check "a setting below its bound exits 2" one_error 2
check "a setting below its bound is explained" stderr_has '"run.iterations" must be at least 1, got 0'
run --print-config -s 'loss.terms=["wasserstein", "wasserstein"]'
check "a loss term listed twice exits 2" one_error 2
run --print-config -s loss.nope.x=1
check "settings of a term not in loss.terms exit 2" one_error 2
check "settings of a term not in loss.terms are explained" \
    stderr_has 'configures the loss term "nope", which loss.terms does not list'
run --print-config -s critic.model.widht=8
check "a misspelt model setting is named, with a suggestion" \
    stderr_has 'unknown setting "critic.model.widht"; did you mean "critic.model.width"?'

# the installed ganctl.conf and the shipped examples: valid as shipped
for conf in ganctl.conf toy-paper.conf 25gaussians.conf swissroll.conf; do
    shipped=${srcdir:-.}/etc/$conf
    run -c "$shipped" --print-config
    check "the shipped $conf is valid" rc_is 0
done
# The installed ganctl.conf sets nothing: every setting is commented out, so that a
# default changed by an upgrade reaches the users who never edited that line. Each
# commented value is the built-in default: uncommenting them all changes no value.
shipped=${srcdir:-.}/etc/ganctl.conf
run -c "$shipped" --print-config
check "the shipped ganctl.conf sets no setting" stdout_lacks "# $shipped:"
sed 's/;  # .*$/;/' "$work/out" >"$work/defaults"
sed 's/^\( *\)# \([a-z_0-9-]* = \)/\1\2/' "$shipped" >"$work/enabled.conf"
run -c "$work/enabled.conf" --print-config
check "every setting of the shipped ganctl.conf is valid when uncommented" rc_is 0
check "and each comes from the file" \
    sh -c 'test "$(grep -c "# $1:" "$2")" -eq "$(grep -c "^ *[a-z_0-9-]* = [^{]" "$1")"' \
    _ "$work/enabled.conf" "$work/out"
check "with the built-in default as its value" \
    sh -c 'sed "s/;  # .*\$/;/" "$1" | cmp -s - "$2"' _ "$work/out" "$work/defaults"
run -c "${srcdir:-.}/etc/toy-paper.conf" --print-config
check "toy-paper.conf sets the paper's lambda" stdout_has "lambda = 0.1;  # ${srcdir:-.}/etc/toy-paper.conf:"

# --resume of a folder that is not there, or not a folder, says so
run --resume "$work/no-such-run"
check "--resume of a missing folder exits 2 with one line" one_error 2
check "... saying the folder does not exist" stderr_has "--resume $work/no-such-run: the folder does not exist"
: >"$work/a-file"
run --resume "$work/a-file"
check "--resume of a file says it is not a folder" stderr_has "--resume $work/a-file: not a folder"

# --backend cpu --version: the OpenBLAS kernel in use
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    run --backend cpu --version
    check "--backend cpu --version exits 0" rc_is 0
    check "--backend cpu --version describes the backend" stdout_has "backend cpu "
    check "--backend cpu --version names an OpenBLAS kernel" stdout_has "OpenBLAS"
    check "the kernel is not Prescott on an AVX2 CPU" stdout_lacks "prescott"
else
    echo "skip: kernel choice (OPENBLAS_CORETYPE is set or the CPU lacks AVX2)"
fi

echo "$checks checks, $failures failed"
test "$failures" -eq 0
