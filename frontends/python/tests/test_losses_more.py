"""nn.loss_more (and its layers) against numpy, brute force and finite differences."""
import itertools

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close

RNG = np.random.default_rng(11)
A = RNG.standard_normal((5, 3)).astype("float32")
B = RNG.standard_normal((5, 3)).astype("float32")
SIGN = np.sign(RNG.standard_normal((5, 3))).astype("float32")


def T(a, **kw):
    return oar.to_tensor(a, **kw)


def _softplus(v):
    return np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)


def _finite_difference(f, x, eps=1e-3):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


def _grad(loss_fn, x):
    t = T(x, stop_gradient=False)
    loss_fn(t).backward()
    return t.grad.numpy()


@pytest.mark.parametrize("reduction, red", [("none", lambda v: v), ("mean", np.mean), ("sum", np.sum)])
def test_elementwise_losses(reduction, red):
    lab = np.array([1, -1, 1, -1, -1], "float32")
    assert_close(F.margin_ranking_loss(T(A[:, 0]), T(B[:, 0]), T(lab), 0.3, reduction),
                 red(np.maximum(0, -lab * (A[:, 0] - B[:, 0]) + 0.3)))
    assert_close(F.soft_margin_loss(T(A), T(SIGN), reduction), red(np.log1p(np.exp(-SIGN * A))), rtol=1e-5)
    assert_close(F.hinge_embedding_loss(T(A), T(SIGN), 0.5, reduction),
                 red(np.where(SIGN == 1, A, np.maximum(0, 0.5 - A))))
    y = np.abs(B) * 3
    assert_close(F.poisson_nll_loss(T(A), T(y), reduction=reduction), red(np.exp(A) - y * A), rtol=1e-5)
    var = np.abs(B) + 0.1
    assert_close(F.gaussian_nll_loss(T(A), T(B), T(var), reduction=reduction),
                 red(0.5 * (np.log(var) + (A - B) ** 2 / var)), rtol=1e-5)


def test_poisson_full_and_gaussian_full():
    x, y = np.abs(A) + 0.1, np.abs(B) * 3
    stirling = np.where(y > 1, y * np.log(np.maximum(y, 1)) - y + 0.5 * np.log(2 * np.pi * np.maximum(y, 1)), 0)
    assert_close(F.poisson_nll_loss(T(x), T(y), log_input=False, full=True, reduction="none"),
                 x - y * np.log(x + 1e-8) + stirling, rtol=1e-5)
    var = np.abs(B[:, :1]) + 0.1
    assert_close(F.gaussian_nll_loss(T(A), T(B), T(var), full=True, reduction="none"),
                 0.5 * (np.log(var) + (A - B) ** 2 / var) + 0.5 * np.log(2 * np.pi), rtol=1e-5)
    with pytest.raises(ValueError, match="gaussian_nll_loss"):
        F.gaussian_nll_loss(T(A), T(B), T(-np.ones((5, 3), "float32")))


def test_cosine_embedding_and_triplet():
    lab = np.array([1, -1, 1, -1, 1])
    cos = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    assert_close(F.cosine_embedding_loss(T(A), T(B), T(lab), 0.1, "none"),
                 np.where(lab == 1, 1 - cos, np.maximum(0, cos - 0.1)), rtol=1e-5)
    neg = A * 0.5
    dist = lambda u, v: np.sqrt(((u - v + 1e-6) ** 2).sum(-1))  # noqa: E731
    assert_close(F.triplet_margin_loss(T(A), T(B), T(neg), reduction="none"),
                 np.maximum(0, dist(A, B) - dist(A, neg) + 1.0), rtol=1e-5)
    swapped = np.minimum(dist(A, neg), dist(B, neg))
    assert_close(nn.TripletMarginLoss(swap=True, reduction="sum")(T(A), T(B), T(neg)),
                 np.maximum(0, dist(A, B) - swapped + 1.0).sum(), rtol=1e-5)
    l1 = lambda u, v: oar.sum(oar.abs(u - v), axis=-1)  # noqa: E731
    assert_close(F.triplet_margin_with_distance_loss(T(A), T(B), T(neg), distance_function=l1, margin=2.0),
                 np.maximum(0, np.abs(A - B).sum(-1) - np.abs(A - neg).sum(-1) + 2.0).mean(), rtol=1e-5)


