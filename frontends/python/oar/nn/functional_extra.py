"""paddle.nn.functional: pad (constant/reflect/replicate/circular), interpolate
and upsample, unfold/fold, pixel/channel shuffles, group/instance/local
response norm. Composed of core ops: padding modes and resizing are gathers
along one axis at a time with host-built indices (and weights), unfold is a
conv2d with an identity kernel and fold its adjoint."""
import numbers

import numpy as np

from .. import _C
from ..creation import to_tensor
from .functional_nd import index_tensor, ntuple

_ops = _C.ops

_SPATIAL_LAST = {"NLC": 1, "NWC": 1, "NHWC": 2, "NDHWC": 3}
_SPATIAL_FIRST = {"NCL": 1, "NCW": 1, "NCHW": 2, "NCDHW": 3}


def _ints(v):
    if hasattr(v, "numpy"):
        v = v.numpy().tolist()
    return [int(i.item() if hasattr(i, "item") else i) for i in (v if isinstance(v, (list, tuple)) else [v])]


def _spatial_axes(nd, data_format, what):
    """The spatial axes of an nd-D x in data_format (None: channel-first)."""
    if data_format is None:
        return list(range(2, nd))
    if data_format in _SPATIAL_FIRST and _SPATIAL_FIRST[data_format] == nd - 2:
        return list(range(2, nd))
    if data_format in _SPATIAL_LAST and _SPATIAL_LAST[data_format] == nd - 2:
        return list(range(1, nd - 1))
    raise ValueError(f"{what}: data_format '{data_format}' does not fit a {nd}-D x")


def _pad_index(length, before, after, mode):
    idx = np.arange(-before, length + after)
    if mode == "reflect":
        if before >= length or after >= length:
            raise ValueError(f"pad: reflect padding ({before}, {after}) must be smaller than the dim's size {length}")
        idx = np.abs(idx)
        idx = np.where(idx >= length, 2 * (length - 1) - idx, idx)
    elif mode == "replicate":
        idx = np.clip(idx, 0, length - 1)
    else:  # circular
        idx = idx % length
    return idx


def pad(x, pad, mode="constant", value=0.0, data_format=None, pad_from_left_axis=True, name=None):
    """Pads x. With 2 * ndim entries in constant mode, pairs run from the first
    dim (pad_from_left_axis) or the last; otherwise pairs apply to the spatial
    dims of data_format from the last one backwards ([left, right, top,
    bottom, front, back]). Modes: constant, reflect, replicate, circular."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got '{mode}'")
    pads, nd = _ints(pad), len(x.shape)
    if len(pads) % 2:
        raise ValueError(f"pad: pad must have an even number of entries, got {pads}")
    before_after = [[0, 0] for _ in range(nd)]
    if len(pads) == 2 * nd and mode == "constant":
        order = range(nd) if pad_from_left_axis else range(nd - 1, -1, -1)
        for i, d in enumerate(order):
            before_after[d] = pads[2 * i:2 * i + 2]
    else:
        axes = _spatial_axes(nd, data_format, "pad") if (mode != "constant" or data_format) else list(range(nd))
        if len(pads) // 2 > len(axes):
            raise ValueError(f"pad: {len(pads)} entries are too many for a {nd}-D x in mode '{mode}' "
                             f"(at most {2 * len(axes)})")
        for i in range(len(pads) // 2):
            before_after[axes[-1 - i]] = pads[2 * i:2 * i + 2]
    if mode == "constant":
        if any(p < 0 for pair in before_after for p in pair):
            starts = [max(0, -a) for a, _ in before_after]
            ends = [s - max(0, -b) for s, (_, b) in zip(x.shape, before_after)]
            x = _ops.slice(x, list(range(nd)), starts, ends)
            before_after = [[max(0, a), max(0, b)] for a, b in before_after]
        return _ops.pad(x, [p for pair in before_after for p in pair], float(value))
    for d, (a, b) in enumerate(before_after):
        if a or b:
            x = _ops.gather(x, index_tensor(_pad_index(x.shape[d], a, b, mode), x), d)
    return x


def zeropad2d(x, padding, data_format="NCHW", name=None):
    """padding [left, right, top, bottom] (or one int) of zeros."""
    padding = _ints(padding) * 4 if isinstance(padding, numbers.Integral) else _ints(padding)
    return pad(x, padding, "constant", 0.0, data_format)


# ---- interpolate ----

def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((t - 5) * t + 8) * t * a - 4 * a, 0.0))


def _resize_taps(size, out, scale, mode, align_corners, align_mode):
    """[(index [out], weight [out])] reading the output along one axis from the input."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        ratio = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale else size / out
    if mode == "nearest":
        src = np.floor(dst * ratio + 0.5) if align_corners else np.floor(dst * ratio)
        return [(np.minimum(src.astype(np.int64), size - 1), np.ones(out))]
    if mode == "bicubic":
        src = dst * ratio if align_corners else (dst + 0.5) * ratio - 0.5
        base = np.floor(src)
        frac = src - base
        return [(np.clip(base + o, 0, size - 1).astype(np.int64), _cubic(frac - o)) for o in (-1, 0, 1, 2)]
    if align_corners or align_mode == 1:
        src = dst * ratio
    else:
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    frac = src - lo
    return [(lo, 1.0 - frac), (hi, frac)]


