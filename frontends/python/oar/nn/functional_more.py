"""paddle.nn.functional, second part: the remaining activations (celu, selu,
glu, shrinks, prelu, rrelu, maxout, swiglu, ...), the feature dropouts,
gumbel_softmax, label_smooth, sequence_mask, temporal_shift, affine_grid,
bilinear, pairwise_distance, class_center_sample and gather_tree. All are
composed of differentiable ops, so autograd follows."""

import numbers

import numpy as np

from .. import _C
from .. import math as M
from ..creation import ones_like, to_tensor, zeros_like
from ..framework import Tensor, convert_dtype, to_numpy_dtype

_ops = _C.ops

_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


def _check_tensor(x, what, arg="x"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{what}: {arg} must be a Tensor, got {type(x).__name__}")


def _zeros_like(x):
    return _ops.zeros_like(x)


def _axis(axis, ndim, what):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis must be in [{-ndim}, {ndim}), got {axis}")
    return axis % ndim


# ---- activations ----

def celu(x, alpha=1.0, name=None):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise ZeroDivisionError("celu: alpha must not be 0")
    neg = M.multiply(M.subtract(M.exp(M.divide(M.minimum(x, 0.0), float(alpha))), 1.0), float(alpha))
    return M.add(_ops.relu(x), neg)


def selu(x, scale=_SELU_SCALE, alpha=_SELU_ALPHA, name=None):
    """scale * x for x > 0, scale * alpha * (exp(x) - 1) otherwise."""
    if scale <= 1.0:
        raise ValueError(f"selu: scale must be greater than 1.0, got {scale}")
    if alpha < 0:
        raise ValueError(f"selu: alpha must be no less than 0, got {alpha}")
    neg = M.multiply(M.subtract(M.exp(M.minimum(x, 0.0)), 1.0), float(alpha))
    return M.multiply(M.where(M.greater_than(x, 0.0), x, neg), float(scale))


def glu(x, axis=-1, name=None):
    """a * sigmoid(b), a and b the two halves of x along axis."""
    axis = _axis(axis, len(x.shape), "glu")
    if x.shape[axis] % 2:
        raise ValueError(f"glu: the size of axis {axis} must be even, got {x.shape[axis]}")
    a, b = M.split(x, 2, axis)
    return M.multiply(a, _ops.sigmoid(b))


def hardshrink(x, threshold=0.5, name=None):
    return M.where(M.greater_than(M.abs(x), float(threshold)), x, _zeros_like(x))


def hardtanh(x, min=-1.0, max=1.0, name=None):  # noqa: A002 - Paddle's names
    return M.clip(x, float(min), float(max))


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), stable for large |x|."""
    return M.subtract(M.minimum(x, 0.0), M.log1p(M.exp(M.neg(M.abs(x)))))


def maxout(x, groups, axis=1, name=None):
    """The max over each run of `groups` channels along axis."""
    nd = len(x.shape)
    if axis not in (1, -1, 3) or (axis == 3 and nd != 4):
        raise ValueError(f"maxout: axis must be 1, -1 or 3, got {axis}")
    axis %= nd
    c = x.shape[axis]
    if groups <= 0 or c % groups:
        raise ValueError(f"maxout: the channel count {c} must be a multiple of groups, got groups={groups}")
    shape = list(x.shape[:axis]) + [c // groups, groups] + list(x.shape[axis + 1:])
    return M.max(M.reshape(x, shape), axis=axis + 1)


def prelu(x, weight, data_format="NCHW", name=None):
    """x where x > 0, weight * x elsewhere; weight has 1 or C (channel) entries."""
    _check_tensor(weight, "prelu", "weight")
    if data_format not in ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
        raise ValueError(f"prelu: unknown data_format '{data_format}'")
    n = int(np.prod(weight.shape))
    w = M.reshape(weight, [-1])
    if n > 1:
        if len(x.shape) < 2:
            raise ValueError(f"prelu: x must have a channel axis for {n} weights, got shape {list(x.shape)}")
        axis = 1 if data_format[1] == "C" else len(x.shape) - 1
        if x.shape[axis] != n:
            raise ValueError(f"prelu: weight has {n} entries but x has {x.shape[axis]} channels")
        shape = [1] * len(x.shape)
        shape[axis] = n
        w = M.reshape(w, shape)
    return M.where(M.greater_than(x, 0.0), x, M.multiply(x, w))


def rrelu(x, lower=1.0 / 8.0, upper=1.0 / 3.0, training=True, name=None):
    """Leaky ReLU with a slope drawn from U(lower, upper) per element when
    training, (lower + upper) / 2 otherwise."""
    if not 0 <= lower <= upper <= 1:
        raise ValueError(f"rrelu: need 0 <= lower <= upper <= 1, got lower={lower}, upper={upper}")
    if training:
        slope = _ops.uniform(list(x.shape), float(lower), float(upper), x.dtype)
    else:
        slope = (lower + upper) / 2.0
    return M.where(M.greater_equal(x, 0.0), x, M.multiply(x, slope))


def softshrink(x, threshold=0.5, name=None):
    if threshold < 0:
        raise ValueError(f"softshrink: threshold must be no less than 0, got {threshold}")
    t = float(threshold)
    shrunk = M.where(M.greater_than(x, t), M.subtract(x, t), M.add(x, t))
    return M.where(M.greater_than(M.abs(x), t), shrunk, _zeros_like(x))


def softsign(x, name=None):
    return M.divide(x, M.add(M.abs(x), 1.0))


def tanhshrink(x, name=None):
    return M.subtract(x, _ops.tanh(x))


def thresholded_relu(x, threshold=1.0, value=0.0, name=None):
    return M.where(M.greater_than(x, float(threshold)), x, M.full_like(x, float(value)))


def silu(x, inplace=False, name=None):
    """x * sigmoid(x); with inplace=True x itself is overwritten and returned."""
    if inplace:
        from .. import inplace as _inplace_mod
        return _inplace_mod.method(lambda t: _ops.silu(t), "silu_")(x)
    return _ops.silu(x)


def swish(x, name=None):
    return _ops.silu(x)


def swiglu(x, y=None, name=None):
    """silu(x) * y; without y, x is split in two halves along the last axis."""
    if y is None:
        if x.shape[-1] % 2:
            raise ValueError(f"swiglu: the last axis of x must be even when y is None, got {x.shape[-1]}")
        x, y = M.split(x, 2, -1)
    return M.multiply(_ops.silu(x), y)


# ---- random activations and dropouts ----

def gumbel_softmax(x, temperature=1.0, hard=False, axis=-1, name=None):
    """softmax((x + g) / temperature) with g Gumbel(0, 1) noise; with hard=True
    the one-hot of the argmax, whose gradient is that of the soft sample."""
    if temperature <= 0:
        raise ValueError(f"gumbel_softmax: temperature must be positive, got {temperature}")
    u = _ops.uniform(list(x.shape), 1e-10, 1.0, x.dtype)
    g = M.neg(M.log(M.neg(M.log(u))))
    y = _ops.softmax(M.divide(M.add(x, g), float(temperature)), int(axis))
    if not hard:
        return y
    index = M.argmax(y, axis=axis, keepdim=True)
    y_hard = M.cast(M.equal(_arange_along(y, axis), index), y.dtype)
    return M.add(M.subtract(y_hard, y.detach()), y)


def _arange_along(x, axis):
    """0, 1, ... along axis of x, broadcastable against x."""
    nd = len(x.shape)
    axis %= nd
    shape = [1] * nd
    shape[axis] = x.shape[axis]
    return M.reshape(_ops.arange(0.0, float(x.shape[axis]), 1.0, convert_dtype("int64")), shape)


def _check_p(p, what):
    if not isinstance(p, numbers.Number) or not 0 <= p <= 1:
        raise ValueError(f"{what}: p must be a number in [0, 1], got {p}")


def _alpha_dropout(x, p, mask_shape):
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = M.cast(M.greater_equal(_ops.uniform(mask_shape, 0.0, 1.0, x.dtype), float(p)), x.dtype)
    y = M.add(M.multiply(x, keep), M.multiply(M.subtract(1.0, keep), alpha_p))
    return M.add(M.multiply(y, a), b)


def alpha_dropout(x, p=0.5, training=True, name=None):
    """Dropout that keeps SELU's zero mean and unit variance: dropped
    entries become -alpha*scale, then an affine map restores the moments."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0:
        return x
    if p == 1:
        return _zeros_like(x)
    return _alpha_dropout(x, p, list(x.shape))


