#!/bin/sh
# SPDX-License-Identifier: MIT
# same-outputs.sh — the outputs a refactor must leave byte-identical: short runs of the
# toy in FP32, in FP16 O2 with each scaler (underflow-aware at debug level 2), in BF16
# O2, of Fashion-MNIST in FP32 and FP16 O2, and of the toy data parallel over 2 ranks,
# each with run.metrics_time=false, and one SHA-256 line per file they write that holds
# numbers (per tensor for a checkpoint) and per picture (grids, value fields, curves).
#
#   bench/same-outputs.sh GANCTL PLUGIN_PATH OUT_DIR > hashes.txt
#
# Run it with the program built before and after a change and compare the two lists
# with diff(1); they must be equal. Give both the same OUT_DIR: a checkpoint's
# metadata names its run folder. The Fashion-MNIST runs are left out when the data
# set (Debian's dataset-fashion-mnist) is not installed, the 2-rank run when mpirun is
# not on PATH; each says so on standard error.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 GANCTL PLUGIN_PATH OUT_DIR" >&2; exit 2; }
ganctl=$1
GANCTL_PLUGIN_PATH=$2
export GANCTL_PLUGIN_PATH
out=$3
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"

run() {
    name=$1
    shift
    rm -rf "$out/$name"
    $launch "$ganctl" --set run.dir="$out/$name" --set run.metrics_time=false \
        --set backend.threads=1 "$@" >"$out/$name.log" 2>&1 ||
        { echo "$0: the $name run failed; see $out/$name.log" >&2; exit 1; }
    (cd "$out" && for f in "$name"/metrics.csv "$name"/grad_stats.csv \
            "$name"/grad_underflow.csv "$name"/*.png; do
        if [ -f "$f" ]; then sha256sum "$f"; fi
    done)
    for f in "$out/$name"/*.safetensors; do
        checkpoint_hashes "$f" "$name/${f##*/}"
    done
}

# One line per tensor of a checkpoint (its bytes, dtype and shape) and one for its
# metadata less elapsed_s, the one entry that is a wall time, and less the run id in
# the saved configuration, which ganctl draws afresh for every run.
checkpoint_hashes() {
    python3 - "$1" "$2" <<'PY'
import hashlib, json, re, struct, sys
path, label = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
meta = header.pop("__metadata__", {})
meta.pop("elapsed_s", None)
if "config" in meta:
    meta["config"] = re.sub(r'(?m)^  id = "[0-9a-f]+";.*\n', "", meta["config"])
data = raw[8 + n:]
for name in sorted(header):
    t = header[name]
    a, b = t["data_offsets"]
    digest = hashlib.sha256(data[a:b]).hexdigest()
    print(f"{digest}  {label}:{name} {t['dtype']}{t['shape']}")
digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()
print(f"{digest}  {label}:__metadata__")
PY
}

launch=
toy="--set run.iterations=40 --set run.checkpoint_every=20 --set run.eval_every=20"
# shellcheck disable=SC2086 # $toy is a list of options
{
    run fp32 $toy
    run fp16-underflow-aware --scaler underflow-aware --debug-level 2 $toy
    for scaler in none static dynamic; do
        run "fp16-$scaler" --precision fp16 --scaler "$scaler" $toy
    done
    run bf16 --precision bf16 $toy
}
if [ -d /usr/share/datasets/fashion-mnist ]; then
    images="-c $top/etc/fashion-mnist.conf --set run.iterations=10
            --set run.checkpoint_every=5 --set run.eval_every=10 --set run.image_every=10"
    # shellcheck disable=SC2086 # $images is a list of options
    run fashion-mnist $images
    # shellcheck disable=SC2086
    run fashion-mnist-fp16 $images --precision fp16 --scaler underflow-aware
else
    echo "$0: no Fashion-MNIST (dataset-fashion-mnist): its runs left out" >&2
fi
if command -v mpirun >/dev/null 2>&1; then
    # As root, two ranks on however few cores.
    OMPI_ALLOW_RUN_AS_ROOT=1
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
    launch="mpirun --oversubscribe -np 2 -x GANCTL_PLUGIN_PATH"
    # shellcheck disable=SC2086
    run data-parallel-2 $toy --scaler underflow-aware
    launch=
else
    echo "$0: no mpirun: the 2-rank run left out" >&2
fi
