"""paddle.amp: auto_cast lists, decorate O2 with master weights, GradScaler
by hand values, and a small CNN trained in bfloat16 against float32."""
import sys

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar import amp

pytestmark = pytest.mark.skipif(not amp.is_bfloat16_supported("cpu"), reason="no bfloat16 kernels on cpu")


@pytest.fixture(autouse=True)
def on_cpu():
    previous = oar.get_device()
    oar.set_device("cpu")
    oar.seed(7)
    yield
    oar.set_device(previous)


def _x(*shape):
    return oar.to_tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))


def test_white_ops_run_in_bfloat16_black_ops_in_float32():
    x, w = _x(4, 3), _x(3, 5)
    with amp.auto_cast(dtype="bfloat16"):
        y = oar.matmul(x, w)
        lin = F.linear(x, _x(3, 2), _x(2))
        conv = F.conv2d(_x(1, 2, 5, 5), _x(3, 2, 3, 3))
        soft = F.softmax(y)
        logsoft = F.log_softmax(y)
        mean, total, e = oar.mean(y), oar.sum(y), oar.exp(y)
        ce = F.cross_entropy(y, oar.to_tensor(np.array([0, 1, 2, 3], dtype=np.int64)))
        relu = F.relu(y)
        mixed = oar.add(y, x.sum())  # bf16 + f32: promoted to the widest
    assert (y.dtype, lin.dtype, conv.dtype) == (oar.bfloat16,) * 3
    for t in (soft, logsoft, mean, total, e, ce, mixed):
        assert t.dtype == oar.float32
    assert relu.dtype == oar.bfloat16
    # the values are those of float32 up to bfloat16's 8 bits of mantissa
    np.testing.assert_allclose(y.astype("float32").numpy(), x.numpy() @ w.numpy(), rtol=2e-2, atol=2e-2)
    ref = x.numpy() @ w.numpy()
    ref_soft = np.exp(ref - ref.max(-1, keepdims=True))
    np.testing.assert_allclose(soft.numpy(), ref_soft / ref_soft.sum(-1, keepdims=True), atol=2e-2)


def test_outside_auto_cast_nothing_changes():
    before = oar._C.ops.matmul
    with amp.auto_cast(dtype="bfloat16"):
        assert amp.is_autocast_enabled() and amp.get_autocast_dtype() == "bfloat16"
        assert oar._C.ops.matmul is not before
    assert oar._C.ops.matmul is before  # the C++ function again: AMP off costs nothing
    assert not amp.is_autocast_enabled() and amp.get_autocast_dtype() == "float32"
    assert oar.matmul(_x(2, 3), _x(3, 2)).dtype == oar.float32


def test_enable_false_and_level_o0_turn_amp_off_inside():
    x, w = _x(2, 3), _x(3, 2)
    with amp.auto_cast(dtype="bfloat16"):
        with amp.auto_cast(enable=False):
            assert oar.matmul(x, w).dtype == oar.float32
        with amp.auto_cast(level="O0", dtype="bfloat16"):
            assert oar.matmul(x, w).dtype == oar.float32
        assert oar.matmul(x, w).dtype == oar.bfloat16


def test_custom_lists():
    x, w = _x(2, 3), _x(3, 2)
    with amp.auto_cast(custom_black_list=["matmul_v2"], dtype="bfloat16"):
        assert oar.matmul(x, w).dtype == oar.float32
    h = oar.cast(x, "bfloat16")
    with amp.auto_cast(custom_white_list=["exp"], dtype="bfloat16"):
        assert oar.exp(x).dtype == oar.bfloat16
    with amp.auto_cast(dtype="bfloat16"):
        assert oar.exp(h).dtype == oar.float32
    with pytest.raises(ValueError, match="both custom_white_list and custom_black_list"):
        with amp.auto_cast(custom_white_list=["exp"], custom_black_list=["exp"]):
            pass
    with pytest.raises(ValueError, match="level must be"):
        with amp.auto_cast(level="O3"):
            pass
    with pytest.raises(ValueError, match="dtype must be"):
        with amp.auto_cast(dtype="float64"):
            pass


def test_level_od_runs_only_the_white_list_in_half():
    x = _x(2, 3)
    with amp.auto_cast(level="OD", dtype="bfloat16"):
        y = oar.matmul(x, _x(3, 2))
        assert y.dtype == oar.bfloat16
        assert F.relu(y).dtype == oar.float32


def test_float32_parameters_get_float32_gradients():
    lin = nn.Linear(3, 2)
    x = _x(4, 3)
    with amp.auto_cast(dtype="bfloat16"):
        loss = oar.mean(lin(x))
    assert loss.dtype == oar.float32
    loss.backward()
    assert lin.weight.grad.dtype == oar.float32
    # d mean(x W + b) / dW = column means of x, shared by the 2 outputs: mean over rows / 2
    expected = np.repeat(x.numpy().mean(0, keepdims=True).T / 2, 2, axis=1)
    np.testing.assert_allclose(lin.weight.grad.numpy(), expected, atol=1e-2)


