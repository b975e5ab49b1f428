"""Tensor basics, creation, dtypes and devices."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar
from conftest import assert_close


def test_plugins_found_without_variables():
    env = {k: v for k, v in os.environ.items() if k not in ("OAR_PLUGIN_PATH", "OAR_DEVICE")}
    out = subprocess.run([sys.executable, "-c", "import oar; print(sorted(oar.get_all_device_type()))"],
                         env=env, capture_output=True, text=True, check=True)
    assert "'cpu'" in out.stdout and "'mock'" in out.stdout
    assert "skipping" not in out.stderr


def test_oar_device_variable_is_honoured():
    env = dict(os.environ, OAR_DEVICE="mock:1")
    out = subprocess.run([sys.executable, "-c", "import oar; print(oar.get_device(), oar.ones([2]).place)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["mock:1", "Place(mock:1)"]


def test_set_and_get_device():
    previous = oar._C.get_device()
    try:
        oar.set_device("mock:1")
        assert oar.get_device() == "mock:1"
        assert oar.zeros([2]).place == "mock:1"
        oar.set_device("cpu")
        assert oar.get_device() == "cpu"
        with pytest.raises(ValueError, match="mock:7"):
            oar.set_device("mock:7")
    finally:
        oar._C.set_device(previous)


def test_to_tensor_dtype_inference(device):
    assert oar.to_tensor([1.0, 2.0]).dtype == oar.float32
    assert oar.to_tensor(3.5).dtype == oar.float32
    assert oar.to_tensor([1, 2]).dtype == oar.int64
    assert oar.to_tensor(True).dtype == oar.bool
    assert oar.to_tensor(np.zeros(3)).dtype == oar.float64
    assert oar.to_tensor(np.zeros(3, np.int32)).dtype == oar.int32
    assert oar.to_tensor([1, 2], dtype="float32").dtype == oar.float32
    assert oar.to_tensor([1.5], dtype=np.float64).dtype == oar.float64
    t = oar.to_tensor([[1, 2], [3, 4]], dtype="float32")
    assert t.shape == [2, 2] and t.ndim == 2 and t.size == 4
    assert t.place == oar.get_device() or t.place == device
    assert t.stop_gradient


def test_numpy_round_trip_all_dtypes(device):
    for dt in [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int32, np.int64, np.bool_]:
        a = (np.arange(12).reshape(3, 4) % 5).astype(dt)
        t = oar.to_tensor(a)
        assert t.numpy().dtype == a.dtype
        np.testing.assert_array_equal(t.numpy(), a)
        np.testing.assert_array_equal(np.asarray(t), a)
    b = oar.to_tensor([1.5, -2.25]).astype("bfloat16")
    assert b.dtype == oar.bfloat16
    np.testing.assert_array_equal(b.numpy(), np.array([1.5, -2.25], np.float32))


def test_scalar_conversions(device):
    t = oar.to_tensor(2.5)
    assert t.shape == [] and t.item() == 2.5 and float(t) == 2.5
    assert oar.to_tensor(7).item() == 7 and isinstance(oar.to_tensor(7).item(), int)
    assert bool(oar.to_tensor([1.0]))
    with pytest.raises(ValueError):
        bool(oar.ones([2]))
    assert oar.to_tensor([[1, 2]]).tolist() == [[1, 2]]


def test_creation_ops(device):
    assert_close(oar.zeros([2, 3]), np.zeros((2, 3)))
    assert_close(oar.ones([2], dtype="int32"), np.ones(2))
    assert oar.ones([2], dtype="int32").dtype == oar.int32
    assert_close(oar.full([2, 2], 7.0), np.full((2, 2), 7.0))
    assert_close(oar.arange(5), np.arange(5))
    assert oar.arange(5).dtype == oar.int64
    assert oar.arange(0, 1, 0.25).dtype == oar.float32
    assert_close(oar.arange(0, 1, 0.25), np.arange(0, 1, 0.25))
    x = oar.to_tensor([[1.0, 2.0]])
    assert_close(oar.zeros_like(x), [[0, 0]])
    assert_close(oar.ones_like(x), [[1, 1]])
    assert_close(oar.full_like(x, 3), [[3, 3]])
    assert oar.zeros_like(x, dtype="int64").dtype == oar.int64
    assert_close(oar.eye(3), np.eye(3))
    assert_close(oar.linspace(0, 1, 5), np.linspace(0, 1, 5))


def test_random_is_seeded_and_device_independent(device):
    oar.seed(42)
    a = oar.rand([1000]).numpy()
    oar.seed(42)
    b = oar.rand([1000]).numpy()
    np.testing.assert_array_equal(a, b)
    assert 0.0 <= a.min() and a.max() < 1.0 and abs(a.mean() - 0.5) < 0.05
    oar.seed(42)
    n = oar.randn([4000]).numpy()
    assert abs(n.mean()) < 0.1 and abs(n.std() - 1) < 0.1
    r = oar.randint(0, 10, [500]).numpy()
    assert r.dtype == np.int64 and r.min() >= 0 and r.max() <= 9
    p = oar.randperm(20).numpy()
    assert sorted(p.tolist()) == list(range(20))
    u = oar.uniform([100], min=-2.0, max=3.0).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0


def test_random_same_on_both_devices():
    previous = oar._C.get_device()
    try:
        values = []
        for d in ("cpu", "mock"):
            oar.set_device(d)
            oar.seed(7)
            values.append(oar.randn([64]).numpy())
        np.testing.assert_array_equal(values[0], values[1])
    finally:
        oar._C.set_device(previous)


def test_to_device_and_astype(device):
    x = oar.to_tensor([1.5, 2.5])
    y = x.to("mock:1")
    assert y.place == "mock:1"
    assert_close(y, [1.5, 2.5])
    assert x.astype("int32").dtype == oar.int32
    assert x.astype(oar.float64).dtype == oar.float64
    assert_close(x.cast("int64"), [1, 2])


def test_repr(device):
    r = repr(oar.to_tensor([1.0, 2.0]))
    assert r.startswith("Tensor(shape=[2], dtype=float32, place=Place(") and "stop_gradient=True" in r


def test_clone_and_detach(device):
    x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    c = x.clone()
    d = x.detach()
    assert not c.stop_gradient and d.stop_gradient
    assert_close(c, [1, 2])
    assert_close(d, [1, 2])


def test_print_matches_paddle_format():
    # paddle 3.x: Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,\n       [1., 2.])
    t = oar.to_tensor([1.0, 2.0], place="cpu")
    assert repr(t) == "Tensor(shape=[2], dtype=float32, place=Place(cpu), stop_gradient=True,\n       [1., 2.])"
    assert str(oar.CPUPlace()) == "Place(cpu)"
    assert str(oar.CustomPlace("mock", 1)) == "Place(mock:1)"
