"""paddle.nn.functional: batch norm and attention (the convolutions and pooling
are in functional_conv_nd.py and functional_pool_nd.py)."""
from .. import _C
from .. import math as M
from ..autograd import no_grad
from ..framework import Tensor

_ops = _C.ops


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


__all__ = ["batch_norm",
           "scaled_dot_product_attention"]
