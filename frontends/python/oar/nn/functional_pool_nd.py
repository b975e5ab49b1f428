"""paddle.nn.functional pooling in 1-D, 2-D and 3-D: max (with return_mask),
avg (exclusive, ceil_mode, divisor_override), adaptive avg/max and max_unpool.

Plain 1-D/2-D cases run the core's 2-D pooling ops. The rest gathers every
window's elements with a host-built index table ([outputs, window] flat
positions of the padded input, functional_nd.window_table) and reduces over
the window axis, so autograd comes from gather. Adaptive average pooling is a
matmul per axis with the averaging matrix (a box mean is separable)."""
import numpy as np

from .. import _C
from ..creation import to_tensor
from ..framework import int32, int64
from .functional_nd import (channel_first, gather_windows, index_tensor, ntuple, pad_spatial, padding_pairs,
                            restore, window_table)

_ops = _C.ops


def _geometry(x, n, kernel_size, stride, padding, ceil_mode, last, what):
    kernel = ntuple(kernel_size, n, f"{what}: kernel_size")
    stride = kernel if stride is None else ntuple(stride, n, f"{what}: stride")
    if min(kernel) < 1 or min(stride) < 1:
        raise ValueError(f"{what}: kernel_size {kernel} and stride {stride} must be >= 1")
    sizes = list(x.shape[2:])
    pairs = padding_pairs(padding, n, kernel, stride, [1] * n, sizes, what, last)
    outs = []
    for size, k, s, (a, b) in zip(sizes, kernel, stride, pairs):
        span = size + a + b - k
        if span < 0:
            raise ValueError(f"{what}: kernel_size {kernel} is larger than the padded input {sizes} + {pairs}")
        outs.append((-(-span // s) if ceil_mode else span // s) + 1)
    return kernel, stride, pairs, outs


def _core_2d(x, n, kernel, stride, pairs):
    """x as NCHW for the core's 2-D ops (1-D gets a height of 1)."""
    if n == 1:
        return _ops.unsqueeze(x, [2]), [1] + kernel, [1] + stride, [(0, 0)] + pairs
    return x, kernel, stride, pairs


def _windows(x, kernel, stride, pairs, outs, fill):
    """x padded (ceil_mode's overhang too) and gathered: [N, C, L, K], plus the coordinates."""
    grow = [(a, b + max(0, (o - 1) * s + k - (size + a + b)))
            for size, k, s, (a, b), o in zip(x.shape[2:], kernel, stride, pairs, outs)]
    padded = pad_spatial(x, grow, fill)
    coords = [np.arange(o)[:, None] * s + np.arange(k)[None, :] for o, s, k in zip(outs, stride, kernel)]
    return gather_windows(padded, window_table(coords, padded.shape[2:])), coords


def _mask(picked, coords, offsets, sizes):
    """Flat positions in the unpadded input of each window's first maximum, int32."""
    orig = [np.clip(c - off, 0, size - 1) for c, off, size in zip(coords, offsets, sizes)]
    table = window_table(orig, sizes)
    length, k = table.shape
    first = _ops.argmax(picked, 3, False)
    flat = _ops.add(_ops.cast(first, int64),
                    index_tensor(np.arange(length) * k, picked))
    n, c = picked.shape[0], picked.shape[1]
    mask = _ops.gather(index_tensor(table, picked), _ops.reshape(flat, [-1]), 0)
    return _ops.cast(_ops.reshape(mask, [n, c, length]), int32)


def _max_pool(x, n, kernel_size, stride, padding, return_mask, ceil_mode, data_format, what):
    x, last = channel_first(x, n, data_format, what)
    kernel, stride, pairs, outs = _geometry(x, n, kernel_size, stride, padding, ceil_mode, last, what)
    if n < 3 and not return_mask and not ceil_mode:
        x2, k2, s2, p2 = _core_2d(x, n, kernel, stride, pairs)
        y = _ops.max_pool2d(pad_spatial(x2, p2, float("-inf")), k2, s2, [0, 0])
        return restore(_ops.squeeze(y, [2]) if n == 1 else y, n, last)
    picked, coords = _windows(x, kernel, stride, pairs, outs, float("-inf"))
    shape = list(x.shape[:2]) + outs
    y = restore(_ops.reshape(_ops.max(picked, [3], False), shape), n, last)
    if not return_mask:
        return y
    mask = _mask(picked, coords, [a for a, _ in pairs], list(x.shape[2:]))
    return y, restore(_ops.reshape(mask, shape), n, last)


def _avg_pool(x, n, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format, what):
    x, last = channel_first(x, n, data_format, what)
    kernel, stride, pairs, outs = _geometry(x, n, kernel_size, stride, padding, ceil_mode, last, what)
    symmetric = all(a == b and 2 * a <= k for (a, b), k in zip(pairs, kernel))
    if n < 3 and not ceil_mode and symmetric:
        x2, k2, s2, p2 = _core_2d(x, n, kernel, stride, pairs)
        y = _ops.avg_pool2d(x2, k2, s2, [p for p, _ in p2], bool(exclusive) and divisor_override is None)
        if divisor_override:
            y = _ops.multiply_scalar(y, float(np.prod(kernel)) / float(divisor_override))
        return restore(_ops.squeeze(y, [2]) if n == 1 else y, n, last)
    picked, coords = _windows(x, kernel, stride, pairs, outs, 0.0)
    total = _ops.sum(picked, [3], False)
    if divisor_override:
        y = _ops.divide_scalar(total, float(divisor_override))
    else:
        # Paddle's divisor: the window's elements inside x (exclusive), else
        # inside x plus its padding (only ceil_mode's overhang is left out).
        counts = np.ones([1] * n)
        for d, (c, size, (a, b)) in enumerate(zip(coords, x.shape[2:], pairs)):
            lo, hi = (a, a + size) if exclusive else (0, a + size + b)
            inside = ((c >= lo) & (c < hi)).sum(axis=1)
            counts = counts * inside.reshape([-1 if i == d else 1 for i in range(n)])
        divisor = to_tensor(counts.reshape(-1).astype(np.float64), place=x._device)
        y = _ops.divide(total, _ops.cast(divisor, total.dtype))
    return restore(_ops.reshape(y, list(x.shape[:2]) + outs), n, last)


def max_pool1d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, name=None):
    """x [N, C, L]; return_mask also gives each maximum's position in L (int32)."""
    return _max_pool(x, 1, kernel_size, stride, padding, return_mask, ceil_mode, "NCL", "max_pool1d")


def max_pool2d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCHW",
               name=None):
    """x [N, C, H, W] (or NHWC); the mask holds flat positions h * W + w (int32)."""
    return _max_pool(x, 2, kernel_size, stride, padding, return_mask, ceil_mode, data_format, "max_pool2d")


def max_pool3d(x, kernel_size, stride=None, padding=0, return_mask=False, ceil_mode=False, data_format="NCDHW",
               name=None):
    """x [N, C, D, H, W] (or NDHWC); the mask holds flat positions in D * H * W (int32)."""
    return _max_pool(x, 3, kernel_size, stride, padding, return_mask, ceil_mode, data_format, "max_pool3d")


def avg_pool1d(x, kernel_size, stride=None, padding=0, exclusive=True, ceil_mode=False, name=None):
    return _avg_pool(x, 1, kernel_size, stride, padding, ceil_mode, exclusive, None, "NCL", "avg_pool1d")


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCHW", name=None):
    return _avg_pool(x, 2, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format,
                     "avg_pool2d")


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, exclusive=True, divisor_override=None,
               data_format="NCDHW", name=None):
    return _avg_pool(x, 3, kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format,
                     "avg_pool3d")