def test_multi_label_and_multi_margin():
    y = (B > 0).astype("float32")
    w = np.array([0.5, 1.0, 2.0], "float32")
    ref = -(y * np.log(1 / (1 + np.exp(-A))) + (1 - y) * np.log(1 / (1 + np.exp(A)))) * w
    assert_close(F.multi_label_soft_margin_loss(T(A), T(y), T(w), "none"), ref.mean(-1), rtol=1e-5)
    lab = np.array([0, 2, 1, 1, 0])
    ref = np.array([sum(max(0, 1 - A[n, lab[n]] + A[n, i]) for i in range(3) if i != lab[n]) / 3 for n in range(5)])
    assert_close(F.multi_margin_loss(T(A), T(lab), reduction="none"), ref, rtol=1e-5)
    assert_close(nn.MultiMarginLoss()(T(A), T(lab)), ref.mean(), rtol=1e-5)
    x = np.array([[0.1, 0.2, 0.4, 0.8], [0.2, 0.5, 0.3, 0.1]], "float32")
    targets = np.array([[3, 0, -1, -1], [0, 2, -1, -1]])
    # row 0: targets {3, 0}, others {1, 2}; row 1: targets {0, 2}, others {1, 3}
    r0 = sum(max(0, 1 - (x[0, j] - x[0, i])) for j in (3, 0) for i in (1, 2)) / 4
    r1 = sum(max(0, 1 - (x[1, j] - x[1, i])) for j in (0, 2) for i in (1, 3)) / 4
    assert_close(F.multi_label_margin_loss(T(x), T(targets), "none"), [r0, r1], rtol=1e-5)
    with pytest.raises(ValueError, match="multi_margin_loss"):
        F.multi_margin_loss(T(A), T(np.array([0, 3, 1, 1, 0])))


def test_focal_dice_log_and_square_error():
    y = (B > 0).astype("float32")
    p = 1 / (1 + np.exp(-A))
    ce = _softplus(A) - A * y
    p_t = p * y + (1 - p) * (1 - y)
    ref = (0.25 * y + 0.75 * (1 - y)) * (1 - p_t) ** 2 * ce
    assert_close(F.sigmoid_focal_loss(T(A), T(y)), ref.sum(), rtol=1e-5)
    assert_close(F.sigmoid_focal_loss(T(A), T(y), normalizer=T(np.array([3.0], "float32")), reduction="none"),
                 ref / 3, rtol=1e-5)
    probs = RNG.uniform(size=(2, 3, 2)).astype("float32")
    probs /= probs.sum(-1, keepdims=True)
    lab = RNG.integers(0, 2, (2, 3, 1))
    onehot = np.eye(2)[lab[..., 0]]
    inter, denom = (probs * onehot).sum((1, 2)), probs.sum((1, 2)) + onehot.sum((1, 2))
    assert_close(F.dice_loss(T(probs), T(lab)), (1 - 2 * inter / (denom + 1e-5)).mean(), rtol=1e-5)
    pr, lb = RNG.uniform(0.1, 0.9, (4, 1)).astype("float32"), np.array([[1.0], [0.0], [1.0], [0.0]], "float32")
    assert_close(F.log_loss(T(pr), T(lb)), -lb * np.log(pr + 1e-4) - (1 - lb) * np.log(1 - pr + 1e-4), rtol=1e-5)
    assert_close(F.square_error_cost(T(A), T(B)), (A - B) ** 2)


