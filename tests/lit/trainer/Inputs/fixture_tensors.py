"""Files for lru-predict tests of models lru-train cannot train (regression,
per-step outputs):

    python fixture_tensors.py checkpoint IR MODEL OUT
        an lruc checkpoint of every `lru.param` in IR (lruc --emit=lru),
        deterministic values of either sign (running variances positive)
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS TARGETS
        `features` F32 [ROWS, LENGTH, CHANNELS], `lengths` I32 [ROWS] of
        several values, `targets` F32 [ROWS, LENGTH, TARGETS] (zeros)
"""
import math
import re
import struct
import sys

from safetensors_file import write_tensors


def floats(values):
    return struct.pack(f"<{len(values)}f", *values)


def checkpoint(ir, model, out):
    tensors = {}
    pattern = re.compile(r'lru\.param "([^"]+)".*: tensor<([0-9x]+)xf32>')
    for number, match in enumerate(pattern.finditer(open(ir).read())):
        name, dims = match.group(1), [int(d) for d in match.group(2).split("x")]
        count = math.prod(dims)
        values = [0.4 * math.sin(1.3 * k + number) for k in range(count)]
        if name.endswith("running_var"):
            values = [1.0 + abs(v) for v in values]
        tensors[name] = ("F32", dims, floats(values))
    assert tensors, f"no lru.param in {ir}"
    write_tensors(out, tensors, {"format": "lruc-checkpoint",
                                 "format_version": "1", "model": model,
                                 "step": "0"})


def features(out, rows, length, channels, targets):
    values = [math.sin(0.7 * k) for k in range(rows * length * channels)]
    lengths = [1 + (5 * i) % length for i in range(rows)]
    write_tensors(out, {
        "features": ("F32", [rows, length, channels], floats(values)),
        "lengths": ("I32", [rows], struct.pack(f"<{rows}i", *lengths)),
        "targets": ("F32", [rows, length, targets],
                    bytes(4 * rows * length * targets)),
    })


if sys.argv[1] == "checkpoint":
    checkpoint(*sys.argv[2:5])
else:
    features(sys.argv[2], *[int(a) for a in sys.argv[3:7]])