def test_missing_half_kernel_falls_back_to_float32(monkeypatch):
    calls = []

    def only_float32(x, y, transpose_x=False, transpose_y=False):
        calls.append(x.dtype)
        if x.dtype != oar.float32:
            raise oar.UnsupportedError("matmul: device type 'cpu' has no kernel for dtypes (bf16, bf16) -> (bf16)")
        return real(x, y, transpose_x, transpose_y)

    real = oar._C.ops.matmul
    monkeypatch.setattr(oar._C.ops, "matmul", only_float32)
    ac = sys.modules["oar.amp.auto_cast"]  # the module (oar.amp.auto_cast is the function)
    monkeypatch.setattr(ac, "_no_kernel", set())
    x, w = _x(2, 3), _x(3, 2)
    with amp.auto_cast(dtype="bfloat16"):
        y1 = oar.matmul(x, w)
        y2 = oar.matmul(x, w)
    assert y1.dtype == y2.dtype == oar.float32
    assert calls == [oar.bfloat16, oar.float32, oar.float32]  # the miss is paid once
    np.testing.assert_allclose(y2.numpy(), x.numpy() @ w.numpy(), rtol=1e-5)


# ---- decorate ----

class _Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.norm = nn.LayerNorm(2)

    def forward(self, x):
        return self.norm(self.fc(x))


def test_decorate_o2_casts_all_but_norm_layers():
    net = _Net()
    opt = oar.optimizer.SGD(0.1, parameters=net.parameters())
    net2, opt2 = amp.decorate(net, opt, level="O2", dtype="bfloat16")
    assert net2 is net and opt2 is opt
    assert net.fc.weight.dtype == net.fc.bias.dtype == oar.bfloat16
    assert net.norm.weight.dtype == oar.float32
    assert opt._multi_precision
    o1 = _Net()
    assert amp.decorate(o1, level="O1", dtype="bfloat16") is o1 and o1.fc.weight.dtype == oar.float32
    with pytest.raises(TypeError, match="models must be Layers"):
        amp.decorate("net", level="O2")


def test_master_weights_keep_updates_bfloat16_would_lose():
    p = oar.create_parameter([1], "float32", default_initializer=nn.initializer.Constant(1.0))
    lin = nn.Linear(1, 1)
    lin.weight = p
    opt = oar.optimizer.SGD(1e-4, parameters=[p])
    amp.decorate(lin, opt, level="O2", dtype="bfloat16")
    assert p.dtype == oar.bfloat16
    for _ in range(100):  # each step subtracts 1e-4 * grad 1; bfloat16 alone cannot hold 1 - 1e-4
        p._set_grad(oar.cast(oar.ones([1]), "bfloat16"))
        opt.step()
    master = opt._accumulators[("master_weight", id(p))]
    assert master.dtype == oar.float32
    np.testing.assert_allclose(master.numpy(), [0.99], rtol=1e-5)
    np.testing.assert_allclose(p.astype("float32").numpy(), [0.99], rtol=1e-2)


def test_o2_training_keeps_float32_masters_and_learns():
    net = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 3))
    opt = oar.optimizer.Adam(0.01, parameters=net.parameters())
    net, opt = amp.decorate(net, opt, level="O2", dtype="bfloat16")
    scaler = amp.GradScaler(init_loss_scaling=128.0)
    x = _x(16, 4)
    y = oar.to_tensor(np.random.default_rng(3).integers(0, 3, [16]).astype(np.int64))
    losses = []
    for _ in range(30):
        with amp.auto_cast(level="O2", dtype="bfloat16"):
            out = net(x)
            loss = F.cross_entropy(out, y)
        assert out.dtype == oar.bfloat16
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.clear_grad()
        losses.append(float(loss.astype("float32").numpy()))
    assert net[0].weight.dtype == oar.bfloat16 and net[1].weight.dtype == oar.float32
    master = opt._accumulators[("master_weight", id(net[0].weight))]
    assert master.dtype == oar.float32
    np.testing.assert_allclose(net[0].weight.astype("float32").numpy(), master.numpy(), rtol=1e-2, atol=1e-2)
    assert losses[-1] < 0.8 * losses[0]


# ---- GradScaler ----

def _param(value):
    p = oar.create_parameter([2], "float32", default_initializer=nn.initializer.Constant(value))
    return p


def test_grad_scaler_scales_and_unscales():
    p = _param(1.0)
    opt = oar.optimizer.SGD(0.5, parameters=[p])
    scaler = amp.GradScaler(init_loss_scaling=1024.0)
    loss = oar.sum(oar.multiply(p, oar.to_tensor([3.0, 4.0])))
    scaled = scaler.scale(loss)
    assert float(scaled.numpy()) == pytest.approx(7.0 * 1024)
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), [3072.0, 4096.0])
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0])
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    np.testing.assert_allclose(p.numpy(), [1.0 - 1.5, 1.0 - 2.0])
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert float(scaler.get_loss_scaling().numpy()[0]) == 1024.0


