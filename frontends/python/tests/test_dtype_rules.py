"""Output dtypes of creation ops, binary ops with tensors and Python scalars, reductions and
elementwise functions: each row is what Paddle 3.3 gives for the same expression (checked
against paddlepaddle 3.3 on CPU; where Paddle raises, oar may promote instead, see the end)."""
import numpy as np
import pytest

import oar

i = oar.to_tensor([1, 2, 3])
b = oar.to_tensor([True, False, True])
f = oar.to_tensor([1.0, 2.0, 3.0])
i32 = oar.to_tensor([1, 2, 3], dtype="int32")
h = oar.to_tensor([1.0, 2.0, 3.0], dtype="float16")
d = oar.to_tensor([1.0, 2.0, 3.0], dtype="float64")

RULES = [
    ("-i", "int64"),
    ("2 ** i", "int64"),
    ("abs(i)", "int64"),
    ("b & b", "bool"),
    ("b * 1.5", "float32"),
    ("b + 1", "int64"),
    ("b | b", "bool"),
    ("b.astype('float32')", "float32"),
    ("b.sum()", "int64"),
    ("d * 2.5", "float64"),
    ("d + f", "float64"),
    ("f + 1", "float32"),
    ("f + d", "float64"),
    ("f + np.float64(1.5)", "float32"),
    ("h * d", "float64"),
    ("h + 1", "float16"),
    ("h + 1.5", "float16"),
    ("h + f", "float32"),
    ("i % 2", "int64"),
    ("i & i", "int64"),
    ("i * 2", "int64"),
    ("i ** 0.5", "float32"),
    ("i ** 2", "int64"),
    ("i + 1.5", "float32"),
    ("i + np.int64(1)", "int64"),
    ("i / 2", "float32"),
    ("i / i", "float32"),
    ("i // 2", "int64"),
    ("i > 1", "bool"),
    ("i.sum()", "int64"),
    ("i32 * i32", "int32"),
    ("i32 + 1", "int32"),
    ("i32 + 2.5", "float32"),
    ("oar.abs(i)", "int64"),
    ("oar.all(i)", "bool"),
    ("oar.any(f)", "bool"),
    ("oar.arange(0, 5, 0.5)", "float32"),
    ("oar.arange(5)", "int64"),
    ("oar.arange(5.)", "float32"),
    ("oar.argmax(f)", "int64"),
    ("oar.clip(i, 0, 2)", "int64"),
    ("oar.cumsum(i)", "int64"),
    ("oar.divide(i, i)", "float32"),
    ("oar.empty([2])", "float32"),
    ("oar.exp(i)", "float32"),
    ("oar.eye(2)", "float32"),
    ("oar.floor(i)", "int64"),
    ("oar.floor_divide(i, i)", "int64"),
    ("oar.full([2], 1.5)", "float32"),
    ("oar.full([2], 3)", "float32"),
    ("oar.full([2], 3, 'int64')", "int64"),
    ("oar.full([2], True)", "bool"),
    ("oar.full([2], np.int32(3))", "float32"),
    ("oar.full_like(i, 1.5)", "int64"),
    ("oar.linspace(0, 5, 3)", "float32"),
    ("oar.logsumexp(f)", "float32"),
    ("oar.matmul(f.reshape([3,1]), f.reshape([1,3]))", "float32"),
    ("oar.matmul(i.reshape([3,1]), i.reshape([1,3]))", "int64"),
    ("oar.max(i)", "int64"),
    ("oar.maximum(i, i)", "int64"),
    ("oar.mean(f)", "float32"),
    ("oar.mean(f, axis=0)", "float32"),
    ("oar.mean(i)", "int64"),
    ("oar.nonzero(i)", "int64"),
    ("oar.numel(i)", "int64"),
    ("oar.ones([2], 'int32')", "int32"),
    ("oar.pow(f, 2)", "float32"),
    ("oar.pow(i, 2)", "int64"),
    ("oar.prod(i)", "int64"),
    ("oar.rand([2])", "float32"),
    ("oar.randint(0, 5, [2])", "int64"),
    ("oar.randperm(3)", "int64"),
    ("oar.remainder(f, 2.)", "float32"),
    ("oar.round(i)", "int64"),
    ("oar.shape(i)", "int64"),
    ("oar.sign(i)", "int64"),
    ("oar.sin(i)", "float32"),
    ("oar.sqrt(i)", "float32"),
    ("oar.square(i)", "int64"),
    ("oar.std(f)", "float32"),
    ("oar.subtract(i32, i32)", "int32"),
    ("oar.sum(b)", "int64"),
    ("oar.sum(i)", "int64"),
    ("oar.sum(i32)", "int64"),
    ("oar.to_tensor(1+2j)", "complex64"),
    ("oar.to_tensor(1.5)", "float32"),
    ("oar.to_tensor(3)", "int64"),
    ("oar.to_tensor(True)", "bool"),
    ("oar.to_tensor([1, 2.])", "float32"),
    ("oar.to_tensor([1.], dtype='float64') + np.float64(1)", "float64"),
    ("oar.to_tensor([True, 1])", "int64"),
    ("oar.to_tensor([np.int32(1)])", "int64"),
    ("oar.to_tensor(np.array([1, 2], dtype=np.int32))", "int32"),
    ("oar.to_tensor(np.float32(1.5))", "float32"),
    ("oar.to_tensor(np.float64(1))", "float64"),
    ("oar.var(f)", "float32"),
    ("oar.where(b, f, 1.)", "float32"),
    ("oar.where(b, i, 0)", "int64"),
    ("oar.where(b, i, i)", "int64"),
    ("oar.zeros([2])", "float32"),
    ("oar.zeros_like(b)", "bool"),
    ("~b", "bool"),
]


