"""paddle.nn.functional losses, second part: margin, embedding, Poisson and
Gaussian NLL, focal, dice, hierarchical sigmoid, CTC (Note [CTC in ops]),
adaptive log-softmax, ... Each is composed of differentiable ops."""
import math

import numpy as np

from .. import _C
from .. import math as M
from ..creation import to_tensor
from ..framework import Tensor
from .functional_more import pairwise_distance

_ops = _C.ops
_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss, reduction, what):
    if reduction == "mean":
        return M.mean(loss)
    if reduction == "sum":
        return M.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")


def _check_reduction(reduction, what):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{what}: reduction must be 'mean', 'sum' or 'none', got '{reduction}'")


def _same_shape(a, b, what, names=("input", "label")):
    if list(a.shape) != list(b.shape):
        raise ValueError(f"{what}: {names[0]} has shape {list(a.shape)} but {names[1]} has shape {list(b.shape)}")


def _softplus(x):
    """log(1 + exp(x)), stable for large |x|."""
    return M.add(_ops.relu(x), M.log1p(M.exp(M.neg(M.abs(x)))))


def square_error_cost(input, label):  # noqa: A002
    return M.square(M.subtract(input, label))


def log_loss(input, label, epsilon=1e-4, name=None):  # noqa: A002
    """-label * log(input + eps) - (1 - label) * log(1 - input + eps), per element."""
    _same_shape(input, label, "log_loss")
    return M.neg(M.add(M.multiply(label, M.log(M.add(input, epsilon))),
                       M.multiply(M.subtract(1.0, label), M.log(M.add(M.subtract(1.0, input), epsilon)))))


def margin_ranking_loss(input, other, label, margin=0.0, reduction="mean", name=None):  # noqa: A002
    _check_reduction(reduction, "margin_ranking_loss")
    loss = _ops.relu(M.add(M.multiply(M.neg(label), M.subtract(input, other)), float(margin)))
    return _reduce(loss, reduction, "margin_ranking_loss")


def soft_margin_loss(input, label, reduction="mean", name=None):  # noqa: A002
    _check_reduction(reduction, "soft_margin_loss")
    _same_shape(input, label, "soft_margin_loss")
    return _reduce(_softplus(M.neg(M.multiply(M.cast(label, input.dtype), input))), reduction, "soft_margin_loss")


def hinge_embedding_loss(input, label, margin=1.0, reduction="mean", name=None):  # noqa: A002
    """input where label is 1, max(0, margin - input) where label is -1."""
    _check_reduction(reduction, "hinge_embedding_loss")
    zero = _ops.zeros_like(input)
    pos = M.where(M.equal(label, 1.0), input, zero)
    neg = M.where(M.equal(label, -1.0), _ops.relu(M.subtract(float(margin), input)), zero)
    return _reduce(M.add(pos, neg), reduction, "hinge_embedding_loss")


def cosine_embedding_loss(input1, input2, label, margin=0, reduction="mean", name=None):
    """1 - cos(input1, input2) where label is 1, max(0, cos - margin) where it is -1."""
    _check_reduction(reduction, "cosine_embedding_loss")
    if len(input1.shape) not in (1, 2) or list(input1.shape) != list(input2.shape):
        raise ValueError(f"cosine_embedding_loss: input1 and input2 must be the same 1-D or 2-D shape, "
                         f"got {list(input1.shape)} and {list(input2.shape)}")
    eps = 1e-12
    dot = M.sum(M.multiply(input1, input2), axis=-1)
    norm = M.sqrt(M.multiply(M.add(M.sum(M.square(input1), axis=-1), eps),
                             M.add(M.sum(M.square(input2), axis=-1), eps)))
    cos = M.divide(dot, norm)
    zero = _ops.zeros_like(cos)
    label = M.cast(label, cos.dtype)
    loss = M.add(M.where(M.equal(label, 1.0), M.subtract(1.0, cos), zero),
                 M.where(M.equal(label, -1.0), _ops.relu(M.subtract(cos, float(margin))), zero))
    return _reduce(loss, reduction, "cosine_embedding_loss")


