"""Tensor creation (paddle.to_tensor, zeros, ones, full, arange, rand, ...)."""
import builtins
import numbers

import numpy as np

from . import _C
from .framework import (Place, Tensor, convert_dtype, default_complex_dtype, default_float_dtype, device_str,
                        float32, int64, to_numpy_dtype)

_ops = _C.ops


def _shape(shape):
    if isinstance(shape, Tensor):
        return [int(v) for v in shape.numpy().reshape(-1)]
    if isinstance(shape, numbers.Integral):
        return [int(shape)]
    return [int(s.item()) if isinstance(s, Tensor) else int(s) for s in shape]


def to_tensor(data, dtype=None, place=None, stop_gradient=True):
    """A new tensor from a Tensor, numpy array, list or scalar (paddle.to_tensor).

    Python floats become the default float dtype (float32), Python ints int64,
    numpy arrays keep their dtype."""
    dtype = convert_dtype(dtype)
    device = device_str(place)
    if isinstance(data, Tensor):
        t = data.detach()
        if device is not None and t._device != Place(device)._device:
            t = t._to(device)
        t = _ops.cast(t, dtype) if dtype is not None and dtype != t.dtype else t
        t = clone_data(t)
    else:
        from_python = not isinstance(data, (np.ndarray, np.generic))
        if isinstance(data, (list, tuple)) and any(isinstance(v, Tensor) for v in _flat(data)):
            data = [v.numpy() if isinstance(v, Tensor) else v for v in data]
        arr = _python_ints_in_range(data, dtype) if from_python else np.asarray(data)
        if arr.dtype == np.float64 and from_python:
            arr = arr.astype(np.float32) if dtype is None and default_float_dtype() == float32 else arr
            if dtype is None and default_float_dtype() != float32:
                dtype = default_float_dtype()
        elif arr.dtype.kind in "iu" and from_python and arr.dtype != np.int64:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind == "c" and from_python and dtype is None:
            # Python complex numbers: complex64, or complex128 when the default float is float64 (Paddle).
            dtype = default_complex_dtype()
        elif arr.dtype.kind in "USOV":
            raise TypeError(f"to_tensor: cannot make a tensor from data of numpy dtype {arr.dtype}")
        t = _C.from_numpy(arr, dtype, device)
    t.stop_gradient = stop_gradient
    return t


def _python_ints_in_range(data, dtype):
    """np.asarray(data), refusing Python integers that the target dtype
    (default int64) cannot hold with OverflowError, as numpy does for
    np.array([2**40], dtype=np.int32); they used to wrap (2**40 became 0)."""
    try:
        arr = np.asarray(data)
    except OverflowError:
        arr = np.asarray(data, dtype=object)
    ints = arr.dtype.kind in "iu" or (arr.dtype.kind == "O" and arr.size > 0 and
                                      all(isinstance(v, numbers.Integral) for v in arr.flat))
    if not ints or arr.size == 0:
        return arr
    target = np.dtype(np.int64) if dtype is None else np.dtype(to_numpy_dtype(dtype))
    if target.kind in "iu":
        info = np.iinfo(target)
        for v in (int(arr.min()), int(arr.max())):
            if not info.min <= v <= info.max:
                raise OverflowError(f"to_tensor: Python integer {v} is out of bounds for {target.name}")
    return arr.astype(target if target.kind in "iu" else np.float64) if arr.dtype.kind == "O" else arr


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def clone_data(t):
    """A tensor with its own storage and the same values (no autograd)."""
    if t.dtype == convert_dtype("bool"):
        return _ops.logical_or(t, t)
    if t.dtype.is_complex:
        return _ops.call("copy", [t], {})[0]
    return _ops.add_scalar(t, 0.0)


def _fill_dtype(value, dtype):
    if dtype is not None:
        return convert_dtype(dtype)
    if isinstance(value, builtins.bool):
        return convert_dtype("bool")
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex_dtype()
    return default_float_dtype()


def full(shape, fill_value, dtype=None, name=None):
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = _fill_dtype(fill_value, dtype)
    if isinstance(fill_value, (numbers.Integral, np.integer)) and not isinstance(fill_value, (builtins.bool, np.bool_)) \
            and np.dtype(to_numpy_dtype(dtype)).kind in "iu":
        # Exactly, in integers: a double holds integers only up to 2**53.
        value = _python_ints_in_range(int(fill_value), dtype)
        return to_tensor(np.full(_shape(shape), value, dtype=value.dtype), dtype=dtype)
    if isinstance(fill_value, (complex, np.complexfloating)):
        return _ops.full(_shape(shape), complex(fill_value), dtype)
    return _ops.full(_shape(shape), float(fill_value), dtype)


def zeros(shape, dtype=None, name=None):
    return _ops.full(_shape(shape), 0.0, convert_dtype(dtype) or default_float_dtype())


