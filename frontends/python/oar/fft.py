"""oar.fft: discrete Fourier transforms with paddle.fft's signatures (numpy.fft's semantics).

Every transform is one of the core's three FFT ops (fft_c2c, fft_r2c, fft_c2r;
core/src/ops/fft.cpp), so all of them differentiate (to any order) and run on
every device with FFT kernels: the mock's reference DFT, and the cpu through
the plugin liboar_fftw.so (FFTW; without it the cpu has no FFT kernels and
the error says so). `n` / `s` crop or zero-pad the input along the
transformed axes first; the hermitian transforms are conj + c2r / r2c with
the normalization's direction swapped, as numpy's.

norm: "backward" (default: the inverse is scaled by 1/N), "ortho" (both by
1/sqrt(N)) or "forward" (the forward by 1/N), N the number of points.
"""
import numpy as np

from . import _C
from .creation import to_tensor
from .framework import convert_dtype, default_float_dtype

_ops = _C.ops
_NORMS = ("backward", "ortho", "forward")

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


# ---- argument checks (ValueError, as Paddle's) ----

def _check_norm(norm, fn):
    if norm not in _NORMS:
        raise ValueError(f"oar.fft.{fn}: norm is {norm!r} but must be one of \"backward\", \"ortho\", \"forward\"")
    return norm


def _swap(norm):
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


def _rank(x):
    return len(x.shape)


def _axis(x, axis, fn):
    r = _rank(x)
    if not isinstance(axis, (int, np.integer)) or not -r <= int(axis) < r:
        raise ValueError(f"oar.fft.{fn}: axis {axis!r} is out of range for an input of rank {r}")
    return int(axis) % r


def _axes_and_shape(x, s, axes, fn, two_d=False):
    """Normalized axes and the number of points along each (numpy's _cook_nd_args)."""
    r = _rank(x)
    if two_d:
        if s is not None and len(s) != 2:
            raise ValueError(f"oar.fft.{fn}: s must hold 2 integers but is {s!r}")
        if axes is None or len(axes) != 2:
            raise ValueError(f"oar.fft.{fn}: axes must hold 2 integers but is {axes!r}")
    if axes is None:
        axes = list(range(r)) if s is None else list(range(r - len(s), r))
    axes = [_axis(x, a, fn) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"oar.fft.{fn}: axes {list(axes)} has a repeated axis")
    if not axes:
        raise ValueError(f"oar.fft.{fn}: no axis to transform (an input of rank 0 or empty axes)")
    if s is None:
        s = [x.shape[a] for a in axes]
    else:
        s = [int(v) for v in s]
        if len(s) != len(axes):
            raise ValueError(f"oar.fft.{fn}: s {list(s)} and axes {axes} must have the same length")
    for v in s:
        if v <= 0:
            raise ValueError(f"oar.fft.{fn}: the number of points {v} must be positive")
    return axes, s


def _n(x, n, axis, fn):
    if n is None:
        return x.shape[axis]
    if int(n) <= 0:
        raise ValueError(f"oar.fft.{fn}: n = {n} must be positive")
    return int(n)


# ---- dtypes and resizing ----

def _is_complex(x):
    return x.dtype.name.startswith("complex")


def _to_complex(x):
    """Real inputs promote to complex as Paddle's: float64 -> complex128, others -> complex64."""
    if _is_complex(x):
        return x
    if x.dtype.name not in ("float32", "float64"):
        x = _ops.cast(x, convert_dtype("float32"))
    return _ops.cast(x, convert_dtype("complex128" if x.dtype.name == "float64" else "complex64"))


def _to_real(x, fn):
    if _is_complex(x):
        raise TypeError(f"oar.fft.{fn}: x must be real but is {x.dtype.name}")
    if x.dtype.name not in ("float32", "float64"):
        x = _ops.cast(x, convert_dtype("float32"))
    return x


