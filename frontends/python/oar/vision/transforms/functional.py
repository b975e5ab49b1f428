"""paddle.vision.transforms.functional: image ops on numpy HWC arrays, oar
tensors (CHW) and PIL images (when Pillow is installed; they round-trip
through numpy).

resize follows OpenCV's INTER_LINEAR / INTER_NEAREST sampling (pixel centres
at +0.5, edges clamped), which is also what Paddle's tensor path computes."""
import numbers

import numpy as np

from ... import math as M
from ...creation import to_tensor as _to_tensor
from ...framework import Tensor


def _is_pil_image(img):
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(img, Image.Image)


def _is_tensor_image(img):
    return isinstance(img, Tensor)


def _is_numpy_image(img):
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


def _check_image(img, what):
    if not (_is_tensor_image(img) or _is_numpy_image(img) or _is_pil_image(img)):
        raise TypeError(f"{what}: img must be a PIL image, a 2-D/3-D numpy array or an oar Tensor, "
                        f"got {type(img).__name__}" + (f" with {img.ndim} dims" if isinstance(img, np.ndarray) else ""))


def _on_hwc(fn, img, data_format="CHW"):
    """Runs fn on an HWC numpy array and returns img's kind: a tensor goes to
    numpy and back (in data_format), a PIL image through numpy."""
    if _is_tensor_image(img):
        a = img.numpy()
        chw = data_format.upper() == "CHW"
        out = fn(a.transpose(1, 2, 0) if chw else a)
        return _to_tensor(np.ascontiguousarray(out.transpose(2, 0, 1) if chw else out))
    if _is_pil_image(img):
        from PIL import Image
        a = np.asarray(img)
        out = fn(a[:, :, None] if a.ndim == 2 else a)
        return Image.fromarray(np.ascontiguousarray(out[:, :, 0] if out.shape[2] == 1 else out))
    squeeze = img.ndim == 2
    out = fn(img[:, :, None] if squeeze else img)
    return out[:, :, 0] if squeeze else out


def _hw(img, data_format="CHW"):
    """(height, width) of an image."""
    if _is_pil_image(img):
        return img.size[1], img.size[0]
    if _is_tensor_image(img):
        shape = img.shape
        return (shape[-2], shape[-1]) if data_format.upper() == "CHW" else (shape[-3], shape[-2])
    return img.shape[0], img.shape[1]


def to_tensor(pic, data_format="CHW"):
    """An HWC (or HW) image to a float32 tensor in data_format; uint8 values are divided by 255."""
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"to_tensor: data_format must be 'CHW' or 'HWC', got '{data_format}'")
    _check_image(pic, "to_tensor")
    if _is_tensor_image(pic):
        return pic if data_format == "CHW" else M.transpose(pic, [1, 2, 0])
    a = np.asarray(pic)
    if a.ndim == 2:
        a = a[:, :, None]
    if data_format == "CHW":
        a = a.transpose(2, 0, 1)
    if a.dtype == np.uint8:
        return _to_tensor(np.ascontiguousarray(a, dtype=np.float32) / np.float32(255.0))
    return _to_tensor(np.ascontiguousarray(a))


def _source_index(out_size, in_size, mode):
    scale = in_size / out_size
    dst = np.arange(out_size, dtype=np.float64)
    if mode == "nearest":
        return np.minimum(np.floor(dst * scale).astype(np.int64), in_size - 1), None, None
    src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    hi = np.minimum(lo + 1, in_size - 1)
    return lo, hi, src - lo


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights of the 4 taps at offsets -1, 0, 1, 2 from floor(src)."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], -1)


def _resize_axis_cubic(a, out_size, axis):
    """Bicubic resampling along one axis (edge taps clamped, as OpenCV and Paddle)."""
    n = a.shape[axis]
    src = (np.arange(out_size) + 0.5) * (n / out_size) - 0.5
    base = np.floor(src).astype(np.int64)
    weights = _cubic_weights(src - base)  # [out, 4]
    taps = np.clip(base[:, None] + np.arange(-1, 3)[None, :], 0, n - 1)  # [out, 4]
    gathered = np.take(a, taps, axis=axis)  # axis becomes [out, 4]
    shape = [1] * gathered.ndim
    shape[axis], shape[axis + 1] = out_size, 4
    return (gathered * weights.reshape(shape)).sum(axis + 1)


def _resize_hwc(img, oh, ow, interpolation):
    if interpolation not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"resize: interpolation must be 'bilinear', 'nearest' or 'bicubic', got '{interpolation}'")
    h, w = img.shape[:2]
    if interpolation == "bicubic":
        out = _resize_axis_cubic(_resize_axis_cubic(img.astype(np.float64), oh, 0), ow, 1)
    else:
        ylo, yhi, wy = _source_index(oh, h, interpolation)
        xlo, xhi, wx = _source_index(ow, w, interpolation)
        if interpolation == "nearest":
            return img[ylo][:, xlo]
        a = img.astype(np.float64)
        wy, wx = wy[:, None, None], wx[None, :, None]
        top = a[ylo][:, xlo] * (1 - wx) + a[ylo][:, xhi] * wx
        bottom = a[yhi][:, xlo] * (1 - wx) + a[yhi][:, xhi] * wx
        out = top * (1 - wy) + bottom * wy
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        return np.clip(np.rint(out), info.min, info.max).astype(img.dtype)
    return out.astype(img.dtype)


