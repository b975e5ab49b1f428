"""More of Paddle's elementwise math, reductions and products, composed from
the core ops (so autograd comes with them). Integer-only ops (bitwise, gcd)
and counting ops (bincount, histogram) compute on the host with numpy: they
have no gradient."""
import builtins
import math as _pymath
import numbers

import numpy as np

from . import _C
from . import math as M
from .creation import to_tensor
from .framework import Tensor, convert_dtype, default_float_dtype, int64, to_numpy_dtype

_ops = _C.ops
_BOOL = convert_dtype("bool")


def _t(x, like=None):
    """x as a tensor (a scalar takes like's dtype when like is given)."""
    if isinstance(x, Tensor):
        return x
    if like is not None and M._is_scalar(x):
        return M._as_tensor(x, like)
    return to_tensor(x)


def _float(x):
    """x in a float dtype: integer and bool tensors compute in the default float dtype."""
    x = _t(x)
    if not x.dtype.is_floating_point and not x.dtype.is_complex:
        x = _ops.cast(x, default_float_dtype())
    return x


def _axis(axis, ndim):
    if isinstance(axis, Tensor):
        axis = int(axis.item())
    axis = int(axis)
    if not -builtins.max(ndim, 1) <= axis < builtins.max(ndim, 1):
        raise ValueError(f"axis {axis} is out of range for a tensor of rank {ndim} "
                         f"(expected {-builtins.max(ndim, 1)} <= axis < {builtins.max(ndim, 1)})")
    return axis % builtins.max(ndim, 1)


# ---- aliases (Paddle has several names for these) ----

def clamp(x, min=None, max=None, name=None, *, out=None):  # noqa: A002
    return M.clip(x, min, max)


def div(x, y, name=None, *, rounding_mode=None, out=None):
    if rounding_mode is None:
        return M.divide(x, y)
    if rounding_mode == "floor":
        return M.floor_divide(x, y)
    if rounding_mode == "trunc":
        q = M.divide(x, y)
        return M.cast(M.trunc(q), x.dtype) if not x.dtype.is_floating_point else M.trunc(q)
    raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def true_divide(input, other, *, out=None):  # noqa: A002
    return M.divide(input, other)


def mul(x, y, name=None, *, out=None):
    return M.multiply(x, y)


def sub(x, y, name=None, *, alpha=1, out=None):
    return M.subtract(x, y if alpha == 1 else M.multiply(y, alpha))


def negative(x, name=None):
    return _ops.neg(x)


def positive(x, name=None):
    if x.dtype == _BOOL:
        raise TypeError("positive: a bool tensor has no unary +; expected a numeric tensor")
    return x


eq, ne, lt, le, gt, ge = M.equal, M.not_equal, M.less_than, M.less_equal, M.greater_than, M.greater_equal
greater, less = M.greater_than, M.less_than
floor_mod = M.remainder


def add_n(inputs, name=None):
    """The sum of a list of tensors of one shape."""
    if isinstance(inputs, Tensor):
        return inputs
    inputs = list(inputs)
    if not inputs:
        raise ValueError("add_n: expected at least one tensor, got an empty list")
    out = inputs[0]
    for t in inputs[1:]:
        out = M.add(out, t)
    return out


def increment(x, value=1.0, name=None):
    """x += value, in place (Paddle's increment writes into x); returns x."""
    from . import inplace
    inplace.check_writable(x, "increment")
    return inplace.write(x, M.add(x, value), "increment")


# ---- elementwise ----

def sinh(x, name=None, *, out=None):
    x = _float(x)
    return M.multiply(M.subtract(_ops.exp(x), _ops.exp(_ops.neg(x))), 0.5)


def cosh(x, name=None, *, out=None):
    x = _float(x)
    return M.multiply(M.add(_ops.exp(x), _ops.exp(_ops.neg(x))), 0.5)


def atan2(x, y, name=None):
    """The angle of the point (y, x) from the positive first axis: atan(x / y) in the right quadrant."""
    x, y = _float(x), _float(y)
    x, y = M.broadcast_tensors([x, M.cast(y, x.dtype)])
    return _ops.angle(_ops.complex(y, x))


def atan(x, name=None):
    x = _float(x)
    return atan2(x, _ops.ones_like(x))


def asin(x, name=None):
    x = _float(x)
    return atan2(x, _ops.sqrt(M.subtract(1.0, M.multiply(x, x))))


def acos(x, name=None, *, out=None):
    x = _float(x)
    return atan2(_ops.sqrt(M.subtract(1.0, M.multiply(x, x))), x)


def asinh(x, name=None):
    x = _float(x)
    # sign(x) * log(|x| + sqrt(x^2 + 1)): accurate for large negative x too.
    a = _ops.abs(x)
    return M.multiply(_ops.sign(x), _ops.log(M.add(a, _ops.sqrt(M.add(M.multiply(a, a), 1.0)))))


def acosh(x, name=None, *, out=None):
    x = _float(x)
    return _ops.log(M.add(x, _ops.sqrt(M.subtract(M.multiply(x, x), 1.0))))


def atanh(x, name=None, *, out=None):
    x = _float(x)
    return M.multiply(_ops.log(M.divide(M.add(1.0, x), M.subtract(1.0, x))), 0.5)


def deg2rad(x, name=None):
    return M.multiply(_float(x), np.pi / 180.0)


