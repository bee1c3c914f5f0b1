"""Splits a stream of inputs in two at step K, and checks that streaming the
pieces one after the other (lru-predict --stream --carry-out, then
--carry-in) predicts what streaming the whole does:

    python stream_pieces.py split WHOLE K FIRST SECOND
    python stream_pieces.py check WHOLE K LENGTHS_FILE FIRST SECOND CARRY_1 CARRY_2 [--atol X]
    python stream_pieces.py list FILE
    python stream_pieces.py idle PIECE CARRY_IN CARRY_OUT

split: WHOLE holds `tokens` or `features` [n, L, ...] and `lengths` [n];
FIRST gets steps [0, K) of each sequence (lengths K, or the sequence's
own where shorter), SECOND the rest moved to the start (lengths length -
K, 0 for a sequence of at most K steps), padding 0 after.
Every other tensor is left out.

check: WHOLE, FIRST and SECOND are --stream predictions [n, L, ...]:
FIRST's step t must be WHOLE's step t, SECOND's step t WHOLE's step K + t,
bit for bit (or within --atol), and NaN past each piece's length; CARRY_1
and CARRY_2 (the carry files after each piece) must say min(K, length)
and length steps taken.

idle: the streams of PIECE with length 0 stand in CARRY_OUT where they
stood in CARRY_IN (every carry's row and the steps alike); the others have
taken their length in steps more.

list: each tensor of FILE as "NAME DTYPE [SHAPE]", in the file's order.
Pure Python (safetensors_file.py).
"""
import math
import struct
import sys

from safetensors_file import pop_option, read_tensors, write_tensors


def ints(raw, dtype):
    fmt = {"I32": "i", "I64": "q"}[dtype]
    return list(struct.unpack(f"<{len(raw) // struct.calcsize(fmt)}{fmt}", raw))


def piece_lengths(lengths, k):
    """Each stream's steps in the first piece and in the second: a stream
    of at most K steps has none in the second (it stands where it stood)."""
    return [min(k, n) for n in lengths], [max(n - k, 0) for n in lengths]


def split(whole, k, first, second):
    tensors = read_tensors(whole)
    dtype, _, raw = tensors["lengths"]
    lengths = ints(raw, dtype)
    name = "tokens" if "tokens" in tensors else "features"
    dtype, shape, raw = tensors[name]
    n, steps = shape[0], shape[1]
    step_bytes = len(raw) // (n * steps)
    row_bytes = steps * step_bytes
    pieces = ([], [])
    for i, length in enumerate(lengths):
        row = raw[i * row_bytes : (i + 1) * row_bytes]
        for piece, (begin, end) in zip(pieces, ((0, min(k, length)), (k, length))):
            body = row[begin * step_bytes : end * step_bytes]
            piece.append(body + bytes(row_bytes - len(body)))
    first_lengths, second_lengths = piece_lengths(lengths, k)
    for path, piece, lengths_in_piece in (
        (first, pieces[0], first_lengths),
        (second, pieces[1], second_lengths),
    ):
        write_tensors(path, {
            name: (dtype, shape, b"".join(piece)),
            "lengths": ("I32", [n], struct.pack(f"<{n}i", *lengths_in_piece)),
        })


def floats(path):
    _, shape, raw = read_tensors(path)["predictions"]
    return shape, struct.unpack(f"<{len(raw) // 4}f", raw)


def check(whole, k, lengths_file, first, second, carry_1, carry_2, atol=None):
    dtype, _, raw = read_tensors(lengths_file)["lengths"]
    lengths = ints(raw, dtype)
    shape, all_steps = floats(whole)
    n, steps = shape[0], shape[1]
    width = len(all_steps) // (n * steps)
    failures = []
    first_lengths, second_lengths = piece_lengths(lengths, k)
    for path, offset, lengths_in_piece in (
        (first, 0, first_lengths),
        (second, k, second_lengths),
    ):
        piece_shape, piece = floats(path)
        assert piece_shape == shape, f"{path}: {piece_shape}, expected {shape}"
        for i in range(n):
            for t in range(steps):
                got = piece[(i * steps + t) * width : (i * steps + t + 1) * width]
                if t >= lengths_in_piece[i]:
                    if not all(math.isnan(v) for v in got):
                        failures.append(f"{path}: example {i} step {t} past its end is {got}")
                    continue
                at = (i * steps + offset + t) * width
                want = all_steps[at : at + width]
                if (tuple(got) != tuple(want) if atol is None else
                        any(abs(a - b) > atol for a, b in zip(got, want))):
                    failures.append(f"{path}: example {i} step {t} is {got}, "
                                    f"the whole stream's step {offset + t} {want}")
    for path, want in ((carry_1, first_lengths), (carry_2, lengths)):
        dtype, _, raw = read_tensors(path)["steps"]
        if ints(raw, dtype) != want:
            failures.append(f"{path}: steps {ints(raw, dtype)}, expected {want}")
    for line in failures[:10]:
        print(line)
    if failures:
        sys.exit(f"{len(failures)} mismatches")
    print(f"the two pieces of {n} streams predict what the whole streams do")


args = sys.argv[1:]
atol = pop_option(args, "--atol")
atol = None if atol is None else float(atol)
def idle(piece, carry_in, carry_out):
    dtype, _, raw = read_tensors(piece)["lengths"]
    lengths = ints(raw, dtype)
    before, after = read_tensors(carry_in), read_tensors(carry_out)
    steps_in = ints(before["steps"][2], before["steps"][0])
    steps_out = ints(after["steps"][2], after["steps"][0])
    n = len(lengths)
    failures = []
    for i, length in enumerate(lengths):
        if steps_out[i] != steps_in[i] + length:
            failures.append(f"stream {i}: {steps_out[i]} steps, expected "
                            f"{steps_in[i]} + {length}")
        for name, (_, _, raw) in before.items():
            row = len(raw) // n
            same = raw[i * row : (i + 1) * row] == after[name][2][i * row : (i + 1) * row]
            if length == 0 and name != "steps" and not same:
                failures.append(f"stream {i} had no step and its {name} changed")
    if failures:
        sys.exit("\n".join(failures))
    print(f"{lengths.count(0)} of {n} streams idle, where they stood")


if args[0] == "idle":
    idle(*args[1:4])
elif args[0] == "list":
    for name, (dtype, shape, _) in read_tensors(args[1]).items():
        print(name, dtype, "[" + ", ".join(map(str, shape)) + "]")
elif args[0] == "split":
    split(args[1], int(args[2]), args[3], args[4])
else:
    check(args[1], int(args[2]), *args[3:8], atol=atol)