_MODES = {"nearest": None, "linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2, "area": None}


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0,
                data_format=None, recompute_scale_factor=None, antialias=False, name=None):
    """Resizes the spatial dims of a 3-D, 4-D or 5-D x to size (or by
    scale_factor): nearest, linear, bilinear, trilinear, bicubic or area."""
    mode = mode.lower()
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode must be one of {sorted(_MODES)}, got '{mode}'")
    nd = len(x.shape)
    if nd not in (3, 4, 5):
        raise ValueError(f"interpolate: x must be 3-D, 4-D or 5-D, got shape {list(x.shape)}")
    if _MODES[mode] is not None and _MODES[mode] != nd - 2:
        raise ValueError(f"interpolate: mode '{mode}' needs a {_MODES[mode] + 2}-D x, got shape {list(x.shape)}")
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported")
    if align_corners and mode == "nearest":
        raise ValueError("interpolate: align_corners=True is not allowed with mode 'nearest'")
    axes = _spatial_axes(nd, data_format, "interpolate")
    sizes = [x.shape[a] for a in axes]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        outs = ntuple(_ints(size), len(axes), "interpolate: size")
        scales = [None] * len(axes)
    else:
        scales = _flt(scale_factor)
        scales = scales * len(axes) if len(scales) == 1 else scales
        if len(scales) != len(axes) or min(scales) <= 0:
            raise ValueError(f"interpolate: scale_factor must be positive, one per spatial dim, got {scale_factor}")
        outs = [int(s * f) for s, f in zip(sizes, scales)]
        if recompute_scale_factor:
            scales = [None] * len(axes)
    if min(outs) < 1:
        raise ValueError(f"interpolate: the output size {outs} must be positive")
    if mode == "area":
        from .functional_pool_nd import _adaptive_avg
        layout = {1: "NCL", 2: "NCHW", 3: "NCDHW"} if axes[0] == 2 else {1: "NLC", 2: "NHWC", 3: "NDHWC"}
        return _adaptive_avg(x, nd - 2, outs, layout[nd - 2], "interpolate")
    for axis, s, o, scale in zip(axes, sizes, outs, scales):
        if s == o and scale in (None, 1.0):
            continue
        total = None
        for index, weight in _resize_taps(s, o, scale, mode, align_corners, align_mode):
            term = _ops.gather(x, index_tensor(index, x), axis)
            if mode != "nearest":
                shape = [1] * nd
                shape[axis] = o
                w = _ops.cast(to_tensor(weight.reshape(shape), place=x._device), x.dtype)
                term = _ops.multiply(term, w)
            total = term if total is None else _ops.add(total, term)
        x = total
    return x


def _flt(v):
    if hasattr(v, "numpy"):
        return v.numpy().reshape(-1).tolist()
    return [float(i) for i in v] if isinstance(v, (list, tuple)) else [float(v)]


def upsample(x, size=None, scale_factor=None, mode="nearest", align_corners=False, align_mode=0, data_format=None,
             name=None):
    return interpolate(x, size, scale_factor, mode, align_corners, align_mode, data_format)


# ---- unfold / fold ----

def _unfold_geometry(kernel_sizes, strides, paddings, dilations, what):
    kernel = ntuple(kernel_sizes, 2, f"{what}: kernel_sizes")
    stride = ntuple(strides, 2, f"{what}: strides")
    dilation = ntuple(dilations, 2, f"{what}: dilations")
    p = _ints(paddings)
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[1], p[0], p[1]]
    elif len(p) != 4:
        raise ValueError(f"{what}: paddings must have 1, 2 or 4 entries, got {p}")
    top, left, bottom, right = p  # Paddle's order
    return kernel, stride, dilation, [(top, bottom), (left, right)]