def resize(img, size, interpolation="bilinear"):
    """size (h, w), or an int: the shorter side becomes size, keeping the aspect ratio."""
    _check_image(img, "resize")
    if not (isinstance(size, numbers.Integral) or (isinstance(size, (list, tuple)) and len(size) == 2)):
        raise TypeError(f"resize: size must be an int or a pair (h, w), got {size!r}")
    h, w = _hw(img)
    if isinstance(size, numbers.Integral):
        if (w <= h and w == size) or (h <= w and h == size):
            return img
        oh, ow = (int(size * h / w), size) if w < h else (size, int(size * w / h))
    else:
        oh, ow = int(size[0]), int(size[1])
    if oh <= 0 or ow <= 0:
        raise ValueError(f"resize: the output size must be positive, got ({oh}, {ow})")
    return _on_hwc(lambda a: _resize_hwc(a, oh, ow, interpolation), img)


def _pad_amounts(padding, what):
    if isinstance(padding, numbers.Integral):
        return padding, padding, padding, padding
    if isinstance(padding, (list, tuple)) and len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        return tuple(padding)
    raise ValueError(f"{what}: padding must be an int or a sequence of 2 or 4 ints, got {padding!r}")


_NP_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def pad(img, padding, fill=0, padding_mode="constant"):
    """padding: an int (all sides), (left/right, top/bottom) or (left, top,
    right, bottom); padding_mode constant (with fill), edge, reflect or symmetric."""
    _check_image(img, "pad")
    if padding_mode not in _NP_PAD_MODES:
        raise ValueError(f"pad: padding_mode must be one of {list(_NP_PAD_MODES)}, got '{padding_mode}'")
    left, top, right, bottom = (int(p) for p in _pad_amounts(padding, "pad"))

    def run(a):
        widths = ((top, bottom), (left, right), (0, 0))
        if padding_mode != "constant":
            return np.pad(a, widths, mode=_NP_PAD_MODES[padding_mode])
        fills = np.broadcast_to(np.asarray(fill, dtype=a.dtype).reshape(-1), (a.shape[2],))
        out = np.empty((a.shape[0] + top + bottom, a.shape[1] + left + right, a.shape[2]), dtype=a.dtype)
        out[...] = fills
        out[top:top + a.shape[0], left:left + a.shape[1]] = a
        return out
    return _on_hwc(run, img)


def crop(img, top, left, height, width):
    """The height x width window whose top-left corner is (top, left)."""
    _check_image(img, "crop")
    h, w = _hw(img)
    if top < 0 or left < 0 or height <= 0 or width <= 0 or top + height > h or left + width > w:
        raise ValueError(f"crop: the {height}x{width} window at (top={top}, left={left}) does not fit in the "
                         f"{h}x{w} image")
    if _is_tensor_image(img):
        nd = len(img.shape)
        return M.slice(img, [nd - 2, nd - 1], [top, left], [top + height, left + width])
    return _on_hwc(lambda a: a[top:top + height, left:left + width], img)


def center_crop(img, output_size):
    """The centred window of output_size (an int or (h, w))."""
    _check_image(img, "center_crop")
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    h, w = _hw(img)
    th, tw = output_size
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def hflip(img):
    """Mirrors left to right."""
    _check_image(img, "hflip")
    if _is_tensor_image(img):
        return M.flip(img, [-1])
    return _on_hwc(lambda a: a[:, ::-1].copy(), img)


def vflip(img):
    """Mirrors top to bottom."""
    _check_image(img, "vflip")
    if _is_tensor_image(img):
        return M.flip(img, [-2])
    return _on_hwc(lambda a: a[::-1].copy(), img)


def normalize(img, mean, std, data_format="CHW", to_rgb=False):
    """(img - mean) / std per channel; an array comes back as a float32 array, a tensor as a tensor."""
    _check_image(img, "normalize")
    if data_format not in ("CHW", "HWC"):
        raise ValueError(f"normalize: data_format must be 'CHW' or 'HWC', got '{data_format}'")
    shape = (-1, 1, 1) if data_format == "CHW" else (1, 1, -1)
    mean = np.asarray(mean, dtype=np.float32).reshape(shape)
    std = np.asarray(std, dtype=np.float32).reshape(shape)
    if _is_tensor_image(img):
        dtype = img.dtype if img.dtype.is_floating_point else "float32"
        x = M.cast(img, dtype)
        return M.divide(M.subtract(x, _to_tensor(mean, dtype=dtype)), _to_tensor(std, dtype=dtype))
    a = np.asarray(img).astype(np.float32)
    if to_rgb:
        a = a[..., ::-1]
    return (a - mean) / std


