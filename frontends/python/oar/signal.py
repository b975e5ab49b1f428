"""paddle.signal: the short-time Fourier transform and its inverse, composed
of gather (framing, padding), oar.fft and index_add (overlap-add), so both
are differentiable."""
import numpy as np

from . import creation, fft
from . import math as M
from .complex_ops import complex as _complex, real as _real
from .framework import Tensor, convert_dtype

__all__ = ["stft", "istft"]


def _reflect(i, n):
    """Indices of a reflect-padded signal of length n (no edge repeat)."""
    period = 2 * (n - 1)
    i = np.abs(i) % period if n > 1 else np.zeros_like(i)
    return np.where(i >= n, period - i, i)


def _pad_indices(n, pad, mode):
    i = np.arange(-pad, n + pad)
    if mode == "reflect":
        if pad >= n:
            raise ValueError(f"stft: reflect padding of {pad} needs a signal longer than {pad} samples, got {n}")
        return _reflect(i, n)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "circular":
        return i % n
    raise ValueError(f"stft: pad_mode must be 'reflect', 'replicate', 'circular' or 'constant', got {mode!r}")


def _real_dtype(t):
    double = t.dtype in (convert_dtype("float64"), convert_dtype("complex128"))
    return convert_dtype("float64" if double else "float32")


def _apply_window(frames, w):
    w = w.astype(_real_dtype(frames))
    if frames.dtype.is_complex:
        w = _complex(w, w * 0)
    return frames * w


def _window(window, win_length, n_fft, dtype, op):
    if window is None:
        w = creation.ones([win_length], dtype=dtype)
    else:
        if window.ndim != 1 or window.shape[0] != win_length:
            raise ValueError(f"{op}: window must be 1-D of win_length={win_length} samples, got shape "
                             f"{list(window.shape)}")
        w = window
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        w = M.concat([creation.zeros([left], dtype=w.dtype), w,
                      creation.zeros([n_fft - win_length - left], dtype=w.dtype)])
    return w


def _lengths(op, n_fft, hop_length, win_length):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not isinstance(n_fft, int) or n_fft <= 0:
        raise ValueError(f"{op}: n_fft must be a positive int, got {n_fft!r}")
    if hop_length <= 0:
        raise ValueError(f"{op}: hop_length must be positive, got {hop_length}")
    if not 0 < win_length <= n_fft:
        raise ValueError(f"{op}: win_length must be in (0, n_fft={n_fft}], got {win_length}")
    return hop_length, win_length


def stft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=True, name=None):
    """[..., freq, frames] complex spectra of x ([T] or [B, T]) over windowed frames of n_fft samples."""
    if not isinstance(x, Tensor) or x.ndim not in (1, 2):
        raise ValueError(f"stft: x must be a Tensor of shape [T] or [B, T], got "
                         f"{list(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
    hop_length, win_length = _lengths("stft", n_fft, hop_length, win_length)
    if x.dtype.is_complex and onesided:
        raise ValueError("stft: onesided=True needs a real x; pass onesided=False for a complex signal")
    signal = x if x.ndim == 2 else x.unsqueeze(0)
    n = signal.shape[-1]
    if center:
        pad = n_fft // 2
        if pad_mode == "constant":
            signal = M.concat([creation.zeros([signal.shape[0], pad], dtype=signal.dtype), signal,
                               creation.zeros([signal.shape[0], pad], dtype=signal.dtype)], axis=-1)
            source = np.arange(signal.shape[-1])
        else:
            source = _pad_indices(n, pad, pad_mode)
    else:
        source = np.arange(n)
    if len(source) < n_fft:
        raise ValueError(f"stft: the (padded) signal has {len(source)} samples, fewer than n_fft={n_fft}")
    frames_count = 1 + (len(source) - n_fft) // hop_length
    idx = source[np.arange(frames_count)[:, None] * hop_length + np.arange(n_fft)[None, :]]
    frames = M.gather(signal, creation.to_tensor(idx.reshape(-1)), axis=1).reshape([signal.shape[0], frames_count,
                                                                                    n_fft])
    frames = _apply_window(frames, _window(window, win_length, n_fft, _real_dtype(frames), "stft"))
    spec = fft.rfft(frames, axis=-1) if onesided else fft.fft(frames, axis=-1)
    if normalized:
        spec = spec * float(1 / np.sqrt(n_fft))
    spec = M.transpose(spec, [0, 2, 1])
    return spec if x.ndim == 2 else spec.squeeze(0)


def istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=True,
          length=None, return_complex=False, name=None):
    """The signal whose stft is x ([..., freq, frames]): inverse FFT of each frame, windowed overlap-add,
    divided by the summed squared window."""
    if not isinstance(x, Tensor) or x.ndim not in (2, 3) or not x.dtype.is_complex:
        raise ValueError(f"istft: x must be a complex Tensor of shape [freq, frames] or [B, freq, frames], got "
                         f"{list(x.shape) if isinstance(x, Tensor) else type(x).__name__}")
    hop_length, win_length = _lengths("istft", n_fft, hop_length, win_length)
    if return_complex and onesided:
        raise ValueError("istft: return_complex=True needs onesided=False")
    spec = x if x.ndim == 3 else x.unsqueeze(0)
    expected = n_fft // 2 + 1 if onesided else n_fft
    if spec.shape[1] != expected:
        raise ValueError(f"istft: x has {spec.shape[1]} frequency bins but n_fft={n_fft} with onesided={onesided} "
                         f"gives {expected}")
    batch, frames_count = spec.shape[0], spec.shape[2]
    spec = M.transpose(spec, [0, 2, 1])
    if normalized:
        spec = spec * float(np.sqrt(n_fft))
    frames = fft.irfft(spec, n=n_fft, axis=-1) if onesided else fft.ifft(spec, axis=-1)
    if not onesided and not return_complex:
        frames = _real(frames)
    w = _window(window, win_length, n_fft, _real_dtype(frames), "istft")
    frames = _apply_window(frames, w)
    total = n_fft + hop_length * (frames_count - 1)
    idx = (np.arange(frames_count)[:, None] * hop_length + np.arange(n_fft)[None, :]).reshape(-1)
    out = M.index_add(creation.zeros([batch, total], dtype=frames.dtype), creation.to_tensor(idx), 1,
                      frames.reshape([batch, -1]))
    envelope = np.zeros(total)
    np.add.at(envelope, idx, np.tile(np.abs(w.numpy().astype(np.complex128)) ** 2, frames_count))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    envelope = envelope[start:end]
    if envelope.size and envelope.min() < 1e-11:
        raise ValueError("istft: the window's overlap-add envelope is zero somewhere (the window, hop_length "
                         "and n_fft do not satisfy the nonzero overlap-add condition)")
    out = out[:, start:min(end, total)]
    if out.shape[1] < end - start:
        out = M.concat([out, creation.zeros([batch, end - start - out.shape[1]], dtype=out.dtype)], axis=1)
    out = _apply_window(out, 1.0 / creation.to_tensor(envelope))
    return out if x.ndim == 3 else out.squeeze(0)
