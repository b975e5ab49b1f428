"""gammainc/gammaincc, shard_index, get_flags/set_flags, LazyGuard and paddle.regularizer."""
import math

import numpy as np
import pytest

import oar
from conftest import assert_close


def _p_closed_form(a, x):
    # P(1/2, x) = erf(sqrt(x)), P(1, x) = 1 - e^-x, and P(a + 1, x) = P(a, x) - x^a e^-x / Gamma(a + 1)
    p, b = (math.erf(math.sqrt(x)), 0.5) if a % 1 else (1 - math.exp(-x), 1.0)
    while b < a:
        p -= x ** b * math.exp(-x) / math.gamma(b + 1)
        b += 1
    return p


@pytest.mark.parametrize("a,x", [(0.5, 1.0), (2.0, 3.0), (5.0, 1.5), (0.5, 10.0), (3.0, 20.0), (4.5, 4.0)])
def test_gammainc_against_quadrature(a, x):
    p = _p_closed_form(a, x)
    out = oar.gammainc(oar.to_tensor([a], dtype="float64"), oar.to_tensor([x], dtype="float64"))
    assert_close(out, [p], rtol=1e-6, atol=1e-9)
    assert_close(oar.gammaincc(oar.to_tensor([a], dtype="float64"), oar.to_tensor([x], dtype="float64")),
                 [1.0 - p], rtol=1e-6, atol=1e-9)


def test_gammainc_closed_forms_and_grad():
    # P(1, y) = 1 - e^-y and P(1/2, y) = erf(sqrt(y))
    y = oar.to_tensor([0.0, 0.5, 2.0, 7.0], stop_gradient=False)
    assert_close(oar.gammainc(oar.ones([4]), y), 1 - np.exp(-y.numpy()))
    out = oar.gammainc(oar.full([4], 0.5), y)
    assert_close(out, [math.erf(math.sqrt(v)) for v in y.numpy()])
    assert out.dtype == oar.float32
    (g,) = oar.grad(oar.gammainc(oar.ones([4]), y).sum(), [y])
    assert_close(g, np.exp(-y.numpy()))  # d/dy (1 - e^-y)
    (g,) = oar.grad(oar.gammaincc(oar.ones([4]), y).sum(), [y])
    assert_close(g, -np.exp(-y.numpy()))


def test_gammainc_bad_input():
    with pytest.raises(ValueError, match="gammainc: expected x > 0"):
        oar.gammainc(oar.to_tensor([-1.0]), oar.to_tensor([1.0]))
    with pytest.raises(ValueError, match="gammaincc: expected y >= 0"):
        oar.gammaincc(oar.to_tensor([1.0]), oar.to_tensor([-1.0]))
    with pytest.raises(TypeError, match="gammainc: expected x to be a float32 or float64 tensor"):
        oar.gammainc(oar.to_tensor([1]), oar.to_tensor([1.0]))


def test_shard_index():
    label = oar.to_tensor([[16], [1], [10], [19]])
    np.testing.assert_array_equal(oar.shard_index(label, 20, 2, 1).numpy(), [[6], [-1], [0], [9]])
    np.testing.assert_array_equal(oar.shard_index(label, 20, 2, 0).numpy(), [[-1], [1], [-1], [-1]])
    out = oar.shard_index(oar.cast(label, "int32"), 20, 3, 1, ignore_value=-5)  # shards of 7
    assert out.dtype == oar.int32
    np.testing.assert_array_equal(out.numpy(), [[-5], [-5], [3], [-5]])
    with pytest.raises(ValueError, match="shard_index: expected 0 <= shard_id < nshards"):
        oar.shard_index(label, 20, 2, 2)
    with pytest.raises(ValueError, match="shard_index: expected input of rank >= 2"):
        oar.shard_index(oar.to_tensor([16, 1]), 20, 2, 1)
    with pytest.raises(TypeError, match="shard_index: expected input to be an int32 or int64 tensor"):
        oar.shard_index(oar.to_tensor([[1.0]]), 20, 2, 1)


def test_flags():
    assert oar.get_flags(["FLAGS_eager_delete_tensor_gb", "FLAGS_check_nan_inf"]) == {
        "FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False}
    oar.set_flags({"FLAGS_eager_delete_tensor_gb": 1, "FLAGS_check_nan_inf": "true"})
    assert oar.get_flags("FLAGS_eager_delete_tensor_gb") == {"FLAGS_eager_delete_tensor_gb": 1.0}
    assert oar.get_flags("FLAGS_check_nan_inf")["FLAGS_check_nan_inf"] is True
    oar.set_flags({"FLAGS_eager_delete_tensor_gb": 0.0, "FLAGS_check_nan_inf": False})
    with pytest.raises(ValueError, match="get_flags: flag FLAGS_nope is not a flag oar knows"):
        oar.get_flags("FLAGS_nope")
    with pytest.raises(ValueError, match="set_flags: flag FLAGS_nope"):
        oar.set_flags({"FLAGS_nope": 1})
    with pytest.raises(TypeError, match="set_flags: expected a dict"):
        oar.set_flags(["FLAGS_check_nan_inf"])
    assert oar.disable_signal_handler() is None


def test_lazy_guard_builds_ready_layers():
    with oar.LazyGuard():
        net = oar.nn.Linear(3, 2)
    for p in net.parameters():
        p.initialize()
    assert net(oar.ones([1, 3])).shape == [1, 2]


def test_regularizer_in_param_attr_and_weight_decay():
    attr = oar.ParamAttr(name="w", regularizer=oar.regularizer.L2Decay(0.5))
    layer = oar.nn.Linear(2, 1, weight_attr=attr, bias_attr=False)
    w0 = layer.weight.numpy().copy()
    opt = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters(),
                            weight_decay=oar.regularizer.L1Decay(10.0))  # the parameter's own L2Decay wins
    layer(oar.ones([1, 2])).sum().backward()
    opt.step()
    # gradient of sum(x @ w) is 1 per weight; plus 0.5 * w from L2Decay(0.5)
    assert_close(layer.weight, w0 - 0.1 * (1.0 + 0.5 * w0))


