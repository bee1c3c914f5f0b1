"""Exit 0 iff two safetensors files hold the same tensors: bit for bit, or
with --atol X, every F32 value within X of the other's.

    python same_tensors.py A.safetensors B.safetensors [--atol X] [--only A,B]

--only compares just the tensors named (both files must hold them).

Reads the format directly (8-byte little-endian header size, JSON header,
data), so the test needs nothing beyond Python. Metadata may differ (a
checkpoint records wall-clock time).
"""
import struct
import sys

from safetensors_file import pop_option, read_tensors as tensors


def largest_difference(x, y):
    """Largest |x - y| over two F32 tensors' values (inf for a NaN)."""
    count = len(x[2]) // 4
    a = struct.unpack(f"<{count}f", x[2])
    b = struct.unpack(f"<{count}f", y[2])
    worst = 0.0
    for u, v in zip(a, b):
        d = abs(u - v)
        worst = max(worst, d if d == d else float("inf"))
    return worst


args = sys.argv[1:]
atol = pop_option(args, "--atol")
atol = None if atol is None else float(atol)
only = pop_option(args, "--only")
only = None if only is None else only.split(",")
a, b = tensors(args[0]), tensors(args[1])
if only is not None:
    missing = [name for name in only if name not in a or name not in b]
    if missing:
        sys.exit(f"missing tensors: {missing}")
    a = {name: a[name] for name in only}
    b = {name: b[name] for name in only}
if a.keys() != b.keys():
    sys.exit(f"different tensors: {sorted(a.keys() ^ b.keys())}")
if atol is None:
    differ = [name for name in a if a[name] != b[name]]
    if differ:
        sys.exit(f"{len(differ)} tensors differ, e.g. {differ[0]}")
    print(f"{len(a)} tensors identical")
    sys.exit(0)
shapes = [name for name in a if a[name][:2] != b[name][:2]]
if shapes:
    sys.exit(f"{len(shapes)} tensors differ in dtype or shape, e.g. {shapes[0]}")
worst = max((largest_difference(a[name], b[name]), name) for name in a)
if worst[0] > atol:
    sys.exit(f"{worst[1]} differs by {worst[0]:.3g} > {atol:g}")
print(f"{len(a)} tensors within {atol:g} (largest difference {worst[0]:.3g}, {worst[1]})")
