"""lruc's dropout masks in NumPy, so the references drop the same elements.

A mask element is a pure function of (seed, step, site, flat index)
(runtime/core/include/lruc/core/Random.h): Philox4x32-10 with key
{seed lo32, seed hi32} and counter {block lo32, block hi32, site, step},
block = index // 4; element `index` is kept iff the top 24 bits of output
word index % 4, as a fraction of 2^24, are >= the rate. Sites number the
model's dropout layers in the order lruc builds them (both towers of a
token-pair model included).
"""

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LO = np.uint64(0xFFFFFFFF)


def philox4x32(counter, key):
    """Ten Philox rounds; counter is four uint32 arrays, key two ints."""
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counter)
    k0, k1 = key
    for i in range(10):
        if i > 0:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0),
                          p1 & _LO,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1),
                          p0 & _LO)
    return c0, c1, c2, c3


def keep_mask(shape, dropout_key, site, rate):
    """The float32 0/1 mask of a dropout site for this key = {seed, step}."""
    seed, step = (int(k) for k in dropout_key)
    n = int(np.prod(shape, dtype=np.int64))
    index = np.arange(n, dtype=np.uint64)
    block = index // np.uint64(4)
    words = philox4x32((block & _LO, block >> np.uint64(32),
                        np.full(n, site, np.uint64),
                        np.full(n, step & 0xFFFFFFFF, np.uint64)),
                       (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))
    word = np.choose((index % np.uint64(4)).astype(np.int64), words)
    threshold = np.ceil(rate * float(1 << 24))
    return ((word >> np.uint64(8)).astype(np.float64) >= threshold).astype(
        np.float32).reshape(shape)