def feature_alpha_dropout(x, p=0.5, training=True, name=None):
    """alpha_dropout of whole channels (axis 1) of x [N, C, ...]."""
    _check_p(p, "feature_alpha_dropout")
    if len(x.shape) < 2:
        raise ValueError(f"feature_alpha_dropout: x must have at least 2 dims, got shape {list(x.shape)}")
    if not training or p == 0:
        return x
    if p == 1:
        return _zeros_like(x)
    return _alpha_dropout(x, p, list(x.shape[:2]) + [1] * (len(x.shape) - 2))


def _channel_dropout(x, p, training, channel_last, what):
    _check_p(p, what)
    if not training or p == 0:
        return x
    if p == 1:
        return _zeros_like(x)
    shape = [1] * len(x.shape)
    shape[0] = x.shape[0]
    c = len(x.shape) - 1 if channel_last else 1
    shape[c] = x.shape[c]
    keep = M.cast(M.greater_equal(_ops.uniform(shape, 0.0, 1.0, x.dtype), float(p)), x.dtype)
    return M.multiply(x, M.divide(keep, 1.0 - p))


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002 - Paddle's name
    """Zero whole channels of input [N, C, L] (or [C, L]) with probability p
    and scale the rest by 1 / (1 - p); inplace=True writes input itself."""
    if len(input.shape) not in (2, 3):
        raise ValueError(f"dropout1d: input must be 2-D or 3-D, got shape {list(input.shape)}")
    def drop(x):
        if len(x.shape) == 2:
            return M.squeeze(_channel_dropout(M.unsqueeze(x, [0]), p, training, False, "dropout1d"), [0])
        return _channel_dropout(x, p, training, False, "dropout1d")

    if inplace:
        from .. import inplace as _inplace_mod
        return _inplace_mod.method(drop, "dropout1d_")(input)
    return drop(input)