def _lp_pool(x, n, norm_type, kernel_size, stride, padding, ceil_mode, data_format, what):
    """(sum of x ** p over each window) ** (1 / p), the max for p = inf (Paddle's rule, no abs)."""
    p = float(norm_type)
    if p == float("inf"):
        return _max_pool(x, n, kernel_size, stride, padding, False, ceil_mode, data_format, what)
    if p == 0:
        raise ValueError(f"{what}: norm_type must be nonzero")
    total = _avg_pool(_ops.pow_scalar(x, p), n, kernel_size, stride, padding, ceil_mode, False, 1, data_format, what)
    return _ops.pow_scalar(total, 1.0 / p)


def lp_pool1d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCL", name=None):
    return _lp_pool(x, 1, norm_type, kernel_size, stride, padding, ceil_mode, data_format, "lp_pool1d")


def lp_pool2d(x, norm_type, kernel_size, stride=None, padding=0, ceil_mode=False, data_format="NCHW", name=None):
    return _lp_pool(x, 2, norm_type, kernel_size, stride, padding, ceil_mode, data_format, "lp_pool2d")


# ---- adaptive ----

def _adaptive_sizes(x, n, output_size, what):
    sizes = list(x.shape[2:])
    if isinstance(output_size, (list, tuple)):  # None keeps the input's size
        output_size = [-1 if o is None else o for o in output_size]
    outs = [s if o == -1 else o for o, s in zip(ntuple(output_size, n, f"{what}: output_size"), sizes)]
    if any(o < 1 for o in outs):
        raise ValueError(f"{what}: output_size must be positive, got {output_size}")
    return sizes, outs


