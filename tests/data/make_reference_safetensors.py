# SPDX-License-Identifier: MIT
# make_reference_safetensors.py — writes reference.safetensors with Python's safetensors
# package (0.8.0 was used: pip install safetensors numpy), for tests/unit/check_safetensors.c.
# Usage: python3 make_reference_safetensors.py OUTPUT. The test never runs this.
import struct
import sys

import numpy as np
from safetensors import TensorSpec, serialize

# The raw-byte API takes every dtype (numpy has no BF16); buffers must outlive serialize().
ALIVE = []
NAMES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
         "U64": "uint64", "I64": "int64", "I32": "int32", "U32": "uint32", "U8": "uint8",
         "BOOL": "bool", "I8": "int8", "I16": "int16", "U16": "uint16"}
T = {}


def add(name, dtype, shape, data):
    buf = np.frombuffer(data, dtype=np.uint8).copy() if data else np.zeros(1, dtype=np.uint8)
    ALIVE.append(buf)
    T[name] = TensorSpec(dtype=NAMES[dtype], shape=shape, data_ptr=buf.ctypes.data,
                         data_len=len(data))


def pack(fmt, vals):
    return b"".join(struct.pack("<" + fmt, v) for v in vals)


# The same values are computed independently in tests/unit/check_safetensors.c.
add("gen.w", "F32", [2, 3], pack("f", [0.25 * i - 1.0 for i in range(6)]))
add("Zeta", "F32", [2], pack("f", [-0.5, 1e-30]))
add("gen.b", "F64", [3], pack("d", [1.5 * i + 1e-10 for i in range(3)]))
add("scale", "F64", [], pack("d", [65536.0]))
add("opt.m", "F16", [1, 2, 2, 1], pack("H", [0x3c00 + i for i in range(4)]))
add("opt.v", "BF16", [2, 2], pack("H", [0x3f80 + 3 * i for i in range(4)]))
add("rng.key", "U64", [2], pack("Q", [0xfedcba9876543210 + i for i in range(2)]))
add("step", "I64", [], pack("q", [-42]))
add("idx", "I32", [4], pack("i", [i - 2 for i in range(4)]))
add("bits", "U32", [3], pack("I", [(0x9e3779b9 * (i + 1)) & 0xffffffff for i in range(3)]))
add("mask", "U8", [5], bytes([i * 51 for i in range(5)]))
add("empty", "F32", [0, 4], b"")
add("flags", "BOOL", [2], bytes([1, 0]))
add("small", "I8", [3], pack("b", [-1, 0, 1]))
add("half", "I16", [2], pack("h", [-300, 300]))
add("uhalf", "U16", [2], pack("H", [1, 65535]))
add("weird \"name\"\n\u00df/\x01", "F32", [1], pack("f", [3.0]))
meta = {"config": "lr=0.0001\nbeta1=0.5\t\"q\"\x01/\u00e9", "format": "ganctl 0.1"}

# The reference keeps metadata in a hash map whose iteration order changes from run to
# run; ganctl writes the keys sorted, so retry until the reference emits them sorted.
for attempt in range(200):
    out = serialize(T, meta)
    n = struct.unpack("<Q", out[:8])[0]
    if out[8:8 + n].startswith(b'{"__metadata__":{"config"'):
        break
else:
    raise SystemExit("the metadata never came out sorted")
with open(sys.argv[1], "wb") as f:
    f.write(out)