def dropout2d(x, p=0.5, training=True, data_format="NCHW", name=None):
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"dropout2d: data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    if len(x.shape) != 4:
        raise ValueError(f"dropout2d: x must be 4-D, got shape {list(x.shape)}")
    return _channel_dropout(x, p, training, data_format == "NHWC", "dropout2d")


def dropout3d(x, p=0.5, training=True, data_format="NCDHW", name=None):
    if data_format not in ("NCDHW", "NDHWC"):
        raise ValueError(f"dropout3d: data_format must be 'NCDHW' or 'NDHWC', got '{data_format}'")
    if len(x.shape) != 5:
        raise ValueError(f"dropout3d: x must be 5-D, got shape {list(x.shape)}")
    return _channel_dropout(x, p, training, data_format == "NDHWC", "dropout3d")


# ---- labels, masks, shifts, grids ----

def label_smooth(label, prior_dist=None, epsilon=0.1, name=None):
    """(1 - epsilon) * label + epsilon * prior (uniform over the last axis by default)."""
    if not 0 <= epsilon <= 1:
        raise ValueError(f"label_smooth: epsilon must be in [0, 1], got {epsilon}")
    prior = 1.0 / label.shape[-1] if prior_dist is None else prior_dist
    return M.add(M.multiply(label, 1.0 - epsilon), M.multiply(prior, float(epsilon)))


def sequence_mask(x, maxlen=None, dtype="int64", name=None):
    """mask[..., j] = j < x[...], j in [0, maxlen); maxlen defaults to max(x)."""
    if maxlen is None:
        maxlen = int(M.max(x).item())
    elif isinstance(maxlen, Tensor):
        maxlen = int(maxlen.item())
    if maxlen < 0:
        raise ValueError(f"sequence_mask: maxlen must be non-negative, got {maxlen}")
    steps = _ops.arange(0.0, float(maxlen), 1.0, x.dtype)
    return M.cast(M.less_than(steps, M.unsqueeze(x, [-1])), dtype)