@pytest.mark.parametrize("expr,dtype", RULES, ids=[r[0] for r in RULES])
def test_output_dtype_as_paddle(expr, dtype):
    out = eval(expr, {"oar": oar, "np": np, "i": i, "b": b, "f": f, "i32": i32, "h": h, "d": d})
    assert out.dtype.name == dtype


def test_integer_values_of_the_paddle_rules():
    assert oar.mean(oar.to_tensor([1, 2])).item() == 1  # the mean of integers truncates, as in Paddle
    assert oar.mean(oar.to_tensor([1, 2, 4])).item() == 2
    np.testing.assert_array_equal((2 ** i).numpy(), [2, 4, 8])
    np.testing.assert_array_equal((oar.to_tensor([5, 3]) & oar.to_tensor([3, 1])).numpy(), [1, 1])
    np.testing.assert_array_equal((oar.to_tensor([5, 3]) | oar.to_tensor([3, 1])).numpy(), [7, 3])
    np.testing.assert_array_equal((oar.to_tensor([5, 3]) ^ oar.to_tensor([3, 1])).numpy(), [6, 2])
    np.testing.assert_array_equal((~oar.to_tensor([5])).numpy(), [-6])
    np.testing.assert_array_equal((b & oar.to_tensor([True, True, False])).numpy(), [True, False, False])
    np.testing.assert_array_equal(oar.floor(i).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(oar.full([2], 3).numpy(), [3.0, 3.0])


def test_where_paddle_raises_oar_promotes():
    # Paddle 3.3 refuses int64 + float32 tensors and int32 + int64; oar promotes (a superset).
    assert (i + f).dtype == oar.float32
    assert (i32 + i).dtype == oar.int64


def test_bool_add_is_or_and_bool_mul_is_and_as_paddle():
    a = oar.to_tensor([True, False, False])
    b = oar.to_tensor([True, True, False])
    for got in (a + b, oar.add(a, b)):
        assert got.dtype == oar.bool and got.numpy().tolist() == [True, True, False]
    for got in (a * b, oar.multiply(a, b)):
        assert got.dtype == oar.bool and got.numpy().tolist() == [True, False, False]
    with pytest.raises(TypeError, match="dtype bool"):
        a - b  # Paddle has no bool subtract either
