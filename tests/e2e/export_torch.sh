#!/bin/sh
# SPDX-License-Identifier: MIT
# export_torch.sh — ganctl export through PyTorch: the Python lines ganctl(1) shows, taken
# from the man source, rebuild the generator of a toy run (and, with the Debian data set,
# of a Fashion-MNIST run), and the torch module maps the z of a `ganctl sample` to the
# same samples. Skipped without /usr/bin/python3 and torch.

. "$(dirname "$0")/../lib/test_lib.sh"
srcdir=${srcdir:-.}
PYTHON=${GANCTL_TEST_TORCH_PYTHON:-/usr/bin/python3}
page="$srcdir/man/ganctl.1.in"

test_begin export
"$PYTHON" -c 'import torch' 2>/dev/null ||
    { echo "skip: $PYTHON has no torch (Debian package python3-torch)"; exit 77; }
XDG_CACHE_HOME=${GANCTL_TEST_CACHE:-$PWD/tests/image-train-cache}
export XDG_CACHE_HOME
# A failure shows what the check's commands printed; a pass, how far torch was from ganctl.
check_output=yes
check_passed() { grep "max |torch" "$work/check.out" | sed 's/^/  /'; }

# The lines between `.\" BEGIN load_generator` and `.\" END load_generator`: the page
# shows them verbatim (no escapes in them, which the check below makes sure of).
awk 'index($0, ".\\\" END load_generator") == 1 { inside = 0 }
     inside { print }
     index($0, ".\\\" BEGIN load_generator") == 1 { inside = 1 }' "$page" >"$work/load_generator.py"
check "ganctl(1) shows the loader, a dozen lines without escapes" sh -c \
    'n=$(wc -l <"$1"); [ "$n" -ge 8 ] && [ "$n" -le 16 ] && ! grep -q "\\\\" "$1"' _ \
    "$work/load_generator.py"

# The module's output on the z of `ganctl sample --out .safetensors` against its samples,
# within `tol` (0 for a run in FP32, which computes exactly as the module does).
cat >"$work/compare.py" <<'PY'
import json, struct, sys, torch
exec(open(sys.argv[1]).read())
net = load_generator(sys.argv[2])
with open(sys.argv[3], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    data = f.read()
def tensor(name):
    t = header[name]
    return torch.frombuffer(bytearray(data[t["data_offsets"][0]:t["data_offsets"][1]]),
                            dtype=torch.float32).reshape(t["shape"])
z, samples = tensor("z"), tensor("samples")
with torch.no_grad():
    out = net(z)
assert out.shape == samples.shape, (out.shape, samples.shape)
err = (out - samples).abs().max().item()
print("max |torch - ganctl| = %g over %s" % (err, tuple(samples.shape)))
assert err <= float(sys.argv[4]), err
PY

# torch multiplies through the same OpenBLAS, but picks its kernel by OpenBLAS's own
# detection, which takes CPUs newer than it knows (an Intel Xeon of model 207) for the
# SSE3 "Prescott" one; ganctl picks from the CPU's features. An FP32 run is exact only
# on the same kernel, so torch is given the one ganctl's version line names.
kernel=$("$GANCTL" --backend cpu --version 2>&1 |
    sed -n 's/.*OpenBLAS [0-9.]* kernel \([A-Za-z0-9]*\) .*/\1/p' | head -n 1)
roundtrip() {
    # $1 run folder, $2 tolerance
    "$GANCTL" export "$1" --out "$work/g.safetensors" &&
        "$GANCTL" sample "$1" -n 50 --seed 3 --out "$work/s.safetensors" &&
        env ${kernel:+OPENBLAS_CORETYPE=$kernel} "$PYTHON" "$work/compare.py" \
            "$work/load_generator.py" "$work/g.safetensors" "$work/s.safetensors" "$2"
}

toy="-s backend.threads=1 -s run.iterations=10 -s generator.model.width=16
     -s critic.model.width=16 -s data.batch_size=64 -s run.eval_every=0 -s run.image_every=0"
# shellcheck disable=SC2086 # $toy is a list of options
"$GANCTL" $toy -s run.dir="$work/toy" >/dev/null 2>&1
check "the mlp generator of an FP32 toy run gives ganctl's samples exactly" roundtrip "$work/toy" 0
# shellcheck disable=SC2086
"$GANCTL" $toy -s generator.model.activation=leaky_relu -s generator.model.depth=2 \
    -s run.dir="$work/leaky" >/dev/null 2>&1
check "a leaky-ReLU mlp of depth 2 too" roundtrip "$work/leaky" 0
# shellcheck disable=SC2086
"$GANCTL" $toy --scaler dynamic -s run.dir="$work/fp16" >/dev/null 2>&1
check "an FP16 run's generator within FP16 rounding" roundtrip "$work/fp16" 0.02
check "the export names its layers and configuration" "$PYTHON" -c '
import json, struct, sys
f = open(sys.argv[1], "rb")
meta = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))["__metadata__"]
assert meta["format"] == "ganctl-generator" and meta["z_dim"] == "2", meta
assert json.loads(meta["sample_shape"]) == [2] and "generator" in meta["config"], meta' \
    "$work/g.safetensors"

data=/usr/share/datasets/fashion-mnist
if test -f "$data/train-images-idx3-ubyte.gz"; then
    tiny="-c $srcdir/etc/fashion-mnist.conf -s backend.threads=1
          -s generator.model.width=4 -s critic.model.width=4 -s data.batch_size=16
          -s critic.iterations=2 -s run.eval_every=0 -s run.image_every=0"
    # shellcheck disable=SC2086
    "$GANCTL" $tiny -s run.iterations=2 -s run.dir="$work/img" >/dev/null 2>&1
    check "the dcgan generator gives ganctl's images" roundtrip "$work/img" 1e-5
    # shellcheck disable=SC2086
    "$GANCTL" $tiny -s run.iterations=2 -s generator.model.norm=layer \
        -s generator.model.output=sigmoid -s run.dir="$work/norm" >/dev/null 2>&1
    check "with layer norm (GroupNorm) and a sigmoid output too" roundtrip "$work/norm" 1e-5
else
    echo "skip: the dcgan part ($data is missing: Debian package dataset-fashion-mnist)"
fi

test_end
