"""Exit 0 iff lru-predict --stream's per-step predictions agree with its
whole-sequence ones:

    python streamed_matches.py STREAMED WHOLE LENGTHS_FILE [--atol X]

STREAMED holds `predictions` [n, L, K] (NaN past each sequence's end),
WHOLE `predictions` [n, K] (pooled: the last real step must match) or
[n, L, K] (per step: every real step must, NaN past the end as well),
LENGTHS_FILE `lengths` [n]:
each sequence must have exactly that many steps that are not NaN.
"""
import math
import struct
import sys

from safetensors_file import pop_option, read_tensors


def values(path, name, fmt):
    dtype, shape, raw = read_tensors(path)[name]
    count = len(raw) // 4
    return shape, struct.unpack(f"<{count}{fmt}", raw)


args = sys.argv[1:]
atol = float(pop_option(args, "--atol", 1e-4))
(n, L, K), streamed = values(args[0], "predictions", "f")
whole_shape, whole = values(args[1], "predictions", "f")
_, lengths = values(args[2], "lengths", "i")
worst = 0.0
for i in range(n):
    rows = [streamed[(i * L + t) * K : (i * L + t + 1) * K] for t in range(L)]
    real = [t for t in range(L) if not any(math.isnan(v) for v in rows[t])]
    if real != list(range(lengths[i])):
        sys.exit(f"example {i}: steps {real[:3]}... are not NaN, its length is {lengths[i]}")
    if len(whole_shape) == 2:
        pairs = [(rows[lengths[i] - 1], whole[i * K : (i + 1) * K])]
    else:
        whole_rows = [whole[(i * L + t) * K : (i * L + t + 1) * K] for t in range(L)]
        if [t for t in range(L) if not any(math.isnan(v) for v in whole_rows[t])] != real:
            sys.exit(f"example {i}: the whole predictions are NaN at other steps")
        pairs = [(rows[t], whole_rows[t]) for t in real]
    for a, b in pairs:
        worst = max(worst, max(abs(u - v) for u, v in zip(a, b)))
if worst > atol:
    sys.exit(f"streamed and whole predictions differ by {worst:.3g} > {atol:g}")
print(f"{n} examples agree within {atol:g} (largest difference {worst:.3g})")
