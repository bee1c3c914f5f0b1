"""Writes a safetensors file made from another's tensors, to feed lru-predict
inputs of other kinds than lru-eval --dump-batch writes:

    python rewrite_tensors.py IN OUT [--keep A,B] [--i64 A,B] [--zero A]
                                     [--fill A=V] [--put A=K:V]

--keep keeps only the tensors named (default all); --i64 widens I32 tensors
to I64 (NumPy's default integers); --zero sets every value of a tensor to 0;
--fill sets every value of an integer tensor to V (labels not scored,
lengths out of range); --put sets flat element K of a tensor to V (nan,
inf: values that are not numbers; an integer for I32 and I64).
Pure Python (safetensors_file.py), like same_tensors.py.
"""
import struct
import sys

from safetensors_file import read_tensors as read, write_tensors


def option(args, name):
    """Every value of `name` (given once or more), taken out of args."""
    values = []
    while name in args:
        i = args.index(name)
        values += args[i + 1].split(",")
        del args[i : i + 2]
    return values


args = sys.argv[1:]
keep, wide, zero = option(args, "--keep"), option(args, "--i64"), option(args, "--zero")
fill, put = option(args, "--fill"), option(args, "--put")
tensors = read(args[0])
if keep:
    tensors = {name: tensors[name] for name in keep}
for name in wide:
    dtype, shape, raw = tensors[name]
    assert dtype == "I32", f"{name} is {dtype}"
    values = struct.unpack(f"<{len(raw) // 4}i", raw)
    tensors[name] = ("I64", shape, struct.pack(f"<{len(values)}q", *values))
for name in zero:
    dtype, shape, raw = tensors[name]
    tensors[name] = (dtype, shape, bytes(len(raw)))
for spec in fill:
    name, value = spec.split("=")
    dtype, shape, raw = tensors[name]
    code = {"I32": "i", "I64": "q"}[dtype]
    count = len(raw) // struct.calcsize(code)
    tensors[name] = (dtype, shape, struct.pack(f"<{count}{code}", *[int(value)] * count))
for spec in put:
    name, place = spec.split("=")
    index, value = place.split(":")
    dtype, shape, raw = tensors[name]
    code = {"F32": "f", "I32": "i", "I64": "q"}[dtype]
    values = list(struct.unpack(f"<{len(raw) // struct.calcsize(code)}{code}", raw))
    values[int(index)] = float(value) if dtype == "F32" else int(value)
    tensors[name] = (dtype, shape, struct.pack(f"<{len(values)}{code}", *values))

write_tensors(args[1], tensors)