def temporal_shift(x, seg_num, shift_ratio=0.25, name=None, data_format="NCHW"):
    """Shift a share of the channels one step in time within each segment of
    seg_num frames: the first shift_ratio of them from the previous frame,
    the next shift_ratio from the following frame (zeros at the ends)."""
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"temporal_shift: data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    if len(x.shape) != 4:
        raise ValueError(f"temporal_shift: x must be 4-D, got shape {list(x.shape)}")
    if seg_num <= 0 or x.shape[0] % seg_num:
        raise ValueError(f"temporal_shift: the batch {x.shape[0]} must be a multiple of seg_num={seg_num}")
    if not 0 <= shift_ratio <= 0.5:
        raise ValueError(f"temporal_shift: shift_ratio must be in [0, 0.5], got {shift_ratio}")
    if data_format == "NHWC":
        x = M.transpose(x, [0, 3, 1, 2])
    n, c, h, w = x.shape
    v = M.reshape(x, [n // seg_num, seg_num, c, h, w])
    c1, c2 = int(c * shift_ratio), int(c * 2 * shift_ratio)
    zero = _zeros_like(v[:, :1])
    padded = M.concat([zero, v, zero], axis=1)
    out = M.concat([padded[:, :seg_num, :c1], padded[:, 2:, c1:c2], v[:, :, c2:]], axis=2)
    out = M.reshape(out, [n, c, h, w])
    return M.transpose(out, [0, 2, 3, 1]) if data_format == "NHWC" else out


def _grid_axis(n, align_corners, dtype):
    if align_corners:
        vals = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
    else:
        vals = (np.arange(n) * 2.0 + 1.0) / n - 1.0
    return vals.astype(dtype)


def affine_grid(theta, out_shape, align_corners=True, name=None):
    """The sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) of the affine maps
    theta [N, 2, 3] (or [N, 3, 4]) over an output of shape out_shape."""
    _check_tensor(theta, "affine_grid", "theta")
    if isinstance(out_shape, Tensor):
        out_shape = out_shape.numpy().tolist()
    out_shape = [int(s) for s in out_shape]
    nd = len(out_shape) - 2
    if nd not in (2, 3) or list(theta.shape[1:]) != [nd, nd + 1]:
        raise ValueError(f"affine_grid: theta must be [N, 2, 3] for a 4-D out_shape or [N, 3, 4] for a 5-D one, "
                         f"got theta {list(theta.shape)} and out_shape {out_shape}")
    if theta.shape[0] != out_shape[0]:
        raise ValueError(f"affine_grid: theta has batch {theta.shape[0]} but out_shape has {out_shape[0]}")
    np_dtype = np.dtype(to_numpy_dtype(theta.dtype))
    axes = [_grid_axis(s, align_corners, np_dtype) for s in out_shape[2:]]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [mesh[-1], mesh[-2]] + ([mesh[0]] if nd == 3 else [])  # x (W), y (H), z (D)
    base = np.stack(coords + [np.ones_like(mesh[0])], axis=-1).reshape(1, -1, nd + 1)
    grid = M.matmul(to_tensor(base), theta, transpose_y=True)  # [N, P, nd]
    return M.reshape(grid, [out_shape[0]] + out_shape[2:] + [nd])


def _reflect(coord, twice_low, twice_high):
    """Reflect coord into [twice_low / 2, twice_high / 2] (piecewise linear, so differentiable)."""
    if twice_low == twice_high:
        return M.multiply(coord, 0.0)
    low, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    dist = M.abs(M.subtract(coord, low))
    flips = M.floor(M.divide(dist, span)).detach()
    extra = M.subtract(dist, M.multiply(flips, span))
    even = M.equal(M.remainder(flips, 2.0), 0.0)
    return M.where(even, M.add(extra, low), M.add(M.subtract(span, extra), low))


def _source_coord(g, size, padding_mode, align_corners):
    c = M.multiply(M.add(g, 1.0), (size - 1) / 2.0) if align_corners else \
        M.divide(M.subtract(M.multiply(M.add(g, 1.0), float(size)), 1.0), 2.0)
    if padding_mode == "border":
        c = M.clip(c, 0.0, float(size - 1))
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = M.clip(c, 0.0, float(size - 1))
    return c


def grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, name=None):
    """Sample x [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]) by
    bilinear or nearest interpolation; points outside read 0 ('zeros'), the
    edge ('border') or the mirror image ('reflection'). Differentiable in x
    and (bilinear) in grid."""
    if mode not in ("bilinear", "nearest"):
        raise ValueError(f"grid_sample: mode must be 'bilinear' or 'nearest', got '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got '{padding_mode}'")
    if len(x.shape) != 4 or len(grid.shape) != 4 or grid.shape[-1] != 2 or grid.shape[0] != x.shape[0]:
        raise ValueError(f"grid_sample: x must be [N, C, H, W] and grid [N, Ho, Wo, 2] (only 4-D is supported), "
                         f"got {list(x.shape)} and {list(grid.shape)}")
    n, c, h, w = x.shape
    ho, wo = grid.shape[1], grid.shape[2]
    grid = M.cast(grid, x.dtype)
    ix = _source_coord(grid[:, :, :, 0], w, padding_mode, align_corners)
    iy = _source_coord(grid[:, :, :, 1], h, padding_mode, align_corners)
    flat = M.reshape(x, [n, c, h * w])

    def tap(xi, yi, weight):  # integer tensors [n, ho, wo]: ops, so a to_static trace holds them too
        valid = M.logical_and(M.logical_and(M.greater_equal(xi, 0), M.less_than(xi, w)),
                              M.logical_and(M.greater_equal(yi, 0), M.less_than(yi, h)))
        index = M.add(M.multiply(M.clip(yi, 0, h - 1), w), M.clip(xi, 0, w - 1))
        index = M.broadcast_to(M.reshape(index, [n, 1, ho * wo]), [n, c, ho * wo])
        vals = M.take_along_axis(flat, index, 2)
        keep = M.cast(valid, x.dtype)
        return M.multiply(vals, M.reshape(M.multiply(weight, keep), [n, 1, ho * wo]))

    i64 = "int64"
    if mode == "nearest":
        if _C.ir.is_symbolic(ix):
            xi, yi = M.cast(M.round(ix), i64), M.cast(M.round(iy), i64)
        else:  # numpy's round half to even
            xi, yi = (to_tensor(np.rint(t.numpy()).astype(np.int64)) for t in (ix, iy))
        out = tap(xi, yi, M.full_like(ix, 1.0))
    else:
        x0, y0 = M.floor(ix).detach(), M.floor(iy).detach()
        wx1, wy1 = M.subtract(ix, x0), M.subtract(iy, y0)
        wx0, wy0 = M.subtract(1.0, wx1), M.subtract(1.0, wy1)
        x0, y0 = M.cast(x0, i64), M.cast(y0, i64)
        x1, y1 = M.add(x0, 1), M.add(y0, 1)
        out = M.add(M.add(tap(x0, y0, M.multiply(wx0, wy0)), tap(x1, y0, M.multiply(wx1, wy0))),
                    M.add(tap(x0, y1, M.multiply(wx0, wy1)), tap(x1, y1, M.multiply(wx1, wy1))))
    return M.reshape(out, [n, c, ho, wo])


def bilinear(x1, x2, weight, bias=None, name=None):
    """out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]; weight [O, I1, I2]."""
    if len(weight.shape) != 3 or x1.shape[-1] != weight.shape[1] or x2.shape[-1] != weight.shape[2]:
        raise ValueError(f"bilinear: weight must be [out, {x1.shape[-1]}, {x2.shape[-1]}] for x1 {list(x1.shape)} "
                         f"and x2 {list(x2.shape)}, got {list(weight.shape)}")
    left = M.matmul(M.unsqueeze(x1, [0]), weight)  # [O, N, I2]
    out = M.transpose(M.sum(M.multiply(left, M.unsqueeze(x2, [0])), axis=-1), [1, 0])
    return out if bias is None else M.add(out, bias)


def pairwise_distance(x, y, p=2.0, epsilon=1e-6, keepdim=False, name=None):
    """The p-norm of x - y + epsilon over the last axis."""
    if x.shape[-1] != y.shape[-1] and 1 not in (x.shape[-1], y.shape[-1]):
        raise ValueError(f"pairwise_distance: x {list(x.shape)} and y {list(y.shape)} differ in the last axis")
    d = M.add(M.subtract(x, y), float(epsilon))
    if p == 0:
        return M.sum(M.cast(M.not_equal(d, 0.0), d.dtype), axis=-1, keepdim=keepdim)
    return M.norm(d, p=float(p), axis=-1, keepdim=keepdim)


def class_center_sample(label, num_classes, num_samples, group=None):
    """Sample num_samples class centres: every class in label, then random
    others; returns the labels remapped to the sampled indices and the
    (sorted positive, then negative) sampled class ids."""
    if group not in (None, False) and group is not True:
        raise ValueError("class_center_sample: only a single process (group=None) is supported")
    if num_samples > num_classes:
        raise ValueError(f"class_center_sample: num_samples ({num_samples}) must not exceed "
                         f"num_classes ({num_classes})")
    lab = label.numpy().reshape(-1)
    if lab.size and (lab.min() < 0 or lab.max() >= num_classes):
        raise ValueError(f"class_center_sample: labels must be in [0, {num_classes}), "
                         f"got [{lab.min()}, {lab.max()}]")
    positive = np.unique(lab)
    if len(positive) < num_samples:
        rest = np.setdiff1d(np.arange(num_classes), positive)
        order = _ops.uniform([len(rest)], 0.0, 1.0, convert_dtype("float32")).numpy().argsort()
        sampled = np.concatenate([positive, rest[order[:num_samples - len(positive)]]])
    else:
        sampled = positive
    remap = {c: i for i, c in enumerate(sampled.tolist())}
    remapped = np.array([remap[c] for c in lab.tolist()], dtype=lab.dtype).reshape(label.shape)
    return to_tensor(remapped), to_tensor(sampled.astype(lab.dtype))


def gather_tree(ids, parents):
    """Trace the beams of ids [T, B, beam] back through parents (same shape)
    from the last step: out[t, b, k] is the token of the path ending in k."""
    if list(ids.shape) != list(parents.shape) or len(ids.shape) != 3:
        raise ValueError(f"gather_tree: ids and parents must both be [T, B, beam], "
                         f"got {list(ids.shape)} and {list(parents.shape)}")
    if _C.ir.is_symbolic(ids) or _C.ir.is_symbolic(parents):
        return _gather_tree_traced(ids, parents)
    i, par = ids.numpy(), parents.numpy()
    t_len, batch, beam = i.shape
    if par.size and (par.min() < 0 or par.max() >= beam):
        raise ValueError(f"gather_tree: parents must be in [0, {beam}), got [{par.min()}, {par.max()}]")
    out = np.empty_like(i)
    pick = np.tile(np.arange(beam), (batch, 1))
    rows = np.arange(batch)[:, None]
    for t in range(t_len - 1, -1, -1):
        out[t] = i[t][rows, pick]
        pick = par[t][rows, pick]
    return to_tensor(out)


def _gather_tree_traced(ids, parents):
    """gather_tree inside to_static (T may be known only when the program runs): a captured
    while from t = T-1 down to 0 carrying the picked beams and writing row t of the result."""
    from ..control_flow import _captured_while
    _, batch, beam = ids.shape
    pick = to_tensor(np.tile(np.arange(beam, dtype=np.int64), (batch, 1)))
    t_len = M.reshape(M.slice(M.shape(ids), [0], [0], [1]), [])
    t0 = M.subtract(M.cast(t_len, "int64"), ones_like(M.cast(t_len, "int64")))

    def row(x, t):
        return M.squeeze(M.gather(x, M.reshape(t, [1]), 0), [0])

    def cond(t, pick, out):
        return M.greater_equal(t, zeros_like(t))

    def body(t, pick, out):
        token = M.take_along_axis(row(ids, t), pick, 1)  # parents out of range: an error when it runs
        out = M.scatter(out, M.reshape(t, [1]), M.unsqueeze(token, [0]), overwrite=True)
        return [M.subtract(t, ones_like(t)), M.take_along_axis(row(parents, t), pick, 1), out]

    return _captured_while(cond, body, [t0, pick, zeros_like(ids)], " (at nn.functional.gather_tree)")[2]


__all__ = ["celu", "selu", "glu", "hardshrink", "hardtanh", "log_sigmoid", "maxout", "prelu", "rrelu",
           "softshrink", "softsign", "tanhshrink", "thresholded_relu", "silu", "swish", "swiglu", "gumbel_softmax",
           "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "label_smooth",
           "sequence_mask", "temporal_shift", "affine_grid", "grid_sample", "bilinear", "pairwise_distance",
           "class_center_sample", "gather_tree"]