def _eye_kernel(kernel, like):
    k = kernel[0] * kernel[1]
    eye = np.eye(k).reshape(k, 1, kernel[0], kernel[1])
    return _ops.cast(to_tensor(eye, place=like._device), like.dtype)


def unfold(x, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """im2col: x [N, C, H, W] -> [N, C * kh * kw, L], L the number of windows."""
    if len(x.shape) != 4:
        raise ValueError(f"unfold: x must be 4-D [N, C, H, W], got shape {list(x.shape)}")
    kernel, stride, dilation, pairs = _unfold_geometry(kernel_sizes, strides, paddings, dilations, "unfold")
    n, c, h, w = x.shape
    flat = _ops.reshape(x, [n * c, 1, h, w])
    (top, bottom), (left, right) = pairs
    flat = _ops.pad(flat, [0, 0, 0, 0, top, bottom, left, right], 0.0)
    cols = _ops.conv2d(flat, _eye_kernel(kernel, x), None, stride, [0, 0], dilation, 1)
    return _ops.reshape(cols, [n, c * kernel[0] * kernel[1], cols.shape[2] * cols.shape[3]])


def fold(x, output_sizes, kernel_sizes, strides=1, paddings=0, dilations=1, name=None):
    """col2im, the adjoint of unfold: x [N, C * kh * kw, L] -> [N, C, H, W],
    overlapping window entries summed."""
    if len(x.shape) != 3:
        raise ValueError(f"fold: x must be 3-D [N, C * kh * kw, L], got shape {list(x.shape)}")
    kernel, stride, dilation, pairs = _unfold_geometry(kernel_sizes, strides, paddings, dilations, "fold")
    out = ntuple(output_sizes, 2, "fold: output_sizes")
    padded = [o + a + b for o, (a, b) in zip(out, pairs)]
    blocks = [(p - d * (k - 1) - 1) // s + 1 for p, d, k, s in zip(padded, dilation, kernel, stride)]
    n, ck, length = x.shape
    k = kernel[0] * kernel[1]
    if ck % k or blocks[0] * blocks[1] != length:
        raise ValueError(f"fold: x {list(x.shape)} does not fit kernel {kernel} and output {out}: expected "
                         f"C * {k} rows and {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]} columns")
    c = ck // k
    cols = _ops.reshape(x, [n * c, k, blocks[0], blocks[1]])
    attrs = {"strides": stride, "paddings": [0, 0], "dilations": dilation, "groups": 1,
             "input_shape": [-1, 1] + padded}
    img = _ops.call("conv2d_grad_input", [cols, _eye_kernel(kernel, x)], attrs)[0]
    img = _ops.slice(img, [2, 3], [pairs[0][0], pairs[1][0]], [pairs[0][0] + out[0], pairs[1][0] + out[1]])
    return _ops.reshape(img, [n, c] + out)


# ---- shuffles ----

def _check_format(x, factor, data_format, what):
    if len(x.shape) != 4:
        raise ValueError(f"{what}: x must be 4-D ({data_format}), got shape {list(x.shape)}")
    if int(factor) < 1:
        raise ValueError(f"{what}: the factor must be a positive int, got {factor}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"{what}: data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    return data_format == "NHWC"


def pixel_shuffle(x, upscale_factor, data_format="NCHW", name=None):
    """[N, C * r * r, H, W] -> [N, C, H * r, W * r]."""
    last, r = _check_format(x, upscale_factor, data_format, "pixel_shuffle"), int(upscale_factor)
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if last else x.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the {c} channels are not divisible by upscale_factor ** 2 = {r * r}")
    if last:
        y = _ops.transpose(_ops.reshape(x, [n, h, w, c // (r * r), r, r]), [0, 1, 4, 2, 5, 3])
        return _ops.reshape(y, [n, h * r, w * r, c // (r * r)])
    y = _ops.transpose(_ops.reshape(x, [n, c // (r * r), r, r, h, w]), [0, 1, 4, 2, 5, 3])
    return _ops.reshape(y, [n, c // (r * r), h * r, w * r])


def pixel_unshuffle(x, downscale_factor, data_format="NCHW", name=None):
    """[N, C, H * r, W * r] -> [N, C * r * r, H, W]."""
    last, r = _check_format(x, downscale_factor, data_format, "pixel_unshuffle"), int(downscale_factor)
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if last else x.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height {h} and width {w} must be divisible by downscale_factor {r}")
    if last:
        y = _ops.transpose(_ops.reshape(x, [n, h // r, r, w // r, r, c]), [0, 1, 3, 5, 2, 4])
        return _ops.reshape(y, [n, h // r, w // r, c * r * r])
    y = _ops.transpose(_ops.reshape(x, [n, c, h // r, r, w // r, r]), [0, 1, 3, 5, 2, 4])
    return _ops.reshape(y, [n, c * r * r, h // r, w // r])


def channel_shuffle(x, groups, data_format="NCHW", name=None):
    """Channels viewed as [groups, C / groups] and transposed."""
    last, g = _check_format(x, groups, data_format, "channel_shuffle"), int(groups)
    n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if last else x.shape
    if g < 1 or c % g:
        raise ValueError(f"channel_shuffle: the {c} channels are not divisible by groups {g}")
    if last:
        y = _ops.transpose(_ops.reshape(x, [n, h, w, g, c // g]), [0, 1, 2, 4, 3])
    else:
        y = _ops.transpose(_ops.reshape(x, [n, g, c // g, h, w]), [0, 2, 1, 3, 4])
    return _ops.reshape(y, list(x.shape))


# ---- normalization ----

def _to_channel_first(x, data_format):
    nd = len(x.shape)
    if data_format is None or data_format.startswith("NC"):
        return x, False
    return _ops.transpose(x, [0, nd - 1] + list(range(1, nd - 1))), True


def _from_channel_first(y, last):
    nd = len(y.shape)
    return _ops.transpose(y, [0] + list(range(2, nd)) + [1]) if last else y


def _affine(y, weight, bias):
    shape = [1, -1] + [1] * (len(y.shape) - 2)
    if weight is not None:
        y = _ops.multiply(y, _ops.reshape(weight, shape))
    if bias is not None:
        y = _ops.add(y, _ops.reshape(bias, shape))
    return y


def _standardize(x, axes, epsilon):
    mean = _ops.mean(x, axes, True)
    centered = _ops.subtract(x, mean)
    var = _ops.mean(_ops.multiply(centered, centered), axes, True)
    return _ops.multiply(centered, _ops.rsqrt(_ops.add_scalar(var, float(epsilon))))


def group_norm(x, num_groups, epsilon=1e-05, weight=None, bias=None, data_format="NCHW", name=None):
    """Normalizes each group of C / num_groups channels (with the spatial dims) per sample."""
    x, last = _to_channel_first(x, data_format)
    n, c = x.shape[0], x.shape[1]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"group_norm: the {c} channels are not divisible by num_groups {num_groups}")
    y = _standardize(_ops.reshape(x, [n, num_groups, -1]), [2], epsilon)
    return _from_channel_first(_affine(_ops.reshape(y, list(x.shape)), weight, bias), last)


def instance_norm(x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.9, eps=1e-05, data_format="NCHW", name=None):
    """Normalizes each channel of each sample over its spatial dims (or with
    the running statistics when use_input_stats is False)."""
    x, last = _to_channel_first(x, data_format)
    if len(x.shape) < 3:
        raise ValueError(f"instance_norm: x must have spatial dims ([N, C, ...]), got shape {list(x.shape)}")
    if use_input_stats or running_mean is None:
        y = _standardize(x, list(range(2, len(x.shape))), eps)
    else:
        shape = [1, -1] + [1] * (len(x.shape) - 2)
        y = _ops.multiply(_ops.subtract(x, _ops.reshape(running_mean, shape)),
                          _ops.rsqrt(_ops.add_scalar(_ops.reshape(running_var, shape), float(eps))))
    return _from_channel_first(_affine(y, weight, bias), last)


def local_response_norm(x, size, alpha=0.0001, beta=0.75, k=1.0, data_format="NCHW", name=None):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels) ** beta."""
    x, last = _to_channel_first(x, data_format)
    if len(x.shape) < 3:
        raise ValueError(f"local_response_norm: x must be 3-D or more, got shape {list(x.shape)}")
    if int(size) < 1:
        raise ValueError(f"local_response_norm: size must be a positive int, got {size}")
    c = x.shape[1]
    sq = _ops.multiply(x, x)
    pads = [0] * (2 * len(x.shape))
    pads[2], pads[3] = size // 2, (size - 1) // 2
    sq = _ops.pad(sq, pads, 0.0)
    total = None
    for i in range(size):
        part = _ops.slice(sq, [1], [i], [i + c])
        total = part if total is None else _ops.add(total, part)
    div = _ops.pow_scalar(_ops.add_scalar(_ops.multiply_scalar(total, alpha / size), float(k)), float(beta))
    return _from_channel_first(_ops.divide(x, div), last)


__all__ = ["pad", "zeropad2d", "interpolate", "upsample", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "group_norm", "instance_norm", "local_response_norm"]