def rad2deg(x, name=None):
    return M.multiply(_float(x), 180.0 / np.pi)


def sinc(x, name=None):
    """sin(pi x) / (pi x), 1 at 0."""
    x = _float(x)
    zero = M.equal(x, 0.0)
    safe = M.where(zero, _ops.ones_like(x), x)
    px = M.multiply(safe, np.pi)
    return M.where(zero, _ops.ones_like(x), M.divide(_ops.sin(px), px))


def frac(x, name=None, *, out=None):
    return M.subtract(x, M.trunc(x)) if x.dtype.is_floating_point else _ops.zeros_like(x)


def logaddexp(x, y, name=None):
    x, y = _float(x), _float(y)
    m = M.maximum(x, y).detach()
    m = M.where(M.isinf(m), _ops.zeros_like(m), m)
    return M.add(_ops.log(M.add(_ops.exp(M.subtract(x, m)), _ops.exp(M.subtract(y, m)))), m)


def logit(x, eps=None, name=None):
    x = _float(x)
    if eps is not None:
        x = M.clip(x, eps, 1.0 - eps)
    return _ops.log(M.divide(x, M.subtract(1.0, x)))


def stanh(x, scale_a=0.67, scale_b=1.7159, name=None):
    return M.multiply(_ops.tanh(M.multiply(_float(x), scale_a)), scale_b)


def hypot(x, y, name=None):
    x, y = _float(x), _float(y)
    return _ops.sqrt(M.add(M.multiply(x, x), M.multiply(y, y)))


def signbit(x, name=None):
    """True where the sign bit is set (negative numbers and -0.0)."""
    if not x.dtype.is_floating_point:
        return M.less_than(x, 0) if x.dtype != _BOOL else _ops.zeros_like(x)
    neg_zero = M.logical_and(M.equal(x, 0.0), M.less_than(M.divide(1.0, x), 0.0))
    return M.logical_or(M.less_than(x, 0.0), neg_zero)


def copysign(x, y, name=None):
    """|x| with the sign of y (the sign bit: -0.0 counts as negative)."""
    x = _float(x)
    y = _t(y, x)
    neg = signbit(y) if y.dtype.is_floating_point else M.less_than(y, 0)
    a = _ops.abs(x)
    return M.where(neg, _ops.neg(a), a)


def sgn(x, name=None):
    """sign(x); for complex x, x / |x| (0 at 0)."""
    if x.dtype.is_complex:
        r = _ops.abs(x)
        zero = M.equal(r, 0.0)
        r = M.where(zero, _ops.ones_like(r), r)
        return M.where(zero, _ops.zeros_like(x), M.divide(x, _ops.complex(r, _ops.zeros_like(r))))
    return _ops.sign(x)


def heaviside(x, y, name=None):
    """0 where x < 0, y where x == 0, 1 where x > 0."""
    y = _t(y, x)
    zero, one = _ops.zeros_like(y), _ops.ones_like(y)
    return M.where(M.equal(x, 0), y, M.where(M.less_than(x, 0), zero, one))


def ldexp(x, y, name=None):
    """x * 2**y (y integer); integer x computes in the default float dtype."""
    x = _float(x)
    y = _t(y, x)
    if y.dtype.is_floating_point:
        raise TypeError(f"ldexp: the exponent y must be an integer tensor, got {y.dtype.name}")
    return M.multiply(x, _ops.pow(M.full_like(x, 2.0), M.cast(y, x.dtype)))


def frexp(x, name=None):
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1; both x's dtype."""
    x = _float(x)
    a = _ops.abs(x)
    zero = M.equal(a, 0.0)
    safe = M.where(zero, _ops.ones_like(a), a)
    e = M.add(_ops.floor(M.divide(_ops.log(safe), np.log(2.0))), 1.0)
    m = M.divide(x, _ops.pow(M.full_like(x, 2.0), e))
    # log2 rounding can leave |m| at exactly 1 or just under 0.5: one step fixes it.
    big = M.greater_equal(_ops.abs(m), 1.0)
    m, e = M.where(big, M.multiply(m, 0.5), m), M.where(big, M.add(e, 1.0), e)
    small = M.logical_and(M.less_than(_ops.abs(m), 0.5), M.logical_not(zero))
    m, e = M.where(small, M.multiply(m, 2.0), m), M.where(small, M.subtract(e, 1.0), e)
    return m, M.where(zero, _ops.zeros_like(e), e)


def fmax(x, y, name=None):
    """Elementwise maximum where a NaN loses to a number."""
    y = _t(y, x)
    m = M.maximum(x, y)
    if not m.dtype.is_floating_point:
        return m
    return M.where(M.isnan(x), M.cast(y, m.dtype), M.where(M.isnan(y), M.cast(x, m.dtype), m))


def fmin(x, y, name=None):
    y = _t(y, x)
    m = M.minimum(x, y)
    if not m.dtype.is_floating_point:
        return m
    return M.where(M.isnan(x), M.cast(y, m.dtype), M.where(M.isnan(y), M.cast(x, m.dtype), m))


def nextafter(x, y, name=None):
    """The next representable value after x toward y (host numpy; no gradient)."""
    y = _t(y, x)
    return to_tensor(np.nextafter(x.numpy(), y.numpy().astype(to_numpy_dtype(x.dtype))), place=x._device)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, name=None):
    if not x.dtype.is_floating_point:
        return x
    info = np.finfo(to_numpy_dtype(x.dtype))
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = M.where(M.isnan(x), M.full_like(x, nan), x)
    out = M.where(M.logical_and(M.isinf(x), M.greater_than(x, 0.0)), M.full_like(x, posinf), out)
    return M.where(M.logical_and(M.isinf(x), M.less_than(x, 0.0)), M.full_like(x, neginf), out)


