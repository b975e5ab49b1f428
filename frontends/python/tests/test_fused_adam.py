"""The fused multi-tensor Adam/AdamW update (op adam_update, Note [Fused Adam]
in core/src/ops/optimizer_ops.cpp): against PyTorch's AdamW algorithm written
out in numpy, against the op-by-op update bit for bit, bf16 with master
weights, and its error sentences."""
import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.optimizer.optimizer import Adam, L2Decay

# Shapes of a small model; 40000 elements cut into several chunks of the cpu kernel.
SHAPES = [(3,), (7, 5), (40000,), (1, 1)]


def grads(step, shapes=SHAPES):
    rng = np.random.default_rng(100 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def init(shapes=SHAPES):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def train(make_opt, steps=5, dtype="float32", shapes=SHAPES, cast=lambda a: a):
    """Parameters and optimizer after `steps` steps with the gradients of grads();
    cast(array) maps the initial values and gradients first."""
    params = [nn.Parameter(oar.to_tensor(cast(p)).astype(dtype)) for p in init(shapes)]
    opt = make_opt(params)
    for k in range(steps):
        for p, g in zip(params, grads(k, shapes)):
            (p * oar.to_tensor(cast(g)).astype(dtype)).sum().backward()  # grad = g
        opt.step()
        opt.clear_grad()
    return params, opt


def torch_adamw(steps, lr, b1, b2, eps, wd, amsgrad=False):
    """torch.optim.AdamW's documented update, in float64."""
    out = []
    for i, p0 in enumerate(init()):
        p = p0.astype(np.float64)
        m = np.zeros_like(p)
        v = np.zeros_like(p)
        vmax = np.zeros_like(p)
        for t in range(1, steps + 1):
            g = grads(t - 1)[i].astype(np.float64)
            p = p * (1 - lr * wd)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            vmax = np.maximum(vmax, v)
            denom = np.sqrt((vmax if amsgrad else v) / (1 - b2 ** t)) + eps
            p = p - lr / (1 - b1 ** t) * m / denom
        out.append(p)
    return out


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_equals_torch_algorithm_over_5_steps(device, amsgrad):
    params, _ = train(lambda ps: oar.optimizer.AdamW(learning_rate=0.01, beta1=0.8, beta2=0.95, epsilon=1e-6,
                                                     parameters=ps, weight_decay=0.1, amsgrad=amsgrad))
    for got, want in zip(params, torch_adamw(5, 0.01, 0.8, 0.95, 1e-6, 0.1, amsgrad)):
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-6)


def spy_calls(monkeypatch):
    """The ops run through _C.ops.call from now on, by name."""
    real, names = oar._C.ops.call, []

    def spy(op, inputs, attrs=None):
        names.append(op)
        return real(op, inputs, attrs or {})
    monkeypatch.setattr(oar._C.ops, "call", spy)
    return names


@pytest.mark.parametrize("kind", ["Adam", "AdamW", "AdamW-amsgrad", "Adam-l2"])
def test_fused_equals_op_by_op_bit_for_bit(device, monkeypatch, kind):
    def make(ps):
        if kind == "Adam":
            return oar.optimizer.Adam(learning_rate=0.02, parameters=ps)
        if kind == "Adam-l2":
            return oar.optimizer.Adam(learning_rate=0.02, parameters=ps, weight_decay=L2Decay(0.3))
        return oar.optimizer.AdamW(learning_rate=0.02, parameters=ps, weight_decay=0.05,
                                   amsgrad=kind == "AdamW-amsgrad",
                                   lr_ratio=lambda p: 0.5 if list(p.shape) == [3] else 1.0)
    names = spy_calls(monkeypatch)
    fused, fused_opt = train(make)
    assert names.count("adam_update") == 5 * (2 if kind.startswith("AdamW") else 1)  # lr_ratio: two lr groups
    monkeypatch.setattr(Adam, "_fused_key", lambda self, p, g: None)  # the op-by-op update
    names.clear()
    plain, plain_opt = train(make)
    assert "adam_update" not in names
    accs = ("moment1", "moment2") + (("moment2_max",) if kind == "AdamW-amsgrad" else ())
    for a, b in zip(fused, plain):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        for name in accs:
            np.testing.assert_array_equal(fused_opt._accumulators[(name, id(a))].numpy(),
                                          plain_opt._accumulators[(name, id(b))].numpy())


def test_one_fused_call_per_step(device, monkeypatch):
    names = spy_calls(monkeypatch)
    train(lambda ps: oar.optimizer.AdamW(learning_rate=0.01, parameters=ps), steps=2)
    assert names.count("adam_update") == 2


def test_bf16_master_weights_follow_the_f32_step(device):
    # bf16-exact initial values and gradients: the f32 master copy then
    # takes exactly the f32 run's values, and the bf16 param is its rounding.
    shapes = [(4, 3), (5,)]

    def make(ps):
        return oar.optimizer.AdamW(learning_rate=0.01, parameters=ps, multi_precision=True)

    def to_bf16(a):
        return oar.to_tensor(a).astype("bfloat16").astype("float32").numpy()
    half, opt = train(make, steps=3, dtype="bfloat16", shapes=shapes, cast=to_bf16)
    full, _ = train(make, steps=3, dtype="float32", shapes=shapes, cast=to_bf16)
    for k, (h, f) in enumerate(zip(half, full)):
        master = opt._accumulators[("master_weight", id(h))]
        assert h.dtype == oar.bfloat16
        assert master.dtype == oar.float32 and opt._accumulators[("moment1", id(h))].dtype == oar.float32
        np.testing.assert_array_equal(master.numpy(), f.numpy())
        np.testing.assert_array_equal(h.astype("float32").numpy(), to_bf16(f.numpy()))
        assert not np.array_equal(f.numpy(), to_bf16(init(shapes)[k]))  # it moved


