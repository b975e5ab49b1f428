"""What the Python layer takes from the op registry (Note [One op definition]
in core/src/ops/op_registry.cpp): the elementwise unary functions, the dtype
promotion of scalars and true division, attribute schemas with defaults."""
import numpy as np
import pytest

import oar
from oar import _C
from conftest import assert_close


def test_unary_functions_come_from_the_registry():
    names = _C.ops.elementwise_unary()
    for name in ("neg", "exp", "erf", "expm1", "floor", "sigmoid"):
        assert name in names
        assert callable(getattr(oar, name))
    assert oar.expm1.__module__ == "oar.math"


def test_expm1_is_exact_near_zero_and_a_tensor_method(device):
    x = np.array([1e-6, -1e-6, 3e-8, 0.5, -2.0], dtype=np.float32)
    got = oar.expm1(oar.to_tensor(x)).numpy()
    want = np.expm1(x.astype(np.float64))
    assert np.all(np.abs(got - want) <= 1e-6 * np.abs(want))
    assert_close(oar.to_tensor(x).expm1(), want, rtol=1e-6)
    # exp(x) - 1 in float32 is 5% off at 1e-6: the op is what makes expm1 exact.
    assert abs(float(np.exp(np.float32(1e-6)) - np.float32(1)) - want[0]) > 1e-2 * want[0]
    # An integer input computes in the default float dtype (float_compute).
    y = oar.expm1(oar.to_tensor([0, 1], dtype="int64"))
    assert y.dtype == oar.float32
    assert_close(y, np.expm1([0.0, 1.0]), rtol=1e-6)


def test_expm1_gradient_is_exp(device):
    x = oar.to_tensor(np.array([-1.0, 0.0, 0.5]), dtype="float64", stop_gradient=False)
    oar.sum(oar.expm1(x)).backward()
    assert_close(x.grad, np.exp([-1.0, 0.0, 0.5]), rtol=1e-12)


@pytest.mark.parametrize("op,dtypes,kinds,want", [
    ("add", [oar.int32, None], [None, "float"], oar.float32),
    ("add", [oar.int32, None], [None, "int"], oar.int32),
    ("add", [oar.bool, None], [None, "int"], oar.int64),
    ("mul", [oar.float16, None], [None, "float"], oar.float16),
    ("add", [oar.int32, oar.int64], [None, None], oar.int64),
    ("div", [oar.int32, oar.int32], [None, None], oar.float32),
    ("div", [None, oar.int64], ["int", None], oar.float32),
    ("exp", [oar.int64], [None], oar.float32),
    ("abs", [oar.int64], [None], oar.int64),
])
def test_promote_binding(op, dtypes, kinds, want):
    assert _C.ops.promote(op, dtypes, kinds) == want


def test_scalar_promotion_and_true_division_follow_the_registry(device):
    i = oar.to_tensor([1, 2, 3], dtype="int32")
    assert (i + 2.5).dtype == oar.float32
    assert (i * 2).dtype == oar.int32
    assert (oar.to_tensor([True, False]) + 1).dtype == oar.int64
    assert_close(i / 2, np.array([0.5, 1.0, 1.5]))
    assert (i / i).dtype == oar.float32
    oar.set_default_dtype("float64")
    try:
        assert (i + 0.5).dtype == oar.float64
        assert (i / 2).dtype == oar.float64
    finally:
        oar.set_default_dtype("float32")
    big = oar.to_tensor([2**53 + 1], dtype="int64")
    assert int((big + 2).numpy()[0]) == 2**53 + 3  # an int scalar stays exact in int64


def test_call_checks_attributes_and_fills_defaults(device):
    x = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y, = _C.ops.call("sum", [x], {"axes": [1]})  # keepdim defaults to false; a list of outputs
    assert y.shape == [2]
    assert_close(y, np.array([3.0, 12.0]))
    assert _C.ops.call("var", [x], {"axes": [1], "keepdim": True})[0].shape == [2, 1]
    with pytest.raises(Exception, match="sum: the call has an unknown attribute 'axis'; sum takes only axes, keepdim"):
        _C.ops.call("sum", [x], {"axis": [1]})
    with pytest.raises(Exception, match="sum: the call is missing the required attribute 'axes'"):
        _C.ops.call("sum", [x], {})
