"""Files for lru-predict tests of models lru-train cannot train (regression,
per-step outputs):

    python fixture_tensors.py checkpoint IR MODEL OUT
        an lruc checkpoint of every `lru.param` in IR (lruc --emit=lru),
        deterministic values of either sign (running variances positive)
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS targets K
        `features` F32 [ROWS, LENGTH, CHANNELS], `lengths` I32 [ROWS] of
        several values, `targets` F32 [ROWS, LENGTH, K] (zeros)
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS labels SEED
        `features` and `labels` I64 [ROWS]: 1 where channel 0's mean is
        positive, else 0 (learnable); no lengths (features run L steps)
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS running SEED
        `features` and `targets` F32 [ROWS, LENGTH, 1]: the running mean of
        channel 0 (learnable by a causal model)
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS gappy SEED
        running, but every third step's target NaN (not scored), and the
        first i % 5 of example i's; `unscored`:
        every target NaN; `infinite`: one target inf
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS signs SEED
        `features` and `labels` I64 [ROWS, LENGTH]: 1 where the running sum
        of channel 0 is positive, else 0
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS ragged SEED
        the same with `lengths` I32 [ROWS] of several values: NaN features
        and label 0 past each end
    python fixture_tensors.py features OUT ROWS LENGTH CHANNELS sparse SEED
        signs, but every third step's label -100 (not scored)
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


def features(out_path, rows, length, channels, kind, k):
    if kind == "targets":
        values = [math.sin(0.7 * i) for i in range(rows * length * channels)]
        lengths = [1 + (5 * i) % length for i in range(rows)]
        write_tensors(out_path, {
            "features": ("F32", [rows, length, channels], floats(values)),
            "lengths": ("I32", [rows], struct.pack(f"<{rows}i", *lengths)),
            "targets": ("F32", [rows, length, k], bytes(4 * rows * length * k)),
        })
        return
    if kind in ("running", "gappy", "unscored", "infinite", "signs", "ragged",
                "sparse"):
        values, out = [], []
        lengths = [length - (3 * i) % length for i in range(rows)]
        for i in range(rows):
            total = 0.0
            for t in range(length):
                step = [math.sin(2.3 * (i * length + t) * (c + 1) + k)
                        for c in range(channels)]
                total += step[0]
                if kind == "ragged" and t >= lengths[i]:
                    values += [math.nan] * channels
                    out.append(0)
                    continue
                values += step
                if kind == "sparse" and t % 3 == 2:
                    out.append(-100)
                    continue
                if kind in ("running", "gappy", "unscored", "infinite"):
                    out.append(total / (t + 1))
                    if (kind == "gappy" and (t % 3 == 1 or t < i % 5)
                            or kind == "unscored"):
                        out[-1] = math.nan
                else:
                    out.append(int(total > 0))
        if kind == "infinite":
            out[len(out) // 2] = math.inf
        tensors = {"features": ("F32", [rows, length, channels], floats(values))}
        if kind == "ragged":
            tensors["lengths"] = ("I32", [rows], struct.pack(f"<{rows}i", *lengths))
        if kind in ("running", "gappy", "unscored", "infinite"):
            tensors["targets"] = ("F32", [rows, length, 1], floats(out))
        else:
            tensors["labels"] = ("I64", [rows, length],
                                 struct.pack(f"<{len(out)}q", *out))
        write_tensors(out_path, tensors)
        return
    values, labels = [], []
    for i in range(rows):
        shift = math.sin(3.1 * i + k)
        example = [shift + math.sin(1.9 * (i * length + t) * (c + 1) + k)
                   for t in range(length) for c in range(channels)]
        values += example
        labels.append(1 if sum(example[0::channels]) > 0 else 0)
    write_tensors(out_path, {
        "features": ("F32", [rows, length, channels], floats(values)),
        "labels": ("I64", [rows], struct.pack(f"<{rows}q", *labels)),
    })


if sys.argv[1] == "checkpoint":
    checkpoint(*sys.argv[2:5])
else:
    features(sys.argv[2], *[int(a) for a in sys.argv[3:6]], sys.argv[6],
             int(sys.argv[7]))
