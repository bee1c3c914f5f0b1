"""Reads and writes safetensors files by hand (8-byte little-endian header
size, JSON header, data), so that the tests' helpers need nothing beyond
Python."""
import json
import struct


def pop_option(args, name, default=None):
    """The value after `name` in the command-line list `args` (both taken
    out of it), or `default` when it is not there."""
    if name not in args:
        return default
    i = args.index(name)
    value = args[i + 1]
    del args[i : i + 2]
    return value


def read_tensors(path):
    """{name: (dtype, shape, raw bytes)}; the metadata is left out."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    return {
        name: (t["dtype"], t["shape"], data[base + t["data_offsets"][0] : base + t["data_offsets"][1]])
        for name, t in header.items()
    }


def write_tensors(path, tensors, metadata=None):
    """Writes {name: (dtype, shape, raw bytes)} and the string metadata."""
    header, offset, blobs = {}, 0, []
    if metadata:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
