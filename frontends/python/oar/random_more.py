"""Tensor's random in-place fills: normal_, uniform_, exponential_,
cauchy_, log_normal_, geometric_, bernoulli_ and random_.

Each draws from the core's counter-based uniform/normal ops (so oar.seed
makes them repeatable) and writes the result into the tensor's memory
through inplace.method, like the other in-place methods."""
import numbers

import numpy as np

from . import _C
from .framework import Tensor, convert_dtype
from .inplace import method as write_method

_ops = _C.ops
_F64 = convert_dtype("float64")


def _require_float(x, name):
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise TypeError(f"{name}: expected a floating-point tensor, but the tensor has dtype {x.dtype.name}")


def _uniform01(x):
    """Uniform samples in [0, 1) with x's shape, on x's device: in float32 for
    a half-precision x (whose rounding could give 1.0, then log(1 - u) = -inf)."""
    dtype = x.dtype if x.dtype.name in ("float32", "float64") else convert_dtype("float32")
    return _ops.uniform(list(x.shape), 0.0, 1.0, dtype, x._device)


def _as(x, t):
    return t if t.dtype == x.dtype else _ops.cast(t, x.dtype)


def _check_prob(name, p):
    values = p.numpy() if isinstance(p, Tensor) else np.asarray(p, dtype=np.float64)
    if np.any(values <= 0) or np.any(values > 1) or np.any(np.isnan(values)):
        raise ValueError(f"{name}: expected probabilities with 0 < p <= 1, but got {values.tolist()}")


def normal_(x, mean=0.0, std=1.0, name=None):
    """Fills x with samples of N(mean, std**2)."""
    _require_float(x, "normal_")
    if x.dtype.is_complex:  # real and imaginary parts each with variance std**2 / 2
        part = convert_dtype("float32" if x.dtype == convert_dtype("complex64") else "float64")
        s = float(std) / np.sqrt(2.0)
        re = _ops.normal(list(x.shape), 0.0, s, part, x._device)
        im = _ops.normal(list(x.shape), 0.0, s, part, x._device)
        return _ops.add(_ops.complex(re, im), _ops.full([], complex(mean), x.dtype, x._device))
    return _ops.normal(list(x.shape), float(mean), float(std), x.dtype, x._device)


def uniform_(x, min=0, max=1.0, seed=0, name=None):  # noqa: A002 - paddle names
    """Fills x with samples of U[min, max)."""
    _require_float(x, "uniform_")
    if float(min) > float(max):
        raise ValueError(f"uniform_: expected min <= max, but got min={min} and max={max}")
    if seed:
        return _ops.uniform(list(x.shape), float(min), float(max), x.dtype, x._device, int(seed))
    return _ops.uniform(list(x.shape), float(min), float(max), x.dtype, x._device)


def exponential_(x, lam=1.0, name=None):
    """Fills x with samples of the exponential distribution of rate lam."""
    _require_float(x, "exponential_")
    if float(lam) <= 0:
        raise ValueError(f"exponential_: expected a rate lam > 0, but got {lam}")
    # -log(1 - u) / lam, with 1 - u in (0, 1]
    u = _ops.rsubtract_scalar(_uniform01(x), 1.0)
    return _as(x, _ops.multiply_scalar(_ops.log(u), -1.0 / float(lam)))


def cauchy_(x, loc=0, scale=1, name=None):
    """Fills x with samples of the Cauchy distribution: loc + scale * tan(pi * (u - 1/2))."""
    _require_float(x, "cauchy_")
    if float(scale) <= 0:
        raise ValueError(f"cauchy_: expected scale > 0, but got {scale}")
    angle = _ops.multiply_scalar(_ops.add_scalar(_uniform01(x), -0.5), float(np.pi))
    tan = _ops.divide(_ops.sin(angle), _ops.cos(angle))
    return _as(x, _ops.add_scalar(_ops.multiply_scalar(tan, float(scale)), float(loc)))


def log_normal_(x, mean=1.0, std=2.0, name=None):
    """Fills x with exp of samples of N(mean, std**2)."""
    _require_float(x, "log_normal_")
    return _ops.exp(_ops.normal(list(x.shape), float(mean), float(std), x.dtype, x._device))