def triplet_margin_with_distance_loss(input, positive, negative, distance_function=None, margin=1.0,  # noqa: A002
                                      swap=False, reduction="mean", name=None):
    """max(0, d(input, positive) - d(input, negative) + margin); with swap the
    negative distance is the smaller of d(input, neg) and d(positive, neg)."""
    _check_reduction(reduction, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be positive, got {margin}")
    dist = distance_function or pairwise_distance
    d_pos, d_neg = dist(input, positive), dist(input, negative)
    if swap:
        d_neg = M.minimum(d_neg, dist(positive, negative))
    loss = _ops.relu(M.add(M.subtract(d_pos, d_neg), float(margin)))
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


def triplet_margin_loss(input, positive, negative, margin=1.0, p=2, epsilon=1e-6, swap=False,  # noqa: A002
                        reduction="mean", name=None):
    _check_reduction(reduction, "triplet_margin_loss")
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be positive, got {margin}")
    dist = lambda a, b: pairwise_distance(a, b, p, epsilon)  # noqa: E731
    d_pos, d_neg = dist(input, positive), dist(input, negative)
    if swap:
        d_neg = M.minimum(d_neg, dist(positive, negative))
    return _reduce(_ops.relu(M.add(M.subtract(d_pos, d_neg), float(margin))), reduction, "triplet_margin_loss")


def multi_label_soft_margin_loss(input, label, weight=None, reduction="mean", name=None):  # noqa: A002
    """-mean over classes of y * log(sigmoid(x)) + (1 - y) * log(sigmoid(-x))."""
    _check_reduction(reduction, "multi_label_soft_margin_loss")
    _same_shape(input, label, "multi_label_soft_margin_loss")
    label = M.cast(label, input.dtype)
    log_sig = lambda v: M.neg(_softplus(M.neg(v)))  # noqa: E731
    loss = M.neg(M.add(M.multiply(label, log_sig(input)), M.multiply(M.subtract(1.0, label), log_sig(M.neg(input)))))
    if weight is not None:
        loss = M.multiply(loss, weight)
    return _reduce(M.mean(loss, axis=-1), reduction, "multi_label_soft_margin_loss")


def multi_margin_loss(input, label, p=1, margin=1.0, weight=None, reduction="mean", name=None):  # noqa: A002
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C (times weight[y])."""
    _check_reduction(reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: p must be 1 or 2, got {p}")
    if len(input.shape) != 2 or list(label.shape) != [input.shape[0]]:
        raise ValueError(f"multi_margin_loss: input must be [N, C] and label [N], "
                         f"got {list(input.shape)} and {list(label.shape)}")
    n, c = input.shape
    lab = label.numpy().astype(np.int64)
    if lab.size and (lab.min() < 0 or lab.max() >= c):
        raise ValueError(f"multi_margin_loss: labels must be in [0, {c}), got [{lab.min()}, {lab.max()}]")
    picked = M.take_along_axis(input, lab[:, None], 1)
    hinge = _ops.relu(M.add(M.subtract(input, picked), float(margin)))
    if p == 2:
        hinge = M.square(hinge)
    others = to_tensor((np.arange(c)[None, :] != lab[:, None]).astype(np.float32)).astype(input.dtype)
    hinge = M.multiply(hinge, others)
    if weight is not None:
        hinge = M.multiply(hinge, M.unsqueeze(M.gather(weight, to_tensor(lab)), [1]))
    return _reduce(M.divide(M.sum(hinge, axis=1), float(c)), reduction, "multi_margin_loss")


def multi_label_margin_loss(input, label, reduction="mean", name=None):  # noqa: A002
    """sum over target classes j and non-target i of max(0, 1 - (x[j] - x[i])) / C;
    the targets of a row are its label entries up to the first -1."""
    _check_reduction(reduction, "multi_label_margin_loss")
    _same_shape(input, label, "multi_label_margin_loss")
    x = input if len(input.shape) == 2 else M.unsqueeze(input, [0])
    lab = label.numpy().astype(np.int64).reshape(x.shape)
    n, c = x.shape
    target = np.zeros((n, c), dtype=bool)
    for row in range(n):
        for v in lab[row]:
            if v < 0:
                break
            if v >= c:
                raise ValueError(f"multi_label_margin_loss: labels must be in [0, {c}) or -1, got {v}")
            target[row, v] = True
    pairs = to_tensor((target[:, :, None] & ~target[:, None, :]).astype(np.float32)).astype(x.dtype)
    margins = _ops.relu(M.add(M.subtract(M.unsqueeze(x, [1]), M.unsqueeze(x, [2])), 1.0))  # [n, j, i]
    loss = M.divide(M.sum(M.multiply(margins, pairs), axis=[1, 2]), float(c))
    if len(input.shape) == 1:
        loss = M.squeeze(loss, [0])
    return _reduce(loss, reduction, "multi_label_margin_loss")


def poisson_nll_loss(input, label, log_input=True, full=False, epsilon=1e-8, reduction="mean",  # noqa: A002
                     name=None):
    """exp(input) - label * input (log_input) or input - label * log(input + eps);
    full adds Stirling's term label*log(label) - label + log(2*pi*label)/2 for label > 1."""
    _check_reduction(reduction, "poisson_nll_loss")
    if epsilon <= 0:
        raise ValueError(f"poisson_nll_loss: epsilon must be positive, got {epsilon}")
    label = M.cast(label, input.dtype)
    if log_input:
        loss = M.subtract(M.exp(input), M.multiply(label, input))
    else:
        loss = M.subtract(input, M.multiply(label, M.log(M.add(input, float(epsilon)))))
    if full:
        safe = M.maximum(label, 1.0)
        stirling = M.add(M.subtract(M.multiply(safe, M.log(safe)), safe),
                         M.multiply(M.log(M.multiply(safe, 2 * math.pi)), 0.5))
        loss = M.add(loss, M.where(M.greater_than(label, 1.0), stirling, _ops.zeros_like(stirling)))
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, label, variance, full=False, epsilon=1e-6, reduction="mean", name=None):  # noqa: A002
    """(log(max(var, eps)) + (input - label)^2 / max(var, eps)) / 2 (+ log(2*pi)/2 when full)."""
    _check_reduction(reduction, "gaussian_nll_loss")
    if list(variance.shape) != list(input.shape):
        if list(variance.shape) == list(input.shape[:-1]):
            variance = M.unsqueeze(variance, [-1])
        elif not (list(variance.shape[:-1]) == list(input.shape[:-1]) and variance.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: variance has shape {list(variance.shape)}, which does not match "
                             f"input {list(input.shape)}")
    if bool(M.any(M.less_than(variance, 0.0)).item()):
        raise ValueError("gaussian_nll_loss: variance has negative entries")
    var = M.clip(variance, min=float(epsilon))
    loss = M.multiply(M.add(M.log(var), M.divide(M.square(M.subtract(input, label)), var)), 0.5)
    if full:
        loss = M.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction, "gaussian_nll_loss")


