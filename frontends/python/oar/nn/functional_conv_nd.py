"""paddle.nn.functional conv1d/2d/3d and the transposed convolutions, built
on the core's conv2d and its input gradient (so autograd comes with them).

conv1d is conv2d on a height-1 image. conv3d stacks the kd depth taps of x
into channels and runs one conv2d over (batch x output depth). A transposed
convolution is the adjoint of a convolution in its input: conv2d_grad_input
with zero padding gives the full output, which is then cropped by the padding
(and grown by output_padding); 3-D adds each depth tap's 2-D result at its
strided depth offset."""
from .. import _C
from .functional_nd import channel_first, ntuple, pad_spatial, padding_pairs, restore

_ops = _C.ops


def _conv2d_core(x, w, stride, pairs, dilation, groups):
    (top, bottom), (left, right) = pairs
    if top == bottom and left == right:
        return _ops.conv2d(x, w, None, stride, [top, left], dilation, groups)
    return _ops.conv2d(pad_spatial(x, pairs), w, None, stride, [0, 0], dilation, groups)


def _check(x, weight, groups, n, what, transpose):
    if len(weight.shape) != n + 2:
        raise ValueError(f"{what}: weight must be {n + 2}-D, got shape {list(weight.shape)}")
    groups = int(groups)
    if groups < 1:
        raise ValueError(f"{what}: groups must be >= 1, got {groups}")
    c = x.shape[1]
    expected = weight.shape[0] if transpose else weight.shape[1] * groups
    if c != expected:
        raise ValueError(f"{what}: x has {c} channels but weight {list(weight.shape)} with groups={groups} "
                         f"expects {expected}")
    if transpose and c % groups:
        raise ValueError(f"{what}: x's {c} channels are not divisible by groups {groups}")
    return groups


def _add_bias(y, bias, n):
    if bias is None:
        return y
    return _ops.add(y, _ops.reshape(bias, [1, -1] + [1] * n))


def _conv3d(x, w, stride, pairs, dilation, groups):
    x = pad_spatial(x, pairs)
    n, c, depth = x.shape[0], x.shape[1], x.shape[2]
    o, kd = w.shape[0], w.shape[2]
    (sd, sh, sw), (dd, dh, dw) = stride, dilation
    od = (depth - dd * (kd - 1) - 1) // sd + 1
    taps = [_ops.unsqueeze(_ops.slice(x, [2], [p * dd], [p * dd + (od - 1) * sd + 1], [sd]), [1]) for p in range(kd)]
    h, wd = x.shape[3], x.shape[4]
    stacked = _ops.reshape(_ops.concat(taps, 1), [n, kd, groups, c // groups, od, h, wd])
    stacked = _ops.reshape(_ops.transpose(stacked, [0, 4, 2, 1, 3, 5, 6]), [n * od, kd * c, h, wd])
    w2 = _ops.reshape(_ops.transpose(w, [0, 2, 1, 3, 4]), [o, kd * w.shape[1], w.shape[3], w.shape[4]])
    y = _ops.conv2d(stacked, w2, None, [sh, sw], [0, 0], [dh, dw], groups)
    y = _ops.reshape(y, [n, od, o, y.shape[2], y.shape[3]])
    return _ops.transpose(y, [0, 2, 1, 3, 4])


def _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, n, what):
    x, last = channel_first(x, n, data_format, what)
    groups = _check(x, weight, groups, n, what, False)
    stride, dilation = ntuple(stride, n, f"{what}: stride"), ntuple(dilation, n, f"{what}: dilation")
    pairs = padding_pairs(padding, n, list(weight.shape[2:]), stride, dilation, list(x.shape[2:]), what, last)
    for size, (a, b), k, d in zip(x.shape[2:], pairs, weight.shape[2:], dilation):
        if size + a + b < d * (k - 1) + 1:
            raise ValueError(f"{what}: x's spatial shape {list(x.shape[2:])} padded by {pairs} is smaller than the "
                             f"kernel {list(weight.shape[2:])} with dilation {dilation}")
    if n == 1:
        y = _conv2d_core(_ops.unsqueeze(x, [2]), _ops.unsqueeze(weight, [2]), [1] + stride, [(0, 0)] + pairs,
                         [1] + dilation, groups)
        y = _ops.squeeze(y, [2])
    elif n == 2:
        y = _conv2d_core(x, weight, stride, pairs, dilation, groups)
    else:
        y = _conv3d(x, weight, stride, pairs, dilation, groups)
    return restore(_add_bias(y, bias, n), n, last)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCL", name=None):
    """x [N, C, L] (or NLC), weight [Cout, C / groups, k]."""
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 1, "conv1d")


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """x [N, C, H, W] (or NHWC), weight [Cout, C / groups, kh, kw]."""
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 2, "conv2d")


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCDHW", name=None):
    """x [N, C, D, H, W] (or NDHWC), weight [Cout, C / groups, kd, kh, kw]."""
    return _conv_nd(x, weight, bias, stride, padding, dilation, groups, data_format, 3, "conv3d")


# ---- transposed ----