def test_npair_loss_matches_numpy():
    anc, pos = RNG.uniform(size=(4, 3)).astype("float32"), RNG.uniform(size=(4, 3)).astype("float32")
    labels = np.array([1.0, 2.0, 1.0, 0.0], "float32")
    same = (labels[:, None] == labels[None, :]).astype("float64")
    same /= same.sum(1, keepdims=True)
    sim = anc @ pos.T
    logsm = sim - np.log(np.exp(sim).sum(1, keepdims=True))
    ce = -(same * logsm).sum(1, keepdims=True)
    ref = 0.25 * 0.002 * ((anc ** 2).sum(1).mean() + (pos ** 2).sum(1).mean()) + (same * ce).sum(0).mean()
    assert_close(F.npair_loss(T(anc), T(pos), T(labels)), ref, rtol=1e-5)


def test_hsigmoid_loss_default_tree():
    # 4 classes: codes c = label + 4; the path of c visits nodes (c >> (j+1)) - 1 with bit (c >> j) & 1.
    x = RNG.uniform(size=(2, 3)).astype("float32")
    w = RNG.uniform(size=(3, 3)).astype("float32")
    labels = np.array([0, 3])
    out = F.hsigmoid_loss(T(x), T(labels), 4, T(w)).numpy()
    for n, c in enumerate(labels + 4):  # c = 4 (path nodes 1, 0; bits 0, 0) and 7 (nodes 2, 0; bits 1, 1)
        nodes = [(c >> (j + 1)) - 1 for j in range(2)]
        bits = [(c >> j) & 1 for j in range(2)]
        pre = np.array([x[n] @ w[k] for k in nodes])
        assert abs(out[n, 0] - (_softplus(pre) - np.array(bits) * pre).sum()) < 1e-5
    layer = nn.HSigmoidLoss(3, 6)
    assert layer(T(x), T(np.array([0, 5]))).shape == [2, 1]


def _ctc_brute_force(logits, label, blank):
    """-log of the summed probability of every frame path that collapses to label."""
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    total = 0.0
    for path in itertools.product(range(probs.shape[1]), repeat=probs.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or k != path[i - 1])]
        if collapsed == list(label):
            total += np.prod([probs[t, k] for t, k in enumerate(path)])
    return -np.log(total)


def test_ctc_loss_matches_brute_force_and_finite_differences():
    logits = RNG.standard_normal((5, 2, 3)).astype("float64")
    labels = np.array([[1, 1], [2, 0]], "int32")
    in_len, lab_len = np.array([5, 4]), np.array([2, 1])
    ref = [_ctc_brute_force(logits[:5, 0], [1, 1], 0), _ctc_brute_force(logits[:4, 1], [2], 0)]
    args = (T(labels), T(in_len), T(lab_len))
    assert_close(F.ctc_loss(T(logits), *args, reduction="none"), ref, rtol=1e-6)
    assert_close(F.ctc_loss(T(logits), *args), np.mean(np.array(ref) / lab_len), rtol=1e-6)
    assert_close(nn.CTCLoss(reduction="sum")(T(logits), *args), np.sum(ref), rtol=1e-6)
    grad = _grad(lambda t: F.ctc_loss(t, *args, reduction="sum"), logits)
    fd = _finite_difference(lambda v: F.ctc_loss(T(v), *args, reduction="sum").item(), logits, 1e-5)
    assert_close(grad, fd, rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="ctc_loss"):
        F.ctc_loss(T(logits), T(labels), T(np.array([6, 4])), T(lab_len))


def test_ctc_loss_other_blank():
    logits = RNG.standard_normal((4, 1, 3)).astype("float64")
    out = F.ctc_loss(T(logits), T(np.array([[0, 1]], "int32")), T(np.array([4])), T(np.array([2])), blank=2,
                     reduction="none")
    assert_close(out, [_ctc_brute_force(logits[:, 0], [0, 1], 2)], rtol=1e-6)