def ones(shape, dtype=None, name=None):
    return _ops.full(_shape(shape), 1.0, convert_dtype(dtype) or default_float_dtype())


def empty(shape, dtype=None, name=None):
    return zeros(shape, dtype)


def _like(x, value, dtype):
    dtype = convert_dtype(dtype)
    if isinstance(value, (complex, np.complexfloating)) or x.dtype.is_complex:
        return _ops.full_like(x, complex(value), dtype if dtype is not None else x.dtype)
    out = _ops.full_like(x, float(value))
    return _ops.cast(out, dtype) if dtype is not None and dtype != out.dtype else out


def full_like(x, fill_value, dtype=None, name=None):
    return _like(x, fill_value, dtype)


def zeros_like(x, dtype=None, name=None):
    return _like(x, 0.0, dtype)


def ones_like(x, dtype=None, name=None):
    return _like(x, 1.0, dtype)


def empty_like(x, dtype=None, name=None):
    return _like(x, 0.0, dtype)


def arange(start=0, end=None, step=1, dtype=None, name=None):
    """[start, end) by step; int64 for integer arguments, else the default float dtype."""
    if end is None:
        start, end = 0, start
    size_of = getattr(end, "_size_of", None)
    if size_of is not None and isinstance(start, numbers.Integral) and isinstance(step, numbers.Integral):
        # arange(x.shape[d]) in converted code where that size is decided when the program runs
        # (jit_dy2static's Shape): the op positions, scaled and shifted
        pos = _ops.positions(size_of[0], size_of[1])
        if (start, step) != (0, 1):
            pos = _ops.add(_ops.multiply(pos, _ops.scalar_like(pos, float(step))), _ops.scalar_like(pos, float(start)))
        return pos if dtype is None else _ops.cast(pos, convert_dtype(dtype))
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    integral = all(isinstance(v, (numbers.Integral, np.integer)) for v in vals)
    if dtype is None:
        dtype = int64 if integral else default_float_dtype()
    dtype = convert_dtype(dtype)
    if integral and np.dtype(to_numpy_dtype(dtype)).kind in "iu":
        # In integers (numpy's arange), not through doubles that hold
        # integers only up to 2**53; every value must fit the dtype.
        start, end, step = (int(v) for v in vals)
        if step == 0:
            raise ValueError("arange: step is 0")
        n = max(0, (end - start + step - (1 if step > 0 else -1)) // step)
        target = np.dtype(to_numpy_dtype(dtype))
        if n:
            _python_ints_in_range([start, start + (n - 1) * step], dtype)  # OverflowError naming the value
        step = step if n > 1 else 0  # one value: the step may exceed int64
        # start + i * step wraps in int64 only where the exact value fits anyway.
        with np.errstate(over="ignore"):
            values = np.int64(start) + np.int64(step) * np.arange(n, dtype=np.int64) if n else np.zeros(0, np.int64)
        return to_tensor(values.astype(target), dtype=dtype)
    return _ops.arange(float(vals[0]), float(vals[1]), float(vals[2]), dtype)


def linspace(start, stop, num, dtype=None, name=None, *, out=None, device=None, requires_grad=False):
    dtype = convert_dtype(dtype) or default_float_dtype()
    num = int(num)
    if num == 1:
        return _ops.full([1], float(start), dtype)
    idx = _ops.arange(0.0, float(num), 1.0, convert_dtype("float64"))
    step = (float(stop) - float(start)) / (num - 1)
    return _ops.cast(_ops.add_scalar(_ops.multiply_scalar(idx, step), float(start)), dtype)


def eye(num_rows, num_columns=None, dtype=None, name=None):
    num_columns = num_rows if num_columns is None else num_columns
    dtype = convert_dtype(dtype) or default_float_dtype()
    if int(num_rows) * int(num_columns) <= 1024:  # a small constant, known in a trace too (a mask to index with)
        return to_tensor(np.eye(int(num_rows), int(num_columns), dtype=to_numpy_dtype(dtype)))
    rows = _ops.reshape(_ops.arange(0.0, float(num_rows), 1.0, int64), [-1, 1])
    cols = _ops.arange(0.0, float(num_columns), 1.0, int64)
    return _ops.cast(_ops.equal(rows, cols), dtype)


def rand(shape, dtype=None, name=None):
    return _ops.uniform(_shape(shape), 0.0, 1.0, convert_dtype(dtype) or default_float_dtype())


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None):  # noqa: A002 - paddle names
    dtype = convert_dtype(dtype) or default_float_dtype()
    if seed:
        return _ops.uniform(_shape(shape), float(min), float(max), dtype, None, int(seed))
    return _ops.uniform(_shape(shape), float(min), float(max), dtype)