def sigmoid_focal_loss(logit, label, normalizer=None, alpha=0.25, gamma=2.0, reduction="sum", name=None):
    """alpha_t * (1 - p_t)^gamma * BCE(logit, label), optionally / normalizer."""
    _check_reduction(reduction, "sigmoid_focal_loss")
    _same_shape(logit, label, "sigmoid_focal_loss", ("logit", "label"))
    label = M.cast(label, logit.dtype)
    p = _ops.sigmoid(logit)
    ce = M.subtract(_softplus(logit), M.multiply(logit, label))
    p_t = M.add(M.multiply(p, label), M.multiply(M.subtract(1.0, p), M.subtract(1.0, label)))
    loss = M.multiply(ce, M.pow(M.subtract(1.0, p_t), float(gamma)))
    if alpha >= 0:
        loss = M.multiply(loss, M.add(M.multiply(label, alpha), M.multiply(M.subtract(1.0, label), 1.0 - alpha)))
    if normalizer is not None:
        loss = M.divide(loss, normalizer)
    return _reduce(loss, reduction, "sigmoid_focal_loss")


def dice_loss(input, label, epsilon=1e-5, name=None):  # noqa: A002
    """1 - 2 |X . Y| / (|X| + |Y|) per sample, averaged; input [N, ..., C]
    probabilities, label [N, ..., 1] class ids."""
    if len(input.shape) < 2 or list(label.shape) != list(input.shape[:-1]) + [1]:
        raise ValueError(f"dice_loss: label must have shape {list(input.shape[:-1]) + [1]} for input "
                         f"{list(input.shape)}, got {list(label.shape)}")
    from .functional import one_hot
    target = M.cast(one_hot(M.squeeze(label, [-1]), input.shape[-1]), input.dtype)
    axes = list(range(1, len(input.shape)))
    inter = M.sum(M.multiply(input, target), axis=axes)
    denom = M.add(M.sum(input, axis=axes), M.sum(target, axis=axes))
    return M.mean(M.subtract(1.0, M.divide(M.multiply(inter, 2.0), M.add(denom, float(epsilon)))))