def test_adam_update_errors_name_the_operand(device):
    p = oar.ones([2, 3])
    m = oar.zeros([2, 3])
    with pytest.raises(Exception, match=r"adam_update: the grad of parameter 0 has shape \[3, 2\]"):
        oar._C.ops.call("adam_update", [p, oar.ones([3, 2]), m, m], {"lr": 0.1, "step": 1})
    with pytest.raises(Exception, match="adam_update: expected 4 inputs per parameter"):
        oar._C.ops.call("adam_update", [p, p, m], {"lr": 0.1, "step": 1})
    with pytest.raises(Exception, match="adam_update: step must be at least 1"):
        oar._C.ops.call("adam_update", [p, p, m, m], {"lr": 0.1, "step": 0})
    with pytest.raises(Exception, match="moments must have the parameter's dtype"):
        oar._C.ops.call("adam_update", [p.astype("float64"), p.astype("float64"), m, m], {"lr": 0.1, "step": 1})


def test_adam_update_values_by_hand(device):
    # One element, step 1: m = 0.1 g, v = 0.001 g^2, lr_t = lr sqrt(0.001) / 0.1,
    # p' = p (1 - lr wd) - lr_t m / (sqrt(v) + eps sqrt(0.001)) = p (1 - lr wd) - lr g / (|g| + eps).
    p, g = oar.to_tensor(np.array([2.0], np.float32)), oar.to_tensor(np.array([-0.5], np.float32))
    z = oar.zeros([1])
    out = oar._C.ops.call("adam_update", [p, g, z, z],
                          {"lr": 0.1, "step": 1, "weight_decay": 0.5, "epsilon": 0.0})
    np.testing.assert_allclose(out[0].numpy(), [2.0 * 0.95 + 0.1], rtol=1e-6)
    np.testing.assert_allclose(out[1].numpy(), [-0.05], rtol=1e-6)
    np.testing.assert_allclose(out[2].numpy(), [0.00025], rtol=1e-5)


def _dist_train(make, placements, steps=4):
    """train() with every parameter placed on the one-rank mesh [0]."""
    import oar.distributed as dist
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    params = [dist.shard_tensor(nn.Parameter(oar.to_tensor(p)), mesh, placements) for p in init()]
    opt = make(params)
    for k in range(steps):
        for p, g in zip(params, grads(k)):
            (p * oar.to_tensor(g)).sum().backward()
        opt.step()
        opt.clear_grad()
    return params, opt


@pytest.mark.parametrize("placements", ["replicate", "shard"])
def test_fused_adam_on_distributed_parameters(monkeypatch, placements):
    """Note [Fused Adam on distributed parameters]: distributed params whose gradients are placed like
    them take one adam_update per step on their local pieces, equal bit for bit to the op-by-op
    update; params and moments stay distributed with the param's placements."""
    import oar.distributed as dist
    place = [dist.Replicate()] if placements == "replicate" else [dist.Shard(0)]

    def make(ps):
        return oar.optimizer.AdamW(learning_rate=0.02, parameters=ps, weight_decay=0.05)
    names = spy_calls(monkeypatch)
    fused, fused_opt = _dist_train(make, place)
    assert names.count("adam_update") == 4
    monkeypatch.setattr(Adam, "_fused_key", lambda self, p, g: None)
    names.clear()
    plain, plain_opt = _dist_train(make, place)
    assert "adam_update" not in names
    dense, _ = train(make, steps=4)
    for a, b, d in zip(fused, plain, dense):
        assert a.is_dist() and a.placements == place
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), d.numpy())
        for name in ("moment1", "moment2"):
            acc = fused_opt._accumulators[(name, id(a))]
            assert acc.is_dist() and acc.placements == place
            np.testing.assert_array_equal(acc.numpy(), plain_opt._accumulators[(name, id(b))].numpy())


def test_fused_adam_refuses_a_partial_gradient():
    # A Partial gradient is not the param's value on this rank: the op-by-op update (which reduces it) runs.
    import oar.distributed as dist
    mesh = dist.ProcessMesh([0], dim_names=["dp"])
    opt = oar.optimizer.AdamW(learning_rate=0.02, parameters=[])
    p = dist.shard_tensor(nn.Parameter(oar.ones([3])), mesh, [dist.Replicate()])
    g = dist.shard_tensor(oar.ones([3]), mesh, [dist.Partial()])
    assert opt._fused_key(p, g) is None
    assert opt._fused_key(p, dist.shard_tensor(oar.ones([3]), mesh, [dist.Replicate()])) is not None
    assert opt._fused_key(p, dist.shard_tensor(oar.ones([3]), mesh, [dist.Shard(0)])) is None
