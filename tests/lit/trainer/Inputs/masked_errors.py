"""Checks what lru-predict wrote and printed for a regression against the
errors recomputed here from its predictions, over the targets that are not
NaN (the values a regression loss scores): the loss in the file (LOSS:
mse, l1 or huber:DELTA) and, in PRINTED (its output), the RMSE, the mean
absolute error and the number of values:

    python masked_errors.py PREDICTIONS INPUTS PRINTED [LOSS]
"""
import math
import re
import struct
import sys

from safetensors_file import read_tensors


def floats(tensor):
    dtype, shape, raw = tensor
    assert dtype == "F32", dtype
    return struct.unpack(f"<{len(raw) // 4}f", raw), shape


def huber(d, delta):
    return 0.5 * d * d if abs(d) < delta else delta * (abs(d) - 0.5 * delta)


written = read_tensors(sys.argv[1])
predictions, shape = floats(written["predictions"])
(loss,), _ = floats(written["loss"])
targets, target_shape = floats(read_tensors(sys.argv[2])["targets"])
assert shape == target_shape, (shape, target_shape)
kind = sys.argv[4] if len(sys.argv) > 4 else "mse"
d = [p - t for p, t in zip(predictions, targets) if not math.isnan(t)]
assert 0 < len(d) < len(targets), "no value left out, or none scored"
error = {"mse": lambda x: x * x, "l1": abs}.get(kind) or (
    lambda x: huber(x, float(kind.split(":")[1])))
mean = sum(map(error, d)) / len(d)
print(f"{kind} {mean:.7g} over {len(d)} of {len(targets)} targets; "
      f"lru-predict's loss {loss:.7g}")
assert abs(mean - loss) <= 1e-5 * mean, (mean, loss)

printed = re.search(r"^lru-predict: loss [0-9.]+, RMSE ([0-9.]+), "
                    r"MAE ([0-9.]+) of ([0-9]+) values", open(sys.argv[3]).read(),
                    re.M)
assert printed, "no RMSE and MAE line"
rmse = math.sqrt(sum(x * x for x in d) / len(d))
mae = sum(map(abs, d)) / len(d)
print(f"RMSE {rmse:.6f}, MAE {mae:.6f}; printed {printed.group(1)}, "
      f"{printed.group(2)} of {printed.group(3)} values")
assert abs(rmse - float(printed.group(1))) <= 5.1e-5, (rmse, printed.group(1))
assert abs(mae - float(printed.group(2))) <= 5.1e-5, (mae, printed.group(2))
assert int(printed.group(3)) == len(d), (printed.group(3), len(d))
