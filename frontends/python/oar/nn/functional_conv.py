"""paddle.nn.functional: convolution, pooling, batch norm and attention (NCHW
in the core; NHWC by transposing around it)."""
import numbers

from .. import _C
from .. import math as M
from ..autograd import no_grad
from ..framework import Tensor

_ops = _C.ops


def _pair(v, what):
    if isinstance(v, numbers.Integral):
        return [int(v), int(v)]
    v = [int(i) for i in v]
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a list of 2 ints, got {v}")
    return v


def _padding(padding, kernel, stride, dilation, hw, what):
    """[top, bottom, left, right] from Paddle's padding forms: an int, [ph, pw],
    [top, bottom, left, right], [[0,0],[0,0],[t,b],[l,r]], 'VALID' or 'SAME'."""
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [0, 0, 0, 0]
        if mode != "SAME":
            raise ValueError(f"{what}: padding must be 'SAME', 'VALID' or numbers, got '{padding}'")
        pads = []
        for size, k, s, d in zip(hw, kernel, stride, dilation):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads += [total // 2, total - total // 2]  # the odd one at the bottom/right, like Paddle
        return pads
    if isinstance(padding, numbers.Integral):
        return [int(padding)] * 4
    padding = list(padding)
    if padding and isinstance(padding[0], (list, tuple)):
        padding = [int(p) for pair in padding[-2:] for p in pair]
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return padding * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    if len(padding) == 4:
        return padding
    raise ValueError(f"{what}: padding must have 1, 2 or 4 entries, got {padding}")


def _nchw(x, data_format):
    if data_format == "NCHW":
        return x
    if data_format != "NHWC":
        raise ValueError(f"data_format must be 'NCHW' or 'NHWC', got '{data_format}'")
    return _ops.transpose(x, [0, 3, 1, 2])


def _back(y, data_format):
    return y if data_format == "NCHW" else _ops.transpose(y, [0, 2, 3, 1])


def _symmetric(x, pads, value=0.0):
    """The core pads symmetrically; an asymmetric padding is applied to x first."""
    top, bottom, left, right = pads
    if top == bottom and left == right:
        return x, [top, left]
    return _ops.pad(x, [0, 0, 0, 0, top, bottom, left, right], value), [0, 0]


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, data_format="NCHW", name=None):
    """x [N, C, H, W], weight [Cout, C / groups, kh, kw], bias [Cout]."""
    x = _nchw(x, data_format)
    stride, dilation = _pair(stride, "conv2d: stride"), _pair(dilation, "conv2d: dilation")
    pads = _padding(padding, list(weight.shape[2:]), stride, dilation, list(x.shape[2:]), "conv2d")
    x, sym = _symmetric(x, pads)
    return _back(_ops.conv2d(x, weight, bias, stride, sym, dilation, int(groups)), data_format)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.9, epsilon=1e-05,
               data_format="NCHW", use_global_stats=None, name=None):
    """Normalizes over every axis but the channel axis (1 for NC..., last for N...C).
    In training (unless use_global_stats) it uses the batch's mean and biased
    variance and updates the running buffers in place:
    running = momentum * running + (1 - momentum) * batch (Paddle's rule)."""
    nd = len(x.shape)
    channel = nd - 1 if data_format in ("NHWC", "NLC", "NDHWC") else 1
    axes = [a for a in range(nd) if a != channel]
    shape = [1] * nd
    shape[channel] = x.shape[channel]
    use_batch = training and not use_global_stats
    if use_batch:
        mean = _ops.mean(x, axes, True)
        centered = _ops.subtract(x, mean)
        var = _ops.mean(_ops.multiply(centered, centered), axes, True)
        with no_grad():
            for buf, value in ((running_mean, mean), (running_var, var)):
                new = _ops.add(_ops.multiply_scalar(buf, momentum),
                               _ops.multiply_scalar(_ops.reshape(value.detach(), list(buf.shape)), 1.0 - momentum))
                buf._set_data_(_ops.cast(new, buf.dtype) if new.dtype != buf.dtype else new)
    else:
        mean = _ops.reshape(running_mean, shape)
        var = _ops.reshape(running_var, shape)
        centered = _ops.subtract(x, mean)
    out = _ops.multiply(centered, _ops.rsqrt(_ops.add_scalar(var, float(epsilon))))
    if weight is not None:
        out = _ops.multiply(out, _ops.reshape(weight, shape))
    if bias is not None:
        out = _ops.add(out, _ops.reshape(bias, shape))
    return out


def _attention_bias(attn_mask, dtype):
    """Paddle's _convert_attention_mask: a bool/int mask keeps True/1 entries
    (others get -1e9 added); a float mask is added as is."""
    if attn_mask is None:
        return None
    if not isinstance(attn_mask, Tensor):
        from ..creation import to_tensor
        attn_mask = to_tensor(attn_mask)
    if not attn_mask.dtype.is_floating_point:
        return _ops.multiply_scalar(_ops.subtract_scalar(_ops.cast(attn_mask, dtype), 1.0), 1e9)
    return _ops.cast(attn_mask, dtype) if attn_mask.dtype != dtype else attn_mask


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 training=True, backend=None, scale=None, enable_gqa=True, name=None):
    """query/key/value [batch, seq, heads, head_dim] (Paddle's layout)."""
    if attn_mask is None and not dropout_p and scale is None:
        return _ops.scaled_dot_product_attention(query, key, value, bool(is_causal))
    q, k, v = (_ops.transpose(t, [0, 2, 1, 3]) for t in (query, key, value))
    head_dim = query.shape[-1]
    scores = _ops.multiply_scalar(_ops.matmul(q, k, False, True), scale or head_dim ** -0.5)
    if is_causal:
        sq, sk = scores.shape[-2], scores.shape[-1]
        causal = M.tril(_ops.full([sq, sk], 1.0, scores.dtype))
        scores = _ops.add(scores, _attention_bias(M.cast(causal, "bool"), scores.dtype))
    bias = _attention_bias(attn_mask, scores.dtype)
    if bias is not None:
        scores = _ops.add(scores, bias)
    weights = _ops.softmax(scores, -1)
    if dropout_p and training:
        weights = _ops.dropout(weights, float(dropout_p), True)
    return _ops.transpose(_ops.matmul(weights, v, False, False), [0, 2, 1, 3])


__all__ = ["conv2d", "batch_norm",
           "scaled_dot_product_attention"]