def erase(img, i, j, h, w, v, inplace=False):
    """img with the h x w window at (i, j) set to v (a value broadcast over the
    window: per channel, or a whole [h, w, C] / [C, h, w] block for tensors)."""
    _check_image(img, "erase")
    if _is_tensor_image(img):
        a = img.numpy().copy()
        a[..., i:i + h, j:j + w] = v.numpy() if isinstance(v, Tensor) else v
        if inplace:
            img.set_value(a)
            return img
        return _to_tensor(a)
    if _is_pil_image(img):
        def run(a):
            a = a.copy()
            a[i:i + h, j:j + w] = v
            return a
        return _on_hwc(run, img)
    out = img if inplace else img.copy()
    out[i:i + h, j:j + w, ...] = v
    return out


def _max_value(dtype):
    return 255.0 if np.issubdtype(dtype, np.integer) else 1.0


def _blend(a, b, ratio):
    """ratio * a + (1 - ratio) * b, clipped to the dtype's range and cast back (truncating, as Paddle)."""
    out = np.clip(b + ratio * (a.astype(np.float64) - b), 0, _max_value(a.dtype))
    return out.astype(a.dtype)


def _gray(a):
    """Luma of an HWC RGB array (0.2989 R + 0.587 G + 0.114 B), as float64 [H, W, 1]."""
    if a.shape[2] == 1:
        return a.astype(np.float64)
    return (a[..., :3].astype(np.float64) @ np.array([0.2989, 0.587, 0.114]))[..., None]


def adjust_brightness(img, brightness_factor):
    """Scales the values by brightness_factor (>= 0)."""
    _check_image(img, "adjust_brightness")
    if brightness_factor < 0:
        raise ValueError(f"adjust_brightness: brightness_factor must be non-negative, got {brightness_factor}")
    return _on_hwc(lambda a: _blend(a, 0.0, brightness_factor), img)


def adjust_contrast(img, contrast_factor):
    """Blends with the mean grey level: 0 gives a flat grey image, 1 the original."""
    _check_image(img, "adjust_contrast")
    if contrast_factor < 0:
        raise ValueError(f"adjust_contrast: contrast_factor must be non-negative, got {contrast_factor}")
    return _on_hwc(lambda a: _blend(a, _gray(a).mean(), contrast_factor), img)


def adjust_saturation(img, saturation_factor):
    """Blends with the grey image: 0 gives grey, 1 the original, 2 doubles the saturation."""
    _check_image(img, "adjust_saturation")
    if saturation_factor < 0:
        raise ValueError(f"adjust_saturation: saturation_factor must be non-negative, got {saturation_factor}")
    return _on_hwc(lambda a: _blend(a, _gray(a), saturation_factor), img)


def _rgb_to_hsv(rgb):
    maxc, minc = rgb.max(-1), rgb.min(-1)
    delta = maxc - minc
    safe = np.where(delta == 0, 1.0, delta)
    s = np.where(maxc == 0, 0.0, delta / np.where(maxc == 0, 1.0, maxc))
    r, g, b = (rgb[..., i] for i in range(3))
    rc, gc, bc = (maxc - r) / safe, (maxc - g) / safe, (maxc - b) / safe
    h = np.where(maxc == r, bc - gc, np.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = np.where(delta == 0, 0.0, (h / 6.0) % 1.0)
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    return np.stack([np.choose(i, [c[k] for c in choices]) for k in range(3)], -1)


def adjust_hue(img, hue_factor):
    """Rotates the hue by hue_factor (in [-0.5, 0.5]) of a full turn; 1-channel images are unchanged."""
    _check_image(img, "adjust_hue")
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"adjust_hue: hue_factor must be in [-0.5, 0.5], got {hue_factor}")

    def run(a):
        if a.shape[2] == 1:
            return a
        scale = _max_value(a.dtype)
        h, s, v = _rgb_to_hsv(a[..., :3].astype(np.float64) / scale)
        out = _hsv_to_rgb((h + hue_factor) % 1.0, s, v) * scale
        return out.astype(a.dtype)
    return _on_hwc(run, img)


def to_grayscale(img, num_output_channels=1):
    """Luma image with 1 or 3 (equal) channels."""
    _check_image(img, "to_grayscale")
    if num_output_channels not in (1, 3):
        raise ValueError(f"to_grayscale: num_output_channels must be 1 or 3, got {num_output_channels}")

    def run(a):
        g = _gray(a)
        g = np.rint(g).astype(a.dtype) if np.issubdtype(a.dtype, np.integer) else g.astype(a.dtype)
        return np.repeat(g, num_output_channels, axis=2)
    return _on_hwc(run, img)


from .geometry import affine, perspective, rotate  # noqa: E402 - uses the helpers above

__all__ = ["affine", "rotate", "perspective", "to_tensor", "resize", "pad", "crop", "center_crop", "hflip", "vflip",
           "normalize", "erase", "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
           "to_grayscale"]
