"""Shared helpers for the N-d (1-D, 2-D, 3-D) convolution and pooling
functions: argument forms, data formats, window index tables."""
import numbers

import numpy as np

from .. import _C
from ..creation import to_tensor

_ops = _C.ops

CHANNEL_FIRST = {1: "NCL", 2: "NCHW", 3: "NCDHW"}
CHANNEL_LAST = {1: "NLC", 2: "NHWC", 3: "NDHWC"}


def ntuple(v, n, what):
    """An int or a list of 1 or n ints -> a list of n ints."""
    if isinstance(v, numbers.Integral):
        return [int(v)] * n
    if hasattr(v, "numpy"):
        v = v.numpy().tolist()
    v = [int(i) for i in v]
    if len(v) == 1:
        return v * n
    if len(v) != n:
        raise ValueError(f"{what} must be an int or a list of {n} ints, got {v}")
    return v


def channel_first(x, n, data_format, what):
    """x moved to [N, C, *spatial]; returns (x, channel_last)."""
    if len(x.shape) != n + 2:
        raise ValueError(f"{what}: x must be a {n + 2}-D tensor ({CHANNEL_FIRST[n]} or {CHANNEL_LAST[n]}), "
                         f"got shape {list(x.shape)}")
    if data_format == CHANNEL_FIRST[n]:
        return x, False
    if data_format != CHANNEL_LAST[n]:
        raise ValueError(f"{what}: data_format must be '{CHANNEL_FIRST[n]}' or '{CHANNEL_LAST[n]}', "
                         f"got '{data_format}'")
    return _ops.transpose(x, [0, n + 1] + list(range(1, n + 1))), True


def restore(y, n, channel_last):
    return _ops.transpose(y, [0] + list(range(2, n + 2)) + [1]) if channel_last else y


def padding_pairs(padding, n, kernel, stride, dilation, sizes, what, channel_last=False):
    """[(before, after)] per spatial dim from Paddle's padding forms: an int,
    n ints, 2n ints (before/after per dim), n + 2 pairs including the batch and
    channel dims, 'VALID' or 'SAME' (out = ceil(size / stride), the odd pad after)."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * n
        if mode != "SAME":
            raise ValueError(f"{what}: padding must be 'SAME', 'VALID', an int or a list, got '{padding}'")
        pairs = []
        for size, k, s, d in zip(sizes, kernel, stride, dilation):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pairs.append((total // 2, total - total // 2))
        return pairs
    if isinstance(padding, numbers.Integral):
        return [(int(padding), int(padding))] * n
    padding = list(padding.numpy().tolist() if hasattr(padding, "numpy") else padding)
    if padding and isinstance(padding[0], (list, tuple)):
        if len(padding) != n + 2:
            raise ValueError(f"{what}: padding as pairs must have {n + 2} pairs, got {padding}")
        padding = padding[1:-1] if channel_last else padding[2:]
        return [(int(a), int(b)) for a, b in padding]
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return [(padding[0], padding[0])] * n
    if len(padding) == n:
        return [(p, p) for p in padding]
    if len(padding) == 2 * n:
        return [(padding[2 * i], padding[2 * i + 1]) for i in range(n)]
    raise ValueError(f"{what}: padding must have 1, {n} or {2 * n} entries, got {padding}")


def pad_spatial(x, pairs, value=0.0):
    """Constant padding of the spatial dims of a channel-first x."""
    if all(a == 0 and b == 0 for a, b in pairs):
        return x
    if any(a < 0 or b < 0 for a, b in pairs):
        raise ValueError(f"padding must be >= 0, got {pairs}")
    return _ops.pad(x, [0, 0, 0, 0] + [p for pair in pairs for p in pair], float(value))


def index_tensor(array, like):
    return to_tensor(np.ascontiguousarray(array, dtype=np.int64).reshape(-1), place=like._device)


def window_table(coords, sizes):
    """coords[d]: [O_d, K_d] positions along dim d of windows; sizes: the dims'
    lengths. Returns the row-major flat positions [prod O_d, prod K_d]."""
    n = len(coords)
    flat = np.zeros([1] * (2 * n), dtype=np.int64)
    for d, (c, size) in enumerate(zip(coords, sizes)):
        shape = [1] * (2 * n)
        shape[d], shape[n + d] = c.shape
        flat = flat * size + c.reshape(shape)
    out_shape = [c.shape[0] for c in coords]
    k = int(np.prod([c.shape[1] for c in coords]))
    return np.broadcast_to(flat, out_shape + [c.shape[1] for c in coords]).reshape(-1, k)


def gather_windows(x, table):
    """x [N, C, *S] -> [N, C, L, K]: the values at table [L, K] of x's flat spatial positions."""
    n, c = x.shape[0], x.shape[1]
    flat = _ops.reshape(x, [n, c, -1])
    picked = _ops.gather(flat, index_tensor(table, x), 2)
    return _ops.reshape(picked, [n, c, table.shape[0], table.shape[1]])