def isposinf(x, name=None):
    if not x.dtype.is_floating_point:
        return M.cast(_ops.zeros_like(x), "bool")
    return M.equal(x, float("inf"))


def isneginf(x, name=None):
    if not x.dtype.is_floating_point:
        return M.cast(_ops.zeros_like(x), "bool")
    return M.equal(x, float("-inf"))


def isreal(x, name=None):
    if x.dtype.is_complex:
        return M.equal(_ops.imag(x), 0.0)
    return M.cast(_ops.ones_like(x), "bool")


def lerp(x, y, weight, name=None):
    """x + weight * (y - x)."""
    return M.add(x, M.multiply(weight, M.subtract(y, x)))


def _bessel_series(x, order, terms=40):
    """sum_k (x/2)^(2k+order) / (k! (k+order)!): the modified Bessel function I_order (converges for all x)."""
    half = M.multiply(x, 0.5)
    q = M.multiply(half, half)
    term = M.divide(half, 1.0) if order == 1 else _ops.ones_like(x)
    out = term
    for k in range(1, terms):
        term = M.multiply(term, M.divide(q, float(k * (k + order))))
        out = M.add(out, term)
    return out


def i0(x, name=None):
    """The modified Bessel function of the first kind, order 0."""
    return _bessel_series(_float(x), 0)


def i1(x, name=None):
    return _bessel_series(_float(x), 1)


def i0e(x, name=None):
    x = _float(x)
    return M.multiply(i0(x), _ops.exp(_ops.neg(_ops.abs(x))))


def i1e(x, name=None):
    x = _float(x)
    return M.multiply(i1(x), _ops.exp(_ops.neg(_ops.abs(x))))


def round(x, decimals=0, name=None):  # noqa: A001 - paddle.round
    """Rounds half to even (as numpy and Paddle do), at `decimals` places."""
    if not x.dtype.is_floating_point:
        return x
    if decimals:
        scale = 10.0 ** int(decimals)
        return M.divide(round(M.multiply(x, scale)), scale)
    f = _ops.floor(x)
    d = M.subtract(x, f)
    half_odd = M.logical_and(M.equal(d, 0.5), M.not_equal(M.remainder(f, 2.0), 0.0))
    up = M.logical_or(M.greater_than(d, 0.5), half_odd)
    return M.add(f, M.cast(up, x.dtype))


# ---- integers (host numpy: no gradient) ----

def _host_int_binary(op, fn, x, y):
    if not isinstance(x, Tensor):
        x = to_tensor(x, dtype=y.dtype if isinstance(y, Tensor) else None)
    y = _t(y, x)
    for v in (x, y):
        if v.dtype.is_floating_point or v.dtype.is_complex:
            raise TypeError(f"{op}: expected integer or bool tensors, got {v.dtype.name}")
    a, b = x.numpy(), y.numpy()
    return to_tensor(np.asarray(fn(a, b)), place=x._device)


def bitwise_and(x, y, out=None, name=None):
    return _host_int_binary("bitwise_and", np.bitwise_and, x, y)


def bitwise_or(x, y, out=None, name=None):
    return _host_int_binary("bitwise_or", np.bitwise_or, x, y)


def bitwise_xor(x, y, out=None, name=None):
    return _host_int_binary("bitwise_xor", np.bitwise_xor, x, y)


def bitwise_not(x, out=None, name=None):
    if x.dtype.is_floating_point or x.dtype.is_complex:
        raise TypeError(f"bitwise_not: expected an integer or bool tensor, got {x.dtype.name}")
    return to_tensor(np.invert(x.numpy()), place=x._device)


bitwise_invert = bitwise_not


def bitwise_left_shift(x, y, is_arithmetic=True, out=None, name=None):
    return _host_int_binary("bitwise_left_shift", np.left_shift, x, y)


def bitwise_right_shift(x, y, is_arithmetic=True, out=None, name=None):
    if is_arithmetic:
        return _host_int_binary("bitwise_right_shift", np.right_shift, x, y)

    def logical(a, b):
        u = a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a
        return np.right_shift(u, b.astype(u.dtype)).view(a.dtype)
    return _host_int_binary("bitwise_right_shift", logical, x, y)


def gcd(x, y, name=None):
    return _host_int_binary("gcd", np.gcd, x, y)


def lcm(x, y, name=None):
    return _host_int_binary("lcm", np.lcm, x, y)


def isin(x, test_x, assume_unique=False, invert=False, name=None):
    test = test_x.numpy() if isinstance(test_x, Tensor) else np.asarray(test_x)
    return to_tensor(np.isin(x.numpy(), test, assume_unique=assume_unique, invert=invert), place=x._device)


def bincount(x, weights=None, minlength=0, name=None):
    """Counts of each value of the 1-D non-negative integer tensor x (weighted sums with weights)."""
    if x.dtype.is_floating_point or len(x.shape) != 1:
        raise ValueError(f"bincount: x must be a 1-D integer tensor, got shape {list(x.shape)} of {x.dtype.name}")
    v = x.numpy()
    if v.size and v.min() < 0:
        raise ValueError(f"bincount: x must be non-negative, found {int(v.min())}")
    if weights is None:
        return to_tensor(np.bincount(v, minlength=minlength).astype(np.int64), place=x._device)
    w = weights.numpy()
    return to_tensor(np.bincount(v, w, minlength=minlength).astype(w.dtype if w.dtype.kind == "f" else np.int64),
                     place=x._device)


