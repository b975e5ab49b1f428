"""Math, reductions, manipulation and broadcasting against numpy."""
import numpy as np
import pytest

import oar
from conftest import assert_close

rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name,ref", [
    ("exp", np.exp), ("tanh", np.tanh), ("sin", np.sin), ("cos", np.cos), ("abs", np.abs),
    ("floor", np.floor), ("ceil", np.ceil), ("sign", np.sign), ("square", np.square),
])
def test_unary(device, name, ref):
    a = rand(3, 4)
    assert_close(getattr(oar, name)(oar.to_tensor(a)), ref(a), rtol=1e-5, atol=1e-5)
    assert_close(getattr(oar.to_tensor(a), name)(), ref(a), rtol=1e-5, atol=1e-5)


def test_unary_positive_domain(device):
    a = np.abs(rand(5)) + 0.1
    t = oar.to_tensor(a)
    assert_close(oar.log(t), np.log(a), rtol=1e-5)
    assert_close(oar.sqrt(t), np.sqrt(a), rtol=1e-5)
    assert_close(oar.rsqrt(t), 1 / np.sqrt(a), rtol=1e-5)
    assert_close(oar.log1p(t), np.log1p(a), rtol=1e-5)


def test_binary_broadcasting_and_operators(device):
    a, b = rand(2, 3, 4), rand(3, 1)
    x, y = oar.to_tensor(a), oar.to_tensor(b)
    assert_close(x + y, a + b)
    assert_close(x - y, a - b)
    assert_close(x * y, a * b)
    assert_close(x / (y.abs() + 1), a / (np.abs(b) + 1), rtol=1e-5)
    assert_close(oar.maximum(x, y), np.maximum(a, b))
    assert_close(oar.minimum(x, y), np.minimum(a, b))
    assert_close(-x, -a)
    assert_close(abs(x), np.abs(a))
    assert_close(x.abs() ** 2, np.abs(a) ** 2, rtol=1e-5)
    assert_close(x ** 2.0, a ** 2.0, rtol=1e-5)
    assert (x + y).shape == [2, 3, 4]


def test_scalar_and_reflected_operators(device):
    a = rand(4)
    x = oar.to_tensor(a)
    assert_close(x + 1, a + 1)
    assert_close(1 + x, 1 + a)
    assert_close(2 - x, 2 - a)
    assert_close(x - 2, a - 2)
    assert_close(3 * x, 3 * a)
    assert_close(x / 2, a / 2)
    assert_close(1 / (x.abs() + 1), 1 / (np.abs(a) + 1), rtol=1e-5)
    assert_close(2 ** x, 2 ** a, rtol=1e-5)
    assert_close(np.float32(2) * x, 2 * a)