def npair_loss(anchor, positive, labels, l2_reg=0.002):
    """Softmax cross entropy of anchor @ positive^T against the same-label
    matrix (rows normalised), plus l2_reg/4 times the mean squared norms."""
    if len(anchor.shape) != 2 or list(anchor.shape) != list(positive.shape):
        raise ValueError(f"npair_loss: anchor and positive must be the same [N, D], "
                         f"got {list(anchor.shape)} and {list(positive.shape)}")
    n = anchor.shape[0]
    lab = M.reshape(labels, [n, 1])
    same = M.cast(M.equal(lab, M.reshape(labels, [1, n])), anchor.dtype)
    same = M.divide(same, M.sum(same, axis=1, keepdim=True))
    l2 = M.add(M.mean(M.sum(M.square(anchor), axis=1)), M.mean(M.sum(M.square(positive), axis=1)))
    l2 = M.multiply(l2, 0.25 * l2_reg)
    sim = M.matmul(anchor, positive, transpose_y=True)
    ce = M.neg(M.sum(M.multiply(same, _ops.log_softmax(sim, -1)), axis=1, keepdim=True))  # [N, 1]
    return M.add(l2, M.mean(M.sum(M.multiply(same, ce), axis=0)))


def _hsigmoid_paths(label, num_classes, path_table, path_code):
    """Node indices, bits and a validity mask [N, L] of each label's path."""
    if path_table is not None:
        table, code = path_table.numpy().astype(np.int64), path_code.numpy().astype(np.int64)
        valid = table >= 0
        return np.where(valid, table, 0), np.where(valid, code, 0), valid
    c = label.astype(np.int64) + num_classes
    length = int(np.floor(np.log2(max(2 * num_classes - 1, 2))))
    bit = np.arange(length)[None, :]
    node = (c[:, None] >> (bit + 1)) - 1
    code = (c[:, None] >> bit) & 1
    valid = node >= 0
    return np.where(valid, node, 0), np.where(valid, code, 0), valid


def hsigmoid_loss(input, label, num_classes, weight, bias=None, path_table=None, path_code=None,  # noqa: A002
                  is_sparse=False, name=None):
    """Hierarchical sigmoid: the sum of binary logistic losses along the
    label's path in a binary tree of classes (the complete tree by default,
    or path_table / path_code); out [N, 1]."""
    if (path_table is None) != (path_code is None):
        raise ValueError("hsigmoid_loss: path_table and path_code must be given together")
    if path_table is None and num_classes < 2:
        raise ValueError(f"hsigmoid_loss: num_classes must be at least 2, got {num_classes}")
    lab = label.numpy().reshape(-1)
    if path_table is None and lab.size and (lab.min() < 0 or lab.max() >= num_classes):
        raise ValueError(f"hsigmoid_loss: labels must be in [0, {num_classes}), got [{lab.min()}, {lab.max()}]")
    node, code, valid = _hsigmoid_paths(lab, num_classes, path_table, path_code)
    n, length = node.shape
    w = M.reshape(M.gather(weight, to_tensor(node.reshape(-1))), [n, length, weight.shape[-1]])
    pre = M.sum(M.multiply(w, M.unsqueeze(input, [1])), axis=-1)
    if bias is not None:
        pre = M.add(pre, M.reshape(M.gather(M.reshape(bias, [-1]), to_tensor(node.reshape(-1))), [n, length]))
    # As in Paddle, a padded step of a shorter path has pre-activation 0 and
    # still adds softplus(0) = log 2.
    mask = to_tensor(valid.astype(np.float32)).astype(input.dtype)
    pre = M.multiply(M.clip(pre, -40.0, 40.0), mask)
    bits = to_tensor(code.astype(np.float32)).astype(input.dtype)
    return M.sum(M.subtract(_softplus(pre), M.multiply(bits, pre)), axis=1, keepdim=True)