def randn(shape, dtype=None, name=None, *, out=None, device=None, requires_grad=False, pin_memory=False):
    """Standard normal draws; a complex dtype draws the real and imaginary parts with variance 1/2 each."""
    dtype = convert_dtype(dtype) or default_float_dtype()
    if dtype.is_complex:
        real = _C.real_dtype_for(dtype)
        parts = [_ops.normal(_shape(shape), 0.0, 0.5 ** 0.5, real, device_str(device)) for _ in range(2)]
        out = _ops.complex(*parts)
    else:
        out = _ops.normal(_shape(shape), 0.0, 1.0, dtype, device_str(device))
    out.stop_gradient = not requires_grad
    return out


def standard_normal(shape, dtype=None, name=None):
    return randn(shape, dtype)


def inclusive_range(start=0, end=None, step=1, dtype=None, *, out=None, device=None, requires_grad=False, name=None):
    """paddle.range (deprecated in Paddle): [start, end] with end included, in the default float dtype."""
    if end is None:
        start, end = 0, start
    vals = [float(v.item()) if isinstance(v, Tensor) else float(v) for v in (start, end, step)]
    if vals[2] == 0:
        raise ValueError("range: step is 0")
    n = int(np.floor((vals[1] - vals[0]) / vals[2] + 1e-9)) + 1
    values = vals[0] + vals[2] * np.arange(builtins.max(n, 0))
    dtype = convert_dtype(dtype) or default_float_dtype()
    return to_tensor(values.astype(to_numpy_dtype(dtype)), dtype=dtype, place=device,
                     stop_gradient=not requires_grad)


def normal(mean=0.0, std=1.0, shape=None, name=None):
    return _ops.normal(_shape(shape if shape is not None else [1]), float(mean), float(std), default_float_dtype())


def randint(low=0, high=None, shape=(1,), dtype=None, name=None):
    if high is None:
        low, high = 0, low
    u = _ops.uniform(_shape(shape), float(low), float(high), convert_dtype("float64"))
    return _ops.cast(_ops.floor(u), convert_dtype(dtype) or int64)


def randperm(n, dtype="int64", name=None):
    """A random permutation of 0..n-1 from the global generator (oar.seed reproduces it)."""
    keys = _ops.uniform([int(n)], 0.0, 1.0, convert_dtype("float64")).numpy()
    return _C.from_numpy(np.argsort(keys, kind="stable").astype(np.int64), convert_dtype(dtype), None)


def assign(x, output=None):
    """A copy of x (a Tensor, array or list); with `output`, written into it."""
    src = x if isinstance(x, Tensor) else to_tensor(x)
    value = _ops.add_scalar(src, 0.0) if src.dtype != convert_dtype("bool") else clone_data(src)
    if output is not None:
        output._set_data_(value.detach())
        return output
    return value


def from_numpy(ndarray):
    """A cpu Tensor sharing `ndarray`'s memory (torch.from_numpy): writes through
    either are seen by both, and the tensor keeps the array alive. The array
    must be C-contiguous and writeable, of a dtype oar has; `to_tensor` copies
    any array instead."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    if not ndarray.flags.c_contiguous:
        raise ValueError(f"from_numpy: the array of shape {list(ndarray.shape)} is not C-contiguous; "
                         "use numpy.ascontiguousarray first, or oar.to_tensor to copy it")
    if not ndarray.flags.writeable:
        raise ValueError("from_numpy: the array is read-only, and a tensor sharing it could be written through "
                         "numpy(); use oar.to_tensor to copy it")
    return _C.from_dlpack(ndarray.__dlpack__())


def logspace(start, stop, num, base=10.0, dtype=None, name=None):
    """base ** linspace(start, stop, num)."""
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, stop, num, base)]
    exps = np.linspace(float(vals[0]), float(vals[1]), int(vals[2]))
    dtype = convert_dtype(dtype) or default_float_dtype()
    return to_tensor(np.power(float(vals[3]), exps).astype(to_numpy_dtype(dtype)), dtype=dtype)


def _place_of(x, device):
    return device_str(device) if device is not None else x._device


def rand_like(input, name=None, *, dtype=None, device=None, requires_grad=False):  # noqa: A002
    dtype = convert_dtype(dtype) or input.dtype
    out = _ops.uniform(list(input.shape), 0.0, 1.0, dtype, _place_of(input, device))
    out.stop_gradient = not requires_grad
    return out


def randn_like(x, dtype=None, name=None, *, device=None, requires_grad=False):
    dtype = convert_dtype(dtype) or x.dtype
    out = _ops.normal(list(x.shape), 0.0, 1.0, dtype, _place_of(x, device))
    out.stop_gradient = not requires_grad
    return out


def randint_like(x, low=0, high=None, dtype=None, name=None):
    if high is None:
        low, high = 0, low
    if int(high) <= int(low):
        raise ValueError(f"randint_like: high ({high}) must be greater than low ({low})")
    u = _ops.uniform(list(x.shape), float(low), float(high), convert_dtype("float64"), x._device)
    return _ops.cast(_ops.floor(u), convert_dtype(dtype) or x.dtype)


def _host_rng(device):
    """A numpy generator seeded from oar's global generator (oar.seed reproduces its draws)."""
    seed = int(_ops.uniform([1], 0.0, 2.0**31, convert_dtype("float64"), device).numpy()[0])
    return np.random.RandomState(seed)