def _resize(x, axis, n):
    """x cropped or zero-padded to n entries along axis."""
    m = x.shape[axis]
    if m > n:
        return _ops.slice(x, [axis], [0], [n])
    if m < n:
        shape = list(x.shape)
        shape[axis] = n - m
        return _ops.concat([x, _ops.full(shape, 0.0, x.dtype, x._device)], axis)
    return x


def _resize_all(x, axes, sizes):
    for a, n in zip(axes, sizes):
        x = _resize(x, a, n)
    return x


def _reverse(x, axes):
    """x[(-j) mod n] along each axis: for a real signal, conjugating its spectrum is this reversal,
    so the hermitian transforms need no complex conjugate: irfftn(conj(z)) = reverse(irfftn(z)) and
    conj(rfftn(x)) = rfftn(reverse(x)) (exact, the same real-linear maps)."""
    for a in axes:
        n = x.shape[a]
        if n > 1:
            idx = np.concatenate([[0], np.arange(n - 1, 0, -1)]).astype(np.int64)
            x = _ops.gather(x, to_tensor(idx, place=x._device), a)
    return x


# ---- complex-to-complex ----

def _c2c(x, s, axes, norm, forward, fn, two_d=False):
    _check_norm(norm, fn)
    x = _to_complex(x)
    axes, s = _axes_and_shape(x, s, axes, fn, two_d)
    return _ops.fft_c2c(_resize_all(x, axes, s), axes, norm, forward)


def fft(x, n=None, axis=-1, norm="backward", name=None):
    """1-D DFT along axis (numpy.fft.fft); a real x is promoted to complex."""
    a = _axis(x, axis, "fft")
    return _c2c(x, [_n(x, n, a, "fft")], [a], norm, True, "fft")


def ifft(x, n=None, axis=-1, norm="backward", name=None):
    a = _axis(x, axis, "ifft")
    return _c2c(x, [_n(x, n, a, "ifft")], [a], norm, False, "ifft")


def fftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2c(x, s, axes, norm, True, "fftn")


def ifftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2c(x, s, axes, norm, False, "ifftn")


def fft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2c(x, s, axes, norm, True, "fft2", two_d=True)


def ifft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2c(x, s, axes, norm, False, "ifft2", two_d=True)


# ---- real-to-complex and back ----

def _r2c(x, s, axes, norm, fn, two_d=False):
    _check_norm(norm, fn)
    x = _to_real(x, fn)
    axes, s = _axes_and_shape(x, s, axes, fn, two_d)
    return _ops.fft_r2c(_resize_all(x, axes, s), axes, norm, True)


