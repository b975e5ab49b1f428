"""paddle.nn.functional: activations, losses, normalization, linear, dropout, ..."""
import numbers

import numpy as np

from .. import _C
from .. import math as M
from ..creation import to_tensor
from ..framework import Tensor, convert_dtype

_ops = _C.ops


def relu(x, name=None):
    return _ops.relu(x)


def relu6(x, name=None):
    return M.clip(_ops.relu(x), max=6.0)


def leaky_relu(x, negative_slope=0.01, name=None):
    return _ops.where(_ops.greater_than(x, _ops.scalar_like(x, 0.0)), x, _ops.multiply_scalar(x, negative_slope))


def elu(x, alpha=1.0, name=None):
    return _ops.where(_ops.greater_than(x, _ops.scalar_like(x, 0.0)), x,
                      _ops.multiply_scalar(_ops.subtract_scalar(_ops.exp(x), 1.0), alpha))


def gelu(x, approximate=False, name=None):
    return _ops.gelu(x, approximate)


def silu(x, name=None):
    return _ops.silu(x)


swish = silu


def sigmoid(x, name=None):
    return _ops.sigmoid(x)


def tanh(x, name=None):
    return _ops.tanh(x)


def softplus(x, beta=1, threshold=20, name=None):
    bx = _ops.multiply_scalar(x, float(beta))
    soft = _ops.divide_scalar(M.log1p(_ops.exp(_ops.minimum(bx, _ops.scalar_like(bx, float(threshold))))), float(beta))
    return _ops.where(_ops.greater_than(bx, _ops.scalar_like(bx, float(threshold))), x, soft)


def mish(x, name=None):
    return _ops.multiply(x, _ops.tanh(softplus(x)))


def hardsigmoid(x, slope=0.1666667, offset=0.5, name=None):
    return M.clip(M.add(M.multiply(x, slope), offset), 0.0, 1.0)


def hardswish(x, name=None):
    return M.multiply(x, M.divide(M.clip(M.add(x, 3.0), 0.0, 6.0), 6.0))


def softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = M.cast(x, dtype)
    return _ops.softmax(x, int(axis))


def log_softmax(x, axis=-1, dtype=None, name=None):
    if dtype is not None:
        x = M.cast(x, dtype)
    return _ops.log_softmax(x, int(axis))


def linear(x, weight, bias=None, name=None):
    return _ops.linear(x, weight, bias)


def layer_norm(x, normalized_shape, weight=None, bias=None, epsilon=1e-05, name=None):
    n = 1 if isinstance(normalized_shape, numbers.Integral) else len(normalized_shape)
    return _ops.layer_norm(x, weight, bias, float(epsilon), len(x.shape) - n)


def rms_norm(x, normalized_shape=None, weight=None, epsilon=1e-6, name=None):
    return _ops.rms_norm(x, weight, float(epsilon))


def normalize(x, p=2, axis=1, epsilon=1e-12, name=None):
    n = M.norm(x, p, axis, keepdim=True)
    return M.divide(x, M.maximum(n, epsilon))


def dropout(x, p=0.5, axis=None, training=True, mode="upscale_in_train", name=None):
    if not training or p == 0.0:
        return x if mode == "upscale_in_train" else M.multiply(x, 1.0 - p)
    if mode != "upscale_in_train":
        mask = M.greater_equal(_ops.uniform(x.shape, 0.0, 1.0, x.dtype), p)
        return M.multiply(x, M.cast(mask, x.dtype))
    return _ops.dropout(x, float(p), True)


def embedding(x, weight, padding_idx=None, sparse=False, name=None):
    out = _ops.embedding(x, weight)
    if padding_idx is not None:
        pad = padding_idx % weight.shape[0]
        keep = M.cast(M.not_equal(x, pad), out.dtype)
        out = M.multiply(out, _ops.unsqueeze(keep, [-1]))
    return out


def one_hot(x, num_classes, name=None):
    # Checked on the host eagerly, by the program when traced (Note [Index values]).
    x = _ops.check_index(x, int(num_classes), "one_hot", "class", "num_classes")
    classes = _ops.arange(0.0, float(num_classes), 1.0, x.dtype)
    return M.cast(_ops.equal(_ops.unsqueeze(x, [-1]), classes), "float32")


# ---- losses ----

def _reduce(loss, reduction):
    if reduction == "mean":
        return _ops.mean(loss, [], False)
    if reduction == "sum":
        return _ops.sum(loss, [], False)
    if reduction == "none":
        return loss
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got '{reduction}'")