def bernoulli(x, p=None, name=None):
    """1 with probability x (or p for every element), else 0, in x's dtype."""
    u = _ops.uniform(list(x.shape), 0.0, 1.0, x.dtype if x.dtype.is_floating_point else float32, x._device)
    prob = x if p is None else _ops.full_like(u, float(p))
    return _ops.cast(_ops.less_than(u, _ops.cast(prob, u.dtype)), x.dtype)


def multinomial(x, num_samples=1, replacement=False, name=None, *, out=None):
    """num_samples category indices per row of the (unnormalized) probabilities x."""
    w = x.numpy().astype(np.float64)
    rows = w.reshape(-1, w.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise ValueError("multinomial: the probabilities must be finite and non-negative")
    if not replacement and num_samples > rows.shape[1]:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from "
                         f"{rows.shape[1]} categories")
    u = _ops.uniform([rows.shape[0], int(num_samples) if replacement else rows.shape[1]], 0.0, 1.0,
                     convert_dtype("float64"), x._device).numpy()
    res = np.zeros((rows.shape[0], int(num_samples)), np.int64)
    for r, p in enumerate(rows):
        if p.sum() <= 0:
            raise ValueError(f"multinomial: row {r} of the probabilities sums to 0")
        if replacement:
            res[r] = np.minimum(np.searchsorted(np.cumsum(p / p.sum()), u[r], side="right"), len(p) - 1)
        else:
            # The exponential race: the k smallest -log(u) / p, a draw without replacement.
            with np.errstate(divide="ignore"):
                keys = -np.log(np.maximum(u[r], 1e-300)) / p
            res[r] = np.argsort(keys, kind="stable")[:num_samples]
    return to_tensor(res.reshape(w.shape[:-1] + (int(num_samples),)), place=x._device)


def poisson(x, name=None):
    """Poisson draws with rates x, in x's dtype."""
    lam = x.numpy()
    return to_tensor(_host_rng(x._device).poisson(lam).astype(lam.dtype), place=x._device)


def _window(name, values_of, window_length, periodic, dtype):
    n = int(window_length)
    if n < 0:
        raise ValueError(f"{name}: window_length must be non-negative, got {n}")
    if n <= 1:
        return to_tensor(np.ones(n, dtype=to_numpy_dtype(dtype)))
    w = values_of(n + 1)[:-1] if periodic else values_of(n)
    return to_tensor(w.astype(to_numpy_dtype(dtype)))


def hann_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None, pin_memory=False,
                requires_grad=False):
    return _window("hann_window", np.hanning, window_length, periodic, dtype)


def hamming_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None, pin_memory=False,
                   requires_grad=False):
    return _window("hamming_window", np.hamming, window_length, periodic, dtype)


def blackman_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("blackman_window", np.blackman, window_length, periodic, dtype)


def bartlett_window(window_length, periodic=True, *, dtype="float32", layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("bartlett_window", np.bartlett, window_length, periodic, dtype)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype="float32", layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    return _window("kaiser_window", lambda n: np.kaiser(n, beta), window_length, periodic, dtype)


def as_tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """data as a tensor: a Tensor of the same dtype and device is returned as it is."""
    if isinstance(data, Tensor) and (dtype is None or convert_dtype(dtype) == data.dtype) and device is None:
        return data
    return to_tensor(data, dtype=dtype, place=device, stop_gradient=not requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    if copy:
        return to_tensor(obj, dtype=dtype, place=device, stop_gradient=not requires_grad)
    return as_tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def binomial(count, prob, name=None):
    """Binomial draws with `count` trials of probability `prob` (elementwise), as int64."""
    n, p = count.numpy(), prob.numpy() if isinstance(prob, Tensor) else np.asarray(prob)
    if ((p < 0) | (p > 1)).any() or (n < 0).any():
        raise ValueError("binomial: count must be non-negative and prob in [0, 1]")
    return to_tensor(_host_rng(count._device).binomial(n.astype(np.int64), p).astype(np.int64), place=count._device)


def standard_gamma(x, name=None):
    """Gamma(shape = x, scale = 1) draws, in x's dtype."""
    a = x.numpy()
    if (a <= 0).any():
        raise ValueError("standard_gamma: the shape parameters x must be positive")
    return to_tensor(_host_rng(x._device).standard_gamma(a).astype(a.dtype), place=x._device)