def _hist_range(v, lo, hi):
    lo, hi = float(lo), float(hi)
    if lo == 0.0 and hi == 0.0 and v.size:
        lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    if lo > hi:
        raise ValueError(f"histogram: min {lo} must not exceed max {hi}")
    return lo, hi


def histogram(input, bins=100, min=0.0, max=0.0, weight=None, density=False, name=None):  # noqa: A002
    """Counts of input in `bins` equal bins over [min, max] (min = max = 0: the data's range);
    int64 counts, or float with weight or density."""
    v = input.numpy().reshape(-1)
    lo, hi = _hist_range(v, min, max)
    w = None if weight is None else weight.numpy().reshape(-1)
    counts, _ = np.histogram(v, bins=int(bins), range=(lo, hi), weights=w, density=density)
    if density or w is not None:
        counts = counts.astype(to_numpy_dtype(input.dtype) if input.dtype.is_floating_point else np.float32)
    else:
        counts = counts.astype(np.int64)
    return to_tensor(counts, place=input._device)


def histogram_bin_edges(input, bins=100, min=0.0, max=0.0, name=None):  # noqa: A002
    v = input.numpy().reshape(-1)
    lo, hi = _hist_range(v, min, max)
    dt = to_numpy_dtype(input.dtype) if input.dtype.is_floating_point else np.float32
    return to_tensor(np.linspace(lo, hi, int(bins) + 1).astype(dt), place=input._device)


def histogramdd(x, bins=10, ranges=None, density=False, weights=None, name=None):
    """The D-dimensional histogram of the points x[..., D]: (counts, [edges per dimension])."""
    pts = x.numpy().reshape(-1, x.shape[-1])
    d = pts.shape[1]
    if isinstance(bins, Tensor):
        bins = bins.numpy().tolist()
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        bins = [b.numpy() for b in bins]
    rng = None if ranges is None else [(float(ranges[2 * i]), float(ranges[2 * i + 1])) for i in range(d)]
    w = None if weights is None else weights.numpy().reshape(-1)
    hist, edges = np.histogramdd(pts, bins=bins, range=rng, density=density, weights=w)
    dt = to_numpy_dtype(x.dtype)
    return (to_tensor(hist.astype(dt), place=x._device), [to_tensor(e.astype(dt), place=x._device) for e in edges])


# ---- reductions ----

def nansum(x, axis=None, dtype=None, keepdim=False, name=None):
    return M.sum(M.where(M.isnan(x), _ops.zeros_like(x), x), axis, dtype, keepdim)


def nanmean(x, axis=None, keepdim=False, name=None):
    ok = M.logical_not(M.isnan(x))
    total = M.sum(M.where(ok, x, _ops.zeros_like(x)), axis, keepdim=keepdim)
    return M.divide(total, M.cast(M.sum(ok, axis, keepdim=keepdim), x.dtype))


def count_nonzero(x, axis=None, keepdim=False, name=None):
    return M.sum(M.cast(M.not_equal(x, 0), "int64"), axis, keepdim=keepdim)


def trace(x, offset=0, axis1=0, axis2=1, name=None):
    return M.sum(M.diagonal(x, offset, axis1, axis2), -1)


def _moved(x, axis):
    """x with `axis` moved last, and a function putting the last axis back."""
    nd = len(x.shape)
    if axis == nd - 1:
        return x, lambda t: t
    return M.moveaxis(x, axis, -1), lambda t: M.moveaxis(t, -1, axis)


def _flat_axis(x, axis):
    if axis is None:
        return M.reshape(x, [-1]), 0
    return x, _axis(axis, len(x.shape))


def cumprod(x, dim=None, *, dtype=None, out=None, name=None):
    """Products along dim (a running product of slices: differentiable, zeros included)."""
    if dtype is not None:
        x = M.cast(x, dtype)
    x, dim = _flat_axis(x, dim)
    if len(x.shape) == 0:
        return x
    parts = M.split(x, x.shape[dim], dim) if x.shape[dim] else []
    acc, outs = None, []
    for p in parts:
        acc = p if acc is None else M.multiply(acc, p)
        outs.append(acc)
    return M.concat(outs, dim) if outs else x


def logcumsumexp(x, axis=None, dtype=None, name=None):
    if dtype is not None:
        x = M.cast(x, dtype)
    x = _float(x)
    x, axis = _flat_axis(x, axis)
    m = M.max(x, axis, keepdim=True).detach()
    m = M.where(M.isinf(m), _ops.zeros_like(m), m)
    return M.add(_ops.log(M.cumsum(_ops.exp(M.subtract(x, m)), axis)), m)