def geometric_(x, probs, name=None):
    """Fills x with log(u) / log(1 - probs), u ~ U(0, 1] (Paddle's continuous form of the geometric law)."""
    _require_float(x, "geometric_")
    _check_prob("geometric_", probs)
    u = _ops.rsubtract_scalar(_uniform01(x), 1.0)
    if isinstance(probs, Tensor):
        return _as(x, _ops.divide(_ops.log(u), _ops.log(_ops.rsubtract_scalar(_ops.cast(probs, u.dtype), 1.0))))
    return _as(x, _ops.multiply_scalar(_ops.log(u), 1.0 / float(np.log1p(-float(probs)))))


def bernoulli_(x, p=0.5, name=None):
    """Fills x with 1 where u < p and 0 elsewhere, u ~ U[0, 1); p is a number or
    a tensor that broadcasts to x. As in Paddle, p outside [0, 1] is not an
    error: p > 1 gives all ones, p < 0 all zeros."""
    _require_float(x, "bernoulli_")
    u = _uniform01(x)
    p = _ops.broadcast_to(_ops.cast(p, u.dtype), list(x.shape)) if isinstance(p, Tensor) else (
        _ops.scalar_like(u, float(p)))
    return _ops.cast(_ops.less_than(u, p), x.dtype)


_DEFAULT_RANDOM_TOP = {"float16": 2**11, "bfloat16": 2**8, "float32": 2**24, "float64": 2**53,
                       "int8": 2**7 - 1, "uint8": 2**8 - 1, "int32": 2**31 - 1, "int64": 2**63 - 1}


def random_(x, from_=0, to=None, *, generator=None):
    """Fills x with integers drawn uniformly from [from_, to - 1]; random_(n)
    draws from [0, n - 1]; random_() up to the largest integer x's dtype holds
    exactly."""
    if x.dtype.is_complex or x.dtype == convert_dtype("bool"):
        raise TypeError(f"random_: expected an integer or floating-point tensor, but the tensor has dtype "
                        f"{x.dtype.name}")
    for what, v in (("from", from_), ("to", to)):
        if v is not None and not isinstance(v, (numbers.Integral, np.integer)):
            raise TypeError(f"random_: expected an integer '{what}', but got {v!r}")
    if to is None and from_ > 0:  # random_(n): [0, n - 1]
        from_, to = 0, from_
    if to is None and x.dtype == convert_dtype("int64"):  # the full int64 range: 15 + 3 * 16 random bits
        return _random_int64_bits(x)
    if to is None:
        to = _DEFAULT_RANDOM_TOP[x.dtype.name]
    if from_ >= to:
        raise ValueError(f"random_: expected 'from' to be less than 'to', but got from={from_} >= to={to}")
    if not x.dtype.is_floating_point:
        info = np.iinfo(x.dtype.name)
        if from_ < info.min or to - 1 > info.max:
            raise ValueError(f"random_: the range [{from_}, {to - 1}] does not fit the tensor's dtype {x.dtype.name} "
                             f"([{info.min}, {info.max}])")
    u = _ops.uniform(list(x.shape), float(from_), float(to), _F64, x._device)
    # floor of U[from, to) is in [from, to - 1]; the min guards the rounding of a float64 top near `to`
    return _ops.cast(_ops.minimum(_ops.floor(u), _ops.scalar_like(u, float(to - 1))), x.dtype)


def _random_int64_bits(x):
    """Integers in [0, 2**63 - 1] built from 16-bit pieces (each drawn exactly from a float64 uniform)."""
    out = None
    for bits in (15, 16, 16, 16):
        piece = _ops.cast(_ops.floor(_ops.uniform(list(x.shape), 0.0, float(2**bits), _F64, x._device)), x.dtype)
        out = piece if out is None else _ops.add(_ops.multiply(out, _ops.full([], 2**bits, x.dtype, x._device)),
                                                 piece)
    return out


_FILLS = {"normal_": normal_, "uniform_": uniform_, "exponential_": exponential_, "cauchy_": cauchy_,
          "log_normal_": log_normal_, "geometric_": geometric_, "bernoulli_": bernoulli_, "random_": random_}
for _name, _fn in _FILLS.items():
    setattr(Tensor, _name, write_method(_fn, _name))