def mse_loss(input, label, reduction="mean", name=None):  # noqa: A002
    return _ops.mse_loss(input, label, reduction)


def l1_loss(input, label, reduction="mean", name=None):  # noqa: A002
    return _reduce(_ops.abs(_ops.subtract(input, label)), reduction)


def smooth_l1_loss(input, label, reduction="mean", delta=1.0, name=None):  # noqa: A002
    d = _ops.abs(_ops.subtract(input, label))
    quad = _ops.multiply_scalar(_ops.multiply(d, d), 0.5 / delta)
    lin = _ops.subtract_scalar(d, 0.5 * delta)
    return _reduce(_ops.where(_ops.less_than(d, _ops.scalar_like(d, delta)), quad, lin), reduction)


def cross_entropy(input, label, weight=None, ignore_index=-100, reduction="mean", soft_label=False,  # noqa: A002
                  axis=-1, use_softmax=True, label_smoothing=0.0, name=None):
    if weight is not None:
        raise NotImplementedError("cross_entropy: class weights are not supported yet")
    if not use_softmax:
        raise NotImplementedError("cross_entropy: use_softmax=False is not supported yet")
    if label_smoothing and label_smoothing > 0.0:
        n = input.shape[axis]
        if not soft_label:
            lab = label
            if len(lab.shape) == len(input.shape):
                lab = _ops.squeeze(lab, [axis])
            label = one_hot(lab, n)
            soft_label = True
        label = M.add(M.multiply(label, 1.0 - label_smoothing), label_smoothing / n)
    return _ops.cross_entropy(input, label, bool(soft_label), int(axis), reduction, int(ignore_index))


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100, numeric_stable_mode=True,
                               return_softmax=False, axis=-1):
    loss = _ops.cross_entropy(logits, label, soft_label, axis, "none", ignore_index)
    loss = _ops.unsqueeze(loss, [axis])
    return (loss, _ops.softmax(logits, axis)) if return_softmax else loss


def nll_loss(input, label, weight=None, ignore_index=-100, reduction="mean", name=None):  # noqa: A002
    picked = _ops.neg(M.take_along_axis(input, _ops.unsqueeze(label, [1]).numpy(), 1))
    picked = _ops.squeeze(picked, [1])
    valid = M.cast(M.not_equal(label, ignore_index), picked.dtype)
    picked = _ops.multiply(picked, valid)
    if reduction == "mean":
        return M.divide(_ops.sum(picked, [], False), M.maximum(_ops.sum(valid, [], False), 1.0))
    return _reduce(picked, reduction)


def binary_cross_entropy(input, label, weight=None, reduction="mean", name=None):  # noqa: A002
    eps = 1e-12
    loss = _ops.neg(M.add(M.multiply(label, M.log(M.maximum(input, eps))),
                          M.multiply(M.subtract(1.0, label), M.log(M.maximum(M.subtract(1.0, input), eps)))))
    if weight is not None:
        loss = M.multiply(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(logit, label, weight=None, reduction="mean", pos_weight=None, name=None):
    # max(x, 0) - x*z + log(1 + exp(-|x|))
    loss = M.add(M.subtract(_ops.relu(logit), M.multiply(logit, label)),
                 M.log1p(_ops.exp(_ops.neg(_ops.abs(logit)))))
    if weight is not None:
        loss = M.multiply(loss, weight)
    return _reduce(loss, reduction)


def kl_div(input, label, reduction="mean", log_target=False, name=None):  # noqa: A002
    if log_target:
        loss = M.multiply(_ops.exp(label), M.subtract(label, input))
    else:
        loss = M.multiply(label, M.subtract(M.log(M.maximum(label, 1e-30)), input))
    if reduction == "batchmean":
        return M.divide(_ops.sum(loss, [], False), input.shape[0])
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, axis=1, eps=1e-8):
    dot = _ops.sum(_ops.multiply(x1, x2), [axis], False)
    n = M.multiply(M.maximum(M.norm(x1, 2, axis), eps), M.maximum(M.norm(x2, 2, axis), eps))
    return M.divide(dot, n)


from .functional_conv import *  # noqa: E402,F401,F403 - conv, pooling, batch_norm, attention
from .functional_conv_nd import *  # noqa: E402,F401,F403 - conv1d/3d, transposed convs
from .functional_pool_nd import *  # noqa: E402,F401,F403 - 1-D/2-D/3-D, adaptive and unpooling
from .functional_extra import *  # noqa: E402,F401,F403 - pad, interpolate, fold, shuffles, norms

__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "np", "numbers", "M", "Tensor", "convert_dtype", "to_tensor", "functional_conv", "no_grad")]