# Note [CTC in ops]: the forward variable alpha of Graves et al. (2006) over
# the blank-extended label l' (length 2S+1), in log space, one step per
# frame: alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1),
# [alpha_{t-1}(s-2) if l'(s) is not blank and l'(s) != l'(s-2)]) + y_t(l'(s)).
# Every step is a few differentiable ops over the whole batch, so the
# gradient comes from autograd; frames past a sequence's length keep alpha.
# -1e30 stands for log 0 so that no inf - inf makes a NaN in the gradient.
_LOG_ZERO = -1e30


def _as_tensor(values):
    return values if isinstance(values, Tensor) else to_tensor(np.asarray(values, dtype=np.int64))


def _logsumexp3(a, b, c):
    m = M.maximum(a, M.maximum(b, c)).detach()
    return M.add(m, M.log(M.add(M.add(M.exp(M.subtract(a, m)), M.exp(M.subtract(b, m))), M.exp(M.subtract(c, m)))))


def _shift_right(x, k):
    fill = M.full_like(x[:, :k], _LOG_ZERO)
    return M.concat([fill, x[:, :-k]], axis=1)


def ctc_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean", norm_by_times=False,
             zero_infinity=False):
    """Connectionist temporal classification loss. log_probs [T, N, C] are
    unnormalised scores (a log_softmax over C is applied, as Paddle's warpctc
    does), labels [N, S] padded; returns the per-sequence -log p(label | x)
    ('none'), its sum, or the mean of it divided by the label lengths;
    norm_by_times divides only the gradient by the input lengths."""
    _check_reduction(reduction, "ctc_loss")
    if len(log_probs.shape) != 3 or len(labels.shape) != 2 or labels.shape[0] != log_probs.shape[1]:
        raise ValueError(f"ctc_loss: log_probs must be [T, N, C] and labels [N, S], "
                         f"got {list(log_probs.shape)} and {list(labels.shape)}")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise ValueError(f"ctc_loss: blank must be in [0, {c}), got {blank}")
    lab = M.cast(labels, "int64")
    in_len = M.reshape(M.cast(_as_tensor(input_lengths), "int64"), [-1])
    lab_len = M.reshape(M.cast(_as_tensor(label_lengths), "int64"), [-1])
    if in_len.shape[0] != n or lab_len.shape[0] != n:
        raise ValueError(f"ctc_loss: input_lengths and label_lengths must have {n} entries")
    if not any(_C.ir.is_symbolic(v) for v in (lab, in_len, lab_len)):  # checked when known (not in a trace)
        il, ll = in_len.numpy(), lab_len.numpy()
        if il.max(initial=0) > t_max or il.min(initial=1) < 1 or ll.max(initial=0) > lab.shape[1]:
            raise ValueError(f"ctc_loss: input_lengths must be in [1, {t_max}] and label_lengths at most "
                             f"{lab.shape[1]}")
    # The labels with a blank around each (2 S + 1 states), and where a state may skip the one
    # before it (a label after a blank after another label): ops, so traced labels work too.
    s_ext = 2 * lab.shape[1] + 1
    blanks = M.full_like(lab, blank)
    ext = M.concat([M.reshape(M.stack([blanks, lab], axis=2), [n, s_ext - 1]), M.full_like(lab[:, :1], blank)], 1)
    skip = M.logical_and(M.not_equal(ext[:, 2:], blank), M.not_equal(ext[:, 2:], ext[:, :-2]))
    skip_t = M.concat([M.full_like(ext[:, :2], 0).astype("bool"), skip], 1)
    logp = _ops.log_softmax(log_probs, -1)
    log_zero = M.full_like(M.cast(ext, logp.dtype), _LOG_ZERO)
    first = np.full((n, s_ext), False)
    first[:, :2] = True
    emit0 = M.take_along_axis(logp[0], ext, 1)
    alpha = M.where(to_tensor(first), emit0, log_zero)
    running = M.unsqueeze(in_len, [1])
    for t in range(1, t_max):
        prev2 = M.where(skip_t, _shift_right(alpha, 2), log_zero)
        step = M.add(_logsumexp3(alpha, _shift_right(alpha, 1), prev2), M.take_along_axis(logp[t], ext, 1))
        alpha = M.where(M.greater_than(running, t), step, alpha)
    twice = M.multiply(lab_len, 2)
    end = M.stack([twice, M.maximum(M.subtract(twice, 1), _ops.zeros_like(twice))], axis=1)
    last = M.take_along_axis(alpha, end, 1)
    empty = M.unsqueeze(M.equal(lab_len, 0), [1])  # no label: only the final blank counts
    second = to_tensor(np.array([[False, True]]))
    last = M.where(M.logical_and(empty, second), M.full_like(last, _LOG_ZERO), last)
    loss = M.neg(M.logsumexp(last, axis=1))
    # A label with no alignment (the input is too short) costs 0 with a zero
    # gradient, as in Paddle's warpctc (zero_infinity or not).
    impossible = M.greater_than(loss, -_LOG_ZERO / 2)
    loss = M.where(impossible, _ops.zeros_like(loss), loss)
    if norm_by_times:  # as in warpctc, only the gradient is divided by the input lengths
        scaled = M.divide(loss, M.cast(in_len, loss.dtype))
        loss = M.add(scaled, M.subtract(loss, scaled).detach())
    if reduction == "mean":
        return M.mean(M.divide(loss, M.cast(M.maximum(lab_len, _ops.ones_like(lab_len)), loss.dtype)))
    return _reduce(loss, reduction, "ctc_loss")