def _full_transpose2d(x, w, stride, dilation, groups):
    """The adjoint of an unpadded conv2d: [N, Cin, H, W] -> [N, Cout, (H-1)s + d(k-1) + 1, ...]."""
    sizes = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(2)]
    attrs = {"strides": stride, "paddings": [0, 0], "dilations": dilation, "groups": groups,
             "input_shape": [-1, w.shape[1] * groups] + sizes}
    return _ops.call("conv2d_grad_input", [x, w], attrs)[0]


def _dilate(x, axis, step):
    """step - 1 zeros between x's entries along axis."""
    if step == 1:
        return x
    length = x.shape[axis]
    y = _ops.unsqueeze(x, [axis + 1])
    pads = [0] * (2 * len(y.shape))
    pads[2 * (axis + 1) + 1] = step - 1
    y = _ops.pad(y, pads, 0.0)
    shape = list(x.shape)
    shape[axis] = length * step
    return _ops.slice(_ops.reshape(y, shape), [axis], [0], [(length - 1) * step + 1])


def _full_transpose3d(x, w, stride, dilation, groups):
    n, cin, depth = x.shape[0], x.shape[1], x.shape[2]
    cout_g, kd = w.shape[1], w.shape[2]
    x2 = _ops.reshape(_ops.transpose(x, [0, 2, 1, 3, 4]), [n * depth, cin, x.shape[3], x.shape[4]])
    w2 = _ops.reshape(_ops.transpose(w, [0, 2, 1, 3, 4]), [cin, kd * cout_g, w.shape[3], w.shape[4]])
    y = _full_transpose2d(x2, w2, stride[1:], dilation[1:], groups)
    hf, wf = y.shape[2], y.shape[3]
    y = _ops.reshape(y, [n, depth, groups, kd, cout_g, hf, wf])
    total = None
    for p in range(kd):
        tap = _ops.reshape(_ops.slice(y, [3], [p], [p + 1]), [n, depth, groups * cout_g, hf, wf])
        tap = _dilate(tap, 1, stride[0])
        before, after = p * dilation[0], (kd - 1 - p) * dilation[0]
        tap = _ops.pad(tap, [0, 0, before, after] + [0] * 6, 0.0)
        total = tap if total is None else _ops.add(total, tap)
    return _ops.transpose(total, [0, 2, 1, 3, 4])


def _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                       data_format, n, what):
    x, last = channel_first(x, n, data_format, what)
    groups = _check(x, weight, groups, n, what, True)
    stride, dilation = ntuple(stride, n, f"{what}: stride"), ntuple(dilation, n, f"{what}: dilation")
    kernel, sizes = list(weight.shape[2:]), list(x.shape[2:])
    pairs = padding_pairs(padding, n, kernel, stride, dilation, sizes, what, last)
    full = [(s - 1) * st + d * (k - 1) + 1 for s, st, d, k in zip(sizes, stride, dilation, kernel)]
    base = [f - a - b for f, (a, b) in zip(full, pairs)]
    extra = ntuple(output_padding, n, f"{what}: output_padding")
    if output_size is not None:
        if any(extra):
            raise ValueError(f"{what}: output_padding and output_size are mutually exclusive; give one of them")
        wanted = ntuple(output_size, n, f"{what}: output_size")
        extra = [w - b for w, b in zip(wanted, base)]
        for w, b, st in zip(wanted, base, stride):
            if not b <= w < b + st:
                raise ValueError(f"{what}: output_size {wanted} must be within [{base}, base + stride {stride})")
    for e, st, d in zip(extra, stride, dilation):
        if e < 0 or e >= max(st, d):
            raise ValueError(f"{what}: output_padding {extra} must be >= 0 and less than max(stride, dilation)")
    if n == 1:
        y = _ops.squeeze(_full_transpose2d(_ops.unsqueeze(x, [2]), _ops.unsqueeze(weight, [2]), [1] + stride,
                                           [1] + dilation, groups), [2])
    elif n == 2:
        y = _full_transpose2d(x, weight, stride, dilation, groups)
    else:
        y = _full_transpose3d(x, weight, stride, dilation, groups)
    y = pad_spatial(y, [(0, max(0, e - b)) for e, (a, b) in zip(extra, pairs)])
    y = _ops.slice(y, list(range(2, n + 2)), [a for a, _ in pairs], [a + b + e for (a, _), b, e in
                                                                       zip(pairs, base, extra)])
    return restore(_add_bias(y, bias, n), n, last)


def conv1d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCL", name=None):
    """x [N, Cin, L], weight [Cin, Cout / groups, k]."""
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 1, "conv1d_transpose")


def conv2d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                     output_size=None, data_format="NCHW", name=None):
    """x [N, Cin, H, W], weight [Cin, Cout / groups, kh, kw]."""
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 2, "conv2d_transpose")


def conv3d_transpose(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1,
                     output_size=None, data_format="NCDHW", name=None):
    """x [N, Cin, D, H, W], weight [Cin, Cout / groups, kd, kh, kw]."""
    return _conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, output_size,
                              data_format, 3, "conv3d_transpose")


__all__ = ["conv1d", "conv2d", "conv3d", "conv1d_transpose", "conv2d_transpose", "conv3d_transpose"]