def _c2r(x, s, axes, norm, fn, two_d=False):
    """numpy's irfftn: s[-1] is the real length of the last axis (default 2 * (m - 1))."""
    _check_norm(norm, fn)
    x = _to_complex(x)
    given = s
    axes, s = _axes_and_shape(x, s, axes, fn, two_d)
    if given is None:
        s[-1] = 2 * (x.shape[axes[-1]] - 1)
        if s[-1] <= 0:
            raise ValueError(f"oar.fft.{fn}: the last axis has {x.shape[axes[-1]]} bins, which give no points; "
                             "pass n (or s)")
    bins = s[:-1] + [s[-1] // 2 + 1]
    return _ops.fft_c2r(_resize_all(x, axes, bins), axes, norm, s[-1])


def rfft(x, n=None, axis=-1, norm="backward", name=None):
    """The n // 2 + 1 non-negative frequency bins of the DFT of real x."""
    a = _axis(x, axis, "rfft")
    return _r2c(x, [_n(x, n, a, "rfft")], [a], norm, "rfft")


def irfft(x, n=None, axis=-1, norm="backward", name=None):
    """Inverse of rfft: n real points (default 2 * (bins - 1))."""
    a = _axis(x, axis, "irfft")
    return _c2r(x, None if n is None else [_n(x, n, a, "irfft")], [a], norm, "irfft")


def rfftn(x, s=None, axes=None, norm="backward", name=None):
    return _r2c(x, s, axes, norm, "rfftn")


def irfftn(x, s=None, axes=None, norm="backward", name=None):
    return _c2r(x, s, axes, norm, "irfftn")


def rfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _r2c(x, s, axes, norm, "rfft2", two_d=True)


def irfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _c2r(x, s, axes, norm, "irfft2", two_d=True)


# ---- hermitian: the spectrum of a real signal given by its half ----
# numpy's definitions: hfftn(x) = irfftn(conj(x)) and ihfftn(x) = conj(rfftn(x)),
# each with the norm's direction swapped; the conjugate is a reversal (_reverse).

def _hfft(x, s, axes, norm, fn, two_d=False):
    _check_norm(norm, fn)
    transformed = _axes_and_shape(x, s, axes, fn, two_d)[0]
    return _reverse(_c2r(x, s, axes, _swap(norm), fn, two_d), transformed)


def _ihfft(x, s, axes, norm, fn, two_d=False):
    _check_norm(norm, fn)
    x = _to_real(x, fn)
    axes, s = _axes_and_shape(x, s, axes, fn, two_d)
    return _ops.fft_r2c(_reverse(_resize_all(x, axes, s), axes), axes, _swap(norm), True)


def hfft(x, n=None, axis=-1, norm="backward", name=None):
    """The real DFT of a Hermitian-symmetric signal given by its first half (numpy.fft.hfft)."""
    a = _axis(x, axis, "hfft")
    return _hfft(x, None if n is None else [_n(x, n, a, "hfft")], [a], norm, "hfft")


def ihfft(x, n=None, axis=-1, norm="backward", name=None):
    """Inverse of hfft: the first n // 2 + 1 bins of the inverse DFT of real x (numpy.fft.ihfft)."""
    a = _axis(x, axis, "ihfft")
    return _ihfft(x, [_n(x, n, a, "ihfft")], [a], norm, "ihfft")


def hfftn(x, s=None, axes=None, norm="backward", name=None):
    return _hfft(x, s, axes, norm, "hfftn")


def ihfftn(x, s=None, axes=None, norm="backward", name=None):
    return _ihfft(x, s, axes, norm, "ihfftn")


def hfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _hfft(x, s, axes, norm, "hfft2", two_d=True)


def ihfft2(x, s=None, axes=(-2, -1), norm="backward", name=None):
    return _ihfft(x, s, axes, norm, "ihfft2", two_d=True)


# ---- frequencies and shifts ----

def _freq_dtype(dtype):
    d = convert_dtype(dtype) if dtype is not None else default_float_dtype()
    return d


def fftfreq(n, d=1.0, dtype=None, name=None):
    """The sample frequencies [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)."""
    n = int(n)
    if n <= 0:
        raise ValueError(f"oar.fft.fftfreq: n = {n} must be positive")
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]).astype(np.float64)
    return to_tensor(k / (d * n), dtype=_freq_dtype(dtype))


def rfftfreq(n, d=1.0, dtype=None, name=None):
    """The non-negative sample frequencies [0, 1, ..., n // 2] / (d * n) of rfft."""
    n = int(n)
    if n <= 0:
        raise ValueError(f"oar.fft.rfftfreq: n = {n} must be positive")
    return to_tensor(np.arange(0, n // 2 + 1, dtype=np.float64) / (d * n), dtype=_freq_dtype(dtype))


def _shift(x, axes, sign, fn):
    from .math import roll
    if axes is None:
        axes = list(range(_rank(x)))
    elif isinstance(axes, (int, np.integer)):
        axes = [axes]
    axes = [_axis(x, a, fn) for a in axes]
    if not axes:
        return x
    return roll(x, [sign * (x.shape[a] // 2) for a in axes], axes)


def fftshift(x, axes=None, name=None):
    """Moves the zero-frequency bin to the center (numpy.fft.fftshift)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x, axes=None, name=None):
    """The inverse of fftshift (they differ for odd lengths)."""
    return _shift(x, axes, -1, "ifftshift")