def adaptive_log_softmax_with_loss(input, label, head_weight, tail_weights, cutoffs, head_bias=None,  # noqa: A002
                                   name=None):
    """Efficient softmax of Grave et al. (2017): a head over the shortlist
    [0, cutoffs[0]) and one entry per cluster, each cluster [cutoffs[i-1],
    cutoffs[i]) a two-layer tail. Returns each row's log-probability of its
    label and the mean negative of them."""
    if len(input.shape) != 2 or list(label.shape) != [input.shape[0]]:
        raise ValueError(f"adaptive_log_softmax_with_loss: input must be [N, D] and label [N], "
                         f"got {list(input.shape)} and {list(label.shape)}")
    cuts = [int(c.item()) if isinstance(c, Tensor) else int(c) for c in cutoffs]
    lab = label.numpy().astype(np.int64)
    bounds = [0] + cuts
    inside = np.zeros(lab.shape, dtype=bool)
    head_target = lab.copy()
    output = None
    for i in range(len(bounds) - 1):
        low, high = bounds[i], bounds[i + 1]
        rows = (lab >= low) & (lab < high)
        inside |= rows
        if i == 0 or not rows.any():
            continue
        head_target[rows] = cuts[0] + i - 1
        hidden = M.matmul(input, tail_weights[i - 1][0])
        cluster = M.matmul(hidden, tail_weights[i - 1][1])
        if len(tail_weights[i - 1]) > 2:
            cluster = M.add(cluster, tail_weights[i - 1][2])
        picked = M.take_along_axis(_ops.log_softmax(cluster, -1), np.clip(lab - low, 0, high - low - 1)[:, None], 1)
        part = M.multiply(M.squeeze(picked, [1]), to_tensor(rows.astype(np.float32)).astype(input.dtype))
        output = part if output is None else M.add(output, part)
    if not inside.all():
        raise ValueError(f"adaptive_log_softmax_with_loss: labels must be in [0, {cuts[-1]}), "
                         f"got [{lab.min()}, {lab.max()}]")
    head = M.matmul(input, head_weight)
    if head_bias is not None:
        head = M.add(head, head_bias)
    head_lp = M.squeeze(M.take_along_axis(_ops.log_softmax(head, -1), head_target[:, None], 1), [1])
    output = head_lp if output is None else M.add(output, head_lp)
    return output, M.mean(M.neg(output))


def _logaddexp(a, b):
    m = M.maximum(a, b).detach()
    return M.add(m, M.log(M.add(M.exp(M.subtract(a, m)), M.exp(M.subtract(b, m)))))


