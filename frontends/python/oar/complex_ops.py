"""Complex numbers (paddle.complex, real, imag, conj, angle, as_real,
as_complex, polar, is_complex) and the Tensor methods of the same names.

Gradients follow Paddle's and PyTorch's convention: for a real loss L of
z = x + iy, z.grad = dL/dx + i dL/dy (docs/complex_gradients.md)."""
import math

from . import _C
from .framework import Tensor

_ops = _C.ops

__all__ = ["complex", "real", "imag", "conj", "angle", "as_real", "as_complex", "polar", "is_complex"]


def _tensor(x):
    if isinstance(x, Tensor):
        return x
    from .creation import to_tensor
    return to_tensor(x)


def complex(real, imag, name=None):  # noqa: A001 - paddle.complex
    """real + i imag: float32 parts give complex64, float64 parts complex128 (broadcast)."""
    return _ops.complex(_tensor(real), _tensor(imag))


def real(x, name=None):
    """The real part (complex64 -> float32, complex128 -> float64); a real x is returned as is."""
    x = _tensor(x)
    return _ops.real(x) if x.dtype.is_complex else x


def imag(x, name=None):
    """The imaginary part; zeros for a real x."""
    x = _tensor(x)
    return _ops.imag(x) if x.dtype.is_complex else _ops.full_like(x, 0.0)


def conj(x, name=None):
    """The complex conjugate x - iy; a real x is returned as is."""
    x = _tensor(x)
    return _ops.conj(x) if x.dtype.is_complex else x


def angle(x, name=None):
    """The argument atan2(imag, real) in [-pi, pi]; for a real x, pi where x < 0 and 0 elsewhere."""
    x = _tensor(x)
    if x.dtype.is_complex:
        return _ops.angle(x)
    if not x.dtype.is_floating_point:
        from .framework import default_float_dtype
        x = _ops.cast(x, default_float_dtype())
    zero = _ops.full_like(x, 0.0)
    # pi where x < 0, 0 elsewhere, NaN stays NaN (as the C++ oar::angle).
    return _ops.where(_ops.less_than(x, zero), _ops.full_like(x, math.pi), _ops.where(_ops.equal(x, x), zero, x))


def as_real(x, name=None):
    """A complex tensor of shape [...] as a real one of shape [..., 2] (real, imaginary)."""
    return _ops.as_real(_tensor(x))


def as_complex(x, name=None):
    """A real tensor of shape [..., 2] as a complex one of shape [...]."""
    return _ops.as_complex(_tensor(x))


def polar(abs, angle, name=None):  # noqa: A002 - paddle.polar's argument names
    """abs * (cos(angle) + i sin(angle))."""
    return _ops.polar(_tensor(abs), _tensor(angle))


def is_complex(x):
    """True for a complex64 or complex128 tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"is_complex: expected a Tensor, got {type(x).__name__}")
    return x.dtype.is_complex


def _install_methods():
    for name in ("real", "imag", "conj", "angle", "as_real", "as_complex", "is_complex"):
        setattr(Tensor, name, globals()[name])


_install_methods()