def _cum_extreme(op, x, axis, dtype, better):
    x, axis = _flat_axis(x, axis)
    if len(x.shape) == 0:
        return x, M.cast(_ops.zeros_like(x), dtype)
    a = np.moveaxis(x.numpy(), axis, -1)
    n = a.shape[-1]
    idx = np.zeros(a.shape, dtype=np.int64)
    best = a[..., 0].copy() if n else a[..., :0]
    for i in range(1, n):
        v = a[..., i]
        # The last of equal values wins (Paddle); NaN once seen stays.
        take = better(v, best) | (v == best) | np.isnan(v) if a.dtype.kind == "f" else better(v, best) | (v == best)
        if a.dtype.kind == "f":
            take &= ~np.isnan(best) | np.isnan(v)
        best = np.where(take, v, best)
        idx[..., i] = np.where(take, i, idx[..., i - 1])
    indices = to_tensor(np.moveaxis(idx, -1, axis), place=x._device)
    return M.take_along_axis(x, indices, axis), M.cast(indices, dtype)


def cummax(x, axis=None, dtype="int64", name=None):
    """(running maximum, index of it) along axis."""
    return _cum_extreme("cummax", x, axis, dtype, np.greater)


def cummin(x, axis=None, dtype="int64", name=None):
    return _cum_extreme("cummin", x, axis, dtype, np.less)


def diff(x, n=1, axis=-1, prepend=None, append=None, name=None, *, out=None):
    axis = _axis(axis, len(x.shape))
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = M.concat([_t(p, x) for p in parts], axis)
    for _ in range(int(n)):
        size = x.shape[axis]
        hi = M.slice(x, [axis], [1], [size])
        lo = M.slice(x, [axis], [0], [builtins.max(size - 1, 0)])
        x = M.logical_xor(hi, lo) if x.dtype == _BOOL else M.subtract(hi, lo)
    return x


def _trapezoid_parts(y, x, dx, axis):
    if x is not None and dx is not None:
        raise ValueError("trapezoid: give x or dx, not both")
    y = _float(y)
    axis = _axis(axis, len(y.shape))
    n = y.shape[axis]
    left = M.slice(y, [axis], [0], [n - 1])
    right = M.slice(y, [axis], [1], [n])
    avg = M.multiply(M.add(left, right), 0.5)
    if x is None:
        return M.multiply(avg, 1.0 if dx is None else float(dx)), axis
    x = M.cast(_t(x), y.dtype)
    d = diff(x, axis=-1 if len(x.shape) == 1 else axis)
    if len(x.shape) == 1:
        shape = [1] * len(y.shape)
        shape[axis] = n - 1
        d = M.reshape(d, shape)
    return M.multiply(avg, d), axis


def trapezoid(y, x=None, dx=None, axis=-1, name=None):
    """The trapezoidal rule along axis, with sample points x or spacing dx (default 1)."""
    parts, axis = _trapezoid_parts(y, x, dx, axis)
    return M.sum(parts, axis)


def cumulative_trapezoid(y, x=None, dx=None, axis=-1, name=None):
    parts, axis = _trapezoid_parts(y, x, dx, axis)
    return M.cumsum(parts, axis)


# ---- products ----

def addmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    """beta * input + alpha * (x @ y)."""
    return M.add(M.multiply(input, beta), M.multiply(M.matmul(x, y), alpha))


def baddbmm(input, x, y, beta=1.0, alpha=1.0, name=None):  # noqa: A002
    return M.add(M.multiply(input, beta), M.multiply(M.matmul(x, y), alpha))


def mv(x, vec, name=None):
    return M.matmul(x, vec)


def ger(x, y, name=None, *, out=None):
    return M.outer(x, y)


def inner(x, y, name=None):
    """Sums of products over the last axes: x[..., k] * y[..., k]."""
    if len(x.shape) == 0 or len(y.shape) == 0:
        return M.multiply(x, y)
    return M.matmul(x, y, transpose_y=True) if len(y.shape) == 2 else M.matmul(x, M.moveaxis(y, -1, 0))


def vecdot(x, y, axis=-1, name=None):
    return M.sum(M.multiply(x.conj() if x.dtype.is_complex else x, y), axis)


def kron(x, y, name=None):
    """The Kronecker product: blocks x[i, j] * y."""
    nd = builtins.max(len(x.shape), len(y.shape))
    xs = [1] * (nd - len(x.shape)) + list(x.shape)
    ys = [1] * (nd - len(y.shape)) + list(y.shape)
    xr = M.reshape(x, [d for s in xs for d in (s, 1)])
    yr = M.reshape(y, [d for s in ys for d in (1, s)])
    return M.reshape(M.multiply(xr, yr), [a * b for a, b in zip(xs, ys)])


def cross(x, y, axis=9, name=None):
    """The cross product of 3-vectors along axis (default: the first axis of size 3)."""
    if axis == 9:
        axis = next((i for i, s in enumerate(x.shape) if s == 3), None)
        if axis is None:
            raise ValueError(f"cross: no axis of size 3 in shape {list(x.shape)}")
    axis = _axis(axis, len(x.shape))
    if x.shape[axis] != 3 or y.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have size 3, got {x.shape[axis]} and {y.shape[axis]}")
    a = M.split(x, 3, axis)
    b = M.split(y, 3, axis)
    return M.concat([M.subtract(M.multiply(a[1], b[2]), M.multiply(a[2], b[1])),
                     M.subtract(M.multiply(a[2], b[0]), M.multiply(a[0], b[2])),
                     M.subtract(M.multiply(a[0], b[1]), M.multiply(a[1], b[0]))], axis)