def rnnt_loss(input, label, input_lengths, label_lengths, blank=0, fastemit_lambda=0.001,  # noqa: A002
              reduction="mean", name=None):
    """RNN-Transducer loss (Graves 2012) over input [B, T, U+1, V] taken as
    log-probabilities as they are (Paddle's CPU kernel normalises nothing):
    -log of the sum over lattice paths, by the alpha recursion in ops. FastEmit (Yu et al.
    2021) scales the gradient of the label emissions by 1 + fastemit_lambda
    and leaves the value unchanged, as in warp-transducer."""
    _check_reduction(reduction, "rnnt_loss")
    if len(input.shape) != 4 or len(label.shape) != 2 or label.shape[0] != input.shape[0]:
        raise ValueError(f"rnnt_loss: input must be [B, T, U+1, V] and label [B, U], "
                         f"got {list(input.shape)} and {list(label.shape)}")
    b, t_max, u1, v = input.shape
    lab = label.numpy().astype(np.int64)
    t_len = np.asarray(input_lengths.numpy()).astype(np.int64).reshape(-1)
    u_len = np.asarray(label_lengths.numpy()).astype(np.int64).reshape(-1)
    if lab.shape[1] != u1 - 1 or len(t_len) != b or len(u_len) != b:
        raise ValueError(f"rnnt_loss: label must be [{b}, {u1 - 1}] with {b} input and label lengths, "
                         f"got label {list(lab.shape)}")
    if t_len.min() < 1 or t_len.max() > t_max or u_len.min() < 0 or u_len.max() > u1 - 1:
        raise ValueError(f"rnnt_loss: input_lengths must be in [1, {t_max}] and label_lengths in [0, {u1 - 1}]")
    if not 0 <= blank < v:
        raise ValueError(f"rnnt_loss: blank must be in [0, {v}), got {blank}")
    logp = input
    blank_lp = logp[:, :, :, blank]  # [B, T, U+1]
    index = np.broadcast_to(np.clip(lab, 0, v - 1)[:, None, :, None], (b, t_max, u1 - 1, 1)).copy()
    emit_lp = M.squeeze(M.take_along_axis(logp[:, :, :u1 - 1], index, 3), [3])  # [B, T, U]
    alpha = [[None] * u1 for _ in range(t_max)]
    for t in range(t_max):
        for u in range(u1):
            if t == 0 and u == 0:
                alpha[t][u] = _ops.zeros_like(blank_lp[:, 0, 0])
                continue
            from_t = M.add(alpha[t - 1][u], blank_lp[:, t - 1, u]) if t else None
            from_u = M.add(alpha[t][u - 1], emit_lp[:, t, u - 1]) if u else None
            alpha[t][u] = from_u if from_t is None else from_t if from_u is None else _logaddexp(from_t, from_u)
    flat = M.stack([M.stack(row, axis=1) for row in alpha], axis=1)  # [B, T, U+1]
    total = M.add(flat, blank_lp)
    end = ((t_len - 1) * u1 + u_len)[:, None]
    loss = M.neg(M.squeeze(M.take_along_axis(M.reshape(total, [b, -1]), end, 1), [1]))
    if fastemit_lambda:
        loss = M.add(loss, M.multiply(_fastemit_term(blank_lp, emit_lp, t_len, u_len, loss), float(fastemit_lambda)))
    if reduction == "mean":
        return M.divide(M.sum(loss), float(b))
    return _reduce(loss, reduction, "rnnt_loss")


