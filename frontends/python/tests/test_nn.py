"""nn.Layer, layers, functional, initializers."""
import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from conftest import assert_close


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("steps", oar.zeros([1]))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_layer_registry_and_state_dict(device):
    m = MLP()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert len(m.parameters()) == 4 and len(m.sublayers()) == 3
    assert all(not p.stop_gradient for p in m.parameters())
    assert isinstance(m.fc1.weight, nn.Parameter) and isinstance(m.fc1.weight, oar.Tensor)
    sd = m.state_dict()
    assert list(sd) == ["steps"] + names  # Paddle's order: a layer's own parameters and buffers, then sublayers'
    m2 = MLP()
    missing, unexpected = m2.set_state_dict(sd)
    assert missing == [] and unexpected == []
    x = oar.randn([5, 4])
    assert_close(m2(x), m(x).numpy())
    with pytest.raises(ValueError, match="shape"):
        m2.set_state_dict({"fc1.weight": oar.zeros([2, 2])})


def test_train_eval_and_dropout(device):
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    assert m.training and m[1].training
    m.eval()
    assert not m[1].training
    x = oar.ones([8, 4])
    assert_close(m[1](x), np.ones((8, 4)))
    m.train()
    oar.seed(3)
    y = m[1](oar.ones([1000])).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6


def test_linear_matches_numpy(device):
    lin = nn.Linear(3, 2)
    assert lin.weight.shape == [3, 2] and lin.bias.shape == [2]
    assert_close(lin.bias, [0.0, 0.0])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert_close(lin(oar.to_tensor(x)), x @ lin.weight.numpy() + lin.bias.numpy(), rtol=1e-5, atol=1e-6)
    no_bias = nn.Linear(3, 2, bias_attr=False)
    assert no_bias.bias is None and len(no_bias.parameters()) == 1


@pytest.mark.parametrize("layer,ref", [
    (nn.ReLU(), lambda a: np.maximum(a, 0)),
    (nn.Sigmoid(), lambda a: 1 / (1 + np.exp(-a))),
    (nn.Tanh(), np.tanh),
    (nn.SiLU(), lambda a: a / (1 + np.exp(-a))),
    (nn.GELU(), lambda a: 0.5 * a * (1 + np.vectorize(__import__("math").erf)(a / np.sqrt(2)))),
    (nn.Softmax(axis=-1), lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
    (nn.LeakyReLU(0.1), lambda a: np.where(a > 0, a, 0.1 * a)),
])
def test_activations(device, layer, ref):
    a = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    assert_close(layer(oar.to_tensor(a)), ref(a), rtol=1e-5, atol=1e-5)


def test_norms_and_embedding(device):
    a = np.random.default_rng(3).standard_normal((2, 3, 6)).astype(np.float32)
    ln = nn.LayerNorm(6)
    want = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    assert_close(ln(oar.to_tensor(a)), want, rtol=1e-4, atol=1e-5)
    rms = nn.RMSNorm(6)
    assert_close(rms(oar.to_tensor(a)), a / np.sqrt((a * a).mean(-1, keepdims=True) + 1e-6), rtol=1e-4, atol=1e-5)
    emb = nn.Embedding(10, 4, padding_idx=0)
    ids = oar.to_tensor([[1, 0], [9, 1]])
    out = emb(ids)
    assert out.shape == [2, 2, 4]
    assert_close(out[0, 1], np.zeros(4))
    assert_close(out[1, 1], emb.weight.numpy()[1])


def test_losses(device):
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((4, 5)).astype(np.float32)
    labels = np.array([0, 3, 4, 1])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ce = nn.CrossEntropyLoss()(oar.to_tensor(logits), oar.to_tensor(labels))
    assert_close(ce, -logp[np.arange(4), labels].mean(), rtol=1e-5)
    none = F.cross_entropy(oar.to_tensor(logits), oar.to_tensor(labels), reduction="none")
    assert_close(none, -logp[np.arange(4), labels], rtol=1e-5)
    p, q = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    assert_close(nn.MSELoss()(oar.to_tensor(p), oar.to_tensor(q)), ((p - q) ** 2).mean(), rtol=1e-5)
    assert_close(nn.MSELoss("sum")(oar.to_tensor(p), oar.to_tensor(q)), ((p - q) ** 2).sum(), rtol=1e-5)
    assert_close(nn.L1Loss()(oar.to_tensor(p), oar.to_tensor(q)), np.abs(p - q).mean(), rtol=1e-5)


def test_containers(device):
    layers = nn.LayerList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(layers.parameters()) == 6
    layers.append(nn.ReLU())
    assert len(layers) == 4
    seq = nn.Sequential(("a", nn.Linear(2, 3)), ("b", nn.ReLU()))
    assert [n for n, _ in seq.named_sublayers()] == ["a", "b"]
    assert seq(oar.ones([1, 2])).shape == [1, 3]
    assert "Linear" in repr(seq)


def test_initializers(device):
    w = nn.Linear(100, 50, weight_attr=nn.initializer.Constant(0.5)).weight
    assert_close(w, np.full((100, 50), 0.5))
    p = oar.create_parameter([200, 300], "float32", default_initializer=nn.initializer.Normal(1.0, 2.0))
    v = p.numpy()
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 2.0) < 0.05
    u = nn.initializer.Uniform(-0.1, 0.2)(oar.create_parameter([1000], "float32")).numpy()
    assert u.min() >= -0.1 and u.max() < 0.2
    limit = np.sqrt(6 / (100 + 50))
    x = nn.initializer.XavierUniform()(oar.create_parameter([100, 50], "float32")).numpy()
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.9 * limit
    k = nn.initializer.KaimingUniform()(oar.create_parameter([64, 32], "float32")).numpy()
    assert np.abs(k).max() <= np.sqrt(2) * np.sqrt(3 / 64) + 1e-6


def test_layer_hooks_and_apply(device):
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_forward_post_hook(lambda layer, inputs, out: calls.append(out.shape))
    m(oar.ones([3, 2]))
    h.remove()
    m(oar.ones([3, 2]))
    assert calls == [[3, 2]]
    m.apply(lambda layer: nn.initializer.Constant(1.0)(layer.weight) if isinstance(layer, nn.Linear) else None)
    assert_close(m.weight, np.ones((2, 2)))


def test_training_loop_reduces_loss(device):
    oar.seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = oar.optimizer.Adam(learning_rate=0.05, parameters=model.parameters())
    x = oar.rand([64, 2])
    y = (x[:, :1] * 2 - x[:, 1:] + 0.5)
    losses = []
    for _ in range(60):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_zero_element_parameters_initialize():
    # Fan-based initializers (Xavier, the default of create_parameter) divided by a zero fan.
    for shape in ([0, 0], [3, 0], [0, 4]):
        p = oar.create_parameter(shape, "float32")
        assert list(p.shape) == shape
        q = oar.create_parameter(shape, "float32", default_initializer=oar.nn.initializer.KaimingNormal())
        assert list(q.shape) == shape
