"""Checks the loss lru-predict wrote beside its predictions against the mean
squared error recomputed here from them, over the targets that are not NaN
(the values a model's mse scores), and the number of values and the mean
absolute error it printed (PRINTED: its output):

    python masked_mse.py PREDICTIONS INPUTS PRINTED
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


written = read_tensors(sys.argv[1])
predictions, shape = floats(written["predictions"])
(loss,), _ = floats(written["loss"])
targets, target_shape = floats(read_tensors(sys.argv[2])["targets"])
assert shape == target_shape, (shape, target_shape)
scored = [(p - t) ** 2 for p, t in zip(predictions, targets)
          if not math.isnan(t)]
assert 0 < len(scored) < len(targets), "no value left out, or none scored"
mse = sum(scored) / len(scored)
print(f"masked mse {mse:.7g} over {len(scored)} of {len(targets)} targets; "
      f"lru-predict's loss {loss:.7g}")
assert abs(mse - loss) <= 1e-5 * mse, (mse, loss)
mae = sum(abs(p - t) for p, t in zip(predictions, targets)
          if not math.isnan(t)) / len(scored)
printed = re.search(r"^lru-predict: loss [0-9.]+, RMSE [0-9.]+, "
                    r"MAE ([0-9.]+) of ([0-9]+) values", open(sys.argv[3]).read(),
                    re.M)
assert printed, "no MAE line"
print(f"mean absolute error {mae:.6f}; printed {printed.group(1)} of "
      f"{printed.group(2)} values")
assert abs(mae - float(printed.group(1))) <= 5.1e-5, (mae, printed.group(1))
assert int(printed.group(2)) == len(scored), (printed.group(2), len(scored))