def _fastemit_term(blank_lp, emit_lp, t_len, u_len, loss):
    """Per sequence, a term of value 0 whose gradient is that of the loss
    through the label emissions: -sum(gamma * (e - stop_gradient(e))) with
    gamma the emission occupancies from the alpha and beta recursions."""
    bl, em, nll = blank_lp.numpy().astype(np.float64), emit_lp.numpy().astype(np.float64), loss.numpy()
    b, t_max, u1 = bl.shape
    gamma = np.zeros(em.shape)
    for i in range(b):
        tn, un = t_len[i], u_len[i]
        alpha = np.full((tn, un + 1), -np.inf)
        beta = np.full((tn, un + 1), -np.inf)
        alpha[0, 0] = 0.0
        for t in range(tn):
            for u in range(un + 1):
                if t:
                    alpha[t, u] = np.logaddexp(alpha[t, u], alpha[t - 1, u] + bl[i, t - 1, u])
                if u:
                    alpha[t, u] = np.logaddexp(alpha[t, u], alpha[t, u - 1] + em[i, t, u - 1])
        for t in range(tn - 1, -1, -1):
            for u in range(un, -1, -1):
                if t == tn - 1 and u == un:
                    beta[t, u] = bl[i, t, u]
                    continue
                if t < tn - 1:
                    beta[t, u] = np.logaddexp(beta[t, u], beta[t + 1, u] + bl[i, t, u])
                if u < un:
                    beta[t, u] = np.logaddexp(beta[t, u], beta[t, u + 1] + em[i, t, u])
        gamma[i, :tn, :un] = np.exp(alpha[:, :un] + em[i, :tn, :un] + beta[:, 1:] + nll[i])
    weight = to_tensor(gamma).astype(emit_lp.dtype)
    return M.neg(M.sum(M.multiply(weight, M.subtract(emit_lp, emit_lp.detach())), axis=[1, 2]))


def cross_entropy_general(input, label, weight, ignore_index, reduction, soft_label, axis, use_softmax):  # noqa: A002
    """cross_entropy with class weights and/or probabilities as input
    (use_softmax=False), composed of ops. A hard-label mean is the sum of
    w[y] * loss over the sum of w[y] (ignored entries excluded); a soft one
    weighs each row by label @ weight."""
    _check_reduction(reduction, "cross_entropy")
    nd = len(input.shape)
    axis %= nd
    logp = _ops.log_softmax(input, axis) if use_softmax else M.log(input)
    if weight is not None and (len(weight.shape) != 1 or weight.shape[0] != input.shape[axis]):
        raise ValueError(f"cross_entropy: weight must be [{input.shape[axis]}] (one per class), "
                         f"got {list(weight.shape)}")
    if soft_label:
        label = M.cast(label, logp.dtype)
        loss = M.neg(M.sum(M.multiply(label, logp), axis=axis, keepdim=True))
        if weight is None:
            return _reduce(loss, reduction, "cross_entropy")
        shape = [1] * nd
        shape[axis] = weight.shape[0]
        w = M.sum(M.multiply(label, M.reshape(M.cast(weight, logp.dtype), shape)), axis=axis, keepdim=True)
    else:
        keep_dim = len(label.shape) == nd
        lab = M.squeeze(label, [axis]) if keep_dim else label
        lab_np = lab.numpy().astype(np.int64)
        valid = lab_np != ignore_index
        c = input.shape[axis]
        if valid.any() and (lab_np[valid].min() < 0 or lab_np[valid].max() >= c):
            raise ValueError(f"cross_entropy: labels must be in [0, {c}) or ignore_index, "
                             f"got [{lab_np[valid].min()}, {lab_np[valid].max()}]")
        safe = np.expand_dims(np.where(valid, lab_np, 0), axis)
        loss = M.neg(M.squeeze(M.take_along_axis(logp, safe, axis), [axis]))
        w = to_tensor(valid.astype(np.float64)).astype(logp.dtype)
        if weight is not None:
            w = M.multiply(w, M.reshape(M.gather(M.cast(weight, logp.dtype), to_tensor(safe.reshape(-1))),
                                        list(lab_np.shape)))
        if keep_dim:
            loss, w = M.unsqueeze(loss, [axis]), M.unsqueeze(w, [axis])
    loss = M.multiply(loss, w)
    if reduction == "mean":
        return M.divide(M.sum(loss), M.sum(w))
    return _reduce(loss, reduction, "cross_entropy")


__all__ = ["square_error_cost", "log_loss", "margin_ranking_loss", "soft_margin_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "triplet_margin_with_distance_loss", "triplet_margin_loss",
           "multi_label_soft_margin_loss", "multi_margin_loss", "multi_label_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "sigmoid_focal_loss", "dice_loss", "npair_loss", "hsigmoid_loss", "ctc_loss",
           "rnnt_loss", "adaptive_log_softmax_with_loss"]