def tensordot(x, y, axes=2, name=None):
    if isinstance(axes, Tensor):
        axes = axes.numpy().tolist()
    if isinstance(axes, numbers.Integral):
        ax = list(range(len(x.shape) - axes, len(x.shape))), list(range(axes))
    else:
        axes = list(axes)
        if builtins.all(isinstance(a, numbers.Integral) for a in axes):
            axes = [axes, axes]  # a flat list: the same axes of x and y
        elif len(axes) == 1:
            axes = [axes[0], axes[0]]
        ax = [[a] if isinstance(a, numbers.Integral) else list(a) for a in axes[:2]]
        n = builtins.max(len(ax[0]), len(ax[1]))
        ax = [a + b[len(a):n] for a, b in ((ax[0], ax[1]), (ax[1], ax[0]))]
    ax_x = [a % len(x.shape) for a in ax[0]]
    ax_y = [a % len(y.shape) for a in ax[1]]
    free_x = [i for i in range(len(x.shape)) if i not in ax_x]
    free_y = [i for i in range(len(y.shape)) if i not in ax_y]
    k = int(np.prod([x.shape[i] for i in ax_x]))
    xm = M.reshape(M.transpose(x, free_x + ax_x), [-1, k])
    ym = M.reshape(M.transpose(y, ax_y + free_y), [k, -1])
    return M.reshape(M.matmul(xm, ym), [x.shape[i] for i in free_x] + [y.shape[i] for i in free_y])


def dist(x, y, p=2, name=None):
    """The p-norm of x - y (p = inf: max |.|, p = 0: the count of nonzeros)."""
    d = _ops.abs(M.subtract(x, y))
    p = float(p)
    if p == 0:
        return M.cast(M.sum(M.cast(M.not_equal(d, 0.0), d.dtype)), d.dtype)
    if p == float("inf"):
        return M.max(d)
    if p == float("-inf"):
        return M.min(d)
    return _ops.pow_scalar(M.sum(_ops.pow_scalar(d, p)), 1.0 / p)