def test_integer_promotion(device):
    i = oar.to_tensor([1, 2, 3])
    assert (i + 1).dtype == oar.int64
    assert (i * 2.5).dtype == oar.float32
    assert_close(i * 2.5, [2.5, 5.0, 7.5])
    assert (i / 2).dtype == oar.float32
    assert_close(i / 2, [0.5, 1.0, 1.5])
    assert_close(i // 2, [0, 1, 1])
    assert_close(oar.to_tensor([5.0, -5.0]) % 3, [2.0, 1.0])
    f64 = oar.to_tensor(np.ones(3))
    assert (f64 + oar.ones([3])).dtype == oar.float64


def test_comparisons(device):
    a, b = rand(5), rand(5)
    x, y = oar.to_tensor(a), oar.to_tensor(b)
    for op in ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"]:
        got = getattr(x, op)(y)
        assert got.dtype == oar.bool
        np.testing.assert_array_equal(got.numpy(), getattr(a, op)(b))
    np.testing.assert_array_equal((x > 0).numpy(), a > 0)
    np.testing.assert_array_equal((0 < x).numpy(), 0 < a)
    np.testing.assert_array_equal(((x > 0) & (y > 0)).numpy(), (a > 0) & (b > 0))
    np.testing.assert_array_equal(((x > 0) | (y > 0)).numpy(), (a > 0) | (b > 0))
    np.testing.assert_array_equal((~(x > 0)).numpy(), ~(a > 0))
    assert (x == None) is False  # noqa: E711


def test_reductions(device):
    a = rand(2, 3, 4)
    x = oar.to_tensor(a)
    assert_close(x.sum(), a.sum(), rtol=1e-5, atol=1e-5)
    assert_close(oar.sum(x, axis=1), a.sum(1), rtol=1e-5, atol=1e-5)
    assert_close(x.sum(axis=[0, 2], keepdim=True), a.sum((0, 2), keepdims=True), rtol=1e-5, atol=1e-5)
    assert_close(x.mean(axis=-1), a.mean(-1), rtol=1e-5, atol=1e-6)
    assert_close(x.max(), a.max())
    assert_close(x.min(axis=0), a.min(0))
    assert_close(oar.prod(x, axis=2), a.prod(2), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(x.argmax(axis=1).numpy(), a.argmax(1))
    np.testing.assert_array_equal(oar.argmin(x).numpy(), a.argmin())
    assert_close(x.var(axis=1), a.var(1, ddof=1), rtol=1e-4, atol=1e-6)
    assert_close(x.std(), a.std(ddof=1), rtol=1e-4)
    assert_close(oar.logsumexp(x, axis=1), np.log(np.exp(a).sum(1)), rtol=1e-5, atol=1e-5)
    assert oar.to_tensor([True, False, True]).sum().item() == 2
    assert oar.to_tensor([True, False]).any().item() and not oar.to_tensor([True, False]).all().item()


def test_matmul(device):
    a, b = rand(2, 3, 4), rand(4, 5)
    assert_close(oar.matmul(oar.to_tensor(a), oar.to_tensor(b)), a @ b, rtol=1e-4, atol=1e-5)
    assert_close(oar.to_tensor(a) @ oar.to_tensor(b), a @ b, rtol=1e-4, atol=1e-5)
    c = rand(5, 4)
    assert_close(oar.matmul(oar.to_tensor(a), oar.to_tensor(c), transpose_y=True), a @ c.T, rtol=1e-4, atol=1e-5)
    v = rand(4)
    assert_close(oar.matmul(oar.to_tensor(b.T), oar.to_tensor(v)), b.T @ v, rtol=1e-4, atol=1e-5)


def test_manipulation(device):
    a = rand(2, 3, 4)
    x = oar.to_tensor(a)
    assert_close(x.reshape([4, 6]), a.reshape(4, 6))
    assert_close(x.reshape([0, -1]), a.reshape(2, 12))
    assert_close(x.reshape(6, 4), a.reshape(6, 4))
    assert_close(x.transpose([2, 0, 1]), a.transpose(2, 0, 1))
    assert_close(x.T, a.T)
    assert_close(x.flatten(), a.reshape(-1))
    assert_close(oar.flatten(x, 1), a.reshape(2, 12))
    assert_close(x.unsqueeze(0), a[None])
    assert_close(x.unsqueeze(0).squeeze(0), a)
    assert_close(oar.squeeze(oar.ones([1, 3, 1])), np.ones(3))
    assert_close(oar.concat([x, x], axis=1), np.concatenate([a, a], 1))
    assert_close(oar.stack([x, x], axis=0), np.stack([a, a], 0))
    assert_close(oar.stack([x, x], axis=-1), np.stack([a, a], -1))
    parts = oar.split(x, 2, axis=2)
    assert len(parts) == 2
    for got, want in zip(parts, np.split(a, 2, axis=2)):
        assert_close(got, want)
    parts = oar.split(x, [1, -1], axis=1)
    assert [p.shape for p in parts] == [[2, 1, 4], [2, 2, 4]]
    assert_close(parts[1], a[:, 1:])
    assert len(oar.chunk(x, 3, axis=1)) == 3
    assert_close(oar.unstack(x, axis=1)[2], a[:, 2])
    assert_close(oar.expand(oar.to_tensor(a[:, :1]), [2, 3, 4]), np.broadcast_to(a[:, :1], (2, 3, 4)))
    assert_close(oar.broadcast_to(oar.to_tensor(a[0]), [5, 3, 4]), np.broadcast_to(a[0], (5, 3, 4)))
    assert_close(oar.tile(oar.to_tensor(a[0]), [2, 1]), np.tile(a[0], (2, 1)))
    assert_close(oar.flip(x, [1]), a[:, ::-1])
    assert_close(oar.roll(x, 1, 2), np.roll(a, 1, 2))
    assert_close(oar.tril(oar.to_tensor(a[0])), np.tril(a[0]))
    assert_close(oar.triu(oar.to_tensor(a[0]), 1), np.triu(a[0], 1))
    assert_close(oar.nn.functional.pad(oar.to_tensor(a[0]), [1, 1, 0, 2]), np.pad(a[0], ((1, 1), (0, 2))))
    assert_close(oar.cumsum(x, axis=2), np.cumsum(a, 2), rtol=1e-5, atol=1e-5)


def test_gather_where_scatter(device):
    a = rand(5, 3)
    x = oar.to_tensor(a)
    idx = oar.to_tensor([4, 0, 2])
    assert_close(oar.gather(x, idx), a[[4, 0, 2]])
    assert_close(oar.gather(x, oar.to_tensor([2, 1]), axis=1), a[:, [2, 1]])
    assert_close(oar.index_select(x, idx, axis=0), a[[4, 0, 2]])
    assert_close(oar.where(x > 0, x, oar.zeros_like(x)), np.where(a > 0, a, 0))
    assert_close(oar.where(x > 0, x, 0.0), np.where(a > 0, a, 0))
    assert_close(oar.where(x > 0, 1.0, -1.0), np.where(a > 0, 1.0, -1.0))
    upd = rand(2, 3)
    want = a.copy()
    want[[1, 3]] = upd
    assert_close(oar.scatter(x, oar.to_tensor([1, 3]), oar.to_tensor(upd)), want)
    want = a.copy()
    np.add.at(want, [1, 1], upd)
    assert_close(oar.scatter_add(x, oar.to_tensor([1, 1]), oar.to_tensor(upd)), want, rtol=1e-5)
    assert_close(oar.masked_select(x, x > 0), a[a > 0])
    assert_close(oar.nonzero(x > 0), np.argwhere(a > 0))


def test_clip_and_misc(device):
    a = rand(10)
    x = oar.to_tensor(a)
    assert_close(oar.clip(x, -0.5, 0.5), np.clip(a, -0.5, 0.5))
    assert_close(x.clip(min=0), np.clip(a, 0, None))
    assert oar.allclose(x, x + 1e-9).item()
    assert_close(oar.isnan(oar.to_tensor([1.0, float("nan")])), [False, True])
    assert_close(oar.norm(x), np.linalg.norm(a), rtol=1e-5)
    assert_close(oar.nn.functional.one_hot(oar.to_tensor([0, 2]), 3), np.eye(3)[[0, 2]])
