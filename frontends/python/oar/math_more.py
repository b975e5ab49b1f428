"""Top-level math functions not in math.py: the regularized incomplete gamma
functions and shard_index."""
import math as _pymath

import numpy as np

from . import _C
from .creation import to_tensor
from .framework import Tensor, to_numpy_dtype

_ops = _C.ops
_lgamma = np.vectorize(_pymath.lgamma, otypes=[np.float64])


def _lower_gamma_regularized(a, x):
    """P(a, x) in float64 for arrays a > 0, x >= 0 of one shape: the power
    series where x < a + 1, the continued fraction of Q = 1 - P elsewhere
    (both converge fast there), 200 terms at most."""
    p = np.zeros_like(x)
    log_prefix = a * np.log(np.where(x > 0, x, 1.0)) - x - _lgamma(a)
    series = (x > 0) & (x < a + 1)
    if series.any():
        aa, xx = a[series], x[series]
        term = 1.0 / aa
        total = term.copy()
        for n in range(1, 200):
            term = term * xx / (aa + n)
            total += term
            if np.all(np.abs(term) < np.abs(total) * 1e-16):
                break
        p[series] = total * np.exp(log_prefix[series])
    frac = x >= a + 1
    if frac.any():
        # Lentz's evaluation of Q(a, x) = e^-x x^a / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))
        aa, xx = a[frac], x[frac]
        tiny = 1e-300
        b = xx + 1.0 - aa
        c = np.full_like(xx, 1.0 / tiny)
        d = 1.0 / b
        h = d.copy()
        for n in range(1, 200):
            an = -n * (n - aa)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            step = d * c
            h = h * step
            if np.all(np.abs(step - 1.0) < 1e-16):
                break
        p[frac] = 1.0 - np.exp(log_prefix[frac]) * h
    return p


def _incomplete_gamma(name, x, y, upper):
    for what, t in (("x", x), ("y", y)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: expected {what} to be a Tensor, but got {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name}: expected {what} to be a float32 or float64 tensor, but it has dtype "
                            f"{t.dtype.name}")
    a, v = np.broadcast_arrays(x.numpy().astype(np.float64), y.numpy().astype(np.float64))
    if np.any(a <= 0):
        raise ValueError(f"{name}: expected x > 0 everywhere, but x has the value {a[a <= 0].flat[0]}")
    if np.any(v < 0):
        raise ValueError(f"{name}: expected y >= 0 everywhere, but y has the value {v[v < 0].flat[0]}")
    p = _lower_gamma_regularized(a.copy(), v.copy())
    value = 1.0 - p if upper else p
    dtype = to_numpy_dtype(y.dtype)
    out = to_tensor(value.astype(dtype), place=y._device)
    if y.stop_gradient:
        return out
    # Differentiable in y, as Paddle's (not in x): d/dy P(x, y) = y^(x-1) e^-y / Gamma(x), and
    # out + (y - y.detach()) * slope has out's value and that slope as its derivative.
    slope = np.exp((a - 1.0) * np.log(np.where(v > 0, v, 1.0)) - v - _lgamma(a))
    slope = np.where(v > 0, slope, np.where(a == 1.0, 1.0, np.where(a < 1.0, np.inf, 0.0)))
    # At y = 0 with x < 1 the slope is infinite: the dtype's largest value stands in for it, as
    # 0 * inf would turn the forward value into NaN.
    slope = np.minimum(slope, np.finfo(dtype).max)
    slope = to_tensor((-slope if upper else slope).astype(dtype), place=y._device)
    yb = _ops.broadcast_to(y, list(out.shape))
    return _ops.add(out, _ops.multiply(_ops.subtract(yb, yb.detach()), slope))


def gammainc(x, y, name=None):
    """The regularized lower incomplete gamma function P(x, y), elementwise."""
    return _incomplete_gamma("gammainc", x, y, upper=False)


def gammaincc(x, y, name=None):
    """The regularized upper incomplete gamma function Q(x, y) = 1 - P(x, y), elementwise."""
    return _incomplete_gamma("gammaincc", x, y, upper=True)


def shard_index(input, index_num, nshards, shard_id, ignore_value=-1):  # noqa: A002 - paddle names
    """Labels in [0, index_num) split into nshards equal ranges: a label in
    range shard_id becomes its offset in that range, the others ignore_value."""
    if not isinstance(input, Tensor) or input.dtype.name not in ("int32", "int64"):
        raise TypeError("shard_index: expected input to be an int32 or int64 tensor, but got "
                        f"{input.dtype.name if isinstance(input, Tensor) else type(input).__name__}")
    if len(input.shape) < 2 or input.shape[-1] != 1:
        raise ValueError(f"shard_index: expected input of rank >= 2 with a last dim of 1, but it has shape "
                         f"{list(input.shape)}")
    if index_num <= 0 or nshards <= 0:
        raise ValueError(f"shard_index: expected index_num > 0 and nshards > 0, but got {index_num} and {nshards}")
    if not 0 <= shard_id < nshards:
        raise ValueError(f"shard_index: expected 0 <= shard_id < nshards ({nshards}), but got {shard_id}")
    size = (index_num + nshards - 1) // nshards
    start, stop = shard_id * size, (shard_id + 1) * size
    inside = _ops.logical_and(_ops.greater_equal(input, _ops.full([], start, input.dtype, input._device)),
                              _ops.less_than(input, _ops.full([], stop, input.dtype, input._device)))
    return _ops.where(inside, _ops.subtract(input, _ops.full([], start, input.dtype, input._device)),
                      _ops.full([], ignore_value, input.dtype, input._device))


Tensor.gammainc = gammainc
Tensor.gammaincc = gammaincc

__all__ = ["gammainc", "gammaincc", "shard_index"]