def test_grad_scaler_skips_inf_steps_and_adjusts_the_scale():
    p = _param(1.0)
    opt = oar.optimizer.SGD(0.5, parameters=[p])
    scaler = amp.GradScaler(init_loss_scaling=8.0, incr_every_n_steps=2, decr_every_n_nan_or_inf=1)
    p._set_grad(oar.to_tensor([np.inf, 1.0]))
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.numpy(), [1.0, 1.0])  # skipped
    assert scaler.state_dict()["scale"][0] == 4.0 and scaler.state_dict()["decr_count"] == 0
    p._set_grad(oar.to_tensor([np.nan, 1.0]))
    scaler.minimize(opt, oar.sum(p))
    np.testing.assert_allclose(p.numpy(), [1.0, 1.0])
    assert scaler.state_dict()["scale"][0] == 2.0
    for k in range(2):  # two finite steps: the scale doubles
        p._set_grad(oar.to_tensor([2.0, 2.0]))
        scaler.step(opt)
        scaler.update()
    np.testing.assert_allclose(p.numpy(), [1.0 - 2 * 0.5 * 1.0] * 2)  # each step: grad 2 / scale 2
    state = scaler.state_dict()
    assert state["scale"].dtype == np.float32 and state["scale"][0] == 4.0
    assert {k: v for k, v in state.items() if k != "scale"} == {
        "incr_ratio": 2.0, "decr_ratio": 0.5, "incr_every_n_steps": 2, "decr_every_n_nan_or_inf": 1,
        "incr_count": 0, "decr_count": 0, "use_dynamic_loss_scaling": True}
    other = amp.GradScaler()
    other.load_state_dict(state)
    assert other.state_dict()["scale"][0] == 4.0 and other.get_incr_every_n_steps() == 2


def test_grad_scaler_disabled_and_bad_arguments():
    p = _param(1.0)
    opt = oar.optimizer.SGD(0.5, parameters=[p])
    off = amp.GradScaler(enable=False)
    loss = oar.sum(p)
    assert off.scale(loss) is loss and off.state_dict() == {} and not off.is_enable()
    p._set_grad(oar.to_tensor([1.0, 1.0]))
    off.step(opt)
    np.testing.assert_allclose(p.numpy(), [0.5, 0.5])
    with pytest.raises(ValueError, match="incr_ratio must be > 1.0"):
        amp.GradScaler(incr_ratio=1.0)
    with pytest.raises(ValueError, match="decr_ratio must be < 1.0"):
        amp.GradScaler(decr_ratio=1.5)
    with pytest.raises(TypeError, match="must be a Tensor"):
        amp.GradScaler().scale(3.0)
    fixed = amp.GradScaler(init_loss_scaling=4.0, use_dynamic_loss_scaling=False)
    p._set_grad(oar.to_tensor([np.inf, 1.0]))
    fixed.step(opt)
    fixed.update()
    assert fixed.state_dict()["scale"][0] == 4.0


# ---- a small CNN in bfloat16 against float32 ----

class _DigitsCNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2D(16, 32, 3, padding=1)
        self.bn = nn.BatchNorm2D(32)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        return self.fc(oar.flatten(x, 1))


def _train_digits(amp_dtype):
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    test, train = order[:360], order[360:]
    oar.seed(2026)
    net = _DigitsCNN()
    opt = oar.optimizer.Adam(0.01, parameters=net.parameters())
    scaler = amp.GradScaler(init_loss_scaling=1024.0)
    rng = np.random.default_rng(1)
    for _ in range(3):  # epochs: about 98% on the test images either way
        perm = rng.permutation(train)
        for i in range(0, len(perm), 64):
            idx = perm[i:i + 64]
            x, y = oar.to_tensor(images[idx]), oar.to_tensor(labels[idx])
            with amp.auto_cast(enable=amp_dtype is not None, dtype=amp_dtype or "float16"):
                logits = net(x)
                loss = F.cross_entropy(logits, y)
            if amp_dtype is not None:
                assert logits.dtype == oar.bfloat16 and loss.dtype == oar.float32
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.clear_grad()
    net.eval()
    with oar.no_grad(), amp.auto_cast(enable=amp_dtype is not None, dtype=amp_dtype or "float16"):
        pred = net(oar.to_tensor(images[test])).astype("float32").numpy().argmax(1)
    return float((pred == labels[test]).mean())


def test_digits_cnn_bfloat16_o1_matches_float32():
    acc32 = _train_digits(None)
    acc16 = _train_digits("bfloat16")
    assert acc32 > 0.9
    assert abs(acc16 - acc32) <= 0.01, (acc16, acc32)