def test_margin_losses_gradients_match_finite_differences():
    lab = np.array([0, 2, 1, 1, 0])
    x = A.astype("float64")
    f = lambda t: F.multi_margin_loss(t, T(lab), p=2)  # noqa: E731
    assert_close(_grad(f, x), _finite_difference(lambda v: f(T(v)).item(), x, 1e-6), rtol=1e-4, atol=1e-7)
    g = lambda t: F.soft_margin_loss(t, T(SIGN.astype("float64")))  # noqa: E731
    assert_close(_grad(g, x), _finite_difference(lambda v: g(T(v)).item(), x, 1e-6), rtol=1e-4, atol=1e-7)


def test_adaptive_log_softmax():
    x = RNG.standard_normal((4, 5)).astype("float64")
    head_w = RNG.standard_normal((5, 3))
    tail = [[RNG.standard_normal((5, 2)), RNG.standard_normal((2, 3))]]
    labels = np.array([0, 1, 2, 4])

    def logsm(v):
        return v - np.log(np.exp(v).sum(-1, keepdims=True))

    head = logsm(x @ head_w)
    tail_lp = logsm(x @ tail[0][0] @ tail[0][1])
    ref = [head[0, 0], head[1, 1], head[2, 2] + tail_lp[2, 0], head[3, 2] + tail_lp[3, 2]]
    out, loss = F.adaptive_log_softmax_with_loss(T(x), T(labels), T(head_w), [[T(w) for w in tail[0]]], [2, 5])
    assert_close(out, ref, rtol=1e-6)
    assert_close(loss, -np.mean(ref), rtol=1e-6)
    layer = nn.AdaptiveLogSoftmaxWithLoss(5, 5, [2], div_value=2.0)
    lp = layer.log_prob(T(x.astype("float32")))
    assert_close(np.exp(lp.numpy()).sum(-1), np.ones(4), rtol=1e-5)
    assert layer.predict(T(x.astype("float32"))).shape == [4]
    with pytest.raises(ValueError, match="adaptive_log_softmax_with_loss"):
        F.adaptive_log_softmax_with_loss(T(x), T(np.array([0, 1, 2, 5])), T(head_w), [[T(w) for w in tail[0]]],
                                         [2, 5])


def test_loss_layers_and_bad_reduction():
    assert_close(nn.SoftMarginLoss()(T(A), T(SIGN)), np.log1p(np.exp(-SIGN * A)).mean(), rtol=1e-5)
    assert_close(nn.HingeEmbeddingLoss(margin=0.5)(T(A), T(SIGN)),
                 np.where(SIGN == 1, A, np.maximum(0, 0.5 - A)).mean())
    assert nn.loss.PoissonNLLLoss is nn.PoissonNLLLoss
    with pytest.raises(ValueError, match="soft_margin_loss"):
        F.soft_margin_loss(T(A), T(SIGN), reduction="avg")


