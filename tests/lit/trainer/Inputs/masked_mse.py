"""Checks the loss lru-predict wrote beside its predictions against the mean
squared error recomputed here from them, over the targets that are not NaN
(the values a model's mse scores):

    python masked_mse.py PREDICTIONS INPUTS
"""
import math
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
