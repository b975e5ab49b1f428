"""Parameter initializers (paddle.nn.initializer)."""
import math

import numpy as np

from .. import _C
from ..framework import convert_dtype, default_float_dtype

_ops = _C.ops


def _fans(shape):
    """fan_in, fan_out as Paddle computes them (weights are [in, out] for Linear)."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


class Initializer:
    """Fills a parameter in place: init(param) or init(param, block=None)."""

    def __call__(self, param, block=None):
        if 0 in list(param.shape):  # nothing to fill (fan-based formulas would divide by zero)
            return param
        value = self._make(list(param.shape), param.dtype)
        param._set_data_(_ops.cast(value, param.dtype) if value.dtype != param.dtype else value)
        return param

    def _make(self, shape, dtype):
        raise NotImplementedError


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = float(value)

    def _make(self, shape, dtype):
        return _ops.full(shape, self.value, dtype)


class Normal(Initializer):
    def __init__(self, mean=0.0, std=1.0, name=None):
        self.mean, self.std = float(mean), float(std)

    def _make(self, shape, dtype):
        return _ops.normal(shape, self.mean, self.std, _float(dtype))


class TruncatedNormal(Normal):
    def __init__(self, mean=0.0, std=1.0, a=-2.0, b=2.0, name=None):
        super().__init__(mean, std)
        self.a, self.b = a, b

    def _make(self, shape, dtype):
        v = _ops.normal(shape, self.mean, self.std, _float(dtype))
        lo, hi = self.mean + self.a * self.std, self.mean + self.b * self.std
        return _ops.minimum(_ops.maximum(v, _ops.scalar_like(v, lo)), _ops.scalar_like(v, hi))


class Uniform(Initializer):
    def __init__(self, low=-1.0, high=1.0, name=None):
        self.low, self.high = float(low), float(high)

    def _make(self, shape, dtype):
        return _ops.uniform(shape, self.low, self.high, _float(dtype))


class XavierUniform(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype):
        fi, fo = _fans(shape)
        fi = self.fan_in or fi
        fo = self.fan_out or fo
        limit = self.gain * math.sqrt(6.0 / (fi + fo))
        return _ops.uniform(shape, -limit, limit, _float(dtype))


class XavierNormal(Initializer):
    def __init__(self, fan_in=None, fan_out=None, gain=1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def _make(self, shape, dtype):
        fi, fo = _fans(shape)
        std = self.gain * math.sqrt(2.0 / ((self.fan_in or fi) + (self.fan_out or fo)))
        return _ops.normal(shape, 0.0, std, _float(dtype))


def _gain(nonlinearity, negative_slope):
    if nonlinearity in (None, "relu"):
        return math.sqrt(2.0) if nonlinearity == "relu" else math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "leaky_relu":
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "tanh":
        return 5.0 / 3
    return 1.0


class KaimingUniform(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def _make(self, shape, dtype):
        fi = self.fan_in or _fans(shape)[0]
        limit = _gain(self.nonlinearity, self.negative_slope) * math.sqrt(3.0 / fi)
        return _ops.uniform(shape, -limit, limit, _float(dtype))


class KaimingNormal(Initializer):
    def __init__(self, fan_in=None, negative_slope=0.0, nonlinearity="relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity

    def _make(self, shape, dtype):
        fi = self.fan_in or _fans(shape)[0]
        std = _gain(self.nonlinearity, self.negative_slope) / math.sqrt(fi)
        return _ops.normal(shape, 0.0, std, _float(dtype))


class Assign(Initializer):
    def __init__(self, value, name=None):
        self.value = np.asarray(value.numpy() if hasattr(value, "numpy") else value)

    def _make(self, shape, dtype):
        from ..creation import to_tensor
        if list(self.value.shape) != list(shape):
            raise ValueError(f"Assign: value has shape {list(self.value.shape)} but the parameter has {shape}")
        return to_tensor(self.value, dtype=dtype)


def _float(dtype):
    return dtype if dtype.is_floating_point else default_float_dtype()


# Paddle's short aliases
ConstantInitializer = Constant
NormalInitializer = Normal
UniformInitializer = Uniform

__all__ = ["Initializer", "Constant", "Normal", "TruncatedNormal", "Uniform", "XavierUniform", "XavierNormal",
           "KaimingUniform", "KaimingNormal", "Assign", "convert_dtype"]