def _bounds(size, out):
    """Paddle's adaptive windows [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out)
    return (i * size) // out, -(-((i + 1) * size) // out)


def _adaptive_avg(x, n, output_size, data_format, what):
    x, last = channel_first(x, n, data_format, what)
    sizes, outs = _adaptive_sizes(x, n, output_size, what)
    y = x
    for d, (size, out) in enumerate(zip(sizes, outs)):
        if size == out:
            continue
        start, end = _bounds(size, out)
        pos = np.arange(size)[:, None]
        avg = ((pos >= start) & (pos < end)) / (end - start)
        axis = 2 + d
        perm = list(range(n + 2))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        moved = _ops.transpose(y, perm) if axis != n + 1 else y
        avg_t = _ops.cast(to_tensor(avg.astype(np.float64), place=x._device), x.dtype)
        moved = _ops.matmul(moved, avg_t, False, False)
        y = _ops.transpose(moved, perm) if axis != n + 1 else moved
    return restore(y, n, last)


def _adaptive_max(x, n, output_size, return_mask, what):
    x, _ = channel_first(x, n, {1: "NCL", 2: "NCHW", 3: "NCDHW"}[n], what)
    sizes, outs = _adaptive_sizes(x, n, output_size, what)
    coords = []
    for size, out in zip(sizes, outs):
        start, end = _bounds(size, out)
        width = int((end - start).max())
        coords.append(start[:, None] + np.minimum(np.arange(width)[None, :], (end - start - 1)[:, None]))
    picked = gather_windows(x, window_table(coords, sizes))
    shape = list(x.shape[:2]) + outs
    y = _ops.reshape(_ops.max(picked, [3], False), shape)
    if not return_mask:
        return y
    return y, _ops.reshape(_mask(picked, coords, [0] * n, sizes), shape)


def adaptive_avg_pool1d(x, output_size, name=None):
    return _adaptive_avg(x, 1, output_size, "NCL", "adaptive_avg_pool1d")


def adaptive_avg_pool2d(x, output_size, data_format="NCHW", name=None):
    return _adaptive_avg(x, 2, output_size, data_format, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(x, output_size, data_format="NCDHW", name=None):
    return _adaptive_avg(x, 3, output_size, data_format, "adaptive_avg_pool3d")


def adaptive_max_pool1d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, 1, output_size, return_mask, "adaptive_max_pool1d")


def adaptive_max_pool2d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, 2, output_size, return_mask, "adaptive_max_pool2d")


def adaptive_max_pool3d(x, output_size, return_mask=False, name=None):
    return _adaptive_max(x, 3, output_size, return_mask, "adaptive_max_pool3d")


# ---- unpooling ----

def _max_unpool(x, indices, n, kernel_size, stride, padding, data_format, output_size, what):
    x, last = channel_first(x, n, data_format, what)
    indices, _ = channel_first(indices, n, data_format, what)
    if list(indices.shape) != list(x.shape):
        raise ValueError(f"{what}: indices must have x's shape {list(x.shape)}, got {list(indices.shape)}")
    kernel = ntuple(kernel_size, n, f"{what}: kernel_size")
    stride = kernel if stride is None else ntuple(stride, n, f"{what}: stride")
    pairs = padding_pairs(padding, n, kernel, stride, [1] * n, list(x.shape[2:]), what, last)
    outs = [(s - 1) * st - a - b + k for s, st, (a, b), k in zip(x.shape[2:], stride, pairs, kernel)]
    if output_size is not None:
        output_size = list(output_size)[-n:]
        outs = [int(o) for o in output_size]
    batch, channels = x.shape[0], x.shape[1]
    plane = int(np.prod(outs))
    offsets = index_tensor(np.repeat(np.arange(batch * channels) * plane, int(np.prod(x.shape[2:]))), x)
    flat_index = _ops.add(_ops.cast(_ops.reshape(indices, [-1]), offsets.dtype), offsets)
    flat_index = _ops.check_index(flat_index, batch * channels * plane, what, "indices")
    zeros = _ops.full([batch * channels * plane], 0.0, x.dtype)
    y = _ops.scatter_add(zeros, flat_index, _ops.reshape(x, [-1]), 0)
    return restore(_ops.reshape(y, [batch, channels] + outs), n, last)


def max_unpool1d(x, indices, kernel_size, stride=None, padding=0, data_format="NCL", output_size=None, name=None):
    """The inverse of max_pool1d with return_mask: x's values at the mask's positions, zeros elsewhere."""
    return _max_unpool(x, indices, 1, kernel_size, stride, padding, data_format, output_size, "max_unpool1d")


def max_unpool2d(x, indices, kernel_size, stride=None, padding=0, data_format="NCHW", output_size=None, name=None):
    return _max_unpool(x, indices, 2, kernel_size, stride, padding, data_format, output_size, "max_unpool2d")


def max_unpool3d(x, indices, kernel_size, stride=None, padding=0, data_format="NCDHW", output_size=None,
                 name=None):
    return _max_unpool(x, indices, 3, kernel_size, stride, padding, data_format, output_size, "max_unpool3d")


__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d"]