def cdist(x, y, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """p-norm distances between the rows of x [..., P, M] and y [..., R, M]: [..., P, R]."""
    d = _ops.abs(M.subtract(M.unsqueeze(x, -2), M.unsqueeze(y, -3)))
    p = float(p)
    if p == 0:
        return M.sum(M.cast(M.not_equal(d, 0.0), d.dtype), -1)
    if p == float("inf"):
        return M.max(d, -1)
    if p == 2.0:
        s = M.sum(M.multiply(d, d), -1)
        zero = M.equal(s, 0.0)
        return M.where(zero, _ops.zeros_like(s), _ops.sqrt(M.where(zero, _ops.ones_like(s), s)))
    return _ops.pow_scalar(M.sum(_ops.pow_scalar(d, p), -1), 1.0 / p)


def renorm(x, p, axis, max_norm):
    """Each slice along axis rescaled to p-norm at most max_norm."""
    axis = _axis(axis, len(x.shape))
    others = [i for i in range(len(x.shape)) if i != axis]
    norms = _ops.pow_scalar(M.sum(_ops.pow_scalar(_ops.abs(x), float(p)), others, keepdim=True), 1.0 / float(p))
    scale = M.where(M.greater_than(norms, max_norm), M.divide(max_norm, M.add(norms, 1e-7)),
                    _ops.ones_like(norms))
    return M.multiply(x, scale)


def einsum(equation, *operands):
    """Einstein summation over operands, by broadcasting products and sums (no '...')."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    if "..." in eq:
        eq = _expand_ellipsis(eq, operands)
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: the equation '{equation}' names {len(terms)} operands, {len(operands)} given")
    if not _:
        counts = {}
        for c in lhs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        rhs = "".join(sorted(c for c, k in counts.items() if k == 1))
    if len(operands) == 2 and all(len(set(t)) == len(t) for t in terms) and not set(rhs) - set(lhs):
        return _einsum_pair(terms[0], terms[1], rhs, operands[0], operands[1])
    letters = []
    for c in lhs.replace(",", "") + rhs:
        if c not in letters:
            letters.append(c)
    sizes = {}
    prepared = []
    for term, op in zip(terms, operands):
        if len(term) != len(op.shape):
            raise ValueError(f"einsum: term '{term}' has {len(term)} letters but the operand has rank {len(op.shape)}")
        t = op
        # A repeated letter in one term takes the diagonal.
        while len(set(term)) != len(term):
            c = next(ch for ch in term if term.count(ch) > 1)
            i, j = term.index(c), term.index(c, term.index(c) + 1)
            t = M.diagonal(t, 0, i, j)
            term = "".join(ch for k, ch in enumerate(term) if k not in (i, j)) + c
        for c, s in zip(term, t.shape):
            sizes[c] = builtins.max(sizes.get(c, 1), s)
        perm = sorted(range(len(term)), key=lambda k: letters.index(term[k]))
        t = M.transpose(t, perm) if perm != list(range(len(term))) else t
        present = sorted(term, key=letters.index)
        shape = [t.shape[present.index(c)] if c in present else 1 for c in letters]
        prepared.append(M.reshape(t, shape))
    out = prepared[0]
    for t in prepared[1:]:
        out = M.multiply(out, t)
    summed = [i for i, c in enumerate(letters) if c not in rhs]
    if summed:
        out = M.sum(out, summed)
    kept = [c for c in letters if c in rhs]
    out = M.broadcast_to(out, [sizes[c] for c in kept]) if kept else out
    perm = [kept.index(c) for c in rhs]
    return M.transpose(out, perm) if perm != list(range(len(perm))) else out


def _expand_ellipsis(eq, operands):
    """The equation with each '...' spelled out in letters it does not use (aligned from the right,
    as broadcasting is), and an explicit output (implicit: the ellipsis letters first)."""
    import string
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    free = [c for c in string.ascii_letters if c not in eq]
    counts = [len(op.shape) - (len(t) - 3) for t, op in zip(terms, operands) if "..." in t]
    n = builtins.max(counts) if counts else 0
    if n > len(free) or builtins.min(counts, default=0) < 0:
        raise ValueError(f"einsum: the ellipsis in '{eq}' does not fit the operands' ranks")
    ell = "".join(free[:n])
    terms = [t.replace("...", ell[n - (len(op.shape) - (len(t) - 3)):]) if "..." in t else t
             for t, op in zip(terms, operands)]
    if arrow:
        rhs = rhs.replace("...", ell)
    else:
        once = [c for c in sorted(set("".join(terms))) if "".join(terms).count(c) == 1 and c not in ell]
        rhs = ell + "".join(once)
    return ",".join(terms) + "->" + rhs


def _einsum_pair(tx, ty, out, x, y):
    """Two-operand einsum as one batched matmul: [batch, left, k] @ [batch, k, right]."""
    for term, t in ((tx, x), (ty, y)):
        if len(term) != len(t.shape):
            raise ValueError(f"einsum: term '{term}' has {len(term)} letters but the operand has rank {len(t.shape)}")
    # A letter in one operand only and not in the output is summed away first.
    for side in (0, 1):
        term, other = (tx, ty) if side == 0 else (ty, tx)
        gone = [i for i, c in enumerate(term) if c not in other and c not in out]
        if gone:
            t = M.sum(x if side == 0 else y, gone)
            term = "".join(c for i, c in enumerate(term) if i not in gone)
            if side == 0:
                x, tx = t, term
            else:
                y, ty = t, term
    batch = [c for c in tx if c in ty and c in out]
    contract = [c for c in tx if c in ty and c not in out]
    left = [c for c in tx if c not in ty]
    right = [c for c in ty if c not in tx]
    size = {c: s for term, t in ((tx, x), (ty, y)) for c, s in zip(term, t.shape)}
    for c in batch + contract:
        if x.shape[tx.index(c)] != y.shape[ty.index(c)] and 1 not in (x.shape[tx.index(c)], y.shape[ty.index(c)]):
            raise ValueError(f"einsum: letter '{c}' has size {x.shape[tx.index(c)]} in one operand and "
                             f"{y.shape[ty.index(c)]} in the other")
        size[c] = builtins.max(x.shape[tx.index(c)], y.shape[ty.index(c)])

    def arrange(t, term, groups):
        order = [term.index(c) for g in groups for c in g]
        t = M.transpose(t, order) if order != list(range(len(order))) else t
        t = M.broadcast_to(t, [size[c] for g in groups for c in g])
        return M.reshape(t, [int(np.prod([size[c] for c in g])) for g in groups])
    xm = arrange(x, tx, [batch, left, contract])
    ym = arrange(y, ty, [batch, contract, right])
    res = M.reshape(M.matmul(xm, ym), [size[c] for c in batch + left + right])
    have = batch + left + right
    perm = [have.index(c) for c in out]
    return M.transpose(res, perm) if perm != list(range(len(perm))) else res


# ---- special functions (computed in float64, returned in x's float dtype) ----

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _f64(x):
    x = _float(x)
    return x.dtype, M.cast(x, "float64")


def _lgamma64(z):
    """log|Gamma(z)| for z >= 0.5 by Lanczos' series (g = 7)."""
    z = M.subtract(z, 1.0)
    a = _ops.full_like(z, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], 1):
        a = M.add(a, M.divide(c, M.add(z, float(k))))
    t = M.add(z, 7.5)
    return M.add(M.subtract(M.add(M.multiply(M.add(z, 0.5), _ops.log(t)), 0.5 * np.log(2 * np.pi)), t), _ops.log(a))


def lgamma(x, name=None):
    """log|Gamma(x)| (Lanczos; reflection below 0.5)."""
    dtype, x = _f64(x)
    small = M.less_than(x, 0.5)
    big = _lgamma64(M.where(small, M.subtract(1.0, x), x))
    s = _ops.abs(_ops.sin(M.multiply(x, np.pi)))
    reflected = M.subtract(_ops.log(M.divide(np.pi, M.where(small, s, _ops.ones_like(s)))), big)
    return M.cast(M.where(small, reflected, big), dtype)


gammaln = lgamma


def _digamma64(x):
    """psi(x) for x >= 0.5: six recurrence steps up, then the asymptotic series."""
    shift = _ops.zeros_like(x)
    for k in range(6):
        shift = M.add(shift, M.divide(1.0, M.add(x, float(k))))
    z = M.add(x, 6.0)
    inv2 = M.divide(1.0, M.multiply(z, z))
    series = M.multiply(inv2, M.add(-1.0 / 12, M.multiply(inv2, M.add(1.0 / 120, M.multiply(
        inv2, M.add(-1.0 / 252, M.multiply(inv2, M.add(1.0 / 240, M.multiply(inv2, -1.0 / 132)))))))))
    return M.subtract(M.add(M.subtract(_ops.log(z), M.divide(0.5, z)), series), shift)