def test_cross_entropy_class_weights_and_probabilities():
    x = RNG.standard_normal((4, 3))
    y = np.array([0, 2, 1, 2])
    w = np.array([0.2, 1.0, 3.0])
    logsm = x - np.log(np.exp(x).sum(-1, keepdims=True))
    per = -logsm[np.arange(4), y] * w[y]
    assert_close(F.cross_entropy(T(x), T(y), weight=T(w), reduction="none"), per, rtol=1e-6)
    assert_close(F.cross_entropy(T(x), T(y), weight=T(w)), per.sum() / w[y].sum(), rtol=1e-6)
    keep = y != 2
    assert_close(F.cross_entropy(T(x), T(y), weight=T(w), ignore_index=2), per[keep].sum() / w[y][keep].sum(),
                 rtol=1e-6)
    assert_close(nn.CrossEntropyLoss(weight=T(w), reduction="sum")(T(x), T(y)), per.sum(), rtol=1e-6)
    soft = np.exp(logsm)
    assert_close(F.cross_entropy(T(soft), T(y), use_softmax=False, reduction="none"), -logsm[np.arange(4), y],
                 rtol=1e-6)
    lab = RNG.uniform(size=(4, 3))
    lab /= lab.sum(-1, keepdims=True)
    rows = -(lab * logsm).sum(-1, keepdims=True) * (lab @ w)[:, None]
    assert_close(F.cross_entropy(T(x), T(lab), soft_label=True, weight=T(w), reduction="none"), rows, rtol=1e-6)
    assert_close(F.cross_entropy(T(x), T(lab), soft_label=True, weight=T(w)), rows.sum() / (lab @ w).sum(), rtol=1e-6)
    smooth = np.eye(3)[y] * 0.7 + 0.1
    assert_close(F.cross_entropy(T(x), F.one_hot(T(y), 3), label_smoothing=0.3),
                 -(smooth * logsm).sum(-1).mean(), rtol=1e-6)
    assert F.cross_entropy(T(x), T(y), label_smoothing=0.3, reduction="none").shape == [4, 1]
    with pytest.raises(ValueError, match="cross_entropy"):
        F.cross_entropy(T(x), T(y), weight=T(np.ones(2)))


def _rnnt_brute_force(logp, label):
    """-log of the summed probability of every lattice path: T-1 blank moves
    and len(label) emissions in any order, then the final blank."""
    t_len, u_len = logp.shape[0], len(label)
    total = 0.0
    for emits_at in itertools.combinations(range(t_len - 1 + u_len), u_len):
        t = u = 0
        lp = 0.0
        for step in range(t_len - 1 + u_len):
            if step in emits_at:
                lp += logp[t, u, label[u]]
                u += 1
            else:
                lp += logp[t, u, 0]
                t += 1
        total += np.exp(lp + logp[t, u, 0])
    return -np.log(total)


def test_rnnt_loss_matches_brute_force_and_fastemit_scales_emission_gradient():
    acts = RNG.standard_normal((2, 3, 3, 4))
    logp = acts - np.log(np.exp(acts).sum(-1, keepdims=True))
    labels = np.array([[1, 2], [3, 0]], "int32")
    args = (T(labels), T(np.array([3, 2], "int32")), T(np.array([2, 1], "int32")))
    ref = [_rnnt_brute_force(logp[0], [1, 2]), _rnnt_brute_force(logp[1, :2, :2], [3])]
    assert_close(F.rnnt_loss(T(logp), *args, fastemit_lambda=0.0, reduction="none"), ref, rtol=1e-6)
    assert_close(nn.RNNTLoss(fastemit_lambda=0.0)(T(logp), *args), np.mean(ref), rtol=1e-6)
    g0 = _grad(lambda t: F.rnnt_loss(t, *args, fastemit_lambda=0.0, reduction="sum"), logp)
    fd = _finite_difference(lambda v: F.rnnt_loss(T(v), *args, fastemit_lambda=0.0, reduction="sum").item(), logp,
                            1e-6)
    assert_close(g0, fd, rtol=1e-4, atol=1e-7)
    g1 = _grad(lambda t: F.rnnt_loss(t, *args, fastemit_lambda=0.5, reduction="sum"), logp)
    assert_close(g1[..., 0], g0[..., 0])  # blanks unchanged, the emission of label 1 at (0, 0) scaled by 1.5
    assert_close(g1[0, 0, 0, 1], 1.5 * g0[0, 0, 0, 1], rtol=1e-6)


def test_ctc_loss_without_alignment_is_zero_as_in_paddle():
    logits = T(RNG.standard_normal((2, 1, 3)), stop_gradient=False)
    args = (T(np.array([[1, 1]], "int32")), T(np.array([2])), T(np.array([2])))  # "1 1" needs 3 frames
    loss = F.ctc_loss(logits, *args, reduction="sum")
    loss.backward()
    assert_close(loss, 0.0)
    assert_close(logits.grad, np.zeros((2, 1, 3)))
