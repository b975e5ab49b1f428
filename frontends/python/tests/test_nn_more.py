"""nn.functional_more and nn.layers_more against numpy and hand values."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 4, 3, 3)).astype("float32")


def T(a, **kw):
    return oar.to_tensor(a, **kw)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


@pytest.mark.parametrize("fn, ref", [
    (lambda t: F.celu(t, 0.7), lambda v: np.maximum(v, 0) + np.minimum(0, 0.7 * (np.exp(v / 0.7) - 1))),
    (F.selu, lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 * (np.exp(v) - 1))),
    (lambda t: F.hardshrink(t, 0.4), lambda v: np.where(np.abs(v) > 0.4, v, 0)),
    (lambda t: F.hardtanh(t, -0.5, 0.3), lambda v: np.clip(v, -0.5, 0.3)),
    (F.log_sigmoid, lambda v: np.log(_sigmoid(v))),
    (lambda t: F.softshrink(t, 0.3), lambda v: np.where(v > 0.3, v - 0.3, np.where(v < -0.3, v + 0.3, 0))),
    (F.softsign, lambda v: v / (1 + np.abs(v))),
    (F.tanhshrink, lambda v: v - np.tanh(v)),
    (lambda t: F.thresholded_relu(t, 0.5, 0.2), lambda v: np.where(v > 0.5, v, 0.2)),
    (lambda t: F.glu(t, 1), lambda v: v[:, :2] * _sigmoid(v[:, 2:])),
    (lambda t: F.maxout(t, 2), lambda v: v.reshape(2, 2, 2, 3, 3).max(2)),
    (lambda t: F.rrelu(t, 0.1, 0.3, training=False), lambda v: np.where(v >= 0, v, 0.2 * v)),
])
def test_activations_match_numpy(fn, ref):
    assert_close(fn(T(X)), ref(X), rtol=1e-5, atol=1e-6)


def test_log_sigmoid_is_stable_for_large_inputs():
    assert_close(F.log_sigmoid(T(np.array([-100.0, 100.0], "float32"))), [-100.0, 0.0])


def test_swiglu_halves_and_pair():
    x = np.array([[1.0, 2.0, 3.0, 4.0]], "float32")
    silu = lambda v: v * _sigmoid(v)  # noqa: E731
    assert_close(F.swiglu(T(x)), silu(x[:, :2]) * x[:, 2:])
    assert_close(F.swiglu(T(x), T(x * 2)), silu(x) * x * 2)
    with pytest.raises(ValueError, match="swiglu"):
        F.swiglu(T(np.ones((2, 3), "float32")))


def test_silu_inplace_writes_x():
    x = T(np.array([1.0, 2.0], "float32"))
    out = F.silu(x, True)
    assert_close(x, [1 / (1 + np.exp(-1.0)), 2 / (1 + np.exp(-2.0))])
    assert out is x


def test_prelu_scalar_and_per_channel():
    w = np.array([0.1, 0.2, 0.3, 0.4], "float32")
    assert_close(F.prelu(T(X), T(w)), np.where(X > 0, X, X * w[None, :, None, None]))
    xt = X.transpose(0, 2, 3, 1).copy()
    assert_close(F.prelu(T(xt), T(w), data_format="NHWC"), np.where(xt > 0, xt, xt * w))
    layer = nn.PReLU(1, 0.25)
    assert_close(layer(T(X)), np.where(X > 0, X, 0.25 * X))
    with pytest.raises(ValueError, match="prelu"):
        F.prelu(T(X), T(np.ones(3, "float32")))


def test_maxout_and_glu_errors():
    with pytest.raises(ValueError, match="maxout"):
        F.maxout(T(X), 3)
    with pytest.raises(ValueError, match="glu"):
        F.glu(T(X), -1)


def test_rrelu_training_slopes_in_range():
    x = T(-np.ones((200,), "float32"))
    y = F.rrelu(x, 0.1, 0.3).numpy()
    assert ((y <= -0.1 + 1e-6) & (y >= -0.3 - 1e-6)).all() and len(np.unique(y)) > 10


def test_channel_dropouts_zero_whole_channels():
    x = T(np.ones((4, 6, 3, 3), "float32"))
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(4, 6, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert_close(F.dropout2d(x, 0.5, training=False), np.ones((4, 6, 3, 3)))
    y3 = F.dropout3d(T(np.ones((2, 3, 2, 2, 2), "float32")), 0.5).numpy().reshape(2, 3, -1)
    assert np.all((y3 == 0).all(-1) | (y3 == 2.0).all(-1))
    y1 = F.dropout1d(T(np.ones((3, 5), "float32")), 0.5).numpy()
    assert np.all((y1 == 0).all(-1) | (y1 == 2.0).all(-1))
    with pytest.raises(ValueError, match="dropout2d"):
        F.dropout2d(x, 1.5)


def test_alpha_dropout_keeps_mean_and_variance():
    oar.seed(3)
    x = RNG.standard_normal((200000,)).astype("float32")
    y = F.alpha_dropout(T(x), 0.2).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    assert_close(F.alpha_dropout(T(x), 0.2, training=False), x)
    fy = F.feature_alpha_dropout(T(np.ones((3, 4, 5), "float32")), 0.5).numpy()
    assert np.all(np.ptp(fy, axis=-1) == 0)
    layer = nn.AlphaDropout(0.2)
    layer.eval()
    assert_close(layer(T(x[:10])), x[:10])


def test_gumbel_softmax_rows_sum_to_one_and_hard_is_one_hot():
    x = T(RNG.standard_normal((4, 6)).astype("float32"))
    assert_close(F.gumbel_softmax(x, 0.5).numpy().sum(-1), np.ones(4), rtol=1e-5)
    hard = F.gumbel_softmax(x, hard=True).numpy()
    assert sorted(np.unique(hard).tolist()) == [0.0, 1.0] and (hard.sum(-1) == 1).all()


def test_label_smooth_and_sequence_mask():
    lab = np.eye(3, dtype="float32")[None]
    assert_close(F.label_smooth(T(lab), epsilon=0.2), lab * 0.8 + 0.2 / 3)
    prior = np.array([[0.2, 0.3, 0.5]], "float32")
    assert_close(F.label_smooth(T(lab), T(prior)), lab * 0.9 + 0.1 * prior)
    m = F.sequence_mask(T(np.array([3, 1, 0])), 4, dtype="float32")
    assert_close(m, [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    assert F.sequence_mask(T(np.array([2, 1]))).dtype == oar.int64
    assert F.sequence_mask(T(np.array([2, 1]))).shape == [2, 2]


def test_temporal_shift_matches_numpy():
    x = RNG.standard_normal((6, 8, 2, 2)).astype("float32")
    v = x.reshape(2, 3, 8, 2, 2)
    pad = np.pad(v, ((0, 0), (1, 1), (0, 0), (0, 0), (0, 0)))
    ref = np.concatenate([pad[:, :3, :2], pad[:, 2:, 2:4], v[:, :, 4:]], axis=2).reshape(x.shape)
    assert_close(F.temporal_shift(T(x), 3, 0.25), ref)
    with pytest.raises(ValueError, match="temporal_shift"):
        F.temporal_shift(T(x), 4)


def test_affine_grid_identity_and_hand_value():
    eye = np.array([[[1, 0, 0], [0, 1, 0]]], "float32")
    grid = F.affine_grid(T(eye), [1, 1, 2, 3], align_corners=True).numpy()
    assert_close(grid[0, :, :, 0], [[-1, 0, 1], [-1, 0, 1]])
    assert_close(grid[0, :, :, 1], [[-1, -1, -1], [1, 1, 1]])
    th = np.array([[[-0.7, -0.4, 0.3], [0.6, 0.5, 1.5]]], "float32")
    g = F.affine_grid(T(th), [1, 2, 3, 3], align_corners=False).numpy()
    x0, y0 = -2 / 3, -2 / 3  # the first pixel centre
    assert_close(g[0, 0, 0], [-0.7 * x0 - 0.4 * y0 + 0.3, 0.6 * x0 + 0.5 * y0 + 1.5], rtol=1e-5)
    with pytest.raises(ValueError, match="affine_grid"):
        F.affine_grid(T(eye), [1, 1, 2, 2, 2])


def test_bilinear_and_layer():
    a, b = RNG.standard_normal((5, 3)).astype("float32"), RNG.standard_normal((5, 4)).astype("float32")
    w, bias = RNG.standard_normal((6, 3, 4)).astype("float32"), RNG.standard_normal((1, 6)).astype("float32")
    assert_close(F.bilinear(T(a), T(b), T(w), T(bias)), np.einsum("ni,oij,nj->no", a, w, b) + bias, rtol=1e-4)
    layer = nn.Bilinear(3, 4, 6)
    assert layer(T(a), T(b)).shape == [5, 6]
    assert layer.weight.shape == [6, 3, 4] and layer.bias.shape == [1, 6]


def test_pairwise_distance_norms():
    a, b = RNG.standard_normal((5, 3)).astype("float32"), RNG.standard_normal((5, 3)).astype("float32")
    d = a - b + 1e-6
    assert_close(F.pairwise_distance(T(a), T(b)), np.sqrt((d ** 2).sum(-1)), rtol=1e-5)
    assert_close(F.pairwise_distance(T(a), T(b), p=1, keepdim=True), np.abs(d).sum(-1, keepdims=True), rtol=1e-5)
    assert_close(nn.PairwiseDistance(p=float("inf"))(T(a), T(b)), np.abs(d).max(-1), rtol=1e-5)


def test_gather_tree_paddle_example():
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
    parents = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
    out = F.gather_tree(T(ids), T(parents))
    assert out.numpy().tolist() == [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]]


def test_class_center_sample_covers_positives():
    label = T(np.array([3, 7, 3, 1]))
    remapped, sampled = F.class_center_sample(label, 10, 6)
    s = sampled.numpy()
    assert len(s) == 6 and len(set(s.tolist())) == 6 and {1, 3, 7} <= set(s.tolist())
    assert (s[remapped.numpy()] == label.numpy()).all()
    with pytest.raises(ValueError, match="class_center_sample"):
        F.class_center_sample(label, 5, 6)


def test_activation_layers_and_gelu_strings():
    x = T(X)
    assert_close(nn.CELU(0.7)(x), F.celu(x, 0.7))
    assert_close(nn.Hardtanh(-0.5, 0.3)(x), np.clip(X, -0.5, 0.3))
    assert_close(nn.ThresholdedReLU(0.5)(x), np.where(X > 0.5, X, 0))
    assert nn.Maxout(2)(x).shape == [2, 2, 3, 3]
    assert_close(nn.GELU("tanh")(x), F.gelu(x, True))
    assert_close(nn.GELU("none")(x), F.gelu(x, False))
    with pytest.raises(ValueError, match="gelu"):
        nn.GELU("foo")(x)


def test_containers():
    d = nn.LayerDict({"a": nn.ReLU(), "b": nn.Tanh()})
    del d["a"]
    assert list(d.keys()) == ["b"]
    d.update([("c", nn.ReLU())])
    assert d.pop("b") is not None and len(d) == 1
    d.clear()
    assert len(d) == 0
    s = nn.Sequential(("l1", nn.Linear(2, 3)), ("l2", nn.Linear(3, 1)))
    assert s["l1"].weight.shape == [2, 3]
    s2 = nn.Sequential(nn.Linear(3, 4)).insert(0, nn.Linear(2, 3))
    assert s2(T(np.ones((1, 2), "float32"))).shape == [1, 4]
    assert len(nn.Sequential().extend([nn.ReLU(), nn.ReLU()])) == 2
    pl = nn.ParameterList([oar.create_parameter([2, 2], "float32") for _ in range(2)])
    pl[1] = oar.create_parameter([2, 3], "float32")
    assert pl[1].shape == [2, 3]
    pd = nn.ParameterDict({"w": oar.create_parameter([2], "float32")})
    pd["v"] = oar.create_parameter([3], "float32")
    assert list(pd) == ["w", "v"] and len(pd.parameters()) == 2


def test_named_sublayers_remove_duplicate_and_static_state_dict():
    lin = nn.Linear(2, 2)
    model = nn.Sequential(lin, lin)
    assert [n for n, _ in model.named_sublayers(include_self=True)] == ["", "0"]
    assert [n for n, _ in model.named_sublayers(include_self=True, remove_duplicate=False)] == ["", "0", "1"]
    assert list(nn.Embedding(4, 3).to_static_state_dict()) == ["weight"]


def test_sync_batchnorm_is_batchnorm_on_one_process():
    model = nn.Sequential(nn.Conv2D(3, 5, 3), nn.BatchNorm2D(5))
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(sync[1], nn.SyncBatchNorm)
    x = T(RNG.standard_normal((2, 2, 3, 3)).astype("float32"))
    bn, sbn = nn.BatchNorm2D(2), nn.SyncBatchNorm(2)
    assert_close(sbn(x), bn(x), rtol=1e-5)


class _TanhCell(nn.Layer):
    """h' = tanh(x @ a + h @ b); outputs h'."""

    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = T(a), T(b)

    def forward(self, x, h):
        h = oar.tanh(oar.matmul(x, self.a) + oar.matmul(h, self.b))
        return h, h


def test_beam_search_with_one_beam_is_greedy_decoding():
    rng = np.random.default_rng(3)
    vocab, hidden = 5, 4
    emb, out_w = rng.standard_normal((vocab, hidden)), rng.standard_normal((hidden, vocab)) * 2
    a, b = rng.standard_normal((hidden, hidden)), rng.standard_normal((hidden, hidden))
    h0 = rng.standard_normal((2, hidden))
    decoder = nn.BeamSearchDecoder(_TanhCell(a, b), start_token=0, end_token=1, beam_size=1,
                                   embedding_fn=lambda ids: F.embedding(ids, T(emb)),
                                   output_fn=lambda h: oar.matmul(h, T(out_w)))
    out, _, lengths = nn.dynamic_decode(decoder, inits=T(h0), max_step_num=4, return_length=True)
    for row in range(2):
        h, token, expected = h0[row], 0, []
        while len(expected) < 5 and (not expected or expected[-1] != 1):
            h = np.tanh(emb[token] @ a + h @ b)
            token = int(np.argmax(h @ out_w))
            expected.append(token)
        got = out.numpy()[row, :, 0].tolist()
        assert got[:len(expected)] == expected and all(t == 1 for t in got[len(expected):])
        assert lengths.numpy()[row, 0] == len(expected)


def test_beam_search_shapes_and_sorted_scores():
    rng = np.random.default_rng(4)
    cell = _TanhCell(rng.standard_normal((4, 4)).astype("float32"), rng.standard_normal((4, 4)).astype("float32"))
    emb = rng.standard_normal((6, 4)).astype("float32")
    decoder = nn.BeamSearchDecoder(cell, 0, 1, 3, embedding_fn=lambda ids: F.embedding(ids, T(emb)),
                                   output_fn=nn.Linear(4, 6))
    out, states = nn.dynamic_decode(decoder, inits=T(rng.standard_normal((2, 4)).astype("float32")), max_step_num=3)
    assert out.shape[0] == 2 and out.shape[2] == 3 and out.shape[1] <= 4
    lp = states.log_probs.numpy()
    assert (np.diff(lp, axis=1) <= 0).all()


def test_gather_tree_traced_equals_eager():
    ids = np.array([[[2, 2], [6, 1]], [[3, 9], [6, 1]], [[0, 1], [9, 0]]])
    parents = np.array([[[0, 0], [1, 1]], [[1, 0], [1, 0]], [[0, 0], [0, 1]]])
    traced = oar.jit.to_static(F.gather_tree, full_graph=True)
    assert traced(T(ids), T(parents)).numpy().tolist() == [[[2, 2], [1, 6]], [[3, 3], [6, 1]], [[0, 1], [9, 0]]]
    rng = np.random.default_rng(5)
    ids, parents = rng.integers(0, 9, (4, 3, 2)), rng.integers(0, 2, (4, 3, 2))
    np.testing.assert_array_equal(traced(T(ids), T(parents)).numpy(), F.gather_tree(T(ids), T(parents)).numpy())


def test_dynamic_decode_under_to_static_is_one_program_for_every_length():
    # One program decodes sequences that end at different steps (the loop runs until every beam
    # has finished, a data-dependent count): its outputs equal eager decoding for each input.
    rng = np.random.default_rng(3)
    vocab, hidden = 5, 4
    emb, out_w = rng.standard_normal((vocab, hidden)), rng.standard_normal((hidden, vocab)) * 2
    a, b = rng.standard_normal((hidden, hidden)), rng.standard_normal((hidden, hidden))
    for beam_size in (1, 3):
        decoder = nn.BeamSearchDecoder(_TanhCell(a, b), start_token=0, end_token=1, beam_size=beam_size,
                                       embedding_fn=lambda ids: F.embedding(ids, T(emb)),
                                       output_fn=lambda h: oar.matmul(h, T(out_w)))

        def decode(h0):
            out, states, lengths = nn.dynamic_decode(decoder, inits=h0, max_step_num=6, return_length=True)
            return out, states.log_probs, lengths

        traced = oar.jit.to_static(decode, full_graph=True)
        seen = set()
        for seed in range(6):
            h0 = T(np.random.default_rng(seed).standard_normal((2, hidden)) * 2)
            want, got = decode(h0), traced(h0)
            for e, g in zip(want, got):
                assert e.shape == g.shape
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12)
            seen.add(want[0].shape[1])
        assert len(seen) > 1, f"the inputs should end at different steps, all took {seen}"
        assert traced.trace_count == 1 and "while(" in traced.program


def test_grid_sample_identity_hand_values_and_gradient():
    x = RNG.standard_normal((1, 2, 3, 4)).astype("float64")
    eye = np.array([[[1, 0, 0], [0, 1, 0]]], "float64")
    for ac in (True, False):
        grid = F.affine_grid(T(eye), [1, 2, 3, 4], align_corners=ac)
        assert_close(F.grid_sample(T(x), grid, align_corners=ac), x, rtol=1e-6, atol=1e-9)
    # the centre of the four top-left pixels (align_corners=True: pixel k sits at -1 + 2k/(size-1))
    mid = np.array([[[[-1 + 1 / 3, -1 + 1 / 2]]]])
    assert_close(F.grid_sample(T(x), T(mid))[0, :, 0, 0], x[0, :, :2, :2].mean((1, 2)), rtol=1e-6)
    far = np.array([[[[3.0, 0.0]]]])
    assert_close(F.grid_sample(T(x), T(far))[0, :, 0, 0], [0.0, 0.0])
    assert_close(F.grid_sample(T(x), T(far), padding_mode="border")[0, :, 0, 0], x[0, :, 1, 3], rtol=1e-6)
    g = RNG.uniform(-0.9, 0.9, (1, 2, 2, 2))
    f = lambda v: float((F.grid_sample(T(x), T(v)) ** 2).sum().item())  # noqa: E731
    gt = T(g, stop_gradient=False)
    (F.grid_sample(T(x), gt) ** 2).sum().backward()
    fd = np.zeros_like(g)
    for i in np.ndindex(g.shape):
        hi, lo = g.copy(), g.copy()
        hi[i] += 1e-6
        lo[i] -= 1e-6
        fd[i] = (f(hi) - f(lo)) / 2e-6
    assert_close(gt.grad, fd, rtol=1e-4, atol=1e-7)
    with pytest.raises(ValueError, match="grid_sample"):
        F.grid_sample(T(x), T(far), mode="bicubic")


def test_dropout1d_inplace_writes_input():
    x = T(np.ones((2, 8, 3), "float32"))
    out = F.dropout1d(x, 0.5, inplace=True)
    assert out is x and set(np.unique(x.numpy()).tolist()) <= {0.0, 2.0}


def test_layer_group_paths_import_like_modules():
    import importlib
    assert importlib.import_module("oar.nn.layer.transformer").Transformer is nn.Transformer
    from oar.nn.layer.loss import CTCLoss
    assert CTCLoss is nn.CTCLoss and nn.loss.PoissonNLLLoss is nn.PoissonNLLLoss