def digamma(x, name=None):
    """The logarithmic derivative of Gamma (reflection below 0.5)."""
    dtype, x = _f64(x)
    small = M.less_than(x, 0.5)
    big = _digamma64(M.where(small, M.subtract(1.0, x), x))
    px = M.multiply(x, np.pi)
    reflected = M.subtract(big, M.divide(np.pi, M.divide(_ops.sin(px), _ops.cos(px))))
    return M.cast(M.where(small, reflected, big), dtype)


def erfinv(x, name=None):
    """The inverse of erf on (-1, 1): Giles' approximation, then two Newton steps on erf."""
    dtype, x = _f64(x)
    w = _ops.neg(_ops.log(M.multiply(M.subtract(1.0, x), M.add(1.0, x))))
    lo = M.subtract(w, 2.5)
    p_lo = _ops.full_like(x, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        p_lo = M.add(M.multiply(p_lo, lo), c)
    hi = M.subtract(_ops.sqrt(M.maximum(w, 5.0)), 3.0)
    p_hi = _ops.full_like(x, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        p_hi = M.add(M.multiply(p_hi, hi), c)
    y = M.multiply(M.where(M.less_than(w, 5.0), p_lo, p_hi), x)
    for _ in range(2):
        y = M.subtract(y, M.divide(M.subtract(_ops.erf(y), x), M.multiply(_ops.exp(_ops.neg(M.multiply(y, y))),
                                                                            2.0 / np.sqrt(np.pi))))
    edge = M.equal(_ops.abs(x), 1.0)
    y = M.where(edge, M.multiply(_ops.sign(x), float("inf")), y)
    return M.cast(y, dtype)


def polygamma(x, n, name=None):
    """The n-th derivative of digamma (n = 0: digamma; n >= 1 by the series sum_k n! / (x + k)^(n+1))."""
    if int(n) == 0:
        return digamma(x)
    n = int(n)
    if n < 0:
        raise ValueError(f"polygamma: n must be non-negative, got {n}")
    dtype, x = _f64(x)
    # psi^(n)(x) = (-1)^(n+1) n! [sum_{k<K} (x+k)^-(n+1) + tail at x+K by its asymptotic series]
    total = _ops.zeros_like(x)
    k_terms = 12
    for k in range(k_terms):
        total = M.add(total, _ops.pow_scalar(M.add(x, float(k)), -float(n + 1)))
    z = M.add(x, float(k_terms))
    fact = float(_pymath.factorial(n - 1))
    tail = M.add(M.divide(fact, _ops.pow_scalar(z, float(n))),
                 M.divide(fact * n / 2.0, _ops.pow_scalar(z, float(n + 1))))
    tail = M.add(tail, M.divide(fact * n * (n + 1) / 12.0, _ops.pow_scalar(z, float(n + 2))))
    tail = M.subtract(tail, M.divide(fact * n * (n + 1) * (n + 2) * (n + 3) / 720.0, _ops.pow_scalar(z, float(n + 4))))
    out = M.multiply(M.add(M.multiply(total, float(_pymath.factorial(n))), tail), (-1.0) ** (n + 1))
    return M.cast(out, dtype)


def multigammaln(x, p, name=None):
    """log of the multivariate gamma function of dimension p."""
    out = M.multiply(_ops.ones_like(_float(x)), p * (p - 1) / 4.0 * np.log(np.pi))
    for j in range(int(p)):
        out = M.add(out, lgamma(M.subtract(_float(x), j / 2.0)))
    return out


def reduce_as(x, target, name=None):
    """x summed over the axes it was broadcast along to target's shape."""
    return _ops.sum_to_like(x, target)


def pdist(x, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary", name=None):
    """The distances between each pair of rows of x [N, M]: the upper triangle of cdist, row by row."""
    n = x.shape[0]
    r, c = np.triu_indices(n, 1)
    d = cdist(x, x, p)
    return _ops.gather(M.reshape(d, [-1]), to_tensor((r * n + c).astype(np.int64), place=x._device), 0)


def _write_out(result, out):
    """Paddle's `out=` argument: the result's values written into out (a tensor, or a tuple for a
    tuple result); returns out, or the result when out is None."""
    if out is None:
        return result
    if isinstance(result, (list, tuple)):
        for r, o in zip(result, out):
            _write_out(r, o)
        return out
    if list(out.shape) != list(result.shape):
        raise ValueError(f"out: the result has shape {list(result.shape)} but out has shape {list(out.shape)}")
    out._set_data_(M.cast(result, out.dtype).detach())
    return out


def _with_out_argument(namespace, names):
    """Wraps the functions `names` of namespace that take Paddle's keyword `out` so that it is honoured."""
    import functools
    import inspect
    for n in names:
        fn = namespace[n]
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "out" not in params or params["out"].kind != inspect.Parameter.KEYWORD_ONLY:
            continue

        def make(f):
            @functools.wraps(f)
            def wrapper(*args, out=None, **kwargs):
                return _write_out(f(*args, **kwargs), out)
            return wrapper
        namespace[n] = make(fn)


_IMPORTED = {"to_tensor", "convert_dtype", "default_float_dtype", "int64", "to_numpy_dtype", "Tensor"}
__all__ = [n for n, v in list(globals().items()) if not n.startswith("_") and callable(v) and n not in _IMPORTED
           and not isinstance(v, type)]
_with_out_argument(globals(), __all__)