def test_stack_of_empty_tensors():
    x = oar.ones([0, 1, 2])
    assert oar.stack([x, x], axis=0).shape == [2, 0, 1, 2]
    assert oar.stack([x, x], axis=1).shape == [0, 2, 1, 2]
    assert oar.stack([x, x, x], axis=-1).shape == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=r"stack: input 1 has shape \[0, 2, 2\] but input 0 has shape"):
        oar.stack([x, oar.ones([0, 2, 2])])
    assert_close(oar.stack([oar.ones([2]), oar.zeros([2])], axis=1), [[1, 0], [1, 0]])


def test_summary_passes_a_list_input_as_one_argument(capsys):
    class TwoPart(oar.nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = oar.nn.Linear(4, 2)

        def forward(self, inputs):
            return self.fc(inputs[0] + inputs[1])

    info = oar.summary(TwoPart(), input=[oar.rand([1, 4]), oar.rand([1, 4])])
    assert info == {"total_params": 10, "trainable_params": 10}

    class TwoArgs(TwoPart):
        def forward(self, x, y):
            return self.fc(x + y)

    assert oar.summary(TwoArgs(), [(1, 4), (1, 4)], dtypes=["float32", "float32"])["total_params"] == 10


def test_mmap_storage(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(20, dtype=np.float32).tofile(path)
    storage = oar.MmapStorage(str(path), 80)
    assert_close(storage.get_slice(dtype=oar.float32, start=0, stop=20).reshape([4, 5]),
                 np.arange(20).reshape(4, 5))
    # start is a byte offset (Paddle): float 1.0 starts at byte 4
    assert_close(storage.get_slice(oar.float32, 4, 6), [1.0, 2.0])
    assert storage.get_slice(oar.int32, 0, 2).numpy().tolist() == [0, 1065353216]  # the bits of 0.0 and 1.0
    with pytest.raises(ValueError, match="MmapStorage.get_slice: 30 elements of float32 from byte 0 end at byte 120"):
        storage.get_slice(oar.float32, 0, 30)
    with pytest.raises(ValueError, match=r"MmapStorage: expected 0 < nbytes <= 80"):
        oar.MmapStorage(str(path), 81)
    with pytest.raises(FileNotFoundError, match="MmapStorage: there is no file"):
        oar.MmapStorage(str(tmp_path / "missing.bin"), 4)


def test_compat_torch_proxy():
    import sys
    import types
    stand_in = types.ModuleType("torch")  # a torch imported before the proxy steps aside, then comes back
    real = sys.modules.get("torch")
    sys.modules["torch"] = stand_in
    oar.enable_compat()
    try:
        import torch  # noqa: F401 - the proxy gives oar
        assert torch.sin is oar.sin
        import torch.nn.functional as TF
        assert TF is oar.nn.functional
    finally:
        oar.disable_compat()
    assert sys.modules["torch"] is stand_in
    if real is None:
        del sys.modules["torch"]
    else:
        sys.modules["torch"] = real
    oar.enable_compat(scope="some_module_that_is_not_here")
    try:
        before = sys.modules.pop("torch", None)
        try:
            import torch  # noqa: F401,F811
            assert torch is not oar  # a real torch, if installed: this test module is not in scope
        except ModuleNotFoundError:
            pass
        finally:
            if before is not None:
                sys.modules["torch"] = before
    finally:
        oar.disable_compat()
    with pytest.raises(ValueError, match="enable_compat: the only backend is 'torch'"):
        oar.enable_compat(backend="jax")


def test_compat_softmax():
    x = oar.to_tensor([[1.0, 2.0, 3.0]])
    e = np.exp([1.0, 2.0, 3.0])
    assert_close(oar.compat.nn.functional.softmax(x, -1), [e / e.sum()])
    out = oar.compat.nn.functional.softmax(x, dim=1, dtype="float64")
    assert out.dtype == oar.float64
    assert_close(out, [e / e.sum()])


def test_model_summary_uses_the_input_specs(capsys):
    from oar.static import InputSpec
    model = oar.Model(oar.nn.Linear(4, 3), InputSpec([None, 4], "float32", "x"), InputSpec([None, 1], "int64"))
    assert model.summary() == {"total_params": 15, "trainable_params": 15}
    assert "[1, 4]" in capsys.readouterr().out  # the None batch dim ran as 1
